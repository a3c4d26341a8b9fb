#!/bin/sh
# description: Probe hash: function probes enable only the functions they probe
# requires: set_ftrace_filter enabled_functions
#
# Lab 01: the probes' ftrace_ops now carries a filter hash with exactly the
# probed functions, so only their call sites are patched. enabled_functions
# lists one line per patched call site; its first word is the function.

traced_functions() {
	cut -d' ' -f1 enabled_functions | sort -u
}

one_function() {
	try_write 'schedule:traceoff' set_ftrace_filter
	echo "traced for the probe:"
	traced_functions
}
check one-function "a probe on schedule patches schedule and nothing else" one_function

glob_probe() {
	try_write 'schedule_*:traceon' set_ftrace_filter
	grep '^schedule_' available_filter_functions | cut -d' ' -f1 | sort -u > /tmp/matching
	traced_functions > /tmp/traced
	echo "traced for the probe:"
	cat /tmp/traced
	if cmp -s /tmp/matching /tmp/traced; then
		echo "exactly the functions matching schedule_*"
	else
		echo "NOT the functions matching schedule_*"
	fi
}
check glob "a glob probe patches exactly the functions that match it" glob_probe

# A filter hash with no entry means "all functions": the last removal must
# unregister the ops, not leave it registered with an empty hash.
last_removed() {
	try_write 'schedule:traceoff' set_ftrace_filter
	try_write '!schedule:traceoff' set_ftrace_filter
	echo "enabled_functions: $(count_lines enabled_functions) line(s)"
	echo "current_tracer: $(cat current_tracer)"
}
guard last-removed "removing the last probe leaves no function traced" last_removed

two_instances() {
	mkdir instances/lab01
	try_write 'schedule:traceoff' set_ftrace_filter
	try_write 'vfs_fsync:traceoff' instances/lab01/set_ftrace_filter
	echo "top level probes:"
	grep : set_ftrace_filter
	echo "instance lab01 probes:"
	grep : instances/lab01/set_ftrace_filter
	echo "traced:"
	traced_functions
	hit_functions
	echo "after schedule ran: tracing_on top=$(cat tracing_on)" \
		"lab01=$(cat instances/lab01/tracing_on)"
	try_write '!schedule:traceoff' set_ftrace_filter
	echo "traced once the top-level probe is gone:"
	traced_functions
}
check instances "probes of two instances patch their own functions and act on their own buffer" two_instances

# Each probe command has its own ftrace_ops (patch 0004). ksys_sync gets a
# traceon probe and a traceoff probe; the traceoff kind is older (made for
# vfs_fsync first, which then leaves it), so its ops is further down
# ftrace's list: traceon fires first, traceoff last, and tracing ends up
# off. With one ops for all probes, ksys_sync's entries ran newest first:
# traceoff, then traceon.
probe_kinds() {
	try_write 'vfs_fsync:traceoff' set_ftrace_filter
	try_write 'ksys_sync:traceon' set_ftrace_filter
	try_write 'ksys_sync:traceoff' set_ftrace_filter
	try_write '!vfs_fsync:traceoff' set_ftrace_filter
	echo "probes, as listed:"
	grep : set_ftrace_filter
	echo "ops tracing ksys_sync: $(ops_count ksys_sync)"
	sync
	echo "after sync ran ksys_sync: tracing_on=$(cat tracing_on)"
}
check kinds "each probe command has its own ops: newest kind listed and fired first" probe_kinds

# Two probe kinds share ksys_sync. Removing one must leave the other
# working: the function stays patched and the remaining probe fires.
# Patch 0001 never takes a function out of a filter; it rebuilds the
# filter from the probes left (build_probe_filter() in ftrace.c), and
# patch 0004 gives each kind a filter of its own. (In 2013 one filter
# served all probes, and a removal took the function out of it while
# another probe still needed it: see the handout.)
remove_kind() {
	try_write 'ksys_sync:traceon' set_ftrace_filter
	try_write 'ksys_sync:traceoff' set_ftrace_filter
	try_write '!ksys_sync:traceoff' set_ftrace_filter
	echo "probes left:"
	grep : set_ftrace_filter
	echo "ops tracing ksys_sync: $(ops_count ksys_sync)"
	if grep -qv '^ksys_sync ' enabled_functions; then
		echo "other functions patched: some"
	else
		echo "other functions patched: none"
	fi
	echo 0 > tracing_on
	sync
	echo "after sync ran ksys_sync: tracing_on=$(cat tracing_on)"
}
check remove-kind "removing one probe kind leaves the other patched and firing" remove_kind

# A kind on two functions loses one: its filter is rebuilt from the
# probes left (build_probe_filter() in ftrace.c, called with nothing to
# add), so the other function stays patched, and only it. A filter
# built empty would mean "every function".
remove_function() {
	try_write 'vfs_fsync:traceoff' set_ftrace_filter
	try_write 'ksys_sync:traceoff' set_ftrace_filter
	try_write '!vfs_fsync:traceoff' set_ftrace_filter
	echo "probes left:"
	grep : set_ftrace_filter
	if [ "$(traced_functions)" = ksys_sync ]; then
		echo "functions patched: ksys_sync alone"
	elif traced_functions | grep -qx ksys_sync; then
		echo "functions patched: ksys_sync and others"
	else
		echo "functions patched: not ksys_sync"
	fi
}
check remove-function "removing one function of a kind leaves its other function patched, and only it" remove_function

