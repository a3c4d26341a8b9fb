#!/usr/bin/env python3
"""Maintainers: write labs/NN-*/before, what each feature check of lab NN
prints on checkpoint NN-1 up to its first difference from 'expected'
(see labkit.grade, "the previous-checkpoint gate"), from console logs
of guests that ran the lab on checkpoint NN-1:

    scripts/record-before.py NN LOG...

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


def main(argv):
    problems = record(int(argv[0]), argv[1:])
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
