"""make check's debug part and robustness tests, run beside its plain part.

Plain make check: the last checkpoint's debug variant (kernels.VARIANTS
"debug": scripts/debug.config on top of lab.config, two vCPUs) runs
every lab it has (gdb labs aside) in one boot, where any KASAN, lockdep,
RCU or kmemleak report fails it, then the robustness tests of
labs/robustness (hostile input, permissions, two CPUs, module lifetime).
The comparisons with upstream 6.1 run on the plain kernels, which the
plain part has built anyway: the same hostile writes and the permission
attempts on plain upstream and the plain last checkpoint, listing by
listing.

make check FULL=1 adds upstream's debug variant, the ftracetest list on
both debug kernels, and compares the two debug kernels as well; make check DEBUG=1 builds the debug variant of every checkpoint.

The KCSAN variant (races.py) of the last checkpoint builds after its
debug variant, on the same builder thread, and boots with the
concurrency test and lab 06 (races.plan); FULL=1 adds upstream's KCSAN
kernel and runs every lab on both.

Debug kernels build in a checkout of their own (labrun.Session.kernel),
one at a time on a builder thread of their own, while the plain part goes
on; every guest queues for a lane (robust.Lanes)."""

import concurrent.futures

from . import labrun, protocol, races, robust, series, ui
from .errors import HarnessError
from .kernels import KernelId

# Hostile writes on the debug kernel of plain make check: every kind of
# structured round comes up many times in the first few thousand writes
# (hostile.generate), and the plain kernels run all of them.
DEBUG_HOSTILE_WRITES = 3000


def labs_on(kid):
    """The labs that run on kernel kid in one boot: those of its checkpoint
    and the one after it (to fail there), gdb labs left to the plain
    kernels (make lab N DEBUG=1 runs them)."""
    return [cp for cp in series.checkpoints() if cp.has_lab and not cp.needs_gdb
            and kid.has(cp.number - 1)]


def boot_labs(session, k, ftracetest=True):
    """One boot of debug kernel k with its labs (and the ftracetest list)."""
    plan = [protocol.lab_item(cp.number) for cp in labs_on(k.id)]
    return session.boot(k, plan + (["ftracetest"] if ftracetest else []), f"check-{k.name}")


def grade_labs(k, booted, tally, ftracetest=True):
    """Grade one boot of boot_labs: no splat, every lab to its end, each
    check as expected or, where the debug configuration changes the output,
    as labs/debug-differences records upstream's debug kernel printed it."""
    run, report = booted
    if not labrun.grade_boot(run, tally, f"boot {k.label} with {k.smp} vCPUs, labs"
                             + (" and ftracetest" if ftracetest else "")):
        return
    for cp in labs_on(k.id):
        labrun.grade_lab(report, cp, k.id, tally)
    if ftracetest:
        labrun.grade_ftracetest(report, k.id, tally, run.log)


