"""The kernel source tree: extracted once from Debian's linux-source
package of patches/BASE (source.py) into build/linux, kept as a git repository with one branch per checkpoint.

  upstream     the tarball as Debian ships it
  lab/cp0      upstream + patches/00-*/*.patch   (the baseline)
  lab/cpN      lab/cp(N-1) + patches/NN-*/*.patch

Switching checkpoints is a "git checkout": only the files that differ get a
new mtime, so each checkpoint's object folder rebuilds only what changed.
"""

import contextlib
import fcntl
import os
import shutil
import subprocess

from . import kernels, series, source, ui
from .errors import HarnessError


class TreeError(HarnessError):
    pass


@contextlib.contextmanager
def lock(build_dir, name="tree"):
    """One checkout-and-build at a time per build folder: two makes in two
    terminals must not switch build/linux under each other's compiler.
    name: which checkout (a Worktree has a lock of its own)."""
    os.makedirs(build_dir, exist_ok=True)
    with open(os.path.join(build_dir, f".{name}.lock"), "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            ui.info("another make is building in this build folder; waiting for it")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def unpack(tarball, tmp):
    """Extract a linux-source tarball into a new folder; returns the path of
    the tree in it (the tarball's one top folder)."""
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    # Debian's tarball is xz in many blocks: xz unpacks them on every core.
    subprocess.run(["tar", "-C", tmp, "-I", "xz -T0", "-xf", tarball], check=True)
    (top,) = os.listdir(tmp)
    inner = os.path.join(tmp, top)
    os.rename(inner, tmp + ".tree")
    os.rmdir(tmp)
    return tmp + ".tree"


def changes(path):
    """git status of the tracked files of the tree at path: empty when
    none differs from HEAD (untracked files do not count: no build reads
    them unless a tracked file names them). None when git fails."""
    r = subprocess.run(["git", "-C", path, "status", "--porcelain", "--untracked-files=no"],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


class Tree:
    def __init__(self, build_dir):
        self.build_dir = build_dir
        self.path = os.path.join(build_dir, "linux")
        self.stamp = os.path.join(build_dir, "linux.version")
        self.version = None

    def git(self, *args, check=True, capture=True):
        r = subprocess.run(["git", "-C", self.path] + list(args),
                           capture_output=capture, text=True)
        if check and r.returncode != 0:
            raise TreeError(f"git {' '.join(args)} failed:\n{r.stderr.strip()}")
        return r.stdout.strip() if capture else ""

    # --- extraction -------------------------------------------------------

    def ensure(self):
        """Extract the tree if it is missing or from another package version."""
        src = source.choose(self.build_dir)
        ui.step(source.describe(src, series.base()))
        if src.note:
            ui.info("warning: " + src.note)
        self.version = src.version
        have = open(self.stamp).read().strip() if os.path.exists(self.stamp) else None
        if have == src.version and os.path.isdir(os.path.join(self.path, ".git")):
            return
        if have is not None:
            ui.info(f"the extracted tree is {have}, not {src.version}: extracting again")
        self.extract(src)

    def extract(self, src):
        timer = ui.Timer()
        ui.step(f"extracting {src.tarball} into {self.path}")
        tmp = unpack(src.tarball, os.path.join(self.build_dir, "linux.extracting"))
        shutil.rmtree(self.path, ignore_errors=True)
        os.rename(tmp, self.path)
        ui.step(f"recording it as git branch '{kernels.UPSTREAM}'")
        # Debian's top-level .gitignore ignores "/*": add with -f.
        self.git("init", "-q", "-b", kernels.UPSTREAM)
        self.git("config", "user.name", "ftrace trigger labs")
        self.git("config", "user.email", "labs@trigger-labs.invalid")
        self.git("config", "gc.auto", "0")
        self.commit_all(f"{src.package} {src.version}, as Debian ships it")
        with open(self.stamp, "w") as f:
            f.write(src.version + "\n")
        ui.info(f"done in {timer}")

    def commit_all(self, message):
        self.git("add", "-f", "-A")
        self.git("commit", "-q", "-m", message)

    # --- checkpoints ------------------------------------------------------

    def branch_exists(self, name):
        return subprocess.run(["git", "-C", self.path, "rev-parse", "--verify", "-q",
                               "refs/heads/" + name], capture_output=True).returncode == 0

    def ensure_clean(self):
        dirty = changes(self.path)
        if dirty is None:
            raise TreeError(f"git status failed in {self.path}")
        if dirty:
            raise TreeError(
                f"{self.path} has changes of yours:\n{dirty}\n"
                "The harness switches this tree between checkpoints. Commit them on a "
                "branch of your own or 'git stash' them, then run make again.")

    def current_branch(self):
        """The branch checked out ("HEAD" when detached)."""
        return self.git("rev-parse", "--abbrev-ref", "HEAD")

    def keep_student_work(self):
        """Before the tree leaves a learner's branch (student/cpN, see
        exercise.py): commit their uncommitted changes on it, so that a
        checkout neither loses nor refuses them."""
        branch = self.current_branch()
        if branch.startswith("student/") and changes(self.path):
            self.git("commit", "-q", "-a", "-m", "work in progress (committed by the harness "
                     "before it switched the tree)")
            ui.info(f"committed your changes on {branch} before switching the tree")

    def ref_of(self, kid):
        """The ref kernel kid (a kernels.KernelId) is built from: its own,
        else upstream's branch or its checkpoint's, made when missing."""
        if kid.ref:
            return kid.ref
        return kernels.UPSTREAM if kid.is_upstream else self.prepare_branch(kid.checkpoint)

    def checkout(self, kid):
        """Put the tree at kernel kid's files; returns the ref. A ref taken
        as it is (kid.as_is: the learner's branch) keeps the learner's
        uncommitted work when it is checked out already; a flavour's other
        refs (a skeleton, a hole) are checked out detached, so that nobody
        commits on them by mistake."""
        ref = self.ref_of(kid)
        current = self.current_branch()
        if kid.as_is and current == ref:
            return ref
        self.keep_student_work()
        self.ensure_clean()
        detach = kid.flavour is not None and not kid.as_is
        if detach or current != ref:
            self.git("checkout", "-q", *(["--detach"] if detach else []), ref)
        return ref

    def commit_of(self, kid):
        """The commit of kernel kid's files, for a checkout elsewhere
        (Worktree): its ref's; for a ref taken as it is and checked out
        here with uncommitted work, a commit of that work that no branch
        holds (git stash create), so that the learner's branch stays as it
        is."""
        ref = self.ref_of(kid)
        if kid.as_is and self.current_branch() == ref:
            snapshot = self.git("stash", "create")
            if snapshot:
                return snapshot
        return self.git("rev-parse", ref)

    def prepare_branch(self, number):
        """Make lab/cpN hold upstream + the patches of checkpoints 0..N."""
        cp = series.lookup(number)
        digest = series.series_digest(number)
        key = f"ftlab.cp{number}.digest"
        have = self.git("config", "--get", key, check=False)
        if have == digest and self.branch_exists(cp.branch):
            return cp.branch
        parent = kernels.UPSTREAM if number == 0 else self.prepare_branch(number - 1)
        patches = cp.patches()
        ui.step(f"applying checkpoint {number} ({cp.name}): {len(patches)} patch(es)")
        self.git("checkout", "-q", "-B", cp.branch, parent)
        # One "git am" for all of them: each run reads and writes the whole
        # index (every file of the tree), a second a patch when run one by one.
        r = subprocess.run(["git", "-C", self.path, "am", "-q", "--3way"] + patches,
                           capture_output=True, text=True)
        if r.returncode != 0:
            patch = patches[self._am_stopped_at(len(patches))]
            subprocess.run(["git", "-C", self.path, "am", "--abort"], capture_output=True)
            self.git("checkout", "-q", kernels.UPSTREAM)
            self.git("branch", "-D", cp.branch, check=False)
            package, base = series.base()
            if self.version and source.same_build(self.version, base):
                advice = ("This tree holds the sources the series was made for, so the patch "
                          "itself does not fit them: the patch is what to fix.")
            else:
                advice = ("What to do: let the harness fetch the version in patches/BASE (it "
                          "needs the Debian archive), or move the series to this version with "
                          "'make rebase BASE=VERSION' (doc/harness.adoc, \"Moving to a new "
                          "Debian version\").")
            raise TreeError(
                f"patch {os.path.relpath(patch, series.ROOT)} does not apply.\n"
                f"{(r.stdout + r.stderr).strip()}\n"
                f"The series was made for {package} {base}; "
                f"this tree is {self.version or 'another version'}.\n" + advice)
        self.git("config", key, digest)
        return cp.branch

    def _am_stopped_at(self, count):
        """Index (0-based) of the patch a failed "git am" stopped at: its
        state folder numbers the patches from 1 in the file "next"."""
        try:
            with open(os.path.join(self.path, ".git", "rebase-apply", "next")) as f:
                return min(max(int(f.read()) - 1, 0), count - 1)
        except (OSError, ValueError):
            return 0


class Worktree:
    """A second checkout of the tree's repository, build/linux-NAME, at a
    checkpoint's commit (detached: a branch is checked out in one place
    only). make check builds its debug kernels there, so that they build
    while build/linux moves on to the next checkpoint."""

    def __init__(self, tree, name):
        self.tree = tree
        self.name = name
        self.path = os.path.join(tree.build_dir, f"linux-{name}")

    def _registered(self):
        """Is self.path a worktree of the tree's repository, as it is now
        (a tree extracted again forgets its worktrees)?"""
        listing = self.tree.git("worktree", "list", "--porcelain", check=False)
        return f"worktree {os.path.realpath(self.path)}" in listing.splitlines()

    def checkout(self, branch):
        """Put the worktree at branch's commit; returns the commit."""
        commit = self.tree.git("rev-parse", branch)
        if not self._registered():
            shutil.rmtree(self.path, ignore_errors=True)
            self.tree.git("worktree", "prune")
            ui.step(f"checking out {branch} in {os.path.relpath(self.path)} "
                    "(a second tree, for builds beside the main one)")
            self.tree.git("worktree", "add", "-q", "--detach", self.path, commit)
            return commit
        dirty = changes(self.path)
        if dirty:
            raise TreeError(f"{self.path} has changes:\n{dirty}\nThe harness builds there "
                            "beside build/linux; remove the folder and run make again.")
        subprocess.run(["git", "-C", self.path, "checkout", "-q", "--detach", commit],
                       check=True, capture_output=True)
        return commit
