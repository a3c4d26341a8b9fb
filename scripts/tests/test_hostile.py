import contextlib
import io
import random
import shutil
import subprocess
import unittest

from labkit import hostile, robust, series
from labkit.kernels import KernelId as K


class Generator(unittest.TestCase):
    def test_same_seed_same_writes(self):
        a = hostile.encode(hostile.generate(42, 2000), 42)
        b = hostile.encode(hostile.generate(42, 2000), 42)
        self.assertEqual(a, b)

    def test_other_seed_other_writes(self):
        self.assertNotEqual(hostile.encode(hostile.generate(1, 500), 1),
                            hostile.encode(hostile.generate(2, 500), 2))

    def test_default_run_is_ten_thousand_writes_in_rounds(self):
        rounds = hostile.generate(7)
        self.assertEqual(sum(len(ops) for _kind, ops in rounds), 10000)
        self.assertEqual({kind for kind, _ops in rounds}, {"structured", "chaos"})

    def test_every_command_and_file_is_used(self):
        ops = [op for _kind, o in hostile.generate(3) for op in o]
        data = b"\n".join(op.data for op in ops)
        for cmd in hostile.PROBE_CMDS + hostile.TRIGGER_CMDS:
            self.assertIn(cmd.encode(), data)
        self.assertEqual({op.file[:1] for op in ops}, {"F", "N", "T", "E", "L", "C", "O"})
        self.assertTrue(any(b"\0" in op.data for op in ops))
        self.assertTrue(any(len(op.data) > 4096 for op in ops))
        self.assertTrue(any(op.mode == "p" and len(op.pieces) > 1 for op in ops))

    def test_no_write_reaches_the_known_upstream_warn_or_mod_cache(self):
        for _kind, ops in hostile.generate(5):
            for op in ops:
                if op.file in ("F", "N"):
                    data = op.data
                    self.assertNotRegex(data, rb"(^|[\s])!!")
                    self.assertNotIn(b":mod", data)

    def test_the_tai_clock_is_never_selected(self):
        for _kind, ops in hostile.generate(202612040834):
            for op in ops:
                if op.file == "C":
                    self.assertNotEqual(b"".join(op.pieces).strip(), b"tai")
        self.assertEqual(hostile.defuse("C", b" tai\n"), b" taj\n")
        self.assertEqual(hostile.defuse("C", b"tai2\n"), b"tai2\n")

    def test_no_dump_probe_on_a_hot_function(self):
        for _kind, ops in hostile.generate(9):
            for op in ops:
                if op.file == "F" and op.model:
                    self.assertNotRegex(op.data, rb"^!?schedule:(cpu)?dump(:|\n)")


class Encoding(unittest.TestCase):
    def test_round_trip_and_no_white_space(self):
        rng = random.Random(0)
        for _ in range(200):
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
            text = hostile.shell_escape(data)
            self.assertFalse(any(c.isspace() for c in text))
            self.assertEqual(hostile.shell_unescape(text), data)

    def test_leading_dash_is_not_an_echo_option(self):
        self.assertTrue(hostile.shell_escape(b"-n").startswith("\\0055"))

    @unittest.skipUnless(shutil.which("busybox"), "needs busybox")
    def test_busybox_echo_writes_the_bytes(self):
        rng = random.Random(1)
        for _ in range(20):
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
            out = subprocess.run(["busybox", "sh", "-c", 'echo -ne "$1"', "_",
                                  hostile.shell_escape(data)], capture_output=True).stdout
            self.assertEqual(out, data)

    def test_ops_file_header(self):
        text = hostile.encode(hostile.generate(11, 150, round_size=100), 11)
        lines = text.splitlines()
        self.assertEqual(lines[0], "S 11 150")
        self.assertIn("P 0 set_ftrace_filter", lines)
        self.assertEqual(sum(1 for l in lines if l.startswith("W ")), 150)
        self.assertEqual([l for l in lines if l[:1] in "RE"],
                         ["R 0 " + lines[lines.index([l for l in lines if l.startswith("R 0")][0])].split()[2],
                          "E 0", [l for l in lines if l.startswith("R 1")][0], "E 1"])


