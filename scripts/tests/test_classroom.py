"""classroom/: grade.sh grades a learner's push with the instructor's
harness (a pinned commit, a checkout of its own, or the learner's copy
when it is the template's) and takes work/NN.patch alone from the
learner; a grade that ran to its end passes with its points; grader.py
gives the score of work that never reached the grade and GitHub
Classroom's result; gather.py grades a class into a CSV; the CI files
run it all.

grade.sh runs here for real, on a copy of this harness committed to a
git repository of its own (the "template"), with a stand-in make on the
PATH: its "make grade" writes a score.json whose score is the number of
lines of labs/03-*/expected in the folder it runs in, so that the score
shows which copy of the harness graded."""

import base64
import csv
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from labkit import conformance, exercise, kbuild, series, studentgrade
from labkit.kernels import KernelId

CLASSROOM = os.path.join(series.ROOT, "classroom")
HARNESS = ("patches", "labs", "exercises", "scripts", "initramfs", "gdb-scripts", "Makefile",
           "classroom")
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main",
       "-c", "advice.detachedHead=false"]

# The stand-in make. FAKE: what "make grade" does (score, nobuild, crash,
# noref); FAKE_EXERCISE: what "make exercise" prints before it fails.
FAKE_MAKE = r"""#!/bin/sh
echo "$(pwd -P)|${BUILD:-}|$*" >> "$CALLS"
case $1 in
deps) exit 0 ;;
exercise)
	if [ -n "${FAKE_EXERCISE:-}" ]; then echo "error: $FAKE_EXERCISE"; exit 1; fi
	exit 0 ;;
grade)
	n=$2; dir=${3#RESULTS=}; nn=$(printf %02d "$n")
	case ${FAKE:-score} in
	nobuild)
		echo "error: building your checkpoint $n (student/cp$n) failed:"
		echo "    | kernel/trace/trace_events.c:1:1: error: expected ';'"
		echo "full log: build/logs/build-student-cp$n.log"
		exit 1 ;;
	crash) echo "Traceback (most recent call last):"; exit 1 ;;
	noref) echo "      | case-1: no run of upstream 6.1 to compare with" ;;
	esac
	score=$(wc -l < labs/03-event-probes/expected)
	mkdir -p "$dir"
	cat > "$dir/score.json" <<EOF
{"checkpoint": $n, "score": $score, "possible": 1000, "tests": [
 {"name": "lab$nn.a", "title": "lab $nn a", "group": "lab $nn", "ok": false,
  "points": 1000, "earned": $score},
 {"name": "lab01.b", "title": "lab 01 b", "group": "regression", "ok": true,
  "points": 0, "earned": 0}]}
EOF
	exit 1 ;;
esac
exit 0
"""


# The file of exercise 4's holes (exercise 3's are in trace_events.c).
FUNCTIONS = "kernel/trace/trace_functions.c"


def work_patch(number, path="kernel/trace/trace_events.c", extra=""):
    """A work/NN.patch as make save writes it, editing 'path'."""
    return (f"ftlab exercise {number} (x) TODO=1\nWork on the skeleton.\n\n"
            f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n"
            f"--- a/{path}\n+++ b/{path}\n@@ -1,2 +1,3 @@\n a\n+b\n c\n" + extra)


