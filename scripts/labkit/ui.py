"""Progress lines and verdicts, printed the same way everywhere."""

import os
import sys
import time

_COLOR = sys.stdout.isatty() and os.environ.get("TERM") != "dumb" \
    and "NO_COLOR" not in os.environ
_VERBOSE = False


def set_verbose(flag):
    global _VERBOSE
    _VERBOSE = flag


def _paint(code, text):
    return f"\033[{code}m{text}\033[0m" if _COLOR else text


def step(msg):
    """One short line for one step of a long job."""
    print(_paint("1", "==>") + " " + msg, flush=True)


def info(msg):
    print("    " + msg, flush=True)


def debug(msg):
    if _VERBOSE:
        print("    [v] " + msg, flush=True)


def verdict(ok, title, extra=""):
    word = _paint("32", "PASS") if ok else _paint("31;1", "FAIL")
    print(f"{word} {title}{('  ' + extra) if extra else ''}", flush=True)


def skip(title, why):
    print(f"{_paint('33', 'SKIP')} {title}  ({why})", flush=True)


def block(lines, indent="    | "):
    """Show some lines of evidence (a diff, a log tail) indented."""
    for line in lines:
        print(indent + line.rstrip("\n"), flush=True)


def error(msg):
    print(_paint("31;1", "error:") + " " + msg, file=sys.stderr, flush=True)


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
    """Counts verdicts and prints the closing 'N passed, N failed' line."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []

    def record(self, ok, title, extra=""):
        verdict(ok, title, extra)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            self.failures.append(title)
        return ok

    def close(self):
        if self.failures:
            print("\nFailed:")
            for title in self.failures:
                print("  - " + title)
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 else 1
