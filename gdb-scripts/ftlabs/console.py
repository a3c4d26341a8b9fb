# console.py - the guest's console, as the harness logs it.

import os

import gdb

from . import decode, utils


class FtConsole(gdb.Command):
    """The last lines of the guest's console: ft console [N]

The last N lines (default 20).  The harness writes the guest's serial
console to the file named in $FTLAB_CONSOLE_LOG; this shows what the
lab script printed so far."""

    def __init__(self):
        super().__init__("ft console", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        try:
            n = int(arg) if arg.strip() else 20
        except ValueError:
            raise gdb.GdbError("usage: ft console [N]")
        path = os.environ.get("FTLAB_CONSOLE_LOG")
        if not path:
            raise gdb.GdbError("FTLAB_CONSOLE_LOG is not set (start gdb with 'make gdb N')")
        try:
            with open(path, errors="replace") as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise gdb.GdbError("cannot read the console log %s: %s" % (path, e))
        for line in decode.tail(lines, n):
            print(line)


FtConsole()
utils.alias("ft-console", "ft console")
