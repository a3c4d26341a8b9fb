"""make check: the whole product, tested.

  1. the harness's own tests (grading, normalisation, protocol, timeouts,
     crash detection, argument parsing)
  2. checkpatch.pl --strict on every patch of the series, and whether the
     series applies to patches/BASE and to the newest linux-source-6.1
  3. the docs build
  4. upstream 6.1 (the reference), then the last checkpoint (its debug
     kernel builds beside it, early), then checkpoints 0, 1, ... in order:
     build, boot once running every lab up to the checkpoint (they must
     pass), the next lab (its feature checks must fail), ftracetest
     (results as labs/ftracetest.matrix says) and the conformance corpus
     (labs/conformance: every case as on upstream, but the differences
     recorded for that checkpoint); on upstream and the last checkpoint
     the whole ftracetest suite instead of the matrix list (every test that
     passes on upstream passes on the last checkpoint; the matrix is
     graded on the suite's results)
  5. the harness against real guests: a panicking guest fails fast, a hung
     guest times out, a broken expectation fails with a diff
  6. each lab's gdb script, unattended, on its own checkpoint, and every
     gdb helper on upstream 6.1 (gdb-scripts/selftest)
"""

import copy
import io
import os
import re
import subprocess
import threading
import time
import unittest

from . import (conformance, docexamples, docs, gdbrun, grade, labrun, protocol, qemu, rebase, series,
               source, timing, ui)
from .errors import HarnessError


def self_tests(tally):
    ui.step("harness self-tests (scripts/tests)")
    suite = unittest.defaultTestLoader.discover(os.path.join(series.ROOT, "scripts", "tests"),
                                                top_level_dir=os.path.join(series.ROOT, "scripts"))
    names = [t.id() for t in _iter_tests(suite)]   # the runner empties the suite
    stream = io.StringIO()
    result = unittest.TextTestRunner(stream=stream, verbosity=2).run(suite)
    failed = {t.id(): tb for t, tb in result.failures + result.errors}
    for name in names:
        tally.record(name not in failed, "harness " + name.split(".", 1)[-1])
        if name in failed:
            ui.block(failed[name].splitlines()[-15:])


