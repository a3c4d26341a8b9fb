# Lab 00 in gdb: the baseline probe dispatcher.
#
# At checkpoint 0 the probes of a trace instance share one ftrace_ops
# whose filter hash is empty, and an empty filter hash means "all
# functions". Watch for:
#  - ft-probes: the probe listed as in set_ftrace_filter, and its ops
#    with "filter hash: empty, so ftrace calls it for all functions";
#  - the function ftrace called the dispatcher for ("ip"): `continue`
#    a few times and it is a different function almost every time,
#    although only schedule carries a probe;
#  - ft-callsite: a function nobody probes has its call site patched.

# Stop in the dispatcher once the first probe is in the table (the
# dispatcher already runs while the probe is being added).
ft-break probe
set $lab_probe_bp = $bpnum
condition $lab_probe_bp $_ft_has_probes()
commands
  silent
  echo \n=== lab 00: in the probe dispatcher; ftrace called it for this function:\n
  info symbol ip
  ft-probes
  ft-callsite vfs_read
  bt 3
  if $ft_batch
    delete $lab_probe_bp
    continue
  end
end

echo \nLab 00: 'continue' boots the guest and runs the lab; gdb stops in the probe dispatcher.\n
echo Then try: 'info symbol ip' after each 'continue', 'ft-probes', 'ft-callsite schedule',\n
echo 'ft-break traceoff' (the traceoff command itself), 'help ft'.\n
