"""make bench: what each mechanism costs in the guest, and how fast the
lab loop is on this host.

In the guest (bench/guest.sh, with the workload bench/ftbench.c) every
table compares cases measured in one boot; the report gives each case's
median, min and max over the repetitions and its ratio to the table's
first case, measured in the same boot. Under TCG absolute times mean
little, ratios do. On the host it times the commands a learner waits
for and sets each against its target. Nothing here is an assertion: the
numbers go to build/bench/ as text, CSV and SVG plots.
"""

import csv
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

from . import series, timing, ui
from .errors import HarnessError
from .kernels import KernelId

SOURCE = os.path.join(series.ROOT, "bench", "ftbench.c")
GUEST_SCRIPT = os.path.join(series.ROOT, "bench", "guest.sh")
PLAN_ITEM = "bench"

# The kernels measured by default: the checkpoint before and the one that
# brings each mechanism (probe hash: 0 and 1; soft disable via a probe:
# 3; triggers: 6), and upstream for reference.
KERNELS = (KernelId.of(0), KernelId.of(1), KernelId.of(3), KernelId.of(6), KernelId.upstream())

# table: (CSV file, what it measures, the unit of one iteration)
TABLES = {
    "probe": ("probe-cost.csv", "getppid() with no probe, a traceoff probe on a function "
              "it never calls, and the function tracer", "ns per call"),
    "glob": ("glob-cost.csv", "getppid() with no probe, with a traceoff probe on the "
             "functions it runs, and on every function ('*:traceoff'; plain and counted)",
             "ns per call"),
    "event": ("event-cost.csv", "getppid() with its syscall event off, soft disabled "
              "(armed, the handler returns early) and on", "ns per call"),
    "toggle": ("toggle-cost.csv", "switching sched_switch on and off: a write to its "
               "enable file vs a probe flipping the soft-disable bit", "ns per switch"),
    "eventfs": ("eventfs-cost.csv", "reading one event's enable file vs every event's "
                "enable file and every event's trigger file, as a shell glob does "
                "(events/*/*/enable)", "ns per glob"),
    "trigger": ("trigger-cost.csv", "getppid() with no trigger on its event vs a "
                "trigger whose 'if' filter never matches", "ns per call"),
}
CSV_HEADER = ["checkpoint", "case", "median_ns", "min_ns", "max_ns", "ratio"]

# Targets of the lab loop on a 2-core host under TCG (issue 14), seconds.
TARGETS = {"warm-lab": 5, "warm-lab-after-switch": 5, "checkpoint-switch": 90,
           "cold-first-lab": 360, "make-check": 45 * 60}


class BenchError(HarnessError):
    pass


def build_workload(out_dir):
    """Compile bench/ftbench.c, static (the guest has no C library)."""
    os.makedirs(out_dir, exist_ok=True)
    binary = os.path.join(out_dir, "ftbench")
    if (os.path.exists(binary)
            and os.path.getmtime(binary) >= os.path.getmtime(SOURCE)):
        return binary
    cmd = ["gcc", "-static", "-O2", "-Wall", "-o", binary, SOURCE]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise BenchError("cannot build the bench workload:\n" + r.stderr)
    return binary


def parse(lines):
    """{table: {case: [ns, ...]}}, skips {table: reason} and errors
    [text] from the guest's "@@ftlab bench..." lines."""
    samples, skips, errors = {}, {}, []
    for line in lines:
        words = line.split()
        if len(words) < 2 or words[0] != "@@ftlab":
            continue
        if words[1] == "bench" and len(words) == 6:
            _, _, table, case, _rep, ns = words
            try:
                value = int(ns)
            except ValueError:
                errors.append(f"{table} {case}: not a number: {ns}")
                continue
            samples.setdefault(table, {}).setdefault(case, []).append(value)
        elif words[1] == "bench-skip" and len(words) >= 3:
            skips[words[2]] = " ".join(words[3:])
        elif words[1] == "bench-error":
            errors.append(" ".join(words[2:]))
    return samples, skips, errors


def summarise(cases):
    """Rows (case, median, min, max, ratio) of one table of one boot; the
    ratio is to the median of the table's first case."""
    rows = []
    base = None
    for case, values in cases.items():
        median = statistics.median(values)
        if base is None:
            base = median or 1
        rows.append((case, median, min(values), max(values), median / base))
    return rows


