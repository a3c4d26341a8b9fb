# Lab 05 in gdb: the snapshot probe swaps two ring buffers.
#
# The snapshot buffer is allocated when the probe is added; the probe
# itself only swaps. gdb stops when the probe of the swap check
# (ksys_sync:snapshot, two marker lines, then sync) runs, and once more
# in __update_max_tr(), right after the swap in update_max_tr().
# Watch for:
#  - ft-probes: ksys_sync:snapshot:unlimited;
#  - ft-snapshot at the probe: the snapshot buffer is already
#    allocated (nothing to allocate in the probe), the live buffer
#    holds the 2 marker lines, the snapshot buffer none;
#  - ft-snapshot after the swap: the two trace_buffer pointers have
#    traded places, so the 2 events are now behind the snapshot file
#    and the live buffer is empty. No event was copied.

# Enabled once the probe has fired: runs right after the swap.
break __update_max_tr
set $lab_swap_bp = $bpnum
disable $lab_swap_bp
commands
  silent
  echo \n=== lab 05: in __update_max_tr(), just after the swap\n
  bt 5
  ft-snapshot
  if $ft_batch
    delete $lab_swap_bp
    continue
  end
end

ft-break snapshot
set $lab_first = $ft_bp_first
set $lab_last = $ft_bp_last
commands $lab_first-$lab_last
  silent
  echo \n=== lab 05: in the snapshot probe command, called by the probe dispatcher\n
  bt 3
  echo the probe (and the dispatcher, frame #1) was called for:\n
  info symbol ip
  ft-probes
  ft-snapshot
  enable once $lab_swap_bp
  if $ft_batch
    delete $lab_first-$lab_last
    continue
  end
end


echo \nLab 05: 'continue' boots the guest and runs the lab; gdb stops in the snapshot probe,\n
echo then (after 'continue') just after the swap: compare the two 'ft-snapshot' outputs.\n
echo Then: 'ft-probes' during the count check (ksys_sync:snapshot:count=N), 'ft-snapshot'\n
echo after 'echo 0 > snapshot' (freed), 'ft-snapshot lab05', 'help ft-snapshot'.\n
