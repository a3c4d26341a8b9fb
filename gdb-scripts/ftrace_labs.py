# ftrace_labs.py - gdb helpers for the ftrace trigger labs.
#
# Loaded by "make gdb N" and by the unattended gdb checks after vmlinux
# (and the kernel's own lx- scripts).  "help ft" lists the commands.
#
# Every command finds out what the kernel it looks at has from the types
# and symbols in vmlinux, never from a version string: the same helper
# works on upstream 6.1 and on every checkpoint of the series, and says
# plainly when the thing it shows does not exist in this kernel yet.

import os
import re

import gdb
import gdb.printing


# --- small tools on top of gdb's Python API ---------------------------------

def has_type(name):
    try:
        gdb.lookup_type(name)
        return True
    except gdb.error:
        return False


def struct_type(name):
    """The type 'struct name', or None if this vmlinux has no such struct."""
    try:
        return gdb.lookup_type("struct " + name)
    except gdb.error:
        return None


def has_field(struct, field):
    t = struct_type(struct)
    return t is not None and any(f.name == field for f in t.fields())


def symbol(name):
    """The symbol of a global or file-static variable or function, or None."""
    try:
        sym = gdb.lookup_global_symbol(name)
        if sym is None:
            sym = gdb.lookup_static_symbol(name)
        return sym
    except gdb.error:
        return None


def constant(name):
    """The value of an enumerator (e.g. EVENT_FILE_FL_ENABLED) or None."""
    try:
        return gdb.parse_and_eval(name)
    except gdb.error:
        return None


def enum_members(sample_name):
    """{name: value} of the enum that declares sample_name, or {}.

    The kernel's flag enums are often anonymous; the debug info still
    has them, and one of their enumerators is enough to find the type."""
    v = constant(sample_name)
    if v is None or v.type.strip_typedefs().code != gdb.TYPE_CODE_ENUM:
        return {}
    return {f.name: int(f.enumval) for f in v.type.strip_typedefs().fields()}


def offset_of(struct, member):
    return int(gdb.parse_and_eval(
        "(unsigned long)&((struct %s *)0)->%s" % (struct, member)))


def container_of(ptr, struct, member):
    """struct X * from a pointer to its 'member' (like the kernel macro)."""
    addr = int(ptr) - offset_of(struct, member)
    return gdb.Value(addr).cast(struct_type(struct).pointer())


def list_entries(head, struct, member):
    """The structs on a struct list_head (head is the list_head value)."""
    head_addr = int(head.address)
    node = head["next"]
    seen = 0
    while int(node) != head_addr:
        yield container_of(node, struct, member)
        node = node["next"]
        seen += 1
        if seen > 100000:
            raise gdb.GdbError("list at 0x%x does not come back to its head" % head_addr)


def hlist_entries(head, struct, member):
    """The structs on a struct hlist_head."""
    node = head["first"]
    while int(node):
        yield container_of(node, struct, member)
        node = node["next"]


def as_int(v):
    """An int from a plain integer, an atomic_t or a refcount_t."""
    t = v.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_STRUCT:
        names = [f.name for f in t.fields()]
        if "counter" in names:
            return int(v["counter"])
        if "refs" in names:
            return as_int(v["refs"])
    return int(v)


def cstring(ptr):
    if ptr is None or int(ptr) == 0:
        return None
    try:
        return ptr.string()
    except gdb.error:
        return "<unreadable at 0x%x>" % int(ptr)


def sym_name(addr):
    """The name of the function or variable at addr ('' if none)."""
    addr = int(addr)
    if addr == 0:
        return ""
    out = gdb.execute("info symbol 0x%x" % addr, to_string=True)
    if out.startswith("No symbol"):
        return ""
    name = out.split(" in section")[0]
    return name.replace(" + ", "+")


def func_name(addr):
    name = sym_name(addr)
    return name if name else "0x%x" % int(addr)


def plural(n, word):
    if n == 1:
        return "1 " + word
    if word.endswith("y"):
        return "%d %sies" % (n, word[:-1])
    return "%d %ss" % (n, word)


def need_target():
    if not gdb.selected_inferior().pid:
        raise gdb.GdbError("no guest attached: 'target remote :PORT' first")


# --- trace instances --------------------------------------------------------

def trace_arrays():
    """(name, struct trace_array *) of every instance, the top level first."""
    head = gdb.parse_and_eval("ftrace_trace_arrays")
    for tr in list_entries(head, "trace_array", "list"):
        yield cstring(tr["name"]), tr


def find_instance(name=None):
    if not name:
        return gdb.parse_and_eval("&global_trace")
    names = []
    for tr_name, tr in trace_arrays():
        if tr_name == name:
            return tr
        names.append(tr_name or "(top level)")
    raise gdb.GdbError("no trace instance '%s' (instances: %s)" % (name, ", ".join(names)))


def instance_label(name):
    return "instance '%s'" % name if name else "the top level instance"


# --- ftrace_ops and their filter hash ---------------------------------------

