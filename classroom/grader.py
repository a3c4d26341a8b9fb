#!/usr/bin/env python3
"""What classroom/grade.sh asks of the harness besides make exercise and
make grade. It runs from the grader's own checkout (the harness beside
this file: the pinned commit, the container's, gather.py's), never from
a learner's copy, and reads the learner's work/NN.patch as text only.

  grader.py scope N PATCH       may PATCH be applied and built? It may
                                change the files that hold exercise N's
                                holes, and nothing else. Exit 0: yes;
                                3: no, and why on stdout.
  grader.py forget N BUILD      drop student/cpN from BUILD/linux, so
                                that the work graded is the patch alone
  grader.py zero N DIR VERDICT WHY
                                the score of work that never reached the
                                grade (it does not build, apply, ...):
                                every scored test of make grade N failed,
                                with WHY; DIR/score.json, junit.xml and
                                verdict.json
  grader.py graded N DIR        DIR/verdict.json of a grade that ran to
                                its end (DIR/score.json is make grade's)
  grader.py classroom DIR N...  GitHub Classroom's result of DIR/NN/
                                (classroom/README.adoc): writes
                                DIR/autograding.json, prints it in base64
  grader.py reference BUILD     upstream 6.1 built and its corpus run
                                logged, as make grade's reference
                                (classroom/Containerfile)

Each command that ends an exercise prints its line: "exercise N:
S/P points (VERDICT)".
"""

import base64
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from labkit import conformance, exercise, holes, series, studentgrade, tree  # noqa: E402
from labkit.errors import HarnessError  # noqa: E402

OUT_OF_SCOPE = 3
VERDICT = "verdict.json"
SCORE = "score.json"
RESULT = "autograding.json"
# The reporter action reads its result from <RUNNER>_RESULTS; the
# workflow names the runner "ftlab" (classroom/github-classroom.yml).
RUNNER = "ftlab"

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
# Header lines that create, delete, rename, copy or chmod a file, or
# carry binary data: a work patch only edits text files that exist.
_FORBIDDEN = ("new file mode", "deleted file mode", "old mode", "new mode", "rename ",
              "copy ", "similarity index", "dissimilarity index", "GIT binary patch",
              "Binary files ")


def hole_files(number):
    """The files that hold exercise N's holes."""
    return list(holes.by_file(holes.load(series.lookup(number))))


def _path(name):
    """The tree path of a patch header's name ("a/x/y.c" -> "x/y.c";
    git apply strips one component); None for a name it cannot be."""
    name = name.split("\t")[0].rstrip()
    if name.startswith('"') or "/" not in name:
        return None
    return name.split("/", 1)[1]


def patch_problems(text, allowed):
    """Why git apply would do more with 'text' than edit the files
    'allowed': [] when it would not. Reads the hunks by their line counts,
    so that a removed line that starts with "--" is not taken for a
    header."""
    problems, touched = [], []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _HUNK.match(line)
        if m:
            old = int(m.group(1)) if m.group(1) is not None else 1
            new = int(m.group(2)) if m.group(2) is not None else 1
            i += 1
            while i < len(lines) and (old > 0 or new > 0):
                body = lines[i]
                if body.startswith("\\"):
                    pass
                elif body.startswith("-"):
                    old -= 1
                elif body.startswith("+"):
                    new -= 1
                else:
                    old, new = old - 1, new - 1
                i += 1
            continue
        if line.startswith(_FORBIDDEN):
            problems.append(f"it does more than edit a file: {line.strip()}")
        names = []
        if line.startswith("diff --git "):
            names = line[len("diff --git "):].split(" ")
            if len(names) != 2:
                problems.append(f"a file name git would read otherwise: {line.strip()}")
                names = []
        elif line.startswith(("--- ", "+++ ")):
            names = [line[4:]]
        for name in names:
            path = _path(name)
            if path is None:
                problems.append(f"it names a file that is not one to edit: {name.strip()}")
            elif path not in touched:
                touched.append(path)
        i += 1
    outside = [p for p in touched if p not in allowed]
    if outside:
        problems.insert(0, "it changes " + ", ".join(outside) + ": the exercise's holes are in "
                        + ", ".join(allowed) + " only")
    return problems


def scope(number, patch):
    with open(patch, encoding="utf-8", errors="replace") as f:
        problems = patch_problems(f.read(), hole_files(number))
    if not problems:
        return 0
    name = os.path.join("work", os.path.basename(patch))
    print(f"{name} is not graded: {problems[0]}"
          + (f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""))
    return OUT_OF_SCOPE


