"""The robustness tests (issue 13): boot a kernel with the tests of
labs/robustness and the data the host generated for them, and grade.

The guest's initramfs is the harness's own (initramfs.build) with a second
cpio archive appended (initramfs.appended): the tests' data
(/lab/robust/...) needs no change to the harness's initramfs. Plan items
"robust:NAME" run labs/robustness/NAME.sh (initramfs/init)."""

import concurrent.futures
import contextlib
import os
import threading
import time

from . import faults, hostile, initramfs, interrupt, qemu, ui
from .kernels import KernelId

# Guests run at once (robust.lanes): one per core of a 2-core machine.
GUEST_LANES = 2
# Writes per hostile-input run (issue 13: at least 10,000).
HOSTILE_WRITES = 10000


def boot(session, k, plan, tag, extra=None, timeout=None):
    """Boot kernel k (kbuild.Kernel, its vCPUs) running plan with the extra
    files; returns qemu.Run. timeout: plain-kernel seconds (longer on a
    debug kernel), else the plan's usual limit."""
    initrd = initramfs.appended(session, tag, extra or {})
    log = os.path.join(session.logs, f"{tag}.log")
    ui.step(f"booting {k.label} in QEMU ({k.smp} vCPU): {', '.join(plan)} "
            f"(console: {os.path.relpath(log)})")
    limit = session.timeout_for(plan, k) if timeout is None else \
        timeout * k.id.spec.slowdown
    return qemu.boot(k, initrd, plan, log, session.timeout or limit,
                     getattr(session, "reuse_runs", False))


def run_hostile(session, k, seed, count=HOSTILE_WRITES, tag=None):
    """Generate, boot, parse: (rounds, qemu.Run, hostile.Result)."""
    rounds = hostile.generate(seed, count)
    ops = hostile.encode(rounds, seed).encode()
    run = boot(session, k, ["robust:hostile"], tag or f"hostile-{k.name}",
               {"lab/robust/hostile.ops": ops}, timeout=1200)
    return rounds, run, hostile.parse(run.lines)


def grade_hostile(rounds, run, res, k, tally, reference=None):
    """Verdicts of one hostile-input run; reference: (name, Result) of
    another kernel's run of the same writes, compared write by write."""
    label = f"hostile input [{k.name}]"
    if not run.ok:
        tally.record(False, f"{label}: guest run", run.status)
        ui.block(run.explain())
        return False
    c = hostile.counts(rounds, res)
    words = (f"seed {res.seed}, {c['writes']} writes ({c['write calls']} write calls, "
             f"{c['bytes']} bytes) in {c['structured rounds']} structured and "
             f"{c['chaos rounds']} chaos rounds: {c['accepted']} accepted, "
             f"{c['refused']} refused, {res.seconds} s guest time")
    problems = hostile.check_run(rounds, res)
    ok = tally.record(not problems, f"{label}: no splat, listings show what was accepted, "
                      "clean state after removing everything", f"({words})")
    ui.block(problems[:30])
    if reference is not None:
        ref_name, ref = reference
        diffs = hostile.compare(rounds, ref, res, ref_name, k.name)
        tally.record(not diffs, f"{label}: every verdict and listing as on {ref_name}",
                     f"({len(diffs)} differences)" if diffs else "")
        ui.block(diffs[:30])
        ok = ok and not diffs
    return ok


# --- permissions -------------------------------------------------------------

class Perms:
    def __init__(self):
        self.modes = {}         # path -> "MODE UID GID"
        self.tries = []         # (what, result)
        self.states = {}        # BEFORE/AFTER -> [lines]
        self.user = None
        self.folders = None     # modes of the folders opened to all
        self.finished = False


