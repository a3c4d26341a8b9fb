"""The guest side, checked on the host: the cpio writer, and lib.sh's pure
helpers run under the same busybox sh the guest uses."""

import os
import subprocess
import tempfile
import unittest

from labkit import initramfs, series

LIB = os.path.join(series.ROOT, "initramfs", "lib.sh")


def sh(snippet):
    r = subprocess.run(["busybox", "sh", "-c", f". {LIB}; {snippet}"],
                       capture_output=True, text=True)
    return r.stdout.strip()


class Cpio(unittest.TestCase):
    def test_archive_lists_with_cpio(self):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "x.cpio")
        c = initramfs.Cpio(path)
        c.directory("dev")
        c.char_device("dev/console", 5, 1)
        c.file("init", b"#!/bin/sh\n", executable=True)
        c.symlink("bin/sh", "busybox")
        c.close()
        r = subprocess.run(["cpio", "-itv"], stdin=open(path, "rb"), capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("dev/console", r.stdout)
        self.assertRegex(r.stdout, r"crw.*5,\s*1.*dev/console")
        self.assertRegex(r.stdout, r"-rwxr-xr-x.*init")
        self.assertIn("bin/sh -> busybox", r.stdout)


class GuestLibrary(unittest.TestCase):
    def test_removal_of_listed_entries(self):
        cases = {
            # "unlimited" may be a counted probe whose count is -1: both forms
            "schedule:traceoff:unlimited": "!schedule:traceoff\n!schedule:traceoff:0",
            "schedule:traceoff:count=3": "!schedule:traceoff:0",
            "f:enable_event:sched:sched_switch:count=2": "!f:enable_event:sched:sched_switch:0",
            "traceoff:unlimited if prev_pid == 0": "!traceoff\n!traceoff:0",
            "stacktrace:count=5 if common_pid > 1": "!stacktrace:0",
        }
        for listed, removal in cases.items():
            self.assertEqual(sh(f"removal_of '{listed}'"), removal)

    def test_try_write_reports_errors(self):
        d = tempfile.mkdtemp()
        self.assertEqual(sh(f"try_write x {d}/f"), f"'x' >> {d}/f: ok")
        self.assertEqual(sh("try_write x /dev/full"), "'x' >> /dev/full: No space left on device")

    def test_setup_is_quiet_and_reports_at_the_end_of_the_check(self):
        d = tempfile.mkdtemp()
        self.assertEqual(sh(f": > /tmp/.setup; setup x {d}/f; echo feature; cat /tmp/.setup"),
                         "feature")
        self.assertEqual(sh(": > /tmp/.setup; setup x /dev/full; echo feature; cat /tmp/.setup"),
                         "feature\nsetup: 'x' >> /dev/full: No space left on device")

    def test_requirements(self):
        self.assertEqual(sh("TRACING=/; requirement_missing proc"), "")
        self.assertEqual(sh("TRACING=/; requirement_missing no_such_file"), "no_such_file")
