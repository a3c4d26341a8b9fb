"""The hostile-input test: thousands of seeded, reproducible writes to
tracefs that nobody meant to write, and what must hold afterwards.

The host generates the writes (generate), ships them to the guest as a
file of shell-safe lines (encode), and the guest (labs/robustness/
hostile.sh) performs them in rounds, printing one verdict character per
write and, after every round, the listings of the files written. The host
then checks (check_run):

  - "a listing shows exactly what was accepted": in a structured round
    (one well-formed or wrong-arity command per write), the function
    probes in set_ftrace_filter and the triggers in each trigger file are
    those of the round before, plus every accepted addition, minus what an
    accepted removal may have removed; a refused write leaves no
    half-registered probe or trigger behind;
  - the clock and options read what the last accepted write set;
  - after removing everything, the kernel is clean: enabled_functions is
    empty, no event is in soft mode ("0*" or "1*"), no probe or trigger
    is left, and the options read what they read before;
and, between two kernels (compare): every write got the same verdict and
every round left the same listings, except what timing decides (see
normalise: counts of entries that fire, and whether an event that firing
probes switch both on and off reads 1* or 0*).

Which files get which strings, and why some strings are never written:

  - Probes on hot functions (schedule) never use dump or cpudump: each hit
    would dump the ring buffer to the console.
  - A "!!" at the start of a set_ftrace_filter token makes upstream 6.1 WARN
    (WARN_ON(not) in unregister_ftrace_function_probe_func()), and guests
    boot with panic_on_warn=1; the conformance corpus covers that case, so
    the generator turns "!!" into "!" there.
  - No ":mod:" command: 6.1 (and so every checkpoint) lists one probe fewer
    in set_ftrace_filter for each cached ":mod:" entry (the seq_file
    position of the mod list and the probe list overlap), so a listing
    would not show what was accepted, nor could the probes it hides be
    removed by reading the listing (lib.sh's reset_tracing). Found by this
    test; reproduced by hand with
        echo schedule:traceoff:5 >> set_ftrace_filter
        echo schedule:mod:x >> set_ftrace_filter
        cat set_ftrace_filter     # no "schedule:traceoff:count=..." line
  - No "tai" clock: its values are nanoseconds since 1970 (about 2^60),
    the others' count from boot. tracing_set_clock() gives the ring
    buffer the new clock first and resets the buffers after; an event
    recorded on the other CPU in between is stamped by the new clock
    right after one stamped by the old, and a jump over 2^59 makes 6.1
    WARN ("Delta way too big!", rb_check_timestamp() in ring_buffer.c).
    Unmodified upstream 6.1 (debug) WARNs within 150 switches between
    uptime and tai with sched events on; the probes on schedule keep
    events coming here. basic3.tc and the conformance corpus still set
    tai, with nothing recording.
"""

import fnmatch
import random
import re

# --- where the writes go -----------------------------------------------------

# Events with triggers: two that never fire in the guest (counts stay as
# written, so the model can check them) and one that fires on every fork.
EVENTS = [("sched", "sched_kthread_stop"), ("sched", "sched_kthread_stop_ret"),
          ("sched", "sched_process_fork")]
# Targets of enable_event/disable_event, and names that do not exist.
TARGETS = EVENTS + [("sched", "sched_switch"), ("sched", "sched_wakeup")]
BAD_TARGETS = [("sched", "no_such_event"), ("nosys", "sched_switch"), ("", "sched_switch"),
               ("sched", ""), ("sched", "sched_*"), ("*", "*")]
# Functions for probes: called by nothing the guest does during the test
# (so counts stay as written), and one called all the time.
COLD = ["ksys_sync", "__x64_sys_sync", "emergency_sync", "do_sync_work", "__x64_sys_syncfs",
        "sync_filesystem", "vfs_fsync"]
HOT = ["schedule"]
PROBE_CMDS = ["traceon", "traceoff", "stacktrace", "snapshot", "dump", "cpudump",
              "enable_event", "disable_event"]
TRIGGER_CMDS = ["traceon", "traceoff", "stacktrace", "snapshot", "enable_event", "disable_event"]
# Commands that share one slot: adding one refuses the other, and removing
# one may remove the other (their trigger types or probe_ops are shared).
FAMILY = {"traceon": "onoff", "traceoff": "onoff", "enable_event": "event",
          "disable_event": "event"}
