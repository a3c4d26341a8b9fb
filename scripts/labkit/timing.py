"""Where a guest run spent its time, from its console log with times
(qemu.times_path: each line "SECONDS TEXT", seconds since QEMU started).

The spans are those the guest marks: each lab (lab-begin .. lab-end) and
each of its checks, each ftracetest run and each test in it (from the
result line before to its own), each other plan item; "boot" is QEMU's
start to the guest's first @@ftlab line, "end" the last marker to QEMU's
last line (the kernel log, kmemleak's scan, power off)."""

import os
import re

from . import protocol

_MARK = re.compile(r"^\s*(\d+\.\d+) @@ftlab (\S+)\s*(.*)$")
_LINE = re.compile(r"^\s*(\d+\.\d+) ")

# begin word -> (end word, label of the span)
SPANS = {"lab-begin": ("lab-end", "lab {0}"),
         "check-begin": ("check-end", "  check {0} {1}"),
         "ftracetest-begin": ("ftracetest-end", "ftracetest {0}")}


def spans(lines):
    """[(label, seconds)] in the order the spans began."""
    out, open_spans = [], {}
    first = last_mark = last = None
    cases, case_start = {}, None    # the ftracetest run's cases, and when the current one began
    for line in lines:
        m = _LINE.match(line)
        if not m:
            continue
        last = float(m.group(1))
        mark = _MARK.match(line)
        if not mark:
            result = protocol.ft_result(line[m.end():]) if case_start is not None else None
            if result:
                out.append((f"  ftracetest {cases.get(result[0], result[0])}", last - case_start))
                case_start = last
            continue
        t, word, args = float(mark.group(1)), mark.group(2), mark.group(3).split()
        if first is None:
            first = t
            out.append(("boot", t))
        last_mark = t
        if word == "ftracetest-case":
            cases[int(args[0])] = args[1]
        elif word == "ftracetest-begin":
            case_start = t
        elif word == "ftracetest-end":
            cases, case_start = {}, None
        if word in SPANS:
            end, label = SPANS[word]
            open_spans[end] = (len(out), t)
            out.append((label.format(*(args + ["", ""])).rstrip(), None))
        elif word in open_spans:
            index, start = open_spans.pop(word)
            out[index] = (out[index][0], t - start)
    if last_mark is not None and last is not None:
        out.append(("end", last - last_mark))
    return [(label, s) for label, s in out if s is not None]


def read(path):
    with open(path, errors="replace") as f:
        return spans(f)


def run_seconds(path):
    """How long a guest run lasted: the time of its last console line."""
    last = None
    with open(path, errors="replace") as f:
        for line in f:
            m = _LINE.match(line)
            if m:
                last = float(m.group(1))
    return last


def longest_runs(logs_dir, n=6, since=None):
    """[(run name, seconds)]: the n longest guest runs whose times are in
    logs_dir, written at or after 'since' (a time.time(); make check
    passes its start, so runs of earlier commands stay out)."""
    runs = []
    for name in sorted(os.listdir(logs_dir)) if os.path.isdir(logs_dir) else []:
        path = os.path.join(logs_dir, name)
        if name.endswith(".times") and (since is None or os.path.getmtime(path) >= since):
            seconds = run_seconds(path)
            if seconds is not None:
                runs.append((name[:-len(".times")], seconds))
    return sorted(runs, key=lambda r: -r[1])[:n]
