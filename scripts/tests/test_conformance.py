"""The conformance check's pure parts: the corpus, the guest's output, the
comparison with upstream, the record of expected differences, the
whole-suite ftracetest comparison; and the guest runner's value macros,
run under the busybox sh the guest uses."""

import io
import os
import subprocess
import tempfile
import unittest
from contextlib import redirect_stdout
from unittest import mock

from labkit import conformance as conf
from labkit.kernels import base_release

# What the harness calls upstream: the release patches/BASE names ("6.12").
BASE = base_release()
from labkit import series, ui
from labkit.kernels import KernelId as K

RUN_SH = os.path.join(conf.CONF_DIR, "run.sh")
LIB = os.path.join(series.ROOT, "initramfs", "lib.sh")


def plain_verdicts():
    """No colour codes around PASS/FAIL: ui decides on colour once, from
    the real stdout, which is a terminal when make check runs in one."""
    return mock.patch.object(ui, "_COLOR", False)


def guest(lines_by_case, summary=None):
    out = []
    for ident, lines in lines_by_case.items():
        out += [f"@@ftlab conf-begin {ident}"] + lines + [f"@@ftlab conf-end {ident}"]
    if summary is not None:
        out.append(f"@@ftlab conf-summary {summary}")
    return conf.parse_guest(out)


class Corpus(unittest.TestCase):
    def test_parse(self):
        cases = conf.parse_corpus(
            "# comment\n\n"
            "a-1   -      >> set_ftrace_filter ksys_sync:traceoff\n"
            "b-2   warns  >> set_ftrace_filter f:traceoff ;; >> set_ftrace_filter !!f:traceoff\n")
        self.assertEqual([c.id for c in cases], ["a-1", "b-2"])
        self.assertFalse(cases[0].warns)
        self.assertTrue(cases[1].warns)
        self.assertEqual(cases[1].steps, [">> set_ftrace_filter f:traceoff",
                                          ">> set_ftrace_filter !!f:traceoff"])

    def test_bad_lines(self):
        for bad in ("a-1 -", "a-1 maybe > trace_clock x", "Bad_Id - > trace_clock x",
                    "a - > x\na - > y", "state-final - > x"):
            with self.assertRaises(ValueError, msg=bad):
                conf.parse_corpus(bad)

    def test_repo_corpus(self):
        cases = conf.load_corpus()
        self.assertGreaterEqual(len(cases), 200)
        steps = [s for c in cases for s in c.steps]
        for target in ("set_ftrace_filter", "set_ftrace_notrace", "trace_clock",
                       "options/function-trace", "events/sched/sched_switch/trigger",
                       "events/syscalls/sys_enter_read/trigger", "events/kmem/kmalloc/trigger",
                       "instances/conf/events/sched/sched_switch/trigger",
                       "events/sched/sched_switch/enable"):
            self.assertTrue(any(f" {target} " in s or s.endswith(f" {target}") for s in steps),
                            target)
        for cmd in ("traceon", "traceoff", "enable_event", "disable_event", "stacktrace",
                    "snapshot", "dump", "cpudump"):
            self.assertTrue(any(f":{cmd}" in s for s in steps), cmd)
        self.assertTrue(any(c.warns for c in cases))
        for c in cases:
            for s in c.steps:
                self.assertRegex(s.split(" ", 1)[0], r"^(>|>>|cat|mkdir|rmdir|hit|snapshot|has|enabled)$",
                                 f"{c.id}: {s}")
                self.assertNotRegex(s, r"\s$", f"{c.id}: trailing space, write {{sp}}")

    def test_warns_cases_are_double_bang_removals(self):
        for c in conf.load_corpus():
            if c.warns:
                self.assertTrue(any(" !!" in s for s in c.steps), c.id)


class GuestOutput(unittest.TestCase):
    def test_cases_and_summary(self):
        r = guest({"state-initial": ["x"], "a": ["'f' >> set_ftrace_filter: ok", "tracing_on: 1"]}, 1)
        self.assertEqual(r.cases["a"], ["'f' >> set_ftrace_filter: ok", "tracing_on: 1"])
        self.assertEqual(r.summary, 1)
        self.assertIsNone(r.unfinished)

    def test_unfinished_case(self):
        r = conf.parse_guest(["@@ftlab conf-begin a", "x", "@@ftlab conf-begin b", "y"])
        self.assertNotIn("a", r.cases)
        self.assertEqual(r.unfinished, "b")

    def test_kernel_lines_outside_cases_are_ignored(self):
        r = conf.parse_guest(["random", "@@ftlab conf-begin a", "x", "@@ftlab conf-end a", "z"])
        self.assertEqual(r.cases, {"a": ["x"]})