def _iter_tests(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _iter_tests(item)
        else:
            yield item


def accepted_exceptions(patch_text):
    """checkpatch message types a patch explains and accepts: a line
    "Checkpatch-exception: TYPE" in its notes (after the first "---"),
    followed by the reason."""
    head = patch_text.split("\ndiff --git", 1)[0]
    notes = head.split("\n---\n", 1)[1] if "\n---\n" in head else ""
    return set(re.findall(r"^Checkpatch-exception: ([A-Z_]+)", notes, re.M))


def checkpatch_command(script, patch, accepted):
    """checkpatch.pl --strict on one patch, one line per message, with the
    types the patch explains (accepted_exceptions) left to checkpatch's own
    --ignore. --terse also keeps it from printing its "NOTE: Ignored
    message types" footer, so any line it prints is a problem."""
    cmd = ["perl", script, "--strict", "--terse", "--no-summary", "--show-types"]
    if accepted:
        cmd += ["--ignore", ",".join(sorted(accepted))]
    return cmd + [patch]


def checkpatch(session, tally):
    script = os.path.join(session.tree.path, "scripts", "checkpatch.pl")
    patches = [p for cp in series.checkpoints() for p in cp.patches()]
    ui.step(f"checkpatch.pl --strict on {len(patches)} patch(es)")
    for patch in patches:
        with open(patch, encoding="utf-8", errors="replace") as f:
            accepted = accepted_exceptions(f.read())
        r = subprocess.run(checkpatch_command(script, patch, accepted),
                           cwd=session.tree.path, capture_output=True, text=True)
        problems = [line for line in r.stdout.splitlines() if line.strip()]
        note = f"(explained exception: {', '.join(sorted(accepted))})" if accepted else ""
        tally.record(not problems, "checkpatch " + os.path.relpath(patch, series.ROOT), note)
        ui.block(problems[:10])


def series_versions(session, tally):
    """Does the series apply to patches/BASE and to the newest
    linux-source-6.1 the archive offers? The next Debian update is seen
    here before it breaks a user's build."""
    base = series.base_version()
    offered = source.offered_versions()
    newest = offered[0] if offered else None
    if newest is None:
        ui.skip(f"the series on the newest {source.PACKAGE}",
                "apt knows no version of it: no package lists or no network")
    ui.step(f"does the series apply to {source.PACKAGE} {base} (patches/BASE)"
            + (f" and {newest} (newest in the archive)" if newest and newest != base else "") + "?")
    for version in dict.fromkeys(v for v in (base, newest) if v):
        which = ", ".join(w for v, w in ((base, "patches/BASE"), (newest, "newest in the archive"))
                          if v == version)
        title = f"series applies to {source.PACKAGE} {version} ({which})"
        try:
            ok, words = rebase.applies(session.build_dir, version)
        except source.SourceError as e:
            ui.skip(title, f"cannot fetch it: {e}")
            continue
        tally.record(ok, title, f"({words})")


class Reference:
    """What upstream 6.1's boot gives the checkpoints to compare with."""
    corpus = None           # conformance.CorpusRun
    ftracetest_all = None   # {test: result}


def kernel_pass(session, kernel, tally, reference, beside=None):
    """Build one kernel and, in one boot, run its labs, the ftracetest
    matrix list and the conformance corpus (and, on upstream and the last
    checkpoint, the whole ftracetest suite). Upstream's run fills
    'reference'; a checkpoint's run is compared with it. beside(kernel),
    when given, runs in a thread while the kernel's guests run, with the
    tree still checked out at it (the debug part builds there)."""
    try:
        k = session.kernel(kernel)
    except HarnessError as e:   # a patch or build failure fails this kernel, not the run
        tally.record(False, f"build {series.kernel_name(kernel)}")
        ui.block(str(e).splitlines())
        return None, None
    tally.record(True, f"build {k.label}")
    problems = k.debug_info_problems()
    tally.record(not problems, f"debug info [{k.name}]: full in kernel/ and for struct mount, "
                 "-g1 elsewhere",
                 "; ".join(problems))
    helper = None
    if beside is not None:
        helper = threading.Thread(target=beside, args=(kernel,), daemon=True)
        helper.start()
    try:
        return run_kernel(session, k, kernel, tally, reference)
    finally:
        if helper is not None:
            helper.join()


def run_kernel(session, k, kernel, tally, reference):
    """kernel_pass's guests and gdb runs on the built kernel k."""
    cps = series.checkpoints()
    last = series.last_checkpoint() if cps else None
    # every lab up to the kernel's checkpoint, and the next one (whose
    # feature checks must fail here): the labs whose previous checkpoint
    # the kernel has
    labs = [cp for cp in cps if cp.has_lab and series.has_checkpoint(kernel, cp.number - 1)]
    plain = [cp for cp in labs if not cp.needs_gdb]
    # the whole suite runs the matrix list's tests too: where it runs, the
    # matrix is graded on its results instead of a second run of them
    whole_suite = kernel in ("upstream", last)
    plan = ([labrun.lab_item(cp.number) for cp in plain]
            + [conformance.FTALL_ITEM if whole_suite else "ftracetest",
               docexamples.PLAN_ITEM, conformance.PLAN_ITEM])
    run, report = session.boot(k, plan, f"check-{k.name}")
    if not labrun.grade_boot(run, tally, f"boot {k.label}"):
        return k, None
    tally.record(True, f"boot {k.label} and finish in {run.seconds:.0f} s")
    for cp in plain:
        labrun.grade_lab(report, cp, kernel, tally)
    labrun.grade_ftracetest(report, kernel, tally, run.log)
    docexamples.grade_kernel(docexamples.load(), run.lines, kernel, tally, run.log)
    corpus = conformance.load_corpus()
    if kernel == "upstream":
        reference.corpus = conformance.grade_reference(corpus, run, tally)
        reference.ftracetest_all = protocol.ftracetest_results(report)
    elif reference.corpus is None:
        tally.record(False, f"conformance [{k.name}]: no upstream reference run to compare with")
    else:
        conformance.grade_checkpoint(corpus, kernel, run, reference.corpus, tally)
    if whole_suite and kernel != "upstream" and reference.ftracetest_all:
        conformance.grade_ftall(reference.ftracetest_all, protocol.ftracetest_results(report),
                                conformance.load_exceptions(), kernel, tally, run.log)
    for cp in labs:
        if cp.needs_gdb:
            labrun.run_gdb_lab(session, k, cp, kernel, tally)
    # While this kernel is built and its tree checked out: its own lab's
    # gdb script, and on upstream the gdb helpers' self-test. (Done after
    # all kernels, they made every kernel a second time.)
    if kernel != "upstream":
        gdb_check(session, k, series.lookup(kernel), tally)
        # the next lab's gdb script must fail here, for its own reason
        following = series.lookup(kernel + 1)
        if (following is not None and not following.needs_gdb
                and os.path.exists(gdbrun.lab_gdb_script(following))):
            labrun.gdb_before(session, k, following, tally)
    else:
        gdb_helpers_selftest(session, k, tally)
    return k, report


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
        outcome = grade.grade_check(check, broken, k.kernel, 0)
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
    ui.step("gdb helpers on upstream 6.1: probes, event flags, triggers, clock, breakpoints")
    ok, evidence = gdbrun.selftest(k, session.initrd(), gdbrun.free_port(), session.logs,
                                   session.timeout_for)
    tally.record(ok, "gdb helpers [upstream]: every ft command, function and printer as expected")
    ui.block(evidence)


class Parts:
    """How long each part of make check took, printed at its end."""

    def __init__(self):
        self.times = []

    def time(self, name, fn, *args, **kwargs):
        timer = ui.Timer()
        result = fn(*args, **kwargs)
        self.times.append((name, timer.seconds))
        return result

    def report(self, total, logs=None, since=None):
        print(f"\nmake check took {total}:")
        width = max((len(name) for name, _s in self.times), default=0)
        for name, seconds in self.times:
            print(f"  {name:<{width}}  {seconds:6.0f} s")
        runs = timing.longest_runs(logs, since=since) if logs else []
        if runs:
            print("the longest guest runs (build/logs/NAME.times says where each spent it):")
            for name, seconds in runs:
                print(f"  {name:<{width}}  {seconds:6.0f} s")


def plain_pass_order(cps):
    """The last checkpoint right after upstream, then the others in order.
    Its debug kernel builds beside its plain pass (the tree is checked out
    there), and its debug guests, the longest of make check, queue from
    then on: last, they made everything else wait for them at the end."""
    return cps[-1:] + cps[:-1]


def run(session):
    started = time.time()
    timer = ui.Timer()
    parts = Parts()
    tally = ui.Tally()
    parts.time("harness self-tests", self_tests, tally)
    parts.time("tree and packages", session.prepare)
    parts.time("checkpatch", checkpatch, session, tally)
    parts.time("series versions", series_versions, session, tally)
    parts.time("docs", docs.check, tally)
    cps = series.checkpoints()
    reference = Reference()
    # The debug kernels (issue 13) build and boot beside the plain ones.
    from . import debug
    debug_part = debug.DebugPart(session, getattr(session, "debug_all", False),
                                 getattr(session, "seed", None))

    def beside(kernel):
        return debug_part.build_beside if debug_part.wants(kernel) else None

    upstream, _report = parts.time("kernel upstream", kernel_pass, session, "upstream", tally,
                                   reference, beside("upstream"))
    passed = {}
    for cp in plain_pass_order(cps):
        passed[cp.number] = parts.time(f"kernel cp{cp.number}", kernel_pass, session, cp.number,
                                       tally, reference, beside(cp.number))
    first = next((passed[cp.number] for cp in cps if passed[cp.number][0] is not None), None)
    if first:
        parts.time("harness on real guests", harness_on_real_guests, session, first[0],
                   first[1], upstream, tally)
    parts.time("debug kernels and robustness (the rest)", debug_part.finish, tally)
    parts.report(timer, session.logs, started)
    return tally.close()
