import unittest

from labkit import grade, protocol
from labkit.kernels import KernelId as K


def make_check(ident, output, kind="check", rc=0):
    c = protocol.Check("01", ident, kind, "title")
    c.output, c.rc = output, rc
    return c


class Normalise(unittest.TestCase):
    def test_trace_line_pid_cpu_timestamp(self):
        line = "              sh-57      [000] d..2.    12.345678: schedule <-foo"
        self.assertEqual(grade.normalise([line]),
                         ["              sh-PID      [CPU] d..2.    TS: schedule <-foo"])

    def test_nothing_else_changes(self):
        lines = ["schedule:traceoff:count=12", "enabled_functions: 1234", "0x1234 [12]"]
        self.assertEqual(grade.normalise(lines), lines)

    def test_what_only_looks_like_a_pid_or_timestamp_stays(self):
        lines = ["ppid 12", "pids 12", "12.3456: short", "sh-57 [0] no cpu column"]
        self.assertEqual(grade.normalise(lines), lines)

    def test_trailing_blank_lines_and_spaces_dropped(self):
        self.assertEqual(grade.normalise(["a  ", "", ""]), ["a"])


class Expected(unittest.TestCase):
    TEXT = "# comment\n\n## check: one\nline 1\n#### all functions enabled ####\n\n## check: two\nx\n"

    def test_sections(self):
        s = grade.parse_expected(self.TEXT)
        self.assertEqual(s, {"one": ["line 1", "#### all functions enabled ####"], "two": ["x"]})


class DebugDifferences(unittest.TestCase):
    """labs/debug-differences: a debug kernel's check may print the
    recorded debug output instead of 'expected', and nothing else."""
    EXP = {"a": ["ok", "one frame"]}
    RECORDED = ("two CPUs: the stack trace starts one frame later", ["ok", "two frames"])

    def grade(self, output, recorded, kernel=K.upstream()):
        check = make_check("a", output, "guard")
        outcome = grade.grade_check(check, self.EXP, kernel, 1)
        return grade.grade_on_debug(check, outcome, self.EXP, kernel, 1, recorded)

    def test_expected_output_passes(self):
        self.assertTrue(self.grade(["ok", "one frame"], None).ok)
        self.assertTrue(self.grade(["ok", "one frame"], self.RECORDED).ok)

    def test_the_recorded_debug_output_passes_when_listed(self):
        out = self.grade(["ok", "two frames"], self.RECORDED, kernel=K.of(7))
        self.assertTrue(out.ok)
        self.assertIn("one frame later", out.note)

    def test_a_check_not_listed_fails(self):
        self.assertFalse(self.grade(["ok", "two frames"], None).ok)

    def test_other_output_of_a_listed_check_fails(self):
        """The negative case: the record excuses its own output only."""
        out = self.grade(["ok", "three frames"], self.RECORDED)
        self.assertFalse(out.ok)
        self.assertIn("+three frames", out.evidence)
        self.assertIn("labs/debug-differences", out.evidence[0])

    def test_a_listed_check_that_exits_non_zero_fails(self):
        check = make_check("a", ["ok", "two frames"], "guard", rc=1)
        outcome = grade.grade_check(check, self.EXP, K.of(7), 1)
        self.assertFalse(grade.grade_on_debug(check, outcome, self.EXP, K.of(7), 1, self.RECORDED).ok)

    def test_round_trip(self):
        entries = {("01", "glob"): ("inlining: more functions match", ["x", "y"]),
                   ("00", "cost"): ("reason: with a colon", ["z"])}
        text = grade.format_debug_differences("# header\n", entries)
        self.assertEqual(grade.parse_debug_differences(text), entries)
        self.assertLess(text.index("## 00 cost"), text.index("## 01 glob"))

    def test_repo_record_names_lab_checks_whose_output_it_changes(self):
        from labkit import series
        for (lab, ident), (reason, lines) in grade.load_debug_differences().items():
            cp = series.lookup(int(lab))
            expected = grade.load_expected(cp.lab_dir)
            self.assertIn(ident, expected, f"{lab} {ident}")
            self.assertNotEqual(expected[ident], lines, f"{lab} {ident}: same as expected")
            self.assertTrue(reason.strip(), f"{lab} {ident}: no reason")


