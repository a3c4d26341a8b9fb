import os
import shutil
import tempfile
import time
import unittest
from unittest import mock

from labkit import report, traces
from labkit.kernels import KernelId as K
from tests.test_traces import INSTANCES, REPORT, temp_build, trace_files


class Rows(unittest.TestCase):
    def test_notes_snapshot_then_cpus(self):
        evs, snap = traces.events(INSTANCES), traces.events(REPORT, snapshot=True)
        self.assertEqual(report.timeline_rows(evs + snap),
                         [traces.NOTES_ROW, traces.SNAPSHOT_ROW, "CPU 0", "lab06 CPU 0"])


class Graded(unittest.TestCase):
    def test_kernels_graded_here(self):
        self.assertEqual([report.graded(K.parse(n)) for n in ("cp6", "upstream", "cp7-debug",
                                                              "student-cp3")],
                         [K.of(6), K.upstream(), None, None])


class Page(unittest.TestCase):
    def test_verdicts_diffs_and_a_canvas_per_timeline(self):
        entries = [{"id": "a", "title": "t <1>", "ok": True, "evidence": []},
                   {"id": "b", "title": "u", "ok": False, "evidence": ["-want", "+got"]},
                   {"id": "c", "title": "v", "ok": None, "evidence": []}]
        text = report.page("Lab 06", entries, {"a": traces.events(REPORT), "b": []}, "/*js*/")
        self.assertIn('<canvas id="chart-a">', text)
        self.assertNotIn('chart-b"', text)
        self.assertIn("The check left no events", text)
        self.assertIn("t &lt;1&gt;", text)
        self.assertIn("-want\n+got", text)
        self.assertIn("not graded", text)
        self.assertIn("/*js*/", text)
        self.assertNotIn("No traces", text)
        self.assertIn("No traces", report.page("Lab 06", entries, {}, ""))


class Stale(unittest.TestCase):
    def test_traces_older_than_the_log_are_left_out(self):
        build = temp_build(self)
        folder = trace_files(build, "lab06-cp6", "06-article")
        os.makedirs(os.path.join(build, "logs"))
        log = os.path.join(build, "logs", "lab06-cp6.log")
        open(log, "w").close()
        got = {}

        def write(out, title, lines, number, kernel, paths, only=None):
            got.update(paths)
            return {}
        old = time.time() - 100
        with mock.patch.object(report, "write", write):
            os.utime(folder, (old, old))
            out, _ = report.lab_page(build, 6, K.of(6))
            self.assertEqual((got, os.path.basename(out)), ({}, "lab06.html"))
            os.utime(log, (old - 50, old - 50))
            out, _ = report.lab_page(build, 6, K.of(6))
            self.assertEqual(list(got), ["06-article"])

    def test_no_run_says_what_to_run(self):
        from labkit.errors import HarnessError
        with self.assertRaisesRegex(HarnessError, "'make lab 6 KERNEL=5' first"):
            report.lab_page(tempfile.gettempdir() + "/no-such-build", 6, K.of(5))


class Render(unittest.TestCase):
    def run_chromium(self, dom, stderr=""):
        calls = []

        def run(cmd, **kw):
            calls.append(cmd)
            return mock.Mock(returncode=0, stdout=dom, stderr=stderr)
        with mock.patch.object(report.subprocess, "run", run):
            return report.render("/t/p.html", "/t/p.png"), calls

    def test_what_the_page_drew_and_its_errors(self):
        (drawn, errors), calls = self.run_chromium(
            '<pre id="errors"></pre><pre id="drawn">drawn {"article":105}</pre>')
        self.assertEqual((drawn, errors), ({"article": 105}, []))
        self.assertIn("--dump-dom", calls[0])
        self.assertIn("--screenshot=/t/p.png", calls[1])

    def test_a_script_error_is_reported(self):
        (drawn, errors), _ = self.run_chromium(
            '<pre id="errors">error: Chart is not defined\n</pre><pre id="drawn"></pre>',
            '[1:1:INFO:CONSOLE(3)] "Uncaught ReferenceError: Chart is not defined"')
        self.assertIsNone(drawn)
        self.assertEqual(len(errors), 2)


if __name__ == "__main__":
    unittest.main()


class SnapshotFiles(unittest.TestCase):
    def test_a_snapshot_file_joins_its_check_timeline(self):
        out = os.path.join(tempfile.mkdtemp(), "lab06.html")
        self.addCleanup(shutil.rmtree, os.path.dirname(out))
        paths = {"06-snapshot": "a.dat", "06-snapshot.snapshot": "b.dat", "05-swap": "c.dat"}
        with mock.patch.object(report.traces, "report", lambda path: (REPORT, None)), \
                mock.patch.object(report, "checks", lambda lines, number, kernel: []), \
                mock.patch.object(report, "CHART_JS", os.devnull):
            drawn = report.write(out, "Lab 06", [], 6, K.of(6), paths)
        self.assertEqual(drawn, {"snapshot": 6})
        with open(out) as f:
            self.assertIn(traces.SNAPSHOT_ROW, f.read())


class Colours(unittest.TestCase):
    def test_a_kind_keeps_its_colour_on_every_chart(self):
        evs = traces.events(REPORT)
        got = report.colours({"a": evs, "b": evs + [dict(evs[1], kind="sched_switch")]})
        self.assertEqual(got["kmalloc"], report.EVENT_COLOURS[0])
        self.assertEqual(got["sched_switch"], report.EVENT_COLOURS[1])
        self.assertEqual(got[traces.MARK], report.KIND_COLOURS[traces.MARK])
