"""make docs [N]: the documentation, in build/docs/ (N: build/docs/cpN/).

  index.html      the book (doc/index.adoc): README and history, and
                  links to every lab's handout and chapter; each page of
                  the reading order (reading_order()) has section numbers
                  and links to the page before and after it
  ftrace.html     doc/ftrace.adoc: function probes, clocks, options
  events.html     doc/events.adoc: events, soft mode, triggers
  internals.html  doc/internals.adoc, with its diagrams (diagrams/*.svg,
                  drawn by graphviz's dot from doc/diagrams/*.dot)
  quickref.html   doc/quickref.adoc: the syntax, listings, removal and
                  errors of probes and triggers on one page, and
                  troubleshooting
  files.html      doc/files.adoc: each tracefs file the labs use, what
                  it holds and what a write does
  errnos.html     doc/errnos.adoc: every error a write of the conformance
                  corpus got on upstream 6.1, by errno (generated from a
                  run: errnos.py)
  usage.html      doc/usage.adoc: every make target and variable, where
                  things go, troubleshooting
  harness.html    doc/harness.adoc: how the harness works, for those who
                  maintain the labs (not part of the book)
  labs/NN-slug.html  each lab's handout on its own page (and
                  labs/robustness.html, the robustness tests)
  ftrace.txt, events.txt, quickref.txt, index.txt
                  plain text: asciidoctor's DocBook output through pandoc

The chapters say what each checkpoint adds with AsciiDoc conditionals on
the attribute 'checkpoint' (ifeval::[{checkpoint} >= 3]). "make docs N"
sets it to N, so a learner reads what the kernel of checkpoint N can do;
"make docs" sets it to the last checkpoint: the whole series. asciidoctor
runs with warnings as failures.

The answers to the handouts' Questions are collapsed blocks, one click
away. Each sits between "ifndef::student-edition[]" and "endif::[]", so
that "make docs ANSWERS=0" leaves them out (the student edition, in
build/docs-student/) and "make docs ANSWERS=1" shows them all open (the
instructor's key, in build/docs-key/).

The student edition is also the exercise edition: a learner doing
exercise N reads handout N before writing the checkpoint's code, so a
handout with an exercise (include::exercise.adoc[]) puts its Exercise
section first, before "Run it", and leaves out its "Read the patch",
which walks through the reference (exercise_first()). The default and
the instructor's key keep the handout's own order.
"""

import concurrent.futures
import csv
import glob
import io
import os
import re
import shutil
import subprocess

from . import interrupt, series, ui

DOC = os.path.join(series.ROOT, "doc")
DIAGRAMS = os.path.join(DOC, "diagrams")
# The pages of their own; harness is the maintainer's guide, which the
# book links to but does not include.
CHAPTERS = ("ftrace", "events", "internals", "quickref", "files", "errnos", "usage",
            "harness")
CHAPTER_TITLES = {"ftrace": "ftrace.txt", "events": "events.txt", "internals": "The internals",
                  "quickref": "Quick reference", "files": "The tracefs files",
                  "errnos": "Errors a write returns", "usage": "Using the labs"}
TEXT = ("ftrace", "events", "quickref", "index")    # the pages that get a .txt
TEXT_COLUMNS = 78
# The robustness tests' chapter, after the labs in the reading order.
ROBUSTNESS = os.path.join(series.ROOT, "labs", "robustness", "README.adoc")
TEXT_FILTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plaintext.lua")
# The folder of each edition under the build folder, by ANSWERS: none
# given (answers collapsed), 0 (no answers), 1 (answers open).
EDITIONS = {None: "docs", False: "docs-student", True: "docs-key"}
STUDENT_EDITION = "student-edition"     # the attribute that leaves the answers out
EXERCISE_INCLUDE = "include::exercise.adoc[]"
READ_THE_PATCH = "=== Read the patch"


def attributes(checkpoint):
    last = series.last_checkpoint()
    view = (f"the whole series (checkpoint {last})" if checkpoint >= last
            else f"checkpoint {checkpoint}")
    return ["-a", f"checkpoint={checkpoint}", "-a", f"checkpoint-view={view}",
            "-a", f"last-checkpoint={last}", "-a", "labs=labs", "-a", "imagesdir=diagrams"]


def edition(answers):
    """The asciidoctor attributes of an edition (see EDITIONS)."""
    return ["-a", STUDENT_EDITION] if answers is False else []


def open_answers(directory):
    """The instructor's key: every collapsed block of the HTML pages in
    directory (and below) shown open. asciidoctor writes a collapsed block
    as <details>; the "open" attribute unfolds it."""
    for path in glob.glob(os.path.join(directory, "**", "*.html"), recursive=True):
        with open(path, encoding="utf-8") as f:
            html = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(html.replace("<details>", "<details open>"))


