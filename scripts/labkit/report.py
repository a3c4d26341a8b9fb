"""make report N: a lab run as one HTML page, build/reports/labNN.html.

For each check of the lab's last run: its verdict, graded from the
console log as make lab grades it (with the diff when it failed), and,
when the run saved traces (make lab N TRACE=1), a timeline of the
check's trace.dat (as traces.events reads it): one row per CPU, a point
per event at its time, one colour per kind. The marks a check writes to
trace_marker are labelled; stack traces (a stacktrace probe or trigger
fired) and the events a probe or trigger turned on show where they
happened. Two more rows: the lab's notes (what it read in an enable
file, 0, 1, 0* or 1*, and when; lib.sh note, in the buffer of instance
ftlab-notes) and the snapshot buffer (what a snapshot probe or trigger
swapped out, from the check's CHECK.snapshot.dat: the snapshot was taken
after its last event).

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

from . import gdbrun, grade, protocol, series, traces
from .errors import HarnessError
from .kernels import KernelId

CHART_JS = "/usr/share/javascript/chart.js/chart.min.js"
PACKAGES = ("libjs-chart.js",)
RENDER_PACKAGES = ("chromium",)


def timeline_rows(evs):
    """The rows of a timeline, top to bottom: the lab's notes, the
    snapshot buffer, then the CPUs (the top level's, then instances')."""
    names = {e["row"] for e in evs}
    special = [r for r in (traces.NOTES_ROW, traces.SNAPSHOT_ROW) if r in names]
    cpus = sorted(names - set(special), key=lambda r: (r.count(" ") > 1, r))
    return special + cpus


def graded(kid):
    """The kernel whose checks a page grades: kid when it is a plain
    checkpoint or upstream, else None (a debug or exercise kernel, not
    graded here)."""
    return kid if kid == kid.plain() else None


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


# One colour per kind on every chart of a page: the lab's own kinds
# fixed, the events' from the rest, in their order of appearance.
KIND_COLOURS = {traces.MARK: "#1f77b4", traces.STACK: "#9467bd", traces.NOTE: "#d62728",
                traces.SNAPSHOT: "#8c564b"}
EVENT_COLOURS = ["#2ca02c", "#ff7f0e", "#17becf", "#e377c2", "#7f7f7f", "#bcbd22"]


def colours(timelines):
    """{kind: colour} for every kind of the page's timelines."""
    out, others = dict(KIND_COLOURS), []
    for e in (e for ev in timelines.values() for e in ev):
        if e["kind"] not in out and e["kind"] not in others:
            others.append(e["kind"])
    out.update((kind, EVENT_COLOURS[i % len(EVENT_COLOURS)]) for i, kind in enumerate(others))
    return out


