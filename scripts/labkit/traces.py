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

On the host, "trace-cmd report -i FILE" reads it (report), and events()
reads what it printed: the marks, the lab's notes, the stack traces and
the other events, for the report page (report.py), make lab's summary
of each file and make check's proof that the traces tell what the guest
saw (tracecheck.py).
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


# trace-cmd report names the buffer of an instance's event first
# ("ftlab-notes:   init-46 [000] ..."), and no buffer for the top level's.
EVENT_RE = re.compile(r"^(?:(?P<buffer>[\w.-]+):(?=\s))?"
                      r"\s*(?P<task>\S.*?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+"
                      r"(?P<ts>\d+\.\d+):\s+(?P<event>[\w]+):\s+(?P<info>.*)$")
STACK_RE = re.compile(r"^=> (\S+)")
# How each event is shown: a kind (the legend) and a label (the tooltip).
MARK, STACK = "mark (trace_marker)", "stack trace"
NOTE, SNAPSHOT = "the lab read", "in the snapshot buffer"
NOTES_BUFFER = "ftlab-notes"          # initramfs/lib.sh NOTES_DIR
NOTES_ROW, SNAPSHOT_ROW = "the lab's notes", "snapshot buffer"
SNAPSHOT_SUFFIX = ".snapshot"       # initramfs/save-trace


def events(report_text, snapshot=False):
    """[{row, ts, kind, label, task}] of a trace-cmd report: print events
    are marks (labelled with their text), kernel_stack entries stack
    traces (labelled with their first frame), the others by event name;
    the notes buffer's prints are the lab's notes. Row: "CPU n", with an
    instance's name before it; snapshot: every event of a snapshot file
    is in the snapshot buffer's row."""
    out = []
    for line in report_text.splitlines():
        m = EVENT_RE.match(line)
        if m:
            event, info = m.group("event"), m.group("info").strip()
            buffer = m.group("buffer") or ""
            row = " ".join(filter(None, (buffer, f"CPU {int(m.group('cpu'))}")))
            text = re.sub(r"^tracing_mark_write:\s*", "", info)
            if snapshot:
                kind, label, row = SNAPSHOT, f"{event}: {text[:70]}", SNAPSHOT_ROW
            elif buffer == NOTES_BUFFER and event == "print":
                kind, label, row = NOTE, text, NOTES_ROW
            elif event == "print":
                kind, label = MARK, text
            elif event == "kernel_stack":
                kind, label = STACK, ""
            else:
                kind, label = event, info[:80]
            out.append({"row": row, "ts": float(m.group("ts")), "kind": kind, "label": label,
                        "task": f"{m.group('task').strip()}-{m.group('pid')}"})
            continue
        s = STACK_RE.match(line.strip())
        if s and out and out[-1]["kind"] == STACK and not out[-1]["label"]:
            out[-1]["label"] = s.group(1)
    return out


def summary(path):
    """What one trace.dat holds, in a few words: '97 kmalloc, 5 notes,
    4 marks', the most frequent kinds first (no events: 'empty')."""
    text, err = report(path)
    if err:
        return f"unreadable: {err.splitlines()[0]}"
    counts = {}
    for e in events(text):
        counts[e["kind"]] = counts.get(e["kind"], 0) + 1
    names = {MARK: "mark", STACK: "stack trace", NOTE: "note"}
    parts = [f"{n} {names[kind] + 's' * (n != 1) if kind in names else kind}"
             for kind, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    return ", ".join(parts[:4] + (["..."] if len(parts) > 4 else [])) or "empty"


def kinds(text, *wanted):
    """(kind, label) of each event of a trace-cmd report whose kind is
    wanted, in order, as the report page reads them (events: marks, the
    lab's notes, event names)."""
    return [(e["kind"], e["label"]) for e in events(text) if e["kind"] in wanted]


def marks(paths, name):
    """The trace_marker texts of NAME.dat's top-level buffer, in order."""
    if name not in paths:
        return []
    return [label for _kind, label in kinds(report(paths[name])[0], MARK)]


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
