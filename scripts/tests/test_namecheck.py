import os
import subprocess
import tempfile
import unittest
from unittest import mock

from labkit import namecheck

# The markers of upstream's names on a series based on linux-source-6.12.
ON_612 = ("6.12's", "upstream's", "mainline's")


def names(text):
    return [(name, kind) for name, kind, _marker in namecheck.names_in(text)]


class CitedNames(unittest.TestCase):
    def test_the_forms_of_code(self):
        self.assertEqual(
            names("calls ftrace_dump(), struct ftrace_probe_ops, CONFIG_MODULES, "
                  "kernel/trace/ftrace.c and set_ftrace_filter"),
            [("ftrace_dump", "word"), ("ftrace_probe_ops", "struct"),
             ("CONFIG_MODULES", "config"), ("kernel/trace/ftrace.c", "path"),
             ("set_ftrace_filter", "word")])

    def test_plain_words_and_made_up_names_are_not_cited(self):
        self.assertEqual(names("the probe runs; no_such_function_xyz is refused"), [])

    def test_a_tracefs_path_is_not_a_kernel_path(self):
        self.assertEqual(names("/sys/kernel/tracing and /proc/sys/kernel/ftrace_enabled"),
                         [("ftrace_enabled", "word")])

    def test_a_macro_made_name_is_looked_up_by_its_source(self):
        self.assertEqual(names("events/syscalls/sys_enter_getppid/enable"), [("getppid", "word")])
        self.assertEqual(names("the event_trigger_* helpers"), [("event_trigger_", "prefix")])

    def test_a_marker_names_the_kernel(self):
        with mock.patch.object(namecheck, "UPSTREAM_MARKERS", ON_612):
            found = list(namecheck.names_in(
                "6.12's `update_count()`, upstream's `a_b()`, 2013's tracer_frame, "
                "6.1's `event_trigger_ops` and ours probe_take_count()"))
        self.assertEqual(found, [("update_count", "word", namecheck.UPSTREAM),
                                 ("a_b", "word", namecheck.UPSTREAM),
                                 ("tracer_frame", "word", namecheck.HISTORY),
                                 ("event_trigger_ops", "word", namecheck.HISTORY),
                                 ("probe_take_count", "word", None)])
        self.assertEqual(list(namecheck.names_in("checkpoint 3's `ftrace_onoff_print()`")),
                         [("ftrace_onoff_print", "word", 3)])

    def test_the_base_s_release_is_upstream_s_marker(self):
        # patches/BASE names the base: its release, and no fixed one, marks
        # upstream's names, so that the release the series left is history.
        release = namecheck.kernels.base_release()
        self.assertRegex(release, r"^\d+\.\d+$")
        self.assertEqual(namecheck.UPSTREAM_MARKERS[0], release + "'s")
        self.assertEqual([m for _n, _k, m in namecheck.names_in(f"{release}'s `a_b()`")],
                         [namecheck.UPSTREAM])


class Texts(unittest.TestCase):
    def test_adoc_monospace_with_the_checkpoints_of_its_section(self):
        text = "\n".join([
            "plain `a_one()` here",
            "ifeval::[{checkpoint} >= 3]",
            "`b_two` here",
            "----",
            "# echo c_three > set_ftrace_filter",
            "----",
            "ifeval::[{checkpoint} < 5]",
            "`d_four`",
            "endif::[]",
            "endif::[]",
            "// `e_five` in a comment",
        ])
        self.assertEqual([(n, t, lo, hi) for n, t, lo, hi in namecheck.adoc_lines(text, 0, 7)],
                         [(1, "`a_one()`", 0, 7), (3, "`b_two`", 3, 7), (8, "`d_four`", 3, 4)])

    def test_a_commit_message_ends_at_its_notes(self):
        patch = ("From 1 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] tracing: Add x_y\n\n"
                 "Body names a_b().\n\nSigned-off-by: A <a@b>\n---\n c_d.c | 1 +\n")
        self.assertEqual(namecheck.commit_message(patch),
                         [(2, "tracing: Add x_y"), (3, ""), (4, "Body names a_b()."), (5, "")])

    def test_gdb_comments_and_breakpoints(self):
        script = "# stops in probe_func()\nbreak ftrace_dump\nprint $ft_probe\n"
        self.assertEqual(list(namecheck.gdb_lines(script)),
                         [(1, " stops in probe_func()"), (2, "ftrace_dump()")])

    def test_dot_labels_and_comments(self):
        dot = '// from a_b\nn [label="c_d\\ne_f"];\ndigraph g_h {\n'
        self.assertEqual(list(namecheck.dot_lines(dot)), [(1, " from a_b"), (2, "c_d e_f")])


