import contextlib
import io
import unittest
from unittest import mock

from labkit import protocol, tracecheck, traces, ui


def lab_report(*checks):
    """A protocol report of checks given as (lab, id, output lines)."""
    lines = []
    for lab in sorted({c[0] for c in checks}):
        lines.append(f"@@ftlab lab-begin {lab}")
        for _lab, ident, output in (c for c in checks if c[0] == lab):
            lines += [f"@@ftlab check-begin {lab} {ident} check t"] + output
            lines.append(f"@@ftlab check-end {lab} {ident} rc=0")
        lines.append(f"@@ftlab lab-end {lab}")
    return protocol.parse(lines)


class Run:
    status, log = "done", "build/logs/trace-cp7.log"

    @property
    def ok(self):
        return self.status == "done"

    def explain(self):
        return []


def mark_line(text):
    return f"  sh-75  [000]  1.9: print:  tracing_mark_write: {text}\n"


STACK_LINE = "  sh-75  [000]  1.9: kernel_stack:  <stack trace >"
KMALLOC_LINE = "  sh-75  [000]  1.9: kmalloc:  call_site=x ptr=y bytes_req=4096"


class Grade(unittest.TestCase):
    def grade(self, report_, paths, reports):
        tally = ui.Tally()
        with contextlib.redirect_stdout(io.StringIO()), \
                mock.patch.object(traces, "report",
                                  lambda path: (reports.get(path, ""), None)):
            if traces.grade_files(Run(), report_, paths, [], "trace-cmd [cp7]", tally):
                tracecheck.grade_facts(report_, paths, "trace-cmd [cp7]", tally)
        return [(v.status, v.name) for v in tally.verdicts]

    def checks(self, stacks=(1, 2, 3)):
        return lab_report(("04", "first-frame", [f"stack trace entries: {stacks[0]}"]),
                          ("04", "count", [f"stack trace entries: {stacks[1]}", "first frames:"]),
                          ("05", "swap", ["-- snapshot:", "one", "two", "-- trace:", "three"]),
                          ("06", "article", ["kmalloc records ..."]),
                          ("06", "stacktrace", [f"stack traces in the buffer: {stacks[2]}"]))

    def paths(self):
        return {n: f"/t/{n}.dat" for n in ("04-first-frame", "04-count", "05-swap",
                                            "05-swap.snapshot", "06-article",
                                            "06-stacktrace")}

    def reports(self, stacks=(1, 2, 3), kmallocs=5, snapshot=("one", "two")):
        return {"/t/04-first-frame.dat": (STACK_LINE + "\n") * stacks[0],
                "/t/04-count.dat": (STACK_LINE + "\n") * stacks[1],
                "/t/05-swap.dat": mark_line("three"),
                "/t/05-swap.snapshot.dat": "".join(map(mark_line, snapshot)),
                "/t/06-article.dat": (KMALLOC_LINE + "\n") * kmallocs,
                "/t/06-stacktrace.dat": (STACK_LINE + "\n") * stacks[2]}

    def test_counts_as_in_the_guest_pass(self):
        verdicts = self.grade(self.checks(), self.paths(), self.reports())
        self.assertEqual([s for s, _ in verdicts], ["pass"] * 6, verdicts)

    def test_a_count_the_report_does_not_show_fails(self):
        verdicts = self.grade(self.checks(), self.paths(), self.reports(stacks=(1, 1, 3)))
        self.assertEqual([s for s, _ in verdicts],
                         ["pass", "pass", "fail", "pass", "pass", "pass"])

    def test_no_kmalloc_events_fails(self):
        verdicts = self.grade(self.checks(), self.paths(), self.reports(kmallocs=0))
        self.assertEqual(verdicts[-2][0], "fail")

    def test_a_snapshot_that_did_not_come_fails(self):
        paths = self.paths()
        del paths["05-swap.snapshot"]
        self.assertEqual(self.grade(self.checks(), paths, self.reports())[-1][0], "fail")
        verdicts = self.grade(self.checks(), self.paths(), self.reports(snapshot=("one",)))
        self.assertEqual(verdicts[-1][0], "fail")

    def test_a_check_without_its_file_fails_and_stops_there(self):
        paths = self.paths()
        del paths["06-article"]
        verdicts = self.grade(self.checks(), paths, self.reports())
        self.assertEqual(verdicts, [("fail", "trace-cmd [cp7]: each check's buffers came to the "
                                     "host as a trace.dat that trace-cmd report reads")])


def notes_line(text):
    return f"ftlab-notes:    sh-75  [000]  1.9: print:  tracing_mark_write: {text}\n"


SWITCH_LINE = "  sh-75  [000]  1.9: sched_switch:  sh:75 [120] R ==> init:1 [120]\n"


class SoftMode(unittest.TestCase):
    def story(self, switches_after=0):
        return (notes_line(tracecheck.SOFT_NOTES[0]) + notes_line(tracecheck.SOFT_NOTES[1])
                + SWITCH_LINE + mark_line("window 1") + SWITCH_LINE * 3
                + notes_line(tracecheck.SOFT_NOTES[2]) + SWITCH_LINE + mark_line("window 2")
                + SWITCH_LINE * switches_after + notes_line(tracecheck.SOFT_NOTES[3]))

    def grade(self, text):
        tally = ui.Tally()
        with contextlib.redirect_stdout(io.StringIO()), \
                mock.patch.object(traces, "report", lambda path: (text, None)):
            tracecheck.grade_soft_mode({"02-soft-writes": "/t/x.dat"}, "trace-cmd [cp7]", tally)
        return [v.status for v in tally.verdicts]

    def test_the_story_counts_switches_per_window(self):
        self.assertEqual(tracecheck.soft_mode_story(self.story()), (tracecheck.SOFT_NOTES, 4, 0))
        self.assertEqual(self.grade(self.story()), ["pass"])

    def test_a_switch_after_echo_0_or_a_missing_note_fails(self):
        self.assertEqual(self.grade(self.story(switches_after=1)), ["fail"])
        self.assertEqual(self.grade(self.story().replace("1*", "1")), ["fail"])


if __name__ == "__main__":
    unittest.main()
