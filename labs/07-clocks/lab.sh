#!/bin/sh
# description: Clocks, function-trace, the stack tracer fix, dump probes
# requires: trace_clock options stack_trace stack_trace_filter set_ftrace_filter irqsoff:tracer
#
# Lab 07: what came with the function probes in 3.10, around them: two
# trace clocks ("uptime" counts ticks, "perf" is perf's clock), the
# "function-trace" option of the latency tracers, a stack tracer that
# leaves itself out of what it reports, and the "dump" and "cpudump"
# probes. Timestamps vary from run to run, so the checks print what kind
# of number a clock gives and how fast it grows, never the number itself.

# markers: how many trace_marker lines the buffer holds.
markers() {
	grep -c 'tracing_mark_write: ' trace
}

# stamp TEXT: the timestamp of the marker line TEXT, as the trace prints it.
stamp() {
	sed -n "s/.* \([0-9.]*\): tracing_mark_write: $1\$/\1/p" trace
}

# stamp_kind STAMP: what kind of number a timestamp is. A clock that counts
# in nanoseconds is printed as seconds.microseconds; any other as it is.
stamp_kind() {
	case $1 in
	'')		echo "missing" ;;
	*[!0-9.]*)	echo "not a number: $1" ;;
	*.??????)	echo "seconds.microseconds" ;;
	*.*)		echo "a decimal: $1" ;;
	*)		echo "a whole number (a count, printed as it is)" ;;
	esac
}

# micros STAMP: a seconds.microseconds timestamp in microseconds.
micros() {
	_us=$(echo "$1" | tr -d . | sed 's/^0*//')
	echo "${_us:-0}"
}

# hundredths UPTIME: /proc/uptime's first field (seconds with two
# decimals) in hundredths of a second.
hundredths() {
	_cs=$(echo "$1" | tr -d . | sed 's/^0*//')
	echo "${_cs:-0}"
}

# moved_as_uptime A B UP_A UP_B: do two timestamps move as far apart as
# the two /proc/uptime readings taken around them? Both measure the
# guest's own time, so a busy host that stretches the sleep stretches
# both alike. A whole-number clock is compared in its own units: equal
# means it counts hundredths of a second, whatever the kernel's HZ is.
# 10% (at least 3 hundredths) covers the tick each reading may be off by.
# A whole-number clock counts the guest's timer ticks, and a guest on a
# busy host can miss ticks that /proc/uptime, read from the clocksource,
# still counts: measured on a debug kernel, whose clocksource is QEMU's
# HPET, 119 units across 170 hundredths (a plain kernel has no HPET: its
# /proc/uptime counts the same ticks). So such a clock may fall behind,
# down to a third; it must never run ahead.
moved_as_uptime() {
	_up=$(( $(hundredths "$4") - $(hundredths "$3") ))
	_note=
	case $(stamp_kind "$1") in
	seconds.*)	_d=$(( ($(micros "$2") - $(micros "$1")) / 10000 ))
			_unit="hundredths of a second" ;;
	a\ whole*)	_d=$(( $2 - $1 ))
			_unit="units"
			_note=", or fewer where the guest missed ticks" ;;
	*)		echo "across the sleep: no two timestamps to compare"
			return ;;
	esac
	_slack=$(( _up / 10 ))
	[ "$_slack" -ge 3 ] || _slack=3
	_behind=$_slack
	if [ -n "$_note" ] && [ $(( _up * 2 / 3 )) -gt "$_slack" ]; then
		_behind=$(( _up * 2 / 3 ))
	fi
	_off=$(( _d - _up ))
	if [ "$_off" -le "$_slack" ] && [ $(( -_off )) -le "$_behind" ]; then
		echo "across the sleep: as many $_unit as /proc/uptime's hundredths$_note"
	elif [ "$_d" -eq 0 ]; then
		echo "across the sleep: the clock did not move"
	else
		echo "across the sleep: $_d $_unit, /proc/uptime $_up hundredths"
	fi
}

