"""Moving the series to another Debian linux-source version.

  make rebase BASE=6.12.1xx-y   (a maintainer's command; the package is
                                 linux-source-6.12, series.package_of)

  1. fetch the new version's tarball and record it as a commit on top of
     the current 'upstream' (branch rebase/upstream);
  2. apply every checkpoint's patches onto it with three-way merges
     (branches rebase/cp0, rebase/cp1 ...); a merge that needs a human
     stops here, naming the patch and the files; after resolving it
     ("git am --continue" in build/linux), the same command goes on from
     the branches that are complete;
  3. rewrite the patches from those branches (only the diffs change:
     subjects, messages and the notes after "---" stay), kept aside;
  4. build the new upstream (rebase/upstream), run every lab on it, and
     rewrite the labs' expected outputs, kept aside too;
  5. only then swap: the new patches, patches/BASE and expected outputs
     replace the old ones, upstream and lab/cpN move onto the new branches
     in one git transaction; show how the files changed. A rebase that
     stops before step 5 has changed nothing in patches/ or labs/.

Also: does the series apply to a given version? (make check asks it of the
newest version the archive offers.)
"""

import os
import re
import shutil
import subprocess

from . import grade, series, source, tree, ui
from .errors import HarnessError
from .kernels import UPSTREAM, KernelId

_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)
_DIFFSTAT = re.compile(r"^ \S.* \| +(\d+|Bin)|^ \d+ files? changed")


class RebaseError(HarnessError):
    pass


def split_patch(text):
    """(head, notes, body) of a git format-patch file: head up to and with
    the first "---" line, the notes written after it (lines before the
    diffstat), and the rest (diffstat and diff)."""
    head, sep, rest = text.partition("\n---\n")
    if not sep:
        raise RebaseError("not a git format-patch file (no '---' line)")
    lines = rest.split("\n")
    i = 0
    while i < len(lines) and not _DIFFSTAT.match(lines[i]) and not lines[i].startswith("diff --git"):
        i += 1
    return head + sep, "\n".join(lines[:i]) + ("\n" if i else ""), "\n".join(lines[i:])


def respliced(old_text, new_text):
    """The new patch text (from format-patch of the rebased commit) with the
    old one's notes put back after its "---" line."""
    _h, notes, _b = split_patch(old_text)
    head, _n, body = split_patch(new_text)
    return head + notes + body


def touched_files(patches):
    files = []
    for path in patches:
        with open(path, encoding="utf-8", errors="replace") as f:
            for a, b in _DIFF_FILE.findall(f.read()):
                for name in (a, b):
                    if name not in files:
                        files.append(name)
    return files


def all_patches():
    return [p for cp in series.checkpoints() for p in cp.patches()]


