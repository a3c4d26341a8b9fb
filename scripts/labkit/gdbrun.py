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
lab's end, since labs may call sync themselves), and everything gdb
printed since the lab script was loaded must be the lab's gdb.expected,
line for line (grade.gdb_region). QEMU is started by qemu.Guest, as every
guest is: its console goes to a log (which ft-console reads) and is
watched for crashes while gdb runs.
"""

import os
import signal
import subprocess
import time

from . import grade, qemu, series, ui
from .errors import HarnessError

HELPERS = [os.path.join(series.ROOT, "gdb-scripts", name)
           for name in ("ftrace_labs.py", "lab_requests.py")]


SELFTEST_PLAN = "gdb-selftest"


def lab_plan(cp, only=None):
    """The plan item that runs lab cp (only its check 'only') under gdb
    (initramfs/init)."""
    return f"gdb:{cp.number:02d}" + (f":{only}" if only else "")


def lab_gdb_script(cp):
    return os.path.join(cp.lab_dir, "lab.gdb")


def gdb_command(kernel, cp, port, batch=False, script=None):
    """gdb on kernel's vmlinux, attached to the gdbstub at port, with our
    helpers and the lab's gdb script (or another 'script'). In batch mode
    the run goes on to the guest's final sync. Without a port, no guest:
    gdb only loads the script against vmlinux (offline_region)."""
    tree_gdb = os.path.join(os.path.dirname(os.path.realpath(
        os.path.join(kernel.obj, "vmlinux-gdb.py"))))
    cmd = ["gdb", "-q", "-nx",
           "-iex", f"add-auto-load-safe-path {kernel.obj}",
           "-iex", f"add-auto-load-safe-path {tree_gdb}",
           "-iex", "set pagination off",
           "-iex", "set confirm off",
           # vmlinux has all its debug info: no asking to download any
           "-iex", "set debuginfod enabled off",
           "-ex", f"set $ft_batch = {1 if batch else 0}"]
    if port:
        cmd += ["-ex", f"target remote :{port}"]
    for helper in HELPERS:
        cmd += ["-x", helper]
    # gdb runs -x and -ex in their order: what follows is the lab's (graded)
    cmd += ["-ex", f"echo {grade.GDB_BEGIN}\\n"]
    if script:
        cmd += ["-x", script]
    elif os.path.exists(lab_gdb_script(cp)):
        cmd += ["-x", lab_gdb_script(cp)]
    if batch:
        cmd = cmd[:1] + ["-batch"] + cmd[1:]
    if batch and port and not script:
        cmd += ["-ex", "break ksys_sync if $_ft_lab_finished()", "-ex", "continue"]
    cmd.append(kernel.vmlinux)
    return cmd


class GdbPortError(HarnessError):
    """QEMU could not open its gdbstub port."""


def start_guest(kernel, initrd, port, log, plan, trace_file=None):
    """QEMU paused under a gdbstub at port, its console streamed to log
    (qemu.Guest: one launcher, one crash detector for every run), once
    it listens there (wait_for_stub). trace_file: as qemu.command's."""
    guest = qemu.Guest(qemu.guest_command(kernel, initrd, [plan], gdb_port=port,
                                          trace_file=trace_file), log,
                       own_session=True)
    wait_for_stub(guest, port)
    return guest


def listens(pid, port):
    """Does process pid listen on TCP port? The listening sockets on the
    port (/proc/net/tcp and tcp6, state 0A), one of them among pid's open
    files. Whether some process listens there is not enough: gdb must not
    attach to another user's guest."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = [line.split() for line in f.readlines()[1:]]
        except OSError:
            continue
        inodes |= {row[9] for row in rows
                   if row[3] == "0A" and int(row[1].rsplit(":", 1)[1], 16) == port}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and link[len("socket:["):-1] in inodes:
            return True
    return False


def wait_for_stub(guest, port, limit=60):
    """Wait until the guest's QEMU listens on its gdb port. When it cannot
    bind it (another guest has it), QEMU exits: say so, with its words,
    instead of attaching gdb to whatever listens there."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and guest.proc.poll() is None:
        if listens(guest.proc.pid, port):
            return
        time.sleep(0.1)
    guest.stop()
    said = [line for line in guest.lines if line.strip()][-3:]
    raise GdbPortError(f"QEMU could not open gdb port {port}"
                       + (f": {' / '.join(said)}" if said else "")
                       + ". Another guest may hold it: leave GDB_PORT out (a free port is "
                       "taken) or pick another.")


def interactive(kernel, initrd, cp, port, log):
    guest = start_guest(kernel, initrd, port, log, lab_plan(cp))
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
        run = guest.watch(float("inf"), stop=lambda: True)
    if run.status in ("crash", "kernel-report", "guest-error"):
        ui.block(run.explain())


