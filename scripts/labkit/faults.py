"""The fault-injection sweep: every write that registers a probe, a
trigger, a clock or an option, failed at each of its allocations in turn
(labs/robustness/faults.sh, on a debug kernel: scripts/debug.config has
FAILSLAB and FAIL_PAGE_ALLOC). This module writes the list of writes the
guest sweeps, reads what it printed, and grades it.

A write is graded at each failed allocation n: it returned an error and
left the state (the listings, enabled_functions, the events' enable files,
a module's reference count) as it was before, or it succeeded as if no
allocation had failed (the kernel had a fallback). After a failed write the
same write without a fault succeeds; after every try the write's removal
restores the state.
A leak or a kernel report fails the whole run (the guest's kernel log,
with a kmemleak scan, is read as for every debug guest)."""

import collections

from . import kernels, ui

FUNC = "ksys_sync"
GLOB = "vfs_fsync*"
PROBE_TARGET = "sched:sched_kthread_stop"
TRIGGER_EVENT = "events/sched/sched_kthread_stop"
TRIGGER_TARGET = "sched:sched_kthread_stop_ret"
MODULE_EVENT = "sample-trace:foo_bar"
MODULE_REFCNT = "/sys/module/trace_events_sample/refcnt"
FILTER = 'comm == "ftlab"'
# A trace instance faults.sh makes before the sweep: probes and triggers
# there have their own ops, hash and event files.
INSTANCE = "instances/faults"

PROBE_STATE = ("set_ftrace_filter", "enabled_functions",
               "events/sched/sched_kthread_stop/enable")
TRIGGER_STATE = (f"{TRIGGER_EVENT}/trigger", f"{TRIGGER_EVENT}/enable",
                 "events/sched/sched_kthread_stop_ret/enable")
MODULE_STATE = (MODULE_REFCNT, "events/sample-trace/foo_bar/enable")
# The snapshot buffer is freed after each try, so that every try
# allocates it again.
FREE_SNAPSHOT = "; echo 0 > snapshot"

# A write the guest sweeps: VALUE >> FILE, undone by the shell code UNDO,
# its state read from STATE.
Write = collections.namedtuple("Write", "name file value undo state")


def _probe(name, value, undo_cmd, state=PROBE_STATE, extra="", top=""):
    path = f"{top}set_ftrace_filter"
    return Write(name, path, value, f"echo '!{undo_cmd}' >> {path}{extra}", state)


def _trigger(name, value, undo_cmd, state=TRIGGER_STATE, extra="", top=""):
    trigger = f"{top}{TRIGGER_EVENT}/trigger"
    return Write(name, trigger, value, f"echo '!{undo_cmd}' >> {trigger}{extra}", state)


def _in_instance(files):
    return tuple(f if f == "enabled_functions" else f"{INSTANCE}/{f}" for f in files)


def probe_writes():
    """Each function probe command, with and without a count."""
    out = []
    # A counted probe is another kind than the plain one: its removal
    # names a count (any count, ":0"), as in 6.1.
    for cmd in ("traceon", "traceoff", "stacktrace", "snapshot", "dump", "cpudump",
                f"enable_event:{PROBE_TARGET}", f"disable_event:{PROBE_TARGET}"):
        extra = FREE_SNAPSHOT if cmd == "snapshot" else ""
        word = cmd.split(":")[0]
        out.append(_probe(f"probe-{word}", f"{FUNC}:{cmd}", f"{FUNC}:{cmd}", extra=extra))
        out.append(_probe(f"probe-{word}-count", f"{FUNC}:{cmd}:2", f"{FUNC}:{cmd}:0",
                          extra=extra))
    out.append(_probe("probe-glob-stacktrace", f"{GLOB}:stacktrace:3", f"{GLOB}:stacktrace:0"))
    out.append(_probe("probe-module-event", f"{FUNC}:enable_event:{MODULE_EVENT}:2",
                      f"{FUNC}:enable_event:{MODULE_EVENT}:0",
                      state=PROBE_STATE + MODULE_STATE))
    out.append(_probe("probe-instance-enable_event", f"{FUNC}:enable_event:{PROBE_TARGET}:2",
                      f"{FUNC}:enable_event:{PROBE_TARGET}:0", state=_in_instance(PROBE_STATE),
                      top=f"{INSTANCE}/"))
    return out