class Verdicts(unittest.TestCase):
    def test_error_texts(self):
        self.assertEqual(hostile.verdict_char(""), ".")
        self.assertEqual(hostile.verdict_char("sh: write error: Invalid argument"), "I")
        self.assertEqual(hostile.verdict_char("sh: write error: No such device"), "D")
        self.assertEqual(hostile.verdict_char("sh: write error: File exists"), "X")
        self.assertEqual(hostile.verdict_char(
            "/init: line 3: can't create options/x: Permission denied"), "A")
        self.assertEqual(hostile.verdict_char("sh: write error: Something new"), "?")

    CONSOLE = """\
noise
@@ftlab hostile-begin 42 3
@@ftlab hostile-round 0 structured .I.
@@ftlab hostile-list set_ftrace_filter
ksys_sync:traceoff:unlimited
@@ftlab hostile-list set_ftrace_notrace
d41d8cd98f00b204e9800998ecf8427e  -
@@ftlab hostile-files
events/sched/sched_kthread_stop/trigger:# Available triggers:
events/sched/sched_kthread_stop/trigger:traceoff:unlimited if pid > 1
events/sched/sched_kthread_stop/enable:0*
trace_clock:[local] global counter
@@ftlab hostile-clean
@@ftlab hostile-list enabled_functions
@@ftlab hostile-list set_ftrace_filter
#### all functions enabled ####
@@ftlab hostile-list soft-mode
@@ftlab hostile-end 12
"""

    def test_parse(self):
        res = hostile.parse(self.CONSOLE.splitlines())
        self.assertEqual((res.seed, res.count, res.seconds, res.finished), (42, 3, 12, True))
        self.assertEqual(len(res.rounds), 1)
        r = res.rounds[0]
        self.assertEqual((r.number, r.kind, r.verdicts), (0, "structured", ".I."))
        self.assertEqual(r.listings["set_ftrace_filter"], ["ksys_sync:traceoff:unlimited"])
        self.assertEqual(r.listings["events/sched/sched_kthread_stop/trigger"],
                         ["# Available triggers:", "traceoff:unlimited if pid > 1"])
        self.assertEqual(r.listings["trace_clock"], ["[local] global counter"])
        self.assertEqual(res.clean["enabled_functions"], [])
        self.assertEqual(res.clean["set_ftrace_filter"], ["#### all functions enabled ####"])
        self.assertEqual(hostile.check_clean(res), [])

    def test_clean_state_problems(self):
        res = hostile.parse(self.CONSOLE.replace(
            "@@ftlab hostile-list soft-mode", "@@ftlab hostile-list soft-mode\nevents/sched/x/enable:0*")
            .splitlines())
        self.assertEqual(len(hostile.check_clean(res)), 1)


def _round(number, verdicts, listings):
    r = hostile.Round(number, "structured")
    r.verdicts, r.listings = verdicts, listings
    return r


