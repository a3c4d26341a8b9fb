"""Conformance: a checkpoint against unmodified upstream (the base), as a user of tracefs
sees them.

Two checks, each comparing a checkpoint's kernel with upstream (the base) built
with the same configuration:

  * the differential corpus (labs/conformance/corpus): a few hundred
    writes to tracefs, valid, malformed and at the edges. The guest
    (labs/conformance/run.sh, plan item "conformance") runs every case
    from a clean state and prints the result of each write and the files
    it changed. A case passes when its output equals upstream's. On the
    checkpoints before the last one, some cases differ because their
    feature comes later: labs/conformance/expected-differences lists them
    per checkpoint, so that a regression shows as an unexpected
    difference, and a fixed case as one to drop from the record.
  * the kernel's whole ftracetest suite (plan item "ftracetest-all",
    labs/conformance/ftracetest-all.sh; it replaces the matrix list's run
    in that boot, as it runs those tests too): every test that passes on
    6.1 must pass on the last checkpoint.

make check adds PLAN_ITEM (and, on upstream and the last checkpoint,
FTALL_ITEM) to the one boot it makes of each kernel, and grades that boot
with grade_reference (upstream), grade_checkpoint and grade_ftall.
"""

import difflib
import json
import os
import re

from . import grade, kernels, series, ui

CONF_DIR = os.path.join(series.LABS, "conformance")
CORPUS = os.path.join(CONF_DIR, "corpus")
EXPECTED = os.path.join(CONF_DIR, "expected-differences")

PLAN_ITEM = "conformance"
FTALL_ITEM = "ftracetest-all"

FLAGS = {"-", "warns"}
MAX_DIFFS = 15      # unexpected differences shown with their diff, per kernel
STATE_CASES = ("state-initial", "state-final")
# A "warns" case's "!!" write, not performed on upstream (run.sh), and the
# errno 6.1 returns for it: unregister_ftrace_function_probe_func() returns
# -EINVAL right after its WARN_ON(not), before it changes anything.
SKIPPED = ": skipped on upstream (it WARNs)"
UPSTREAM_ERRNO = "Invalid argument"

_MARK = re.compile(r"^@@ftlab (conf-begin|conf-end|conf-summary)\s*(.*)$")
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")


# --- the corpus --------------------------------------------------------------

class Case:
    def __init__(self, ident, flags, steps):
        self.id, self.flags, self.steps = ident, flags, steps

    @property
    def warns(self):
        """Unmodified 6.1 WARNs on this case (and returns its errno)."""
        return "warns" in self.flags


def parse_corpus(text):
    """[Case] from the corpus text, in order. Raises ValueError on a line
    that is not "ID FLAGS STEP [ ;; STEP ]...", an unknown flag or a
    duplicate id."""
    cases, seen = [], set()
    for n, line in series.data_lines(text):
        parts = line.split(None, 2)
        if len(parts) < 3 or not _ID_RE.match(parts[0]):
            raise ValueError(f"corpus:{n}: want 'ID FLAGS STEP [ ;; STEP ]...': {line}")
        ident, flags, steps = parts
        flag_set = set(flags.split(","))
        if not flag_set <= FLAGS:
            raise ValueError(f"corpus:{n}: unknown flag in '{flags}'")
        if ident in seen or ident in STATE_CASES:
            raise ValueError(f"corpus:{n}: case id '{ident}' is used twice")
        seen.add(ident)
        cases.append(Case(ident, flag_set - {"-"}, steps.split(" ;; ")))
    return cases


def load_corpus(path=CORPUS):
    with open(path, encoding="utf-8") as f:
        return parse_corpus(f.read())


# --- what the guest printed --------------------------------------------------

class CorpusRun:
    """The corpus as one kernel ran it: each case's output lines."""

    def __init__(self):
        self.cases = {}         # id -> [lines], in the order they ran
        self.unfinished = None  # a case that began and never ended
        self.summary = None     # number of cases the guest counted


