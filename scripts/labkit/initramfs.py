"""The guest's initramfs: busybox, /init, the guest library, every lab and
the kernel's ftracetest. Written as a "newc" cpio archive by Python, so that
/dev/console can be a device node without root rights."""

import os
import stat
import subprocess

from . import docexamples, ftmatrix, series

BUSYBOX = "/bin/busybox"
INIT_DIR = os.path.join(series.ROOT, "initramfs")


class Cpio:
    """A minimal writer of the cpio "newc" format the kernel unpacks."""

    def __init__(self, path):
        self.f = open(path, "wb")
        self.ino = 1

    def _entry(self, name, mode, data=b"", rdev=(0, 0), mtime=0):
        name_b = name.encode() + b"\0"
        fields = [self.ino, mode, 0, 0, 1, mtime, len(data), 0, 0,
                  rdev[0], rdev[1], len(name_b), 0]
        self.ino += 1
        head = b"070701" + b"".join(b"%08X" % v for v in fields)
        self.f.write(head + name_b)
        self.f.write(b"\0" * (-(len(head) + len(name_b)) % 4))
        self.f.write(data)
        self.f.write(b"\0" * (-len(data) % 4))

    def directory(self, name):
        self._entry(name, stat.S_IFDIR | 0o755)

    def file(self, name, data, executable=False):
        self._entry(name, stat.S_IFREG | (0o755 if executable else 0o644), data)

    def char_device(self, name, major, minor):
        self._entry(name, stat.S_IFCHR | 0o600, rdev=(major, minor))

    def symlink(self, name, target):
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def tree(self, name, src):
        """Copy a host folder in, keeping executable bits and symlinks."""
        self.directory(name)
        for entry in sorted(os.listdir(src)):
            path = os.path.join(src, entry)
            inner = f"{name}/{entry}"
            if os.path.islink(path):
                self.symlink(inner, os.readlink(path))
            elif os.path.isdir(path):
                self.tree(inner, path)
            else:
                with open(path, "rb") as f:
                    self.file(inner, f.read(), os.access(path, os.X_OK))

    def close(self):
        self._entry("TRAILER!!!", 0)
        self.f.close()


def ftrace_selftests(tree_path, dest):
    """Unpack tools/testing/selftests/ftrace of the 'upstream' branch: the
    kernel's own tests, unmodified, whatever checkpoint is checked out."""
    os.makedirs(dest, exist_ok=True)
    archive = subprocess.run(["git", "-C", tree_path, "archive", "upstream",
                              "tools/testing/selftests/ftrace"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-C", dest, "-x", "--strip-components=3"],
                   input=archive, check=True)
    return os.path.join(dest, "ftrace")


def build(build_dir, tree_path):
    out = os.path.join(build_dir, "initramfs.cpio")
    selftests = ftrace_selftests(tree_path, os.path.join(build_dir, "initramfs-src"))
    cpio = Cpio(out)
    for d in ("bin", "sbin", "usr", "usr/bin", "proc", "sys", "dev", "tmp", "root", "lab"):
        cpio.directory(d)
    cpio.char_device("dev/console", 5, 1)
    cpio.char_device("dev/null", 1, 3)
    with open(BUSYBOX, "rb") as f:
        cpio.file("bin/busybox", f.read(), executable=True)
    cpio.symlink("bin/sh", "busybox")
    with open(os.path.join(INIT_DIR, "init"), "rb") as f:
        cpio.file("init", f.read(), executable=True)
    with open(os.path.join(INIT_DIR, "lib.sh"), "rb") as f:
        cpio.file("lab/lib.sh", f.read())
    cpio.tree("lab/labs", series.LABS)
    with open(os.path.join(series.ROOT, "gdb-scripts", "selftest", "guest.sh"), "rb") as f:
        cpio.file("lab/gdb-selftest.sh", f.read(), executable=True)
    cpio.tree("lab/ftrace", selftests)
    cpio.file("lab/ftracetest.list", "\n".join(ftmatrix.load().tests()).encode() + b"\n")
    with open(os.path.join(INIT_DIR, "docexamples.sh"), "rb") as f:
        cpio.file("lab/docexamples.sh", f.read())
    cpio.directory("lab/docexamples")
    examples = docexamples.load()
    for name, text in sorted(docexamples.guest_files(examples, docexamples.last_checkpoint()).items()):
        cpio.file(name, text.encode())
    cpio.close()
    return out
