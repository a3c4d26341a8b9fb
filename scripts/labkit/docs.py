"""make docs: the AsciiDoc book (doc/index.adoc, which includes every lab's
handout) as HTML, plus a plain-text copy, in build/docs/."""

import html.parser
import os
import re
import subprocess

from . import series, ui

DOC = os.path.join(series.ROOT, "doc")


class _Text(html.parser.HTMLParser):
    """HTML to readable text: block elements become line breaks."""
    VOID = {"br", "meta", "link", "img", "input", "hr", "col", "wbr"}
    BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "pre", "table", "dt", "dd"}

    def __init__(self):
        super().__init__()
        self.out, self.skip, self.pre = [], 0, 0
        self.stack = []

    def _newline(self):
        if not (self.out and self.out[-1].endswith("* ")):
            self.out.append("\n")

    def handle_starttag(self, tag, attrs):
        # the table of contents repeats the headings: leave it out
        hidden = tag in ("style", "script", "head") or dict(attrs).get("id") == "toc"
        if tag not in self.VOID:
            self.stack.append((tag, hidden))
        if hidden:
            self.skip += 1
        if tag == "pre":
            self.pre += 1
        if tag in self.BLOCK and not self.skip:
            self._newline()
        if tag == "li" and not self.skip:
            self.out.append("  * ")

    def handle_endtag(self, tag):
        while self.stack:
            open_tag, hidden = self.stack.pop()
            if hidden:
                self.skip -= 1
            if open_tag == tag:
                break
        if tag == "pre":
            self.pre -= 1
        if tag in self.BLOCK or tag in ("h1", "h2", "h3"):
            self.out.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.out.append(data if self.pre else re.sub(r"\s+", " ", data))

    def text(self):
        lines = "".join(self.out).splitlines()
        cleaned, blank = [], False
        for line in lines:
            line = line.rstrip() if line.startswith(" ") else line.strip()
            if not line.strip():
                if not blank:
                    cleaned.append("")
                blank = True
            else:
                cleaned.append(line)
                blank = False
        return "\n".join(cleaned).strip() + "\n"


def build(out_dir):
    """Returns (ok, messages)."""
    os.makedirs(out_dir, exist_ok=True)
    html_out = os.path.join(out_dir, "index.html")
    r = subprocess.run(["asciidoctor", "--failure-level", "WARN", "-a", "toc=left",
                        "-o", html_out, os.path.join(DOC, "index.adoc")],
                       capture_output=True, text=True)
    messages = (r.stdout + r.stderr).strip().splitlines()
    if r.returncode != 0:
        return False, messages
    parser = _Text()
    with open(html_out, encoding="utf-8") as f:
        parser.feed(f.read())
    with open(os.path.join(out_dir, "index.txt"), "w", encoding="utf-8") as f:
        f.write(parser.text())
    return True, messages


def out_dir():
    return os.path.join(os.environ.get("FTLAB_BUILD_DIR", os.path.join(series.ROOT, "build")), "docs")


def check(tally):
    ui.step("building the docs (asciidoctor)")
    ok, messages = build(out_dir())
    tally.record(ok, "docs build without warnings")
    ui.block(messages[:10])
    with open(os.path.join(DOC, "index.adoc"), encoding="utf-8") as f:
        book = f.read()
    for cp in series.checkpoints():
        if cp.has_lab:
            handout = f"labs/{cp.name}/README.adoc"
            tally.record(os.path.exists(os.path.join(series.ROOT, handout)) and handout in book,
                         f"docs: the book includes the handout of lab {cp.number:02d}")