# every clock of 6.1 but "tai" (see above)
CLOCKS = ["local", "global", "counter", "uptime", "perf", "mono", "mono_raw", "boot", "x86-tsc"]
OPTIONS = ["print-parent", "sym-offset", "sym-addr", "verbose", "raw", "hex", "bin", "block",
           "annotate", "userstacktrace", "sym-userobj", "context-info", "latency-format",
           "record-cmd", "record-tgid", "overwrite", "irq-info", "markers", "event-fork",
           "function-trace", "function-fork", "stacktrace", "no-such-option"]
# Fields of the trigger events (sched_kthread_stop and sched_process_hang
# has comm and pid, sched_kthread_stop_ret ret; sched_process_fork parent_/child_ comm and pid).
FIELDS = {"sched_kthread_stop": (["pid", "common_pid"], ["comm"]),
          "sched_kthread_stop_ret": (["ret", "common_pid"], ["comm"]),
          "sched_process_fork": (["parent_pid", "child_pid", "common_pid"],
                                 ["parent_comm", "child_comm"])}


def files():
    """{key: path under tracefs} of every file the test writes."""
    out = {"F": "set_ftrace_filter", "N": "set_ftrace_notrace", "C": "trace_clock"}
    for i, (system, event) in enumerate(EVENTS):
        base = f"events/{system}/{event}/"
        out[f"T{i}"] = base + "trigger"
        out[f"E{i}"] = base + "enable"
        out[f"L{i}"] = base + "filter"
    for name in OPTIONS:
        out["O." + name] = "options/" + name
    return out


# --- the writes --------------------------------------------------------------

class Op:
    """One write (or, for a partial write, several writes on one open file).

    file: a key of files(); mode: "a" (>>), "t" (>) or "p" (pieces, each
    its own write(2) on one file descriptor); pieces: the bytes of each
    write; model: what the write means to the model, or None."""

    def __init__(self, file, pieces, mode="a", model=None):
        self.file, self.pieces, self.mode, self.model = file, pieces, mode, model

    @property
    def data(self):
        return b"".join(self.pieces)

    def __repr__(self):
        return f"Op({self.file!r}, {self.pieces!r}, {self.mode!r}, {self.model!r})"


def _count_param(rng):
    """A count: valid, or every way one can be wrong."""
    return rng.choice(["1", "3", "5", "0", "", "-1", "abc", "99999999999999999999999", "0x10",
                       "5:extra", ":", " 5", "5 ", "1e3"])


def probe_text(rng, remove=False):
    """A function-probe command for set_ftrace_filter, with every arity,
    and the key the model files it under: (function, command)."""
    cmd = rng.choice(PROBE_CMDS + ["traceoffx", "TRACEON", "", "dumpp"])
    hot_ok = cmd not in ("dump", "cpudump")
    func = rng.choice(COLD + (HOT if hot_ok else []))
    if remove and rng.random() < 0.2:
        func = rng.choice(["*", "", "ksys_sync*", "*_sys_sync*"])
    parts = [func, cmd]
    if cmd in ("enable_event", "disable_event"):
        arity = rng.choice([0, 1, 2, 2, 2, 3, 3, 4])
        system, event = rng.choice(TARGETS if rng.random() < 0.8 else BAD_TARGETS)
        parts += [system, event, _count_param(rng), "x"][:arity]
    else:
        arity = rng.choice([0, 0, 1, 1, 2])
        parts += [_count_param(rng), "x"][:arity]
    text = ":".join(parts)
    if remove:
        text = "!" + text
    key = (func, cmd) if cmd in PROBE_CMDS else None
    return text, ("del" if remove else "add", key)


def filter_expr(rng, event, depth=0):
    """A random filter on the event's fields, nested up to a few levels."""
    ints, strs = FIELDS[event]
    if depth < 4 and rng.random() < 0.45:
        op = rng.choice(["&&", "||"])
        left = filter_expr(rng, event, depth + 1)
        right = filter_expr(rng, event, depth + 1)
        expr = f"{left} {op} {right}"
        return f"({expr})" if rng.random() < 0.6 else expr
    if rng.random() < 0.6:
        return f"{rng.choice(ints)} {rng.choice(['==', '!=', '<', '<=', '>', '>=', '&'])} " \
               f"{rng.randrange(0, 100000)}"
    return f"{rng.choice(strs)} {rng.choice(['==', '!=', '~'])} \"{rng.choice(['sh', 'k*', '*d', 'x'])}\""


