# requests.py - "ft serve": run the gdb commands a lab script asks for.
#
# A lab that needs the debugger to act at a given moment (lab 02 has gdb
# make its writes to an enable file soft-mode calls) calls ask_gdb in the
# guest (initramfs/lib.sh). That writes "ftlab-gdb: COMMAND" to
# trace_marker, so the kernel enters tracing_mark_write() with the text in
# a user buffer. ft serve breaks there and reads it:
#
#   - unattended ($ft_batch = 1): gdb runs COMMAND and resumes the guest;
#   - with a learner: gdb stops and shows COMMAND, to type (or change).

import gdb

from . import decode, utils

HOOK = "tracing_mark_write"
MAX_REQUEST = 512


def batch_mode():
    try:
        return int(gdb.parse_and_eval("$ft_batch")) == 1
    except gdb.error:
        return False


def request_text(frame):
    """The lab's request in this tracing_mark_write() call, or None."""
    try:
        ubuf = int(frame.read_var("ubuf"))
        cnt = int(frame.read_var("cnt"))
    except (gdb.error, ValueError):
        return None
    if cnt > MAX_REQUEST:
        return None
    try:
        data = bytes(gdb.selected_inferior().read_memory(ubuf, cnt))
    except gdb.MemoryError:
        return None
    return decode.request_command(data)


class LabRequest(gdb.Breakpoint):
    def __init__(self):
        super().__init__(HOOK, internal=True)
        self.silent = True

    def stop(self):
        command = request_text(gdb.selected_frame())
        if command is None:
            return False
        if batch_mode():
            print(f"ft-serve: the lab asks for: {command}")
            try:
                gdb.execute(command)
            except gdb.error as e:
                # Let the guest go on: its checks show what did not happen.
                print(f"ft-serve: {command}: {e}")
            return False
        print(f"\nft-serve: the lab asks you to run:\n    {command}\n"
              "Type it (or look around first), then 'continue'.")
        return True


class FtServe(gdb.Command):
    """Run the gdb commands the lab script asks for: ft serve

Labs that need gdb to act at a given moment ask for a command from the
guest (lab 02's "ft soft").  Unattended, the command runs and the guest
goes on; with you at the keyboard, gdb stops and shows the command to
type.  The lab's gdb script starts this."""

    def __init__(self):
        super().__init__("ft serve", gdb.COMMAND_RUNNING)
        self.bp = None

    def invoke(self, arg, from_tty):
        if self.bp is None or not self.bp.is_valid():
            self.bp = LabRequest()
        print(f"ft-serve: waiting for the lab's requests (a breakpoint in {HOOK})")


def guest_hostname():
    """The guest's host name, from the kernel's init_uts_ns. Its type
    comes from kernel/'s full debug info: init/version.o, which defines
    it, is built with -g1 (no types)."""
    uts = utils.struct_type("uts_namespace")
    if uts is None:
        return ""
    addr = int(gdb.parse_and_eval("(unsigned long)&init_uts_ns"))
    return gdb.Value(addr).cast(uts.pointer()).dereference()["name"]["nodename"].string()


class LabFinished(gdb.Function):
    """$_ft_lab_finished() - 1 once the guest has said its lab is over.

The unattended runs end at the guest's last "sync" (ksys_sync), but a lab
may call sync too. Before that last sync the guest renames itself
"ftlab-finished" (hostname): this reads the name in the guest's memory,
set before the sync begins, so no timing is involved."""

    def __init__(self):
        super().__init__("_ft_lab_finished")

    def invoke(self):
        return int(decode.lab_finished(guest_hostname()))


FtServe()
utils.alias("ft-serve", "ft serve")
LabFinished()