def forget(number, build_dir):
    """Delete student/cpN (and the branches make exercise set aside) from
    the grader's tree: its next make exercise N starts from the skeleton
    and work/NN.patch, whatever an earlier grade in this build folder
    left there (another learner's work, a patch that did not apply)."""
    t = tree.Tree(os.path.abspath(build_dir))
    if not os.path.isdir(os.path.join(t.path, ".git")):
        return 0
    branch = exercise.student_branch(number)
    with tree.lock(t.build_dir):
        refs = t.git("for-each-ref", "--format=%(refname:short)", "refs/heads/student/").split()
        mine = [r for r in refs if r == branch or r.startswith(branch + "-old-")]
        if not mine:
            return 0
        if t.current_branch() in mine:
            t.git("checkout", "-q", "-f", "--detach")
        t.git("branch", "-q", "-D", *mine)
    return 0


def zero_tests(number, why):
    """make grade N's scored tests, every one failed with 'why': the same
    lines and points as a grade (studentgrade's own functions, on a run
    that printed nothing)."""
    return studentgrade.blank_tests(number, why)


def write_verdict(number, results_dir, verdict, why=""):
    with open(os.path.join(results_dir, SCORE), encoding="utf-8") as f:
        score = json.load(f)
    record = {"exercise": number, "verdict": verdict, "why": why,
              "score": score["score"], "possible": score["possible"]}
    with open(os.path.join(results_dir, VERDICT), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(f"exercise {number}: {score['score']}/{score['possible']} points ({verdict}"
          + (f": {why}" if why else "") + ")")
    return 0


def zero(number, results_dir, verdict, why):
    os.makedirs(results_dir, exist_ok=True)
    studentgrade.write(results_dir, zero_tests(number, why), number)
    return write_verdict(number, results_dir, verdict, why)


def classroom_result(results_dir, numbers):
    """The result GitHub Classroom's reporter action takes: every scored
    line of each exercise with its points, and one line of no points for
    its regressions. Its status is "pass": a grade that ran to its end
    passes with its points (a "fail" would fail the workflow run)."""
    tests, possible = [], 0
    for number in numbers:
        folder = os.path.join(results_dir, f"{number:02d}")
        with open(os.path.join(folder, SCORE), encoding="utf-8") as f:
            score = json.load(f)
        why = ""
        if os.path.exists(os.path.join(folder, VERDICT)):
            with open(os.path.join(folder, VERDICT), encoding="utf-8") as f:
                why = json.load(f).get("why", "")
        possible += score["possible"]
        regressions = []
        for t in score["tests"]:
            if t["group"] == studentgrade.REGRESSION:
                regressions.append(t)
                continue
            tests.append({"name": f"exercise {number}: {t['title']}",
                          "status": "pass" if t["ok"] else "fail", "score": t["earned"],
                          "max_score": t["points"], "message": why, "line_no": 0})
        if regressions:
            failed = [t["title"] for t in regressions if not t["ok"]]
            tests.append({"name": f"exercise {number}: regressions, no points "
                                  f"({len(regressions) - len(failed)} of {len(regressions)} "
                                  "right)",
                          "status": "fail" if failed else "pass", "score": 0, "max_score": 0,
                          "message": "; ".join(failed), "line_no": 0})
    return {"version": 1, "status": "pass", "max_score": possible, "tests": tests}


def classroom(results_dir, numbers):
    result = classroom_result(results_dir, numbers)
    with open(os.path.join(results_dir, RESULT), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(base64.b64encode(json.dumps(result).encode()).decode())
    return 0


def reference(build_dir):
    """Build upstream 6.1 and log its corpus run where make grade looks
    for it (studentgrade.reference_run): a grade in this build folder
    then boots the learner's kernel only."""
    from labkit import deps, labrun
    session = labrun.Session(build_dir)
    session.packages = deps.needed("grade")
    session.prepare()
    ref = studentgrade.reference_run(session, conformance.load_corpus())
    if ref is None:
        print("no complete corpus run of upstream 6.1: see build/logs/grade-upstream.log")
        return 1
    return 0


USAGE = __doc__.split("\n\n")[1]


def _exercise_first(function, count):
    """A command whose first argument is an exercise number."""
    return lambda args: (len(args) == count and args[0].isdigit()
                         and (lambda: function(int(args[0]), *args[1:])))


COMMANDS = {
    "scope": _exercise_first(scope, 2),
    "forget": _exercise_first(forget, 2),
    "zero": _exercise_first(zero, 4),
    "graded": _exercise_first(lambda n, d: write_verdict(n, d, "graded"), 2),
    "classroom": lambda args: (len(args) >= 2 and all(a.isdigit() for a in args[1:])
                               and (lambda: classroom(args[0], [int(a) for a in args[1:]]))),
    "reference": lambda args: len(args) == 1 and (lambda: reference(args[0])),
}


def main(argv):
    """Run one command; 2 and the usage for a command line it cannot
    run, 1 and the harness's message when the harness refuses."""
    parse = COMMANDS.get(argv[0]) if argv else None
    run = parse(argv[1:]) if parse else None
    if not run:
        print("usage:\n" + USAGE, file=sys.stderr)
        return 2
    try:
        return run()
    except HarnessError as e:
        print(f"grader.py {argv[0]}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