def bad_filter(rng, event):
    ints, strs = FIELDS[event]
    return rng.choice([
        "no_such_field == 1", f"{ints[0]} ==", f"{ints[0]} == 1 &&", f"({ints[0]} == 1",
        f"{ints[0]} == 1)", f"{strs[0]} > \"a\"", f"{ints[0]} ~ \"x\"", f"{ints[0]} == abc",
        f"{strs[0]} == \"unterminated", "&& ||", "()", "!", f"!({ints[0]} == 1)",
        f"{ints[0]} === 1", f"{ints[0]} == 99999999999999999999999", "1", "0",
    ])


def deep_filter(rng, event, depth):
    """depth levels of parentheses around one predicate, balanced or not."""
    ints, _strs = FIELDS[event]
    inner = f"{ints[0]} > 0"
    if rng.random() < 0.5:
        return "(" * depth + inner + ")" * depth
    left, right = rng.randrange(depth + 1), rng.randrange(depth + 1)
    return "(" * left + inner + ")" * right


def chained_filter(rng, event, n):
    ints, _strs = FIELDS[event]
    return " && ".join(f"{ints[i % len(ints)]} != {i}" for i in range(n))


def trigger_text(rng, index, remove=False):
    """An event trigger command for events/.../trigger, every arity, with
    or without an "if" filter; the model's key: (command, target)."""
    event = EVENTS[index][1]
    cmd = rng.choice(TRIGGER_CMDS + ["traceof", "TRACEON", "hist", "", "enable_event"])
    parts = [cmd]
    target = None
    if cmd in ("enable_event", "disable_event"):
        arity = rng.choice([0, 1, 2, 2, 2, 3, 4])
        target = rng.choice(TARGETS if rng.random() < 0.85 else BAD_TARGETS)
        parts += [target[0], target[1], _count_param(rng), "x"][:arity]
        target = ":".join(target) if arity >= 2 else None
    else:
        parts += [_count_param(rng), "x"][:rng.choice([0, 0, 1, 1, 2])]
    text = ":".join(parts)
    r = rng.random()
    if r < 0.25:
        text += " if " + filter_expr(rng, event)
    elif r < 0.35:
        text += " if " + bad_filter(rng, event)
    elif r < 0.38:
        text += rng.choice([" if", " if ", " iff pid > 1", " if pid > 1 if pid > 2", " junk"])
    elif r < 0.42:
        text += " if " + deep_filter(rng, event, rng.choice([8, 64, 300, 1000]))
    if remove:
        text = "!" + text
    key = (cmd, target) if cmd in TRIGGER_CMDS else None
    return text, ("del" if remove else "add", key)


def mutate(rng, data):
    """One random edit of a byte string: flip, delete, duplicate, insert."""
    data = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 3])):
        pos = rng.randrange(len(data) + 1)
        what = rng.randrange(4)
        if what == 0 and pos < len(data):
            data[pos] = rng.randrange(256)
        elif what == 1 and pos < len(data):
            del data[pos]
        elif what == 2:
            data[pos:pos] = data[pos:pos + rng.randrange(1, 8)]
        else:
            data[pos:pos] = bytes([rng.choice(b":!* \t\n\0if()&|=\"\\%x")])
    return bytes(data)


def random_bytes(rng):
    n = rng.choice([1, 2, 8, 33, 64, 200])
    if rng.random() < 0.5:
        return bytes(rng.randrange(256) for _ in range(n))
    alphabet = b"abcdefghijklmnopqrstuvwxyz_:!*?[]^$ \t\n\0.-0123456789&|()=<>~\""
    return bytes(rng.choice(alphabet) for _ in range(n))


def long_line(rng):
    n = rng.choice([255, 256, 1023, 1024, 4095, 4096, 4097, 8192, 20000])
    unit = rng.choice([b"a", b"ksys_sync:traceoff ", b"(", b"*", b"x" * 7 + b":"])
    return (unit * (n // len(unit) + 1))[:n]


def split(rng, data):
    """data cut into 2 to 4 pieces, for a partial write."""
    if len(data) < 2:
        return [data]
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randrange(1, 4))))
    return [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]