def hash_ips(hash_ptr):
    """The ips in a struct ftrace_hash (function entries), sorted."""
    if int(hash_ptr) == 0:
        return []
    h = hash_ptr.dereference()
    ips = []
    for i in range(1 << int(h["size_bits"])):
        for e in hlist_entries(h["buckets"][i], "ftrace_func_entry", "hlist"):
            ips.append(int(e["ip"]))
    return sorted(ips)


def filter_hash(ops):
    """The filter hash of an ftrace_ops (a pointer, possibly NULL)."""
    func_hash = ops["func_hash"]
    if int(func_hash) == 0:
        return gdb.Value(0)
    return func_hash["filter_hash"]


def describe_filter(ops, show=8):
    """One line: which functions ftrace calls this ops for."""
    ips = hash_ips(filter_hash(ops))
    if not ips:
        return "filter hash: empty, so ftrace calls it for all functions"
    names = [func_name(ip) for ip in ips[:show]]
    more = "" if len(ips) <= show else ", ... (%d more)" % (len(ips) - show)
    return "filter hash: %s: %s%s" % (plural(len(ips), "function"), ", ".join(names), more)


def ops_registered(ops):
    enabled = constant("FTRACE_OPS_FL_ENABLED")
    if enabled is None:
        return ""
    return "registered" if int(ops["flags"]) & int(enabled) else "not registered"


def describe_ops(ops):
    state = ops_registered(ops)
    return "ftrace_ops 0x%x, callback %s%s" % (
        int(ops.address), func_name(ops["func"]), ", " + state if state else "")


# --- function probes ---------------------------------------------------------
#
# Four layouts exist:
#  "entries"  checkpoint 0 (our rewrite): tr->func_probes points to a
#             struct ftrace_func_probes, one ops for the instance and a hash
#             table of struct ftrace_probe_entry {ip, probe_ops, data}.
#  "kinds"    checkpoint 1 on (our rewrite): tr->probe_kinds lists struct
#             ftrace_probe_kind, one per probe command, the newest first,
#             each with its own ftrace_ops and a hash table of struct
#             ftrace_probe_entry {ip, data}.
#  "mapper"   upstream 6.1: tr->func_probes is a list of struct
#             ftrace_func_probe, one per probe ops, each with its own
#             ftrace_ops; per-function data in a struct ftrace_func_mapper.
#  none       a kernel without function probes.

def probe_layout():
    if struct_type("ftrace_probe_kind") and has_field("trace_array", "probe_kinds"):
        return "kinds"
    if struct_type("ftrace_probe_entry") and struct_type("ftrace_func_probes"):
        return "entries"
    if struct_type("ftrace_func_probe") and has_field("trace_array", "func_probes"):
        return "mapper"
    return None


# Probe ops whose name does not say the command (event_enable_probe_ops
# serves "enable_event").
COMMAND_NAMES = {"event_enable": "enable_event", "event_disable": "disable_event"}


def probe_command(probe_ops):
    """(command, counted) from the name of a struct ftrace_probe_ops."""
    name = sym_name(probe_ops)
    if not name:
        return "?(ops 0x%x)" % int(probe_ops), False
    base = name[:-len("_probe_ops")] if name.endswith("_probe_ops") else name
    counted = "_count" in base
    base = base.replace("_count", "")
    return COMMAND_NAMES.get(base, base), counted


def count_text(count):
    """"unlimited" or "count=N"; -1 (also as an unsigned long) is unlimited."""
    count = int(count)
    if count >= 1 << 63:
        count -= 1 << 64
    if count == -1:
        return "unlimited"
    return "count=%d" % count


def event_file_name(file):
    call = file["event_call"]
    return "%s:%s" % (cstring(call["class"]["system"]), event_name(call))


# The data of an enable_event/disable_event probe, by kernel: struct
# event_probe at checkpoint 3 on, struct event_probe_data upstream.  Both
# point to the event file and hold the count.
EVENT_PROBE_TYPES = ("event_probe", "event_probe_data")


def event_probe_text(data):
    """"sched:sched_switch:count=N" from an event probe's data pointer,
    or None if this kernel has no such struct (or the pointer is bad)."""
    for name in EVENT_PROBE_TYPES:
        if not (has_field(name, "file") and has_field(name, "count")):
            continue
        ep = data.cast(struct_type(name).pointer())
        try:
            return "%s:%s" % (event_file_name(ep["file"]), count_text(ep["count"]))
        except gdb.error:
            return None
    return None


def entry_line(ip, probe_ops, data):
    """One probe as set_ftrace_filter shows it, for the "entries" layout.

    A counted command keeps its count in the data slot itself; other
    commands own what their slot points to (the event probes: a struct
    with the event and the count, decoded where this kernel has one)."""
    cmd, counted = probe_command(probe_ops)
    line = "%s:%s" % (func_name(ip), cmd)
    value = int(data)
    if cmd in ("enable_event", "disable_event") and value and value != (1 << 64) - 1:
        text = event_probe_text(data)
        if text:
            return line + ":" + text
    if counted:
        if value >= 1 << 63:
            value -= 1 << 64
        if -1 <= value < 1 << 32:
            return line + ":" + count_text(value)
        return line + ":data=0x%x" % value
    if value and value != (1 << 64) - 1:
        return line + ":data=0x%x" % value
    return line + ":unlimited"