# The dispatcher finds the probe of the function that was hit among the
# entries of its bucket (function_probe_dispatch() in ftrace.c). A
# kind's table has 1024 buckets (FTRACE_PROBE_HASH_BITS), and
# hash_for_each_possible() picks one with hash_long(ip, 10): the top ten
# bits of ip times GOLDEN_RATIO_64 (include/linux/hash.h). The ip ftrace
# passes is the function's address in /proc/kallsyms (the lab kernels
# have no IBT, so no endbr64 before the call). The check takes a
# function that sync calls once (ksys_sync, or the next of SYNC_PATH if
# no other traceable function shares its bucket), finds the traceable
# functions of its bucket and gives them a traceon probe after its own,
# so they go before it there (hash_add_rcu() adds at the head). Theirs
# have a count of 0, so they never act, whoever calls them: only the
# probe of the function sync calls can turn tracing on, and must use up
# its count. Functions on the probe's own path (tracing, locks, RCU,
# preemption, interrupts) are left out.
GOLDEN_RATIO_64=0x61C8864680B583EB
SYNC_PATH="ksys_sync __x64_sys_sync iterate_supers sync_fs_one_sb sync_inodes_one_sb"
# probe_bucket ADDR: the bucket of the function at ADDR (hex, no 0x)
probe_bucket() {
	_bucket=$(( ((0x$1 * GOLDEN_RATIO_64) >> 54) & 1023 ))
}
# bucket_mates FUNCTION: the traceable functions in FUNCTION's bucket.
# The words of one command substitution, not "while read": read takes
# a system call per byte, and kallsyms has some 12,000 functions.
bucket_mates() {
	_addr=$(grep " $1\$" /proc/kallsyms | head -n 1 | cut -d' ' -f1)
	case $_addr in
	*[!0]*) ;;
	*) return ;;	# not found, or addresses hidden (kptr_restrict)
	esac
	probe_bucket "$_addr"
	_want=$_bucket
	_addr=
	for _w in $(grep -i ' t ' /proc/kallsyms | grep -v -e '\.' -e '\[' |
		    cut -d' ' -f1,3); do
		if [ -z "$_addr" ]; then
			_addr=$_w
			continue
		fi
		probe_bucket "$_addr"
		_addr=
		[ "$_bucket" = "$_want" ] && [ "$_w" != "$1" ] || continue
		case $_w in
		*trac*|*ring_buffer*|*lock*|*rcu*|*preempt*|*irq*|*sched*) ;;
		*) echo "$_w" ;;
		esac
	done | sort -u > /tmp/mates.sym
	grep -Fx -f /tmp/mates.sym available_filter_functions | sort -u
}
bucket() {
	_bucket=$(( ((0x$1 * GOLDEN_RATIO_64) >> 54) & 1023 ))
}
# bucket_mates FUNCTION: the traceable functions in FUNCTION's bucket
bucket_mates() {
	_addr=$(grep " $1\$" /proc/kallsyms | head -n 1 | cut -d' ' -f1)
	case $_addr in
	*[!0]*) ;;
	*) return ;;	# not found, or addresses hidden (kptr_restrict)
	esac
	probe_bucket "$_addr"
	_want=$_bucket
	grep -i ' t ' /proc/kallsyms | grep -v -e '\.' -e '\[' -e " $1\$" |
	while read -r _addr _type _name; do
		case $_name in
		*trac*|*ring_buffer*|*lock*|*rcu*|*preempt*|*irq*|*sched*) continue ;;
		esac
		probe_bucket "$_addr"
		[ "$_bucket" = "$_want" ] && echo "$_name"
	done | sort -u > /tmp/mates.sym
	grep -Fx -f /tmp/mates.sym available_filter_functions | sort -u
}
bucket() {
	for _t in $SYNC_PATH; do
		bucket_mates "$_t" > /tmp/mates
		[ -s /tmp/mates ] && break
	done
	if [ -s /tmp/mates ]; then
		echo "a function sync calls, with others in its bucket: found"
	else
		echo "a function sync calls, with others in its bucket: none"
	fi
	setup "$_t:traceon:1" set_ftrace_filter
	while read -r _f; do
		setup "$_f:traceon:0" set_ftrace_filter
	done < /tmp/mates
	grep ':traceon:count=' set_ftrace_filter | cut -d: -f1 | sort -u > /tmp/probed
	traced_functions > /tmp/traced
	if ! [ -s /tmp/probed ]; then
		echo "functions patched: none (no probe was set)"
	elif cmp -s /tmp/probed /tmp/traced; then
		echo "functions patched: exactly the probed ones"
	else
		echo "functions patched: NOT exactly the probed ones"
	fi
	echo 0 > tracing_on
	sync
	echo "after sync: tracing_on=$(cat tracing_on)"
	echo "its probe after sync: $(grep "^$_t:traceon:" set_ftrace_filter | cut -d: -f3)"
}
check bucket "a function sync calls and those in its bucket of the table: each probe patches its function; sync uses up the count of the one it calls" bucket
