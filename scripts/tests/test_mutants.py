"""Mutants, the grader's own test: the data of every exercise names holes
and checks that exist, an edit applies to its hole by its text, the
runner's decision follows the lab's checks, and make check's light
sample is wired and catchable by a plain lab check."""

import inspect
import unittest
from unittest import mock

from labkit import check, grade, holes, mutants, protocol, series
from labkit.kernels import KernelId

from tests.test_holes import C_FILE, HOLES

MUTANTS = """\
# a comment
mutant 1.1-too-far
hole: 1
family: semantics
catch: hits
what: walks one past the limit
@@
-\twhile (p && n < limit) {
+\twhile (p && n <= limit) {

mutant 1.2-keeps-next
hole: 2
family: memory
catch: report
what: the next pointer is kept
known: nothing reads it
@@
 \tp->hits = 0;
-\tp->next = NULL;
@@
-\tp->hits = 0;
+\tp->hits = 1;
"""


class DataTest(unittest.TestCase):
    def test_the_format(self):
        found = mutants.parse(MUTANTS, 1)
        self.assertEqual([m.id for m in found], ["1.1-too-far", "1.2-keeps-next"])
        one, two = found
        self.assertEqual((one.hole, one.family, one.catch), (1, "semantics", ["hits"]))
        self.assertEqual(one.edits, [(["\twhile (p && n < limit) {"],
                                      ["\twhile (p && n <= limit) {"])])
        self.assertFalse(one.wants_debug)
        self.assertTrue(two.wants_debug)
        self.assertEqual(two.known, "nothing reads it")
        self.assertEqual(len(two.edits), 2)

    def test_a_bad_field_no_edit_and_a_twice_given_id_are_refused(self):
        for text, words in (
                (MUTANTS.replace("family:", "famly:", 1), "not one of the fields"),
                ("mutant 1.1-x\nhole: 1\nfamily: memory\ncatch: hits\nwhat: w\n",
                 "no edit"),
                ("mutant 1.1-x\nhole: 1\nfamily: memory\ncatch: hits\n@@\n-a\n", "no what"),
                (MUTANTS + "\n" + MUTANTS.split("\n\n")[0].replace("# a comment\n", ""),
                 "twice"),
                ("mutant 1.1-x\nhole: 1\nfamily: memory\ncatch: hits\nwhat: w\n@@\n*a\n",
                 "starts with")):
            with self.subTest(words=words), self.assertRaises(mutants.MutantError) as e:
                mutants.parse(text, 1)
            self.assertIn(words, str(e.exception))

    def test_problems_name_a_missing_hole_a_missing_check_and_a_bad_family(self):
        found = mutants.parse(MUTANTS.replace("hole: 2", "hole: 9")
                              .replace("catch: hits", "catch: nosuchcheck")
                              .replace("family: memory", "family: style"), 1)
        got = "\n".join(mutants.problems(found, holes.parse(HOLES), ["hits", "limit"]))
        self.assertIn("no hole 9", got)
        self.assertIn("catch 'nosuchcheck' is no check of lab 01", got)
        self.assertIn("family 'style'", got)
        self.assertIn("starts with '1.9-'", got)
        self.assertEqual(mutants.problems(mutants.parse(MUTANTS, 1), holes.parse(HOLES),
                                          ["hits", "limit"]), [])

    def test_every_exercise_has_mutants_of_existing_holes_and_checks(self):
        for cp in series.checkpoints():
            if not holes.has_exercise(cp):
                continue
            with self.subTest(exercise=cp.number):
                self.assertTrue(mutants.has_mutants(cp), mutants.mutants_path(cp))
                found = mutants.load(cp)
                hole_list = holes.load(cp)
                self.assertEqual(mutants.problems(found, hole_list,
                                                  [c.id for c in cp.checks()]), [])
                for hole in hole_list:
                    self.assertGreaterEqual(sum(1 for m in found if m.hole == hole.number), 3,
                                            f"hole {cp.number}.{hole.number}")

    def test_id_chooses_one_or_several_and_refuses_an_unknown_one(self):
        cp = series.lookup(3)
        self.assertEqual([m.id for m in mutants.chosen_mutants(cp, "3.4-leak")], ["3.4-leak"])
        self.assertEqual([m.id for m in mutants.chosen_mutants(cp, "3.4-leak,3.1-count-ignored")],
                         ["3.1-count-ignored", "3.4-leak"])
        with self.assertRaises(mutants.MutantError) as e:
            mutants.chosen_mutants(cp, "3.4-leak 3.9-nothing")
        self.assertIn("no mutant '3.9-nothing'", str(e.exception))

    def test_the_families_asked_for_are_all_there(self):
        found = [m for cp in series.checkpoints() if mutants.has_mutants(cp)
                 for m in mutants.load(cp)]
        self.assertEqual({m.family for m in found}, set(mutants.FAMILIES))
        ids = [m.id for m in found]
        self.assertEqual(len(ids), len(set(ids)))


