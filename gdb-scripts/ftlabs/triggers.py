# triggers.py - per-event triggers (struct event_trigger_data).

import gdb

from . import decode, events, utils
from .utils import cstring, has_field, struct_type

# Trigger commands whose private data is a struct enable_trigger_data
# naming the event they act on.
EVENT_TARGETS = ("enable_event", "disable_event", "enable_hist", "disable_hist")


def has_event_triggers():
    return struct_type("event_trigger_data") is not None and \
        has_field("trace_event_file", "triggers")


def trigger_line(data):
    """One trigger (struct event_trigger_data *) as its trigger file shows it."""
    cmd_ops = data["cmd_ops"]
    cmd = cstring(cmd_ops["name"]) if int(cmd_ops) else "?"
    target = None
    if cmd in EVENT_TARGETS and struct_type("enable_trigger_data") and \
            int(data["private_data"]):
        enable = data["private_data"].cast(struct_type("enable_trigger_data").pointer())
        target = events.file_name(enable["file"])
    filt = cstring(data["filter_str"]) if has_field("event_trigger_data", "filter_str") \
        else None
    paused = has_field("event_trigger_data", "paused") and bool(int(data["paused"]))
    return decode.trigger_text(cmd, data["count"], target, filt, paused)


class FtTriggers(gdb.Command):
    """The triggers of one trace event: ft triggers SYSTEM EVENT [INSTANCE]

Walks the event file's trigger list (struct event_trigger_data): the
command, its count ("unlimited" or count=N), the filter string after
"if", and for enable_event/disable_event the event it acts on.
Sets $ft_trigger to the first one ("print *$ft_trigger")."""

    def __init__(self):
        super().__init__("ft triggers", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        utils.need_target()
        if not has_event_triggers():
            print("this kernel has no per-event triggers (checkpoint 6 adds them)")
            return
        f, name = events.event_args(arg, "ft triggers")
        triggers = list(utils.entries(f["triggers"], "event_trigger_data", "list"))
        print("Triggers of %s (%s): %d" % (events.file_name(f), decode.instance_label(name),
                                           len(triggers)))
        for data in triggers:
            print("  " + trigger_line(data))
        if triggers:
            gdb.set_convenience_variable("ft_trigger", triggers[0])


FtTriggers()
utils.alias("ft-triggers", "ft triggers")
