# Lab 02 in gdb: soft disable of trace events.
#
# Nothing in the kernel enters soft mode at checkpoint 2, so the lab script
# asks gdb to ("ask_gdb ft-soft sched sched_switch on"). ft-serve catches
# those requests: unattended it runs them and lets the guest go on; with
# you at the keyboard it stops and shows the command, for you to type.
# Watch for:
#  - ft-soft sets SOFT_MODE and SOFT_DISABLED (bits read from the kernel's
#    enum) and sm_ref = 1: the event reads 0* and records nothing, its
#    tracepoint still registered (ENABLED stays set);
#  - after "echo 1 > enable" the kernel cleared SOFT_DISABLED only, and
#    after "echo 0" set it again: SOFT_MODE and ENABLED never changed
#    (the lab asks for "ft-event sched sched_switch" to show it).

ft-serve

echo \nLab 02: 'continue' boots the guest and runs the lab; gdb stops for each ft-soft request.\n
echo Look around first: 'ft-event sched sched_switch' (flags, enable file, sm_ref).\n
echo To see the kernel flip only the soft bit: 'ft-event sched sched_switch', then\n
echo 'break ftrace_event_enable_disable if file == $ft_event' and 'continue';\n
echo 'finish' and 'ft-event sched sched_switch' again after each write to enable.\n
echo 'ft-break soft-disable' breaks where kernel users enter and leave soft mode\n
echo (nothing does in this lab: the probes of lab 03 will).\n