class ApplyTest(unittest.TestCase):
    def setUp(self):
        self.holes = {h.number: h for h in holes.parse(HOLES)}
        self.lines = C_FILE.split("\n")

    def test_an_edit_is_made_in_its_hole_only(self):
        one, two = mutants.parse(MUTANTS, 1)
        got = mutants.apply(self.lines, self.holes[1], one)
        changed = [(a, b) for a, b in zip(self.lines, got) if a != b]
        self.assertEqual(changed, [("\twhile (p && n < limit) {", "\twhile (p && n <= limit) {")])
        got = mutants.apply(self.lines, self.holes[2], two)
        self.assertNotIn("\tp->next = NULL;", got)
        self.assertIn("\tp->hits = 1;", got)
        self.assertEqual(len(got), len(self.lines) - 1)

    def test_an_edit_outside_its_hole_or_there_twice_is_a_defect(self):
        (one, _two) = mutants.parse(MUTANTS, 1)
        with self.assertRaises(mutants.MutantError) as e:
            mutants.apply(self.lines, self.holes[2], one)     # not in reset_probe()
        self.assertIn("not found in hole 1.2", str(e.exception))
        twice = mutants.parse("mutant 1.3-x\nhole: 1\nfamily: memory\ncatch: hits\n"
                              "what: w\n@@\n-\t\tn++;\n+\t\tn += 2;\n", 1)[0]
        lines = self.lines[:]
        i = lines.index("\t\tn++;")
        lines.insert(i, "\t\tn++;")
        lines.insert(i + 1, "\t\tp = p;")
        self.assertEqual(len(mutants.apply(self.lines, self.holes[1], twice)), len(self.lines))
        with self.assertRaises(mutants.MutantError) as e:
            mutants.apply(lines, self.holes[1], twice)
        self.assertIn("found 2 times", str(e.exception))


def lab_console(number, outputs, ended=True, skip=()):
    """A guest's console for lab N: each check of its expected file (but
    those of skip) printing outputs.get(id, its expected lines)."""
    cp = series.lookup(number)
    expected = grade.load_expected(cp.lab_dir)
    kinds = {c.id: c.kind for c in cp.checks()}
    key = f"{number:02d}"
    lines = [f"@@ftlab lab-begin {key}"]
    for ident in grade.check_ids(expected):
        if ident in skip:
            continue
        lines.append(f"@@ftlab check-begin {key} {ident} {kinds[ident]} {ident}")
        lines += outputs.get(ident, expected[ident])
        lines.append(f"@@ftlab check-end {key} {ident} rc=0")
    if ended:
        lines.append(f"@@ftlab lab-end {key}")
    return lines


class DecisionTest(unittest.TestCase):
    def setUp(self):
        self.cp = series.lookup(3)
        (self.m,) = mutants.parse("mutant 3.5-x\nhole: 5\nfamily: concurrency\n"
                                  "catch: enable-count\nwhat: w\n@@\n-a\n", 3)

    def failed(self, outputs, kid=KernelId.of(3)):
        return mutants.failed_checks(protocol.parse(lab_console(3, outputs)), self.cp, kid)

    def test_the_named_check_failing_catches_it(self):
        failed = self.failed({"enable-count": ["a line the reference never prints"]})
        self.assertEqual(failed, ["enable-count"])
        outcome = mutants.decide(self.m, failed)
        self.assertTrue(outcome.caught)
        self.assertEqual(outcome.line(), "CAUGHT 3.5-x by enable-count")

    def test_every_check_passing_misses_it(self):
        failed = self.failed({})
        self.assertEqual(failed, [])
        outcome = mutants.decide(self.m, failed)
        self.assertFalse(outcome.caught)
        self.assertEqual(outcome.line(), "MISSED 3.5-x (expected: enable-count)")

    def test_another_check_or_a_report_catches_it_and_says_so(self):
        outcome = mutants.decide(self.m, self.failed({"removal": []}))
        self.assertEqual(outcome.line(), "CAUGHT 3.5-x by removal (expected: enable-count)")
        outcome = mutants.decide(self.m, [], "kernel-report", "debug")
        self.assertTrue(outcome.caught)
        self.assertIn("by report (kernel-report) on the debug kernel", outcome.line())

    def test_a_check_that_never_ended_counts_as_failed(self):
        lines = [l for l in lab_console(3, {}) if "check-end 03 errors" not in l]
        failed = mutants.failed_checks(protocol.parse(lines), self.cp, KernelId.of(3))
        self.assertEqual(failed, ["errors"])
        lines = lab_console(3, {})[:3]      # the run died in the first check
        failed = mutants.failed_checks(protocol.parse(lines), self.cp, KernelId.of(3))
        # but the module check, which the plain kernel does not run
        self.assertEqual(failed, [i for i in grade.check_ids(grade.load_expected(self.cp.lab_dir))
                                  if i != "module-ref"])
        failed = mutants.failed_checks(protocol.parse(lines), self.cp, KernelId.of(3, "debug"))
        self.assertIn("module-ref", failed)

    def test_a_module_check_is_expected_only_on_a_kernel_with_modules(self):
        report = protocol.parse(lab_console(3, {}, skip=("module-ref",)))
        self.assertEqual(mutants.failed_checks(report, self.cp, KernelId.of(3)), [])
        self.assertEqual(mutants.failed_checks(report, self.cp, KernelId.of(3, "debug")),
                         ["module-ref"])

    def test_a_known_miss_is_skipped_an_unknown_one_fails(self):
        from labkit import ui
        tally = ui.Tally()
        with mock.patch.object(ui, "emit"), mock.patch.object(ui, "verdict"), \
                mock.patch.object(ui, "skip"):
            mutants.record(tally, mutants.decide(self.m, []))
            self.m.known = "a race a single vCPU cannot show"
            mutants.record(tally, mutants.decide(self.m, []))
            mutants.record(tally, mutants.decide(self.m, ["enable-count"]))
        self.assertEqual((tally.passed, tally.failed, tally.skipped), (1, 1, 1))


