"""make exercise / save / solution on a small kernel tree in a temporary
git repository: the learner's work survives switching, saving, a
changed skeleton and a second clone."""

import os
import shutil
import subprocess
import tempfile
import unittest

from labkit import exercise, holes, series, tree
from tests.test_holes import C_FILE, HOLES

FILE = "kernel/trace/x.c"


def new_tree(top):
    """A kernel tree with lab/cp2 (no x.c functions) and lab/cp3 (C_FILE),
    marked current for the series so that prepare_branch keeps them."""
    t = tree.Tree(top)
    os.makedirs(os.path.join(t.path, "kernel", "trace"))
    git = ["git", "-C", t.path]
    subprocess.run(git + ["init", "-q", "-b", "upstream"], check=True)
    for k, v in (("user.name", "t"), ("user.email", "t@t")):
        subprocess.run(git + ["config", k, v], check=True)
    write(t, "#include <linux/kernel.h>\n")
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "upstream"], check=True)
    subprocess.run(git + ["branch", "lab/cp2"], check=True)
    subprocess.run(git + ["checkout", "-q", "-b", "lab/cp3"], check=True)
    write(t, C_FILE)
    subprocess.run(git + ["commit", "-q", "-a", "-m", "cp3"], check=True)
    subprocess.run(git + ["config", "ftlab.cp3.digest", series.series_digest(3)], check=True)
    return t


def write(t, text, name=FILE):
    with open(os.path.join(t.path, name), "w") as f:
        f.write(text)


def read(t, name=FILE):
    with open(os.path.join(t.path, name)) as f:
        return f.read()


