"""The previous-checkpoint gate: on the checkpoint before its own, a
feature check must fail exactly as labs/NN-*/before records, and its
first difference must be a line about its feature, not a setup write."""

import unittest

from labkit import grade
from labkit.kernels import KernelId as K
from tests.test_grade import make_check

WANT = ["'f:cmd' >> set_ftrace_filter: ok", "-- probes:", "f:cmd:unlimited"]
SETUP_FAILS = ["'f:cmd' >> set_ftrace_filter: Invalid argument", "-- probes:"]
FEATURE_FAILS = ["-- probes:"]


class Gate(unittest.TestCase):
    def grade(self, output, before, want=WANT, kernel=K.of(2)):
        return grade.grade_check(make_check("a", output), {"a": want}, kernel, 3,
                                 {"a": before} if before is not None else {})

    def test_the_record_is_the_output_up_to_its_first_difference(self):
        self.assertEqual(grade.before_record(["x", "y", "z"], ["x", "q", "r"]), ["x", "q"])
        self.assertEqual(grade.before_record(["x", "y"], ["x"]), ["x", grade.OUTPUT_ENDS])

    def test_as_recorded_passes(self):
        want = WANT[1:]
        out = self.grade(FEATURE_FAILS, ["-- probes:", grade.OUTPUT_ENDS], want=want)
        self.assertTrue(out.ok, out.evidence)
        self.assertIn("at: (the output ends here)", out.note)

    def test_a_changed_failure_fails(self):
        want = WANT[1:]
        out = self.grade(["-- probes:", "g:cmd:unlimited"], ["-- probes:", grade.OUTPUT_ENDS],
                         want=want)
        self.assertFalse(out.ok)
        self.assertIn("but not as", out.evidence[0])

    def test_no_record_fails_and_shows_what_to_record(self):
        out = self.grade(FEATURE_FAILS, None, want=WANT[1:])
        self.assertFalse(out.ok)
        self.assertIn("has no '## check: a'", out.evidence[0])

    def test_the_message_names_the_file_the_record_came_from(self):
        before = grade.Recorded("/x/exercises/03-e/skeleton.before")
        out = grade.grade_check(make_check("a", FEATURE_FAILS), {"a": WANT[1:]}, K.of(2), 3, before)
        self.assertIn("skeleton.before has no '## check: a'", out.evidence[0])

    def test_a_setup_write_as_first_difference_is_flagged(self):
        record = grade.before_record(WANT, SETUP_FAILS)
        out = self.grade(SETUP_FAILS, record)
        self.assertFalse(out.ok)
        self.assertTrue(any("setup line" in l for l in out.evidence))

    def test_lib_sh_setup_lines_are_setup_lines(self):
        want = ["-- probes:", "f:cmd:unlimited"]
        got = want + ["setup: 'f:cmd' >> set_ftrace_filter: Invalid argument"]
        self.assertTrue(grade.setup_difference(want, got))
        self.assertFalse(grade.setup_difference(want, ["-- probes:"]))

    def test_an_expected_error_is_not_a_setup_line(self):
        want = ["'!f:cmd' >> set_ftrace_filter: No such device"]
        self.assertFalse(grade.setup_difference(
            want, ["'!f:cmd' >> set_ftrace_filter: Invalid argument"]))

    def test_only_on_the_previous_checkpoint(self):
        # two checkpoints before: a failure is enough, as before
        self.assertTrue(self.grade(SETUP_FAILS, None, kernel=K.of(1)).ok)


class Recorded(unittest.TestCase):
    """Every lab's feature checks have a record, and none of them is a
    setup line (the labs as they are in the tree)."""

    def test_every_feature_check_is_recorded(self):
        import os
        import re
        from labkit import series
        for cp in series.checkpoints():
            if cp.number == 0 or not cp.has_lab:
                continue
            with open(os.path.join(cp.lab_dir, "lab.sh")) as f:
                ids = re.findall(r"^check (\S+) ", f.read(), re.M)
            before = grade.load_expected(cp.lab_dir, grade.BEFORE)
            for ident in ids:
                self.assertIn(ident, before, f"lab {cp.number:02d} check {ident}")
                self.assertFalse(before[ident][-1].startswith("setup: "))


class OnSkeleton(unittest.TestCase):
    """Lab N on exercise N's skeleton: a check skeleton.before lists must
    fail as recorded (a failing write is the missing mechanism there);
    any other must pass."""

    def grade(self, output, recorded, kind="check"):
        before = grade.Recorded("/x/exercises/03-e/skeleton.before",
                                {"a": recorded} if recorded is not None else {})
        return grade.grade_on_skeleton(make_check("a", output, kind=kind), {"a": WANT}, 3,
                                       before)

    def test_failing_as_recorded_passes_even_at_a_write(self):
        out = self.grade(SETUP_FAILS, grade.before_record(WANT, SETUP_FAILS))
        self.assertTrue(out.ok, out.evidence)

    def test_a_guard_the_holes_break_is_recorded_too(self):
        self.assertTrue(self.grade(SETUP_FAILS, grade.before_record(WANT, SETUP_FAILS),
                                   kind="guard").ok)

    def test_failing_otherwise_fails_and_names_the_record(self):
        out = self.grade(FEATURE_FAILS, grade.before_record(WANT, SETUP_FAILS))
        self.assertFalse(out.ok)
        self.assertIn("skeleton.before records", out.evidence[0])

    def test_a_recorded_check_that_passes_fails(self):
        self.assertFalse(self.grade(WANT, grade.before_record(WANT, SETUP_FAILS)).ok)

    def test_an_unrecorded_check_must_pass(self):
        self.assertTrue(self.grade(WANT, None).ok)
        self.assertFalse(self.grade(FEATURE_FAILS, None).ok)
