# breaks.py - breakpoints where ftrace dispatches probes and triggers, and
# the five bytes at the start of a function that ftrace patches.

import re

import gdb

from . import decode, utils
from .utils import function_exists, struct_type, sym_name

# What a learner asks for, and the functions that do it in one kernel or
# another.  ft break sets a breakpoint on each one this vmlinux has (or,
# where an entry has a fourth list, on those when it has none of the
# first: a function that also runs for other jobs).
BREAK_POINTS = [
    ("probe", "the function-probe dispatcher (the callback of the probes' ftrace_ops)",
     ["function_probe_dispatch", "function_trace_probe_call"]),
    ("traceon", "the traceon probe command",
     ["ftrace_traceon", "ftrace_traceon_count"]),
    ("traceoff", "the traceoff probe command",
     ["ftrace_traceoff", "ftrace_traceoff_count"]),
    ("event-probe", "the enable_event/disable_event probe commands",
     ["event_enable_probe", "event_enable_count_probe",
      "event_probe_hit", "event_probe_count_hit"]),
    ("stacktrace", "the stacktrace probe command and trigger",
     ["ftrace_stacktrace", "ftrace_stacktrace_count",
      "stacktrace_trigger", "stacktrace_count_trigger"]),
    ("snapshot", "the snapshot probe command and trigger",
     ["ftrace_snapshot", "ftrace_snapshot_count", "ftrace_count_snapshot",
      "snapshot_trigger", "snapshot_count_trigger"]),
    ("trigger", "an event's triggers being run", ["event_triggers_call"]),
    ("post-trigger", "triggers that run after the event is recorded",
     ["event_triggers_post_call"]),
    # In 6.12 the soft paths are inside __ftrace_event_enable_disable, which
    # every enable and disable runs: break where soft-mode users call it.
    ("soft-disable", "where a soft-mode user puts an event into soft mode or out",
     ["event_soft_mode_get", "event_soft_mode_put"], ["trace_event_enable_disable"]),
]

# Which probe ops serve a probe command of ft break, by the ops' name.
PROBE_OPS_WORDS = {
    "traceon": ("traceon",),
    "traceoff": ("traceoff",),
    "event-probe": ("enable", "disable"),
    "stacktrace": ("stacktrace",),
    "snapshot": ("snapshot",),
}

_probe_ops_funcs = None


def probe_ops_funcs():
    """{probe ops variable: its .func} for every struct ftrace_probe_ops
    named *probe_ops* in vmlinux: the probe commands this kernel has,
    whatever their callbacks are called.  (Without the name pattern gdb
    would read all of the debug info: ten seconds and more.)"""
    global _probe_ops_funcs
    if _probe_ops_funcs is not None:
        return _probe_ops_funcs
    _probe_ops_funcs = {}
    if struct_type("ftrace_probe_ops") is None:
        return _probe_ops_funcs
    out = gdb.execute("info variables -q -t ftrace_probe_ops probe_ops", to_string=True)
    off = utils.offset_of("ftrace_probe_ops", "func")
    for name in re.findall(r"struct ftrace_probe_ops (\w+);", out):
        sym = utils.symbol(name)
        # No address: the compiler dropped an ops nothing refers to (an
        # exercise's skeleton, whose command callback is a stub).
        if sym is None or sym.value().address is None:
            continue
        raw = utils.read_from_vmlinux(int(sym.value().address) + off, 8)
        func = sym_name(int.from_bytes(raw, "little")) if raw else ""
        if func:
            _probe_ops_funcs[name] = func
    return _probe_ops_funcs


def resolve(what):
    """(description, [functions in this kernel]) of a name of BREAK_POINTS."""
    for key, desc, names, *fallback in BREAK_POINTS:
        if key == what:
            found = [n for n in names if function_exists(n)]
            if not found and fallback:
                found = [n for n in fallback[0] if function_exists(n)]
            words = PROBE_OPS_WORDS.get(key, ())
            for ops, func in sorted(probe_ops_funcs().items() if words else []):
                if any(w in ops for w in words) and func not in found:
                    found.append(func)
            return desc, found
    raise gdb.GdbError("ft break: unknown '%s'; 'ft break' lists the names" % what)


class FtBreak(gdb.Command):
    """Break where ftrace dispatches probes and triggers: ft break [WHAT]

WHAT is one of: probe, traceon, traceoff, event-probe, stacktrace,
snapshot, trigger, post-trigger, soft-disable.  Each stands for
whichever function does that job in this kernel.  Without WHAT, lists
the names and the functions they resolve to here.  One breakpoint per
function: $ft_bp_first and $ft_bp_last are the first and the last made,
so "commands $ft_bp_first-$ft_bp_last" gives them all the same commands."""

    def __init__(self):
        super().__init__("ft break", gdb.COMMAND_BREAKPOINTS)

    def invoke(self, arg, from_tty):
        what = arg.strip()
        if not what:
            for key, desc, *_ in BREAK_POINTS:
                found = resolve(key)[1]
                print("  %-13s %s" % (key, ", ".join(found) if found else "not in this kernel"))
                print("  %-13s   (%s)" % ("", desc))
            return
        desc, found = resolve(what)
        if not found:
            raise gdb.GdbError("ft break %s: not in this kernel (%s)" % (what, desc))
        first = None
        for name in found:
            gdb.execute("break " + name, from_tty)
            if first is None:
                first = gdb.convenience_variable("bpnum")
        gdb.set_convenience_variable("ft_bp_first", first)
        gdb.set_convenience_variable("ft_bp_last", gdb.convenience_variable("bpnum"))

    def complete(self, text, word):
        return [entry[0] for entry in BREAK_POINTS if entry[0].startswith(text)]


class FtCallsite(gdb.Command):
    """Whether ftrace calls in at a function: ft callsite FUNCTION

Every traceable function starts with five bytes that ftrace turns into
a no-op at boot and into a call when some ftrace_ops wants the function.
Shows which of the two they are now, and where the call goes."""

    def __init__(self):
        super().__init__("ft callsite", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        utils.need_target()
        name = arg.strip()
        if not name:
            raise gdb.GdbError("usage: ft callsite FUNCTION")
        addr = int(gdb.parse_and_eval("(unsigned long)&%s" % name))
        code = bytes(gdb.selected_inferior().read_memory(addr, 9))
        kind, where = decode.callsite(addr, code)
        if kind == "nop":
            print("%s: call site is a no-op: ftrace does not call in here" % name)
        elif kind == "call":
            print("%s: call site is patched: ftrace calls in here" % name)
            print("  call 0x%x (%s)" % (where, sym_name(where) or
                                       "a trampoline ftrace made for one ftrace_ops"))
        else:
            print("%s: no ftrace call site at 0x%x (not traceable?)" % (name, where))


FtBreak()
FtCallsite()
utils.alias("ft-break", "ft break")
utils.alias("ft-callsite", "ft callsite")
