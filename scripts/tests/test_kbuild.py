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
