"""The kernel source tree: extracted once from Debian's linux-source-6.1
into build/linux, kept as a git repository with one branch per checkpoint.

  upstream     the tarball as Debian ships it
  lab/cp0      upstream + patches/00-*/*.patch   (the baseline)
  lab/cpN      lab/cp(N-1) + patches/NN-*/*.patch

Switching checkpoints is a "git checkout": only the files that differ get a
new mtime, so each checkpoint's object folder rebuilds only what changed.
"""

import os
import shutil
import subprocess

from . import deps, series, ui


class TreeError(Exception):
    pass


def installed_version():
    """('6.1.192', '6.1.192-3') for the installed linux-source-6.1."""
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "linux-source-6.1"],
                       capture_output=True, text=True)
    full = r.stdout.strip() if r.returncode == 0 else ""
    if not full:
        raise TreeError("linux-source-6.1 is not installed (make deps)")
    return full.split("-")[0].split("+")[0], full


class Tree:
    def __init__(self, build_dir):
        self.build_dir = build_dir
        self.path = os.path.join(build_dir, "linux")
        self.stamp = os.path.join(build_dir, "linux.version")

    def git(self, *args, check=True, capture=True):
        r = subprocess.run(["git", "-C", self.path] + list(args),
                           capture_output=capture, text=True)
        if check and r.returncode != 0:
            raise TreeError(f"git {' '.join(args)} failed:\n{r.stderr.strip()}")
        return r.stdout.strip() if capture else ""

    # --- extraction -------------------------------------------------------

    def ensure(self):
        """Extract the tree if it is missing or from another package version."""
        version, full = installed_version()
        made_for = series.base_version()
        ui.step(f"linux-source-6.1 found: {full} (kernel {version}); series made for {made_for}")
        if version != made_for:
            ui.info(f"note: the patches were made for {made_for}; they may not apply to {version}")
        have = open(self.stamp).read().strip() if os.path.exists(self.stamp) else None
        if have == full and os.path.isdir(os.path.join(self.path, ".git")):
            return
        if have is not None:
            ui.info(f"the extracted tree is {have}, the package is {full}: extracting again")
        self.extract(full)

    def extract(self, full):
        timer = ui.Timer()
        ui.step(f"extracting {deps.TARBALL} into {self.path}")
        tmp = os.path.join(self.build_dir, "linux.extracting")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(self.path, ignore_errors=True)
        os.makedirs(tmp)
        subprocess.run(["tar", "-C", tmp, "-xJf", deps.TARBALL], check=True)
        (top,) = os.listdir(tmp)
        os.rename(os.path.join(tmp, top), self.path)
        os.rmdir(tmp)
        ui.step("recording it as git branch 'upstream'")
        # Debian's top-level .gitignore ignores "/*": add with -f.
        self.git("init", "-q", "-b", "upstream")
        self.git("config", "user.name", "ftrace trigger labs")
        self.git("config", "user.email", "labs@trigger-labs.invalid")
        self.git("config", "gc.auto", "0")
        self.git("add", "-f", "-A")
        self.git("commit", "-q", "-m", f"linux-source-6.1 {full}, as Debian ships it")
        with open(self.stamp, "w") as f:
            f.write(full + "\n")
        ui.info(f"done in {timer}")

    # --- checkpoints ------------------------------------------------------

    def branch_exists(self, name):
        return subprocess.run(["git", "-C", self.path, "rev-parse", "--verify", "-q",
                               "refs/heads/" + name], capture_output=True).returncode == 0

    def ensure_clean(self):
        dirty = self.git("status", "--porcelain", "--untracked-files=no")
        if dirty:
            raise TreeError(
                f"{self.path} has changes of yours:\n{dirty}\n"
                "The harness switches this tree between checkpoints. Commit them on a "
                "branch of your own or 'git stash' them, then run make again.")

    def checkout(self, kernel):
        """Put the tree at 'upstream' or checkpoint N (an int); returns the branch."""
        self.ensure_clean()
        branch = "upstream" if kernel == "upstream" else self.prepare_branch(kernel)
        if self.git("rev-parse", "--abbrev-ref", "HEAD") != branch:
            self.git("checkout", "-q", branch)
        return branch

    def prepare_branch(self, number):
        """Make lab/cpN hold upstream + the patches of checkpoints 0..N."""
        cp = series.lookup(number)
        digest = series.series_digest(number)
        key = f"ftlab.cp{number}.digest"
        have = self.git("config", "--get", key, check=False)
        if have == digest and self.branch_exists(cp.branch):
            return cp.branch
        parent = "upstream" if number == 0 else self.prepare_branch(number - 1)
        patches = cp.patches()
        ui.step(f"applying checkpoint {number} ({cp.name}): {len(patches)} patch(es)")
        self.git("checkout", "-q", "-B", cp.branch, parent)
        for patch in patches:
            r = subprocess.run(["git", "-C", self.path, "am", "-q", "--3way", patch],
                               capture_output=True, text=True)
            if r.returncode != 0:
                subprocess.run(["git", "-C", self.path, "am", "--abort"], capture_output=True)
                self.git("checkout", "-q", "upstream")
                self.git("branch", "-D", cp.branch, check=False)
                version, full = installed_version()
                raise TreeError(
                    f"patch {os.path.relpath(patch, series.ROOT)} does not apply.\n"
                    f"{(r.stdout + r.stderr).strip()}\n"
                    f"The series was made for linux-source {series.base_version()}; "
                    f"installed is {full}.\n"
                    "What to do: install the version the series was made for, or refresh "
                    "the patch on this tree (apply by hand in build/linux, 'git am --continue', "
                    "'git format-patch') and update patches/BASE.")
        self.git("config", key, digest)
        return cp.branch
