"""doc/errnos.adoc: every error a tracefs write returns on upstream (the
base patches/BASE names, unmodified), and which write of the
conformance corpus (labs/conformance/corpus) got it.

The page is made from a real run, not written by hand: upstream's
console log of the corpus (check-upstream.log) gives each failing write
and its error, the corpus gives the group each case is in (the comment
line above it). scripts/record-before.py --errnos LOG writes the page;
make check makes it again from that run's own upstream boot and fails
when the two differ, so the page cannot go stale. Every checkpoint's
corpus run is compared with upstream's (conformance.py): at the last
checkpoint the same writes fail with the same errors.
"""

import errno
import os
import re

from . import conformance, kernels, series

PAGE = os.path.join(series.ROOT, "doc", "errnos.adoc")

# A write line of the corpus' output: 'VALUE' > FILE: RESULT
_WRITE = re.compile(r"^'(?P<value>.*)' (?P<op>>>?) (?P<file>\S+): (?P<result>.+)$")

HEADER = """\
= Errors a write to tracefs returns
:toc: left
:toclevels: 1

Each error below is what a write to a tracefs file returned on unmodified
Linux {release}, for every write of the labs' conformance corpus
(`labs/conformance/corpus`) that failed. Every checkpoint's run of the
corpus is compared with upstream's, so at the last checkpoint the same
writes fail with the same errors. The page is generated from upstream's
run (`scripts/record-before.py --errnos`) and checked against a new run
by `make check`. link:files.html[The tracefs files] says what each file
holds and does.

A write is shown as the corpus writes it: `{nl}`, `{tab}` and `{sp}` stand
for a newline, a tab and a space, `{rep:N:TEXT}` for TEXT N times, `{nonl}`
for no newline at the end. The group is the corpus' comment above the
case: what its cases try.
"""


def errno_name(message):
    """'Invalid argument' -> 'EINVAL' (the C library's messages); None
    when no errno has that message."""
    for code, name in sorted(errno.errorcode.items()):
        if os.strerror(code) == message:
            return name
    return None


def case_groups(text):
    """{case id: the corpus' last comment line above it} (its group)."""
    groups, comment = {}, ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#"):
            comment = line.lstrip("# ").strip()
        elif line:
            groups[line.split(None, 1)[0]] = comment
    return groups


def failed_writes(corpus, run):
    """[(error message, file, value, case id)] of a conformance.CorpusRun,
    in corpus order: every write that did not print "ok"."""
    found = []
    for case in corpus:
        lines = run.cases.get(case.id, [])
        if case.warns:
            lines = conformance.with_upstream_errno(lines)
        for line in lines:
            m = _WRITE.match(line.strip())
            if m and m.group("result") != "ok":
                found.append((m.group("result"), m.group("file"), m.group("value"), case.id))
    return found


def _cell(text):
    """Text in a table cell, as it is (passthrough); a '|' escaped so that
    it does not end the cell."""
    if not text:
        return "(nothing)"
    return "`+" + text.replace("|", "\\|") + "+`"


def file_anchor(path):
    """The anchor of a file's section: events/kmem/kmalloc/trigger ->
    file-events-kmem-kmalloc-trigger (files.adoc links to it)."""
    return "file-" + re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")


def page(corpus, corpus_text, run):
    """The page's text, from upstream's CorpusRun: a summary by errno,
    then every failed write, file by file."""
    groups = case_groups(corpus_text)
    writes = failed_writes(corpus, run)
    by_error, by_file = {}, {}
    for message, path, value, ident in writes:
        by_error.setdefault(message, set()).add(path)
        by_file.setdefault(path, []).append((message, value, ident))
    count = {m: sum(1 for w in writes if w[0] == m) for m in by_error}
    out = [HEADER.replace("{release}", kernels.base_release()), "== By errno\n",
           '[cols="2,1,5",options="header"]', "|===", "|errno |writes |files\n"]
    for message in sorted(by_error, key=lambda m: (-count[m], m)):
        name = errno_name(message) or "?"
        files = ", ".join(f"<<{file_anchor(f)},`{f}`>>" for f in sorted(by_error[message]))
        out.append(f"|`{name}` ({message}) |{count[message]} |{files}")
    out.append("|===\n")
    out.append("== By file\n")
    for path in sorted(by_file):
        out.append(f"[[{file_anchor(path)}]]")
        out.append(f"=== {path}\n")
        out.append('[cols="2,3,2,3",options="header"]')
        out.append("|===")
        out.append("|errno |written |case |group\n")
        for message, value, ident in by_file[path]:
            name = errno_name(message) or message
            out.append(f"|`{name}` |{_cell(value)} |{ident} |{groups.get(ident, '')}")
        out.append("|===\n")
    return "\n".join(out).rstrip("\n") + "\n"


def page_of_run(run):
    """The page for upstream's CorpusRun, with the corpus as it is now."""
    with open(conformance.CORPUS, encoding="utf-8") as f:
        text = f.read()
    return page(conformance.parse_corpus(text), text, run)


def load_page():
    try:
        with open(PAGE, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def check(corpus_run, tally):
    """make check: the page is what upstream's corpus run of this make
    check gives."""
    ok = page_of_run(corpus_run) == load_page()
    tally.record(ok, f"docs: doc/errnos.adoc lists the errors upstream {kernels.base_release()} returned for the "
                 "corpus' writes in this run")
    if not ok:
        from . import ui
        ui.block(["doc/errnos.adoc differs from this run's upstream results: rewrite it with",
                  "  scripts/record-before.py --errnos build/logs/check-upstream.log"])
