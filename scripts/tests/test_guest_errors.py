"""An "@@ftlab error TEXT" line from the guest (initramfs/init: an unknown
plan item; lib.sh: a lab missing from the initramfs) fails the run it is
in, with TEXT shown: plain boots (labs, ftracetest, conformance) and gdb
runs alike. Stand-in guests, no kernel needed."""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

from labkit import gdbrun, labrun, protocol, qemu, ui

ERROR = "@@ftlab error unknown plan item 'no-such-item'"


def fake(*lines):
    return [sys.executable, "-c", "\n".join(f"print({line!r})" for line in lines)]


class PlainBoot(unittest.TestCase):
    def setUp(self):
        self.log = os.path.join(tempfile.mkdtemp(), "console.log")

    def test_the_protocol_reads_the_error_text(self):
        report = protocol.parse(["@@ftlab lab-begin 01", ERROR, qemu.DONE_LINE])
        self.assertEqual(report.errors, ["unknown plan item 'no-such-item'"])

    def test_a_guest_error_fails_a_run_that_finished(self):
        run = qemu.run(fake("@@ftlab lab-begin 00", "@@ftlab lab-end 00", ERROR,
                            qemu.LOG_BEGIN, qemu.LOG_END, qemu.DONE_LINE), self.log, 10)
        self.assertEqual(run.status, "guest-error")
        self.assertFalse(run.ok)
        text = "\n".join(run.explain())
        self.assertIn("the guest reported an error", text)
        self.assertIn("unknown plan item 'no-such-item'", text)
        self.assertIn("full log:", text)

    def test_a_clean_run_is_still_done(self):
        run = qemu.run(fake("@@ftlab lab-begin 00", "@@ftlab lab-end 00", qemu.DONE_LINE),
                       self.log, 10)
        self.assertEqual(run.status, "done")

    def test_the_verdict_shows_the_error(self):
        run = qemu.run(fake("@@ftlab error no lab 09 in the initramfs", qemu.DONE_LINE),
                       self.log, 10)
        tally, out = ui.Tally(), io.StringIO()
        with redirect_stdout(out):
            graded = labrun.grade_boot(run, tally, "lab 09 [cp9]")
        self.assertFalse(graded)
        self.assertEqual(tally.failed, 1)
        self.assertIn("FAIL", out.getvalue())
        self.assertIn("FAIL lab 09 [cp9]: guest run to its end", out.getvalue())
        self.assertIn("no lab 09 in the initramfs", out.getvalue())


class GdbRun(unittest.TestCase):
    def batch(self, console):
        status, problem = qemu.finished_status(console)
        guest = qemu.Run("stopped" if status == "done" else status, console, "console.log", 1,
                         problem)
        return gdbrun.BatchRun(["Breakpoint 2, ksys_sync ()"], guest, 240, "gdb.log")

    def test_a_guest_error_breaks_a_gdb_run(self):
        run = self.batch(["@@ftlab error no lab 01 in the initramfs", qemu.DONE_LINE])
        self.assertTrue(run.broken)
        self.assertIn("    no lab 01 in the initramfs", run.problems())

    def test_a_clean_gdb_run_is_not_broken(self):
        run = self.batch(["@@ftlab lab-begin 01", "@@ftlab lab-end 01"])
        self.assertFalse(run.broken)
        self.assertEqual(run.problems(), [])


class BootVerdict(unittest.TestCase):
    """A boot is one verdict that passes or fails, never a line that only passes."""

    def test_a_clean_boot_is_one_pass(self):
        d = tempfile.mkdtemp()
        run = qemu.run(fake(qemu.DONE_LINE), os.path.join(d, "console.log"), 10)
        tally = ui.Tally()
        with redirect_stdout(io.StringIO()):
            self.assertTrue(labrun.grade_boot(run, tally, "boot cp1"))
        self.assertEqual([(v.name, v.status) for v in tally.verdicts],
                         [("boot cp1: guest run to its end, no splat", "pass")])