def trigger_writes():
    """Each event trigger command, with and without a count, with and
    without a filter."""
    out = []
    for cmd in ("traceon", "traceoff", "stacktrace", "snapshot",
                f"enable_event:{TRIGGER_TARGET}", f"disable_event:{TRIGGER_TARGET}"):
        extra = FREE_SNAPSHOT if cmd == "snapshot" else ""
        word = cmd.split(":")[0]
        for count in ("", ":2"):
            for filt in ("", f" if {FILTER}"):
                name = f"trigger-{word}{'-count' if count else ''}{'-filter' if filt else ''}"
                out.append(_trigger(name, f"{cmd}{count}{filt}", cmd, extra=extra))
    out.append(_trigger("trigger-module-event", f"enable_event:{MODULE_EVENT}:2",
                        f"enable_event:{MODULE_EVENT}",
                        state=TRIGGER_STATE + MODULE_STATE))
    out.append(_trigger("trigger-instance-stacktrace", f"stacktrace:2 if {FILTER}",
                        "stacktrace", state=_in_instance(TRIGGER_STATE), top=f"{INSTANCE}/"))
    return out


def setting_writes():
    """The clocks the series adds, an option of its own, the snapshot file."""
    return [Write("clock-uptime", "trace_clock", "uptime", "echo local > trace_clock",
                  ("trace_clock",)),
            Write("clock-perf", "trace_clock", "perf", "echo local > trace_clock",
                  ("trace_clock",)),
            Write("option-function-trace", "options/function-trace", "0",
                  "echo 1 > options/function-trace", ("options/function-trace",)),
            Write("snapshot-file", "snapshot", "1", "echo 0 > snapshot", ("snapshot",))]


# The light sweep of plain make check: the paths the series wrote most of
# (a counted probe, an enable_event probe with its soft mode, a glob
# probe over several functions, a filtered counted trigger, an
# enable_event trigger, the snapshot buffer a probe allocates).
LIGHT = ("probe-traceoff-count", "probe-enable_event-count", "probe-glob-stacktrace",
         "trigger-stacktrace-count-filter", "trigger-enable_event-count", "probe-snapshot")


def writes(full=True, modules=True):
    """The writes to sweep: all of them, or LIGHT's; those on the module's
    event only where the kernel has the module."""
    every = probe_writes() + trigger_writes() + setting_writes()
    chosen = [w for w in every if full or w.name in LIGHT]
    return [w for w in chosen if modules or MODULE_REFCNT not in w.state]


def encode(ws):
    """faults.list: one write per line, its fields separated by tabs."""
    for w in ws:
        if any("\t" in f or "\n" in f for f in (w.name, w.file, w.value, w.undo)):
            raise ValueError(f"a field of {w.name} holds a tab or a newline")
    return "".join(f"{w.name}\t{w.file}\t{w.value}\t{w.undo}\t{' '.join(w.state)}\n"
                   for w in ws)


class Sweep:
    """What the guest printed for one write."""

    def __init__(self, name):
        self.name = name
        self.tries = []         # (n, result, state)
        self.states = {}        # n -> the state line of an "other" state
        self.redo = {}          # n -> (result, state) of a failed retry
        self.undo = {}          # n -> state after the removal, when not before
        self.clean = None       # what went wrong without a fault
        self.allocations = None
        self.crash = None       # the kernel's report when it crashed in this sweep


class Result:
    def __init__(self):
        self.sweeps = collections.OrderedDict()
        self.finished = False
        self.setup = None
        self.report = []        # a kernel report of the run (upstream's is listed)
        self.boots = 0


