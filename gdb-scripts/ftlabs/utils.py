# utils.py - small tools on top of gdb and the kernel's linux.utils.

import os
import re

import gdb

from linux import lists
from linux import utils as lx

from . import decode

_types = {}


def struct_type(name):
    """The type 'struct name' (looked up once), or None if this vmlinux
    has no such struct."""
    cached = _types.setdefault(name, lx.CachedType("struct " + name))
    try:
        return cached.get_type()
    except gdb.error:
        return None


def has_field(struct, field):
    t = struct_type(struct)
    return t is not None and any(f.name == field for f in t.fields())


def symbol(name):
    """The symbol of a global or file-static variable or function, or None."""
    try:
        return gdb.lookup_global_symbol(name) or gdb.lookup_static_symbol(name)
    except gdb.error:
        return None


def constant(name):
    """The value of an enumerator (e.g. EVENT_FILE_FL_ENABLED) or None."""
    return lx.gdb_eval_or_none(name)


def enum_members(sample_name):
    """{name: value} of the enum that declares sample_name, or {}.

    The kernel's flag enums are often anonymous; the debug info still
    has them, and one of their enumerators is enough to find the type."""
    v = constant(sample_name)
    if v is None or v.type.strip_typedefs().code != gdb.TYPE_CODE_ENUM:
        return {}
    return {f.name: int(f.enumval) for f in v.type.strip_typedefs().fields()}


def entries(head, struct, member):
    """The struct * on a list_head or hlist_head (linux.lists)."""
    t = struct_type(struct).pointer()
    if head.type.strip_typedefs().tag == "hlist_head":
        return lists.hlist_for_each_entry(head, t, member)
    return lists.list_for_each_entry(head, t, member)


def offset_of(struct, member):
    return lx.offset_of(struct_type(struct).pointer(), member)


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
    return decode.symbol_text(gdb.execute("info symbol 0x%x" % addr, to_string=True))


def func_name(addr):
    return sym_name(addr) or "0x%x" % int(addr)


def function_exists(name):
    sym = symbol(name)
    if sym is not None and sym.type is not None and sym.type.code == gdb.TYPE_CODE_FUNC:
        return True
    # A static function the compiler inlined into its only caller (such as
    # event_soft_mode_get at checkpoint 2) has no symbol of its own, but
    # gdb can still break on its inlined copies.
    try:
        return bool(gdb.decode_line(name)[1])
    except gdb.error:
        return False


def out_of_line(name):
    """The address of function name's own code, or None when it has none
    (inlined everywhere, or not in this kernel)."""
    sym = symbol(name)
    if sym is None or sym.type is None or sym.type.code != gdb.TYPE_CODE_FUNC:
        return None
    return int(sym.value().address)


def need_target():
    if not gdb.selected_inferior().pid:
        raise gdb.GdbError("no guest attached: 'target remote :PORT' first")


def usage_error(cmd, usage):
    return gdb.GdbError("usage: %s %s" % (cmd, usage))


def vmlinux_objfile():
    for obj in gdb.objfiles():
        if os.path.basename(obj.filename) == "vmlinux":
            return obj
    return None


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


# --- trace instances --------------------------------------------------------

def trace_arrays():
    """(name, struct trace_array *) of every instance, the top level first."""
    for tr in entries(gdb.parse_and_eval("ftrace_trace_arrays"), "trace_array", "list"):
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


# --- the ft prefix ---------------------------------------------------------------

def alias(old_name, command):
    """Keep a command's old name (ft-probes for "ft probes"): the labs'
    scripts and the handouts use it."""
    gdb.execute("alias -a %s = %s" % (old_name, command), to_string=True)