def defuse(file, data):
    """Keep a write from reaching a known upstream WARN (module docstring)."""
    if file in ("F", "N"):
        data = re.sub(rb"(^|[\s])!!+", rb"\1!", data)
        data = data.replace(b":mod", b":m0d")
    if file == "C" and data.strip() == b"tai":     # the clock strips the name
        data = data.replace(b"tai", b"taj")
    return data


def structured_op(rng):
    """A write whose meaning the model knows: a probe or trigger command,
    a clock or an option value. One command per write, newline-terminated."""
    r = rng.random()
    if r < 0.40:
        text, model = probe_text(rng, remove=rng.random() < 0.3)
        file = "F" if rng.random() < 0.92 else "N"
        if file == "N":
            model = None    # commands in set_ftrace_notrace are refused
        return Op(file, [text.encode() + b"\n"], "a", model)
    if r < 0.80:
        index = rng.randrange(len(EVENTS))
        text, model = trigger_text(rng, index, remove=rng.random() < 0.3)
        return Op(f"T{index}", [text.encode() + b"\n"], "a", model)
    if r < 0.86:
        name = rng.choice(CLOCKS + ["LOCAL", "[local]", "loca", "localx", ""])
        return Op("C", [name.encode() + b"\n"], rng.choice("at"), ("clock", name))
    if r < 0.93:
        name = rng.choice(OPTIONS)
        value = rng.choice(["0", "1", "1", "0", "2", "", "-1", "yes"])
        return Op("O." + name, [value.encode() + b"\n"], "t", ("option", value))
    index = rng.randrange(len(EVENTS))
    event = EVENTS[index][1]
    choice = rng.random()
    if choice < 0.4:
        text = filter_expr(rng, event)
    elif choice < 0.7:
        text = bad_filter(rng, event)
    elif choice < 0.85:
        text = deep_filter(rng, event, rng.choice([2, 30, 500, 1500]))
    else:
        text = chained_filter(rng, event, rng.choice([10, 50, 100]))
    if rng.random() < 0.3:
        return Op(f"E{index}", [rng.choice(["0", "1", "2", "-1", "", "1 ", "01", "x"]).encode()
                               + b"\n"], "t", None)
    return Op(f"L{index}", [text.encode() + b"\n"], "t", None)


def chaos_op(rng):
    """A write nobody meant: random bytes, a mutated command, NUL bytes in
    a command, a very long line, or a command cut into partial writes."""
    keys = [k for k in files() if not k.startswith("O.")]
    file = rng.choice(["F", "F", "N", "T0", "T1", "T2", "O." + rng.choice(OPTIONS)] + keys)
    base, _model = (probe_text(rng, rng.random() < 0.3) if file in ("F", "N")
                    else trigger_text(rng, int(file[1]), rng.random() < 0.3) if file[0] == "T"
                    else ("1", None))
    base = base.encode() + b"\n"
    r = rng.random()
    mode = "a"
    if r < 0.25:
        data = random_bytes(rng)
    elif r < 0.55:
        data = mutate(rng, base)
    elif r < 0.65:
        pos = rng.randrange(len(base))
        data = base[:pos] + b"\0" + base[pos:]
    elif r < 0.75:
        data = long_line(rng)
    else:
        data = base
    pieces = [defuse(file, data)]
    if r >= 0.75 or rng.random() < 0.1:
        pieces, mode = split(rng, pieces[0]), "p"
        # the pieces are defused together: the parser joins them
        pieces = [p for p in pieces]
    elif rng.random() < 0.2:
        mode = "t"
    return Op(file, [p for p in pieces if p] or [b"\n"], mode, None)


def generate(seed, count=10000, round_size=100, chaos_share=0.5):
    """count writes in rounds of round_size: structured rounds (every
    write modelled) and chaos rounds alternate. Same seed, same writes."""
    rng = random.Random(seed)
    rounds = []
    n = 0
    while n < count:
        size = min(round_size, count - n)
        chaos = rng.random() < chaos_share
        ops = [chaos_op(rng) if chaos else structured_op(rng) for _ in range(size)]
        rounds.append(("chaos" if chaos else "structured", ops))
        n += size
    return rounds


# --- the file the guest reads ------------------------------------------------

def shell_escape(data):
    """Bytes as an argument of busybox "echo -ne": printable ASCII as is,
    a backslash doubled, everything else (and spaces, and a leading "-")
    as \\0NNN, so that a line holds no whitespace."""
    out = []
    for i, b in enumerate(data):
        if b == 0x5C:
            out.append("\\\\")
        elif 0x21 <= b <= 0x7E and not (i == 0 and b == 0x2D):
            out.append(chr(b))
        else:
            out.append("\\0%03o" % b)
    return "".join(out)