class Normalise(unittest.TestCase):
    def test_function_order_inside_a_probe_is_ignored(self):
        a = ["-- set_ftrace_filter:", "b:traceoff:unlimited", "a:traceoff:unlimited",
             "f:snapshot:unlimited", "tracing_on: 1"]
        b = ["-- set_ftrace_filter:", "a:traceoff:unlimited", "b:traceoff:unlimited",
             "f:snapshot:unlimited", "tracing_on: 1"]
        self.assertEqual(conf.normalise(a), conf.normalise(b))

    def test_order_of_probes_counts(self):
        a = ["-- set_ftrace_filter:", "f:traceoff:unlimited", "f:snapshot:unlimited"]
        b = ["-- set_ftrace_filter:", "f:snapshot:unlimited", "f:traceoff:unlimited"]
        self.assertNotEqual(conf.normalise(a), conf.normalise(b))

    def test_guest_lines_end_a_listing(self):
        lines = ["-- instances/conf/set_ftrace_filter:", "z", "a", "hit", "tracing_on: 1", "c", "b"]
        self.assertEqual(conf.normalise(lines),
                         ["-- instances/conf/set_ftrace_filter:", "a", "z", "hit",
                          "tracing_on: 1", "c", "b"])

    def test_trigger_order_counts(self):
        lines = ["-- events/sched/sched_switch/trigger:", "traceon:unlimited", "stacktrace:unlimited"]
        self.assertEqual(conf.normalise(lines), lines)

    def test_pids_timestamps_addresses(self):
        self.assertEqual(conf.normalise(["sh-57 [000] d..1. 12.345678: x at ffffffff81234567"]),
                         ["sh-PID [CPU] d..1. TS: x at ADDR"])

    def test_trailing_spaces_are_kept(self):
        self.assertEqual(conf.normalise(["traceoff:unlimited "]), ["traceoff:unlimited "])

    def test_sorting_hides_no_missing_or_changed_entry(self):
        """The negative cases of the hash-order mask: only order goes."""
        a = ["-- set_ftrace_filter:", "b:traceoff:unlimited", "a:traceoff:unlimited"]
        self.assertNotEqual(conf.normalise(a), conf.normalise(a[:2]))
        self.assertNotEqual(conf.normalise(a), conf.normalise(a[:2] + ["a:traceoff:count=1"]))

    def test_other_listings_keep_their_order(self):
        lines = ["-- set_event:", "sched:sched_switch", "irq:irq_handler_entry"]
        self.assertEqual(conf.normalise(lines), lines)

    def test_only_kernel_addresses_are_masked(self):
        lines = ["count=18446744073709551615", "0xffff1234", "ffff88810000000", "pid: 12"]
        self.assertEqual(conf.normalise(lines), lines)


