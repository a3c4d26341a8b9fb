import io
import os
import re
import shlex
import shutil
import tempfile
import unittest
from contextlib import redirect_stderr

import ftlab
from labkit import docs, series
from tests.test_cli import make_dry


class DocsArgument(unittest.TestCase):
    def test_docs_takes_an_optional_checkpoint(self):
        self.assertIsNone(ftlab.parse_args(["docs"]).number)
        self.assertEqual(ftlab.parse_args(["docs", "3"]).number, 3)
        with self.assertRaises(ftlab.UsageError):
            ftlab.parse_args(["docs", "99"])

    def test_make_forms(self):
        def dry(*args):
            return shlex.split(make_dry(*args))[2:]
        self.assertEqual(dry("docs", "3"), ["docs", "3"])
        self.assertEqual(dry("docs", "N=3"), ["docs", "--n", "3"])
        self.assertEqual(ftlab.parse_args(dry("docs", "N=3")).number, 3)
        self.assertEqual(dry("docs"), ["docs"])

    def test_views_go_to_their_own_folder(self):
        self.assertEqual(docs.out_dir(None, "/b"), "/b/docs")
        self.assertEqual(docs.out_dir(3, "/b"), "/b/docs/cp3")

    def test_editions_go_to_their_own_folder(self):
        self.assertEqual(docs.out_dir(None, "/b", False), "/b/docs-student")
        self.assertEqual(docs.out_dir(3, "/b", True), "/b/docs-key/cp3")

    def test_answers_option(self):
        self.assertIsNone(ftlab.parse_args(["docs"]).answers)
        self.assertIs(ftlab.parse_args(["docs", "--answers", "0"]).answers, False)
        self.assertIs(ftlab.parse_args(["docs", "3", "--answers", "1"]).answers, True)
        with self.assertRaises(ftlab.UsageError):
            ftlab.parse_args(["lab", "1", "--answers", "0"])
        with self.assertRaises(SystemExit), redirect_stderr(io.StringIO()):
            ftlab.parse_args(["docs", "--answers", "2"])


def answer_blocks(text):
    """(line number, guarded) of each collapsed block of a handout: guarded
    when it sits between "ifndef::student-edition[]" and "endif::[]"."""
    found, inside = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line == "ifndef::" + docs.STUDENT_EDITION + "[]":
            inside = True
        elif line.startswith("endif::"):
            inside = False
        elif line.startswith("[%collapsible"):
            found.append((n, inside))
    return found


class Answers(unittest.TestCase):
    """The answers to the Questions are what the student edition leaves out."""

    def test_every_answer_is_marked(self):
        for cp in series.checkpoints():
            path = os.path.join(cp.lab_dir, "README.adoc")
            with open(path, encoding="utf-8") as f:
                blocks = answer_blocks(f.read())
            self.assertTrue(blocks, f"{path} has no answer")
            bare = [n for n, guarded in blocks if not guarded]
            self.assertEqual(bare, [], f"{path}: answers outside ifndef::"
                             f"{docs.STUDENT_EDITION}[] at these lines")

    def test_the_marking_is_seen(self):
        self.assertEqual(answer_blocks("+\n[%collapsible]\n====\na\n====\n"), [(2, False)])
        self.assertEqual(answer_blocks("ifndef::student-edition[]\n+\n[%collapsible]\n====\n"
                                       "a\n====\nendif::[]\n[%collapsible]\n"),
                         [(3, True), (8, False)])

    def test_the_key_opens_every_answer(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "labs"))
            page = os.path.join(tmp, "labs", "01.html")
            with open(page, "w") as f:
                f.write("<details>\n<summary>Answer</summary>\n</details><details>")
            docs.open_answers(tmp)
            with open(page) as f:
                self.assertEqual(f.read().count("<details open>"), 2)


def handout_html(test, number, answers):
    """Lab number's handout page as make docs renders it in the edition
    ANSWERS=answers asks for (docs.handout, and the answers opened for
    ANSWERS=1)."""
    cp = series.lookup(number)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, f"{number:02d}.html")
        messages = []
        test.assertTrue(docs.handout(os.path.join(cp.lab_dir, "README.adoc"), out, number,
                                     messages, answers=answers), messages)
        if answers:
            docs.open_answers(tmp)
        with open(out, encoding="utf-8") as f:
            return f.read()


@unittest.skipUnless(shutil.which("asciidoctor") and shutil.which("pandoc"),
                     "asciidoctor and pandoc are not installed")
class Editions(unittest.TestCase):
    """Lab 01's handout in each edition: an answer's words are there,
    collapsed, by default; gone with ANSWERS=0; open with ANSWERS=1."""

    ANSWER = "so its ops sits further down"

    def page(self, answers):
        return handout_html(self, 1, answers)

    def test_default_has_the_answers_collapsed(self):
        html = self.page(None)
        self.assertIn(self.ANSWER, html)
        self.assertIn("<details>", html)
        self.assertNotIn("<details open>", html)

    def test_student_edition_has_none(self):
        html = self.page(False)
        self.assertNotIn(self.ANSWER, html)
        self.assertNotIn("<details", html)
        self.assertIn("Questions", html)

    def test_key_has_them_open(self):
        html = self.page(True)
        self.assertIn(self.ANSWER, html)
        self.assertIn("<details open>", html)
        self.assertNotIn("<details>", html)