def shell_unescape(text):
    """The bytes busybox "echo -ne" writes for shell_escape's output."""
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "\\" and text[i + 1] == "\\":
            out.append(0x5C)
            i += 2
        elif text[i] == "\\" and text[i + 1] == "0":
            out.append(int(text[i + 2:i + 5], 8))
            i += 5
        else:
            out.append(ord(text[i]))
            i += 1
    return bytes(out)


def encode(rounds, seed):
    """The ops file (labs/robustness/hostile.sh reads it): "S SEED COUNT",
    "P INDEX PATH" per file, then per round "R N KIND", "W INDEX MODE
    PIECE [PIECE...]" per write, and "E N"."""
    index = {key: i for i, key in enumerate(files())}
    lines = [f"S {seed} {sum(len(ops) for _kind, ops in rounds)}"]
    lines += [f"P {index[key]} {path}" for key, path in files().items()]
    for n, (kind, ops) in enumerate(rounds):
        lines.append(f"R {n} {kind}")
        for op in ops:
            lines.append(f"W {index[op.file]} {op.mode} "
                         + " ".join(shell_escape(p) for p in op.pieces))
        lines.append(f"E {n}")
    return "\n".join(lines) + "\n"


# --- what the guest printed --------------------------------------------------

# Verdict characters: "." for a write that succeeded, else one per errno
# text (busybox: "sh: write error: Invalid argument", or "can't create").
VERDICTS = {"Invalid argument": "I", "No such device": "D", "Device or resource busy": "B",
            "No such file or directory": "F", "File exists": "X", "No space left on device": "S",
            "Cannot allocate memory": "M", "Operation not permitted": "P",
            "Permission denied": "A", "Bad address": "U", "Argument list too long": "L",
            "Numerical result out of range": "R", "No such process": "H",
            "Resource temporarily unavailable": "G", "Too many open files": "T",
            "nonexistent directory": "Z"}


def verdict_char(error_text):
    """The verdict character of busybox's error message for a write."""
    if not error_text:
        return "."
    return VERDICTS.get(error_text.rsplit(": ", 1)[-1].strip(), "?")


class Round:
    def __init__(self, number, kind):
        self.number, self.kind = number, kind
        self.verdicts = ""
        self.listings = {}      # name -> [lines]


class Result:
    def __init__(self):
        self.seed = None
        self.count = None
        self.rounds = []
        self.clean = {}         # name -> [lines], after removing everything
        self.others = []        # unmapped error texts
        self.finished = False
        self.seconds = None


_LINE = re.compile(r"^@@ftlab (hostile-\S+)\s*(.*)$")


def parse(lines):
    """A Result from the console lines of a guest that ran hostile.sh.

    @@ftlab hostile-begin SEED COUNT
    @@ftlab hostile-round N KIND VERDICTS
    @@ftlab hostile-list NAME        (then the listing's lines)
    @@ftlab hostile-other N TEXT     (an error text with no verdict char)
    @@ftlab hostile-clean            (listings after removing everything)
    @@ftlab hostile-end SECONDS"""
    res = Result()
    target, current = None, None
    for raw in lines:
        line = raw.rstrip()
        m = _LINE.match(line.strip())
        if not m:
            if target is not None and not line.startswith("@@ftlab"):
                target.append(line)
            continue
        word, rest = m.group(1), m.group(2)
        args = rest.split()
        target = None
        if word == "hostile-begin":
            res.seed, res.count = int(args[0]), int(args[1])
        elif word == "hostile-round":
            current = Round(int(args[0]), args[1])
            current.verdicts = args[2] if len(args) > 2 else ""
            res.rounds.append(current)
        elif word == "hostile-list":
            where = res.clean if current is None else current.listings
            target = where.setdefault(args[0], [])
        elif word == "hostile-files":
            target = []
            (res.clean if current is None else current.listings)["\0files"] = target
        elif word == "hostile-clean":
            current = None
        elif word == "hostile-other":
            res.others.append(rest)
        elif word == "hostile-end":
            res.finished = True
            res.seconds = int(args[0]) if args else None
    for where in [r.listings for r in res.rounds] + [res.clean]:
        for line in where.pop("\0files", []):
            path, _sep, text = line.partition(":")
            where.setdefault(path, []).append(text)
    return res


