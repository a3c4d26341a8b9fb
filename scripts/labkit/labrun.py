"""Build a kernel, boot it with a plan, and grade what the guest printed.

Used by "make lab N" (one lab on one kernel) and by "make check" (every
lab and ftracetest on every kernel)."""

import os

from . import deps, ftmatrix, gdbrun, grade, initramfs, kbuild, protocol, qemu, series, tree, ui


class Session:
    """Everything a run needs: where things go and what is built."""

    def __init__(self, build_dir, timeout=None):
        self.build_dir = os.path.abspath(build_dir)
        self.logs = os.path.join(self.build_dir, "logs")
        self.timeout = timeout
        self.tree = tree.Tree(self.build_dir)
        self._initrd = None
        # {path in the guest: host file} packed into the initramfs besides
        # the labs (make bench adds its workload)
        self.extra_files = {}

    def prepare(self):
        deps.require()
        os.makedirs(self.logs, exist_ok=True)
        self.tree.ensure()

    def kernel(self, kernel, debug=False):
        """Check out and build 'upstream' or checkpoint N (its debug variant
        with debug=True); returns kbuild.Kernel."""
        k = kbuild.Kernel(self.build_dir, kernel, debug)
        with tree.lock(self.build_dir):
            branch = self.tree.checkout(kernel)
            ui.debug(f"tree at {branch}")
            k.seed(self.seed_folder(kernel, debug))
            k.build(self.tree.path, self.tree.git("rev-parse", "HEAD"))
        return k

    def seed_folder(self, kernel, debug):
        """The object folder a new one starts from: the previous
        checkpoint's of the same variant, else upstream's (make check builds
        the last checkpoint right after upstream); for a debug kernel any
        debug folder there is (only the files the checkout changed
        recompile)."""
        suffix = "-debug" if debug else ""
        names = [] if kernel == "upstream" else [
            series.kernel_name("upstream" if kernel == 0 else kernel - 1) + suffix,
            "upstream" + suffix]
        obj = os.path.join(self.build_dir, "obj")
        if debug and os.path.isdir(obj):
            names += sorted(n for n in os.listdir(obj) if n.endswith(suffix))
        found = [os.path.join(obj, n) for n in names if os.path.isdir(os.path.join(obj, n))]
        return found[0] if found else None

    def initrd(self):
        if self._initrd is None:
            ui.step("packing the guest initramfs (busybox, labs, ftracetest)")
            self._initrd = initramfs.build(self.build_dir, self.tree.path, self.extra_files)
        return self._initrd

    def timeout_for(self, plan, k=None):
        """The one time limit of every guest run, plain or under gdb: the
        user's TIMEOUT when given, else qemu.timeout_for(plan) (longer for
        a debug kernel k)."""
        return qemu.timeout_for(plan, self.timeout, debug=bool(k and k.debug))

    def boot(self, k, plan, tag):
        """Boot kernel k with a plan (list of items); returns (qemu.Run, report)."""
        log = os.path.join(self.logs, f"{tag}.log")
        ui.step(f"booting {k.label} in QEMU: {', '.join(plan)} (console: {os.path.relpath(log)})")
        run = qemu.boot(k, self.initrd(), plan, log, self.timeout_for(plan, k))
        return run, protocol.parse(run.lines)


def grade_boot(run, tally, label):
    """The boot itself: it must end cleanly, or nothing else can be trusted."""
    if run.ok:
        return True
    tally.record(False, f"{label}: guest run", run.status)
    ui.block(run.explain())
    return False


