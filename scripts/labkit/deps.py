"""The Debian packages the harness needs, checked before any work."""

import os
import subprocess

from . import ui
from .errors import HarnessError

TARBALL = "/usr/src/linux-source-6.1.tar.xz"

# package -> a file that shows it is installed
PACKAGES = {
    "linux-source-6.1": TARBALL,
    "gcc": "/usr/bin/gcc",
    "make": "/usr/bin/make",
    "bc": "/usr/bin/bc",
    "bison": "/usr/bin/bison",
    "flex": "/usr/bin/flex",
    "libelf-dev": "/usr/include/libelf.h",
    "libssl-dev": "/usr/include/openssl/ssl.h",
    "cpio": "/usr/bin/cpio",
    "xz-utils": "/usr/bin/xz",
    "qemu-system-x86": "/usr/bin/qemu-system-x86_64",
    "busybox-static": "/bin/busybox",
    "gdb": "/usr/bin/gdb",
    "asciidoctor": "/usr/bin/asciidoctor",
    "ccache": "/usr/bin/ccache",
    "python3": "/usr/bin/python3",
    "perl": "/usr/bin/perl",
    "git": "/usr/bin/git",
}


class MissingPackages(HarnessError):
    """Packages are missing; ensure() has said which and how to install them."""
    exit_code = 2


def missing():
    return [pkg for pkg, path in PACKAGES.items() if not os.path.exists(path)]


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


def ensure():
    """Install what is missing when we are root; otherwise say the command."""
    need = missing()
    if not need:
        return True
    if os.geteuid() == 0:
        return install(need) and not missing()
    ui.error("missing Debian packages: " + " ".join(need))
    ui.info("install them with:  sudo " + apt_command(need))
    return False


def require():
    """ensure(), or MissingPackages when they are still missing."""
    if not ensure():
        raise MissingPackages()
