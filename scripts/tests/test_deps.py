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


class PerTarget(unittest.TestCase):
    """Each target requires what it uses: make lab neither the docs nor
    the bench tools; make docs no compiler; make check everything."""

    def test_a_lab_needs_no_docs_or_bench_tools(self):
        need = deps.needed("lab")
        for tool in deps.DOCS_PACKAGES + deps.BENCH_PACKAGES + deps.GDB_PACKAGES:
            self.assertNotIn(tool, need)
        for tool in ("gcc", "qemu-system-x86", "busybox-static"):
            self.assertIn(tool, need)

    def test_the_kernel_source_is_not_a_package_to_install(self):
        """source.py takes patches/BASE's linux-source, exactly; a name in
        these lists would go to apt-get install, which takes
        "linux-source-6.1" as a pattern on a host without it."""
        self.assertEqual([p for p in deps.PACKAGES if p.startswith("linux-source")], [])

    def test_a_lab_under_gdb_needs_gdb(self):
        self.assertIn("gdb", deps.needed("lab", needs_gdb=True))
        self.assertIn("gdb", deps.needed("gdb"))

    def test_each_tool_for_its_own_target(self):
        self.assertIn("gnuplot-nox", deps.needed("bench"))
        self.assertNotIn("asciidoctor", deps.needed("bench"))
        self.assertNotIn("qemu-system-x86", deps.needed("kernel"))
        self.assertEqual(sorted(deps.needed("check")), sorted(deps.PACKAGES))
        self.assertEqual(sorted(deps.needed("bench", full=True)), sorted(deps.PACKAGES))

    def test_the_harness_asks_for_the_targets_packages(self):
        import ftlab
        from labkit import labrun
        asked = []
        with mock.patch.object(labrun.deps, "require", side_effect=asked.append), \
                mock.patch.object(labrun.deps, "check_machine"), \
                mock.patch.object(labrun.tree.Tree, "ensure", side_effect=deps.MissingPackages):
            import tempfile
            ftlab.main(["lab", "1", "--build-dir", tempfile.mkdtemp()])
        self.assertEqual(asked, [deps.needed("lab")])


class Hosts(unittest.TestCase):
    """Another host is one line of error, not a traceback."""

    def test_no_dpkg(self):
        with mock.patch.object(deps.shutil, "which", return_value=None):
            with self.assertRaises(deps.HarnessError) as e:
                deps.ensure(("gdb",))
        self.assertIn("no dpkg-query", str(e.exception))
        self.assertNotIn("\n", str(e.exception))

    def test_not_x86_64(self):
        with mock.patch.object(deps.platform, "machine", return_value="aarch64"):
            with self.assertRaises(deps.HarnessError) as e:
                deps.check_machine()
        self.assertIn("this host is aarch64", str(e.exception))
        self.assertNotIn("\n", str(e.exception))
        with mock.patch.object(deps.platform, "machine", return_value="x86_64"):
            deps.check_machine()


class Installing(unittest.TestCase):
    def test_apts_output_is_shown(self):
        with mock.patch.object(deps.subprocess, "run", return_value=subprocess.CompletedProcess(
                [], 0)) as run, mock.patch.object(deps, "unknown", return_value=[]):
            self.assertTrue(deps.install(["gdb"]))
        for call in run.call_args_list:
            self.assertNotIn("stdout", call.kwargs)
            self.assertNotIn("-qq", call.args[0])
        self.assertEqual(run.call_args_list[-1].args[0][-1], "gdb")

    def test_without_root_the_one_command_to_run(self):
        import io
        from contextlib import redirect_stderr, redirect_stdout
        out, err = io.StringIO(), io.StringIO()
        with mock.patch.object(deps, "missing", return_value=["gdb", "pandoc"]), \
                mock.patch.object(deps.os, "geteuid", return_value=1000), \
                mock.patch.object(deps, "check_dpkg"), \
                redirect_stdout(out), redirect_stderr(err):
            self.assertFalse(deps.ensure(("gdb", "pandoc", "make")))
        self.assertIn("missing Debian packages: gdb pandoc", err.getvalue())
        self.assertIn("sudo apt-get install -y --no-install-recommends gdb pandoc",
                      out.getvalue())
