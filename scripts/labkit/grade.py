"""The one grader: lab checks, gdb scripts and the gdb helpers' self-test.

Each normalises what varies between runs and nothing else (lab output:
pids, cpu numbers, timestamps; gdb output: addresses and gdb's own
chatter), compares exactly with what is expected, and shows a unified
diff when they differ.

labs/NN-slug/expected holds one section per check:

    ## check: ID
    lines the check prints

and, for a check whose behaviour checkpoint N changes ("replaced_at N"
in lab.sh), a second section "## check: ID@N": what it prints from
checkpoint N on (and on upstream 6.1).

labs/NN-slug/gdb.expected holds every line the lab's gdb script prints
once the guest runs (gdb_region), and gdb-scripts/selftest/expected one
"@@selftest COMMAND" section per command.
"""

import difflib
import os
import re

from . import kernels, series

# (pattern, replacement), applied to every line the guest printed.
NORMALISE = [
    # trace lines: "<comm>-1234 [000] d..1. 12.345678: ..." -> "<comm>-PID [CPU] d..1. TS: ..."
    (re.compile(r"-(\d+)(\s+\[)(\d{3})(\]\s)"), r"-PID\2CPU\4"),
    (re.compile(r"\b\d+\.\d{6}:"), "TS:"),
    # "pid 1234" / "pid=1234" in messages and filters
    (re.compile(r"\b(pid[= ])\d+\b"), r"\1PID"),
]

# What the guest prints for an "ours_only" check on upstream (lib.sh).
OURS_ONLY_SKIP = "skipped: upstream differs here on purpose"

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


def replaced_id(check):
    """The section of 'expected' that holds what a replaced-at-N check
    prints from checkpoint N on: "ID@N"."""
    return f"{check.id}@{check.replaced_at}"


def check_ids(expected):
    """The ids of the checks a lab's expected file has sections for,
    without the "ID@N" sections of replaced checks."""
    return [ident for ident in expected if "@" not in ident]


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
        return [] if marker is None else Recorded(path)
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip() for l in f]
    if marker is None:
        return [l for l in lines if l.strip() and not is_comment(l)]
    return Recorded(path, parse_sections(lines, marker))


class Recorded(dict):
    """A file's sections ({check id: lines}) and the file they came from,
    for the messages that say which file lacks a section."""

    def __init__(self, path, sections=()):
        super().__init__(sections)
        self.path = path

    @property
    def name(self):
        return os.path.relpath(self.path, series.ROOT)


def diff(expected, got):
    return list(difflib.unified_diff(expected, got, "expected", "got", lineterm="", n=2))


# --- the debug configuration's differences ------------------------------------
#
# labs/debug-differences: the lab checks whose output the debug
# configuration (scripts/debug.config, two vCPUs) changes on upstream 6.1
# itself, each with the reason and the output it gives there, as
# upstream's debug kernel printed it (normalised):
#
#   ## NN ID: REASON
#   lines the check prints on a debug kernel
#
# On a debug kernel a check passes when it matches 'expected', or when it
# is listed here and matches the recorded output; anything else fails.

DEBUG_DIFFERENCES = os.path.join(series.LABS, "debug-differences")
_DEBUG_SECTION = re.compile(r"^## (\d\d \S+: .+?)\s*$")


def parse_debug_differences(text):
    """{(lab, check id): (reason, [lines])}."""
    out = {}
    for head, lines in parse_sections(text.splitlines(), _DEBUG_SECTION).items():
        key, _sep, reason = head.partition(": ")
        lab, ident = key.split()
        out[(lab, ident)] = (reason, lines)
    return out


def load_debug_differences(path=DEBUG_DIFFERENCES):
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return parse_debug_differences(f.read())


def format_debug_differences(header, entries):
    """The text of labs/debug-differences: header, then {(lab, id):
    (reason, lines)} in lab and id order."""
    return header + "".join(f"\n## {lab} {ident}: {reason}\n" + "".join(l + "\n" for l in lines)
                            for (lab, ident), (reason, lines) in sorted(entries.items()))


def grade_on_debug(check, outcome, expected, kernel, lab_number, recorded):
    """A check's Outcome on a debug kernel where it must match (the lab's
    checkpoint or later, or upstream): as graded against 'expected', or,
    when that fails and labs/debug-differences lists the check
    (recorded: its (reason, lines) or None), as graded against the
    recorded debug output."""
    if outcome.ok or recorded is None:
        return outcome
    reason, lines = recorded
    again = grade_check(check, dict(expected, **{check.id: lines}), kernel, lab_number)
    if again.ok:
        again.note = f"as labs/debug-differences records for the debug configuration: {reason}"
        return again
    again.evidence = ([f"differs from 'expected' and from its labs/debug-differences record "
                       f"({reason}); against the record:"] + again.evidence)
    return again


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
    where = before.name if isinstance(before, Recorded) else f"labs/{check.lab}-*/{BEFORE}"
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