class DebugPart:
    """The debug kernels and the robustness tests of make check. The plain
    part calls plain_built() after each plain kernel is built (its branch
    is then ready): the debug variant of a wanted kernel queues for the
    builder thread, and the plain robustness runs for the lanes. finish()
    waits for everything and grades it."""

    def __init__(self, session, lanes, full=False, all_checkpoints=False, seed=None):
        self.session = session
        self.lanes = lanes
        self.full = full or all_checkpoints
        cps = series.checkpoints()
        # the kernels are named plain here, the variant is the builder's
        self.last = KernelId.of(cps[-1].number) if cps else None
        up = KernelId.upstream()
        wanted = [up, self.last] if self.full else [self.last]
        if all_checkpoints:
            wanted = KernelId.every()
        self.kernels = [] if self.last is None else wanted
        # KCSAN kernels: the last checkpoint's; FULL=1 upstream's too
        self.kcsan_kernels = [] if self.last is None else (
            [up, self.last] if self.full else [self.last])
        self.seed = seed if seed is not None else robust.CHECK_SEED
        self.builder = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self.built = {}         # KernelId -> Future of (kbuild.Kernel or None, words)
        self.kcsan_built = {}   # the same, of the KCSAN variants
        self.raced = []         # (kbuild.Kernel, Future of races.run)
        self.booted = []        # (kbuild.Kernel, Future of boot_labs), upstream first
        self.runs = {}          # kbuild.Kernel.name -> (kernel, robust.start_kernel's futures)

    def start(self):
        """Start building the last checkpoint's debug variant at once, in
        its own checkout and object folder: the longest build of make
        check then runs while the checks before the plain builds use one
        core (self-tests, checkpatch, the docs), instead of after the
        last checkpoint's plain build. Its guests queue when it is done."""
        if self.last in self.kernels and self.last not in self.built:
            self.built[self.last] = self.builder.submit(self._build, self.last)
        for which in self.kcsan_kernels:
            self._build_kcsan(which)

    def plain_built(self, k):
        """The plain part built kernel k (its id plain)."""
        kid = k.id
        if kid in self.kernels and kid not in self.built:
            self.built[kid] = self.builder.submit(self._build, kid)
        if kid.is_upstream or kid == self.last:
            self._start_robust(k)

    def _start_robust(self, k):
        count = self.hostile_writes(k)
        robust.announce(self.seed, count, k.label)
        self.runs[k.name] = (k, robust.start_kernel(
            self.session, k, self.seed, count, self.lanes,
            stress=k.debug and k.id.plain() == self.last, all_faults=self.full))

    def hostile_writes(self, k):
        """All of them on plain kernels, whose runs are compared; fewer on
        the lone debug kernel of plain make check, which looks for reports
        only (a debug guest is 10 to 25 times slower)."""
        return robust.HOSTILE_WRITES if self.full or not k.debug else DEBUG_HOSTILE_WRITES

    def _build(self, kid, variant="debug"):
        """Build the debug (or KCSAN) variant of kernel kid, then queue its
        guests."""
        t = ui.Timer()
        try:
            with self.lanes.busy():
                k = self.session.kernel(kid.with_variant(variant))
        except HarnessError as e:
            return None, str(e)
        if variant == "kcsan":
            self.raced.append((k, self.lanes.submit(races.run, self.session, k, self.full)))
            return k, f"({t})"
        self.booted.append((k, self.lanes.submit(boot_labs, self.session, k, self.full)))
        if kid.is_upstream or kid == self.last:
            self._start_robust(k)
        return k, f"({t})"

    def _build_kcsan(self, kid):
        if kid not in self.kcsan_built:
            self.kcsan_built[kid] = self.builder.submit(self._build, kid, "kcsan")

    def finish(self, tally):
        """Wait for every build and guest, and grade: builds, labs (upstream
        first: its outputs are the checkpoints' reference where the
        configuration changes them), then the robustness tests, each kernel
        after the upstream kernel of its kind."""
        for which in self.kernels:
            if which not in self.built:
                self.built[which] = self.builder.submit(self._build, which)
        for which in self.kcsan_kernels:
            self._build_kcsan(which)
        self.builder.shutdown(wait=True)
        with self.lanes:
            for built, words in ((self.built, "debug"), (self.kcsan_built, "KCSAN")):
                for which, fut in built.items():
                    k, note = fut.result()
                    tally.record(k is not None,
                                 f"build {which.name} ({words})",
                                 note if k is not None else "")
                    ui.block(note.splitlines() if k is None else [])
            for k, fut in sorted(self.booted, key=lambda b: b[0].id.rank()):
                grade_labs(k, fut.result(), tally, self.full)
            self._grade_robust(tally)
            self._grade_races(tally)

    def _grade_races(self, tally):
        """races.grade of each KCSAN boot, upstream's first: its races are
        the reference that says which of the checkpoint's 6.1 shows too."""
        reference = None
        for k, fut in sorted(self.raced, key=lambda b: b[0].id.rank()):
            items, booted = fut.result()
            found = races.grade(items, booted, k, tally, races.touched(self.session, k),
                                reference)
            if k.id.is_upstream:
                reference = found

    def _grade_robust(self, tally):
        """robust.grade_all on the plain pair and on the debug pair (or the
        lone debug kernel): each compared with the upstream of its kind."""
        for debug in (False, True):
            runs = sorted((r for r in self.runs.values() if r[0].debug == debug),
                          key=lambda r: r[0].id.rank())
            if runs:
                robust.grade_all([k for k, _ in runs], [f for _, f in runs], tally)
        if self.kernels and not any(k.debug for k, _ in self.runs.values()):
            tally.record(False, "robustness tests: a debug kernel they need did not build")
