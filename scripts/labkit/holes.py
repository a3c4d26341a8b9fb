"""Exercises: which function bodies of a checkpoint a learner writes, and
the skeleton that leaves them out.

exercises/NN-slug/holes declares the holes of checkpoint NN, one block
each, blocks separated by blank lines, "#" lines being comments:

    hole 1: the probe filter hash
    file: kernel/trace/ftrace.c
    function: probe_hash_add_matches
    from: /* Collect the matching functions. */
    to: /* Publish the new hash. */
    stub: return -ENOSYS;
    checks: glob-probe unrelated-probe
    points: 2
    goal: what the code must achieve: its contract (what holds after
      it returns, the locks held on entry, who may run beside it, the
      errno of each bad input); one or more lines, continued with
      indentation.
    hint 1: the helpers to use.
    hint 2: the order of the steps, and why.
    hint 3: the recipe.

A hole is found by its function's name in the checkpoint's code, never
by a line number, so that a rebased series keeps its exercises. Without
from/to the whole body is the hole; with them, only the lines strictly
between those two lines of the body. The skeleton puts a
"TODO(lab N.K)" comment there, and a stub: the given one, or for a whole
body one derived from the return type.

The goal is all that the TODO comment, "make exercise"'s list and the
handout show; the hints are levels the learner asks for one at a time
("make hint N.K", exercise.hint), numbered from 1, each telling more.

"also:" names other functions of the same file whose bodies go with the
hole (whole bodies, each with its default stub and a TODO comment that
points to the hole's function): a function the skeleton would otherwise
keep whose body is almost the hole's answer (a twin), so that the
learner writes both.

Filling a hole is the same lookup run on two texts: the lines of the
hole in the reference replace those of the skeleton. That is how TODO=k
pre-fills the holes before k, and how make check proves that the
skeleton differs from the checkpoint in its holes and nowhere else.
"""

import os
import re
import textwrap

from . import series
from .errors import HarnessError

EXERCISES = os.path.join(series.ROOT, "exercises")
FIELDS = ("file", "function", "also", "from", "to", "stub", "checks", "points", "goal")
REQUIRED = ("file", "function", "goal")
# "hint 1:", "hint 2:" ...: the levels of help after the goal
HINT = re.compile(r"^hint (\d+)$")


class HolesError(HarnessError):
    """A holes file the harness cannot use, or a hole not found in the code."""


class Hole:
    def __init__(self, number, title, fields, where=""):
        self.number = number            # K of TODO(lab N.K): the order
        self.title = title
        self.file = fields["file"]
        self.function = fields["function"]
        self.start_marker = fields.get("from")
        self.end_marker = fields.get("to")
        self.stub = fields.get("stub")
        self.checks = fields.get("checks", "").split()
        self.points = fields.get("points")
        self.goal = fields["goal"]      # level 0: the TODO comment shows it
        self.hints = [fields[f"hint {n}"] for n in range(1, len(self.levels(fields)) + 1)]
        self.also = fields.get("also", "").split()
        self.where = where              # "holes:12", for messages

    @staticmethod
    def levels(fields):
        return sorted(int(HINT.match(k).group(1)) for k in fields if HINT.match(k))

    def functions(self):
        """The functions whose bodies make the hole: its own, then its twins."""
        return [self.function] + self.also

    def __repr__(self):
        return f"Hole({self.number}, {self.function!r})"


def exercise_dir(cp):
    return os.path.join(EXERCISES, cp.name)


def holes_path(cp):
    return os.path.join(exercise_dir(cp), "holes")


def has_exercise(cp):
    return os.path.isfile(holes_path(cp))


def _blocks(text):
    """The blocks of a holes file: [(first line number, [(n, line)])],
    comments dropped."""
    blocks, current = [], []
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        if not line.strip():
            if current:
                blocks.append(current)
            current = []
            continue
        current.append((n, line.rstrip()))
    if current:
        blocks.append(current)
    return blocks


def _parse_block(block, name):
    """One hole from its lines; a continuation line (indented) adds to the
    field before it."""
    n0, head = block[0]
    m = re.match(r"^hole\s+(\d+):\s*(.+)$", head)
    if not m:
        raise HolesError(f"{name}:{n0}: a hole starts with 'hole K: title', not '{head}'")
    fields, last = {}, None
    for n, line in block[1:]:
        if line[0].isspace():
            if last is None:
                raise HolesError(f"{name}:{n}: a continuation line with no field before it")
            fields[last] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if sep and key.strip() == "hint":
            raise HolesError(f"{name}:{n}: 'hint:' is no field: a hole has a 'goal:' (what "
                             "its TODO comment says) and levels 'hint 1:', 'hint 2:' ...")
        if not sep or (key.strip() not in FIELDS and not HINT.match(key.strip())):
            raise HolesError(f"{name}:{n}: '{line}' is not one of the fields "
                             f"{', '.join(FIELDS)}, hint 1, hint 2 ...")
        last = key.strip()
        if last in fields:
            raise HolesError(f"{name}:{n}: '{last}' given twice")
        fields[last] = value.strip()
    missing = [f for f in REQUIRED if not fields.get(f)]
    if missing:
        raise HolesError(f"{name}:{n0}: hole {m.group(1)} has no {', '.join(missing)}")
    if ("from" in fields) != ("to" in fields):
        raise HolesError(f"{name}:{n0}: hole {m.group(1)}: 'from' and 'to' go together")
    levels = Hole.levels(fields)
    if levels != list(range(1, len(levels) + 1)) or not levels:
        raise HolesError(f"{name}:{n0}: hole {m.group(1)}: its hints are levels 'hint 1:', "
                         f"'hint 2:' ... from 1 without a gap (it has "
                         f"{', '.join(str(x) for x in levels) or 'none'})")
    if fields["function"] in fields.get("also", "").split():
        raise HolesError(f"{name}:{n0}: hole {m.group(1)}: 'also' names its own function")
    return Hole(int(m.group(1)), m.group(2).strip(), fields, f"{name}:{n0}")


