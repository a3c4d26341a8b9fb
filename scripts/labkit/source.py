"""Which Debian linux-source the series is built on, and where its tarball is.

The series and every recorded expected output were made on one Debian
package version, named in patches/BASE (e.g. "linux-source-6.12
6.12.118-1~deb12u1"; series.base()). Debian replaces the package every
few weeks, and stable changes the very files the series rewrites, so the
harness builds on that build of the kernel:

  1. the installed package, when it is that version or another Debian
     build of the same sources: the same upstream version and Debian
     revision, built for another release ("6.12.118-1~deb12u1" on
     Debian 12 and "6.12.118-1" on Debian 13; same_build());
  2. otherwise such a version's .deb, fetched with "apt-get download" (no
     root needed, the system's packages untouched) into build/sources/;
     apt is asked only about the exact package name (apt-cache madison),
     never with a name it could take as a pattern;
  2b. otherwise BASE's own .deb fetched from the Debian archive's pool at
     the address patches/BASE gives ("fetch URL sha256:HEX"), checked
     against the SHA-256 recorded there: a Debian 13 host whose apt lists
     have moved on, or that does not list Debian 12's security archive,
     still gets the exact build;
  3. otherwise the installed package of the same upstream version (another
     Debian revision), with a warning: the patches are applied with
     three-way merges and the expected outputs were recorded on another
     version;
  4. otherwise nothing: one sentence says what the series needs and what
     this host has (SourceError).
"""

import glob
import hashlib
import os
import re
import subprocess
import urllib.request

from . import deps, series, ui
from .errors import HarnessError

# A Debian revision's suffix for a build of the same sources for another
# release: "~deb12u1" (a backport to Debian 12 in its security or point
# updates), "+deb13u2" (a stable update), "~bpo12+1" (bookworm-backports).
_REBUILD = re.compile(r"(?:[~+]deb\d+u\d+|~bpo\d+\+\d+)+$")


class SourceError(HarnessError):
    pass


class Source:
    """A tarball of one package version."""

    def __init__(self, version, tarball, note="", package=None):
        self.version = version      # full Debian version, "6.12.118-1~deb12u1"
        self.tarball = tarball
        self.note = note            # why this one, when it is not BASE
        self.package = package or series.package_of(version)

    def __repr__(self):
        return f"Source({self.package} {self.version}, {self.tarball})"


def kernel_version(debian_version):
    """'6.1.192' from '6.1.192-3', '6.12.118' from '6.12.118-1~deb12u1'."""
    return re.split(r"[-+~]", debian_version)[0]


def debian_build(version):
    """The version without the suffix of a rebuild for another release:
    '6.12.118-1' from '6.12.118-1~deb12u1' and from '6.12.118-1'."""
    return _REBUILD.sub("", version)


def same_build(a, b):
    """Are a and b Debian builds of the same sources (the same upstream
    version and Debian revision, for one release or another)?"""
    return debian_build(a) == debian_build(b)


def installed_tarball(package):
    return f"/usr/src/{package}.tar.xz"


def installed_version(package=None):
    """The full Debian version of the installed package (the base's by
    default), or None (not installed, or no dpkg on this host). The name
    has no glob character, so dpkg-query takes it as it is."""
    package = package or series.base_package()
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status} ${Version}", package],
                           capture_output=True, text=True)
    except FileNotFoundError:
        return None
    words = r.stdout.split()
    if r.returncode != 0 or "installed" not in words:
        return None
    return words[-1]


def offered_versions(package=None):
    """The versions of exactly this package the configured archives offer,
    newest first ([] when apt knows none: no network, no package lists,
    no such package here, or no apt). apt-cache madison matches the name
    exactly (apt-get would take "linux-source-6.1" as a pattern and find
    linux-source-6.12 when there is no linux-source-6.1)."""
    package = package or series.base_package()
    try:
        r = subprocess.run(["apt-cache", "madison", package], capture_output=True, text=True)
    except FileNotFoundError:
        return []
    versions = []
    for line in r.stdout.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 2 and parts[0] == package and parts[1] not in versions:
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