def parse_guest(lines):
    result = CorpusRun()
    current, out = None, []
    for line in lines:
        m = _MARK.match(line.strip())
        if not m:
            if current is not None:
                out.append(line)
            continue
        word, arg = m.group(1), m.group(2).strip()
        if word == "conf-begin":
            if current is not None:
                result.unfinished = current
            current, out = arg, []
        elif word == "conf-end" and current is not None:
            result.cases[current] = out
            current = None
        elif word == "conf-summary":
            result.summary = int(arg) if arg.isdigit() else None
    if current is not None:
        result.unfinished = current
    return result


# Lines of these files list functions in the order of a hash table, whose
# buckets follow the functions' addresses: any code change reorders them.
_HASH_ORDERED = re.compile(r"^-- (\S*/)?set_ftrace_(filter|notrace):$")
_ADDRESS = re.compile(r"\b(0x)?ffff[0-9a-f]{12}\b")


def _run_key(line):
    """Lines of one probe (same command after the function name) or plain
    function names form one run; runs keep their order, lines inside a run
    are sorted."""
    return line.split(":", 1)[1] if ":" in line else None


def _sort_runs(lines):
    out, run, key = [], [], object()
    for line in lines:
        k = _run_key(line)
        if run and k != key:
            out += sorted(run)
            run = []
        run.append(line)
        key = k
    return out + sorted(run)


_LISTED = re.compile(r"^(#.*|[^ ]+)$")


def normalise(lines):
    """What varies from boot to boot or kernel to kernel without a user
    being able to tell: pids, cpu numbers, timestamps (grade.NORMALISE),
    kernel addresses, and the order of functions inside a hash. Trailing
    spaces stay: they are part of what a file shows."""
    out, section = [], None
    for line in lines:
        for pattern, repl in grade.NORMALISE:
            line = pattern.sub(repl, line)
        line = _ADDRESS.sub("ADDR", line)
        # A listing of set_ftrace_filter/notrace is its header's following
        # lines that have no space (functions, probes) or start with "#";
        # the guest's own lines ("hit", "tracing_on: 1", ...) end it.
        if section is not None and _LISTED.match(line) and line != "hit":
            section.append(line)
            continue
        if section is not None:
            out += _sort_runs(section)
            section = None
        out.append(line)
        if _HASH_ORDERED.match(line):
            section = []
    if section is not None:
        out += _sort_runs(section)
    return out


def with_upstream_errno(lines):
    """Upstream's output of a "warns" case, with 6.1's errno in place of
    each write the guest skipped."""
    return [l[:-len(SKIPPED)] + ": " + UPSTREAM_ERRNO if l.endswith(SKIPPED) else l
            for l in lines]


class Difference:
    """How a case's output on a checkpoint differs from upstream's: the
    diff, and 'first', the checkpoint's first line that differs (what
    expected-differences records; grade.OUTPUT_ENDS when its output
    ends first, None when the case did not run)."""

    def __init__(self, ident, diff, note="", first=None):
        self.id, self.diff, self.note, self.first = ident, diff, note, first


def case_difference(case, reference, got):
    """None if the checkpoint's output (got) is what upstream printed
    (reference), else a Difference with a unified diff. A "warns" case's
    skipped writes count as 6.1's errno (with_upstream_errno)."""
    if got is None:
        return Difference(case.id, [], "did not run")
    if case.warns:
        reference = with_upstream_errno(reference)
    want, have = normalise(reference), normalise(got)
    if want == have:
        return None
    diff = list(difflib.unified_diff(want, have, f"upstream {kernels.base_release()}", "checkpoint", lineterm="", n=3))
    return Difference(case.id, diff, first=grade.before_record(want, have)[-1])


def compare(corpus, reference, got):
    """{id: Difference} for every case of the corpus whose output on the
    checkpoint differs from upstream's."""
    out = {}
    for case in corpus:
        ref = reference.cases.get(case.id)
        if ref is None:
            continue        # the reference is checked on its own
        d = case_difference(case, ref, got.cases.get(case.id))
        if d is not None:
            out[case.id] = d
    return out


def same_output(corpus, run_a, run_b):
    """The ids of the cases whose normalised output differs between two
    runs of the corpus on the same kernel (a determinism check)."""
    ids = [c.id for c in corpus] + list(STATE_CASES)
    return [i for i in ids
            if normalise(run_a.cases.get(i, ["(did not run)"]))
            != normalise(run_b.cases.get(i, ["(did not run)"]))]


