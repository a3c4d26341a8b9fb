import unittest

from labkit import kbuild


class ConfigCheck(unittest.TestCase):
    WANT = {"CONFIG_A": "y", "CONFIG_B": "n"}

    def test_all_there(self):
        self.assertEqual(kbuild.config_problems("CONFIG_A=y\n# CONFIG_B is not set\n", self.WANT), [])

    def test_missing_and_unwanted_are_named(self):
        bad = kbuild.config_problems("CONFIG_B=y\n", self.WANT)
        self.assertEqual(len(bad), 2)
        self.assertTrue(any("CONFIG_A" in b and "wanted y" in b for b in bad))
        self.assertTrue(any("CONFIG_B" in b and "wanted not set" in b for b in bad))

    def test_fragment_names_the_lab_options(self):
        want = kbuild.wanted_options()
        for opt in ("CONFIG_FUNCTION_TRACER", "CONFIG_DYNAMIC_FTRACE", "CONFIG_GDB_SCRIPTS",
                    "CONFIG_STACK_TRACER", "CONFIG_TRACER_SNAPSHOT"):
            self.assertEqual(want[opt], "y")
        self.assertEqual(want["CONFIG_UPROBE_EVENTS"], "n")


class UpToDate(unittest.TestCase):
    """A warm 'make lab N' skips kbuild only when make would find nothing
    to do: same commit, no file of the tree changed since the build."""

    def setUp(self):
        import os
        import tempfile
        self.dir = tempfile.mkdtemp()
        self.src = os.path.join(self.dir, "linux")
        os.makedirs(os.path.join(self.src, ".git"))
        os.makedirs(os.path.join(self.src, "kernel"))
        self.source = os.path.join(self.src, "kernel", "a.c")
        open(self.source, "w").close()
        self.k = kbuild.Kernel(self.dir, 1)
        os.makedirs(os.path.dirname(self.k.bzimage))
        for path in (self.k.bzimage, self.k.vmlinux):
            open(path, "w").close()
        with open(self.k.stamp, "w") as f:
            f.write("abc\n")
        # built a minute after the source was written
        os.utime(self.source, (1000, 1000))
        os.utime(os.path.join(self.src, "kernel"), (1000, 1000))
        os.utime(self.src, (1000, 1000))
        os.utime(self.k.stamp, (1060, 1060))

    def tearDown(self):
        import shutil
        shutil.rmtree(self.dir)

    def test_nothing_changed(self):
        self.assertTrue(self.k.up_to_date(self.src, "abc"))

    def test_another_commit(self):
        self.assertFalse(self.k.up_to_date(self.src, "def"))

    def test_a_file_changed_after_the_build_started(self):
        import os
        os.utime(self.source, (1100, 1100))
        self.assertFalse(self.k.up_to_date(self.src, "abc"))

    def test_git_metadata_does_not_count(self):
        import os
        os.utime(os.path.join(self.src, ".git"), (1100, 1100))
        self.assertTrue(self.k.up_to_date(self.src, "abc"))

    def test_no_vmlinux(self):
        import os
        os.unlink(self.k.vmlinux)
        self.assertFalse(self.k.up_to_date(self.src, "abc"))


class DebugVariant(unittest.TestCase):
    """make lab N DEBUG=1 and make check's debug part: the same checkpoint
    with scripts/debug.config, in a folder of its own, two vCPUs."""

    def test_plain_and_debug_differ_only_where_they_must(self):
        plain, debug = kbuild.Kernel("/b", 7), kbuild.Kernel("/b", 7, debug=True)
        self.assertEqual((plain.name, debug.name), ("cp7", "cp7-debug"))
        self.assertEqual(debug.obj, "/b/obj/cp7-debug")
        self.assertEqual(plain.fragments, [kbuild.CONFIG_FRAGMENT])
        self.assertEqual(debug.fragments, [kbuild.CONFIG_FRAGMENT, kbuild.DEBUG_FRAGMENT])
        self.assertNotIn("modules", plain.targets)
        self.assertIn("modules", debug.targets)
        self.assertEqual((plain.smp, debug.smp), (1, 2))
        self.assertEqual(debug.label, "checkpoint 7 (debug)")

    def test_debug_fragment_asks_for_every_checker(self):
        want = kbuild.wanted_options(kbuild.DEBUG_FRAGMENT)
        for opt in ("CONFIG_SMP", "CONFIG_ACPI", "CONFIG_PCI", "CONFIG_KASAN", "CONFIG_PROVE_LOCKING",
                    "CONFIG_PROVE_RCU", "CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_DEBUG_LIST",
                    "CONFIG_DEBUG_KMEMLEAK", "CONFIG_SLUB_DEBUG", "CONFIG_MODULES"):
            self.assertEqual(want[opt], "y", opt)
        self.assertEqual(want["CONFIG_SAMPLE_TRACE_EVENTS"], "m")


class SeedFolder(unittest.TestCase):
    """A new object folder starts from a neighbour's of the same variant."""

    def setUp(self):
        import os
        import tempfile
        from labkit import labrun
        self.dir = tempfile.mkdtemp()
        self.session = labrun.Session(self.dir)
        for name in ("upstream", "cp6", "upstream-debug"):
            os.makedirs(os.path.join(self.dir, "obj", name))

    def tearDown(self):
        import shutil
        shutil.rmtree(self.dir)

    def test_plain_from_the_previous_checkpoint(self):
        self.assertTrue(self.session.seed_folder(7, False).endswith("/obj/cp6"))
        self.assertTrue(self.session.seed_folder(0, False).endswith("/obj/upstream"))
        self.assertIsNone(self.session.seed_folder("upstream", False))
        self.assertIsNone(self.session.seed_folder(3, False))

    def test_debug_from_any_debug_folder(self):
        self.assertTrue(self.session.seed_folder(7, True).endswith("/obj/upstream-debug"))
        self.assertTrue(self.session.seed_folder("upstream", True).endswith("/obj/upstream-debug"))
