#!/usr/bin/env python3
"""Maintainers: write labs/NN-*/before, what each feature check of lab NN
prints on checkpoint NN-1 up to its first difference from 'expected'
(see labkit.grade, "the previous-checkpoint gate"), from console logs
of guests that ran the lab on checkpoint NN-1:

    scripts/record-before.py NN LOG...

and the gdb records, from gdb logs (build/logs/gdb-cpM-labNN.gdb.log, or
.offline.log for a script only loaded against vmlinux):

    scripts/record-before.py --gdb NN LOG          gdb.expected (checkpoint NN)
    scripts/record-before.py --gdb-before NN LOG   gdb.before (checkpoint NN-1)

and exercises/NN-*/skeleton.before, the same for the skeleton of
exercise NN, from the console log make check leaves
(build/logs/skeleton-labNN.log; for lab 02, gdb-skeleton-cp2-lab02.console.log):

    scripts/record-before.py --skeleton NN LOG

A recorded gdb.expected holds the numbers and words of that run: put the
placeholders back (<N>, <WORD>: lab 07's tick count and the function the
irqsoff tracer caught first) before committing it.

and the conformance corpus's record of differences from 6.1, from the
console logs of upstream and of checkpoints that ran the corpus (the
checkpoint's name from its log's, check-cpN.log):

    scripts/record-before.py --conformance UPSTREAM_LOG CHECKPOINT_LOG...

rewrites those checkpoints' sections of labs/conformance/expected-differences:
each case that differs, with its first differing line, in the group of
cases (a "#" line saying why) it was in; new cases go last, under a
comment to replace with the reason.

and doc/errnos.adoc, the errors upstream 6.1 returns for the corpus'
writes, from upstream's console log (build/logs/check-upstream.log):

    scripts/record-before.py --errnos LOG

and the lab checks whose output the debug configuration changes on
upstream 6.1 itself, from the console log of upstream's debug kernel
(build/logs/check-upstream-debug.log):

    scripts/record-before.py --debug LOG

rewrites labs/debug-differences: each check that differs from
'expected' there, with the output it gave; a reason already recorded
stays, a new entry says "say why" until one is written.

make check leaves such logs: build/logs/check-cpM.log runs lab M+1 on
checkpoint M, and build/logs/gdb-cpM-labNN.console.log a "# flags: gdb"
lab. A check whose first difference is a setup line is reported, not
recorded: improve the check first."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labkit import conformance, errnos, exercise, grade, holes, kernels, protocol, series  # noqa: E402
from labkit.kernels import KernelId  # noqa: E402

HEADER = """# What each feature check of this lab prints on the checkpoint before it,
# up to and including its first line that differs from 'expected'. make
# check fails when that changes, or when that line is a setup line
# (scripts/labkit/grade.py). Re-record with scripts/record-before.py.
"""

SKELETON_HEADER = """# What each check of this lab that fails on the skeleton of its exercise
# (checkpoint N with its holes left out) prints there, up to and including
# its first line that differs from 'expected'; a check not listed passes
# on the skeleton. make check (FULL=1) fails when that changes
# (grade.grade_on_skeleton). Re-record with scripts/record-before.py.
"""


def record(number, logs, skeleton=False):
    """Write the 'before' of lab 'number' (with skeleton=True, the
    skeleton.before of its exercise) from guests' console logs."""
    cp = series.lookup(number)
    expected = grade.load_expected(cp.lab_dir)
    sections, problems = {}, []
    for log in logs:
        with open(log, errors="replace") as f:
            report = protocol.parse(f.read().splitlines())
        lab = report.labs.get(f"{number:02d}")
        if lab is None:
            continue
        for check in lab.checks:
            want = grade.want_on(check, expected, KernelId.of(number)) or []
            got = grade.normalise(check.output)
            if skeleton:
                # every check the holes break, guards too; a write that
                # fails is the missing mechanism (grade.grade_on_skeleton)
                if not grade.matches(check, want)[0]:
                    sections[check.id] = grade.before_record(want, got)
                continue
            if check.kind != "check":
                continue
            if grade.setup_difference(want, got):
                problems.append(f"{check.id}: first difference is a setup line: "
                                f"{grade.before_record(want, got)[-1]}")
            sections[check.id] = grade.before_record(want, got)
    text = HEADER
    for ident, lines in sections.items():
        text += f"\n## check: {ident}\n" + "".join(l + "\n" for l in lines)
    if skeleton:
        text = SKELETON_HEADER + text[len(HEADER):]
        path = os.path.join(holes.exercise_dir(cp), exercise.SKELETON_BEFORE)
    else:
        path = os.path.join(cp.lab_dir, grade.BEFORE)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return problems


GDB_HEADER = """# What lab.gdb prints while the guest runs the lab, every line, in order
# (make check compares it exactly: grade.gdb_region). Addresses read ADDR,
# a backtrace keeps only frame 0 ("#0 function"), gdb's own breakpoint
# messages and blank lines are left out, <N> stands for any number, <WORD> for any word.
"""