def mapper_data(mapper, ip):
    """The data slot of ip in an upstream struct ftrace_func_mapper, or None."""
    if int(mapper) == 0:
        return None
    h = mapper["hash"]
    for i in range(1 << int(h["size_bits"])):
        for e in hlist_entries(h["buckets"][i], "ftrace_func_entry", "hlist"):
            if int(e["ip"]) == ip:
                m = e.cast(struct_type("ftrace_func_map").pointer())
                return m["data"]
    return None


def mapper_line(ip, probe):
    """One probe as set_ftrace_filter shows it, for upstream 6.1."""
    cmd, counted = probe_command(probe["probe_ops"])
    line = "%s:%s" % (func_name(ip), cmd)
    data = mapper_data(probe["data"].cast(struct_type("ftrace_func_mapper").pointer()), ip) \
        if struct_type("ftrace_func_mapper") else None
    if data is None:
        return line + ":unlimited"
    if cmd in ("enable_event", "disable_event"):
        text = event_probe_text(data)
        if text:
            return line + ":" + text
    value = int(data.cast(gdb.lookup_type("long")))
    return line + ":" + count_text(value)


def table_entries(table):
    """The struct ftrace_probe_entry of a DECLARE_HASHTABLE of them."""
    entries = []
    for i in range(table.type.range()[1] + 1):
        entries += hlist_entries(table[i], "ftrace_probe_entry", "node")
    return entries


def show_probes_entries(tr):
    probes = tr["func_probes"]
    if int(probes) == 0:
        print("  none (tr->func_probes is NULL: no probe was ever set here)")
        return
    entries = table_entries(probes["entries"])
    print("  %s in the probe table (nr_entries %d)" % (
        plural(len(entries), "entry"), int(probes["nr_entries"])))
    lines = [entry_line(int(e["ip"]), e["probe_ops"], e["data"]) for e in entries]
    for line in sorted(lines):
        print("  " + line)
    if entries:
        gdb.set_convenience_variable("ft_probe", entries[0])
    ops = probes["ops"]
    print("One ftrace_ops for all of them: " + describe_ops(ops))
    print("  " + describe_filter(ops))


def show_probes_kinds(tr):
    kinds = list(list_entries(tr["probe_kinds"], "ftrace_probe_kind", "list"))
    if not kinds:
        print("  none")
        return
    first = None
    for kind in kinds:
        probe_ops = kind["probe_ops"]
        entries = table_entries(kind["entries"])
        print("probe kind %s (%s), nr_entries %d:" % (
            sym_name(probe_ops) or "?", probe_command(probe_ops)[0],
            int(kind["nr_entries"])))
        lines = [entry_line(int(e["ip"]), probe_ops, e["data"]) for e in entries]
        for line in sorted(lines):
            print("  " + line)
        if first is None and entries:
            first = entries[0]
        ops = kind["ops"]
        print("its own " + describe_ops(ops))
        print("  " + describe_filter(ops))
    if first is not None:
        gdb.set_convenience_variable("ft_probe", first)


def show_probes_mapper(tr):
    probes = list(list_entries(tr["func_probes"], "ftrace_func_probe", "list"))
    if not probes:
        print("  none")
        return
    gdb.set_convenience_variable("ft_probe", probes[0])
    for probe in probes:
        cmd, counted = probe_command(probe["probe_ops"])
        ops = probe["ops"]
        print("probe ops %s (%s), ref %d:" % (
            sym_name(probe["probe_ops"]) or "?", cmd, as_int(probe["ref"])))
        for ip in hash_ips(filter_hash(ops)):
            print("  " + mapper_line(ip, probe))
        print("its own " + describe_ops(ops))
        print("  " + describe_filter(ops))


def probe_count(tr):
    """How many probes the instance has (0 if the kernel has none)."""
    layout = probe_layout()
    if layout == "kinds":
        return sum(int(k["nr_entries"])
                   for k in list_entries(tr["probe_kinds"], "ftrace_probe_kind", "list"))
    if layout == "entries":
        probes = tr["func_probes"]
        return int(probes["nr_entries"]) if int(probes) else 0
    if layout == "mapper":
        return sum(1 for _ in list_entries(tr["func_probes"], "ftrace_func_probe", "list"))
    return 0


