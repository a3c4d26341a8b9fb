"""make check: every name the text cites as code exists in the kernel the
text speaks of.

A learner who reads `event_enable_probe()` in a chapter sets a breakpoint
on it; when the name is upstream's and not the checkpoint's, gdb answers
"Function not defined". This check reads the text a learner reads and
looks each cited name up in the right kernel tree:

  doc/ftrace.adoc, events.adoc, internals.adoc, quickref.adoc, files.adoc,
  index.adoc
      a line inside ifeval::[{checkpoint} >= N] (or < N) speaks of the
      checkpoints its conditions leave; a name there must exist in the
      first and in the last of them (lab/cpN branches of build/linux)
  doc/diagrams/*.dot    the whole series: the last checkpoint
  labs/NN-*/README.adoc, the comments and breakpoints of labs/NN-*/lab.gdb
      checkpoint NN
  the commit message of each patch
      the tree before or after that patch (a message says what the patch
      removes as well as what it adds)

What counts as a cited name: in AsciiDoc, the inside of `monospace`
(console listings are left out: make check runs them); in commit
messages, diagrams and gdb comments, every word. In both, a cited name
is a call `name()` or `name(args)`, `struct name`, `CONFIG_NAME`, a path
under a kernel top folder (kernel/trace/ftrace.c), and any word with an
underscore (tracefs files such as set_ftrace_filter, constants such as
PROBE_STACK_SKIP).

Text that names another kernel's code on purpose says so in front of the
name, and the check recognises that form: the base's release, read from
patches/BASE ("6.12's `event_trigger_init()`" on linux-source-6.12), and
"upstream's", "mainline's", are looked up in upstream's tree (the base
unmodified); any other release or year, "6.1's `event_trigger_ops`" of
the base the series was first written for, "2013's `tracer_frame`" or
"3.6's `ftrace_func_hash`", is history that no tree here holds: it is
counted, not looked up. A handout that looks back
at an earlier checkpoint's code says "checkpoint 3's `name()`", looked up
in that checkpoint's tree. A name made up on purpose starts with no_such_, and the
syscall events sys_enter_NAME / sys_exit_NAME, which a macro names, are
looked up as the syscall NAME.

A name is found when it occurs as a whole word in the tree's source
of the core folders (kernel/, include/, arch/x86/, fs/, mm/ ...); one git
grep per tree over the files the series changes, and one over upstream's
whole source for the rest, keep the check to seconds.
"""

import fnmatch
import glob
import hashlib
import os
import re
import subprocess

from . import kernels, series, tree, ui
from .kernels import UPSTREAM

DOC = os.path.join(series.ROOT, "doc")
CHAPTERS = ("ftrace", "events", "internals", "quickref", "files", "index")
HISTORY = "2013"

# The words in front of a name that say it is upstream's: the base's
# release ("6.12's" when patches/BASE is linux-source-6.12), never a fixed
# one, so that the release the series left ("6.1's") becomes history.
UPSTREAM_MARKERS = (f"{kernels.base_release()}'s", "upstream's", "mainline's")
# The form of a marker: one of those, or a year or another version
# ("2013's", "3.10's", "6.1's"), which is history.
MARKER = r"(?:checkpoint \d+|\d+(?:\.\d+)?|upstream|mainline)'s"
KERNEL_DIRS = ("kernel", "include", "arch", "fs", "mm", "lib", "init", "tools",
               "Documentation", "block", "net", "security")
# Where a name counts as existing: the source, not the kernel's prose.
MADE_UP = "no_such_"
# Upstream's files that the series leaves out of every lab kernel (their
# Kconfig options depend on BROKEN): they still call upstream's trigger
# functions, and
# must not make those names look like the checkpoints'.
NOT_BUILT = {"kernel/trace/" + f for f in (
    "trace_boot.c", "trace_events_hist.c", "trace_events_synth.c", "trace_eprobe.c",
    "trace_kprobe.c", "trace_kprobe_selftest.c", "trace_uprobe.c", "trace_probe.c",
    "synth_event_gen_test.c")}
# The project's own guest code (the handouts name its helpers).
OURS = ("initramfs/**/*.sh", "labs/*/lab.sh")

_TOKEN = re.compile(
    r"(?P<marker>" + MARKER + r"\s+`?)?"
    r"(?:struct\s+(?P<struct>[A-Za-z_]\w*)"
    r"|(?P<config>CONFIG_[A-Z0-9_]+)"
    r"|(?<![\w/.$-])(?P<path>(?:" + "|".join(KERNEL_DIRS) + r")/[\w./*-]*(?:\.[chS]|Kconfig|/))"
    r"|(?<![\w/.$-])(?P<file>\w+\.[chS])\b"
    r"|(?<![\w$])(?P<word>_*[A-Za-z]\w*)(?P<after>\(|\*|<)?)")
