#!/usr/bin/env python3
"""ftrace trigger labs: the host-side harness behind the Makefile.

targets:
  lab N      build checkpoint N, boot it in QEMU, run lab N, grade it
  gdb N      boot checkpoint N paused and attach gdb with the lab helpers
  shell N    boot checkpoint N to a busybox shell in tracefs
  kernel N   build checkpoint N; print the paths of its bzImage and vmlinux
  list       checkpoints and labs, with their state
  docs       the HTML and text docs, in build/docs/ (docs N: checkpoint N's view)
  check      everything: harness tests, patches, docs, every kernel and lab
  bench      what each mechanism costs in the guest, and the lab loop's
             times on this host, into build/bench/ (FULL=1: also a cold
             first lab and a whole make check; BENCH_KERNELS="0 1")
  clean      remove what was built, keep the extracted kernel tree
  distclean  remove all of build/
  deps       install the Debian packages the labs need
  rebase     move the series to another linux-source-6.1 version
             (make rebase BASE=6.1.19x-y; maintainers)
  robust [N] the robustness tests (hostile input, permissions, two CPUs,
             module lifetime) on checkpoint N (default: the last) and
             upstream; with DEBUG=1 on their debug variants

options (make variables in brackets):
  --kernel upstream   run on unmodified 6.1 instead (KERNEL=upstream)
  --build-dir DIR     where the tree, objects and logs go (BUILD=DIR)
  --gdb-port PORT     gdbstub port for "gdb" (GDB_PORT=PORT, default 1234)
  --timeout SECONDS   guest time limit (TIMEOUT=SECONDS)
  --list              with lab: list the lab's checks, run nothing (LIST=1)
  --check ID          with lab: run only that check (CHECK=ID)
  --base VERSION      with rebase: the Debian version to move to (BASE=...)
  --verbose           show the commands run (V=1)
  --debug             lab, gdb, shell, kernel, robust: the debug variant (KASAN,
                      lockdep, two vCPUs); check: the debug variants of every
                      checkpoint, not only the last (DEBUG=1)
  --seed S            robust, check: the hostile-input seed (SEED=S)
"""

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from labkit import (deps, docs, gdbrun, kbuild, labrun, qemu, rebase,  # noqa: E402
                    series, ui)
from labkit.errors import HarnessError  # noqa: E402

NUMBERED = ("lab", "gdb", "shell", "kernel")
COMMANDS = NUMBERED + ("list", "docs", "check", "bench", "clean", "deps", "rebase", "robust")


class UsageError(HarnessError):
    """A command line the harness cannot run (exit code 2, as argparse's)."""
    exit_code = 2


def available():
    cps = series.checkpoints()
    if not cps:
        return "none yet"
    return ", ".join(f"{cp.number} ({cp.slug})" for cp in cps)


def parse_checkpoint(command, text):
    """The checkpoint number of 'make lab N', or a UsageError that lists
    the checkpoints there are."""
    if text is None or text == "":
        raise UsageError(f"which checkpoint? Say 'make {command} N'. Checkpoints: {available()}")
    if not text.isdigit():
        raise UsageError(f"'{text}' is not a checkpoint number. Checkpoints: {available()}")
    number = int(text)
    if series.lookup(number) is None:
        raise UsageError(f"there is no checkpoint {number}. Checkpoints: {available()}")
    return number


