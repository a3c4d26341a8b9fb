"""What the kernel's own ftracetest must report at each checkpoint.

labs/ftracetest.matrix has one line per test: the result expected before
the checkpoint that brings the test's feature, that checkpoint, and why.
On upstream every listed test must PASS. A test with the "instance"
flag reports twice (its second run in a new trace instance): both count.
"""

import os

from . import protocol, series

MATRIX = os.path.join(series.LABS, "ftracetest.matrix")
RESULTS = protocol.FT_RESULTS


class Row:
    def __init__(self, test, before, start, why):
        self.test, self.before, self.start, self.why = test, before, start, why

    def expected(self, kernel):
        """The result the test must give on kernel (a kernels.KernelId)."""
        if kernel.has(self.start):
            return "PASS"
        return self.before


class Matrix:
    def __init__(self, rows):
        self.rows = rows

    def tests(self):
        """In the suite's own (sorted) order: some tests leave state behind
        that only the suite's order is known to tolerate."""
        return sorted(self.rows)

    def row(self, test):
        return self.rows[test]


def parse(text):
    rows = {}
    for n, line in series.data_lines(text):
        parts = line.split(None, 3)
        if len(parts) < 3 or parts[1] not in RESULTS or not parts[2].isdigit():
            raise ValueError(f"ftracetest.matrix:{n}: want 'TEST RESULT-BEFORE CHECKPOINT WHY': {line}")
        rows[parts[0]] = Row(parts[0], parts[1], int(parts[2]),
                             parts[3] if len(parts) > 3 else "")
    return Matrix(rows)


def load(path=MATRIX):
    with open(path, encoding="utf-8") as f:
        return parse(f.read())


def results(lines):
    """[(description, RESULT)] from ftracetest's output lines."""
    found = [protocol.ft_result(line) for line in lines]
    return [(desc, result) for _n, desc, result in filter(None, found)]
