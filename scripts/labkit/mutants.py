"""make mutants N: how many plausible wrong bodies of exercise N's holes
make grade N's checks catch. The grader's own test: a wrong body that
scores full marks is a hole in the grading, not in the learner's work.

exercises/NN-slug/mutants holds the wrong bodies, one block each, a
block starting with its "mutant ID" line ("#" lines are comments):

    mutant 3.3-leak-probe
    hole: 3
    family: memory
    catch: report
    what: the error path after soft mode forgets to free the probe
    known: the lab never makes soft mode fail (optional: a measured miss)
    kernel: debug (optional: run it on the debug kernel as well)
    @@
     	if (ret < 0) {
     		trace_event_put_ref(file->event_call);
    -		kfree(ep);
     		return ret;

ID is N.K-slug, K the hole. family: one of FAMILIES. catch: the check
ids of lab N that must fail, or "report" (a kernel report or crash, on
the debug kernel). Each "@@" starts an edit of the hole's reference
lines, as a unified diff without line numbers: " " a line kept, "-" a
line taken out, "+" a line put in; an empty line is an empty line kept.
The kept and taken-out lines, in order, must occur exactly once in the
hole (holes.span of the reference, lab/cpN), so that an edit is found by
its text, as a hole is, and survives a rebase.

A mutant runs as a kernel of its own: checkpoint N with the edited body
in its hole (branch mutant/cpN-ID of build/linux, made as exercise's
one-hole branches are), its object folder started from checkpoint N's
(only the hole's file recompiles) and removed once graded. It boots
with lab N and is CAUGHT when a check of the lab fails (the named one
or another), the run ends with a kernel report, a crash or a hang, or
the guest reports an error; else MISSED. A mutant whose catch is
"report", or whose data says "kernel: debug", that the plain kernel
misses runs again on the debug kernel (KASAN, lockdep, kmemleak).
"""

import json
import os
import re
import shutil

from . import exercise, grade, holes, kbuild, series, tree, ui
from .errors import HarnessError
from .kernels import KernelId

FAMILIES = {
    "memory": "a leak, a use after free, a double free",
    "references": "a missing get or put of the event's or the module's reference",
    "ordering": "registered before soft mode, published before init, a missing barrier",
    "concurrency": "a plain count where the READ_ONCE/atomic protocol is needed",
    "semantics": "a wrong state, a wrong count, a wrong answer to :0",
    "errno": "a wrong error code",
}
REPORT = "report"
FIELDS = ("hole", "family", "catch", "what", "known", "kernel")
REQUIRED = ("hole", "family", "catch", "what")
# make check's light sample: one mutant whose catcher is a plain lab
# check, of the last checkpoint (built right after upstream in make
# check), in a small file (trace_clock.c: one object recompiles).
LIGHT_SAMPLE = (7, "7.1-raw-jiffies")


class MutantError(HarnessError):
    """Mutant data the harness cannot use: a defect of the data."""


class Mutant:
    def __init__(self, number, ident, fields, edits, where=""):
        self.number = number
        self.id = ident
        self.hole = int(fields["hole"]) if fields["hole"].isdigit() else fields["hole"]
        self.family = fields["family"]
        self.catch = fields["catch"].split()
        self.what = fields["what"]
        self.known = fields.get("known", "")
        self.kernel = fields.get("kernel", "plain")
        self.edits = edits          # [(old lines, new lines)]
        self.where = where

    @property
    def wants_debug(self):
        return REPORT in self.catch or self.kernel == "debug"

    def __repr__(self):
        return f"Mutant({self.id!r})"


def mutants_path(cp):
    return os.path.join(holes.exercise_dir(cp), "mutants")


def has_mutants(cp):
    return os.path.isfile(mutants_path(cp))


# --- the data -----------------------------------------------------------------


