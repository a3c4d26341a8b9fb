# printers.py - "print" shows probe entries, ftrace_func_probe, event files
# and triggers in short ("print/r" shows the raw struct).

import gdb.printing

from . import decode, events, probes, triggers, utils
from .utils import as_int, has_field


class ProbeEntryPrinter:
    """struct ftrace_probe_entry (checkpoint 0; from checkpoint 1 on the
    entry has no probe_ops: its kind has)."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        v = self.val
        if has_field("ftrace_probe_entry", "probe_ops"):
            return "{%s}" % probes.probe_line(int(v["ip"]), v["probe_ops"], v["data"])
        return "{%s data=0x%x}" % (utils.func_name(v["ip"]), int(v["data"]) % decode.U64)


class FuncProbePrinter:
    """struct ftrace_func_probe (upstream): one probe ops and its functions."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        v = self.val
        cmd, counted = probes.probe_command(v["probe_ops"])
        n = len(probes.hash_ips(probes.filter_hash(v["ops"])))
        return "{%s probe%s on %s, ref %d}" % (
            cmd, " (counted)" if counted else "", decode.plural(n, "function"), as_int(v["ref"]))


class EventFilePrinter:
    """struct trace_event_file: the event and its flags."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        v = self.val
        text = "{%s flags=%s" % (events.file_name(v.address),
                                 decode.decode_flags(v["flags"], events.flag_names()))
        if has_field("trace_event_file", "sm_ref"):
            text += " sm_ref=%d" % as_int(v["sm_ref"])
        return text + "}"


class TriggerDataPrinter:
    """struct event_trigger_data: one trigger as the trigger file shows it."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        return "{%s}" % triggers.trigger_line(self.val.address)


def build():
    pp = gdb.printing.RegexpCollectionPrettyPrinter("ftrace_labs")
    pp.add_printer("ftrace_probe_entry", "^ftrace_probe_entry$", ProbeEntryPrinter)
    pp.add_printer("ftrace_func_probe", "^ftrace_func_probe$", FuncProbePrinter)
    pp.add_printer("trace_event_file", "^trace_event_file$", EventFilePrinter)
    pp.add_printer("event_trigger_data", "^event_trigger_data$", TriggerDataPrinter)
    return pp


gdb.printing.register_pretty_printer(utils.vmlinux_objfile(), build(), replace=True)
