"""The console examples of the documentation chapters, run in the guest.

An example is a listing block of doc/ftrace.adoc, doc/events.adoc or
doc/internals.adoc whose first line is a command at the root prompt:

    ----
    # echo schedule:traceoff >> set_ftrace_filter
    # cat set_ftrace_filter
    #### all functions enabled ####
    schedule:traceoff:unlimited
    ----

Each "# COMMAND" line is run in the guest's busybox sh, in
/sys/kernel/tracing, from a clean tracing state (lib.sh's reset_tracing)
at the start of each block; the lines under it, up to the next command,
are its output, compared after grade.normalise. A line is a command only
when its first word is a shell command (COMMANDS): "# Available
triggers:" and "#### all functions enabled ####" are output.

Which kernels run an example follows from the AsciiDoc conditionals around
it, the same ones that "make docs N" evaluates:

    ifeval::[{checkpoint} >= 3]     checkpoint 3 and later, and upstream
    ifeval::[{checkpoint} < 1]      checkpoint 0 only (upstream is 'last')
    endif::[]

Upstream 6.1 counts as the last checkpoint. An example whose output cannot
be the same twice says so on the line before the block:

    // example: nondeterministic

It still runs, and each command's exit status must be what the block
shows: non-zero where the lines under it are an error ("write error",
"No such file", ...), zero otherwise.

Guest protocol (initramfs/docexamples.sh), one line each:
    @@ftlab ex-begin ID | ex-cmd ID N | ex-rc ID N RC | ex-end ID
"""

import difflib
import os
import re

from . import grade, kernels, series, ui

CHAPTERS = ("doc/ftrace.adoc", "doc/events.adoc", "doc/internals.adoc")
PLAN_ITEM = "docexamples"

# The first word of a "# ..." line that makes it a command.
COMMANDS = {"echo", "cat", "grep", "mkdir", "rmdir", "ls", "sleep", "wc", "head", "tail",
            "sed", "sort", "sync", "uname", "true", "ln", "cut", "kill"}

NONDET_MARK = re.compile(r"^//\s*example:\s*nondeterministic\s*$")
ERROR_LINE = re.compile(r"write error|No such file|can't|Invalid argument|Device or resource busy"
                        r"|File exists|Permission denied")
_IFEVAL = re.compile(r"^ifeval::\[\{checkpoint\}\s*(>=|<)\s*(\d+)\]\s*$")
_IFOTHER = re.compile(r"^if(n?def|eval)::")
_ENDIF = re.compile(r"^endif::")
_LISTING = re.compile(r"^-{4,}\s*$")
_CMD = re.compile(r"^# (\S+)(.*)$")
_GUEST = re.compile(r"^@@ftlab (ex-begin|ex-cmd|ex-rc|ex-end) (\S+)\s*(.*)$")


class ExampleError(Exception):
    """A chapter's examples cannot be read (an unclosed block or conditional)."""


class Command:
    def __init__(self, line, text):
        self.line, self.text, self.output = line, text, []

    def expects_failure(self):
        return any(ERROR_LINE.search(l) for l in self.output)


class Example:
    def __init__(self, doc, line, conditions, nondet):
        self.doc, self.line = doc, line
        self.conditions = list(conditions)    # [(">=" or "<", N)]
        self.nondet = nondet
        self.commands = []

    @property
    def id(self):
        return f"{os.path.splitext(os.path.basename(self.doc))[0]}-{self.line}"

    @property
    def where(self):
        return f"{self.doc}:{self.line}"

    def holds_at(self, number):
        """Does the example apply at checkpoint 'number'?"""
        for op, n in self.conditions:
            if (op == ">=" and not number >= n) or (op == "<" and not number < n):
                return False
        return True

    def runs_on(self, kernel, last):
        """Does 'kernel' (a kernels.KernelId) run it? Upstream is the last checkpoint."""
        return self.holds_at(last if kernel.is_upstream else kernel.checkpoint)

    def script(self):
        """The guest's shell text: each command between protocol markers."""
        out = []
        for i, cmd in enumerate(self.commands, 1):
            out += [f"ftlab ex-cmd {self.id} {i}", cmd.text, f"ftlab ex-rc {self.id} {i} $?"]
        return "\n".join(out) + "\n"


def is_command(line):
    m = _CMD.match(line)
    return bool(m) and m.group(1) in COMMANDS