class Model(unittest.TestCase):
    F = "set_ftrace_filter"
    T = "events/sched/sched_kthread_stop/trigger"

    def ops(self, *writes):
        return [hostile.Op(f, [d]) for f, d in writes]

    def test_accepted_probe_must_be_listed(self):
        ops = self.ops(("F", b"ksys_sync:traceoff\n"))
        prev = _round(0, "", {})
        self.assertEqual(hostile.check_round(prev, _round(1, ".", {self.F: ["ksys_sync:traceoff:unlimited"]}), ops), [])
        self.assertEqual(len(hostile.check_round(prev, _round(1, ".", {self.F: []}), ops)), 1)

    def test_refused_trigger_must_not_be_half_registered(self):
        ops = self.ops(("T0", b"traceoff if no_such_field == 1\n"))
        prev = _round(0, "", {})
        bad = _round(1, "I", {self.T: ["# Available triggers:", "traceoff:unlimited"]})
        self.assertEqual(len(hostile.check_round(prev, bad, ops)), 1)
        self.assertEqual(hostile.check_round(prev, _round(1, "I", {self.T: []}), ops), [])

    def test_removal_may_remove_its_family(self):
        ops = self.ops(("T0", b"!traceon\n"))
        prev = _round(0, "", {self.T: ["traceoff:count=3"]})
        self.assertEqual(hostile.check_round(prev, _round(1, ".", {self.T: []}), ops), [])
        self.assertEqual(hostile.check_round(prev, _round(1, ".", {self.T: ["traceoff:count=3"]}), ops), [])

    def test_a_filter_may_hold_a_newline(self):
        # the filter keeps a newline written inside it: the listing shows
        # the rest of the filter as a line of its own, which is no entry
        ops = self.ops(("T0", b"traceon if ((\n((pid > 0))))\n"))
        prev = _round(0, "", {})
        listed = _round(1, ".", {self.T: ["traceon:unlimited if ((", "((pid > 0))))"]})
        self.assertEqual(hostile.check_round(prev, listed, ops), [])
        self.assertEqual(hostile.trigger_keys(["traceon:unlimited if ((", "((pid > 0))))",
                                               "snapshot:unlimited"]),
                         {("traceon", None), ("snapshot", None)})
        # without a filter before it, such a line is an entry of its own
        self.assertEqual(hostile.trigger_keys(["traceon:unlimited", "((pid"]),
                         {("traceon", None), ("((pid", None)})

    def test_multi_token_write_refused_halfway(self):
        ops = self.ops(("F", b"ksys_sync:traceoff:5 5:x\n"))
        prev = _round(0, "", {})
        listed = _round(1, "I", {self.F: ["ksys_sync:traceoff:count=5"]})
        self.assertEqual(hostile.check_round(prev, listed, ops), [])

    def test_unterminated_last_token_is_not_required(self):
        self.assertEqual(hostile.probe_commands(b"ksys_sync:traceoff"),
                         [("add", ("ksys_sync", "traceoff"), False)])
        # a NUL ends a token as white space does (trace_get_user)
        self.assertEqual(hostile.probe_commands(b"!vfs_fsync:dump:3 a\0ksys_sync:traceon\n"),
                         [("del", ("vfs_fsync", "dump", "probe"), True),
                          ("add", ("ksys_sync", "traceon"), True)])

    def test_clock_and_option_follow_the_last_accepted_write(self):
        ops = [hostile.Op("C", [b"global\n"], "a", ("clock", "global")),
               hostile.Op("O.sym-offset", [b"1\n"], "t", ("option", "1"))]
        prev = _round(0, "", {})
        good = _round(1, "..", {"trace_clock": ["local [global] counter"], "options/sym-offset": ["1"]})
        self.assertEqual(hostile.check_round(prev, good, ops), [])
        bad = _round(1, "..", {"trace_clock": ["[local] global"], "options/sym-offset": ["0"]})
        self.assertEqual(len(hostile.check_round(prev, bad, ops)), 2)


class Compare(unittest.TestCase):
    def test_differences_are_named(self):
        rounds = [("structured", [hostile.Op("F", [b"x\n"]), hostile.Op("C", [b"y\n"])])]
        a, b = hostile.Result(), hostile.Result()
        a.rounds = [_round(0, ".I", {"trace_clock": ["[local]"]})]
        b.rounds = [_round(0, "..", {"trace_clock": ["[local]"]})]
        diffs = hostile.compare(rounds, a, b, "upstream", "cp7")
        self.assertEqual(len(diffs), 1)
        self.assertIn("trace_clock", diffs[0])
        self.assertIn("upstream I, cp7 .", diffs[0])


    def _listing(self, up, cp):
        rounds = [("structured", [hostile.Op("F", [b"x\n"])])]
        a, b = hostile.Result(), hostile.Result()
        a.rounds = [_round(0, ".", {"set_ftrace_filter": up})]
        b.rounds = [_round(0, ".", {"set_ftrace_filter": cp})]
        return hostile.compare(rounds, a, b, "upstream", "cp7")

    def test_two_long_listings_are_not_compared(self):
        self.assertEqual(self._listing(["(500 lines)"], ["(480 lines)"]), [])

    def test_a_long_listing_against_a_short_one_differs(self):
        short = ["a", "b", "c"]
        self.assertEqual(len(self._listing(short, ["(500 lines)"])), 1)
        self.assertEqual(len(self._listing(["(500 lines)"], short)), 1)


