"""The one grader: lab checks, gdb scripts and the gdb helpers' self-test.

Each normalises what varies between runs and nothing else (lab output:
pids, cpu numbers, timestamps; gdb output: addresses and gdb's own
chatter), compares exactly with what is expected, and shows a unified
diff when they differ.

labs/NN-slug/expected holds one section per check:

    ## check: ID
    lines the check prints

labs/NN-slug/gdb.expected holds every line the lab's gdb script prints
once the guest runs (gdb_region), and gdb-scripts/selftest/expected one
"@@selftest COMMAND" section per command.
"""

import difflib
import os
import re

from . import series

# (pattern, replacement), applied to every line the guest printed.
NORMALISE = [
    # trace lines: "<comm>-1234 [000] d..1. 12.345678: ..." -> "<comm>-PID [CPU] d..1. TS: ..."
    (re.compile(r"-(\d+)(\s+\[)(\d{3})(\]\s)"), r"-PID\2CPU\4"),
    (re.compile(r"\b\d+\.\d{6}:"), "TS:"),
    # "pid 1234" / "pid=1234" in messages and filters
    (re.compile(r"\b(pid[= ])\d+\b"), r"\1PID"),
]

# What the guest prints for an "ours_only" check on upstream (lib.sh).
OURS_ONLY_SKIP = "skipped: upstream 6.1 differs here on purpose"

_SECTION = re.compile(r"^## check: (\S+)\s*$")
SELFTEST_SECTION = re.compile(r"^@@selftest (.+?)\s*$")


def normalise(lines):
    out = []
    for line in lines:
        for pattern, repl in NORMALISE:
            line = pattern.sub(repl, line)
        out.append(line.rstrip())
    while out and not out[-1]:
        out.pop()
    return out


def parse_sections(lines, marker=_SECTION):
    """{name: [lines]} of a text cut into sections by lines that match
    'marker' (its group 1 is the name); lines before the first section
    are not kept, trailing blank lines of a section are dropped."""
    sections, current = {}, None
    for line in lines:
        m = marker.match(line)
        if m:
            current = m.group(1)
            sections[current] = []
        elif current is not None:
            sections[current].append(line.rstrip())
    for body in sections.values():
        while body and not body[-1]:
            body.pop()
    return sections


def parse_expected(text):
    return parse_sections(text.splitlines())


def is_comment(line):
    """A comment of an expected-output file: "# ..." (gdb's "#0 frame" is not)."""
    return line == "#" or line.startswith("# ")


def load_expected(lab_dir, name="expected", marker=_SECTION):
    """A lab's expected output ('expected', 'before'), or another file cut
    into sections by 'marker' (comments only count before the first); with
    marker None, the file's lines but its comments and blank lines
    (gdb.expected). {} or [] when the file does not exist."""
    path = os.path.join(lab_dir, name)
    if not os.path.exists(path):
        return [] if marker is None else {}
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip() for l in f]
    if marker is None:
        return [l for l in lines if l.strip() and not is_comment(l)]
    return parse_sections(lines, marker)


def diff(expected, got):
    return list(difflib.unified_diff(expected, got, "expected", "got", lineterm="", n=2))


# --- gdb output ---------------------------------------------------------------

_ADDR = re.compile(r"0x[0-9a-f]{8,16}")
# A backtrace frame: "#1  0xADDR in func (args...) at file:line" -> "#1 func".
_FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+)(?: \(.*)?$")
# gdb's own chatter, which says nothing about the lab: breakpoints being
# set, the paused guest's first stop, a source line after a stop.
GDB_NOISE = re.compile(r"^((Temporary b|B)reakpoint \d+ at |0x[0-9a-f]+ in \?\? \(\)$|"
                       r"\d+\t|\[Inferior \d+ .*\]$)")
# The marker gdbrun puts before the lab's gdb script, and the stop that
# ends an unattended run: the guest's final sync.
GDB_BEGIN = "@@gdb lab-script"
GDB_END = re.compile(r"^Breakpoint \d+, .*ksys_sync")
# In gdb.expected, <N> stands for any number (a tick count, a size), <WORD>
# for any word (a function that happened to run first).
PLACEHOLDERS = {"<N>": r"\d+", "<WORD>": r"\S+"}
_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))


def normalise_gdb(lines):
    """gdb output as compared: addresses read ADDR, a backtrace frame
    reads "#N function" (frame 0, where gdb stopped: deeper frames vary
    with what the guest happened to run, and are left out), gdb's own
    chatter and blank lines go."""
    out = []
    for line in lines:
        line = line.rstrip()
        if not line.strip() or GDB_NOISE.match(line):
            continue
        m = _FRAME.match(line)
        if m:
            if m.group(1) == "0":
                out.append(f"#0 {m.group(2)}")
            continue
        out.append(_ADDR.sub("ADDR", line.replace(series.ROOT + os.sep, "")))
    return out


def gdb_region(lines):
    """What a lab's gdb script printed while the guest ran: the normalised
    lines after GDB_BEGIN (or from the start, without it) up to the stop
    at the guest's final sync (or the end). Everything in between counts:
    a Python traceback among the expected lines is a difference."""
    lines = [l.rstrip() for l in lines]
    if GDB_BEGIN in lines:
        lines = lines[lines.index(GDB_BEGIN) + 1:]
    ends = [i for i, l in enumerate(lines) if GDB_END.match(l)]
    end = ends[-1] if ends else len(lines)
    return normalise_gdb(lines[:end])


def gdb_reached_end(lines):
    return any(GDB_END.match(l.rstrip()) for l in lines)


