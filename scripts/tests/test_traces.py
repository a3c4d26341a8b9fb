import base64
import contextlib
import hashlib
import io
import os
import shutil
import tempfile
import unittest
from unittest import mock

from labkit import qemu, traces, ui
from labkit.kernels import KernelId as K


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


REPORT = """cpus=1
            init-46    [000]    13.454889: print:                tracing_mark_write: armed
         busybox-48    [000]    13.583535: kmalloc:              (alloc_bprm+0x2a) call_site=alloc_bprm+0x2a bytes_req=416
            init-70    [001]    28.254119: kernel_stack:         <stack trace >
=> trace_event_buffer_commit (ffffffff8108a577)
=> trace_event_raw_event_kmalloc (ffffffff810c6e48)
"""


# The lab's notes, the top level and an instance.
INSTANCES = """cpus=1
ftlab-notes:             init-121   [000]     5.588063: print:                tracing_mark_write: in soft mode: enable reads 0*
                         init-121   [000]     5.611960: sched_switch:         init:121 [120] R ==> ksoftirqd/0:8 [120]
lab06:          kworker/0:1-12    [000]     6.0: kmalloc:              call_site=x
"""


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
        cmd = qemu.command("bz", "rd", ["lab:06"], K.of(6), trace_file="/b/t.serial")
        self.assertEqual(cmd[cmd.index("stdio") + 1:cmd.index("stdio") + 3],
                         ["-serial", "file:/b/t.serial"])
        self.assertIn("ftlab.trace=1", cmd[cmd.index("-append") + 1])
        self.assertNotIn("ftlab.trace", " ".join(qemu.command("bz", "rd", ["lab:06"], K.of(6))))

    def test_the_shell_keeps_its_console_on_the_first_port(self):
        cmd = qemu.command("bz", "rd", ["shell"], K.of(6), interactive=True, trace_file="/b/t.serial")
        serial = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-serial"]
        self.assertEqual(serial, ["mon:stdio", "file:/b/t.serial"])


class Events(unittest.TestCase):
    def test_marks_stacks_and_events(self):
        evs = traces.events(REPORT)
        self.assertEqual([(e["row"], e["ts"], e["kind"], e["label"]) for e in evs],
                         [("CPU 0", 13.454889, traces.MARK, "armed"),
                          ("CPU 0", 13.583535, "kmalloc",
                           "(alloc_bprm+0x2a) call_site=alloc_bprm+0x2a bytes_req=416"),
                          ("CPU 1", 28.254119, traces.STACK, "trace_event_buffer_commit")])
        self.assertEqual(evs[0]["task"], "init-46")

    def test_instances_notes_and_rows(self):
        evs = traces.events(INSTANCES)
        self.assertEqual([(e["row"], e["kind"], e["label"], e["task"]) for e in evs],
                         [(traces.NOTES_ROW, traces.NOTE, "in soft mode: enable reads 0*",
                           "init-121"),
                          ("CPU 0", "sched_switch", "init:121 [120] R ==> ksoftirqd/0:8 [120]",
                           "init-121"),
                          ("lab06 CPU 0", "kmalloc", "call_site=x", "kworker/0:1-12")])
        snap = traces.events(REPORT, snapshot=True)
        self.assertEqual({(e["row"], e["kind"]) for e in snap},
                         {(traces.SNAPSHOT_ROW, traces.SNAPSHOT)})


class Summary(unittest.TestCase):
    def test_kinds_most_frequent_first(self):
        text = REPORT + "            init-46    [000]    13.5: print:   tracing_mark_write: b\n"
        with mock.patch.object(traces, "report", lambda path: (text, None)):
            self.assertEqual(traces.summary("x.dat"), "2 marks, 1 kmalloc, 1 stack trace")
        with mock.patch.object(traces, "report", lambda path: ("cpus=1\n", None)):
            self.assertEqual(traces.summary("x.dat"), "empty")


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
                labrun.run_gdb_lab(session, mock.Mock(name="k"), cp, ui.Tally(),
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
