"""Ctrl-C: the harness stops and leaves nothing running.

The first SIGINT calls every stop function registered here: each guest
QEMU (qemu.Guest registers itself while it runs) and each kernel build
the harness waits for end, and robust.Lanes starts none of the runs
still queued. Then KeyboardInterrupt unwinds the main thread, and
ftlab.py ends with one line and exit code 130, no traceback. Further
Ctrl-Cs are ignored while it cleans up: a second one must not cut that
short and leave QEMUs behind."""

import itertools
import signal
import threading

from .errors import HarnessError


class Interrupted(HarnessError):
    """A run asked to start after Ctrl-C (a queued guest run, a guest)."""
    exit_code = 130


_requested = threading.Event()
_lock = threading.RLock()       # the handler may run while its thread holds it
_stops = {}
_keys = itertools.count()


def requested():
    return _requested.is_set()


def register(stop):
    """Call stop() on Ctrl-C, or now if it came already; returns the key
    that unregister() takes."""
    with _lock:
        key = next(_keys)
        if not _requested.is_set():
            _stops[key] = stop
            return key
    stop()
    return key


def unregister(key):
    with _lock:
        _stops.pop(key, None)


def interrupt():
    """What the first Ctrl-C does (the SIGINT handler's work; tests call
    it directly): every registered stop, once."""
    with _lock:
        _requested.set()
        stops = list(_stops.values())
        _stops.clear()
    for stop in stops:
        stop()


def _on_sigint(_signum, _frame):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    interrupt()
    raise KeyboardInterrupt


def install():
    """Handle Ctrl-C as above (ftlab.main, before any work)."""
    signal.signal(signal.SIGINT, _on_sigint)
