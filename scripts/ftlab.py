#!/usr/bin/env python3
"""ftrace trigger labs: the host-side harness behind the Makefile.

targets:
  lab N      build checkpoint N, boot it in QEMU, run lab N, grade it
  gdb N      boot checkpoint N paused and attach gdb with the lab helpers
  shell N    boot checkpoint N to a busybox shell in tracefs
  kernel N   build checkpoint N; print the paths of its bzImage and vmlinux
  report N   lab N's last run as a page, build/reports/labNN.html: each
             check's verdict and diff, and with TRACE=1's traces a timeline
             of each check's events (KERNEL=M: the run on checkpoint M, in
             build/reports/labNN-cpM.html; CHECK=ID: that check alone, in
             labNN[-cpM]-ID.html; SCREENSHOT=1: a picture of the page too,
             taken in headless Chromium, beside it as .png)
  kernelshark N
             the traces of lab N's last TRACE=1 run in KernelShark (without
             a display, or with SCREENSHOT=1: a picture of it, taken under
             Xvfb, in build/traces/labNN-KERNEL[-CHECK].png; CHECK=ID:
             that check's trace only)
  list       checkpoints and labs, with their state
  docs       the HTML and text docs, in build/docs/ (docs N: checkpoint N's view;
             ANSWERS=0: without the answers to the Questions, ANSWERS=1:
             every answer shown; build/docs-student/, build/docs-key/)
  check      everything: harness tests, patches, docs, every kernel and lab
  bench      what each mechanism costs in the guest, and the lab loop's
             times on this host, into build/bench/ (FULL=1: also a cold
             first lab and a whole make check; BENCH_KERNELS="0 1")
  clean      remove what was built, keep the extracted kernel tree
  distclean  remove all of build/
  deps       install the Debian packages the labs need
  rebase     move the series to another Debian linux-source version
             (make rebase BASE=VERSION; maintainers)
  exercise N checkpoint N as an exercise: your branch student/cpN in
             build/linux, its holes listed (TODO=k: holes before k filled)
  save N     your work on exercise N into work/NN.patch (commit it)
  grade N    save, build and boot your checkpoint N, score it; lab N runs
             on its debug variant too (KASAN, lockdep, kmemleak, two vCPUs),
             where a report fails the check it hit (RESULTS=DIR: JSON and
             JUnit there; QUICK=1: lab N alone, plain kernel, no score)
  solution N the reference's diff against your exercise N; it asks first
             (y/N on the terminal) until a make grade N of your current work
             has passed (FORCE=1: no question)
  hint N.K   the next hint for hole K of exercise N not shown yet: a level
             at a time, each telling more (LEVEL=L: level L; 0 is the goal)
  mutants N  the grader's own test: each wrong body of exercises/NN-*/mutants
             in its hole of checkpoint N, built, booted with lab N and
             CAUGHT or MISSED by its checks (ID=N.K-slug: that one alone;
             LIST=1: list them and check that each applies, build nothing;
             DEBUG=1: those whose catcher is a kernel report run on the
             debug kernel too when the plain one misses them;
             RESULTS=DIR: mutants.json and mutants.csv there)
  robust [N] the robustness tests (hostile input, permissions, two CPUs,
             module lifetime) on checkpoint N (default: the last) and
             upstream; with DEBUG=1 on their debug variants; with FAULTS=1
             only the fault-injection sweep, every write, on the debug
             variants; with KCSAN=1 only the data-race detector's run
             (concurrency test and labs) on their KCSAN variants

options (make variables in brackets):
  --kernel upstream   run on the unmodified base instead (KERNEL=upstream)
  --kernel N          lab, gdb, shell, kernel: on checkpoint N's kernel instead
                      (KERNEL=N; make lab 6 KERNEL=5: lab 6 on checkpoint 5)
  --build-dir DIR     where the tree, objects and logs go (BUILD=DIR)
  --gdb-port PORT     gdbstub port for "gdb" (GDB_PORT=PORT, default: a free one)
  --timeout SECONDS   guest time limit (TIMEOUT=SECONDS)
  --list              with lab: list the lab's checks, run nothing (LIST=1)
  --check ID          with lab: run only that check; with kernelshark: open only
                      its trace; with report: show only it (CHECK=ID)
  --base VERSION      with rebase: the Debian version to move to (BASE=...)
  --verbose           show the commands run (V=1)
  --debug             lab, gdb, shell, kernel, robust, grade with --quick: the
                      debug variant (KASAN, lockdep, two vCPUs); check: the
                      debug variants of every checkpoint, not only the last
                      (DEBUG=1)
  --seed S            robust, check: the hostile-input seed (SEED=S)
  --results DIR       check, lab, grade: also write the verdicts as DIR/junit.xml
                      and DIR/summary.json for CI (RESULTS=DIR)
  --answers 0|1       docs: the student edition without the answers to the
                      handouts' Questions, or the instructor's key (ANSWERS=)
  --student           lab, gdb, shell, kernel: your exercise branch
                      student/cpN instead of the checkpoint (STUDENT=1; with
                      DEBUG=1, its debug variant)
  --quick             with grade: lab N alone on the plain kernel, a progress
                      check with no score (QUICK=1); with --debug, on the
                      debug kernel too (QUICK=1 DEBUG=1)
  --todo K            with exercise: holes before K come filled in (TODO=K)
  --force             with distclean: remove work not saved; with solution: no
                      question (FORCE=1)
  --level L           with hint: that level of help (LEVEL=L)
  --id ID             with mutants: that mutant alone (ID=3.3-leak-probe)
  --faults            with robust: every registering write failed at each of
                      its allocations in turn, on the debug kernels (FAULTS=1)
  --kcsan             with robust: the concurrency test and the labs on KCSAN
                      kernels, data races in the series' code fail (KCSAN=1)
  --screenshot        with kernelshark: a picture under Xvfb, not a window; with
                      report: a picture of the page (SCREENSHOT=1)
  --trace             lab: each check's ftrace buffers saved as trace-cmd's
                      trace.dat in build/traces/labNN-KERNEL/; shell: the
                      guest's save-trace NAME saves them to
                      build/traces/shell-KERNEL/NAME.dat (TRACE=1)
  --fresh             with check: boot every guest, also those whose kernel,
                      initramfs and plan are unchanged since their last run
                      (by default make check grades those runs' logs again)
                      (FRESH=1)
The switches DEBUG, V, LIST, FULL, STUDENT, FORCE, FRESH, FAULTS, KCSAN,
TRACE, SCREENSHOT and QUICK are on with 1 and off with 0.
"""

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labkit import (deps, docs, exercise, gdbrun, interrupt, kbuild, kernels,  # noqa: E402
                    labrun, qemu, rebase, series, source, traces, tree, ui)
