"""KCSAN, the kernel's data-race detector: boot a KCSAN kernel
(kernels.VARIANTS "kcsan", two vCPUs) with the concurrency test and labs,
read the race reports it prints, and fail those in code the series adds
or changes.

A report starts "BUG: KCSAN: data-race in A / B" (the functions of the two
accesses; one function, "A+0x../0x..", when the other access is not
known), and ends with a line of "=" signs. Races in functions the series
does not touch are 6.1's own: listed, with their functions, not failed.
What the series touches is computed from the tree: every function of
kernel/ and include/ whose body differs between upstream and the
checkpoint, or that only the checkpoint has (series_functions).

  make robust [N] KCSAN=1   stress + every lab, on N's and 6.1's KCSAN kernels
  make check                stress + lab 06, on the last checkpoint's
  make check FULL=1         as make robust KCSAN=1 on the last checkpoint
"""

import re

from . import kernels, protocol, qemu, robust, series, ui
from .kernels import KernelId

SELFTEST_RE = re.compile(r"kcsan: selftest: (\d+)/(\d+) tests passed")
RACE_RE = re.compile(r"BUG: KCSAN: ([\w-]+) in (\S+)(?: / (\S+))?")
END_RE = re.compile(r"^(\[\s*\d+\.\d+\]\s*)?={20,}\s*$")

# The lab of plain make check's KCSAN boot: event triggers, whose code
# (trigger lists, counts, the soft-disable state) the most tasks share.
LIGHT_LABS = (6,)


# The head of one access in a report, "write (marked) to 0x... of 8 bytes
# by task 12 on cpu 1:"; the line after it is the access's own function.
ACCESS_RE = re.compile(r"\b(read-write|read|write)( \([^)]*\))* to 0x")
FRAME_RE = re.compile(r"^[\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+$")


class Race:
    """One report: its kind ("data-race"), the functions named in its
    first line (without offsets), and its lines."""

    def __init__(self, kind, functions, lines):
        self.kind = kind
        self.functions = functions
        self.lines = lines

    def plain_functions(self):
        """The functions that make a plain access in the report: KCSAN
        reports a race only when one access at least is plain (not
        READ_ONCE(), WRITE_ONCE(), an atomic or a bitop). None when an
        access's function cannot be read (a console copy without its
        stacks): then every function of the title counts."""
        found, heads, frames = set(), 0, 0
        head = None
        for line in self.lines:
            text = line.split("]", 1)[1] if line.lstrip().startswith("[") else line
            m = ACCESS_RE.search(text)
            if m:
                heads += 1
                head = m
                continue
            if head is None or not text.strip():
                continue
            if FRAME_RE.match(text.strip()):
                frames += 1
                if "marked" not in head.group(0):
                    found.add(function_name(text.strip()))
            head = None
        return found if heads and frames == heads else None

    @property
    def key(self):
        return (self.kind, tuple(sorted(self.functions)))

    def title(self):
        return f"{self.kind} in {' / '.join(self.functions)}"


def function_name(symbol):
    """trace_foo+0x1a/0x80 or trace_foo.constprop.0 -> trace_foo."""
    return re.split(r"[+.]", symbol, maxsplit=1)[0]


def kernel_log(lines):
    """The kernel log the guest printed at its end, else the console (a
    run cut short): each report in one of them, once."""
    inside, found, seen = False, [], False
    for line in lines:
        if line.strip() in (qemu.LOG_BEGIN, qemu.LOG_END):
            inside = line.strip() == qemu.LOG_BEGIN
            seen = True
            continue
        if inside:
            found.append(line)
    return found if seen else lines


def parse(lines):
    """(self-test (passed, total) or None, [Race]) from a guest's lines."""
    selftest, races, current = None, [], None
    for line in kernel_log(lines):
        m = SELFTEST_RE.search(line)
        if m:
            selftest = (int(m.group(1)), int(m.group(2)))
        m = RACE_RE.search(line)
        if m:
            funcs = tuple(function_name(f) for f in m.groups()[1:] if f)
            current = Race(m.group(1), funcs, [line])
            races.append(current)
            continue
        if current is not None:
            if END_RE.search(line):
                current = None
            else:
                current.lines.append(line)
    return selftest, races


# --- what the series touches ---------------------------------------------------

def c_functions(text):
    """{name: text} of the functions a C file defines, in kernel style: a
    head starting at column 0, the opening brace alone at column 0, the
    closing brace at column 0. Prototypes, structures and initialisers
    (a head that ends with ";" first) are skipped."""
    functions, head, body = {}, [], None
    for line in text.splitlines():
        if body is not None:
            body.append(line)
            if line.startswith("}"):
                name = re.findall(r"(\w+)\s*\(", " ".join(head))
                if name:
                    functions[name[0]] = "\n".join(head + body)
                head, body = [], None
            continue
        if line == "{" and head:
            body = [line]
        elif head:
            head.append(line)
            if line.rstrip().endswith(";") or line.startswith(("#", "}")):
                head = []
        elif line[:1].isalpha() and not line.rstrip().endswith(";"):
            head = [line]
    return functions