def parse_perms(lines):
    """A Perms from the console of a guest that ran perms.sh."""
    p = Perms()
    target = None
    for raw in lines:
        line = raw.strip()
        if line.startswith("@@ftlab perms-"):
            word, _sep, rest = line[len("@@ftlab "):].partition(" ")
            target = None
            if word == "perms-modes":
                target = "modes"
            elif word == "perms-state":
                target = p.states.setdefault(rest.strip(), [])
            elif word == "perms-try":
                what, _sep, result = rest.partition(" ")
                p.tries.append((what, result.strip()))
            elif word == "perms-folders":
                p.folders = rest.split()
            elif word == "perms-user":
                p.user = rest.strip()
            elif word == "perms-end":
                p.finished = True
            continue
        if line.startswith("@@ftlab"):
            target = None
        elif target == "modes":
            parts = line.split(None, 3)
            if len(parts) == 4:
                p.modes[parts[3]] = " ".join(parts[:3])
        elif isinstance(target, list):
            target.append(line)
    return p


def perms_problems(p):
    """What an unprivileged user could do that it must not, and anything
    that changed for root."""
    problems = []
    if not p.finished:
        problems.append("the guest did not finish the permissions test")
    if p.user != "65534":
        problems.append(f"the unprivileged user's uid is {p.user!r}, not 65534")
    if not p.tries:
        problems.append("no attempt was made")
    if p.folders is not None and not all(m[-1:] in ("5", "7") for m in p.folders):
        problems.append(f"the folders could not be opened to all: modes {p.folders}")
    problems += [f"an unprivileged user could: {what}" for what, result in p.tries
                 if result == "ok"]
    if p.states.get("BEFORE") != p.states.get("AFTER"):
        problems.append(f"root saw {p.states.get('BEFORE')} before the attempts, "
                        f"{p.states.get('AFTER')} after")
    return problems


def mode_differences(ref, p):
    """Files whose mode, owner or group differ from the reference kernel's,
    and files only one of them has."""
    diffs = [f"{path}: {ref.modes[path]} on the reference, {p.modes[path]} here"
             for path in sorted(set(ref.modes) & set(p.modes)) if ref.modes[path] != p.modes[path]]
    diffs += [f"{path}: only on the reference" for path in sorted(set(ref.modes) - set(p.modes))]
    diffs += [f"{path}: only here" for path in sorted(set(p.modes) - set(ref.modes))]
    return diffs


def run_perms(session, k, tag=None):
    run = boot(session, k, ["robust:perms"], tag or f"perms-{k.name}", timeout=300)
    return run, parse_perms(run.lines)


def grade_perms(run, p, k, tally, reference=None):
    label = f"permissions [{k.name}]"
    if not run.ok:
        tally.record(False, f"{label}: guest run", run.status)
        ui.block(run.explain())
        return
    problems = perms_problems(p)
    tally.record(not problems, f"{label}: an unprivileged user can change no probe, trigger, "
                 "clock, option, event or tracer",
                 f"({len(p.tries)} attempts, all refused)" if not problems else "")
    ui.block(problems)
    if reference is not None:
        ref_name, ref = reference
        diffs = mode_differences(ref, p)
        tally.record(not diffs, f"{label}: tracefs modes and owners as on {ref_name}",
                     f"({len(p.modes)} files)")
        ui.block(diffs[:30])


# --- concurrency ---------------------------------------------------------------

def parse_stress(lines):
    """{name: value} of "@@ftlab stress NAME VALUE" lines; "end" when the
    test finished."""
    out = {}
    for raw in lines:
        parts = raw.strip().split(None, 3)
        if parts[:2] == ["@@ftlab", "stress"] and len(parts) >= 3:
            out[parts[2]] = parts[3] if len(parts) > 3 else ""
        elif parts[:2] == ["@@ftlab", "stress-end"]:
            out["end"] = "1"
    return out


