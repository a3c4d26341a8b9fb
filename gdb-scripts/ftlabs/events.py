# events.py - trace event files (struct trace_event_file): their flags,
# what their enable file reads, and flags set by hand.

import gdb

from . import decode, utils
from .utils import as_int, cstring, has_field


def event_name(call):
    """The name of a struct trace_event_call (tracepoint or not)."""
    tp_flag = utils.constant("TRACE_EVENT_FL_TRACEPOINT")
    if tp_flag is not None and int(call["flags"]) & int(tp_flag):
        return cstring(call["tp"]["name"])
    return cstring(call["name"])


def file_name(file):
    """"system:event" of a struct trace_event_file *."""
    call = file["event_call"]
    return "%s:%s" % (cstring(call["class"]["system"]), event_name(call))


def find_event_file(system, event, tr):
    for f in utils.entries(tr["events"], "trace_event_file", "list"):
        call = f["event_call"]
        if event_name(call) == event and cstring(call["class"]["system"]) == system:
            return f
    return None


def flag_names():
    """{bit mask: short name} of trace_event_file flags, from the enum."""
    return decode.file_flag_names(utils.enum_members("EVENT_FILE_FL_ENABLED"),
                                  utils.enum_members("EVENT_FILE_FL_ENABLED_BIT"))


def event_args(arg, cmd):
    """(struct trace_event_file *, instance name) named by SYSTEM EVENT [INSTANCE]."""
    try:
        system, event, name = decode.event_words(arg)
    except ValueError:
        raise gdb.GdbError("usage: %s SYSTEM EVENT [INSTANCE]  (e.g. %s sched sched_switch)"
                           % (cmd, cmd))
    f = find_event_file(system, event, utils.find_instance(name))
    if f is None:
        raise gdb.GdbError("no event %s/%s in %s" % (system, event, decode.instance_label(name)))
    return f, name


def set_flags(file, flags):
    gdb.execute("set var ((struct trace_event_file *)0x%x)->flags = 0x%x" % (int(file), flags))


class FtEvent(gdb.Command):
    """The state of one trace event: ft event SYSTEM EVENT [INSTANCE]

Shows the event file's flags by name (ENABLED, SOFT_MODE, SOFT_DISABLED,
TRIGGER_MODE, ...: decoded with the enum in this kernel's debug info),
what its "enable" file reads (1, 0, 1* or 0*) and the soft-mode reference
count sm_ref where the kernel has one.  Example: ft event sched sched_switch
Sets $ft_event to the trace_event_file ("print *$ft_event")."""

    def __init__(self):
        super().__init__("ft event", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        utils.need_target()
        f, name = event_args(arg, "ft event")
        names = flag_names()
        gdb.set_convenience_variable("ft_event", f)
        print("%s (%s): trace_event_file 0x%x" % (
            file_name(f), decode.instance_label(name), int(f)))
        print("  flags: %s" % decode.decode_flags(f["flags"], names))
        print("  enable file reads: %s" % decode.enable_file_text(f["flags"], names))
        if has_field("trace_event_file", "sm_ref"):
            print("  sm_ref (soft-mode users): %d" % as_int(f["sm_ref"]))
        else:
            print("  no sm_ref: this kernel has no soft mode for events (checkpoint 2 adds it)")
        if has_field("trace_event_file", "tm_ref"):
            print("  tm_ref (trigger-mode users): %d" % as_int(f["tm_ref"]))


class FtEventSet(gdb.Command):
    """Set or clear event file flags by name: ft event-set SYSTEM EVENT +F|-F... [INSTANCE]

Writes the event file's flags directly, by the names "ft event" shows:
"ft event-set sched sched_switch +SOFT_DISABLED" makes an event in soft
mode soft-disabled.  An experiment: the kernel does not know gdb did it
(no reference count changes, no tracepoint is registered), so put the
flags back as they were before the event is disabled or removed."""

    def __init__(self):
        super().__init__("ft event-set", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        utils.need_target()
        names = flag_names()
        try:
            set_mask, clear_mask, rest = decode.flag_changes(arg.split(), names)
        except ValueError as e:
            raise gdb.GdbError(str(e))
        if not set_mask and not clear_mask:
            raise gdb.GdbError("usage: ft event-set SYSTEM EVENT +FLAG|-FLAG... [INSTANCE]")
        f, name = event_args(" ".join(rest), "ft event-set")
        flags = (int(f["flags"]) | set_mask) & ~clear_mask
        set_flags(f, flags)
        print("%s (%s): flags now %s; enable file reads: %s" % (
            file_name(f), decode.instance_label(name), decode.decode_flags(flags, names),
            decode.enable_file_text(flags, names)))


FtEvent()
FtEventSet()
utils.alias("ft-event", "ft event")
utils.alias("ft-event-set", "ft event-set")
