"""make grade N: score a learner's checkpoint N, as xv6's "make grade" does.

The learner's kernel boots to run every lab up to N (a "# flags: gdb"
lab under gdb), then again for the ftracetest matrix list and the
conformance corpus; the score comes from:

  * lab N's feature checks (kind "check"): each is worth its points, all
    or nothing. exercises/NN-slug/points may say "ID POINTS" per check
    (and "conformance", "ftracetest", "checkpatch" for the lines below);
    what it does not list is worth DEFAULT_POINTS.
  * the ftracetest matrix rows that turn PASS at N (labs/ftracetest.matrix,
    checkpoint column N): one line, its points shared among the rows.
  * the conformance cases that turn right at N (listed for cp(N-1) in
    labs/conformance/expected-differences and not for cpN): one line, its
    points shared among the cases. A case is right when its output is
    upstream's; upstream's run is the reference, read from the last
    run that has it (make grade's or make check's log) or made once.
  * checkpatch.pl --strict on the learner's diff (work/NN.patch).

Regressions carry no points: the labs before N, lab N's guards, the
matrix rows and conformance cases already right before N, and a guest
run that ends with a problem in its kernel log. The score measures what
the learner wrote for N; a regression is a FAIL line, and make grade
exits 1 on any FAIL, so a CI job goes red until it is fixed.

A WARN, oops or hang fails the check it hit, not the whole run: the
checks it kept from running run again in a new boot, the rest of the lab
it cut short one check at a time, so that one broken function costs only
the checks that reach it. A crash in the corpus or in ftracetest fails
the cases that did not run, and shows as a regression line.

The table is printed at the end; with a results folder, score.json (the
table) and the JUnit report (results.write) are written there.
"""

import json
import os
import re
import subprocess

from . import (checkpatch, conformance, ftmatrix, gdbrun, grade as labgrade, holes, kbuild,
               kernels, protocol, qemu, robust, series, ui)
from .errors import HarnessError
from .kernels import KernelId

EXERCISES = os.path.join(series.ROOT, "exercises")
WORK = os.path.join(series.ROOT, "work")
DEFAULT_POINTS = {"check": 10, "conformance": 10, "ftracetest": 10, "checkpatch": 5,
                  "stress": 10, "warnings": 5}
SKELETON_BEFORE = "skeleton.before"
REGRESSION = "regression"
# Runs whose log may hold upstream's conformance output, newest first
# by modification time: make grade's own reference boot and make check's.
REFERENCE_LOGS = ("grade-upstream.log", "check-upstream.log")


class Test:
    """One line of the score table: a check, a group of cases, checkpatch,
    or a regression (no points)."""

    def __init__(self, name, title, group, ok, points=0, earned=None, evidence=(), note=""):
        self.name, self.title, self.group, self.ok = name, title, group, ok
        self.points = points
        self.earned = (points if ok else 0) if earned is None else earned
        self.evidence, self.note = list(evidence), note

    @property
    def scored(self):
        return self.group != REGRESSION

    def __repr__(self):
        return f"Test({self.name!r}, ok={self.ok}, {self.earned}/{self.points})"


# --- what scores ------------------------------------------------------------------

def exercise_dir(cp):
    return os.path.join(EXERCISES, cp.name)


def parse_points(text):
    """{key: points} from a points file: "KEY POINTS" per line, '#'
    comments. KEY is a check id of the lab, or conformance, ftracetest,
    checkpatch."""
    out = {}
    for n, line in series.data_lines(text):
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            raise ValueError(f"points:{n}: want 'ID POINTS': {line}")
        out[parts[0]] = int(parts[1])
    return out


def load_points(cp):
    try:
        with open(os.path.join(exercise_dir(cp), "points"), encoding="utf-8") as f:
            return parse_points(f.read())
    except FileNotFoundError:
        return {}


def points_of(points, key, kind):
    """The points of check or line 'key' (kind: its DEFAULT_POINTS entry)."""
    return points.get(key, DEFAULT_POINTS[kind])


def share(points, right, total):
    """A group's points for 'right' of its 'total' items (rounded down, so
    full marks need every item)."""
    return points * right // total if total else 0


def turning_rows(matrix, number):
    """The matrix tests that turn PASS at checkpoint 'number'."""
    return [t for t in matrix.tests() if matrix.row(t).start == number]


def turning_cases(record, number):
    """The conformance cases that turn right at checkpoint 'number': they
    differ from 6.1 on the checkpoint before it and not on it. 'record'
    is conformance.load_expected()'s: {kernel: {case: first differing
    line}}; only the case ids matter here."""
    before = record.get(KernelId.of(number).previous().name, {})
    now = record.get(KernelId.of(number).name, {})
    return set(before) - set(now)


