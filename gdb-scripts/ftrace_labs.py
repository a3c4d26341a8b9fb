# ftrace_labs.py - loads the ftrace trigger labs' gdb commands (ftlabs/).
#
# The harness sources this after vmlinux and the kernel's own lx- scripts
# (vmlinux-gdb.py, whose "linux" package ftlabs builds on); "help ft"
# lists the commands.

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:
    sys.path.insert(0, _here)

import ftlabs.prefix     # noqa: E402  the "ft" prefix first
import ftlabs.probes     # noqa: E402,F401
import ftlabs.events     # noqa: E402,F401
import ftlabs.soft       # noqa: E402,F401
import ftlabs.triggers   # noqa: E402,F401
import ftlabs.clock      # noqa: E402,F401
import ftlabs.snapshot   # noqa: E402,F401
import ftlabs.breaks     # noqa: E402,F401
import ftlabs.console    # noqa: E402,F401
import ftlabs.printers   # noqa: E402,F401

print("ftrace_labs: 'help ft' lists the ft commands")
