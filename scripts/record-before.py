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

A recorded gdb.expected holds the numbers and words of that run: put the
placeholders back (<N>, <WORD>: lab 07's tick count and the function the
irqsoff tracer caught first) before committing it.

make check leaves such logs: build/logs/check-cpM.log runs lab M+1 on
checkpoint M, and build/logs/gdb-cpM-labNN.console.log a "# flags: gdb"
lab. A check whose first difference is a setup line is reported, not
recorded: improve the check first."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labkit import grade, protocol, series  # noqa: E402

HEADER = """# What each feature check of this lab prints on the checkpoint before it,
# up to and including its first line that differs from 'expected'. make
# check fails when that changes, or when that line is a setup line
# (scripts/labkit/grade.py). Re-record with scripts/record-before.py.
"""


def record(number, logs):
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
            if check.kind != "check":
                continue
            want, got = expected.get(check.id, []), grade.normalise(check.output)
            if grade.setup_difference(want, got):
                problems.append(f"{check.id}: first difference is a setup line: "
                                f"{grade.before_record(want, got)[-1]}")
            sections[check.id] = grade.before_record(want, got)
    text = HEADER
    for ident, lines in sections.items():
        text += f"\n## check: {ident}\n" + "".join(l + "\n" for l in lines)
    with open(os.path.join(cp.lab_dir, grade.BEFORE), "w", encoding="utf-8") as f:
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


def main(argv):
    if argv and argv[0] in ("--gdb", "--gdb-before"):
        return record_gdb(argv[0], int(argv[1]), argv[2])
    problems = record(int(argv[0]), argv[1:])
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
