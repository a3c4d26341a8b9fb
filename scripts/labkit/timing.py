"""Where a guest run spent its time, from its console log with times
(qemu.times_path: each line "SECONDS TEXT", seconds since QEMU started).

The spans are those the guest marks: each lab (lab-begin .. lab-end) and
each of its checks, each ftracetest run and each test in it (from the
result line before to its own), each other plan item; "boot" is QEMU's
start to the guest's first @@ftlab line, "end" the last marker to QEMU's
last line (the kernel log, kmemleak's scan, power off).

And where make check spent its time (Parts): each part's seconds, how
busy the machine's cores were (cpu_times, from /proc/stat), and its
longest guest runs."""

import os
import re

from . import protocol, ui

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


def cpu_times():
    """(busy, all) jiffies of the machine's cores so far, from /proc/stat;
    None where there is no /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)     # idle, iowait
    total = sum(fields[:8])     # guest time is counted in user time already
    return total - idle, total


def busy_share(start, end):
    """The share of the cores' time spent working between two cpu_times()
    readings, in percent; None if either is missing."""
    if not start or not end or end[1] <= start[1]:
        return None
    return round(100 * (end[0] - start[0]) / (end[1] - start[1]))


class Parts:
    """How long each part of make check took, printed at its end. The
    tally's verdicts are grouped by the part that recorded them."""

    def __init__(self, tally=None):
        self.times = []
        self.tally = tally
        self.cpu = cpu_times()

    def time(self, name, fn, *args, **kwargs):
        if self.tally is not None:
            self.tally.group = name
        timer = ui.Timer()
        result = fn(*args, **kwargs)
        self.times.append((name, timer.seconds))
        return result

    def report(self, total, logs=None, since=None):
        print(f"\nmake check took {total}:")
        width = max((len(name) for name, _s in self.times), default=0)
        for name, seconds in self.times:
            print(f"  {name:<{width}}  {seconds:6.0f} s")
        busy = busy_share(self.cpu, cpu_times())
        if busy is not None:
            # near 100: only less work makes the run shorter; well below:
            # some part waited for another with cores left idle
            print(f"the machine's {os.cpu_count()} cores were busy {busy}% of that time")
        runs = longest_runs(logs, since=since) if logs else []
        if runs:
            print("the longest guest runs (build/logs/NAME.times says where each spent it):")
            for name, seconds in runs:
                print(f"  {name:<{width}}  {seconds:6.0f} s")