def stress_problems(r, cpus):
    def num(name):
        try:
            return int(r.get(name, "").split("=")[-1])
        except ValueError:
            return None
    problems = []
    if "end" not in r:
        return ["the guest did not finish the concurrency test"]
    if num("cpus") != cpus:
        problems.append(f"the guest saw {r.get('cpus')} CPUs, not {cpus}")
    if (num("elapsed") or 0) < (num("seconds") or 60):
        problems.append(f"it ran {r.get('elapsed')} s, not {r.get('seconds')}")
    if not num("probes-added") or not num("triggers-added"):
        problems.append("no probe or no trigger was ever added")
    if num("bad-counts") != 0:
        problems.append(f"{r.get('bad-counts')} counts below zero or above their limit")
    if not num("monitor-reads"):
        problems.append("the listings were never read")
    if r.get("flip-triggers") != "ok":
        problems.append(f"the triggers that flip sched_process_exec were refused: "
                        f"{r.get('flip-triggers')}")
    if (num("stack-traces") or 0) > (num("stack-limit") or 0):
        problems.append(f"{r.get('stack-traces')} stack traces, more than the "
                        f"{r.get('stack-limit')} the registrations allow")
    if not num("fork-events-after"):
        problems.append("no event traced afterwards")
    if r.get("traceoff-probe-after") != "tracing_on=0":
        problems.append(f"a traceoff probe afterwards left {r.get('traceoff-probe-after')}")
    if num("enabled-functions") != 0 or num("soft-mode") != 0:
        problems.append(f"not clean afterwards: {r.get('enabled-functions')} enabled "
                        f"functions, {r.get('soft-mode')} events in soft mode")
    return problems


def run_stress(session, k):
    run = boot(session, k, ["robust:stress"], f"stress-{k.name}", timeout=600)
    return run, parse_stress(run.lines)


def grade_stress(run, r, k, tally, smp):
    label = f"concurrency [{k.name}, {smp} vCPU]"
    if not run.ok:
        tally.record(False, f"{label}: guest run", run.status)
        ui.block(run.explain())
        return
    problems = stress_problems(r, smp)
    words = ", ".join(f"{n} {r.get(n)}" for n in ("elapsed", "probes-added", "triggers-added",
                                                  "monitor-reads", "stack-traces", "stack-limit"))
    tally.record(not problems, f"{label}: probes and triggers fire while others add and "
                 "remove them; counts stay in range, tracing works afterwards", f"({words})")
    ui.block(problems)


# --- module lifetime -------------------------------------------------------------

def parse_module(lines):
    """[(step, result)] of "@@ftlab module STEP RESULT" lines, and whether
    the test finished."""
    steps, done = [], False
    for raw in lines:
        parts = raw.strip().split(None, 3)
        if parts[:2] == ["@@ftlab", "module"] and len(parts) >= 3:
            steps.append((parts[2], parts[3] if len(parts) > 3 else ""))
        elif parts[:2] == ["@@ftlab", "module-end"]:
            done = True
    return steps, done


# What each step must give: "ok", "refused" (any error), or an exact text.
MODULE_EXPECT = {"load": "ok", "event-dir": "present", "add-probe": "ok",
                 "probe-target-enable": "0*", "rmmod-with-probe": "refused",
                 "remove-probe": "ok", "rmmod-after-probe": "ok",
                 "event-dir-after-rmmod": "gone", "reload": "ok", "add-trigger": "ok",
                 "rmmod-with-trigger": "refused", "remove-trigger": "ok",
                 "rmmod-after-trigger": "ok", "load-again": "ok", "enable-event": "ok",
                 "disable-event": "ok", "rmmod-final": "ok", "enabled-functions": "0"}


# Steps that upstream 6.1 fails on purpose, so the guest skips them there
# (modules.sh, own_trigger_steps): a trigger on the module's own event
# takes no reference in 6.1, its rmmod succeeds and
# tp_module_going_check_quiescent() WARNs. On upstream each must read
# "skipped", a difference in the series' favour; on a checkpoint from 6
# on, what the dict says, the refusal with the error of
# rmmod-with-trigger. A checkpoint before 6 has no trigger file: its
# add-own-trigger fails, and so does this test, as it does for the
# enable_event trigger.
# The same for a stacktrace probe on stack_trace_save(), which its action
# calls (modules.sh, recursion_steps): the series' ops asks ftrace for a
# recursion guard, and the probe's 10 counts give 10 stack traces; 6.1's
# probe nests into itself, and the hits nested inside
# __ftrace_trace_stack()'s own guard spend counts that record nothing
# (measured: 7 stack traces for 10 counts).
MODULE_OURS_ONLY = {"add-own-trigger": "ok", "rmmod-with-own-trigger": "refused",
                    "remove-own-trigger": "ok", "rmmod-after-own-trigger": "ok",
                    "reload-after-own-trigger": "ok", "add-recursive-probe": "ok",
                    "recursive-probe-count": "0", "recursive-probe-traces": "10",
                    "remove-recursive-probe": "ok"}
