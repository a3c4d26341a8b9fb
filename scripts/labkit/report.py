"""make report N: a lab run as one HTML page, build/reports/labNN.html.

For each check of the lab's last run: its verdict, graded from the
console log as make lab grades it (with the diff when it failed), and,
when the run saved traces (make lab N TRACE=1), a timeline of the
check's trace.dat: one row per CPU, a point per event at its time, one
colour per kind. The marks a check writes to trace_marker are labelled;
stack traces (a stacktrace probe or trigger fired) and the events a
probe or trigger turned on show where they happened.

The page is self-contained: the data are inlined as JSON, and the chart
library is Chart.js from Debian's libjs-chart.js, inlined too. Its script
writes what it drew into the page (#drawn) and any error into #errors,
so that a browser's DOM says whether it drew: make check renders a page
in headless Chromium (render()) and compares.
"""

import html
import json
import os
import re
import subprocess

from . import grade, protocol, series, traces
from .errors import HarnessError

CHART_JS = "/usr/share/javascript/chart.js/chart.min.js"
PACKAGES = ("libjs-chart.js",)
RENDER_PACKAGES = ("chromium",)

EVENT_RE = re.compile(r"^\s*(?P<task>\S.*?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+"
                      r"(?P<ts>\d+\.\d+):\s+(?P<event>[\w]+):\s+(?P<info>.*)$")
STACK_RE = re.compile(r"^=> (\S+)")
# How each event is shown: a kind (the legend) and a label (the tooltip).
MARK, STACK = "mark (trace_marker)", "stack trace"


def events(report_text):
    """[{cpu, ts, kind, label}] of a trace-cmd report: print events are
    marks (labelled with their text), kernel_stack entries stack traces
    (labelled with their first frame), the others by event name."""
    out = []
    for line in report_text.splitlines():
        m = EVENT_RE.match(line)
        if m:
            event, info = m.group("event"), m.group("info").strip()
            if event == "print":
                kind, label = MARK, re.sub(r"^tracing_mark_write:\s*", "", info)
            elif event == "kernel_stack":
                kind, label = STACK, ""
            else:
                kind, label = event, info[:80]
            out.append({"cpu": int(m.group("cpu")), "ts": float(m.group("ts")),
                        "kind": kind, "label": label,
                        "task": f"{m.group('task').strip()}-{m.group('pid')}"})
            continue
        s = STACK_RE.match(line.strip())
        if s and out and out[-1]["kind"] == STACK and not out[-1]["label"]:
            out[-1]["label"] = s.group(1)
    return out


def kernel_of(name):
    """'upstream' or the checkpoint number of a kernel name (cp6), else None
    (a debug or exercise kernel, not graded here)."""
    if name == "upstream":
        return name
    m = re.fullmatch(r"cp(\d+)", name)
    return int(m.group(1)) if m else None


def checks(lines, number, kernel):
    """[{id, title, ok, evidence}] of lab 'number''s checks in a console
    log, graded as make lab grades them (ok None: not graded)."""
    cp = series.lookup(number)
    lab = protocol.parse(lines).labs.get(f"{number:02d}")
    if lab is None:
        return []
    expected = grade.load_expected(cp.lab_dir)
    before = grade.load_expected(cp.lab_dir, grade.BEFORE)
    out = []
    for check in lab.checks:
        entry = {"id": check.id, "title": check.title, "ok": None, "evidence": []}
        if kernel is not None:
            outcome = grade.grade_check(check, expected, kernel, number, before)
            entry.update(ok=outcome.ok, evidence=outcome.evidence)
        out.append(entry)
    return out


