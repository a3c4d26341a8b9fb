"""The labs' traces in trace-cmd's format: make lab N TRACE=1 and make
shell N TRACE=1.

The guest gets Debian's own trace-cmd (the host's /usr/bin/trace-cmd and
the libraries ldd names, at the same paths) and initramfs/save-trace, in
a second cpio archive (initramfs.appended), and a second serial port,
ttyS1, which QEMU writes to a host file (build/traces/NAME.serial). After
each check of a lab, the guest's lib.sh runs "save-trace LAB-CHECK":
trace-cmd extract turns the buffers the check left (the top-level one and
every instance's) into a trace.dat, sent framed and in base64 on ttyS1;
the host checks each file's size and SHA-256 and writes it to
build/traces/labNN-KERNEL/LAB-CHECK.dat. One file per check, because every
check starts from empty buffers (lib.sh reset_tracing). Beside the
check's own buffers, the file holds the lab's notes (lib.sh note: what
it read in an enable file, in the buffer of instance ftlab-notes), and
a snapshot buffer that holds events comes as LAB-CHECK.snapshot.dat. A lab that
runs under gdb (lab 02) saves its traces the same way.

On the host, "trace-cmd report -i FILE" reads it. make check proves it
on the last checkpoint with labs 04, 05 and 06 (FACTS, grade_snapshot):
what trace-cmd report shows is what the checks counted or read in the
guest; and with lab 02 under gdb (grade_soft_mode).
"""

import base64
import binascii
import functools
import hashlib
import os
import re
import shutil
import subprocess

from . import initramfs, protocol, qemu, series, ui

PACKAGES = ("trace-cmd",)
TRACE_CMD = "/usr/bin/trace-cmd"
SAVE_TRACE = os.path.join(series.ROOT, "initramfs", "save-trace")
FILE_RE = re.compile(r"^@@file ([A-Za-z0-9._-]+) (\d+) ([0-9a-f]{64})$")

# What make check compares: (lab, check, a line of the check's console
# output that gives a count, the trace-cmd report lines that count it).
# kernel_stack is the stack-trace entry; kmalloc the kmem event.
STACK = re.compile(r"\bkernel_stack:")
KMALLOC = re.compile(r"\bkmalloc:")
FACTS = [
    ("04", "first-frame", re.compile(r"^stack trace entries: (\d+)$"), STACK),
    ("04", "count", re.compile(r"^stack trace entries: (\d+)$"), STACK),
    ("06", "stacktrace", re.compile(r"^stack traces in the buffer: (\d+)$"), STACK),
]
# And a check whose buffer must hold kmalloc events (lab 06's first
# check: kmalloc, enabled by the trigger at the first read(), records).
KMALLOC_CHECK = ("06", "article")
# A check whose marks went into the snapshot buffer and the live one: the
# files must hold what the guest listed under "-- snapshot:" and "-- trace:".
SNAPSHOT_CHECK = ("05", "swap")
PLAN_LABS = (4, 5, 6)


def guest_files(binary=TRACE_CMD):
    """{path in the guest: host file}: trace-cmd, the libraries it links
    (at the paths ldd gives, which the guest's loader searches too), and
    save-trace."""
    r = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if r.returncode != 0:
        raise OSError(f"ldd {binary} failed: {r.stderr.strip()}")
    files = {binary.lstrip("/"): binary, "usr/bin/save-trace": SAVE_TRACE}
    for line in r.stdout.splitlines():
        m = re.search(r"(/\S+) \(0x[0-9a-f]+\)$", line.strip())
        if m:
            files[m.group(1).lstrip("/")] = os.path.realpath(m.group(1))
    return files