MODULE_FAVOUR = ("a trigger on the module's own event holds it, and a probe that calls the "
                 "function it probes does not nest into itself (both skipped on upstream; "
                 "measured on 6.1: rmmod succeeded and WARNed, the probe nested, 10 counts "
                 "gave 7 stack traces)")


def module_problems(steps, done, reference=None, upstream=False):
    got = dict(steps)
    problems = [] if done else ["the guest did not finish the module test"]
    ours = {step: "skipped" for step in MODULE_OURS_ONLY} if upstream else MODULE_OURS_ONLY
    for step, want in list(MODULE_EXPECT.items()) + list(ours.items()):
        have = got.get(step)
        if have is None:
            problems.append(f"{step}: did not run")
        elif want == "refused" and have == "ok":
            problems.append(f"{step}: succeeded, but the module is in use")
        elif want != "refused" and have != want:
            problems.append(f"{step}: {have}, expected {want}")
    if not got.get("events-traced", "0").isdigit() or got.get("events-traced") == "0":
        problems.append("the module's event traced nothing once loaded again")
    if reference is not None:
        ref_name, ref_steps = reference
        ref = dict(ref_steps)
        for step in ("rmmod-with-probe", "rmmod-with-trigger"):
            if got.get(step) != ref.get(step):
                problems.append(f"{step}: {got.get(step)!r}, {ref_name} says {ref.get(step)!r}")
    if not upstream and got.get("rmmod-with-own-trigger") not in (None, "ok",
                                                                 got.get("rmmod-with-trigger")):
        problems.append(f"rmmod-with-own-trigger: {got.get('rmmod-with-own-trigger')!r}, "
                        f"rmmod-with-trigger says {got.get('rmmod-with-trigger')!r}")
    return problems


def run_module(session, k):
    run = boot(session, k, ["robust:modules"], f"modules-{k.name}", k.modules(), timeout=600)
    return run, parse_module(run.lines)


# --- fault injection ---------------------------------------------------------------

# A kernel that crashes in the sweep boots again for the writes after the
# one it crashed on, this many times at most (6.1 crashes in five writes
# of the whole sweep).
FAULT_RESTARTS = 10


def run_faults(session, k, full=False):
    """The fault-injection sweep (faults.py) of every write, or of the
    light list; returns (writes, qemu.Run of the last boot, faults.Result).
    A crash (a KASAN report, a WARN) is recorded on the write it came in,
    and the kernel boots again for the writes after it: a crash of 6.1's
    own must not hide what the rest of its sweep shows."""
    modules = k.modules()
    ws = faults.writes(full, modules=bool(modules))
    tag = f"faults{'-all' if full else ''}-{k.name}"
    result, todo = faults.Result(), list(ws)
    for attempt in range(FAULT_RESTARTS + 1):
        extra = dict(modules)
        extra["lab/robust/faults.list"] = faults.encode(todo).encode()
        run = boot(session, k, ["robust:faults"], tag + (f"-{attempt}" if attempt else ""),
                   extra, timeout=3600 if full else 600)
        res = faults.parse(run.lines)
        crashed = faults.merge(result, res, run)
        if crashed is None or attempt == FAULT_RESTARTS:
            break
        todo = todo[[w.name for w in todo].index(crashed) + 1:]
        if not todo:
            result.finished = True
            break
    return ws, run, result


def grade_faults_all(kernels, runs, tally):
    """faults.grade for each kernel that ran the sweep, each after
    upstream's run (its reference)."""
    ref = None
    for k, r in zip(kernels, runs):
        if "faults" not in r:
            continue
        ws, run, res = r["faults"].result()
        faults.grade(run, res, ws, k, tally, reference=ref)
        if k.id.is_upstream and res.finished:
            ref = (k.id.base_name, res)


