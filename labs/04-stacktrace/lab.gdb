# Lab 04 in gdb: where the stacktrace probe's stack trace starts.
#
# The unwinder starts deep inside ftrace, so the probe tells
# __trace_stack() how many frames to leave out (PROBE_STACK_SKIP in
# kernel/trace/trace_functions.c). gdb stops when the probe of the
# first check (ksys_sync:stacktrace, then sync) runs, and once more in
# __trace_stack(), where the unwinder starts. Watch for:
#  - ft-probes: ksys_sync:stacktrace:unlimited;
#  - the second bt: skip=5 (gdb also lists the inlined function
#    probe_trace_stack as a frame, but it has no stack frame of its own),
#    and the five frames: __trace_stack,
#    ftrace_stacktrace, function_probe_dispatch, ftrace_ops_assist_func
#    (the guard the probe kind's ops asks for) and the trampoline ftrace
#    made for that ops, "??" (a copy of ftrace_caller's code, made at run
#    time: no symbol names it and gdb cannot unwind through it);
#  - the kernel's unwinder follows the frame pointers: each frame holds
#    the caller's saved rbp, then the return address. Walked from $rbp
#    where gdb stops (still ftrace_stacktrace()'s frame: __trace_stack()
#    has not pushed its own yet), the chain returns into
#    function_probe_dispatch(), ftrace_ops_assist_func(), the
#    trampoline, then ksys_sync (the entry's first line) and its caller.
#    With another ops on the function the path is ftrace_caller and
#    arch_ftrace_ops_list_func instead, five frames too.

# Enabled once the probe has fired: other code records stack traces too.
break __trace_stack
set $lab_stack_bp = $bpnum
disable $lab_stack_bp
commands
  silent
  echo \n=== lab 04: in __trace_stack(), where the unwinder starts\n
  bt 8
  printf "frames to skip: skip = %d (PROBE_STACK_SKIP)\n", skip
  echo the chain of saved frame pointers from $rbp, as the kernel's unwinder follows it\n
  echo (each frame: saved rbp, then the return address):\n
  set $lab_fp = $rbp
  set $lab_i = 0
  while $lab_i < 5
    printf "frame %d returns into: ", $lab_i
    info symbol *(void **)($lab_fp + 8)
    set $lab_fp = *(void **)$lab_fp
    set $lab_i = $lab_i + 1
  end
  echo the entry starts at the return into the probed function, ksys_sync\n
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
echo then (after 'continue') in __trace_stack(): follow the frame pointers up to ksys_sync.\n
echo Then: 'ft-probes' during the count check (kernel_clone:stacktrace:count=N),\n
echo 'ft-probes lab04' during the instance check, 'help ft'.\n
