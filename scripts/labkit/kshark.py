"""make kernelshark N: the traces of lab N's last TRACE=1 run in
KernelShark (Debian's kernelshark), one stream per check.

With a display (DISPLAY set), KernelShark opens on it. With SCREENSHOT=1,
or without a display, it runs under Xvfb instead: the harness waits for
its window and for every file to be loaded, takes a picture of it
(ImageMagick's import) into build/traces/labNN-KERNEL.png (or
labNN-KERNEL-CHECK.png for one check's), and says whether the window came
up with the traces loaded.

KernelShark warns in a dialog when it runs as root (CI does); the
harness gives it a settings folder of its own (KS_USER_CACHE_DIR) where
that warning is turned off, and where it keeps nothing of the user's.
"""

import glob
import os
import re
import shutil
import subprocess
import tempfile
import time

from . import traces, ui
from .errors import HarnessError
from .kernels import KernelId

PACKAGES = ("kernelshark",)
SCREENSHOT_PACKAGES = ("kernelshark", "xvfb", "x11-utils", "imagemagick")
GEOMETRY = "1200x760+0+0"
# Seconds to wait for the window; then for the plots to be drawn.
WINDOW_WAIT, SETTLE = 60, 3


def lab_traces(build_dir, number, kernel_name=None, check=None):
    """The folder and trace.dat files of lab 'number': those of
    build/traces/labNN-K/ for kernel K when given (KERNEL=), else of the
    lab's own checkpoint, else of the newest labNN-* folder; only check
    'check''s when given. Raises HarnessError with what to run when there
    are none."""
    lab = f"{number:02d}"
    base = os.path.join(build_dir, "traces")
    folders = sorted(glob.glob(os.path.join(base, f"lab{lab}-*")), key=os.path.getmtime)
    folders = [f for f in folders if os.path.isdir(f)]
    own = traces.folder(build_dir, traces.tag(lab, KernelId.of(number).name))
    wanted = traces.folder(build_dir, traces.tag(lab, kernel_name)) if kernel_name else None
    if wanted and not os.path.isdir(wanted):
        raise HarnessError(f"no traces of lab {lab} on {kernel_name}: run "
                           f"'make lab {number} TRACE=1' (with KERNEL= as here) first")
    if not wanted and not folders:
        raise HarnessError(f"no traces of lab {lab} yet: run 'make lab {number} TRACE=1' first")
    chosen = wanted or (own if own in folders else folders[-1])
    files = sorted(glob.glob(os.path.join(chosen, "*.dat")))
    if check:
        files = [f for f in files if os.path.basename(f) == f"{lab}-{check}.dat"]
    if not files:
        raise HarnessError(f"no trace.dat{' of check ' + check if check else ''} in "
                           f"{os.path.relpath(chosen)}")
    # KernelShark stops at a file without events, in a dialog ("contains
    # no data"): such a check (a check of refused writes) is left out
    empty = [f for f in files if not has_events(f)]
    if empty:
        ui.info(f"left out, no events in them: {', '.join(os.path.basename(f) for f in empty)}")
    files = [f for f in files if f not in empty]
    if not files:
        raise HarnessError(f"the traces in {os.path.relpath(chosen)} hold no events")
    return chosen, files


def has_events(path):
    """Does trace-cmd report show an event (a line after its cpus= line)?"""
    text, err = traces.report(path)
    return err is None and any(line.strip() and not line.startswith("cpus=")
                               for line in text.splitlines())


def command(files):
    """kernelshark with the first file as its input and the others appended."""
    cmd = ["kernelshark", "-geometry", GEOMETRY, "-i", files[0]]
    for f in files[1:]:
        cmd += ["-a", f]
    return cmd


def settings_folder():
    """A KernelShark settings folder with its root warning turned off."""
    folder = tempfile.mkdtemp(prefix="ftlab-kernelshark-")
    with open(os.path.join(folder, "setting.ini"), "w") as f:
        f.write("[General]\nnoRootWarn=true\n")
    return folder


