"""Grade lab checks: normalise what varies between runs (pids, cpu
numbers, timestamps) and nothing else, compare with the lab's expected
output, and show a diff when they differ.

labs/NN-slug/expected holds one section per check:

    ## check: ID
    lines the check prints
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


def normalise(lines):
    out = []
    for line in lines:
        for pattern, repl in NORMALISE:
            line = pattern.sub(repl, line)
        out.append(line.rstrip())
    while out and not out[-1]:
        out.pop()
    return out


def parse_expected(text):
    sections, current = {}, None
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            current = m.group(1)
            sections[current] = []
        elif current is not None:
            sections[current].append(line.rstrip())
    for lines in sections.values():
        while lines and not lines[-1]:
            lines.pop()
    return sections


def load_expected(lab_dir):
    path = os.path.join(lab_dir, "expected")
    with open(path, encoding="utf-8") as f:
        return parse_expected(f.read())


def diff(expected, got):
    return list(difflib.unified_diff(expected, got, "expected", "got", lineterm="", n=2))


class Outcome:
    def __init__(self, ok, title, evidence=None, note=""):
        self.ok, self.title, self.evidence, self.note = ok, title, evidence or [], note


def matches(check, expected_lines):
    got = normalise(check.output)
    return check.rc == 0 and got == expected_lines, got


def grade_check(check, expected, kernel, lab_number):
    """One check's verdict on a kernel ('upstream' or a checkpoint number).

    On the lab's own checkpoint and later ones (and upstream) the output
    must match. On the checkpoint before the lab's, a "check" must NOT
    match: that proves it detects the feature. A "replaced-at-N" check
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
            + (diff(want, got) or ["(same output)"]))
        return Outcome(ok_match, title, evidence, note=note)
    if ok_match:
        return Outcome(False, title, ["this check passes on a kernel that should not have its feature:"]
                       + ["    " + l for l in got[:20]])
    return Outcome(True, title, note=note)