def page(title, entries, timelines, chart_js):
    """The HTML of the report: entries from checks(), timelines {check id:
    traces.events()}, chart_js: the library's text."""
    data = json.dumps({cid: {"rows": timeline_rows(ev), "events": ev}
                       for cid, ev in timelines.items() if ev})
    palette = json.dumps(colours(timelines))
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
.chart {{ height: 14em; }} pre.diff {{ background: #f6f6f6; padding: 0.5em; }}
.note {{ color: #555; }} #drawn {{ display: none; }}
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
const colours = {palette};
const drawn = {{}};
// Each note's last word (what the enable file read: 0*, 1* ...) written
// beside its star, with the library's plugin hook.
const noteLabels = {{
  id: "noteLabels",
  afterDatasetsDraw(chart) {{
    const ctx = chart.ctx;
    chart.data.datasets.forEach((d, i) => {{
      if (d.label !== "{traces.NOTE}") return;
      chart.getDatasetMeta(i).data.forEach((point, j) => {{
        ctx.save();
        ctx.font = "bold 12px sans-serif";
        ctx.fillStyle = d.borderColor;
        ctx.fillText(d.data[j].label.split(" ").pop(), point.x + 9, point.y - 6);
        ctx.restore();
      }});
    }});
  }},
}};
const shapes = {{"{traces.MARK}": "triangle", "{traces.STACK}": "rectRot",
                "{traces.NOTE}": "star", "{traces.SNAPSHOT}": "crossRot"}};
for (const [id, timeline] of Object.entries(timelines)) {{
  const evs = timeline.events, rows = timeline.rows;
  const kinds = [...new Set(evs.map(e => e.kind))];
  const datasets = kinds.map(kind => ({{
    label: kind,
    data: evs.filter(e => e.kind === kind)
             .map(e => ({{x: e.ts, y: rows.indexOf(e.row), label: e.label, task: e.task}})),
    backgroundColor: colours[kind],
    borderColor: colours[kind],
    pointStyle: shapes[kind] || "circle",
    pointRadius: kind in shapes ? 7 : 4,
  }}));
  const chart = new Chart(document.getElementById("chart-" + id), {{
    type: "scatter",
    data: {{datasets}},
    plugins: [noteLabels],
    options: {{
      animation: false, maintainAspectRatio: false,
      scales: {{
        x: {{title: {{display: true, text: "seconds since boot"}}}},
        y: {{min: -0.5, max: rows.length - 0.5, reverse: true,
             afterBuildTicks: axis => {{ axis.ticks = rows.map((r, i) => ({{value: i}})); }},
             ticks: {{callback: v => rows[v]}}}},
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


def write(out, title, lines, number, kernel, trace_paths, only=None):
    """Write the report of lab 'number' from its console lines and its
    traces ({LAB-CHECK: path}), of its check 'only' alone when given;
    returns {check id: events drawn}."""
    entries = checks(lines, number, kernel)
    if only is not None:
        entries = [e for e in entries if e["id"] == only]
        if not entries:
            raise HarnessError(f"lab {number:02d}'s run has no check {only}")
    prefix = f"{number:02d}-"
    timelines = {}
    for name, path in sorted(trace_paths.items()):
        if not name.startswith(prefix):
            continue
        check = name[len(prefix):]
        snapshot = check.endswith(traces.SNAPSHOT_SUFFIX)
        if snapshot:
            check = check[:-len(traces.SNAPSHOT_SUFFIX)]
        if only is None or check == only:
            text, err = traces.report(path)
            timelines.setdefault(check, []).extend([] if err else traces.events(text, snapshot))
    with open(CHART_JS, encoding="utf-8") as f:
        chart_js = f.read()
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(page(title, entries, timelines, chart_js))
    return {cid: len(ev) for cid, ev in timelines.items() if ev}


def render(path, screenshot, size=(1200, 2400)):
    """Load the page in headless Chromium: (the counts the page says it
    drew, the errors it caught or the browser logged); a picture of it in
    'screenshot', of 'size' pixels."""
    base = ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0",
            "--window-size=%d,%d" % size, "--virtual-time-budget=5000"]
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


def console_log(build_dir, number, kid):
    """The console log of lab 'number''s last run on kernel kid: a lab
    that runs under gdb has its guest's log named as gdbrun names it."""
    if series.lookup(number).needs_gdb:
        return gdbrun.log_path(os.path.join(build_dir, "logs"),
                               gdbrun.lab_tag(kid.name, number), "console")
    return os.path.join(build_dir, "logs", f"{traces.tag(f'{number:02d}', kid.name)}.log")


def lab_page(build_dir, number, kid, lines=None, trace_paths=None, out=None,
             only=None):
    """The report of lab 'number' on kernel kid (a kernels.KernelId): from
    its last make lab's console log and traces unless given; written to
    build/reports/labNN.html for the lab's own checkpoint, else
    labNN-KERNEL.html (-CHECK.html for its check 'only'). Returns (path,
    drawn)."""
    tag = traces.tag(f"{number:02d}", kid.name)
    log = console_log(build_dir, number, kid)
    own = kid == KernelId.of(number)
    if lines is None:
        try:
            with open(log, errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            raise HarnessError(f"no run of lab {number:02d} on {kid.name} to report: "
                               f"'make lab {number}"
                               + ("" if own else " KERNEL="
                                  + (kid.base_name if kid.is_upstream else str(kid.checkpoint)))
                               + "' first (with TRACE=1 for timelines)")
    if trace_paths is None:
        # the traces of that run: written after its log, so not older
        # (a later run without TRACE=1 leaves an older run's traces)
        folder = traces.folder(build_dir, tag)
        fresh = os.path.isdir(folder) and os.path.getmtime(folder) >= os.path.getmtime(log)
        trace_paths = {os.path.splitext(n)[0]: os.path.join(folder, n)
                       for n in sorted(os.listdir(folder)) if n.endswith(".dat")} if fresh else {}
    if out is None:
        out = os.path.join(build_dir, "reports",
                           (f"lab{number:02d}" if own else tag)
                           + (f"-{only}" if only else "") + ".html")
    title = f"Lab {number:02d} on {kid.name}"
    return out, write(out, title, lines, number, graded(kid), trace_paths, only)


# The picture of one check's page (make report N CHECK=ID SCREENSHOT=1),
# the size of a handout's figure: the title, the verdict and one chart.
ONE_CHECK_SIZE = (1000, 430)


def run(session, number, kid, only=None, screenshot=False):
    """make report N [KERNEL=M] [CHECK=ID] [SCREENSHOT=1] (kid: the kernel)."""
    from . import ui
    out, drawn = lab_page(session.build_dir, number, kid, only=only)
    ui.info(f"{sum(drawn.values())} events in {len(drawn)} timelines"
            if drawn else "no timelines: the run saved no traces (make lab N TRACE=1)")
    print(f"report: {os.path.relpath(out)} (open it in a browser)")
    if not screenshot:
        return 0
    picture = os.path.splitext(out)[0] + ".png"
    got, errors = render(out, picture, ONE_CHECK_SIZE if only else (1200, 2400))
    ok = got == drawn and not errors and os.path.exists(picture)
    tally = ui.Tally(f"report {number:02d}")
    tally.record(ok, "the page loads in headless Chromium with no error and draws every "
                 "event of its traces", f"(picture: {os.path.relpath(picture)})")
    if not ok:
        ui.block(errors + [f"the page says it drew {got}; its traces hold {drawn}"])
    return tally.close()


def check_page(build_dir, k, lines, trace_paths, tally):
    """make check: lab 06's report of the TRACE boot, rendered in headless
    Chromium: the page loads without an error and draws every event of
    the check's traces; its picture is kept beside it."""
    from . import ui
    label = f"report [{k.name}]"
    out = os.path.join(build_dir, "reports", f"lab06-{k.name}-check.html")
    _out, want = lab_page(build_dir, 6, k.id, lines, trace_paths, out)
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
