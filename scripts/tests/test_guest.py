"""The guest side, checked on the host: the cpio writer, and lib.sh's pure
helpers run under the same busybox sh the guest uses."""

import os
import shutil
import subprocess
import tempfile
import time
import unittest

from labkit import initramfs, series

LIB = os.path.join(series.ROOT, "initramfs", "lib.sh")


BUILD = os.environ.get("FTLAB_BUILD_DIR", os.path.join(series.ROOT, "build"))
# ftracetest's test.d/functions, which lib.sh sources in the guest, as the
# initramfs is packed from it.
UNPACKED = os.path.join(BUILD, "initramfs-src")
FUNCTIONS = os.path.join(UNPACKED, "ftrace", "test.d", "functions")


def tree_or_skip(test):
    """The extracted kernel tree (make check extracts it before these
    tests run); a test that needs it skips without it, and only then."""
    path = os.path.join(BUILD, "linux")
    if not os.path.isdir(os.path.join(path, ".git")):
        test.skipTest(f"no kernel tree extracted in {path}")
    return path


def sh(snippet):
    env = dict(os.environ, FTRACE_FUNCTIONS=FUNCTIONS)
    r = subprocess.run(["busybox", "sh", "-c", f". {LIB}; {snippet}"],
                       capture_output=True, text=True, env=env)
    return r.stdout.strip()


