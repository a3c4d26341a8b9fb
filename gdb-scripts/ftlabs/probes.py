# probes.py - function probes (set_ftrace_filter's function:command) and the
# ftrace_ops that make ftrace call them.
#
# Four layouts exist:
#  "entries"  checkpoint 0 (our rewrite): tr->func_probes points to a
#             struct ftrace_func_probes, one ops for the instance and a hash
#             table of struct ftrace_probe_entry {ip, probe_ops, data}.
#  "kinds"    checkpoint 1 on (our rewrite): tr->probe_kinds lists struct
#             ftrace_probe_kind, one per probe command, the newest first,
#             each with its own ftrace_ops and a hash table of struct
#             ftrace_probe_entry {ip, data}.
#  "mapper"   upstream 6.12: tr->func_probes is a list of struct
#             ftrace_func_probe, one per probe ops, each with its own
#             ftrace_ops; per-function data in a struct ftrace_func_mapper.
#  none       a kernel without function probes.

import gdb

from . import decode, events, utils
from .decode import plural
from .utils import as_int, entries, func_name, has_field, struct_type, sym_name


# --- ftrace_ops and their filter hash ---------------------------------------

def hash_ips(hash_ptr):
    """The ips in a struct ftrace_hash (function entries), sorted."""
    if int(hash_ptr) == 0:
        return []
    h = hash_ptr.dereference()
    ips = []
    for i in range(1 << int(h["size_bits"])):
        ips += [int(e["ip"]) for e in entries(h["buckets"][i], "ftrace_func_entry", "hlist")]
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


def describe_ops(ops):
    enabled = utils.constant("FTRACE_OPS_FL_ENABLED")
    state = ""
    if enabled is not None:
        state = ", registered" if int(ops["flags"]) & int(enabled) else ", not registered"
    return "ftrace_ops 0x%x, callback %s%s" % (int(ops.address), func_name(ops["func"]), state)


def probe_layout():
    if struct_type("ftrace_probe_kind") and has_field("trace_array", "probe_kinds"):
        return "kinds"
    if struct_type("ftrace_probe_entry") and struct_type("ftrace_func_probes"):
        return "entries"
    if struct_type("ftrace_func_probe") and has_field("trace_array", "func_probes"):
        return "mapper"
    return None


def probe_command(probe_ops):
    """(command, counted) of a struct ftrace_probe_ops *, from its name."""
    name = sym_name(probe_ops)
    if not name:
        return "?(ops 0x%x)" % int(probe_ops), False
    return decode.probe_command(name)


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
            return "%s:%s" % (events.file_name(ep["file"]), decode.count_text(ep["count"]))
        except gdb.error:
            return None
    return None


def probe_line(ip, probe_ops, data):
    """One probe as set_ftrace_filter shows it: function:command:count."""
    cmd, counted = probe_command(probe_ops)
    value = int(data) % decode.U64
    event = None
    if cmd in decode.EVENT_COMMANDS and value and value != decode.U64 - 1:
        event = event_probe_text(data)
    return "%s:%s:%s" % (func_name(ip), cmd, decode.probe_data_text(cmd, counted, value, event))


def mapper_data(mapper, ip):
    """The data slot of ip in an upstream struct ftrace_func_mapper, or None."""
    if int(mapper) == 0:
        return None
    h = mapper["hash"]
    for i in range(1 << int(h["size_bits"])):
        for e in entries(h["buckets"][i], "ftrace_func_entry", "hlist"):
            if int(e["ip"]) == ip:
                return e.cast(struct_type("ftrace_func_map").pointer())["data"]
    return None


def mapper_line(ip, probe):
    """One probe as set_ftrace_filter shows it, for upstream 6.12."""
    cmd, counted = probe_command(probe["probe_ops"])
    line = "%s:%s" % (func_name(ip), cmd)
    mapper_t = struct_type("ftrace_func_mapper")
    data = mapper_data(probe["data"].cast(mapper_t.pointer()), ip) if mapper_t else None
    if data is None:
        return line + ":unlimited"
    if cmd in decode.EVENT_COMMANDS:
        text = event_probe_text(data)
        if text:
            return line + ":" + text
    return line + ":" + decode.count_text(int(data.cast(utils.lx.get_long_type())))


def table_entries(owner):
    """The struct ftrace_probe_entry in the table of a struct
    ftrace_func_probes or ftrace_probe_kind: a DECLARE_HASHTABLE in a
    struct ftrace_probe_table of its own (owner->table), or, in a build
    of an older series, in the owner itself."""
    struct = owner.type.strip_typedefs()
    if struct.code == gdb.TYPE_CODE_PTR:
        struct = struct.target().strip_typedefs()
    fields = [f.name for f in struct.fields()]
    table = owner["table"].dereference()["entries"] if "table" in fields else owner["entries"]
    found = []
    for i in range(table.type.range()[1] + 1):
        found += entries(table[i], "ftrace_probe_entry", "node")
    return found


