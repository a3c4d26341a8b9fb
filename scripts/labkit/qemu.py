"""Boot a guest in QEMU (TCG, never KVM), watch its console and decide how
the run ended: finished, timed out, crashed (panic, oops, BUG, WARN), or
QEMU gave up."""

import os
import queue
import re
import subprocess
import threading
import time

from . import ui

QEMU = "qemu-system-x86_64"

# printk lines that always fail a run (a WARN with panic_on_warn=1 panics too).
CRASH_RE = re.compile(r"^(\[\s*\d+\.\d+\]\s*)?(Kernel panic - not syncing|Oops[:\s]|BUG: |"
                      r"WARNING: CPU: |WARNING: at |general protection fault|kernel BUG at|"
                      r"Unable to handle kernel|RIP: )")
DONE_LINE = "@@ftlab done"

# Kernel command line of every guest: console on the serial port, gdb-friendly
# addresses, and any oops or WARN ends the run at once. The console shows
# only errors (loglevel=4), so that kernel chatter does not split the lab's
# output lines; on a panic, panic_print=0x20 replays the whole kernel log,
# so the WARN or oops that led to it is shown all the same.
BASE_APPEND = ("console=ttyS0 nokaslr panic=-1 oops=panic panic_on_warn=1 "
               "panic_print=0x20 loglevel=4 rdinit=/init")


def command(bzimage, initrd, append, gdb_port=None, paused=False, interactive=False):
    cmd = [QEMU, "-accel", "tcg,thread=single", "-m", "512", "-smp", "1",
           "-no-reboot", "-kernel", bzimage, "-initrd", initrd, "-append", append]
    if interactive:
        cmd += ["-nographic"]
    else:
        cmd += ["-display", "none", "-monitor", "none", "-serial", "stdio"]
    if gdb_port:
        cmd += ["-gdb", f"tcp::{gdb_port}"]
    if paused:
        cmd += ["-S"]
    return cmd


class Run:
    """The outcome of one boot."""

    def __init__(self, status, lines, log, seconds, problem=None):
        self.status = status      # "done", "timeout", "crash", "exited"
        self.lines = lines
        self.log = log
        self.seconds = seconds
        self.problem = problem or []

    @property
    def ok(self):
        return self.status == "done"

    def explain(self):
        """What went wrong, in words a user can act on."""
        tail = [l for l in self.lines if l.strip()][-15:]
        rel = os.path.relpath(self.log)
        if self.status == "timeout":
            return ([f"guest did not finish in {self.seconds:.0f} s; last lines of the log:"]
                    + ["    " + l for l in tail] + [f"full log: {rel}"])
        if self.status == "crash":
            return (["the kernel crashed (panic, oops, BUG or WARN); first lines:"]
                    + ["    " + l for l in self.problem[:25]] + [f"full log: {rel}"])
        if self.status == "exited":
            return (["QEMU stopped before the guest finished; last lines:"]
                    + ["    " + l for l in tail] + [f"full log: {rel}"])
        return []


def run(cmd, log, timeout, on_line=None):
    """Run a QEMU command line to its end, the log going to 'log'."""
    os.makedirs(os.path.dirname(log), exist_ok=True)
    start = time.monotonic()
    ui.debug(" ".join(cmd))
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    lines_q = queue.Queue()

    def reader():
        for raw in proc.stdout:
            lines_q.put(raw.decode("utf-8", "replace").rstrip("\r\n").replace("\r", ""))
        lines_q.put(None)

    threading.Thread(target=reader, daemon=True).start()
    lines, problem, status = [], [], None
    crash_deadline = None
    with open(log, "w") as logf:
        while True:
            now = time.monotonic()
            limit = crash_deadline if crash_deadline else start + timeout
            try:
                line = lines_q.get(timeout=max(0.05, limit - now))
            except queue.Empty:
                status = status or "timeout"
                break
            if line is None:
                break
            logf.write(line + "\n")
            logf.flush()
            lines.append(line)
            if on_line:
                on_line(line)
            if problem:
                if len(problem) < 40:
                    problem.append(line)
            elif CRASH_RE.search(line):
                status = "crash"
                problem.append(line)
                crash_deadline = time.monotonic() + 5   # let the oops print, then stop
            if line.strip() == DONE_LINE and not status:
                status = "done"
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    proc.stdout.close()
    if status is None:
        status = "exited"
    return Run(status, lines, log, time.monotonic() - start, problem)
