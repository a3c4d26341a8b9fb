"""Ctrl-C (labkit.interrupt): every guest the harness started is stopped,
no queued guest run starts, no traceback, exit code 130. The harness runs
in a process of its own with stand-in guests (small Python programs that
sleep, started by qemu.Guest as QEMU would be) in robust.Lanes, and is
sent SIGINT as a terminal's Ctrl-C would."""

import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from labkit import interrupt, robust

SCRIPTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ftlab.main with a dispatch that runs four stand-in guest runs in the
# lanes: two run, two queue. Each run marks that it started, and records
# its guest's pid, in the folder given.
HARNESS = r'''
import os, sys
sys.path.insert(0, sys.argv[1])
import ftlab
from labkit import qemu, robust

folder = sys.argv[2]
GUEST = "import time; print('booting', flush=True); time.sleep(300)"


def run(n):
    open(os.path.join(folder, f"started-{n}"), "w").close()
    guest = qemu.Guest([sys.executable, "-c", GUEST], os.path.join(folder, f"guest-{n}.log"))
    with open(os.path.join(folder, f"pid-{n}"), "w") as f:
        f.write(str(guest.proc.pid))
    return guest.watch(600)


def dispatch(argv):
    with robust.Lanes() as lanes:
        for future in [lanes.submit(run, n) for n in range(4)]:
            future.result()
    return 0


ftlab.dispatch = dispatch
sys.exit(ftlab.main([]))
'''


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class CtrlC(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.pids = []

    def tearDown(self):
        for pid in self.pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)

    def wait_for(self, names, harness):
        """Until the files exist (the runs started): setup, not a time
        limit of the harness's."""
        for _ in range(600):
            if all(os.path.exists(os.path.join(self.dir, n)) for n in names):
                return
            if harness.poll() is not None:
                self.fail(f"the harness ended first: {harness.communicate()}")
            time.sleep(0.1)
        self.fail(f"{names} never appeared")

    def test_guests_stopped_queue_dropped_exit_130(self):
        harness = subprocess.Popen([sys.executable, "-c", HARNESS, SCRIPTS, self.dir],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
        try:
            self.wait_for(["pid-0", "pid-1"], harness)
            for n in (0, 1):
                with open(os.path.join(self.dir, f"pid-{n}")) as f:
                    self.pids.append(int(f.read()))
            harness.send_signal(signal.SIGINT)
            out, err = harness.communicate(timeout=120)
        finally:
            if harness.poll() is None:
                os.killpg(harness.pid, signal.SIGKILL)
                harness.wait()
        self.assertEqual(harness.returncode, 130, err)
        self.assertNotIn("Traceback", err)
        self.assertIn("interrupted", err)
        self.assertEqual(sorted(n for n in os.listdir(self.dir) if n.startswith("started-")),
                         ["started-0", "started-1"], "a queued run started after Ctrl-C")
        self.assertEqual([pid for pid in self.pids if alive(pid)], [],
                         "a guest outlived the harness")


class Lanes(unittest.TestCase):
    """In the process: a queued run raises Interrupted once the lanes are
    cancelled, and never calls its function."""

    def test_a_cancelled_lane_starts_nothing(self):
        import threading
        release, ran = threading.Event(), []
        lanes = robust.Lanes(width=1)
        first = lanes.submit(release.wait)
        queued = lanes.submit(ran.append, "queued")
        lanes.cancel()
        release.set()
        first.result()
        with self.assertRaises(interrupt.Interrupted):
            queued.result()
        self.assertEqual(ran, [])
        lanes.__exit__(None, None, None)