def write_tables(out_dir, results):
    """results: {kernel name: {table: rows}} -> the CSV files, one per
    table, and report.txt. Returns the report's lines."""
    report = []
    for table, (csv_name, what, unit) in TABLES.items():
        kernels = [k for k in results if table in results[k]]
        if not kernels:
            continue
        with open(os.path.join(out_dir, csv_name), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(CSV_HEADER)
            for k in kernels:
                for case, median, lo, hi, ratio in results[k][table]:
                    w.writerow([k, case, f"{median:.0f}", lo, hi, f"{ratio:.4g}"])
        report += ["", f"{table}: {what} ({unit}; ratio to the first case, same boot)",
                   f"  {'kernel':<9} {'case':<16} {'median':>10} {'min':>10} {'max':>10} {'ratio':>7}"]
        for k in kernels:
            for case, median, lo, hi, ratio in results[k][table]:
                report.append(f"  {k:<9} {case:<16} {median:>10.0f} {lo:>10} {hi:>10} {ratio:>7.3g}")
    return report


def plot(out_dir, table):
    """An SVG bar chart of one table's ratios, drawn by gnuplot."""
    csv_name = TABLES[table][0]
    data = os.path.join(out_dir, csv_name)
    svg = os.path.join(out_dir, csv_name.replace(".csv", ".svg"))
    with open(data, newline="") as f:
        rows = list(csv.DictReader(f))
    dat = os.path.join(out_dir, f"{table}.dat")
    with open(dat, "w") as f:
        for i, row in enumerate(rows):
            f.write(f'{i} "{row["checkpoint"]} {row["case"]}" {row["ratio"]}\n')
    script = (f'set terminal svg size 800,400 dynamic\nset output "{svg}"\n'
              f'set title "{table}: ratio to the first case, same boot"\n'
              'set style fill solid 0.6\nset boxwidth 0.7\nset yrange [0:*]\n'
              'set xtics rotate by -30 font ",9"\nset grid ytics\nunset key\n'
              f'plot "{dat}" using 1:3:xtic(2) with boxes\n')
    r = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True)
    os.unlink(dat)
    if r.returncode != 0:
        raise BenchError(f"gnuplot failed on {csv_name}:\n{r.stderr}")
    return svg


def guest(session, kernels):
    """Boot each kernel once with the bench plan; {kernel name: {table: rows}}."""
    results = {}
    for kid in kernels:
        k = session.kernel(kid)
        run, _report = session.boot(k, [PLAN_ITEM], f"bench-{k.name}")
        if not run.ok:
            ui.block(run.explain())
            raise BenchError(f"the bench boot of {k.label} failed")
        samples, skips, errors = parse(run.lines)
        if errors:
            raise BenchError(f"{k.label}: " + "; ".join(errors) + f" (log: {run.log})")
        for table, why in skips.items():
            ui.info(f"{k.label}: no {table} table: {why}")
        results[k.name] = {table: summarise(cases) for table, cases in samples.items()}
    return results


def timed(cmd, cwd, env=None, log=None):
    """(seconds, exit code) of cmd; its output goes to the file log, if given."""
    start = time.monotonic()
    with open(log, "w") if log else open(os.devnull, "w") as out:
        r = subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
    return time.monotonic() - start, r.returncode