class Lookup(unittest.TestCase):
    """The check against two small git trees: upstream, and a checkpoint
    that renames a function."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.repo = os.path.join(self.tmp.name, "linux")
        os.makedirs(os.path.join(self.repo, "kernel", "trace"))

        def git(*args):
            subprocess.run(["git", "-C", self.repo, "-c", "user.name=t", "-c",
                            "user.email=t@t"] + list(args), check=True, capture_output=True)

        def commit(text):
            with open(os.path.join(self.repo, "kernel", "trace", "ftrace.c"), "w") as f:
                f.write(text)
            git("add", "-A")
            git("commit", "-q", "-m", "x")
        git("init", "-q", "-b", "upstream")
        commit("struct ftrace_func_probe { int a; };\nvoid update_count(void) {}\n")
        git("checkout", "-q", "-b", "lab/cp0")
        commit("struct ftrace_probe_kind { int a; };\nvoid probe_take_count(void) {}\n")
        self.index = namecheck.Index(self.repo, os.path.join(self.tmp.name, "cache"), "lab/cp0")

    def tearDown(self):
        self.tmp.cleanup()

    def unknown(self, text):
        cites = [namecheck.Cite("doc/x.adoc", 1, name, kind,
                                ("upstream",) if marker == namecheck.UPSTREAM else
                                () if marker == namecheck.HISTORY else ("lab/cp0",))
                 for name, kind, marker in namecheck.names_in(text)]
        return [c.name for c in namecheck.unknown(cites, self.index)]

    def test_a_made_up_name_fails(self):
        self.assertEqual(self.unknown("`made_up_function()`"), ["made_up_function"])

    def test_the_checkpoint_s_names_pass(self):
        self.assertEqual(self.unknown("`probe_take_count()`, `struct ftrace_probe_kind`, "
                                      "kernel/trace/ftrace.c"), [])

    def test_upstream_s_name_fails_unless_marked(self):
        self.assertEqual(self.unknown("`update_count()` in kernel/trace/trace.c"),
                         ["update_count", "kernel/trace/trace.c"])
        with mock.patch.object(namecheck, "UPSTREAM_MARKERS", ON_612):
            self.assertEqual(self.unknown("6.12's `update_count()`, "
                                          "upstream's `struct ftrace_func_probe`"), [])
            self.assertEqual(self.unknown("6.12's `made_up_function()`"), ["made_up_function"])

    def test_history_is_counted_not_looked_up(self):
        self.assertEqual(self.unknown("2013's `tracer_frame`"), [])
        # On 6.12, the release the series was first written for is history.
        with mock.patch.object(namecheck, "UPSTREAM_MARKERS", ON_612):
            self.assertEqual(self.unknown("6.1's `made_up_function()`"), [])

    def test_a_commit_message_may_name_what_it_removes(self):
        before = namecheck.Cite("p/0001-x.patch", 3, "update_count", "word",
                                ("upstream", "lab/cp0"))
        self.assertEqual(namecheck.unknown([before], self.index), [])

    def test_the_report_ends_with_the_count(self):
        bad = namecheck.Cite(os.path.join(namecheck.series.ROOT, "doc", "x.adoc"), 4,
                             "made_up", "word", ("lab/cp0",))
        self.assertEqual(namecheck.report(9, [bad]),
                         ["doc/x.adoc:4: made_up (word) not in lab/cp0",
                          "names checked: 9, unknown: 1"])


if __name__ == "__main__":
    unittest.main()


class OtherConditionals(unittest.TestCase):
    def test_an_answer_block_inside_ifeval_keeps_its_range(self):
        # the endif of ifndef::student-edition[] closes it, not the ifeval
        text = "\n".join(["ifeval::[{checkpoint} >= 3]",
                          "ifndef::student-edition[]",
                          "`inside_answer()`",
                          "endif::[]",
                          "`after_answer()`",
                          "endif::[]",
                          "`outside()`"])
        ranges = {t.strip("`() "): (lo, hi) for _n, t, lo, hi in namecheck.adoc_lines(text, 0, 7)}
        self.assertEqual(ranges["inside_answer"], (3, 7))
        self.assertEqual(ranges["after_answer"], (3, 7))
        self.assertEqual(ranges["outside"], (0, 7))
