"""The debug variant of a kernel (issue 13): the lab configuration plus
scripts/debug.config (SMP, KASAN, lockdep, PROVE_RCU, atomic-sleep and
list debugging, kmemleak, SLUB debugging, modules), built in its own
object folder (build/obj/cp7-debug, build/obj/upstream-debug), booted with
two vCPUs. Its modules (samples/trace_events) go into the guest with the
robustness tests (robust.py)."""

import hashlib
import os
import subprocess

from . import kbuild, series, ui
from .errors import HarnessError

DEBUG_FRAGMENT = os.path.join(series.ROOT, "scripts", "debug.config")
SMP = 2
SAMPLE_MODULE = os.path.join("samples", "trace_events", "trace-events-sample.ko")


class DebugKernel(kbuild.Kernel):
    """kbuild.Kernel with the debug fragment, its own folder and modules."""

    def __init__(self, build_dir, kernel):
        super().__init__(build_dir, kernel)
        self.name += "-debug"
        self.obj = os.path.join(build_dir, "obj", self.name)
        self.bzimage = os.path.join(self.obj, "arch", "x86", "boot", "bzImage")
        self.vmlinux = os.path.join(self.obj, "vmlinux")
        self.log = os.path.join(build_dir, "logs", f"build-{self.name}.log")
        self.stamp = os.path.join(self.obj, ".ftlab-built")

    @property
    def label(self):
        return super().label + " (debug)"

    def configure(self, src):
        """tinyconfig + lab.config + debug.config, checked like the plain one."""
        blob = b"".join(open(f, "rb").read() for f in (kbuild.CONFIG_FRAGMENT, DEBUG_FRAGMENT))
        digest = hashlib.sha256(blob).hexdigest()
        cfg_stamp = os.path.join(self.obj, ".ftlab-config")
        if os.path.exists(cfg_stamp) and open(cfg_stamp).read() == digest:
            return
        ui.step(f"configuring {self.label}: tinyconfig + lab.config + debug.config")
        os.makedirs(self.obj, exist_ok=True)
        self._run_make(src, "tinyconfig")
        r = subprocess.run([os.path.join(src, "scripts", "kconfig", "merge_config.sh"),
                            "-m", "-O", self.obj, os.path.join(self.obj, ".config"),
                            kbuild.CONFIG_FRAGMENT, DEBUG_FRAGMENT],
                           cwd=src, capture_output=True, text=True)
        if r.returncode != 0:
            raise kbuild.BuildError("merge_config.sh failed:\n" + r.stdout + r.stderr)
        self._run_make(src, "olddefconfig")
        want = kbuild.wanted_options()
        want.update(kbuild.wanted_options(DEBUG_FRAGMENT))
        with open(os.path.join(self.obj, ".config")) as f:
            bad = kbuild.config_problems(f.read(), want)
        if bad:
            raise kbuild.BuildError("the debug configuration lacks options:\n    "
                                    + "\n    ".join(bad))
        with open(cfg_stamp, "w") as f:
            f.write(digest)

    def build(self, src):
        os.makedirs(os.path.dirname(self.log), exist_ok=True)
        open(self.log, "w").close()
        self.configure(src)
        timer = ui.Timer()
        ui.step(f"compiling {self.label} (log: {os.path.relpath(self.log)})")
        if os.path.exists(self.stamp):
            os.unlink(self.stamp)
        p = self._make(src, "bzImage", "modules", "scripts_gdb", log=self.log)
        self._heartbeat(p)
        if p.returncode != 0:
            raise kbuild.BuildError(self._failure(f"building {self.label} failed"))
        open(self.stamp, "w").close()
        self.build_seconds = timer
        ui.info(f"{self.label} built in {timer}")

    def modules(self):
        """{path in the guest: bytes} of the modules the tests load."""
        path = os.path.join(self.obj, SAMPLE_MODULE)
        if not os.path.exists(path):
            return {}
        with open(path, "rb") as f:
            return {"lab/robust/trace-events-sample.ko": f.read()}


def kernel(session, kernel):
    """Check out and build the debug variant of 'upstream' or checkpoint N."""
    from . import tree
    k = DebugKernel(session.build_dir, kernel)
    with tree.lock(session.build_dir):
        session.tree.checkout(kernel)
        k.build(session.tree.path)
    return k


# Time allowed for a guest of a debug kernel, as a multiple of a plain
# kernel's: KASAN, lockdep and kmemleak make it several times slower.
SLOWDOWN = 4


def run_one_lab(session, number, kernel):
    """make lab N DEBUG=1: lab N on the debug variant, with two vCPUs."""
    from . import labrun, protocol, robust
    cp = series.lookup(number)
    k = globals()["kernel"](session, kernel)
    tally = ui.Tally()
    if cp.needs_gdb:
        ui.skip(f"lab {number:02d} [{k.name}]", "a gdb lab runs on the plain kernel only")
        return tally
    plan = [f"lab:{number:02d}"]
    run = robust.boot(session, k, plan, f"lab{number:02d}-{k.name}", smp=SMP,
                      timeout=session.timeout_for(plan) * SLOWDOWN)
    if labrun.grade_boot(run, tally, f"lab {number:02d} [{k.name}]"):
        labrun.grade_lab(protocol.parse(run.lines), cp, kernel, tally)
    print(f"console log: {os.path.relpath(run.log)}")
    return tally


def check_part(session, tally, all_checkpoints=False, use_debug=True):
    """make check's debug part: upstream 6.1 and the last checkpoint (with
    DEBUG=1 every checkpoint) built with debug.config and booted with two
    vCPUs, each running every lab it has and the ftracetest list; then the
    robustness tests (robust.run_all) on the last checkpoint and upstream.
    Each part's time is printed. use_debug=False runs the same on the
    plain kernels (a quick rehearsal of this code)."""
    from . import labrun, protocol, robust
    cps = series.checkpoints()
    if not cps:
        return
    last = cps[-1].number
    smp = SMP if use_debug else 1
    kernels = ["upstream"] + ([cp.number for cp in cps] if all_checkpoints else [last])
    for which in kernels:
        t = ui.Timer()
        try:
            k = globals()["kernel"](session, which) if use_debug else session.kernel(which)
        except HarnessError as e:
            tally.record(False, f"build {series.kernel_name(which)} (debug)")
            ui.block(str(e).splitlines())
            continue
        tally.record(True, f"build {k.label}", f"({t})")
        labs = [cp for cp in cps if cp.has_lab and not cp.needs_gdb
                and series.has_checkpoint(which, cp.number - 1)]
        plan = [f"lab:{cp.number:02d}" for cp in labs] + ["ftracetest"]
        t = ui.Timer()
        run = robust.boot(session, k, plan, f"check-{k.name}", smp=smp,
                          timeout=labrun.default_timeout(plan) * (SLOWDOWN if use_debug else 1))
        if not labrun.grade_boot(run, tally, f"boot {k.label}"):
            continue
        tally.record(True, f"boot {k.label} with {smp} vCPU(s), labs and ftracetest",
                     f"({run.seconds:.0f} s)")
        report = protocol.parse(run.lines)
        for cp in labs:
            labrun.grade_lab(report, cp, which, tally)
        labrun.grade_ftracetest(report, which, tally, run.log)
        ui.info(f"{k.label}: labs and ftracetest in {t}")
    robust.run_all(session, last, use_debug, tally=tally)
