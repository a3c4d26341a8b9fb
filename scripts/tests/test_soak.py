"""scripts/soak.py: a run's verdicts come from the lab's own expected
output, and a check that did not run is a failure, not a pass."""

import importlib.util
import os
import unittest

from labkit import grade, protocol, series
from labkit.kernels import KernelId as K

SOAK = os.path.join(series.ROOT, "scripts", "soak.py")
spec = importlib.util.spec_from_file_location("soak", SOAK)
soak = importlib.util.module_from_spec(spec)
spec.loader.exec_module(soak)


def console(cp, outputs):
    """The console lines of one boot running lab cp, its checks printing
    'outputs' ({id: lines}); a check absent from 'outputs' does not run."""
    key = f"{cp.number:02d}"
    lines = [f"@@ftlab lab-begin {key}"]
    for check in cp.checks():
        if check.id in outputs:
            lines += [f"@@ftlab check-begin {key} {check.id} {check.kind} {check.title}"]
            lines += outputs[check.id]
            lines += [f"@@ftlab check-end {key} {check.id} rc=0"]
    return lines + [f"@@ftlab lab-end {key}", "@@ftlab done"]


class Verdicts(unittest.TestCase):
    def setUp(self):
        self.cp = series.lookup(series.checkpoints()[-1].number)
        self.expected = grade.load_expected(self.cp.lab_dir)

    def test_the_expected_output_passes_every_check(self):
        report = protocol.parse(console(self.cp, self.expected))
        got = soak.verdicts(report, [self.cp], K.of(self.cp.number))
        self.assertTrue(got and all(got.values()), got)

    def test_a_changed_line_and_a_missing_check_fail(self):
        first, second = [c.id for c in self.cp.checks()][:2]
        outputs = dict(self.expected)
        outputs[first] = outputs[first][:-1] + ["something else"]
        del outputs[second]
        got = soak.verdicts(protocol.parse(console(self.cp, outputs)), [self.cp],
                            K.of(self.cp.number))
        self.assertFalse(got[(self.cp.number, first)])
        self.assertFalse(got[(self.cp.number, second)])
        self.assertEqual(sum(not ok for ok in got.values()), 2)


if __name__ == "__main__":
    unittest.main()