def window_title(display):
    """The title of KernelShark's main window ("Kernel Shark", followed by
    the file when one is open), or None (xwininfo lists the windows)."""
    r = subprocess.run(["xwininfo", "-root", "-tree"], capture_output=True, text=True,
                       env=dict(os.environ, DISPLAY=display))
    m = re.search(r'"(Kernel Shark(?: \([^"]*\))?)"', r.stdout)
    return m.group(1) if m else None


def loaded(log):
    """The files KernelShark's output says it loaded."""
    with open(log, errors="replace") as f:
        return re.findall(r'^Loading\s+"(.*)"$', f.read(), re.M)


def start_xvfb():
    """An Xvfb on a free display: (process, ":N")."""
    read, write = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24",
                             "-nolisten", "tcp"], pass_fds=(write,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as f:
        number = f.readline().strip()
    if not number.isdigit():
        proc.kill()
        raise HarnessError("Xvfb did not start (no display number)")
    return proc, f":{number}"


def screenshot(files, out, log):
    """KernelShark on 'files' under Xvfb, a picture of its screen in 'out'.
    Returns the problems (empty: the window came up with the first file
    loaded, every file was loaded, and the picture is not blank)."""
    xvfb, display = start_xvfb()
    folder = settings_folder()
    env = dict(os.environ, DISPLAY=display, KS_USER_CACHE_DIR=folder,
               XDG_RUNTIME_DIR=folder)
    problems = []
    try:
        with open(log, "w") as logf:
            ks = subprocess.Popen(command(files), env=env, stdout=logf,
                                  stderr=subprocess.STDOUT)
        deadline = time.monotonic() + WINDOW_WAIT
        title = None
        while time.monotonic() < deadline and ks.poll() is None:
            time.sleep(1)
            title = window_title(display)
            if title and set(files) <= set(loaded(log)):
                break
        if title is None:
            problems.append(f"no KernelShark window came up in {WINDOW_WAIT} s")
        else:
            time.sleep(SETTLE)
            size = GEOMETRY.split("+")[0]
            r = subprocess.run(["import", "-window", "root", "-crop", f"{size}+0+0", "+repage",
                                out], env=env, capture_output=True, text=True)
            if r.returncode != 0:
                problems.append(f"import failed: {r.stderr.strip()}")
        if ks.poll() is None:
            ks.terminate()
            ks.wait(10)
    finally:
        xvfb.kill()
        xvfb.wait()
        shutil.rmtree(folder, ignore_errors=True)
    problems += [f"KernelShark did not load {os.path.relpath(f)}" for f in files
                 if f not in loaded(log)]
    if not problems:
        problems += blank_picture(out)
    return problems


def blank_picture(path):
    """A picture of one or two colours is a blank screen (ImageMagick's
    identify counts the colours)."""
    r = subprocess.run(["identify", "-format", "%k", path], capture_output=True, text=True)
    colours = int(r.stdout) if r.stdout.strip().isdigit() else 0
    return [] if colours > 16 else [f"the picture is blank ({colours} colours): {path}"]


def run(session, number, kernel_name=None, check=None, shot=False):
    """make kernelshark N [KERNEL=...] [CHECK=ID] [SCREENSHOT=1]."""
    chosen, files = lab_traces(session.build_dir, number, kernel_name, check)
    ui.step(f"KernelShark on {len(files)} trace.dat file(s) of {os.path.relpath(chosen)}")
    if not shot and os.environ.get("DISPLAY"):
        return subprocess.run(command(files)).returncode
    if not shot:
        ui.info("no display (DISPLAY is not set): taking a picture under Xvfb instead")
    out = chosen + (f"-{check}" if check else "") + ".png"
    log = os.path.join(session.logs, f"kernelshark-{os.path.basename(chosen)}.log")
    os.makedirs(session.logs, exist_ok=True)
    tally = ui.Tally()
    problems = screenshot(files, out, log)
    tally.record(not problems, f"kernelshark: the window comes up with the {len(files)} "
                 f"trace(s) of {os.path.basename(chosen)} loaded",
                 f"(picture: {os.path.relpath(out)})" if not problems else "")
    ui.block(problems + ([f"KernelShark's output: {os.path.relpath(log)}"] if problems else []))
    return tally.close()