HANDOUT = """== Lab 09: a lab

[.lead]
What it is.

=== Run it

run

=== Read the patch

the reference, step by step

==== A part of it

more of the reference

=== Questions

q

=== Then and now

then

include::exercise.adoc[]
"""


class ExerciseFirst(unittest.TestCase):
    """The student edition: a handout's Exercise section first, its "Read
    the patch" left out; nothing changes in a handout without an exercise."""

    def heads(self, text):
        return [line for line in text.splitlines()
                if line.startswith("=") or line.startswith("include::")]

    def test_the_exercise_comes_first_and_the_walk_through_goes(self):
        text = docs.exercise_first(HANDOUT)
        self.assertEqual(self.heads(text), ["== Lab 09: a lab", "include::exercise.adoc[]",
                                            "=== Run it", "=== Questions", "=== Then and now"])
        self.assertNotIn("the reference", text)
        self.assertIn("What it is.", text)
        self.assertLess(text.index("What it is."), text.index("include::exercise.adoc[]"))

    def test_a_handout_without_an_exercise_is_left_as_it_is(self):
        text = HANDOUT.replace("include::exercise.adoc[]\n", "")
        self.assertEqual(docs.exercise_first(text), text)

    def test_every_handout_with_an_exercise_has_the_sections_it_moves(self):
        for cp in series.checkpoints():
            with open(os.path.join(cp.lab_dir, "README.adoc"), encoding="utf-8") as f:
                text = f.read()
            if docs.EXERCISE_INCLUDE not in text.splitlines():
                continue
            with self.subTest(lab=cp.number):
                self.assertIn("\n" + docs.READ_THE_PATCH + "\n", text)
                heads = self.heads(docs.exercise_first(text))
                self.assertEqual(heads[1], docs.EXERCISE_INCLUDE)
                self.assertNotIn(docs.READ_THE_PATCH, heads)


@unittest.skipUnless(shutil.which("asciidoctor"), "asciidoctor is not installed")
class EditionOrder(unittest.TestCase):
    """Lab 03's page: the student edition opens with the Exercise and has
    no "Read the patch"; the default and the key keep the handout's order."""

    def sections(self, answers):
        return re.findall(r'<h3 id="_([a-z_]+)"', handout_html(self, 3, answers))

    def test_student_edition(self):
        found = self.sections(False)
        self.assertEqual(found[:2], ["exercise", "run_it"])
        self.assertNotIn("read_the_patch", found)

    def test_default_and_key(self):
        for answers in (None, True):
            with self.subTest(answers=answers):
                found = self.sections(answers)
                self.assertEqual(found[0], "run_it")
                self.assertEqual(found[-1], "exercise")
                self.assertIn("read_the_patch", found)


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

    def test_quickref_by_checkpoint(self):
        cp0, cp5, full = (self.text("quickref", n) for n in (0, 5, series.last_checkpoint()))
        self.assertNotIn("enable_event", cp0)
        self.assertIn("schedule:traceoff:unlimited", cp0)
        self.assertIn("ksys_sync:snapshot:count=5", cp5)
        self.assertNotIn("Event triggers", cp5)
        self.assertIn("Event triggers", full)
        self.assertIn("ksys_sync:cpudump:unlimited", full)
        self.assertTrue(full.isascii())

    def test_text_is_ascii_with_underlined_titles(self):
        text = self.text("events", series.last_checkpoint())
        self.assertTrue(text.isascii())
        lines = text.splitlines()
        i = lines.index("Event triggers")
        self.assertEqual(lines[i + 1], "=" * len("Event triggers"))


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(shutil.which("linkchecker"), "Debian's linkchecker is not installed")
class LinkCheck(unittest.TestCase):
    def test_a_link_to_a_missing_page_is_broken(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)       # linkchecker reads as nobody when run as root
            with open(os.path.join(tmp, "index.html"), "w") as f:
                f.write('<html><body><a href="ok.html">a</a> <a href="gone.html">b</a>'
                        '</body></html>')
            with open(os.path.join(tmp, "ok.html"), "w") as f:
                f.write("<html><body>here</body></html>")
            broken = docs.broken_links(tmp)
            self.assertEqual(len(broken), 1, broken)
            self.assertTrue(broken[0].startswith("index.html: gone.html"), broken)
            with open(os.path.join(tmp, "index.html"), "w") as f:
                f.write('<html><body><a href="ok.html">a</a></body></html>')
            self.assertEqual(docs.broken_links(tmp), [])