def decode(text):
    """({name: bytes}, problems) from what the guest wrote to ttyS1."""
    files, problems, current = {}, [], None
    for raw in text.splitlines():
        line = raw.strip("\r")
        if current is None:
            m = FILE_RE.match(line)
            if m:
                current = (m.group(1), int(m.group(2)), m.group(3), [])
            elif line.strip():
                problems.append(f"a line outside any file: {line[:60]!r}")
            continue
        name, size, digest, parts = current
        if line != f"@@end {name}":
            parts.append(line)
            continue
        current = None
        try:
            data = base64.b64decode("".join(parts), validate=True)
        except (binascii.Error, ValueError):
            problems.append(f"{name}: not base64")
            continue
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            problems.append(f"{name}: {len(data)} bytes arrived, {size} sent, "
                            "or their SHA-256 differs")
            continue
        files[name] = data
    if current is not None:
        problems.append(f"{current[0]}: cut short")
    return files, problems


def tag(lab, kernel_name):
    """The name of a lab run's traces: labNN-KERNEL (lab: "06")."""
    return f"lab{lab}-{kernel_name}"


def folder(build_dir, tag):
    return os.path.join(build_dir, "traces", tag)


def serial_file(build_dir, tag):
    """The host file QEMU writes the guest's ttyS1 to (emptied first)."""
    path = os.path.join(build_dir, "traces", f"{tag}.serial")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def store(build_dir, tag, serial):
    """Decode 'serial' into build/traces/TAG/NAME.dat (the folder emptied
    first); returns ({name: path}, problems)."""
    try:
        with open(serial, errors="replace") as f:
            files, problems = decode(f.read())
    except OSError as e:
        return {}, [f"no trace came: {e}"]
    dest = folder(build_dir, tag)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    paths = {}
    for name, data in files.items():
        paths[name] = os.path.join(dest, f"{name}.dat")
        with open(paths[name], "wb") as f:
            f.write(data)
    return paths, problems


def report(path):
    """trace-cmd report of one file: (text, error or None). Kept per file
    and version: make check reads each file for its verdicts, its counts
    and its report page."""
    try:
        st = os.stat(path)
    except OSError as e:
        return "", str(e)
    return _report(path, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=256)
def _report(path, _mtime, _size):
    r = subprocess.run(["trace-cmd", "report", "-i", path], capture_output=True, text=True)
    if r.returncode != 0:
        return r.stdout, (r.stderr.strip() or f"exit status {r.returncode}")
    return r.stdout, None


def boot(session, k, plan, tag, reuse=False):
    """Boot k with plan and TRACE on: trace-cmd in the guest, ttyS1 to
    build/traces/TAG.serial, decoded into build/traces/TAG/. Returns
    (qemu.Run, protocol report, {name: path}, problems). reuse: make
    check's qemu.Reuse, when the serial file of the kept run is there."""
    initrd = initramfs.appended(session, "trace", guest_files())
    serial = serial_file(session.build_dir, tag)
    log = os.path.join(session.logs, f"{tag}.log")
    ui.step(f"booting {k.label} in QEMU with trace-cmd: {', '.join(plan)} "
            f"(console: {os.path.relpath(log)})")
    run = qemu.boot(k, initrd, plan, log, session.timeout_for(plan, k),
                    reuse and os.path.exists(serial), trace_file=serial)
    paths, problems = store(session.build_dir, tag, serial)
    return run, protocol.parse(run.lines), paths, problems


def check_names(lab_report):
    """The trace.dat names the checks of a run give: LAB-CHECK."""
    return [f"{lab}-{c.id}" for lab in sorted(lab_report.labs)
            for c in lab_report.labs[lab].checks]


def grade_files(run, lab_report, paths, problems, label, tally):
    """One verdict: every check that ran sent an intact trace.dat, and
    trace-cmd report reads each."""
    wanted = check_names(lab_report)
    missing = [w for w in wanted if w not in paths]
    unread = {n: e for n, e in ((n, report(p)[1]) for n, p in sorted(paths.items())) if e}
    ok = run.ok and bool(wanted) and not missing and not problems and not unread
    where = os.path.relpath(os.path.dirname(next(iter(paths.values())))) if paths else ""
    tally.record(ok, f"{label}: each check's buffers came to the host as a trace.dat "
                 "that trace-cmd report reads", f"({len(paths)} files in {where})")
    if not ok:
        ui.block((run.explain() if not run.ok else [])
                 + (["no check ran"] if not wanted else [])
                 + [f"no trace.dat from check {m}" for m in missing] + problems
                 + [f"trace-cmd report -i {paths[n]}: {e}" for n, e in unread.items()])
    return ok


