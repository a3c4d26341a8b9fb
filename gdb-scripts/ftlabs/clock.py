# clock.py - the trace clock of an instance and the function-trace option.

import gdb

from . import decode, utils
from .utils import cstring


class FtClock(gdb.Command):
    """The trace clock and the function-trace option: ft clock [INSTANCE]

Lists the clocks of this kernel (trace_clocks[]) with the one the
instance uses in brackets, as the trace_clock file does, and whether the
function-trace option (used by the irqsoff/wakeup tracers) is set, if
this kernel has that option."""

    def __init__(self):
        super().__init__("ft clock", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        utils.need_target()
        name = arg.strip() or None
        tr = utils.find_instance(name)
        clocks = gdb.parse_and_eval("trace_clocks")
        names = [cstring(clocks[i]["name"]) for i in range(clocks.type.range()[1] + 1)]
        current = int(tr["clock_id"])
        print("trace clock of %s: %s" % (decode.instance_label(name), names[current]))
        print("  clocks: " + decode.clock_line(names, current))
        bit = utils.constant("TRACE_ITER_FUNCTION")
        if bit is None:
            print("  this kernel has no function-trace option (checkpoint 7 adds it)")
        else:
            on = int(tr["trace_flags"]) & int(bit)
            print("  function-trace option: %s" % ("set" if on else "not set"))


FtClock()
utils.alias("ft-clock", "ft clock")
