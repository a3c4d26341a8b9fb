"""Build a kernel, boot it with a plan, and grade what the guest printed.

Used by "make lab N" (one lab on one kernel) and by "make check" (every
lab and ftracetest on every kernel)."""

import os
import threading

from . import (deps, disk, ftmatrix, gdbrun, grade, initramfs, kbuild, kernels, protocol,
               qemu, series, traces, tree, ui)


class Session:
    """Everything a run needs: where things go and what is built."""

    def __init__(self, build_dir, timeout=None):
        self.build_dir = os.path.abspath(build_dir)
        self.logs = os.path.join(self.build_dir, "logs")
        self.timeout = timeout
        self.tree = tree.Tree(self.build_dir)
        self._initrd = None
        self._initrd_lock = threading.Lock()
        # {path in the guest: host file} packed into the initramfs besides
        # the labs (make bench adds its workload)
        self.extra_files = {}
        # what prepare() requires: deps.needed() of the target
        self.packages = deps.PACKAGES
        # make check: a guest run whose kernel, initramfs and plan have
        # not changed since it last went to its end is graded again from
        # its log, not booted (qemu.Reuse); FRESH=1 boots everything
        self.reuse_runs = False

    def prepare(self):
        deps.check_machine()
        deps.require(self.packages)
        os.makedirs(self.logs, exist_ok=True)
        self.require_space([], "the kernel tree")
        self.tree.ensure()

    def require_space(self, kids, what):
        """Stop before building kernels kids unless the disk has room for
        what they still need (disk.missing)."""
        worktrees = [tree.Worktree(self.tree, kid.spec.worktree).path
                     for kid in kids if kid.spec.worktree]
        disk.require(self.build_dir,
                     disk.missing(self.build_dir, kids, self.tree.path, worktrees), what)

    def kernel(self, kid):
        """Check out and build kernel kid (a kernels.KernelId); returns its
        kbuild.Kernel. A plain kernel builds in build/linux; a variant with
        a checkout of its own (kernels.Variant.worktree, tree.Worktree)
        builds there, at kid's commit, so that make check builds it while
        build/linux moves on."""
        k = kbuild.Kernel(self.build_dir, kid)
        self.require_space([kid], k.label)
        worktree = kid.spec.worktree
        if worktree is None:
            with tree.lock(self.build_dir):
                ref = self.tree.checkout(kid)
                ui.debug(f"tree at {ref}")
                head = self.tree.git("rev-parse", "HEAD")
                self._build(k, self.tree.path,
                            head if tree.changes(self.tree.path) == "" else None)
            return k
        with tree.lock(self.build_dir):
            commit = self.tree.commit_of(kid)
        checkout = tree.Worktree(self.tree, worktree)
        with tree.lock(self.build_dir, f"{worktree}-tree"):
            self._build(k, checkout.path, checkout.checkout(commit))
        return k

    def _build(self, k, src, commit):
        """Start k's object folder from another (seed_folder) and build it
        from the checkout src, clean at commit (None: not clean)."""
        k.seed(self.seed_folder(k.id))
        k.build(src, commit)

    def seed_folder(self, kid):
        """The object folder a new one of kernel kid starts from
        (kernels.KernelId.seed_names), or None."""
        obj = os.path.join(self.build_dir, "obj")
        existing = [n for n in os.listdir(obj)
                    if os.path.isdir(os.path.join(obj, n))] if os.path.isdir(obj) else []
        found = [os.path.join(obj, n) for n in kid.seed_names(existing) if n in existing]
        return found[0] if found else None

    def initrd(self):
        """The guest's initramfs, packed once. make check asks for it from
        its main thread (gdb runs) and from the guest lanes at once: one
        packs, the others wait for it."""
        with self._initrd_lock:
            if self._initrd is None:
                ui.step("packing the guest initramfs (busybox, labs, ftracetest)")
                self._initrd = initramfs.build(self.build_dir, self.tree.path,
                                               self.extra_files)
        return self._initrd

    def timeout_for(self, plan, k=None):
        """The one time limit of every guest run, plain or under gdb: the
        user's TIMEOUT when given, else qemu.timeout_for(plan) (longer for
        a debug kernel k)."""
        return qemu.timeout_for(plan, self.timeout, k.id.spec.slowdown if k else 1)

    def boot(self, k, plan, tag):
        """Boot kernel k with a plan (list of items); returns (qemu.Run, report).
        A kernel with modules gets its sample module in the initramfs
        (kbuild.Kernel.modules), for the labs' module_check checks."""
        log = os.path.join(self.logs, f"{tag}.log")
        ui.step(f"booting {k.label} in QEMU: {', '.join(plan)} (console: {os.path.relpath(log)})")
        modules = k.modules()
        initrd = initramfs.appended(self, f"modules-{tag}", modules) if modules else \
            self.initrd()
        run = qemu.boot(k, initrd, plan, log, self.timeout_for(plan, k), self.reuse_runs)
        return run, protocol.parse(run.lines)