def count_lines(paths, name, pattern):
    """How many lines of trace-cmd report of NAME.dat match pattern."""
    if name not in paths:
        return 0
    return sum(1 for line in report(paths[name])[0].splitlines() if pattern.search(line))


def check_output(lab_report, lab, check):
    """The console lines of one check of a protocol report."""
    run = lab_report.labs.get(lab)
    return next((c.output for c in (run.checks if run else []) if c.id == check), [])


def grade_facts(lab_report, paths, label, tally):
    """make check: trace-cmd report shows what the checks of labs 04 and 06
    counted in the guest (FACTS), lab 06's kmalloc events and lab 05's
    snapshot (grade_snapshot)."""
    for lab, check, said, counted in FACTS:
        name = f"{lab}-{check}"
        guest = [int(m.group(1)) for m in map(said.match, check_output(lab_report, lab, check))
                 if m]
        host = count_lines(paths, name, counted)
        good = bool(guest) and guest[-1] == host
        tally.record(good, f"{label}: lab {lab} {check}: trace-cmd report shows the "
                     "stack traces the check counted in the guest",
                     f"({host} in the report, {guest[-1] if guest else 'no count'} in the guest)")
        if not good:
            ui.block([f"trace-cmd report -i {paths.get(name, name + '.dat (missing)')}"])
    lab, check = KMALLOC_CHECK
    n = count_lines(paths, f"{lab}-{check}", KMALLOC)
    tally.record(n > 0, f"{label}: lab {lab} {check}: trace-cmd report shows the kmalloc "
                 "events the trigger turned on", f"({n})")
    grade_snapshot(lab_report, paths, label, tally)


def kinds(text, *wanted):
    """(kind, label) of each event of a trace-cmd report whose kind is
    wanted, in order, as the report page reads them (report.events: marks,
    the lab's notes, event names)."""
    from . import report as report_page
    return [(e["kind"], e["label"]) for e in report_page.events(text) if e["kind"] in wanted]


def marks(paths, name):
    """The trace_marker texts of NAME.dat's top-level buffer, in order."""
    from .report import MARK
    if name not in paths:
        return []
    return [label for _kind, label in kinds(report(paths[name])[0], MARK)]


def listed(output, title):
    """The lines a check printed under "-- TITLE:" (lib.sh messages)."""
    lines, inside = [], False
    for line in output:
        if line.startswith("-- "):
            inside = line == f"-- {title}:"
        elif inside:
            lines.append(line)
    return lines


def grade_snapshot(lab_report, paths, label, tally):
    """Lab 05's swap: the snapshot buffer came as CHECK.snapshot.dat, and
    the marks of both files are what the guest read in snapshot and trace."""
    lab, check = SNAPSHOT_CHECK
    output = check_output(lab_report, lab, check)
    name = f"{lab}-{check}"
    got = (marks(paths, f"{name}.snapshot"), marks(paths, name))
    want = (listed(output, "snapshot"), listed(output, "trace"))
    ok = bool(want[0]) and got == want
    tally.record(ok, f"{label}: lab {lab} {check}: the snapshot buffer came as "
                 f"{name}.snapshot.dat, with the marks the guest read in snapshot, and the "
                 "live buffer's file with those of trace", f"({len(got[0])} + {len(got[1])})")
    if not ok:
        ui.block([f"guest: snapshot {want[0]}, trace {want[1]}",
                  f"trace-cmd report: {name}.snapshot.dat {got[0]}, {name}.dat {got[1]}"])


