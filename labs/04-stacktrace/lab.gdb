# Lab 04 in gdb: where the stacktrace probe's stack trace starts.
#
# The unwinder starts deep inside ftrace, so the probe tells
# __trace_stack() how many frames to leave out (PROBE_STACK_SKIP in
# kernel/trace/trace_functions.c). gdb stops when the probe of the
# first check (ksys_sync:stacktrace, then sync) runs, and once more in
# __trace_stack(), where the unwinder starts. Watch for:
#  - ft-probes: ksys_sync:stacktrace:unlimited;
#  - the second bt: skip=5, and five real frames from __trace_stack to
#    the ops' trampoline, "??" (on 6.12 the lab kernel gives the probes'
#    ops a trampoline, which calls ftrace_ops_assist_func; gdb also
#    lists the inlined probe_trace_stack as a frame, but it has no stack
#    frame of its own). With another ops on the function the path is
#    ftrace_caller and arch_ftrace_ops_list_func instead, five frames too;
#  - gdb cannot unwind through the trampoline (no debug information),
#    but the kernel follows the frame pointers it pushed: "x/2a $rbp" in
#    the trampoline's frame shows the next frame, a return into
#    ksys_sync (the entry's first line), and the one after it, into
#    ksys_sync's caller.

# Enabled once the probe has fired: other code records stack traces too.
break __trace_stack
set $lab_stack_bp = $bpnum
disable $lab_stack_bp
commands
  silent
  echo \n=== lab 04: in __trace_stack(), where the unwinder starts\n
  bt 8
  printf "frames to skip: skip = %d (PROBE_STACK_SKIP)\n", skip
  echo gdb stops at ftrace_caller; the kernel follows the frame pointers it pushed\n
  echo (each frame: saved rbp, return address):\n
  select-frame function ftrace_caller
  x/2a $rbp
  x/2a *(void **)$rbp
  echo so the entry starts with the returns into the probed function and its caller:\n
  info symbol *(void **)($rbp + 8)
  info symbol *(void **)(*(void **)$rbp + 8)
  if $ft_batch
    delete $lab_stack_bp
    continue
  end
end

ft-break stacktrace
set $lab_first = $ft_bp_first
set $lab_last = $ft_bp_last
commands $lab_first-$lab_last
  silent
  echo \n=== lab 04: in the stacktrace probe command, called by the probe dispatcher\n
  bt 6
  echo the probe was called for (ip), from (parent_ip):\n
  info symbol ip
  info symbol parent_ip
  ft-probes
  enable once $lab_stack_bp
  if $ft_batch
    delete $lab_first-$lab_last
    continue
  end
end


echo \nLab 04: 'continue' boots the guest and runs the lab; gdb stops in the stacktrace probe,\n
echo then (after 'continue') in __trace_stack(): count the real frames above ftrace_caller.\n
echo Then: 'ft-probes' during the count check (kernel_clone:stacktrace:count=N),\n
echo 'ft-probes lab04' during the instance check, 'help ft'.\n