def exercise_first(text):
    """A handout as the student edition shows it: its Exercise section
    (the line including exercise.adoc) moved before its first section,
    and its "Read the patch" section left out. A handout without an
    exercise is returned as it is."""
    lines = text.split("\n")
    if EXERCISE_INCLUDE not in lines:
        return text
    lines.remove(EXERCISE_INCLUDE)
    out, skipping = [], False
    for line in lines:
        if line.startswith("=== ") or line.startswith("== "):
            skipping = line.rstrip() == READ_THE_PATCH
        if not skipping:
            out.append(line)
    first = next(i for i, line in enumerate(out) if line.startswith("=== "))
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out[:first] + [EXERCISE_INCLUDE, ""] + out[first:]) + "\n"


def _run(cmd, messages, **kw):
    # make check builds the docs on threads of their own: after Ctrl-C
    # they start nothing more
    if interrupt.requested():
        raise interrupt.Interrupted()
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    out = r.stderr.strip()
    if out:
        messages += out.splitlines()
    return r


def asciidoctor(src, out, checkpoint, messages, backend="html5", extra=(), text=None):
    """src to out; text: what to convert instead of src's own text (its
    includes still found beside src)."""
    cmd = (["asciidoctor", "--failure-level", "WARN", "-b", backend] + attributes(checkpoint)
           + list(extra) + ["-o", out])
    if text is None:
        return _run(cmd + [src], messages).returncode == 0
    cmd += ["-B", os.path.dirname(os.path.abspath(src)), "-a", f"docname={_stem(src)}", "-"]
    return _run(cmd, messages, input=text).returncode == 0


def _stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def handout(src, out, checkpoint, messages, extra=(), answers=None):
    """A lab's handout page, in the edition ANSWERS=answers asks for: the
    student edition's order (exercise_first()) for ANSWERS=0."""
    text = None
    if answers is False:
        with open(src, encoding="utf-8") as f:
            text = exercise_first(f.read())
    return asciidoctor(src, out, checkpoint, messages, extra=list(edition(answers)) + list(extra),
                       text=text)


def diagrams(out_dir, messages):
    """doc/diagrams/*.dot -> out_dir/diagrams/*.svg with dot; the pictures
    (doc/diagrams/*.png: screenshots) copied beside them."""
    dest = os.path.join(out_dir, "diagrams")
    os.makedirs(dest, exist_ok=True)
    for png in sorted(glob.glob(os.path.join(DIAGRAMS, "*.png"))):
        shutil.copy2(png, dest)
    ok = True
    for dot in sorted(glob.glob(os.path.join(DIAGRAMS, "*.dot"))):
        svg = os.path.join(dest, os.path.splitext(os.path.basename(dot))[0] + ".svg")
        r = _run(["dot", "-Tsvg", "-o", svg, dot], messages)
        if r.returncode != 0:
            messages.append(f"dot failed on {os.path.relpath(dot, series.ROOT)}")
            ok = False
    return ok


def plain_text(src, out, checkpoint, messages, via="docbook5", extra=()):
    """AsciiDoc -> DocBook 5 (asciidoctor) -> plain text (pandoc). The book
    goes through HTML instead: some handouts nest inline markup in a way
    that gives DocBook that is not well-formed XML, which pandoc's DocBook
    reader refuses and its HTML reader takes."""
    tmp = out + (".xml" if via == "docbook5" else ".html")
    if not asciidoctor(src, tmp, checkpoint, messages, backend=via, extra=extra):
        return False
    r = _run(["pandoc", "-f", "docbook" if via == "docbook5" else "html", "-t", "plain",
              f"--columns={TEXT_COLUMNS}", f"--lua-filter={TEXT_FILTER}", "-o", out, tmp]
             + ([] if via == "docbook5" else ["-M", "notitle=1"]),
             messages)
    os.unlink(tmp)
    return r.returncode == 0


def reading_order(checkpoint):
    """The pages of checkpoint's view in the order a reader goes through
    them, as (source, page relative to the view, title): the book's
    index, the labs up to checkpoint, the robustness tests, then the
    reference chapters. Each page links the one before and the one after
    (navigation)."""
    pages = [(os.path.join(DOC, "index.adoc"), "index.html", "Contents")]
    for cp in series.checkpoints():
        src = os.path.join(cp.lab_dir, "README.adoc")
        if cp.number <= checkpoint and os.path.exists(src):
            pages.append((src, f"labs/{cp.name}.html", f"Lab {cp.number:02d}"))
    pages.append((ROBUSTNESS, "labs/robustness.html", "Robustness tests"))
    for name in CHAPTERS:
        if name != "harness":
            pages.append((os.path.join(DOC, name + ".adoc"), name + ".html", CHAPTER_TITLES[name]))
    return pages