class Cpio(unittest.TestCase):
    """The initramfs is written by the kernel's own usr/gen_init_cpio."""

    def tool(self):
        tree_or_skip(self)
        return initramfs.gen_init_cpio(BUILD)

    def test_archive_lists_with_cpio(self):
        tool = self.tool()
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "init"), "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(os.path.join(d, "init"), 0o755)
        os.makedirs(os.path.join(d, "tree", "sub"))
        with open(os.path.join(d, "tree", "sub", "a.tc"), "w") as f:
            f.write("x\n")
        c = initramfs.CpioList()
        c.directory("dev")
        c.char_device("dev/console", 5, 1)
        c.file("init", os.path.join(d, "init"), executable=True)
        c.symlink("bin/sh", "busybox")
        c.tree("lab", os.path.join(d, "tree"))
        path = initramfs.write(c, os.path.join(d, "x.cpio"), tool)
        r = subprocess.run(["cpio", "-itv"], stdin=open(path, "rb"), capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"crw.*5,\s*1.*dev/console")
        self.assertRegex(r.stdout, r"-rwxr-xr-x.*init")
        self.assertRegex(r.stdout, r"lrwxrwxrwx.*bin/sh -> busybox")
        self.assertIn("lab/sub/a.tc", r.stdout)
        # the same input gives the same archive
        again = initramfs.write(c, os.path.join(d, "y.cpio"), tool)
        with open(path, "rb") as a, open(again, "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_a_generated_file_written_again_gives_the_same_archive(self):
        # gen_init_cpio keeps a file's date: files the harness writes on
        # every run are dated 0, or no guest run could ever be reused
        tool = self.tool()
        d = tempfile.mkdtemp()
        archives = []
        for n in range(2):
            listed = initramfs.generated(os.path.join(d, "ftracetest.list"), "basic1.tc\n")
            c = initramfs.CpioList()
            c.file("lab/ftracetest.list", listed)
            with open(initramfs.write(c, os.path.join(d, f"{n}.cpio"), tool), "rb") as f:
                archives.append(f.read())
            time.sleep(1.1)     # a file written a second later has another date
        self.assertEqual(archives[0], archives[1])


class WhatTheGuestGets(unittest.TestCase):
    def test_scripts_and_the_corpus_not_the_handouts(self):
        # a handout or an expected output edited must not change the
        # archive: make check would boot every guest again
        for name in ("lab.sh", "run.sh", "hostile.sh", "corpus"):
            self.assertTrue(initramfs.guest_reads(name), name)
        for name in ("README.adoc", "exercise.adoc", "expected", "before", "lab.gdb",
                     "gdb.expected", "expected-differences", "ftracetest.matrix"):
            self.assertFalse(initramfs.guest_reads(name), name)


class GuestLibrary(unittest.TestCase):
    def test_removal_of_listed_entries(self):
        cases = {
            # "unlimited" may be a counted probe whose count is -1: both forms
            "schedule:traceoff:unlimited": "!schedule:traceoff\n!schedule:traceoff:0",
            "schedule:traceoff:count=3": "!schedule:traceoff:0",
            "f:enable_event:sched:sched_switch:count=2": "!f:enable_event:sched:sched_switch:0",
            "traceoff:unlimited if prev_pid == 0": "!traceoff\n!traceoff:0",
            "stacktrace:count=5 if common_pid > 1": "!stacktrace:0",
        }
        for listed, removal in cases.items():
            self.assertEqual(sh(f"removal_of '{listed}'"), removal)

    def written_by_remove_all(self, name, listing):
        """What remove_all appends to a plain file named like a tracefs
        file that lists 'listing'."""
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(listing)
        sh(f"remove_all {path}")
        with open(path) as f:
            return f.read()[len(listing):].splitlines()

    def test_remove_all_writes_one_glob_per_probe_command(self):
        listing = ("#### all functions enabled ####\n"
                   "ksys_sync:snapshot:unlimited\n"
                   "do_fsync:snapshot:unlimited\n"
                   "ksys_sync:traceoff:count=3\n"
                   "ksys_sync:enable_event:kmem:kfree:count=1\n")
        self.assertEqual(self.written_by_remove_all("set_ftrace_filter", listing),
                         ["!*:enable_event:kmem:kfree:0", "!*:snapshot", "!*:snapshot:0",
                          "!*:traceoff:0"])

    def test_remove_all_writes_one_removal_per_trigger(self):
        listing = "traceoff:unlimited\nstacktrace:count=5 if common_pid > 1\n"
        self.assertEqual(self.written_by_remove_all("trigger", listing),
                         ["!traceoff", "!traceoff:0", "!stacktrace:0"])

    def test_try_write_reports_errors(self):
        d = tempfile.mkdtemp()
        self.assertEqual(sh(f"try_write x {d}/f"), f"'x' >> {d}/f: ok")
        self.assertEqual(sh("try_write x /dev/full"), "'x' >> /dev/full: No space left on device")

    def test_setup_is_quiet_and_reports_at_the_end_of_the_check(self):
        d = tempfile.mkdtemp()
        self.assertEqual(sh(f": > /tmp/.setup; setup x {d}/f; echo feature; cat /tmp/.setup"),
                         "feature")
        self.assertEqual(sh(": > /tmp/.setup; setup x /dev/full; echo feature; cat /tmp/.setup"),
                         "feature\nsetup: 'x' >> /dev/full: No space left on device")

    def test_requirements(self):
        initramfs.ftrace_selftests(tree_or_skip(self), UNPACKED)
        self.assertEqual(sh("TRACING=/; requirement_missing proc"), "")
        self.assertEqual(sh("TRACING=/; requirement_missing no_such_file"), "no_such_file")
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "README"), "w") as f:
            f.write("  <func>:enable_event:<system>:<event>[:count]\n")
        with open(os.path.join(d, "available_tracers"), "w") as f:
            f.write("function nop\n")
        self.assertEqual(sh(f"TRACING={d}; requirement_missing '\"enable_event\":README'"), "")
        self.assertEqual(sh(f"TRACING={d}; requirement_missing '\"snapshot\":README'"),
                         '"snapshot":README')
        self.assertEqual(sh(f"TRACING={d}; requirement_missing function:tracer"), "")
        self.assertEqual(sh(f"TRACING={d}; requirement_missing irqsoff:tracer"), "irqsoff:tracer")


