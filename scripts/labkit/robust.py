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
