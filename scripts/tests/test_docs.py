import os
import re
import shutil
import subprocess
import tempfile
import unittest

import ftlab
from labkit import docs, series


class DocsArgument(unittest.TestCase):
    def test_docs_takes_an_optional_checkpoint(self):
        self.assertIsNone(ftlab.parse_args(["docs"]).number)
        self.assertEqual(ftlab.parse_args(["docs", "3"]).number, 3)
        with self.assertRaises(ftlab.UsageError):
            ftlab.parse_args(["docs", "99"])

    def test_make_forms(self):
        # Without the variables the Makefile turns into options: "make check
        # V=1" puts V=1 in this test's environment, and --verbose in the line.
        with open(os.path.join(series.ROOT, "Makefile")) as f:
            options = set(re.findall(r"\$\(if \$\((\w+)\)", f.read()))
        env = {k: v for k, v in os.environ.items()
               if k not in options and not k.startswith("MAKE")}

        def dry(*args):
            r = subprocess.run(["make", "-s", "-n", "-C", series.ROOT] + list(args),
                               capture_output=True, text=True, env=env)
            return r.stdout.strip().splitlines()[0].strip()
        self.assertEqual(dry("docs", "3"), dry("docs", "N=3"))
        self.assertIn("ftlab.py docs 3", dry("docs", "3"))
        self.assertTrue(dry("docs").endswith("ftlab.py docs"))

    def test_views_go_to_their_own_folder(self):
        self.assertEqual(docs.out_dir(None, "/b"), "/b/docs")
        self.assertEqual(docs.out_dir(3, "/b"), "/b/docs/cp3")


@unittest.skipUnless(shutil.which("asciidoctor") and shutil.which("pandoc"),
                     "asciidoctor and pandoc are not installed")
class Views(unittest.TestCase):
    """A checkpoint's text leaves out the sections of later checkpoints."""

    def text(self, chapter, checkpoint):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, chapter + ".txt")
            messages = []
            self.assertTrue(docs.plain_text(os.path.join(docs.DOC, chapter + ".adoc"), out,
                                            checkpoint, messages), messages)
            self.assertEqual(messages, [])
            with open(out, encoding="utf-8") as f:
                return f.read()

    def test_ftrace_by_checkpoint(self):
        cp0, cp3, full = (self.text("ftrace", n) for n in (0, 3, series.last_checkpoint()))
        self.assertNotIn("enable_event", cp0)
        self.assertIn("enable_event", cp3)
        self.assertNotIn("uptime]", cp3)
        self.assertIn("[uptime]", full)
        self.assertIn("the whole series", full)
        self.assertIn("checkpoint 3", cp3)

    def test_events_by_checkpoint(self):
        cp0, cp6 = self.text("events", 0), self.text("events", 6)
        self.assertNotIn("0*", cp0)
        self.assertNotIn("Event triggers", cp0)
        self.assertIn("Event triggers", cp6)

    def test_text_is_ascii_with_underlined_titles(self):
        text = self.text("events", series.last_checkpoint())
        self.assertTrue(text.isascii())
        lines = text.splitlines()
        i = lines.index("Event triggers")
        self.assertEqual(lines[i + 1], "=" * len("Event triggers"))


if __name__ == "__main__":
    unittest.main()
