"""The QEMU runner's endings, with stand-in 'guests' (small Python programs
that print what a guest's console would), so no kernel is needed."""

import os
import sys
import tempfile
import time
import unittest
from types import SimpleNamespace

from labkit import qemu
from labkit.kernels import KernelId as K


def fake(script):
    return [sys.executable, "-c", script]


class Endings(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.log = os.path.join(self.dir, "console.log")

    def test_done(self):
        r = qemu.run(fake("print('booting'); print('@@ftlab done')"), self.log, 10)
        self.assertEqual(r.status, "done")
        self.assertTrue(r.ok)
        with open(self.log) as f:
            self.assertIn("booting", f.read())

    def test_panic_is_fast_and_shown(self):
        script = ("import time; print('Kernel panic - not syncing: Attempted to kill init!');"
                  "print('CPU: 0 PID: 1 Comm: init'); import sys; sys.stdout.flush();"
                  "time.sleep(60)")
        start = time.monotonic()
        r = qemu.run(fake(script), self.log, 50)
        self.assertEqual(r.status, "crash")
        self.assertLess(time.monotonic() - start, 15)
        self.assertIn("Kernel panic", "\n".join(r.explain()))
        self.assertIn("CPU: 0 PID: 1 Comm: init", r.problem)

    def test_warn_on_the_console_is_a_crash_even_if_the_guest_finishes(self):
        script = "print('WARNING: CPU: 0 PID: 1 at kernel/trace/ftrace.c:10 f+0x1/0x2'); print('@@ftlab done')"
        self.assertEqual(qemu.run(fake(script), self.log, 10).status, "crash")

    def test_timeout_message(self):
        r = qemu.run(fake("import time; print('still here', flush=True); time.sleep(60)"), self.log, 2)
        self.assertEqual(r.status, "timeout")
        text = "\n".join(r.explain())
        self.assertIn("guest did not finish in 2 s", text)
        self.assertIn("still here", text)
        self.assertIn("full log:", text)

    def test_exit_without_done(self):
        r = qemu.run(fake("print('half way')"), self.log, 10)
        self.assertEqual(r.status, "exited")
        self.assertFalse(r.ok)

    def test_lab_output_is_not_mistaken_for_a_crash(self):
        script = "print('WARNING: this lab prints a word'); print('BUG count: 0'); print('@@ftlab done')"
        self.assertEqual(qemu.run(fake(script), self.log, 10).status, "done")

    def test_command_is_tcg_single_threaded_never_kvm(self):
        cmd = qemu.command("bz", "initrd", ["lab:01"], K.of(1))
        self.assertIn("tcg,thread=single", cmd)
        self.assertNotIn("-enable-kvm", cmd)
        self.assertIn("-no-reboot", cmd)

    def test_every_kind_of_run_has_the_same_kernel_command_line(self):
        k = SimpleNamespace(bzimage="bz", id=K.of(3))
        plain = qemu.guest_command(k, "initrd", ["lab:03"])
        paused = qemu.guest_command(k, "initrd", ["lab:03"], gdb_port=1234)
        shell = qemu.guest_command(k, "initrd", ["lab:03"], interactive=True)
        for cmd in (plain, paused, shell):
            self.assertEqual(cmd[cmd.index("-append") + 1], qemu.append(["lab:03"], K.of(3)))
        # under gdb: paused, a gdbstub, the console streamed like any run
        self.assertEqual(paused[-3:], ["-gdb", "tcp::1234", "-S"])
        self.assertIn("stdio", paused)
        self.assertIn("-nographic", shell)
        self.assertNotIn("stdio", shell)


class WatchWhileSomethingElseRuns(unittest.TestCase):
    """Under gdb the harness watches the console while gdb runs: the run
    ends when gdb does (stop()), or at once on a crash."""

    def setUp(self):
        self.log = os.path.join(tempfile.mkdtemp(), "console.log")

    def test_stopped_when_gdb_ends(self):
        guest = qemu.Guest(fake("import time; print('up', flush=True); time.sleep(30)"), self.log)
        start = time.monotonic()
        # "gdb" ends once the guest is up; the guest itself would go on
        run = guest.watch(25, stop=lambda: bool(guest.lines))
        self.assertEqual(run.status, "stopped")
        self.assertLess(time.monotonic() - start, 20)
        self.assertEqual(run.lines, ["up"])

    def test_a_crash_under_gdb_is_seen_while_it_happens(self):
        script = ("import time; print('Kernel panic - not syncing: x', flush=True); "
                  "time.sleep(60)")
        guest = qemu.Guest(fake(script), self.log)
        start = time.monotonic()
        run = guest.watch(50, stop=lambda: False)
        self.assertEqual(run.status, "crash")
        self.assertLess(time.monotonic() - start, 20)

    def test_a_report_in_the_kernel_log_fails_a_stopped_run(self):
        script = "\n".join(f"print({l!r}, flush=True)" for l in (
            qemu.LOG_BEGIN, "[    1.0] WARNING: possible circular locking", qemu.LOG_END))
        guest = qemu.Guest(fake(script + "\nimport time; time.sleep(30)"), self.log)
        run = guest.watch(25, stop=lambda: qemu.LOG_END in guest.lines)
        self.assertEqual(run.status, "kernel-report")


class Timeouts(unittest.TestCase):
    def test_one_policy(self):
        self.assertEqual(qemu.timeout_for(["lab:01"]), 120)
        self.assertEqual(qemu.timeout_for(["gdb:03"]), 240)
        self.assertEqual(qemu.timeout_for(["gdb:03"], 33), 33)
        self.assertEqual(qemu.timeout_for(["lab:01"], slowdown=K.of(1, "debug").spec.slowdown),
                         120 * K.of(1, "debug").spec.slowdown)

    def test_debug_kernel_boots_with_two_cpus_on_one_host_thread(self):
        k = SimpleNamespace(bzimage="bz", id=K.of(7), smp=2)
        cmd = qemu.guest_command(k, "initrd", ["lab:07"])
        self.assertEqual(cmd[cmd.index("-smp") + 1], "2")
        self.assertIn("tcg,thread=single", cmd)


class KernelLog(unittest.TestCase):
    """The kernel log the guest prints at its end is scanned for reports
    that the console (loglevel 4) never showed."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.log = os.path.join(self.dir, "console.log")

    def guest(self, *log_lines):
        body = [qemu.LOG_BEGIN, *log_lines, qemu.LOG_END, qemu.DONE_LINE]
        return fake("\n".join(f"print({line!r})" for line in body))

    def test_clean_log_is_done(self):
        r = qemu.run(self.guest("[    0.000000] Linux version 6.1",
                                "[    1.000000] tracing: lab says WARNING-free"), self.log, 10)
        self.assertEqual(r.status, "done")

    def test_lockdep_report_fails_a_finished_run(self):
        r = qemu.run(self.guest("[    0.1] boot",
                                "[    5.123456] WARNING: possible circular locking dependency detected",
                                "[    5.123457] 6.1.192 #1 Not tainted"), self.log, 10)
        self.assertEqual(r.status, "kernel-report")
        self.assertFalse(r.ok)
        text = "\n".join(r.explain())
        self.assertIn("possible circular locking", text)
        self.assertIn("Not tainted", text)

    def test_warn_in_the_log_fails_the_run(self):
        r = qemu.run(self.guest("[    2.000000] ------------[ cut here ]------------",
                                "[    2.000001] WARNING: CPU: 0 PID: 1 at kernel/trace/ftrace.c:4895 f+0x1/0x2",
                                "[    2.000002] Call Trace:"), self.log, 10)
        self.assertEqual(r.status, "kernel-report")
        self.assertIn("Call Trace:", r.problem[-1])

    def test_kmemleak_and_rcu(self):
        for line in ("unreferenced object 0xffff888003c1e000 (size 64):",
                     "[   9.2] WARNING: suspicious RCU usage",
                     "[  30.0] rcu: INFO: rcu_sched self-detected stall on CPU"):
            self.assertEqual(qemu.kernel_log_reports([qemu.LOG_BEGIN, line, qemu.LOG_END]),
                             [line])

    def test_lab_output_outside_the_log_is_not_scanned(self):
        self.assertEqual(qemu.kernel_log_reports(["BUG: a word a lab printed"]), [])


class CrashExcerpt(unittest.TestCase):
    def test_the_replayed_warn_is_shown_not_the_boot_log(self):
        lines = (["[    5.0] Kernel panic - not syncing: panic_on_warn set ..."]
                 + [f"[    0.{i:06d}] boot message {i}" for i in range(100)]
                 + ["[    4.9] ------------[ cut here ]------------",
                    "[    4.9] WARNING: CPU: 0 PID: 1 at kernel/trace/ftrace.c:4895 x+0x1/0x2",
                    "[    4.9] Call Trace:"])
        excerpt = qemu.crash_excerpt(lines)
        self.assertIn("[ cut here ]", excerpt[0])
        self.assertIn("Call Trace:", "\n".join(excerpt))
        self.assertIn("Kernel panic", excerpt[-1])

    def test_a_plain_panic_starts_at_the_panic(self):
        lines = ["boot", "Kernel panic - not syncing: Attempted to kill init!", "CPU: 0 PID: 1"]
        self.assertEqual(qemu.crash_excerpt(lines)[0], lines[1])


class CommandLine(unittest.TestCase):
    def test_append_names_plan_and_kernel(self):
        line = qemu.append(["lab:01", "ftracetest"], K.upstream())
        self.assertIn("ftlab=lab:01,ftracetest", line)
        self.assertIn("ftlab.kernel=upstream", line)
        self.assertIn("ftlab.kernel=cp3", qemu.append(["lab:03"], K.of(3)))
        self.assertIn("panic_on_warn=1", line)


# A stand-in QEMU with a gdbstub: it listens on the port it is given, as
# QEMU's -gdb tcp::PORT does, or says what QEMU says when it cannot.
FAKE_STUB = r'''
import socket, sys, time
port = int(sys.argv[1])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("", port))
except OSError as e:
    print(f"qemu-system-x86_64: -gdb tcp::{port}: Failed to find an available port: {e.strerror}",
          flush=True)
    sys.exit(1)
s.listen(1)
time.sleep(300)
'''


class GdbPort(unittest.TestCase):
    """make gdb and the unattended gdb runs attach gdb only to their own
    QEMU: when it cannot open its port, an error says so."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.log = os.path.join(self.dir, "console.log")

    def start(self, port):
        from unittest import mock
        from labkit import gdbrun
        with mock.patch.object(gdbrun.qemu, "guest_command",
                               return_value=fake(FAKE_STUB) + [str(port)]):
            return gdbrun.start_guest(None, "initrd", port, self.log, "gdb:01")

    def test_a_free_port_by_default(self):
        import ftlab
        from labkit import gdbrun
        self.assertIsNone(ftlab.parse_args(["gdb", "1"]).gdb_port)    # then free_port()
        guest = self.start(gdbrun.free_port())
        try:
            self.assertIsNone(guest.proc.poll())
        finally:
            guest.stop()

    def test_a_port_another_process_holds_is_an_error(self):
        import socket
        from labkit import gdbrun
        other = socket.socket()         # another user's guest, listening
        other.bind(("", 0))
        other.listen(1)
        port = other.getsockname()[1]
        try:
            with self.assertRaises(gdbrun.GdbPortError) as e:
                self.start(port)
        finally:
            other.close()
        self.assertIn(f"could not open gdb port {port}", str(e.exception))
        self.assertIn("Failed to find an available port", str(e.exception))

    def test_only_the_guests_own_socket_counts(self):
        import socket
        from labkit import gdbrun
        other = socket.socket()
        other.bind(("", 0))
        other.listen(1)
        try:
            port = other.getsockname()[1]
            self.assertTrue(gdbrun.listens(os.getpid(), port))
            self.assertFalse(gdbrun.listens(os.getppid(), port))
        finally:
            other.close()


class QuietGuest(unittest.TestCase):
    """A guest silent for qemu.QUIET seconds: the run says what it is
    running."""

    def run_guest(self, script):
        import io
        from contextlib import redirect_stdout
        from unittest import mock
        out = io.StringIO()
        log = os.path.join(tempfile.mkdtemp(), "console.log")
        cmd = fake(script) + ["-append", "console=ttyS0 ftlab=lab:06"]
        with mock.patch.object(qemu, "QUIET", 0.5), redirect_stdout(out):
            run = qemu.run(cmd, log, 60)
        return run, out.getvalue()

    def test_says_what_a_quiet_guest_runs(self):
        run, out = self.run_guest("import time; print('@@ftlab check-begin 06 count check "
                                  "a count', flush=True); time.sleep(3); print('@@ftlab done')")
        self.assertEqual(run.status, "done")
        self.assertIn("guest quiet for", out)
        self.assertIn("running lab:06; last step: check-begin 06 count", out)


class Reuse(unittest.TestCase):
    """make check's kept runs (qemu.Reuse): a run that went to its end is
    graded again from its log when nothing in its command line changed,
    and runs again otherwise. The stand-in guest counts its boots in a
    file, and 'names' a file as QEMU names its kernel."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.log = os.path.join(self.dir, "check-cp1.log")
        self.boots = os.path.join(self.dir, "boots")
        self.kernel = os.path.join(self.dir, "bzImage")
        with open(self.kernel, "w") as f:
            f.write("kernel one")

    def cmd(self, end="@@ftlab done"):
        script = (f"open({self.boots!r}, 'a').write('x'); print('lab output');"
                  f"print({end!r})")
        return fake(script) + ["-kernel", self.kernel]

    def booted(self):
        with open(self.boots) as f:
            return len(f.read())

    def test_the_same_run_is_graded_from_its_log(self):
        first = qemu.run(self.cmd(), self.log, 10, reuse=True)
        again = qemu.run(self.cmd(), self.log, 10, reuse=True)
        self.assertEqual(self.booted(), 1)
        self.assertTrue(again.ok)
        self.assertIsNone(first.reused)
        self.assertTrue(again.reused)
        self.assertIn("lab output", again.lines)

    def test_a_changed_kernel_boots_again(self):
        qemu.run(self.cmd(), self.log, 10, reuse=True)
        with open(self.kernel, "w") as f:
            f.write("kernel two, another size")
        r = qemu.run(self.cmd(), self.log, 10, reuse=True)
        self.assertEqual(self.booted(), 2)
        self.assertIsNone(r.reused)

    def test_another_plan_boots_again(self):
        qemu.run(self.cmd(), self.log, 10, reuse=True)
        qemu.run(self.cmd() + ["-append", "ftlab=lab:02"], self.log, 10, reuse=True)
        self.assertEqual(self.booted(), 2)

    def test_a_failed_run_is_never_kept(self):
        r = qemu.run(self.cmd(end="half way"), self.log, 10, reuse=True)
        self.assertFalse(r.ok)
        qemu.run(self.cmd(end="half way"), self.log, 10, reuse=True)
        self.assertEqual(self.booted(), 2)

    def test_an_edited_log_boots_again(self):
        qemu.run(self.cmd(), self.log, 10, reuse=True)
        with open(self.log, "a") as f:
            f.write("a line nobody printed\n")
        r = qemu.run(self.cmd(), self.log, 10, reuse=True)
        self.assertEqual(self.booted(), 2)
        self.assertNotIn("a line nobody printed", r.lines)

    def test_without_reuse_every_run_boots(self):
        qemu.run(self.cmd(), self.log, 10, reuse=True)
        qemu.run(self.cmd(), self.log, 10)
        self.assertEqual(self.booted(), 2)
