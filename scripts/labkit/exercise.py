"""Student mode: checkpoint N as an exercise the learner completes.

In the kernel tree (build/linux, see tree.py) an exercise is two refs:

  skeleton/cpN   lab/cp(N-1) + checkpoint N with its holes left out
                 (holes.py); skeleton/cpN-from-K when TODO=K pre-fills
                 the holes before K. Made by the harness, never edited.
  student/cpN    the learner's branch: the skeleton, then their work.

The learner edits build/linux on student/cpN; "make lab N STUDENT=1"
builds what is there, committed or not. Their work is the diff of
student/cpN (its files as they are) against its skeleton. "make save N"
writes it to work/NN.patch in the project checkout, where they commit
it: build/ is scratch, and "make distclean" refuses to remove work that
is not exported. "make exercise N" in another clone starts student/cpN
from the skeleton and that patch; in a tree that has student/cpN
already, a work/NN.patch that changed since the tree last saved or
resumed it (a git pull; a class's CI, with build/ cached, on a new push)
is the newer work: it wins, and the branch is set aside, not lost.

The patch's first line names the exercise and its TODO value: resuming
uses that skeleton again, so the patch applies exactly.
"""

import hashlib
import json
import os
import re
import subprocess
import textwrap

from . import grade, holes, series, ui
from .tree import lock as tree_lock
from .errors import HarnessError
from .kernels import KernelId

WORK = os.path.join(series.ROOT, "work")
# What each feature check of lab N prints on the skeleton, up to its first
# difference from 'expected' (labs' 'before' format; record-before.py).
SKELETON_BEFORE = "skeleton.before"
_HEADER = re.compile(r"^ftlab exercise (\d+) .*TODO=(\d+)")


class ExerciseError(HarnessError):
    pass


def student_branch(number):
    return f"student/cp{number}"


def skeleton_ref(number, todo=1):
    return f"skeleton/cp{number}" + (f"-from-{todo}" if todo > 1 else "")


def work_patch(number):
    return os.path.join(WORK, f"{number:02d}.patch")


def _config(number, what):
    return f"ftlab.student{number}.{what}"


def _git_env(tree, env, *args, text_in=None):
    r = subprocess.run(["git", "-C", tree.path] + list(args), input=text_in,
                       capture_output=True, text=True, env=dict(os.environ, **env))
    if r.returncode != 0:
        raise ExerciseError(f"git {' '.join(args)} failed:\n{r.stderr.strip()}")
    return r.stdout.strip()


# --- the skeleton ---------------------------------------------------------------


def reference_files(tree, number, hole_list):
    """{file: text} of the hole files at lab/cpN."""
    branch = series.lookup(number).branch
    return {path: _show(tree, branch, path) for path in holes.by_file(hole_list)}