class Perms(unittest.TestCase):
    CONSOLE = """\
@@ftlab perms-modes
-rw-r----- 0 0 set_ftrace_filter
-r--r----- 0 0 README
@@ftlab perms-state BEFORE
set_ftrace_filter:ksys_sync:traceoff:unlimited
@@ftlab perms-user 65534
@@ftlab perms-try add-probe Permission denied
@@ftlab perms-try clock Permission denied
@@ftlab perms-state AFTER
set_ftrace_filter:ksys_sync:traceoff:unlimited
@@ftlab perms-end
"""

    def test_parse_and_grade(self):
        p = robust.parse_perms(self.CONSOLE.splitlines())
        self.assertEqual(p.modes["README"], "-r--r----- 0 0")
        self.assertEqual(p.tries, [("add-probe", "Permission denied"), ("clock", "Permission denied")])
        self.assertEqual(robust.perms_problems(p), [])
        self.assertEqual(robust.mode_differences(p, p), [])

    def test_a_write_that_succeeds_is_a_problem(self):
        p = robust.parse_perms(self.CONSOLE.replace("clock Permission denied", "clock ok").splitlines())
        self.assertEqual(robust.perms_problems(p), ["an unprivileged user could: clock"])

    def test_mode_difference(self):
        a = robust.parse_perms(self.CONSOLE.splitlines())
        b = robust.parse_perms(self.CONSOLE.replace("-rw-r----- 0 0 set", "-rw-rw-rw- 0 0 set").splitlines())
        self.assertEqual(len(robust.mode_differences(a, b)), 1)


if __name__ == "__main__":
    unittest.main()


class Stress(unittest.TestCase):
    GOOD = """\
@@ftlab stress cpus 2
@@ftlab stress flip-triggers ok
@@ftlab stress seconds 60
@@ftlab stress elapsed 61
@@ftlab stress probes-added 200
@@ftlab stress triggers-added 5000
@@ftlab stress monitor-reads 300
@@ftlab stress bad-counts 0
@@ftlab stress stack-traces 2000
@@ftlab stress stack-limit 16000
@@ftlab stress fork-events-after 1
@@ftlab stress traceoff-probe-after tracing_on=0
@@ftlab stress enabled-functions 0
@@ftlab stress soft-mode 0
@@ftlab stress-end
"""

    def test_good_run(self):
        r = robust.parse_stress(self.GOOD.splitlines())
        self.assertEqual(r["traceoff-probe-after"], "tracing_on=0")
        self.assertEqual(robust.stress_problems(r, 2), [])

    def test_each_problem_is_named(self):
        for old, new in (("bad-counts 0", "bad-counts 3"), ("stack-traces 2000", "stack-traces 20000"),
                         ("cpus 2", "cpus 1"), ("soft-mode 0", "soft-mode 1"),
                         ("tracing_on=0", "tracing_on=1"), ("elapsed 61", "elapsed 10"),
                         ("flip-triggers ok", "flip-triggers Invalid argument")):
            r = robust.parse_stress(self.GOOD.replace(old, new).splitlines())
            self.assertEqual(len(robust.stress_problems(r, 2)), 1, old)

    def test_unfinished(self):
        r = robust.parse_stress(self.GOOD.replace("@@ftlab stress-end", "").splitlines())
        self.assertEqual(robust.stress_problems(r, 2), ["the guest did not finish the concurrency test"])


class ModuleLifetime(unittest.TestCase):
    def console(self, **change):
        steps = dict(robust.MODULE_EXPECT)
        steps.update(robust.MODULE_OURS_ONLY)
        steps.update({"rmmod-with-probe": "Resource temporarily unavailable",
                      "rmmod-with-trigger": "Resource temporarily unavailable",
                      "rmmod-with-own-trigger": "Resource temporarily unavailable",
                      "events-traced": "12"})
        steps.update(change)
        return [f"@@ftlab module {k} {v}" for k, v in steps.items()] + ["@@ftlab module-end"]

    def test_good_run(self):
        steps, done = robust.parse_module(self.console())
        self.assertTrue(done)
        self.assertEqual(robust.module_problems(steps, done, ("upstream", steps)), [])

    def test_rmmod_of_a_held_module_must_fail(self):
        steps, done = robust.parse_module(self.console(**{"rmmod-with-trigger": "ok"}))
        self.assertIn("rmmod-with-trigger: succeeded, but the module is in use",
                      robust.module_problems(steps, done))

    def test_own_event_trigger_must_hold_the_module(self):
        steps, done = robust.parse_module(self.console(**{"rmmod-with-own-trigger": "ok"}))
        self.assertIn("rmmod-with-own-trigger: succeeded, but the module is in use",
                      robust.module_problems(steps, done))

    def test_own_event_steps_skipped_on_upstream_only(self):
        skipped = {step: "skipped" for step in robust.MODULE_OURS_ONLY}
        steps, done = robust.parse_module(self.console(**skipped))
        self.assertEqual(robust.module_problems(steps, done, upstream=True), [])
        self.assertEqual(len(robust.module_problems(steps, done)), len(skipped))
        steps, done = robust.parse_module(self.console())
        self.assertEqual(len(robust.module_problems(steps, done, upstream=True)), len(skipped))

    def test_own_event_refusal_has_the_targets_error(self):
        steps, done = robust.parse_module(self.console(**{"rmmod-with-own-trigger": "Device or resource busy"}))
        self.assertEqual(len(robust.module_problems(steps, done)), 1)

    def test_error_must_be_upstreams(self):
        ref, _ = robust.parse_module(self.console())
        steps, done = robust.parse_module(self.console(**{"rmmod-with-probe": "Device or resource busy"}))
        self.assertEqual(len(robust.module_problems(steps, done, ("upstream", ref))), 1)


