"""Moving the series to another Debian version: patch files keep their
notes when their diffs are rewritten, and expected outputs keep their
header and the sections upstream skips."""

import contextlib
import os
import subprocess
import tempfile
import unittest
from types import SimpleNamespace
from unittest import mock

from labkit import gdbrun, grade, protocol, qemu, rebase, tree

OLD = """From 1111 Mon Sep 17 00:00:00 2001
From: ftrace trigger labs <labs@trigger-labs.invalid>
Subject: [PATCH] tracing: Remove a thing

Why it goes.

Signed-off-by: ftrace trigger labs <labs@trigger-labs.invalid>
---
Checkpatch-exception: FILE_PATH_CHANGES
The file is deleted; MAINTAINERS names its folder.

 kernel/trace/a.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/kernel/trace/a.c b/kernel/trace/a.c
index 1..2 100644
-old
+new
-- 
2.39.5
"""

NEW = """From 2222 Mon Sep 17 00:00:00 2001
From: ftrace trigger labs <labs@trigger-labs.invalid>
Subject: [PATCH] tracing: Remove a thing

Why it goes.

Signed-off-by: ftrace trigger labs <labs@trigger-labs.invalid>
---
 kernel/trace/a.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/kernel/trace/a.c b/kernel/trace/a.c
index 3..4 100644
-old2
+new2
"""


class Patches(unittest.TestCase):
    def test_split(self):
        head, notes, body = rebase.split_patch(OLD)
        self.assertTrue(head.endswith("labs@trigger-labs.invalid>\n---\n"))
        self.assertIn("Checkpatch-exception: FILE_PATH_CHANGES", notes)
        self.assertTrue(body.startswith(" kernel/trace/a.c | 2 +-"))

    def test_notes_survive_a_new_diff(self):
        text = rebase.respliced(OLD, NEW)
        self.assertIn("From 2222", text)
        self.assertIn("Checkpatch-exception: FILE_PATH_CHANGES", text)
        self.assertIn("+new2", text)
        self.assertNotIn("+new\n", text)
        self.assertLess(text.index("Checkpatch-exception"), text.index(" kernel/trace/a.c |"))

    def test_no_notes(self):
        self.assertEqual(rebase.respliced(NEW, NEW), NEW)


class Expected(unittest.TestCase):
    OLD = ("# header\n# more\n\n## check: a\nold a\n\n## check: mine\nours\n"
           "\n## check: cost\nthe baseline's cost\n")

    def test_rewritten_from_a_run(self):
        lab = protocol.LabRun("01")
        a = protocol.Check("01", "a", "check", "t")
        a.output = ["sh-42     [000] d..1.  12.345678: new a"]
        mine = protocol.Check("01", "mine", "ours-only", "t")
        mine.output = [grade.OURS_ONLY_SKIP]
        cost = protocol.Check("01", "cost", "replaced-at-1", "t")
        cost.output = ["upstream's cost, which differs on purpose"]
        lab.checks = [a, mine, cost]
        self.assertEqual(rebase.expected_text(self.OLD, lab),
                         "# header\n# more\n\n## check: a\nsh-PID     [CPU] d..1.  TS: new a\n"
                         "\n## check: mine\nours\n\n## check: cost\nthe baseline's cost\n"
                         "\n## check: cost@1\nupstream's cost, which differs on purpose\n")


GUEST_CONSOLE = ["@@ftlab lab-begin 02",
                 "@@ftlab check-begin 02 a check the check's title",
                 "new output",
                 "@@ftlab check-end 02 a rc=0",
                 "@@ftlab lab-end 02",
                 "@@ftlab done"]


class StubSession:
    """What record_expected asks of a labrun.Session, without a kernel."""

    def __init__(self, logs, timeout=None):
        self.logs, self.timeout = logs, timeout
        self.built = []

    def kernel(self, kid):
        self.built.append((kid.name, kid.branch))
        return SimpleNamespace(name="upstream", id=kid, debug=False, obj=self.logs,
                               bzimage="bz", vmlinux=os.path.join(self.logs, "vmlinux"))

    def initrd(self):
        return "initrd"

    def timeout_for(self, plan, k=None):
        return qemu.timeout_for(plan, self.timeout)


