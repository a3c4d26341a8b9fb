"""The one guest launcher. Every QEMU command line comes from command()
(plain and check runs, gdb's paused runs, the interactive shell, the
harness self-test boots), with one kernel command line (append()) and one
time limit policy (timeout_for()). Guest streams the console of every
non-interactive run to its log and watches it as it comes, gdb runs
included, deciding how the run ended: finished, timed out, crashed (panic,
oops, BUG, WARN), finished with a problem report in its kernel log or an
error of its own ("@@ftlab error"), stopped (gdb ended), or QEMU gave up."""

import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import threading
import time

from . import interrupt, protocol, ui

QEMU = "qemu-system-x86_64"

# printk lines that always fail a run (a WARN with panic_on_warn=1 panics too).
# A data race that KCSAN reports ("BUG: KCSAN: ...") is neither: races.py
# grades those reports, which name the functions of both accesses.
CRASH_RE = re.compile(r"^(\[\s*\d+\.\d+\]\s*)?(Kernel panic - not syncing|Oops[:\s]|"
                      r"BUG: (?!KCSAN: )|"
                      r"WARNING: CPU: |WARNING: at |general protection fault|kernel BUG at|"
                      r"Unable to handle kernel|RIP: )")
DONE_LINE = "@@ftlab done"

# Reports the kernel writes to its log below the console's loglevel, so
# that only a scan of the whole log finds them: lockdep, RCU, KASAN,
# kmemleak, UBSAN, and WARNs or BUGs of a kernel not set to panic on them.
REPORT_RE = re.compile(r"^(\[\s*\d+\.\d+\]\s*)?(.*\bWARNING: |BUG: (?!KCSAN: )|kernel BUG at|Oops|"
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
# no_timer_check: the boot's test that the timer interrupt reaches the
# IO-APIC waits a fixed number of loops, which a busy host running TCG
# can miss; the kernel then panics ("IO-APIC + timer doesn't work!")
# before /init runs. QEMU's timer always works, so the test is skipped.
BASE_APPEND = ("console=ttyS0 nokaslr panic=-1 oops=panic panic_on_warn=1 "
               "panic_print=0x20 loglevel=4 no_timer_check rdinit=/init")
WARN_PANICS = " panic_on_warn=1"


def append(plan, kernel=None, warn_panics=True, trace=False):
    """The kernel command line of a guest that runs 'plan' (plan items, see
    initramfs/init) on 'kernel' (a kernels.KernelId), whose base name the
    guest's labs read to skip what upstream does differently.
    warn_panics: false for a kernel whose variant says so (a KCSAN kernel
    panics after its first race report when panic_on_warn is set;
    kernels.VARIANTS): its run goes on past a race, so that every race is
    listed, and a WARN still fails it, found in the kernel log at its end
    (REPORT_RE). trace: the guest saves each lab check's buffers to its
    second serial port (ftlab.trace=1, lib.sh)."""
    base = BASE_APPEND if warn_panics else BASE_APPEND.replace(WARN_PANICS, "")
    line = f"{base} ftlab={','.join(plan)}"
    if kernel is not None:
        line += " ftlab.kernel=" + kernel.base_name
    if trace:
        line += " ftlab.trace=1"
    return line


def kernel_log_reports(lines, context=25):
    """The problem reports in the kernel log that the guest printed at its
    end: each report line and the lines after it (its call trace), those
    of each part of the run (reports_by_check) one after the other."""
    found = []
    for part in reports_by_check(lines, context).values():
        found += (["    ..."] if found else []) + part
    return found


# The guest's marks in its kernel log (lib.sh kernel_log_mark, after
# printk's prefix): "ftlab-mark: check LAB ID" where a check begins, and
# "ftlab-mark: kmemleak" before kmemleak's list of leaks (lib.sh kernel_log).
MARK_RE = re.compile(r"ftlab-mark: (?:check (\S+) (\S+)|(\S+))\s*$")


def reports_by_check(lines, context=25):
    """The problem reports of the kernel log the guest printed at its end
    (kernel_log_reports), each charged to the mark before it: {(lab,
    check id): lines} for a check, {"kmemleak": lines} for the leaks the
    last scan found (their allocation's call trace says whose they are),
    {None: lines} for what came before any mark (the boot)."""
    inside, found, left, current = False, {}, 0, None
    for line in lines:
        if line.strip() in (LOG_BEGIN, LOG_END):
            inside = line.strip() == LOG_BEGIN
            continue
        if not inside:
            continue
        mark = MARK_RE.search(line)
        if mark:
            current = (mark.group(1), mark.group(2)) if mark.group(1) else mark.group(3)
            left = 0
            continue
        if REPORT_RE.search(line):
            if not left and found.get(current):
                found[current].append("    ...")
            left = context
        if left:
            found.setdefault(current, []).append(line)
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


# Time allowed for each long plan item, on top of the boot: upper limits,
# not durations. Measured on two cores: the conformance corpus takes 1 to
# 2 minutes on an idle machine (checkpoint 0, whose probes make ftrace call
# every function, the longest) and up to 10 minutes while kernels build
# beside it; the whole ftracetest suite 3 to 9 minutes.
# Under gdb ("gdb:NN", "gdb-selftest") gdb loads vmlinux and its scripts
# first, and stops the guest at each breakpoint: 2 more minutes, which
# keeps the 4 minutes these runs have always had. make bench's guest
# ("bench") took 173 s on checkpoint 7 once its glob table, whose probe on
# every function takes seconds to add and to remove, was there: 3 more
# minutes.
ITEM_TIME = {"ftracetest": 420, "conformance": 1200, "ftracetest-all": 1200, "docexamples": 300,
             "bench": 180,
             "gdb:": 120, "gdb-selftest": 120}


def item_time(item):
    """ITEM_TIME of a plan item; "gdb:" stands for every "gdb:NN"."""
    if item.startswith("gdb:"):
        item = "gdb:"
    return ITEM_TIME.get(item, 0)


def timeout_for(plan, user=None, slowdown=1):
    """The one time limit of every guest run, plain or under gdb: the
    user's TIMEOUT when given, else 2 minutes for the boot and the first
    lab, 30 s for each further lab, and ITEM_TIME for long items; times
    the kernel's slowdown (kernels.Variant.slowdown: a debug kernel's
    guests run several times slower)."""
    if user:
        return user
    labs = sum(1 for p in plan if p.startswith("lab:"))
    limit = 120 + 30 * max(0, labs - 1) + sum(item_time(p) for p in plan)
    return limit * slowdown


def command(bzimage, initrd, plan, kernel=None, gdb_port=None, interactive=False, smp=1,
            warn_panics=True, trace_file=None):
    """The one QEMU command line of every guest: a plan run (its console on
    stdout, which the harness streams to a log and watches), paused under a
    gdbstub at gdb_port, or an interactive shell on the terminal. Two vCPUs
    or more run on one host thread all the same (thread=single): ftrace's
    text patching can hang multi-threaded TCG. trace_file: a second serial
    port (the guest's ttyS1) written to that host file, where the guest's
    save-trace sends trace.dat files (traces.py)."""
    cmd = [QEMU, "-accel", "tcg,thread=single", "-m", "512", "-smp", str(smp),
           "-no-reboot", "-kernel", bzimage, "-initrd", initrd,
           "-append", append(plan, kernel, warn_panics, trace=bool(trace_file))]
    if interactive:
        cmd += ["-nographic"]
    else:
        cmd += ["-display", "none", "-monitor", "none", "-serial", "stdio"]
    if trace_file:
        if interactive:     # -nographic's own serial port, named, so that it stays the first
            cmd += ["-serial", "mon:stdio"]
        cmd += ["-serial", f"file:{trace_file}"]
    if gdb_port:
        cmd += ["-gdb", f"tcp::{gdb_port}", "-S"]
    return cmd


def guest_command(k, initrd, plan, gdb_port=None, interactive=False, trace_file=None):
    """command() for kernel k (a kbuild.Kernel): its bzImage, name, vCPUs
    and whether a WARN panics it (its variant's)."""
    return command(k.bzimage, initrd, plan, k.id, gdb_port=gdb_port,
                   interactive=interactive, smp=getattr(k, "smp", 1),
                   warn_panics=getattr(k, "warn_panics", True), trace_file=trace_file)


def interactive(k, initrd, plan, trace_file=None):
    """Boot k with the console on the terminal (make shell)."""
    cmd = guest_command(k, initrd, plan, interactive=True, trace_file=trace_file)
    ui.debug(" ".join(cmd))
    return subprocess.run(cmd).returncode


class Run:
    """The outcome of one boot."""

    def __init__(self, status, lines, log, seconds, problem=None):
        # "done", "timeout", "crash", "kernel-report", "guest-error", "exited",
        # "stopped" (a run under gdb that gdb ended)
        self.status = status
        self.lines = lines
        self.log = log
        self.seconds = seconds
        self.problem = problem or []
        self.reused = None      # when the run was made, if Reuse kept it

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


def times_path(log):
    """The console log with times: build/logs/X.log -> build/logs/X.times."""
    return os.path.splitext(log)[0] + ".times"


# Seconds without a console line after which a watched guest's run says
# what the guest is doing (and again after as many more).
QUIET = 30


def quiet_note(cmd, lines, seconds, log):
    """What a guest that has printed nothing for 'seconds' is running: its
    plan (the command line's ftlab=) and the last step it announced (its
    last "@@ftlab" line), or its last line."""
    plan = next((m.group(1) for m in map(re.compile(r"\bftlab=(\S+)").search, cmd) if m), "?")
    steps = [l.strip()[len("@@ftlab "):] for l in lines if l.strip().startswith("@@ftlab ")]
    last = steps[-1] if steps else (lines[-1].strip() if lines else "booting")
    return (f"guest quiet for {seconds:.0f} s, running {plan}; last step: {last[:100]} "
            f"(console: {os.path.relpath(log)})")


class Guest:
    """A running QEMU: its console (stdout) is copied line by line to 'log',
    flushed at once (gdb's ft-console reads it while the guest runs), and
    watched for crashes as it comes, whatever the kind of run."""

    def __init__(self, cmd, log, own_session=False):
        os.makedirs(os.path.dirname(log), exist_ok=True)
        self.log = log
        self.cmd = cmd
        self.start = time.monotonic()
        ui.debug(" ".join(cmd))
        if interrupt.requested():
            raise interrupt.Interrupted()
        # Under gdb, a session of its own: a Ctrl-C meant for gdb must not
        # stop QEMU (the harness stops it when gdb ends).
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=own_session)
        # Ctrl-C ends it from the main thread, whichever thread watches it
        self._on_interrupt = interrupt.register(self.proc.kill)
        self.lines = []
        self._queue = queue.Queue()
        self._eof = False
        self._logf = open(log, "w")
        # the same lines with the seconds since QEMU started, to see where
        # a long run spends its time (make bench, make check's parts)
        self._timesf = open(times_path(log), "w")
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n").replace("\r", "")
            self._logf.write(line + "\n")
            self._logf.flush()
            self._timesf.write(f"{time.monotonic() - self.start:8.2f} {line}\n")
            self._queue.put(line)
        self.proc.stdout.close()
        self._logf.close()
        self._timesf.close()
        self._queue.put(None)

    def watch(self, timeout, stop=None):
        """Follow the console until the guest says it is done, crashes (and
        has had 5 s to print its report), QEMU exits, 'timeout' seconds
        have passed since the start, or stop() (polled) returns true: then
        the status is "stopped". Stops QEMU; returns a Run."""
        try:
            return self._watch(timeout, stop)
        except BaseException:
            self.stop()
            raise

    def _watch(self, timeout, stop):
        problem, status = [], None
        crash_deadline = None
        in_log = False
        last_line = note_at = time.monotonic()
        while True:
            now = time.monotonic()
            if now - note_at >= QUIET:
                ui.info(quiet_note(self.cmd, self.lines, now - last_line, self.log))
                note_at = now
            limit = crash_deadline if crash_deadline else self.start + timeout
            wait = max(0.05, min(limit, note_at + QUIET) - now)
            if stop is not None:
                wait = min(wait, 0.2)
            try:
                line = self._next(wait)
                last_line = note_at = time.monotonic()
            except queue.Empty:
                if stop is not None and not crash_deadline and stop():
                    status = status or "stopped"
                    break
                if time.monotonic() >= limit:
                    status = status or "timeout"
                    break
                continue
            if line is None:
                break
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
        self.stop()
        lines = self.lines
        if status is None:
            status = "exited"
        if status == "crash":
            problem = crash_excerpt(lines) or problem
        elif status in ("done", "stopped"):
            ended, problem = finished_status(lines)
            if ended != "done":
                status = ended
        return Run(status, lines, self.log, time.monotonic() - self.start, problem)

    def _next(self, wait):
        """The next console line (None at its end); queue.Empty after 'wait' s."""
        if self._eof:
            return None
        line = self._queue.get(timeout=wait)
        if line is None:
            self._eof = True
        else:
            self.lines.append(line)
        return line

    def stop(self):
        """Stop QEMU and keep what it printed up to then."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        interrupt.unregister(self._on_interrupt)
        deadline = time.monotonic() + 2
        while not self._eof and time.monotonic() < deadline:
            try:
                self._next(0.1)
            except queue.Empty:
                pass


def run(cmd, log, timeout, reuse=False):
    """Run a QEMU command line to its end, the log going to 'log'. With
    reuse (make check, unless FRESH=1), a run that went to its end with
    this very command line, kernel and initramfs is not run again: its log
    is graded again instead (Reuse)."""
    reused = Reuse(cmd, log).load() if reuse else None
    if reused is not None:
        return reused
    r = Guest(cmd, log).watch(timeout)
    if reuse:
        Reuse(cmd, log).store(r)
    return r


def boot(k, initrd, plan, log, timeout, reuse=False, trace_file=None):
    """Boot kernel k (a kbuild.Kernel) with a plan; returns a Run."""
    return run(guest_command(k, initrd, plan, trace_file=trace_file), log, timeout, reuse)


class Reuse:
    """A guest run's result kept for the next make check, as a build keeps
    an object file: what the run depends on is its QEMU command line, with
    each file it names (QEMU itself, the bzImage, the initramfs) taken by
    the SHA-256 of its content. When a run with the same key went to its
    end ("done") and its log is as it was written, the next make check
    grades that log again instead of booting: a warm make check boots only
    what changed. A run that failed is never kept, so it always runs again.
    The key sits beside the log, in build/logs/NAME.reuse."""

    _digests = {}               # (path, size, mtime) -> hex digest
    _lock = threading.Lock()
    count = 0                   # runs reused in this process

    def __init__(self, cmd, log):
        self.cmd, self.log = cmd, log
        self.path = os.path.splitext(log)[0] + ".reuse"

    @classmethod
    def file_digest(cls, path):
        st = os.stat(path)
        with cls._lock:
            known = cls._digests.get((path, st.st_size, st.st_mtime_ns))
        if known:
            return known
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        with cls._lock:
            cls._digests[(path, st.st_size, st.st_mtime_ns)] = h.hexdigest()
        return h.hexdigest()

    def key(self):
        h = hashlib.sha256()
        for i, arg in enumerate(self.cmd):
            path = (shutil.which(arg) or arg) if i == 0 else arg
            if os.path.isfile(path):
                h.update(b"file " + self.file_digest(path).encode())
            else:
                h.update(b"arg " + arg.encode())
            h.update(b"\0")
        return h.hexdigest()

    def store(self, r):
        if os.path.exists(self.path):
            os.unlink(self.path)
        if not r.ok:
            return
        record = {"key": self.key(), "log": self.file_digest(self.log),
                  "seconds": round(r.seconds, 1), "when": time.strftime("%Y-%m-%d %H:%M")}
        with open(self.path, "w") as f:
            json.dump(record, f)

    def load(self):
        """The kept Run, or None when it must run again."""
        try:
            with open(self.path) as f:
                record = json.load(f)
            if record["key"] != self.key() or record["log"] != self.file_digest(self.log):
                return None
            with open(self.log, errors="replace") as f:
                lines = f.read().splitlines()
        except (OSError, ValueError, KeyError):
            return None
        if DONE_LINE not in (l.strip() for l in lines) or finished_status(lines)[0] != "done":
            return None
        r = Run("done", lines, self.log, record["seconds"])
        r.reused = record["when"]
        with Reuse._lock:
            Reuse.count += 1
        ui.step(f"reusing {os.path.relpath(self.log)} (run {record['when']}): "
                "the same kernel, initramfs and plan; FRESH=1 boots it again")
        return r
