# Lab 01 in gdb: probes with a filter hash.
#
# From checkpoint 1 on, the probes' ftrace_ops carries a filter hash
# holding exactly the probed functions. gdb stops when the traceoff
# probe of the first check runs; one frame up is the probe dispatcher.
# Watch for:
#  - ft-probes: "filter hash: 1 function: schedule";
#  - ft-callsite: schedule's call site is patched (on 6.12 it calls a
#    trampoline made for the probes' ops alone, not ftrace_caller),
#    vfs_read's is a no-op;
#  - then a breakpoint on the very instruction ftrace patched, the first
#    one of schedule: it is hit (QEMU keeps gdb's breakpoints outside
#    guest memory, so they do not fight with ftrace's text patching);
#  - "ft-break probe" and "continue": now the dispatcher stops only for
#    probed functions.

# Enabled once the probe exists (schedule runs all the time before).
break *schedule
set $lab_sched_bp = $bpnum
disable $lab_sched_bp
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

ft-break traceoff
set $lab_first = $ft_bp_first
set $lab_last = $ft_bp_last
commands $lab_first-$lab_last
  silent
  echo \n=== lab 01: in the traceoff probe command, called by the probe dispatcher\n
  bt 3
  echo the probe (and the dispatcher, frame #1) was called for:\n
  info symbol ip
  ft-probes
  ft-callsite schedule
  ft-callsite vfs_read
  enable once $lab_sched_bp
  if $ft_batch
    delete $lab_first-$lab_last
    continue
  end
end

echo \nLab 01: 'continue' boots the guest and runs the lab; gdb stops in the traceoff probe,\n
echo then (after 'continue') on the patched first instruction of schedule.\n
echo Then: 'ft-break probe' and 'continue' (only probed functions stop there), 'ft-probes'\n
echo during the glob check, 'ft-probes lab01' during the instances check, 'help ft'.\n
