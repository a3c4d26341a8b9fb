import os
import shutil
import tempfile
import unittest
from unittest import mock

from labkit import disk, kbuild
from labkit.errors import HarnessError
from labkit.kernels import KernelId as K


class Require(unittest.TestCase):
    """A run that would fill the disk stops before it starts, saying how
    much it needs and how much there is."""

    def test_room_enough(self):
        with mock.patch.object(disk, "free", return_value=10 * 1000 ** 3):
            disk.require("/build", 2 * 1000 ** 3, "make check")

    def test_too_little_names_both_figures(self):
        with mock.patch.object(disk, "free", return_value=1 * 1000 ** 3):
            with self.assertRaises(HarnessError) as e:
                disk.require("/build", 2 * 1000 ** 3, "make check (its kernels)")
        text = str(e.exception)
        self.assertIn("make check (its kernels) needs about 2.3 GB", text)
        self.assertIn("it has 1.0 GB", text)
        self.assertIn("make clean", text)

    def test_nothing_to_write_asks_nothing(self):
        with mock.patch.object(disk, "free", return_value=0):
            disk.require("/build", 0, "a built kernel")

    def test_free_of_a_folder_not_made_yet(self):
        self.assertGreater(disk.free("/tmp/no/such/folder/yet"), 0)


class Missing(unittest.TestCase):
    """Only what is not there yet counts."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.tree = os.path.join(self.dir, "linux")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_empty_build_folder(self):
        need = disk.missing(self.dir, [K.of(1), K.of(7, "debug")], self.tree,
                            [os.path.join(self.dir, "linux-debug")])
        self.assertEqual(need, disk.TREE + disk.WORKTREE + disk.KERNEL["plain"]
                         + disk.KERNEL["debug"])

    def test_built_kernels_and_tree_need_nothing(self):
        os.makedirs(self.tree)
        os.makedirs(os.path.join(self.dir, "obj", "cp1"))
        self.assertEqual(disk.missing(self.dir, [K.of(1), K.of(1)], self.tree), 0)


class Tidy(unittest.TestCase):
    """After a build, the link's leftovers go; what the labs and gdb read
    stays."""

    def test_leftovers_go_the_rest_stays(self):
        build = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, build)
        k = kbuild.Kernel(build, K.of(2))
        compressed = os.path.join(k.obj, "arch", "x86", "boot", "compressed")
        os.makedirs(compressed)
        gone = ["vmlinux.o", ".tmp_vmlinux1", ".tmp_vmlinux2.kallsyms.S",
                "arch/x86/boot/compressed/vmlinux.bin"]
        kept = ["vmlinux", "System.map", "vmlinux.a", "arch/x86/boot/bzImage",
                "arch/x86/boot/compressed/vmlinux.bin.gz", "kernel/trace/ftrace.o"]
        for name in gone + kept:
            path = os.path.join(k.obj, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").close()
        k.tidy()
        self.assertEqual([n for n in gone if os.path.exists(os.path.join(k.obj, n))], [])
        self.assertEqual([n for n in kept if not os.path.exists(os.path.join(k.obj, n))], [])


if __name__ == "__main__":
    unittest.main()
