import contextlib
import io
import os
import shutil
import subprocess
import tempfile
import unittest

from labkit import qemu, races, series
from labkit.kernels import base_release

# What the harness calls upstream: the release patches/BASE names ("6.12").
BASE = base_release()
from labkit.kernels import KernelId as K


def report(a, b=None, stamp="[   41.702310] "):
    """A KCSAN report as 6.1's kernel/kcsan/report.c prints it."""
    where = f"{a} / {b}" if b else f"{a}+0x4d/0x90"
    return [stamp + "=" * 66,
            stamp + f"BUG: KCSAN: data-race in {where}",
            stamp,
            stamp + "write to 0xffff888004a3c0d8 of 8 bytes by task 412 on cpu 1:",
            stamp + f" {a}+0x4d/0x90",
            stamp + " vfs_write+0x182/0x5a0",
            stamp,
            stamp + "value changed: 0x0000000000000001 -> 0x0000000000000000",
            stamp,
            stamp + "Reported by Kernel Concurrency Sanitizer on:",
            stamp + "CPU: 0 PID: 413 Comm: sh Not tainted 6.1.0 #1",
            stamp + "=" * 66]


def kernel_log(*reports, selftest="4/4"):
    lines = [qemu.LOG_BEGIN, "[    0.310000] kcsan: enabled early"]
    if selftest:
        lines.append(f"[    0.420000] kcsan: selftest: {selftest} tests passed")
    for r in reports:
        lines += r
    return lines + [qemu.LOG_END]


class Parse(unittest.TestCase):
    def test_a_report_names_both_functions_without_offsets(self):
        selftest, found = races.parse(kernel_log(report("trigger_walk", "trigger_remove.isra.0")))
        self.assertEqual(selftest, (4, 4))
        self.assertEqual([(r.kind, r.functions) for r in found],
                         [("data-race", ("trigger_walk", "trigger_remove"))])
        self.assertIn("value changed", " ".join(found[0].lines))
        self.assertFalse(any("=====" in l for l in found[0].lines))

    def test_one_known_access(self):
        _selftest, found = races.parse(kernel_log(report("probe_take_count")))
        self.assertEqual(found[0].functions, ("probe_take_count",))

    def test_the_console_copy_of_a_report_is_not_counted_twice(self):
        """The guest prints the kernel log at its end; a report also went
        to the console (pr_err) when it came."""
        lines = report("a_fn", "b_fn", stamp="") + kernel_log(report("a_fn", "b_fn"))
        self.assertEqual(len(races.parse(lines)[1]), 1)

    def test_a_run_cut_short_is_read_from_its_console(self):
        lines = ["kcsan: selftest: 4/4 tests passed"] + report("a_fn", "b_fn", stamp="")
        selftest, found = races.parse(lines)
        self.assertEqual((selftest, len(found)), ((4, 4), 1))

    def test_no_selftest_line(self):
        self.assertIsNone(races.parse(kernel_log(selftest=None))[0])

    def test_a_race_report_is_no_crash_and_no_kernel_report(self):
        """Other kernels' reports fail a run at once; a race is graded here."""
        line = "[   41.702310] BUG: KCSAN: data-race in a_fn / b_fn"
        self.assertIsNone(qemu.CRASH_RE.search(line))
        self.assertIsNone(qemu.REPORT_RE.search(line))
        self.assertIsNotNone(qemu.CRASH_RE.search("[ 1.0] BUG: KASAN: double-free in x"))
        self.assertIsNotNone(qemu.REPORT_RE.search("[ 1.0] BUG: sleeping function called"))

    def test_a_kcsan_guest_goes_on_after_a_race(self):
        """KCSAN panics after a report when panic_on_warn is set."""
        from labkit import kbuild
        kcsan = kbuild.Kernel("/b", K.of(7, "kcsan"))
        self.assertNotIn("panic_on_warn", qemu.append(["robust:stress"], K.of(7), kcsan.warn_panics))
        self.assertIn("oops=panic", qemu.append(["robust:stress"], K.of(7), kcsan.warn_panics))
        self.assertIn("panic_on_warn=1", qemu.append(["robust:stress"], K.of(7)))


C_FILE = """\
// SPDX-License-Identifier: GPL-2.0
#include <linux/ftrace.h>

static int probe_count(void *data);

struct probe_kind {
	int (*init)(void);
};

static struct probe_kind kinds[] = {
	{ .init = NULL },
};

static inline bool
probe_is_counted(struct probe *p,
		 int limit)
{
	return p->count != -1;
}

int probe_register(struct probe *p)
{
	if (p)
		return 0;
	return -EINVAL;
}
"""