# --- what the guest printed, across boots ------------------------------------------

class Ran:
    """What the learner's kernel did in all its boots: the checks that
    ended, the checks a crash ended (with what the crash left), the
    ftracetest lines and the corpus output, and the problems of runs that
    no check can take the blame for."""

    def __init__(self):
        self.checks = {}        # (lab, id) -> protocol.Check that ended
        self.hit = {}           # (lab, id) -> evidence of the crash it hit
        self.reports = {}       # (lab, id) -> a report in the kernel log while it ran
        self.leaks = []         # kmemleak's report at the end of a run
        self.ftracetest = {}    # test -> lines
        self.corpus = None      # conformance.CorpusRun, None if not run
        self.problems = []      # (title, evidence)

    def take(self, report, lines, broken, title, in_log=False):
        """Add one boot: its protocol report, its console lines, and what
        went wrong ([] when it ended cleanly). A crash or hang is charged
        to the check it cut short. in_log: the problems are reports in
        the kernel log (a run that went to its end, qemu's
        "kernel-report"): each is charged to the check that was running
        (qemu.reports_by_check), kmemleak's to self.leaks. Any other
        problem (an error the guest reported, a crash in the corpus, a
        report at boot) is the run's."""
        if in_log:
            for key, found in qemu.reports_by_check(lines).items():
                if isinstance(key, tuple):
                    self.reports[key] = self.reports.get(key, []) + found
                elif key == "kmemleak":
                    self.leaks += found
                else:
                    self.problems.append((title, found))
            broken = []
        cut_short, last = False, None
        for lab in report.labs.values():
            for check in lab.checks:
                if check.rc is not None:
                    self.checks[(check.lab, check.id)] = check
                    last = (check.lab, check.id)
                elif broken:
                    self.hit[(check.lab, check.id)] = broken
                    cut_short = True
        self.ftracetest.update(report.ftracetest)
        corpus = conformance.parse_guest(lines)
        if corpus.cases or corpus.unfinished:
            self.corpus = corpus
        if broken and not cut_short and last is not None and not report.ftracetest \
                and not (corpus.cases or corpus.unfinished):
            # it crashed after the last check that ended and before the next
            # began: while lib.sh's reset_tracing took away what that check
            # left (its probes and triggers), whose code is the check's
            self.reports[last] = self.reports.get(last, []) + [
                "the kernel crashed after the check ended, while the lab removed what "
                "it left (its probes and triggers):"] + broken
        elif broken and not cut_short:
            self.problems.append((title, broken))

    def missing(self, cp, kid=None):
        """Lab cp's checks that neither ended nor were hit by a crash (of
        those kernel kid runs, series.LabCheck.runs_on)."""
        key = f"{cp.number:02d}"
        return [c.id for c in cp.checks(kid)
                if (key, c.id) not in self.checks and (key, c.id) not in self.hit]


# --- scoring -------------------------------------------------------------------

def free_checks(cp):
    """Lab N's feature checks that pass on exercise N's untouched skeleton
    (its skeleton.before has no section for them): they earn nothing."""
    if not holes.has_exercise(cp):
        return set()
    before = labgrade.load_expected(holes.exercise_dir(cp), SKELETON_BEFORE)
    # a module_check runs only on a debug kernel, never on the skeleton's
    # plain one: skeleton.before cannot say, and it is not free
    return {c.id for c in cp.checks()
            if c.kind == "check" and not c.modules and c.id not in before}


