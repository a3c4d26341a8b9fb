import io
import unittest
from contextlib import redirect_stdout

from labkit import docexamples, ui, series
from labkit.kernels import KernelId as K

DOC = """= A chapter
:checkpoint: 7

Some text.

----
# echo ksys_sync:traceoff >> set_ftrace_filter
# cat set_ftrace_filter
#### all functions enabled ####
ksys_sync:traceoff:unlimited
# echo bad >> set_ftrace_filter
sh: write error: Invalid argument
----

----
FUNCTION-GLOB:COMMAND[:PARAMETER]
----

ifeval::[{checkpoint} >= 3]
== Later

ifdef::backend-html5[]
html only
endif::[]

// example: nondeterministic
----
# cat enabled_functions
ksys_sync (1)       ->arch_ftrace_ops_list_func+0x0/0x11f
# cat trigger
# Available triggers:
# traceon traceoff
----
endif::[]

ifeval::[{checkpoint} < 1]
----
# wc -l enabled_functions
----
endif::[]
"""


class Parse(unittest.TestCase):
    def setUp(self):
        self.examples = docexamples.parse("doc/x.adoc", DOC)

    def test_only_blocks_that_start_with_a_command(self):
        self.assertEqual([e.line for e in self.examples], [7, 28, 38])

    def test_commands_and_their_output(self):
        first = self.examples[0]
        self.assertEqual([c.text for c in first.commands],
                         ["echo ksys_sync:traceoff >> set_ftrace_filter",
                          "cat set_ftrace_filter", "echo bad >> set_ftrace_filter"])
        self.assertEqual([c.line for c in first.commands], [7, 8, 11])
        self.assertEqual(first.commands[1].output,
                         ["#### all functions enabled ####", "ksys_sync:traceoff:unlimited"])
        self.assertTrue(first.commands[2].expects_failure())
        self.assertFalse(first.commands[1].expects_failure())

    def test_hash_lines_that_are_output_not_commands(self):
        trig = self.examples[1].commands[1]
        self.assertEqual(trig.text, "cat trigger")
        self.assertEqual(trig.output, ["# Available triggers:", "# traceon traceoff"])

    def test_checkpoints_from_the_conditionals(self):
        always, later, baseline = self.examples
        self.assertEqual([k for k in ("upstream", 0, 2, 3, 7) if always.runs_on(K.parse(k), 7)],
                         ["upstream", 0, 2, 3, 7])
        self.assertEqual([k for k in ("upstream", 0, 2, 3, 7) if later.runs_on(K.parse(k), 7)],
                         ["upstream", 3, 7])
        self.assertEqual([k for k in ("upstream", 0, 2, 3, 7) if baseline.runs_on(K.parse(k), 7)], [0])

    def test_nondeterministic_marker(self):
        self.assertEqual([e.nondet for e in self.examples], [False, True, False])

    def test_ids_name_document_and_line(self):
        self.assertEqual(self.examples[1].id, "x-28")
        self.assertEqual(self.examples[1].where, "doc/x.adoc:28")

    def test_unclosed_block_or_conditional(self):
        with self.assertRaises(docexamples.ExampleError):
            docexamples.parse("d", "----\n# cat x\n")
        with self.assertRaises(docexamples.ExampleError):
            docexamples.parse("d", "ifeval::[{checkpoint} >= 2]\ntext\n")
        with self.assertRaises(docexamples.ExampleError):
            docexamples.parse("d", "endif::[]\n")
        with self.assertRaises(docexamples.ExampleError):
            docexamples.parse("d", "----\n# cat x\nifeval::[{checkpoint} >= 2]\ny\nendif::[]\n----\n")

    def test_guest_script_brackets_each_command(self):
        script = self.examples[0].script().splitlines()
        self.assertEqual(script[:4], ["ftlab ex-cmd x-7 1",
                                      "echo ksys_sync:traceoff >> set_ftrace_filter",
                                      "ftlab ex-rc x-7 1 $?", "ftlab ex-cmd x-7 2"])


