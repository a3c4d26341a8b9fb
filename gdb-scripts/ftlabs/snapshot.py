# snapshot.py - the live and the snapshot ring buffers of an instance.

import gdb

from . import decode, utils
from .utils import as_int, cstring, has_field


def buffer_cpus(buffer):
    """How many per-CPU slots buffer->buffers has: buffer->cpus where the
    kernel keeps it (6.1); else nr_cpu_ids, the length ring_buffer
    allocates it with (6.12 has no cpus field), which is the constant
    NR_CPUS (1) in a kernel without SMP."""
    if has_field("trace_buffer", "cpus"):
        return int(buffer["cpus"])
    nr = utils.symbol("nr_cpu_ids")
    return int(nr.value()) if nr is not None else 1


def ring_buffer_entries(buffer):
    """Events in a struct trace_buffer *, or None if there is none. A
    CPU's slot is NULL when that CPU has no buffer (not possible, or not
    in buffer->cpumask)."""
    if int(buffer) == 0:
        return None
    cpus = []
    for cpu in range(buffer_cpus(buffer)):
        b = buffer["buffers"][cpu]
        if int(b):
            cpus.append((as_int(b["entries"]["a"]), as_int(b["overrun"]["a"]), int(b["read"])))
    return decode.ring_buffer_events(cpus)


def describe_buffer(array_buffer):
    buffer = array_buffer["buffer"]
    n = ring_buffer_entries(buffer)
    return "trace_buffer 0x%x, %s" % (int(buffer),
                                      "none" if n is None else decode.plural(n, "event"))


class FtSnapshot(gdb.Command):
    """The instance's live and snapshot buffers: ft snapshot [INSTANCE]

Whether the snapshot buffer is allocated (tr->allocated_snapshot: what
the snapshot file calls "Snapshot is allocated"), the ring buffer behind
"trace" (tr->array_buffer) and the one behind "snapshot"
(tr->max_buffer) with how many events each holds, and whether the
current tracer keeps its maximum latency in the snapshot buffer (then a
snapshot is refused).  A swap exchanges the two ring buffer pointers."""

    def __init__(self):
        super().__init__("ft snapshot", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        utils.need_target()
        if not has_field("trace_array", "allocated_snapshot"):
            print("this kernel has no snapshot buffer (CONFIG_TRACER_SNAPSHOT is off)")
            return
        name = arg.strip() or None
        tr = utils.find_instance(name)
        print("snapshot buffer of %s: %s" % (
            decode.instance_label(name),
            "allocated" if int(tr["allocated_snapshot"]) else "freed"))
        print("  live (tr->array_buffer, the trace file): " + describe_buffer(tr["array_buffer"]))
        print("  snapshot (tr->max_buffer, the snapshot file): " +
              describe_buffer(tr["max_buffer"]))
        tracer = tr["current_trace"]
        if int(tracer):
            uses = has_field("tracer", "use_max_tr") and int(tracer["use_max_tr"])
            print("  current tracer %s: %s" % (
                cstring(tracer["name"]),
                "keeps its maximum in the snapshot buffer, snapshots are refused" if uses
                else "leaves the snapshot buffer to snapshots"))


FtSnapshot()
utils.alias("ft-snapshot", "ft snapshot")
