"""The Debian packages the harness needs, checked before any work: each
target asks for what it uses (needed()), so that make lab does not
install the docs or bench tools."""

import os
import platform
import shutil
import subprocess

from . import ui
from .errors import HarnessError

# Build a kernel: the compiler and kbuild's tools, git for the checkpoints'
# branches (ccache: every clone shares its objects). The kernel's sources
# are not among them: source.py takes the linux-source version of
# patches/BASE, installed or fetched with apt-get download, exactly.
BUILD_PACKAGES = ("gcc", "make", "bc", "bison", "flex", "libelf-dev",
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


def host_name():
    """This host's distribution, as /etc/os-release names it."""
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            fields = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
    except OSError:
        return "this host"
    name = (fields.get("PRETTY_NAME") or fields.get("NAME") or "").strip('"')
    return f"this host ({name})" if name else "this host"


def check_dpkg():
    if shutil.which("dpkg-query") is None:
        raise HarnessError("no dpkg-query on this host: the harness checks and installs "
                           "Debian packages, so it needs Debian 12 or 13 (or a derivative)")


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


def unknown(pkgs):
    """The packages apt knows no version of, asked by their exact names
    (apt-cache madison; apt-get install would take a name with a dot as a
    pattern and install, or find, some other package)."""
    try:
        r = subprocess.run(["apt-cache", "madison"] + list(pkgs), capture_output=True, text=True)
    except FileNotFoundError:
        return list(pkgs)
    known = {line.split("|")[0].strip() for line in r.stdout.splitlines() if "|" in line}
    return [pkg for pkg in pkgs if pkg not in known]


def install(pkgs):
    """apt-get update and install, their output shown as they go (an
    install takes minutes: a silent one looks hung). Only packages apt
    knows by their exact names go to apt-get install; the others are
    named, with the host, and nothing is installed."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    r = subprocess.run(["apt-get", "update"], env=env)
    if r.returncode != 0:
        ui.error(f"apt-get update failed (exit code {r.returncode}; its output is above)")
        return False
    strangers = unknown(pkgs)
    if strangers:
        ui.error(f"{host_name()} has no package named {', '.join(strangers)} in its "
                 "apt archives: the harness needs it, as Debian 12 and 13 have it")
        return False
    ui.step("installing " + " ".join(pkgs))
    cmd = apt_command(pkgs).split()
    r = subprocess.run(cmd, env=env)
    if r.returncode != 0:
        ui.error(f"{' '.join(cmd)} failed (exit code {r.returncode}; its output is above)")
        return False
    return True


def ensure(packages=PACKAGES):
    """Install what is missing when we are root; otherwise say the command.
    False (and a line saying why) when something is still missing."""
    check_dpkg()
    need = missing(packages)
    if not need:
        return True
    if os.geteuid() == 0:
        if not install(need):
            return False
        still = missing(packages)
        if still:
            ui.error("apt-get install ended, but these are still not installed: "
                     + " ".join(still))
        return not still
    ui.error("missing Debian packages: " + " ".join(need))
    ui.info("install them with:  sudo " + apt_command(need))
    return False


def require(packages=PACKAGES):
    """ensure(), or MissingPackages when they are still missing."""
    if not ensure(packages):
        raise MissingPackages()