def guest(ident, outputs, finished=True):
    lines = [f"@@ftlab ex-begin {ident}"]
    for n, (out, rc) in enumerate(outputs, 1):
        lines += [f"@@ftlab ex-cmd {ident} {n}"] + out + [f"@@ftlab ex-rc {ident} {n} {rc}"]
    return lines + ([f"@@ftlab ex-end {ident}"] if finished else [])


class Compare(unittest.TestCase):
    def setUp(self):
        self.first, self.nondet, _ = docexamples.parse("doc/x.adoc", DOC)

    def ran(self, ex, outputs, finished=True):
        return docexamples.parse_guest(guest(ex.id, outputs, finished)).get(ex.id)

    def test_match_after_normalisation(self):
        got = self.ran(self.first, [([], 0), (["#### all functions enabled ####",
                                               "ksys_sync:traceoff:unlimited   "], 0),
                                    (["sh: write error: Invalid argument"], 1)])
        self.assertEqual(docexamples.compare(self.first, got, "cp3"), [])

    def test_mismatch_is_a_diff_naming_document_and_line(self):
        got = self.ran(self.first, [([], 0), (["#### all functions enabled ####"], 0),
                                    (["sh: write error: Invalid argument"], 1)])
        evidence = docexamples.compare(self.first, got, "cp3")
        self.assertTrue(evidence[0].startswith("--- doc/x.adoc:8 '# cat set_ftrace_filter'"))
        self.assertIn("-ksys_sync:traceoff:unlimited", evidence)

    def test_unfinished_example(self):
        got = self.ran(self.first, [([], 0)], finished=False)
        self.assertIn("did not run to its end", docexamples.compare(self.first, got, "cp3")[0])
        self.assertIn("did not run", docexamples.compare(self.first, None, "cp3")[0])

    def test_nondeterministic_compares_exit_status_only(self):
        ok = self.ran(self.nondet, [(["anything"], 0), (["else"], 0)])
        self.assertEqual(docexamples.compare(self.nondet, ok, "cp3"), [])
        bad = self.ran(self.nondet, [(["anything"], 1), ([], 0)])
        evidence = docexamples.compare(self.nondet, bad, "cp3")
        self.assertEqual(len(evidence), 1)
        self.assertIn("doc/x.adoc:28", evidence[0])
        self.assertIn("exited 1", evidence[0])

    def test_grade_counts_ran_and_matched(self):
        lines = guest(self.first.id, [([], 0), (["#### all functions enabled ####",
                                                 "ksys_sync:traceoff:unlimited"], 0),
                                      (["sh: write error: Invalid argument"], 1)])
        tally = ui.Tally()
        with redirect_stdout(io.StringIO()) as out:
            counts = docexamples.grade_kernel(docexamples.parse("doc/x.adoc", DOC), lines, K.of(3),
                                              tally)
        # cp3 runs the first and the nondeterministic example; only the first ran
        self.assertEqual(counts, (1, 1, 2))
        self.assertEqual(tally.failed, 2)
        self.assertIn("doc example doc/x.adoc:28 [cp3]", out.getvalue())
        self.assertIn("1 of 2 ran, 1 matched", out.getvalue())


class Chapters(unittest.TestCase):
    def test_the_chapters_parse_and_every_example_runs_somewhere(self):
        examples = docexamples.load()
        self.assertGreater(len(examples), 10)
        last = series.last_checkpoint()
        for ex in examples:
            self.assertTrue(any(ex.runs_on(k, last) for k in K.every()),
                            ex.where)

    def test_guest_files(self):
        examples = docexamples.load()
        files = docexamples.guest_files(examples, series.last_checkpoint())
        listing = files["lab/docexamples/list"].splitlines()
        self.assertEqual(len(listing), len(examples))
        for line in listing:
            ident, kernels = line.split()
            self.assertIn(f"lab/docexamples/{ident}.sh", files)
            self.assertNotEqual(kernels, "-")


if __name__ == "__main__":
    unittest.main()
