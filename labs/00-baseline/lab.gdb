# Lab 00 in gdb: the baseline probe dispatcher.
#
# At checkpoint 0 the probes of a trace instance share one ftrace_ops
# whose filter hash is empty, and an empty filter hash means "all
# functions". gdb stops when the traceoff probe of the first check runs;
# one frame up is the probe dispatcher. Watch for:
#  - ft-probes: schedule:traceoff:unlimited, and its ops with
#    "filter hash: empty, so ftrace calls it for all functions";
#  - ft-callsite vfs_read: a function nobody probes has its call site
#    patched too;
#  - then "ft-break probe" and "continue" a few times: each stop in the
#    dispatcher is for another function ("info symbol ip"), probed or not.

ft-break traceoff
set $lab_first = $ft_bp_first
set $lab_last = $ft_bp_last
commands $lab_first-$lab_last
  silent
  echo \n=== lab 00: in the traceoff probe command, called by the probe dispatcher\n
  bt 3
  echo the probe (and the dispatcher, frame #1) was called for:\n
  info symbol ip
  ft-probes
  ft-callsite vfs_read
  if $ft_batch
    delete $lab_first-$lab_last
    continue
  end
end

echo \nLab 00: 'continue' boots the guest and runs the lab; gdb stops in the traceoff probe.\n
echo Then: 'ft-break probe', 'continue', 'info symbol ip' (again and again: any function),\n
echo 'ft-probes', 'ft-callsite schedule', 'help ft'.\n