# Names a kernel macro makes from another name: look up the other name.
_GENERATED = re.compile(r"^(?:sys_enter_|sys_exit_|__do_sys_|__x64_sys_|__se_sys_"
                        r"|trace_event_raw_event_)(\w+)$")


class Cite:
    """One name cited at file:line, and the trees it must exist in."""

    def __init__(self, path, line, name, kind, refs):
        self.path, self.line, self.name, self.kind, self.refs = path, line, name, kind, refs

    @property
    def key(self):
        """What git grep looks for (a word) or, for paths, the path."""
        if self.kind == "struct":
            return "struct " + self.name
        if self.kind == "config":
            return self.name
        return self.name

    def where(self):
        return f"{os.path.relpath(self.path, series.ROOT)}:{self.line}"

    def __repr__(self):
        return f"Cite({self.where()}, {self.name!r}, {self.kind}, {self.refs})"


def names_in(text):
    """(name, kind, marker) of each name cited in a piece of text: kind is
    word, prefix (name_* or name_<x>), struct, config, path or file (a
    file name without its folder); marker is UPSTREAM, HISTORY, a
    checkpoint's number or None."""
    for m in _TOKEN.finditer(text):
        marker = m.group("marker")
        if marker:
            marker = marker.rstrip("` ")
            marker = (UPSTREAM if marker in UPSTREAM_MARKERS else
                      int(marker.split()[1][:-2]) if marker.startswith("checkpoint") else
                      HISTORY)
        kind = next(k for k in ("struct", "config", "path", "file") if m.group(k)) \
            if not m.group("word") else "word"
        if kind != "word":
            yield m.group(kind), kind, marker
            continue
        word, after = m.group("word"), m.group("after")
        if after in ("*", "<") and word.endswith("_"):
            yield word, "prefix", marker
            continue
        if not (after == "(" or "_" in word.strip("_")) or word.startswith(MADE_UP):
            continue
        made = _GENERATED.match(word)
        yield (made.group(1) if made else word), "word", marker


# --- the texts --------------------------------------------------------------

_IFEVAL = re.compile(r"^ifeval::\[\{checkpoint\}\s*(>=|<|==|>|<=)\s*(\d+)\]")
# Any other block conditional (ifndef::student-edition[] around an
# answer): it leaves the checkpoints as they are, and its endif:: closes
# it, not the ifeval around it.
_OTHER_IF = re.compile(r"^if(n?def|eval)::.*\[\]$")


def _narrow(lo, hi, op, n):
    if op == ">=":
        return max(lo, n), hi
    if op == ">":
        return max(lo, n + 1), hi
    if op == "<":
        return lo, min(hi, n - 1)
    if op == "<=":
        return lo, min(hi, n)
    return max(lo, n), min(hi, n)


def adoc_lines(text, lo, hi):
    """(line number, monospace text, lo, hi) of an AsciiDoc file: the
    inside of each `...` span outside listings and comments, with the
    checkpoints its ifeval conditions leave (lo..hi)."""
    stack = [(lo, hi)]
    listing = None
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if listing:
            if stripped == listing:
                listing = None
            continue
        if stripped in ("----", "....", "////"):
            listing = stripped
            continue
        m = _IFEVAL.match(stripped)
        if m:
            stack.append(_narrow(*stack[-1], m.group(1), int(m.group(2))))
            continue
        if _OTHER_IF.match(stripped):
            stack.append(stack[-1])
            continue
        if stripped.startswith("endif::"):
            if len(stack) > 1:
                stack.pop()
            continue
        if stripped.startswith("//"):
            continue
        spans = re.findall(r"(?:" + MARKER + r"\s+)?`[^`]+`", line)
        if spans:
            yield n, " ".join(s.replace("+", " ") for s in spans), stack[-1][0], stack[-1][1]


def commit_message(patch_text):
    """The subject and body of a format-patch file, up to the '---' line."""
    head = patch_text.split("\n---\n", 1)[0]
    lines = head.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("Subject:")), 0)
    return [(i + 1, re.sub(r"^Subject:\s*\[PATCH[^\]]*\]\s*", "", l))
            for i, l in enumerate(lines[start:], start)
            if not l.startswith("Signed-off-by:")]


def dot_lines(text):
    """(line number, text) of a graphviz file: its comments and labels,
    with their line breaks (\\n) as spaces."""
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        parts = [stripped[2:]] if stripped.startswith("//") else \
            re.findall(r'label="((?:[^"\\]|\\.)*)"', line)
        if parts:
            yield n, " ".join(parts).replace("\\n", " ")


