"""make grade's scoring, on reports built here: points, the crash rules,
the groups that turn right at a checkpoint, the table and the reports."""

import json
import os
import stat
import tempfile
import unittest
import xml.etree.ElementTree as ET
from unittest import mock

from labkit import conformance, ftmatrix, grade, protocol, qemu, series, ui
from labkit.kernels import base_release

# What the harness calls upstream: the release patches/BASE names ("6.12").
BASE = base_release()
from labkit import studentgrade as sg
from labkit.errors import HarnessError
from labkit.kernels import KernelId as K

try:
    from labkit import results
except ImportError:         # the check suite's JUnit writer, merged separately
    results = None

LAB = 3     # event probes: five feature checks, labs 0-2 before it


def reference_check(cp, reg, number):
    """A check as checkpoint 'number' runs it: what cp's expected file says,
    but for a check whose behaviour a checkpoint up to 'number' replaced."""
    c = protocol.Check(f"{cp.number:02d}", reg.id, reg.kind, reg.title)
    replaced = c.replaced_at is not None and c.replaced_at <= number
    expected = grade.load_expected(cp.lab_dir)
    c.output = list(expected[grade.replaced_id(c)] if replaced else expected[reg.id])
    c.rc = 0
    return c


def reference_ran(number):
    """What checkpoint 'number' itself prints for every lab up to it."""
    ran = sg.Ran()
    for cp in series.checkpoints():
        if cp.number <= number and cp.has_lab:
            for reg in cp.checks():
                ran.checks[(f"{cp.number:02d}", reg.id)] = reference_check(cp, reg, number)
    return ran


def report(*checks, finished=True):
    """A protocol report with these (lab, id, output, rc) checks."""
    lines = []
    for lab, ident, output, rc in checks:
        if f"@@ftlab lab-begin {lab}" not in lines:
            lines.append(f"@@ftlab lab-begin {lab}")
        lines.append(f"@@ftlab check-begin {lab} {ident} check t")
        lines += output
        if rc is not None:
            lines.append(f"@@ftlab check-end {lab} {ident} rc={rc}")
    return protocol.parse(lines), lines


