"""classroom/: the CI job's script picks the exercises and runs make
grade for each; both CI files run it and publish its JUnit reports."""

import os
import shutil
import subprocess
import tempfile
import unittest

from labkit import series

CLASSROOM = os.path.join(series.ROOT, "classroom")
GRADE_SH = os.path.join(CLASSROOM, "grade.sh")
# A stand-in make: records its arguments, fails "make grade 5".
FAKE_MAKE = """#!/bin/sh
echo "$*" >> "$CALLS"
[ "$1 $2" != "grade 5" ]
"""


class GradeScript(unittest.TestCase):
    def run_script(self, patches, lab=None):
        """(exit code, make's calls) of grade.sh in a checkout that has
        work/NN.patch for each of 'patches'."""
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "classroom"))
            os.makedirs(os.path.join(tmp, "work"))
            os.makedirs(os.path.join(tmp, "bin"))
            shutil.copy(GRADE_SH, os.path.join(tmp, "classroom"))
            for n in patches:
                open(os.path.join(tmp, "work", f"{n:02d}.patch"), "w").close()
            make = os.path.join(tmp, "bin", "make")
            with open(make, "w") as f:
                f.write(FAKE_MAKE)
            os.chmod(make, 0o755)
            calls = os.path.join(tmp, "calls")
            env = dict(os.environ, PATH=os.path.join(tmp, "bin") + ":" + os.environ["PATH"],
                       CALLS=calls)
            env.pop("LAB", None)
            if lab is not None:
                env["LAB"] = lab
            r = subprocess.run(["sh", os.path.join(tmp, "classroom", "grade.sh")], env=env,
                               capture_output=True, text=True)
            with open(calls) as f:
                return r.returncode, f.read().splitlines()

    def test_every_saved_exercise(self):
        rc, calls = self.run_script([3, 10])
        self.assertEqual(rc, 0)
        self.assertEqual(calls, ["deps", "exercise 3", "grade 3 RESULTS=results/03",
                                 "exercise 10", "grade 10 RESULTS=results/10"])

    def test_lab_picks_one(self):
        rc, calls = self.run_script([3, 4], lab="4")
        self.assertEqual(calls[1:], ["exercise 4", "grade 4 RESULTS=results/04"])

    def test_a_failed_grade_fails_the_job_and_the_others_still_run(self):
        rc, calls = self.run_script([5, 6])
        self.assertEqual(rc, 1)
        self.assertIn("grade 6 RESULTS=results/06", calls)

    def test_nothing_to_grade_fails(self):
        rc, calls = self.run_script([])
        self.assertEqual((rc, calls), (1, ["deps"]))


class CiFiles(unittest.TestCase):
    def test_both_run_the_script_and_publish_junit(self):
        for name in (".gitlab-ci.yml", "github-workflow.yml"):
            with open(os.path.join(CLASSROOM, name)) as f:
                text = f.read()
            self.assertIn("sh classroom/grade.sh", text, name)
            self.assertIn("results/*/junit.xml", text, name)
            self.assertIn("debian:12", text, name)

    def test_github_job_can_publish_and_keeps_its_caches(self):
        with open(os.path.join(CLASSROOM, "github-workflow.yml")) as f:
            text = f.read()
        # the check run of the JUnit report needs a token that may write checks
        self.assertIn("checks: write", text)
        # github.workspace is the runner's path in a container job: ccache
        # would write outside the folder the cache step keeps
        self.assertNotIn("${{ github.workspace }}", text)
        self.assertIn('CCACHE_DIR="$GITHUB_WORKSPACE/.ccache"', text)
        # a cache key is saved once: each run needs its own to save anything,
        # and a failing grade (the usual one) must save it too
        self.assertIn("github.run_id", text)
        save = text[text.index("actions/cache/save"):]
        self.assertIn("if: always()", save[:60])


if __name__ == "__main__":
    unittest.main()
