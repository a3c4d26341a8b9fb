"""Boot a guest in QEMU (TCG, never KVM), watch its console and decide how
the run ended: finished, timed out, crashed (panic, oops, BUG, WARN),
finished with a problem report in its kernel log or an error of its own
("@@ftlab error"), or QEMU gave up."""

import os
import queue
import re
import subprocess
import threading
import time

from . import protocol, series, ui

QEMU = "qemu-system-x86_64"

# printk lines that always fail a run (a WARN with panic_on_warn=1 panics too).
CRASH_RE = re.compile(r"^(\[\s*\d+\.\d+\]\s*)?(Kernel panic - not syncing|Oops[:\s]|BUG: |"
                      r"WARNING: CPU: |WARNING: at |general protection fault|kernel BUG at|"
                      r"Unable to handle kernel|RIP: )")
DONE_LINE = "@@ftlab done"

# Reports the kernel writes to its log below the console's loglevel, so
# that only a scan of the whole log finds them: lockdep, RCU, KASAN,
# kmemleak, UBSAN, and WARNs or BUGs of a kernel not set to panic on them.
REPORT_RE = re.compile(r"^(\[\s*\d+\.\d+\]\s*)?(.*\bWARNING: |BUG: |kernel BUG at|Oops|"
                       r"general protection fault|-+\[ cut here \]-+|"
                       r"possible (circular|recursive) locking|suspicious RCU usage|"
                       r"INFO: (task .* blocked|rcu_|possible)|rcu: INFO:|.*detected stalls?|"
                       r"KASAN:|UBSAN:|unreferenced object 0x|kmemleak: \d+ new suspected)")
# The guest prints its whole kernel log between these lines at the end of
# every run (initramfs/lib.sh, kernel_log).
LOG_BEGIN, LOG_END = "@@ftlab kernel-log-begin", "@@ftlab kernel-log-end"

# Kernel command line of every guest: console on the serial port, gdb-friendly
# addresses, and any oops or WARN ends the run at once. The console shows
# only errors (loglevel=4), so that kernel chatter does not split the lab's
# output lines; on a panic, panic_print=0x20 replays the whole kernel log,
# so the WARN or oops that led to it is shown all the same. Reports below
# that level are found in the kernel log the guest prints at its end.
BASE_APPEND = ("console=ttyS0 nokaslr panic=-1 oops=panic panic_on_warn=1 "
               "panic_print=0x20 loglevel=4 rdinit=/init")


def append(plan, kernel=None):
    """The kernel command line of a guest that runs 'plan' (plan items, see
    initramfs/init) on 'kernel' ("upstream" or a checkpoint number), which
    the guest's labs read to skip what upstream does differently."""
    line = f"{BASE_APPEND} ftlab={','.join(plan)}"
    if kernel is not None:
        line += " ftlab.kernel=" + series.kernel_name(kernel)
    return line


def kernel_log_reports(lines, context=25):
    """The problem reports in the kernel log that the guest printed at its
    end: each report line and the lines after it (its call trace)."""
    inside, found, left = False, [], 0
    for line in lines:
        if line.strip() in (LOG_BEGIN, LOG_END):
            inside = line.strip() == LOG_BEGIN
            continue
        if not inside:
            continue
        if REPORT_RE.search(line):
            if not left and found:
                found.append("    ...")
            left = context
        if left:
            found.append(line)
            left -= 1
    return found


def crash_excerpt(lines, context=30):
    """The crash report to show: from the last line that starts a report
    (a WARN's "cut here", WARNING, BUG, Oops ...), else from the first
    crash line, plus the panic line. With panic_print=0x20 the panic
    replays the whole kernel log, boot messages first, so the report is
    near the end, not where the crash was first noticed."""
    starts = [i for i, l in enumerate(lines)
              if "[ cut here ]" in l or (CRASH_RE.search(l) and "Kernel panic" not in l
                                         and "RIP: " not in l)]
    crashes = [i for i, l in enumerate(lines) if CRASH_RE.search(l)]
    if not starts and not crashes:
        return []
    start = starts[-1] if starts else crashes[0]
    if start > 0 and "[ cut here ]" in lines[start - 1]:
        start -= 1
    excerpt = lines[start:start + context]
    panic = next((l for l in lines if "Kernel panic - not syncing" in l), None)
    if panic and panic not in excerpt:
        excerpt.append(panic)
    return excerpt


def finished_status(lines):
    """(status, problem) of a guest that printed "@@ftlab done": a problem
    report in its kernel log comes first, then the errors the guest itself
    reported (an unknown plan item, a lab missing from the initramfs):
    either fails the run, whatever the rest of it printed."""
    reports = kernel_log_reports(lines)
    if reports:
        return "kernel-report", reports
    errors = protocol.parse(lines).errors
    if errors:
        return "guest-error", errors
    return "done", []


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
        # "done", "timeout", "crash", "kernel-report", "guest-error", "exited"
        self.status = status
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
        if self.status == "kernel-report":
            return (["the guest finished, but its kernel log has a problem report"
                     " (WARN, BUG, lockdep, RCU, KASAN, kmemleak):"]
                    + ["    " + l for l in self.problem[:40]] + [f"full log: {rel}"])
        if self.status == "guest-error":
            return (["the guest reported an error:"]
                    + ["    " + l for l in self.problem] + [f"full log: {rel}"])
        if self.status == "exited":
            return (["QEMU stopped before the guest finished; last lines:"]
                    + ["    " + l for l in tail] + [f"full log: {rel}"])
        return []


def run(cmd, log, timeout):
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
    in_log = False
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
            if line.strip() in (LOG_BEGIN, LOG_END):
                in_log = line.strip() == LOG_BEGIN
            if problem or in_log:
                pass        # the kernel log is scanned as a whole at the end
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
    if status == "crash":
        problem = crash_excerpt(lines) or problem
    elif status == "done":
        status, problem = finished_status(lines)
    return Run(status, lines, log, time.monotonic() - start, problem)
