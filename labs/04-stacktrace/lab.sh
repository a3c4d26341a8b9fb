#!/bin/sh
# description: Stacktrace probe: record the stack of a probed function
# requires: set_ftrace_filter
#
# Lab 04: "<function>:stacktrace[:count]" writes a "<stack trace>" entry
# into the instance's buffer each time <function> runs. The entry lists the
# probed function first, then its callers; ftrace's own frames are skipped.

# stack_lines [FILE]: the frames of every stack trace entry, without the
# entry's header line (whose flags column can vary from run to run).
stack_lines() {
	grep '^ => ' "${1:-trace}"
}

# The sync system call reaches ksys_sync() by one path only, so the whole
# stack is known in advance. Our probe skips exactly its own frames
# (PROBE_STACK_SKIP in kernel/trace/trace_functions.c), so the entry
# starts at the probed function. Upstream 6.12 skips as many frames on a
# path one frame shorter and starts at the caller, __do_sys_sync: the
# check is skipped on upstream (check_ours).
first_frame() {
	setup 'ksys_sync:stacktrace' set_ftrace_filter
	sync
	echo "stack trace entries: $(stack_entries)"
	stack_lines
	case $(stack_lines | head -n 1) in
	' => ksys_sync')	echo "first frame: the probed function" ;;
	*)			echo "first frame: NOT the probed function" ;;
	esac
	if stack_lines | grep -q 'ftrace\|trace_stack\|probe'; then
		echo "ftrace's own frames are in the entry"
	else
		echo "none of ftrace's own frames"
	fi
}
check_ours first-frame "sync gives one entry: ksys_sync, then its callers, no ftrace frames" first_frame

# The trace file around the entries of a plain and a counted probe on
# ksys_sync, one each for a sync: the header counts both
# (entries-in-buffer/entries-written), and each entry's own line fills
# the columns the header names, with the task that called the probed
# function and its context: interrupts on, not in an interrupt. Two
# columns are shown as "?": need-resched, which depends on where the tick
# fell, and preempt-depth, which depends on the configuration:
# tracing_gen_ctx_dec() takes off the level that ftrace's dispatcher adds
# only with CONFIG_PREEMPTION, so the debug kernel (CONFIG_PREEMPT_COUNT
# without it) would show 1 where the lab's kernel, which counts no
# preemption, shows ".". #P, the number of CPUs, is shown as CPUS, and
# the entries' lines with single blanks: the width of the task column
# depends on the pid. With no event and no tracer on, nothing saves the
# names of tasks (saved_cmdlines): the task is "<...>".
header() {
	setup 'ksys_sync:stacktrace' set_ftrace_filter
	setup 'ksys_sync:stacktrace:5' set_ftrace_filter
	sync
	sed -n '1,/^# *| |/p' trace | sed 's/#P:[0-9]*/#P:CPUS/'
	grep '<stack trace>$' trace | tr -s ' ' | sed 's/^ //; s/\(\] \)\(.\).\(.\)./\1\2?\3?/'
}
check header "a plain and a counted probe: the header counts both entries; their lines fill its columns" header

# Many forks, but ":2" records two stack traces. While tracing is off no
# entry can be written, and the count is left alone. Each entry is a
# fork's: __do_sys_clone is among its first two frames (second after
# kernel_clone here, first on upstream 6.12, which skips one frame more:
# see first-frame).
count() {
	echo 0 > tracing_on
	setup 'kernel_clone:stacktrace:2' set_ftrace_filter
	hit_functions
	echo "with tracing off: $(grep stacktrace set_ftrace_filter)"
	echo 1 > tracing_on
	hit_functions
	echo "after the forks: $(grep stacktrace set_ftrace_filter)"
	echo "stack trace entries: $(stack_entries)"
	echo "entries of a fork: $(grep -A 2 '<stack trace>' trace | grep -c '^ => __do_sys_clone$')"
}
check count "kernel_clone:stacktrace:2 records exactly two stack traces" count

# Plain and counted probes are two kinds: "!f:stacktrace" removes only the
# plain one, a counted one is removed by naming a count, any count.
removal() {
	setup 'kernel_clone:stacktrace' set_ftrace_filter
	setup 'ksys_sync:stacktrace:3' set_ftrace_filter
	probes
	try_write '!ksys_sync:stacktrace' set_ftrace_filter
	try_write '!kernel_clone:stacktrace' set_ftrace_filter
	probes
	try_write '!ksys_sync:stacktrace:0' set_ftrace_filter
	probes
	echo > trace
	hit_functions
	sync
	echo "stack trace entries once removed: $(stack_entries)"
}
check removal "listed as :unlimited and :count=N; removed with !f:stacktrace and !f:stacktrace:0" removal

errors() {
	setup 'kernel_clone:stacktrace' set_ftrace_filter
	try_write 'kernel_clone:stacktrace' set_ftrace_filter
	try_write 'kernel_clone:stacktrace:abc' set_ftrace_filter
	try_write 'no_such_function_xyz:stacktrace' set_ftrace_filter
	try_write '!vfs_fsync:stacktrace' set_ftrace_filter
	try_write '!kernel_clone:stacktrace:0' set_ftrace_filter
	try_write 'kernel_clone:stacktrace' set_ftrace_notrace
	# and a function with no probe yet: refused for the file alone
	try_write 'ksys_sync:stacktrace' set_ftrace_notrace
	probes
}
check errors "a probe already there, a bad count, no such function, notrace: EINVAL/ENODEV" errors

instance() {
	mkdir instances/lab04
	setup 'ksys_sync:stacktrace' instances/lab04/set_ftrace_filter
	sync
	echo "top level: $(stack_entries) stack trace entries"
	echo "lab04: $(stack_entries instances/lab04/trace) stack trace entries"
	if stack_lines instances/lab04/trace | grep -q '^ => __do_sys_sync$'; then
		echo "lab04's entry is a stack of sync"
	else
		echo "lab04's entry is NOT a stack of sync"
	fi
}
check instance "a probe of an instance writes into that instance's buffer" instance