def run_words(run):
    """How long a run took, and when it ran if qemu.Reuse kept it."""
    if getattr(run, "reused", None):
        return f"({run.seconds:.0f} s, run {run.reused}, reused: nothing it depends on changed)"
    return f"({run.seconds:.0f} s)"


def grade_boot(run, tally, label):
    """The boot itself: it must end cleanly, or nothing else can be trusted.
    One verdict, pass or fail."""
    if tally.record(run.ok, f"{label}: guest run to its end, no splat",
                    run_words(run) if run.ok else run.status):
        return True
    ui.block(run.explain())
    return False


def grade_lab(report, cp, kid, tally, only=None, graded=None, before=None, tag=None):
    """Grade lab cp's checks as run on kernel kid (a kernels.KernelId;
    only check 'only', when given), named in the verdicts by kid.name
    (or 'tag', which says how the run differed: "cp7, TRACE=1").
    graded: the kernel whose features the checks are graded for, when
    not kid's checkpoint (graded_as). A debug kernel's configuration (two
    CPUs, other inlining) changes some outputs on upstream itself: a
    check that must match passes too when labs/debug-differences lists it
    and it prints what that records (grade.grade_on_debug); the same on
    upstream's debug kernel, so a stale record fails there. before: what
    the feature checks print before their checkpoint, when not the lab's
    'before'. A skeleton (kid.flavour) is graded against 'before', its
    skeleton.before (grade.grade_on_skeleton)."""
    kernel = graded or kid.plain()
    skeleton = kid.flavour == "skeleton"
    key = f"{cp.number:02d}"
    lab = report.labs.get(key)
    prefix = f"lab {key} [{tag or kid.name}]"
    absent_expected = not kernel.has(cp.number)
    if lab is None or not lab.finished:
        return tally.record(False, f"{prefix}: the lab did not run to its end")
    if lab.unsupported:
        if absent_expected:
            return tally.record(True, f"{prefix}: needs {lab.unsupported}, "
                                "missing before its checkpoint, as expected")
        return tally.record(False, f"{prefix}: requirement missing: {lab.unsupported}")
    expected = grade.load_expected(cp.lab_dir)
    if before is None:
        before = grade.load_expected(cp.lab_dir, grade.BEFORE)
    if only:
        expected = {k: v for k, v in expected.items() if k.split("@")[0] == only}
    ran = {c.id for c in lab.checks}
    not_here = cp.not_run_on(kid)
    for ident in grade.check_ids(expected):
        if ident not in ran and ident not in not_here:
            tally.record(False, f"{prefix} check '{ident}' did not run")
    recorded = grade.load_debug_differences() if kid.debug else {}
    for check in lab.checks:
        if skeleton:
            outcome = grade.grade_on_skeleton(check, expected, cp.number, before)
        else:
            outcome = grade.grade_check(check, expected, kernel, cp.number, before)
        if kid.debug and kernel.has(cp.number):
            outcome = grade.grade_on_debug(check, outcome, expected, kernel, cp.number,
                                           recorded.get((key, check.id)))
        outcome.title = f"{prefix} {check.title}"
        tally.record(outcome.ok, outcome.title, f"({outcome.note})" if outcome.note else "")
        ui.block(outcome.evidence)


def grade_ftracetest(report, kid, tally, log):
    """ftracetest's results on kernel kid, as labs/ftracetest.matrix says."""
    matrix = ftmatrix.load()
    tag = kid.name
    for test in matrix.tests():
        row = matrix.row(test)
        want = row.expected(kid)
        lines = report.ftracetest.get(test, []) + report.ftracetest.get(test + "@instance", [])
        got = ftmatrix.results(lines)
        title = f"ftracetest [{tag}] {test}: {want}"
        if not got:
            tally.record(False, title, "(no result)")
            ui.block(lines[-10:] + [f"console log: {os.path.relpath(log)}"])
            continue
        bad = [(d, r) for d, r in got if r != want]
        note = f"({row.why})" if want != "PASS" and row.why else ""
        if tally.record(not bad, title, note):
            continue
        ui.block([f"{d}: got {r}, expected {want}" for d, r in bad]
                 + ([f"why {want} is expected: {row.why}"] if row.why else [])
                 + [l for l in lines if l.strip()][-12:]
                 + [f"console log: {os.path.relpath(log)}"])