def cached_tarball(build_dir, version, package=None):
    package = package or series.package_of(version)
    return os.path.join(cache_dir(build_dir, version), "usr", "src", f"{package}.tar.xz")


def fetch(build_dir, version, package=None):
    """The tarball of 'version' of package (by default the package of that
    version, series.package_of): the installed one if it is that version,
    else one fetched before, else fetched now. Raises SourceError when the
    archive does not have it (or cannot be reached)."""
    package = package or series.package_of(version)
    if installed_version(package) == version and os.path.exists(installed_tarball(package)):
        return installed_tarball(package)
    tarball = cached_tarball(build_dir, version, package)
    if os.path.exists(tarball):
        return tarball
    where = cache_dir(build_dir, version)
    os.makedirs(where, exist_ok=True)
    ui.step(f"fetching {package} {version} from the Debian archive (apt-get download)")
    try:
        # An exact name (package=version): apt takes no pattern with a version.
        r = subprocess.run(["apt-get", "download", "-q", f"{package}={version}"],
                           cwd=where, capture_output=True, text=True)
    except FileNotFoundError:
        raise SourceError(f"cannot fetch {package} {version}: this host has no apt-get") from None
    debs = glob.glob(os.path.join(where, "*.deb"))
    if r.returncode != 0 or not debs:
        raise SourceError(f"apt-get download {package}={version} failed: "
                          + (r.stderr.strip().splitlines() or ["no package"])[-1])
    return unpack(debs[0], where, tarball)


def unpack(deb, where, tarball):
    """Unpack a fetched .deb into where (as dpkg would, without root),
    delete it, and return the path of its tarball."""
    x = subprocess.run(["dpkg-deb", "-x", deb, where], capture_output=True, text=True)
    if x.returncode != 0 or not os.path.exists(tarball):
        raise SourceError(f"dpkg-deb -x {deb} failed: {x.stderr.strip()}")
    os.unlink(deb)
    return tarball


def download(build_dir, version, url, sha256, package=None):
    """BASE's .deb from the archive's pool at url, checked against sha256,
    unpacked into build/sources/VERSION; the tarball's path. Raises
    SourceError when it cannot be had or its checksum differs."""
    package = package or series.package_of(version)
    tarball = cached_tarball(build_dir, version, package)
    if os.path.exists(tarball):
        return tarball
    where = cache_dir(build_dir, version)
    os.makedirs(where, exist_ok=True)
    deb = os.path.join(where, os.path.basename(url.replace("%7e", "~").replace("%7E", "~")))
    ui.step(f"fetching {package} {version} from the Debian archive's pool ({url})")
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=60) as r, open(deb + ".part", "wb") as out:
            while True:
                block = r.read(1 << 20)
                if not block:
                    break
                digest.update(block)
                out.write(block)
    except OSError as e:
        raise SourceError(f"cannot download {url}: {e}") from None
    if digest.hexdigest() != sha256:
        os.unlink(deb + ".part")
        raise SourceError(f"{url}: its SHA-256 is {digest.hexdigest()}, patches/BASE "
                          f"records {sha256}")
    os.rename(deb + ".part", deb)
    return unpack(deb, where, tarball)


def needs(package, version):
    """What the series needs, in words."""
    return (f"Debian's {package} {version} (patches/BASE) or another Debian release's "
            f"build of {debian_build(version)}")


