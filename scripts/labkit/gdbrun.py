"""gdb on the QEMU gdbstub: "make gdb N" (interactive) and the unattended
gdb checks of "make check".

Either way QEMU starts paused (-S) with a gdbstub, and gdb loads vmlinux,
the kernel's own lx- scripts (vmlinux-gdb.py, made by "make scripts_gdb"),
our helpers (gdb-scripts/ftrace_labs.py) and the lab's gdb script, which
sets its breakpoints. The guest runs the lab script once gdb resumes it.

A lab's gdb script serves both ways: breakpoint commands end with
    if $ft_batch
      continue
    end
so that the unattended run goes on where a learner gets a prompt. The
guest runs "sync" when the lab script is done; the unattended run stops
there (a breakpoint on ksys_sync, conditional on the console showing the
lab's end, since labs may call sync themselves) and its output is checked against the
lab's gdb.expected: lines that must appear, in that order.
"""

import difflib
import os
import re
import signal
import subprocess
import time

from . import protocol, qemu, series, ui

HELPERS = [os.path.join(series.ROOT, "gdb-scripts", name)
           for name in ("ftrace_labs.py", "lab_requests.py")]
_ADDR = re.compile(r"0x[0-9a-f]{8,16}")
_END = re.compile(r"Breakpoint \d+, .*ksys_sync")


SELFTEST_PLAN = "gdb-selftest"


def lab_plan(cp):
    """The plan item that runs lab cp under gdb (initramfs/init)."""
    return f"gdb:{cp.number:02d}"


def lab_gdb_script(cp):
    return os.path.join(cp.lab_dir, "lab.gdb")


def gdb_command(kernel, cp, port, batch=False, script=None):
    """gdb on kernel's vmlinux, attached to the gdbstub at port, with our
    helpers and the lab's gdb script (or another 'script'). In batch mode
    the run goes on to the guest's final sync."""
    tree_gdb = os.path.join(os.path.dirname(os.path.realpath(
        os.path.join(kernel.obj, "vmlinux-gdb.py"))))
    cmd = ["gdb", "-q", "-nx",
           "-iex", f"add-auto-load-safe-path {kernel.obj}",
           "-iex", f"add-auto-load-safe-path {tree_gdb}",
           "-iex", "set pagination off",
           "-iex", "set confirm off",
           # vmlinux has all its debug info: no asking to download any
           "-iex", "set debuginfod enabled off",
           "-ex", f"set $ft_batch = {1 if batch else 0}",
           "-ex", f"target remote :{port}"]
    for helper in HELPERS:
        cmd += ["-x", helper]
    if script:
        cmd += ["-x", script]
    elif os.path.exists(lab_gdb_script(cp)):
        cmd += ["-x", lab_gdb_script(cp)]
    if batch:
        cmd = cmd[:1] + ["-batch"] + cmd[1:]
    if batch and not script:
        cmd += ["-ex", "break ksys_sync if $_ft_lab_finished()", "-ex", "continue"]
    cmd.append(kernel.vmlinux)
    return cmd


def start_guest(kernel, initrd, cp, port, log, plan=None):
    append = qemu.append([plan or lab_plan(cp)], kernel.kernel)
    cmd = qemu.command(kernel.bzimage, initrd, append, gdb_port=port, paused=True)
    cmd = [c if c != "stdio" else f"file:{log}" for c in cmd]
    os.makedirs(os.path.dirname(log), exist_ok=True)
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)


