# Lab 02 in gdb: soft disable of trace events.
#
# Nothing in the kernel enters soft mode at checkpoint 2, so the lab script
# asks gdb to make its writes to the enable file a soft-mode user's call
# ("ask_gdb ft-soft sched sched_switch on", then "echo 1 > enable").
# ft-serve catches those requests: unattended it runs them and lets the
# guest go on; with you at the keyboard it stops and shows the command,
# for you to type. ft-soft breaks where the write switches the event and
# turns it into trace_event_enable_disable(file, 1, soft_disable=1): the
# kernel's own event_soft_mode_get runs ("off" and "echo 0":
# event_soft_mode_put). Watch for:
#  - in event_soft_mode_get of a disabled event: sm_ref goes 0 -> 1,
#    SOFT_MODE and SOFT_DISABLED are set before the tracepoint is
#    registered, so the event reads 0* and records nothing;
#  - after "echo 1 > enable" the kernel cleared SOFT_DISABLED only, and
#    after "echo 0" set it again: SOFT_MODE and ENABLED never changed
#    (the lab asks for "ft-event sched sched_switch" to show it);
#  - in event_soft_mode_put: the last user unregisters the tracepoint of a
#    soft-disabled event.
#  - soft-on-enabled: event_soft_mode_get finds the event ENABLED (reads
#    1, sm_ref 0): it sets SOFT_MODE and nothing else, so the event
#    reads 1*; its put finds SOFT_DISABLED clear and keeps the tracepoint.
#  - two-users: the second get finds sm_ref 1 and only counts; the first
#    put finds sm_ref 2 and only counts.

ft-serve

ft-break soft-disable
set $lab_first = $ft_bp_first
set $lab_last = $ft_bp_last
commands $lab_first-$lab_last
  silent
  python print("\n=== lab 02: in %s, called by %s" % (gdb.selected_frame().name(), gdb.selected_frame().older().name()))
  ft-event sched sched_switch
  if $ft_batch
    continue
  end
end

echo \nLab 02: 'continue' boots the guest and runs the lab; gdb stops for each ft-soft request,\n
echo then in the kernel's soft-mode code (event_soft_mode_get/put) the write runs.\n
echo There: 'bt', 'finish' and 'ft-event sched sched_switch' (flags, enable file, sm_ref).\n
echo To see the kernel flip only the soft bit on a plain write: 'ft-event sched sched_switch',\n
echo 'break ftrace_event_enable_disable if file == $ft_event' and 'continue'.\n