def unavailable(package, version, installed, offered, reason=""):
    """The one sentence of a host that cannot give the series its source."""
    if installed is None and not offered and not _has_apt():
        found = "no apt and no dpkg, so no Debian package at all"
    else:
        have = f"{package} {installed} installed" if installed else f"no {package} installed"
        listed = ", ".join(offered[:4]) + (" ..." if len(offered) > 4 else "")
        offers = (f"only {listed} offered by apt" if offered else
                  "no version of it offered by apt (not in its archives, or no package "
                  "lists: apt-get update)")
        found = f"{have} and {offers}"
    return (f"{deps.host_name()} cannot give the series its kernel source: it needs "
            f"{needs(package, version)}, installed or offered by apt, but has {found}"
            + (f" ({reason})" if reason else ""))


def _has_apt():
    try:
        subprocess.run(["apt-cache", "--version"], capture_output=True)
        return True
    except FileNotFoundError:
        return False


def choose(build_dir):
    """The Source to build on: BASE if at all possible (see the module doc)."""
    package, base = series.base()
    installed = installed_version(package)
    if installed and same_build(installed, base) and os.path.exists(installed_tarball(package)):
        return Source(installed, installed_tarball(package), package=package)
    if os.path.exists(cached_tarball(build_dir, base, package)):
        return Source(base, cached_tarball(build_dir, base, package), package=package)
    offered = offered_versions(package)
    # BASE itself first, then the other builds of its sources, newest first.
    wanted = [v for v in [base] + offered if same_build(v, base)]
    reason = ""
    for version in dict.fromkeys(v for v in wanted if v in offered or
                                 os.path.exists(cached_tarball(build_dir, v, package))):
        try:
            return Source(version, fetch(build_dir, version, package), package=package)
        except SourceError as e:
            reason = str(e)
    pinned = series.base_fetch()
    if pinned:
        try:
            return Source(base, download(build_dir, base, *pinned, package=package),
                          package=package)
        except SourceError as e:
            reason = str(e)
    if (installed and kernel_version(installed) == kernel_version(base)
            and os.path.exists(installed_tarball(package))):
        return Source(installed, installed_tarball(package), package=package,
                      note=(f"{package} {base}, which the series and its expected outputs "
                            f"were made for, cannot be had ({reason or 'apt does not offer it'}); "
                            f"using the installed {installed} instead (another Debian revision "
                            f"of Linux {kernel_version(base)}): patches are applied with "
                            f"three-way merges, and lab outputs may differ from the recorded ones"))
    raise SourceError(unavailable(package, base, installed, offered, reason))


def describe(src, base):
    """The progress line's words: which build the series was made for and
    which one was found."""
    package, made_for = base
    if src.version == made_for:
        how = ("installed" if src.tarball == installed_tarball(package)
               else "fetched into build/sources")
        return f"{package} {made_for}, the version the series was made for ({how})"
    how = "installed" if src.tarball == installed_tarball(package) else "fetched"
    if same_build(src.version, made_for):
        return (f"{package}: series made for {made_for}; found {src.version} ({how}), "
                f"another Debian build of the same sources: building on it")
    return f"{package}: series made for {made_for}; found {src.version} ({how}): building on it"


def status(build_dir):
    """(ok, line) for make deps: can the series' source be had here?
    Nothing is fetched."""
    package, base = series.base()
    installed = installed_version(package)
    if installed and same_build(installed, base):
        return True, f"{package} {installed} is installed (the series was made for {base})"
    if os.path.exists(cached_tarball(build_dir, base, package)):
        return True, f"{package} {base} was fetched into build/sources before"
    offered = offered_versions(package)
    good = [v for v in offered if same_build(v, base)]
    if good:
        return True, (f"apt offers {package} {good[0]} (the series was made for {base}): "
                      "the first build fetches it into build/sources/")
    if series.base_fetch():
        return True, (f"apt does not offer {package} {base}: the first build fetches it "
                      "from the Debian archive's pool (patches/BASE) into build/sources/")
    if installed and kernel_version(installed) == kernel_version(base):
        return True, (f"{package} {installed} is installed, another Debian revision of "
                      f"Linux {kernel_version(base)} than {base}, which apt does not offer: "
                      "the build will use it, with a warning")
    return False, unavailable(package, base, installed, offered)