class GradeCheck(unittest.TestCase):
    EXP = {"a": ["ok"]}

    def test_match_passes(self):
        self.assertTrue(grade.grade_check(make_check("a", ["ok"]), self.EXP, K.of(1), 1).ok)

    def test_mismatch_fails_with_diff(self):
        out = grade.grade_check(make_check("a", ["bad"]), self.EXP, K.of(1), 1)
        self.assertFalse(out.ok)
        self.assertIn("-ok", out.evidence)
        self.assertIn("+bad", out.evidence)

    def test_nonzero_exit_fails(self):
        out = grade.grade_check(make_check("a", ["ok"], rc=1), self.EXP, K.of(1), 1)
        self.assertFalse(out.ok)
        self.assertIn("exit code 1", out.evidence)

    def test_feature_check_must_fail_before_its_checkpoint(self):
        self.assertFalse(grade.grade_check(make_check("a", ["ok"]), self.EXP, K.of(0), 1).ok)
        self.assertTrue(grade.grade_check(make_check("a", ["bad"]), self.EXP, K.of(0), 1).ok)

    def test_guard_must_pass_before_its_checkpoint(self):
        self.assertTrue(grade.grade_check(make_check("a", ["ok"], "guard"), self.EXP, K.of(0), 1).ok)
        self.assertFalse(grade.grade_check(make_check("a", ["no"], "guard"), self.EXP, K.of(0), 1).ok)

    def test_upstream_counts_as_later(self):
        self.assertTrue(grade.grade_check(make_check("a", ["ok"]), self.EXP, K.upstream(), 5).ok)

    def test_replaced_behaviour_must_change(self):
        exp = {"a": ["ok"], "a@1": ["new"]}
        c = make_check("a", ["ok"], "replaced-at-1")
        self.assertTrue(grade.grade_check(c, exp, K.of(0), 0).ok)
        self.assertFalse(grade.grade_check(c, exp, K.of(1), 0).ok)
        self.assertFalse(grade.grade_check(c, exp, K.upstream(), 0).ok)
        new = make_check("a", ["new"], "replaced-at-1")
        self.assertTrue(grade.grade_check(new, exp, K.of(2), 0).ok)
        self.assertTrue(grade.grade_check(new, exp, K.upstream(), 0).ok)
        self.assertFalse(grade.grade_check(new, exp, K.of(0), 0).ok)

    def test_replaced_behaviour_is_checked_not_just_different(self):
        """From checkpoint N on, output that merely differs (an error)
        fails: it must be the recorded new behaviour."""
        exp = {"a": ["ok"], "a@1": ["new"]}
        out = grade.grade_check(make_check("a", ["write error: Invalid argument"],
                                           "replaced-at-1"), exp, K.of(1), 0)
        self.assertFalse(out.ok)
        self.assertIn("+write error: Invalid argument", out.evidence)
        self.assertFalse(grade.grade_check(make_check("a", ["new"], "replaced-at-1", rc=1),
                                           exp, K.of(1), 0).ok)

    def test_replaced_needs_its_new_section_and_a_real_change(self):
        new = make_check("a", ["new"], "replaced-at-1")
        self.assertIn("has no '## check: a@1'",
                      grade.grade_check(new, {"a": ["ok"]}, K.of(1), 0).evidence[0])
        self.assertFalse(grade.grade_check(new, {"a": ["new"], "a@1": ["new"]}, K.of(1), 0).ok)

    def test_missing_expectation_fails(self):
        self.assertFalse(grade.grade_check(make_check("zz", ["ok"]), self.EXP, K.of(1), 1).ok)


