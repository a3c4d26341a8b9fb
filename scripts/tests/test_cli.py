import io
import os
import subprocess
import tempfile
import unittest
from contextlib import redirect_stderr
from unittest import mock

import ftlab
from labkit import deps, series, ui

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
        a = ftlab.parse_args(["lab", "0", "--kernel", "upstream", "--gdb-port", "2345"])
        self.assertEqual((a.command, a.number, a.kernel, a.gdb_port), ("lab", 0, "upstream", 2345))
        with self.assertRaises(ftlab.UsageError):
            ftlab.parse_args(["list", "3"])


class LabChecks(unittest.TestCase):
    """make lab N LIST=1 and CHECK=ID: the checks lab.sh registers."""

    def test_registrations_parse(self):
        from labkit import series
        text = ('check one "a probe patches one function" one_fn\n'
                'guard two "still there" two_fn\n'
                'replaced_at 1 cost "every function traced" cost\n'
                'ours_only nn "no WARN" nn_fn\n'
                '# check commented "not a registration" x\n'
                '\tcheck inside "a call in a function" y\n')
        got = [(c.id, c.kind, c.title) for c in series.parse_registrations(text)]
        self.assertEqual(got, [("one", "check", "a probe patches one function"),
                               ("two", "guard", "still there"),
                               ("cost", "replaced-at-1", "every function traced"),
                               ("nn", "ours-only", "no WARN")])

    def test_every_lab_registers_what_its_expected_file_holds(self):
        from labkit import grade, series
        for cp in series.checkpoints():
            if cp.has_lab:
                ids = [c.id for c in cp.checks()]
                self.assertEqual(sorted(ids), sorted(grade.load_expected(cp.lab_dir)), cp.name)

    def test_check_must_exist(self):
        a = ftlab.parse_args(["lab", "3", "--check", "errors"])
        self.assertEqual(a.check, "errors")
        with self.assertRaises(ftlab.UsageError) as e:
            ftlab.parse_args(["lab", "3", "--check", "no-such-check"])
        self.assertIn("until-hit", str(e.exception))
        with self.assertRaises(ftlab.UsageError):
            ftlab.parse_args(["gdb", "3", "--list"])


class MakeForms(unittest.TestCase):
    """'make lab 3' and 'make lab N=3' must run the same command."""

    def dry(self, *args):
        r = subprocess.run(["make", "-s", "-n", "-C", ROOT] + list(args),
                           capture_output=True, text=True)
        # the first line: the harness command (the rest swallows the number)
        return r.stdout.strip().splitlines()[0].strip()

    def test_positional_and_variable_forms_agree(self):
        for target in ("lab", "gdb", "shell", "kernel"):
            self.assertEqual(self.dry(target, "0"), self.dry(target, "N=0"))
            self.assertIn(f"ftlab.py {target} 0", self.dry(target, "0"))

    def test_list_and_check_become_options(self):
        self.assertIn("--list", self.dry("lab", "3", "LIST=1"))
        self.assertIn("--check errors", self.dry("lab", "3", "CHECK=errors"))

    def test_variables_become_options(self):
        out = self.dry("lab", "0", "KERNEL=upstream", "GDB_PORT=4321")
        self.assertIn("--kernel upstream", out)
        self.assertIn("--gdb-port 4321", out)

    def test_make_command_lines_parse(self):
        """What make runs must parse: options and number in any order."""
        import shlex
        out = self.dry("lab", "0", "KERNEL=upstream", "GDB_PORT=4321")
        argv = shlex.split(out)[2:]            # drop "python3 scripts/ftlab.py"
        a = ftlab.parse_args(argv)
        self.assertEqual((a.command, a.number, a.kernel, a.gdb_port), ("lab", 0, "upstream", 4321))
        a = ftlab.parse_args(["lab", "--kernel", "upstream", "0"])
        self.assertEqual((a.number, a.kernel), (0, "upstream"))

    def test_distclean_is_clean_all(self):
        self.assertIn("clean --all", self.dry("distclean"))


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


class CheckTimes(unittest.TestCase):
    """make check prints how long each part took."""

    def test_parts_are_timed_and_listed(self):
        import io
        from contextlib import redirect_stdout
        from labkit import check
        parts = check.Parts()
        self.assertEqual(parts.time("one part", lambda x: x + 1, 1), 2)
        out = io.StringIO()
        with redirect_stdout(out):
            parts.report("3 s")
        self.assertIn("make check took 3 s:", out.getvalue())
        self.assertRegex(out.getvalue(), r"one part\s+0 s")
