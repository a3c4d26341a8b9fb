# Lab 07 in gdb: where the trace clock is chosen and read, where the
# irqsoff tracer's function callback runs, and what the stack tracer
# measures.
#
# gdb stops
#  1. in tracing_set_clock() when the lab selects "uptime": ft-clock still
#     shows [local];
#  2. in tracing_mark_write() for the first marker line written under
#     uptime: ft-clock shows [uptime], and the clock table's entry says
#     in_ns = 0 (the trace prints this clock's values as they are);
#  3. in the uptime clock's function itself, called by the ring buffer
#     while it reserves room for that marker line: this is where every
#     event gets its timestamp (bt shows the way from tracing_mark_write);
#     then in tracing_mark_write() again under "perf", whose table entry
#     points at trace_clock(), not at trace_clock_local();
#  4. in irqsoff_tracer_call(), the irqsoff tracer's ftrace callback, in
#     the first function called after the lab resets tracing_max_latency:
#     it is registered only while the function-trace option is set;
#  5. in check_stack(), called by the stack tracer's callback for
#     ksys_sync, with the maximum at 0 (the lab reset it);
#  6. when the lab opens stack_trace: the first saved return address is
#     the one into ksys_sync, and stack_trace_max_size equals the Depth
#     of that entry: the tracer's own frames are left out of both.

# 1. The clock is chosen (the clocks check selects uptime first).
break tracing_set_clock if $_streq(clockstr, "uptime")
set $lab_set_bp = $bpnum
commands
  silent
  echo \n=== lab 07: in tracing_set_clock(), selecting the uptime clock\n
  bt 3
  ft-clock
  if $ft_batch
    delete $lab_set_bp
    continue
  end
end

# 2. and 3. A marker line under uptime, and the clock read for it. The
# clock's function is taken from the clock table, whatever it is called.
break tracing_mark_write if $_streq(trace_clocks[global_trace.clock_id].name, "uptime")
set $lab_mark_bp = $bpnum
commands
  silent
  echo \n=== lab 07: in tracing_mark_write(), under the uptime clock\n
  ft-clock
  printf "clock table entry in use: %s, in_ns = %d\n", trace_clocks[global_trace.clock_id].name, trace_clocks[global_trace.clock_id].in_ns
  echo its function:\n
  info symbol trace_clocks[global_trace.clock_id].func
  eval "tbreak *0x%lx", (unsigned long) trace_clocks[global_trace.clock_id].func
  commands
    silent
    echo \n=== lab 07: the ring buffer reads the clock for the marker's timestamp\n
    bt 8
    if $_any_caller_is("tracing_mark_write", 12)
      echo called for the trace_marker write: yes\n
    else
      echo called for the trace_marker write: no\n
    end
    # jiffies_64 starts at INITIAL_JIFFIES, (unsigned int)(-300 * HZ), and
    # the lab kernel has HZ=250
    printf "ticks since boot: %lu at HZ=250, so the clock returns about %lu\n", jiffies_64 - (unsigned int)(-300 * 250), (jiffies_64 - (unsigned int)(-300 * 250)) * 100 / 250
    if $ft_batch
      continue
    end
  end
  if $ft_batch
    delete $lab_mark_bp
    continue
  end
end

# 3b. A marker line under perf: the clock table's entry for "perf" points
# at trace_clock(), the local_clock() of the scheduler, not at
# trace_clock_local() behind "local". Under QEMU both count the same
# ticks, so only the function pointer tells them apart.
break tracing_mark_write if $_streq(trace_clocks[global_trace.clock_id].name, "perf")
set $lab_perf_bp = $bpnum
commands
  silent
  echo \n=== lab 07: in tracing_mark_write(), under the perf clock\n
  printf "clock table entry in use: %s, in_ns = %d\n", trace_clocks[global_trace.clock_id].name, trace_clocks[global_trace.clock_id].in_ns
  echo its function:\n
  info symbol trace_clocks[global_trace.clock_id].func
  echo the local clock's function:\n
  info symbol trace_clocks[0].func
  if $ft_batch
    delete $lab_perf_bp
    continue
  end
end

# 4. The irqsoff tracer's function callback. ftrace calls it for every
# function while it is registered, so it is enabled only for the first
# call after a write to tracing_max_latency. The function-trace check
# writes it three times: with the option set (a stop at once), cleared
# (the callback is not registered, so the stop waits until the option is
# set again), and set again (one more stop). The unattended run stops
# once: it deletes the arming breakpoint at the first stop.
break irqsoff_tracer_call
set $lab_irqsoff_bp = $bpnum
disable $lab_irqsoff_bp
commands
  silent
  echo \n=== lab 07: in irqsoff_tracer_call(), the irqsoff tracer's function callback\n
  bt 2
  echo called for:\n
  info symbol ip
  printf "current tracer: %s\n", global_trace.current_trace->name
  ft-clock
  if $ft_batch
    delete $lab_maxlat_bp
    continue
  end
end

break tracing_max_lat_write
set $lab_maxlat_bp = $bpnum
commands
  silent
  enable once $lab_irqsoff_bp
  continue
end

# 5. The stack tracer's check, for ksys_sync.
break check_stack
set $lab_check_bp = $bpnum
commands
  silent
  echo \n=== lab 07: in check_stack(), for ksys_sync\n
  bt 3
  printf "stack_trace_max_size: %lu (the lab wrote 0 to stack_max_size)\n", stack_trace_max_size
  if $ft_batch
    delete $lab_check_bp
    continue
  end
end

# 6. What check_stack() saved, when the lab reads stack_trace.
break stack_trace_open
set $lab_open_bp = $bpnum
commands
  silent
  echo \n=== lab 07: opening stack_trace: what check_stack() saved\n
  printf "entries: %d; the first saved return address:\n", stack_trace_nr_entries
  info symbol stack_dump_trace[0]
  if stack_trace_max_size == stack_trace_index[0]
    echo stack_trace_max_size equals the Depth of entry 0: yes\n
  else
    printf "stack_trace_max_size: %lu, Depth of entry 0: %d\n", stack_trace_max_size, stack_trace_index[0]
  end
  if $ft_batch
    delete $lab_open_bp
    continue
  end
end

echo \nLab 07: 'continue' boots the guest and runs the lab; gdb stops where the uptime clock is\n
echo selected, where it is read for a marker line, in the irqsoff tracer's function callback,\n
echo and in the stack tracer. Then try 'ft-clock' after the perf check, 'p trace_clocks',\n
echo 'p stack_trace_index' and 'x/8a $sp' in check_stack().\n