def want_on(check, expected, kernel):
    """What 'expected' holds for a check on 'kernel' (a kernels.KernelId):
    the "ID@N" section from a replaced-at-N check's checkpoint N on, else
    its own section; None when there is none."""
    if check.replaced_at is not None and kernel.has(check.replaced_at):
        return expected.get(replaced_id(check))
    return expected.get(check.id)


def grade_on_skeleton(check, expected, number, before):
    """Lab N's check on the skeleton of exercise N (checkpoint N with its
    holes left out, exercise.py). A check 'before' (skeleton.before) has
    a section for must fail as recorded there, a guard as much as a
    feature check: the holes take the mechanism away, and what a guard
    sets up with it fails too. Any other check must pass, as on
    checkpoint N. A write that fails is no setup problem here: on a
    skeleton, it is the missing mechanism."""
    recorded = before.get(check.id)
    own = kernels.KernelId.of(number)
    if recorded is None:
        return grade_check(check, expected, own, number)
    title = f"{check.lab} {check.title}"
    want = want_on(check, expected, own)
    if want is None:
        return Outcome(False, title, [f"labs/{check.lab}-*/expected has no section for "
                                      f"'{check.id}'"])
    ok_match, got = matches(check, want)
    if ok_match:
        return Outcome(False, title, [f"this check passes on the skeleton, which {before.name} "
                                      "says it fails on"])
    now = before_record(want, got)
    if not same(recorded, now):
        return Outcome(False, title, [f"it fails here, but not as {before.name} records:"]
                       + diff(recorded, now))
    return Outcome(True, title, note=f"fails on the skeleton as recorded, at: {now[-1]}")


def replaced(check, expected, title):
    """A replaced-at-N check on checkpoint N or later (or upstream): it
    must print its "ID@N" section, which must differ from the older
    behaviour's section (or the check could not tell them apart)."""
    key = replaced_id(check)
    want = expected.get(key)
    if want is None:
        return Outcome(False, title, [f"labs/{check.lab}-*/expected has no '## check: {key}': "
                                      f"what the check prints from checkpoint "
                                      f"{check.replaced_at} on"])
    if same(want, expected.get(check.id, [])):
        return Outcome(False, title, [f"'## check: {key}' is the same as '## check: {check.id}': "
                                      "the check cannot tell the two behaviours apart"])
    ok_match, got = matches(check, want)
    evidence = [] if ok_match else (([f"exit code {check.rc}"] if check.rc != 0 else [])
                                    + compare(want, got))
    return Outcome(ok_match, title, evidence,
                   note=f"changed from checkpoint {check.replaced_at} on, as {key} records")


class Outcome:
    def __init__(self, ok, title, evidence=None, note=""):
        self.ok, self.title, self.evidence, self.note = ok, title, evidence or [], note


def matches(check, want):
    got = normalise(check.output)
    return check.rc == 0 and same(want, got), got


def grade_check(check, expected, kernel, lab_number, before=None):
    """One check's verdict on a kernel (a kernels.KernelId).

    On the lab's own checkpoint and later ones (and upstream) the output
    must match. On the checkpoint before the lab's, a "check" must NOT
    match: that proves it detects the feature; with 'before' (the lab's
    'before' file), it must differ as recorded there, at a line about
    its feature (gate()). A "replaced-at-N" check must match 'expected'
    before checkpoint N, and from N on its "ID@N" section (replaced_id),
    which must differ. An "ours-only"
    check is where our kernels differ from upstream on purpose: upstream
    skips it, every checkpoint that runs it must match."""
    want = expected.get(check.id)
    title = f"{check.lab} {check.title}"
    if check.kind == "ours-only" and kernel.is_upstream:
        got = normalise(check.output)
        return Outcome(got == [OURS_ONLY_SKIP], title, got,
                       note="skipped on upstream, which differs on purpose")
    if check.replaced_at is not None and kernel.has(check.replaced_at):
        return replaced(check, expected, title)
    if want is None:
        return Outcome(False, title, [f"labs/{check.lab}-*/expected has no '## check: {check.id}'"])
    ok_match, got = matches(check, want)
    later = kernel.has(lab_number)
    must_match = True
    note = ""
    if not later and check.kind == "check":
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
    if before is not None and check.kind == "check" and kernel.is_just_before(lab_number):
        problems = gate(check, want, got, before)
        if problems:
            return Outcome(False, title, problems)
        note = f"fails before its checkpoint, as it must, at: {before_record(want, got)[-1]}"
    return Outcome(True, title, note=note)