def gdb_lines(text):
    """(line number, text) of a lab.gdb: its comments and the function of
    each break/tbreak."""
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            yield n, stripped.lstrip("#")
        else:
            m = re.match(r"^t?break\s+([A-Za-z_]\w*)\s*$", stripped)
            if m:
                yield n, m.group(1) + "()"


def cites(refs):
    """Every Cite of the text a learner reads. refs: checkpoint number ->
    git ref of its tree; patch path -> (parent ref, ref)."""
    last = max(k for k in refs if isinstance(k, int))
    out = []

    def add(path, n, text, trees):
        for name, kind, marker in names_in(text):
            where = ((UPSTREAM,) if marker == UPSTREAM else () if marker == HISTORY
                     else (refs[marker],) if isinstance(marker, int) else trees)
            out.append(Cite(path, n, name, kind, where))

    for name in CHAPTERS:
        path = os.path.join(DOC, name + ".adoc")
        with open(path, encoding="utf-8") as f:
            for n, text, lo, hi in adoc_lines(f.read(), 0, last):
                add(path, n, text, tuple(sorted({refs[lo], refs[hi]})))
    for path in sorted(glob.glob(os.path.join(DOC, "diagrams", "*.dot"))):
        with open(path, encoding="utf-8") as f:
            for n, text in dot_lines(f.read()):
                add(path, n, text, (refs[last],))
    for cp in series.checkpoints():
        handout = os.path.join(cp.lab_dir, "README.adoc")
        if os.path.exists(handout):
            with open(handout, encoding="utf-8") as f:
                for n, text, lo, hi in adoc_lines(f.read(), cp.number, cp.number):
                    add(handout, n, text, (refs[cp.number],))
        script = os.path.join(cp.lab_dir, "lab.gdb")
        if os.path.exists(script):
            with open(script, encoding="utf-8") as f:
                for n, text in gdb_lines(f.read()):
                    add(script, n, text, (refs[cp.number],))
        for patch in cp.patches():
            with open(patch, encoding="utf-8") as f:
                for n, text in commit_message(f.read()):
                    add(patch, n, text, refs[patch])
    return out


# --- the trees ----------------------------------------------------------------

def _git(path, *args, stdin=None):
    r = subprocess.run(["git", "-C", path] + list(args), input=stdin,
                       capture_output=True)
    if r.returncode != 0:
        raise tree.TreeError(f"git {' '.join(args[:3])} failed: "
                             f"{r.stderr.decode(errors='replace').strip()}")
    return r.stdout


def is_source(path):
    """The files whose words count: the core of the kernel's C source
    and Kconfig, top-level fs/ and mm/ files (ksys_sync, the syscalls),
    not drivers, other architectures or Documentation/."""
    if not path.endswith((".c", ".h", ".S", "Kconfig")) or path in NOT_BUILT:
        return False
    if path.startswith(("fs/tracefs/", "kernel/", "include/", "arch/x86/", "lib/", "init/")):
        return True
    return path.startswith(("fs/", "mm/")) and path.count("/") == 1


def words(data):
    """The names a piece of source defines or uses: its words, "struct X"
    for each struct it names, and CONFIG_X for each Kconfig "config X"."""
    found = set(re.findall(rb"\w+", data))
    found |= {b"struct " + w for w in re.findall(rb"struct\s+(\w+)", data)}
    found |= {b"CONFIG_" + w for w in re.findall(rb"^\s*(?:menu)?config\s+(\w+)", data, re.M)}
    return {w.decode() for w in found}


def read_blobs(path, specs):
    """The contents of several "ref:path" objects, in one git process."""
    out = _git(path, "cat-file", "--batch", stdin="".join(s + "\n" for s in specs).encode())
    blobs, pos = [], 0
    for _ in specs:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].split()
        if header[-1] == b"missing":
            blobs.append(None)
            pos = nl + 1
            continue
        size = int(header[2])
        blobs.append(out[nl + 1:nl + 1 + size])
        pos = nl + 1 + size + 1
    return blobs


def files_at(path, ref):
    return [p for p in _git(path, "ls-tree", "-r", "--name-only", ref).decode().splitlines()]