from labkit.errors import HarnessError  # noqa: E402

NUMBERED = ("lab", "gdb", "shell", "kernel")
EXERCISE = ("exercise", "save", "grade", "solution")
COMMANDS = NUMBERED + EXERCISE + ("hint", "mutants", "list", "docs", "check", "bench", "clean",
                                  "deps", "rebase", "robust", "kernelshark", "report")


class UsageError(HarnessError):
    """A command line the harness cannot run (exit code 2, as argparse's)."""
    exit_code = 2


def available():
    cps = series.checkpoints()
    if not cps:
        return "none yet"
    return ", ".join(f"{cp.number} ({cp.slug})" for cp in cps)


def parse_checkpoint(command, text, given=""):
    """The checkpoint number of 'make lab N' (given: how it was given, as
    "KERNEL="), or a UsageError that lists the checkpoints there are."""
    if text is None or text == "":
        raise UsageError(f"which checkpoint? Say 'make {command} N'. Checkpoints: {available()}")
    if not text.isdigit():
        raise UsageError(f"{given}'{text}' is not a checkpoint number. "
                         f"Checkpoints: {available()}")
    number = int(text)
    if series.lookup(number) is None:
        raise UsageError(f"{given}there is no checkpoint {number}. Checkpoints: {available()}")
    return number