class RecordExpected(unittest.TestCase):
    """Step 4 of make rebase on a gdb lab ("# flags: gdb"): QEMU and gdb
    are stand-ins; the run must get its time limit from the session's
    policy, and the new expected file is staged, not written."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.lab = os.path.join(self.dir, "02-gdb-lab")
        os.makedirs(self.lab)
        self.expected = os.path.join(self.lab, "expected")
        with open(self.expected, "w") as f:
            f.write("# header\n\n## check: a\nold output\n")
        with open(os.path.join(self.lab, "gdb.expected"), "w") as f:
            f.write("a line gdb prints\n")
        self.cp = SimpleNamespace(number=2, lab_dir=self.lab, has_lab=True, needs_gdb=True,
                                  name="02-gdb-lab")
        self.limits = []

    def guest(self):
        test = self

        class Guest:
            def __init__(self, cmd, log, own_session=False):
                self.log = log

            def watch(self, timeout, stop=None):
                test.limits.append(timeout)
                return qemu.Run("stopped", GUEST_CONSOLE, self.log, 1)

            def stop(self):
                pass
        return Guest

    def record(self, session):
        gdb = mock.Mock()
        gdb.poll.return_value = 0
        with mock.patch.object(rebase.series, "checkpoints", return_value=[self.cp]), \
                mock.patch.object(gdbrun.qemu, "Guest", self.guest()), \
                mock.patch.object(gdbrun, "wait_for_stub"), \
                mock.patch.object(gdbrun.subprocess, "Popen", return_value=gdb):
            return rebase.record_expected(session)

    def test_the_gdb_lab_runs_with_the_sessions_time_limit(self):
        session = StubSession(self.dir, timeout=77)
        self.record(session)
        self.assertEqual(self.limits, [77])
        self.assertEqual(session.built, [("upstream", "rebase/upstream")])

    def test_the_new_expected_output_is_staged_not_written(self):
        staged = self.record(StubSession(self.dir))
        self.assertEqual(staged, {self.expected: "# header\n\n## check: a\nnew output\n"})
        with open(self.expected) as f:
            self.assertIn("old output", f.read())


class HalfDoneRebase(unittest.TestCase):
    """A rebase that stops before its end changes nothing in the
    repository; at its end, every file changes."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.files = [os.path.join(self.dir, name) for name in ("a.patch", "BASE", "expected")]
        for path in self.files:
            with open(path, "w") as f:
                f.write("old\n")

    def contents(self):
        out = []
        for path in self.files:
            with open(path) as f:
                out.append(f.read())
        return out

    def run_rebase(self, record):
        session = SimpleNamespace(build_dir=self.dir, prepare=lambda: None,
                                  tree=SimpleNamespace(version="6.1.1-1", ensure_clean=lambda: None))
        moved = []
        with mock.patch.object(rebase.source, "fetch", return_value="tarball"), \
                mock.patch.object(rebase.tree, "lock", return_value=contextlib.nullcontext()), \
                mock.patch.object(rebase, "import_version"), \
                mock.patch.object(rebase, "apply_checkpoints"), \
                mock.patch.object(rebase, "rewritten_patches",
                                  return_value={self.files[0]: "new\n"}), \
                mock.patch.object(rebase, "base_text", return_value="new\n"), \
                mock.patch.object(rebase.series, "BASE_FILE", self.files[1]), \
                mock.patch.object(rebase, "record_expected", side_effect=record), \
                mock.patch.object(rebase, "move_branches",
                                  side_effect=lambda t, v: moved.append(v)), \
                mock.patch.object(rebase.subprocess, "run",
                                  return_value=subprocess.CompletedProcess([], 0, "", "")):
            rebase.rebase(session, "6.1.2-1")
        return moved

    def test_a_failure_on_the_new_upstream_changes_nothing(self):
        def fails(session):
            raise rebase.RebaseError("lab 02 did not finish on the new upstream")
        with self.assertRaises(rebase.RebaseError):
            self.run_rebase(fails)
        self.assertEqual(self.contents(), ["old\n"] * 3)
        self.assertEqual([n for n in os.listdir(self.dir) if n.endswith(".rebase-new")], [])

    def test_the_end_changes_everything(self):
        moved = self.run_rebase(lambda session: {self.files[2]: "new\n"})
        self.assertEqual(self.contents(), ["new\n"] * 3)
        self.assertEqual(moved, ["6.1.2-1"])


class MoveBranches(unittest.TestCase):
    """upstream and lab/cpN move to the rebase/ branches in one git
    transaction; the rebase/ branches go."""

    def test_on_a_git_tree(self):
        build = tempfile.mkdtemp()
        t = tree.Tree(build)
        os.makedirs(t.path)

        def commit(name):
            with open(os.path.join(t.path, "f"), "w") as f:
                f.write(name)
            t.git("add", "f")
            t.git("-c", "user.name=t", "-c", "user.email=t@invalid", "commit", "-q", "-m", name)
            return t.git("rev-parse", "HEAD")
        t.git("init", "-q", "-b", "upstream")
        commit("old")
        t.git("checkout", "-q", "-b", "lab/cp0")
        commit("old cp0")
        t.git("checkout", "-q", "-b", "rebase/upstream", "upstream")
        new = commit("new")
        t.git("checkout", "-q", "-b", "rebase/cp0")
        new_cp0 = commit("new cp0")
        cp = SimpleNamespace(number=0, branch="lab/cp0")
        base = os.path.join(build, "BASE")      # patches/BASE is not move_branches' business
        with open(base, "w") as f:
            f.write("6.1.1-1\n")
        with mock.patch.object(rebase.series, "checkpoints", return_value=[cp]), \
                mock.patch.object(rebase.series, "BASE_FILE", base), \
                mock.patch.object(rebase.series, "series_digest", return_value="d1"):
            rebase.move_branches(t, "6.1.2-1")
        self.assertEqual(t.git("rev-parse", "upstream"), new)
        self.assertEqual(t.git("rev-parse", "lab/cp0"), new_cp0)
        self.assertEqual(t.git("rev-parse", "--abbrev-ref", "HEAD"), "upstream")
        self.assertFalse(t.branch_exists("rebase/cp0"))
        self.assertEqual(t.git("config", "ftlab.cp0.digest"), "d1")
        with open(t.stamp) as f:
            self.assertEqual(f.read(), "6.1.2-1\n")
        with open(base) as f:
            self.assertEqual(f.read(), "6.1.1-1\n")