def page(title, entries, timelines, chart_js):
    """The HTML of the report: entries from checks(), timelines {check id:
    events()}, chart_js: the library's text."""
    data = json.dumps({cid: ev for cid, ev in timelines.items() if ev})
    rows = []
    for e in entries:
        verdict = {True: "PASS", False: "FAIL", None: "not graded"}[e["ok"]]
        rows.append(f'<section class="check {verdict.split()[0].lower()}">'
                    f'<h2><span class="verdict">{verdict}</span> {html.escape(e["id"])}: '
                    f'{html.escape(e["title"])}</h2>')
        if e["evidence"]:
            rows.append("<pre class=diff>" + html.escape("\n".join(e["evidence"])) + "</pre>")
        if timelines.get(e["id"]):
            rows.append(f'<div class=chart><canvas id="chart-{html.escape(e["id"])}">'
                        "</canvas></div>")
        elif e["id"] in timelines:
            rows.append("<p class=note>The check left no events in the buffers.</p>")
        rows.append("</section>")
    if not timelines:
        rows.insert(0, "<p class=note>No traces: run the lab with TRACE=1 for timelines.</p>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; max-width: 70em; }}
h2 {{ font-size: 1em; margin: 1.2em 0 0.3em; }}
.pass .verdict {{ color: #176c1b; }} .fail .verdict {{ color: #b00020; }}
.chart {{ height: 12em; }} pre.diff {{ background: #f6f6f6; padding: 0.5em; }}
.note {{ color: #555; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<pre id="errors"></pre>
{"".join(rows)}
<pre id="drawn"></pre>
<script>{chart_js}</script>
<script>
window.onerror = function (msg) {{
  document.getElementById("errors").textContent += "error: " + msg + "\\n";
}};
const timelines = {data};
const colours = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                 "#e377c2", "#17becf"];
const drawn = {{}};
for (const [id, evs] of Object.entries(timelines)) {{
  const kinds = [...new Set(evs.map(e => e.kind))];
  const cpus = [...new Set(evs.map(e => e.cpu))].sort();
  const datasets = kinds.map((kind, i) => ({{
    label: kind,
    data: evs.filter(e => e.kind === kind)
             .map(e => ({{x: e.ts, y: e.cpu, label: e.label, task: e.task}})),
    backgroundColor: colours[i % colours.length],
    pointStyle: kind === "{MARK}" ? "triangle" : kind === "{STACK}" ? "rectRot" : "circle",
    pointRadius: kind === "{MARK}" || kind === "{STACK}" ? 7 : 4,
  }}));
  const chart = new Chart(document.getElementById("chart-" + id), {{
    type: "scatter",
    data: {{datasets}},
    options: {{
      animation: false, maintainAspectRatio: false,
      scales: {{
        x: {{title: {{display: true, text: "seconds since boot"}}}},
        y: {{min: Math.min(...cpus) - 0.5, max: Math.max(...cpus) + 0.5,
             ticks: {{stepSize: 1, callback: v => Number.isInteger(v) ? "CPU " + v : ""}}}},
      }},
      plugins: {{tooltip: {{callbacks: {{label: c =>
        c.dataset.label + " " + c.raw.x.toFixed(6) + " " + c.raw.task + " " + c.raw.label}}}}}},
    }},
  }});
  drawn[id] = chart.data.datasets.reduce((n, d) => n + d.data.length, 0);
}}
document.getElementById("drawn").textContent = "drawn " + JSON.stringify(drawn);
</script>
</body></html>
"""


def write(out, title, lines, number, kernel, trace_paths):
    """Write the report of lab 'number' from its console lines and its
    traces ({LAB-CHECK: path}); returns {check id: events drawn}."""
    entries = checks(lines, number, kernel)
    prefix = f"{number:02d}-"
    timelines = {}
    for name, path in trace_paths.items():
        if name.startswith(prefix):
            text, err = traces.report(path)
            timelines[name[len(prefix):]] = [] if err else events(text)
    with open(CHART_JS, encoding="utf-8") as f:
        chart_js = f.read()
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(page(title, entries, timelines, chart_js))
    return {cid: len(ev) for cid, ev in timelines.items() if ev}


def render(path, screenshot):
    """Load the page in headless Chromium: (the counts the page says it
    drew, the errors it caught or the browser logged); a picture of it in
    'screenshot'."""
    base = ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0",
            "--window-size=1200,2400", "--virtual-time-budget=5000"]
    url = "file://" + os.path.abspath(path)
    r = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    errors = [l for l in r.stderr.splitlines() if "CONSOLE" in l and "rror" in l]
    m = re.search(r'<pre id="errors">([^<]*)</pre>', r.stdout)
    if m and m.group(1).strip():
        errors += html.unescape(m.group(1)).strip().splitlines()
    m = re.search(r'<pre id="drawn">drawn (\{[^<]*\})</pre>', r.stdout)
    drawn = json.loads(html.unescape(m.group(1))) if m else None
    if r.returncode != 0:
        errors.append(f"chromium exited with status {r.returncode}")
    subprocess.run(base + [f"--screenshot={os.path.abspath(screenshot)}", url],
                   capture_output=True, text=True, timeout=120)
    return drawn, errors


def lab_page(build_dir, number, kernel_name, lines=None, trace_paths=None, out=None):
    """The report of lab 'number' on kernel_name (cp6, upstream ...): from
    its last make lab's console log and traces unless given; written to
    build/reports/labNN.html for the lab's own checkpoint, else
    labNN-KERNEL.html. Returns (path, drawn)."""
    tag = traces.tag(f"{number:02d}", kernel_name)
    log = os.path.join(build_dir, "logs", f"{tag}.log")
    if lines is None:
        try:
            with open(log, errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            raise HarnessError(f"no run of lab {number:02d} on {kernel_name} to report: "
                               f"'make lab {number}"
                               + ("" if kernel_name == series.kernel_name(number)
                                  else f" KERNEL={kernel_name.replace('cp', '')}")
                               + "' first (with TRACE=1 for timelines)")
    if trace_paths is None:
        # the traces of that run: written after its log, so not older
        # (a later run without TRACE=1 leaves an older run's traces)
        folder = traces.folder(build_dir, tag)
        fresh = os.path.isdir(folder) and os.path.getmtime(folder) >= os.path.getmtime(log)
        trace_paths = {os.path.splitext(n)[0]: os.path.join(folder, n)
                       for n in sorted(os.listdir(folder)) if n.endswith(".dat")} if fresh else {}
    if out is None:
        own = kernel_name == series.kernel_name(number)
        out = os.path.join(build_dir, "reports",
                           f"lab{number:02d}.html" if own else f"{tag}.html")
    title = f"Lab {number:02d} on {kernel_name}"
    return out, write(out, title, lines, number, kernel_of(kernel_name), trace_paths)


def run(session, number, kernel_name):
    """make report N [KERNEL=M]."""
    from . import ui
    out, drawn = lab_page(session.build_dir, number, kernel_name)
    ui.info(f"{sum(drawn.values())} events in {len(drawn)} timelines"
            if drawn else "no timelines: the run saved no traces (make lab N TRACE=1)")
    print(f"report: {os.path.relpath(out)} (open it in a browser)")
    return 0


def grade_check(build_dir, k, lines, trace_paths, tally):
    """make check: lab 06's report of the TRACE boot, rendered in headless
    Chromium: the page loads without an error and draws every event of
    the check's traces; its picture is kept beside it."""
    from . import ui
    label = f"report [{k.name}]"
    out = os.path.join(build_dir, "reports", f"lab06-{k.name}-check.html")
    _out, want = lab_page(build_dir, 6, k.name, lines, trace_paths, out)
    picture = os.path.splitext(out)[0] + ".png"
    drawn, errors = render(out, picture)
    ok = drawn == want and bool(want) and not errors and os.path.exists(picture)
    tally.record(ok, f"{label}: lab 06's page loads in headless Chromium with no error and "
                 "draws every event of its traces",
                 f"({sum(want.values())} events in {len(want)} timelines; picture: "
                 f"{os.path.relpath(picture)})")
    if not ok:
        ui.block(errors + [f"the page says it drew {drawn}; its traces hold {want}",
                           f"page: {os.path.relpath(out)}"])
