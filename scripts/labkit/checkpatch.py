"""checkpatch.pl --strict, the kernel's style checker: on every patch of
the series (make check), with the message types a patch explains
forgiven, and on a learner's diff (studentgrade.checkpatch_test)."""

import os
import re
import subprocess

from . import series, ui


def accepted_exceptions(patch_text):
    """checkpatch message types a patch explains and accepts: a line
    "Checkpatch-exception: TYPE" in its notes (after the first "---"),
    followed by the reason."""
    head = patch_text.split("\ndiff --git", 1)[0]
    notes = head.split("\n---\n", 1)[1] if "\n---\n" in head else ""
    return set(re.findall(r"^Checkpatch-exception: ([A-Z_]+)", notes, re.M))


def checkpatch_command(script, patch, accepted):
    """checkpatch.pl --strict on one patch, one line per message, with the
    types the patch explains (accepted_exceptions) left to checkpatch's own
    --ignore. --terse also keeps it from printing its "NOTE: Ignored
    message types" footer, so any line it prints is a problem."""
    cmd = ["perl", script, "--strict", "--terse", "--no-summary", "--show-types"]
    if accepted:
        cmd += ["--ignore", ",".join(sorted(accepted))]
    return cmd + [patch]


def series_patches(session, tally):
    """make check: one verdict per patch of the series, checkpatch.pl of
    the session's tree on it."""
    script = os.path.join(session.tree.path, "scripts", "checkpatch.pl")
    patches = [p for cp in series.checkpoints() for p in cp.patches()]
    ui.step(f"checkpatch.pl --strict on {len(patches)} patch(es)")
    for patch in patches:
        with open(patch, encoding="utf-8", errors="replace") as f:
            accepted = accepted_exceptions(f.read())
        r = subprocess.run(checkpatch_command(script, patch, accepted),
                           cwd=session.tree.path, capture_output=True, text=True)
        problems = [line for line in r.stdout.splitlines() if line.strip()]
        note = f"(explained exception: {', '.join(sorted(accepted))})" if accepted else ""
        tally.record(not problems, "checkpatch " + os.path.relpath(patch, series.ROOT), note)
        ui.block(problems[:10])
