import unittest

from labkit import ftmatrix
from labkit.kernels import KernelId as K


class Matrix(unittest.TestCase):
    TEXT = ("# comment\n"
            "ftrace/b.tc  FAIL  3  needs the feature of checkpoint 3\n"
            "00basic/a.tc PASS  0\n")

    def test_expected_by_kernel(self):
        m = ftmatrix.parse(self.TEXT)
        row = m.row("ftrace/b.tc")
        self.assertEqual([row.expected(K.parse(k)) for k in (0, 2, 3, 7, "upstream")],
                         ["FAIL", "FAIL", "PASS", "PASS", "PASS"])
        self.assertEqual(row.why, "needs the feature of checkpoint 3")

    def test_suite_order(self):
        self.assertEqual(ftmatrix.parse(self.TEXT).tests(), ["00basic/a.tc", "ftrace/b.tc"])

    def test_bad_rows_are_rejected(self):
        for bad in ("x.tc MAYBE 1", "x.tc PASS one", "x.tc"):
            with self.assertRaises(ValueError):
                ftmatrix.parse(bad)

    def test_results(self):
        lines = ["junk", "[1] Basic test\t[PASS]", "[2] (instance)  Basic test\t[FAIL]",
                 "\x1b[31m[3] colored\t[UNSUPPORTED]\x1b[0m"]
        self.assertEqual(ftmatrix.results(lines),
                         [("Basic test", "PASS"), ("(instance)  Basic test", "FAIL"),
                          ("colored", "UNSUPPORTED")])

    def test_repo_matrix_parses(self):
        m = ftmatrix.load()
        self.assertIn("ftrace/func_traceonoff_triggers.tc", m.tests())
