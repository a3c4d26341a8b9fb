"""Counting and the results a CI system reads: ui.Tally counts pass, fail
and skip apart, and results.write gives JUnit XML that parses back."""

import contextlib
import io
import json
import os
import tempfile
import unittest
import xml.etree.ElementTree as ET

from labkit import check, results, ui


def quiet(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        value = fn(*args)
    return value, out.getvalue()


class Counting(unittest.TestCase):
    def test_pass_fail_and_skip_are_counted_apart(self):
        tally = ui.Tally("harness")
        with contextlib.redirect_stdout(io.StringIO()):
            tally.record(True, "one")
            tally.record(False, "two")
            tally.skip("three", "no kernel")
        code, out = quiet(tally.close)
        self.assertEqual((tally.passed, tally.failed, tally.skipped), (1, 1, 1))
        self.assertEqual(out.splitlines()[-1], "1 passed, 1 failed, 1 skipped")
        self.assertEqual(code, 1)

    def test_a_run_with_only_skips_passes_nothing(self):
        tally = ui.Tally()
        quiet(tally.skip, "a", "why")
        code, out = quiet(tally.close)
        self.assertEqual(out.splitlines()[-1], "0 passed, 0 failed, 1 skipped")
        self.assertEqual(code, 0)

    def test_evidence_after_a_verdict_is_its_text(self):
        tally = ui.Tally()
        with contextlib.redirect_stdout(io.StringIO()):
            tally.record(False, "diff", "(note)")
            ui.block(["-want", "+got"])
            ui.step("next part")
            ui.block(["not about 'diff'"])
        self.assertEqual(tally.verdicts[0].text, "(note)\n-want\n+got")

    def test_unittest_skips_are_skips(self):
        class Sample(unittest.TestCase):
            def test_passes(self):
                pass

            def test_fails(self):
                self.fail("no")

            @unittest.skip("nothing to test with")
            def test_skips(self):
                pass

        class Fixture(unittest.TestCase):
            @classmethod
            def setUpClass(cls):
                raise RuntimeError("fixture broke")

            def test_never_runs(self):
                pass

        suite = unittest.TestSuite()
        for case in (Sample, Fixture):
            suite.addTests(unittest.defaultTestLoader.loadTestsFromTestCase(case))
        tally = ui.Tally()
        quiet(check.grade_unittests, suite, tally)
        status = {v.name.rsplit(".", 1)[-1].split(" ")[0]: v.status for v in tally.verdicts}
        self.assertEqual(status["test_passes"], "pass")
        self.assertEqual(status["test_fails"], "fail")
        self.assertEqual(status["test_skips"], "skip")
        self.assertEqual(status["test_never_runs"], "fail")
        self.assertEqual(tally.passed, 1)


class JUnit(unittest.TestCase):
    def verdicts(self):
        return [results.Verdict("lab 01 [cp1] probe", "pass", "", 1.5, "kernel cp1"),
                results.Verdict("lab 02 [cp1] soft", "fail", "--- expected\n+++ got\n-a\n+b\x1b[0m",
                                2.0, "kernel cp1"),
                results.Verdict("harness test_guest.Cpio", "skip", "no tree", 0.0, "harness")]

    def test_write_parses_back(self):
        d = os.path.join(tempfile.mkdtemp(), "new", "dir")
        xml_path, json_path = results.write(d, "make check", self.verdicts())
        top = ET.parse(xml_path).getroot()
        self.assertEqual(top.tag, "testsuites")
        self.assertEqual((top.get("tests"), top.get("failures"), top.get("skipped")),
                         ("3", "1", "1"))
        suites = {s.get("name"): s for s in top.findall("testsuite")}
        self.assertEqual(sorted(suites), ["harness", "kernel cp1"])
        cases = {c.get("name"): c for c in top.iter("testcase")}
        self.assertEqual(len(cases), 3)
        self.assertIsNone(cases["lab 01 [cp1] probe"].find("failure"))
        failure = cases["lab 02 [cp1] soft"].find("failure")
        self.assertIn("-a\n+b", failure.text)
        self.assertIn("\\x1b[0m", failure.text)     # a console escape, kept readable
        self.assertEqual(failure.get("message"), "--- expected")
        self.assertEqual(cases["harness test_guest.Cpio"].find("skipped").get("message"), "no tree")
        self.assertEqual(cases["lab 01 [cp1] probe"].get("time"), "1.500")
        with open(json_path) as f:
            summary = json.load(f)
        self.assertEqual((summary["passed"], summary["failed"], summary["skipped"]), (1, 1, 1))
        self.assertEqual(summary["verdicts"][1]["status"], "fail")

    def test_a_tally_writes_what_it_counted(self):
        tally = ui.Tally("checkpatch")
        with contextlib.redirect_stdout(io.StringIO()):
            tally.record(False, "checkpatch patches/01-x/0001.patch")
            ui.block(["0001.patch:12: WARNING:LONG_LINE: line length of 101 exceeds 100"])
        xml_path, _ = results.write(tempfile.mkdtemp(), "make check", tally.verdicts)
        case = ET.parse(xml_path).getroot().find("testsuite/testcase")
        self.assertEqual(case.get("classname"), "make check.checkpatch")
        self.assertIn("LONG_LINE", case.find("failure").text)

    def test_close_writes_the_results_when_asked(self):
        tally = ui.Tally("lab 01 [cp1]")
        d = os.path.join(tempfile.mkdtemp(), "results")
        quiet(tally.skip, "lab 01 [cp1] probe", "no such thing")
        quiet(tally.close, d, "make lab 1")
        top = ET.parse(os.path.join(d, results.JUNIT)).getroot()
        self.assertEqual((top.get("name"), top.get("skipped")), ("make lab 1", "1"))

    def test_an_unknown_status_is_refused(self):
        with self.assertRaises(ValueError):
            results.Verdict("x", "ok")


class Pyflakes(unittest.TestCase):
    def run_on(self, text):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "m.py"), "w") as f:
            f.write(text)
        tally = ui.Tally()
        quiet(check.pyflakes, tally, ["m.py"], d)
        return tally.verdicts[0]

    def test_a_finding_fails(self):
        v = self.run_on("import os\n")
        self.assertEqual(v.status, "fail")
        self.assertIn("'os' imported but unused", v.text)

    def test_clean_code_passes(self):
        self.assertEqual(self.run_on("import os\nprint(os.sep)\n").status, "pass")