def show_entries(tr):
    probes = tr["func_probes"]
    if int(probes) == 0:
        print("  none (tr->func_probes is NULL: no probe was ever set here)")
        return
    found = table_entries(probes)
    print("  %s in the probe table (nr_entries %d)" % (
        plural(len(found), "entry"), int(probes["nr_entries"])))
    for line in sorted(probe_line(int(e["ip"]), e["probe_ops"], e["data"]) for e in found):
        print("  " + line)
    if found:
        gdb.set_convenience_variable("ft_probe", found[0])
    print("One ftrace_ops for all of them: " + describe_ops(probes["ops"]))
    print("  " + describe_filter(probes["ops"]))


def show_kinds(tr):
    kinds = list(entries(tr["probe_kinds"], "ftrace_probe_kind", "list"))
    if not kinds:
        print("  none")
        return
    first = None
    for kind in kinds:
        probe_ops = kind["probe_ops"]
        found = table_entries(kind)
        print("probe kind %s (%s), nr_entries %d:" % (
            sym_name(probe_ops) or "?", probe_command(probe_ops)[0], int(kind["nr_entries"])))
        for line in sorted(probe_line(int(e["ip"]), probe_ops, e["data"]) for e in found):
            print("  " + line)
        if first is None and found:
            first = found[0]
        print("its own " + describe_ops(kind["ops"]))
        print("  " + describe_filter(kind["ops"]))
    if first is not None:
        gdb.set_convenience_variable("ft_probe", first)


def show_mapper(tr):
    probes = list(entries(tr["func_probes"], "ftrace_func_probe", "list"))
    if not probes:
        print("  none")
        return
    gdb.set_convenience_variable("ft_probe", probes[0])
    for probe in probes:
        ops = probe["ops"]
        print("probe ops %s (%s), ref %d:" % (
            sym_name(probe["probe_ops"]) or "?", probe_command(probe["probe_ops"])[0],
            as_int(probe["ref"])))
        for ip in hash_ips(filter_hash(ops)):
            print("  " + mapper_line(ip, probe))
        print("its own " + describe_ops(ops))
        print("  " + describe_filter(ops))


def probe_count(tr):
    """How many probes the instance has (0 if the kernel has none)."""
    layout = probe_layout()
    if layout == "kinds":
        return sum(int(k["nr_entries"])
                   for k in entries(tr["probe_kinds"], "ftrace_probe_kind", "list"))
    if layout == "entries":
        probes = tr["func_probes"]
        return int(probes["nr_entries"]) if int(probes) else 0
    if layout == "mapper":
        return sum(1 for _ in entries(tr["func_probes"], "ftrace_func_probe", "list"))
    return 0


class FtProbes(gdb.Command):
    """The function probes of a trace instance: ft probes [INSTANCE]

Lists each probe as set_ftrace_filter would (function:command:count),
and the ftrace_ops that makes ftrace call it, with its callback and its
filter hash: the functions ftrace calls it for (an empty hash means all
functions).  Checkpoint 0 has one ops for all probes of an instance;
from checkpoint 1 on (and in 6.12) each struct ftrace_probe_ops has its
own (a command's plain and counted forms, such as traceoff and
traceoff:N, are two), and they are shown newest first, as
set_ftrace_filter lists them.  INSTANCE
is a name under instances/; the top level instance by default.  Sets
$ft_probe to a probe ("print *$ft_probe")."""

    def __init__(self):
        super().__init__("ft probes", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        utils.need_target()
        name = arg.strip() or None
        tr = utils.find_instance(name)
        layout = probe_layout()
        if layout is None:
            print("this kernel has no function probes (no struct ftrace_func_probe(s))")
            return
        print("Function probes of %s:" % decode.instance_label(name))
        {"kinds": show_kinds, "entries": show_entries, "mapper": show_mapper}[layout](tr)


class HasProbes(gdb.Function):
    """$_ft_has_probes([INSTANCE]): 1 if the instance has function probes.

For breakpoint conditions on functions that run now and then (such as
schedule).  Not for the probe dispatcher at checkpoint 0: it runs for
every function, and gdb would stop to evaluate the condition each time."""

    def __init__(self):
        super().__init__("_ft_has_probes")

    def invoke(self, name=None):
        tr = utils.find_instance(name.string() if name is not None else None)
        return 1 if probe_count(tr) else 0


FtProbes()
utils.alias("ft-probes", "ft probes")
HasProbes()