class Protocol(unittest.TestCase):
    def test_parse(self):
        lines = ["boot noise", "@@ftlab lab-begin 01",
                 "@@ftlab check-begin 01 one check The first check",
                 "out 1", "out 2", "@@ftlab check-end 01 one rc=0",
                 "@@ftlab lab-end 01",
                 "@@ftlab lab-begin 02", "@@ftlab lab-unsupported 02 events/x/trigger",
                 "@@ftlab lab-end 02",
                 "@@ftlab ftracetest-case 1 ftrace/a.tc",
                 "@@ftlab ftracetest-begin matrix 1", "=== Ftrace unit tests ===",
                 "[1] A test\t[PASS]", "# of passed:  1",
                 "@@ftlab ftracetest-end matrix rc=0", "@@ftlab done"]
        r = protocol.parse(lines)
        c = r.labs["01"].checks[0]
        self.assertEqual((c.id, c.kind, c.title, c.output, c.rc),
                         ("one", "check", "The first check", ["out 1", "out 2"], 0))
        self.assertEqual(r.labs["02"].unsupported, "events/x/trigger")
        self.assertEqual(r.ftracetest["ftrace/a.tc"], ["[1] A test\t[PASS]", "# of passed:  1"])
        self.assertEqual(r.errors, [])

    FT_RUN = ["@@ftlab ftracetest-case 1 a.tc", "@@ftlab ftracetest-case 2 b.tc",
              "@@ftlab ftracetest-case 3 a.tc@instance",
              "@@ftlab ftracetest-begin all 3",
              "=== Ftrace unit tests ===",
              "[1] Test A\t[PASS]",
              "[2] Test B\t\x1b[31m[FAIL]\x1b[0m", "+ echo the log of b", "kernel noise",
              "[3] (instance) Test A\t[UNSUPPORTED]",
              "# of passed:  1",
              "@@ftlab ftracetest-end all rc=1",
              "[9] stray\t[PASS]"]

    def test_one_ftracetest_run_is_split_by_its_case_numbers(self):
        r = protocol.parse(self.FT_RUN)
        self.assertEqual(r.ftracetest["b.tc"],
                         ["[2] Test B\t\x1b[31m[FAIL]\x1b[0m", "+ echo the log of b", "kernel noise"])
        self.assertEqual(protocol.ftracetest_results(r),
                         {"a.tc": "PASS", "b.tc": "FAIL", "a.tc@instance": "UNSUPPORTED"})
        self.assertEqual(r.errors, [])

    def test_a_case_the_guest_did_not_list_is_an_error(self):
        r = protocol.parse(self.FT_RUN[:1] + self.FT_RUN[3:])
        self.assertEqual(len(r.errors), 2)      # [2] and [3]
        self.assertIn("[2]", r.errors[0])

    def test_a_run_cut_short_has_no_result_for_the_rest(self):
        r = protocol.parse(self.FT_RUN[:6] + ["[2] Test B"])
        self.assertEqual(protocol.ftracetest_results(r), {"a.tc": "PASS"})
        self.assertEqual(r.errors, ["ftracetest run 'all' did not finish: the console ends in b.tc"])

    def test_unfinished_check_has_no_rc(self):
        r = protocol.parse(["@@ftlab lab-begin 01", "@@ftlab check-begin 01 x check T", "half"])
        self.assertIsNone(r.labs["01"].checks[0].rc)
        self.assertFalse(r.labs["01"].finished)


class CheckpatchExceptions(unittest.TestCase):
    PATCH = ("Subject: x\n\nwhy\n\nSigned-off-by: A <a@b.c>\n---\n"
             "Checkpatch-exception: FILE_PATH_CHANGES\nthe reason\n---\n f | 1 -\n"
             "diff --git a/f b/f\n+Checkpatch-exception: NOT_IN_NOTES\n")

    def test_exceptions_come_from_the_notes_only(self):
        from labkit import checkpatch
        self.assertEqual(checkpatch.accepted_exceptions(self.PATCH), {"FILE_PATH_CHANGES"})

    def test_only_the_explained_types_are_ignored_by_checkpatch(self):
        from labkit import checkpatch
        cmd = checkpatch.checkpatch_command("cp.pl", "p.patch", {"FILE_PATH_CHANGES", "BRACES"})
        self.assertEqual(cmd[cmd.index("--ignore") + 1], "BRACES,FILE_PATH_CHANGES")
        self.assertEqual(cmd[-1], "p.patch")
        self.assertIn("--terse", cmd)       # no "NOTE: Ignored message types" footer
        self.assertNotIn("--ignore", checkpatch.checkpatch_command("cp.pl", "p.patch", set()))


