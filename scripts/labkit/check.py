"""make check: the whole product, tested.

  1. the harness's own tests (grading, normalisation, protocol, timeouts,
     crash detection, argument parsing), and pyflakes on the harness and
     the gdb helpers
  2. checkpatch.pl --strict on every patch of the series, and whether the
     series applies to patches/BASE and to the newest linux-source
  3. the docs build
  4. upstream 6.1 (the reference), then the last checkpoint (its debug
     kernel builds from the start, beside everything else), then
     checkpoints 0, 1, ...
     in order: build, run what needs gdb (each lab's gdb script on its
     own checkpoint, the next one's, which must fail there, and the gdb
     helpers' self-test on upstream), and queue one boot for a guest lane
     running every lab up to the checkpoint (they must pass), the next lab
     (its feature checks must fail), ftracetest (results as
     labs/ftracetest.matrix says) and the conformance corpus
     (labs/conformance: every case as on upstream, but the differences
     recorded for that checkpoint); on upstream and the last checkpoint
     the whole ftracetest suite instead of the matrix list (every test that
     passes on upstream passes on the last checkpoint; the matrix is
     graded on the suite's results). Boots are graded once all kernels are
     built, upstream's first.
  5. the harness against real guests: a panicking guest fails fast, a hung
     guest times out, a broken expectation fails with a diff
  6. the grader's own test (mutants.py): every exercise's mutants name a
     hole and a check that exist and apply to their hole; one mutant
     (mutants.LIGHT_SAMPLE) built and booted with its lab, which must
     catch it; FULL=1: every mutant
  7. the debug kernels and the robustness tests (debug.py)
"""

import collections
import concurrent.futures
import copy
import io
import os
import re
import subprocess
import time
import unittest

from . import (checkpatch, conformance, docexamples, docs, errnos, exercise, gdbrun, grade, holes,
               kernels, labrun, mutants, namecheck, protocol, qemu, rebase, robust, series, source,
               timing, tracecheck, ui)
from .errors import HarnessError
from .kernels import KernelId


