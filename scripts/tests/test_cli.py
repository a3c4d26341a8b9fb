import io
import os
import re
import subprocess
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from types import SimpleNamespace
from unittest import mock

import ftlab
from labkit import deps, protocol, series, ui
from labkit.kernels import KernelId as K

ROOT = series.ROOT


class CheckpointArgument(unittest.TestCase):
    def test_unknown_checkpoint_lists_the_real_ones(self):
        with self.assertRaises(ftlab.UsageError) as e:
            ftlab.parse_checkpoint("lab", "9")
        self.assertIn("there is no checkpoint 9", str(e.exception))
        self.assertIn("0 (baseline)", str(e.exception))

    def test_missing_and_bad_numbers(self):
        for text in (None, "", "x", "-1", "1.5"):
            with self.assertRaises(ftlab.UsageError):
                ftlab.parse_checkpoint("lab", text)

    def test_known_checkpoint(self):
        self.assertEqual(ftlab.parse_checkpoint("lab", "0"), 0)

    def test_options(self):
        a = ftlab.parse_args(["gdb", "0", "--kernel", "upstream", "--gdb-port", "2345"])
        self.assertEqual((a.command, a.number, a.kernel, a.gdb_port), ("gdb", 0, K.upstream(), 2345))
        with self.assertRaises(ftlab.UsageError):
            ftlab.parse_args(["list", "3"])

    def test_kernel_may_be_another_checkpoint(self):
        """make lab 1 KERNEL=0: lab 1 on checkpoint 0's kernel."""
        for target in ("lab", "gdb", "shell", "kernel"):
            a = ftlab.parse_args([target, "1", "--kernel", "0"])
            self.assertEqual((a.number, a.kernel, ftlab.target_id(a)), (1, K.of(0), K.of(0)),
                             target)
        a = ftlab.parse_args(["lab", "1"])
        self.assertEqual(ftlab.target_id(a), K.of(1))
        self.assertEqual(ftlab.target_id(ftlab.parse_args(["lab", "1", "--kernel", "upstream"])),
                         K.upstream())
        self.assertEqual(ftlab.target_id(ftlab.parse_args(["lab", "1", "--debug"])),
                         K.of(1, "debug"))
        for bad in ("99", "x", "-1"):
            with self.assertRaises(ftlab.UsageError) as e:
                ftlab.parse_args(["lab", "1", "--kernel", bad])
            self.assertIn(f"KERNEL={bad}", str(e.exception))


class LabChecks(unittest.TestCase):
    """make lab N LIST=1 and CHECK=ID: the checks lab.sh registers."""

    def test_registrations_parse(self):
        from labkit import series
        text = ('check one "a probe patches one function" one_fn\n'
                'guard two "still there" two_fn\n'
                'replaced_at 1 cost "every function traced" cost\n'
                'ours_only nn "no WARN" nn_fn\n'
                'module_check mod "a module stays" mod_fn\n'
                'check_ours frame "the probed function first" frame_fn\n'
                '# check commented "not a registration" x\n'
                '\tcheck inside "a call in a function" y\n')
        got = [(c.id, c.kind, c.title) for c in series.parse_registrations(text)]
        self.assertEqual(got, [("one", "check", "a probe patches one function"),
                               ("two", "guard", "still there"),
                               ("cost", "replaced-at-1", "every function traced"),
                               ("nn", "ours-only", "no WARN"),
                               ("mod", "check", "a module stays"),
                               ("frame", "check", "the probed function first")])
        found = series.parse_registrations(text)
        self.assertEqual([c.id for c in found if c.modules], ["mod"])
        plain, debug = K.of(3), K.of(3, "debug")
        self.assertEqual([c.runs_on(plain) for c in found], [True] * 4 + [False, True])
        self.assertTrue(all(c.runs_on(debug) for c in found))
        self.assertFalse(found[4].runs_on(K.of(3, "kcsan")))

    def test_every_lab_registers_what_its_expected_file_holds(self):
        from labkit import grade, series
        for cp in series.checkpoints():
            if cp.has_lab:
                ids = [c.id for c in cp.checks()]
                expected = grade.load_expected(cp.lab_dir)
                self.assertEqual(sorted(ids), sorted(grade.check_ids(expected)), cp.name)
                for registered in cp.checks():
                    check = protocol.Check(cp.name, registered.id, registered.kind, "")
                    if check.replaced_at is not None:
                        self.assertIn(grade.replaced_id(check), expected, cp.name)

    def test_check_must_exist(self):
        a = ftlab.parse_args(["lab", "3", "--check", "errors"])
        self.assertEqual(a.check, "errors")
        with self.assertRaises(ftlab.UsageError) as e:
            ftlab.parse_args(["lab", "3", "--check", "no-such-check"])
        self.assertIn("until-hit", str(e.exception))
        with self.assertRaises(ftlab.UsageError):
            ftlab.parse_args(["gdb", "3", "--list"])