class Functions(unittest.TestCase):
    def test_kernel_style_definitions_only(self):
        fns = races.c_functions(C_FILE)
        self.assertEqual(sorted(fns), ["probe_is_counted", "probe_register"])
        self.assertTrue(fns["probe_register"].endswith("return -EINVAL;\n}"))

    def test_functions_a_head_adds_or_changes(self):
        repo = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, repo)

        def git(*args, check=True):
            r = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
            if check and r.returncode:
                raise RuntimeError(r.stderr)
            return r.stdout.strip()
        git("init", "-q", "-b", "upstream")
        git("config", "user.email", "t@t")
        git("config", "user.name", "t")
        os.makedirs(os.path.join(repo, "kernel"))
        path = os.path.join(repo, "kernel", "probe.c")
        with open(path, "w") as f:
            f.write(C_FILE)
        git("add", ".")
        git("commit", "-q", "-m", "base")
        git("checkout", "-q", "-b", "lab/cp7")
        with open(path, "w") as f:
            f.write(C_FILE.replace("return -EINVAL;", "return -ENOENT;")
                    + "\nvoid probe_new(void)\n{\n}\n")
        with open(os.path.join(repo, "README"), "w") as f:
            f.write("not C\n")
        git("add", ".")
        git("commit", "-q", "-m", "head")
        self.assertEqual(races.series_functions(git, "upstream", "lab/cp7"),
                         {"probe_register", "probe_new"})


class Classify(unittest.TestCase):
    def test_ours_elsewhere_and_each_pair_once(self):
        found = races.parse(kernel_log(report("trigger_walk", "n_tty_write"),
                                       report("n_tty_write", "trigger_walk"),
                                       report("tick_sched_timer", "n_tty_write")))[1]
        mine, others = races.classify(found, {"trigger_walk"})
        self.assertEqual([r.title() for r in mine], ["data-race in trigger_walk / n_tty_write"])
        self.assertEqual([r.title() for r in others],
                         ["data-race in tick_sched_timer / n_tty_write"])


def two_accesses(first, second, stacks=True):
    """A report of two accesses, each (function, access words), as 6.12's
    kernel log has it (a console copy interleaved with other output
    may lack the stacks: stacks=False)."""
    lines = ["=" * 66, f"BUG: KCSAN: data-race in {first[0]} / {second[0]}", ""]
    for task, (function, access) in enumerate((first, second)):
        lines.append(f"{access} to 0xffff88800020b288 of 8 bytes by task {1645 + task} on cpu {task}:")
        if stacks:
            lines += [f" {function}+0xa3/0xca", " event_triggers_call+0xa6/0xcb"]
        lines.append("")
    return lines + ["value changed: 0x0000000000000423 -> 0x0000000000000463", "=" * 66]


class MarkedAccesses(unittest.TestCase):
    """KCSAN reports a race when one access at least is plain; the race
    is the series' when the plain access is in the series' code."""

    OURS = {"event_enable_trigger"}

    def classify(self, report):
        return races.classify(races.parse(kernel_log(report))[1], self.OURS)

    def test_a_marked_write_of_ours_against_a_plain_read_elsewhere_is_not_ours(self):
        mine, others = self.classify(two_accesses(
            ("event_enable_trigger", "write (marked)"),
            ("trace_event_buffer_lock_reserve", "read")))
        self.assertEqual(mine, [])
        self.assertEqual([r.title() for r in others],
                         ["data-race in event_enable_trigger / trace_event_buffer_lock_reserve"])

    def test_a_plain_access_of_ours_is_ours(self):
        mine, _ = self.classify(two_accesses(
            ("event_enable_trigger", "write"),
            ("trace_event_buffer_lock_reserve", "read (marked)")))
        self.assertEqual(len(mine), 1)

    def test_without_the_stacks_the_title_decides(self):
        mine, _ = self.classify(two_accesses(
            ("event_enable_trigger", "write (marked)"),
            ("trace_event_buffer_lock_reserve", "read"), stacks=False))
        self.assertEqual(len(mine), 1)


