#!/bin/sh
# description: Snapshot probe: swap in the snapshot buffer when a function runs
# requires: set_ftrace_filter snapshot
#
# Lab 05: "<function>:snapshot[:count]" swaps the live buffer with the
# snapshot buffer each time <function> runs: "snapshot" then holds what was
# traced before the call, and tracing goes on in "trace". The lines in the
# buffers come from trace_marker, so their text is known in advance; the
# probed function is ksys_sync(), which runs only when we call sync.

# Between checks the snapshot buffer is not reset: free it, so that each
# check starts with no snapshot buffer at all.
free_snapshot() {
	echo 0 > snapshot
}

# The buffer is allocated when the probe is added, before it ever fires.
allocate() {
	free_snapshot
	mkdir instances/lab05
	snapshot_state
	setup 'ksys_sync:snapshot' set_ftrace_filter
	snapshot_state
	messages snapshot
	echo "instance lab05: $(snapshot_state instances/lab05)"
	try_write 'ksys_sync:snapshot' instances/lab05/set_ftrace_filter
	echo "instance lab05: $(snapshot_state instances/lab05)"
}
check allocate "adding the probe allocates the snapshot buffer of its instance, before any hit" allocate

swap() {
	free_snapshot
	setup 'ksys_sync:snapshot' set_ftrace_filter
	mark "one: before sync"
	mark "two: before sync"
	sync
	mark "three: after sync"
	messages snapshot
	messages trace
}
check swap "sync swaps the buffers: lines written before it are in snapshot, later ones in trace" swap

count() {
	free_snapshot
	setup 'ksys_sync:snapshot:1' set_ftrace_filter
	mark "first"
	sync
	mark "second"
	sync
	mark "third"
	probes
	messages snapshot
	messages trace
}
check count "ksys_sync:snapshot:1 swaps at the first sync only" count

# Plain and counted probes are two kinds: "!f:snapshot" removes only the
# plain one, a counted one is removed by naming a count, any count.
removal() {
	free_snapshot
	setup 'ksys_sync:snapshot' set_ftrace_filter
	setup 'ksys_sync:snapshot:5' set_ftrace_filter
	probes
	try_write '!ksys_sync:snapshot' set_ftrace_filter
	probes
	try_write '!ksys_sync:snapshot' set_ftrace_filter
	try_write '!ksys_sync:snapshot:0' set_ftrace_filter
	probes
	mark "after removal"
	sync
	messages snapshot
	messages trace
}
check removal "listed as :unlimited and :count=N; removed with !f:snapshot and !f:snapshot:0" removal

# A probe of an instance swaps that instance's buffers
# (tracing_snapshot_instance() of the probe's trace_array): the top
# level's buffer is not swapped, and its snapshot buffer is never
# allocated.
instance() {
	free_snapshot
	mkdir instances/lab05
	setup 'ksys_sync:snapshot' instances/lab05/set_ftrace_filter
	echo "lab05: before sync" > instances/lab05/trace_marker
	mark "top level: before sync"
	sync
	echo "lab05: after sync" > instances/lab05/trace_marker
	mark "top level: after sync"
	messages instances/lab05/snapshot
	messages instances/lab05/trace
	echo "top level: $(snapshot_state)"
	messages trace
}
check instance "a probe in instances/lab05 swaps lab05's buffers, not the top level's" instance

# Errors, and what is allocated when a command fails: a bad count or the
# notrace file fail before the buffer is allocated, a function that does
# not exist only after. Under a latency tracer the snapshot buffer is the
# tracer's: the probe can be added but does not swap (the count still
# drops), and "echo 1 > snapshot" is refused.
errors() {
	free_snapshot
	try_write 'ksys_sync:snapshot:abc' set_ftrace_filter
	try_write 'ksys_sync:snapshot' set_ftrace_notrace
	snapshot_state
	try_write 'no_such_function_xyz:snapshot' set_ftrace_filter
	snapshot_state
	probes
	free_snapshot
	echo irqsoff > current_tracer
	try_write 'ksys_sync:snapshot:2' set_ftrace_filter
	try_write 1 snapshot
	sync
	probes
	echo nop > current_tracer
}
check errors "bad count, notrace, unknown function: EINVAL; under irqsoff the probe does not swap" errors

# trace_texts [FILE]: the lines of FILE that the check wrote (marks) and
# those the kernel wrote itself ("*** ... ***"), as their text alone.
trace_texts() {
	echo "-- ${1:-trace}:"
	trace_body "$1" | sed -e 's/.*tracing_mark_write: //' -e 's/.*: \*\*\*/***/'
}

# The probe outlives its buffer, as in 6.12. Leaving a latency tracer frees
# the snapshot buffer, whoever else needed it: tracing_set_tracer()
# (kernel/trace/trace.c) calls free_snapshot() when the old tracer kept
# its maximum there (irqsoff does) and the new one does not. The probe
# stays, and its next hit finds no buffer: tracing_snapshot_instance_cond()
# writes two lines into the trace and turns tracing off.
freed() {
	free_snapshot
	setup 'ksys_sync:snapshot' set_ftrace_filter
	echo irqsoff > current_tracer
	echo nop > current_tracer
	echo "after irqsoff, then nop: $(snapshot_state)"
	mark "before sync"
	sync
	read -r _on < tracing_on
	echo "tracing_on after sync: $_on"
	trace_texts
	probes
}
check freed "irqsoff, then nop frees the buffer under the probe; its next hit stops tracing" freed

# A count that reads as negative: an empty one (the count slot keeps
# its initial -1, see ftrace_snapshot_callback()), or 2^63 and more,
# which kstrtoul() parses into the same slot. A counted snapshot probe
# whose count is below zero never swaps and keeps its count
# (ftrace_snapshot_count() in kernel/trace/trace_functions.c).
empty_count() {
	free_snapshot
	setup 'ksys_sync:snapshot:' set_ftrace_filter
	mark "before sync"
	sync
	mark "after sync"
	probes
	messages snapshot
	messages trace
}
check empty-count "ksys_sync:snapshot: (an empty count, -1) never swaps and keeps its count" empty_count