def make_dry(*args):
    """The harness command 'make -n ARGS' runs (its first line: the rest
    swallows the number), with none of the variables the Makefile turns
    into options in the environment ("make check DEBUG=1" puts DEBUG=1
    in the tests' environment, and --debug=1 in every line)."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        options = set(re.findall(r"\$\(if \$\((\w+)\)", f.read()))
    env = {k: v for k, v in os.environ.items()
           if k not in options and not k.startswith("MAKE")}
    r = subprocess.run(["make", "-s", "-n", "-C", ROOT] + list(args),
                       capture_output=True, text=True, env=env)
    return r.stdout.strip().splitlines()[0].strip()


class MakeDry(unittest.TestCase):
    def dry(self, *args):
        return make_dry(*args)

    def parsed(self, *args):
        """ftlab.parse_args of the command line make runs."""
        import shlex
        return ftlab.parse_args(shlex.split(self.dry(*args))[2:])


class MakeForms(MakeDry):
    """'make lab 3' and 'make lab N=3' must run the same command."""

    def test_positional_and_variable_forms_agree(self):
        for target in ("lab", "gdb", "shell", "kernel"):
            self.assertEqual(self.parsed(target, "0").number, 0)
            self.assertEqual(self.parsed(target, "N=0").number, 0)
            self.assertEqual(self.parsed(target, "0", "N=0").number, 0)
            self.assertIn(f"ftlab.py {target} 0", self.dry(target, "0"))

    def test_list_and_check_become_options(self):
        self.assertIn("--list", self.dry("lab", "3", "LIST=1"))
        self.assertIn("--check errors", self.dry("lab", "3", "CHECK=errors"))

    def test_variables_become_options(self):
        out = self.dry("gdb", "0", "KERNEL=upstream", "GDB_PORT=4321")
        self.assertIn("--kernel upstream", out)
        self.assertIn("--gdb-port 4321", out)

    def test_make_command_lines_parse(self):
        """What make runs must parse: options and number in any order."""
        import shlex
        out = self.dry("gdb", "0", "KERNEL=upstream", "GDB_PORT=4321")
        argv = shlex.split(out)[2:]            # drop "python3 scripts/ftlab.py"
        a = ftlab.parse_args(argv)
        self.assertEqual((a.command, a.number, a.kernel, a.gdb_port), ("gdb", 0, K.upstream(), 4321))
        a = ftlab.parse_args(["lab", "--kernel", "upstream", "0"])
        self.assertEqual((a.number, a.kernel), (0, K.upstream()))

    def test_distclean_is_clean_all(self):
        self.assertIn("clean --all", self.dry("distclean"))

    def test_student_variables_become_options(self):
        self.assertIn("ftlab.py exercise 3 ", self.dry("exercise", "3", "TODO=2") + " ")
        self.assertIn("--todo 2", self.dry("exercise", "3", "TODO=2"))
        self.assertIn("--student", self.dry("lab", "3", "STUDENT=1"))
        self.assertIn("--results out", self.dry("grade", "3", "RESULTS=out"))
        self.assertIn("--force", self.dry("distclean", "FORCE=1"))
        for target in ("save", "grade", "solution"):
            self.assertIn(f"ftlab.py {target} 3", self.dry(target, "3"))
            self.assertIn("--n 3", self.dry(target, "N=3"))
            self.assertEqual(ftlab.parse_args([target, "3"]).number,
                             ftlab.parse_args([target, "--n", "3"]).number)


class StudentOptions(unittest.TestCase):
    """STUDENT=1, TODO=k and RESULTS=DIR only with the targets they change."""

    def test_misplaced_options_are_usage_errors(self):
        for argv in (["exercise", "0", "--student"], ["lab", "0", "--todo", "2"],
                     ["kernel", "0", "--results", "x"], ["lab", "0", "--student", "--kernel",
                                                      "upstream"]):
            with self.assertRaises(ftlab.UsageError, msg=argv):
                ftlab.parse_args(argv)

    def test_the_learner_s_branch_builds_on_any_variant(self):
        """STUDENT=1 DEBUG=1: the learner's branch as it is, on the debug
        kernel (its own object folder), not the reference's lab/cpN."""
        from labkit import exercise
        args = ftlab.parse_args(["lab", "3", "--student", "--debug"])
        fake_tree = mock.Mock(path="/b/linux", **{"branch_exists.return_value": True})
        kid = ftlab.target_id(args, fake_tree)
        self.assertEqual((kid.name, kid.branch, kid.as_is, kid.variant),
                         ("student-cp3-debug", exercise.student_branch(3), True, "debug"))

    def test_an_exercise_needs_a_holes_file(self):
        from labkit import holes
        with self.assertRaises(holes.HolesError):
            ftlab.parse_args(["exercise", "0"])

    def test_distclean_refuses_unsaved_work(self):
        from labkit import exercise
        args = ftlab.parse_args(["clean", "--all", "--build-dir", tempfile.mkdtemp()])
        with mock.patch.object(exercise, "unexported", return_value=[3]):
            with self.assertRaises(ftlab.HarnessError) as e:
                ftlab.cmd_clean(args)
        self.assertIn("'make save 3'", str(e.exception))
        self.assertTrue(os.path.isdir(args.build_dir))
        args.force = True
        with mock.patch.object(exercise, "unexported", return_value=[3]):
            ftlab.cmd_clean(args)
        self.assertFalse(os.path.isdir(args.build_dir))

    def test_distclean_refuses_work_set_aside(self):
        from labkit import exercise
        args = ftlab.parse_args(["clean", "--all", "--build-dir", tempfile.mkdtemp()])
        with mock.patch.object(exercise, "unexported", return_value=[]), \
                mock.patch.object(exercise, "set_aside_branches",
                                  return_value=["student/cp3-old-1234abcd"]):
            with self.assertRaises(ftlab.HarnessError) as e:
                ftlab.cmd_clean(args)
        self.assertIn("student/cp3-old-1234abcd", str(e.exception))
        self.assertIn("diff student/cp3 student/cp3-old-1234abcd", str(e.exception))
        self.assertTrue(os.path.isdir(args.build_dir))

    def test_force_goes_with_distclean_only(self):
        with self.assertRaises(ftlab.UsageError) as e:
            ftlab.parse_args(["clean", "--force=1"])
        self.assertIn("FORCE=1 goes with 'make distclean'", str(e.exception))
        self.assertTrue(ftlab.parse_args(["clean", "--all", "--force=1"]).force)


