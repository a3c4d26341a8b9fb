# Lab 03 in gdb: an enable_event probe flips one bit.
#
# Adding "ksys_sync:enable_event:sched:sched_switch" put sched_switch
# into soft mode: its tracepoint is registered, but SOFT_DISABLED keeps
# it from recording. gdb stops when the probe fires (the lab's first
# "sync"), and once more when sched_switch next runs. Watch for:
#  - bt: the probe command, called by the probe dispatcher for ksys_sync;
#  - ft-probes: ksys_sync:enable_event:sched:sched_switch:unlimited, the
#    event and count read from the probe's data (struct event_probe);
#    "print *$ft_probe" shows that entry (struct ftrace_probe_entry);
#  - ft-event before the hit: SOFT_MODE|SOFT_DISABLED, enable reads 0*;
#  - ft-event at the next sched_switch: SOFT_DISABLED is gone, the rest
#    (ENABLED, SOFT_MODE, sm_ref 1) unchanged, enable reads 1*: this time
#    the event's tracepoint callback goes on to write a record.

# Enabled once the probe has fired: sched_switch's tracepoint callback runs
# at every task switch, recording or not.
break trace_event_raw_event_sched_switch
set $lab_switch_bp = $bpnum
disable $lab_switch_bp
commands
  silent
  echo \n=== lab 03: at the next sched_switch, after the probe ran\n
  bt 1
  ft-event sched sched_switch
  if $ft_batch
    delete $lab_switch_bp
    continue
  end
end

ft-break event-probe
set $lab_first = $ft_bp_first
set $lab_last = $ft_bp_last
commands $lab_first-$lab_last
  silent
  echo \n=== lab 03: in the event probe command, before it switches the event\n
  bt 3
  echo the probe was called for:\n
  info symbol ip
  ft-probes
  print *$ft_probe
  ft-event sched sched_switch
  enable once $lab_switch_bp
  if $ft_batch
    delete $lab_first-$lab_last
    continue
  end
end

echo \nLab 03: 'continue' boots the guest and runs the lab; gdb stops in the enable_event\n
echo probe when the lab runs 'sync'. There: 'finish', then 'ft-event sched sched_switch'\n
echo (SOFT_DISABLED gone, 0* -> 1*); 'continue' stops at the next sched_switch.\n
echo Then: 'ft-probes' during the count checks (count=2, count=1, ...), 'ft-break soft-disable'\n
echo to see the probes put the event into and out of soft mode, 'help ft'.\n
