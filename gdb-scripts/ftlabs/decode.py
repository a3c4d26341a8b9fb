# decode.py - what the ft commands print, from plain values.
#
# No "import gdb" here: the commands read the kernel's structures and pass
# ints, names and dicts to these functions, which the host's unit tests
# (gdb-scripts/tests/) run without gdb.

U64 = 1 << 64


def plural(n, word):
    if n == 1:
        return "1 " + word
    if word.endswith("y"):
        return "%d %sies" % (n, word[:-1])
    return "%d %ss" % (n, word)


def signed64(value):
    value = int(value)
    return value - U64 if value >= 1 << 63 else value


def count_text(count):
    """"unlimited" or "count=N"; -1 (also as an unsigned long) is unlimited."""
    count = signed64(count)
    if count == -1:
        return "unlimited"
    return "count=%d" % count


# Probe ops whose name does not say the command (event_enable_probe_ops
# serves "enable_event").
COMMAND_NAMES = {"event_enable": "enable_event", "event_disable": "disable_event"}
EVENT_COMMANDS = ("enable_event", "disable_event")


def probe_command(ops_name):
    """(command, counted) from the name of a struct ftrace_probe_ops variable:
    traceoff_count_probe_ops -> ("traceoff", True)."""
    base = ops_name[:-len("_probe_ops")] if ops_name.endswith("_probe_ops") else ops_name
    counted = "_count" in base
    base = base.replace("_count", "")
    return COMMAND_NAMES.get(base, base), counted


def probe_data_text(cmd, counted, data, event_text=None):
    """The part of a probe line after "function:command:", from the probe's
    data slot (an int) and, for an event probe, "system:event:count=N" read
    from what the slot points to (None if it could not be read).

    A counted command keeps its count in the slot itself; other commands
    own what the slot points to."""
    data = int(data) % U64
    pointer = data and data != U64 - 1
    if cmd in EVENT_COMMANDS and pointer and event_text:
        return event_text
    if counted:
        value = signed64(data)
        if -1 <= value < 1 << 32:
            return count_text(value)
        return "data=0x%x" % data
    if pointer:
        return "data=0x%x" % data
    return "unlimited"


def file_flag_names(masks=None, bits=None):
    """{bit mask: short name} of trace_event_file flags from the kernel's
    enum: {"EVENT_FILE_FL_ENABLED": 1, ...} (masks) or, where the kernel has
    only the bit numbers, {"EVENT_FILE_FL_ENABLED_BIT": 0, ...} (bits)."""
    if masks:
        return {v: n[len("EVENT_FILE_FL_"):] for n, v in masks.items()}
    return {1 << v: n[len("EVENT_FILE_FL_"):-len("_BIT")] for n, v in (bits or {}).items()}


def decode_flags(value, names):
    """"ENABLED|SOFT_MODE" from a flags word and {mask: name}."""
    value = int(value)
    out = [n for m, n in sorted(names.items()) if value & m]
    rest = value & ~sum(m for m in names if value & m)
    if rest:
        out.append("0x%x" % rest)
    return "|".join(out) if out else "none"


def enable_file_text(flags, names):
    """What the event's "enable" file reads (0, 1, 0* or 1*), from its flags
    (as event_enable_read() computes it)."""
    by_name = {n: m for m, n in names.items()}
    flags = int(flags)
    on = flags & by_name.get("ENABLED", 0) and not flags & by_name.get("SOFT_DISABLED", 0)
    soft = flags & (by_name.get("SOFT_MODE", 0) | by_name.get("SOFT_DISABLED", 0))
    return ("1" if on else "0") + ("*" if soft else "")


def flag_changes(words, names):
    """(mask to set, mask to clear, other words) from "+SOFT_MODE -ENABLED
    sched sched_switch"; raises ValueError naming an unknown flag."""
    by_name = {n: m for m, n in names.items()}
    set_mask = clear_mask = 0
    rest = []
    for w in words:
        if w[:1] not in "+-":
            rest.append(w)
            continue
        if w[1:] not in by_name:
            raise ValueError("this kernel has no event file flag %s (it has: %s)"
                             % (w[1:], ", ".join(sorted(by_name))))
        if w[0] == "+":
            set_mask |= by_name[w[1:]]
        else:
            clear_mask |= by_name[w[1:]]
    return set_mask, clear_mask, rest


def event_words(arg):
    """(system, event, instance or None) from "sched sched_switch [INST]" or
    "sched/sched_switch [INST]"; raises ValueError."""
    words = arg.split()
    if words and "/" in words[0]:
        words = words[0].split("/", 1) + words[1:]
    if len(words) not in (2, 3):
        raise ValueError("SYSTEM EVENT [INSTANCE]")
    return words[0], words[1], words[2] if len(words) == 3 else None


def instance_label(name):
    return "instance '%s'" % name if name else "the top level instance"


def trigger_text(cmd, count, target=None, filter_str=None, paused=False):
    """One trigger as the event's trigger file shows it (about):
    enable_event:sched:sched_wakeup:count=1 if prev_pid == 0."""
    words = [cmd] + ([target] if target else [])
    line = ":".join(words) + ":" + count_text(count)
    if filter_str:
        line += " if " + filter_str
    if paused:
        line += " [paused]"
    return line


def clock_line(names, current):
    """The trace_clock file: the clock names, the current one in brackets."""
    return " ".join("[%s]" % n if i == current else n for i, n in enumerate(names))


def ring_buffer_events(cpus):
    """Events in a ring buffer from (entries, overrun, read) per CPU, as
    ring_buffer_entries() counts them."""
    return sum(entries - overrun - read for entries, overrun, read in cpus)


NOP5 = bytes([0x0f, 0x1f, 0x44, 0x00, 0x00])
ENDBR64 = bytes([0xf3, 0x0f, 0x1e, 0xfa])


def callsite(addr, code):
    """What ftrace's five bytes at the start of a function are, from the
    first nine bytes of the function at addr: ("nop", addr), ("call",
    target) or ("none", addr), addr being where the five bytes are."""
    code = bytes(code)
    if code[:4] == ENDBR64:
        addr += 4
        code = code[4:]
    if code[:5] == NOP5:
        return "nop", addr
    if code[:1] == b"\xe8":
        rel = int.from_bytes(code[1:5], "little", signed=True)
        return "call", (addr + 5 + rel) % U64
    return "none", addr


def symbol_text(info_symbol_output):
    """"schedule+4" from gdb's "info symbol" output ("" if none)."""
    if not info_symbol_output or info_symbol_output.startswith("No symbol"):
        return ""
    return info_symbol_output.split(" in section")[0].strip().replace(" + ", "+")


def tail(lines, n):
    return lines[-n:] if n > 0 else []


REQUEST_PREFIX = b"ftlab-gdb: "


def request_command(data):
    """The gdb command a lab asks for, from what it wrote to trace_marker
    ("ftlab-gdb: COMMAND"), or None if the write is not a request."""
    if not data.startswith(REQUEST_PREFIX) or len(data) <= len(REQUEST_PREFIX):
        return None
    return data[len(REQUEST_PREFIX):].decode("utf-8", "replace").strip() or None


# The host name the guest takes when a gdb lab is over (lib.sh's
# run_gdb_lab), before its last sync.
FINISHED_HOSTNAME = "ftlab-finished"


def lab_finished(hostname):
    return hostname == FINISHED_HOSTNAME