GDB_BEFORE_HEADER = """# What lab.gdb prints on the checkpoint before this lab's, up to and
# including its first line that differs from gdb.expected: the reason the
# script fails there (make check: gdbrun.previous_checkpoint). Normalised
# as gdb.expected.
"""


def record_gdb(which, number, log):
    from labkit import gdbrun
    cp = series.lookup(number)
    with open(log, errors="replace") as f:
        region = grade.gdb_region(f.read().splitlines())
    if which == "--gdb":
        name, text = "gdb.expected", GDB_HEADER + "".join(l + "\n" for l in region)
    else:
        lines, failed = gdbrun.fails_before(cp, region)
        if not failed:
            print("this log shows no failure: gdb printed what gdb.expected holds, or less")
            return 1
        name, text = gdbrun.GDB_BEFORE, GDB_BEFORE_HEADER + "".join(l + "\n" for l in lines)
    with open(os.path.join(cp.lab_dir, name), "w", encoding="utf-8") as f:
        f.write(text)
    return 0


def record_conformance(upstream_log, logs):
    from labkit import conformance
    corpus = conformance.load_corpus()

    def corpus_run(log):
        with open(log, errors="replace") as f:
            return conformance.parse_guest(f.read().splitlines())

    reference = corpus_run(upstream_log)
    measured = {}
    for log in logs:
        m = re.search(r"check-(cp\d+)\.log$", log)
        if not m:
            print(f"{log}: not a make check console log (check-cpN.log)")
            return 1
        measured[m.group(1)] = conformance.compare(corpus, reference, corpus_run(log))
    with open(conformance.EXPECTED, encoding="utf-8") as f:
        text = conformance.record_text(f.read(), measured)
    with open(conformance.EXPECTED, "w", encoding="utf-8") as f:
        f.write(text)
    for tag, differences in measured.items():
        print(f"{tag}: {len(differences)} case(s) differ from {kernels.base_release()}")


DEBUG_HEADER = """# Lab checks whose output the debug configuration (scripts/debug.config,
# two vCPUs) changes on unmodified 6.1 itself, each with the reason and
# the output upstream's debug kernel gives (normalised):
#
#   ## LAB ID: REASON
#   lines
#
# On a debug kernel, upstream's included, a check passes when it matches
# the lab's 'expected', or when it is listed here and matches what is
# recorded; anything else fails (scripts/labkit/grade.py). Re-record
# with scripts/record-before.py --debug.
"""


def record_debug(log):
    with open(log, errors="replace") as f:
        report = protocol.parse(f.read().splitlines())
    old = grade.load_debug_differences()
    entries = {}
    for key, lab in sorted(report.labs.items()):
        cp = series.lookup(int(key))
        expected = grade.load_expected(cp.lab_dir)
        for check in lab.checks:
            if not grade.grade_check(check, expected, KernelId.upstream(), cp.number).ok:
                reason = old.get((key, check.id), ("say why",))[0]
                entries[(key, check.id)] = (reason, grade.normalise(check.output))
    with open(grade.DEBUG_DIFFERENCES, "w", encoding="utf-8") as f:
        f.write(grade.format_debug_differences(DEBUG_HEADER, entries))
    for (key, ident), (reason, _lines) in sorted(entries.items()):
        print(f"{key} {ident}: {reason}")
    return 0


def record_errnos(log):
    with open(log, errors="replace") as f:
        run = conformance.parse_guest(f.read().splitlines())
    missing = [c.id for c in conformance.load_corpus() if c.id not in run.cases]
    if missing:
        print(f"{log}: no output for {len(missing)} case(s) of the corpus, "
              f"{missing[0]} first: not a whole run")
        return 1
    with open(errnos.PAGE, "w", encoding="utf-8") as f:
        f.write(errnos.page_of_run(run))
    print(f"wrote {os.path.relpath(errnos.PAGE)}")
    return 0


# How many arguments each form takes at least, the option included, and
# where its lab number is (None: it has none).
FORMS = {"--errnos": (2, None), "--conformance": (3, None), "--debug": (2, None),
         "--gdb": (3, 1), "--gdb-before": (3, 1), "--skeleton": (3, 1)}


def usable(argv):
    """Do the arguments fit one of the forms the docstring gives?"""
    if not argv:
        return False
    least, number_at = FORMS.get(argv[0], (2, 0))
    return len(argv) >= least and (number_at is None or argv[number_at].isdigit())


def main(argv):
    if argv[:1] in (["-h"], ["--help"]) or not usable(argv):
        print(__doc__.strip())
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    if argv[0] == "--errnos":
        return record_errnos(argv[1])
    if argv[0] == "--conformance":
        return record_conformance(argv[1], argv[2:])
    if argv[0] == "--debug":
        return record_debug(argv[1])
    if argv[0] in ("--gdb", "--gdb-before"):
        return record_gdb(argv[0], int(argv[1]), argv[2])
    skeleton = argv[0] == "--skeleton"
    if skeleton:
        argv = argv[1:]
    problems = record(int(argv[0]), argv[1:], skeleton)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