class Compare(unittest.TestCase):
    CORPUS = conf.parse_corpus("a - > x 1\nb - > x 2\nw warns >> set_ftrace_filter !!f:traceoff\n")

    SKIP = "'!!f:traceoff' >> set_ftrace_filter: skipped on upstream (it WARNs)"
    EINVAL = "'!!f:traceoff' >> set_ftrace_filter: Invalid argument"

    def test_identical(self):
        ref = guest({"a": ["1"], "b": ["2"], "w": [self.SKIP, "-- set_ftrace_filter:"]})
        got = guest({"a": ["1"], "b": ["2"], "w": [self.EINVAL, "-- set_ftrace_filter:"]})
        self.assertEqual(conf.compare(self.CORPUS, ref, got), {})

    def test_difference_has_a_diff(self):
        ref = guest({"a": ["1"], "b": ["2"], "w": []})
        got = guest({"a": ["1"], "b": ["two"], "w": []})
        d = conf.compare(self.CORPUS, ref, got)
        self.assertEqual(list(d), ["b"])
        self.assertIn("-2", d["b"].diff)
        self.assertIn("+two", d["b"].diff)
        self.assertEqual(d["b"].diff[0], f"--- upstream {BASE}")

    def test_missing_case(self):
        ref = guest({"a": ["1"], "b": ["2"], "w": []})
        d = conf.compare(self.CORPUS, ref, guest({"a": ["1"], "w": []}))
        self.assertEqual(d["b"].note, "did not run")

    def test_skipped_write_must_fail_with_einval(self):
        ref = guest({"a": ["1"], "b": ["2"], "w": [self.SKIP]})
        got = guest({"a": ["1"], "b": ["2"], "w": ["'!!f:traceoff' >> set_ftrace_filter: ok"]})
        d = conf.compare(self.CORPUS, ref, got)
        self.assertIn("-" + self.EINVAL, d["w"].diff)

    def test_reference_problems(self):
        ref = guest({"a": [self.SKIP.replace("!!f", "x")], "w": ["r"]})
        problems = conf.reference_problems(self.CORPUS, ref)
        self.assertTrue(any(f"did not run on {BASE}: b" in p for p in problems))
        self.assertTrue(any(p.startswith("w: flagged 'warns'") for p in problems))
        self.assertTrue(any(p.startswith("a: a write was skipped") for p in problems))

    def test_same_output(self):
        a = guest({"a": ["1"], "b": ["2"], "state-initial": [], "state-final": []})
        b = guest({"a": ["1"], "b": ["3"], "state-initial": [], "state-final": []})
        self.assertEqual(conf.same_output(self.CORPUS, a, b), ["b"])
        self.assertEqual(conf.same_output(self.CORPUS, a, a), [])

    def test_state_left_behind(self):
        clean = guest({"state-initial": ["-- set_ftrace_filter:", "#### all functions enabled ####"],
                       "state-final": ["-- set_ftrace_filter:", "#### all functions enabled ####"]})
        self.assertEqual(conf.state_problems(clean), [])
        dirty = guest({"state-initial": ["instances: "], "state-final": ["instances: conf "]})
        self.assertIn("+instances: conf ", conf.state_problems(dirty))


