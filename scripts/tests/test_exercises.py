"""The exercises as shipped (exercises/NN-slug/holes and each lab's
exercise.adoc): they must name checks and functions that exist, and a
learner's score must be able to move from none to all of lab N's feature
checks. Building the skeletons is make check's part (exercise.check)."""

import os
import re
import unittest

from labkit import exercise, grade, holes, series

# Feature checks that no hole can make fail, with the reason: the
# skeleton passes them, and the handout says so.
SKELETON_PASSES = {
    # trace_clocks[] is a table, not a function: it keeps both entries.
    7: {"clocks", "perf"},
}


def exercises():
    """(checkpoint, its holes) for every checkpoint with an exercise."""
    return [(cp, holes.load(cp)) for cp in series.checkpoints() if holes.has_exercise(cp)]


def feature_checks(cp, modules=False):
    """Lab cp's feature checks that the holes' "checks:" and skeleton.before
    must cover: those the plain kernel runs, where both are measured
    (scripts/prove-holes.py, make check FULL=1's skeletons). A
    module_check runs on the debug kernel alone: a hole may name it
    (modules=True), so that make grade's line of that hole shows it, but
    none has to."""
    return {c.id for c in cp.checks() if c.kind == "check" and (modules or not c.modules)}


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def patch_text(upto):
    """Every patch of checkpoints 0..upto, as one text."""
    return "".join(read(p) for cp in series.checkpoints() if cp.number <= upto
                   for p in cp.patches())


class Exercises(unittest.TestCase):
    def test_checkpoints_1_to_7_have_three_to_five_holes(self):
        found = {cp.number: len(h) for cp, h in exercises()}
        for number in range(1, 8):
            with self.subTest(checkpoint=number):
                self.assertIn(number, found)
                self.assertTrue(3 <= found[number] <= 5, found[number])

    def test_each_hole_makes_feature_checks_of_its_lab_pass(self):
        for cp, hole_list in exercises():
            for hole in hole_list:
                with self.subTest(hole=hole.where):
                    self.assertTrue(hole.checks, "a hole names the checks it turns")
                    self.assertLessEqual(set(hole.checks), feature_checks(cp, modules=True))

    def test_every_feature_check_needs_a_hole(self):
        for cp, hole_list in exercises():
            with self.subTest(checkpoint=cp.number):
                named = {c for hole in hole_list for c in hole.checks} & feature_checks(cp)
                passes = SKELETON_PASSES.get(cp.number, set())
                self.assertEqual(feature_checks(cp) - passes, named)
                self.assertFalse(named & passes)

    def test_the_skeleton_record_fails_every_feature_check_a_hole_names(self):
        # skeleton.before is recorded from a real run of the skeleton
        # (make check FULL=1): it must agree with what the holes claim
        for cp, _holes in exercises():
            with self.subTest(checkpoint=cp.number):
                recorded = grade.load_expected(holes.exercise_dir(cp), exercise.SKELETON_BEFORE)
                self.assertTrue(recorded, "exercises/NN-*/skeleton.before is recorded")
                passes = SKELETON_PASSES.get(cp.number, set())
                self.assertEqual(feature_checks(cp) - set(recorded), passes)
                self.assertLessEqual(set(recorded), {c.id for c in cp.checks()})

    def test_holes_are_functions_of_the_series(self):
        for cp, hole_list in exercises():
            text = patch_text(cp.number)
            for hole in hole_list:
                with self.subTest(hole=hole.where):
                    self.assertTrue(hole.file.startswith("kernel/trace/"))
                    self.assertIn(f"a/{hole.file}", text)
                    self.assertRegex(text, r"\b" + re.escape(hole.function) + r"\(")

    def test_the_handout_includes_the_exercise_and_names_every_hole(self):
        for cp, hole_list in exercises():
            with self.subTest(checkpoint=cp.number):
                self.assertIn("\ninclude::exercise.adoc[]\n",
                              read(os.path.join(cp.lab_dir, "README.adoc")))
                text = read(os.path.join(cp.lab_dir, "exercise.adoc"))
                for hole in hole_list:
                    self.assertIn(f"TODO(lab {cp.number}.{hole.number}), `{hole.function}`",
                                  text)
                    for check in hole.checks:
                        self.assertIn(f"`{check}`", text)

    def test_the_handout_table_lists_what_each_hole_needs(self):
        # the "checks it needs" column is the hole's "checks:" line, which
        # scripts/prove-holes.py --write finds by running the lab
        for cp, hole_list in exercises():
            text = read(os.path.join(cp.lab_dir, "exercise.adoc"))
            for hole in hole_list:
                with self.subTest(hole=hole.where):
                    row = re.search(rf"^\|{cp.number}\.{hole.number} \|.*\|([^|]*)$", text,
                                    re.MULTILINE)
                    self.assertIsNotNone(row, "a row of the table for each hole")
                    cells = [c.strip().strip("`") for c in row.group(1).split(",")]
                    self.assertEqual(cells, list(hole.checks))


if __name__ == "__main__":
    unittest.main()