class GdbOutput(unittest.TestCase):
    """One normaliser and one exact comparison for gdb's output, lab
    scripts and the helpers' self-test alike."""

    def test_selftest_sections_and_addresses(self):
        lines = grade.normalise_gdb(["noise", "@@selftest ft-event", "file 0xffff8880001a35b0",
                                     "@@selftest ft-clock", "mono", "@@selftest end",
                                     "[Inferior 1 (process 1) detached]"])
        self.assertEqual(grade.parse_sections(lines, grade.SELFTEST_SECTION),
                         {"ft-event": ["file ADDR"], "ft-clock": ["mono"], "end": []})

    def test_a_traceback_before_any_section_fails_the_selftest(self):
        from labkit import gdbrun
        want = grade.load_expected(gdbrun.SELFTEST, "expected", grade.SELFTEST_SECTION)
        lines = []
        for command, body in want.items():
            lines += [f"@@selftest {command}"] + body
        ok, evidence = gdbrun.grade_selftest(lines, [], "logs")
        self.assertTrue(ok, evidence)
        broken = ["Traceback (most recent call last):", '  File "vmlinux-gdb.py", line 38',
                  "gdb.error: No struct type named mount."] + lines
        ok, evidence = gdbrun.grade_selftest(broken, [], "logs")
        self.assertFalse(ok)
        self.assertIn("gdb.error: No struct type named mount.", "\n".join(evidence))

    RUN = ["0x000000000000fff0 in ?? ()", "ftrace_labs: loaded", grade.GDB_BEGIN,
           "Breakpoint 1 at 0xffffffff8104ffdb: file sched.h, line 222.",
           "Lab 03: intro", "", "=== lab 03: in the probe",
           "#0  event_probe_hit (ip=18446744071579953852, data=0xffff888000c7a430) at x.c:3",
           "#1  0xffffffff8107b889 in function_probe_dispatch (ip=<optimized out>) at f.c:4536",
           "flags: SOFT_MODE", "Breakpoint 4, ksys_sync () at ../../linux/fs/sync.c:98",
           "98\t{", "[Inferior 1 (process 1) detached]"]

    def test_the_region_is_what_the_lab_script_printed(self):
        self.assertEqual(grade.gdb_region(self.RUN),
                         ["Lab 03: intro", "=== lab 03: in the probe", "#0 event_probe_hit",
                          "flags: SOFT_MODE"])
        self.assertTrue(grade.gdb_reached_end(self.RUN))

    def test_a_traceback_between_expected_lines_fails(self):
        want = grade.gdb_region(self.RUN)
        broken = list(self.RUN)
        broken.insert(broken.index("flags: SOFT_MODE"),
                      "Python Exception <class 'gdb.error'>: No symbol \"sm_ref\".")
        differences = grade.compare(want, grade.gdb_region(broken))
        self.assertIn("+Python Exception <class 'gdb.error'>: No symbol \"sm_ref\".",
                      differences)

    def test_a_missing_or_extra_line_fails(self):
        want = grade.gdb_region(self.RUN)
        self.assertTrue(grade.compare(want + ["more"], want))
        self.assertTrue(grade.compare(want, want + ["more"]))
        self.assertEqual(grade.compare(want, want), [])

    def test_a_number_placeholder(self):
        want = ["ticks since boot: <N> at HZ=250"]
        self.assertEqual(grade.compare(want, ["ticks since boot: 312 at HZ=250"]), [])
        self.assertTrue(grade.compare(want, ["ticks since boot: x at HZ=250"]))

    def test_a_word_placeholder(self):
        want = ["<WORD> in section .text"]
        self.assertEqual(grade.compare(want, ["irq_enter_rcu in section .text"]), [])
        self.assertTrue(grade.compare(want, ["two words in section .text"]))

    def test_first_difference(self):
        self.assertEqual(grade.first_difference(["a", "b"], ["a", "c"]), (1, "b", "c"))
        self.assertEqual(grade.first_difference(["a"], ["a", "c"]), (1, None, "c"))
        self.assertIsNone(grade.first_difference(["a"], ["a"]))


class OursOnly(unittest.TestCase):
    """A check where our kernels differ from upstream on purpose (6.1
    WARNs): upstream skips it, every checkpoint must match."""
    EXP = {"a": ["'!!schedule:traceoff' >> set_ftrace_filter: Invalid argument"]}

    def test_skipped_on_upstream(self):
        c = make_check("a", [grade.OURS_ONLY_SKIP], kind="ours-only")
        self.assertTrue(grade.grade_check(c, self.EXP, K.upstream(), 0).ok)

    def test_upstream_must_really_skip(self):
        c = make_check("a", self.EXP["a"], kind="ours-only")
        self.assertFalse(grade.grade_check(c, self.EXP, K.upstream(), 0).ok)

    def test_checkpoints_must_match(self):
        self.assertTrue(grade.grade_check(make_check("a", self.EXP["a"], kind="ours-only"),
                                          self.EXP, K.of(0), 0).ok)
        self.assertFalse(grade.grade_check(make_check("a", ["ok"], kind="ours-only"),
                                           self.EXP, K.of(3), 0).ok)
