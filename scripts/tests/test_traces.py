import base64
import contextlib
import hashlib
import io
import os
import shutil
import tempfile
import unittest
from unittest import mock

from labkit import protocol, qemu, traces, ui


def framed(name, data, size=None, digest=None, cut=False):
    """What save-trace writes to ttyS1 for one file (with \\r\\n, as a tty
    in cooked mode would)."""
    text = base64.encodebytes(data).decode()
    lines = [f"@@file {name} {len(data) if size is None else size} "
             f"{digest or hashlib.sha256(data).hexdigest()}"] + text.splitlines()
    if not cut:
        lines.append(f"@@end {name}")
    return "".join(line + "\r\n" for line in lines)


def temp_build(test):
    """A build folder for one test, removed after it."""
    build = tempfile.mkdtemp()
    test.addCleanup(shutil.rmtree, build)
    return build


def trace_files(build, tag, *names):
    """Empty NAME.dat files in build/traces/TAG/; returns that folder."""
    folder = os.path.join(build, "traces", tag)
    os.makedirs(folder)
    for name in names:
        open(os.path.join(folder, f"{name}.dat"), "w").close()
    return folder


class Decode(unittest.TestCase):
    def test_files_arrive_whole(self):
        one, two = os.urandom(5000), b"tracing\x00data\n"
        files, problems = traces.decode(framed("06-article", one) + framed("06-marker", two))
        self.assertEqual((files, problems), ({"06-article": one, "06-marker": two}, []))

    def test_a_wrong_size_or_digest_is_refused(self):
        data = os.urandom(100)
        files, problems = traces.decode(framed("a", data, size=99)
                                        + framed("b", data, digest="0" * 64))
        self.assertEqual(files, {})
        self.assertEqual(len(problems), 2)

    def test_a_file_cut_short(self):
        files, problems = traces.decode(framed("a", b"x" * 300, cut=True))
        self.assertEqual(files, {})
        self.assertEqual(problems, ["a: cut short"])

    def test_noise_between_files_is_named(self):
        _files, problems = traces.decode("boot noise\n" + framed("a", b"x"))
        self.assertEqual(problems, ["a line outside any file: 'boot noise'"])


class Store(unittest.TestCase):
    def test_each_file_in_the_tags_folder_the_old_ones_gone(self):
        build = temp_build(self)
        old = trace_files(build, "lab06-cp6", "06-gone")
        serial = traces.serial_file(build, "lab06-cp6")
        with open(serial, "w") as f:
            f.write(framed("06-article", b"abc"))
        paths, problems = traces.store(build, "lab06-cp6", serial)
        self.assertEqual(problems, [])
        self.assertEqual(sorted(os.listdir(old)), ["06-article.dat"])
        with open(paths["06-article"], "rb") as f:
            self.assertEqual(f.read(), b"abc")

    def test_no_serial_file(self):
        build = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, build)
        paths, problems = traces.store(build, "x", os.path.join(build, "missing"))
        self.assertEqual(paths, {})
        self.assertIn("no trace came", problems[0])


class GuestFiles(unittest.TestCase):
    def test_the_binary_its_loader_and_libraries_at_their_paths(self):
        files = traces.guest_files("/bin/true")
        self.assertEqual(files["bin/true"], "/bin/true")
        self.assertEqual(files["usr/bin/save-trace"], traces.SAVE_TRACE)
        self.assertTrue(any(p.startswith("lib64/ld-linux") for p in files), files)
        self.assertTrue(any(p.endswith("/libc.so.6") for p in files), files)
        self.assertTrue(all(os.path.isfile(h) for h in files.values()))


class Command(unittest.TestCase):
    def test_a_second_serial_port_and_the_guest_told(self):
        cmd = qemu.command("bz", "rd", ["lab:06"], 6, trace_file="/b/t.serial")
        self.assertEqual(cmd[cmd.index("stdio") + 1:cmd.index("stdio") + 3],
                         ["-serial", "file:/b/t.serial"])
        self.assertIn("ftlab.trace=1", cmd[cmd.index("-append") + 1])
        self.assertNotIn("ftlab.trace", " ".join(qemu.command("bz", "rd", ["lab:06"], 6)))

    def test_the_shell_keeps_its_console_on_the_first_port(self):
        cmd = qemu.command("bz", "rd", ["shell"], 6, interactive=True, trace_file="/b/t.serial")
        serial = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-serial"]
        self.assertEqual(serial, ["mon:stdio", "file:/b/t.serial"])


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
                traces.grade_facts(report_, paths, "trace-cmd [cp7]", tally)
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
        return (notes_line(traces.SOFT_NOTES[0]) + notes_line(traces.SOFT_NOTES[1])
                + SWITCH_LINE + mark_line("window 1") + SWITCH_LINE * 3
                + notes_line(traces.SOFT_NOTES[2]) + SWITCH_LINE + mark_line("window 2")
                + SWITCH_LINE * switches_after + notes_line(traces.SOFT_NOTES[3]))

    def grade(self, text):
        tally = ui.Tally()
        with contextlib.redirect_stdout(io.StringIO()), \
                mock.patch.object(traces, "report", lambda path: (text, None)):
            traces.grade_soft_mode({"02-soft-writes": "/t/x.dat"}, "trace-cmd [cp7]", tally)
        return [v.status for v in tally.verdicts]

    def test_the_story_counts_switches_per_window(self):
        self.assertEqual(traces.soft_mode_story(self.story()), (traces.SOFT_NOTES, 4, 0))
        self.assertEqual(self.grade(self.story()), ["pass"])

    def test_a_switch_after_echo_0_or_a_missing_note_fails(self):
        self.assertEqual(self.grade(self.story(switches_after=1)), ["fail"])
        self.assertEqual(self.grade(self.story().replace("1*", "1")), ["fail"])


class GdbLab(unittest.TestCase):
    def test_trace_boots_the_gdb_guest_with_the_second_port(self):
        from labkit import gdbrun, initramfs, labrun, series
        cp = next(cp for cp in series.checkpoints() if cp.needs_gdb)
        build = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, build)
        seen = {}

        def unattended(k, initrd, cp_, port, logs, timeout_for, plan=None, trace_file=None):
            seen.update(initrd=initrd, trace_file=trace_file)
            raise StopIteration

        session = mock.Mock(build_dir=build)
        with mock.patch.object(gdbrun, "unattended", unattended), \
                mock.patch.object(initramfs, "appended", lambda s, name, files: "both.cpio"), \
                mock.patch.object(traces, "guest_files", lambda: {}), \
                contextlib.redirect_stdout(io.StringIO()):
            with self.assertRaises(StopIteration):
                labrun.run_gdb_lab(session, mock.Mock(name="k"), cp, cp.number, ui.Tally(),
                                   port=1, trace=True)
        self.assertEqual(seen["initrd"], "both.cpio")
        self.assertTrue(seen["trace_file"].endswith(".serial"), seen)


@unittest.skipUnless(shutil.which("trace-cmd"), "trace-cmd is not installed")
class RealReport(unittest.TestCase):
    def test_a_file_that_is_no_trace_dat(self):
        path = tempfile.mktemp()
        with open(path, "wb") as f:
            f.write(b"not a trace")
        self.addCleanup(os.unlink, path)
        _text, err = traces.report(path)
        self.assertIsNotNone(err)


if __name__ == "__main__":
    unittest.main()