def reference_problems(corpus, reference):
    """What makes upstream's run unusable as the reference, in words."""
    problems = []
    missing = [c.id for c in corpus if c.id not in reference.cases]
    if missing:
        problems.append(f"{len(missing)} case(s) did not run on {kernels.base_release()}: {' '.join(missing[:10])}")
    for case in corpus:
        lines = reference.cases.get(case.id)
        if lines is None:
            continue
        skipped = any(l.endswith(SKIPPED) for l in lines)
        if case.warns and not skipped:
            problems.append(f"{case.id}: flagged 'warns' but has no '!!' write to skip")
        if skipped and not case.warns:
            problems.append(f"{case.id}: a write was skipped, but the case is not 'warns'")
    return problems


def state_problems(run):
    """The state before the first case and after the last must be the same:
    else some case left probes, triggers, soft mode ... behind."""
    first, last = (run.cases.get(k) for k in STATE_CASES)
    if first is None or last is None:
        return ["the guest did not print its state before and after the corpus"]
    first, last = normalise(first), normalise(last)
    if first == last:
        return []
    return ["the corpus left state behind (before the first case vs after the last):"] + \
        list(difflib.unified_diff(first, last, "before", "after", lineterm="", n=1))


# --- the record of expected differences -----------------------------------------
#
# labs/conformance/expected-differences: a section per kernel, "## cpN:
# COUNT ...", then one line per case that differs from 6.1 there: its id
# and the checkpoint's first line that differs from upstream's output
# (normalised; as the labs' 'before' files record it), so that a case
# that starts to differ for another reason fails. "#" lines group the
# cases by why they differ. A line with spaces at either end, an empty
# one, or one that starts with a double quote is written as a JSON
# string, so that nothing about it is lost.

_SECTION = re.compile(r"^## (upstream|cp\d+)\s*(?::\s*(\d+)\b.*)?$")
_GROUP_COUNT = re.compile(r"\s*\(\d+\)$")


def _encode(line):
    if line and line == line.strip() and not line.startswith('"'):
        return line
    return json.dumps(line)


def _decode(text):
    return json.loads(text) if text.startswith('"') else text


def parse_record(text):
    """{tag: [(group comment or "", {id: first line})]} from
    expected-differences. A line that is not "ID FIRST-LINE" and a
    section whose count does not match its cases are errors (a hand edit
    gone wrong)."""
    sections, counts, current = {}, {}, None
    for n, line in enumerate(text.splitlines(), 1):
        m = _SECTION.match(line.strip())
        if m:
            current = m.group(1)
            if current in sections:
                raise ValueError(f"expected-differences:{n}: {current} twice")
            sections[current] = [("", {})]
            counts[current] = int(m.group(2)) if m.group(2) else None
            continue
        if not line.strip() or (line.startswith("#") and current is None):
            continue
        if current is None:
            raise ValueError(f"expected-differences:{n}: cases before any '## cpN' line")
        if line.startswith("#"):
            sections[current].append((line[1:].strip(), {}))
            continue
        ident, sep, first = line.partition(" ")
        if not sep or not _ID_RE.match(ident):
            raise ValueError(f"expected-differences:{n}: want 'ID FIRST-LINE': {line}")
        sections[current][-1][1][ident] = _decode(first)
    for tag, groups in sections.items():
        listed = sum(len(cases) for _g, cases in groups)
        if counts[tag] is not None and counts[tag] != listed:
            raise ValueError(f"expected-differences: {tag} says {counts[tag]} cases, "
                             f"lists {listed}")
    return sections


def parse_expected(text):
    """{tag: {id: the checkpoint's first differing line}}."""
    return {tag: {ident: first for _g, cases in groups for ident, first in cases.items()}
            for tag, groups in parse_record(text).items()}


def _load(path, parse):
    """parse(the text of path), or {} when there is no such file."""
    try:
        with open(path, encoding="utf-8") as f:
            return parse(f.read())
    except FileNotFoundError:
        return {}


