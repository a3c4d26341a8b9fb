# prefix.py - the "ft" prefix command: "help ft" lists its subcommands.

import gdb


class Ft(gdb.Command):
    """The ftrace trigger labs' gdb commands.

Each "ft WORD" command is also "ft-WORD" (ft probes = ft-probes), the
name the labs' scripts and handouts use.  "help ft WORD" explains one.
Breakpoint condition: $_ft_has_probes([INSTANCE]).  "print" shows probe
entries, event files and triggers in short ("print/r" the raw struct)."""

    def __init__(self):
        super().__init__("ft", gdb.COMMAND_USER, prefix=True)


Ft()