class InitrdOnce(unittest.TestCase):
    """make check asks for the initramfs from two threads at once (a gdb
    run and a guest lane): it is packed once, and both get it."""

    def test_two_threads_pack_it_once(self):
        import threading
        import time
        from unittest import mock
        from labkit import labrun
        calls = []

        def build(*args):
            calls.append(args)
            time.sleep(0.2)
            return "/the/initrd"

        session = labrun.Session("/nonexistent-build")
        got = []
        with mock.patch.object(labrun.initramfs, "build", build):
            threads = [threading.Thread(target=lambda: got.append(session.initrd()))
                       for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        self.assertEqual(len(calls), 1)
        self.assertEqual(got, ["/the/initrd"] * 2)


class FtracetestLogs(unittest.TestCase):
    """ftracetest_run names ftracetest's log folder (-l): 6.12's ftracetest
    otherwise replaces a logs/latest link first, and its unlink prints
    "unlink: can't remove ..." into the output on every fresh guest. The
    folder is the one 6.1's picks by default (logs/DATE/)."""

    def test_the_log_folder_is_given(self):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "ftracetest"), "w") as f:
            f.write('#!/bin/sh\necho "args: $*"\n')
        os.chmod(os.path.join(d, "ftracetest"), 0o755)
        os.makedirs(os.path.join(d, "test.d"))
        with open(os.path.join(d, "list"), "w") as f:
            f.write("00basic/basic1.tc\n")
        # ftracetest_run works in /lab/ftrace: here, in d.
        out = sh(f"cd() {{ command cd {d}; }}; ftracetest_run matrix {d}/list").splitlines()
        args = [line for line in out if line.startswith("args: ")]
        self.assertEqual(len(args), 1, out)
        words = args[0].split()
        self.assertIn("-l", words)
        self.assertRegex(words[words.index("-l") + 1], r"^/lab/ftrace/logs/\d{8}-\d{6}/$")
        self.assertEqual(words[-1], "test.d/00basic/basic1.tc")


class TriggerFiles(unittest.TestCase):
    """Between a lab's checks, reset_instance empties the trigger files a
    check wrote through the helpers and those of the events set_event
    lists, without a glob of every event's trigger file (each one a new
    inode on 6.12's eventfs: seconds per reset on a debug guest); the
    robustness scripts, which write triggers in their own ways, keep the
    glob."""

    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.record = os.path.join(self.d, "record")
        for event, text in (("sched/sched_switch", "traceoff:unlimited\n"),
                            ("syscalls/sys_enter_read", "enable_event:kmem:kmalloc:1\n"),
                            ("kmem/kmalloc", "# Available triggers:\n# traceon traceoff\n"),
                            ("x/y", "stacktrace:unlimited\n")):
            os.makedirs(os.path.join(self.d, "events", event))
            with open(os.path.join(self.d, "events", event, "trigger"), "w") as f:
                f.write(text)
        with open(os.path.join(self.d, "set_event"), "w") as f:
            f.write("sched:sched_switch\nkmem:kmalloc\n")

    def files(self, mode, writes=""):
        # /tmp/.trigger-files is the guest's record: here, a file of the test's
        out = sh(f"cd {self.d}; rm -f /tmp/.trigger-files; {writes} "
                 f"TRIGGER_RESET={mode}; trigger_files; rm -f /tmp/.trigger-files")
        return sorted(os.path.relpath(line, self.d) if line.startswith("/") else line
                      for line in out.splitlines())

    def test_between_checks_what_was_written_and_what_set_event_lists(self):
        writes = ("setup 'x' events/syscalls/sys_enter_read/trigger; "
                  "try_write 'y' set_ftrace_filter > /dev/null; ")
        self.assertEqual(self.files("tracked", writes),
                         ["events/sched/sched_switch/trigger",
                          "events/syscalls/sys_enter_read/trigger"])

    def test_elsewhere_every_trigger_file(self):
        self.assertEqual(self.files(""), ["events/sched/sched_switch/trigger",
                                          "events/syscalls/sys_enter_read/trigger",
                                          "events/x/y/trigger"])

    def test_only_the_files_of_this_instance(self):
        inst = os.path.join(self.d, "instances", "lab06")
        os.makedirs(os.path.join(inst, "events", "sched", "sched_switch"))
        with open(os.path.join(inst, "events", "sched", "sched_switch", "trigger"), "w") as f:
            f.write("traceon:unlimited\n")
        writes = "try_write 'traceon' instances/lab06/events/sched/sched_switch/trigger > /dev/null; "
        self.assertEqual(self.files("tracked", writes), ["events/sched/sched_switch/trigger"])
        out = sh(f"cd {self.d}; rm -f /tmp/.trigger-files; {writes} cd instances/lab06; "
                 "TRIGGER_RESET=tracked; trigger_files; rm -f /tmp/.trigger-files")
        self.assertEqual(out.splitlines(), [f"{inst}/events/sched/sched_switch/trigger"])