class HintAndSolution(MakeDry):
    """make hint N.K [LEVEL=L] and make solution N [FORCE=1]."""

    def test_hint_takes_a_hole_and_a_level(self):
        self.assertIn("ftlab.py hint 3.1", self.dry("hint", "3.1"))
        self.assertIn("--level 2", self.dry("hint", "3.1", "LEVEL=2"))
        args = self.parsed("hint", "3.2", "LEVEL=2")
        self.assertEqual((args.command, args.number, args.hole, args.level), ("hint", 3, 2, 2))
        self.assertEqual((self.parsed("hint", "N=3.2").number, self.parsed("hint", "N=3.2").hole),
                         (3, 2))
        self.assertIsNone(self.parsed("hint", "3.1").level)

    def test_a_hint_needs_a_hole(self):
        for argv, words in ((["hint", "3"], "which hole of exercise 3?"),
                            (["hint", "3.99"], "exercise 3 has no hole 99"),
                            (["hint"], "names no exercise")):
            with self.assertRaises(ftlab.UsageError) as e:
                ftlab.parse_args(argv)
            self.assertIn(words, str(e.exception))

    def test_level_goes_with_hint_only(self):
        with self.assertRaises(ftlab.UsageError) as e:
            ftlab.parse_args(["lab", "3", "--level", "1"])
        self.assertIn("LEVEL= goes with 'make hint'", str(e.exception))

    def test_force_goes_with_solution(self):
        self.assertTrue(self.parsed("solution", "3", "FORCE=1").force)
        self.assertFalse(self.parsed("solution", "3").force)
        with self.assertRaises(ftlab.UsageError):
            ftlab.parse_args(["grade", "3", "--force=1"])

    def test_solution_refused_without_a_terminal_shows_nothing(self):
        from labkit import exercise
        args = ftlab.parse_args(["solution", "3", "--build-dir", tempfile.mkdtemp()])
        session = mock.Mock(build_dir=args.build_dir)
        # make solution sends progress to stderr from then on: not the other tests'
        self.addCleanup(setattr, ui, "_PROGRESS", ui._PROGRESS)
        with mock.patch.object(exercise, "graded_pass", return_value=False), \
                mock.patch.object(exercise, "solution", return_value="DIFF") as solution, \
                mock.patch("sys.stdin", io.StringIO("y\n")):
            with self.assertRaises(exercise.ExerciseError):
                ftlab.cmd_exercise(args, session)
        solution.assert_not_called()
        args.force = True
        out = io.StringIO()
        with mock.patch.object(exercise, "solution", return_value="DIFF"), \
                redirect_stdout(out):
            self.assertEqual(ftlab.cmd_exercise(args, session), 0)
        self.assertEqual(out.getvalue(), "DIFF\n")


    def test_grade_records_its_result_for_the_work_it_graded(self):
        from labkit import exercise, studentgrade
        args = ftlab.parse_args(["grade", "3", "--build-dir", tempfile.mkdtemp()])
        session = mock.Mock(build_dir=args.build_dir)
        for rc, passed in ((0, True), (1, False)):
            with mock.patch.object(exercise, "save", return_value=None), \
                    mock.patch.object(exercise, "work_digest", return_value="abc"), \
                    mock.patch.object(exercise, "kernel_id"), \
                    mock.patch.object(studentgrade, "grade", return_value=rc), \
                    mock.patch.object(exercise, "record_grade") as record:
                self.assertEqual(ftlab.cmd_exercise(args, session), rc)
            record.assert_called_once_with(args.build_dir, 3, "abc", passed)