def _hunks(lines, where):
    """[(old, new)] of a block's edit lines ("@@" lines separate hunks)."""
    edits, old, new, started = [], None, None, False
    for n, line in lines:
        if line.startswith("@@"):
            if started:
                edits.append((old, new))
            old, new, started = [], [], True
            continue
        if not started:
            raise MutantError(f"{where}:{n}: an edit line before the first '@@'")
        if line.startswith("#"):
            continue
        mark, text = (line[:1], line[1:]) if line else (" ", "")
        if mark == " ":
            old.append(text)
            new.append(text)
        elif mark == "-":
            old.append(text)
        elif mark == "+":
            new.append(text)
        else:
            raise MutantError(f"{where}:{n}: an edit line starts with ' ', '-' or '+': {line!r}")
    if started:
        edits.append((old, new))
    for old, new in edits:
        while old and new and old[-1] == "" and new[-1] == "":     # blank lines after it
            old.pop()
            new.pop()
    return edits


def parse(text, number, name="mutants"):
    """The mutants of a mutants file, in order."""
    out, block = [], None
    blocks = []
    for n, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\n")
        if line.startswith("mutant "):
            block = [(n, line)]
            blocks.append(block)
        elif block is not None:
            block.append((n, line))
        elif line.strip() and not line.startswith("#"):
            raise MutantError(f"{name}:{n}: a line before the first 'mutant ID' line")
    seen = set()
    for block in blocks:
        n0, head = block[0]
        ident = head.split(None, 1)[1].strip()
        where = f"{name}:{n0}"
        fields, rest = {}, []
        for i, (n, line) in enumerate(block[1:], 1):
            if line.startswith("@@"):
                rest = block[i:]
                break
            if not line.strip() or line.startswith("#"):
                continue
            key, sep, value = line.partition(":")
            if not sep or key.strip() not in FIELDS:
                raise MutantError(f"{name}:{n}: '{line}' is not one of the fields "
                                  f"{', '.join(FIELDS)}, nor '@@'")
            if key.strip() in fields:
                raise MutantError(f"{name}:{n}: '{key.strip()}' given twice")
            fields[key.strip()] = value.strip()
        missing = [f for f in REQUIRED if not fields.get(f)]
        if missing:
            raise MutantError(f"{where}: mutant {ident} has no {', '.join(missing)}")
        if ident in seen:
            raise MutantError(f"{where}: mutant {ident} is there twice")
        seen.add(ident)
        edits = _hunks(rest, name)
        if not edits:
            raise MutantError(f"{where}: mutant {ident} has no edit ('@@' and its lines)")
        out.append(Mutant(number, ident, fields, edits, where))
    return out


def load(cp):
    text, name = holes.read_data(mutants_path(cp), MutantError,
                                 f"exercise {cp.number} has no mutants")
    return parse(text, cp.number, name)


def problems(mutant_list, hole_list, check_ids):
    """What is wrong with a file's mutants against its exercise: a hole
    that does not exist, a catcher that is no check of the lab (nor
    "report"), an unknown family or kernel, an id that does not say its
    hole. [] when nothing is."""
    out = []
    numbers = {h.number for h in hole_list}
    for m in mutant_list:
        where = f"{m.where}: {m.id}"
        if m.hole not in numbers:
            out.append(f"{where}: exercise {m.number} has no hole {m.hole}")
        if not m.id.startswith(f"{m.number}.{m.hole}-"):
            out.append(f"{where}: its id starts with '{m.number}.{m.hole}-' (exercise.hole-)")
        if not re.match(r"^[0-9]+\.[0-9]+-[a-z0-9-]+$", m.id):
            out.append(f"{where}: an id is N.K-words (lower case, digits, '-')")
        if m.family not in FAMILIES:
            out.append(f"{where}: family '{m.family}' is not one of {', '.join(FAMILIES)}")
        if m.kernel not in ("plain", "debug"):
            out.append(f"{where}: kernel '{m.kernel}': say plain or debug")
        for c in m.catch:
            if c != REPORT and c not in check_ids:
                out.append(f"{where}: catch '{c}' is no check of lab {m.number:02d} "
                           f"(its checks: {' '.join(check_ids)}; or '{REPORT}')")
    return out


