import os
import shutil
import subprocess
import tempfile
import unittest

from labkit import faults, series
from labkit.kernels import KernelId as K
from labkit.kernels import base_release

# What the harness calls upstream: the release patches/BASE names ("6.12").
BASE = base_release()


def console(*sweeps, end=True):
    """A guest's console for sweeps given as (name, allocations, tries,
    extra lines), tries being (n, result, state)."""
    lines = ["boot noise"]
    for name, k, tries, extra in sweeps:
        lines.append(f"@@ftlab fault-write {name}")
        for n, result, state in tries:
            lines.append(f"@@ftlab fault {n} {result} {state}")
            lines += extra.get(n, [])
        if k is not None:
            lines.append(f"@@ftlab fault-allocations {name} {k}")
    if end:
        lines.append("@@ftlab faults-end")
    return lines


GOOD = ("probe-traceon", 3, [(1, "Out of memory", "before"), (2, "ok", "after"),
                             (3, "Cannot allocate memory", "before")], {})


class Writes(unittest.TestCase):
    def test_every_probe_and_trigger_kind_with_and_without_count(self):
        names = {w.name for w in faults.writes()}
        for cmd in ("traceon", "traceoff", "stacktrace", "snapshot", "dump", "cpudump",
                    "enable_event", "disable_event"):
            self.assertIn(f"probe-{cmd}", names)
            self.assertIn(f"probe-{cmd}-count", names)
        for cmd in ("traceon", "traceoff", "stacktrace", "snapshot", "enable_event",
                    "disable_event"):
            for suffix in ("", "-count", "-filter", "-count-filter"):
                self.assertIn(f"trigger-{cmd}{suffix}", names)
        self.assertTrue({"probe-module-event", "trigger-module-event", "clock-uptime",
                         "clock-perf", "option-function-trace", "snapshot-file"} <= names)

    def test_light_list_is_a_part_of_the_whole(self):
        light = [w.name for w in faults.writes(full=False)]
        self.assertEqual(sorted(light), sorted(faults.LIGHT))
        self.assertLess(len(light), len(faults.writes()))

    def test_no_module_writes_without_the_module(self):
        names = [w.name for w in faults.writes(modules=False)]
        self.assertNotIn("probe-module-event", names)
        self.assertNotIn("trigger-module-event", names)

    def test_snapshot_writes_free_the_buffer_again(self):
        for w in faults.writes():
            if "snapshot" in w.value:
                self.assertIn("echo 0 > snapshot", w.undo, w.name)

    def test_a_counted_probe_is_removed_by_naming_a_count(self):
        ws = {w.name: w for w in faults.writes()}
        self.assertIn("'!ksys_sync:traceon:0'", ws["probe-traceon-count"].undo)
        self.assertIn("'!ksys_sync:traceon' ", ws["probe-traceon"].undo + " ")
        self.assertIn("'!vfs_fsync*:stacktrace:0'", ws["probe-glob-stacktrace"].undo)

    def test_removal_names_the_command(self):
        w = {w.name: w for w in faults.writes()}["trigger-stacktrace-count-filter"]
        self.assertEqual(w.value, 'stacktrace:2 if comm == "ftlab"')
        self.assertIn("'!stacktrace'", w.undo)

    def test_encode_one_line_per_write_five_fields(self):
        ws = faults.writes()
        lines = faults.encode(ws).splitlines()
        self.assertEqual(len(lines), len(ws))
        self.assertTrue(all(len(line.split("\t")) == 5 for line in lines))

    def test_encode_refuses_a_tab(self):
        with self.assertRaises(ValueError):
            faults.encode([faults.Write("x", "f", "a\tb", "", ("f",))])


