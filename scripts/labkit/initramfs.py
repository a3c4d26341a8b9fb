"""The guest's initramfs: busybox, /init, the guest library, every lab and
the kernel's ftracetest. Written by the kernel's own usr/gen_init_cpio
(built in every object folder) from a list of entries, so that
/dev/console can be a device node without root rights."""

import os
import shutil
import subprocess
import threading

from . import docexamples, ftmatrix, series
from .errors import HarnessError
from .kernels import UPSTREAM

BUSYBOX = "/bin/busybox"
INIT_DIR = os.path.join(series.ROOT, "initramfs")


class CpioList:
    """The entries of a gen_init_cpio list (see usr/gen_init_cpio's usage)."""

    def __init__(self):
        self.lines = []

    def directory(self, name):
        self.lines.append(f"dir /{name} 0755 0 0")

    def file(self, name, source, executable=False):
        self.lines.append(f"file /{name} {source} {'0755' if executable else '0644'} 0 0")

    def char_device(self, name, major, minor):
        self.lines.append(f"nod /{name} 0600 0 0 c {major} {minor}")

    def symlink(self, name, target):
        self.lines.append(f"slink /{name} {target} 0777 0 0")

    def tree(self, name, src, keep=None):
        """Copy a host folder in, keeping executable bits and symlinks;
        keep(file name): whether a file goes in (all by default)."""
        self.directory(name)
        for entry in sorted(os.listdir(src)):
            path = os.path.join(src, entry)
            inner = f"{name}/{entry}"
            if os.path.islink(path):
                self.symlink(inner, os.readlink(path))
            elif os.path.isdir(path):
                self.tree(inner, path, keep)
            elif keep is None or keep(entry):
                self.file(inner, path, os.access(path, os.X_OK))

    def text(self):
        return "".join(line + "\n" for line in self.lines)


def gen_init_cpio(build_dir):
    """The kernel's usr/gen_init_cpio (build/gen_init_cpio), compiled on its
    own the first time it is needed from usr/gen_init_cpio.c of the tree's
    'upstream' branch (one file, the C library only): no kernel has to be
    built for it, whatever checkpoint is checked out."""
    kept = os.path.join(build_dir, "gen_init_cpio")
    if os.path.exists(kept):
        return kept
    tree_path = os.path.join(build_dir, "linux")
    source = subprocess.run(["git", "-C", tree_path, "show", f"{UPSTREAM}:usr/gen_init_cpio.c"],
                            capture_output=True)
    if source.returncode != 0:
        raise HarnessError(f"no usr/gen_init_cpio.c in {tree_path}: the kernel tree is not "
                           "extracted yet")
    part = f"{kept}.{os.getpid()}.{threading.get_ident()}"   # two lanes may race here
    r = subprocess.run(["cc", "-O2", "-o", part, "-x", "c", "-"], input=source.stdout,
                       capture_output=True)
    if r.returncode != 0:
        raise HarnessError(f"compiling usr/gen_init_cpio.c failed:\n"
                           f"{r.stderr.decode(errors='replace')}")
    os.replace(part, kept)
    return kept


def generated(path, data):
    """Write a file the harness generates for the archive (text or bytes),
    dated 0 as gen_init_cpio -t 0 dates directories: gen_init_cpio keeps a
    file's own date, so a file written anew on every run would make every
    archive new, and make check would boot again what it could reuse
    (qemu.Reuse keys on the archive's content)."""
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    os.utime(path, (0, 0))
    return path