class Normalise(unittest.TestCase):
    def test_what_differs_between_kernels(self):
        self.assertEqual(hostile.normalise(["__ftrace_invalid_address___195", "schedule:traceoff:count=4",
                                            "ksys_sync:traceoff:count=4"]),
                         ["__ftrace_invalid_address___N", "ksys_sync:traceoff:count=4",
                          "schedule:traceoff:count=N"])


    def test_a_different_or_missing_entry_still_differs(self):
        """The negative cases: counts on a firing function and the number
        of an unnamed record go, the entries themselves stay."""
        base = ["schedule:traceoff:count=4", "__ftrace_invalid_address___195"]
        self.assertNotEqual(hostile.normalise(base), hostile.normalise(base[:1]))
        self.assertNotEqual(hostile.normalise(base),
                            hostile.normalise(["schedule:traceon:count=4", base[1]]))
        self.assertNotEqual(hostile.normalise(["ksys_sync:traceoff:count=4"]),
                            hostile.normalise(["ksys_sync:traceoff:count=3"]))


class GuestLanes(unittest.TestCase):
    """robust.Lanes: at most 'width' guests at once, widened later."""

    def test_one_lane_then_two(self):
        import threading
        import time
        lanes = robust.Lanes(width=1)
        lock = threading.Lock()
        state = {"now": 0, "most": 0}

        def job():
            with lock:
                state["now"] += 1
                state["most"] = max(state["most"], state["now"])
            time.sleep(0.2)
            with lock:
                state["now"] -= 1

        first = [lanes.submit(job) for _ in range(2)]
        for f in first:
            f.result()
        self.assertEqual(state["most"], 1)
        lanes.widen()
        with lanes:
            for f in [lanes.submit(job) for _ in range(2)]:
                f.result()
        self.assertEqual(state["most"], 2)

    def test_runs_take_the_lane_in_the_order_submitted(self):
        import time
        lanes = robust.Lanes(width=1)
        started = []

        def job(name):
            started.append(name)
            time.sleep(0.05)

        with lanes:
            futures = [lanes.submit(job, n) for n in range(6)]
            for f in futures:
                f.result()
        self.assertEqual(started, list(range(6)))

    def test_work_beside_takes_a_lane(self):
        import threading
        import time
        lanes = robust.Lanes(width=2)
        lock = threading.Lock()
        state = {"now": 0, "most": 0}

        def job():
            with lock:
                state["now"] += 1
                state["most"] = max(state["most"], state["now"])
            time.sleep(0.1)
            with lock:
                state["now"] -= 1

        with lanes.busy(), lanes.busy():    # never fewer than one lane
            for f in [lanes.submit(job) for _ in range(3)]:
                f.result()
        self.assertEqual(state["most"], 1)
        with lanes:
            for f in [lanes.submit(job) for _ in range(2)]:
                f.result()
        self.assertEqual(state["most"], 2)

    def test_two_lanes_start_two_runs_at_once(self):
        import threading
        lanes = robust.Lanes(width=2)
        both = threading.Barrier(2, timeout=5)
        with lanes:
            futures = [lanes.submit(both.wait) for _ in range(2)]
            for f in futures:
                f.result()      # a BrokenBarrierError if only one lane ran


