# soft.py - soft mode of a trace event, entered and left through the
# kernel's own code (lab 02).
#
# A soft-mode user (an enable_event probe, an enable_event trigger) calls
# trace_event_enable_disable(file, 1 or 0, soft_disable = 1) with
# event_mutex held, in a task that may sleep.  A write to the event's
# enable file calls the same code with soft_disable = 0, under the same
# lock, in the writer's task.  So "ft soft" breaks where that write
# switches the event and makes it the soft-mode user's call: the kernel
# then runs its own event_soft_mode_get/put (or, in 6.12, the soft paths of
# __ftrace_event_enable_disable), reference count and tracepoint included.

import gdb

from . import decode, events, utils
from .utils import as_int, has_field

# Where a write to an enable file switches its event, by kernel, and how
# gdb makes that the soft-mode call:
#  - checkpoints 2 on: ftrace_event_enable_disable(file, enable), the
#    user's switch; gdb jumps from its first instruction to
#    trace_event_enable_disable(file, enable, 1), which returns to the
#    writer as ftrace_event_enable_disable would have;
#  - upstream 6.12: __ftrace_event_enable_disable(file, enable, 0); gdb
#    sets soft_disable (the third argument, %rdx) to 1.
# Both are entered with the arguments in %rdi, %rsi, %rdx (x86-64).
SWITCHES = [("ftrace_event_enable_disable", "trace_event_enable_disable"),
            ("__ftrace_event_enable_disable", None)]


def has_soft_mode():
    names = events.flag_names().values()
    return "SOFT_MODE" in names and "SOFT_DISABLED" in names and \
        has_field("trace_event_file", "sm_ref")


def switch_point():
    """(entry address, name, address to jump to or None, its name) of the
    function a write to an enable file goes through, or None."""
    for name, soft_call in SWITCHES:
        entry = utils.out_of_line(name)
        if entry is None:
            continue
        if soft_call is None:
            return entry, name, None, None
        target = utils.out_of_line(soft_call)
        if target is not None:
            return entry, name, target, soft_call
    return None


class SoftModeCall(gdb.Breakpoint):
    """At the entry of the user's switch: if it is for our event file, make
    it the soft-mode call, once."""

    def __init__(self, point, file, enable):
        self.entry, self.name, self.target, self.target_name = point
        super().__init__("*0x%x" % self.entry, internal=True)
        self.silent = True
        self.file = int(file)
        self.label = events.file_name(file)
        self.enable = enable

    def stop(self):
        if int(gdb.parse_and_eval("$rdi")) % decode.U64 != self.file:
            return False
        gdb.execute("set var $rsi = %d" % self.enable)
        gdb.execute("set var $rdx = 1")
        if self.target is not None:
            gdb.execute("set var $pc = 0x%x" % self.target)
            how = "gdb jumped there from %s" % self.name
        else:
            how = "gdb set soft_disable of %s" % self.name
        print("ft-soft: the write switches %s with trace_event_enable_disable(file, %d, "
              "soft_disable=1) (%s)" % (self.label, self.enable, how))
        self.enabled = False
        return False


_pending = []


class FtSoft(gdb.Command):
    """Enter or leave soft mode through the kernel's code: ft soft SYSTEM EVENT on|off [INSTANCE]

Makes the next write to the event's enable file (or any other switch of
that event) the call a soft-mode user makes: trace_event_enable_disable
(file, 1 for on, 0 for off, soft_disable=1), with event_mutex held, in
the writer's task.  gdb breaks where the write switches the event and
changes that call (ft break soft-disable shows the kernel's code then).
"on" takes a soft-mode reference: a disabled event gets its tracepoint
registered but soft disabled (enable reads 0*), an enabled one reads 1*.
"off" drops it: the last user takes the event out of soft mode, and
unregisters the tracepoint if the event was soft disabled.  On a kernel
without soft mode it says so and changes nothing.  For lab 02, which
asks for it before it writes to the enable file.  Example:
ft soft sched sched_switch on, then (in the guest) echo 1 > enable"""

    def __init__(self):
        super().__init__("ft soft", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        utils.need_target()
        words = arg.split()
        if len(words) not in (3, 4) or words[2] not in ("on", "off"):
            raise gdb.GdbError("usage: ft soft SYSTEM EVENT on|off [INSTANCE]")
        enable = 1 if words[2] == "on" else 0
        if not has_soft_mode():
            print("ft-soft: this kernel has no soft mode for trace events (no "
                  "EVENT_FILE_FL_SOFT_MODE flag, no sm_ref; checkpoint 2 adds them): "
                  "nothing changed")
            return
        point = switch_point()
        if point is None:
            raise gdb.GdbError("ft soft: no out-of-line %s in this kernel"
                               % " or ".join(n for n, _ in SWITCHES))
        f, name = events.event_args(" ".join(words[:2] + words[3:]), "ft soft")
        for bp in _pending:
            if bp.is_valid() and bp.enabled and bp.file == int(f):
                bp.enabled = False
        _pending.append(SoftModeCall(point, f, enable))
        print("ft-soft: the next switch of %s (%s, sm_ref %d) calls "
              "trace_event_enable_disable(file, %d, soft_disable=1): write %d to its "
              "enable file" % (events.file_name(f), decode.instance_label(name),
                               as_int(f["sm_ref"]), enable, enable))


FtSoft()
utils.alias("ft-soft", "ft soft")