def run_faults_all(session, kid, tally=None):
    """make robust [N] FAULTS=1: the whole sweep on the debug kernels of
    kid (a kernels.KernelId) and upstream, compared."""
    tally = tally or ui.Tally()
    timer = ui.Timer()
    kid = kid.with_variant("debug")
    kernels = build_kernels(session, kid, tally)
    if kernels is None:
        return tally
    session.initrd()
    ui.step("fault injection: every registering write, failed at each of its allocations")
    with Lanes() as pool:
        runs = [{"faults": pool.submit(run_faults, session, k, True)} for k in kernels]
        grade_faults_all(kernels, runs, tally)
    print(f"\nfault injection on {kid.label} took {timer}")
    return tally


# --- all of them ---------------------------------------------------------------

# make check's seed: fixed, so that CI is reproducible (a run of both debug
# kernels with it is recorded in labs/robustness/README.adoc); make robust
# draws a new one each time to find new cases. SEED=S sets either.
CHECK_SEED = 202612040834


def default_seed():
    """A new seed per run (printed, so that a failure can be replayed with
    SEED=...): the date and time, UTC."""
    return int(time.strftime("%Y%m%d%H%M", time.gmtime()))


class Lanes:
    """Guest runs that go on beside other work, at most 'width' at once.
    Each QEMU runs on one host thread (thread=single), so two guests use
    both cores of the machine; make check starts with one lane while its
    plain kernels build and boot, and widens to two when they are done.
    After Ctrl-C (labkit.interrupt), or once its 'with' block ends with an
    exception, no queued run starts: each raises interrupt.Interrupted."""

    def __init__(self, width=GUEST_LANES):
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=GUEST_LANES)
        self._free = threading.Condition()
        self._width, self._busy = width, 0
        self._outside = 0       # builds and gdb runs going on beside (busy())
        self._cancelled = False
        self._on_interrupt = interrupt.register(self.cancel)
        # Runs take the lanes in the order they were submitted (callers
        # submit the longest first). Without tickets, a worker thread that
        # had just finished a run could take the lane again for its next
        # one before the other thread woke up, and a run could wait behind
        # all later ones (make check's hostile-input run on upstream did).
        self._tickets, self._waiting = 0, []

    def submit(self, fn, *args, **kwargs):
        """Run fn(*args, **kwargs) when a lane is free, after the runs
        submitted before it; returns a Future."""
        return self._pool.submit(self._in_lane, fn, args, kwargs)

    def _in_lane(self, fn, args, kwargs):
        with self._free:
            ticket, self._tickets = self._tickets, self._tickets + 1
            self._waiting.append(ticket)
            self._free.wait_for(lambda: self._cancelled or (self._busy < self._open()
                                                            and ticket == self._waiting[0]))
            self._waiting.remove(ticket)
            if self._cancelled:
                self._free.notify_all()
                raise interrupt.Interrupted()
            self._busy += 1
            self._free.notify_all()     # the next ticket may fit in another lane
        try:
            return fn(*args, **kwargs)
        finally:
            with self._free:
                self._busy -= 1
                self._free.notify_all()

    def widen(self, width=GUEST_LANES):
        with self._free:
            self._width = width
            self._free.notify_all()

    @contextlib.contextmanager
    def busy(self):
        """Hold one lane's worth of the machine for work outside the lanes
        (a kernel build, a gdb run): the guests get one lane fewer while it
        lasts, never none."""
        with self._free:
            self._outside += 1
        try:
            yield
        finally:
            with self._free:
                self._outside -= 1
                self._free.notify_all()

    def _open(self):
        """Lanes open now: the width less the work held outside, at least one."""
        return max(1, self._width - self._outside)

    def cancel(self):
        """Start no queued run (the running ones go on)."""
        with self._free:
            self._cancelled = True
            self._free.notify_all()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is not None:
            self.cancel()
        self.widen()
        self._pool.shutdown(wait=True)
        interrupt.unregister(self._on_interrupt)