class ProbeByIndex(unittest.TestCase):
    """6.1 reads a probe's leading digits as a function's number in
    available_filter_functions: "9_x64_sys_syncfs:stacktrace" adds a probe
    on function 9, whatever its name (seen with seed 202612040834)."""

    def test_digits_select_by_index(self):
        cmds = hostile.probe_commands(b"9_x64_sys_syncfs:stacktrace\n")
        self.assertEqual(cmds, [("add", (hostile.BY_INDEX, "stacktrace"), True)])

    def test_a_name_is_a_name(self):
        cmds = hostile.probe_commands(b"ksys_sync:stacktrace\n")
        self.assertEqual(cmds, [("add", ("ksys_sync", "stacktrace"), True)])


class CountsThatFire(unittest.TestCase):
    def test_negative_counts_are_timing_too(self):
        # a count written negative keeps counting down as schedule fires
        self.assertEqual(hostile.normalise(["schedule:stacktrace:count=-287"]),
                         hostile.normalise(["schedule:stacktrace:count=-211"]))

    def test_a_trigger_on_the_fork_event_is_named_by_its_file(self):
        # seen in make check: upstream's traceon:count=6, checkpoint 7's 5
        fork = "events/sched/sched_process_fork/trigger"
        self.assertEqual(hostile.normalise(["traceon:count=6"], fork),
                         hostile.normalise(["traceon:count=5"], fork))
        quiet = "events/sched/sched_kthread_stop/trigger"
        self.assertNotEqual(hostile.normalise(["traceon:count=6"], quiet),
                            hostile.normalise(["traceon:count=5"], quiet))


class TuggedEvents(unittest.TestCase):
    """An event that firing probes switch both on and off reads 1* or 0*
    depending on when the read comes (seen: robust seed 202612050125)."""

    def _compare(self, probes, up, cp):
        rounds = [("structured", [hostile.Op("F", [b"x\n"])])]
        a, b = hostile.Result(), hostile.Result()
        enable = "events/sched/sched_kthread_stop/enable"
        a.rounds = [_round(60, ".", {"set_ftrace_filter": probes, enable: [up]})]
        b.rounds = [_round(60, ".", {"set_ftrace_filter": probes, enable: [cp]})]
        return hostile.compare(rounds, a, b, "upstream", "cp7")

    def test_both_directions_on_the_hot_function(self):
        probes = ["schedule:disable_event:sched:sched_kthread_stop:unlimited",
                  "schedule:enable_event:sched:sched_kthread_stop:unlimited"]
        self.assertEqual(self._compare(probes, "0*", "1*"), [])

    def test_one_direction_still_compares(self):
        probes = ["schedule:enable_event:sched:sched_kthread_stop:unlimited",
                  "ksys_sync:disable_event:sched:sched_kthread_stop:unlimited"]
        self.assertEqual(len(self._compare(probes, "0*", "1*")), 1)

    def test_a_spent_count_fires_no_more(self):
        probes = ["schedule:disable_event:sched:sched_kthread_stop:count=0",
                  "schedule:enable_event:sched:sched_kthread_stop:unlimited"]
        self.assertEqual(len(self._compare(probes, "0*", "1*")), 1)

    def test_what_an_entry_targets_does_not_make_it_fire(self):
        quiet = "events/sched/sched_kthread_stop/trigger"
        listings = {"set_ftrace_filter": [
                        "ksys_sync:enable_event:sched:sched_process_fork:unlimited"],
                    quiet: ["disable_event:sched:sched_process_fork:unlimited"]}
        self.assertEqual(hostile.tugged_events(listings), set())
        self.assertNotEqual(
            hostile.normalise(["vfs_fsync:enable_event:sched:sched_process_fork:count=5"]),
            hostile.normalise(["vfs_fsync:enable_event:sched:sched_process_fork:count=4"]))

    def test_triggers_on_the_fork_event_tug_too(self):
        fork = "events/sched/sched_process_fork/trigger"
        listings = {fork: ["enable_event:sched:sched_switch:unlimited",
                           "disable_event:sched:sched_switch:count=3 if pid > 1"]}
        self.assertEqual(hostile.tugged_events(listings), {"sched/sched_switch"})