class Index:
    """Which names exist in which trees. The files that no patch of the
    series touches are read once, at upstream (and their words kept in
    build/namecheck/, keyed by what they were read from); each tree then
    adds the words of the touched files as they are there."""

    def __init__(self, path, cache_dir, last_branch):
        self.path = path
        self.cache = {}
        self.paths = {}
        log = _git(path, "log", "--format=", "--name-only", f"{UPSTREAM}..{last_branch}")
        self.touched = sorted({p for p in log.decode().split() if is_source(p)})
        self.base = self._base(cache_dir)
        self.ours = set()
        for pattern in OURS:
            for path in glob.glob(os.path.join(series.ROOT, pattern), recursive=True):
                if os.path.isfile(path):
                    with open(path, "rb") as f:
                        self.ours |= words(f.read())

    def _base(self, cache_dir):
        head = _git(self.path, "rev-parse", UPSTREAM).decode().strip()
        key = hashlib.sha1("\n".join([head] + self.touched).encode()).hexdigest()[:16]
        cached = os.path.join(cache_dir, f"words-{key}.txt")
        if os.path.exists(cached):
            with open(cached, encoding="utf-8") as f:
                return set(f.read().split("\n"))
        touched = set(self.touched)
        specs = [f"{UPSTREAM}:{p}" for p in files_at(self.path, UPSTREAM)
                 if is_source(p) and p not in touched]
        found = set()
        for blob in read_blobs(self.path, specs):
            found |= words(blob or b"")
        os.makedirs(cache_dir, exist_ok=True)
        with open(cached + ".tmp", "w", encoding="utf-8") as f:
            f.write("\n".join(sorted(found)))
        os.replace(cached + ".tmp", cached)
        return found

    def words_of(self, ref):
        if ref not in self.cache:
            found = set()
            for blob in read_blobs(self.path, [f"{ref}:{p}" for p in self.touched]):
                found |= words(blob or b"")
            self.cache[ref] = found
        return self.cache[ref]

    def files_of(self, ref):
        """The paths of ref's files and folders (with a trailing /), and
        the names of its files."""
        if ref not in self.paths:
            names = set()
            for p in files_at(self.path, ref):
                names.add(p)
                names.add(os.path.basename(p))
                while "/" in p:
                    p = p.rsplit("/", 1)[0]
                    names.add(p + "/")
            self.paths[ref] = names
        return self.paths[ref]

    def has(self, ref, cite):
        """Does ref's tree hold the cited name? Our own guest code
        counts too: the handouts name its helpers (ask_gdb)."""
        if cite.kind in ("path", "file"):
            return fnmatch.filter(self.files_of(ref), cite.name) != [] \
                if "*" in cite.name else cite.name in self.files_of(ref)
        if cite.kind == "prefix":
            return any(w.startswith(cite.name) for w in self.base | self.words_of(ref))
        return cite.key in self.base or cite.key in self.words_of(ref) \
            or cite.key in self.ours


def unknown(all_cites, index):
    """The Cites that some tree of theirs lacks; a patch's message may
    name what its tree has before or after it."""
    bad = []
    for c in all_cites:
        ok = [index.has(ref, c) for ref in c.refs]
        if not (any(ok) if c.path.endswith(".patch") else all(ok)):
            bad.append(c)
    return bad


def checkpoint_refs(t):
    """checkpoint -> its branch, patch -> (parent commit, commit), for
    the trees of build/linux; the branches are made if missing."""
    refs = {}
    parent = UPSTREAM
    for cp in series.checkpoints():
        branch = t.prepare_branch(cp.number)
        refs[cp.number] = branch
        commits = _git(t.path, "rev-list", "--reverse", f"{parent}..{branch}").decode().split()
        patches = cp.patches()
        if len(commits) != len(patches):
            raise tree.TreeError(f"{branch} has {len(commits)} commits for "
                                 f"{len(patches)} patches")
        before = parent
        for patch, commit in zip(patches, commits):
            refs[patch] = (before, commit)
            before = commit
        parent = branch
    return refs


def run(t):
    """(number of names checked, the unknown ones) over build/linux."""
    head = t.git("rev-parse", "--abbrev-ref", "HEAD")
    try:
        refs = checkpoint_refs(t)
    finally:
        if t.git("rev-parse", "--abbrev-ref", "HEAD") != head:
            t.git("checkout", "-q", head)
    found = cites(refs)
    index = Index(t.path, os.path.join(t.build_dir, "namecheck"), refs[max(
        k for k in refs if isinstance(k, int))])
    return len(found), unknown(found, index)


def report(count, bad):
    """The lines make check prints: one per unknown name, then the total."""
    lines = [f"{c.where()}: {c.name} ({c.kind}) not in {', '.join(c.refs)}" for c in bad]
    return lines + [f"names checked: {count}, unknown: {len(bad)}"]


def check(session, tally):
    ui.step("the names the docs, handouts and commit messages cite (namecheck)")
    with tree.lock(session.build_dir):
        session.tree.ensure_clean()
        count, bad = run(session.tree)
    lines = report(count, bad)
    ui.block(lines[-1:] + lines[:-1][:40])
    tally.record(not bad and count > 0,
                 "docs: every cited name exists in the kernel the text speaks of",
                 lines[-1])
