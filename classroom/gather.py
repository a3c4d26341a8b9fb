#!/usr/bin/env python3
"""Grade a class into one CSV: each learner's repository in turn, with the
harness of the checkout this file is in.

  python3 classroom/gather.py LEARNERS [--lab N]... [--out DIR]

LEARNERS is a file with one learner's repository per line: a git URL or a
local path ('#' starts a comment). The newest commit of each is cloned
without a checkout, and its work/NN.patch files are all that is taken
from it: they go to DIR/learners/NAME/work/, and this checkout's
classroom/grade.sh grades them there (LAB=N, one exercise after the
other), with this checkout's harness and build/. Nothing of a learner's
repository runs on this machine: the patch may only change the files of
the exercise's holes, it is compiled, and the kernel runs in QEMU.

DIR/scores.csv has a row per learner and exercise: learner, exercise,
score, possible, verdict, log, commit, source. The verdict is grade.sh's
(graded, does not build, does not apply, refused), or no work, clone
failed, grader failed. DIR/logs/NAME-NN.log is what the grade printed;
DIR/learners/NAME/results/NN/ its score.json and junit.xml.

--grade-cmd CMD (or FTLAB_GRADE_CMD) runs the shell command CMD instead
of grade.sh, in the learner's folder with LAB set: a stand-in for tests.
The exit code is 1 when the grader failed for some learner, 2 when this
checkout's harness has changes of its own (a class is graded with a
committed harness), else 0.
"""

import argparse
import csv
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GRADE_SH = os.path.join(ROOT, "classroom", "grade.sh")
# What grade.sh takes from the harness (grade.sh's GRADED).
HARNESS_PATHS = ("patches", "labs", "exercises", "scripts", "initramfs", "gdb-scripts",
                 "Makefile", "classroom")
COLUMNS = ("learner", "exercise", "score", "possible", "verdict", "log", "commit", "source")
WORK = re.compile(r"^work/(\d\d)\.patch$")
# git never asks for a password on a terminal: a private repository it
# cannot read fails at once.
GIT_ENV = dict(os.environ, GIT_TERMINAL_PROMPT="0")


def harness_changes(root=ROOT):
    """The harness files of 'root' that differ from its commit; None when
    it is not a git checkout (an image's copy, taken as it is)."""
    r = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", *HARNESS_PATHS],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return [line[3:] for line in r.stdout.splitlines()]


def read_learners(path):
    """The sources of a LEARNERS file: one per line, comments and blank
    lines dropped."""
    with open(path, encoding="utf-8") as f:
        lines = (line.split("#", 1)[0].strip() for line in f)
        return [line for line in lines if line]


def learner_name(source, taken):
    """A name for the learner of 'source' ("https://host/org/alice.git",
    "git@host:org/alice", "/srv/alice/": alice), made unique among 'taken'."""
    base = re.split(r"[/:]", source.rstrip("/"))[-1]
    base = re.sub(r"\.git$", "", base)
    base = re.sub(r"[^A-Za-z0-9._-]", "_", base).lstrip(".") or "learner"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name


def is_url(source):
    return "://" in source or re.match(r"^[\w.-]+@[\w.-]+:", source) is not None


def fetch_work(source, clone):
    """(commit, {N: patch text}) of the newest commit of 'source', cloned
    into 'clone' without a checkout; raises OSError with git's message."""
    if not is_url(source):
        if not os.path.isdir(source):
            raise OSError(f"no such folder: {source}")
        source = "file://" + os.path.abspath(source)
    shutil.rmtree(clone, ignore_errors=True)
    r = subprocess.run(["git", "clone", "-q", "--no-checkout", "--depth", "1", source, clone],
                       capture_output=True, text=True, env=GIT_ENV)
    if r.returncode != 0:
        raise OSError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "git clone failed")

    def git(*args):
        return subprocess.run(["git", "-C", clone, *args], capture_output=True, text=True,
                              check=True, env=GIT_ENV).stdout

    try:
        commit = git("rev-parse", "HEAD").strip()
        work = {}
        for line in git("ls-tree", "HEAD", "work/").splitlines():
            meta, path = line.split("\t", 1)
            mode, kind = meta.split()[:2]
            m = WORK.match(path)
            if m and kind == "blob" and mode in ("100644", "100755"):   # no symbolic link
                work[int(m.group(1))] = git("cat-file", "blob", f"HEAD:{path}")
    except subprocess.CalledProcessError as e:
        raise OSError(f"git {' '.join(e.cmd[3:])} failed: {e.stderr.strip()}") from None
    finally:
        shutil.rmtree(clone, ignore_errors=True)
    return commit, work