class BatchRun:
    """What an unattended gdb run left: gdb's output (addresses normalised),
    the guest's run (qemu.Run: its console and how it ended), and whether
    the run broke (crash, time-out, a report in the kernel log, or an error
    the guest reported)."""

    def __init__(self, gdb_lines, guest, timeout, gdb_log):
        self.gdb_lines = gdb_lines
        self.guest = guest
        self.console = guest.lines
        self.timeout = timeout
        self.log, self.gdb_log = guest.log, gdb_log

    @property
    def broken(self):
        return self.guest.status in ("timeout", "crash", "kernel-report", "guest-error")

    def problems(self):
        status, problem = self.guest.status, self.guest.problem
        if status == "timeout":
            return [f"gdb did not finish in {self.timeout} s"]
        if status == "crash":
            return (["the guest crashed (panic, oops, BUG or WARN):"]
                    + ["    " + l for l in problem[:25]])
        if status == "kernel-report":
            return (["the guest's kernel log has a problem report:"]
                    + ["    " + l for l in problem[:25]])
        if status == "guest-error":
            return ["the guest reported an error:"] + ["    " + l for l in problem]
        return []

    @property
    def ok(self):
        """As qemu.Run's: for traces.grade_files."""
        return not self.broken

    def explain(self):
        return self.problems()

    def where(self):
        return f"gdb log: {os.path.relpath(self.gdb_log)}; console: {os.path.relpath(self.log)}"


def lab_tag(kernel_name, number):
    """The name of a lab's gdb run on a kernel, in its logs' names."""
    return f"{kernel_name}-lab{number:02d}"


def log_path(logdir, tag, kind):
    """build/logs/gdb-TAG.KIND.log: kind console (the guest's), gdb or
    offline (the script loaded against vmlinux without a guest)."""
    return os.path.join(logdir, f"gdb-{tag}.{kind}.log")


def batch_run(kernel, initrd, cp, port, logdir, tag, timeout_for, script=None, plan=None,
              trace_file=None):
    """Boot kernel paused, run gdb in batch mode against it (the lab's gdb
    script, or 'script'), then stop the guest. Logs are named after tag.
    timeout_for(plan) gives the time limit, as for every guest run
    (labrun.Session.timeout_for: the user's TIMEOUT, else the default).
    The guest's console is watched while gdb runs: a crash ends both."""
    plan = plan or lab_plan(cp)
    timeout = timeout_for([plan])
    log, gdb_log = log_path(logdir, tag, "console"), log_path(logdir, tag, "gdb")
    guest = start_guest(kernel, initrd, port, log, plan, trace_file)
    gdb = None
    try:
        env = dict(os.environ, FTLAB_CONSOLE_LOG=log)
        with open(gdb_log, "w") as out:
            gdb = subprocess.Popen(gdb_command(kernel, cp, port, batch=True, script=script),
                                   env=env, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT)
            run = guest.watch(timeout, stop=lambda: gdb.poll() is not None)
    finally:
        if gdb is not None and gdb.poll() is None:
            gdb.kill()
        if gdb is not None:
            gdb.wait()
        guest.stop()
    with open(gdb_log, errors="replace") as f:
        gdb_lines = grade.normalise_gdb(f.readlines())
    return BatchRun(gdb_lines, run, timeout, gdb_log)


def unattended(kernel, initrd, cp, port, logdir, timeout_for, plan=None, trace_file=None):
    """Run the lab's gdb script in batch mode. Returns (ok, evidence, run):
    ok when what gdb printed while the guest ran is the lab's gdb.expected
    (grade.gdb_region), the guest reached the lab's end and nothing broke.
    run.console is what the guest printed (a "# flags: gdb" lab is graded
    from it)."""
    run = batch_run(kernel, initrd, cp, port, logdir, lab_tag(kernel.name, cp.number),
                    timeout_for, plan=plan, trace_file=trace_file)
    evidence = run.problems()
    evidence += grade_gdb_lab(cp, run.gdb_lines)
    if evidence:
        evidence.append(run.where())
    return not evidence, evidence, run


def grade_gdb_lab(cp, gdb_lines):
    """The differences between gdb's output and the lab's gdb.expected."""
    evidence = []
    want = grade.load_expected(cp.lab_dir, "gdb.expected", marker=None)
    differences = grade.compare(want, grade.gdb_region(gdb_lines))
    if differences:
        evidence.append("gdb's output differs from gdb.expected:")
        evidence += ["    " + l for l in differences[:40]]
    if not grade.gdb_reached_end(gdb_lines):
        evidence.append("the guest never reached the end of the lab under gdb")
    return evidence


# --- the lab's gdb script on the checkpoint before its own ---------------------
#
# A lab's gdb script must fail there for its own reason, and labs/NN-*/
# gdb.before records how: gdb's output (grade.gdb_region) up to its first
# difference from gdb.expected. The cheap way first: gdb loads the script
# against the previous checkpoint's vmlinux, no guest; when the
# breakpoint functions or types the checkpoint adds are missing, that
# shows at once (seconds). Only when it does not is the guest booted
# under gdb, as on the lab's own checkpoint.

GDB_BEFORE = "gdb.before"