class PlainText(unittest.TestCase):
    """The plain-text check: identifiers whole, no markup left over."""

    ADOC = "\n".join([
        "The probe returns `EINVAL` from `ftrace_process_regex()`.",
        "ifeval::[{checkpoint} >= 7]",
        "Select `trace_clock_jiffies` with `uptime`.",
        "endif::[]",
        "ifeval::[{checkpoint} < 3]",
        "Only before: `event_probe_hit()`.",
        "endif::[]",
        "----",
        "# echo `NOT_CITED_HERE`",
        "----",
    ])

    def test_whole_text_passes(self):
        text = ("The probe returns EINVAL from ftrace_process_regex().\n"
                "Select trace_clock_jiffies with uptime.\n")
        self.assertEqual(docs.text_problems(self.ADOC, text, 7), [])

    def test_an_identifier_broken_across_lines_fails(self):
        text = ("| E     | ftrace_process_regex() |\n| INVAL |   |\n"
                "Select trace_clock_jiffies with uptime.\n")
        self.assertEqual(len(docs.text_problems(self.ADOC, text, 7)), 1)

    def test_a_second_citation_counts(self):
        adoc = "`EINVAL` here, and `EINVAL` there."
        self.assertEqual(len(docs.text_problems(adoc, "EINVAL here, and E\nINVAL there.", 7)), 1)

    def test_only_the_lines_of_the_view(self):
        # checkpoint 2's view: the >= 7 part is out, the < 3 part is in
        cited = docs.cited_identifiers(self.ADOC, 2)
        self.assertNotIn("trace_clock_jiffies", cited)
        self.assertIn("event_probe_hit", cited)
        self.assertNotIn("NOT_CITED_HERE", cited)

    def test_markup_left_over_fails(self):
        text = ("The probe returns EINVAL from ftrace_process_regex().\n"
                "Select trace_clock_jiffies with `uptime.\nifeval::[{checkpoint} >= 7]\n")
        self.assertEqual(len(docs.text_problems(self.ADOC, text, 7)), 2)


class Navigation(unittest.TestCase):
    """Each page of a view links the page before and after it, and only
    pages that view has."""

    def test_a_view_reads_only_its_labs(self):
        pages = [page for _src, page, _title in docs.reading_order(3)]
        self.assertEqual(pages[0], "index.html")
        self.assertIn("labs/03-event-probes.html", pages)
        self.assertNotIn("labs/04-stacktrace.html", pages)
        self.assertLess(pages.index("labs/robustness.html"), pages.index("ftrace.html"))
        self.assertNotIn("harness.html", pages)

    def test_links_are_relative_to_the_page(self):
        pages = docs.reading_order(7)
        i = [p[1] for p in pages].index("labs/00-baseline.html")
        nav = docs.navigation(pages, i)
        self.assertIn('href="../index.html">&larr; Contents', nav)
        self.assertIn('href="01-probe-hash.html">Lab 01 &rarr;', nav)

    def test_the_ends_have_one_neighbour(self):
        pages = docs.reading_order(7)
        self.assertNotIn("&larr;", docs.navigation(pages, 0))
        self.assertNotIn("&rarr;", docs.navigation(pages, len(pages) - 1))
        self.assertEqual(docs.navigated(pages, "harness.html"), [])


class UsageChapter(unittest.TestCase):
    """doc/usage.adoc is the reference of every make target and variable;
    the README links to it and to the other chapters."""

    @staticmethod
    def read(*path):
        with open(os.path.join(series.ROOT, *path), encoding="utf-8") as f:
            return f.read()

    def makefile(self):
        text = self.read("Makefile")
        targets = []
        for name in ("NUMBERED", "TARGETS"):
            line = re.search(rf"^{name}\s*:=(.*)$", text, re.M).group(1)
            targets += [w for w in line.split() if not w.startswith("$(")]
        return targets, re.findall(r"\$\(if \$\((\w+)\)", text)

    def test_every_target_is_documented(self):
        usage = self.read("doc", "usage.adoc")
        targets, _variables = self.makefile()
        self.assertIn("rebase", targets)
        for target in targets:
            self.assertIn(f"`make {target}", usage, target)

    def test_every_variable_is_documented(self):
        usage = self.read("doc", "usage.adoc")
        _targets, variables = self.makefile()
        self.assertIn("SCREENSHOT", variables)
        for variable in variables:
            self.assertIn(f"`{variable}=", usage, variable)

    def test_the_book_reads_it(self):
        self.assertIn("usage", docs.CHAPTERS)
        pages = [page for _src, page, _title in docs.reading_order(series.last_checkpoint())]
        self.assertIn("usage.html", pages)
        self.assertIn("link:usage.html[", self.read("doc", "index.adoc"))

    def test_readme_links_resolve(self):
        """A README link into doc/ is doc/NAME.adoc on its own, NAME.html
        in the book (a chapter make docs writes); the history is part of
        the book's contents page."""
        readme = self.read("README.adoc")
        names = re.findall(r"link:\{ftlab-doc\}(\w+)\{ftlab-ext\}\[", readme)
        self.assertIn("usage", names)
        for name in names:
            self.assertTrue(os.path.exists(os.path.join(docs.DOC, name + ".adoc")), name)
            self.assertIn(name, docs.CHAPTERS)
        self.assertNotRegex(readme, r"link:doc/(?!history\.adoc\[)")
        self.assertIn("{ftlab-history}", readme)
        index = self.read("doc", "index.adoc")
        self.assertIn(":ftlab-book:", index)
        self.assertIn("[[history]]\ninclude::history.adoc[", index)