def write(entries, out, tool):
    """Write the cpio archive of 'entries' (a CpioList) to 'out' with tool
    (gen_init_cpio), timestamps 0 so that the same input gives the same
    archive."""
    listing = out + ".list"
    with open(listing, "w") as f:
        f.write(entries.text())
    with open(out, "wb") as f:
        r = subprocess.run([tool, "-t", "0", listing], stdout=f, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise HarnessError(f"gen_init_cpio failed:\n{r.stderr.decode(errors='replace')}")
    return out


def ftrace_selftests(tree_path, dest):
    """Unpack tools/testing/selftests/ftrace of the 'upstream' branch: the
    kernel's own tests, unmodified, whatever checkpoint is checked out.
    Unpacked again only when 'upstream' moved (a new tree): git archive
    took most of a warm make lab's harness time."""
    os.makedirs(dest, exist_ok=True)
    tests = os.path.join(dest, "ftrace")
    stamp = os.path.join(dest, "ftrace.commit")
    commit = subprocess.run(["git", "-C", tree_path, "rev-parse", UPSTREAM],
                            check=True, capture_output=True, text=True).stdout.strip()
    if os.path.isdir(tests) and os.path.exists(stamp) and open(stamp).read() == commit:
        return tests
    shutil.rmtree(tests, ignore_errors=True)
    archive = subprocess.run(["git", "-C", tree_path, "archive", UPSTREAM,
                              "tools/testing/selftests/ftrace"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-C", dest, "-x", "--strip-components=3"],
                   input=archive, check=True)
    with open(stamp, "w") as f:
        f.write(commit)
    return tests


def guest_reads(name):
    """The files of labs/ a guest reads: the scripts and the conformance
    corpus. The handouts, expected outputs and gdb scripts stay on the
    host: editing them leaves the archive as it was, and make check
    grades its kept guest runs again (qemu.Reuse)."""
    return name.endswith(".sh") or name == "corpus"


def build(build_dir, tree_path, extra_files=None):
    out = os.path.join(build_dir, "initramfs.cpio")
    src = os.path.join(build_dir, "initramfs-src")
    selftests = ftrace_selftests(tree_path, src)
    tests = generated(os.path.join(src, "ftracetest.list"),
                      "\n".join(ftmatrix.load().tests()) + "\n")
    cpio = CpioList()
    for d in ("bin", "sbin", "usr", "usr/bin", "proc", "sys", "dev", "tmp", "root", "lab"):
        cpio.directory(d)
    cpio.char_device("dev/console", 5, 1)
    cpio.char_device("dev/null", 1, 3)
    cpio.file("bin/busybox", BUSYBOX, executable=True)
    cpio.symlink("bin/sh", "busybox")
    cpio.file("init", os.path.join(INIT_DIR, "init"), executable=True)
    cpio.file("lab/lib.sh", os.path.join(INIT_DIR, "lib.sh"))
    cpio.tree("lab/labs", series.LABS, guest_reads)
    cpio.file("lab/gdb-selftest.sh", os.path.join(series.ROOT, "gdb-scripts", "selftest",
                                                  "guest.sh"), executable=True)
    cpio.tree("lab/ftrace", selftests)
    cpio.file("lab/ftracetest.list", tests)
    cpio.file("lab/docexamples.sh", os.path.join(INIT_DIR, "docexamples.sh"))
    cpio.tree("lab/docexamples", doc_examples(os.path.join(src, "docexamples")))
    for guest_path, host_path in sorted((extra_files or {}).items()):
        cpio.file(guest_path, host_path, executable=os.access(host_path, os.X_OK))
    return write(cpio, out, gen_init_cpio(build_dir))


def doc_examples(dest):
    """The docs' console examples as the guest runs them
    (docexamples.guest_files), written out to 'dest' for gen_init_cpio."""
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    examples = docexamples.load()
    prefix = "lab/docexamples/"
    for name, text in docexamples.guest_files(examples, series.last_checkpoint()).items():
        assert name.startswith(prefix), name
        path = os.path.join(dest, name[len(prefix):])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        generated(path, text)
    return dest


def appended(session, name, extra):
    """session.initrd() followed by a second cpio archive of 'extra'
    ({path in the guest: bytes or a host file, executable when the host
    file is}, with every folder above them); the kernel unpacks both, so
    the data of a robustness test or trace-cmd for TRACE=1 need no change
    to the harness's own archive (build/initramfs-extra/NAME.cpio)."""
    base = session.initrd()
    if not extra:
        return base
    data_dir = os.path.join(session.build_dir, "initramfs-extra", name)
    os.makedirs(data_dir, exist_ok=True)
    entries = CpioList()
    folders = set()
    for path in extra:
        parent = os.path.dirname(path)
        while parent:
            folders.add(parent)
            parent = os.path.dirname(parent)
    for d in sorted(folders):
        entries.directory(d)
    for path, data in sorted(extra.items()):
        host = data
        if isinstance(data, bytes):
            host = generated(os.path.join(data_dir, os.path.basename(path)), data)
        entries.file(path, host, executable=os.access(host, os.X_OK))
    out = os.path.join(session.build_dir, "initramfs-extra", f"{name}.cpio")
    tail = write(entries, out + ".tail", gen_init_cpio(session.build_dir))
    with open(out, "wb") as o:
        for part in (base, tail):
            with open(part, "rb") as f:
                shutil.copyfileobj(f, o)
    return out