# The list of clocks, and selecting each new one. trace_clock shows every
# clock of the kernel with the one in use in brackets.
clocks() {
	show trace_clock
	try_truncate uptime trace_clock
	show trace_clock
	try_truncate perf trace_clock
	show trace_clock
	echo "-- README, the clocks:"
	grep -E '^ +(local|global|counter|uptime|perf):' README
}
check clocks "trace_clock lists uptime and perf after counter; each can be selected" clocks

# clock_run CLOCK: select CLOCK (which empties the buffer), then two
# marker lines a second apart, what their timestamps are, and how far
# apart they are against /proc/uptime read just before and just after
# (by the shell's own read: nothing runs between a reading and a marker).
clock_run() {
	mark "written under local"
	setup "$1" trace_clock
	echo "marker lines left after selecting $1: $(markers)"
	read -r _up1 _idle < /proc/uptime
	mark first
	sleep 1
	mark second
	read -r _up2 _idle < /proc/uptime
	_a=$(stamp first)
	_b=$(stamp second)
	echo "timestamps: $(stamp_kind "$_a")"
	moved_as_uptime "$_a" "$_b" "$_up1" "$_up2"
}

uptime_clock() {
	clock_run uptime
}
check uptime "uptime stamps events with a count of hundredths of a second since boot" uptime_clock

# The uptime clock counts from boot, as /proc/uptime does: a marker line
# written right after the shell read /proc/uptime is stamped with the
# same number of hundredths of a second, give or take a tick. The stamp
# may be behind as far as the guest missed ticks (see moved_as_uptime;
# on a busy host a guest that has run for minutes can miss more than a
# third of them), never ahead, and never by nine tenths of its count: a
# clock that counts from another origin, or in seconds, is that far off.
# Printed: yes or no, and why not, never the numbers.
uptime_since_boot() {
	setup uptime trace_clock
	read -r _up _idle < /proc/uptime
	mark now
	_ts=$(stamp now)
	case $(stamp_kind "$_ts") in
	a\ whole*)	;;
	*)		echo "the marker's stamp is $(stamp_kind "$_ts" | sed 's/:.*//'), not a count"
			return ;;
	esac
	_cs=$(hundredths "$_up")
	_behind=$(( _cs * 9 / 10 ))
	[ "$_behind" -ge 3 ] || _behind=3
	if [ $(( _ts - _cs )) -gt 3 ]; then
		echo "stamp as /proc/uptime's hundredths: no, ahead of it"
	elif [ $(( _cs - _ts )) -gt "$_behind" ]; then
		echo "stamp as /proc/uptime's hundredths: no, behind it by more than nine tenths"
	else
		echo "stamp as /proc/uptime's hundredths: yes"
	fi
}
check uptime-since-boot "uptime stamps a marker with /proc/uptime's hundredths of a second since boot" uptime_since_boot

perf_clock() {
	clock_run perf
}
check perf "perf stamps events in nanoseconds, printed as seconds.microseconds" perf_clock

# latency_trace: reset the maximum, let the kernel run with interrupts
# off now and then, and say what the irqsoff trace of the longest section
# holds. The tracer always writes three function entries itself (the
# section's start, its end, and the end again when it records the new
# maximum); with function-trace on, every function called in between is
# traced too.
#
# The check runs on the "counter" clock, so that its result does not
# depend on the boot. sched_clock(), behind the local clock, reads the TSC
# once the guest has found its frequency. Under QEMU that sometimes fails
# ("tsc: Marking TSC unstable due to could not calculate TSC khz" in
# dmesg), and sched_clock() then counts jiffies: it moves once a tick
# (4 ms). Most sections would measure 0, and the kept trace would mix
# every section of that tick. (A TSC marked unstable later, by the
# clocksource watchdog, is still read.) With "counter" a section's length
# is the number of clock reads in it, and the trace keeps the longest
# section alone.
latency_trace() {
	echo 0 > tracing_max_latency
	hit_functions
	cat trace > /tmp/latency
	_n=$(grep -c ' <-' /tmp/latency)
	if [ "$_n" -eq 3 ]; then
		echo "  function entries: the section's start and end only"
	elif [ "$_n" -gt 3 ]; then
		echo "  function entries: start, end, and the functions called in between"
	else
		echo "  function entries: $_n"
	fi
	echo "  stack traces: $(stack_entries /tmp/latency)"
}

