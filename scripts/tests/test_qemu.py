"""The QEMU runner's endings, with stand-in 'guests' (small Python programs
that print what a guest's console would), so no kernel is needed."""

import os
import sys
import tempfile
import time
import unittest

from labkit import qemu


def fake(script):
    return [sys.executable, "-c", script]


class Endings(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.log = os.path.join(self.dir, "console.log")

    def test_done(self):
        r = qemu.run(fake("print('booting'); print('@@ftlab done')"), self.log, 10)
        self.assertEqual(r.status, "done")
        self.assertTrue(r.ok)
        with open(self.log) as f:
            self.assertIn("booting", f.read())

    def test_panic_is_fast_and_shown(self):
        script = ("import time; print('Kernel panic - not syncing: Attempted to kill init!');"
                  "print('CPU: 0 PID: 1 Comm: init'); import sys; sys.stdout.flush();"
                  "time.sleep(60)")
        start = time.monotonic()
        r = qemu.run(fake(script), self.log, 50)
        self.assertEqual(r.status, "crash")
        self.assertLess(time.monotonic() - start, 15)
        self.assertIn("Kernel panic", "\n".join(r.explain()))
        self.assertIn("CPU: 0 PID: 1 Comm: init", r.problem)

    def test_warn_is_a_crash_even_if_the_guest_finishes(self):
        script = "print('WARNING: CPU: 0 PID: 1 at kernel/trace/ftrace.c:10 f+0x1/0x2'); print('@@ftlab done')"
        self.assertEqual(qemu.run(fake(script), self.log, 10).status, "crash")

    def test_timeout_message(self):
        r = qemu.run(fake("import time; print('still here', flush=True); time.sleep(60)"), self.log, 2)
        self.assertEqual(r.status, "timeout")
        text = "\n".join(r.explain())
        self.assertIn("guest did not finish in 2 s", text)
        self.assertIn("still here", text)
        self.assertIn("full log:", text)

    def test_exit_without_done(self):
        r = qemu.run(fake("print('half way')"), self.log, 10)
        self.assertEqual(r.status, "exited")
        self.assertFalse(r.ok)

    def test_lab_output_is_not_mistaken_for_a_crash(self):
        script = "print('WARNING: this lab prints a word'); print('BUG count: 0'); print('@@ftlab done')"
        self.assertEqual(qemu.run(fake(script), self.log, 10).status, "done")

    def test_command_is_tcg_single_threaded_never_kvm(self):
        cmd = qemu.command("bz", "initrd", "console=ttyS0")
        self.assertIn("tcg,thread=single", cmd)
        self.assertNotIn("-enable-kvm", cmd)
        self.assertIn("-no-reboot", cmd)