def parse(doc, text):
    """The examples of one chapter: doc is its name as shown ("doc/ftrace.adoc")."""
    examples, conditions = [], []
    lines = text.splitlines()
    i, nondet_at = 0, None
    while i < len(lines):
        line = lines[i]
        if NONDET_MARK.match(line):
            nondet_at = i
        m = _IFEVAL.match(line)
        if m:
            conditions.append((m.group(1), int(m.group(2))))
        elif line.startswith("ifeval::") or (_IFOTHER.match(line) and line.rstrip().endswith("[]")):
            conditions.append(None)     # another condition: closed by its endif, no checkpoint
        elif _ENDIF.match(line):
            if not conditions:
                raise ExampleError(f"{doc}:{i + 1}: endif without if")
            conditions.pop()
        elif _LISTING.match(line):
            end = i + 1
            while end < len(lines) and lines[end].rstrip() != line.rstrip():
                end += 1
            if end == len(lines):
                raise ExampleError(f"{doc}:{i + 1}: listing block never closed")
            body = lines[i + 1:end]
            if body and is_command(body[0]):
                for n, l in enumerate(body):
                    if _IFEVAL.match(l) or _IFOTHER.match(l) or _ENDIF.match(l):
                        raise ExampleError(f"{doc}:{i + 2 + n}: a conditional inside an example; "
                                           "make two examples, each in its own conditional")
                nondet = nondet_at is not None and all(
                    not l.strip() or l.startswith("[") for l in lines[nondet_at + 1:i])
                ex = Example(doc, i + 2, [c for c in conditions if c], nondet)
                for n, l in enumerate(body):
                    if is_command(l):
                        ex.commands.append(Command(i + 2 + n, l[2:]))
                    else:
                        ex.commands[-1].output.append(l.rstrip())
                examples.append(ex)
            nondet_at = None
            i = end
        i += 1
    if conditions:
        raise ExampleError(f"{doc}: {len(conditions)} conditional(s) never closed")
    return examples


def load(root=series.ROOT):
    examples = []
    for doc in CHAPTERS:
        path = os.path.join(root, doc)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                examples += parse(doc, f.read())
    return examples


def guest_files(examples, last):
    """{path in the initramfs: text}: the list the guest reads ("ID KERNEL,...")
    and one script per example."""
    every = kernels.KernelId.every()
    files, listing = {}, []
    for ex in examples:
        names = [k.name for k in every if ex.runs_on(k, last)]
        listing.append(f"{ex.id} {','.join(names) or '-'}")
        files[f"lab/docexamples/{ex.id}.sh"] = ex.script()
    files["lab/docexamples/list"] = "\n".join(listing) + "\n"
    return files


class Ran:
    """What the guest printed for one example: per command (lines, rc)."""

    def __init__(self):
        self.commands = {}      # N -> [lines, rc]
        self.finished = False


def parse_guest(lines):
    """{example id: Ran} from the console lines."""
    ran, current, cmd = {}, None, None
    for line in lines:
        m = _GUEST.match(line.strip())
        if not m:
            if current is not None and cmd is not None:
                current.commands[cmd][0].append(line)
            continue
        word, ident, rest = m.groups()
        if word == "ex-begin":
            current, cmd = ran.setdefault(ident, Ran()), None
        elif current is None:
            continue
        elif word == "ex-cmd":
            cmd = int(rest.split()[0])
            current.commands[cmd] = [[], None]
        elif word == "ex-rc":
            n, rc = rest.split()[:2]
            if int(n) in current.commands:
                current.commands[int(n)][1] = int(rc)
            cmd = None
        elif word == "ex-end":
            current.finished = True
            current, cmd = None, None
    return ran


def compare(ex, ran, kernel_label):
    """[] when the example matched, else the evidence: a diff per command,
    its header naming the document and line."""
    if ran is None or not ran.finished:
        return [f"{ex.where}: the example did not run to its end on {kernel_label}"]
    evidence = []
    for n, cmd in enumerate(ex.commands, 1):
        lines, rc = ran.commands.get(n, ([], None))
        if rc is None:
            evidence.append(f"{ex.doc}:{cmd.line}: '# {cmd.text}' did not run")
            continue
        if ex.nondet:
            want_fail = cmd.expects_failure()
            if (rc != 0) != want_fail:
                evidence.append(f"{ex.doc}:{cmd.line}: '# {cmd.text}' exited {rc}, expected "
                                + ("a failure" if want_fail else "0")
                                + " (a nondeterministic example: only exit statuses count)")
            continue
        want, got = grade.normalise(cmd.output), grade.normalise(lines)
        if want != got:
            evidence += list(difflib.unified_diff(
                want, got, f"{ex.doc}:{cmd.line} '# {cmd.text}' (the document)",
                f"{kernel_label} (the guest)", lineterm="", n=2))
    return evidence


def grade_kernel(examples, lines, kernel, tally, log=None):
    """Grade every example 'kernel' (a kernels.KernelId) runs; returns
    (ran, matched, expected)."""
    label = kernel.name
    last = series.last_checkpoint()
    mine = [ex for ex in examples if ex.runs_on(kernel, last)]
    guest = parse_guest(lines)
    ran = matched = 0
    for ex in mine:
        got = guest.get(ex.id)
        if got is not None and got.finished:
            ran += 1
        evidence = compare(ex, got, label)
        if not evidence:
            matched += 1
            continue
        tally.record(False, f"doc example {ex.where} [{label}]")
        ui.block(evidence[:40] + ([f"console log: {os.path.relpath(log)}"] if log else []))
    tally.record(ran == len(mine) and matched == len(mine),
                 f"doc examples [{label}]: {ran} of {len(mine)} ran, {matched} matched",
                 f"({sum(1 for e in mine if e.nondet)} nondeterministic: exit status only)")
    return ran, matched, len(mine)