function_trace() {
	echo "options/function-trace: $(cat options/function-trace 2>&1)"
	echo counter > trace_clock
	echo irqsoff > current_tracer
	echo "irqsoff with function-trace set:"
	latency_trace
	try_truncate 0 options/function-trace
	echo "irqsoff with function-trace cleared:"
	latency_trace
	try_truncate 1 options/function-trace
	echo "irqsoff with function-trace set again:"
	latency_trace
	echo nop > current_tracer
}
check function-trace "options/function-trace decides whether irqsoff traces the functions inside a section" function_trace

# graph_trace: as latency_trace, for the irqsoff tracer in graph mode
# (options/display-graph), which records the functions of a section with
# the function graph tracer's callbacks and prints the trace as a call
# graph: the tracer's own three entries are leaf calls ("func();"), and
# a traced function is a leaf call or a call with a body ("func() {").
graph_trace() {
	echo 0 > tracing_max_latency
	hit_functions
	cat trace > /tmp/latency
	if grep -q '^#.*FUNCTION CALLS' /tmp/latency; then
		echo "  shown as a call graph: yes"
	else
		echo "  shown as a call graph: no"
	fi
	_n=$(grep -v '^#' /tmp/latency | grep -c '();$\|() {$')
	if [ "$_n" -eq 3 ]; then
		echo "  graph entries: the section's start and end only"
	elif [ "$_n" -gt 3 ]; then
		echo "  graph entries: start, end, and the functions called in between"
	else
		echo "  graph entries: $_n"
	fi
}

# With display-graph, the latency tracers use the function graph tracer
# instead of the function tracer, and function-trace switches that one:
# register_irqsoff_function() and unregister_irqsoff_function() take the
# graph mode (is_graph()) of the tracer. The writes to function-trace are
# setup writes (the function-trace check shows them): what tells is
# whether the graph entries follow the option. The function graph
# tracer follows set_ftrace_filter, and each switch patches the functions
# it names: three functions that every schedule calls with interrupts
# off (__schedule() in kernel/sched/core.c; hit_functions sleeps), not
# every function of the kernel, which takes seconds under emulation. For
# the same reason display-graph is set before irqsoff starts and cleared
# after it stopped: switching it under the running tracer restarts it.
# On two CPUs (the debug kernel) the check runs on CPU 0 and irqsoff
# times CPU 0 only (tracing_cpumask): "counter" is one count for all
# CPUs, and a section of the other CPU, with none of these functions,
# would be long by the entries that CPU 0 wrote in the meantime.
SCHEDULE_FUNCTIONS="update_rq_clock dequeue_task_fair pick_next_task_fair"

function_trace_graph() {
	on_one_cpu
	_cpus=$(cat tracing_cpumask)	# not "read": the file refuses reads of a byte
	echo 1 > tracing_cpumask
	echo counter > trace_clock
	echo "$SCHEDULE_FUNCTIONS" > set_ftrace_filter
	try_truncate 1 options/display-graph
	echo irqsoff > current_tracer
	echo "irqsoff in graph mode, function-trace set:"
	graph_trace
	setup 0 options/function-trace
	echo "irqsoff in graph mode, function-trace cleared:"
	graph_trace
	setup 1 options/function-trace
	echo "irqsoff in graph mode, function-trace set again:"
	graph_trace
	echo nop > current_tracer
	echo 0 > options/display-graph
	echo "$_cpus" > tracing_cpumask
}
check function-trace-graph "with display-graph, options/function-trace switches irqsoff's function graph entries" function_trace_graph