def load(name):
    spec = importlib.util.spec_from_file_location(f"classroom_{name}",
                                                  os.path.join(CLASSROOM, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


grader = load("grader")
gather = load("gather")


def git(cwd, *args):
    return subprocess.run(GIT + list(args), cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


class Classroom(unittest.TestCase):
    """A template repository holding this harness (committed), and a
    stand-in make."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.template = os.path.join(cls.tmp, "template")
        os.makedirs(cls.template)
        for name in HARNESS:
            src = os.path.join(series.ROOT, name)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(cls.template, name),
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy(src, cls.template)
        git(cls.template, "init", "-q")
        git(cls.template, "add", "-A")
        git(cls.template, "commit", "-q", "-m", "Initial commit")
        cls.pin = git(cls.template, "rev-parse", "HEAD")
        cls.bin = os.path.join(cls.tmp, "bin")
        os.makedirs(cls.bin)
        with open(os.path.join(cls.bin, "make"), "w") as f:
            f.write(FAKE_MAKE)
        os.chmod(os.path.join(cls.bin, "make"), 0o755)
        with open(glob.glob(os.path.join(series.ROOT, "labs", "03-*", "expected"))[0]) as f:
            cls.expected_lines = len(f.read().splitlines())

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=self.tmp)
        self.calls = os.path.join(self.dir, "calls")
        # the grader's own checkout starts without work, as gather's does
        for p in glob.glob(os.path.join(self.template, "work", "*")):
            os.unlink(p)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def learner(self, patches, clone=False):
        """A learner's folder with work/NN.patch for each of 'patches'
        ({N: text}); clone: a git clone of the template, committed."""
        path = os.path.join(self.dir, "learner")
        if clone:
            git(self.dir, "clone", "-q", self.template, path)
        os.makedirs(os.path.join(path, "work"), exist_ok=True)
        for n, text in patches.items():
            with open(os.path.join(path, "work", f"{n:02d}.patch"), "w") as f:
                f.write(text)
        if clone and patches:
            git(path, "add", "work")
            git(path, "commit", "-q", "-m", "work")
        return path

    def grade(self, learner, script=None, **env):
        """(exit code, output, make's calls) of grade.sh in 'learner':
        by default the template's grade.sh (a checkout of its own)."""
        script = script or os.path.join(self.template, "classroom", "grade.sh")
        full = {k: v for k, v in os.environ.items()
                if k not in ("LAB", "BUILD", "TEMPLATE_COMMIT", "TEMPLATE_REPO", "GITHUB_OUTPUT",
                             "FTLAB_PINNED")}
        full.update(PATH=self.bin + os.pathsep + os.environ["PATH"], CALLS=self.calls, **env)
        r = subprocess.run(["sh", script], cwd=learner, env=full, capture_output=True,
                           text=True)
        calls = []
        if os.path.exists(self.calls):
            with open(self.calls) as f:
                calls = f.read().splitlines()
        return r.returncode, r.stdout + r.stderr, calls

    def score(self, learner, n=3):
        with open(os.path.join(learner, "results", f"{n:02d}", "score.json")) as f:
            return json.load(f)

    def verdict(self, learner, n=3):
        with open(os.path.join(learner, "results", f"{n:02d}", "verdict.json")) as f:
            return json.load(f)


class GradeScript(Classroom):
    def test_every_saved_exercise_with_the_checkout_it_is_in(self):
        learner = self.learner({3: work_patch(3), 4: work_patch(4, FUNCTIONS)})
        rc, out, calls = self.grade(learner)
        self.assertEqual(rc, 0, out)
        where = os.path.realpath(self.template)
        self.assertEqual(calls, [f"{where}||deps", f"{where}||exercise 3",
                                 f"{where}||grade 3 RESULTS={os.path.realpath(learner)}/results/03",
                                 f"{where}||exercise 4",
                                 f"{where}||grade 4 RESULTS={os.path.realpath(learner)}/results/04"])
        # the work went into the grader's checkout, where make exercise reads it
        with open(os.path.join(self.template, "work", "04.patch")) as f:
            self.assertEqual(f.read(), work_patch(4, FUNCTIONS))

    def test_lab_picks_one(self):
        learner = self.learner({3: work_patch(3), 4: work_patch(4)})
        rc, out, calls = self.grade(learner, LAB="03")
        self.assertEqual([c.split("|")[2] for c in calls[1:]],
                         ["exercise 3", f"grade 3 RESULTS={os.path.realpath(learner)}/results/03"])

    def test_a_partial_score_passes_with_its_points(self):
        # make grade exits 1 (a test failed) after writing score.json
        learner = self.learner({3: work_patch(3)})
        rc, out, _calls = self.grade(learner)
        self.assertEqual(rc, 0, out)
        self.assertIn(f"exercise 3: {self.expected_lines}/1000 points (graded)", out)
        self.assertEqual(self.verdict(learner)["verdict"], "graded")

    def test_nothing_to_grade_is_a_line_not_a_failure(self):
        # the template's copy, GitHub Classroom's first commit: no work/
        rc, out, calls = self.grade(self.learner({}))
        self.assertEqual((rc, calls), (0, []))
        self.assertIn("nothing to grade yet: this commit has no work/NN.patch", out)
        rc, out, calls = self.grade(self.learner({4: work_patch(4)}), LAB="3")
        self.assertEqual((rc, calls), (0, []))
        self.assertIn("exercise 3: nothing to grade yet", out)

    def test_work_that_does_not_build_scores_zero_and_passes(self):
        learner = self.learner({3: work_patch(3)})
        rc, out, _calls = self.grade(learner, FAKE="nobuild")
        self.assertEqual(rc, 0, out)
        score, verdict = self.score(learner), self.verdict(learner)
        possible = sum(t.points for t in grader.zero_tests(3, "it does not build"))
        self.assertEqual((score["score"], score["possible"]), (0, possible))
        self.assertEqual(verdict["verdict"], "does not build")
        self.assertIn("results/03/grade.log, the whole build in build/logs/build-student-cp3.log",
                      verdict["why"])
        self.assertIn(f"exercise 3: 0/{possible} points (does not build", out)
        self.assertTrue(os.path.exists(os.path.join(learner, "results", "03", "junit.xml")))

    def test_work_that_does_not_apply_scores_zero_and_passes(self):
        learner = self.learner({3: work_patch(3)})
        rc, out, calls = self.grade(learner, FAKE_EXERCISE="your saved work does not apply to "
                                    "the skeleton:\nerror: patch failed")
        self.assertEqual(rc, 0, out)
        self.assertEqual(self.verdict(learner)["verdict"], "does not apply")
        self.assertFalse(any("grade 3" in c for c in calls))

    def test_work_outside_the_holes_is_refused_before_anything_runs(self):
        learner = self.learner({3: work_patch(3, "Makefile")})
        rc, out, calls = self.grade(learner)
        self.assertEqual(rc, 0, out)
        self.assertEqual(self.verdict(learner)["verdict"], "refused")
        self.assertIn("it changes Makefile", self.verdict(learner)["why"])
        self.assertEqual([c.split("|")[2] for c in calls], ["deps"])

    def test_a_crash_of_the_harness_fails_the_job_and_the_others_still_run(self):
        learner = self.learner({3: work_patch(3), 4: work_patch(4, FUNCTIONS)})
        rc, out, calls = self.grade(learner, FAKE="crash")
        self.assertEqual(rc, 1)
        self.assertIn("GRADER FAILED: make grade 3 exited 1 without a score", out)
        self.assertIn("grade 4", calls[-1])
        self.assertIn("no points are reported", out)

    def test_a_grade_without_upstreams_reference_fails_the_job(self):
        rc, out, _calls = self.grade(self.learner({3: work_patch(3)}), FAKE="noref")
        self.assertEqual(rc, 1)
        self.assertIn("GRADER FAILED: no run of upstream 6.1", out)

    def test_a_checkout_with_work_of_its_own_is_not_written_over(self):
        os.makedirs(os.path.join(self.template, "work"), exist_ok=True)
        with open(os.path.join(self.template, "work", "03.patch"), "w") as f:
            f.write("mine")
        rc, out, calls = self.grade(self.learner({3: work_patch(3)}))
        self.assertEqual((rc, calls), (1, []))
        with open(os.path.join(self.template, "work", "03.patch")) as f:
            self.assertEqual(f.read(), "mine")

    def test_github_classroom_result(self):
        learner = self.learner({3: work_patch(3)})
        output = os.path.join(self.dir, "github_output")
        rc, out, _calls = self.grade(learner, GITHUB_OUTPUT=output)
        self.assertEqual(rc, 0, out)
        with open(output) as f:
            (line,) = f.read().splitlines()
        self.assertTrue(line.startswith("result="))
        result = json.loads(base64.b64decode(line[len("result="):]))
        # the reporter fails the run on a "fail" status: a grade that ran
        # to its end passes, with its points
        self.assertEqual(result["status"], "pass")
        self.assertEqual(result["max_score"], 1000)
        self.assertEqual(sum(t["score"] for t in result["tests"]), self.expected_lines)
        self.assertEqual([t["status"] for t in result["tests"]], ["fail", "pass"])
        with open(os.path.join(learner, "results", "autograding.json")) as f:
            self.assertEqual(json.load(f), result)

    def test_no_result_when_the_grader_failed(self):
        output = os.path.join(self.dir, "github_output")
        rc, _out, _calls = self.grade(self.learner({3: work_patch(3)}), FAKE="crash",
                                      GITHUB_OUTPUT=output)
        self.assertEqual(rc, 1)
        self.assertFalse(os.path.exists(output))


class TheGraderIsTheInstructors(Classroom):
    """A learner who edits labs/03-*/expected in their repository gets the
    score of one who did not."""

    def cheat(self, learner):
        expected = glob.glob(os.path.join(learner, "labs", "03-*", "expected"))[0]
        with open(expected, "a") as f:
            f.write("a line the learner added\n" * 5)
        git(learner, "commit", "-q", "-a", "-m", "expected, as I like it")

    def test_the_pinned_commit_grades_and_the_learners_copy_is_not_read(self):
        honest = self.learner({3: work_patch(3)}, clone=True)
        rc, out, calls = self.grade(honest, script=os.path.join(honest, "classroom", "grade.sh"),
                                    TEMPLATE_COMMIT=self.pin, TEMPLATE_REPO=self.template)
        self.assertEqual(rc, 0, out)
        honest_score = self.score(honest)["score"]
        self.assertEqual(honest_score, self.expected_lines)
        shutil.rmtree(honest)
        os.unlink(self.calls)

        learner = self.learner({3: work_patch(3)}, clone=True)
        self.cheat(learner)
        rc, out, calls = self.grade(learner, script=os.path.join(learner, "classroom", "grade.sh"),
                                    TEMPLATE_COMMIT=self.pin, TEMPLATE_REPO=self.template)
        self.assertEqual(rc, 0, out)
        self.assertEqual(self.score(learner)["score"], honest_score)
        self.assertIn(f"grading with the harness of {self.pin}", out)
        # every make ran in the pin's extraction, the kernels built in the
        # learner's build/ (the CI cache), and the extraction is gone
        where = {c.split("|")[0] for c in calls}
        self.assertEqual(len(where), 1)
        self.assertNotEqual(where, {os.path.realpath(learner)})
        self.assertFalse(os.path.exists(where.pop()))
        self.assertEqual({c.split("|")[1] for c in calls},
                         {os.path.join(os.path.realpath(learner), "build")})

    def test_a_pin_that_is_not_there_fails(self):
        learner = self.learner({3: work_patch(3)}, clone=True)
        rc, out, calls = self.grade(learner, script=os.path.join(learner, "classroom", "grade.sh"),
                                    TEMPLATE_COMMIT="0" * 40, TEMPLATE_REPO=self.template)
        self.assertEqual((rc, calls), (1, []))
        self.assertIn("is not in", out)

    def test_without_a_pin_the_learners_copy_grades_only_when_it_is_the_templates(self):
        learner = self.learner({3: work_patch(3)}, clone=True)
        script = os.path.join(learner, "classroom", "grade.sh")
        rc, out, calls = self.grade(learner, script=script)
        self.assertEqual(rc, 0, out)
        self.assertIn("it is this repository's first commit", out)
        self.assertEqual({c.split("|")[0] for c in calls}, {os.path.realpath(learner)})
        os.unlink(self.calls)

        self.cheat(learner)
        rc, out, calls = self.grade(learner, script=script)
        self.assertEqual((rc, calls), (2, []))
        self.assertIn("REFUSED", out)
        self.assertIn("    labs/03-event-probes/expected", out)
        # against the template's HEAD (TEMPLATE_REPO) too
        rc, out, calls = self.grade(learner, script=script, TEMPLATE_REPO=self.template)
        self.assertEqual((rc, calls), (2, []))
        self.assertIn("the template's HEAD", out)


class Phrases(unittest.TestCase):
    """grade.sh tells the learner's failures from the grader's by what the
    harness prints: those lines must stay as grade.sh reads them."""

    def test_the_harness_says_what_grade_sh_looks_for(self):
        with open(os.path.join(CLASSROOM, "grade.sh")) as f:
            script = f.read()
        # the learner's kernel that does not build (kbuild.Kernel.build)
        student = KernelId.of(3).built_from("student/cp3", "student", as_is=True)
        self.assertEqual(student.label, "your checkpoint 3 (student/cp3)")
        with open(kbuild.__file__) as f:
            self.assertIn('BuildError(self._failure(f"building {self.label} failed"))', f.read())
        self.assertIn("building your checkpoint $n (student/cp$n) failed", script)
        # work that does not apply (exercise._apply)
        with open(exercise.__file__) as f:
            self.assertIn("does not apply to the skeleton", f.read())
        self.assertIn("does not apply to the skeleton", script)
        # a grade with no run of upstream to compare the corpus with
        pattern = "no run of upstream [0-9.]* to compare with"
        self.assertIn(pattern, script)
        tests = studentgrade.conformance_tests(
            studentgrade.Ran(), conformance.load_corpus(), None, conformance.load_expected(), 3,
            {})
        evidence = [line for t in tests for line in t.evidence]
        self.assertTrue(any(re.search(pattern, line) for line in evidence), evidence[:3])

    def test_grade_sh_and_gather_take_the_same_harness_paths(self):
        with open(os.path.join(CLASSROOM, "grade.sh")) as f:
            line = next(l for l in f if l.startswith("GRADED="))
        self.assertEqual(tuple(line.split('"')[1].split()), gather.HARNESS_PATHS)
        self.assertEqual(gather.HARNESS_PATHS, HARNESS)


class Scope(unittest.TestCase):
    """A work patch may edit the files of its exercise's holes, and do
    nothing else."""

    def problems(self, text, number=3):
        return grader.patch_problems(text, grader.hole_files(number))

    def test_an_edit_of_a_hole_file(self):
        self.assertEqual(self.problems(work_patch(3)), [])

    def test_another_file(self):
        (problem,) = self.problems(work_patch(3, "scripts/checkpatch.pl"))
        self.assertIn("it changes scripts/checkpatch.pl", problem)
        # a hole file of another exercise is another file
        self.assertTrue(self.problems(work_patch(3, "kernel/trace/trace_clock.c")))

    def test_more_than_an_edit(self):
        path = "kernel/trace/trace_events.c"
        for header in ("new file mode 100755", "old mode 100644\nnew mode 100755",
                       "rename from x\nrename to y", "GIT binary patch"):
            text = work_patch(3).replace("index 1111111", header + "\nindex 1111111")
            self.assertTrue(self.problems(text), header)
        # a plain diff (no "diff --git") that git apply takes all the same
        plain = f"--- a/{path}\n+++ b/Makefile\n@@ -1 +1 @@\n-a\n+b\n"
        self.assertTrue(self.problems(plain))

    def test_a_removed_line_that_looks_like_a_header(self):
        text = work_patch(3).replace(" c\n", "--- a/Makefile\n c\n").replace("+1,3", "+1,2")
        self.assertEqual(self.problems(text), [])

    def test_the_command(self):
        with tempfile.NamedTemporaryFile("w", suffix=".patch") as f:
            f.write(work_patch(3, "Makefile"))
            f.flush()
            r = subprocess.run([sys.executable, os.path.join(CLASSROOM, "grader.py"), "scope",
                                "3", f.name], capture_output=True, text=True)
        self.assertEqual(r.returncode, 3)
        self.assertIn("is not graded: it changes Makefile", r.stdout)


class ZeroScore(unittest.TestCase):
    def test_the_points_of_a_grade_of_each_exercise(self):
        # the full marks classroom/README.adoc gives
        full = {1: 90, 2: 50, 3: 110, 4: 90, 5: 100, 6: 200, 7: 120}
        for number, possible in full.items():
            tests = grader.zero_tests(number, "it does not build")
            self.assertEqual(sum(t.points for t in tests), possible, number)
            self.assertTrue(all(not t.ok and t.evidence == ["it does not build"] for t in tests))

    def test_the_readme_gives_those_marks(self):
        with open(os.path.join(CLASSROOM, "README.adoc")) as f:
            text = " ".join(f.read().split())
        self.assertIn("full marks are 90 for exercise 1, 50 for exercise 2, 110 for exercise 3, "
                      "90 for exercise 4, 100 for exercise 5, 200 for exercise 6 and 120 for "
                      "exercise 7", text)


class HandoutMarks(unittest.TestCase):
    def test_each_handout_gives_the_full_marks_of_its_grade(self):
        for number in range(1, 8):
            path, = glob.glob(os.path.join(series.ROOT, "labs", f"{number:02d}-*", "exercise.adoc"))
            with open(path) as f:
                text = " ".join(f.read().split())
            said = re.findall(r"Full marks are (\d+) points", text)
            possible = sum(t.points for t in grader.zero_tests(number, "it does not build"))
            self.assertEqual(said, [str(possible)], path)


class Gather(Classroom):
    """Two learners' repositories, graded from one checkout with a
    stand-in grade command."""

    def repo(self, name, files):
        path = os.path.join(self.dir, "repos", name)
        os.makedirs(path)
        git(path, "init", "-q")
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(path, rel)), exist_ok=True)
            with open(os.path.join(path, rel), "w") as f:
                f.write(text)
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "work")
        return path

    # writes a score from the patch's length; records what the folder holds
    FAKE_GRADE = ('mkdir -p results/0$LAB && find . -type f | sort > "$SEEN.$(basename $PWD)" && '
                  'echo "{\\"score\\": $(wc -l < work/0$LAB.patch), \\"possible\\": 75}" '
                  '> results/0$LAB/score.json')

    def test_two_learners(self):
        alice = self.repo("alice", {"work/03.patch": work_patch(3),
                                    # nothing but work/NN.patch is taken
                                    "Makefile": "all:\n\ttouch /tmp/pwned\n",
                                    "labs/03-event-probes/expected": "cheat\n"})
        bob = self.repo("bob.git", {"work/03.patch": work_patch(3) + " more\n" * 3,
                                    "work/04.patch": work_patch(4)})
        nobody = self.repo("carol", {"README": "nothing yet"})
        learners = os.path.join(self.dir, "learners.txt")
        with open(learners, "w") as f:
            f.write(f"# the class\n{alice}\n{bob}/\n\n{nobody}\n{self.dir}/nosuch\n")
        out = os.path.join(self.dir, "out")
        seen = os.path.join(self.dir, "seen")
        r = subprocess.run([sys.executable, os.path.join(self.template, "classroom", "gather.py"),
                            learners, "--out", out, "--lab", "3", "--grade-cmd", self.FAKE_GRADE],
                           capture_output=True, text=True, env=dict(os.environ, SEEN=seen))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(out, "scores.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([(r["learner"], r["exercise"], r["score"], r["possible"], r["verdict"])
                          for r in rows],
                         [("alice", "3", "11", "75", "graded"), ("bob", "3", "14", "75", "graded"),
                          ("carol", "3", "", "", "no work"),
                          ("nosuch", "", "", "", f"clone failed: no such folder: {self.dir}/nosuch")])
        self.assertEqual(rows[0]["log"], "logs/alice-03.log")
        self.assertEqual(rows[0]["commit"], git(alice, "rev-parse", "HEAD"))
        # the grade saw the learner's work/NN.patch and nothing else of theirs
        with open(seen + ".alice") as f:
            self.assertEqual(f.read().split(), ["./work/03.patch"])

    def test_every_exercise_and_a_grader_that_fails(self):
        bob = self.repo("bob", {"work/03.patch": work_patch(3), "work/04.patch": work_patch(4)})
        learners = os.path.join(self.dir, "learners.txt")
        with open(learners, "w") as f:
            f.write(bob + "\n")
        out = os.path.join(self.dir, "out")
        r = subprocess.run([sys.executable, os.path.join(self.template, "classroom", "gather.py"),
                            learners, "--out", out],
                           capture_output=True, text=True,
                           env=dict(os.environ, FTLAB_GRADE_CMD="test $LAB = 3 && " + self.FAKE_GRADE,
                                    SEEN=os.path.join(self.dir, "seen")))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        with open(os.path.join(out, "scores.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([(r["exercise"], r["verdict"]) for r in rows],
                         [("3", "graded"), ("4", "grader failed (exit code 1)")])

    def test_the_real_grade_sh_from_a_pristine_checkout(self):
        alice = self.repo("alice", {"work/03.patch": work_patch(3),
                                    "labs/03-event-probes/expected": "cheat\n"})
        learners = os.path.join(self.dir, "learners.txt")
        with open(learners, "w") as f:
            f.write(alice + "\n")
        out = os.path.join(self.dir, "out")
        env = {k: v for k, v in os.environ.items() if k != "FTLAB_GRADE_CMD"}
        env.update(PATH=self.bin + os.pathsep + os.environ["PATH"], CALLS=self.calls)
        r = subprocess.run([sys.executable, os.path.join(self.template, "classroom", "gather.py"),
                            learners, "--out", out], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(out, "scores.csv")) as f:
            (row,) = list(csv.DictReader(f))
        self.assertEqual((row["score"], row["verdict"]), (str(self.expected_lines), "graded"))
        with open(os.path.join(out, row["log"])) as f:
            self.assertIn(f"exercise 3: {self.expected_lines}/1000 points (graded)", f.read())

    def test_a_harness_with_changes_of_its_own_grades_nobody(self):
        with open(os.path.join(self.template, "labs", "03-event-probes", "expected"), "a") as f:
            f.write("changed\n")
        try:
            learners = os.path.join(self.dir, "learners.txt")
            open(learners, "w").close()
            r = subprocess.run([sys.executable,
                                os.path.join(self.template, "classroom", "gather.py"),
                                learners, "--out", os.path.join(self.dir, "out")],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 2)
            self.assertIn("labs/03-event-probes/expected", r.stderr)
        finally:
            git(self.template, "checkout", "--", "labs")

    def test_names(self):
        taken = set()
        self.assertEqual([gather.learner_name(s, taken) for s in
                          ("https://github.com/class/lab3-alice.git", "git@host:class/bob",
                           "/srv/alice/", "/other/alice")],
                         ["lab3-alice", "bob", "alice", "alice-2"])


class CiFiles(unittest.TestCase):
    FILES = (".gitlab-ci.yml", "github-classroom.yml")

    def text(self, name):
        with open(os.path.join(CLASSROOM, name)) as f:
            return f.read()

    def test_both_run_the_pinned_grader_and_publish_junit(self):
        for name in self.FILES:
            text = self.text(name)
            # the pin's own grade.sh runs, not the learner's copy
            self.assertIn('git show "$TEMPLATE_COMMIT:classroom/grade.sh"', text, name)
            self.assertIn("sh classroom/grade.sh", text, name)
            self.assertIn("results/*/junit.xml", text, name)
            self.assertIn("debian:12", text, name)

    def test_github_reports_points_to_classroom(self):
        text = self.text("github-classroom.yml")
        self.assertIn("classroom-resources/autograding-grading-reporter@v1", text)
        # the reporter reads <RUNNER>_RESULTS, the runner named in upper case
        self.assertIn(f"runners: {grader.RUNNER}", text)
        self.assertIn(f"{grader.RUNNER.upper()}_RESULTS: ${{{{ steps.grade.outputs.result }}}}",
                      text)
        self.assertIn("if: steps.grade.outputs.result != ''", text)

    def test_github_classrooms_first_commit_is_a_line(self):
        # the template's copy has no work: the steps that grade do not run
        text = self.text("github-classroom.yml")
        look = text[text.index("id: look"):text.index("actions/cache/restore")]
        self.assertIn("nothing to grade yet", look)
        self.assertNotIn("exit 1", look)
        steps = text.split("\n      - ")[1:]
        gated = [s for s in steps if "steps.look.outputs.found == 'yes'" in s]
        self.assertEqual(len(gated), 5)
        self.assertTrue(any("id: grade" in s for s in gated))

    def test_github_job_can_publish_and_keeps_its_caches(self):
        text = self.text("github-classroom.yml")
        # the check run of the JUnit report needs a token that may write checks
        self.assertIn("checks: write", text)
        # github.workspace is the runner's path in a container job: ccache
        # would write outside the folder the cache step keeps
        self.assertNotIn("${{ github.workspace }}", text)
        self.assertIn('CCACHE_DIR="$GITHUB_WORKSPACE/.ccache"', text)
        # a cache key is saved once: each run needs its own to save anything,
        # and a failing grade must save it too
        self.assertIn("github.run_id", text)
        save = text[text.index("actions/cache/save"):]
        self.assertIn("if: always()", save[:120])


if __name__ == "__main__":
    unittest.main()