class _Outcomes(unittest.TextTestResult):
    """A test result that also keeps the ids of the tests that passed: a
    test neither failed nor skipped may not have run at all (its class's
    setUpClass raised)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.passed = set()

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed.add(test.id())


def self_tests(tally):
    """The unit tests, in this process. Some run ftlab's commands with a
    build folder of their own, which sets FTLAB_BUILD_DIR: the environment
    is put back after them, so that the parts after write to make check's
    build folder (the docs did to a test's private one)."""
    ui.step("harness self-tests (scripts/tests)")
    saved = dict(os.environ)
    try:
        grade_unittests(unittest.defaultTestLoader.discover(
            os.path.join(series.ROOT, "scripts", "tests"),
            top_level_dir=os.path.join(series.ROOT, "scripts")), tally)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def grade_unittests(suite, tally):
    """Run a unittest suite: one verdict per test, a skipped one counted
    as skipped, with its reason."""
    names = [t.id() for t in _iter_tests(suite)]   # the runner empties the suite
    stream = io.StringIO()
    result = unittest.TextTestRunner(stream=stream, verbosity=2, resultclass=_Outcomes).run(suite)
    failed = {t.id(): tb for t, tb in result.failures + result.errors}
    skipped = {t.id(): why for t, why in result.skipped}
    # a class or module fixture that failed is reported under its own id
    for name in [n for n in failed if n not in names] + names:
        title = "harness " + name.split(".", 1)[-1]
        if name in skipped:
            tally.skip(title, skipped[name])
            continue
        tally.record(name in result.passed, title, "" if name in result.passed or name in failed
                     else "(did not run)")
        if name in failed:
            ui.block(failed[name].splitlines()[-15:])


def _iter_tests(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _iter_tests(item)
        else:
            yield item


LINTED = ("scripts", "gdb-scripts", "classroom")


def pyflakes(tally, paths=LINTED, cwd=series.ROOT):
    """pyflakes (Debian's python3-pyflakes) over the harness, the gdb
    helpers and the class kit: one verdict, failed by any finding (an
    unused import, an undefined name), each shown."""
    ui.step(f"pyflakes on {', '.join(paths)}")
    r = subprocess.run(["pyflakes3"] + list(paths), cwd=cwd,
                       capture_output=True, text=True)
    findings = [l for l in (r.stdout + r.stderr).splitlines() if l.strip()]
    tally.record(r.returncode == 0 and not findings, f"pyflakes {' '.join(paths)}: no findings",
                 f"({len(findings)} finding(s))" if findings else "")
    ui.block(findings[:40])


def series_versions(session, tally):
    """Does the series apply to patches/BASE and to the newest version of
    its linux-source package the archive offers? The next Debian update is
    seen here before it breaks a user's build."""
    package, base = series.base()
    offered = source.offered_versions(package)
    newest = offered[0] if offered else None
    if newest is None:
        tally.skip(f"the series on the newest {package}",
                   "apt knows no version of it: no package lists or no network")
    ui.step(f"does the series apply to {package} {base} (patches/BASE)"
            + (f" and {newest} (newest in the archive)" if newest and newest != base else "") + "?")
    for version in dict.fromkeys(v for v in (base, newest) if v):
        which = ", ".join(w for v, w in ((base, "patches/BASE"), (newest, "newest in the archive"))
                          if v == version)
        title = f"series applies to {package} {version} ({which})"
        try:
            ok, words = rebase.applies(session.build_dir, version)
        except source.SourceError as e:
            tally.skip(title, f"cannot fetch it: {e}")
            continue
        tally.record(ok, title, f"({words})")


class Reference:
    """What upstream 6.1's boot gives the checkpoints to compare with."""
    corpus = None           # conformance.CorpusRun
    ftracetest_all = None   # {test: result}


class Pass:
    """One plain kernel's pass: built, its gdb runs done while the tree was
    at it, its one boot queued for a guest lane (booted: a Future of
    (qemu.Run, report)); the last checkpoint's also a boot with trace-cmd
    (traced: a Future of traces.boot's result)."""

    def __init__(self, k, booted, traced=None):
        self.kernel, self.k, self.booted, self.traced = k.id, k, booted, traced


class Boot:
    """A plain kernel's boot, come to its end, as each kind of check judges
    it: the kernel (a kernels.KernelId) and its kbuild.Kernel k, the qemu.Run
    and its protocol report, upstream's Reference and the tally."""

    def __init__(self, p, run, report, reference, tally):
        self.kernel, self.k = p.kernel, p.k
        self.run, self.report, self.reference, self.tally = run, report, reference, tally


def labs_of(kernel):
    """The labs of a plain kernel's pass: every lab up to its checkpoint,
    and the next one, whose feature checks must fail here (the labs whose
    previous checkpoint the kernel has). Those that need gdb run under gdb
    (gdb_runs), the others in its boot."""
    return [cp for cp in series.checkpoints()
            if cp.has_lab and kernel.has(cp.number - 1)]


def whole_suite(kernel):
    """Upstream and the last checkpoint run the whole ftracetest suite
    instead of the matrix's list: it runs the list's tests too, and the
    matrix is graded on its results."""
    return kernel.is_upstream or kernel.is_last()


def boot_labs(kernel):
    """The labs of a plain kernel's boot: those of its pass that need no gdb."""
    return [cp for cp in labs_of(kernel) if not cp.needs_gdb]


def lab_items(kernel):
    return [protocol.lab_item(cp.number) for cp in boot_labs(kernel)]


def judge_labs(boot):
    for cp in boot_labs(boot.kernel):
        labrun.grade_lab(boot.report, cp, boot.kernel, boot.tally)


def judge_ftracetest(boot):
    labrun.grade_ftracetest(boot.report, boot.kernel, boot.tally, boot.run.log)


def judge_docexamples(boot):
    docexamples.grade_kernel(docexamples.load(), boot.run.lines, boot.kernel, boot.tally,
                             boot.run.log)


def judge_conformance(boot):
    """Upstream's run of the corpus is the reference (and gives the errno
    page, errnos.check); a checkpoint's is compared with it."""
    corpus, reference = conformance.load_corpus(), boot.reference
    if boot.kernel.is_upstream:
        reference.corpus = conformance.grade_reference(corpus, boot.run, boot.tally)
        if reference.corpus is not None:
            errnos.check(reference.corpus, boot.tally)
    elif reference.corpus is None:
        boot.tally.record(False, f"conformance [{boot.k.name}]: no upstream reference run "
                          "to compare with")
    else:
        conformance.grade_checkpoint(corpus, boot.kernel, boot.run, reference.corpus,
                                     boot.tally)


def judge_ftall(boot):
    """Upstream's whole ftracetest suite is the reference: on the last
    checkpoint every test that passes there must pass."""
    results = protocol.ftracetest_results(boot.report)
    if boot.kernel.is_upstream:
        boot.reference.ftracetest_all = results
    elif whole_suite(boot.kernel) and boot.reference.ftracetest_all:
        conformance.grade_ftall(boot.reference.ftracetest_all, results, boot.kernel,
                                boot.tally, boot.run.log)


BootKind = collections.namedtuple("BootKind", "name items judge")

# The kinds of check in every plain kernel's boot, one row each: the plan
# items it adds for a kernel, in the boot's order, and its judge of the
# boot, called in this order once the boot is over (grade_pass). A new
# kind of check on every kernel is one more row.
BOOT_KINDS = [
    BootKind("labs", lab_items, judge_labs),
    BootKind("ftracetest (the matrix's list, or the whole suite)",
             lambda kernel: [conformance.FTALL_ITEM if whole_suite(kernel) else "ftracetest"],
             judge_ftracetest),
    BootKind("the docs' examples", lambda kernel: [docexamples.PLAN_ITEM], judge_docexamples),
    BootKind("the conformance corpus", lambda kernel: [conformance.PLAN_ITEM],
             judge_conformance),
    # no item of its own: the whole suite the ftracetest row runs
    BootKind("the whole ftracetest suite against upstream's", lambda kernel: [], judge_ftall),
]


def boot_plan(kernel):
    """The plan of one plain kernel's boot: each kind's items, in order."""
    return [item for kind in BOOT_KINDS for item in kind.items(kernel)]


def start_pass(session, kernel, tally, lanes):
    """Build one kernel, run what needs its tree checked out (its gdb
    scripts), and queue its boot for a lane; returns a Pass, or None when
    the build failed (which fails this kernel, not the run)."""
    try:
        with lanes.busy():
            k, why = session.kernel(kernel), []
    except HarnessError as e:   # a patch or build failure fails this kernel, not the run
        k, why = None, str(e).splitlines()
    tally.record(k is not None, f"build {kernel.name}")
    ui.block(why)
    if k is None:
        return None
    problems = k.debug_info_problems()
    tally.record(not problems, f"debug info [{k.name}]: full in kernel/ and for struct mount, "
                 "-g1 elsewhere",
                 "; ".join(problems))
    booted = lanes.submit(session.boot, k, boot_plan(kernel), f"check-{k.name}")
    traced = (tracecheck.start_traced_boot(session, k, lanes)
              if kernel.is_last() else None)
    with lanes.busy():
        gdb_runs(session, k, labs_of(kernel), tally)
    return Pass(k, booted, traced)


def gdb_runs(session, k, labs, tally):
    """What runs under gdb while the tree is checked out at kernel k (gdb
    shows its source lines): the gdb labs, the kernel's own lab's gdb
    script and the next lab's (which must fail here), and on upstream the
    gdb helpers' self-test. On its own checkpoint, lab 02 runs with
    TRACE=1: gdb's output must still be its gdb.expected, and its trace
    must tell soft mode's story (tracecheck.grade_soft_mode)."""
    for cp in labs:
        if cp.needs_gdb and (getattr(session, "full", False) or gdb_lab_wanted(cp, k.id)):
            traced = k.id.checkpoint == cp.number == tracecheck.SOFT_MODE_LAB
            result = labrun.run_gdb_lab(session, k, cp, tally, trace=traced)
            if result and result[1]:
                tracecheck.grade_soft_mode(result[1], f"trace-cmd [{k.name}]", tally)
    if k.id.is_upstream:
        gdb_helpers_selftest(session, k, tally)
        return
    gdb_check(session, k, series.lookup(k.id.checkpoint), tally)
    following = k.id.next() and series.lookup(k.id.next().checkpoint)
    if (following is not None and not following.needs_gdb
            and os.path.exists(gdbrun.lab_gdb_script(following))):
        labrun.gdb_before(session, k, following, tally)


def gdb_lab_wanted(cp, kernel):
    """Where plain make check runs a lab that needs gdb (each run boots a
    guest under gdb): on upstream (the reference), the checkpoint before
    the lab's (its checks must fail), its own and the last (features
    stay). FULL=1 runs it on every kernel that has the checkpoint before."""
    return (kernel.is_upstream or kernel.is_just_before(cp.number)
            or kernel.checkpoint == cp.number or kernel.is_last())


def grade_pass(p, tally, reference):
    """Grade a Pass's boot once it is over: its TRACE boot, if any, then
    the boot itself and each kind of BOOT_KINDS. Upstream's fills
    'reference' (graded first); a checkpoint's is compared with it.
    Returns the report, or None when the boot failed."""
    run, report = p.booted.result()
    if p.traced is not None:
        tracecheck.grade_traced_boot(p.traced.result(), p.k, tally)
    if not labrun.grade_boot(run, tally, f"boot {p.k.label}"):
        return None
    boot = Boot(p, run, report, reference, tally)
    for kind in BOOT_KINDS:
        kind.judge(boot)
    return report


def harness_on_real_guests(session, k, report, upstream, tally):
    ui.step("the harness against real guests")

    def boot(kernel, item, timeout=None):
        log = os.path.join(session.logs, f"selftest-{item}.log")
        return qemu.boot(kernel, session.initrd(), [item], log,
                         timeout or session.timeout_for([item]))

    # A panic must end the run at once, with the panic shown.
    run = boot(k, "panic")
    tally.record(run.status == "crash" and run.seconds < 60
                 and any("Kernel panic" in l for l in run.problem),
                 "harness: a panicking guest fails within seconds, panic shown",
                 f"({run.status} after {run.seconds:.0f} s)")
    # A WARN from user space (upstream 6.1 has one) must end the run at
    # once, with the WARN's file:line and its call trace shown.
    if upstream is not None:
        run = boot(upstream, "warn")
        shown = "\n".join(run.explain())
        ok = (run.status == "crash" and run.seconds < 60
              and re.search(r"WARNING: CPU: \d+ PID: \d+ at \S*kernel/trace/ftrace\.c:\d+", shown)
              and "Call Trace:" in shown)
        tally.record(bool(ok), "harness: a WARN fails the run within seconds, "
                     "file:line and call trace shown", f"({run.status} after {run.seconds:.0f} s)")
        if not ok:
            ui.block(run.explain())
    # A report only the kernel log has (lockdep's level is below the
    # console's) must fail a run that otherwise finished.
    run = boot(k, "log-report")
    shown = "\n".join(run.explain())
    ok = run.status == "kernel-report" and "possible circular locking" in shown
    tally.record(ok, "harness: a report in the kernel log alone fails the run, and is shown",
                 f"({run.status})")
    if not ok:
        ui.block(run.explain())
    # A guest that never finishes must time out with the promised message.
    run = boot(k, "hang", 25)
    words = "\n".join(run.explain())
    tally.record(run.status == "timeout" and "did not finish in 25 s" in words
                 and "full log:" in words,
                 "harness: a hung guest times out with its log tail", f"({run.status})")
    # A deliberately broken expectation must fail with a readable diff.
    if report and report.labs:
        cp = series.lookup(0)
        lab = report.labs.get("00")
        expected = grade.load_expected(cp.lab_dir)
        broken = copy.deepcopy(expected)
        check = lab.checks[0]
        broken[check.id] = broken[check.id] + ["a line the kernel never prints"]
        outcome = grade.grade_check(check, broken, k.id, 0)
        tally.record(not outcome.ok and any(l.startswith("+++") or l.startswith("-a line")
                                            for l in outcome.evidence),
                     "harness: a broken lab expectation fails with a diff")


def gdb_check(session, k, cp, tally):
    """Lab cp's gdb script, unattended, on kernel k ("# flags: gdb" labs
    had theirs checked when they ran)."""
    if cp.needs_gdb or not os.path.exists(gdbrun.lab_gdb_script(cp)):
        return
    ui.step(f"gdb script of lab {cp.number:02d}, unattended, on {k.label}")
    ok, evidence, _run = gdbrun.unattended(k, session.initrd(), cp, gdbrun.free_port(),
                                           session.logs, session.timeout_for)
    tally.record(ok, f"gdb lab {cp.number:02d} [{k.name}]")
    ui.block(evidence)


def gdb_helpers_selftest(session, k, tally):
    """Every ft- helper on upstream 6.1 (kernel k), where all it reads exists."""
    ui.step(f"gdb helpers on upstream {kernels.base_release()}: probes, event flags, triggers, clock, breakpoints")
    ok, evidence = gdbrun.selftest(k, session.initrd(), gdbrun.free_port(), session.logs,
                                   session.timeout_for)
    tally.record(ok, "gdb helpers [upstream]: every ft command, function and printer as expected")
    ui.block(evidence)


def plain_pass_order(cps):
    """The last checkpoint right after upstream, then the others in order.
    Its debug kernel builds beside its plain pass (the tree is checked out
    there), and its debug guests, the longest of make check, queue from
    then on: last, they made everything else wait for them at the end."""
    return cps[-1:] + cps[:-1]


def run(session):
    started = time.time()
    timer = ui.Timer()
    tally = ui.Tally()
    parts = timing.Parts(tally)
    # the tree first: some self-tests use its files (usr/gen_init_cpio.c,
    # ftracetest's functions), and must not skip for want of them
    parts.time("tree and packages", session.prepare)
    parts.time("harness self-tests", self_tests, tally)
    parts.time("pyflakes", pyflakes, tally)
    qemu.Reuse.count = 0        # the self-tests' stand-in guests are not make check's runs
    # Every guest takes a lane, two at once (one per core), one while a
    # build or a gdb run goes on beside; the debug part (debug.py) builds
    # its kernels in a checkout of their own and queues their guests too.
    # Its first build starts now, beside the checks that use one core
    # (not beside the self-tests, some of which mock the harness's
    # modules).
    lanes = robust.Lanes()
    from . import debug
    debug_part = debug.DebugPart(session, lanes, getattr(session, "full", False),
                                 getattr(session, "debug_all", False),
                                 getattr(session, "seed", None))
    cps = series.checkpoints()
    session.require_space(
        [KernelId.upstream()] + [KernelId.of(cp.number) for cp in cps]
        + [kid.with_variant("debug") for kid in debug_part.kernels]
        + [kid.with_variant("kcsan") for kid in debug_part.kcsan_kernels],
        "make check (its kernels)")
    debug_part.start()
    # The docs build on threads of their own beside checkpatch and the
    # series check, which use one core; they are graded in their place.
    ui.step("building the docs (asciidoctor, dot, pandoc), beside the next parts")
    docs_views = concurrent.futures.ThreadPoolExecutor(max_workers=1).submit(
        docs.build_views, session.build_dir)
    parts.time("checkpatch", checkpatch.series_patches, session, tally)
    parts.time("series versions", series_versions, session, tally)
    parts.time("docs (what is left of their build)", lambda: docs.check(
        tally, session.build_dir, docs_views.result()))
    parts.time("names", namecheck.check, session, tally)
    exercises = [cp.number for cp in cps if holes.has_exercise(cp)]
    parts.time("exercises: skeletons", exercise.check_skeletons, session, tally, exercises)
    passes = []
    for kernel in [KernelId.upstream()] + [KernelId.of(cp.number)
                                           for cp in plain_pass_order(cps)]:
        p = parts.time(f"kernel {kernel.name}: build and gdb", start_pass,
                       session, kernel, tally, lanes)
        if p is not None:
            passes.append(p)
            debug_part.plain_built(p.k)
    reference = Reference()
    ranked = sorted(passes, key=lambda p: p.kernel.rank())
    reports = {p.kernel: parts.time(f"kernel {p.kernel.name}: its boot, graded",
                                    grade_pass, p, tally, reference)
               for p in ranked}
    upstream = next((p.k for p in ranked if p.kernel.is_upstream), None)
    first = next((p for p in ranked
                  if not p.kernel.is_upstream and reports.get(p.kernel)), None)
    if first:
        with lanes.busy():
            parts.time("harness on real guests", harness_on_real_guests, session, first.k,
                       reports[first.kernel], upstream, tally)
    if getattr(session, "full", False):
        # each skeleton built from its previous checkpoint's objects, booted
        # with its lab: the feature checks fail as skeleton.before records
        parts.time("exercises: skeletons built and booted", exercise.check, session, tally,
                   exercises)
        if 3 in exercises:
            parts.time("exercises: make grade 3 on the reference", exercise.grade_reference,
                       session, tally, 3)
    # the grader's own test: the mutants' data, and one mutant built on
    # the last checkpoint's objects and booted (FULL=1: every mutant)
    parts.time("exercises: mutants" + (" (all)" if getattr(session, "full", False)
                                       else " (data, and one run)"),
               mutants.check_part, session, tally, exercises,
               getattr(session, "full", False), lanes)
    parts.time("debug kernels and robustness (the rest)", debug_part.finish, tally)
    parts.report(timer, session.logs, started)
    if qemu.Reuse.count:
        print(f"{qemu.Reuse.count} guest run(s) graded from their last logs: their kernel, "
              "initramfs and plan had not changed (FRESH=1 boots them all)")
    return tally.close(getattr(session, "results", None), "make check")