class Record(unittest.TestCase):
    TEXT = ("# comment\n"
            f"## cp0: 3 case(s) differ from {BASE}\n"
            "# no triggers (2)\n"
            "a 'x' >> trigger: No such file or directory\n"
            "b (the output ends here)\n"
            "# no clocks (1)\n"
            'c " lead "\n'
            "## cp1\n"
            "a -- trace_clock:\n"
            "## cp2: 0\n")

    def test_parse(self):
        self.assertEqual(conf.parse_expected(self.TEXT),
                         {"cp0": {"a": "'x' >> trigger: No such file or directory",
                                  "b": "(the output ends here)", "c": " lead "},
                          "cp1": {"a": "-- trace_clock:"}, "cp2": {}})

    def test_count_must_match(self):
        with self.assertRaises(ValueError):
            conf.parse_expected("## cp0: 2\na x\n")

    def test_a_case_without_its_first_line_is_refused(self):
        """An id alone would assert only that the case differs."""
        with self.assertRaises(ValueError):
            conf.parse_expected("## cp0\na\n")

    def test_ids_before_a_section(self):
        with self.assertRaises(ValueError):
            conf.parse_expected("a x\n## cp0\n")

    def test_format_round_trip(self):
        firsts = {f"case-{i:03d}": f"line {i}" for i in range(40)}
        firsts.update({"blank": "", "spaced": " x ", "quoted": '"q"'})
        text = "\n".join(conf.format_section("cp3", firsts, [("why (9)", ["case-001", "blank"])]))
        self.assertEqual(conf.parse_expected(text), {"cp3": firsts})
        lines = text.splitlines()
        self.assertEqual(lines[1:4], ["# why (2)", "blank \"\"", "case-001 line 1"])
        self.assertIn("# differences not in the record before: say why (41)", lines)

    def test_record_text_keeps_groups_and_other_sections(self):
        d = conf.Difference("a", [], first="'x' >> trigger: Invalid argument")
        text = conf.record_text(self.TEXT, {"cp0": {"a": d}, "cp1": {}})
        self.assertEqual(text, f"# comment\n\n## cp0: 1 case(s) differ from {BASE}\n# no triggers (1)\n"
                         f"a 'x' >> trigger: Invalid argument\n\n## cp2: 0 case(s) differ from {BASE}\n")

    def test_repo_record_parses_and_names_corpus_cases(self):
        ids = {c.id for c in conf.load_corpus()}
        for tag, listed in conf.load_expected().items():
            self.assertEqual(set(listed) - ids, set(), f"{tag} lists cases not in the corpus")

    def test_the_first_differing_line(self):
        case = conf.parse_corpus("a - > x 1\n")[0]
        self.assertEqual(conf.case_difference(case, ["ok", "1", "2"], ["ok", "X", "2"]).first, "X")
        self.assertEqual(conf.case_difference(case, ["ok", "1"], ["ok"]).first,
                         "(the output ends here)")

    def test_verdict(self):
        corpus = conf.parse_corpus("a - > x 1\nb - > x 2\nc - > x 3\n")
        ref = guest({"a": ["1"], "b": ["2"], "c": ["3"]})
        got = guest({"a": ["1"], "b": ["X"], "c": ["3"]})
        v = conf.judge("cp1", corpus, ref, got, {"cp1": {"c": "Y"}})
        self.assertEqual(v.unexpected, ["b"])
        self.assertEqual(v.fixed, ["c"])
        self.assertFalse(v.ok)
        self.assertEqual(v.identical, 2)
        tally = ui.Tally()
        with redirect_stdout(io.StringIO()) as out, plain_verdicts():
            conf.report(v, tally)
        text = out.getvalue()
        self.assertIn("FAIL conformance [cp1] b", text)
        self.assertIn(f"now identical to {BASE}", text)
        self.assertIn("conformance [cp1]: 2 cases identical to upstream, 1 differ", text)
        self.assertEqual(tally.failed, 3)

    def test_all_expected(self):
        corpus = conf.parse_corpus("a - > x 1\nb - > x 2\n")
        v = conf.judge("cp0", corpus, guest({"a": ["1"], "b": ["2"]}),
                       guest({"a": ["1"], "b": ["X"]}), {"cp0": {"b": "X"}})
        self.assertTrue(v.ok)
        tally = ui.Tally()
        with redirect_stdout(io.StringIO()):
            conf.report(v, tally)
        self.assertEqual((tally.passed, tally.failed), (1, 0))   # the summary line only

    def test_a_recorded_case_that_differs_for_another_reason_fails(self):
        """The record's negative case: listed, still different, but its
        first differing line is another one."""
        corpus = conf.parse_corpus("a - > x 1\n")
        ref = guest({"a": ["'1' >> x: ok", "-- x:", "1"]})
        got = guest({"a": ["'1' >> x: Invalid argument", "-- x:", ""]})
        v = conf.judge("cp0", corpus, ref, got, {"cp0": {"a": '""'}})
        self.assertEqual(v.changed, [("a", '""', "'1' >> x: Invalid argument")])
        self.assertFalse(v.ok)
        tally = ui.Tally()
        with redirect_stdout(io.StringIO()) as out, plain_verdicts():
            conf.report(v, tally)
        self.assertIn(f"FAIL conformance [cp0] a  (differs from {BASE} at another first line", out.getvalue())
        self.assertIn("recorded first difference: \"\"", out.getvalue())
        self.assertIn("now:                       '1' >> x: Invalid argument", out.getvalue())
        self.assertEqual(tally.failed, 2)


class FtracetestAll(unittest.TestCase):
    def test_failures(self):
        up = {"a.tc": "PASS", "b.tc": "PASS", "c.tc": "FAIL", "d.tc": "PASS", "e.tc": "PASS"}
        got = {"a.tc": "PASS", "b.tc": "FAIL", "c.tc": "FAIL", "e.tc": "UNSUPPORTED"}
        self.assertEqual(conf.ftall_failures(up, got),
                         [("b.tc", "FAIL"), ("d.tc", "no result"), ("e.tc", "UNSUPPORTED")])

    def test_grade_summary(self):
        tally = ui.Tally()
        with redirect_stdout(io.StringIO()) as out, plain_verdicts():
            conf.grade_ftall({"a.tc": "PASS", "b.tc": "PASS"}, {"a.tc": "PASS", "b.tc": "FAIL"},
                             K.of(5), tally)
        self.assertIn("FAIL ftracetest-all [cp5] b.tc", out.getvalue())
        self.assertIn("upstream 2 PASS, cp5 1 PASS", out.getvalue())


