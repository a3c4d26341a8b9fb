"""ft snapshot's count of a ring buffer's events (gdb-scripts/ftlabs/
snapshot.py) on 6.1's struct trace_buffer, which has a cpus field, and
on 6.12's, which has not ("ring-buffer: Remove trace_buffer::cpus"):
there the per-CPU slots are nr_cpu_ids long. Run on the host with a
stand-in for gdb and for the kernel's linux.* modules."""

import os
import sys
import types
import unittest
from unittest import mock

GDB_SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "gdb-scripts")


def stand_ins():
    """{module name: module} of a gdb without a target, enough to import
    the helpers."""
    gdb = types.ModuleType("gdb")

    class Command:
        def __init__(self, *args, **kwargs):
            pass
    gdb.Command = Command
    gdb.COMMAND_USER = 0
    gdb.TYPE_CODE_STRUCT = 3
    gdb.error = RuntimeError
    gdb.GdbError = RuntimeError
    gdb.execute = lambda *a, **k: ""
    gdb.lookup_global_symbol = lambda name: None
    gdb.lookup_static_symbol = lambda name: None
    linux = types.ModuleType("linux")
    lists = types.ModuleType("linux.lists")
    lx = types.ModuleType("linux.utils")
    lx.CachedType = lambda name: None
    linux.lists, linux.utils = lists, lx
    return {"gdb": gdb, "linux": linux, "linux.lists": lists, "linux.utils": lx}


class Value:
    """A gdb.Value of a pointer or a struct: int() of it, [field]."""

    def __init__(self, address=0, **fields):
        self.address, self.fields = address, fields
        self.type = types.SimpleNamespace(strip_typedefs=lambda: types.SimpleNamespace(code=0))

    def __int__(self):
        return self.address

    def __getitem__(self, key):
        return self.fields[key]


def per_cpu(entries, overrun, read):
    return Value(1, entries=Value(a=entries), overrun=Value(a=overrun), read=read)


class RingBufferEvents(unittest.TestCase):
    def setUp(self):
        patcher = mock.patch.dict(sys.modules, stand_ins())
        patcher.start()
        self.addCleanup(patcher.stop)
        sys.path.insert(0, GDB_SCRIPTS)
        self.addCleanup(sys.path.remove, GDB_SCRIPTS)
        for name in [m for m in sys.modules if m == "ftlabs" or m.startswith("ftlabs.")]:
            del sys.modules[name]
        from ftlabs import snapshot
        self.snapshot = snapshot
        self.addCleanup(lambda: [sys.modules.pop(m) for m in list(sys.modules)
                                 if m == "ftlabs" or m.startswith("ftlabs.")])

    def entries(self, buffer, fields, nr_cpu_ids=None):
        symbol = None if nr_cpu_ids is None else types.SimpleNamespace(value=lambda: nr_cpu_ids)
        s = self.snapshot
        with mock.patch.object(s, "has_field", side_effect=lambda st, f: f in fields), \
                mock.patch.object(s.utils, "symbol", return_value=symbol), \
                mock.patch.object(s.utils, "as_int", side_effect=int), \
                mock.patch.object(s, "as_int", side_effect=int):
            return s.ring_buffer_entries(buffer)

    def test_61_counts_its_cpus(self):
        buffer = Value(0x1000, cpus=2, buffers=[per_cpu(10, 2, 3), per_cpu(4, 0, 0)])
        self.assertEqual(self.entries(buffer, {"cpus"}), 9)

    def test_612_has_no_cpus_field(self):
        buffer = Value(0x1000, buffers=[per_cpu(10, 2, 3), Value(0), per_cpu(4, 0, 1)])
        self.assertEqual(self.entries(buffer, set(), nr_cpu_ids=3), 8)

    def test_612_without_smp(self):
        """nr_cpu_ids is the constant NR_CPUS (1): no symbol in vmlinux."""
        buffer = Value(0x1000, buffers=[per_cpu(5, 1, 1)])
        self.assertEqual(self.entries(buffer, set()), 3)

    def test_no_buffer(self):
        self.assertIsNone(self.entries(Value(0), set()))


if __name__ == "__main__":
    unittest.main()