class FakeRun:
    log = "build/logs/kcsan-cp7-kcsan.log"

    def __init__(self, lines, status="done"):
        self.lines, self.status = lines, status

    @property
    def ok(self):
        return self.status == "done"

    def explain(self):
        return [f"the guest: {self.status}"]


class Kernel:
    smp = 2

    def __init__(self, kernel, uninstrumented=()):
        self.id = K.parse(kernel).with_variant("kcsan")
        self.name = self.id.name
        self.uninstrumented = list(uninstrumented)

    def race_checking_problems(self):
        return [f"{o}: compiled without -fsanitize=thread" for o in self.uninstrumented]


class Grade(unittest.TestCase):
    ITEMS = ["robust:stress", "lab:06"]

    def grade(self, lines, kernel=7, status="done", reference=None, uninstrumented=()):
        from unittest import mock
        from labkit import ui
        lab = ["@@ftlab lab-begin 06", "@@ftlab lab-end 06"]
        tally = ui.Tally()
        with contextlib.redirect_stdout(io.StringIO()) as out, \
                mock.patch.object(races.robust, "grade_stress",
                                  lambda run, r, k, tally, smp: tally.record(True, "stress")):
            races.grade(self.ITEMS, FakeRun(lab + lines, status),
                        Kernel(kernel, uninstrumented), tally, {"trigger_walk"}, reference)
        return [(v.status, v.name) for v in tally.verdicts], out.getvalue()

    def test_no_race_in_the_series_passes_and_lists_the_others(self):
        verdicts, out = self.grade(kernel_log(report("tick_sched_timer", "n_tty_write")))
        self.assertEqual([s for s, _ in verdicts], ["pass"] * 5, verdicts)
        self.assertIn(f"{BASE}'s own: data-race in tick_sched_timer / n_tty_write", out)

    def test_a_race_in_the_series_fails_with_its_report(self):
        verdicts, out = self.grade(kernel_log(report("trigger_walk", "n_tty_write")))
        self.assertEqual(verdicts[-1][0], "fail")
        self.assertIn("no data race in a function the series adds or changes", verdicts[-1][1])
        self.assertIn("write to 0xffff888004a3c0d8", out)

    def test_a_race_upstream_shows_too_is_said_so(self):
        ref = races.parse(kernel_log(report("trigger_walk", "n_tty_write")))[1]
        _verdicts, out = self.grade(kernel_log(report("trigger_walk", "n_tty_write")),
                                    reference=ref)
        self.assertIn(f"{BASE}'s KCSAN kernel reports it too", out)

    def test_kcsan_off_fails_first(self):
        verdicts, out = self.grade(kernel_log(selftest=None))
        self.assertEqual(verdicts, [("fail", "KCSAN [cp7-kcsan]: guest run to its end with "
                                     "KCSAN on, two vCPUs")])
        self.assertIn("self-test did not pass", out)

    def test_a_failed_selftest_fails(self):
        verdicts, _out = self.grade(kernel_log(selftest="3/4"))
        self.assertEqual(verdicts[0][0], "fail")

    def test_upstream_races_are_listed_never_failed(self):
        verdicts, out = self.grade(kernel_log(report("trigger_walk", "n_tty_write")),
                                   kernel="upstream")
        self.assertEqual([s for s, _ in verdicts], ["pass"] * 4)
        self.assertIn(f"{BASE}'s own", out)

    def test_uninstrumented_tracing_code_fails(self):
        """6.1's kernel/trace/Makefile leaves the tracing code out of KCSAN:
        a kernel built so cannot see a race in the series' code."""
        verdicts, out = self.grade(kernel_log(), uninstrumented=["kernel/trace/ftrace.o"])
        self.assertEqual(verdicts[1], ("fail", "KCSAN [cp7-kcsan]: the tracing code is "
                                       f"instrumented (kernel/trace/, which {BASE} builds without "
                                       "KCSAN)"))
        self.assertIn("kernel/trace/ftrace.o: compiled without -fsanitize=thread", out)


class Plan(unittest.TestCase):
    def test_light_and_whole(self):
        last = series.last_checkpoint()
        self.assertEqual(races.plan(K.of(last), False), ["robust:stress", "lab:06"])
        whole = races.plan(K.of(last), True)
        self.assertIn("lab:07", whole)
        self.assertNotIn("lab:02", whole)      # a gdb lab
        self.assertEqual(races.plan(K.of(3), True), ["robust:stress", "lab:00", "lab:01", "lab:03"])


if __name__ == "__main__":
    unittest.main()