def parse(text, name="holes"):
    """The holes of a holes file, in order; they must be numbered 1, 2, ..."""
    holes = [_parse_block(b, name) for b in _blocks(text)]
    for i, hole in enumerate(holes, 1):
        if hole.number != i:
            raise HolesError(f"{hole.where}: hole {hole.number} where hole {i} should be: "
                             "holes are numbered 1, 2, 3 ... in order")
    return holes


def read_data(path, error, missing):
    """(text, path from the repository's top) of a data file of an
    exercise (holes, mutants); error(f"{missing} (PATH does not exist)")
    when there is none."""
    name = os.path.relpath(path, series.ROOT)
    if not os.path.isfile(path):
        raise error(f"{missing} ({name} does not exist)")
    with open(path, encoding="utf-8") as f:
        return f.read(), name


def load(cp):
    """Checkpoint cp's holes; HolesError when it has no exercise."""
    text, name = read_data(holes_path(cp), HolesError,
                           f"checkpoint {cp.number} has no exercise yet")
    return parse(text, name)


# --- finding a hole in C code ---------------------------------------------------


def _signature(lines, i, name):
    """Does a function definition 'name' start at line i? Kernel style: the
    name at the start of the line or after its return type, the
    parameters up to a line that is a lone "{". Returns the index of
    that "{" or None (a prototype, a call, a one-line inline)."""
    if not re.match(r"^(?:[A-Za-z_].*?[\s*])?" + re.escape(name) + r"\s*\(", lines[i]):
        return None
    for j in range(i, min(i + 12, len(lines))):
        text = lines[j].rstrip()
        if text == "{":
            return j
        if text.endswith((";", "}")) or ("{" in text):
            return None
    return None


def find_function(lines, name, where="the file"):
    """(index of the signature's first line, of its "{", of its "}") of
    the one definition of 'name' in lines (a list of lines)."""
    found = []
    for i, line in enumerate(lines):
        if line[:1].isspace() or line.startswith(("#", "}", "/", " *")):
            continue
        brace = _signature(lines, i, name)
        if brace is not None:
            found.append((i, brace))
    if not found:
        raise HolesError(f"no definition of {name}() in {where}")
    if len(found) > 1:
        raise HolesError(f"{name}() is defined {len(found)} times in {where} "
                         f"(lines {', '.join(str(i + 1) for i, _b in found)}): a hole "
                         "needs a function defined once")
    start, brace = found[0]
    for k in range(brace + 1, len(lines)):
        if lines[k].rstrip() == "}":
            return start, brace, k
    raise HolesError(f"{name}() in {where} has no closing '}}' at the start of a line")


def _marker_line(lines, lo, hi, marker, hole):
    hits = [k for k in range(lo, hi) if lines[k].strip() == marker.strip()]
    if len(hits) != 1:
        how = "not found" if not hits else f"found {len(hits)} times"
        raise HolesError(f"{hole.where}: '{marker}' {how} in the body of {hole.function}()")
    return hits[0]


def span(lines, hole):
    """[first, end) indexes of the lines that make the hole in lines: the
    function's body, or the lines strictly between its from/to lines."""
    _start, brace, close = find_function(lines, hole.function, hole.file)
    if hole.start_marker is None:
        return brace + 1, close
    first = _marker_line(lines, brace + 1, close, hole.start_marker, hole)
    last = _marker_line(lines, first + 1, close, hole.end_marker, hole)
    return first + 1, last


def return_type(lines, hole, function=None):
    """The words before the function's name (the hole's, or one of its
    twins) in its definition (the line before, when the name starts its
    line)."""
    function = function or hole.function
    start, _brace, _close = find_function(lines, function, hole.file)
    before = lines[start].split(function + "(")[0].split(function + " (")[0]
    if not before.strip() and start > 0:
        before = lines[start - 1]
    return before.strip()


