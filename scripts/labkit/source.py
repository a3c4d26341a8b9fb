"""Which linux-source-6.1 the series is built on, and where its tarball is.

The series and every recorded expected output were made on one Debian
package version, named in patches/BASE (e.g. 6.1.192-3). Debian replaces
the package every few weeks, and stable changes the very files the series
rewrites, so the harness uses exactly that version:

  1. the installed package, when it is that version;
  2. otherwise that version's .deb, fetched with "apt-get download" (no
     root needed, the system's packages untouched) into build/sources/;
  3. only when the archive no longer offers it, the installed package,
     with a warning: the patches are applied with three-way merges and the
     expected outputs were recorded on another version.
"""

import glob
import os
import re
import subprocess

from . import series, ui
from .errors import HarnessError

PACKAGE = "linux-source-6.1"
INSTALLED_TARBALL = "/usr/src/linux-source-6.1.tar.xz"


class SourceError(HarnessError):
    pass


class Source:
    """A tarball of one package version."""

    def __init__(self, version, tarball, note=""):
        self.version = version      # full Debian version, "6.1.192-3"
        self.tarball = tarball
        self.note = note            # why this one, when it is not BASE

    def __repr__(self):
        return f"Source({self.version}, {self.tarball})"


def installed_version():
    """The full Debian version of the installed package, or None."""
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status} ${Version}", PACKAGE],
                       capture_output=True, text=True)
    words = r.stdout.split()
    if r.returncode != 0 or "installed" not in words:
        return None
    return words[-1]


def offered_versions():
    """The versions the configured archives offer, newest first ([] when
    apt knows none: no network, or no package lists)."""
    r = subprocess.run(["apt-cache", "madison", PACKAGE], capture_output=True, text=True)
    versions = []
    for line in r.stdout.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 2 and parts[1] not in versions:
            versions.append(parts[1])
    return sorted(versions, key=VersionKey, reverse=True)


class VersionKey:
    """Orders Debian versions as dpkg does (dpkg --compare-versions)."""

    def __init__(self, version):
        self.version = version

    def __lt__(self, other):
        return subprocess.run(["dpkg", "--compare-versions", self.version, "lt",
                               other.version]).returncode == 0


def cache_dir(build_dir, version):
    return os.path.join(build_dir, "sources", version)


def fetch(build_dir, version):
    """The tarball of 'version': the installed one if it is that version,
    else one fetched before, else fetched now. Raises SourceError when the
    archive does not have it (or cannot be reached)."""
    if installed_version() == version and os.path.exists(INSTALLED_TARBALL):
        return INSTALLED_TARBALL
    where = cache_dir(build_dir, version)
    tarball = os.path.join(where, "usr", "src", "linux-source-6.1.tar.xz")
    if os.path.exists(tarball):
        return tarball
    os.makedirs(where, exist_ok=True)
    ui.step(f"fetching {PACKAGE} {version} from the Debian archive (apt-get download)")
    r = subprocess.run(["apt-get", "download", "-q", f"{PACKAGE}={version}"],
                       cwd=where, capture_output=True, text=True)
    debs = glob.glob(os.path.join(where, "*.deb"))
    if r.returncode != 0 or not debs:
        raise SourceError(f"apt-get download {PACKAGE}={version} failed: "
                          + (r.stderr.strip().splitlines() or ["no package"])[-1])
    x = subprocess.run(["dpkg-deb", "-x", debs[0], where], capture_output=True, text=True)
    if x.returncode != 0 or not os.path.exists(tarball):
        raise SourceError(f"dpkg-deb -x {debs[0]} failed: {x.stderr.strip()}")
    os.unlink(debs[0])
    return tarball


def choose(build_dir):
    """The Source to build on: BASE if at all possible (see the module doc)."""
    base = series.base_version()
    installed = installed_version()
    try:
        return Source(base, fetch(build_dir, base))
    except SourceError as e:
        if not installed:
            raise SourceError(f"{PACKAGE} {base} (patches/BASE) cannot be had: {e}; "
                              f"and no {PACKAGE} is installed (make deps)") from e
        return Source(installed, INSTALLED_TARBALL,
                      note=(f"{PACKAGE} {base}, which the series and its expected outputs "
                            f"were made for, cannot be fetched ({e}); using the installed "
                            f"{installed} instead: patches are applied with three-way "
                            f"merges, and lab outputs may differ from the recorded ones"))


def kernel_version(debian_version):
    """'6.1.192' from '6.1.192-3'."""
    return re.split(r"[-+~]", debian_version)[0]