# stack_tracer_run FUNCTION: the stack tracer on one function only, from a
# maximum of 0, for one call of it (sync calls ksys_sync once).
stack_tracer_run() {
	echo 0 > "$STACK_TRACER"
	try_truncate "$1" stack_trace_filter
	echo 0 > stack_max_size
	echo 1 > "$STACK_TRACER"
	sync
	echo 0 > "$STACK_TRACER"
}

# stack_functions: the Location column of stack_trace, without offsets:
# "  0) ksys_sync" for "  0)     1368      40   ksys_sync+0x5/0xa0".
# A return into code that no symbol names (the trampoline ftrace makes for
# one ftrace_ops, on 6.12) is listed by its address, which moves from
# kernel to kernel: it is shown as such.
stack_functions() {
	sed -n 's/^ *\([0-9]*)\) *[0-9]* *[0-9]* *\([^+ ]*\).*/\1 \2/p' stack_trace |
		sed 's/ 0x[0-9a-f]*$/ (an address with no symbol: a trampoline of ftrace)/'
}

# The 0) line's Depth: the stack in use up to that function's frame.
depth_of_0() {
	sed -n 's/^ *0) *\([0-9]*\) .*/\1/p' stack_trace
}

# max_against_depth MAX DEPTH: stack_max_size against the Depth of 0).
# The tracer learns the size of its own frames once per boot, at its
# first maximum (tracer_frame_size in kernel/trace/trace_stack.c), and
# takes it off every later measure. If ftrace called it then through
# arch_ftrace_ops_list_func() (other ftrace users registered beside it),
# that size holds the list function's frame, 64 bytes on this kernel
# (seven pushes and a return address, in its disassembly), which a later
# measure made without it does not have, or the other way round
# (measured: a first maximum taken under the function tracer, then one
# without it, read 256 against a Depth of 320). So the two agree to 64
# bytes, whatever ran earlier in the boot. The tracer's
# own frames are more than that (ftrace_caller() alone saves at least 168
# bytes of registers, MCOUNT_REG_SIZE in arch/x86/kernel/ftrace_64.S): a
# maximum that kept them fails.
max_against_depth() {
	if [ -z "$2" ]; then
		echo "stack_max_size $1, no 0) line in stack_trace"
		return
	fi
	_off=$(( $1 - $2 ))
	if [ "${_off#-}" -le 64 ]; then
		echo "stack_max_size: the Depth of 0), the tracer's own frames left out"
	else
		echo "stack_max_size: $_off bytes off the Depth of 0)"
	fi
}

stack_tracer() {
	stack_tracer_run ksys_sync
	echo "-- stack_trace, the functions, deepest first:"
	stack_functions | sed 's/^/  /'
	case $(stack_functions | head -n 1) in
	'0) ksys_sync')	echo "0) is the traced function" ;;
	*)		echo "0) is NOT the traced function" ;;
	esac
	max_against_depth "$(cat stack_max_size)" "$(depth_of_0)"
	echo > stack_trace_filter
	echo 0 > stack_max_size
}
check stack-tracer "the stack tracer reports the traced function at 0), not itself" stack_tracer

# The dump probes print the whole buffer on the console, at KERN_EMERG,
# where it would mix with the lab's output. Silence the console while a
# probe may fire (console_loglevel 0: nothing is printed) and read the
# dump back from the kernel log, after a line of our own.
fire_quietly() {
	_level=$(cut -f1 /proc/sys/kernel/printk)
	echo 0 > /proc/sys/kernel/printk
	echo "lab07: $1" > /dev/kmsg
	sync
	echo "$_level" > /proc/sys/kernel/printk
}