def apply(lines, hole, mutant):
    """The lines of a file (its reference) with the mutant's edits made in
    the hole; MutantError when an edit is not found exactly once."""
    first, end = holes.span(lines, hole)
    body = lines[first:end]
    for i, (old, new) in enumerate(mutant.edits, 1):
        want = [l.rstrip() for l in old]
        hits = [k for k in range(len(body) - len(want) + 1)
                if [l.rstrip() for l in body[k:k + len(want)]] == want]
        if len(hits) != 1:
            how = "not found" if not hits else f"found {len(hits)} times"
            raise MutantError(f"{mutant.where}: {mutant.id}: edit {i} {how} in hole "
                              f"{mutant.number}.{hole.number} ({hole.function}())"
                              + (f"; its first line: {old[0]!r}" if old else ""))
        k = hits[0]
        body = body[:k] + list(new) + body[k + len(want):]
    return lines[:first] + body + lines[end:]


def mutant_text(reference_text, hole, mutant):
    """The text of the hole's file with the mutant in it."""
    return "\n".join(apply(reference_text.split("\n"), hole, mutant))


# --- the decision -------------------------------------------------------------


class Outcome:
    """What one mutant's runs showed: caught (by: the checks or the
    report that caught it), or missed; on: the kernel that decided."""

    def __init__(self, mutant, caught, by=(), on="plain", defect=""):
        self.mutant, self.caught, self.by, self.on = mutant, caught, list(by), on
        self.defect = defect

    @property
    def expected(self):
        return any(c in self.by for c in self.mutant.catch) or (
            REPORT in self.mutant.catch and any(b.startswith("report") for b in self.by))

    def line(self):
        m = self.mutant
        if self.defect:
            return f"DEFECT {m.id}: {self.defect}"
        if self.caught:
            on = " on the debug kernel" if self.on == "debug" else ""
            extra = "" if self.expected else f" (expected: {' '.join(m.catch)})"
            return f"CAUGHT {m.id} by {' '.join(self.by)}{on}{extra}"
        known = f" [known: {m.known}]" if m.known else ""
        return f"MISSED {m.id} (expected: {' '.join(m.catch)}){known}"

    def as_dict(self):
        m = self.mutant
        return {"id": m.id, "exercise": m.number, "hole": m.hole, "family": m.family,
                "catch": m.catch, "what": m.what,
                "outcome": "defect" if self.defect else "caught" if self.caught else "missed",
                "by": self.by, "kernel": self.on, "known": m.known, "defect": self.defect}


def decide(mutant, failed, problem="", on="plain"):
    """The verdict on a mutant from its run: failed, the ids of lab N's
    checks that failed or did not finish; problem, the words of a run that
    did not end cleanly ("crash", "kernel-report", "timeout", a guest
    error), or "". Caught by the named checks that failed, else by the
    others, and by the report."""
    named = [c for c in mutant.catch if c in failed]
    by = named or sorted(failed)
    if problem:
        by.append(f"report ({problem})")
    return Outcome(mutant, bool(failed or problem), by, on)


def failed_checks(report, cp, kid):
    """The ids of lab cp's checks that failed on kernel kid (graded as on
    checkpoint N, a debug kernel's recorded differences allowed) or that
    never finished."""
    key = f"{cp.number:02d}"
    expected = grade.load_expected(cp.lab_dir)
    lab = report.labs.get(key)
    if lab is None:
        return grade.check_ids(expected)
    own = KernelId.of(cp.number)
    recorded = grade.load_debug_differences() if kid.debug else {}
    failed, ran = [], set()
    for check in lab.checks:
        ran.add(check.id)
        if check.rc is None:
            failed.append(check.id)
            continue
        outcome = grade.grade_check(check, expected, own, cp.number)
        if kid.debug:
            outcome = grade.grade_on_debug(check, outcome, expected, own, cp.number,
                                           recorded.get((key, check.id)))
        if not outcome.ok:
            failed.append(check.id)
    not_here = cp.not_run_on(kid)
    failed += [i for i in grade.check_ids(expected) if i not in ran and i not in not_here]
    return failed


# --- the runs -----------------------------------------------------------------


def mutant_ref(mutant):
    return f"mutant/cp{mutant.number}-{mutant.id}"


