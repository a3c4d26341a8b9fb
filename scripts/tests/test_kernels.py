"""What a kernel is called, and which checkpoints' features it has: one
answer each, used by every module."""

import unittest

from labkit import kbuild, qemu, series


class Kernels(unittest.TestCase):
    def test_names(self):
        self.assertEqual(series.kernel_name("upstream"), "upstream")
        self.assertEqual(series.kernel_name(0), "cp0")
        self.assertEqual(series.kernel_name(7), "cp7")

    def test_every_module_uses_the_same_name(self):
        for kernel in ("upstream", 3):
            name = series.kernel_name(kernel)
            self.assertEqual(kbuild.Kernel("/b", kernel).name, name)
            self.assertIn(f"ftlab.kernel={name}", qemu.append(["lab:03"], kernel))

    def test_features(self):
        self.assertTrue(series.has_checkpoint("upstream", 99))
        self.assertTrue(series.has_checkpoint(3, 3))
        self.assertTrue(series.has_checkpoint(4, 3))
        self.assertFalse(series.has_checkpoint(2, 3))
        self.assertTrue(series.has_checkpoint(0, -1))    # lab 0's "previous checkpoint"
