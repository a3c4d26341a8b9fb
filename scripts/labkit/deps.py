"""The Debian packages the harness needs, checked before any work."""

import os
import subprocess

from . import ui
from .errors import HarnessError

PACKAGES = ("linux-source-6.1", "gcc", "make", "bc", "bison", "flex", "libelf-dev",
            "libssl-dev", "cpio", "xz-utils", "qemu-system-x86", "busybox-static", "gdb",
            "asciidoctor", "graphviz", "pandoc", "ccache", "python3", "perl", "git",
            "gnuplot-nox")


class MissingPackages(HarnessError):
    """Packages are missing; ensure() has said which and how to install them."""
    exit_code = 2


# What "make docs" needs on its own: no kernel, no QEMU.
DOCS_PACKAGES = ("asciidoctor", "graphviz", "pandoc")


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
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    ui.step("installing " + " ".join(pkgs))
    for cmd in (["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + pkgs):
        r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            ui.error(" ".join(cmd) + " failed:\n" + r.stderr[-2000:])
            return False
    return True


def ensure(packages=PACKAGES):
    """Install what is missing when we are root; otherwise say the command."""
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
