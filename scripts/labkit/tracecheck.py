"""make check's proof that the traces tell what the guest saw
(traces.py carries them to the host and reads them).

On the last checkpoint, one boot with TRACE=1 runs labs 04, 05 and 06
(start_traced_boot): their checks are graded as without TRACE, every
check's trace.dat must come whole (traces.grade_files), trace-cmd report
must show what the checks counted or read in the guest (FACTS,
grade_snapshot), and lab 06's report page must draw in a browser
(report.check_page). Lab 02 under gdb, on its own checkpoint, runs with
TRACE=1 too: its trace must tell soft mode's story (grade_soft_mode).
"""

import re

from . import labrun, protocol, report, series, traces, ui

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


def count_lines(paths, name, pattern):
    """How many lines of trace-cmd report of NAME.dat match pattern."""
    if name not in paths:
        return 0
    return sum(1 for line in traces.report(paths[name])[0].splitlines()
               if pattern.search(line))


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
    got = (traces.marks(paths, f"{name}.snapshot"), traces.marks(paths, name))
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
    notes, counts, window = [], {1: 0, 2: 0}, 0
    for kind, label in traces.kinds(text, traces.MARK, traces.NOTE, "sched_switch"):
        if kind == traces.NOTE:
            notes.append(label)
        elif kind == traces.MARK and label.startswith("window "):
            window = int(label.split()[1])
        elif kind == "sched_switch" and window in counts:
            counts[window] += 1
    return notes, counts[1], counts[2]


def grade_soft_mode(paths, label, tally):
    """make check: lab 02's soft-writes trace tells soft mode's story."""
    name = "02-soft-writes"
    notes, on, off = soft_mode_story(traces.report(paths[name])[0] if name in paths else "")
    ok = notes == SOFT_NOTES and on > 0 and off == 0
    tally.record(ok, f"{label}: lab 02 soft-writes: the trace holds the lab's notes 0*, 1*, "
                 "0*, 0, sched_switch records in the window after echo 1, none after echo 0",
                 f"({on} in window 1, {off} after window 2)")
    if not ok:
        ui.block([f"notes: {notes}", f"expected notes: {SOFT_NOTES}",
                  f"trace-cmd report -i {paths.get(name, name + '.dat (missing)')}"])


def start_traced_boot(session, k, lanes):
    """make check: queue the TRACE boot of the last checkpoint with labs
    04, 05 and 06 (a Future of traces.boot()'s result)."""
    plan = [protocol.lab_item(n) for n in PLAN_LABS]
    return lanes.submit(traces.boot, session, k, plan, f"trace-{k.name}",
                        getattr(session, "reuse_runs", False))


def grade_traced_boot(booted, k, tally):
    """make check's verdicts on start_traced_boot's boot: the labs as
    without TRACE (their checks graded as usual), the files, the facts,
    and lab 06's report page in a browser (report.check_page)."""
    run, lab_report, paths, problems = booted
    label = f"trace-cmd [{k.name}]"
    if not labrun.grade_boot(run, tally, f"{label} boot with TRACE=1"):
        return
    for n in PLAN_LABS:
        labrun.grade_lab(lab_report, series.lookup(n), k.id, tally,
                         tag=f"{k.name}, TRACE=1")
    if traces.grade_files(run, lab_report, paths, problems, label, tally):
        grade_facts(lab_report, paths, label, tally)
        report.check_page(k.build_dir, k, run.lines, paths, tally)
