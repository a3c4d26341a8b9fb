"""The checkpoints and labs that exist in the repo.

A checkpoint N exists when patches/NN-slug/ exists (it may hold no patch
yet: checkpoint 0 is then the unmodified base). Which kernel a run builds
(a checkpoint or upstream, and how) is kernels.KernelId's. Its lab is labs/NN-slug/, and
its title is the lab script's "# description:" line, ftracetest style.
"""

import hashlib
import os
import re

from .errors import HarnessError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATCHES = os.path.join(ROOT, "patches")
LABS = os.path.join(ROOT, "labs")
BASE_FILE = os.path.join(PATCHES, "BASE")

_DIR_RE = re.compile(r"^(\d\d)-([a-z0-9-]+)$")


class SeriesError(HarnessError):
    """patches/ is not a series the harness can use."""


def header_field(path, field):
    """The value of a '# field: value' header line of a script, or ''."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"#\s*" + re.escape(field) + r":\s*(.*)", line)
                if m:
                    return m.group(1).strip()
    except FileNotFoundError:
        pass
    return ""


def data_lines(text):
    """(line number, line) of a data file of the labs (ftracetest.matrix,
    the conformance corpus): stripped, without its
    blank lines and "#" comments."""
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line and not line.startswith("#"):
            yield n, line


class LabCheck:
    """A check lab.sh registers. modules: it needs a kernel with modules
    ("module_check" in lab.sh, lib.sh): the guest runs it only where the
    sample module is in the initramfs (a debug kernel, kernels.VARIANTS),
    and elsewhere it neither runs nor is expected (runs_on)."""

    def __init__(self, ident, kind, title, modules=False):
        self.id, self.kind, self.title, self.modules = ident, kind, title, modules

    def runs_on(self, kid):
        """Whether kernel kid (a kernels.KernelId) runs this check."""
        return not self.modules or kid.spec.modules

    def __repr__(self):
        return f"LabCheck({self.id!r}, {self.kind!r})"


# A registration in lab.sh (initramfs/lib.sh): check|guard|ours_only ID
# "title" func, or replaced_at N ID "title" func; the kind is the one the
# guest reports (lib.sh's _run). module_check registers a feature check
# (kind "check") that runs only on a kernel with modules; check_ours a
# feature check that upstream skips (reporting it "ours-only" there).
_REGISTRATION = re.compile(r'^(check_ours|check|guard|ours_only|module_check|replaced_at\s+(\d+))\s+(\S+)'
                           r'\s+"([^"]*)"\s+\S+\s*$')


def parse_registrations(text):
    found = []
    for line in text.splitlines():
        m = _REGISTRATION.match(line)
        if not m:
            continue
        word, at, ident, title = m.groups()
        if word == "module_check":
            found.append(LabCheck(ident, "check", title, modules=True))
            continue
        if word == "check_ours":
            found.append(LabCheck(ident, "check", title))
            continue
        kind = f"replaced-at-{at}" if at else word.replace("_", "-")
        found.append(LabCheck(ident, kind, title))
    return found


class Checkpoint:
    def __init__(self, number, slug):
        self.number = number
        self.slug = slug
        self.name = f"{number:02d}-{slug}"
        self.patch_dir = os.path.join(PATCHES, self.name)
        self.lab_dir = os.path.join(LABS, self.name)
        self.lab_script = os.path.join(self.lab_dir, "lab.sh")

    @property
    def branch(self):
        return f"lab/cp{self.number}"

    @property
    def title(self):
        return header_field(self.lab_script, "description") or self.slug

    @property
    def needs_gdb(self):
        """A lab with "# flags: gdb" runs under gdb, which acts on its requests."""
        return "gdb" in header_field(self.lab_script, "flags").split()

    @property
    def has_lab(self):
        return os.path.isfile(self.lab_script)

    def checks(self, kid=None):
        """The checks lab.sh registers, in order, as LabCheck(id, kind, title);
        with kid (a kernels.KernelId), those that kernel runs (LabCheck.runs_on)."""
        if not self.has_lab:
            return []
        with open(self.lab_script, encoding="utf-8") as f:
            found = parse_registrations(f.read())
        return found if kid is None else [c for c in found if c.runs_on(kid)]

    def not_run_on(self, kid):
        """The ids of the checks kernel kid does not run (a module_check on a
        kernel without modules)."""
        return {c.id for c in self.checks() if not c.runs_on(kid)}

    def patches(self):
        if not os.path.isdir(self.patch_dir):
            return []
        return sorted(os.path.join(self.patch_dir, p)
                      for p in os.listdir(self.patch_dir) if p.endswith(".patch"))

    def __repr__(self):
        return f"Checkpoint({self.name})"


def checkpoints():
    """All checkpoints, by number. Numbers must run 0, 1, 2... without gaps."""
    found = []
    if os.path.isdir(PATCHES):
        for entry in os.listdir(PATCHES):
            m = _DIR_RE.match(entry)
            if m and os.path.isdir(os.path.join(PATCHES, entry)):
                found.append(Checkpoint(int(m.group(1)), m.group(2)))
    found.sort(key=lambda c: c.number)
    for i, cp in enumerate(found):
        if cp.number != i:
            raise SeriesError(f"patches/: checkpoint {i} is missing before {cp.name}")
    return found


def last_checkpoint():
    """The number of the series' last checkpoint (0 while there is none)."""
    cps = checkpoints()
    return cps[-1].number if cps else 0