class Switches(MakeDry):
    """DEBUG, V, LIST, FULL, FRESH and FAULTS: 1 is on, 0 is off, anything else an
    error that names the variable; the harness reads the value make was
    given."""

    WITH = {"DEBUG": "lab", "V": "lab", "LIST": "lab", "FULL": "bench", "FRESH": "check",
            "FAULTS": "robust"}
    DEST = {"DEBUG": "debug", "V": "verbose", "LIST": "list", "FULL": "full",
            "FRESH": "fresh", "FAULTS": "faults"}

    def test_one_is_on_and_zero_is_off(self):
        for variable, target in self.WITH.items():
            for value, on in (("1", True), ("0", False)):
                args = [target, "0"] if target == "lab" else [target]
                a = self.parsed(*args, f"{variable}={value}")
                self.assertIs(getattr(a, self.DEST[variable]), on, f"{variable}={value}")

    def test_unset_is_off(self):
        a = self.parsed("lab", "0")
        self.assertEqual((a.debug, a.verbose, a.list), (False, False, False))

    def test_another_value_is_an_error_naming_the_variable(self):
        for variable, target in self.WITH.items():
            for value in ("yes", "2", "on", "true"):
                args = [target, "0"] if target == "lab" else [target]
                with self.assertRaises(ftlab.UsageError) as e:
                    self.parsed(*args, f"{variable}={value}")
                self.assertIn(f"{variable}={value}", str(e.exception))


