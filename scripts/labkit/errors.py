"""The harness's own errors: what a user can act on, told in words.

Library code raises these and never exits; scripts/ftlab.py turns them
into an "error:" line and an exit code. Anything else that escapes is a
bug in the harness and stays a traceback."""


class HarnessError(Exception):
    """A failure the message explains. An empty message means it has been
    reported already (deps.ensure prints what to install)."""
    exit_code = 1
