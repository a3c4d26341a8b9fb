#!/usr/bin/env python3
"""Maintainers: find, by running them, the feature checks of lab N that
each hole of exercise N makes fail. For each hole K, checkpoint N with
hole K alone left out (exercise.make_isolated, branch
skeleton/cpN-only-K) is built and booted with lab N; the feature checks
that do not print lab N's 'expected' there are the ones hole K needs: its
"checks:" line in exercises/NN-*/holes, shown to the learner in the
table of the handout's Exercise section.

    scripts/prove-holes.py N [K...]          print, per hole, found and declared
    scripts/prove-holes.py --write N [K...]  and rewrite the "checks:" lines

It builds in build/ (BUILD_DIR=... for another), one object folder per
checkpoint (build/obj/isolated-cpN, started from checkpoint N's): each
hole costs a rebuild of its file and one boot. Exits 1 when a hole's
checks differ from its "checks:" line (without --write) or a run went
wrong."""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labkit import exercise, grade, holes, labrun, series, tree, ui  # noqa: E402
from labkit.errors import HarnessError  # noqa: E402


def _where(run):
    """The log to open for a guest run, plain or under gdb."""
    if hasattr(run, "where"):
        return run.where()
    return f"{run.status}; console: {os.path.relpath(run.log)}"


def failing_checks(session, number, k):
    """The feature checks of lab N that fail on checkpoint N without hole
    k, or (None, why) when the guest run went wrong before the lab's end."""
    cp = series.lookup(number)
    with tree.lock(session.build_dir):
        exercise.make_isolated(session.tree, number, k)
    kern = session.kernel(number, flavour="isolated", branch=exercise.isolated_ref(number, k))
    ok, report, run = exercise.boot_lab(session, kern, cp, name=f"isolated-cp{number}-hole{k}")
    lab = report.labs.get(f"{number:02d}")
    if lab is None or not lab.finished:
        return None, f"lab {number:02d} did not reach its end: {_where(run)}"
    expected = grade.load_expected(cp.lab_dir)
    before = grade.load_expected(cp.lab_dir, grade.BEFORE)
    feature = [c.id for c in cp.checks() if c.kind == "check"]
    passed = {c.id for c in lab.checks
              if grade.grade_check(c, expected, number, number, before).ok}
    note = "" if ok else f" (the run reported a problem: {_where(run)})"
    return [ident for ident in feature if ident not in passed], note


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true")
    ap.add_argument("number", type=int)
    ap.add_argument("holes", type=int, nargs="*")
    args = ap.parse_args()
    cp = series.lookup(args.number)
    hole_list = holes.load(cp)
    chosen = [h for h in hole_list if not args.holes or h.number in args.holes]
    session = labrun.Session(os.environ.get("BUILD_DIR", os.path.join(series.ROOT, "build")))
    session.prepare()
    differ = broken = 0
    for hole in chosen:
        ui.step(f"exercise {args.number}, hole {hole.number} alone: {hole.title}")
        try:
            found, note = failing_checks(session, args.number, hole.number)
        except HarnessError as e:
            found, note = None, str(e)
        if found is None:
            broken += 1
            ui.error(f"hole {hole.number}: {note}")
            continue
        same = set(found) == set(hole.checks)
        differ += not same
        ui.verdict(same, f"hole {args.number}.{hole.number} needs: {' '.join(found) or '-'}",
                   "" if same else f"(its checks: line says {' '.join(hole.checks) or '-'})")
        if note:
            ui.info(note)
        if args.write and not same:
            path = holes.holes_path(cp)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            with open(path, "w", encoding="utf-8") as f:
                f.write(holes.with_checks(text, hole.number, found))
    print(f"{len(chosen) - differ - broken} as declared, {differ} differ, {broken} went wrong")
    return 1 if broken or (differ and not args.write) else 0


if __name__ == "__main__":
    sys.exit(main())