class Fixture:
    """A kernel tree and a holes file for exercise 3, in a temporary folder."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.saved = (holes.EXERCISES, exercise.WORK)
        holes.EXERCISES = os.path.join(self.dir, "exercises")
        exercise.WORK = os.path.join(self.dir, "work")
        folder = os.path.join(holes.EXERCISES, series.lookup(3).name)
        os.makedirs(folder)
        with open(os.path.join(folder, "holes"), "w") as f:
            f.write(HOLES)
        self.t = new_tree(os.path.join(self.dir, "build"))

    def tearDown(self):
        holes.EXERCISES, exercise.WORK = self.saved
        shutil.rmtree(self.dir)


class Exercise(Fixture, unittest.TestCase):
    def edit(self, t=None):
        """The learner fills hole 2."""
        t = t or self.t
        text = read(t)
        head, tail = text.split("TODO(lab 3.2)")
        head = head[:head.rindex("\t/*")]
        write(t, head + "\tp->hits = 0;\n}" + tail.split("*/\n}", 1)[1])

    def test_start_checks_out_the_skeleton_and_lists_the_todos(self):
        self.assertEqual(exercise.start(self.t, 3), "student/cp3")
        self.assertEqual(self.t.current_branch(), "student/cp3")
        text = read(self.t)
        self.assertIn("TODO(lab 3.1)", text)
        self.assertNotIn("return list;", text)
        report = "\n".join(exercise.todo_report(self.t, 3))
        self.assertIn("3.2 reset a probe: " + os.path.relpath(
            os.path.join(self.t.path, FILE), series.ROOT) + ":", report)
        self.assertIn("both fields.", report)
        # the skeleton's parent is the checkpoint before
        self.assertEqual(self.t.git("rev-parse", "skeleton/cp3^"), self.t.git("rev-parse", "lab/cp2"))

    def test_start_again_keeps_uncommitted_work(self):
        exercise.start(self.t, 3)
        self.edit()
        edited = read(self.t)
        exercise.start(self.t, 3)
        self.assertEqual(read(self.t), edited)

    def test_save_then_resume_in_another_clone(self):
        exercise.start(self.t, 3)
        self.assertIsNone(exercise.save(self.t, 3))
        self.edit()
        edited = read(self.t)
        self.assertEqual(exercise.unexported(self.t), [3])
        path = exercise.save(self.t, 3)
        self.assertEqual(exercise.unexported(self.t), [])
        with open(path) as f:
            text = f.read()
        self.assertTrue(text.startswith("ftlab exercise 3 (03-"))
        self.assertIn("TODO=1", text.splitlines()[0])
        self.assertIn("+\tp->hits = 0;", text)
        other = new_tree(os.path.join(self.dir, "build2"))
        exercise.start(other, 3)
        self.assertEqual(read(other), edited)
        self.assertEqual(exercise.unexported(other), [])

    def newer_patch_from_another_clone(self):
        """Work saved here, then taken further in a second clone that
        saves it into the same work/ (a pull, or a new push graded by CI
        with this build/ cached)."""
        exercise.start(self.t, 3)
        self.edit()
        self.edited = read(self.t)
        exercise.save(self.t, 3)
        other = new_tree(os.path.join(self.dir, "build2"))
        exercise.start(other, 3)
        write(other, read(other).replace("TODO(lab 3.3)", "done 3.3"))
        exercise.save(other, 3)
        return read(other)

    def test_a_newer_patch_wins_over_the_branch(self):
        newer = self.newer_patch_from_another_clone()
        exercise.start(self.t, 3)
        self.assertEqual(read(self.t), newer)
        self.assertEqual(exercise.unexported(self.t), [])
        kept = exercise.set_aside_branches(self.t)
        self.assertEqual(len(kept), 1)
        self.assertEqual(self.t.git("show", f"{kept[0]}:{FILE}") + "\n", self.edited)
        # synced again: a second start keeps the branch and its edits
        write(self.t, newer + "/* more */\n")
        exercise.start(self.t, 3)
        self.assertEqual(read(self.t), newer + "/* more */\n")

    def test_a_patch_pulled_into_a_tree_that_never_saved_wins(self):
        exercise.start(self.t, 3)           # no work/03.patch yet
        other = new_tree(os.path.join(self.dir, "build2"))
        exercise.start(other, 3)
        self.edit(other)
        exercise.save(other, 3)             # the pull brings this patch
        with self.assertRaises(exercise.ExerciseError):
            exercise.save(self.t, 3)
        exercise.start(self.t, 3)
        self.assertEqual(read(self.t), read(other))
        self.assertEqual(exercise.set_aside_branches(self.t), [])   # nothing was there

    def test_save_refuses_to_overwrite_a_newer_patch(self):
        newer = self.newer_patch_from_another_clone()
        with open(exercise.work_patch(3)) as f:
            patch = f.read()
        with self.assertRaises(exercise.ExerciseError) as e:
            exercise.save(self.t, 3)
        self.assertIn("'make exercise 3' takes it in", str(e.exception))
        with open(exercise.work_patch(3)) as f:
            self.assertEqual(f.read(), patch)
        exercise.start(self.t, 3)
        self.assertEqual(read(self.t), newer)

    def test_switching_away_commits_the_work_on_its_branch(self):
        exercise.start(self.t, 3)
        self.edit()
        edited = read(self.t)
        exercise.checkout(self.t, "lab/cp2")
        self.assertEqual(self.t.current_branch(), "lab/cp2")
        self.assertEqual(self.t.git("show", f"student/cp3:{FILE}") + "\n", edited)
        self.assertEqual(exercise.unexported(self.t), [3])

    def test_todo_k_prefills_and_a_patch_keeps_its_todo(self):
        exercise.start(self.t, 3, todo=3)
        text = read(self.t)
        self.assertIn("p->hits = 0;", text)
        self.assertIn("TODO(lab 3.3)", text)
        self.assertNotIn("TODO(lab 3.2)", text)
        write(self.t, text.replace("TODO(lab 3.3)", "done"))
        exercise.save(self.t, 3)
        self.assertEqual(exercise.read_patch(3)[0], 3)
        self.assertEqual(exercise.chosen_todo(3, None), 3)
        with self.assertRaises(exercise.ExerciseError):
            exercise.chosen_todo(3, 1)

    def test_a_changed_skeleton_carries_the_work_over(self):
        exercise.start(self.t, 3)
        self.edit()
        edited = read(self.t)
        old = self.t.git("rev-parse", "skeleton/cp3")
        with open(holes.holes_path(series.lookup(3)), "w") as f:
            f.write(HOLES.replace("the list's head.", "the head of the list."))
        exercise.start(self.t, 3)
        self.assertNotEqual(self.t.git("rev-parse", "skeleton/cp3"), old)
        self.assertEqual(read(self.t), edited.replace("the list's head.", "the head of the list."))
        self.assertTrue(self.t.branch_exists(f"student/cp3-old-{old[:8]}"))

    def test_solution_is_the_reference_against_the_work(self):
        exercise.start(self.t, 3)
        self.edit()
        diff = exercise.solution(self.t, 3)
        self.assertIn("+\treturn list;", diff)
        self.assertIn("-\t * TODO(lab 3.3)", diff)
        self.assertIn("+\tp->next = NULL;", diff)
        self.assertNotIn("-\tp->hits = 0;", diff)
        self.assertNotIn("+\tp->hits = 0;", diff)


class Hints(Fixture, unittest.TestCase):
    """make hint N.K: the next level not shown yet, remembered in the build
    folder; LEVEL=L; the last level says so."""

    def hint(self, k, level=None):
        return "\n".join(exercise.hint(os.path.join(self.dir, "build"), 3, k, level))

    def test_each_call_shows_the_next_level_and_how_many_are_left(self):
        first = self.hint(1)
        self.assertIn("TODO(lab 3.1) in count_hits(): count the hits\nhint 1 of 3:\n", first)
        self.assertIn("p->next.", first)
        self.assertIn("2 level(s) left: 'make hint 3.1' shows level 2.", first)
        second = self.hint(1)
        self.assertIn("hint 2 of 3", second)
        self.assertIn("count, then step.", second)
        self.assertIn("1 level(s) left", second)
        last = self.hint(1)
        self.assertIn("hint 3 of 3", last)
        self.assertIn("n++, p = p->next.", last)
        self.assertIn("That was the last level of hole 3.1: none left.", last)
        again = self.hint(1)
        self.assertIn("hint 3 of 3", again)
        self.assertIn("Every level of hole 3.1 was shown already", again)

    def test_holes_and_exercises_are_remembered_apart(self):
        self.hint(1)
        self.assertIn("hint 1 of 1", self.hint(2))
        self.assertIn("hint 2 of 3", self.hint(1))
        state = exercise.load_state(os.path.join(self.dir, "build"), 3)
        self.assertEqual(state["hints"], {"1": [1, 2], "2": [1]})
        self.assertEqual(exercise.load_state(os.path.join(self.dir, "build"), 4), {})

    def test_level_shows_that_one_and_counts_it_as_shown(self):
        out = self.hint(1, level=2)
        self.assertIn("hint 2 of 3", out)
        self.assertIn("'make hint 3.1' shows level 1.", out)
        self.assertIn("hint 1 of 3", self.hint(1))
        last = self.hint(1)
        self.assertIn("hint 3 of 3", last)
        self.assertIn("That was the last level of hole 3.1: none left.", last)
        self.assertIn("Every level of hole 3.1 was shown already. LEVEL=1 to 3",
                      self.hint(1, level=3))
        goal = self.hint(1, level=0)
        self.assertIn("its goal:", goal)
        self.assertIn("walk p->next while n stays under the limit.", goal)
        self.assertIn("Every level of hole 3.1 was shown already. LEVEL=1 to 3", goal)
        self.assertNotIn("last level", self.hint(1, level=1))
        with self.assertRaises(exercise.ExerciseError) as e:
            self.hint(1, level=4)
        self.assertIn("levels 0 (its goal) to 3", str(e.exception))

    def test_a_hole_is_named_n_dot_k(self):
        self.assertEqual(exercise.parse_hole("3.2"), (3, 2))
        for text, words in (("3", "which hole of exercise 3?"), ("3.9", "has no hole 9"),
                            ("x", "names no exercise"), ("3.", "names no exercise")):
            with self.assertRaises(exercise.ExerciseError) as e:
                exercise.parse_hole(text)
            self.assertIn(words, str(e.exception))
        with self.assertRaises(exercise.ExerciseError) as e:
            exercise.parse_hole("3")
        self.assertIn("'make hint 3.K': 3.1, 3.2, 3.3", str(e.exception))


class Terminal:
    """A stdin that is a terminal (or not) and answers one line."""

    def __init__(self, tty, answer=""):
        self.tty, self.answer, self.asked = tty, answer, 0

    def isatty(self):
        return self.tty

    def readline(self):
        self.asked += 1
        return self.answer + "\n"


class Solution(Fixture, unittest.TestCase):
    """make solution N asks first, until a make grade N of the current
    work has passed."""

    def setUp(self):
        super().setUp()
        self.build = os.path.join(self.dir, "build")
        exercise.start(self.t, 3)

    def may(self, stdin, force=False):
        return exercise.may_show_solution(self.t, self.build, 3, force, stdin,
                                          ask=lambda prompt, s: s.readline())

    def test_it_asks_on_a_terminal_and_shows_on_y_only(self):
        for answer, shown in (("y", True), ("yes", True), ("", False), ("n", False)):
            with self.subTest(answer=answer):
                term = Terminal(True, answer)
                self.assertIs(self.may(term), shown)
                self.assertEqual(term.asked, 1)

    def test_it_refuses_without_a_terminal(self):
        term = Terminal(False, "y")
        with self.assertRaises(exercise.ExerciseError) as e:
            self.may(term)
        self.assertIn("FORCE=1", str(e.exception))
        self.assertEqual(term.asked, 0)

    def test_force_shows_it_without_asking(self):
        term = Terminal(False)
        self.assertTrue(self.may(term, force=True))
        self.assertEqual(term.asked, 0)

    def test_a_passed_grade_of_this_work_shows_it_without_asking(self):
        self.edit_hole_2()
        exercise.record_grade(self.build, 3, exercise.work_digest(self.t, 3), True)
        term = Terminal(False)
        self.assertTrue(self.may(term))
        self.assertEqual(term.asked, 0)

    def test_a_failed_grade_or_changed_work_asks_again(self):
        self.edit_hole_2()
        exercise.record_grade(self.build, 3, exercise.work_digest(self.t, 3), False)
        with self.assertRaises(exercise.ExerciseError):
            self.may(Terminal(False))
        exercise.record_grade(self.build, 3, exercise.work_digest(self.t, 3), True)
        write(self.t, read(self.t).replace("\tp->hits = 0;", "\tp->hits = 1;"))
        with self.assertRaises(exercise.ExerciseError):
            self.may(Terminal(False))

    def edit_hole_2(self):
        text = read(self.t)
        head, tail = text.split("TODO(lab 3.2)")
        head = head[:head.rindex("\t/*")]
        write(self.t, head + "\tp->hits = 0;\n}" + tail.split("*/\n}", 1)[1])


class GdbHelpersOnTheSkeleton(unittest.TestCase):
    """ft break lists what the vmlinux has: the functions that a hole's
    body alone used are not expected on the skeleton, the others are."""

    SECTIONS = {"ft-break": ["  traceon       ftrace_traceon, ftrace_traceon_count",
                             "                  (the traceon probe command)",
                             "  snapshot      ftrace_snapshot, ftrace_snapshot_count, "
                             "snapshot_trigger",
                             "  post-trigger  event_triggers_post_call",
                             "  trigger       not in this kernel"],
                "ft-probes": ["  ftrace_snapshot"]}

    def test_only_the_missing_functions_go(self):
        have = {"ftrace_traceon", "ftrace_traceon_count", "snapshot_trigger"}
        want, gone = exercise.without_functions(self.SECTIONS, have)
        self.assertEqual(gone, ["ftrace_snapshot", "ftrace_snapshot_count",
                                "event_triggers_post_call"])
        self.assertEqual(want["ft-break"], [
            "  traceon       ftrace_traceon, ftrace_traceon_count",
            "                  (the traceon probe command)",
            "  snapshot      snapshot_trigger",
            "  post-trigger  not in this kernel",
            "  trigger       not in this kernel"])
        self.assertEqual(want["ft-probes"], self.SECTIONS["ft-probes"])

    def test_nothing_changes_when_every_function_is_there(self):
        have = {"ftrace_traceon", "ftrace_traceon_count", "ftrace_snapshot",
                "ftrace_snapshot_count", "snapshot_trigger", "event_triggers_post_call"}
        self.assertEqual(exercise.without_functions(self.SECTIONS, have), (self.SECTIONS, []))


class Reproduction(Fixture, unittest.TestCase):
    """make check's proof that a skeleton is its checkpoint but its holes
    must catch a skeleton that is not."""

    def tamper(self, change):
        """Commit 'change' (a function of the tree) on top of the skeleton
        and make it the current one."""
        exercise.make_skeleton(self.t, 3)
        self.t.git("checkout", "-q", "skeleton/cp3")
        change(self.t)
        self.t.git("commit", "-q", "-a", "-m", "tampered")

    def test_the_skeleton_passes(self):
        self.assertEqual(exercise.reproduction_problems(self.t, 3), [])

    def test_a_change_outside_the_hole_files(self):
        def add(t):
            write(t, "int other;\n", "kernel/trace/y.c")
            t.git("add", "kernel/trace/y.c")
        self.tamper(add)
        problems = exercise.reproduction_problems(self.t, 3)
        self.assertTrue(any("y.c differs" in p for p in problems), problems)

    def test_a_change_outside_the_holes_of_a_hole_file(self):
        self.tamper(lambda t: write(t, read(t).replace("static int helper", "static long helper")))
        problems = exercise.reproduction_problems(self.t, 3)
        self.assertTrue(any("do not give lab/cp3's file" in p for p in problems), problems)

    def test_a_hole_without_its_todo(self):
        self.tamper(lambda t: write(t, read(t).replace("TODO(lab 3.2)", "done")))
        problems = exercise.reproduction_problems(self.t, 3)
        self.assertTrue(any("no TODO(lab 3.2)" in p for p in problems), problems)


if __name__ == "__main__":
    unittest.main()


class Isolated(Fixture, unittest.TestCase):
    """scripts/prove-holes.py builds checkpoint N with one hole left out."""

    def show(self, ref):
        return self.t.git("show", f"{ref}:{FILE}")

    def test_only_the_chosen_hole_is_left_out(self):
        exercise.make_isolated(self.t, 3, 2)
        text = self.show(exercise.isolated_ref(3, 2))
        self.assertIn("TODO(lab 3.2)", text)
        self.assertNotIn("TODO(lab 3.1)", text)
        self.assertIn("return list;", text)        # hole 1's reference stays

    def test_it_sits_on_the_previous_checkpoint_as_the_exercise_does(self):
        commit = exercise.make_isolated(self.t, 3, 1)
        self.assertEqual(self.t.git("rev-parse", f"{commit}^"), self.t.git("rev-parse", "lab/cp2"))

    def test_an_unknown_hole_is_an_error(self):
        with self.assertRaises(exercise.ExerciseError):
            exercise.make_isolated(self.t, 3, 9)
