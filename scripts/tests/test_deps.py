"""Package checks ask dpkg (dpkg-query -W), not the file system."""

import subprocess
import unittest
from unittest import mock

from labkit import deps


def dpkg_says(status, rc=0):
    return mock.patch.object(deps.subprocess, "run", return_value=subprocess.CompletedProcess(
        ["dpkg-query"], rc, stdout=status, stderr=""))


class Installed(unittest.TestCase):
    def test_installed_and_held_packages_count(self):
        for status in ("install ok installed", "hold ok installed"):
            with dpkg_says(f"gdb {status}\n"):
                self.assertEqual(deps.missing(("gdb",)), [], status)

    def test_removed_unknown_and_half_installed_do_not(self):
        for out, rc in (("gdb deinstall ok config-files\n", 0), ("", 1),
                        ("gdb install ok half-installed\n", 0), ("gdb install ok unpacked\n", 0)):
            with dpkg_says(out, rc):
                self.assertEqual(deps.missing(("gdb",)), ["gdb"], out)

    def test_the_query(self):
        with dpkg_says("busybox-static install ok installed\n") as run:
            deps.missing(("busybox-static",))
        self.assertEqual(run.call_args.args[0],
                         ["dpkg-query", "-W", "-f=${Package} ${Status}\n", "busybox-static"])


class Missing(unittest.TestCase):
    """One dpkg-query for all packages; what it does not list as installed
    is missing (unknown packages print nothing, and make it exit 1)."""

    def test_one_query_for_all(self):
        out = ("gdb install ok installed\nmake hold ok installed\n"
               "pandoc deinstall ok config-files\n")
        with dpkg_says(out, rc=1) as run:
            self.assertEqual(deps.missing(("gdb", "make", "pandoc", "nosuch")),
                             ["pandoc", "nosuch"])
        self.assertEqual(run.call_count, 1)
        self.assertEqual(run.call_args.args[0][-4:], ["gdb", "make", "pandoc", "nosuch"])

    def test_on_this_machine(self):
        import shutil
        if not shutil.which("dpkg-query"):
            self.skipTest("no dpkg")
        self.assertEqual(deps.missing(("dpkg",)), [])
        self.assertEqual(deps.missing(("no-such-package-ftlab",)), ["no-such-package-ftlab"])
