import os
import shutil
import tempfile
import time
import unittest
from unittest import mock

from labkit import kshark
from labkit.errors import HarnessError


class LabTraces(unittest.TestCase):
    """Which files make kernelshark N opens."""

    def setUp(self):
        self.build = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.build)
        self.empty = set()
        patcher = mock.patch.object(kshark.traces, "report", self.report)
        patcher.start()
        self.addCleanup(patcher.stop)

    def report(self, path):
        text = "cpus=1\n" + ("" if os.path.basename(path) in self.empty else "  sh-1 [000] x\n")
        return text, None

    def folder(self, name, *checks, age=0):
        path = os.path.join(self.build, "traces", name)
        os.makedirs(path)
        for c in checks:
            open(os.path.join(path, f"{name[3:5]}-{c}.dat"), "w").close()
        t = time.time() - age
        os.utime(path, (t, t))
        return path

    def names(self, files):
        return [os.path.basename(f) for f in files]

    def test_the_labs_own_checkpoint_first(self):
        own = self.folder("lab06-cp6", "article", "marker", age=100)
        self.folder("lab06-upstream", "article")
        chosen, files = kshark.lab_traces(self.build, 6)
        self.assertEqual((chosen, self.names(files)), (own, ["06-article.dat", "06-marker.dat"]))

    def test_else_the_newest(self):
        self.folder("lab06-cp5", "article", age=100)
        newest = self.folder("lab06-upstream", "article")
        self.assertEqual(kshark.lab_traces(self.build, 6)[0], newest)

    def test_kernel_given_and_one_check(self):
        self.folder("lab06-cp6", "article")
        up = self.folder("lab06-upstream", "article", "marker")
        chosen, files = kshark.lab_traces(self.build, 6, "upstream", "marker")
        self.assertEqual((chosen, self.names(files)), (up, ["06-marker.dat"]))
        with self.assertRaisesRegex(HarnessError, "make lab 6 TRACE=1"):
            kshark.lab_traces(self.build, 6, "cp5")

    def test_nothing_yet_says_what_to_run(self):
        with self.assertRaisesRegex(HarnessError, "run 'make lab 4 TRACE=1' first"):
            kshark.lab_traces(self.build, 4)

    def test_files_without_events_are_left_out(self):
        """KernelShark stops at such a file, in a dialog."""
        self.folder("lab06-cp6", "article", "bad-input")
        self.empty = {"06-bad-input.dat"}
        with mock.patch.object(kshark.ui, "info") as info:
            _chosen, files = kshark.lab_traces(self.build, 6)
        self.assertEqual(self.names(files), ["06-article.dat"])
        self.assertIn("06-bad-input.dat", info.call_args[0][0])
        self.empty = {"06-article.dat", "06-bad-input.dat"}
        with mock.patch.object(kshark.ui, "info"), \
                self.assertRaisesRegex(HarnessError, "hold no events"):
            kshark.lab_traces(self.build, 6)


class Command(unittest.TestCase):
    def test_first_file_in_the_others_appended(self):
        self.assertEqual(kshark.command(["/a.dat", "/b.dat", "/c.dat"]),
                         ["kernelshark", "-geometry", kshark.GEOMETRY, "-i", "/a.dat",
                          "-a", "/b.dat", "-a", "/c.dat"])

    def test_the_root_warning_is_off_in_a_folder_of_its_own(self):
        folder = kshark.settings_folder()
        self.addCleanup(shutil.rmtree, folder)
        with open(os.path.join(folder, "setting.ini")) as f:
            self.assertIn("noRootWarn=true", f.read())

    def test_the_window_and_the_files_loaded(self):
        tree = ('     0x200006 "Kernel Shark": ("kernelshark" "kernelshark")  648x436+0+0\n'
                '     0x200008 "kernelshark": ()  1x1+0+0  +0+0\n')
        with mock.patch.object(kshark.subprocess, "run",
                               return_value=mock.Mock(stdout=tree)):
            self.assertEqual(kshark.window_title(":9"), "Kernel Shark")
        with mock.patch.object(kshark.subprocess, "run",
                               return_value=mock.Mock(stdout=tree.replace("Kernel Shark", "x"))):
            self.assertIsNone(kshark.window_title(":9"))
        log = tempfile.mktemp()
        self.addCleanup(os.unlink, log)
        with open(log, "w") as f:
            f.write('Loading  "/t/06-article.dat"\nplugin "kvm_combo" failed\n')
        self.assertEqual(kshark.loaded(log), ["/t/06-article.dat"])


class Blank(unittest.TestCase):
    def test_a_screen_of_few_colours_is_blank(self):
        def identify(colours):
            return mock.patch.object(kshark.subprocess, "run",
                                     return_value=mock.Mock(stdout=colours))
        with identify("2"):
            self.assertEqual(kshark.blank_picture("/t.png"),
                             ["the picture is blank (2 colours): /t.png"])
        with identify("5931"):
            self.assertEqual(kshark.blank_picture("/t.png"), [])


if __name__ == "__main__":
    unittest.main()