def navigation(pages, i):
    """The previous/contents/next line of page i of reading_order, as HTML
    with links relative to that page (docinfo-header.html and
    docinfo-footer.html put it at the top and the bottom)."""
    here = os.path.dirname(pages[i][1])

    def link(page, text):
        href = os.path.relpath(page, here or ".")
        return f'<a href="{href}">{text}</a>'

    parts = []
    if i > 0:
        parts.append(link(pages[i - 1][1], "&larr; " + pages[i - 1][2]))
    parts.append(link("index.html", "contents"))
    if i + 1 < len(pages):
        parts.append(link(pages[i + 1][1], pages[i + 1][2] + " &rarr;"))
    return " &middot; ".join(parts)


def navigated(pages, page):
    """asciidoctor's arguments for the navigation of page (a path of
    reading_order), or none for a page outside it (harness.html)."""
    index = next((i for i, p in enumerate(pages) if p[1] == page), None)
    if index is None:
        return []
    return ["-a", "docinfo=shared-header,shared-footer", "-a", f"docinfodir={DOC}",
            "-a", f"ftlab-nav={navigation(pages, index)}"]


def lab_pages(out_dir, checkpoint, messages, answers=None):
    dest = os.path.join(out_dir, "labs")
    os.makedirs(dest, exist_ok=True)
    ok = True
    pages = reading_order(checkpoint)
    for src, page, _title in pages:
        if page.startswith("labs/"):
            # a handout is a page of labs/: its pictures are one folder up
            ok &= handout(src, os.path.join(out_dir, page), checkpoint, messages,
                          extra=["-a", "toc", "-a", "sectnums", "-a", "imagesdir=../diagrams"]
                          + navigated(pages, page), answers=answers)
    return ok


def build(out_dir, checkpoint=None, answers=None):
    """Every page of checkpoint's view (None: the whole series) into
    out_dir, in the edition ANSWERS=answers asks for (EDITIONS). Returns
    (ok, messages)."""
    if checkpoint is None:
        checkpoint = series.last_checkpoint()
    os.makedirs(out_dir, exist_ok=True)
    messages = []
    extra = edition(answers)
    ok = diagrams(out_dir, messages)
    pages = reading_order(checkpoint)
    ok &= asciidoctor(os.path.join(DOC, "index.adoc"), os.path.join(out_dir, "index.html"),
                      checkpoint, messages,
                      extra=["-a", "toc=left"] + navigated(pages, "index.html") + extra)
    for name in CHAPTERS:
        ok &= asciidoctor(os.path.join(DOC, name + ".adoc"), os.path.join(out_dir, name + ".html"),
                          checkpoint, messages,
                          extra=["-a", "toc=left", "-a", "sectnums"]
                          + navigated(pages, name + ".html") + extra)
    ok &= lab_pages(out_dir, checkpoint, messages, answers)
    for name in TEXT:
        ok &= plain_text(os.path.join(DOC, name + ".adoc"), os.path.join(out_dir, name + ".txt"),
                         checkpoint, messages, via="html5" if name == "index" else "docbook5",
                         extra=extra)
    if answers:
        open_answers(out_dir)
    return ok, messages


def out_dir(checkpoint=None, build_dir=None, answers=None):
    base = build_dir or os.environ.get("FTLAB_BUILD_DIR", os.path.join(series.ROOT, "build"))
    docs = os.path.join(base, EDITIONS[answers])
    return docs if checkpoint is None else os.path.join(docs, f"cp{checkpoint}")


def outputs(directory):
    """The files a reader opens first."""
    return [os.path.join(directory, f) for f in
            ("index.html", "ftrace.html", "events.html", "internals.html",
             "quickref.html", "files.html", "errnos.html", "usage.html", "ftrace.txt", "events.txt",
             "quickref.txt")]


def broken_links(directory):
    """The links of the pages reachable from directory/index.html that
    lead nowhere, as "page: target (why)", checked by Debian's
    linkchecker (local files only; it runs as nobody when run as root, so
    the pages must be world-readable, as they are)."""
    r = subprocess.run(["linkchecker", "--no-status", "--no-warnings", "-o", "csv",
                        "file://" + os.path.abspath(os.path.join(directory, "index.html"))],
                       capture_output=True, text=True)
    rows = csv.DictReader(io.StringIO("\n".join(
        line for line in r.stdout.splitlines() if not line.startswith("#"))), delimiter=";")
    broken = [f"{os.path.basename(row['parentname'] or '')}: {row['urlname']} ({row['result']})"
              for row in rows if row.get("valid") == "False"]
    if r.returncode not in (0, 1) and not broken:
        broken.append(f"linkchecker failed: {r.stderr.strip()[-300:]}")
    return broken