def parse(lines):
    """A Result from the console of a guest that ran faults.sh."""
    res = Result()
    cur = None
    for raw in lines:
        line = raw.strip()
        if not line.startswith("@@ftlab fault"):
            continue
        word, _sep, rest = line[len("@@ftlab "):].partition(" ")
        if word == "faults-end":
            res.finished = True
        elif word == "fault-write":
            cur = res.sweeps.setdefault(rest.strip(), Sweep(rest.strip()))
        elif word == "fault-clean":
            name, _sep, why = rest.partition(" ")
            if name == "setup":
                res.setup = why
            elif name in res.sweeps:
                res.sweeps[name].clean = why
        elif cur is None:
            continue
        elif word == "fault":
            n, result, state = _fields(rest)
            cur.tries.append((n, result, state))
        elif word == "fault-state":
            if cur.tries:
                cur.states[cur.tries[-1][0]] = rest
        elif word == "fault-redo":
            n, result, state = _fields(rest)
            cur.redo[n] = (result, state)
        elif word == "fault-undo":
            n, _sep, state = rest.partition(" ")
            cur.undo[int(n)] = state
        elif word == "fault-allocations":
            name, _sep, k = rest.rpartition(" ")
            if name in res.sweeps and k.isdigit():
                res.sweeps[name].allocations = int(k)
    return res


def merge(total, res, run):
    """Add one boot's sweeps to 'total'. When the kernel crashed, record
    the crash on the write it was sweeping (the last one begun) and
    return that write's name, for the next boot to go on after it; else
    None."""
    total.boots += 1
    total.sweeps.update(res.sweeps)
    total.setup = total.setup or res.setup
    total.finished = res.finished
    if run.status not in ("crash", "timeout", "exited") or not res.sweeps:
        return None
    last = next(reversed(res.sweeps.values()))
    if last.allocations is not None:
        return None
    n = last.tries[-1][0] + 1 if last.tries else 1
    report = [line.strip() for line in run.explain()[1:] if line.strip()]
    last.crash = (f"the kernel {run.status if run.status != 'crash' else 'crashed'} "
                  f"at or after allocation {n}: {report[0] if report else run.status}"
                  f" ({report[-1] if report else ''})")
    return last.name


def _fields(rest):
    """N RESULT STATE, RESULT being an error text of several words."""
    n, _sep, rest = rest.partition(" ")
    result, _sep, state = rest.rpartition(" ")
    return int(n), result, state


def sweep_problems(s):
    """What one write's sweep shows wrong."""
    if s.clean:
        return [f"{s.name}: {s.clean}"]
    problems = []
    if s.crash:
        problems.append(f"{s.name}: {s.crash}")
    elif s.allocations is None:
        problems.append(f"{s.name}: the sweep did not end")
    elif len(s.tries) != s.allocations:
        problems.append(f"{s.name}: {len(s.tries)} tries for {s.allocations} allocations")
    for n, result, state in s.tries:
        if result != "ok" and state != "before":
            problems.append(f"{s.name}, allocation {n} failed: the write returned "
                            f"{result!r} but left the state {state}: {s.states.get(n, '')}")
        elif result == "ok" and state != "after":
            problems.append(f"{s.name}, allocation {n} failed: the write succeeded but "
                            f"the state is {state}: {s.states.get(n, '')}")
    for n, (result, state) in sorted(s.redo.items()):
        problems.append(f"{s.name}, after allocation {n} failed: the same write without "
                        f"a fault gave {result!r}, state {state}")
    for n, state in sorted(s.undo.items()):
        problems.append(f"{s.name}, after allocation {n} failed: its removal left the "
                        f"state {state}, not as before")
    return problems


def problems(res, ws):
    """Everything wrong in a guest's sweep of the writes ws."""
    out = [] if res.finished else ["the guest did not finish the sweep"]
    if res.setup:
        return out + [res.setup]
    out += [f"{w.name}: not swept" for w in ws if w.name not in res.sweeps]
    for s in res.sweeps.values():
        out += sweep_problems(s)
    return out


def errors(res):
    """{error text: how many failed writes returned it}."""
    count = collections.Counter(result for s in res.sweeps.values()
                                for _n, result, _state in s.tries if result != "ok")
    return dict(count.most_common())