def prepared(session, cp, chosen):
    """{mutant id: its file's text with the mutant in it} for the chosen
    mutants, and the defects of those that do not apply."""
    hole_list = {h.number: h for h in holes.load(cp)}
    texts, defects = {}, {}
    with tree.lock(session.build_dir):
        session.tree.prepare_branch(cp.number)
        refs = exercise.reference_files(session.tree, cp.number, list(hole_list.values()))
    for m in chosen:
        hole = hole_list.get(m.hole)
        if hole is None:
            defects[m.id] = f"exercise {cp.number} has no hole {m.hole}"
            continue
        try:
            texts[m.id] = (hole.file, mutant_text(refs[hole.file], hole, m))
        except HarnessError as e:
            defects[m.id] = str(e)
    return texts, defects


def boot_and_decide(session, cp, m, k):
    """Boot lab N on mutant kernel k; its Outcome."""
    ok, report, run = exercise.boot_lab(session, k, cp, f"mutant-{m.id}{k.id.spec.suffix}")
    problem = ""
    if not ok:
        # a qemu.Run has a status; a gdb run (gdbrun.BatchRun) its guest's
        problem = getattr(getattr(run, "guest", run), "status", "") or "the run broke"
    elif report.errors:
        problem = "guest error: " + report.errors[0]
    return decide(m, failed_checks(report, cp, k.id), problem, k.id.variant)


def run_one(session, cp, m, files, debug=True):
    """Build, boot and grade one mutant; its object folders are removed
    afterwards. debug: a mutant that wants it (Mutant.wants_debug) and
    that the plain kernel missed runs on the debug kernel too."""
    ref = mutant_ref(m)
    with tree.lock(session.build_dir):
        exercise.make_mutant(session.tree, cp.number, {files[0]: files[1]}, ref,
                             f"mutant {m.id}: {m.what}")
    variants = ["plain"] + (["debug"] if debug and m.wants_debug else [])
    outcome = None
    try:
        for variant in variants:
            if outcome is not None and outcome.caught:
                break
            outcome = build_and_boot(session, cp, m, ref, variant)
            if outcome.defect:
                break
    finally:
        with tree.lock(session.build_dir):
            session.tree.git("branch", "-D", ref, check=False)
    return outcome


def build_and_boot(session, cp, m, ref, variant):
    """Mutant m's kernel of a variant, built from ref, booted and graded;
    its object folder removed afterwards. A build that fails is a defect
    of the data (the body does not compile)."""
    kid = KernelId.of(cp.number, variant).built_from(ref, "mutant")
    if variant != "plain":
        session.kernel(KernelId.of(cp.number, variant))     # the seed, when missing
    k = seed(session, kid)
    try:
        try:
            k = session.kernel(kid)
        except HarnessError as e:
            return Outcome(m, False, on=variant, defect="it does not build: "
                           + " ".join(l.strip() for l in str(e).splitlines()[:3]))
        return boot_and_decide(session, cp, m, k)
    finally:
        shutil.rmtree(k.obj, ignore_errors=True)


def fresh_seed(session, number, several=True):
    """Checkpoint N's kernel, built: every mutant's object folder starts
    from its folder. A checkout since it was built (another checkpoint
    and back) leaves files newer than its objects, which each mutant
    would compile again: with several mutants to come, make runs once in
    its folder (its stamp removed) and brings them up to date there."""
    kid = KernelId.of(number)
    k = session.kernel(kid)
    if several and os.path.exists(k.stamp):
        os.unlink(k.stamp)
        k = session.kernel(kid)
    return k


def seed(session, kid):
    """Start mutant kid's object folder from its checkpoint's (a folder
    left by a run cut short goes first). The mutant differs from the
    checkpoint in one function of kernel/trace, never in a Kconfig file:
    the checkpoint's configuration is the mutant's, and its stamp comes
    along, so that the build does not configure again."""
    k = kbuild.Kernel(session.build_dir, kid)
    shutil.rmtree(k.obj, ignore_errors=True)
    origin = kbuild.Kernel(session.build_dir, KernelId.of(kid.checkpoint, kid.variant))
    k.seed(origin.obj)
    stamp = os.path.join(origin.obj, ".ftlab-config")
    if os.path.isdir(k.obj) and os.path.exists(stamp):
        shutil.copy2(stamp, os.path.join(k.obj, ".ftlab-config"))
    return k