def run_gdb_lab(session, k, cp, tally, port=None, only=None, plain=False, trace=False):
    """A lab with "# flags: gdb": boot paused, gdb runs the lab's script
    unattended (serving its requests), then grade the guest's output and,
    on the lab's own checkpoint, gdb's output too. plain: graded as on
    the lab's checkpoint whatever the kernel (make lab N KERNEL=M).
    trace: each check's buffers saved as a trace.dat (traces.py); returns
    (run, {name: path}) then, for a caller that reads the traces."""
    tag = traces.tag(f"{cp.number:02d}", k.name)
    initrd, serial = session.initrd(), None
    if trace:
        initrd = initramfs.appended(session, "trace", traces.guest_files())
        serial = traces.serial_file(session.build_dir, tag)
    ui.step(f"booting {k.label} under gdb for lab {cp.number:02d} (it asks gdb to act)"
            + (", with trace-cmd" if trace else ""))
    ok, evidence, run = gdbrun.unattended(k, initrd, cp, port or gdbrun.free_port(),
                                          session.logs,
                                          lambda plan: session.timeout_for(plan, k),
                                          plan=gdbrun.lab_plan(cp, only), trace_file=serial)
    if run.broken:
        tally.record(False, f"lab {cp.number:02d} [{k.name}] under gdb")
        ui.block(evidence)
        return None
    report = protocol.parse(run.console)
    graded = graded_as(k.id, cp, plain)
    grade_lab(report, cp, k.id, tally, only, graded)
    if trace:
        paths, problems = traces.store(session.build_dir, tag, serial)
        if not traces.grade_files(run, report, paths, problems,
                                  f"lab {cp.number:02d} [{k.name}] TRACE=1", tally):
            paths = {}
    # gdb.expected is what the whole lab makes gdb print: not for one check
    if not only and graded == kernels.KernelId.of(cp.number):
        tally.record(ok, f"gdb lab {cp.number:02d} [{k.name}]")
        ui.block(evidence)
    elif not only and graded.is_just_before(cp.number):
        gdb_before(session, k, cp, tally, booted=run)
    return (run, paths) if trace else None


def gdb_before(session, k, cp, tally, booted=None):
    """Lab cp's gdb script on k, the checkpoint before cp's: it must fail
    there as labs/NN-*/gdb.before records (gdbrun.previous_checkpoint)."""
    ok, evidence, record, how = gdbrun.previous_checkpoint(
        k, session.initrd(), cp, session.logs, session.timeout_for, booted=booted)
    at = record[-1] if record else ""
    tally.record(ok, f"gdb lab {cp.number:02d} [{k.name}] fails before its checkpoint, {how}",
                 f"(at: {at})" if ok else "")
    ui.block(evidence)


def graded_as(kid, cp, plain):
    """The kernel (a plain kernels.KernelId) a lab on kid is graded for:
    kid's checkpoint (make check runs lab N on checkpoint N-1 to see its
    feature checks fail there), but with plain (make lab N KERNEL=M), the
    lab itself, graded as on its own checkpoint when M is older: its
    feature checks fail with their diffs."""
    if plain and not kid.has(cp.number):
        return kernels.KernelId.of(cp.number)
    return kid.plain()


def run_one_lab(session, number, kid, only=None, trace=False):
    """make lab N on kernel kid (a kernels.KernelId: KERNEL=upstream|M,
    DEBUG=1, STUDENT=1 made it) [CHECK=ID] [TRACE=1: each check's
    buffers saved as a trace.dat, traces.py]."""
    cp = series.lookup(number)
    k = session.kernel(kid)
    tally = ui.Tally(f"lab {number:02d} [{k.name}]")
    if not kid.has(number):
        ui.info(f"note: this is {kid.plain().label}'s kernel, not checkpoint {number}'s: "
                f"lab {number:02d}'s checks of what checkpoint {number} adds fail here")
    if cp.needs_gdb:
        traced = run_gdb_lab(session, k, cp, tally, only=only, plain=True, trace=trace)
        if traced:
            point_at_traces(session, number, k, traced[0].console, traced[1])
        return tally
    tag = traces.tag(f"{number:02d}", k.name)
    plan = [protocol.lab_item(number, only)]
    if trace:
        run, report, paths, problems = traces.boot(session, k, plan, tag)
    else:
        run, report = session.boot(k, plan, tag)
    if grade_boot(run, tally, f"lab {number:02d} [{k.name}]"):
        grade_lab(report, cp, kid, tally, only, graded_as(kid, cp, True))
        if trace and traces.grade_files(run, report, paths, problems,
                                        f"lab {number:02d} [{k.name}] TRACE=1", tally):
            point_at_traces(session, number, k, run.lines, paths)
    print(f"console log: {os.path.relpath(run.log)}")
    return tally


def point_at_traces(session, number, k, lines, paths):
    """After make lab N TRACE=1: where the traces are, what each file
    holds (traces.summary), how to read one, and the report page, written
    at once."""
    if not paths:
        return
    from . import report as report_page
    folder = os.path.relpath(os.path.dirname(next(iter(paths.values()))))
    print(f"traces: one trace.dat per check in {folder}/:")
    for name, path in sorted(paths.items()):
        print(f"  {os.path.basename(path):32} {traces.summary(path)}")
    print(f"read one with: trace-cmd report -i {folder}/FILE")
    page, _drawn = report_page.lab_page(session.build_dir, number, k.id, lines, paths)
    print(f"report, with a timeline of each check's trace: {os.path.relpath(page)}")
