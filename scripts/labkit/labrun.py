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

    def prepare(self):
        deps.require()
        os.makedirs(self.logs, exist_ok=True)
        self.tree.ensure()

    def kernel(self, kernel):
        """Check out and build 'upstream' or checkpoint N; returns kbuild.Kernel."""
        k = kbuild.Kernel(self.build_dir, kernel)
        with tree.lock(self.build_dir):
            branch = self.tree.checkout(kernel)
            ui.debug(f"tree at {branch}")
            if kernel != "upstream":
                prev = series.kernel_name("upstream" if kernel == 0 else kernel - 1)
                k.seed(os.path.join(self.build_dir, "obj", prev))
            k.build(self.tree.path)
        return k

    def initrd(self):
        if self._initrd is None:
            ui.step("packing the guest initramfs (busybox, labs, ftracetest)")
            self._initrd = initramfs.build(self.build_dir, self.tree.path)
        return self._initrd

    def timeout_for(self, plan):
        """The one time limit of every guest run, plain or under gdb: the
        user's TIMEOUT when given, else default_timeout(plan)."""
        return self.timeout or default_timeout(plan)

    def boot(self, k, plan, tag):
        """Boot kernel k with a plan (list of items); returns (qemu.Run, report)."""
        timeout = self.timeout_for(plan)
        log = os.path.join(self.logs, f"{tag}.log")
        append = qemu.append(plan, k.kernel)
        ui.step(f"booting {k.label} in QEMU: {', '.join(plan)} (console: {os.path.relpath(log)})")
        run = qemu.run(qemu.command(k.bzimage, self.initrd(), append), log, timeout)
        return run, protocol.parse(run.lines)


# Time allowed for each long plan item, on top of the boot: upper limits,
# not durations. Measured on two cores: the conformance corpus takes 1 to
# 2 minutes on an idle machine (checkpoint 0, whose probes make ftrace call
# every function, the longest) and up to 10 minutes while kernels build
# beside it; the whole ftracetest suite 3 to 9 minutes.
# Under gdb ("gdb:NN", "gdb-selftest") gdb loads vmlinux and its scripts
# first, and stops the guest at each breakpoint: 2 more minutes, which
# keeps the 4 minutes these runs have always had.
ITEM_TIME = {"ftracetest": 420, "conformance": 1200, "ftracetest-all": 1200,
             "gdb:": 120, "gdb-selftest": 120, "docexamples": 300}


def item_time(item):
    """ITEM_TIME of a plan item; "gdb:" stands for every "gdb:NN"."""
    if item.startswith("gdb:"):
        item = "gdb:"
    return ITEM_TIME.get(item, 0)


def default_timeout(plan):
    labs = sum(1 for p in plan if p.startswith("lab:"))
    return 120 + 30 * max(0, labs - 1) + sum(item_time(p) for p in plan)


def grade_boot(run, tally, label):
    """The boot itself: it must end cleanly, or nothing else can be trusted."""
    if run.ok:
        return True
    tally.record(False, f"{label}: guest run", run.status)
    ui.block(run.explain())
    return False


def grade_lab(report, cp, kernel, tally):
    """Grade lab cp's checks as run on 'kernel'."""
    tag = series.kernel_name(kernel)
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
    ran = {c.id for c in lab.checks}
    for ident in expected:
        if ident not in ran:
            tally.record(False, f"{prefix} check '{ident}' did not run")
    for check in lab.checks:
        outcome = grade.grade_check(check, expected, kernel, cp.number)
        outcome.title = f"{prefix} {check.title}"
        tally.record(outcome.ok, outcome.title, f"({outcome.note})" if outcome.note else "")
        ui.block(outcome.evidence)


def grade_ftracetest(report, kernel, tally, log):
    matrix = ftmatrix.load()
    tag = series.kernel_name(kernel)
    for test in matrix.tests():
        row = matrix.row(test)
        want = row.expected(kernel)
        lines, _rc = report.ftracetest.get(test, ([], None))
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


def run_gdb_lab(session, k, cp, kernel, tally, port=None):
    """A lab with "# flags: gdb": boot paused, gdb runs the lab's script
    unattended (serving its requests), then grade the guest's output and,
    on the lab's own checkpoint, gdb's output too."""
    ui.step(f"booting {k.label} under gdb for lab {cp.number:02d} (it asks gdb to act)")
    ok, evidence, run = gdbrun.unattended(k, session.initrd(), cp, port or free_port(),
                                          session.logs, session.timeout_for)
    if run.broken:
        tally.record(False, f"lab {cp.number:02d} [{k.name}] under gdb")
        ui.block(evidence)
        return
    grade_lab(protocol.parse(run.console), cp, kernel, tally)
    if kernel == cp.number:
        tally.record(ok, f"gdb lab {cp.number:02d} [{k.name}]")
        ui.block(evidence)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_one_lab(session, number, kernel):
    """make lab N [KERNEL=upstream]."""
    cp = series.lookup(number)
    k = session.kernel(kernel)
    tally = ui.Tally()
    if cp.needs_gdb:
        run_gdb_lab(session, k, cp, kernel, tally)
        return tally
    run, report = session.boot(k, [f"lab:{number:02d}"], f"lab{number:02d}-{k.name}")
    if grade_boot(run, tally, f"lab {number:02d} [{k.name}]"):
        grade_lab(report, cp, kernel, tally)
    print(f"console log: {os.path.relpath(run.log)}")
    return tally
