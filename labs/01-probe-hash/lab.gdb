# Lab 01 in gdb: probes with a filter hash.
#
# From checkpoint 1 on, the probes' ftrace_ops carries a filter hash
# holding exactly the probed functions. Watch for:
#  - ft-probes: "filter hash: 1 function: schedule" for the first probe;
#  - the dispatcher is now called only for probed functions ("ip" is
#    always schedule here);
#  - ft-callsite: schedule's call site is patched, vfs_read's is a no-op;
#  - a gdb breakpoint on the very instruction ftrace patched still works
#    (QEMU keeps its breakpoints outside guest memory).

# 1. The first instruction of schedule, once a probe exists: that is the
#    call site ftrace rewrote to call the probes.
break *schedule
set $lab_sched_bp = $bpnum
condition $lab_sched_bp $_ft_has_probes()
commands
  silent
  echo \n=== lab 01: at the first instruction of schedule, the call site ftrace patched\n
  ft-callsite schedule
  x/i $pc
  if $ft_batch
    delete $lab_sched_bp
    continue
  end
end

# 2. The dispatcher, once the first probe is in the table.
ft-break probe
set $lab_probe_bp = $bpnum
condition $lab_probe_bp $_ft_has_probes()
commands
  silent
  echo \n=== lab 01: in the probe dispatcher; ftrace called it for this function:\n
  info symbol ip
  ft-probes
  ft-callsite vfs_read
  bt 3
  if $ft_batch
    delete $lab_probe_bp
    continue
  end
end

echo \nLab 01: 'continue' boots the guest and runs the lab; gdb stops at schedule, then in the dispatcher.\n
echo Then try: 'continue' (the dispatcher runs only for probed functions), 'ft-probes' after the\n
echo glob check (schedule_*:traceon), 'ft-probes lab01' in the instances check, 'help ft'.\n