def lab_tests(ran, cp, number, points, debug=None, plain_only=False):
    """A Test per check lab cp registers, graded as on checkpoint 'number':
    lab N's feature checks score, but those that pass on the skeleton
    (free_checks), and everything else is a regression. A report in the
    kernel log while a check ran fails it. debug: lab N's run on the
    debug kernel (a DebugRun), which each check of lab N must pass too; a
    check that needs modules (series.LabCheck.modules) runs there alone,
    and has a line only in lab N. plain_only: the plain kernel alone ran
    (QUICK=1): no line for those."""
    key = f"{cp.number:02d}"
    expected = labgrade.load_expected(cp.lab_dir)
    free = free_checks(cp) if cp.number == number else set()
    tests = []
    for reg in cp.checks():
        scored = cp.number == number and reg.kind == "check"
        group = f"lab {key}" if scored else REGRESSION
        worth = points_of(points, reg.id, "check") if scored and reg.id not in free else 0
        name, title = f"lab{key}.{reg.id}", f"lab {key} {reg.id}: {reg.title}"
        if reg.modules:
            # only lab N runs on the debug kernel: an earlier lab's module
            # check does not run in this grade, nor any with QUICK=1
            if plain_only or cp.number != number:
                continue
            problem = (debug.problem(reg, expected) if debug is not None
                       else ["it runs on the debug kernel alone, which did not run"])
            evidence = [f"on {debug.label}:"] + problem if problem and debug else problem
            tests.append(Test(name, title, group, not problem, worth, evidence=evidence,
                              note="on the debug kernel alone: it loads a module"))
            continue
        check = ran.checks.get((key, reg.id))
        if check is None:
            why = ran.hit.get((key, reg.id))
            evidence = why if why else ["the check did not run"]
            tests.append(Test(name, title, group, False, worth, evidence=evidence,
                              note="crashed or hung" if why else "did not run"))
            continue
        outcome = labgrade.grade_check(check, expected, KernelId.of(number), cp.number)
        ok, evidence = outcome.ok, list(outcome.evidence)
        if (key, reg.id) in ran.reports:
            ok = False
            evidence += ["the kernel log has a report from while it ran:"] + ran.reports[(key, reg.id)]
        if debug is not None and cp.number == number:
            problem = debug.problem(reg, expected)
            if problem:
                ok = False
                evidence += [f"on {debug.label}:"] + problem
        tests.append(Test(name, title, group, ok, worth, evidence=evidence))
    return tests


def matrix_tests(ran, matrix, number, points):
    """The matrix rows that turn PASS at N (scored, one line) and those
    that passed before N (a regression line)."""
    tests = []
    turning = turning_rows(matrix, number)
    before = [t for t in matrix.tests() if matrix.row(t).start < number]
    for group, rows, worth in (("ftracetest", turning, points_of(points, "ftracetest",
                                                                  "ftracetest")),
                               (REGRESSION, before, 0)):
        if not rows:
            continue
        bad, evidence = [], []
        for test in rows:
            lines = ran.ftracetest.get(test, []) + ran.ftracetest.get(test + "@instance", [])
            got = [r for _d, r in ftmatrix.results(lines)]
            if not got or any(r != "PASS" for r in got):
                bad.append(test)
                # the test's own log, as ftracetest printed it: its last lines
                evidence.append(f"{test}: {', '.join(got) or 'no result'}, expected PASS")
                evidence += ["    | " + l for l in lines if l.strip()][-8:]
        right = len(rows) - len(bad)
        what = "turn PASS at this checkpoint" if group != REGRESSION else "passed before it"
        tests.append(Test(f"ftracetest.{'turning' if group != REGRESSION else 'before'}",
                          f"ftracetest: {right} of the {len(rows)} tests that {what}", group,
                          not bad, worth, share(worth, right, len(rows)), evidence))
    return tests


def conformance_tests(ran, corpus, reference, record, number, points):
    """The corpus cases that turn right at N (scored, one line) and those
    already right before N (a regression line); a case is right when it
    reads as on upstream (the reference run)."""
    turning = turning_cases(record, number) & {c.id for c in corpus}
    before = {c.id for c in corpus} - set(record.get(KernelId.of(number).previous().name, {}))
    if reference is None:       # nothing is right: every case fails
        differing = {c.id: conformance.Difference(c.id, [], f"no run of upstream {kernels.base_release()} to "
                                                  "compare with") for c in corpus}
    else:
        differing = conformance.compare(corpus, reference, ran.corpus or conformance.CorpusRun())
    tests = []
    worth = points_of(points, "conformance", "conformance")
    for group, ids, pts, what in (("conformance", turning, worth, "turn right at this checkpoint"),
                                  (REGRESSION, before, 0, "were right before it")):
        if not ids:
            continue
        bad = sorted(i for i in ids if i in differing)
        evidence = []
        for ident in bad[:conformance.MAX_DIFFS]:
            d = differing[ident]
            note = d.note or f"differs from upstream {kernels.base_release()}"
            evidence += [f"{ident}: {note}"] + d.diff[:20]
        right = len(ids) - len(bad)
        tests.append(Test(f"conformance.{'turning' if group != REGRESSION else 'before'}",
                          f"conformance: {right} of the {len(ids)} cases that {what}", group,
                          not bad, pts, share(pts, right, len(ids)), evidence))
    return tests


