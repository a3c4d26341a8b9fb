# ftrace_labs.py - loads the ftrace trigger labs' gdb commands (ftlabs/).
#
# The harness sources this after vmlinux and the kernel's own lx- scripts
# (vmlinux-gdb.py, whose "linux" package ftlabs builds on); "help ft"
# lists the commands.

import importlib
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:
    sys.path.insert(0, _here)

# Importing a module registers its commands: the "ft" prefix first.
for _name in ("prefix", "probes", "events", "soft", "triggers", "clock", "snapshot",
              "breaks", "console", "printers"):
    importlib.import_module("ftlabs." + _name)

print("ftrace_labs: 'help ft' lists the ft commands")
