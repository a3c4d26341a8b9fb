"""Moving the series to another Debian version: patch files keep their
notes when their diffs are rewritten, and expected outputs keep their
header and the sections upstream skips."""

import unittest

from labkit import protocol, rebase

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
        mine.output = ["skipped: upstream 6.1 differs here on purpose"]
        cost = protocol.Check("01", "cost", "replaced-at-1", "t")
        cost.output = ["upstream's cost, which differs on purpose"]
        lab.checks = [a, mine, cost]
        self.assertEqual(rebase.expected_text(self.OLD, lab),
                         "# header\n# more\n\n## check: a\nsh-PID     [CPU] d..1.  TS: new a\n"
                         "\n## check: mine\nours\n\n## check: cost\nthe baseline's cost\n")