def run_sh(snippet, kernel="cp9"):
    """Run a snippet with run.sh's functions, under busybox sh."""
    r = subprocess.run(["busybox", "sh", "-c",
                        f". {LIB}; CONF_LIBRARY_ONLY=1 CONF_KERNEL={kernel}; . {RUN_SH}; {snippet}"],
                       capture_output=True, text=True)
    return r.stdout


class GuestRunner(unittest.TestCase):
    def test_value_macros(self):
        self.assertEqual(run_sh('conf_expand "a{sp}b{tab}c{nl}d"; printf "%s|%s" "$_v" "$_nonl"'),
                         "a b\tc\nd|")
        self.assertEqual(run_sh('conf_expand "x{rep:3:ab{sp}}y{nonl}"; printf "%s|%s" "$_v" "$_nonl"'),
                         "xab ab ab y|1")
        self.assertEqual(run_sh('conf_expand "{rep:5000:a}"; printf "%s" "${#_v}"'), "5000")

    def test_warns_writes_are_skipped_on_upstream_only(self):
        d = tempfile.mkdtemp()
        f = os.path.join(d, "set_ftrace_filter")
        snippet = (f"_warns=1; conf_write '>>' {f} '!!f:traceoff'; "
                   f"conf_write '>>' {f} 'f:traceoff'")
        up = run_sh(snippet, "upstream").splitlines()
        self.assertEqual(up, [f"'!!f:traceoff' >> {f}: skipped on upstream (it WARNs)",
                              f"'f:traceoff' >> {f}: ok"])
        ours = run_sh(snippet).splitlines()
        self.assertEqual(ours, [f"'!!f:traceoff' >> {f}: ok", f"'f:traceoff' >> {f}: ok"])
        with open(f) as fp:
            # upstream wrote only the second value, ours both
            self.assertEqual(fp.read(), "f:traceoff\n!!f:traceoff\nf:traceoff\n")

    def test_a_case_on_plain_files(self):
        """The runner end to end on a folder of ordinary files standing in
        for tracefs: steps are split, written, shown and cleaned."""
        d = tempfile.mkdtemp()
        for f in ("set_ftrace_filter", "set_ftrace_notrace", "tracing_on", "current_tracer",
                  "trace", "trace_clock", "events/enable", "events/sched/sched_switch/enable",
                  "events/sched/sched_switch/trigger"):
            os.makedirs(os.path.dirname(os.path.join(d, f)), exist_ok=True)
            with open(os.path.join(d, f), "w") as fp:
                fp.write("0\n" if f.endswith("enable") else "")
        os.mkdir(os.path.join(d, "instances"))
        out = run_sh(f'TRACING={d}; ftlab() {{ echo "@@ftlab $*"; }}; cd {d}; '
                     'conf_case t-1 - ">> set_ftrace_filter f:enable_event:sched:sched_switch ;; '
                     '>> events/sched/sched_switch/trigger  lead{sp} ;; hit ;; mkdir instances/conf"')
        lines = out.splitlines()
        self.assertEqual(lines[0], "@@ftlab conf-begin t-1")
        self.assertIn("'f:enable_event:sched:sched_switch' >> set_ftrace_filter: ok", lines)
        self.assertIn("' lead{sp}' >> events/sched/sched_switch/trigger: ok", lines)
        self.assertIn("mkdir instances/conf: ok", lines)
        self.assertIn("-- events/sched/sched_switch/enable: 0", lines)
        i = lines.index("-- events/sched/sched_switch/trigger:")
        self.assertEqual(lines[i + 1], " lead ")
        self.assertEqual(lines[-1], "@@ftlab conf-end t-1")
        # conf_clean reset the instance (on tracefs, rmdir then removes it)
        # and the top level.
        with open(os.path.join(d, "instances", "conf", "tracing_on")) as f:
            self.assertEqual(f.read(), "1\n")
        with open(os.path.join(d, "trace_clock")) as f:
            self.assertEqual(f.read(), "local\n")


if __name__ == "__main__":
    unittest.main()