# What the plain text must not keep: AsciiDoc's conditionals, and a
# backtick (asciidoctor leaves one where it did not see monospace: an
# `x` glued to a letter or an underscore).
_LEFTOVER = re.compile(r"ifeval::|ifdef::|ifndef::|endif::|`")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*_[A-Za-z0-9_]*|[A-Z][A-Z0-9]{3,}")


def cited_identifiers(adoc, checkpoint):
    """The identifiers the source cites in `monospace` outside listings,
    in the lines checkpoint's view shows, with how often: names with an
    underscore (set_ftrace_filter, trace_clock_jiffies) and capitals
    (EINVAL). The spans and their checkpoints are the name check's
    (namecheck.adoc_lines)."""
    from . import namecheck
    found = {}
    for _n, spans, lo, hi in namecheck.adoc_lines(adoc, 0, series.last_checkpoint()):
        if lo <= checkpoint <= hi:
            for name in _IDENTIFIER.findall(spans):
                found[name] = found.get(name, 0) + 1
    return found


def text_problems(adoc, text, checkpoint):
    """What the plain text of a chapter lost or kept: an identifier of the
    source not whole in the text (pandoc broke it across lines in a narrow
    table cell: E / INVAL), or markup left over. [str], empty when none."""
    problems = []
    words = {}
    for word in re.findall(r"[A-Za-z0-9_]+", text):
        words[word] = words.get(word, 0) + 1
    for name, count in sorted(cited_identifiers(adoc, checkpoint).items()):
        if words.get(name, 0) < count:
            problems.append(f"'{name}': cited {count} time(s), whole in the text "
                            f"{words.get(name, 0)} time(s)")
    for n, line in enumerate(text.splitlines(), 1):
        if _LEFTOVER.search(line):
            problems.append(f"line {n} keeps markup: {line.strip()}")
    return problems


def build_views(build_dir=None):
    """Every view make check grades, built and link-checked: the whole
    series' (None) and each checkpoint's. The views are independent, so
    they build side by side, one per core. Returns {view: (ok, messages,
    broken links)}."""
    views = [None] + [cp.number for cp in series.checkpoints()]

    def one(view):
        where = out_dir(view, build_dir)
        ok, messages = build(where, view)
        return ok, messages, broken_links(where)

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(zip(views, pool.map(one, views)))


def check(tally, build_dir=None, built=None):
    """The docs' verdicts. built: what build_views() returned, when make
    check started it earlier beside other work; else it is built now."""
    if built is None:
        ui.step("building the docs (asciidoctor, dot, pandoc)")
        built = build_views(build_dir)
    full = out_dir(build_dir=build_dir)
    ok, messages, broken = built[None]
    tally.record(ok, "docs build without warnings")
    ui.block(messages[:10])
    with open(os.path.join(full, "index.html"), encoding="utf-8") as f:
        book = f.read()
    for cp in series.checkpoints():
        if cp.has_lab:
            page = f"labs/{cp.name}.html"
            tally.record(os.path.exists(os.path.join(full, page)) and f'href="{page}"' in book,
                         f"docs: the book links the page of lab {cp.number:02d}")
    tally.record('href="labs/robustness.html"' in book,
                 "docs: the book links the robustness tests' page")
    tally.record(os.path.exists(os.path.join(full, "usage.html")) and 'href="usage.html"' in book,
                 "docs: the book links the usage chapter, every make target and variable")
    for name in ("ftrace.txt", "events.txt"):
        path = os.path.join(full, name)
        tally.record(os.path.exists(path) and os.path.getsize(path) > 1000,
                     f"docs: {name} written as plain text (pandoc)")
    for name in ("ftrace", "events", "quickref"):
        with open(os.path.join(DOC, name + ".adoc"), encoding="utf-8") as f:
            adoc = f.read()
        path = os.path.join(full, name + ".txt")
        text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        problems = text_problems(adoc, text, series.last_checkpoint())
        tally.record(bool(text) and not problems,
                     f"docs: {name}.txt keeps every identifier whole and no markup")
        ui.block(problems[:10])
    tally.record(not broken, "docs: no broken link in the whole series' view (linkchecker)")
    ui.block(broken[:10])
    # Every checkpoint's view builds, and links only to pages it has.
    for cp in series.checkpoints():
        ok, messages, broken = built[cp.number]
        tally.record(ok, f"docs: checkpoint {cp.number}'s view builds without warnings")
        ui.block(messages[:10])
        tally.record(not broken, f"docs: no broken link in checkpoint {cp.number}'s view "
                     "(linkchecker)")
        ui.block(broken[:10])