class Grading(unittest.TestCase):
    def test_good_sweep(self):
        res = faults.parse(console(GOOD))
        self.assertTrue(res.finished)
        self.assertEqual(faults.problems(res, []), [])
        self.assertEqual(res.sweeps["probe-traceon"].allocations, 3)
        self.assertEqual(faults.errors(res), {"Out of memory": 1, "Cannot allocate memory": 1})
        self.assertIn("3 allocations failed one at a time: 2 writes refused",
                      faults.figures(res))

    def test_a_refused_write_that_left_something_fails(self):
        res = faults.parse(console(("probe-traceon", 1, [(1, "Out of memory", "other")],
                                    {1: ["@@ftlab fault-state |ksys_sync:traceon:unlimited;"]})))
        found = faults.problems(res, [])
        self.assertEqual(len(found), 1)
        self.assertIn("left the state other", found[0])
        self.assertIn("ksys_sync:traceon", found[0])

    def test_a_write_that_succeeded_must_show_its_whole_state(self):
        res = faults.parse(console(("x", 1, [(1, "ok", "before")], {})))
        self.assertIn("succeeded but the state is before", faults.problems(res, [])[0])

    def test_the_retry_and_the_removal_are_checked(self):
        res = faults.parse(console(("x", 1, [(1, "Out of memory", "before")],
                                    {1: ["@@ftlab fault-redo 1 File exists before",
                                         "@@ftlab fault-undo 1 other"]})))
        found = faults.problems(res, [])
        self.assertEqual(len(found), 2)
        self.assertIn("without a fault gave 'File exists'", found[0])
        self.assertIn("its removal left the state other", found[1])

    def test_unfinished_and_missing_sweeps(self):
        ws = faults.writes(full=False)
        res = faults.parse(console(("probe-traceoff-count", None, [], {}), end=False))
        found = faults.problems(res, ws)
        self.assertIn("the guest did not finish the sweep", found)
        self.assertIn("probe-traceoff-count: the sweep did not end", found)
        self.assertIn("probe-snapshot: not swept", found)

    def test_a_write_broken_without_faults(self):
        lines = console(("x", None, [], {}))
        lines.insert(2, "@@ftlab fault-clean x the write fails without a fault: Invalid argument")
        self.assertEqual(faults.problems(faults.parse(lines), []),
                         ["x: the write fails without a fault: Invalid argument"])

    def test_a_kernel_without_fault_injection(self):
        res = faults.parse(["@@ftlab fault-clean setup no /proc/thread-self/fail-nth: "
                            "the kernel has no fault injection", "@@ftlab faults-end"])
        self.assertEqual(faults.problems(res, faults.writes()),
                         ["no /proc/thread-self/fail-nth: the kernel has no fault injection"])

    def test_fewer_tries_than_allocations(self):
        res = faults.parse(console(("x", 2, [(1, "Out of memory", "before")], {})))
        self.assertIn("1 tries for 2 allocations", faults.problems(res, [])[0])


class Compare(unittest.TestCase):
    def test_the_same_kind_of_result_is_no_difference(self):
        ref = faults.parse(console(GOOD))
        res = faults.parse(console(("probe-traceon", 5, [(n, "Out of memory", "before")
                                                        for n in range(1, 6)], {})))
        self.assertEqual(faults.compare("upstream", ref, res, "cp7"), [])

    def test_misbehaviour_on_either_side_is_named(self):
        bad = ("probe-traceon", 1, [(1, "Out of memory", "other")], {})
        good = ("probe-traceon", 1, [(1, "Out of memory", "before")], {})
        ours_worse = faults.compare("upstream", faults.parse(console(good)),
                                    faults.parse(console(bad)), "cp7")
        theirs_worse = faults.compare("upstream", faults.parse(console(bad)),
                                      faults.parse(console(good)), "cp7")
        self.assertIn("cp7 misbehaves here, upstream does not", ours_worse[0])
        self.assertIn("upstream misbehaves here, cp7 does not", theirs_worse[0])

    def test_an_error_upstream_never_returns(self):
        ref = faults.parse(console(GOOD))
        res = faults.parse(console(("probe-traceon", 1, [(1, "Invalid argument", "before")],
                                    {})))
        self.assertIn("errors ['Invalid argument'] on cp7, never on upstream",
                      faults.compare("upstream", ref, res, "cp7")[0])