def parse_args(argv):
    p = argparse.ArgumentParser(prog="ftlab", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                usage="make TARGET [N] [KERNEL=upstream] ...")
    p.add_argument("command", choices=COMMANDS, metavar="TARGET")
    p.add_argument("number", nargs="?")
    p.add_argument("--kernel", choices=["upstream"])
    p.add_argument("--build-dir", default=os.environ.get("FTLAB_BUILD_DIR",
                                                         os.path.join(series.ROOT, "build")))
    p.add_argument("--gdb-port", type=int, default=1234)
    p.add_argument("--timeout", type=int)
    p.add_argument("--base")
    p.add_argument("--list", action="store_true")
    p.add_argument("--check")
    p.add_argument("--all", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--full", action="store_true")
    p.add_argument("--bench-kernels")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--debug", action="store_true")
    p.add_argument("--seed", type=int)
    args = p.parse_intermixed_args(argv)
    if args.command == "robust" and args.number not in (None, ""):
        args.number = parse_checkpoint(args.command, args.number)
    elif args.command == "robust":
        cps = series.checkpoints()
        args.number = cps[-1].number if cps else None
    elif args.command in NUMBERED:
        args.number = parse_checkpoint(args.command, args.number)
    elif args.command == "docs" and args.number is not None:
        args.number = parse_checkpoint(args.command, args.number)
    elif args.number is not None:
        raise UsageError(f"'make {args.command}' takes no checkpoint number")
    if (args.list or args.check) and args.command != "lab":
        raise UsageError("LIST=1 and CHECK=ID go with 'make lab N'")
    if args.check:
        ids = [c.id for c in series.lookup(args.number).checks()]
        if args.check not in ids:
            raise UsageError(f"lab {args.number:02d} has no check '{args.check}'. "
                             f"Its checks: {', '.join(ids)} ('make lab {args.number} LIST=1')")
    if args.command == "rebase" and not args.base:
        raise UsageError("which version? Say 'make rebase BASE=6.1.NNN-N' (a version "
                         "'apt-cache madison linux-source-6.1' lists)")
    args.build_dir = os.path.abspath(args.build_dir)
    return args


def target_kernel(args):
    return "upstream" if args.kernel == "upstream" else args.number


def cmd_list(args):
    cps = series.checkpoints()
    print(f"{'N':>2}  {'checkpoint':<22} {'patches':>7}  {'kernel':<9} lab")
    for cp in cps:
        k = kbuild.Kernel(args.build_dir, cp.number)
        state = "built" if k.built() else "not built"
        lab = cp.title if cp.has_lab else "(no lab yet)"
        print(f"{cp.number:>2}  {cp.name:<22} {len(cp.patches()):>7}  {state:<9} {lab}")
    up = kbuild.Kernel(args.build_dir, "upstream")
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
        print(f"  {c.id:<{width}}  {c.kind:<{kinds}}  {c.title}")
    print(f"run one with 'make lab {cp.number} CHECK=ID'")
    return 0


def cmd_clean(args):
    if args.all:
        shutil.rmtree(args.build_dir, ignore_errors=True)
        print(f"removed {args.build_dir}")
        return 0
    for sub in ("obj", "logs", "docs", "initramfs-src", "initramfs.cpio", "robust", "bench"):
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
    out = docs.out_dir(args.number, args.build_dir)
    view = "the whole series" if args.number is None else f"checkpoint {args.number}"
    ui.step(f"building the docs of {view} (asciidoctor, dot, pandoc)")
    ok, messages = docs.build(out, args.number)
    ui.block(messages)
    if ok:
        for path in docs.outputs(out):
            print(path)
    return 0 if ok else 1


def cmd_numbered(args, session):
    session.prepare()
    kernel = target_kernel(args)
    if args.command == "lab":
        tally = labrun.run_one_lab(session, args.number, kernel, only=args.check,
                                   debug=args.debug)
        return tally.close()
    k = session.kernel(kernel, args.debug)
    if args.command == "kernel":
        print(k.bzimage)
        print(k.vmlinux)
        return 0
    initrd = session.initrd()
    if args.command == "shell":
        ui.step(f"booting {k.label} to a shell (leave with 'reboot -f' or Ctrl-A X)")
        return qemu.interactive(k, initrd, ["shell"])
    cp = series.lookup(args.number)
    log = os.path.join(session.logs, f"gdb-{k.name}.console.log")
    gdbrun.interactive(k, initrd, cp, args.gdb_port, log)
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
    if args.command == "deps":
        return 0 if deps.ensure() else 1
    session = labrun.Session(args.build_dir, args.timeout)
    if args.command == "check":
        from labkit import check
        session.debug_all = args.debug  # make check DEBUG=1: every checkpoint's debug variant
        session.seed = args.seed        # make check SEED=S: replay its hostile-input run
        return check.run(session)
    if args.command == "rebase":
        return rebase.rebase(session, args.base)
    if args.command == "bench":
        from labkit import bench
        kernels = bench.KERNELS
        if args.bench_kernels:
            kernels = [w if w == "upstream" else parse_checkpoint("bench", w)
                       for w in args.bench_kernels.split()]
        return bench.run(session, kernels, full=args.full)
    if args.command == "robust":
        from labkit import robust
        session.prepare()
        return robust.run_all(session, target_kernel(args), args.debug, args.seed).close()
    return cmd_numbered(args, session)


def main(argv):
    """Run one command. The harness's own errors (labkit.errors) end it
    with their message and exit code; anything else is a harness bug and
    stays a traceback."""
    try:
        return dispatch(argv)
    except HarnessError as e:
        if str(e):
            ui.error(str(e))
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