def _git(path, *args, check=True):
    r = subprocess.run(["git", "-C", path] + list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RebaseError(f"git {' '.join(args)}: {r.stderr.strip()}")
    return r


def applies(build_dir, version):
    """(True, words) when every patch of the series applies to 'version'
    with three-way merges, (False, words naming the patch) when not.
    Only the files the series touches are extracted. Raises
    source.SourceError when the version cannot be fetched."""
    tarball = source.fetch(build_dir, version)
    patches = all_patches()
    work = os.path.join(build_dir, "sources", version, "apply-test")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    top = subprocess.run(["tar", "-tJf", tarball], capture_output=True, text=True)
    first = (top.stdout.split("/", 1)[0] if top.returncode == 0
             else series.package_of(version))
    subprocess.run(["tar", "-C", work, "-xJf", tarball, "--strip-components=1"]
                   + [f"{first}/{name}" for name in touched_files(patches)],
                   capture_output=True)      # files the series creates are missing: fine
    _git(work, "init", "-q", "-b", UPSTREAM)
    _git(work, "add", "-f", "-A")
    _git(work, "-c", "user.name=ftlab", "-c", "user.email=ftlab@invalid",
         "commit", "-q", "--allow-empty", "-m", version)
    for path in patches:
        r = _git(work, "-c", "user.name=ftlab", "-c", "user.email=ftlab@invalid",
                 "am", "-q", "--3way", path, check=False)
        if r.returncode != 0:
            conflicts = _git(work, "diff", "--name-only", "--diff-filter=U",
                             check=False).stdout.split()
            conflicts += [f for f in re.findall(r"^error: patch failed: ([^:\s]+)",
                                                 r.stdout + r.stderr, re.M)
                          if f not in conflicts]
            shutil.rmtree(work, ignore_errors=True)
            return False, (f"stops at {os.path.relpath(path, series.ROOT)}"
                           + (f" (conflict in {', '.join(conflicts)})" if conflicts else ""))
    shutil.rmtree(work, ignore_errors=True)
    return True, f"all {len(patches)} patches apply"


# --- make rebase -----------------------------------------------------------

def _branch_done(t, branch, parent, patches):
    """Does 'branch' hold exactly these patches on top of 'parent'?"""
    if not t.branch_exists(branch):
        return False
    r = _git(t.path, "log", "--reverse", "--format=%s", f"{parent}..{branch}", check=False)
    subjects = r.stdout.splitlines() if r.returncode == 0 else None
    want = []
    for path in patches:
        with open(path, encoding="utf-8", errors="replace") as f:
            m = re.search(r"^Subject: (?:\[PATCH[^\]]*\] )?(.*(?:\n .*)*)", f.read(), re.M)
        want.append(re.sub(r"\n ", " ", m.group(1)) if m else "")
    return subjects == want


def import_version(t, version, tarball):
    """Branch rebase/upstream: upstream plus one commit holding 'version'."""
    if t.branch_exists("rebase/upstream"):
        return
    ui.step(f"recording {series.package_of(version)} {version} on top of 'upstream' (branch rebase/upstream)")
    t.git("checkout", "-q", "-B", "rebase/upstream", UPSTREAM)
    new = tree.unpack(tarball, os.path.join(t.build_dir, "linux.rebasing"))
    os.rename(os.path.join(t.path, ".git"), os.path.join(new, ".git"))
    shutil.rmtree(t.path)
    os.rename(new, t.path)
    t.commit_all(f"{series.package_of(version)} {version}, as Debian ships it")


def apply_checkpoints(t):
    parent = "rebase/upstream"
    for cp in series.checkpoints():
        branch = f"rebase/cp{cp.number}"
        patches = cp.patches()
        if _branch_done(t, branch, parent, patches):
            ui.info(f"checkpoint {cp.number}: already on the new version")
            parent = branch
            continue
        ui.step(f"applying checkpoint {cp.number} ({cp.name}) with three-way merges")
        t.git("checkout", "-q", "-B", branch, parent)
        for patch in patches:
            r = _git(t.path, "am", "-q", "--3way", patch, check=False)
            if r.returncode != 0:
                conflicts = _git(t.path, "diff", "--name-only", "--diff-filter=U",
                                 check=False).stdout.split()
                raise RebaseError(
                    f"{os.path.relpath(patch, series.ROOT)} needs a human: it conflicts in "
                    f"{', '.join(conflicts) or '(see below)'}\n{(r.stdout + r.stderr).strip()}\n"
                    f"Resolve the conflict in {t.path} (edit, 'git add'), run "
                    f"'git -C {t.path} am --continue', then run the same 'make rebase' again: "
                    "it goes on from there.")
        parent = branch


def rewritten_patches(t):
    """{path: new text} of the patches/NN-slug/*.patch files whose diffs
    the rebase/cpN branches change, numbered as before ([PATCH 2/8]),
    with the same abbreviation of blob ids. Nothing is written: see swap()."""
    staged = {}
    parent = "rebase/upstream"
    for cp in series.checkpoints():
        branch = f"rebase/cp{cp.number}"
        olds = cp.patches()
        if olds:
            with open(olds[0], encoding="utf-8") as f:
                m = re.search(r"^index ([0-9a-f]+)\.\.", f.read(), re.M)
            abbrev = f"--abbrev={len(m.group(1))}" if m else "--abbrev"
            numbered = "-n" if len(olds) > 1 else "-N"
            out = os.path.join(t.build_dir, "rebase-patches", cp.name)
            shutil.rmtree(out, ignore_errors=True)
            t.git("format-patch", "-q", numbered, abbrev, "-o", out, f"{parent}..{branch}")
            news = sorted(os.listdir(out))
            for path, name in zip(olds, news):
                with open(path, encoding="utf-8") as f:
                    old = f.read()
                with open(os.path.join(out, name), encoding="utf-8") as f:
                    text = respliced(old, f.read())
                if text != old:
                    staged[path] = text
            shutil.rmtree(out)
        parent = branch
    return staged


def base_text(version):
    """patches/BASE naming 'version', its comments kept, in the form it has
    (a version alone, or the package and the version: the package of the
    new version, series.package_of). A "fetch" line names the old
    version's .deb: it goes (the maintainer records the new one's)."""
    with open(series.BASE_FILE, encoding="utf-8") as f:
        text = re.sub(r"^fetch .*\n?", "", f.read(), flags=re.M)
    line = re.search(r"^(?!#)\S.*$", text, re.M)
    words = line.group(0).split() if line else []
    new = f"{series.package_of(version)} {version}" if len(words) == 2 else version
    if not line:
        return text + new + "\n"
    return text[:line.start()] + new + text[line.end():]


def swap(staged):
    """Write the staged files ({path: text}) of the repository: each to a
    file beside it first, then every one renamed over its old self. What
    can fail (a full disk) fails before any of them changes."""
    for path, text in staged.items():
        with open(path + ".rebase-new", "w", encoding="utf-8") as f:
            f.write(text)
    for path in staged:
        os.replace(path + ".rebase-new", path)


def move_branches(t, version):
    """upstream and lab/cpN onto the rebase/ branches, all in one git
    transaction, then the digests of the (rewritten) patches and the
    tree's version stamp; the rebase/ branches go."""
    cps = series.checkpoints()
    t.git("checkout", "-q", "--detach", "rebase/upstream")
    moves = [(UPSTREAM, "rebase/upstream")] + [(cp.branch, f"rebase/cp{cp.number}")
                                                 for cp in cps]
    transaction = "start\n" + "".join(
        f"update refs/heads/{branch} {t.git('rev-parse', new)}\n" for branch, new in moves
    ) + "prepare\ncommit\n"
    r = subprocess.run(["git", "-C", t.path, "update-ref", "--stdin"], input=transaction,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RebaseError(f"git update-ref: {r.stderr.strip()}")
    for cp in cps:
        t.git("config", f"ftlab.cp{cp.number}.digest", series.series_digest(cp.number))
    t.git("checkout", "-q", UPSTREAM)
    for name in ["rebase/upstream"] + [f"rebase/cp{cp.number}" for cp in cps]:
        t.git("branch", "-D", name)
    with open(t.stamp, "w") as f:
        f.write(version + "\n")


def expected_text(old_text, lab):
    """A lab's expected file rewritten from a run on upstream: the header
    comments stay, each check's section is what the run printed, and the
    sections that do not hold upstream's output stay as they were: the
    ours-only checks (upstream skips them) and the older checkpoints'
    section of a replaced-at-N check (the run gives its "ID@N" one)."""
    header = old_text.split("\n## check: ", 1)[0].rstrip("\n") + "\n"
    old = grade.parse_expected(old_text)
    sections = []
    for check in lab.checks:
        keep = check.kind == "ours-only" or check.replaced_at is not None
        sections.append((check.id, old.get(check.id, []) if keep
                         else grade.normalise(check.output)))
        if check.replaced_at is not None:
            sections.append((grade.replaced_id(check), grade.normalise(check.output)))
    return header + "".join(f"\n## check: {ident}\n" + "".join(line + "\n" for line in lines)
                            for ident, lines in sections)


def record_expected(session):
    """Run every lab on the new upstream (branch rebase/upstream, built as
    'upstream') and return {path: text} of the labs' expected files it
    changes. Nothing is written: see swap()."""
    from . import gdbrun, protocol
    k = session.kernel(KernelId.upstream().built_from("rebase/upstream"))
    labs = [cp for cp in series.checkpoints() if cp.has_lab]
    plain = [cp for cp in labs if not cp.needs_gdb]
    reports = {}
    if plain:
        run, report = session.boot(k, [protocol.lab_item(cp.number) for cp in plain],
                                   "rebase-upstream")
        if not run.ok:
            raise RebaseError("the labs did not run on the new upstream:\n"
                              + "\n".join(run.explain()))
        reports = {cp.number: report for cp in plain}
    for cp in labs:
        if cp.needs_gdb:
            _ok, _ev, grun = gdbrun.unattended(k, session.initrd(), cp, gdbrun.free_port(),
                                               session.logs,
                                               lambda plan: session.timeout_for(plan, k))
            reports[cp.number] = protocol.parse(grun.console)
    staged = {}
    for cp in labs:
        lab = reports[cp.number].labs.get(f"{cp.number:02d}")
        if lab is None or not lab.finished:
            raise RebaseError(f"lab {cp.number:02d} did not finish on the new upstream")
        path = os.path.join(cp.lab_dir, "expected")
        with open(path, encoding="utf-8") as f:
            old = f.read()
        new = expected_text(old, lab)
        if new != old:
            staged[path] = new
    return staged


def rebase(session, version):
    """make rebase BASE=version. Everything that takes time or can fail
    (the merges, the build, the labs on the new upstream) works on the
    rebase/ branches and on copies; patches/, labs/ and the tree's
    branches change only at the end, together (swap, move_branches), so
    that a rebase that stops half way leaves them as they were, and
    running it again goes on."""
    t = session.tree
    session.prepare()
    t.ensure_clean()
    if t.version == version:
        ui.info(f"the series is already on {version}")
        return 0
    tarball = source.fetch(session.build_dir, version)
    with tree.lock(session.build_dir):
        import_version(t, version, tarball)
        apply_checkpoints(t)
        ui.step("rewriting the patches from the rebase/ branches (in build/, for now)")
        staged = rewritten_patches(t)
    staged[series.BASE_FILE] = base_text(version)
    ui.step(f"recording the labs' expected outputs on {version}")
    staged.update(record_expected(session))
    ui.step("moving patches/, patches/BASE, the labs' expected outputs and the branches "
            f"to {version}")
    with tree.lock(session.build_dir):
        swap(staged)
        move_branches(t, version)
        t.version = version
    changed = subprocess.run(["git", "-C", series.ROOT, "diff", "--stat", "--", "patches", "labs"],
                             capture_output=True, text=True).stdout
    ui.step("what changed (git diff --stat; 'git diff labs' shows the outputs):")
    ui.block(changed.splitlines() or ["nothing"])
    ui.info("next: 'make check' on the new version, then commit patches/ and labs/")
    return 0