def default_stub(rtype):
    """What a whole-body hole returns: nothing for void, NULL for a
    pointer, false for bool, -ENOSYS for the int-like types that carry
    errors, else 0."""
    words = [w for w in re.split(r"\s+", rtype.replace("*", " * ")) if w]
    if rtype.endswith("*"):
        return "return NULL;"
    if "void" in words:
        return None
    if "bool" in words:
        return "return false;"
    if words and words[-1] in ("int", "long", "ssize_t"):
        return "return -ENOSYS;"
    return "return 0;"


def todo_tag(number, hole):
    return f"TODO(lab {number}.{hole.number})"


def todo_text(number, hole, function=None):
    """What a hole's TODO comment says: its goal, or in the body of one of
    its twins (function), where the goal is."""
    if function and function != hole.function:
        return (f"{todo_tag(number, hole)} too: {hole.title}. This body is part of the "
                f"hole: its goal is in {hole.function}().")
    return f"{todo_tag(number, hole)}: {hole.title}. {hole.goal}"


def todo_lines(number, hole, indent, stub, function=None):
    """The comment (and stub) that stand for a hole, or for the body of
    one of its twins (function): a kernel-style block comment, wrapped to
    80 columns."""
    width = 80 - len(indent.expandtabs(8)) - 3
    text = todo_text(number, hole, function)
    body = textwrap.wrap(text, width=width, break_on_hyphens=False)
    out = [indent + "/*"] + [indent + " * " + w for w in body] + [indent + " */"]
    if stub:
        out.append(indent + stub)
    return out


def _indent_of(lines, first, end):
    """The indentation of a hole's lines (of the first non-blank one)."""
    for line in lines[first:end]:
        if line.strip():
            return line[:len(line) - len(line.lstrip())]
    return "\t"


def twin_span(lines, hole, function):
    """[first, end) of the body of one of a hole's twins."""
    _start, brace, close = find_function(lines, function, hole.file)
    return brace + 1, close


def punch(text, number, holes):
    """The text of a file with holes (all of one file) left out, their
    twins' bodies too."""
    lines = text.split("\n")
    for hole in holes:
        first, end = span(lines, hole)
        stub = hole.stub
        if stub is None and hole.start_marker is None:
            stub = default_stub(return_type(lines, hole))
        indent = _indent_of(lines, first, end)
        lines[first:end] = todo_lines(number, hole, indent, stub)
        for twin in hole.also:
            first, end = twin_span(lines, hole, twin)
            lines[first:end] = todo_lines(number, hole, _indent_of(lines, first, end),
                                          default_stub(return_type(lines, hole, twin)), twin)
    return "\n".join(lines)


def fill(text, reference, holes):
    """The text of a skeleton file with holes (and their twins) put back
    from the reference."""
    lines, ref = text.split("\n"), reference.split("\n")
    for hole in holes:
        first, end = span(lines, hole)
        rfirst, rend = span(ref, hole)
        lines[first:end] = ref[rfirst:rend]
        for twin in hole.also:
            first, end = twin_span(lines, hole, twin)
            rfirst, rend = twin_span(ref, hole, twin)
            lines[first:end] = ref[rfirst:rend]
    return "\n".join(lines)


def by_file(holes):
    """{file: [holes in it]} in the holes' order."""
    files = {}
    for hole in holes:
        files.setdefault(hole.file, []).append(hole)
    return files


def skeleton(reference, number, holes, todo=1):
    """{file: skeleton text} of a checkpoint whose files are 'reference'
    ({file: text}): holes K >= todo left out, those before pre-filled
    (their reference lines kept)."""
    out = {}
    for path, in_file in by_file(holes).items():
        named = [f for h in in_file for f in h.functions()]
        twice = sorted({f for f in named if named.count(f) > 1})
        if twice:
            raise HolesError(f"{in_file[0].where}: {path}: {', '.join(twice)} "
                             "in two holes (or twice in one)")
        if path not in reference:
            raise HolesError(f"{in_file[0].where}: {path} is not in checkpoint {number}")
        if not path.startswith("kernel/trace/"):
            raise HolesError(f"{in_file[0].where}: {path}: holes are in kernel/trace only")
        out[path] = punch(reference[path], number, [h for h in in_file if h.number >= todo])
    return out


def with_checks(text, k, checks):
    """A holes file's text with hole k's "checks:" line naming 'checks'
    (scripts/prove-holes.py --write), added before its goal when it has
    none; the rest stays as it is."""
    new = "checks: " + (" ".join(checks) or "-") + "\n"
    out, current, done = [], None, False
    for line in text.splitlines(keepends=True):
        m = re.match(r"^hole (\d+):", line)
        if m:
            current = int(m.group(1))
        if current == k and not done and line.startswith(("checks:", "goal:")):
            done = True
            out.append(new)
            if line.startswith("checks:"):
                continue
        out.append(line)
    return "".join(out)


def todo_sites(text, number, hole):
    """1-based line numbers of a hole's TODO comment in a file's text (the
    one with its goal; its twins' say "TODO(lab N.K) too")."""
    tag = todo_tag(number, hole) + ":"
    return [n for n, line in enumerate(text.split("\n"), 1) if tag in line]
