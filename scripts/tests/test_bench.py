import csv
import os
import shutil
import subprocess
import tempfile
import unittest

from labkit import bench


class Parse(unittest.TestCase):
    LINES = ["boot chatter",
             "@@ftlab bench probe none 1 1000",
             "@@ftlab bench probe probe-unrelated 1 3000",
             "@@ftlab bench probe none 2 1200",
             "@@ftlab bench probe probe-unrelated 2 2800",
             "@@ftlab bench probe none 3 900",
             "@@ftlab bench probe probe-unrelated 3 3100",
             "@@ftlab bench-skip trigger no event trigger files",
             "@@ftlab bench-error event on put 1 failed: Invalid argument"]

    def test_samples_skips_errors(self):
        samples, skips, errors = bench.parse(self.LINES)
        self.assertEqual(samples, {"probe": {"none": [1000, 1200, 900],
                                             "probe-unrelated": [3000, 2800, 3100]}})
        self.assertEqual(skips, {"trigger": "no event trigger files"})
        self.assertEqual(errors, ["event on put 1 failed: Invalid argument"])

    def test_a_garbled_number_is_an_error_not_a_sample(self):
        samples, _skips, errors = bench.parse(["@@ftlab bench probe none 1 12x"])
        self.assertEqual(samples, {})
        self.assertIn("not a number", errors[0])

    def test_ratio_is_to_the_first_case_of_the_same_boot(self):
        samples, _s, _e = bench.parse(self.LINES)
        rows = bench.summarise(samples["probe"])
        self.assertEqual(rows[0], ("none", 1000, 900, 1200, 1.0))
        case, median, lo, hi, ratio = rows[1]
        self.assertEqual((case, median, lo, hi), ("probe-unrelated", 3000, 2800, 3100))
        self.assertAlmostEqual(ratio, 3.0)


class Tables(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_probe_cost_csv_has_the_promised_header(self):
        results = {"cp0": {"probe": [("none", 1000, 900, 1200, 1.0),
                                     ("probe-unrelated", 9000, 8000, 9500, 9.0)]}}
        report = bench.write_tables(self.dir, results)
        with open(os.path.join(self.dir, "probe-cost.csv")) as f:
            rows = list(csv.reader(f))
        self.assertEqual(rows[0], ["checkpoint", "case", "median_ns", "min_ns", "max_ns", "ratio"])
        self.assertEqual(rows[2], ["cp0", "probe-unrelated", "9000", "8000", "9500", "9"])
        self.assertTrue(any("probe-unrelated" in line and " 9 " in line + " " for line in report))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "event-cost.csv")))


@unittest.skipUnless(shutil.which("gcc"), "needs gcc")
class FreshClone(unittest.TestCase):
    def test_the_clone_gets_none_of_this_runs_settings(self):
        import os
        from unittest import mock
        mine = {"FTLAB_BUILD_DIR": "/main/build", "MAKEFLAGS": "w -- FULL=1 SEED=7",
                "MAKELEVEL": "2", "MAKEOVERRIDES": "x", "MFLAGS": "-w", "PATH": "/bin",
                "CCACHE_DIR": "/c", "FULL": "1", "SEED": "7"}
        with mock.patch.dict(os.environ, mine, clear=True):
            env = bench.clone_env(CCACHE_DISABLE="1")
        self.assertEqual(env, {"PATH": "/bin", "CCACHE_DIR": "/c", "CCACHE_DISABLE": "1"})


    def test_a_timed_command_keeps_its_output_when_asked(self):
        import os
        import tempfile
        d = tempfile.mkdtemp()
        log = os.path.join(d, "out.log")
        _secs, rc = bench.timed(["sh", "-c", "echo 1 passed, 0 failed; exit 3"], d, log=log)
        self.assertEqual(rc, 3)
        with open(log) as f:
            self.assertEqual(f.read(), "1 passed, 0 failed\n")


class Workload(unittest.TestCase):
    def test_builds_static_and_reports_ns_per_call(self):
        out = tempfile.mkdtemp()
        try:
            binary = bench.build_workload(out)
            r = subprocess.run([binary, "getppid", "20"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0)
            self.assertGreater(int(r.stdout), 0)
            bad = subprocess.run([binary, "getppid", "0"], capture_output=True, text=True)
            self.assertEqual(bad.returncode, 2)
        finally:
            shutil.rmtree(out)