def grade_lab(report, cp, kernel, tally, only=None, alike=None, name=None):
    """Grade lab cp's checks as run on 'kernel' (only check 'only', when
    given). alike: grading a debug kernel, whose configuration (two CPUs,
    other inlining) changes some outputs on upstream 6.1 itself. On
    upstream, a dict that collects those outputs, {(lab, check id):
    lines}, reported and not graded; on a checkpoint, that dict: such a
    check passes when its output is upstream's on the same configuration.
    name: the kernel's name in the verdicts (kbuild.Kernel.name)."""
    tag = name or series.kernel_name(kernel)
    key = f"{cp.number:02d}"
    lab = report.labs.get(key)
    prefix = f"lab {key} [{tag}]"
    absent_expected = not series.has_checkpoint(kernel, cp.number)
    if lab is None or not lab.finished:
        return tally.record(False, f"{prefix}: the lab did not run to its end")
    if lab.unsupported:
        if absent_expected:
            return tally.record(True, f"{prefix}: needs {lab.unsupported}, "
                                "missing before its checkpoint, as expected")
        return tally.record(False, f"{prefix}: requirement missing: {lab.unsupported}")
    expected = grade.load_expected(cp.lab_dir)
    before = grade.load_expected(cp.lab_dir, grade.BEFORE)
    if only:
        expected = {only: expected[only]} if only in expected else {}
    ran = {c.id for c in lab.checks}
    for ident in expected:
        if ident not in ran:
            tally.record(False, f"{prefix} check '{ident}' did not run")
    for check in lab.checks:
        outcome = grade.grade_check(check, expected, kernel, cp.number, before)
        outcome.title = f"{prefix} {check.title}"
        if alike is not None and not outcome.ok:
            if kernel == "upstream":
                alike[(key, check.id)] = grade.normalise(check.output)
                ui.skip(outcome.title, "output changed by this configuration; the reference "
                        "for the checkpoint's debug kernel")
                ui.block(outcome.evidence)
                continue
            if (key, check.id) in alike:
                same = grade.grade_check(check, {check.id: alike[(key, check.id)]}, kernel,
                                         cp.number)
                if same.ok:
                    outcome.ok, outcome.evidence = True, []
                    outcome.note = "as upstream 6.1 on this configuration"
        tally.record(outcome.ok, outcome.title, f"({outcome.note})" if outcome.note else "")
        ui.block(outcome.evidence)


def grade_ftracetest(report, kernel, tally, log, name=None):
    matrix = ftmatrix.load()
    tag = name or series.kernel_name(kernel)
    for test in matrix.tests():
        row = matrix.row(test)
        want = row.expected(kernel)
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


def run_gdb_lab(session, k, cp, kernel, tally, port=None, only=None):
    """A lab with "# flags: gdb": boot paused, gdb runs the lab's script
    unattended (serving its requests), then grade the guest's output and,
    on the lab's own checkpoint, gdb's output too."""
    ui.step(f"booting {k.label} under gdb for lab {cp.number:02d} (it asks gdb to act)")
    ok, evidence, run = gdbrun.unattended(k, session.initrd(), cp, port or gdbrun.free_port(),
                                          session.logs,
                                          lambda plan: session.timeout_for(plan, k),
                                          plan=gdbrun.lab_plan(cp, only))
    if run.broken:
        tally.record(False, f"lab {cp.number:02d} [{k.name}] under gdb")
        ui.block(evidence)
        return
    grade_lab(protocol.parse(run.console), cp, kernel, tally, only)
    if only:
        return      # gdb.expected is what the whole lab makes gdb print
    if kernel == cp.number:
        tally.record(ok, f"gdb lab {cp.number:02d} [{k.name}]")
        ui.block(evidence)
    elif kernel == cp.number - 1:
        gdb_before(session, k, cp, tally, booted=run)


def gdb_before(session, k, cp, tally, booted=None):
    """Lab cp's gdb script on k, the checkpoint before cp's: it must fail
    there as labs/NN-*/gdb.before records (gdbrun.previous_checkpoint)."""
    ok, evidence, record, how = gdbrun.previous_checkpoint(
        k, session.initrd(), cp, session.logs, session.timeout_for, booted=booted)
    at = record[-1] if record else ""
    tally.record(ok, f"gdb lab {cp.number:02d} [{k.name}] fails before its checkpoint, {how}",
                 f"(at: {at})" if ok else "")
    ui.block(evidence)


def lab_item(number, only=None):
    """The plan item that runs lab 'number' (only its check 'only')."""
    return f"lab:{number:02d}" + (f":{only}" if only else "")


def run_one_lab(session, number, kernel, only=None, debug=False):
    """make lab N [KERNEL=upstream] [CHECK=ID] [DEBUG=1]."""
    cp = series.lookup(number)
    k = session.kernel(kernel, debug)
    tally = ui.Tally()
    if cp.needs_gdb:
        run_gdb_lab(session, k, cp, kernel, tally, only=only)
        return tally
    run, report = session.boot(k, [lab_item(number, only)], f"lab{number:02d}-{k.name}")
    if grade_boot(run, tally, f"lab {number:02d} [{k.name}]"):
        grade_lab(report, cp, kernel, tally, only)
    print(f"console log: {os.path.relpath(run.log)}")
    return tally