def lookup(number):
    for cp in checkpoints():
        if cp.number == number:
            return cp
    return None


def series_digest(upto):
    """A digest of every patch of checkpoints 0..upto: it names a branch's
    content, so a changed patch makes the harness re-apply the series."""
    h = hashlib.sha256()
    for cp in checkpoints():
        if cp.number > upto:
            break
        for path in cp.patches():
            h.update(os.path.basename(path).encode())
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()[:16]


def package_of(version):
    """Debian's source package of a kernel version: "linux-source-6.12"
    for "6.12.118-1~deb12u1" (one package per upstream release)."""
    release = ".".join(re.split(r"[-+~]", version)[0].split(".")[:2])
    return f"linux-source-{release}"


def parse_base(text):
    """(package, version) of patches/BASE's text: its first line that is
    not a comment, either "PACKAGE VERSION" ("linux-source-6.12
    6.12.118-1~deb12u1") or the version alone, whose package is then
    package_of(version)."""
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#") or words[0] == "fetch":
            continue
        if len(words) == 1:
            return package_of(words[0]), words[0]
        if len(words) == 2 and words[0].startswith("linux-source-"):
            return words[0], words[1]
        raise SeriesError(f"patches/BASE: '{line.strip()}' is neither a version "
                          "(6.12.118-1~deb12u1) nor a package and its version "
                          "(linux-source-6.12 6.12.118-1~deb12u1)")
    raise SeriesError("patches/BASE names no version")


def parse_base_fetch(text):
    """(url, sha256) of patches/BASE's "fetch URL sha256:HEX" line: where
    the Debian archive keeps the .deb of that version and its checksum,
    for a host whose apt does not offer it. None without such a line."""
    for line in text.splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == "fetch" and words[2].startswith("sha256:"):
            return words[1], words[2][len("sha256:"):]
    return None


def base_fetch():
    """patches/BASE's fetch line (parse_base_fetch), or None."""
    with open(BASE_FILE, encoding="utf-8") as f:
        return parse_base_fetch(f.read())


def base():
    """(package, version): the Debian linux-source package and the exact
    version of it the series was made for (patches/BASE)."""
    with open(BASE_FILE, encoding="utf-8") as f:
        return parse_base(f.read())


def base_package():
    """The linux-source package the series is built on ("linux-source-6.12")."""
    return base()[0]


def base_version():
    """The linux-source version the series was made for (patches/BASE)."""
    return base()[1]