class Points(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(sg.parse_points("# c\nuntil-hit 20\n\nconformance 5\n"),
                         {"until-hit": 20, "conformance": 5})

    def test_bad_line(self):
        for text in ("until-hit\n", "until-hit ten\n", "a 1 2\n"):
            with self.assertRaises(ValueError):
                sg.parse_points(text)

    def test_default_and_override(self):
        self.assertEqual(sg.points_of({}, "x", "check"), sg.DEFAULT_POINTS["check"])
        self.assertEqual(sg.points_of({"x": 3}, "x", "check"), 3)

    def test_share_rounds_down(self):
        self.assertEqual(sg.share(10, 2, 3), 6)
        self.assertEqual(sg.share(10, 3, 3), 10)
        self.assertEqual(sg.share(10, 0, 0), 0)


class Turning(unittest.TestCase):
    def test_matrix_rows_of_a_checkpoint(self):
        matrix = ftmatrix.parse("a.tc PASS 0 x\nb.tc FAIL 6 y\nc.tc UNSUPPORTED 6 z\n")
        self.assertEqual(sg.turning_rows(matrix, 6), ["b.tc", "c.tc"])
        self.assertEqual(sg.turning_rows(matrix, 5), [])

    def test_cases_of_a_checkpoint(self):
        # the shape conformance.load_expected() returns: case -> first
        # differing line
        record = {"cp2": {"a": "x", "b": "y", "c": "z"}, "cp3": {"c": "z"}}
        self.assertEqual(sg.turning_cases(record, 3), {"a", "b"})
        # the last checkpoint has no section: all its differences turned
        self.assertEqual(sg.turning_cases({"cp3": {"c": "z"}}, 4), {"c"})

    def test_cases_from_the_real_record(self):
        """The record as it is read from the repository, not a hand-made
        one: a change of its shape breaks this, not make grade."""
        record = conformance.load_expected()
        for cp in series.checkpoints()[1:]:
            turned = sg.turning_cases(record, cp.number)
            self.assertIsInstance(turned, set)
            self.assertTrue(all(isinstance(c, str) for c in turned))

    def test_every_checkpoint_turns_something(self):
        """Each checkpoint 1-7 brings lab checks, or matrix rows, or corpus
        cases: make grade has something to score."""
        matrix, record = ftmatrix.load(), conformance.load_expected()
        for cp in series.checkpoints()[1:]:
            feature = [c for c in cp.checks() if c.kind == "check"]
            self.assertTrue(feature or sg.turning_rows(matrix, cp.number)
                            or sg.turning_cases(record, cp.number), cp.name)


class Crashes(unittest.TestCase):
    def test_crash_is_charged_to_the_check_it_cut_short(self):
        ran = sg.Ran()
        rep, lines = report(("03", "until-hit", ["ok"], 0), ("03", "enable-count", ["x"], None))
        ran.take(rep, lines, ["the kernel crashed: WARNING at ftrace.c"], "boot")
        self.assertIn(("03", "until-hit"), ran.checks)
        self.assertEqual(ran.hit[("03", "enable-count")],
                         ["the kernel crashed: WARNING at ftrace.c"])
        self.assertEqual(ran.problems, [])
        cp = series.lookup(LAB)
        self.assertEqual(ran.missing(cp, K.of(LAB)),
                         ["disable-count", "removal", "several", "errors", "any-event"])
        # the module check runs on a kernel with modules alone
        self.assertEqual(ran.missing(cp, K.of(LAB, "debug"))[-1], "module-ref")

    def test_a_crash_after_a_check_ended_is_charged_to_it(self):
        # lib.sh's reset_tracing removes the check's probes before the
        # next check begins: a use after free there is the check's
        ran = sg.Ran()
        rep, lines = report(("03", "until-hit", ["ok"], 0))
        ran.take(rep, lines, ["BUG: KASAN: use-after-free in event_probe_put+0xe3/0x111"],
                 "boot")
        self.assertEqual(ran.hit, {})
        self.assertEqual(ran.problems, [])
        self.assertIn("BUG: KASAN: use-after-free in event_probe_put+0xe3/0x111",
                      ran.reports[("03", "until-hit")])

    def test_a_problem_with_no_check_to_blame_is_the_runs(self):
        ran = sg.Ran()
        rep, lines = report()
        ran.take(rep, lines, ["lockdep: possible circular locking"], "boot")
        self.assertEqual(ran.hit, {})
        self.assertEqual(ran.problems, [("boot", ["lockdep: possible circular locking"])])
        tests = sg.run_tests(ran)
        self.assertEqual([(t.ok, t.group) for t in tests], [(False, sg.REGRESSION)])

    def test_a_boot_that_panics_before_any_check_runs_once_more(self):
        panic = qemu.Run("crash", ["Booting the kernel.", "Kernel panic - not syncing: IO-APIC + "
                                   "timer doesn't work!  Boot with apic=debug"], "b.log", 3,
                         ["Kernel panic - not syncing: IO-APIC + timer doesn't work!"])
        self.assertIn("IO-APIC + timer", sg.died_booting(panic))
        rep, lines = report(("03", "until-hit", ["ok"], None))
        self.assertIsNone(sg.died_booting(qemu.Run("crash", lines, "b.log", 3, ["BUG: x"])))
        self.assertIsNone(sg.died_booting(qemu.Run("timeout", [], "b.log", 3)))
        good = qemu.Run("done", ["@@ftlab done"], "b.log", 3)
        session = mock.Mock()
        session.boot.side_effect = [(panic, protocol.parse(panic.lines)),
                                    (good, protocol.parse(good.lines))]
        ran = sg.Ran()
        with mock.patch.object(ui, "step") as step:
            sg.plain_boot(session, mock.Mock(), ["lab:03"], "grade03", ran)
        self.assertEqual([c.args[-1] for c in session.boot.call_args_list],
                         ["grade03", "grade03-again"])
        self.assertIn("booting it once more", step.call_args.args[0])
        self.assertEqual(ran.problems, [])
        # only once: a second panic is the run's problem
        session.boot.side_effect = [(panic, protocol.parse(panic.lines))] * 2
        ran = sg.Ran()
        with mock.patch.object(ui, "step"):
            sg.plain_boot(session, mock.Mock(), ["lab:03"], "grade03", ran)
        self.assertEqual(len(ran.problems), 1)

    def test_a_clean_run_leaves_no_problem(self):
        ran = sg.Ran()
        rep, lines = report(("03", "until-hit", ["ok"], None))
        ran.take(rep, lines, [], "boot")
        self.assertEqual((ran.hit, ran.problems), ({}, []))

    def test_rerun_plan(self):
        labs = [series.lookup(n) for n in (1, 2, 3)]
        ran = sg.Ran()
        rep, lines = report(("01", "one-function", ["x"], 0), ("01", "glob", ["x"], None))
        ran.take(rep, lines, ["crash"], "boot")
        # lab 01 goes on with its next check alone, lab 03 runs whole, the
        # gdb lab 02 is not a plain boot's
        self.assertEqual(sg.rerun_plan(ran, labs), ["lab:01:last-removed", "lab:03"])
        self.assertEqual(sg.rerun_plan(reference_ran(3), labs), [])

    def test_crashed_check_fails_with_the_crash(self):
        cp = series.lookup(LAB)
        ran = reference_ran(LAB)
        del ran.checks[("03", "removal")]
        ran.hit[("03", "removal")] = ["the kernel crashed"]
        tests = {t.name: t for t in sg.lab_tests(ran, cp, LAB, {})}
        self.assertFalse(tests["lab03.removal"].ok)
        self.assertEqual(tests["lab03.removal"].evidence, ["the kernel crashed"])
        self.assertEqual(tests["lab03.removal"].earned, 0)
        self.assertTrue(tests["lab03.errors"].ok)


def debug_of(ran, leaks=()):
    """A DebugRun of lab LAB on a learner's debug kernel that printed what
    'ran' holds, with kmemleak's report 'leaks'."""
    ran.leaks = list(leaks)
    k = mock.Mock(label="your checkpoint 3 (debug)")
    k.inlined.return_value = {
        "event_probe_add+0x4d/0x120": [("event_probe_add", "kernel/trace/trace_events.c:812")],
        "kmalloc_trace+0x2/0x9": [("kmalloc_trace", "mm/slab_common.c:1")]}
    return sg.DebugRun(k, ran, series.lookup(LAB), "faddr2line")


class LabTests(unittest.TestCase):
    def test_the_reference_scores_full_marks(self):
        cp = series.lookup(LAB)
        tests = []
        for lab in series.checkpoints()[:LAB + 1]:
            tests += sg.lab_tests(reference_ran(LAB), lab, LAB, {}, debug_of(reference_ran(LAB)))
        self.assertTrue(all(t.ok for t in tests), [t for t in tests if not t.ok])
        earned, possible = sg.score(tests)
        feature = [c for c in cp.checks() if c.kind == "check"]
        self.assertEqual((earned, possible), (10 * len(feature), 10 * len(feature)))

    def test_a_wrong_feature_check_costs_its_points_with_a_diff(self):
        cp = series.lookup(LAB)
        ran = reference_ran(LAB)
        ran.checks[("03", "until-hit")].output[-1] = "sched_switch in trace: none"
        tests = {t.name: t for t in sg.lab_tests(ran, cp, LAB, {"until-hit": 25})}
        t = tests["lab03.until-hit"]
        self.assertEqual((t.ok, t.earned, t.points), (False, 0, 25))
        self.assertIn("+sched_switch in trace: none", t.evidence)

    def test_earlier_labs_and_guards_are_regressions(self):
        ran = reference_ran(2)
        ran.checks[("01", "glob")].output = ["wrong"]
        ran.checks[("02", "plain")].output = ["wrong"]
        tests = sg.lab_tests(ran, series.lookup(1), 2, {})
        tests += sg.lab_tests(ran, series.lookup(2), 2, {})
        by_name = {t.name: t for t in tests}
        for name in ("lab01.glob", "lab02.plain"):
            self.assertEqual((by_name[name].ok, by_name[name].group, by_name[name].points),
                             (False, sg.REGRESSION, 0))
        self.assertEqual(by_name["lab02.soft-disabled"].group, "lab 02")
        # 10 points for each feature check of lab 02, none for regressions
        feature = [c for c in series.lookup(2).checks() if c.kind == "check"]
        self.assertEqual(sg.score(tests), (10 * len(feature), 10 * len(feature)))

    def test_a_check_that_did_not_run_fails(self):
        ran = reference_ran(LAB)
        del ran.checks[("03", "errors")]
        t = {t.name: t for t in sg.lab_tests(ran, series.lookup(LAB), LAB, {})}["lab03.errors"]
        self.assertFalse(t.ok)
        self.assertEqual(t.evidence, ["the check did not run"])


class DebugKernel(unittest.TestCase):
    """Lab N on the learner's debug kernel: a report while a check ran, or
    a leak of a hole its checks need, fails the check, and says where."""

    def debug_run(self, ran, leaks=()):
        return debug_of(ran, leaks)

    def test_a_module_check_is_graded_on_the_debug_kernel_alone(self):
        cp = series.lookup(LAB)
        plain = reference_ran(LAB)
        del plain.checks[("03", "module-ref")]     # the plain kernel has no modules
        tests = {t.name: t for t in sg.lab_tests(plain, cp, LAB, {},
                                                 self.debug_run(reference_ran(LAB)))}
        t = tests["lab03.module-ref"]
        self.assertEqual((t.ok, t.earned, t.points, t.group), (True, 10, 10, "lab 03"))
        # a module unloaded under the probe: the debug run's output differs
        debug_ran = reference_ran(LAB)
        out = debug_ran.checks[("03", "module-ref")].output
        out[out.index("rmmod trace_events_sample with the probe: Resource temporarily "
                      "unavailable")] = "rmmod trace_events_sample with the probe: ok"
        t = {t.name: t for t in sg.lab_tests(plain, cp, LAB, {},
                                             self.debug_run(debug_ran))}["lab03.module-ref"]
        self.assertEqual((t.ok, t.earned), (False, 0))
        self.assertIn("on your checkpoint 3 (debug):", t.evidence)
        self.assertIn("+rmmod trace_events_sample with the probe: ok", t.evidence)
        # QUICK=1 (the plain kernel alone) has no line for it; a later
        # grade (lab 03 as a regression) neither, as its debug pass runs lab N
        quick = {t.name for t in sg.lab_tests(plain, cp, LAB, {}, plain_only=True)}
        self.assertNotIn("lab03.module-ref", quick)
        self.assertIn("lab03.errors", quick)
        later = {t.name for t in sg.lab_tests(reference_ran(6), cp, 6, {})}
        self.assertNotIn("lab03.module-ref", later)
        # without a debug run it cannot pass
        t = {t.name: t for t in sg.lab_tests(plain, cp, LAB, {})}["lab03.module-ref"]
        self.assertFalse(t.ok)
        # and it is never free: the skeleton's plain kernel cannot run it
        self.assertNotIn("module-ref", sg.free_checks(cp))

    def test_a_clean_debug_run_changes_nothing(self):
        cp = series.lookup(LAB)
        tests = sg.lab_tests(reference_ran(LAB), cp, LAB, {},
                             self.debug_run(reference_ran(LAB)))
        self.assertTrue(all(t.ok for t in tests), [t for t in tests if not t.ok])

    def test_a_report_fails_the_check_it_hit_and_says_where(self):
        cp = series.lookup(LAB)
        debug_ran = reference_ran(LAB)
        debug_ran.reports[("03", "removal")] = [
            "BUG: KASAN: slab-use-after-free in event_probe_add+0x4d/0x120",
            " kmalloc_trace+0x2/0x9"]
        tests = {t.name: t for t in sg.lab_tests(reference_ran(LAB), cp, LAB, {},
                                                 self.debug_run(debug_ran))}
        t = tests["lab03.removal"]
        self.assertEqual((t.ok, t.earned), (False, 0))
        self.assertIn("on your checkpoint 3 (debug):", t.evidence)
        self.assertIn("  event_probe_add+0x4d/0x120 at kernel/trace/trace_events.c:812",
                      t.evidence)
        self.assertNotIn("  kmalloc_trace+0x2/0x9 at mm/slab_common.c:1", t.evidence)
        self.assertTrue(tests["lab03.errors"].ok)

    def test_a_leak_fails_the_checks_of_the_hole_that_allocated_it(self):
        cp = series.lookup(LAB)
        hole = next(h for h in holes_of(cp) if h.checks)
        leaks = ["unreferenced object 0xffff888003a1b2c0 (size 64):",
                 "  backtrace:", f"    {hole.function}+0x4d/0x120", "    kmalloc_trace+0x2/0x9",
                 "unreferenced object 0xffff888003a1b300 (size 8):", "  backtrace:",
                 "    some_other_function+0x1/0x2"]
        debug = self.debug_run(reference_ran(LAB), leaks)
        tests = {t.name: t for t in sg.lab_tests(reference_ran(LAB), cp, LAB, {}, debug)}
        for ident in hole.checks:
            self.assertFalse(tests[f"lab03.{ident}"].ok, ident)
            self.assertIn(f"memory that {hole.function}() allocated is never freed (kmemleak):",
                          tests[f"lab03.{ident}"].evidence)
        self.assertIn("    some_other_function+0x1/0x2", debug.unplaced_leaks)

    def test_a_leak_in_an_inlined_hole_is_charged_to_it(self):
        cp = series.lookup(LAB)
        by_name = {h.function: h for h in holes_of(cp)}
        leak = ["unreferenced object 0xffff888000baf400 (size 32):", "  backtrace:",
                "    [<(____ptrval____)>] kmalloc_trace+0x28/0x5e",
                "    [<(____ptrval____)>] event_probe_callback+0x27e/0x4b6",
                "    [<(____ptrval____)>] ftrace_process_regex+0x1c3/0x21a"]
        inlined = {"event_probe_callback+0x27e/0x4b6": [
            ("kzalloc", "include/linux/slab.h:699"),
            ("event_probe_add", "kernel/trace/trace_events.c:3697"),
            ("event_probe_callback", "kernel/trace/trace_events.c:3775")]}
        placed, _ = sg.leaks_by_hole(leak, list(by_name.values()), inlined)
        self.assertEqual(list(placed), [by_name["event_probe_add"]])
        placed, _ = sg.leaks_by_hole(leak, list(by_name.values()))
        self.assertEqual(list(placed), [by_name["event_probe_callback"]])
        k = mock.Mock(label="your checkpoint 3 (debug)")
        k.inlined.return_value = inlined
        debug = sg.DebugRun(k, reference_ran(LAB), cp, "faddr2line")
        self.assertIn("  event_probe_callback+0x27e/0x4b6 at kernel/trace/trace_events.c:3697 "
                      "(in event_probe_add(), inlined)", debug.where(leak))

    def test_kmemleaks_own_line_is_no_leak(self):
        hole = next(h for h in holes_of(series.lookup(LAB)) if h.checks)
        leaks = ["kmemleak: 1 new suspected memory leaks (see /sys/kernel/debug/kmemleak)",
                 "ftlab-mark: kmemleak",
                 "unreferenced object 0xffff888003a1b2c0 (size 64):", "  backtrace:",
                 f"    {hole.function}+0x4d/0x120"]
        placed, unplaced = sg.leaks_by_hole(leaks, [hole])
        self.assertEqual(placed, {hole: leaks[2:]})
        self.assertEqual(unplaced, [])

    def test_a_report_in_the_log_is_charged_to_the_check_that_ran(self):
        ran = sg.Ran()
        rep, lines = report(("03", "until-hit", ["ok"], 0), ("03", "removal", ["ok"], 0))
        log = [qemu.LOG_BEGIN, "ftlab-mark: check 03 until-hit", "fine",
               "ftlab-mark: check 03 removal",
               "WARNING: suspicious RCU usage", "stack", qemu.LOG_END]
        ran.take(rep, lines + log, ["a report"], "t", in_log=True)
        self.assertEqual(list(ran.reports), [("03", "removal")])
        self.assertEqual(ran.problems, [])


class ScoreMeansWork(unittest.TestCase):
    """No points without the learner's code: checks that pass on the
    skeleton earn nothing, checkpatch's points need every hole filled,
    compiler warnings in the learner's files cost points."""

    def test_checks_that_pass_on_the_skeleton_earn_nothing(self):
        cp = series.checkpoints()[-1]
        free = sg.free_checks(cp)
        self.assertTrue(free, "the last exercise has checks its skeleton passes")
        tests = {t.name: t for t in sg.lab_tests(reference_ran(cp.number), cp, cp.number, {})}
        for ident in free:
            self.assertEqual((tests[f"lab{cp.number:02d}.{ident}"].ok,
                              tests[f"lab{cp.number:02d}.{ident}"].points), (True, 0))
        self.assertFalse(sg.free_checks(series.lookup(LAB)))

    def test_checkpatch_waits_for_every_hole(self):
        cp = series.lookup(LAB)
        hole = holes_of(cp)[0]
        with tempfile.TemporaryDirectory() as tree:
            path = os.path.join(tree, hole.file)
            os.makedirs(os.path.dirname(path))
            with open(path, "w") as f:
                f.write(f"/* {sg.holes.todo_tag(LAB, hole)}: write it */\n")
            left = sg.unfilled_holes(tree, cp)
            patch = os.path.join(tree, "03.patch")
            with open(patch, "w") as f:
                f.write("diff --git a/x b/x\n")
            t = sg.checkpatch_test(tree, patch, {}, left)
        self.assertEqual([h.number for h in left], [hole.number])
        self.assertEqual((t.ok, t.earned), (False, 0))
        self.assertIn(f"{hole.function}()", t.evidence[0])

    def test_warnings_are_kept_per_file_until_it_compiles_again(self):
        with tempfile.TemporaryDirectory() as obj:
            k = mock.Mock(obj=obj, log=os.path.join(obj, "build.log"))
            with open(k.log, "w") as f:
                f.write("  CC      kernel/trace/trace_events.o\n"
                        "/b/linux/kernel/trace/trace_events.c:12:5: warning: unused variable 'x'\n")
            files = ["kernel/trace/trace_events.c", "kernel/trace/ftrace.c"]
            first = sg.compiler_warnings(k, files)
            with open(k.log, "w") as f:
                f.write("  CC      kernel/trace/ftrace.o\n")
            second = sg.compiler_warnings(k, files)
        self.assertEqual(len(first["kernel/trace/trace_events.c"]), 1)
        self.assertEqual(second, first)
        t = sg.warnings_test(second, {})
        self.assertEqual((t.ok, t.earned, t.points), (False, 0, sg.DEFAULT_POINTS["warnings"]))
        self.assertTrue(sg.warnings_test({"a.c": []}, {}).ok)

    def test_a_line_per_hole(self):
        cp = series.lookup(LAB)
        ran = reference_ran(LAB)
        ran.checks[("03", "removal")].output = ["wrong"]
        lines = sg.hole_progress(sg.lab_tests(ran, cp, LAB, {}), cp)
        self.assertEqual(len(lines), len(holes_of(cp)))
        needing = [h for h in holes_of(cp) if "removal" in h.checks]
        self.assertTrue(needing)
        self.assertIn("(failing: removal)", lines[needing[0].number - 1])


def holes_of(cp):
    from labkit import holes
    return holes.load(cp)


def ft_lines(result):
    return [f"[1] a test\t[{result}]"]


class MatrixTests(unittest.TestCase):
    MATRIX = ftmatrix.parse("a.tc PASS 0 x\nb.tc FAIL 6 y\nc.tc UNSUPPORTED 6 z\n")

    def test_turning_rows_share_their_points(self):
        ran = sg.Ran()
        ran.ftracetest = {"a.tc": ft_lines("PASS"), "b.tc": ft_lines("PASS"),
                          "c.tc": ft_lines("UNSUPPORTED")}
        turning, before = sg.matrix_tests(ran, self.MATRIX, 6, {"ftracetest": 10})
        self.assertEqual((turning.ok, turning.earned, turning.points), (False, 5, 10))
        # the failing test's line, then the end of its own log
        self.assertEqual(turning.evidence, ["c.tc: UNSUPPORTED, expected PASS",
                                            "    | [1] a test\t[UNSUPPORTED]"])
        self.assertEqual((before.ok, before.group), (True, sg.REGRESSION))

    def test_no_result_fails_and_instance_runs_count(self):
        ran = sg.Ran()
        ran.ftracetest = {"b.tc": ft_lines("PASS"), "b.tc@instance": ft_lines("FAIL")}
        turning, before = sg.matrix_tests(ran, self.MATRIX, 6, {})
        self.assertIn("b.tc: PASS, FAIL, expected PASS", turning.evidence)
        self.assertIn("c.tc: no result, expected PASS", turning.evidence)
        self.assertFalse(before.ok)

    def test_a_checkpoint_that_turns_no_row_has_no_scored_line(self):
        tests = sg.matrix_tests(sg.Ran(), self.MATRIX, 5, {})
        self.assertEqual([t.group for t in tests], [sg.REGRESSION])


def corpus_run(outputs):
    lines = []
    for ident, out in outputs.items():
        lines += [f"@@ftlab conf-begin {ident}"] + out + [f"@@ftlab conf-end {ident}"]
    return conformance.parse_guest(lines)


class ConformanceTests(unittest.TestCase):
    CORPUS = conformance.parse_corpus("a - >> x 1\nb - >> x 2\nc - >> x 3\nd - >> x 4\n")
    # the shape of conformance.load_expected(): {kernel: {case: first differing line}}
    RECORD = {"cp2": {"a": "line a", "b": "line b", "d": "line d"}, "cp3": {"d": "line d"}}
    UPSTREAM = {"a": ["A"], "b": ["B"], "c": ["C"], "d": ["D"]}

    def graded(self, got):
        ran = sg.Ran()
        ran.corpus = corpus_run(got)
        return sg.conformance_tests(ran, self.CORPUS, corpus_run(self.UPSTREAM), self.RECORD,
                                    3, {})

    def test_all_right(self):
        turning, before = self.graded(dict(self.UPSTREAM, d=["not yet"]))
        self.assertEqual(turning.title, "conformance: 2 of the 2 cases that turn right at "
                         "this checkpoint")
        self.assertEqual((turning.ok, turning.earned), (True, 10))
        self.assertEqual((before.ok, before.title), (True, "conformance: 1 of the 1 cases "
                                                     "that were right before it"))

    def test_a_wrong_case_and_a_regression(self):
        turning, before = self.graded({"a": ["A"], "b": ["not B"], "c": ["oops"], "d": ["D"]})
        self.assertEqual((turning.ok, turning.earned), (False, 5))
        self.assertIn(f"b: differs from upstream {BASE}", turning.evidence)
        self.assertFalse(before.ok)

    def test_no_reference(self):
        turning, before = sg.conformance_tests(sg.Ran(), self.CORPUS, None, self.RECORD, 3, {})
        self.assertEqual((turning.ok, turning.earned, turning.points), (False, 0, 10))
        self.assertIn(f"a: no run of upstream {BASE} to compare with", turning.evidence)
        self.assertFalse(before.ok)

    def test_usable_reference(self):
        lines = [f"@@ftlab conf-begin {i}" if n % 2 == 0 else f"@@ftlab conf-end {i}"
                 for i in "abcd" for n in range(2)]
        self.assertIsNotNone(sg.usable_reference(self.CORPUS, lines))
        self.assertIsNone(sg.usable_reference(self.CORPUS, lines[:-1]))
        self.assertIsNone(sg.usable_reference(self.CORPUS, lines[:4]))


class FakeSession:
    """Where reference_run looks for logs; building upstream fails as it
    does in a tree with the learner's changes."""

    def __init__(self, tmp):
        self.build_dir = tmp
        self.logs = os.path.join(tmp, "logs")
        os.makedirs(self.logs)
        self.booted = []

    def log(self, name, lines, age):
        path = os.path.join(self.logs, name)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.utime(path, (1000000 - age, 1000000 - age))

    def kernel(self, kernel):
        raise HarnessError("build/linux has changes of yours")


class Reference(unittest.TestCase):
    CORPUS = conformance.parse_corpus("a - >> x 1\nb - >> x 2\n")

    def run_lines(self, **outputs):
        lines = []
        for ident, out in outputs.items():
            lines += [f"@@ftlab conf-begin {ident}", out, f"@@ftlab conf-end {ident}"]
        return lines

    def test_the_newest_complete_log(self):
        with tempfile.TemporaryDirectory() as tmp:
            session = FakeSession(tmp)
            session.log("check-upstream.log", self.run_lines(a="old", b="old"), age=100)
            session.log("grade-upstream.log", self.run_lines(a="new", b="new"), age=10)
            with mock.patch.object(ui, "info"):
                ref = sg.reference_run(session, self.CORPUS)
            self.assertEqual(ref.cases["a"], ["new"])
            # a log that misses a case does not count
            session.log("grade-upstream.log", self.run_lines(a="new"), age=1)
            with mock.patch.object(ui, "info"):
                self.assertEqual(sg.reference_run(session, self.CORPUS).cases["a"], ["old"])

    def test_none_when_upstream_cannot_be_built(self):
        with tempfile.TemporaryDirectory() as tmp:
            with mock.patch.object(ui, "info") as info:
                self.assertIsNone(sg.reference_run(FakeSession(tmp), self.CORPUS))
            self.assertIn("changes of yours", info.call_args[0][0])


DIFF = "diff --git a/kernel/trace/x.c b/kernel/trace/x.c\n--- a/x.c\n+++ b/x.c\n"


class Checkpatch(unittest.TestCase):
    """The learner's diff through a stand-in checkpatch.pl that complains
    about lines with BAD in them."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.tree = self.tmp.name
        os.makedirs(os.path.join(self.tree, "scripts"))
        script = os.path.join(self.tree, "scripts", "checkpatch.pl")
        with open(script, "w") as f:
            f.write('open(F, $ARGV[-1]);\n'
                    'while (<F>) { print "x.c:1: WARNING:LONG_LINE: bad\\n" if /BAD/ }\n')
        os.chmod(script, stat.S_IRWXU)
        self.patch = os.path.join(self.tree, "03.patch")

    def tearDown(self):
        self.tmp.cleanup()

    def check(self, text):
        if text is not None:
            with open(self.patch, "w") as f:
                f.write(text)
        return sg.checkpatch_test(self.tree, self.patch, {})

    def test_clean(self):
        t = self.check(DIFF + "+int x;\n")
        self.assertEqual((t.ok, t.earned), (True, sg.DEFAULT_POINTS["checkpatch"]))

    def test_the_header_is_not_checked(self):
        t = self.check("ftlab exercise 3 BAD header\n\n" + DIFF + "+int x;\n")
        self.assertTrue(t.ok, t.evidence)

    def test_a_message_fails(self):
        t = self.check(DIFF + "+BAD\n")
        self.assertEqual((t.ok, t.earned), (False, 0))
        self.assertEqual(t.evidence, ["x.c:1: WARNING:LONG_LINE: bad"])

    def test_no_work(self):
        for text in (None, "", "ftlab exercise 3 (03-event-probes) TODO=1\n"):
            t = self.check(text)
            self.assertFalse(t.ok)
            self.assertIn("make save N", t.evidence[0])


def sample_tests():
    return [sg.Test("lab03.a", "lab 03 a: one", "lab 03", True, 10),
            sg.Test("lab03.b", "lab 03 b: two", "lab 03", False, 10, evidence=["-x", "+y"]),
            sg.Test("conformance.turning", "conformance: 1 of 2", "conformance", False, 10, 5),
            sg.Test("lab01.g", "lab 01 g: guard", sg.REGRESSION, False, evidence=["diff"])]


class Table(unittest.TestCase):
    def test_score_and_lines(self):
        tests = sample_tests()
        self.assertEqual(sg.score(tests), (15, 30))
        lines = sg.table(tests, 3, "event probes")
        self.assertEqual(lines[0], "make grade 3: checkpoint 3, event probes")
        self.assertEqual(lines[-1], "Score: 15/30  (1 regression(s) failed)")
        row = next(l for l in lines if "lab 03 b: two" in l)
        self.assertRegex(row, r"FAIL\s+0/10$")
        self.assertIn("      | +y", lines)
        regression = next(l for l in lines if "lab 01 g" in l)
        self.assertTrue(regression.endswith("FAIL"))

    def test_summary(self):
        s = sg.summary(sample_tests(), 3)
        self.assertEqual((s["score"], s["possible"], len(s["tests"])), (15, 30, 4))


@unittest.skipIf(results is None, "labkit.results (the JUnit writer) is not merged yet")
class Reports(unittest.TestCase):
    def test_junit_and_score_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            sg.write(tmp, sample_tests(), 3)
            root = ET.parse(os.path.join(tmp, "junit.xml")).getroot()
            cases = root.findall(".//testcase")
            self.assertEqual(len(cases), 4)
            failed = [c.get("name") for c in cases if c.find("failure") is not None]
            self.assertEqual(failed, ["lab03.b", "conformance.turning", "lab01.g"])
            text = root.find(".//testcase[@name='lab03.b']/failure").text
            self.assertEqual(text.splitlines(), ["0/10 points", "-x", "+y"])
            with open(os.path.join(tmp, "score.json")) as f:
                self.assertEqual(json.load(f)["score"], 15)


if __name__ == "__main__":
    unittest.main()