def clone_env(**extra):
    """The environment of a command run in a fresh clone: this run's own
    settings left out. ftlab.py exports FTLAB_BUILD_DIR (the clone would
    build in this build folder), and make passes the variables of its
    command line down twice: in MAKEFLAGS, after " -- ", and as variables
    of their own. FULL=1 left in the environment made the clone's make
    check run every ftlab.py command with --full."""
    _flags, _sep, overrides = os.environ.get("MAKEFLAGS", "").partition(" -- ")
    mine = {"FTLAB_BUILD_DIR", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKELEVEL"}
    mine |= {word.split("=", 1)[0] for word in overrides.split() if "=" in word}
    env = {k: v for k, v in os.environ.items() if k not in mine}
    env.update(extra)
    return env


def warm_lab_split(build_dir, total):
    """Where a warm make lab 1 spent its time: the harness (all but the
    guest), and the guest's boot, lab and end (timing.read of its log)."""
    times = os.path.join(build_dir, "logs", "lab01-cp1.times")
    if not os.path.exists(times):
        return ""
    spans = dict(timing.read(times))
    guest_s = sum(spans.get(k, 0) for k in ("boot", "lab 01", "end"))
    return (f"harness {max(total - guest_s, 0):.1f} s, guest boot {spans.get('boot', 0):.1f} s, "
            f"lab {spans.get('lab 01', 0):.1f} s, kernel log and power off {spans.get('end', 0):.1f} s")


def host(build_dir, full):
    """The lab loop: [(what, seconds, note, exit code)]."""
    ftlab = [sys.executable, os.path.join(series.ROOT, "scripts", "ftlab.py")]
    opts = ["--build-dir", build_dir]
    rows = []
    ui.step("lab loop: building checkpoint 0, then 1 from scratch (a checkpoint switch)")
    subprocess.run(ftlab + ["kernel", "0"] + opts, stdout=subprocess.DEVNULL)
    # the timed command rebuilds what this removes
    shutil.rmtree(os.path.join(build_dir, "obj", "cp1"), ignore_errors=True)
    secs, rc = timed(ftlab + ["kernel", "1"] + opts, series.ROOT)
    rows.append(("checkpoint-switch", secs, "make kernel 1 (never built) right after make "
                 "kernel 0: checkout, object folder copied from cp0's, kbuild", rc))
    ui.step("lab loop: make lab 1, twice (the second is the warm one)")
    timed(ftlab + ["lab", "1"] + opts, series.ROOT)
    secs, rc = timed(ftlab + ["lab", "1"] + opts, series.ROOT)
    rows.append(("warm-lab", secs, "make lab 1 with its kernel built, nothing changed: "
                 + warm_lab_split(build_dir, secs), rc))
    ui.step("lab loop: make kernel 0, then make lab 1 (warm, but the tree was elsewhere)")
    subprocess.run(ftlab + ["kernel", "0"] + opts, stdout=subprocess.DEVNULL)
    secs, rc = timed(ftlab + ["lab", "1"] + opts, series.ROOT)
    rows.append(("warm-lab-after-switch", secs, "make lab 1 when the tree was last at "
                 "checkpoint 0: " + warm_lab_split(build_dir, secs), rc))
    if full:
        clone = os.path.join(build_dir, "bench-clone")
        shutil.rmtree(clone, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", series.ROOT, clone], check=True)
        ui.step("lab loop: make lab 1 in a fresh clone (cold: no tree, no objects, "
                "no compiler cache)")
        out_dir = os.path.join(build_dir, "bench")
        secs, rc = timed(["make", "lab", "1"], clone, clone_env(CCACHE_DISABLE="1"),
                         os.path.join(out_dir, "cold-first-lab.log"))
        if rc == 0 and not os.path.isdir(os.path.join(clone, "build", "obj", "cp1")):
            rc = "built outside the clone"
        rows.append(("cold-first-lab", secs, "a fresh clone's first make lab 1 (apt "
                     "excluded, ccache off; output: cold-first-lab.log)", rc))
        ui.step("lab loop: make check in that clone")
        secs, rc = timed(["make", "check"], clone, clone_env(),
                         os.path.join(out_dir, "make-check.log"))
        rows.append(("make-check", secs, "a full make check in that clone (its output: "
                     "make-check.log, its guests' logs: make-check-logs/)", rc))
        # keep the logs, drop the clone's tree and objects
        kept = os.path.join(out_dir, "make-check-logs")
        shutil.rmtree(kept, ignore_errors=True)
        if os.path.isdir(os.path.join(clone, "build", "logs")):
            shutil.move(os.path.join(clone, "build", "logs"), kept)
        shutil.rmtree(clone, ignore_errors=True)
    return rows


def host_report(rows):
    lines = ["", "lab loop on this host (seconds; targets for 2 cores under TCG)"]
    for what, secs, note, rc in rows:
        target = TARGETS.get(what)
        verdict = "within target" if target and secs <= target else "over target"
        if isinstance(rc, str):
            verdict = f"not measured: {rc}"
        elif rc != 0:
            verdict = f"command failed (exit {rc})"
        lines.append(f"  {what:<21} {secs:>7.1f}  target {target:>5}  {verdict}: {note}")
    return lines


def machine():
    cpus = os.cpu_count()
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return f"{platform.node()}, {cpus} CPUs, {model}".rstrip(", ")


def run(session, kernels=KERNELS, full=False, with_host=True):
    session.prepare()
    out_dir = os.path.join(session.build_dir, "bench")
    os.makedirs(out_dir, exist_ok=True)
    for name in os.listdir(out_dir):     # nothing of an earlier run
        if name.endswith((".csv", ".svg", ".txt", ".log")):
            os.unlink(os.path.join(out_dir, name))
    shutil.rmtree(os.path.join(out_dir, "make-check-logs"), ignore_errors=True)
    session.extra_files = {"lab/ftbench": build_workload(out_dir),
                           "lab/bench.sh": GUEST_SCRIPT}
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results = guest(session, kernels)
    report = [f"make bench, {stamp}, on {machine()}",
              "guest: QEMU TCG, one vCPU; every ratio compares cases of one boot"]
    report += write_tables(out_dir, results)
    plots = [plot(out_dir, t) for t in TABLES
             if os.path.exists(os.path.join(out_dir, TABLES[t][0]))]
    if with_host:
        report += host_report(host(session.build_dir, full))
    path = os.path.join(out_dir, "report.txt")
    with open(path, "w") as f:
        f.write("\n".join(report) + "\n")
    print("\n".join(report))
    print(f"\nresults: {os.path.relpath(out_dir)}/ (report.txt, *.csv, "
          f"{', '.join(os.path.basename(p) for p in plots)})")
    return 0
