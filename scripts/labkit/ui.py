"""Progress lines and verdicts, printed the same way everywhere.

make check runs parts side by side (a debug kernel builds while guests
run, two guests at once): each line, and each block of lines, goes out
in one write under one lock, so that no two of them mix."""

import os
import sys
import threading
import time

from . import results

_COLOR = sys.stdout.isatty() and os.environ.get("TERM") != "dumb" \
    and "NO_COLOR" not in os.environ
_VERBOSE = False
# The verdict the evidence printed next (block()) belongs to: the last one
# a Tally recorded, until a new step begins.
_LAST = threading.local()


_OUT = threading.RLock()     # re-entered if Ctrl-C came while it was held
# Where step(), info() and debug() write: stdout, unless the command's own
# output is on stdout and must stay clean (make solution's diff).
_PROGRESS = None


def progress_to_stderr():
    """Send progress lines to stderr from now on, so that stdout carries
    only the command's result (a diff to pipe into git apply)."""
    global _PROGRESS
    _PROGRESS = sys.stderr


def set_verbose(flag):
    global _VERBOSE
    _VERBOSE = flag


def emit(lines, stream=None):
    """Write lines (each without its newline) at once, whole."""
    stream = stream or sys.stdout
    text = "".join(line + "\n" for line in lines)
    with _OUT:
        stream.write(text)
        stream.flush()


def _paint(code, text):
    return f"\033[{code}m{text}\033[0m" if _COLOR else text


def step(msg):
    """One short line for one step of a long job."""
    _LAST.verdict = None
    emit([_paint("1", "==>") + " " + msg], _PROGRESS)


def info(msg):
    emit(["    " + msg], _PROGRESS)


def debug(msg):
    if _VERBOSE:
        emit(["    [v] " + msg], _PROGRESS)


def verdict(ok, title, extra=""):
    word = _paint("32", "PASS") if ok else _paint("31;1", "FAIL")
    emit([f"{word} {title}{('  ' + extra) if extra else ''}"])


def skip(title, why):
    emit([f"{_paint('33', 'SKIP')} {title}  ({why})"])


def block(lines, indent="    | "):
    """Show some lines of evidence (a diff, a log tail) indented. Right
    after a verdict, they are that verdict's text too (results.Verdict)."""
    lines = [line.rstrip("\n") for line in lines]
    emit([indent + line for line in lines])
    last = getattr(_LAST, "verdict", None)
    if last is not None and lines:
        last.text += ("\n" if last.text else "") + "\n".join(lines)


def error(msg):
    emit([_paint("31;1", "error:") + " " + msg], sys.stderr)


class Timer:
    def __init__(self):
        self.start = time.monotonic()

    @property
    def seconds(self):
        return time.monotonic() - self.start

    def __str__(self):
        secs = self.seconds
        return f"{secs:.0f} s" if secs < 120 else f"{secs / 60:.1f} min"


class Tally:
    """Counts verdicts apart (passed, failed, skipped: a skipped test is
    never a pass), keeps each as a results.Verdict (tally.verdicts, for
    results.write) and prints the closing 'N passed, N failed, N skipped'
    line. group: the part of the suite the next verdicts belong to. A
    verdict's seconds are those since the tally's previous verdict."""

    def __init__(self, group=""):
        self.group = group
        self.verdicts = []
        self._since = Timer()

    def _add(self, status, title, text=""):
        v = results.Verdict(title, status, text, self._since.seconds, self.group)
        self._since = Timer()
        self.verdicts.append(v)
        _LAST.verdict = v
        return v

    def record(self, ok, title, extra=""):
        verdict(ok, title, extra)
        self._add("pass" if ok else "fail", title, extra)
        return ok

    def skip(self, title, why):
        """A verdict that could not be reached: counted as skipped."""
        skip(title, why)
        self._add("skip", title, why)

    def _count(self, status):
        return sum(1 for v in self.verdicts if v.status == status)

    @property
    def passed(self):
        return self._count("pass")

    @property
    def failed(self):
        return self._count("fail")

    @property
    def skipped(self):
        return self._count("skip")

    @property
    def failures(self):
        return [v.name for v in self.verdicts if v.status == "fail"]

    def close(self, results_dir=None, suite=""):
        """Print the failures and the closing line; with results_dir, write
        the verdicts there for CI too (results.write). Returns the exit
        code: 1 when anything failed."""
        if results_dir:
            paths = results.write(results_dir, suite, self.verdicts)
            info("results for CI: " + ", ".join(os.path.relpath(p) for p in paths))
        if self.failures:
            print("\nFailed:")
            for title in self.failures:
                print("  - " + title)
        print(f"{self.passed} passed, {self.failed} failed, {self.skipped} skipped", flush=True)
        return 0 if self.failed == 0 else 1