def load_expected(path=EXPECTED):
    return _load(path, parse_expected)


def format_section(tag, firsts, groups=()):
    """A section of expected-differences from {id: first differing line}
    (Difference.first), the cases in the groups of an older record
    ([(comment, ids)]) where they were, the others last."""
    lines, placed = [], set()
    for comment, ids in list(groups) + [("differences not in the record before: say why", firsts)]:
        members = sorted(i for i in ids if firsts.get(i) is not None and i not in placed)
        if not members:
            continue
        if comment:
            lines.append(f"# {_GROUP_COUNT.sub('', comment)} ({len(members)})")
        lines += [f"{i} {_encode(firsts[i])}" for i in members]
        placed.update(members)
    return [f"## {tag}: {len(placed)} case(s) differ from {kernels.base_release()}"] + lines


def record_text(old_text, measured):
    """expected-differences with the sections of the kernels measured
    ({tag: {id: Difference}}) written anew, keeping each case in its
    group; the header and the other sections stay."""
    header = old_text.split("\n## ", 1)[0].rstrip("\n") + "\n"
    old = parse_record(old_text)
    tags = sorted(set(old) | set(measured), key=lambda t: kernels.KernelId.parse(t).rank())
    out = [header]
    for tag in tags:
        if tag in measured:
            firsts = {i: d.first for i, d in measured[tag].items()}
            groups = [(c, list(cases)) for c, cases in old.get(tag, [])]
            if firsts:
                out.append("\n".join(format_section(tag, firsts, groups)) + "\n")
            continue
        groups = old[tag]
        firsts = {i: f for _c, cases in groups for i, f in cases.items()}
        out.append("\n".join(format_section(tag, firsts, [(c, list(cases)) for c, cases in groups]))
                   + "\n")
    return "\n".join(out)


class Verdict:
    """A checkpoint's corpus run graded against the reference and the
    record: a case that differs must be recorded, with the same first
    differing line (changed: [(id, recorded, now)]); a recorded case must
    still differ."""

    def __init__(self, tag, total, differences, expected):
        self.tag = tag
        self.total = total
        self.differences = differences                  # {id: Difference}
        self.expected = dict(expected)                  # {id: first differing line}
        differing = set(differences)
        self.unexpected = sorted(differing - set(self.expected))
        self.fixed = sorted(set(self.expected) - differing)
        self.changed = [(i, self.expected[i], differences[i].first)
                        for i in sorted(differing & set(self.expected))
                        if differences[i].first != self.expected[i]]
        self.explained = sorted(differing & set(self.expected))

    @property
    def ok(self):
        return not self.unexpected and not self.fixed and not self.changed

    @property
    def identical(self):
        return self.total - len(self.differences)


def judge(tag, corpus, reference, got, record):
    return Verdict(tag, len(corpus), compare(corpus, reference, got), record.get(tag, {}))


def report(verdict, tally, log=None):
    """One FAIL per unexpected difference (with its diff), one per case
    that differs at another first line than recorded (naming both), one
    per case the record still lists though it now matches, an
    informational line for the recorded differences, and the summary
    line."""
    tag = verdict.tag
    for n, ident in enumerate(verdict.unexpected):
        d = verdict.differences[ident]
        tally.record(False, f"conformance [{tag}] {ident}",
                     f"({d.note or 'differs from upstream ' + kernels.base_release()})")
        if n < MAX_DIFFS:
            ui.block(d.diff[:40] + (["..."] if len(d.diff) > 40 else []))
        elif n == MAX_DIFFS:
            ui.block([f"(diffs of the {len(verdict.unexpected) - MAX_DIFFS} other cases left out)"])
    for ident, recorded, now in verdict.changed:
        tally.record(False, f"conformance [{tag}] {ident}",
                     f"(differs from {kernels.base_release()} at another first line than recorded)")
        ui.block([f"recorded first difference: {recorded}", f"now:                       {now}"]
                 + verdict.differences[ident].diff[:40])
    for ident in verdict.fixed:
        tally.record(False, f"conformance [{tag}] {ident}",
                     f"(now identical to {kernels.base_release()}: remove it from the {tag} section of "
                     "labs/conformance/expected-differences)")
    if verdict.explained:
        ui.info(f"conformance [{tag}]: {len(verdict.explained)} difference(s) recorded as "
                "expected (labs/conformance/expected-differences says why)")
    tally.record(verdict.ok, f"conformance [{tag}]: {verdict.identical} cases identical "
                 f"to upstream, {len(verdict.differences)} differ",
                 f"({len(verdict.unexpected)} unexpected, {len(verdict.changed)} changed, "
                 f"{len(verdict.fixed)} fixed)" if not verdict.ok else "")
    if not verdict.ok and log:
        upstream_log = os.path.join(os.path.dirname(log), "check-upstream.log")
        ui.block([f"console log: {os.path.relpath(log)}", "to record what this run measured: "
                  f"scripts/record-before.py --conformance {os.path.relpath(upstream_log)} "
                  f"{os.path.relpath(log)}"])