class Start(unittest.TestCase):
    """Which robustness runs each kernel queues (robust.start_kernel)."""

    class Pool:
        def __init__(self):
            self.queued = []

        def submit(self, fn, session, k, *args):
            self.queued.append((fn.__name__, k.name))
            return (fn.__name__, k.name)

    class Kernel:
        def __init__(self, name, debug):
            self.name, self.debug = name, debug
            self.id = K.parse(name)

    def test_each_kernel_queues_its_own_runs_stress_on_the_last(self):
        pool = self.Pool()
        up, cp7 = self.Kernel("upstream-debug", True), self.Kernel("cp7-debug", True)
        runs = robust.start_all(None, [up, cp7], 1, 10, pool)
        self.assertEqual([sorted(r) for r in runs],
                         [["faults", "hostile", "modules", "perms"],
                          ["faults", "hostile", "modules", "perms", "stress"]])
        self.assertEqual(pool.queued[0], ("run_hostile", "upstream-debug"))

    def test_plain_kernels_have_no_module_test(self):
        pool = self.Pool()
        runs = robust.start_all(None, [self.Kernel("upstream", False)], 1, 10, pool)
        self.assertEqual(sorted(runs[0]), ["hostile", "perms", "stress"])


class DebugPartOrder(unittest.TestCase):
    """make check's debug part: the plain upstream and last checkpoint run
    the hostile and permission tests as soon as each is built, compared at
    the end; the last checkpoint's debug kernel builds beside and runs its
    own (with the stress test), graded alone, or (FULL=1) after upstream's
    debug kernel."""

    def run_part(self, full):
        from unittest import mock
        from labkit import debug, ui

        class Session:
            def kernel(self, kid):
                k = Start.Kernel(kid.name, True)
                k.label = kid.label
                return k

        def plain(kid):
            k = Start.Kernel(kid.name, False)
            k.label = kid.label
            return k

        started, graded = [], []
        self.raced = []

        def start_kernel(session, k, seed, count, pool, stress=False, all_faults=False):
            started.append((k.name, stress, all_faults))
            return {"hostile": k.name}

        last = series.last_checkpoint()
        with mock.patch.object(debug, "boot_labs", lambda *a: None), \
                mock.patch.object(debug, "grade_labs", lambda *a: None), \
                mock.patch.object(debug.robust, "announce", lambda *a: None), \
                mock.patch.object(debug.robust, "start_kernel", start_kernel), \
                mock.patch.object(debug.races, "run", lambda s, k, full: (k.name, full)), \
                mock.patch.object(debug.races, "touched", lambda s, k: set()), \
                mock.patch.object(debug.races, "grade",
                                  lambda items, booted, k, tally, ours, ref:
                                  self.raced.append((items, booted, ref))), \
                mock.patch.object(debug.robust, "grade_all",
                                  lambda ks, runs, tally: graded.append([r["hostile"] for r in runs])):
            part = debug.DebugPart(Session(), robust.Lanes(), full=full)
            part.plain_built(plain(K.upstream()))
            part.plain_built(plain(K.of(last)))
            with contextlib.redirect_stdout(io.StringIO()):   # the tally prints verdicts
                part.finish(ui.Tally())
        return last, started, graded

    def test_plain(self):
        last, started, graded = self.run_part(full=False)
        name = K.of(last).name
        self.assertEqual(started, [("upstream", False, False), (name, False, False),
                                   (name + "-debug", True, False)])
        self.assertEqual(graded, [["upstream", name], [name + "-debug"]])
        self.assertEqual(self.raced, [(name + "-kcsan", False, None)])

    def test_full(self):
        last, started, graded = self.run_part(full=True)
        name = K.of(last).name
        # the debug kernels start on the builder thread, whenever their
        # builds end: only the plain kernels' order is the main thread's
        plain = [s for s in started if not s[0].endswith("-debug")]
        self.assertEqual(plain, [("upstream", False, True), (name, False, True)])
        self.assertEqual(sorted(s for s in started if s[0].endswith("-debug")),
                         sorted([("upstream-debug", False, True), (name + "-debug", True, True)]))
        self.assertEqual(graded, [["upstream", name], ["upstream-debug", name + "-debug"]])
        self.assertEqual([(i, b) for i, b, _ref in self.raced],
                         [("upstream-kcsan", True), (name + "-kcsan", True)])
