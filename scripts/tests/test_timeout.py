"""One time-limit policy for every guest run, plain or under gdb: the
user's TIMEOUT when given, else labrun.default_timeout of the run's plan."""

import os
import subprocess
import tempfile
import unittest
from types import SimpleNamespace
from unittest import mock

from labkit import gdbrun, labrun


class Policy(unittest.TestCase):
    def session(self, timeout=None):
        return labrun.Session(tempfile.mkdtemp(), timeout)

    def test_defaults_follow_the_plan(self):
        s = self.session()
        self.assertEqual(s.timeout_for(["lab:01"]), 120)
        self.assertEqual(s.timeout_for(["lab:00", "lab:01", "ftracetest"]), 120 + 30 + 420)

    def test_gdb_runs_keep_their_four_minutes_by_default(self):
        s = self.session()
        self.assertEqual(s.timeout_for([gdbrun.lab_plan(SimpleNamespace(number=3))]), 240)
        self.assertEqual(s.timeout_for([gdbrun.SELFTEST_PLAN]), 240)

    def test_the_users_timeout_wins_everywhere(self):
        s = self.session(600)
        for plan in (["lab:01"], ["gdb:01"], [gdbrun.SELFTEST_PLAN], ["conformance"]):
            self.assertEqual(s.timeout_for(plan), 600)


class GdbRunsUseThePolicy(unittest.TestCase):
    """gdbrun.unattended and selftest ask the session for their limit (no
    QEMU, no gdb: both are stand-ins here)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        lab = os.path.join(self.dir, "lab")
        os.makedirs(lab)
        with open(os.path.join(lab, "gdb.expected"), "w") as f:
            f.write("a line gdb prints\n")
        self.cp = SimpleNamespace(number=1, lab_dir=lab)
        self.kernel = SimpleNamespace(name="cp1", kernel=1, obj=self.dir, bzimage="bz",
                                      vmlinux=os.path.join(self.dir, "vmlinux"))

    def start_guest(self, kernel, initrd, cp, port, log, plan=None):
        with open(log, "w") as f:
            f.write("@@ftlab done\n")
        return mock.Mock()

    def run_unattended(self, session, gdb):
        with mock.patch.object(gdbrun, "start_guest", self.start_guest), \
                mock.patch.object(gdbrun.time, "sleep"), \
                mock.patch.object(gdbrun.subprocess, "run", side_effect=gdb) as run:
            result = gdbrun.unattended(self.kernel, "initrd", self.cp, 1234, self.dir,
                                       session.timeout_for)
        return result, run.call_args.kwargs["timeout"]

    def test_the_users_timeout_reaches_gdb(self):
        _result, timeout = self.run_unattended(labrun.Session(self.dir, 77), None)
        self.assertEqual(timeout, 77)

    def test_the_default_reaches_gdb(self):
        _result, timeout = self.run_unattended(labrun.Session(self.dir), None)
        self.assertEqual(timeout, 240)

    def test_a_timed_out_gdb_run_says_the_limit(self):
        hang = subprocess.TimeoutExpired("gdb", 77)
        (ok, evidence, _run), _ = self.run_unattended(labrun.Session(self.dir, 77), hang)
        self.assertFalse(ok)
        self.assertIn("gdb did not finish in 77 s", evidence)

    def test_selftest_uses_the_policy_too(self):
        with open(os.path.join(self.dir, "expected"), "w") as f:
            f.write("@@selftest ft-clock\nlocal\n")
        with mock.patch.object(gdbrun, "SELFTEST", self.dir), \
                mock.patch.object(gdbrun, "start_guest", self.start_guest), \
                mock.patch.object(gdbrun.time, "sleep"), \
                mock.patch.object(gdbrun.subprocess, "run") as run:
            gdbrun.selftest(self.kernel, "initrd", 1234, self.dir,
                            labrun.Session(self.dir, 55).timeout_for)
        self.assertEqual(run.call_args.kwargs["timeout"], 55)