# The make variables that are switches: 1 is on, 0 (or nothing) off.
SWITCHES = {"debug": "DEBUG", "verbose": "V", "list": "LIST", "full": "FULL",
            "student": "STUDENT", "force": "FORCE", "fresh": "FRESH", "faults": "FAULTS",
            "kcsan": "KCSAN", "trace": "TRACE", "screenshot": "SCREENSHOT", "quick": "QUICK"}

# Which targets each make variable goes with (the others take any target).
GOES_WITH = {"kernel": ("KERNEL", NUMBERED + ("robust", "kernelshark", "report")),
             "gdb_port": ("GDB_PORT", ("gdb",)),
             "list": ("LIST", ("lab", "mutants")),
             "id": ("ID", ("mutants",)),
             "check": ("CHECK", ("lab", "kernelshark", "report")),
             "base": ("BASE", ("rebase",)),
             "full": ("FULL", ("bench", "check")),
             "fresh": ("FRESH", ("check",)),
             "faults": ("FAULTS", ("robust",)),
             "kcsan": ("KCSAN", ("robust",)),
             "trace": ("TRACE", ("lab", "shell")),
             "screenshot": ("SCREENSHOT", ("kernelshark", "report")),
             "quick": ("QUICK", ("grade",)),
             "answers": ("ANSWERS", ("docs",)),
             "force": ("FORCE", ("clean", "solution")),
             "level": ("LEVEL", ("hint",)),
             "bench_kernels": ("BENCH_KERNELS", ("bench",)),
             "debug": ("DEBUG", NUMBERED + ("robust", "check", "mutants", "grade")),
             "seed": ("SEED", ("robust", "check"))}


def switch(value, variable):
    """The truth of a switch as make passed it ("--debug=0"): 1 on, 0 or
    nothing off, anything else a UsageError naming the variable."""
    if value in ("1", True):
        return True
    if value in ("0", "", None, False):
        return False
    raise UsageError(f"{variable}={value}: say {variable}=1 (on) or {variable}=0 (off)")


def one_number(command, words, n):
    """The one checkpoint word of 'make lab 3' or 'make lab N=3' (None
    without one); a UsageError for another target, two numbers, or a
    number and a different N=."""
    others = [w for w in words if w in COMMANDS + ("distclean", "help")]
    if others:
        raise UsageError(f"one target at a time: 'make {command}' and 'make {others[0]}' "
                         "were asked together; run them one after the other")
    if len(words) > 1:
        raise UsageError(f"one checkpoint at a time: 'make {command} {' '.join(words)}' "
                         f"names {len(words)}; say 'make {command} {words[0]}'")
    if words and n is not None and words[0] != n:
        raise UsageError(f"two checkpoints: 'make {command} {words[0]}' and N={n}; "
                         "say one of them")
    return words[0] if words else n


def check_combinations(args):
    """Each make variable set goes with the target it was given with."""
    for dest, (variable, targets) in GOES_WITH.items():
        if getattr(args, dest) in (None, False) or args.command in targets:
            continue
        listed = ", ".join(f"'make {t}'" for t in targets)
        raise UsageError(f"{variable}= goes with {listed}, not 'make {args.command}'")
    if args.kcsan and (args.debug or args.faults):
        raise UsageError(f"KCSAN=1 goes without {'DEBUG' if args.debug else 'FAULTS'}=1: "
                         "KCSAN has kernels of its own (KASAN, on the debug kernels, "
                         "excludes it)")
    if args.debug and args.command == "grade" and not args.quick:
        raise UsageError("DEBUG=1 goes with 'make grade N QUICK=1' (lab N on the plain and the "
                         "debug kernel); a whole 'make grade N' runs the debug kernel anyway")
    if args.force and args.command == "clean" and not args.all:
        raise UsageError("FORCE=1 goes with 'make distclean', not 'make clean' (which keeps "
                         "the kernel tree and the work in it)")