def interactive(kernel, initrd, cp, port, log):
    guest = start_guest(kernel, initrd, cp, port, log)
    ui.step(f"checkpoint {cp.number} is paused before boot; gdb attaches on port {port}")
    ui.info(f"guest console: {os.path.relpath(log)} (ft-console shows its tail)")
    ui.info("gdb: 'continue' boots the guest and runs the lab; Ctrl-C stops it; "
            "'help ft' lists our commands; 'quit' ends the session")
    try:
        # gdb owns the terminal; the guest must not see the user's Ctrl-C.
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            env = dict(os.environ, FTLAB_CONSOLE_LOG=log)
            subprocess.run(gdb_command(kernel, cp, port), env=env,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        finally:
            signal.signal(signal.SIGINT, old)
    finally:
        guest.kill()
        guest.wait()


def normalise(lines):
    return [_ADDR.sub("ADDR", l.rstrip()) for l in lines]


def missing_in_order(want, got):
    """The expected lines not found in 'got' in order (a subsequence match)."""
    it = iter(got)
    missing = []
    for line in want:
        for g in it:
            if g == line:
                break
        else:
            missing.append(line)
            it = iter([])
    return missing


def load_expected(cp):
    path = os.path.join(cp.lab_dir, "gdb.expected")
    with open(path, encoding="utf-8") as f:
        return [l.rstrip() for l in f if l.strip() and not l.startswith("#")]


class BatchRun:
    """What an unattended gdb run left: gdb's output (addresses normalised),
    the guest's console, and whether the run broke (crash, time-out, a
    report in the kernel log, or an error the guest reported)."""

    def __init__(self, gdb_lines, console, timed_out, timeout, log, gdb_log):
        self.gdb_lines = gdb_lines
        self.console = console
        self.crash = qemu.crash_excerpt(console)
        self.reports = qemu.kernel_log_reports(console)
        self.errors = protocol.parse(console).errors
        self.timed_out = timed_out
        self.timeout = timeout
        self.log, self.gdb_log = log, gdb_log

    @property
    def broken(self):
        return self.timed_out or bool(self.crash) or bool(self.reports) or bool(self.errors)

    def problems(self):
        found = []
        if self.timed_out:
            found.append(f"gdb did not finish in {self.timeout} s")
        if self.crash:
            found.append("the guest crashed (panic, oops, BUG or WARN):")
            found += ["    " + l for l in self.crash[:25]]
        if self.reports:
            found.append("the guest's kernel log has a problem report:")
            found += ["    " + l for l in self.reports[:25]]
        if self.errors:
            found.append("the guest reported an error:")
            found += ["    " + l for l in self.errors]
        return found

    def where(self):
        return f"gdb log: {os.path.relpath(self.gdb_log)}; console: {os.path.relpath(self.log)}"


def batch_run(kernel, initrd, cp, port, logdir, tag, timeout_for, script=None, plan=None):
    """Boot kernel paused, run gdb in batch mode against it (the lab's gdb
    script, or 'script'), then stop the guest. Logs are named after tag.
    timeout_for(plan) gives the time limit, as for every guest run
    (labrun.Session.timeout_for: the user's TIMEOUT, else the default)."""
    plan = plan or lab_plan(cp)
    timeout = timeout_for([plan])
    log = os.path.join(logdir, f"gdb-{tag}.console.log")
    gdb_log = os.path.join(logdir, f"gdb-{tag}.gdb.log")
    guest = start_guest(kernel, initrd, cp, port, log, plan=plan)
    timed_out = False
    try:
        time.sleep(0.5)
        env = dict(os.environ, FTLAB_CONSOLE_LOG=log)
        with open(gdb_log, "w") as out:
            try:
                subprocess.run(gdb_command(kernel, cp, port, batch=True, script=script),
                               env=env, stdin=subprocess.DEVNULL, stdout=out,
                               stderr=subprocess.STDOUT, timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        guest.kill()
        guest.wait()
    with open(gdb_log, errors="replace") as f:
        gdb_lines = normalise(f.readlines())
    with open(log, errors="replace") as f:
        console = [l.rstrip() for l in f]
    return BatchRun(gdb_lines, console, timed_out, timeout, log, gdb_log)


def unattended(kernel, initrd, cp, port, logdir, timeout_for):
    """Run the lab's gdb script in batch mode. Returns (ok, evidence, run):
    ok when the lines of the lab's gdb.expected came, in order, the guest
    reached the lab's end and nothing broke. run.console is what the guest
    printed (a "# flags: gdb" lab is graded from it)."""
    run = batch_run(kernel, initrd, cp, port, logdir, f"{kernel.name}-lab{cp.number:02d}",
                    timeout_for)
    evidence = run.problems()
    missing = missing_in_order(load_expected(cp), run.gdb_lines)
    if missing:
        evidence.append("expected gdb output lines missing (in this order):")
        evidence += ["    " + l for l in missing[:15]]
    if not any(_END.search(l) for l in run.gdb_lines):
        evidence.append("the guest never reached the end of the lab under gdb")
    if evidence:
        evidence.append(run.where())
    return not evidence, evidence, run


SELFTEST = os.path.join(series.ROOT, "gdb-scripts", "selftest")


def selftest_sections(lines):
    """{command: [output lines]} from the '@@selftest COMMAND' markers."""
    sections, current = {}, None
    for line in lines:
        if line.startswith("@@selftest "):
            current = line.split(None, 1)[1].strip()
            sections[current] = []
        elif current is not None:
            sections[current].append(line.rstrip())
    sections.pop("end", None)
    return sections


def selftest(kernel, initrd, port, logdir, timeout_for):
    """Every helper on a guest where each structure it reads exists:
    gdb-scripts/selftest/guest.sh sets up probes, triggers, a clock; then
    selftest.gdb runs the helpers and their output is compared, command by
    command, with gdb-scripts/selftest/expected (addresses normalised).
    Returns (ok, evidence)."""
    run = batch_run(kernel, initrd, None, port, logdir, f"selftest-{kernel.name}", timeout_for,
                    script=os.path.join(SELFTEST, "selftest.gdb"), plan=SELFTEST_PLAN)
    got = selftest_sections(run.gdb_lines)
    with open(os.path.join(SELFTEST, "expected"), encoding="utf-8") as f:
        want = selftest_sections([l.rstrip("\n") for l in f if not l.startswith("#")])
    evidence = run.problems()
    for command, lines in want.items():
        have = got.get(command)
        if have is None:
            evidence.append(f"{command}: no output (did gdb reach the end?)")
        elif have != lines:
            evidence += [f"{command}:"] + ["    " + l for l in difflib.unified_diff(
                lines, have, "expected", "got", lineterm="", n=1)]
    if evidence:
        evidence.append(run.where())
    return not evidence, evidence