def start_kernel(session, k, seed, count, pool, stress=False, all_faults=False):
    """Submit the robustness tests of one kernel to the pool (Lanes),
    longest first; returns {test: Future}. The stress test runs on the
    kernel under test only; the module test and the fault-injection sweep
    (every write, or the light list) need a debug kernel."""
    runs = {"hostile": pool.submit(run_hostile, session, k, seed, count)}
    if stress:
        runs["stress"] = pool.submit(run_stress, session, k)
    if k.debug:
        runs["faults"] = pool.submit(run_faults, session, k, all_faults)
    runs["perms"] = pool.submit(run_perms, session, k)
    if k.debug:
        runs["modules"] = pool.submit(run_module, session, k)
    return runs


def start_all(session, kernels, seed, count, pool):
    """start_kernel for each of 'kernels' ([upstream, N] or [upstream]),
    the stress test on the last; returns their futures in that order."""
    return [start_kernel(session, k, seed, count, pool, stress=k is kernels[-1])
            for k in kernels]


def grade_all(kernels, runs, tally):
    """Grade what start_kernel started for each of 'kernels' (runs, in the
    same order), test by test, each kernel after upstream's run of the
    same test (its reference)."""
    ref = None
    for k, r in zip(kernels, runs):
        rounds, run, res = r["hostile"].result()
        grade_hostile(rounds, run, res, k, tally, reference=ref)
        if k.id.is_upstream and run.ok:
            ref = (k.id.base_name, res)
    ref = None
    for k, r in zip(kernels, runs):
        run, p = r["perms"].result()
        grade_perms(run, p, k, tally, reference=ref)
        if k.id.is_upstream and run.ok:
            ref = (k.id.base_name, p)
    for k, r in zip(kernels, runs):
        if "stress" in r:
            run, result = r["stress"].result()
            grade_stress(run, result, k, tally, k.smp)
    grade_faults_all(kernels, runs, tally)
    ref = None
    for k, r in zip(kernels, runs):
        if "modules" not in r:
            continue
        run, (steps, done) = r["modules"].result()
        if not run.ok:
            tally.record(False, f"module lifetime [{k.name}]: guest run", run.status)
            ui.block(run.explain())
            continue
        problems = module_problems(steps, done, ref, upstream=k.id.is_upstream)
        got = dict(steps)
        tally.record(not problems, f"module lifetime [{k.name}]: an enable_event probe and "
                     "trigger, and a trigger on its own event, hold samples/trace_events; "
                     "rmmod works once they are gone",
                     f"(rmmod while held: {got.get('rmmod-with-probe')!r}"
                     + ("; the series' own steps skipped" if k.id.is_upstream else "") + ")")
        ui.block(problems + ([] if k.id.is_upstream else [f"in its favour: {MODULE_FAVOUR}"]))
        if k.id.is_upstream:
            ref = (k.id.base_name, steps)


def build_kernels(session, kid, tally):
    """[upstream, kid] (or [upstream]) built, upstream of kid's variant,
    or None (a failed verdict). kid: a kernels.KernelId."""
    from .errors import HarnessError
    wanted = [KernelId.upstream(kid.variant)] + ([] if kid.is_upstream else [kid])
    try:
        return [session.kernel(which) for which in wanted]
    except HarnessError as e:   # a build failure fails these tests, not make check
        tally.record(False, f"build for the robustness tests ({kid.label})")
        ui.block(str(e).splitlines())
        return None


def announce(seed, count, label=None):
    ui.step(f"hostile input{' on ' + label if label else ''}: seed {seed}, {count} writes "
            f"(replay: SEED={seed})")


def run_all(session, kid, seed=None, tally=None, count=HOSTILE_WRITES):
    """Every robustness test on kernel kid (a kernels.KernelId, plain or
    debug), and on upstream of its variant as the reference to compare
    with: make robust [N] [KERNEL=upstream] [DEBUG=1] [SEED=S]."""
    tally = tally or ui.Tally()
    timer = ui.Timer()
    seed = seed if seed is not None else default_seed()
    kernels = build_kernels(session, kid, tally)
    if kernels is None:
        return tally
    session.initrd()
    announce(seed, count)
    with Lanes() as pool:
        runs = start_all(session, kernels, seed, count, pool)
        grade_all(kernels, runs, tally)
    print(f"\nrobustness tests on {kid.label} took {timer}")
    return tally