def series_functions(git, base, head, paths=("kernel", "include")):
    """The functions of 'paths' that 'head' adds or changes from 'base'
    (two revisions of the tree; git: tree.Tree.git)."""
    changed = git("diff", "--name-only", base, head, "--", *paths).split()
    names = set()
    for path in changed:
        if not path.endswith((".c", ".h")):
            continue
        old = c_functions(git("show", f"{base}:{path}", check=False))
        new = c_functions(git("show", f"{head}:{path}", check=False))
        names |= {n for n, body in new.items() if old.get(n) != body}
    return names


def classify(races, ours):
    """(in the series' functions, elsewhere): one Race per kind and pair
    of functions, in the order first seen. A race is the series' when a
    function of the series makes one of its plain accesses: where the
    series' access is marked (a set_bit() on a flag word) and the plain
    one is in code the series does not touch, the race is that code's."""
    seen, mine, others = set(), [], []
    for r in races:
        if r.key in seen:
            continue
        seen.add(r.key)
        plain = r.plain_functions()
        (mine if (plain if plain is not None else set(r.functions)) & ours
         else others).append(r)
    return mine, others


# --- runs ----------------------------------------------------------------------

def plan(kid, full):
    """The concurrency test, then the labs (every lab kernel kid has but
    the gdb labs, or LIGHT_LABS)."""
    labs = [cp.number for cp in series.checkpoints() if cp.has_lab and not cp.needs_gdb
            and kid.has(cp.number)]
    if not full:
        labs = [n for n in labs if n in LIGHT_LABS]
    return ["robust:stress"] + [protocol.lab_item(n) for n in labs]


def run(session, k, full):
    """Boot KCSAN kernel k with plan(); returns (plan, qemu.Run)."""
    items = plan(k.id, full)
    return items, robust.boot(session, k, items, f"kcsan{'-all' if full else ''}-{k.name}",
                              timeout=900 if full else 600)


def touched(session, k):
    """The functions k's checkpoint adds or changes (none for upstream)."""
    if k.id.is_upstream:
        return set()
    return series_functions(session.tree.git, KernelId.upstream().branch, k.id.plain().branch)


def grade(items, booted, k, tally, ours, reference=None):
    """The verdicts of one KCSAN boot: KCSAN on and the run to its end; the
    concurrency test; each lab to its end (their outputs are graded on the
    plain and debug kernels); no race in the series' functions. Races
    elsewhere, and all of 6.1's, are listed. reference: the races of
    6.1's KCSAN kernel, to say which of ours it shows too. Returns the
    races (for the next kernel's reference)."""
    label = f"KCSAN [{k.name}]"
    selftest, races = parse(booted.lines)
    on = selftest is not None and selftest[0] == selftest[1] and selftest[0] > 0
    words = f"(self-test {selftest[0]}/{selftest[1]})" if selftest else "(no self-test line)"
    if not tally.record(booted.ok and on, f"{label}: guest run to its end with KCSAN on, "
                        "two vCPUs", words if booted.ok else booted.status):
        ui.block(booted.explain() if not booted.ok else
                 [f"KCSAN's boot self-test did not pass: {words}",
                  f"console log: {booted.log}"])
        return races
    problems = k.race_checking_problems()
    tally.record(not problems, f"{label}: the tracing code is instrumented "
                 f"(kernel/trace/, which {kernels.base_release()} builds without KCSAN)")
    ui.block(problems)
    robust.grade_stress(booted, robust.parse_stress(booted.lines), k, tally, k.smp)
    report = protocol.parse(booted.lines)
    for item in items[1:]:
        key = item.split(":")[1]
        lab = report.labs.get(key)
        tally.record(lab is not None and lab.finished,
                     f"{label}: lab {key} runs to its end (a workload here)")
    mine, others = classify(races, set() if k.id.is_upstream else ours)
    if not k.id.is_upstream:
        ref_keys = {r.key for r in reference or []}
        tally.record(not mine, f"{label}: no data race in a function the series adds or "
                     f"changes ({len(ours)} functions)",
                     f"({len(races)} reports, {len(others)} races elsewhere)")
        for r in mine:
            also = f" ({kernels.base_release()}'s KCSAN kernel reports it too)" if r.key in ref_keys else ""
            ui.block([r.title() + also] + r.lines[:30] + [f"console log: {booted.log}"])
    for r in others:
        ui.info(f"  {label}: a race whose plain access is in code the series does not "
                f"touch, {kernels.base_release()}'s own: {r.title()}")
    return races


def run_all(session, kid, tally=None):
    """make robust [N] KCSAN=1: stress and every lab on the KCSAN kernels
    of kid (a kernels.KernelId) and upstream; upstream's races listed
    beside ours."""
    tally = tally or ui.Tally()
    timer = ui.Timer()
    kid = kid.with_variant("kcsan")
    kernels = robust.build_kernels(session, kid, tally)
    if kernels is None:
        return tally
    session.initrd()
    ui.step("KCSAN: the concurrency test and the labs, two vCPUs")
    with robust.Lanes() as pool:
        runs = [pool.submit(run, session, k, True) for k in kernels]
        reference = None
        for k, fut in zip(kernels, runs):
            items, booted = fut.result()
            races = grade(items, booted, k, tally, touched(session, k), reference)
            if k.id.is_upstream:
                reference = races
    print(f"\nKCSAN on {kid.plain().label} took {timer}")
    return tally