def chosen_mutants(cp, ident=None):
    """Exercise cp's mutants, or those ident names (ids separated by
    spaces or commas), in the file's order; MutantError for an id that
    is none of them."""
    found = load(cp)
    if ident is None:
        return found
    wanted = ident.replace(",", " ").split()
    unknown = [i for i in wanted if i not in {m.id for m in found}]
    if unknown:
        raise MutantError(f"exercise {cp.number} has no mutant '{unknown[0]}' (its mutants: "
                          + " ".join(m.id for m in found) + ")")
    return [m for m in found if m.id in wanted]


def record(tally, outcome):
    """One verdict per mutant: caught passes; a miss the data records as
    known (its 'known:' reason) is skipped, any other miss and a defect
    fail."""
    m = outcome.mutant
    ui.emit([outcome.line()])
    if outcome.defect:
        tally.record(False, f"mutant {m.id} builds and runs", outcome.defect)
    elif outcome.caught:
        tally.record(True, f"mutant {m.id} is caught by {' '.join(outcome.by)}"
                     + (" on the debug kernel" if outcome.on == "debug" else ""))
    elif m.known:
        tally.skip(f"mutant {m.id} is caught", f"a known miss: {m.known}")
    else:
        tally.record(False, f"mutant {m.id} is caught",
                     f"(missed; expected: {' '.join(m.catch)})")


def run_exercise(session, number, tally, ident=None, debug=True):
    """Every mutant of exercise N (or the one named ident): [Outcome]."""
    cp = series.lookup(number)
    chosen = chosen_mutants(cp, ident)
    check_ids = [c.id for c in cp.checks()]
    bad = problems(chosen, holes.load(cp), check_ids)
    if bad:
        raise MutantError("the mutants' data has defects:\n" + "\n".join(bad))
    texts, defects = prepared(session, cp, chosen)
    fresh_seed(session, number, several=len(chosen) > 1)
    outcomes = []
    for m in chosen:
        ui.step(f"mutant {m.id} ({m.family}): {m.what}")
        if m.id in defects:
            outcome = Outcome(m, False, defect=defects[m.id])
        else:
            try:
                outcome = run_one(session, cp, m, texts[m.id], debug)
            except HarnessError as e:
                outcome = Outcome(m, False, defect=str(e).splitlines()[0])
        record(tally, outcome)
        outcomes.append(outcome)
    return outcomes


def summary_lines(outcomes):
    """caught/total per exercise, and the misses."""
    lines = []
    for number in sorted({o.mutant.number for o in outcomes}):
        mine = [o for o in outcomes if o.mutant.number == number]
        caught = sum(1 for o in mine if o.caught)
        defects = sum(1 for o in mine if o.defect)
        lines.append(f"exercise {number}: {caught}/{len(mine)} caught"
                     + (f" ({defects} defect(s) of the data)" if defects else ""))
    return lines


def write_results(results_dir, outcomes):
    """mutants.json and mutants.csv in results_dir; returns their paths."""
    os.makedirs(results_dir, exist_ok=True)
    rows = [o.as_dict() for o in outcomes]
    path = os.path.join(results_dir, "mutants.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)
        f.write("\n")
    csv_path = os.path.join(results_dir, "mutants.csv")
    import csv
    with open(csv_path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "exercise", "hole", "family", "outcome", "by", "kernel", "catch",
                    "known", "defect"])
        for r in rows:
            w.writerow([r["id"], r["exercise"], r["hole"], r["family"], r["outcome"],
                        " ".join(r["by"]), r["kernel"], " ".join(r["catch"]), r["known"],
                        r["defect"]])
    return [path, csv_path]


def run(session, number, ident=None, results_dir=None, debug=True):
    """make mutants N [ID=...] [RESULTS=DIR]: the exit code."""
    session.prepare()
    tally = ui.Tally(f"mutants {number:02d}")
    outcomes = run_exercise(session, number, tally, ident, debug)
    print()
    for line in summary_lines(outcomes):
        print(line)
    if results_dir:
        paths = write_results(results_dir, outcomes)
        ui.info("outcomes: " + ", ".join(os.path.relpath(p) for p in paths))
    return tally.close(results_dir, f"make mutants {number}")