# dumped TAG: what the kernel log holds after fire_quietly TAG (after its
# last "lab07: TAG" line): the dump's lines, marker lines reduced to their
# text.
dumped() {
	dmesg > /tmp/kernel.log
	_at=$(grep -n "^lab07: $1\$" /tmp/kernel.log | tail -n 1 | cut -d: -f1)
	tail -n +$((_at + 1)) /tmp/kernel.log |
		sed 's/.*tracing_mark_write: \(.*\)/  marker line: \1/'
}

# "dump" takes no count: it always dumps once. The dump empties the buffer
# (it consumes what it prints) and turns tracing off.
dump() {
	mark "before the dump"
	setup 'ksys_sync:dump' set_ftrace_filter
	probes
	fire_quietly "dump 1"
	probes
	echo "tracing_on after the dump: $(cat tracing_on)"
	echo "marker lines left in trace: $(markers)"
	echo "-- the kernel log after the first sync:"
	dumped "dump 1"
	echo 1 > tracing_on
	mark "after the dump"
	fire_quietly "dump 2"
	echo "-- the kernel log after the second sync:"
	dumped "dump 2"
}
check dump "ksys_sync:dump prints the buffer to the console once, and empties it" dump

# "cpudump" dumps only this CPU's buffer, every time: a count is ignored.
# The marker and the sync run on one CPU (CPU 0), so the dump holds the
# marker.
cpudump() {
	on_one_cpu
	mark "before the cpudump"
	setup 'ksys_sync:cpudump:5' set_ftrace_filter
	probes
	fire_quietly "cpudump 1"
	echo "-- the kernel log after the first sync:"
	dumped "cpudump 1"
	echo 1 > tracing_on
	fire_quietly "cpudump 2"
	echo "-- the kernel log after the second sync:"
	dumped "cpudump 2"
	probes
	other_cpu_left_out
}

# other_cpu_left_out: with a second CPU (the debug kernel has two), a
# marker written on CPU 1 sits in CPU 1's buffer, and a cpudump fired on
# CPU 0 leaves it out; a probe that dumped every CPU would show it. On one
# CPU there is no other buffer to leave out, and nothing is printed.
# (Not nproc: it counts the CPUs this shell may run on, one since
# on_one_cpu.)
other_cpu_left_out() {
	[ "$(grep -c '^processor' /proc/cpuinfo)" -ge 2 ] || return 0
	echo 1 > tracing_on
	taskset 2 sh -c 'echo "written on CPU 1" > trace_marker'
	echo "-- marker lines in CPU 1's buffer: $(grep -c 'written on CPU 1' per_cpu/cpu1/trace)"
	fire_quietly "cpudump 3"
	echo "-- the kernel log after a sync on CPU 0, with a marker written on CPU 1:"
	dumped "cpudump 3"
}
check cpudump "ksys_sync:cpudump dumps at every hit; a count is ignored" cpudump

# dump_refusals: lines every kernel refuses with EINVAL, whether it knows
# the command or not (a probe in set_ftrace_notrace, a function that does
# not exist). A guard: checkpoint 6 already refuses them.
dump_refusals() {
	try_write 'ksys_sync:dump' set_ftrace_notrace
	try_write 'no_such_function_xyz:cpudump' set_ftrace_filter
}
guard dump-refusals "a dump probe in set_ftrace_notrace or on no function is EINVAL" dump_refusals

dump_errors() {
	echo "-- README, the probe commands:"
	grep -E '^[[:space:]]+(dump|cpudump)$' README
	try_write '!ksys_sync:dump' set_ftrace_filter
	try_write 'ksys_sync:dump:5' set_ftrace_filter
	try_write 'ksys_sync:dump' set_ftrace_filter
	probes
	try_write '!ksys_sync:dump' set_ftrace_filter
	try_write '!ksys_sync:cpudump' set_ftrace_filter
	probes
	# the refusals of the guard dump-refusals, scored here
	try_write 'ksys_sync:cpudump' set_ftrace_notrace
	try_write 'no_such_function_xyz:dump' set_ftrace_filter
	probes
}
check dump-errors "dump and cpudump: README lines, removal errors, the forced count, removal" dump_errors