def learner_diff(patch):
    """The diff of work/NN.patch without the lines before it (make save's
    header, which checkpatch would read as a commit message without a
    Signed-off-by); "" without a patch."""
    try:
        with open(patch, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return ""
    start = text.find("diff --git ")
    return text[start:] if start >= 0 else ""


def unfilled_holes(tree_path, cp):
    """The holes of exercise cp whose TODO comment still stands in the
    learner's files (build/linux at their branch)."""
    left = []
    for path, in_file in holes.by_file(holes.load(cp)).items():
        try:
            with open(os.path.join(tree_path, path), encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        left += [h for h in in_file if holes.todo_sites(text, cp.number, h)]
    return sorted(left, key=lambda h: h.number)


def checkpatch_test(tree_path, patch, points, unfilled=()):
    """checkpatch.pl --strict on the learner's diff: no message at all,
    and every hole filled (a diff of the skeleton alone is clean)."""
    worth = points_of(points, "checkpatch", "checkpatch")
    title = f"checkpatch --strict on {os.path.relpath(patch, series.ROOT)}"
    diff = learner_diff(patch)
    if not diff:
        return Test("checkpatch", title, "checkpatch", False, worth,
                    evidence=["no work to check: 'make save N' writes it"])
    if unfilled:
        return Test("checkpatch", title, "checkpatch", False, worth,
                    evidence=["its points come with every hole filled; still open: "
                              + ", ".join(f"{h.function}()" for h in unfilled)])
    script = os.path.join(tree_path, "scripts", "checkpatch.pl")
    r = subprocess.run(checkpatch.checkpatch_command(script, "-", set()), cwd=tree_path,
                       input=diff, capture_output=True, text=True)
    problems = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    return Test("checkpatch", title, "checkpatch", not problems and r.returncode == 0, worth,
                evidence=problems[:20])


def compiler_warnings(k, files):
    """{file: the compiler's warnings about it} for the learner's files,
    from the build log of their kernel k. make compiles a file only when
    it changed, so each file's warnings are kept in the object folder
    (.ftlab-warnings.json) until a build compiles it again."""
    record_path = os.path.join(k.obj, ".ftlab-warnings.json")
    try:
        with open(record_path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        record = {}
    try:
        with open(k.log, encoding="utf-8", errors="replace") as f:
            log = f.read().splitlines()
    except OSError:
        log = []
    compiled = {m.group(1) for m in (re.match(r"\s*CC\s+(\S+)\.o$", line) for line in log) if m}
    for path in files:
        if os.path.splitext(path)[0] in compiled:
            said = re.compile(rf"(^|/){re.escape(path)}:\d+:\d+: warning: ")
            record[path] = [line.strip() for line in log if said.search(line)]
    if os.path.isdir(k.obj):
        with open(record_path, "w", encoding="utf-8") as f:
            json.dump(record, f)
    return {path: record.get(path, []) for path in files}


def warnings_test(found, points):
    """No compiler warning in the learner's files (each shown)."""
    lines = [w for path in sorted(found) for w in found[path]]
    return Test("warnings", "no compiler warning in your files", "build", not lines,
                points_of(points, "warnings", "warnings"), evidence=lines[:20])


def hole_progress(tests, cp):
    """A line per hole of exercise cp: the checks that need it (holes'
    "checks:") and how many of them pass."""
    by_name = {t.name: t for t in tests}
    lines = []
    for hole in holes.load(cp):
        mine = [by_name.get(f"lab{cp.number:02d}.{ident}") for ident in hole.checks]
        mine = [t for t in mine if t is not None]
        passing = sum(1 for t in mine if t.ok)
        state = (f"{passing} of its {len(mine)} checks pass" if mine else "no check needs it alone")
        failing = [t.name.split(".", 1)[1] for t in mine if not t.ok]
        lines.append(f"  hole {cp.number}.{hole.number} {hole.function}(): {state}"
                     + (f" (failing: {' '.join(failing)})" if failing else ""))
    return lines


def run_tests(ran):
    """A regression line per run that ended badly with no check to blame."""
    return [Test(f"run.{n}", f"guest run {title} ends cleanly", REGRESSION, False,
                 evidence=evidence)
            for n, (title, evidence) in enumerate(ran.problems, 1)]


def score(tests):
    """(points earned, points possible)."""
    return sum(t.earned for t in tests), sum(t.points for t in tests if t.scored)


# --- reporting -----------------------------------------------------------------

def table(tests, number, title="", total="Score"):
    """The score table: one line per test with its points (regressions:
    OK or FAIL), the evidence of each failure under it, the total (named
    'total')."""
    lines = [f"make grade {number}: checkpoint {number}" + (f", {title}" if title else "")]
    width = max((len(t.title) for t in tests), default=0)
    for group in dict.fromkeys(t.group for t in tests):
        lines.append(f"== {group}")
        for t in (t for t in tests if t.group == group):
            pts = f"{t.earned:>3}/{t.points:<3}" if t.scored else ""
            lines.append(f"  {t.title:<{width}}  {'OK' if t.ok else 'FAIL':<4}  {pts}".rstrip())
            lines += ["      | " + l for l in t.evidence[:40]]
    earned, possible = score(tests)
    regressions = sum(1 for t in tests if not t.scored and not t.ok)
    lines.append(f"{total}: {earned}/{possible}"
                 + (f"  ({regressions} regression(s) failed)" if regressions else ""))
    return lines


def summary(tests, number):
    """score.json: the table as data."""
    earned, possible = score(tests)
    return {"checkpoint": number, "score": earned, "possible": possible,
            "tests": [{"name": t.name, "title": t.title, "group": t.group, "ok": t.ok,
                       "points": t.points, "earned": t.earned} for t in tests]}


def verdicts(tests):
    """The tests as results.Verdict, for the JUnit report."""
    from .results import Verdict
    out = []
    for t in tests:
        head = [f"{t.earned}/{t.points} points"] if t.scored else ["regression: no points"]
        out.append(Verdict(t.name, "pass" if t.ok else "fail",
                           text="\n".join(head + t.evidence), group=t.group))
    return out


def write(results_dir, tests, number):
    """score.json, junit.xml and summary.json into results_dir."""
    from . import results
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, "score.json"), "w", encoding="utf-8") as f:
        json.dump(summary(tests, number), f, indent=1)
        f.write("\n")
    results.write(results_dir, f"grade-{number:02d}", verdicts(tests))


# --- the runs ------------------------------------------------------------------

# The corpus and ftracetest boot on their own, after the labs: a lab
# check that hangs then waits for the labs' time limit, not theirs.
CORPUS_ITEMS = ("ftracetest", conformance.PLAN_ITEM)


def died_booting(run):
    """The panic of a guest that crashed before its /init printed anything
    (no "@@ftlab" line): the kernel's boot itself failed, as QEMU's TCG
    sometimes makes it under load ("IO-APIC + timer doesn't work!"), not
    the learner's code, which no check had run yet. None otherwise."""
    if run.status != "crash" or any(l.strip().startswith("@@ftlab ") for l in run.lines):
        return None
    return next((l.strip() for l in run.lines if "Kernel panic" in l),
                run.problem[0].strip() if run.problem else "a crash")


def plain_boot(session, k, items, tag, ran):
    """One boot of k with plan items, taken into ran. A boot that panics
    before any check ran (died_booting) runs once more, and says so."""
    run, report = session.boot(k, items, tag)
    panic = died_booting(run)
    if panic:
        ui.step(f"the guest panicked while booting, before any check ran ({panic}; "
                f"console: {os.path.relpath(run.log)}): booting it once more")
        run, report = session.boot(k, items, tag + "-again")
    ran.take(report, run.lines, [] if run.ok else run.explain(), f"{tag} ({', '.join(items)})",
             in_log=run.status == "kernel-report")


def gdb_boot(session, k, cp, ran, only=None):
    """Lab cp under gdb ("# flags: gdb"), as labrun runs it; (ok, evidence)
    of what its gdb script printed."""
    ok, evidence, run = gdbrun.unattended(k, session.initrd(), cp, gdbrun.free_port(),
                                          session.logs, lambda p: session.timeout_for(p, k),
                                          plan=gdbrun.lab_plan(cp, only))
    broken = run.problems() + [run.where()] if run.broken else []
    ran.take(protocol.parse(run.console), run.console, broken, f"gdb lab {cp.number:02d}")
    return ok, evidence


def rerun_plan(ran, labs, kid=None):
    """The next boot after a crash: each plain lab with checks still to run
    (of those kernel kid runs), whole when none of its checks ran, else
    its next check alone (a boot runs a lab once: the guest's report
    keeps one run per lab)."""
    items = []
    for cp in labs:
        missing = ran.missing(cp, kid)
        if missing and not cp.needs_gdb:
            whole = len(missing) == len(cp.checks(kid))
            items.append(protocol.lab_item(cp.number, None if whole else missing[0]))
    return items


def run_student(session, k, number, labs):
    """Every boot the learner's kernel k needs: one for the plain labs, one
    per gdb lab, and one for ftracetest and the corpus; after a crash,
    boots for the checks it kept from running, until all ran or a boot
    makes no progress. Returns (Ran, gdb tests)."""
    tag = f"grade{number:02d}-{k.name}"
    ran, gdb_tests = run_labs(session, k, number, labs, tag)
    plain_boot(session, k, list(CORPUS_ITEMS), f"{tag}-corpus", ran)
    return ran, gdb_tests


def run_labs(session, k, number, labs, tag):
    """The labs' boots of run_student (scripts/prove-holes.py runs them
    alone): returns (Ran, gdb tests)."""
    ran, gdb_tests = Ran(), []
    items = [protocol.lab_item(cp.number) for cp in labs if not cp.needs_gdb]
    boots = 0
    while items:
        progress = len(ran.checks) + len(ran.hit)
        plain_boot(session, k, items, tag + (f"-rerun{boots}" if boots else ""), ran)
        boots += 1
        items = rerun_plan(ran, labs, k.id)
        if len(ran.checks) + len(ran.hit) == progress:
            break       # it crashed before any check began: the rest did not run
        if items:
            ui.step(f"a crash kept checks of {len(items)} lab(s) from running: they run again")
    for cp in (cp for cp in labs if cp.needs_gdb):
        ok, evidence = gdb_boot(session, k, cp, ran)
        if cp.number == number:    # gdb.expected is the script's output on its own checkpoint
            gdb_tests.append(Test(f"gdb{cp.number:02d}", f"gdb lab {cp.number:02d}: what its "
                                  "script prints", REGRESSION, ok, evidence=evidence))
        for ident in ran.missing(cp, k.id):
            gdb_boot(session, k, cp, ran, only=ident)
    return ran, gdb_tests


# --- the debug kernel ------------------------------------------------------------

# The exercises whose grade runs the stress test (labs/robustness/stress.sh:
# counted probes and triggers fired on two CPUs while other tasks add and
# remove them) on the learner's debug kernel: it needs the triggers of
# checkpoint 6.
STRESS_FROM = 6
# A frame of a call trace or report title: "event_probe_add+0x4d/0x120".
FRAME_RE = re.compile(r"\b([A-Za-z_][\w.]*\+0x[0-9a-f]+/0x[0-9a-f]+)")


def leaks_by_hole(leak_lines, hole_list, inlined=None):
    """kmemleak's report split into its objects ("unreferenced object"
    and the lines after it), each charged to the hole whose function
    allocated it: the first frame of its allocation's call trace that is
    a hole's function, or has one inlined in it (inlined: {frame:
    [(function, place)]}, innermost first, kbuild.Kernel.inlined; a
    static function such as event_probe_add() is often inlined in its
    caller). Returns ({hole: lines}, [lines of the objects no hole's
    function allocated]). The lines before the first object (kmemleak's
    "N new suspected memory leaks", which the scan writes to the kernel
    log) belong to none."""
    inlined = inlined or {}
    objects = []
    for line in leak_lines:
        if "unreferenced object" in line:
            objects.append([])
        if objects:
            objects[-1].append(line)
    by_function = {h.function: h for h in hole_list}
    placed, unplaced = {}, []
    for obj in objects:
        hole = None
        for frame in FRAME_RE.findall("\n".join(obj)):
            names = [f for f, _place in inlined.get(frame, [])] + [frame.split("+")[0]]
            hole = next((by_function[n] for n in names if n in by_function), None)
            if hole is not None:
                break
        if hole is None:
            unplaced += obj
        else:
            placed.setdefault(hole, []).extend(obj)
    return placed, unplaced


def frames_of(lines, most=20):
    """The distinct call-trace frames ("func+0x1c/0x50") of report lines."""
    return list(dict.fromkeys(FRAME_RE.findall("\n".join(lines))))[:most]


class DebugRun:
    """Lab N on the learner's debug kernel k (kernels.VARIANTS "debug":
    KASAN, lockdep, PROVE_RCU, kmemleak, two vCPUs): what each of its
    checks met there (DebugRun.problem). A leak is charged to the checks
    of the hole whose function allocated it (holes' "checks:")."""

    def __init__(self, k, ran, cp, faddr2line):
        self.k, self.ran, self.cp, self.faddr2line = k, ran, cp, faddr2line
        self.label = k.label
        self.recorded = labgrade.load_debug_differences()
        inlined = k.inlined(frames_of(ran.leaks, 200), faddr2line) if ran.leaks else {}
        placed, self.unplaced_leaks = leaks_by_hole(ran.leaks, holes.load(cp), inlined)
        self.leaking = {}
        for hole, lines in placed.items():
            for ident in hole.checks:
                self.leaking.setdefault(ident, []).extend(
                    [f"memory that {hole.function}() allocated is never freed (kmemleak):"]
                    + lines[:12])

    def problem(self, reg, expected):
        """Why lab N's check 'reg' fails on the debug kernel ([]: it does
        not): a crash or report while it ran, with where it happened in
        kernel/trace/, a leak of a hole it needs, or its output."""
        key, own = (f"{self.cp.number:02d}", reg.id), KernelId.of(self.cp.number)
        for found in (self.ran.hit, self.ran.reports):
            if key in found:
                return self.where(found[key])
        if reg.id in self.leaking:
            return self.where(self.leaking[reg.id])
        check = self.ran.checks.get(key)
        if check is None:
            return ["the check did not run"]
        outcome = labgrade.grade_check(check, expected, own, self.cp.number)
        outcome = labgrade.grade_on_debug(check, outcome, expected, own, self.cp.number,
                                          self.recorded.get(key))
        return [] if outcome.ok else outcome.evidence

    def where(self, lines):
        """A report's first lines, then the file:line of its first frames
        in kernel/trace/ (the code a learner writes is there): the
        innermost function of kernel/trace/ inlined at each, named when
        it is not the frame's own."""
        found = self.k.inlined(frames_of(lines), self.faddr2line)
        ours = []
        for frame, chain in found.items():
            function, place = next(((f, p) for f, p in chain if p.startswith("kernel/trace/")),
                                   (None, None))
            if place:
                inline = "" if function == frame.split("+")[0] else f" (in {function}(), inlined)"
                ours.append(f"  {frame} at {place}{inline}")
        return lines[:14] + (["where, in kernel/trace/:"] + ours[:3] if ours else [])


def debug_pass(session, k, number, points, stress=True):
    """make grade's run on the debug variant of the learner's kernel k: lab
    N (and, from STRESS_FROM on, the stress test, unless not 'stress').
    Returns (DebugRun, its Tests: the run's own regression line, the
    stress test)."""
    cp = series.lookup(number)
    kd = session.kernel(k.id.with_variant("debug"))
    ran, _gdb = run_labs(session, kd, number, [cp], f"grade{number:02d}-{kd.name}")
    debug = DebugRun(kd, ran, cp, os.path.join(session.tree.path, "scripts", "faddr2line"))
    evidence = [line for _title, found in ran.problems for line in found]
    evidence += (["memory leaked outside the holes' functions (kmemleak):"]
                 + debug.unplaced_leaks[:20] if debug.unplaced_leaks else [])
    tests = [Test("debug.run", f"lab {number:02d} on {kd.label}: no report outside its checks",
                  REGRESSION, not evidence, evidence=evidence)]
    if number >= STRESS_FROM and stress:
        run, result = robust.run_stress(session, kd)
        problems = run.explain() if not run.ok else robust.stress_problems(result, kd.smp)
        tests.append(stress_test(number, points, problems, kd.smp))
    return debug, tests


def stress_test(number, points, problems, cpus=2):
    """The stress test's scored line (debug_pass): no problem is a pass."""
    return Test("debug.stress", f"stress on the debug kernel: counted probes and triggers "
                f"fire on {cpus} CPUs while others add and remove them", f"lab {number:02d}",
                not problems, points_of(points, "stress", "stress"), evidence=problems)


def blank_tests(number, why):
    """make grade N's scored lines, each failed with 'why', as a grade of
    work that never ran gives them: the same lines and points as a grade
    (classroom/grader.py scores work that does not build or apply)."""
    cp = series.lookup(number)
    points = load_points(cp)
    ran = Ran()
    tests = lab_tests(ran, cp, number, points)
    if number >= STRESS_FROM:
        tests.append(stress_test(number, points, [why]))
    tests += matrix_tests(ran, ftmatrix.load(), number, points)
    tests += conformance_tests(ran, conformance.load_corpus(), None,
                               conformance.load_expected(), number, points)
    tests.append(Test("checkpatch", f"checkpatch --strict on work/{number:02d}.patch",
                      "checkpatch", False, points_of(points, "checkpatch", "checkpatch")))
    if holes.has_exercise(cp):
        tests.append(warnings_test({}, points))
    tests = [t for t in tests if t.scored]
    for t in tests:
        t.ok, t.earned, t.evidence, t.note = False, 0, [why], ""
    return tests


def usable_reference(corpus, lines):
    """Upstream's CorpusRun from a console log's lines, or None when that
    run is not complete."""
    ref = conformance.parse_guest(lines)
    complete = not ref.unfinished and all(c.id in ref.cases for c in corpus)
    return ref if complete and not conformance.reference_problems(corpus, ref) else None


def reference_run(session, corpus):
    """Upstream's corpus output: from the newest log that has all of it,
    else from a boot of upstream (built first if need be, which checks the
    tree out at upstream; a tree with changes it cannot keep does not
    switch, and then there is no reference: None)."""
    logs = [os.path.join(session.logs, n) for n in REFERENCE_LOGS]
    for log in sorted((p for p in logs if os.path.exists(p)), key=os.path.getmtime,
                      reverse=True):
        with open(log, encoding="utf-8", errors="replace") as f:
            ref = usable_reference(corpus, f.read().splitlines())
        if ref is not None:
            ui.info(f"upstream {kernels.base_release()}'s conformance output: {os.path.relpath(log)}")
            return ref
    up = kbuild.Kernel(session.build_dir, KernelId.upstream())
    try:
        if not up.built():
            up = session.kernel(KernelId.upstream())
    except HarnessError as e:   # a tree with uncommitted work will not switch
        ui.info(f"no run of upstream {kernels.base_release()} to compare the corpus with, and it cannot be built "
                f"now: {e}")
        return None
    run, _report = session.boot(up, [conformance.PLAN_ITEM], "grade-upstream")
    return usable_reference(corpus, run.lines) if run.ok else None


def grade(session, number, kernel=None, results_dir=None, patch=None, debug=True,
          quick=False, quick_debug=False):
    """make grade N: boot the learner's kernel, score it, print the table,
    write the reports (results_dir). kernel: the learner's built
    kbuild.Kernel (make grade builds it after saving the work); None:
    checkpoint N's own, which must score full marks. patch: the learner's
    diff (work/NN.patch). debug: lab N runs on the kernel's debug variant
    too (debug_pass), where any report fails the check it hit. quick
    (make grade N QUICK=1): lab N alone on the plain kernel, a progress
    check with no score; with quick_debug (QUICK=1 DEBUG=1) lab N on the
    debug kernel too, as the full grade runs it but for the stress test.
    Returns the exit code: 0 when every test passed."""
    session.prepare()
    cp = series.lookup(number)
    points = load_points(cp)
    k = kernel or session.kernel(KernelId.of(number))
    if quick:
        ran, _gdb = run_labs(session, k, number, [cp], f"grade{number:02d}-{k.name}-quick")
        debug_run, debug_tests = (debug_pass(session, k, number, points, stress=False)
                                  if quick_debug else (None, []))
        tests = (lab_tests(ran, cp, number, points, debug_run, plain_only=not quick_debug)
                 + debug_tests + run_tests(ran))
        how = "on the plain and the debug kernel (QUICK=1 DEBUG=1)" if quick_debug else \
            "(QUICK=1)"
        print()
        for line in table(tests, number, f"{cp.title}, lab {number:02d} alone {how}",
                          f"Lab {number:02d}'s points (the score is make grade {number}'s)"):
            print(line)
        return 0 if all(t.ok for t in tests) else 1
    labs = [c for c in series.checkpoints() if c.number <= number and c.has_lab]
    matrix, record = ftmatrix.load(), conformance.load_expected()
    corpus = conformance.load_corpus()
    reference = reference_run(session, corpus)
    ran, gdb_tests = run_student(session, k, number, labs)
    debug_run, debug_tests = debug_pass(session, k, number, points) if debug else (None, [])
    tests = []
    for lab in labs:
        tests += lab_tests(ran, lab, number, points, debug_run)
    tests += debug_tests + gdb_tests
    tests += matrix_tests(ran, matrix, number, points)
    tests += conformance_tests(ran, corpus, reference, record, number, points)
    unfilled = unfilled_holes(session.tree.path, cp) if holes.has_exercise(cp) else []
    tests.append(checkpatch_test(session.tree.path,
                                 patch or os.path.join(WORK, f"{number:02d}.patch"), points,
                                 unfilled))
    if holes.has_exercise(cp):
        files = list(holes.by_file(holes.load(cp)))
        tests.append(warnings_test(compiler_warnings(k, files), points))
    tests += run_tests(ran)
    # the learner's lines first, the regressions after them
    tests = [t for t in tests if t.scored] + [t for t in tests if not t.scored]
    print()
    for line in table(tests, number, cp.title):
        print(line)
    if holes.has_exercise(cp):
        print("Your holes:")
        for line in hole_progress(tests, cp):
            print(line)
    if results_dir:
        write(results_dir, tests, number)
        print(f"results: {os.path.relpath(results_dir)}/junit.xml, score.json")
    return 0 if all(t.ok for t in tests) else 1