def figures(res):
    """The sweep in numbers, for the verdict line."""
    tries = [t for s in res.sweeps.values() for t in s.tries]
    refused = sum(1 for _n, result, _state in tries if result != "ok")
    errs = ", ".join(f"{n} {text}" for text, n in errors(res).items())
    crashes = sum(1 for s in res.sweeps.values() if s.crash)
    return (f"{len(res.sweeps)} writes, {len(tries)} allocations failed one at a time: "
            f"{refused} writes refused ({errs or 'none'}), {len(tries) - refused} "
            "succeeded all the same"
            + (f"; the kernel crashed in {crashes} and booted again" if crashes else ""))


def compare(ref_name, ref, res, name):
    """Where the two kernels' sweeps differ in kind: a write that fails
    with another error, or one whose sweep is clean on one kernel only
    (the allocation counts differ between any two kernels' code), or a
    kernel report (a leak) on one of them."""
    out = []
    if ref.report and not res.report:
        out.append(f"the run: {ref_name} printed a kernel report, {name} does not: "
                   f"{ref.report[0]}")
    for w, s in res.sweeps.items():
        r = ref.sweeps.get(w)
        if r is None:
            continue
        mine, theirs = sweep_problems(s), sweep_problems(r)
        if theirs and not mine:
            out.append(f"{w}: {ref_name} misbehaves here, {name} does not: {theirs[0]}")
        elif mine and not theirs:
            out.append(f"{w}: {name} misbehaves here, {ref_name} does not: {mine[0]}")
        new = {t for _n, t, _s in s.tries if t != "ok"} - \
            {t for _n, t, _s in r.tries if t != "ok"} - {"Cannot allocate memory"}
        if new:
            out.append(f"{w}: errors {sorted(new)} on {name}, never on {ref_name}")
    return out


def in_favour(line, name):
    """A difference that counts for kernel 'name' (compare's wording)."""
    return "does not: " in line and f", {name} does not: " in line


def grade(run, res, ws, k, tally, reference=None):
    """The verdicts of one kernel's sweep. Upstream 6.1's is the
    reference: its own misbehaviour (a half state, a leak) is listed, not
    failed, and must only run to its end. A checkpoint's is compared with
    it (reference: (name, Result)): a difference in the checkpoint's
    favour is named and does not fail."""
    label = f"fault injection [{k.name}]"
    reference_kernel = k.id.is_upstream
    if run.status == "kernel-report" and res.finished:
        res.report = run.explain()
    # the last boot crashed on the last write: merge() recorded it there
    crash_recorded = run.status in ("crash", "timeout", "exited") and res.finished
    if not run.ok and not crash_recorded and not (reference_kernel and res.report):
        tally.record(False, f"{label}: guest run", run.status)
        ui.block(run.explain())
        return
    found = problems(res, ws)
    if reference_kernel:
        unfinished = [p for p in found if ("did not" in p or "not swept" in p)
                      and "the kernel" not in p]
        tally.record(res.finished and not res.setup and not unfinished,
                     f"{label}: the reference's sweep ran every write to its end",
                     f"({figures(res)})")
        ui.block([res.setup] if res.setup else unfinished[:10])
        ui.block([f"{kernels.base_release()}'s own: {p}" for p in found if p not in unfinished][:30]
                 + [f"{kernels.base_release()}'s own: {line}" for line in res.report[:10]])
        return
    tally.record(not found, f"{label}: each registering write failed at every allocation "
                 "leaves nothing half-registered, and works again without the fault",
                 f"({figures(res)})")
    ui.block(found[:30])
    if reference is None:
        return
    ref_name, ref = reference
    diffs = compare(ref_name, ref, res, k.name)
    favour = [d for d in diffs if in_favour(d, k.name)]
    against = [d for d in diffs if d not in favour]
    tally.record(not against, f"{label}: no write misbehaves where {ref_name} does not, "
                 "and none returns an error it never returns",
                 f"({len(favour)} differences in its favour)" if favour else "")
    ui.block(against[:30] + [f"in its favour: {d}" for d in favour])
