"""make check's debug part (issue 13): the debug variant of upstream 6.1
and of the last checkpoint (kbuild.Kernel(..., debug=True):
scripts/debug.config on top of lab.config, two vCPUs), each running every
lab the kernel has (gdb labs aside) and the ftracetest list in one boot,
then the robustness tests (robust.start_kernel as soon as each is built,
graded by robust.grade_all), all beside the plain part of make check
(DebugPart). "make check DEBUG=1" does it for every checkpoint."""

from . import labrun, robust, series, ui
from .errors import HarnessError


def labs_on(kernel):
    """The labs that run on 'kernel' in one boot: those of its checkpoint
    and the one after it (to fail there), gdb labs left to the plain
    kernels (make lab N DEBUG=1 runs them)."""
    return [cp for cp in series.checkpoints() if cp.has_lab and not cp.needs_gdb
            and series.has_checkpoint(kernel, cp.number - 1)]


def boot_labs(session, k):
    """One boot of debug kernel k with its labs and the ftracetest list."""
    plan = [labrun.lab_item(cp.number) for cp in labs_on(k.kernel)] + ["ftracetest"]
    return session.boot(k, plan, f"check-{k.name}")


def grade_labs(k, booted, tally, alike):
    """Grade one boot of boot_labs: no splat, every lab to its end, each
    check as expected or, where the debug configuration changes the output,
    as upstream's debug kernel printed it (alike, filled in by upstream's
    grading, which comes first)."""
    run, report = booted
    if not labrun.grade_boot(run, tally, f"boot {k.label}"):
        return
    tally.record(True, f"boot {k.label} with {k.smp} vCPUs, labs and ftracetest: "
                 "no splat", f"({run.seconds:.0f} s)")
    for cp in labs_on(k.kernel):
        labrun.grade_lab(report, cp, k.kernel, tally, alike=alike, name=k.name)
    labrun.grade_ftracetest(report, k.kernel, tally, run.log, name=k.name)


class DebugPart:
    """make check's debug part, run beside its plain part: each debug
    kernel is built during the plain pass of the same kernel (the tree is
    checked out at it, and the plain guests leave a core free), and its
    guests queue for a lane (robust.Lanes): one while the plain kernels
    build and boot, two once they are done (finish)."""

    def __init__(self, session, all_checkpoints=False, seed=None):
        self.session = session
        self.last = series.last_checkpoint()
        self.kernels = [] if self.last is None else ["upstream"] + (
            [cp.number for cp in series.checkpoints()] if all_checkpoints else [self.last])
        self.seed = seed if seed is not None else robust.CHECK_SEED
        self.lanes = robust.Lanes(width=1)
        self.built = {}         # kernel -> (kbuild.Kernel or None, build verdict words)
        self.booted = []        # (kbuild.Kernel, Future of boot_labs), upstream first
        self.runs = {}          # kernel -> robust.start_kernel's futures

    def wants(self, kernel):
        return kernel in self.kernels

    def build_beside(self, kernel):
        """Build the debug variant of 'kernel' (checked out and built plain
        just now), then queue its guests. Runs in a thread of its own."""
        t = ui.Timer()
        try:
            k = self.session.kernel(kernel, debug=True)
        except HarnessError as e:
            self.built[kernel] = (None, str(e))
            return
        self.built[kernel] = (k, f"({t})")
        self.booted.append((k, self.lanes.submit(boot_labs, self.session, k)))
        # The robustness tests of each kernel queue as soon as it is built:
        # upstream's then fill the lane while the plain checkpoints build.
        if kernel in ("upstream", self.last):
            if not self.runs:
                robust.announce(self.seed, robust.HOSTILE_WRITES)
            self.runs[kernel] = robust.start_kernel(self.session, k, self.seed,
                                                    robust.HOSTILE_WRITES, self.lanes,
                                                    stress=kernel == self.last)

    def finish(self, tally):
        """Build what no plain pass built, open the second lane, wait for
        every guest and grade: builds, labs and ftracetest (upstream
        first: its outputs are the checkpoints' reference where the
        configuration changes them), then the robustness tests."""
        for which in self.kernels:
            if which not in self.built:
                self.build_beside(which)
        self.lanes.widen()
        with self.lanes:
            for which in self.kernels:
                k, words = self.built[which]
                if k is None:
                    tally.record(False, f"build {series.kernel_name(which)} (debug)")
                    ui.block(words.splitlines())
                else:
                    tally.record(True, f"build {k.label}", words)
            alike = {}
            for k, fut in sorted(self.booted, key=lambda b: b[0].kernel != "upstream"):
                grade_labs(k, fut.result(), tally, alike)
            both = ["upstream", self.last]
            if all(which in self.runs for which in both):
                robust.grade_all([self.built[which][0] for which in both],
                                 [self.runs[which] for which in both], tally)
            elif self.kernels:
                tally.record(False, "robustness tests: a debug kernel they need did not build")