def _line_matches(want, got):
    if want is None or got is None:
        return want == got
    if "<" not in want or not _PLACEHOLDER.search(want):
        return want == got
    pattern, last = "", 0
    for m in _PLACEHOLDER.finditer(want):
        pattern += re.escape(want[last:m.start()]) + PLACEHOLDERS[m.group(0)]
        last = m.end()
    return re.fullmatch(pattern + re.escape(want[last:]), got) is not None


def same(want, got):
    """Line by line equality, where want's placeholders match what they stand for."""
    return len(want) == len(got) and all(_line_matches(w, g) for w, g in zip(want, got))


def compare(want, got):
    """[] when got is want (see same()), else a unified diff (in which a
    line that matches its placeholder line reads as that line)."""
    if same(want, got):
        return []
    shown = [w if i < len(want) and _line_matches(w, g) else g
             for i, (w, g) in enumerate(zip(want + [None] * len(got), got))]
    return diff(want, shown) or ["(same output)"]


def first_difference(want, got):
    """The first line where got differs from want, as "-expected" and
    "+got" (either None when one side has run out); None when same()."""
    for i in range(max(len(want), len(got))):
        w = want[i] if i < len(want) else None
        g = got[i] if i < len(got) else None
        if w is None or g is None or not _line_matches(w, g):
            return i, w, g
    return None


# --- the previous-checkpoint gate -----------------------------------------------
#
# labs/NN-slug/before records, for each feature check ("check" kind), what
# it prints on checkpoint N-1: its output up to and including the first
# line that differs from 'expected' (same "## check: ID" sections). On
# N-1 the check must fail exactly so, and that first difference must be a
# line about its feature, not a setup write that fails because the
# command does not exist yet.

BEFORE = "before"
OUTPUT_ENDS = "(the output ends here)"
_WRITE = re.compile(r"^('.*' >>? \S+): (.*)$")


def before_record(want, got):
    """got up to its first difference with want (see first_difference)."""
    found = first_difference(want, got)
    if found is None:
        return list(got)
    i, _w, g = found
    return list(got[:i]) + [g if g is not None else OUTPUT_ENDS]


def setup_difference(want, got):
    """Is the first difference of got from want a setup line: a write
    lib.sh's setup() reports as failed, or a write ("'X' >> FILE: ...")
    that succeeds on the checkpoint and fails before it?"""
    found = first_difference(want, got)
    if found is None:
        return False
    _i, w, g = found
    if g is not None and g.startswith("setup: "):
        return True
    mw, mg = _WRITE.match(w or ""), _WRITE.match(g or "")
    return bool(mw and mg and mw.group(1) == mg.group(1) and mw.group(2) == "ok")


def gate(check, want, got, before):
    """Problems of a feature check run on the checkpoint before its own:
    [] when it differs from 'expected' as labs/NN-*/before records, at a
    line about its feature."""
    now = before_record(want, got)
    recorded = before.get(check.id)
    where = f"labs/{check.lab}-*/{BEFORE}"
    if recorded is None:
        return ([f"{where} has no '## check: {check.id}': what it prints up to its first "
                 "difference is:"] + ["    " + l for l in now])
    problems = []
    if not same(recorded, now):
        problems += [f"it fails here, but not as {where} records:"] + diff(recorded, now)
    if setup_difference(want, got):
        problems.append(f"its first difference is a setup line, not one about its feature: "
                        f"{now[-1]}")
    return problems


class Outcome:
    def __init__(self, ok, title, evidence=None, note=""):
        self.ok, self.title, self.evidence, self.note = ok, title, evidence or [], note


def matches(check, want):
    got = normalise(check.output)
    return check.rc == 0 and same(want, got), got


def grade_check(check, expected, kernel, lab_number, before=None):
    """One check's verdict on a kernel ('upstream' or a checkpoint number).

    On the lab's own checkpoint and later ones (and upstream) the output
    must match. On the checkpoint before the lab's, a "check" must NOT
    match: that proves it detects the feature; with 'before' (the lab's
    'before' file), it must differ as recorded there, at a line about
    its feature (gate()). A "replaced-at-N" check
    must match before checkpoint N and differ from N on. An "ours-only"
    check is where our kernels differ from upstream on purpose: upstream
    skips it, every checkpoint that runs it must match."""
    want = expected.get(check.id)
    title = f"{check.lab} {check.title}"
    if check.kind == "ours-only" and kernel == "upstream":
        got = normalise(check.output)
        return Outcome(got == [OURS_ONLY_SKIP], title, got,
                       note="skipped on upstream, which differs on purpose")
    if want is None:
        return Outcome(False, title, [f"labs/{check.lab}-*/expected has no '## check: {check.id}'"])
    ok_match, got = matches(check, want)
    later = series.has_checkpoint(kernel, lab_number)
    must_match = True
    note = ""
    if check.replaced_at is not None and series.has_checkpoint(kernel, check.replaced_at):
        must_match, note = False, f"changed from checkpoint {check.replaced_at} on, as expected"
    elif not later and check.kind == "check":
        must_match, note = False, "fails before its checkpoint, as it must"
    elif check.kind == "guard":
        note = "a guard: it catches regressions, not a missing feature"
    if must_match:
        evidence = [] if ok_match else (
            ([f"exit code {check.rc}"] if check.rc != 0 else [])
            + compare(want, got))
        return Outcome(ok_match, title, evidence, note=note)
    if ok_match:
        return Outcome(False, title, ["this check passes on a kernel that should not have its feature:"]
                       + ["    " + l for l in got[:20]])
    if before is not None and check.kind == "check" and kernel == lab_number - 1:
        problems = gate(check, want, got, before)
        if problems:
            return Outcome(False, title, problems)
        note = f"fails before its checkpoint, as it must, at: {before_record(want, got)[-1]}"
    return Outcome(True, title, note=note)