# Lab 02 under gdb, on its own checkpoint (make check): its soft-writes
# check as a trace. The lab's notes say when it read 0*, 1*, 0* and 0;
# sched_switch recorded in the window after "echo 1" (its mark "window
# 1") and in none after "echo 0" (from "window 2" on).
SOFT_MODE_LAB = 2
SOFT_NOTES = ["in soft mode: enable reads 0*", "after echo 1: enable reads 1*",
              "after echo 0: enable reads 0*", "out of soft mode: enable reads 0"]


def soft_mode_story(text):
    """(the notes, sched_switch events in window 1, after window 2) of a
    trace-cmd report of lab 02's soft-writes check."""
    from .report import MARK, NOTE
    notes, counts, window = [], {1: 0, 2: 0}, 0
    for kind, label in kinds(text, MARK, NOTE, "sched_switch"):
        if kind == NOTE:
            notes.append(label)
        elif kind == MARK and label.startswith("window "):
            window = int(label.split()[1])
        elif kind == "sched_switch" and window in counts:
            counts[window] += 1
    return notes, counts[1], counts[2]


def grade_soft_mode(paths, label, tally):
    """make check: lab 02's soft-writes trace tells soft mode's story."""
    name = "02-soft-writes"
    notes, on, off = soft_mode_story(report(paths[name])[0] if name in paths else "")
    ok = notes == SOFT_NOTES and on > 0 and off == 0
    tally.record(ok, f"{label}: lab 02 soft-writes: the trace holds the lab's notes 0*, 1*, "
                 "0*, 0, sched_switch records in the window after echo 1, none after echo 0",
                 f"({on} in window 1, {off} after window 2)")
    if not ok:
        ui.block([f"notes: {notes}", f"expected notes: {SOFT_NOTES}",
                  f"trace-cmd report -i {paths.get(name, name + '.dat (missing)')}"])


def start_check(session, k, lanes):
    """make check: queue the TRACE boot of the last checkpoint with labs
    04, 05 and 06 (a Future of boot()'s result)."""
    plan = [f"lab:{n:02d}" for n in PLAN_LABS]
    return lanes.submit(boot, session, k, plan, f"trace-{k.name}",
                        getattr(session, "reuse_runs", False))


def grade_check(booted, k, tally):
    """make check's verdicts on start_check's boot: the labs as without
    TRACE (their checks graded as usual), the files, the facts, and lab
    06's report page in a browser (report.grade_check)."""
    from . import labrun
    run, lab_report, paths, problems = booted
    label = f"trace-cmd [{k.name}]"
    if not labrun.grade_boot(run, tally, f"{label} boot with TRACE=1"):
        return
    for n in PLAN_LABS:
        labrun.grade_lab(lab_report, series.lookup(n), k.kernel, tally,
                         name=f"{k.name}, TRACE=1")
    if grade_files(run, lab_report, paths, problems, label, tally):
        grade_facts(lab_report, paths, label, tally)
        from . import report
        report.grade_check(k.build_dir, k, run.lines, paths, tally)


def shell(session, k):
    """make shell N TRACE=1: the shell, with trace-cmd and save-trace in
    the guest; what save-trace sent lands in build/traces/shell-NAME/."""
    tag = f"shell-{k.name}"
    serial = serial_file(session.build_dir, tag)
    ui.step(f"booting {k.label} to a shell with trace-cmd (leave with 'reboot -f' or Ctrl-A X)")
    ui.info(f"in the guest, 'save-trace NAME' saves the buffers to "
            f"{os.path.relpath(folder(session.build_dir, tag))}/NAME.dat")
    rc = qemu.interactive(k, initramfs.appended(session, "trace", guest_files()), ["shell"],
                          trace_file=serial)
    paths, problems = store(session.build_dir, tag, serial)
    for name, path in sorted(paths.items()):
        print(f"saved: {os.path.relpath(path)} (trace-cmd report -i {os.path.relpath(path)})")
    for problem in problems:
        print(f"not saved: {problem}")
    return rc