class ConflictingArguments(MakeDry):
    """Two answers to one question are an error that says so, not a
    silent choice of one of them."""

    def refused(self, *args):
        with self.assertRaises(ftlab.UsageError) as e:
            self.parsed(*args)
        return str(e.exception)

    def test_two_checkpoints(self):
        self.assertIn("one checkpoint at a time", self.refused("lab", "1", "2"))

    def test_a_number_and_a_different_n(self):
        words = self.refused("lab", "3", "N=5")
        self.assertIn("'make lab 3' and N=5", words)

    def test_a_number_for_a_target_without_one(self):
        for target in ("list", "check", "bench", "deps", "clean"):
            self.assertIn(f"'make {target}' takes no checkpoint number", self.refused(target, "3"))

    def test_two_targets(self):
        self.assertIn("one target at a time", self.refused("lab", "gdb", "1"))

    def test_a_variable_of_another_target(self):
        self.assertIn("FULL= goes with 'make bench'", self.refused("lab", "1", "FULL=1"))
        self.assertIn("FRESH= goes with 'make check'", self.refused("lab", "1", "FRESH=1"))
        self.assertIn("FAULTS= goes with 'make robust'", self.refused("check", "FAULTS=1"))
        self.assertIn("KCSAN= goes with 'make robust'", self.refused("lab", "6", "KCSAN=1"))
        self.assertIn("TRACE= goes with 'make lab', 'make shell'", self.refused("gdb", "6", "TRACE=1"))
        self.assertTrue(self.parsed("shell", "6", "TRACE=1").trace)
        self.assertIn("SCREENSHOT= goes with 'make kernelshark'",
                      self.refused("lab", "6", "SCREENSHOT=1"))
        args = self.parsed("kernelshark", "6", "CHECK=article", "SCREENSHOT=1")
        self.assertEqual((args.number, args.check, args.screenshot), (6, "article", True))
        args = self.parsed("report", "6", "KERNEL=5")
        self.assertEqual((args.command, args.number, args.kernel), ("report", 6, K.of(5)))
        self.assertIn("SEED= goes with", self.refused("lab", "1", "SEED=3"))
        self.assertIn("KERNEL= goes with", self.refused("list", "KERNEL=1"))
        self.assertIn("make robust N", self.refused("robust", "1", "KERNEL=0"))

    def test_a_debug_grade_is_a_quick_one(self):
        args = self.parsed("grade", "3", "QUICK=1", "DEBUG=1")
        self.assertEqual((args.quick, args.debug), (True, True))
        self.assertIn("DEBUG=1 goes with 'make grade N QUICK=1'",
                      self.refused("grade", "3", "DEBUG=1"))

    def test_kcsan_goes_alone(self):
        """KCSAN kernels are a variant of their own: not with the debug
        kernels' switches."""
        self.assertIn("KCSAN=1 goes without DEBUG=1", self.refused("robust", "KCSAN=1", "DEBUG=1"))
        self.assertIn("KCSAN=1 goes without FAULTS=1",
                      self.refused("robust", "7", "KCSAN=1", "FAULTS=1"))
        self.assertTrue(self.parsed("robust", "7", "KCSAN=1").kcsan)

    def test_switched_off_variables_go_anywhere(self):
        self.assertFalse(self.parsed("list", "FULL=0").full)