class FtProbes(gdb.Command):
    """ft-probes [INSTANCE]: the function probes of a trace instance.

Lists each probe as set_ftrace_filter would (function:command:count),
and the ftrace_ops that makes ftrace call it, with its callback and its
filter hash: the functions ftrace calls it for (an empty hash means all
functions).  Checkpoint 0 has one ops for all probes of an instance;
from checkpoint 1 on (and in 6.1) each probe command has its own, and
they are shown newest first, as set_ftrace_filter lists them.  INSTANCE is a name under instances/; the top
level instance by default.  Sets $ft_probe to a probe ("print *$ft_probe")."""

    def __init__(self):
        super().__init__("ft-probes", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        need_target()
        name = arg.strip() or None
        tr = find_instance(name)
        layout = probe_layout()
        if layout is None:
            print("this kernel has no function probes (no struct ftrace_func_probe(s))")
            return
        print("Function probes of %s:" % instance_label(name))
        if layout == "kinds":
            show_probes_kinds(tr)
        elif layout == "entries":
            show_probes_entries(tr)
        else:
            show_probes_mapper(tr)


# --- trace events --------------------------------------------------------------

def event_name(call):
    """The name of a struct trace_event_call (tracepoint or not)."""
    tp_flag = constant("TRACE_EVENT_FL_TRACEPOINT")
    if tp_flag is not None and int(call["flags"]) & int(tp_flag):
        return cstring(call["tp"]["name"])
    return cstring(call["name"])


def find_event_file(system, event, tr):
    for f in list_entries(tr["events"], "trace_event_file", "list"):
        call = f["event_call"]
        if event_name(call) == event and cstring(call["class"]["system"]) == system:
            return f
    return None


def file_flag_names():
    """{bit mask: short name} of trace_event_file flags, from the enum."""
    masks = enum_members("EVENT_FILE_FL_ENABLED")
    if masks:
        return {v: n[len("EVENT_FILE_FL_"):] for n, v in masks.items()}
    bits = enum_members("EVENT_FILE_FL_ENABLED_BIT")
    return {1 << v: n[len("EVENT_FILE_FL_"):-len("_BIT")] for n, v in bits.items()}


def decode_flags(value, names):
    value = int(value)
    out = [n for m, n in sorted(names.items()) if value & m]
    rest = value & ~sum(m for m in names if value & m)
    if rest:
        out.append("0x%x" % rest)
    return "|".join(out) if out else "none"


def enable_file_text(flags, names):
    """What the event's "enable" file reads, from its flags."""
    by_name = {n: m for m, n in names.items()}
    flags = int(flags)
    on = flags & by_name.get("ENABLED", 0) and not flags & by_name.get("SOFT_DISABLED", 0)
    soft = flags & (by_name.get("SOFT_MODE", 0) | by_name.get("SOFT_DISABLED", 0))
    return ("1" if on else "0") + ("*" if soft else "")


def event_args(arg, cmd):
    words = arg.split()
    if len(words) == 1 and "/" in words[0]:
        words = words[0].split("/")
    if len(words) not in (2, 3):
        raise gdb.GdbError("usage: %s SYSTEM EVENT [INSTANCE]  (e.g. %s sched sched_switch)"
                           % (cmd, cmd))
    name = words[2] if len(words) == 3 else None
    tr = find_instance(name)
    f = find_event_file(words[0], words[1], tr)
    if f is None:
        raise gdb.GdbError("no event %s/%s in %s" % (words[0], words[1], instance_label(name)))
    return f, name


class FtEvent(gdb.Command):
    """ft-event SYSTEM EVENT [INSTANCE]: the state of one trace event.

Shows the event file's flags by name (ENABLED, SOFT_MODE, SOFT_DISABLED,
TRIGGER_MODE, ...: decoded with the enum in this kernel's debug info),
what its "enable" file reads (1, 0, 1* or 0*) and the soft-mode reference
count sm_ref where the kernel has one.  Example: ft-event sched sched_switch
Sets $ft_event to the trace_event_file ("print *$ft_event")."""

    def __init__(self):
        super().__init__("ft-event", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        need_target()
        f, name = event_args(arg, "ft-event")
        names = file_flag_names()
        gdb.set_convenience_variable("ft_event", f)
        print("%s (%s): trace_event_file 0x%x" % (
            event_file_name(f), instance_label(name), int(f)))
        print("  flags: %s" % decode_flags(f["flags"], names))
        print("  enable file reads: %s" % enable_file_text(f["flags"], names))
        if has_field("trace_event_file", "sm_ref"):
            print("  sm_ref (soft-mode users): %d" % as_int(f["sm_ref"]))
        else:
            print("  no sm_ref: this kernel has no soft mode for events (checkpoint 2 adds it)")
        if has_field("trace_event_file", "tm_ref"):
            print("  tm_ref (trigger-mode users): %d" % as_int(f["tm_ref"]))


class FtEventSet(gdb.Command):
    """ft-event-set SYS EVENT +F|-F.. [INST]: set or clear event flags by name.

Writes the event file's flags directly, by the names ft-event shows:
"ft-event-set sched sched_switch +SOFT_MODE +SOFT_DISABLED" puts
sched_switch into soft mode, soft-disabled, the way the kernel's own
soft-mode users do (without their reference count, sm_ref).  An
experiment, for a lab that asks for it: the kernel does not know gdb
did it, so put the flags back as they were before the event is
disabled or removed."""

    def __init__(self):
        super().__init__("ft-event-set", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        need_target()
        words = arg.split()
        changes = [w for w in words if w[:1] in "+-"]
        rest = [w for w in words if w[:1] not in "+-"]
        if not changes:
            raise gdb.GdbError("usage: ft-event-set SYSTEM EVENT +FLAG|-FLAG... [INSTANCE]")
        by_name = {n: m for m, n in file_flag_names().items()}
        for c in changes:
            if c[1:] not in by_name:
                raise gdb.GdbError("this kernel has no event file flag %s (it has: %s)"
                                   % (c[1:], ", ".join(sorted(by_name))))
        f, name = event_args(" ".join(rest), "ft-event-set")
        flags = int(f["flags"])
        for c in changes:
            if c[0] == "+":
                flags |= by_name[c[1:]]
            else:
                flags &= ~by_name[c[1:]]
        gdb.execute("set var ((struct trace_event_file *)0x%x)->flags = 0x%x" % (int(f), flags))
        names = file_flag_names()
        print("%s (%s): flags now %s; enable file reads: %s" % (
            event_file_name(f), instance_label(name), decode_flags(flags, names),
            enable_file_text(flags, names)))


# --- soft mode of an event, set from gdb (lab 02) ------------------------------

def soft_mode_masks():
    """(SOFT_MODE, SOFT_DISABLED) masks from this kernel's enum, or None
    when the kernel has no soft mode (checkpoints 0 and 1)."""
    by_name = {n: m for m, n in file_flag_names().items()}
    if "SOFT_MODE" not in by_name or "SOFT_DISABLED" not in by_name or \
            not has_field("trace_event_file", "sm_ref"):
        return None
    return by_name["SOFT_MODE"], by_name["SOFT_DISABLED"]


class FtSoft(gdb.Command):
    """ft-soft SYSTEM EVENT on|off [INSTANCE]: put an event into soft mode, or out.

"on" does what a kernel user of soft mode does when it arrives, minus
registering the tracepoint: it sets SOFT_MODE and SOFT_DISABLED in the
event file's flags and makes sm_ref 1, so the event reads "0*" and
records nothing while its tracepoint stays as it was (enable the event
first, so that the tracepoint is registered).  "off" clears both flags
and makes sm_ref 0: the event is then what its registration says (it
records if ENABLED is set).  Unlike the kernel's last soft-mode user, gdb
cannot unregister the tracepoint.  For lab 02, before any kernel code
enters soft mode; on a kernel without soft mode it says so and changes
nothing.  Example: ft-soft sched sched_switch on"""

    def __init__(self):
        super().__init__("ft-soft", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        need_target()
        words = arg.split()
        if len(words) not in (3, 4) or words[2] not in ("on", "off"):
            raise gdb.GdbError("usage: ft-soft SYSTEM EVENT on|off [INSTANCE]")
        on = words[2] == "on"
        masks = soft_mode_masks()
        if masks is None:
            print("ft-soft: this kernel has no soft mode for trace events (no "
                  "EVENT_FILE_FL_SOFT_MODE flag, no sm_ref; checkpoint 2 adds them): "
                  "nothing changed")
            return
        f, name = event_args(" ".join(words[:2] + words[3:]), "ft-soft")
        names = file_flag_names()
        enabled = {n: m for m, n in names.items()}["ENABLED"]
        flags = int(f["flags"])
        sm_ref = as_int(f["sm_ref"])
        if on and sm_ref:
            print("ft-soft: %s is already held in soft mode by %s (sm_ref %d): "
                  "nothing changed" % (event_file_name(f), plural(sm_ref, "user"), sm_ref))
            return
        both = masks[0] | masks[1]
        flags = flags | both if on else flags & ~both
        addr = int(f)
        gdb.execute("set var ((struct trace_event_file *)0x%x)->flags = 0x%x" % (addr, flags))
        gdb.execute("set var ((struct trace_event_file *)0x%x)->sm_ref.counter = %d"
                    % (addr, 1 if on else 0))
        print("ft-soft: %s (%s) %s soft mode: flags %s, sm_ref %d, enable file reads %s" % (
            event_file_name(f), instance_label(name), "put into" if on else "taken out of",
            decode_flags(flags, names), as_int(f["sm_ref"]), enable_file_text(flags, names)))
        if on and not flags & enabled:
            print("  note: the event is not enabled, so its tracepoint is not registered "
                  "(gdb cannot register it)")


# --- event triggers ------------------------------------------------------------

def has_event_triggers():
    return struct_type("event_trigger_data") is not None and \
        has_field("trace_event_file", "triggers")


def trigger_line(data):
    """One trigger as the event's trigger file shows it (about)."""
    cmd_ops = data["cmd_ops"]
    cmd = cstring(cmd_ops["name"]) if int(cmd_ops) else "?"
    words = [cmd]
    if cmd in ("enable_event", "disable_event", "enable_hist", "disable_hist") and \
            struct_type("enable_trigger_data") and int(data["private_data"]):
        target = data["private_data"].cast(struct_type("enable_trigger_data").pointer())
        words.append(event_file_name(target["file"]))
    line = ":".join(words) + ":" + count_text(data["count"])
    filt = cstring(data["filter_str"]) if "filter_str" in [
        f.name for f in data.type.target().fields()] else None
    if filt:
        line += " if " + filt
    if "paused" in [f.name for f in data.type.target().fields()] and int(data["paused"]):
        line += " [paused]"
    return line


class FtTriggers(gdb.Command):
    """ft-triggers SYSTEM EVENT [INSTANCE]: the triggers of one trace event.

Walks the event file's trigger list (struct event_trigger_data): the
command, its count ("unlimited" or count=N), the filter string after
"if", and for enable_event/disable_event the event it acts on.
Sets $ft_trigger to the first one ("print *$ft_trigger")."""

    def __init__(self):
        super().__init__("ft-triggers", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        need_target()
        if not has_event_triggers():
            print("this kernel has no per-event triggers (checkpoint 6 adds them)")
            return
        f, name = event_args(arg, "ft-triggers")
        triggers = list(list_entries(f["triggers"], "event_trigger_data", "list"))
        print("Triggers of %s (%s): %d" % (event_file_name(f), instance_label(name),
                                           len(triggers)))
        for data in triggers:
            print("  " + trigger_line(data))
        if triggers:
            gdb.set_convenience_variable("ft_trigger", triggers[0])


# --- clocks and options ----------------------------------------------------------

class FtClock(gdb.Command):
    """ft-clock [INSTANCE]: the trace clock and the function-trace option.

Lists the clocks of this kernel (trace_clocks[]) with the one the
instance uses in brackets, as the trace_clock file does, and whether the
function-trace option (used by the irqsoff/wakeup tracers) is set, if
this kernel has that option."""

    def __init__(self):
        super().__init__("ft-clock", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        need_target()
        name = arg.strip() or None
        tr = find_instance(name)
        clocks = gdb.parse_and_eval("trace_clocks")
        current = int(tr["clock_id"])
        names = []
        for i in range(clocks.type.range()[1] + 1):
            n = cstring(clocks[i]["name"])
            names.append("[%s]" % n if i == current else n)
        print("trace clock of %s: %s" % (instance_label(name),
                                         cstring(clocks[current]["name"])))
        print("  clocks: " + " ".join(names))
        bit = constant("TRACE_ITER_FUNCTION")
        if bit is None:
            print("  this kernel has no function-trace option (checkpoint 7 adds it)")
        else:
            on = int(tr["trace_flags"]) & int(bit)
            print("  function-trace option: %s" % ("set" if on else "not set"))


# --- the snapshot buffer -----------------------------------------------------------

def ring_buffer_entries(buffer):
    """Events in a struct trace_buffer (what ring_buffer_entries() counts):
    per CPU, the events written, less those overwritten and those read."""
    if int(buffer) == 0:
        return None
    total = 0
    for cpu in range(int(buffer["cpus"])):
        cpu_buffer = buffer["buffers"][cpu]
        if int(cpu_buffer) == 0:
            continue
        total += as_int(cpu_buffer["entries"]["a"]) - as_int(cpu_buffer["overrun"]["a"]) \
            - int(cpu_buffer["read"])
    return total


def describe_buffer(array_buffer):
    buffer = array_buffer["buffer"]
    n = ring_buffer_entries(buffer)
    return "trace_buffer 0x%x, %s" % (int(buffer), "none" if n is None else plural(n, "event"))


class FtSnapshot(gdb.Command):
    """ft-snapshot [INSTANCE]: the instance's live and snapshot buffers.

Whether the snapshot buffer is allocated (tr->allocated_snapshot: what
the snapshot file calls "Snapshot is allocated"), the ring buffer behind
"trace" (tr->array_buffer) and the one behind "snapshot"
(tr->max_buffer) with how many events each holds, and whether the
current tracer keeps its maximum latency in the snapshot buffer (then a
snapshot is refused).  A swap exchanges the two ring buffer pointers."""

    def __init__(self):
        super().__init__("ft-snapshot", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        need_target()
        if not has_field("trace_array", "allocated_snapshot"):
            print("this kernel has no snapshot buffer (CONFIG_TRACER_SNAPSHOT is off)")
            return
        name = arg.strip() or None
        tr = find_instance(name)
        allocated = int(tr["allocated_snapshot"])
        print("snapshot buffer of %s: %s" % (instance_label(name),
                                             "allocated" if allocated else "freed"))
        print("  live (tr->array_buffer, the trace file): " + describe_buffer(tr["array_buffer"]))
        print("  snapshot (tr->max_buffer, the snapshot file): " +
              describe_buffer(tr["max_buffer"]))
        tracer = tr["current_trace"]
        if int(tracer):
            uses = int(tracer["use_max_tr"]) if has_field("tracer", "use_max_tr") else 0
            print("  current tracer %s: %s" % (
                cstring(tracer["name"]),
                "keeps its maximum in the snapshot buffer, snapshots are refused" if uses
                else "leaves the snapshot buffer to snapshots"))


# --- breakpoints at the dispatch points ---------------------------------------
#
# What a learner asks for, and the functions that do it in one kernel or
# another.  ft-break sets a breakpoint on each one this vmlinux has.

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
    ("soft-disable", "where enabling an event changes its soft mode",
     ["__ftrace_event_enable_disable", "event_soft_mode_get", "event_soft_mode_put"]),
]


def function_exists(name):
    sym = symbol(name)
    if sym is not None and sym.type is not None and \
            sym.type.code == gdb.TYPE_CODE_FUNC:
        return True
    # A static function the compiler inlined into its only caller (such as
    # event_soft_mode_get at checkpoint 2) has no symbol of its own, but
    # gdb can still break on its inlined copies.
    try:
        return bool(gdb.decode_line(name)[1])
    except gdb.error:
        return False


_file_sections = None


def read_from_vmlinux(addr, size):
    """Bytes of vmlinux's initialised data at addr, read from the file.

    Works before the guest has booted (its memory is still empty then)."""
    global _file_sections
    if _file_sections is None:
        _file_sections = []
        out = gdb.execute("maint info sections", to_string=True)
        for m in re.finditer(r"(0x[0-9a-f]+)->(0x[0-9a-f]+) at (0x[0-9a-f]+): (\S+)", out):
            _file_sections.append(tuple(int(m.group(i), 16) for i in (1, 2, 3)))
    obj = vmlinux_objfile()
    for start, end, off in _file_sections:
        if start <= addr and addr + size <= end:
            with open(obj.filename, "rb") as f:
                f.seek(off + addr - start)
                return f.read(size)
    return None


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
    names = re.findall(r"struct ftrace_probe_ops (\w+);", out)
    off = offset_of("ftrace_probe_ops", "func")
    for name in names:
        sym = symbol(name)
        if sym is None:
            continue
        addr = int(sym.value().address)
        raw = read_from_vmlinux(addr + off, 8)
        func = sym_name(int.from_bytes(raw, "little")) if raw else ""
        if func:
            _probe_ops_funcs[name] = func
    return _probe_ops_funcs


# Which probe ops serve a probe command of ft-break, by the ops' name.
PROBE_OPS_WORDS = {
    "traceon": ("traceon",),
    "traceoff": ("traceoff",),
    "event-probe": ("enable", "disable"),
    "stacktrace": ("stacktrace",),
    "snapshot": ("snapshot",),
}


def resolve(what):
    for key, desc, names in BREAK_POINTS:
        if key == what:
            found = [n for n in names if function_exists(n)]
            words = PROBE_OPS_WORDS.get(key, ())
            for ops, func in sorted(probe_ops_funcs().items() if words else []):
                if any(w in ops for w in words) and func not in found:
                    found.append(func)
            return desc, found
    raise gdb.GdbError("ft-break: unknown '%s'; 'ft-break' lists the names" % what)


class FtBreak(gdb.Command):
    """ft-break [WHAT]: break where ftrace dispatches probes and triggers.

WHAT is one of: probe, traceon, traceoff, event-probe, stacktrace,
snapshot, trigger, post-trigger, soft-disable.  Each stands for
whichever function does that job in this kernel.  Without WHAT, lists
the names and the functions they resolve to here.  One breakpoint per
function: $ft_bp_first and $ft_bp_last are the first and the last made,
so "commands $ft_bp_first-$ft_bp_last" gives them all the same commands."""

    def __init__(self):
        super().__init__("ft-break", gdb.COMMAND_BREAKPOINTS)

    def invoke(self, arg, from_tty):
        what = arg.strip()
        if not what:
            for key, desc, names in BREAK_POINTS:
                found = resolve(key)[1]
                print("  %-13s %s" % (key, ", ".join(found) if found else "not in this kernel"))
                print("  %-13s   (%s)" % ("", desc))
            return
        desc, found = resolve(what)
        if not found:
            raise gdb.GdbError("ft-break %s: not in this kernel (%s)" % (what, desc))
        first = None
        for name in found:
            gdb.execute("break " + name, from_tty)
            if first is None:
                first = gdb.convenience_variable("bpnum")
        gdb.set_convenience_variable("ft_bp_first", first)
        gdb.set_convenience_variable("ft_bp_last", gdb.convenience_variable("bpnum"))

    def complete(self, text, word):
        return [k for k, _, _ in BREAK_POINTS if k.startswith(text)]


# --- the call site ftrace patches ---------------------------------------------

NOP5 = bytes([0x0f, 0x1f, 0x44, 0x00, 0x00])
ENDBR64 = bytes([0xf3, 0x0f, 0x1e, 0xfa])


class FtCallsite(gdb.Command):
    """ft-callsite FUNCTION: is FUNCTION's ftrace call site patched?

Every traceable function starts with five bytes that ftrace turns into
a no-op at boot and into a call when some ftrace_ops wants the function.
Shows which of the two they are now, and where the call goes."""

    def __init__(self):
        super().__init__("ft-callsite", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        need_target()
        name = arg.strip()
        if not name:
            raise gdb.GdbError("usage: ft-callsite FUNCTION")
        addr = int(gdb.parse_and_eval("(unsigned long)&%s" % name))
        mem = gdb.selected_inferior()
        code = bytes(mem.read_memory(addr, 9))
        if code[:4] == ENDBR64:
            addr += 4
            code = code[4:]
        if code[:5] == NOP5:
            print("%s: call site is a no-op: ftrace does not call in here" % name)
        elif code[0] == 0xe8:
            rel = int.from_bytes(code[1:5], "little", signed=True)
            target = (addr + 5 + rel) & ((1 << 64) - 1)
            print("%s: call site is patched: ftrace calls in here" % name)
            print("  call 0x%x (%s)" % (target, sym_name(target) or
                                       "a trampoline ftrace made for one ftrace_ops"))
        else:
            print("%s: no ftrace call site at 0x%x (not traceable?)" % (name, addr))


# --- the guest's console -------------------------------------------------------

class FtConsole(gdb.Command):
    """ft-console [N]: the last N lines (default 20) of the guest's console.

The harness writes the guest's serial console to the file named in
$FTLAB_CONSOLE_LOG; this shows what the lab script printed so far."""

    def __init__(self):
        super().__init__("ft-console", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        n = int(arg) if arg.strip() else 20
        path = os.environ.get("FTLAB_CONSOLE_LOG")
        if not path:
            raise gdb.GdbError("FTLAB_CONSOLE_LOG is not set (start gdb with 'make gdb N')")
        try:
            with open(path, errors="replace") as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise gdb.GdbError("cannot read the console log %s: %s" % (path, e))
        for line in lines[-n:]:
            print(line)


# --- convenience function for breakpoint conditions ---------------------------

class HasProbes(gdb.Function):
    """$_ft_has_probes([INSTANCE]): 1 if the instance has function probes.

For breakpoint conditions on functions that run now and then (such as
schedule).  Not for the probe dispatcher at checkpoint 0: it runs for
every function, and gdb would stop to evaluate the condition each time."""

    def __init__(self):
        super().__init__("_ft_has_probes")

    def invoke(self, name=None):
        tr = find_instance(name.string() if name is not None else None)
        return 1 if probe_count(tr) else 0


# --- pretty-printers --------------------------------------------------------------

class ProbeEntryPrinter:
    """struct ftrace_probe_entry (checkpoints 0 and 1)."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        v = self.val
        return "{%s}" % entry_line(int(v["ip"]), v["probe_ops"], v["data"])


class FuncProbePrinter:
    """struct ftrace_func_probe (upstream): one probe ops and its functions."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        v = self.val
        cmd, counted = probe_command(v["probe_ops"])
        n = len(hash_ips(filter_hash(v["ops"])))
        return "{%s probe%s on %s, ref %d}" % (
            cmd, " (counted)" if counted else "", plural(n, "function"), as_int(v["ref"]))


class EventFilePrinter:
    """struct trace_event_file: the event and its flags."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        v = self.val
        text = "{%s flags=%s" % (event_file_name(v.address),
                                 decode_flags(v["flags"], file_flag_names()))
        if has_field("trace_event_file", "sm_ref"):
            text += " sm_ref=%d" % as_int(v["sm_ref"])
        return text + "}"


class TriggerDataPrinter:
    """struct event_trigger_data: one trigger as the trigger file shows it."""

    def __init__(self, val):
        self.val = val

    def to_string(self):
        return "{%s}" % trigger_line(self.val.address)


def make_printers():
    pp = gdb.printing.RegexpCollectionPrettyPrinter("ftrace_labs")
    pp.add_printer("ftrace_probe_entry", "^ftrace_probe_entry$", ProbeEntryPrinter)
    pp.add_printer("ftrace_func_probe", "^ftrace_func_probe$", FuncProbePrinter)
    pp.add_printer("trace_event_file", "^trace_event_file$", EventFilePrinter)
    pp.add_printer("event_trigger_data", "^event_trigger_data$", TriggerDataPrinter)
    return pp


def vmlinux_objfile():
    for obj in gdb.objfiles():
        if os.path.basename(obj.filename) == "vmlinux":
            return obj
    return None


# --- "help ft" ------------------------------------------------------------------

COMMANDS = [FtProbes, FtEvent, FtEventSet, FtSoft, FtTriggers, FtClock, FtSnapshot, FtBreak,
            FtCallsite, FtConsole]


def summary():
    lines = []
    for cls in COMMANDS:
        first = cls.__doc__.splitlines()[0]
        usage, what = first.split(": ", 1)
        lines.append("  %-36s %s" % (usage, what))
    return "\n".join(lines)


class Ft(gdb.Command):
    # The help text is made below, from the commands' own first lines.

    def __init__(self):
        super().__init__("ft", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        print(self.__doc__)


Ft.__doc__ = ("ft: the ftrace trigger labs' gdb commands.\n\n" + summary() + "\n"
              "  %-36s %s\n\n" % ("ft-serve", "run the gdb commands a lab asks for "
                                               "(gdb-scripts/lab_requests.py)") +
              "Condition for breakpoints: $_ft_has_probes([INSTANCE]).\n"
              "\"print\" shows probe entries, event files and triggers in short;\n"
              "\"print/r\" shows the raw struct.\n"
              "\"help ft-probes\" (and so on) explains one command.")


def register():
    Ft()
    for cls in COMMANDS:
        cls()
    HasProbes()
    obj = vmlinux_objfile()
    gdb.printing.register_pretty_printer(obj, make_printers(), replace=True)
    print("ftrace_labs: 'help ft' lists the ft- commands")


register()
