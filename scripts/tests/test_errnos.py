"""doc/errnos.adoc's generator: which writes it lists, under which errno,
and that make check fails when the page is not what the run gives."""

import io
import os
import tempfile
import unittest
from contextlib import redirect_stdout
from unittest import mock

from labkit import conformance as conf
from labkit import errnos, ui

CORPUS = """\
# set_ftrace_filter: commands
ff-unknown   -      >> set_ftrace_filter ksys_sync:nosuch
ff-good      -      >> set_ftrace_filter ksys_sync:traceoff

# removal of what is not there
pr-missing   warns  >> set_ftrace_filter !!ksys_sync:traceoff
pr-nodev     -      >> set_ftrace_filter !ksys_sync:traceon
"""


def run_of(cases):
    lines = []
    for ident, out in cases.items():
        lines += [f"@@ftlab conf-begin {ident}"] + out + [f"@@ftlab conf-end {ident}"]
    return conf.parse_guest(lines)


RUN = run_of({
    "ff-unknown": ["'ksys_sync:nosuch' >> set_ftrace_filter: Invalid argument",
                   "-- set_ftrace_filter:"],
    "ff-good": ["'ksys_sync:traceoff' >> set_ftrace_filter: ok"],
    "pr-missing": ["'!!ksys_sync:traceoff' >> set_ftrace_filter" + conf.SKIPPED],
    "pr-nodev": ["'!ksys_sync:traceon' >> set_ftrace_filter: No such device"],
})


class Page(unittest.TestCase):
    def setUp(self):
        self.corpus = conf.parse_corpus(CORPUS)
        self.text = errnos.page(self.corpus, CORPUS, RUN)

    def test_errno_names_from_messages(self):
        self.assertEqual(errnos.errno_name("Invalid argument"), "EINVAL")
        self.assertEqual(errnos.errno_name("No such device"), "ENODEV")
        self.assertIsNone(errnos.errno_name("not an error message"))

    def test_failed_writes_only_with_their_group(self):
        self.assertIn("|`EINVAL` (Invalid argument) |2 |", self.text)
        self.assertIn("|`ENODEV` (No such device) |1 |", self.text)
        self.assertIn("|`EINVAL` |`+ksys_sync:nosuch+` |ff-unknown |set_ftrace_filter: commands",
                      self.text)
        self.assertNotIn("ff-good", self.text)

    def test_a_write_upstream_skips_is_listed_with_its_errno(self):
        # upstream WARNs on it, so the guest skips it there: 6.1 returns EINVAL
        self.assertIn("|`EINVAL` |`+!!ksys_sync:traceoff+` |pr-missing |removal of what is "
                      "not there", self.text)

    def test_most_frequent_errno_first(self):
        self.assertLess(self.text.index("`EINVAL` (Invalid"), self.text.index("`ENODEV` (No"))

    def test_each_file_has_an_anchor_the_summary_links(self):
        self.assertEqual(errnos.file_anchor("events/kmem/kmalloc/trigger"),
                         "file-events-kmem-kmalloc-trigger")
        self.assertIn("[[file-set-ftrace-filter]]\n=== set_ftrace_filter", self.text)
        self.assertIn("<<file-set-ftrace-filter,`set_ftrace_filter`>>", self.text)

    def test_a_bar_in_a_value_stays_in_its_cell(self):
        self.assertEqual(errnos._cell("a||b"), "`+a\\|\\|b+`")
        self.assertEqual(errnos._cell(""), "(nothing)")


class Check(unittest.TestCase):
    def verdict(self, on_disk):
        tally = ui.Tally()
        with mock.patch.object(errnos, "load_page", return_value=on_disk), \
                mock.patch.object(conf, "CORPUS", self._corpus_file()), \
                redirect_stdout(io.StringIO()):
            errnos.check(RUN, tally)
        return tally

    def _corpus_file(self):
        f = tempfile.NamedTemporaryFile("w", suffix=".corpus", delete=False)
        f.write(CORPUS)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_the_page_of_this_run_passes(self):
        page = errnos.page(conf.parse_corpus(CORPUS), CORPUS, RUN)
        self.assertEqual(self.verdict(page).failed, 0)

    def test_a_stale_page_fails(self):
        page = errnos.page(conf.parse_corpus(CORPUS), CORPUS, RUN)
        stale = page.replace("No such device", "Invalid argument")
        self.assertEqual(self.verdict(stale).failed, 1)


if __name__ == "__main__":
    unittest.main()