class LightSampleTest(unittest.TestCase):
    def test_the_sample_exists_and_a_plain_lab_check_catches_it(self):
        number, ident = mutants.LIGHT_SAMPLE
        (m,) = mutants.chosen_mutants(series.lookup(number), ident)
        self.assertNotIn(mutants.REPORT, m.catch)
        self.assertEqual(m.kernel, "plain")
        checks = {c.id: c.kind for c in series.lookup(number).checks()}
        self.assertTrue(m.catch and all(checks.get(c) == "check" for c in m.catch))
        self.assertFalse(m.known)
        # the last checkpoint, which make check builds right after upstream
        self.assertEqual(number, series.checkpoints()[-1].number)

    def test_make_check_runs_the_sample_and_full_runs_them_all(self):
        self.assertIn("mutants.check_part", inspect.getsource(check.run))
        calls = []
        with mock.patch.object(mutants, "check_data", lambda *a: calls.append("data")), \
                mock.patch.object(mutants, "check_sample",
                                  lambda session, tally: calls.append("sample")), \
                mock.patch.object(mutants, "check_all",
                                  lambda session, tally, numbers: calls.append("all")):
            mutants.check_part(None, None, [3])
            self.assertEqual(calls, ["data", "sample"])
            del calls[:]
            mutants.check_part(None, None, [3], full=True)
            self.assertEqual(calls, ["data", "all"])

    def test_the_sample_runs_its_one_mutant_on_the_plain_kernel(self):
        seen = []

        def run_one(session, cp, m, files, debug=True):
            seen.append((cp.number, m.id, debug))
            return mutants.Outcome(m, True, ["uptime"])

        text = ("kernel/trace/trace_clock.c", "text")
        with mock.patch.object(mutants, "prepared",
                               lambda s, cp, chosen: ({chosen[0].id: text}, {})), \
                mock.patch.object(mutants, "run_one", run_one):
            from labkit import ui
            tally = ui.Tally()
            with mock.patch.object(ui, "emit"), mock.patch.object(ui, "verdict"):
                outcome = mutants.check_sample(None, tally)
        self.assertEqual(seen, [(mutants.LIGHT_SAMPLE[0], mutants.LIGHT_SAMPLE[1], False)])
        self.assertTrue(outcome.caught)
        self.assertEqual(tally.verdicts[0].name,
                         f"mutant {mutants.LIGHT_SAMPLE[1]} is caught by uptime")


class SeedTest(unittest.TestCase):
    def test_a_mutant_starts_from_its_own_checkpoints_objects(self):
        kid = KernelId.of(3).built_from("mutant/cp3-x", "mutant")
        self.assertEqual(kid.name, "mutant-cp3")
        self.assertEqual(kid.seed_names()[:2], ["cp3", "cp2"])
        debug = KernelId.of(3, "debug").built_from("mutant/cp3-x", "mutant")
        self.assertEqual(debug.name, "mutant-cp3-debug")
        self.assertEqual(debug.seed_names()[0], "cp3-debug")
        # a skeleton still starts from the checkpoint before (the learner's)
        skeleton = KernelId.of(3).built_from("skeleton/cp3", "skeleton")
        self.assertEqual(skeleton.seed_names()[0], "cp2")


class ResultsTest(unittest.TestCase):
    def test_json_and_csv(self):
        import json
        import tempfile
        (m,) = mutants.parse(MUTANTS, 1)[:1]
        with tempfile.TemporaryDirectory() as d:
            paths = mutants.write_results(d, [mutants.decide(m, ["hits"])])
            with open(paths[0]) as f:
                rows = json.load(f)
            self.assertEqual(rows[0]["outcome"], "caught")
            self.assertEqual(rows[0]["by"], ["hits"])
            with open(paths[1]) as f:
                self.assertIn("1.1-too-far,1,1,semantics,caught,hits", f.read())
        self.assertEqual(mutants.summary_lines([mutants.decide(m, [])]),
                         ["exercise 1: 0/1 caught"])


if __name__ == "__main__":
    unittest.main()


