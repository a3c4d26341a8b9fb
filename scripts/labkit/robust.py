"""The robustness tests (issue 13): boot a kernel with the tests of
labs/robustness and the data the host generated for them, and grade.

The guest's initramfs is the harness's own (initramfs.build) with a second
cpio archive appended: the kernel unpacks both, so the tests' data
(/lab/robust/...) needs no change to the harness's initramfs. Plan items
"robust:NAME" run labs/robustness/NAME.sh (initramfs/init)."""

import os
import time

from . import hostile, initramfs, qemu, ui


def initrd_with(session, name, extra):
    """session.initrd() followed by a cpio archive of extra {path: bytes}."""
    base = session.initrd()
    out = os.path.join(session.build_dir, f"initramfs-{name}.cpio")
    tail = out + ".tail"
    cpio = initramfs.Cpio(tail)
    dirs = sorted({os.path.dirname(p) for p in extra if os.path.dirname(p)})
    for d in dirs:
        cpio.directory(d)
    for path, data in extra.items():
        cpio.file(path, data)
    cpio.close()
    with open(out, "wb") as o:
        for part in (base, tail):
            with open(part, "rb") as f:
                o.write(f.read())
    os.unlink(tail)
    return out


def boot(session, k, plan, tag, extra=None, smp=1, timeout=1800):
    """Boot kernel k (kbuild.Kernel) running plan; returns qemu.Run."""
    initrd = initrd_with(session, tag, extra or {})
    cmd = qemu.command(k.bzimage, initrd, qemu.append(plan, k.kernel))
    if smp != 1:
        cmd[cmd.index("-smp") + 1] = str(smp)
    log = os.path.join(session.logs, f"{tag}.log")
    ui.step(f"booting {k.label} in QEMU ({smp} vCPU): {', '.join(plan)} "
            f"(console: {os.path.relpath(log)})")
    return qemu.run(cmd, log, timeout)


def run_hostile(session, k, seed, count=10000, smp=1, tag=None):
    """Generate, boot, parse: (rounds, qemu.Run, hostile.Result)."""
    rounds = hostile.generate(seed, count)
    ops = hostile.encode(rounds, seed).encode()
    run = boot(session, k, ["robust:hostile"], tag or f"hostile-{k.name}",
               {"lab/robust/hostile.ops": ops}, smp=smp)
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


def run_perms(session, k, smp=1, tag=None):
    run = boot(session, k, ["robust:perms"], tag or f"perms-{k.name}", smp=smp, timeout=300)
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


def run_stress(session, k, smp):
    run = boot(session, k, ["robust:stress"], f"stress-{k.name}", smp=smp, timeout=600)
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


def module_problems(steps, done, reference=None):
    got = dict(steps)
    problems = [] if done else ["the guest did not finish the module test"]
    for step, want in MODULE_EXPECT.items():
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
    return problems


def run_module(session, k, smp):
    extra = k.modules() if hasattr(k, "modules") else {}
    run = boot(session, k, ["robust:modules"], f"modules-{k.name}", extra, smp=smp, timeout=600)
    return run, parse_module(run.lines)


# --- all of them ---------------------------------------------------------------

def default_seed():
    """A new seed per run (printed, so that a failure can be replayed with
    SEED=...): the date and time, UTC."""
    return int(time.strftime("%Y%m%d%H%M", time.gmtime()))


def run_all(session, kernel, use_debug=False, seed=None, tally=None, count=10000):
    """Every robustness test on 'kernel' (a checkpoint number or
    "upstream"), and on upstream 6.1 as the reference to compare with:
    make robust [N] [KERNEL=upstream] [DEBUG=1] [SEED=S]."""
    from . import debug, series
    tally = tally or ui.Tally()
    timer = ui.Timer()
    seed = seed if seed is not None else default_seed()
    smp = debug.SMP if use_debug else 1

    def build(which):
        t = ui.Timer()
        k = debug.kernel(session, which) if use_debug else session.kernel(which)
        ui.info(f"{k.label} ready in {t}")
        return k

    from .errors import HarnessError
    try:
        kernels = [build("upstream")] + ([] if kernel == "upstream" else [build(kernel)])
    except HarnessError as e:   # a build failure fails these tests, not make check
        tally.record(False, f"build for the robustness tests ({series.kernel_name(kernel)}"
                     f"{', debug' if use_debug else ''})")
        ui.block(str(e).splitlines())
        return tally
    ui.step(f"hostile input: seed {seed}, {count} writes (replay: SEED={seed})")
    ref = None
    for k in kernels:
        t = ui.Timer()
        rounds, run, res = run_hostile(session, k, seed, count, smp=smp)
        grade_hostile(rounds, run, res, k, tally, reference=ref)
        ui.info(f"hostile input on {k.label}: {t}")
        if k.kernel == "upstream" and run.ok:
            ref = ("upstream", res)
    ref = None
    for k in kernels:
        run, p = run_perms(session, k, smp)
        grade_perms(run, p, k, tally, reference=ref)
        if k.kernel == "upstream" and run.ok:
            ref = ("upstream", p)
    for k in kernels[-1:]:
        t = ui.Timer()
        run, r = run_stress(session, k, smp)
        grade_stress(run, r, k, tally, smp)
        ui.info(f"concurrency on {k.label}: {t}")
    if use_debug:
        ref = None
        for k in kernels:
            run, (steps, done) = run_module(session, k, smp)
            if not run.ok:
                tally.record(False, f"module lifetime [{k.name}]: guest run", run.status)
                ui.block(run.explain())
                continue
            problems = module_problems(steps, done, ref)
            got = dict(steps)
            tally.record(not problems, f"module lifetime [{k.name}]: an enable_event probe and "
                         "trigger hold samples/trace_events; rmmod works once they are gone",
                         f"(rmmod while held: {got.get('rmmod-with-probe')!r})")
            ui.block(problems)
            if k.kernel == "upstream":
                ref = ("upstream", steps)
    print(f"\nrobustness tests on {series.kernel_name(kernel)}"
          f"{' (debug)' if use_debug else ''} took {timer}")
    return tally
