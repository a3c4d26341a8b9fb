# lab_requests.py - loads "ft serve" (ftlabs/requests.py): the gdb commands
# a lab script asks for from the guest. The harness sources it after
# ftrace_labs.py.

import importlib
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:
    sys.path.insert(0, _here)

# Importing a module registers its commands.
for _name in ("prefix", "requests"):
    importlib.import_module("ftlabs." + _name)