# --- the model ---------------------------------------------------------------

def probe_keys(listing):
    """{(function, command)} of the probe lines of set_ftrace_filter."""
    keys = set()
    for line in listing:
        parts = line.split(":")
        if len(parts) >= 3 and parts[1] in PROBE_CMDS:
            keys.add((parts[0], parts[1]))
    return keys


def trigger_keys(listing):
    """{(command, target)} of a trigger file's entries. A filter keeps a
    newline written inside it, so an entry with a filter may go on over
    the next lines of the listing: a line after it that does not start
    with a command is more of that filter, not an entry."""
    keys = set()
    in_filter = False
    for line in listing:
        if line.startswith("#") or not line.strip():
            continue
        body = line.split(" if ", 1)[0]
        parts = body.split(":")
        if in_filter and parts[0] not in TRIGGER_CMDS:
            continue
        in_filter = " if " in line
        target = ":".join(parts[1:3]) if parts[0] in ("enable_event", "disable_event") else None
        keys.add((parts[0], target))
    return keys


def _same_slot(a, b):
    """Can removing entries of key a remove an entry of key b?"""
    if len(a) == 3:                                 # a probe: (glob, command, "probe")
        glob = a[0] if a[0] not in ("", "*") else "*"
        return fnmatch.fnmatchcase(b[0], glob) and a[1] == b[1]
    return (FAMILY.get(a[0], a[0]) == FAMILY.get(b[0], b[0])
            and (a[1] == b[1] or FAMILY.get(a[0]) != "event"))


# The kernel's isspace(): tab to carriage return, space, and 0xa0
# (lib/ctype.c). Its tracefs parser (trace_get_user) ends a token at
# white space and at a NUL byte alike.
KSPACE = " \t\n\v\f\r\xa0"
_SEPARATORS = re.compile(rb"[\t\n\v\f\r \xa0\0]")


# A probe whose function starts with a digit selects a function by its
# number in available_filter_functions (6.1: filter_parse_regex() says
# MATCH_INDEX, add_rec_by_index() reads the leading digits with
# simple_strtoul(), so "9_x64_sys_syncfs" is function 9). The host does
# not know which function that is: such a probe is keyed BY_INDEX, and
# any function listed with its command is what it added.
BY_INDEX = "<by index>"


def probe_commands(data):
    """[(what, key, complete)] of the probe commands a write to
    set_ftrace_filter makes: the kernel's parser splits it into tokens at
    white space and NUL bytes, and a last token with no separator after
    it is processed when the file is closed, its error unseen."""
    out = []
    tokens = _SEPARATORS.split(data)
    for i, raw in enumerate(tokens):
        token = raw.decode("latin-1")
        parts = token.split(":")
        if len(parts) < 2 or parts[1] not in PROBE_CMDS:
            continue
        remove = parts[0].startswith("!")
        func = parts[0][1:] if remove else parts[0]
        if func[:1].isdigit() and not remove:
            func = BY_INDEX
        out.append(("del" if remove else "add", (func, parts[1]) if not remove
                    else (func, parts[1], "probe"), i < len(tokens) - 1))
    return out


def trigger_command(data):
    """(what, key) of the trigger command a write(2) to a trigger file
    makes (the whole buffer is one command), or None."""
    text = data.split(b"\0", 1)[0].decode("latin-1").strip(KSPACE)
    remove = text.startswith("!")
    if remove:
        text = text[1:]
    head = re.split(r"[ \t]", text, 1)[0]
    parts = head.split(":")
    if parts[0] not in TRIGGER_CMDS:
        return None
    target = ":".join(parts[1:3]) if parts[0] in ("enable_event", "disable_event") else None
    return ("del" if remove else "add", (parts[0], target))


def commands(op, verdict):
    """[(what, key, status)] of a write to set_ftrace_filter or a trigger
    file; status "done", "failed" or "unknown": what the write's verdict
    tells about this command. A refused write of several commands may
    have failed at any of them, those before it taking effect."""
    if op.file == "F":
        cmds = probe_commands(op.data)
        tokens = [t for t in _SEPARATORS.split(op.data) if t]
        single = len(tokens) == 1 and len(cmds) == 1 and cmds[0][2]
        out = []
        for what, key, complete in cmds:
            if verdict == ".":
                status = "done" if complete else "unknown"
            else:
                status = "failed" if single else "unknown"
            out.append((what, key, status))
        return out
    if op.file.startswith("T"):
        cmds = [trigger_command(p) for p in op.pieces]
        if verdict == ".":
            status = "done"
        else:
            status = "failed" if len(op.pieces) == 1 else "unknown"
        return [(c[0], c[1], status) for c in cmds if c]
    return []