def list_mutants(session, number, ident=None):
    """make mutants N LIST=1: each mutant, its hole, family, catcher and
    what it does, and whether it applies to its hole; builds nothing.
    The exit code: 1 when the data has a defect."""
    cp = series.lookup(number)
    chosen = chosen_mutants(cp, ident)
    bad = problems(chosen, holes.load(cp), [c.id for c in cp.checks()])
    _texts, defects = prepared(session, cp, chosen)
    width = max(len(m.id) for m in chosen)
    for m in chosen:
        state = "DEFECT" if m.id in defects else "ok"
        print(f"  {m.id:<{width}}  {m.family:<11}  {state:<6}  catch: {' '.join(m.catch)}")
        print(f"  {'':<{width}}  {m.what}")
        if m.id in defects:
            ui.block(defects[m.id].splitlines())
    ui.block(bad)
    print(f"{len(chosen)} mutants, {len(defects)} that do not apply, {len(bad)} other "
          "defect(s)")
    return 1 if bad or defects else 0


# --- make check ---------------------------------------------------------------


def check_data(session, tally, numbers):
    """make check's light part, no kernel built: every exercise's mutants
    name a hole and a check that exist, cover each hole three times, and
    apply to the hole's reference lines."""
    for number in numbers:
        cp = series.lookup(number)
        label = f"mutants {number:02d}"
        if not has_mutants(cp):
            tally.record(False, f"{label}: {os.path.relpath(mutants_path(cp), series.ROOT)} "
                         "exists")
            continue
        try:
            found = load(cp)
            hole_list = holes.load(cp)
            bad = problems(found, hole_list, [c.id for c in cp.checks()])
            for hole in hole_list:
                count = sum(1 for m in found if m.hole == hole.number)
                if count < 3:
                    bad.append(f"hole {number}.{hole.number} has {count} mutant(s), not 3")
            _texts, defects = prepared(session, cp, found)
            bad += [f"{ident}: {why}" for ident, why in defects.items()]
        except HarnessError as e:
            bad = str(e).splitlines()
        tally.record(not bad, f"{label}: {len(found) if not bad else '?'} mutants, each "
                     "of a hole and a check that exist, each applying to its hole")
        ui.block(bad)


def check_part(session, tally, numbers, full=False, lanes=None):
    """make check's part: the data of every exercise's mutants
    (check_data), then with full (FULL=1) every mutant run (check_all,
    the debug kernel included where the data asks), else the light
    sample alone (check_sample). lanes: make check's guest lanes, one of
    which the builds and boots take."""
    import contextlib
    check_data(session, tally, numbers)
    with lanes.busy() if lanes is not None else contextlib.nullcontext():
        if full:
            return check_all(session, tally, numbers)
        return [check_sample(session, tally)]


def check_sample(session, tally, sample=LIGHT_SAMPLE):
    """make check's light sample: one mutant, plain kernel only, whose
    catcher is a plain lab check; its verdict."""
    number, ident = sample
    try:
        cp = series.lookup(number)
        (m,) = chosen_mutants(cp, ident)
        texts, defects = prepared(session, cp, [m])
        if m.id in defects:
            outcome = Outcome(m, False, defect=defects[m.id])
        else:
            outcome = run_one(session, cp, m, texts[m.id], debug=False)
    except HarnessError as e:
        tally.record(False, f"mutant {ident}", str(e).splitlines()[0])
        return None
    record(tally, outcome)
    return outcome


def check_all(session, tally, numbers):
    """make check FULL=1: every mutant of every exercise, on the debug
    kernel too where the data asks and the plain one misses."""
    outcomes = []
    for number in numbers:
        if not has_mutants(series.lookup(number)):
            continue
        try:
            outcomes += run_exercise(session, number, tally, debug=True)
        except HarnessError as e:
            tally.record(False, f"mutants {number:02d}", str(e).splitlines()[0])
            ui.block(str(e).splitlines()[1:])
    ui.block(summary_lines(outcomes), indent="    ")
    return outcomes