def _show(tree, ref, path):
    """A file's text at a ref, exactly (git show, without stripping)."""
    r = subprocess.run(["git", "-C", tree.path, "show", f"{ref}:{path}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise ExerciseError(f"{path} is not in {ref}: {r.stderr.strip()}")
    return r.stdout


def skeleton_digest(number, todo):
    """What a skeleton is made of: the series up to N, the holes file, the
    TODO value and the code that punches the holes."""
    h = hashlib.sha256(f"{series.series_digest(number)} {todo}".encode())
    for path in (holes.holes_path(series.lookup(number)), holes.__file__):
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def make_skeleton(tree, number, todo=1):
    """The commit of checkpoint N's skeleton (holes K >= todo left out),
    made when missing or stale; the tree's working files are untouched
    (a private index)."""
    cp = series.lookup(number)
    ref = skeleton_ref(number, todo)
    digest = skeleton_digest(number, todo)
    key = f"ftlab.{ref.replace('/', '.')}"
    if tree.git("config", "--get", key, check=False) == digest and tree.branch_exists(ref):
        return tree.git("rev-parse", ref)
    hole_list = holes.load(cp)
    tree.prepare_branch(number)
    files = holes.skeleton(reference_files(tree, number, hole_list), number, hole_list, todo)
    what = f"holes {todo}-{len(hole_list)}" if todo > 1 else "every hole"
    commit = _commit_files(tree, number, files, ref,
                           f"exercise {number}: checkpoint {number} ({cp.name}), {what} to write")
    tree.git("config", key, digest)
    return commit


def isolated_ref(number, k):
    return f"skeleton/cp{number}-only-{k}"


def make_isolated(tree, number, k):
    """The commit of checkpoint N with hole k alone left out: the lab's
    feature checks that fail on it are those hole k's "checks:" line
    names (scripts/prove-holes.py)."""
    hole_list = holes.load(series.lookup(number))
    chosen = [h for h in hole_list if h.number == k]
    if not chosen:
        raise ExerciseError(f"exercise {number} has no hole {k}")
    tree.prepare_branch(number)
    files = holes.skeleton(reference_files(tree, number, chosen), number, chosen)
    return _commit_files(tree, number, files, isolated_ref(number, k),
                         f"exercise {number}: checkpoint {number}, hole {k} alone to write")


def make_mutant(tree, number, files, ref, message):
    """The commit of checkpoint N with 'files' ({path: text}: a wrong body
    in a hole, mutants.py) as branch 'ref', made as make_isolated makes
    its branch."""
    tree.prepare_branch(number)
    return _commit_files(tree, number, files, ref, message)


def _commit_files(tree, number, files, ref, message):
    """Commit checkpoint N's tree with 'files' ({path: text}) replaced, as
    branch 'ref' (on top of checkpoint N-1, as the learner's work is),
    through a private index."""
    cp = series.lookup(number)
    env = {"GIT_INDEX_FILE": os.path.join(tree.path, ".git", "ftlab-skeleton.index")}
    _git_env(tree, env, "read-tree", cp.branch)
    for path, text in files.items():
        blob = _git_env(tree, env, "hash-object", "-w", "--stdin", text_in=text)
        _git_env(tree, env, "update-index", "--cacheinfo", f"100644,{blob},{path}")
    top = _git_env(tree, env, "write-tree")
    parent = KernelId.of(number).previous().branch
    commit = _git_env(tree, {}, "commit-tree", top, "-p", parent, "-m", message)
    tree.git("update-ref", f"refs/heads/{ref}", commit)
    return commit


# --- the learner's work ---------------------------------------------------------


def work_diff(tree, number, base=None):
    """The learner's work: student/cpN against its skeleton (base), its
    files as they are when it is checked out."""
    base = base or tree.git("config", "--get", _config(number, "skeleton"), check=False)
    branch = student_branch(number)
    if not base or not tree.branch_exists(branch):
        return ""
    args = ["diff", "--binary", "--full-index", base]
    if tree.current_branch() != branch:
        args.append(branch)
    r = subprocess.run(["git", "-C", tree.path] + args, capture_output=True, text=True)
    if r.returncode != 0:
        raise ExerciseError(f"git {' '.join(args)} failed:\n{r.stderr.strip()}")
    return r.stdout


def patch_header(number, todo):
    return (f"ftlab exercise {number} ({series.lookup(number).name}) TODO={todo}\n"
            f"Work on the skeleton of checkpoint {number}: 'make exercise {number}' "
            "resumes it.\n\n")


def read_patch(number):
    """(todo, diff) of work/NN.patch, or (None, "") without one."""
    path = work_patch(number)
    if not os.path.exists(path):
        return None, ""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = _HEADER.match(text)
    start = text.find("diff --git ")
    return (int(m.group(2)) if m else 1), (text[start:] if start >= 0 else "")


def save(tree, number):
    """make save N: work/NN.patch from student/cpN. Returns its path, or
    None when there is no work to save (an existing patch is kept)."""
    branch = student_branch(number)
    if not tree.branch_exists(branch):
        raise ExerciseError(f"there is no exercise {number} in {tree.path}: "
                            f"'make exercise {number}' starts it")
    if patch_is_newer(tree, number):
        raise ExerciseError(f"{os.path.relpath(work_patch(number), series.ROOT)} changed since "
                            f"this tree last saved or resumed it, and holds other work: "
                            f"'make exercise {number}' takes it in (this tree's work is kept "
                            "on a branch of its own)")
    diff = work_diff(tree, number)
    if not diff:
        return None
    todo = int(tree.git("config", "--get", _config(number, "todo"), check=False) or 1)
    os.makedirs(WORK, exist_ok=True)
    with open(work_patch(number), "w", encoding="utf-8") as f:
        f.write(patch_header(number, todo) + diff)
    _mark_synced(tree, number, diff)
    return work_patch(number)


def unexported(tree):
    """Numbers of the exercises whose work differs from their work/NN.patch."""
    if not os.path.isdir(os.path.join(tree.path, ".git")):
        return []
    found = []
    for ref in tree.git("for-each-ref", "--format=%(refname:short)", "refs/heads/student/",
                        check=False).split():
        m = re.match(r"^student/cp(\d+)$", ref)
        if m and work_diff(tree, int(m.group(1))) != read_patch(int(m.group(1)))[1]:
            found.append(int(m.group(1)))
    return found


def set_aside_branches(tree):
    """The branches student/cpN-old-* that start() made to keep a tree's
    work aside (a changed skeleton, a newer work/NN.patch)."""
    if not os.path.isdir(os.path.join(tree.path, ".git")):
        return []
    refs = tree.git("for-each-ref", "--format=%(refname:short)", "refs/heads/student/",
                    check=False).split()
    return [ref for ref in refs if re.match(r"^student/cp\d+-old-", ref)]


def checkout(tree, ref, detach=False):
    """Put the tree at a student branch or a skeleton; the learner's own
    uncommitted work stays where it is when the branch is already there."""
    if tree.current_branch() == ref and not detach:
        return
    tree.keep_student_work()
    tree.ensure_clean()
    tree.git("checkout", "-q", *(["--detach"] if detach else []), ref)


def _apply(tree, diff, what):
    r = subprocess.run(["git", "-C", tree.path, "apply", "--3way", "-"], input=diff,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise ExerciseError(f"{what} does not apply to the skeleton:\n{r.stderr.strip()}\n"
                            "The files that did apply are in the tree, with conflict "
                            "markers where git could not merge.")


def chosen_todo(number, todo):
    """The TODO value of 'make exercise N [TODO=k]': the one given, else
    the saved work's, else 1. A saved work patch only applies to its own
    skeleton."""
    saved, diff = read_patch(number)
    if todo is None:
        return saved or 1
    if diff and saved != todo:
        raise ExerciseError(f"{os.path.relpath(work_patch(number), series.ROOT)} is work on "
                            f"the TODO={saved} skeleton; it would not apply to TODO={todo}'s. "
                            f"Run 'make exercise {number} TODO={saved}', or move the patch away "
                            "to start again.")
    return todo


def _digest(diff):
    return hashlib.sha256(diff.encode()).hexdigest()[:16]


def _mark_synced(tree, number, diff):
    """Record that student/cpN and work/NN.patch hold the same work now."""
    tree.git("config", _config(number, "synced"), _digest(diff))


def patch_is_newer(tree, number, base=None):
    """work/NN.patch changed since this tree last saved it or resumed from
    it (a git pull; in a class's CI, a new push over a cached build/), and
    it differs from student/cpN's work: the patch is the newer work. A tree
    that never recorded a sync keeps its branch, as before."""
    _todo, diff = read_patch(number)
    synced = tree.git("config", "--get", _config(number, "synced"), check=False)
    return bool(diff and synced and synced != _digest(diff)
                and diff != work_diff(tree, number, base))


def _set_aside(tree, branch, suffix):
    """Rename the learner's branch out of the way (never over another)."""
    old = f"{branch}-old-{suffix}"
    if tree.branch_exists(old) and tree.git("rev-parse", old) != tree.git("rev-parse", branch):
        old += "-" + tree.git("rev-parse", "--short=8", branch)
    if tree.current_branch() == branch:
        tree.git("checkout", "-q", "--detach")
    tree.git("branch", "-M", branch, old)
    return old


def _drop(tree, branch):
    """Delete a learner's branch that holds no work."""
    if tree.current_branch() == branch:
        tree.git("checkout", "-q", "--detach")
    tree.git("branch", "-D", branch)


def start(tree, number, todo=None):
    """make exercise N [TODO=k]: student/cpN checked out, made from the
    skeleton and the saved work when new, or when work/NN.patch is newer
    than the branch (patch_is_newer); never loses work."""
    todo = chosen_todo(number, todo)
    skel = make_skeleton(tree, number, todo)
    branch = student_branch(number)
    base = tree.git("config", "--get", _config(number, "skeleton"), check=False)
    saved = read_patch(number)[1]
    if tree.branch_exists(branch):
        same = base and tree.git("rev-parse", f"{base}^{{tree}}") == tree.git(
            "rev-parse", f"{skel}^{{tree}}")
        newer = patch_is_newer(tree, number, base)
        if same and not newer:
            checkout(tree, branch)
            return branch
        tree.keep_student_work()
        if newer:
            carried = saved
            patch = os.path.relpath(work_patch(number), series.ROOT)
            if work_diff(tree, number, base):
                old = _set_aside(tree, branch, tree.git("rev-parse", "--short=8", branch))
                ui.info(f"{patch} is newer than this tree's work: taking it; the tree's "
                        f"work stays on {old}")
            else:
                _drop(tree, branch)
                ui.info(f"{patch} is newer than this tree's work (none): taking it")
        else:
            carried = work_diff(tree, number, base)
            old = _set_aside(tree, branch, base[:8] if base else "unknown")
            ui.info(f"the skeleton changed: your old branch is now {old}; "
                    "carrying its work over")
    else:
        carried = saved
    tree.ensure_clean()
    tree.git("checkout", "-q", "-b", branch, skel)
    tree.git("config", _config(number, "skeleton"), skel)
    tree.git("config", _config(number, "todo"), str(todo))
    if carried:
        _apply(tree, carried, "your saved work")
        ui.info("your saved work is back in the tree (uncommitted, as you left it)")
    # In sync with the patch taken, or with no patch at all: a patch that
    # comes later (a pull) is then newer work.
    if carried == saved:
        _mark_synced(tree, number, saved)
    return branch


def todo_report(tree, number):
    """Lines that list each hole: where its TODO is (file:line) and its
    goal (the hints: make hint N.K)."""
    cp = series.lookup(number)
    hole_list = holes.load(cp)
    todo = int(tree.git("config", "--get", _config(number, "todo"), check=False) or 1)
    out = [f"exercise {number}: {cp.title} ({len(hole_list)} holes, in {tree.path})"]
    for hole in hole_list:
        path = os.path.join(tree.path, hole.file)
        with open(path, encoding="utf-8", errors="replace") as f:
            sites = holes.todo_sites(f.read(), number, hole)
        rel = os.path.relpath(path, series.ROOT)
        if hole.number < todo:
            where = "pre-filled (TODO=%d)" % todo
        elif sites:
            where = f"{rel}:{sites[0]}"
        else:
            where = f"{rel}, in {hole.function}(): its TODO comment is gone (done?)"
        out.append(f"  {number}.{hole.number} {hole.title}: {where}")
        out.extend(textwrap.wrap(hole.goal, 78, initial_indent=" " * 6,
                                 subsequent_indent=" " * 6))
    out.append(f"'make hint {number}.K' gives hole K's next hint, one level at a time.")
    return out


# --- what this build folder remembers of an exercise -----------------------------
#
# build/exercises/NN.json: the hint levels shown of each hole ("make hint")
# and the last "make grade N" (the digest of the work it graded, whether
# every line passed). It goes with the build folder, as the learner's
# tree does: "make distclean" forgets it.


def state_path(build_dir, number):
    return os.path.join(build_dir, "exercises", f"{number:02d}.json")


def load_state(build_dir, number):
    try:
        with open(state_path(build_dir, number), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def save_state(build_dir, number, state):
    path = state_path(build_dir, number)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(state, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(path + ".tmp", path)


def parse_hole(text, given=""):
    """(N, K) of "N.K", the hole K of exercise N (make hint 3.1); an
    ExerciseError that says what to write and lists the holes."""
    m = re.match(r"^(\d+)(?:\.(\d+))?$", text or "")
    cp = series.lookup(int(m.group(1))) if m else None
    if not m or cp is None or not holes.has_exercise(cp):
        numbers = [c.number for c in series.checkpoints() if holes.has_exercise(c)]
        raise ExerciseError(f"{given}'{text}' names no exercise: say 'make hint N.K', hole K "
                            f"of exercise N (exercises: {', '.join(map(str, numbers))})")
    hole_list = holes.load(cp)
    names = ", ".join(f"{cp.number}.{h.number}" for h in hole_list)
    if m.group(2) is None:
        raise ExerciseError(f"which hole of exercise {cp.number}? Say 'make hint "
                            f"{cp.number}.K': {names}")
    k = int(m.group(2))
    if not any(h.number == k for h in hole_list):
        raise ExerciseError(f"exercise {cp.number} has no hole {k}: {names}")
    return cp.number, k


def hint(build_dir, number, k, level=None):
    """make hint N.K [LEVEL=L]: the lines that show hole K's next level of
    help not shown yet in this build folder (the last one again when all
    were), or level L (0: the goal); the level is remembered as shown."""
    hole = next(h for h in holes.load(series.lookup(number)) if h.number == k)
    top = len(hole.hints)
    state = load_state(build_dir, number)
    shown = set(state.get("hints", {}).get(str(k), []))
    if level is not None and not 0 <= level <= top:
        raise ExerciseError(f"LEVEL={level}: hole {number}.{k} has levels 0 (its goal) to {top}")
    again = level is None and all(n in shown for n in range(1, top + 1))
    if level is None:
        level = top if again else min(n for n in range(1, top + 1) if n not in shown)
    completes = bool(level) and level not in shown and len(shown) == top - 1
    if level:
        shown.add(level)
        state.setdefault("hints", {})[str(k)] = sorted(shown)
        save_state(build_dir, number, state)
    text = hole.hints[level - 1] if level else hole.goal
    what = "its goal" if not level else f"hint {level} of {top}"
    out = [f"{holes.todo_tag(number, hole)} in {hole.function}(): {hole.title}",
           f"{what}:"]
    out += textwrap.wrap(text, 78, initial_indent="  ", subsequent_indent="  ")
    left = [n for n in range(1, top + 1) if n not in shown]
    if left:
        out.append(f"{len(left)} level(s) left: 'make hint {number}.{k}' shows level "
                   f"{left[0]}.")
    elif completes:
        out.append(f"That was the last level of hole {number}.{k}: none left. "
                   f"'make solution {number}' shows the reference's code.")
    else:
        out.append(f"Every level of hole {number}.{k} was shown already"
                   + ("; that was the last again" if again else "")
                   + f". LEVEL=1 to {top} shows any of them.")
    return out


def work_digest(tree, number):
    """What the learner's work is now (work_diff), as a digest."""
    return _digest(work_diff(tree, number))


def record_grade(build_dir, number, digest, passed, score=None):
    """Remember the last make grade N: the work it graded (work_digest)
    and whether every line of its table passed."""
    state = load_state(build_dir, number)
    state["grade"] = {"work": digest, "passed": bool(passed)}
    if score:
        state["grade"]["score"] = list(score)
    save_state(build_dir, number, state)


def graded_pass(tree, build_dir, number):
    """Did a make grade N of the work as it is now pass?"""
    grade = load_state(build_dir, number).get("grade", {})
    return bool(grade.get("passed")) and grade.get("work") == work_digest(tree, number)


def may_show_solution(tree, build_dir, number, force=False, stdin=None, ask=None):
    """make solution N: True when the reference may be shown: FORCE=1, or
    a make grade N of the current work passed, or the learner says y on
    the terminal. Refused (an ExerciseError) when stdin is no terminal
    and neither holds; False when they say no."""
    import sys
    if force or graded_pass(tree, build_dir, number):
        return True
    stdin = stdin or sys.stdin
    if not stdin.isatty():
        raise ExerciseError(f"no 'make grade {number}' of your current work has passed: "
                            f"the reference's code is shown after one does, or on a 'y' at "
                            f"the terminal; 'make solution {number} FORCE=1' shows it now")
    prompt = (f"No 'make grade {number}' of your current work has passed (and 'make hint "
              f"{number}.K' gives hints). Show the reference's code anyway? [y/N] ")
    answer = (ask or _ask)(prompt, stdin)
    return answer.strip().lower() in ("y", "yes")


def _ask(prompt, stdin):
    """The prompt on stderr (stdout is the diff), one line from stdin."""
    import sys
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return stdin.readline()


def solution(tree, number):
    """make solution N: the reference's diff against the learner's files."""
    branch = student_branch(number)
    if not tree.branch_exists(branch):
        raise ExerciseError(f"there is no exercise {number}: 'make exercise {number}' starts it")
    files = list(holes.by_file(holes.load(series.lookup(number))))
    ref = series.lookup(number).branch
    args = ["diff", "-R", ref] if tree.current_branch() == branch else ["diff", branch, ref]
    return tree.git(*args, "--", *files)


def kernel_id(tree, flavour, number, variant="plain"):
    """The kernel of exercise N to build (a kernels.KernelId): flavour
    "student", the learner's branch as it is (make lab N STUDENT=1, make
    grade N), or "skeleton", the skeleton, made first when missing or
    stale (make check). The tree is not checked out: labrun.Session.kernel
    does that with the rest of the build."""
    kid = KernelId.of(number, variant)
    if flavour == "skeleton":
        make_skeleton(tree, number)
        return kid.built_from(skeleton_ref(number), "skeleton")
    ref = student_branch(number)
    if not tree.branch_exists(ref):
        raise ExerciseError(f"there is no exercise {number} in {tree.path} yet: "
                            f"'make exercise {number}' starts it")
    return kid.built_from(ref, "student", as_is=True)


# --- make check's proof ---------------------------------------------------------


def reproduction_problems(tree, number):
    """Why skeleton/cpN is not checkpoint N with its holes left out: a
    file outside the holes differs, a hole is the reference's code
    already, or filling the holes with the reference's lines does not
    give lab/cpN's files back exactly. [] when it is."""
    cp = series.lookup(number)
    hole_list = holes.load(cp)
    skel = make_skeleton(tree, number)
    files = holes.by_file(hole_list)
    changed = tree.git("diff", "--name-only", cp.branch, skel).split()
    problems = [f"{path} differs from {cp.branch} but has no hole"
                for path in changed if path not in files]
    for path, in_file in files.items():
        ref, text = _show(tree, cp.branch, path), _show(tree, skel, path)
        for hole in in_file:
            if not holes.todo_sites(text, number, hole):
                problems.append(f"hole {number}.{hole.number}: no {holes.todo_tag(number, hole)} "
                                f"in {path}")
        if holes.fill(text, ref, in_file) != ref:
            problems.append(f"{path}: the reference's lines put back into its holes do not "
                            f"give {cp.branch}'s file")
    return problems


def boot_lab(session, k, cp, name=None):
    """Boot k running lab cp (under gdb for a "# flags: gdb" lab, whose
    checks the guest prints all the same); name: the run's log name.
    Returns (run ok, report, log)."""
    from . import gdbrun, protocol
    if cp.needs_gdb:
        _ok, _evidence, run = gdbrun.unattended(
            k, session.initrd(), cp, gdbrun.free_port(), session.logs,
            lambda plan: session.timeout_for(plan, k), plan=gdbrun.lab_plan(cp))
        return not run.broken, protocol.parse(run.console), run
    run, report = session.boot(k, [protocol.lab_item(cp.number)],
                               name or f"skeleton-lab{cp.number:02d}")
    return run.ok, report, run


def record_reproduction(session, tally, number):
    """The skeleton of exercise N is checkpoint N but its holes, and the
    reference's lines put back into them give checkpoint N exactly."""
    with tree_lock(session.build_dir):
        problems = reproduction_problems(session.tree, number)
    tally.record(not problems, f"exercise {number:02d}: the skeleton is checkpoint {number} "
                 "but its holes, which the reference's lines fill back exactly")
    ui.block(problems)


def check_skeletons(session, tally, numbers):
    """make check's light part of the proof, no kernel built: every
    exercise's skeleton against its checkpoint (record_reproduction)."""
    for number in numbers:
        try:
            record_reproduction(session, tally, number)
        except HarnessError as e:
            tally.record(False, f"exercise {number:02d}: its skeleton", str(e).splitlines()[0])
            ui.block(str(e).splitlines()[1:])


def check_one(session, tally, number):
    """Exercise N's proof: the skeleton is the checkpoint but its holes,
    it builds from checkpoint N-1's objects and boots, and lab N's
    checks fail on it as skeleton.before records; those it does not
    list pass (grade.grade_on_skeleton)."""
    from . import labrun
    cp = series.lookup(number)
    label = f"exercise {number:02d}"
    record_reproduction(session, tally, number)
    k = session.kernel(kernel_id(session.tree, "skeleton", number))
    ok, report, run = boot_lab(session, k, cp)
    if not ok:
        tally.record(False, f"{label}: lab {number:02d} on the skeleton: guest run",
                     getattr(run, "status", ""))
        ui.block(run.explain())
        return
    before = grade.load_expected(holes.exercise_dir(cp), SKELETON_BEFORE)
    labrun.grade_lab(report, cp, k.id, tally, before=before)
    if number == series.checkpoints()[-1].number:
        gdb_helpers_on_skeleton(session, tally, k)


def grade_reference(session, tally, number):
    """make grade N end to end, on checkpoint N's own code with the
    reference's diff against the skeleton as the learner's work (what a
    learner who fills every hole as the series does would save): it must
    score full marks, checkpatch included (make check FULL=1)."""
    import json
    from . import studentgrade
    cp = series.lookup(number)
    tree = session.tree
    skeleton = make_skeleton(tree, number)
    files = list(holes.by_file(holes.load(cp)))
    diff = tree.git("diff", skeleton, tree.prepare_branch(number), "--", *files) + "\n"
    out = os.path.join(session.build_dir, "results", f"grade-reference-{number:02d}")
    os.makedirs(out, exist_ok=True)
    patch = os.path.join(out, f"{number:02d}.patch")
    with open(patch, "w", encoding="utf-8") as f:
        f.write(patch_header(number, 1) + diff)
    rc = studentgrade.grade(session, number, None, out, patch)
    with open(os.path.join(out, "score.json"), encoding="utf-8") as f:
        score = json.load(f)
    tally.record(rc == 0 and score["score"] == score["possible"],
                 f"make grade {number} on checkpoint {number}'s own code: full marks",
                 f"({score['score']}/{score['possible']}; {os.path.relpath(out)}/score.json)")


def gdb_helpers_on_skeleton(session, tally, k):
    """The ft- helpers on the last exercise's skeleton print what they
    print on its checkpoint: the holes leave every structure the helpers
    read in place (only function bodies go), and the self-test sets up
    nothing the holes take away. One difference is expected: ft break
    lists the functions of a dispatch point that the vmlinux has, and a
    function whose only user was a hole's body (a twin's: the snapshot
    probes, whose ops only ftrace_snapshot_callback() names) is compiled
    away in the skeleton (without_functions). The earlier skeletons lack
    the later checkpoints' structures, as their checkpoints do."""
    from . import gdbrun
    reference = session.kernel(k.id.plain())
    ui.step(f"gdb helpers on {reference.label}, then on {k.label}: the same output")
    run = gdbrun.selftest_run(reference, session.initrd(), gdbrun.free_port(), session.logs,
                              session.timeout_for)
    problems = run.problems()
    if problems:
        tally.record(False, f"gdb helpers [{reference.name}]: the self-test ran to its end")
        ui.block(problems + [run.where()])
        return
    want, gone = without_functions(gdbrun.selftest_sections(run.gdb_lines),
                                   text_symbols(k.vmlinux))
    if gone:
        ui.info(f"not in {k.name}'s vmlinux (their only users are holes' bodies), so not "
                f"expected in its ft break: {', '.join(gone)}")
    ok, evidence = gdbrun.selftest(k, session.initrd(), gdbrun.free_port(), session.logs,
                                   session.timeout_for, want=want)
    tally.record(ok, f"gdb helpers [{k.name}]: every ft command, function and printer "
                 f"as on {reference.name}")
    ui.block(evidence)


BREAK_SECTION = "ft-break"
_BREAK_LINE = re.compile(r"^(  \S+\s+)([A-Za-z_][\w, ]*)$")


def text_symbols(vmlinux):
    """The names of the functions in a vmlinux (nm's t and T symbols; a
    clone such as name.isra.0 counts as name)."""
    r = subprocess.run(["nm", vmlinux], capture_output=True, text=True)
    if r.returncode != 0:
        raise ExerciseError(f"nm {vmlinux} failed: {r.stderr.strip()}")
    return {line.split()[2].split(".")[0] for line in r.stdout.splitlines()
            if len(line.split()) == 3 and line.split()[1] in "tT"}


def without_functions(sections, symbols):
    """(sections, the names taken out): a self-test run's sections with
    the functions that 'symbols' lacks taken out of ft break's list, as
    ft break lists only what the vmlinux has ("not in this kernel" when
    none is left)."""
    out, gone = dict(sections), []
    lines = []
    for line in sections.get(BREAK_SECTION, []):
        m = _BREAK_LINE.match(line)
        if m and m.group(2) != "not in this kernel":
            names = [n.strip() for n in m.group(2).split(",")]
            kept = [n for n in names if n in symbols]
            gone += [n for n in names if n not in symbols]
            line = m.group(1) + (", ".join(kept) if kept else "not in this kernel")
        lines.append(line)
    if BREAK_SECTION in sections:
        out[BREAK_SECTION] = lines
    return out, gone


def check(session, tally, numbers):
    """make check's proof of the exercises of checkpoints 'numbers' (those
    with a holes file); a failed build counts as a failure of its own."""
    for number in numbers:
        cp = series.lookup(number)
        if not holes.has_exercise(cp):
            tally.record(False, f"exercise {number:02d}: "
                         f"{os.path.relpath(holes.holes_path(cp), series.ROOT)} is missing")
            continue
        try:
            check_one(session, tally, number)
        except HarnessError as e:
            tally.record(False, f"exercise {number:02d}", str(e).splitlines()[0])
            ui.block(str(e).splitlines()[1:])
