import unittest

from labkit import timing

RUN = """    0.00 SeaBIOS (version 1.16.2-debian-1.16.2-1)
    2.10 @@ftlab plan lab:01
    2.20 @@ftlab lab-begin 01
    2.30 @@ftlab check-begin 01 glob feature a glob
    2.30 schedule
    3.30 @@ftlab check-end 01 glob rc=0
    3.50 @@ftlab lab-end 01
    3.50 @@ftlab ftracetest-case 1 00basic/basic1.tc
    3.50 @@ftlab ftracetest-case 2 00basic/basic1.tc@instance
    3.60 @@ftlab ftracetest-begin matrix 2
    3.70 === Ftrace unit tests ===
    4.60 [1] Basic trace file check	[PASS]
    5.10 [2] (instance) Basic trace file check	[PASS]
    5.60 @@ftlab ftracetest-end matrix rc=0
    5.70 @@ftlab done
    6.70 reboot: Power down
"""


class Spans(unittest.TestCase):
    """make bench and make check say where a guest run's time went."""

    def test_boot_labs_checks_tests_and_the_end(self):
        got = dict(timing.spans(RUN.splitlines()))
        self.assertAlmostEqual(got["boot"], 2.10)
        self.assertAlmostEqual(got["lab 01"], 1.30)
        self.assertAlmostEqual(got["  check 01 glob"], 1.00)
        self.assertAlmostEqual(got["ftracetest matrix"], 2.00)
        self.assertAlmostEqual(got["  ftracetest 00basic/basic1.tc"], 1.00)
        self.assertAlmostEqual(got["  ftracetest 00basic/basic1.tc@instance"], 0.50)
        self.assertAlmostEqual(got["end"], 1.00)

    def test_a_span_that_never_ended_is_left_out(self):
        got = dict(timing.spans(RUN.splitlines()[:5]))
        self.assertNotIn("lab 01", got)
        self.assertIn("boot", got)


class LongestRuns(unittest.TestCase):
    def test_runs_by_their_last_line(self):
        import os
        import shutil
        import tempfile
        logs = tempfile.mkdtemp()
        try:
            for name, text in (("check-cp1.times", RUN), ("lab01-cp1.times", "    1.50 x\n"),
                               ("check-cp1.log", "not times\n")):
                with open(os.path.join(logs, name), "w") as f:
                    f.write(text)
            self.assertEqual(timing.longest_runs(logs), [("check-cp1", 6.7), ("lab01-cp1", 1.5)])
            self.assertEqual(timing.longest_runs(os.path.join(logs, "none")), [])
            os.utime(os.path.join(logs, "lab01-cp1.times"), (1000, 1000))   # an earlier run
            self.assertEqual(timing.longest_runs(logs, since=2000), [("check-cp1", 6.7)])
        finally:
            shutil.rmtree(logs)


class CheckTimes(unittest.TestCase):
    """make check prints how long each part took."""

    def test_parts_are_timed_and_listed(self):
        import io
        from contextlib import redirect_stdout
        parts = timing.Parts()
        self.assertEqual(parts.time("one part", lambda x: x + 1, 1), 2)
        out = io.StringIO()
        with redirect_stdout(out):
            parts.report("3 s")
        self.assertIn("make check took 3 s:", out.getvalue())
        self.assertRegex(out.getvalue(), r"one part\s+0 s")

    def test_the_cores_busy_share(self):
        self.assertEqual(timing.busy_share((100, 1000), (250, 1200)), 75)
        self.assertIsNone(timing.busy_share(None, (250, 1200)))
        self.assertIsNone(timing.busy_share((100, 1000), (100, 1000)))
        busy, total = timing.cpu_times()
        self.assertLessEqual(busy, total)