def kernel_word(command, word, given=""):
    """The kernel (a kernels.KernelId) a word of the command line names:
    "upstream" or a checkpoint number."""
    if word == kernels.UPSTREAM:
        return kernels.KernelId.upstream()
    return kernels.KernelId.of(parse_checkpoint(command, word, given))


def parse_kernel(args):
    """KERNEL=upstream, or KERNEL=N: another checkpoint's kernel for lab,
    gdb, shell and kernel (make lab 6 KERNEL=5: lab 6 on checkpoint 5).
    A kernels.KernelId, or None without KERNEL=."""
    if args.kernel is None:
        return None
    if args.command == "robust" and args.kernel != kernels.UPSTREAM:
        raise UsageError("make robust takes KERNEL=upstream; a checkpoint is 'make robust N'")
    return kernel_word(args.command, args.kernel, f"KERNEL={args.kernel}: ")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="ftlab", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                usage="make TARGET [N] [KERNEL=upstream|N] ...")
    p.add_argument("command", choices=COMMANDS, metavar="TARGET")
    p.add_argument("words", nargs="*", help=argparse.SUPPRESS)
    p.add_argument("--n", help=argparse.SUPPRESS)
    p.add_argument("--kernel")
    p.add_argument("--build-dir", default=os.environ.get("FTLAB_BUILD_DIR",
                                                         os.path.join(series.ROOT, "build")))
    p.add_argument("--gdb-port", type=int)
    p.add_argument("--timeout", type=int)
    p.add_argument("--base")
    p.add_argument("--check")
    p.add_argument("--all", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--bench-kernels")
    p.add_argument("--seed", type=int)
    p.add_argument("--results")
    for dest in SWITCHES:
        p.add_argument(f"--{dest}", nargs="?", const="1", default="0")
    p.add_argument("--answers", choices=["0", "1"])
    p.add_argument("--todo", type=int)
    p.add_argument("--level", type=int)
    p.add_argument("--id")
    args = p.parse_intermixed_args(argv)
    for dest, variable in SWITCHES.items():
        setattr(args, dest, switch(getattr(args, dest), variable))
    check_combinations(args)
    args.number = one_number(args.command, args.words, args.n)
    if args.command == "robust" and args.number not in (None, ""):
        args.number = parse_checkpoint(args.command, args.number)
    elif args.command == "robust":
        cps = series.checkpoints()
        args.number = cps[-1].number if cps else None
    elif args.command in NUMBERED + EXERCISE + ("kernelshark", "report", "mutants"):
        args.number = parse_checkpoint(args.command, args.number)
    elif args.command == "docs" and args.number is not None:
        args.number = parse_checkpoint(args.command, args.number)
    elif args.command == "hint":
        try:
            args.number, args.hole = exercise.parse_hole(args.number)
        except exercise.ExerciseError as e:
            raise UsageError(str(e)) from None
    elif args.number is not None:
        raise UsageError(f"'make {args.command}' takes no checkpoint number "
                         f"(it was given '{args.number}')")
    args.kernel = parse_kernel(args)
    args.answers = None if args.answers is None else args.answers == "1"
    if args.check:
        ids = [c.id for c in series.lookup(args.number).checks()]
        if args.check not in ids:
            raise UsageError(f"lab {args.number:02d} has no check '{args.check}'. "
                             f"Its checks: {', '.join(ids)} ('make lab {args.number} LIST=1')")
    check_student_options(args)
    if args.command == "rebase" and not args.base:
        package = series.base_package()
        raise UsageError(f"which version? Say 'make rebase BASE=VERSION' (a version "
                         f"'apt-cache madison {package}' lists)")
    args.build_dir = os.path.abspath(args.build_dir)
    args.results = args.results and os.path.abspath(args.results)
    return args


def check_student_options(args):
    """STUDENT=1, TODO=k and RESULTS=DIR go with the targets they change."""
    if args.student and args.command not in NUMBERED:
        raise UsageError("STUDENT=1 goes with 'make lab|gdb|shell|kernel N'")
    if args.student and args.kernel:
        raise UsageError(f"STUDENT=1 builds your exercise; KERNEL= names another kernel "
                         f"({args.kernel.label})")
    if args.todo is not None and args.command != "exercise":
        raise UsageError("TODO=k goes with 'make exercise N'")
    if args.todo is not None and args.todo < 1:
        raise UsageError("TODO=k counts holes from 1")
    if args.results and args.command not in ("check", "lab", "grade", "mutants"):
        raise UsageError("RESULTS=DIR goes with 'make check', 'make lab N', 'make grade N' "
                         "and 'make mutants N'")
    if args.command in EXERCISE + ("mutants",):
        from labkit import holes
        holes.load(series.lookup(args.number))      # HolesError: no exercise there


def target_id(args, kernel_tree=None):
    """The one place where the command line becomes a kernel (a
    kernels.KernelId): KERNEL= when given, else the checkpoint's own;
    DEBUG=1 its debug variant, KCSAN=1 its KCSAN one; STUDENT=1 the
    learner's exercise branch as it is (in kernel_tree, build/linux)."""
    # each variant but plain is a switch of its own name (DEBUG=1, KCSAN=1)
    variant = next((v for v in kernels.VARIANTS if v != "plain" and getattr(args, v)), "plain")
    if args.student:
        return exercise.kernel_id(kernel_tree, "student", args.number, variant)
    kid = args.kernel or kernels.KernelId.of(args.number)
    return kid.with_variant(variant)


def cmd_list(args):
    cps = series.checkpoints()
    print(f"{'N':>2}  {'checkpoint':<22} {'patches':>7}  {'kernel':<9} lab")
    for cp in cps:
        k = kbuild.Kernel(args.build_dir, kernels.KernelId.of(cp.number))
        state = "built" if k.built() else "not built"
        lab = cp.title if cp.has_lab else "(no lab yet)"
        print(f"{cp.number:>2}  {cp.name:<22} {len(cp.patches()):>7}  {state:<9} {lab}")
    up = kbuild.Kernel(args.build_dir, kernels.KernelId.upstream())
    print(f"{'':>2}  {'upstream (reference)':<22} {'-':>7}  {'built' if up.built() else 'not built':<9}")
    return 0


def cmd_list_checks(args):
    """make lab N LIST=1: the lab's checks, as lab.sh registers them."""
    cp = series.lookup(args.number)
    checks = cp.checks()
    print(f"lab {cp.number:02d}: {cp.title}")
    width = max((len(c.id) for c in checks), default=2)
    kinds = max((len(c.kind) for c in checks), default=4)
    for c in checks:
        print(f"  {c.id:<{width}}  {c.kind:<{kinds}}  {c.title}"
              + (" (loads a module: DEBUG=1 only)" if c.modules else ""))
    print(f"run one with 'make lab {cp.number} CHECK=ID'")
    return 0


def cmd_clean(args):
    if args.all:
        kernel_tree = tree.Tree(args.build_dir)
        unsaved = exercise.unexported(kernel_tree)
        if unsaved and not args.force:
            raise HarnessError(
                "build/linux holds exercise work that work/ does not have: "
                + ", ".join(f"'make save {n}'" for n in unsaved)
                + " first (or 'make distclean FORCE=1' to throw it away)")
        aside = exercise.set_aside_branches(kernel_tree)
        if aside and not args.force:
            raise HarnessError(
                "build/linux holds work set aside when make exercise took a newer patch: "
                + ", ".join(aside) + f" (see it with 'git -C {kernel_tree.path} diff "
                f"{aside[0].split('-old-')[0]} {aside[0]}'); 'make distclean FORCE=1' "
                "throws it away")
        shutil.rmtree(args.build_dir, ignore_errors=True)
        print(f"removed {args.build_dir}")
        return 0
    for sub in ("obj", "logs", "initramfs-src", "initramfs.cpio", "initramfs-extra", "traces",
                "bench",
                *docs.EDITIONS.values()):
        path = os.path.join(args.build_dir, sub)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.unlink(path)
    print(f"cleaned {args.build_dir} (the extracted kernel tree stays; 'make distclean' removes it)")
    return 0


def cmd_docs(args):
    """make docs [N]: the whole series, or checkpoint N's view."""
    deps.require(deps.DOCS_PACKAGES)
    out = docs.out_dir(args.number, args.build_dir, args.answers)
    view = "the whole series" if args.number is None else f"checkpoint {args.number}"
    which = {None: "", False: ", student edition", True: ", instructor's key"}[args.answers]
    ui.step(f"building the docs of {view}{which} (asciidoctor, dot, pandoc)")
    ok, messages = docs.build(out, args.number, args.answers)
    ui.block(messages)
    if ok:
        for path in docs.outputs(out):
            print(path)
    return 0 if ok else 1


def cmd_exercise(args, session):
    """make exercise|save|grade|solution N (exercise.py)."""
    if args.command == "solution":
        ui.progress_to_stderr()     # stdout is the diff: git apply reads it
    session.prepare()
    number = args.number
    if args.command == "exercise":
        with tree.lock(session.build_dir):
            branch = exercise.start(session.tree, number, args.todo)
        ui.step(f"exercise {number} is checked out in {session.tree.path}, branch {branch}")
        ui.block(exercise.todo_report(session.tree, number), indent="")
        print(f"\nEdit those files, then 'make lab {number} STUDENT=1' (or 'make grade "
              f"{number}'); 'make save {number}' keeps your work in work/{number:02d}.patch.")
        return 0
    if args.command == "solution":
        if not exercise.may_show_solution(session.tree, session.build_dir, number, args.force):
            ui.info(f"not shown; 'make hint {number}.K' gives hints on hole K")
            return 1
        print(exercise.solution(session.tree, number))
        return 0
    saved = exercise.save(session.tree, number)
    if saved:
        ui.step(f"saved your work in {os.path.relpath(saved)} (commit it with git)")
    else:
        ui.info(f"no work on exercise {number} yet: nothing saved")
    if args.command == "save":
        return 0
    from labkit import studentgrade
    work = exercise.work_digest(session.tree, number)
    k = session.kernel(exercise.kernel_id(session.tree, "student", number))
    result = studentgrade.grade(session, number, k, args.results, quick=args.quick,
                                quick_debug=args.quick and args.debug)
    rc = result.close() if isinstance(result, ui.Tally) else result
    if not args.quick:      # a quick grade runs lab N alone: no pass to record
        exercise.record_grade(session.build_dir, number, work, rc == 0)
    return rc


def cmd_mutants(args, session):
    """make mutants N [ID=...] [LIST=1] [DEBUG=1] [RESULTS=DIR] (mutants.py)."""
    from labkit import mutants
    if args.list:
        session.prepare()
        return mutants.list_mutants(session, args.number, args.id)
    return mutants.run(session, args.number, args.id, args.results, debug=args.debug)


def cmd_numbered(args, session):
    session.prepare()
    kid = target_id(args, session.tree)
    if args.command == "lab":
        tally = labrun.run_one_lab(session, args.number, kid, only=args.check,
                                   trace=args.trace)
        return tally.close(args.results, f"make lab {args.number}")
    k = session.kernel(kid)
    if args.command == "kernel":
        print(k.bzimage)
        print(k.vmlinux)
        return 0
    initrd = session.initrd()
    if args.command == "shell" and args.trace:
        return traces.shell(session, k)
    if args.command == "shell":
        ui.step(f"booting {k.label} to a shell (leave with 'reboot -f' or Ctrl-A X)")
        return qemu.interactive(k, initrd, ["shell"])
    cp = series.lookup(args.number)
    log = os.path.join(session.logs, f"gdb-{k.name}.console.log")
    gdbrun.interactive(k, initrd, cp, args.gdb_port or gdbrun.free_port(), log)
    return 0


def dispatch(argv):
    args = parse_args(argv)
    ui.set_verbose(args.verbose)
    os.environ["FTLAB_BUILD_DIR"] = args.build_dir
    if args.command == "list":
        return cmd_list(args)
    if args.command == "lab" and args.list:
        return cmd_list_checks(args)
    if args.command == "clean":
        return cmd_clean(args)
    if args.command == "docs":
        return cmd_docs(args)
    if args.command == "hint":
        for line in exercise.hint(args.build_dir, args.number, args.hole, args.level):
            print(line)
        return 0
    if args.command == "deps":
        return cmd_deps(args)
    session = labrun.Session(args.build_dir, args.timeout)
    cp = series.lookup(args.number) if args.command in NUMBERED else None
    session.packages = deps.needed(args.command, needs_gdb=bool(cp and cp.needs_gdb),
                                   full=args.full)
    if args.command == "check":
        from labkit import check
        session.debug_all = args.debug  # make check DEBUG=1: every checkpoint's debug variant
        session.seed = args.seed        # make check SEED=S: replay its hostile-input run
        session.full = args.full        # make check FULL=1: upstream's debug kernel, ftracetest on both
        session.results = args.results  # make check RESULTS=DIR: JUnit XML and JSON there
        session.reuse_runs = not args.fresh  # make check FRESH=1: boot every guest again
        return check.run(session)
    if args.command == "rebase":
        return rebase.rebase(session, args.base)
    if args.command == "bench":
        from labkit import bench
        chosen = bench.KERNELS
        if args.bench_kernels:
            chosen = [kernel_word("bench", w) for w in args.bench_kernels.split()]
        return bench.run(session, chosen, full=args.full)
    if args.command in EXERCISE:
        return cmd_exercise(args, session)
    if args.command == "mutants":
        return cmd_mutants(args, session)
    if args.command == "report":
        from labkit import report
        deps.require(report.PACKAGES + traces.PACKAGES)
        if args.screenshot:
            deps.require(report.RENDER_PACKAGES)
        return report.run(session, args.number, target_id(args), args.check,
                          args.screenshot)
    if args.command == "kernelshark":
        from labkit import kshark
        deps.require(kshark.SCREENSHOT_PACKAGES if args.screenshot or not os.environ.get("DISPLAY")
                     else kshark.PACKAGES)
        return kshark.run(session, args.number,
                          None if args.kernel is None else args.kernel.name,
                          args.check, args.screenshot)
    if args.command == "robust":
        from labkit import robust
        session.prepare()
        kid = target_id(args)
        if args.faults:
            return robust.run_faults_all(session, kid).close()
        if args.kcsan:
            from labkit import races
            return races.run_all(session, kid).close()
        return robust.run_all(session, kid, args.seed).close()
    return cmd_numbered(args, session)


def cmd_deps(args):
    """make deps: the packages, then whether the series' kernel source can
    be had here (nothing fetched: the first build does that)."""
    if not deps.ensure():
        return 1
    ok, line = source.status(args.build_dir)
    (ui.info if ok else ui.error)(line)
    return 0 if ok else 1


def main(argv):
    """Run one command. The harness's own errors (labkit.errors) end it
    with their message and exit code, Ctrl-C with exit code 130 once every
    guest is stopped (labkit.interrupt); anything else is a harness bug
    and stays a traceback."""
    interrupt.install()
    try:
        return dispatch(argv)
    except HarnessError as e:
        if str(e):
            ui.error(str(e))
        return e.exit_code
    except KeyboardInterrupt:
        ui.error("interrupted: the guests it started are stopped")
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
