#!/usr/bin/env python3
"""Maintainers: run labs on one kernel many times in a row, with the host
loaded by a kernel build beside them, and count how often each check
passed. A check that passes only when the host is idle, or by luck of
timing, shows here as less than every run.

    scripts/soak.py [--runs 20] [--kernel 7] [--no-load] LAB...

Each run is one boot of the kernel (checkpoint --kernel, default the
last) running the labs named, in order. The load is a build of the same
kernel tree in an object folder of its own (build/obj/soak-load), with
the compiler cache off, started again whenever it ends: the two cores
stay busy for the whole soak. The report gives, per check, the runs it
passed, and for each failure the console log to open; it exits 1 unless
every check passed every run."""

import argparse
import os
import shutil
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labkit import grade, labrun, protocol, series, ui  # noqa: E402
from labkit.kernels import KernelId  # noqa: E402


class Load:
    """A kernel build that starts again whenever it ends, until stopped."""

    def __init__(self, tree, out_dir, log):
        self.tree, self.out_dir, self.log = tree, out_dir, log
        self.builds = 0
        self._stop = threading.Event()
        self._proc = None
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _make(self, *targets):
        with open(self.log, "a") as out:
            self._proc = subprocess.Popen(
                ["make", "-C", self.tree, f"O={self.out_dir}", "-j2", *targets],
                stdout=out, stderr=subprocess.STDOUT,
                env=dict(os.environ, CCACHE_DISABLE="1"))
            return self._proc.wait()

    def _loop(self):
        os.makedirs(self.out_dir, exist_ok=True)
        self._make("tinyconfig")
        while not self._stop.is_set():
            self._make("vmlinux")
            if not self._stop.is_set():
                self.builds += 1
                self._make("clean")

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
        self._thread.join()


def verdicts(report, labs, kernel):
    """{(lab, check id): passed} for one boot; a check that never ran
    counts as failed."""
    out = {}
    for cp in labs:
        expected = grade.load_expected(cp.lab_dir)
        before = grade.load_expected(cp.lab_dir, grade.BEFORE)
        lab = report.labs.get(f"{cp.number:02d}")
        ran = {c.id: c for c in lab.checks} if lab else {}
        for check in cp.checks():
            got = ran.get(check.id)
            out[(cp.number, check.id)] = bool(
                got and grade.grade_check(got, expected, kernel, cp.number, before).ok)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--kernel", type=int, default=series.checkpoints()[-1].number)
    ap.add_argument("--no-load", action="store_true", help="leave the host idle")
    ap.add_argument("labs", type=int, nargs="+")
    args = ap.parse_args()
    labs = [series.lookup(n) for n in args.labs]
    session = labrun.Session(os.environ.get("BUILD_DIR", os.path.join(series.ROOT, "build")))
    session.prepare()
    k = session.kernel(KernelId.of(args.kernel))
    plan = [protocol.lab_item(cp.number) for cp in labs]
    load = None
    if not args.no_load:
        out_dir = os.path.join(session.build_dir, "obj", "soak-load")
        shutil.rmtree(out_dir, ignore_errors=True)
        load = Load(session.tree.path, out_dir, os.path.join(session.logs, "soak-load.log"))
        load.start()
        ui.step(f"loading the host: a kernel build in {os.path.relpath(out_dir)}, ccache off")
    passed, failures = {}, []
    try:
        for i in range(1, args.runs + 1):
            run, report = session.boot(k, plan, f"soak-{i:02d}")
            got = verdicts(report, labs, KernelId.of(args.kernel))
            for key, ok in got.items():
                passed[key] = passed.get(key, 0) + ok
                if not ok:
                    failures.append((i, key, os.path.relpath(run.log)))
            if not run.ok:
                failures.append((i, ("run", run.status), os.path.relpath(run.log)))
            bad = [f"{n:02d}/{c}" for (n, c), ok in got.items() if not ok]
            ui.verdict(run.ok and not bad, f"run {i}/{args.runs}",
                       f"failed: {' '.join(bad)}" if bad else "")
    finally:
        if load:
            load.stop()
    print()
    for (number, ident), count in sorted(passed.items()):
        print(f"  lab {number:02d} {ident:24} passed {count}/{args.runs}")
    for i, key, log in failures:
        print(f"  run {i}: {key[0]} {key[1]}: see {log}")
    load_note = f", {load.builds} kernel build(s) beside them" if load else ", host idle"
    clean = sum(1 for i in range(1, args.runs + 1) if not any(f[0] == i for f in failures))
    print(f"{clean} of {args.runs} runs passed every check{load_note}")
    return 0 if clean == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