def expect_keys(before, ops, verdicts):
    """(must, may): the keys that must be listed after ops, and those that
    may be. A command that took effect: its addition is listed, its
    removal may have removed every entry in its slot. A command that
    failed changes nothing: no half-registered probe or trigger."""
    must, may = set(before), set(before)
    for op, v in zip(ops, verdicts):
        for what, key, status in commands(op, v):
            if status == "failed":
                continue
            if what == "add":
                if status == "done":
                    must.add(key)
                may.add(key)
            else:
                must -= {k for k in may if _same_slot(key, k)}
    return must, may


def check_round(prev, rnd, ops):
    """Problems of one round, by the model."""
    problems = []
    if prev is None:
        return problems
    if len(rnd.verdicts) != len(ops):
        return [f"round {rnd.number}: {len(rnd.verdicts)} verdicts for {len(ops)} writes"]
    tables = [("F", "set_ftrace_filter", probe_keys)]
    tables += [(f"T{i}", files()[f"T{i}"], trigger_keys) for i in range(len(EVENTS))]
    for key, name, keys_of in tables:
        mine = [(op, v) for op, v in zip(ops, rnd.verdicts) if op.file == key]
        must, may = expect_keys(keys_of(prev.listings.get(name, [])),
                                [o for o, _ in mine], [v for _, v in mine])
        got = keys_of(rnd.listings.get(name, []))
        missing = {k for k in must - got if k[0] != BY_INDEX}
        extra = {k for k in got - may if (BY_INDEX, k[1]) not in may}
        if missing or extra:
            problems.append(f"round {rnd.number}: {name}: accepted but not listed: "
                            f"{sorted(map(str, missing))}; listed but never accepted: "
                            f"{sorted(map(str, extra))}")
    # the clock and the options read what the last accepted write set
    last = {}
    for op, v in zip(ops, rnd.verdicts):
        if v == "." and op.model and op.model[0] in ("clock", "option"):
            last[op.file] = op.model[1].strip()
    for key, value in last.items():
        name = files()[key]
        listing = rnd.listings.get(name)
        if listing is None:
            problems.append(f"round {rnd.number}: {name} not listed")
        elif key == "C" and f"[{value}]" not in " ".join(listing).split():
            problems.append(f"round {rnd.number}: trace_clock reads {listing}, "
                            f"the last accepted write was {value!r}")
        elif key != "C" and value in ("0", "1") and listing != [value]:
            problems.append(f"round {rnd.number}: {name} reads {listing}, "
                            f"the last accepted write was {value!r}")
    return problems


def check_clean(res, options_before=None):
    """Problems of the state after removing everything."""
    problems = []
    clean = res.clean
    for name, lines in clean.items():
        body = [l for l in lines if l.strip() and not l.startswith("#")]
        if name == "enabled_functions" and body:
            problems.append(f"enabled_functions is not empty: {body[:5]}")
        elif name.endswith("/trigger") and body:
            problems.append(f"{name} still lists {body[:5]}")
        elif name == "set_ftrace_filter" and body:
            problems.append(f"set_ftrace_filter still lists {body[:5]}")
        elif name == "soft-mode" and body:
            problems.append(f"events in soft mode: {body[:10]}")
        elif name == "options-changed" and body:
            problems.append(f"options not back to their values: {body[:10]}")
    for required in ("enabled_functions", "set_ftrace_filter", "soft-mode"):
        if required not in clean:
            problems.append(f"the clean state has no '{required}' listing")
    return problems


def check_run(rounds, res):
    """Every problem the model and the clean state find in one run."""
    problems = []
    if not res.finished:
        problems.append("the guest did not finish the hostile-input test")
    if len(res.rounds) != len(rounds):
        problems.append(f"{len(res.rounds)} rounds reported, {len(rounds)} generated")
    prev = None
    for rnd, (kind, ops) in zip(res.rounds, rounds):
        problems += check_round(prev, rnd, ops)
        prev = rnd
    problems += check_clean(res)
    return problems