# --- grading a boot --------------------------------------------------------------

def check_run(corpus, result, run, tally, name):
    """What holds on any kernel: every case ran, none was cut short, the
    state after the last case is the state before the first."""
    missing = [c.id for c in corpus if c.id not in result.cases]
    problems = []
    if result.unfinished:
        problems.append(f"case {result.unfinished} began and never ended")
    if missing:
        problems.append(f"{len(missing)} case(s) did not run: {' '.join(missing[:10])}")
    problems += state_problems(result)
    ok = tally.record(not problems, f"conformance [{name}]: all {len(corpus)} cases ran, "
                      "and left the tracing state as they found it",
                      f"({run.seconds:.0f} s)")
    if not ok:
        ui.block(problems[:30] + [f"console log: {os.path.relpath(run.log)}"])
    return ok


def grade_reference(corpus, run_, tally):
    """Upstream's boot (a qemu.Run that ran the plan item): its
    CorpusRun, or None when it cannot serve as the reference."""
    result = parse_guest(run_.lines)
    ok = check_run(corpus, result, run_, tally, kernels.KernelId.upstream().name)
    problems = reference_problems(corpus, result)
    if problems:
        tally.record(False, "conformance [upstream]: the reference run is usable")
        ui.block(problems[:30])
    return result if ok else None


def grade_checkpoint(corpus, kernel, run_, reference, tally, record=None):
    """A checkpoint's boot (a qemu.Run that ran the plan item) against the
    reference and the record of expected differences. kernel: a
    kernels.KernelId, whose name heads its section of the record."""
    name = kernel.name
    record = load_expected() if record is None else record
    got = parse_guest(run_.lines)
    check_run(corpus, got, run_, tally, name)
    if name not in record:
        ui.info(f"no section for {name} in labs/conformance/expected-differences: "
                f"every difference from {kernels.base_release()} counts")
    verdict = judge(name, corpus, reference, got, record)
    report(verdict, tally, run_.log)
    return verdict


# --- the whole ftracetest suite ---------------------------------------------------

def ftall_failures(upstream, got):
    """[(test, result)] of the tests that PASS on 6.1 and not on the
    checkpoint (got). The whole suite runs on the last checkpoint only,
    which has every feature: no test may fail there for want of one."""
    return [(test, got.get(test, "no result"))
            for test in sorted(t for t, r in upstream.items() if r == "PASS")
            if got.get(test) != "PASS"]


def grade_ftall(upstream, got, kernel, tally, log=None):
    """The whole ftracetest suite on kernel (a kernels.KernelId): every
    test that passes on upstream passes there (ftall_failures)."""
    name = kernel.name
    failures = ftall_failures(upstream, got)
    for test, result in failures:
        tally.record(False, f"ftracetest-all [{name}] {test}", f"(PASS on {kernels.base_release()}, {result} here)")
    up_pass = sum(1 for r in upstream.values() if r == "PASS")
    k_pass = sum(1 for r in got.values() if r == "PASS")
    ok = tally.record(not failures and up_pass > 0,
                      f"ftracetest-all [{name}]: upstream {up_pass} PASS, {name} {k_pass} PASS "
                      f"of {len(upstream)} results")
    if not ok and log:
        ui.block([f"console log: {os.path.relpath(log)}"])