def grade_command(override):
    if override:
        return ["sh", "-c", override]
    return ["sh", GRADE_SH]


def grade_one(command, folder, number, log):
    """Run the grade of exercise 'number' in the learner's folder; its
    output goes to 'log'. Returns (score, possible, verdict)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TEMPLATE_COMMIT", "TEMPLATE_REPO", "GITHUB_OUTPUT", "LAB")}
    env["LAB"] = str(number)
    with open(log, "w", encoding="utf-8") as out:
        rc = subprocess.run(command, cwd=folder, env=env, stdout=out,
                            stderr=subprocess.STDOUT).returncode
    results = os.path.join(folder, "results", f"{number:02d}")
    score = verdict = None
    for name in ("verdict.json", "score.json"):
        path = os.path.join(results, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            score = score or data
            verdict = verdict or data.get("verdict")
    if rc != 0 or score is None:
        return "", "", f"grader failed (exit code {rc})"
    return score["score"], score["possible"], verdict or "graded"


def gather(sources, out, labs, command):
    """Grade every learner of 'sources'; returns the CSV's rows."""
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    csv_path = os.path.join(out, "scores.csv")
    taken, rows = set(), []
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)

        def row(**fields):
            rows.append(fields)
            writer.writerow([fields.get(c, "") for c in COLUMNS])
            f.flush()
            points = fields.get("possible", "")
            shown = f"{fields['score']}/{points} points, " if points != "" else ""
            print(f"{fields['learner']}: exercise {fields.get('exercise') or '-'}: "
                  f"{shown}{fields['verdict']}", flush=True)

        for source in sources:
            name = learner_name(source, taken)
            folder = os.path.join(out, "learners", name)
            shutil.rmtree(folder, ignore_errors=True)
            try:
                commit, work = fetch_work(source, os.path.join(out, "clones", name))
            except OSError as e:
                row(learner=name, verdict=f"clone failed: {e}", source=source)
                continue
            numbers = labs or sorted(work)
            if not numbers:
                row(learner=name, verdict="no work", commit=commit, source=source)
            os.makedirs(os.path.join(folder, "work"))
            for n in numbers:
                if n not in work:
                    row(learner=name, exercise=n, verdict="no work", commit=commit,
                        source=source)
                    continue
                with open(os.path.join(folder, "work", f"{n:02d}.patch"), "w",
                          encoding="utf-8") as p:
                    p.write(work[n])
                log = os.path.join(out, "logs", f"{name}-{n:02d}.log")
                score, possible, verdict = grade_one(command, folder, n, log)
                row(learner=name, exercise=n, score=score, possible=possible, verdict=verdict,
                    log=os.path.relpath(log, out), commit=commit, source=source)
        shutil.rmtree(os.path.join(out, "clones"), ignore_errors=True)
    print(f"scores: {csv_path}")
    return rows


def main(argv):
    p = argparse.ArgumentParser(prog="gather.py", description=__doc__.split("\n\n")[0],
                                epilog="classroom/README.adoc says more.")
    p.add_argument("learners", help="a file: one git URL or local path per line")
    p.add_argument("--lab", type=int, action="append", default=[],
                   help="the exercise to grade (again for more); default: every work/NN.patch")
    p.add_argument("--out", default="gathered", help="where the CSV and logs go (gathered/)")
    p.add_argument("--grade-cmd", default=os.environ.get("FTLAB_GRADE_CMD"),
                   help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    changed = harness_changes()
    if changed:
        print(f"{ROOT} has changes of its own in its harness: {', '.join(changed[:10])}\n"
              "A class is graded with a committed harness: commit or drop them.",
              file=sys.stderr)
        return 2
    if changed is None:
        print(f"{ROOT} is not a git checkout: grading with its harness as it is")
    own = [n for n in sorted(os.listdir(os.path.join(ROOT, "work")))
           if WORK.match("work/" + n)] if os.path.isdir(os.path.join(ROOT, "work")) else []
    if own and not os.path.exists(os.path.join(ROOT, "work", ".grader")):
        print(f"{ROOT}/work holds work of its own ({', '.join(own)}), which grading would "
              "overwrite: gather with a checkout that has none", file=sys.stderr)
        return 2
    sources = read_learners(args.learners)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    # One gather at a time per harness: each puts its learner's work in
    # the harness's work/.
    os.makedirs(os.path.join(ROOT, "work"), exist_ok=True)
    with open(os.path.join(ROOT, "work", ".gather.lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("another gather.py is grading with this checkout", file=sys.stderr)
            return 2
        rows = gather(sources, out, args.lab, grade_command(args.grade_cmd))
    return 1 if any(r["verdict"].startswith("grader failed") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
