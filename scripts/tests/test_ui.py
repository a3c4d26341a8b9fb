"""Progress output of parts that run side by side (make check's debug
part beside its plain part, two guests at once): a line or a block of
lines never mixes with another's."""

import io
import threading
import time
import unittest
from contextlib import redirect_stderr, redirect_stdout
from unittest import mock

from labkit import ui


class SlowTerminal:
    """A stdout that takes its time over each write, so that threads
    printing at once get in each other's way if they can."""

    def __init__(self):
        self.text = ""

    def write(self, text):
        for char in text:
            self.text += char
            time.sleep(0)       # let another thread run between characters

    def flush(self):
        pass


class NoInterleaving(unittest.TestCase):
    def test_blocks_and_lines_stay_whole(self):
        out = SlowTerminal()
        blocks = {name: [f"{name} line {i}" for i in range(20)] for name in "abc"}

        def show(name):
            for _ in range(5):
                ui.step(f"{name} step")
                ui.block(blocks[name])

        threads = [threading.Thread(target=show, args=(name,)) for name in blocks]
        with redirect_stdout(out), mock.patch.object(ui, "_COLOR", False):
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        lines = out.text.splitlines()
        self.assertEqual(len(lines), 3 * 5 * 21)
        for name, body in blocks.items():
            self.assertEqual(lines.count(f"==> {name} step"), 5)
            shown = ["    | " + line for line in body]
            starts = [i for i, line in enumerate(lines) if line == shown[0]]
            self.assertEqual(len(starts), 5)
            for i in starts:
                self.assertEqual(lines[i:i + len(shown)], shown, f"block {name} was split")


class ProgressToStderr(unittest.TestCase):
    """make solution pipes its diff into git apply: progress lines must
    not land in it."""

    def test_steps_leave_stdout_to_the_result(self):
        out, err = io.StringIO(), io.StringIO()
        with mock.patch.object(ui, "_PROGRESS", None), \
                redirect_stdout(out), redirect_stderr(err):
            ui.step("building")
            ui.progress_to_stderr()
            ui.step("linux-source-6.1: extracting")
            ui.info("a detail")
            print("diff --git a/x b/x")
        self.assertEqual(out.getvalue().splitlines()[1:], ["diff --git a/x b/x"])
        self.assertIn("building", out.getvalue().splitlines()[0])
        self.assertIn("extracting", err.getvalue())
        self.assertIn("a detail", err.getvalue())