class HarnessErrors(unittest.TestCase):
    """Library code raises labkit.errors.HarnessError; only ftlab.main
    turns it into a message and an exit code."""

    def main(self, *argv):
        """ftlab.main, leaving the environment and ui's verbosity as they
        were (make check runs these tests in its own process)."""
        err = io.StringIO()
        with redirect_stderr(err), mock.patch.dict(os.environ), \
                mock.patch.object(ui, "set_verbose"):
            rc = ftlab.main(list(argv))
        return rc, err.getvalue()

    def test_a_broken_series_is_a_message_and_exit_code_1(self):
        broken = series.SeriesError("patches/: checkpoint 1 is missing before 02-x")
        with mock.patch.object(series, "checkpoints", side_effect=broken):
            rc, err = self.main("list")
        self.assertEqual(rc, 1)
        self.assertIn("patches/: checkpoint 1 is missing before 02-x", err)

    def test_missing_packages_exit_code_2_after_saying_what_to_install(self):
        with mock.patch.object(deps, "ensure", return_value=False):
            rc, err = self.main("lab", "0", "--build-dir", tempfile.mkdtemp())
        self.assertEqual(rc, 2)
        self.assertEqual(err, "")       # ensure() said it; nothing more

    def test_usage_errors_exit_code_2(self):
        rc, err = self.main("lab", "x")
        self.assertEqual(rc, 2)
        self.assertIn("'x' is not a checkpoint number", err)


class ResultsOption(unittest.TestCase):
    """RESULTS=DIR goes with make check and make lab N only."""

    def test_check_and_lab_take_it(self):
        self.assertEqual(ftlab.parse_args(["check", "--results", "/tmp/r"]).results, "/tmp/r")
        self.assertEqual(ftlab.parse_args(["lab", "0", "--results", "r"]).results,
                         os.path.abspath("r"))
        self.assertIsNone(ftlab.parse_args(["check"]).results)

    def test_other_targets_refuse_it(self):
        with self.assertRaises(ftlab.UsageError):
            ftlab.parse_args(["kernel", "0", "--results", "r"])

    def test_the_makefile_passes_it(self):
        r = subprocess.run(["make", "-n", "check", "RESULTS=out"], cwd=ROOT,
                           capture_output=True, text=True)
        self.assertIn("--results out", r.stdout)


class AnotherCheckpointsKernel(unittest.TestCase):
    """make lab 6 KERNEL=5 is lab 6 itself on checkpoint 5's kernel: its
    feature checks FAIL with their diffs (make check's run of lab 6 on
    checkpoint 5 passes them for failing as 'before' records)."""

    def check(self, output):
        from labkit import protocol
        c = protocol.Check("06", "count", "check", "a count trigger fires twice")
        c.output, c.rc = output, 0
        return c

    def test_graded_as_the_labs_own_checkpoint(self):
        from labkit import labrun
        cp = SimpleNamespace(number=6)
        self.assertEqual(labrun.graded_as(K.of(5), cp, plain=True), K.of(6))
        self.assertEqual(labrun.graded_as(K.of(7), cp, plain=True), K.of(7))
        self.assertEqual(labrun.graded_as(K.upstream(), cp, plain=True), K.upstream())
        self.assertEqual(labrun.graded_as(K.of(5), cp, plain=False), K.of(5))

    def test_a_feature_check_fails_with_its_diff(self):
        from labkit import grade, labrun
        cp = SimpleNamespace(number=6)
        expected = {"count": ["fired", "fired"]}
        older = self.check(["echo: write error: Invalid argument"])
        plain = grade.grade_check(older, expected, labrun.graded_as(K.of(5), cp, True), 6)
        self.assertFalse(plain.ok)
        self.assertIn("+echo: write error: Invalid argument", plain.evidence)
        gate = grade.grade_check(older, expected, labrun.graded_as(K.of(5), cp, False), 6)
        self.assertTrue(gate.ok)
