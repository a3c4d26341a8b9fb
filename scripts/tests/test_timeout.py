"""One time-limit policy for every guest run, plain or under gdb: the
user's TIMEOUT when given, else qemu.timeout_for of the run's plan."""

import os
import tempfile
import unittest
from types import SimpleNamespace
from unittest import mock

from labkit import gdbrun, labrun, qemu
from labkit.kernels import KernelId as K


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
        self.kernel = SimpleNamespace(name="cp1", id=K.of(1), obj=self.dir, bzimage="bz",
                                      vmlinux=os.path.join(self.dir, "vmlinux"))
        self.limits = []

    def guest(self, status):
        test = self

        class Guest:
            def __init__(self, cmd, log, own_session=False):
                self.log = log

            def watch(self, timeout, stop=None):
                test.limits.append(timeout)
                return qemu.Run(status, ["@@ftlab done"], self.log, 1)

            def stop(self):
                pass
        return Guest

    def run_unattended(self, session, status="stopped"):
        gdb = mock.Mock()
        gdb.poll.return_value = 0
        with mock.patch.object(gdbrun.qemu, "Guest", self.guest(status)), \
                mock.patch.object(gdbrun, "wait_for_stub"), \
                mock.patch.object(gdbrun.subprocess, "Popen", return_value=gdb):
            return gdbrun.unattended(self.kernel, "initrd", self.cp, 1234, self.dir,
                                     session.timeout_for)

    def test_the_users_timeout_reaches_the_gdb_run(self):
        self.run_unattended(labrun.Session(self.dir, 77))
        self.assertEqual(self.limits, [77])

    def test_the_default_reaches_the_gdb_run(self):
        self.run_unattended(labrun.Session(self.dir))
        self.assertEqual(self.limits, [240])

    def test_a_timed_out_gdb_run_says_the_limit(self):
        ok, evidence, _run = self.run_unattended(labrun.Session(self.dir, 77), "timeout")
        self.assertFalse(ok)
        self.assertIn("gdb did not finish in 77 s", evidence)

    def test_selftest_uses_the_policy_too(self):
        with open(os.path.join(self.dir, "expected"), "w") as f:
            f.write("@@selftest ft-clock\nlocal\n")
        gdb = mock.Mock()
        gdb.poll.return_value = 0
        with mock.patch.object(gdbrun, "SELFTEST", self.dir), \
                mock.patch.object(gdbrun.qemu, "Guest", self.guest("stopped")), \
                mock.patch.object(gdbrun, "wait_for_stub"), \
                mock.patch.object(gdbrun.subprocess, "Popen", return_value=gdb):
            gdbrun.selftest(self.kernel, "initrd", 1234, self.dir,
                            labrun.Session(self.dir, 55).timeout_for)
        self.assertEqual(self.limits, [55])
