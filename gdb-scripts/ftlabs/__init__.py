# ftlabs - gdb commands for the ftrace trigger labs, in the shape of the
# kernel's scripts/gdb/linux: one module per subsystem, the types looked
# up once (linux.utils.CachedType), lists walked with linux.lists.
#
# gdb-scripts/ftrace_labs.py loads it after vmlinux-gdb.py; "help ft"
# lists the commands. Every command finds out what the kernel it looks at
# has from the types and symbols in vmlinux, never from a version string:
# the same command works on upstream 6.12 and on every checkpoint of the
# series, and says plainly when what it shows does not exist there yet.
# decode.py holds what the commands print, without gdb, for the host's
# unit tests.
