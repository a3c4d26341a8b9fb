"""Disk space: what a run is about to write into build/, asked for first.

A build that fills the disk fails late and in other words than these: cp
or the linker says "No space left on device" ten minutes in, halfway
through a checkpoint's objects. The harness asks the file system before
it extracts the tree or starts a kernel's object folder, and stops with
one sentence that says what it needs and what there is.

The figures are what linux-source-6.12's tree and tinyconfig kernels
take (a cold make check, measured with du, rounded up); a kernel's
includes its share of the compiler cache."""

import os
import shutil

from .errors import HarnessError

MB = 1000 ** 2

# build/linux: the sources, and the git history of the checkpoints
TREE = 2300 * MB
# build/linux-debug: the second checkout, where make check builds the
# debug and KCSAN kernels (tree.Worktree)
WORKTREE = 1800 * MB
# one object folder, build/obj/NAME, once the link's leftovers are gone
# (kbuild.Kernel.tidy), by variant (kernels.VARIANTS)
KERNEL = {"plain": 150 * MB, "debug": 260 * MB, "kcsan": 220 * MB}
# logs, guest traces, the initramfs, the docs' pages
SLACK = 300 * MB


def kernel_size(kid):
    """The bytes kernel kid's object folder will take."""
    return KERNEL.get(kid.variant, KERNEL["debug"])


def free(path):
    """Free bytes on the file system that holds path (or would: the
    nearest folder above it that exists)."""
    path = os.path.abspath(path)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return shutil.disk_usage(path).free


def size_words(count):
    return f"{count / 1000 ** 3:.1f} GB"


def require(build_dir, need, what):
    """Stop unless the disk of build_dir has room for 'need' bytes (and
    some slack), naming what needs them."""
    if need <= 0:
        return
    have = free(build_dir)
    if have >= need + SLACK:
        return
    raise HarnessError(
        f"not enough disk space: {what} needs about {size_words(need + SLACK)} free on "
        f"the disk that holds {build_dir}, and it has {size_words(have)}. Free some "
        "space ('make clean' removes the built kernels, 'make distclean' all of "
        "build/), then run make again.")


def missing(build_dir, kids, tree_path, worktree_paths=()):
    """The bytes still to be written for kernels kids: the object folders
    that do not exist yet, and the tree and second checkouts that are not
    there."""
    need = 0 if os.path.isdir(tree_path) else TREE
    need += sum(WORKTREE for p in set(worktree_paths) if not os.path.isdir(p))
    for kid in set(kids):
        if not os.path.isdir(os.path.join(build_dir, "obj", kid.name)):
            need += kernel_size(kid)
    return need
