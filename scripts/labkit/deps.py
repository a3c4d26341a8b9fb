"""The Debian packages the harness needs, checked before any work: each
target asks for what it uses (needed()), so that make lab does not
install the docs or bench tools."""

import os
import platform
import shutil
import subprocess

from . import ui
from .errors import HarnessError

# Build a kernel: the tree, the compiler and kbuild's tools, git for the
# checkpoints' branches (ccache: every clone shares its objects).
BUILD_PACKAGES = ("linux-source-6.1", "gcc", "make", "bc", "bison", "flex", "libelf-dev",
                  "libssl-dev", "cpio", "xz-utils", "ccache", "python3", "perl", "git")
# Boot it: QEMU, and the guest's busybox; trace-cmd, which TRACE=1 packs
# into the guest (and reads the traces with on the host), and Chart.js,
# which the report pages of the traces inline (make report).
GUEST_PACKAGES = ("qemu-system-x86", "busybox-static", "trace-cmd", "libjs-chart.js")
GDB_PACKAGES = ("gdb",)
# What "make docs" needs on its own: no kernel, no QEMU.
DOCS_PACKAGES = ("asciidoctor", "graphviz", "pandoc", "linkchecker")
# make check's static part, and the browser that renders a report page.
CHECK_PACKAGES = ("python3-pyflakes", "chromium")
# make bench's charts.
BENCH_PACKAGES = ("gnuplot-nox",)
LAB_PACKAGES = BUILD_PACKAGES + GUEST_PACKAGES
# Everything: make check and make deps.
PACKAGES = LAB_PACKAGES + GDB_PACKAGES + DOCS_PACKAGES + BENCH_PACKAGES + CHECK_PACKAGES


class MissingPackages(HarnessError):
    """Packages are missing; ensure() has said which and how to install them."""
    exit_code = 2


def needed(command, needs_gdb=False, full=False):
    """The packages a target uses: make lab N (needs_gdb: lab N runs under
    gdb), gdb, shell, kernel, robust, rebase, bench (full: FULL=1 runs a
    whole make check too), check."""
    if command == "kernel":
        return BUILD_PACKAGES
    if command in ("lab", "shell", "robust"):
        return LAB_PACKAGES + (GDB_PACKAGES if needs_gdb else ())
    if command in ("gdb", "rebase"):
        return LAB_PACKAGES + GDB_PACKAGES
    if command == "bench" and not full:
        return LAB_PACKAGES + BENCH_PACKAGES
    return PACKAGES


def check_machine():
    """The labs build x86_64 kernels with the host's gcc: one line saying
    so on another host (make docs needs no kernel, and does not ask)."""
    machine = platform.machine()
    if machine not in ("x86_64", "amd64"):
        raise HarnessError(f"this host is {machine}: the labs build x86_64 kernels with the "
                           "host's gcc, so they need an x86_64 host (Debian 12 or newer)")


def check_dpkg():
    if shutil.which("dpkg-query") is None:
        raise HarnessError("no dpkg-query on this host: the harness checks and installs "
                           "Debian packages, so it needs Debian 12 or a derivative")


def missing(packages=PACKAGES):
    """The packages dpkg does not have installed, asked in one query (a
    warm make lab waits for this: one dpkg-query per package took half a
    second). What dpkg says, not whether some file exists: a status ending
    in "installed" counts ("install ok installed", "hold ok installed");
    a removed package whose configuration stays reads "deinstall ok
    config-files"; a package dpkg does not know prints nothing."""
    r = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Status}\n"] + list(packages),
                       capture_output=True, text=True)
    have = {words[0] for words in (line.split() for line in r.stdout.splitlines())
            if len(words) > 1 and words[-1] == "installed"}
    return [pkg for pkg in packages if pkg not in have]


def apt_command(pkgs):
    return "apt-get install -y --no-install-recommends " + " ".join(pkgs)


def install(pkgs):
    """apt-get update and install, their output shown as they go (an
    install takes minutes: a silent one looks hung)."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    ui.step("installing " + " ".join(pkgs))
    for cmd in (["apt-get", "update"], apt_command(pkgs).split()):
        r = subprocess.run(cmd, env=env)
        if r.returncode != 0:
            ui.error(f"{' '.join(cmd)} failed (exit code {r.returncode}; its output is above)")
            return False
    return True


def ensure(packages=PACKAGES):
    """Install what is missing when we are root; otherwise say the command."""
    check_dpkg()
    need = missing(packages)
    if not need:
        return True
    if os.geteuid() == 0:
        return install(need) and not missing(packages)
    ui.error("missing Debian packages: " + " ".join(need))
    ui.info("install them with:  sudo " + apt_command(need))
    return False


def require(packages=PACKAGES):
    """ensure(), or MissingPackages when they are still missing."""
    if not ensure(packages):
        raise MissingPackages()