def offline_region(kernel, cp, logdir):
    """What the lab's gdb script prints when loaded against kernel's
    vmlinux without a guest."""
    log = log_path(logdir, lab_tag(kernel.name, cp.number), "offline")
    with open(log, "w") as out:
        subprocess.run(gdb_command(kernel, cp, None, batch=True), stdin=subprocess.DEVNULL,
                       stdout=out, stderr=subprocess.STDOUT, timeout=300)
    with open(log, errors="replace") as f:
        return grade.gdb_region(f.read().splitlines()), log


def fails_before(cp, region):
    """(record, shows_failure): region up to its first difference from
    gdb.expected, and whether it differs before it runs out."""
    want = grade.load_expected(cp.lab_dir, "gdb.expected", marker=None)
    record = grade.before_record(want, region)
    if record[-1].endswith("Error in sourced command file:") and len(region) > len(record):
        record.append(region[len(record)])      # the error itself
    return record, record[-1:] != [grade.OUTPUT_ENDS] and not grade.same(want, region)


def grade_before(cp, record, how):
    """Evidence ([] when fine) that the lab's gdb script failed on the
    previous checkpoint as labs/NN-*/gdb.before records."""
    recorded = grade.load_expected(cp.lab_dir, GDB_BEFORE, marker=None)
    where = os.path.relpath(os.path.join(cp.lab_dir, GDB_BEFORE), series.ROOT)
    if not recorded:
        return [f"{where} is missing; {how}, gdb printed up to its first difference:"] + [
            "    " + l for l in record]
    differences = grade.compare(recorded, record)
    if differences:
        return [f"{how}, gdb's output differs from {where}:"] + [
            "    " + l for l in differences]
    return []


def previous_checkpoint(kernel, initrd, cp, logdir, timeout_for, booted=None):
    """Lab cp's gdb script on kernel (checkpoint cp.number - 1). Returns
    (ok, evidence, record, how): record is gdb's output up to its first
    difference. 'booted': the BatchRun of a run under gdb already made
    on kernel (a "# flags: gdb" lab always boots under gdb)."""
    if booted is not None:
        region, log = grade.gdb_region(booted.gdb_lines), booted.gdb_log
        how = "under gdb on a booted guest"
    else:
        region, log = offline_region(kernel, cp, logdir)
        how = "loaded against vmlinux, no guest"
    record, failed = fails_before(cp, region)
    if not failed and booted is None:
        how = "under gdb on a booted guest"
        run = batch_run(kernel, initrd, cp, free_port(), logdir,
                        lab_tag(kernel.name, cp.number), timeout_for)
        record, failed = fails_before(cp, grade.gdb_region(run.gdb_lines))
        log = run.gdb_log
    evidence = grade_before(cp, record, how)
    if not failed:
        evidence.append("gdb's output is what the lab's checkpoint gives: the script "
                        "detects nothing")
    if evidence:
        evidence.append(f"gdb log: {os.path.relpath(log)}")
    return not evidence, evidence, record, how


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SELFTEST = os.path.join(series.ROOT, "gdb-scripts", "selftest")


def selftest(kernel, initrd, port, logdir, timeout_for, want=None):
    """Every helper on a guest where each structure it reads exists:
    gdb-scripts/selftest/guest.sh sets up probes, triggers, a clock; then
    selftest.gdb runs the helpers and their output is compared, command by
    command, with gdb-scripts/selftest/expected (grade.normalise_gdb), or
    with 'want', the sections of another kernel's run (selftest_sections).
    Returns (ok, evidence)."""
    run = selftest_run(kernel, initrd, port, logdir, timeout_for)
    return grade_selftest(run.gdb_lines, run.problems(), run.where(), want)


def selftest_run(kernel, initrd, port, logdir, timeout_for):
    return batch_run(kernel, initrd, None, port, logdir, f"selftest-{kernel.name}", timeout_for,
                     script=os.path.join(SELFTEST, "selftest.gdb"), plan=SELFTEST_PLAN)


def selftest_sections(gdb_lines):
    """A self-test run's output, command by command, normalised."""
    return grade.parse_sections(grade.normalise_gdb(gdb_lines), grade.SELFTEST_SECTION)


def grade_selftest(gdb_lines, evidence, where, want=None):
    got = selftest_sections(gdb_lines)
    if want is None:
        want = grade.load_expected(SELFTEST, "expected", grade.SELFTEST_SECTION)
    want = dict(want)
    got.pop("end", None)
    want.pop("end", None)
    evidence = list(evidence)
    # A Python traceback anywhere, even before the first section: a gdb
    # script (the kernel's, loading, or ours) stopped half way.
    first = next((i for i, l in enumerate(gdb_lines) if l.startswith("Traceback (")), None)
    if first is not None:
        evidence += (["gdb printed a Python traceback (a gdb script stopped half way):"]
                     + ["    " + l for l in gdb_lines[first:first + 8]])
    for command, lines in want.items():
        have = got.get(command)
        if have is None:
            evidence.append(f"{command}: no output (did gdb reach the end?)")
            continue
        differences = grade.compare(lines, have)
        if differences:
            evidence += [f"{command}:"] + ["    " + l for l in differences]
    if evidence:
        evidence.append(where)
    return not evidence, evidence
