"""Which kernel: one value (kernels.KernelId) that names a kernel, says
which checkpoints' features it has, and how it builds, for every module."""

import unittest

from labkit import kbuild, kernels, qemu, series
from labkit.kernels import KernelId as K


class Names(unittest.TestCase):
    def test_names(self):
        self.assertEqual(K.upstream().name, "upstream")
        self.assertEqual(K.of(0).name, "cp0")
        self.assertEqual(K.of(7).name, "cp7")
        self.assertEqual(K.of(7, "debug").name, "cp7-debug")
        self.assertEqual(K.upstream("kcsan").name, "upstream-kcsan")
        self.assertEqual(K.of(3).built_from("skeleton/cp3", "skeleton").name, "skeleton-cp3")
        self.assertEqual(K.of(3, "debug").built_from("student/cp3", "student", True).name,
                         "student-cp3-debug")

    def test_every_module_uses_the_same_name(self):
        for kid in (K.upstream(), K.of(3)):
            self.assertEqual(kbuild.Kernel("/b", kid).name, kid.name)
            self.assertIn(f"ftlab.kernel={kid.name}", qemu.append(["lab:03"], kid))

    def test_the_guest_is_told_the_base_name(self):
        # the guest's labs tell upstream from a checkpoint, not variants
        self.assertIn("ftlab.kernel=cp3 ", qemu.append(["lab:03"], K.of(3, "debug")) + " ")

    def test_parse_gives_back_what_name_gives(self):
        for kid in (K.upstream(), K.of(0), K.of(7, "kcsan"), K.of(3).built_from("x", "skeleton"),
                    K.upstream("debug")):
            back = K.parse(kid.name)
            self.assertEqual((back.checkpoint, back.variant, back.flavour),
                             (kid.checkpoint, kid.variant, kid.flavour))
        self.assertEqual(K.parse("5"), K.of(5))

    def test_parse_refuses_what_names_no_kernel(self):
        for text in ("cp", "upstream-foo", "cp3-debug-x", "seven", "wizard-cp3"):
            with self.assertRaises(kernels.KernelError, msg=text):
                K.parse(text)

    def test_labels(self):
        self.assertTrue(K.upstream().label.startswith("upstream "))
        self.assertEqual(K.of(3).label, "checkpoint 3")
        self.assertEqual(K.of(7, "debug").label, "checkpoint 7 (debug)")
        self.assertEqual(K.of(3).built_from("skeleton/cp3", "skeleton").label,
                         "checkpoint 3's skeleton")
        self.assertEqual(K.of(3).built_from("student/cp3", "student", True).label,
                         "your checkpoint 3 (student/cp3)")


class Features(unittest.TestCase):
    def test_features(self):
        self.assertTrue(K.upstream().has(99))
        self.assertTrue(K.of(3).has(3))
        self.assertTrue(K.of(4).has(3))
        self.assertFalse(K.of(2).has(3))
        self.assertTrue(K.of(0).has(-1))    # lab 0's "previous checkpoint"

    def test_just_before(self):
        self.assertTrue(K.of(2).is_just_before(3))
        self.assertFalse(K.of(3).is_just_before(3))
        self.assertFalse(K.upstream().is_just_before(0))

    def test_neighbours(self):
        self.assertEqual(K.of(3, "debug").previous(), K.of(2, "debug"))
        self.assertEqual(K.of(0).previous(), K.upstream())
        self.assertIsNone(K.upstream().previous())
        last = series.last_checkpoint()
        self.assertIsNone(K.of(last).next())
        self.assertEqual(K.of(0).next(), K.of(1))

    def test_rank_puts_upstream_first(self):
        ids = [K.of(2), K.upstream(), K.of(0)]
        self.assertEqual(sorted(ids, key=K.rank), [K.upstream(), K.of(0), K.of(2)])

    def test_every(self):
        every = K.every()
        self.assertEqual(every[0], K.upstream())
        self.assertEqual([k.checkpoint for k in every[1:]],
                         [cp.number for cp in series.checkpoints()])

    def test_plain_forgets_how_it_was_built(self):
        kid = K.of(3, "debug").built_from("student/cp3", "student", True)
        self.assertEqual(kid.plain(), K.of(3))


class Making(unittest.TestCase):
    def test_unknown_words_are_refused(self):
        with self.assertRaises(kernels.KernelError):
            K.of(3, "ubsan")
        with self.assertRaises(kernels.KernelError):
            K.of(3).built_from("x", "wizard")
        with self.assertRaises(kernels.KernelError):
            K.upstream().built_from("x", "student")

    def test_any_flavour_on_any_variant(self):
        for variant in kernels.VARIANTS:
            for flavour in kernels.FLAVOURS:
                kid = K.of(3, variant).built_from(f"{flavour}/cp3", flavour)
                k = kbuild.Kernel("/b", kid)
                self.assertTrue(k.obj.endswith(kid.name))
                self.assertEqual(kid.branch, f"{flavour}/cp3")

    def test_branch(self):
        self.assertEqual(K.upstream().branch, kernels.UPSTREAM)
        self.assertEqual(K.of(2).branch, series.lookup(2).branch)
        self.assertEqual(K.upstream().built_from("rebase/upstream").branch, "rebase/upstream")
        self.assertEqual(K.upstream().built_from("rebase/upstream").name, "upstream")

    def test_spec_is_the_variant_row(self):
        self.assertEqual(K.of(7).spec.smp, 1)
        self.assertEqual(K.of(7, "debug").spec.smp, 2)
        self.assertFalse(K.of(7, "kcsan").spec.warn_panics)
        self.assertTrue(K.of(7, "debug").debug)
        self.assertFalse(K.of(7).debug)
        self.assertIsNone(K.of(7).spec.worktree)

    def test_seed_names(self):
        self.assertEqual(K.of(3).seed_names(), ["cp2", "upstream"])
        self.assertEqual(K.of(0).seed_names(), ["upstream"])
        self.assertEqual(K.upstream().seed_names(), [])
        skel = K.of(3).built_from("skeleton/cp3", "skeleton")
        self.assertEqual(skel.seed_names(), ["cp2", "cp3", "upstream"])
        self.assertEqual(K.of(3, "debug").seed_names(["cp7-debug", "cp3-debug", "cp1"]),
                         ["cp2-debug", "upstream-debug", "cp3-debug", "cp7-debug"])


if __name__ == "__main__":
    unittest.main()