class GuestScript(unittest.TestCase):
    """faults.sh under busybox on the host, with files for tracefs and a
    plain file for fail-nth (which never counts down: every sweep ends at
    once): what it prints is what parse() reads."""

    @unittest.skipUnless(shutil.which("busybox"), "needs busybox")
    def test_protocol_round_trip(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in ("set_ftrace_filter", "enabled_functions"):
                open(os.path.join(tmp, name), "w").close()
            with open(os.path.join(tmp, "enabled_functions"), "w") as f:
                f.write("ksys_sync (1)   R  \ttramp: 0xffffffffa0001000\n")
            with open(os.path.join(series.ROOT, "labs", "robustness", "faults.sh")) as f:
                script = f.read().rsplit("faults_main", 1)[0]
            ws = [faults.Write("probe-x", "set_ftrace_filter", "ksys_sync:traceon",
                               ": > set_ftrace_filter", ("set_ftrace_filter", "enabled_functions")),
                  faults.Write("broken", "no/such/file", "x", ":", ("enabled_functions",))]
            with open(os.path.join(tmp, "faults.list"), "w") as f:
                f.write(faults.encode(ws))
            driver = script + """
ftlab() { echo "@@ftlab $*"; }
FAIL_NTH=$PWD/fail-nth
: > fail-nth
exec 7>> /tmp/.fault-err
while IFS='	' read -r _name _file _value _undo _files; do
    faults_sweep "$_name" "$_file" "$_value" "$_undo" $_files
done < faults.list
echo "@@ftlab faults-end"
"""
            out = subprocess.run(["busybox", "sh", "-c", driver], cwd=tmp, text=True,
                                 capture_output=True, check=True).stdout
        res = faults.parse(out.splitlines())
        self.assertTrue(res.finished)
        self.assertEqual(res.sweeps["probe-x"].allocations, 0)
        self.assertEqual(faults.problems(res, ws),
                         ["broken: the write fails without a fault: nonexistent directory"])


class FakeRun:
    def __init__(self, status="done", lines=()):
        self.status = status
        self.lines = list(lines)

    @property
    def ok(self):
        return self.status == "done"

    def explain(self):
        if self.status == "crash":
            return ["the kernel crashed (panic, oops, BUG or WARN); first lines:",
                    "    BUG: KASAN: double-free in __kmem_cache_free+0x4c/0xbb",
                    "full log: build/logs/faults.log"]
        return [f"kmemleak: 1 new suspected memory leaks ({self.status})"]


class Kernel:
    def __init__(self, kernel, name):
        self.id, self.name = K.parse(kernel), name


class Grade(unittest.TestCase):
    def grade(self, run, lines, kernel, reference=None):
        import contextlib
        import io
        from labkit import ui
        tally = ui.Tally()
        res = faults.parse(lines)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            faults.grade(run, res, [], Kernel(*kernel), tally, reference)
        return [(v.status, v.name) for v in tally.verdicts], out.getvalue(), res

    def test_upstreams_misbehaviour_and_leak_are_listed_not_failed(self):
        bad = ("probe-traceon", 1, [(1, "Out of memory", "other")], {})
        verdicts, out, res = self.grade(FakeRun("kernel-report"), console(bad),
                                        ("upstream", "upstream-debug"))
        self.assertEqual([s for s, _t in verdicts], ["pass"])
        self.assertIn("ran every write to its end", verdicts[0][1])
        self.assertIn(f"{BASE}'s own: probe-traceon, allocation 1 failed", out)
        self.assertIn(f"{BASE}'s own: kmemleak", out)
        # and the checkpoint that does better says so, without failing
        verdicts, out, _ = self.grade(FakeRun(), console(GOOD), (7, "cp7-debug"),
                                      ("upstream", res))
        self.assertEqual([s for s, _t in verdicts], ["pass", "pass"])
        self.assertIn("in its favour: the run: upstream printed a kernel report", out)
        self.assertIn("in its favour: probe-traceon: upstream misbehaves here", out)

    def test_an_unfinished_reference_fails(self):
        verdicts, _out, _ = self.grade(FakeRun("kernel-report"), console(GOOD, end=False),
                                       ("upstream", "upstream-debug"))
        self.assertEqual([s for s, _t in verdicts], ["fail"])

    def test_a_checkpoints_leak_fails_its_run(self):
        verdicts, _out, _ = self.grade(FakeRun("kernel-report"), console(GOOD),
                                       (7, "cp7-debug"))
        self.assertEqual(verdicts, [("fail", "fault injection [cp7-debug]: guest run")])

    def test_worse_than_upstream_fails(self):
        ref = faults.parse(console(GOOD))
        bad = ("probe-traceon", 1, [(1, "Out of memory", "other")], {})
        verdicts, out, _ = self.grade(FakeRun(), console(bad), (7, "cp7-debug"),
                                      ("upstream", ref))
        self.assertEqual([s for s, _t in verdicts], ["fail", "fail"])
        self.assertIn("cp7-debug misbehaves here, upstream does not", out)


class Restart(unittest.TestCase):
    """A crash is recorded on the write it came in; the next boot sweeps
    the writes after it (robust.run_faults)."""

    def crashed_boot(self):
        a = ("a", 2, [(1, "Cannot allocate memory", "before"), (2, "ok", "after")], {})
        b = ("b", None, [(1, "ok", "after"), (2, "ok", "after")], {})
        return FakeRun("crash", console(a, b, end=False))

    def test_merge_names_the_write_and_the_allocation(self):
        total = faults.Result()
        run = self.crashed_boot()
        self.assertEqual(faults.merge(total, faults.parse(run.lines), run), "b")
        self.assertIn("crashed at or after allocation 3: BUG: KASAN: double-free",
                      total.sweeps["b"].crash)
        later = FakeRun("done", console(("c", 1, [(1, "ok", "after")], {})))
        self.assertIsNone(faults.merge(total, faults.parse(later.lines), later))
        self.assertEqual(list(total.sweeps), ["a", "b", "c"])
        self.assertTrue(total.finished)
        self.assertEqual(total.boots, 2)

    def test_run_faults_boots_again_after_the_crash(self):
        from unittest import mock
        from labkit import robust
        lists = []
        boots = [self.crashed_boot(),
                 FakeRun("done", console(("c", 1, [(1, "ok", "after")], {})))]

        def boot(session, k, plan, tag, extra, timeout):
            lists.append([line.split("\t")[0] for line in
                          extra["lab/robust/faults.list"].decode().splitlines()])
            return boots[len(lists) - 1]

        ws = [faults.Write(n, "f", "v", ":", ("f",)) for n in "abc"]

        class K:
            name, kernel = "cp7-debug", 7

            def modules(self):
                return {}
        with mock.patch.object(robust, "boot", boot), \
                mock.patch.object(robust.faults, "writes", lambda full, modules: ws):
            _ws, run, res = robust.run_faults(None, K(), True)
        self.assertEqual(lists, [["a", "b", "c"], ["c"]])
        self.assertTrue(faults.problems(res, ws)[0].startswith("b: the kernel crashed at or after"))
        self.assertTrue(res.finished)

    def test_a_checkpoints_crash_fails_upstreams_is_listed(self):
        total = faults.Result()
        run = self.crashed_boot()
        faults.merge(total, faults.parse(run.lines), run)
        later = FakeRun("done", console(("c", 1, [(1, "ok", "after")], {})))
        faults.merge(total, faults.parse(later.lines), later)
        import contextlib
        import io
        from labkit import ui
        for kernel, want in (((7, "cp7-debug"), "fail"), (("upstream", "upstream-debug"), "pass")):
            tally = ui.Tally()
            with contextlib.redirect_stdout(io.StringIO()) as out:
                faults.grade(later, total, [], Kernel(*kernel), tally)
            self.assertEqual(tally.verdicts[0].status, want, kernel)
            self.assertIn("double-free", out.getvalue())


if __name__ == "__main__":
    unittest.main()
