#!/usr/bin/env python3
"""Maintainers: find, by running them, the feature checks of lab N that
each hole of exercise N makes fail. For each hole K, checkpoint N with
hole K alone left out (exercise.make_isolated, branch
skeleton/cpN-only-K) is built and booted with lab N, as make grade boots
a learner's kernel (a crash fails the check it hit; the checks it kept
from running run again in boots of their own); the feature checks that
do not print lab N's 'expected' there are the ones hole K needs: its
"checks:" line in exercises/NN-*/holes, shown to the learner in the
table of the handout's Exercise section.

    scripts/prove-holes.py N [K...]          print, per hole, found and declared
    scripts/prove-holes.py --write N [K...]  and rewrite the "checks:" lines

It builds in build/ (BUILD_DIR=... for another), one object folder per
checkpoint (build/obj/isolated-cpN, started from checkpoint N's): each
hole costs a rebuild of its file and a boot (more after a crash). Exits 1 when a hole's
checks differ from its "checks:" line (without --write) or a run went
wrong."""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labkit import exercise, grade, holes, labrun, series, studentgrade, tree, ui  # noqa: E402
from labkit.errors import HarnessError  # noqa: E402
from labkit.kernels import KernelId  # noqa: E402


def failing_checks(session, number, k):
    """The feature checks of lab N that fail on checkpoint N without hole
    k, run as make grade runs them (a crash fails the check it hit, and
    the checks it kept from running run again in boots of their own), or
    (None, why) when some check never ran."""
    cp = series.lookup(number)
    with tree.lock(session.build_dir):
        exercise.make_isolated(session.tree, number, k)
    kern = session.kernel(KernelId.of(number).built_from(exercise.isolated_ref(number, k),
                                                         "isolated"))
    ran, _gdb = studentgrade.run_labs(session, kern, number, [cp],
                                      f"isolated-cp{number}-hole{k}")
    # A module_check runs only where the sample module is (a debug
    # kernel); the isolated kernel is plain, so it is not expected here.
    feature = [c.id for c in cp.checks() if c.kind == "check" and c.runs_on(kern.id)]
    key = f"{number:02d}"
    never = [ident for ident in feature
             if (key, ident) not in ran.checks and (key, ident) not in ran.hit]
    if never:
        return None, f"checks that never ran: {' '.join(never)} (logs: build/logs/isolated-*)"
    expected = grade.load_expected(cp.lab_dir)
    before = grade.load_expected(cp.lab_dir, grade.BEFORE)
    passed = {ident for (lab, ident), c in ran.checks.items()
              if lab == key and grade.grade_check(c, expected, kern.id.plain(), number,
                                                  before).ok}
    crashed = sorted(ident for lab, ident in ran.hit if lab == key)
    note = f" (a crash or hang cut short: {' '.join(crashed)})" if crashed else ""
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