def counts(rounds, res):
    """{what: number} for the report line."""
    ops = [op for _kind, round_ops in rounds for op in round_ops]
    verdicts = "".join(r.verdicts for r in res.rounds)
    return {"writes": len(ops),
            "write calls": sum(len(op.pieces) for op in ops),
            "bytes": sum(len(op.data) for op in ops),
            "accepted": verdicts.count("."),
            "refused": len(verdicts) - verdicts.count("."),
            "structured rounds": sum(1 for k, _ in rounds if k == "structured"),
            "chaos rounds": sum(1 for k, _ in rounds if k == "chaos")}


def compare(rounds, ref, res, ref_name, name):
    """Differences between two kernels' runs of the same writes: verdicts
    per write, and listings per round."""
    diffs = []
    for a, b, (kind, ops) in zip(ref.rounds, res.rounds, rounds):
        for i, (va, vb) in enumerate(zip(a.verdicts, b.verdicts)):
            if va != vb:
                op = ops[i]
                diffs.append(f"round {a.number} write {i} to {files()[op.file]} "
                             f"{op.data[:80]!r}: {ref_name} {va}, {name} {vb}")
        tug = tugged_events(a.listings) | tugged_events(b.listings)
        for listing in sorted(set(a.listings) | set(b.listings)):
            la = normalise(a.listings.get(listing, []), listing, tug)
            lb = normalise(b.listings.get(listing, []), listing, tug)
            if _LONG.match(" ".join(la)) and _LONG.match(" ".join(lb)):
                continue        # hundreds of functions on both: each kernel has its own
            if la != lb:
                diffs.append(f"round {a.number} {listing}: {ref_name} {la[:6]}, {name} {lb[:6]}")
    return diffs


_COUNT = re.compile(r"count=-?\d+")
_LONG = re.compile(r"^\(\d+ lines\)$")


_INVALID = re.compile(r"__ftrace_invalid_address___\d+")


_FORK_EVENT = "events/sched/sched_process_fork/"


def _fires(text):
    """Does a set_ftrace_filter line or a file name stand for something
    that fires during the test: a probe on the hot function, or a file of
    the event every fork hits? Where the entry sits decides, not what it
    names: ksys_sync:enable_event:sched:sched_process_fork never fires."""
    return text.split(":", 1)[0] in HOT or text.startswith(_FORK_EVENT)


_SOFT_BIT = re.compile(r"^[01](?=\*)")
_SWITCH = re.compile(r"(?:^|:)(enable_event|disable_event):([^:\s]+):([^:\s]+)(?::(\S+))?")


def tugged_events(listings):
    """{"system/event"} of the events that, in this round's listings, both a
    firing enable_event and a firing disable_event target (a probe on the
    hot function, a trigger on the fork event; a count of 0 fires no more).
    Such an event is switched on and off all the time on both CPUs, so
    whether its enable file reads 1* or 0* depends on when the read comes:
    upstream read 0* once in nine rounds with schedule:enable_event and
    schedule:disable_event on sched_kthread_stop, 1* the other eight."""
    fired = {"enable_event": set(), "disable_event": set()}
    for name, lines in listings.items():
        for line in lines:
            m = _SWITCH.search(line.split(" if ", 1)[0])
            if not m or m.group(4) == "count=0":
                continue
            if _fires(name) or _fires(line):
                fired[m.group(1)].add(m.group(2) + "/" + m.group(3))
    return fired["enable_event"] & fired["disable_event"]


def normalise(lines, listing="", tugged=frozenset()):
    """A listing without what differs between two runs of the same writes:
    counts of entries on things that fire (they depend on timing: a counted
    traceon trigger on sched_process_fork counts down only on the forks
    that find tracing off), whether the line or the listing's file says
    so; the 1 or 0 of a soft-mode enable file of an event in tugged (see
    tugged_events); and the number ftrace gives a record it could not name
    (its offset in the kernel: __ftrace_invalid_address___195 on one,
    ___163 on another)."""
    timed = _fires(listing)
    event = listing[len("events/"):-len("/enable")] if listing.endswith("/enable") else None
    if event in tugged:
        lines = [_SOFT_BIT.sub("?", l) for l in lines]
    return sorted(_INVALID.sub("__ftrace_invalid_address___N",
                               _COUNT.sub("count=N", l) if timed or _fires(l) else l)
                  for l in lines)
