#!/bin/sh
# description: Event triggers: a command run by a trace event, with a count and a filter
# requires: events/kmem/kmalloc/enable events/syscalls/sys_enter_read/enable events/syscalls/sys_enter_umask/enable snapshot trace_marker error_log
#
# Lab 06: every event has a "trigger" file. "CMD[:count] [if FILTER]"
# written there runs CMD each time the event fires (and its record
# matches FILTER). Commands: traceon, traceoff, snapshot, stacktrace,
# enable_event and disable_event. An event with a trigger is in soft
# mode ("0*"): its tracepoint is registered even if the event records
# nothing.
#
# The events were picked so that only the lab makes them fire:
# syscalls of the lab's own shell (read, chdir, umask), kmem:kmalloc of
# 512 bytes or more by the lab's own shell (a filter on common_pid), and
# initcall:initcall_finish, which fires during boot and never again.

KMALLOC=events/kmem/kmalloc
READ=events/syscalls/sys_enter_read
CHDIR=events/syscalls/sys_enter_chdir
QUIET=events/initcall/initcall_finish
UMASK=events/syscalls/sys_enter_umask
PRINT=events/ftrace/print

# my_pid: set MY_PID to the pid of the shell running the check (each
# check runs in a subshell of its own, where $$ is still the lab's);
# /proc/self, read by a builtin, is that shell. Not "$(my_pid)": that
# would be the pid of the command substitution's own subshell.
my_pid() {
	read -r MY_PID _rest < /proc/self/stat
}

# state EVENT_DIR: what the event's enable file reads. The shell's
# "read" is used, not cat: no program is started.
state() {
	read -r _v < "$1/enable"
	note "$1/enable: $_v"
	echo "$1/enable: $_v"
}

# kmallocs_between A B: the number of kmalloc records between the
# markers A and B.
kmallocs_between() {
	sed -n "/tracing_mark_write: $1\$/,/tracing_mark_write: $2\$/p" trace |
		grep -c ' kmalloc: '
}

# some N: "none" or "some", for counts that depend on what the kernel
# allocates on the way.
some() {
	if [ "$1" -eq 0 ]; then echo none; else echo some; fi
}

# tracing: what tracing_on reads, and the listed triggers of EVENT_DIR.
tracing() {
	read -r _on < tracing_on
	echo "tracing_on=$_on, $(grep -v '^#' "$1/trigger")"
}

# The example of Documentation/trace/events.rst: the first read()
# enables kmalloc.
# enable_event puts kmalloc into soft mode (0*); the trigger runs at the
# entry of a read() syscall, before the file is read, so the shell can
# only ever see 1*: gdb shows the 0* (lab.gdb). A program run before the
# first read() allocates, and nothing is recorded; run after it, it is.
article() {
	state $KMALLOC
	setup 'enable_event:kmem:kmalloc:1' $READ/trigger
	mark armed
	/bin/busybox true
	mark "exec, no read"
	echo "the first read() since:"
	state $KMALLOC
	mark "read done"
	/bin/busybox true
	mark "exec after the read"
	echo "kmalloc records while a program ran, before the first read(): $(kmallocs_between armed 'exec, no read')"
	echo "kmalloc records while it ran again, after the read(): $(some "$(kmallocs_between 'read done' 'exec after the read')")"
	show $READ/trigger
	state $READ
	# removed, the trigger ends soft mode on both events; kmalloc keeps
	# the state the trigger left it in: enabled
	try_write '!enable_event:kmem:kmalloc:0' $READ/trigger
	state $READ
	state $KMALLOC
}
check article "enable_event:kmem:kmalloc:1 on sys_enter_read: kmalloc records nothing until the first read()" article

# A counted, filtered post trigger on a regular TRACE_EVENT. Reading a
# file of tracefs allocates its seq_file page, 4096 bytes, before the
# first line is printed. The filter also names the check's own shell
# (common_pid), so another task's allocation cannot take a count: each
# of the three reads is one hit and shows the count after it. The
# listing is printed without the pid, which differs from run to run. The
# removal ends the test; kmalloc is soft disabled, so its own records
# are discarded, but the stack traces are kept.
stacktrace() {
	my_pid
	_pid=$MY_PID
	setup "stacktrace:5 if bytes_req >= 512 && common_pid == $_pid" $KMALLOC/trigger
	for _i in 1 2 3; do
		while read -r _l; do echo "read $_i: ${_l% && common_pid == $_pid}"; done < $KMALLOC/trigger
	done
	try_write '!stacktrace' $KMALLOC/trigger
	echo "stack traces in the buffer: $(stack_entries)"
	echo "  of them through seq_buf_alloc: $(grep -c '=> seq_buf_alloc$' trace)"
	echo "kmalloc records in the buffer: $(grep -c ' kmalloc: ' trace)"
	state $KMALLOC
}
check stacktrace "stacktrace:5 if bytes_req >= 512 on kmalloc: three 4096-byte allocations, count=2, three stack traces" stacktrace

# One trigger per command on an event (File exists), and traceon and
# traceoff count as one command. enable_event and disable_event share
# one slot per target event. A refused command leaves nothing behind:
# the list and the targets' soft mode are as before.
one_per_event() {
	setup 'stacktrace' $QUIET/trigger
	try_write 'stacktrace:3 if ret != 0' $QUIET/trigger
	try_write 'snapshot' $QUIET/trigger
	try_write 'snapshot:1' $QUIET/trigger
	try_write 'traceoff' $QUIET/trigger
	try_write 'traceon' $QUIET/trigger
	try_write 'enable_event:kmem:kfree' $QUIET/trigger
	try_write 'enable_event:kmem:kfree:2' $QUIET/trigger
	try_write 'disable_event:kmem:kfree' $QUIET/trigger
	try_write 'disable_event:kmem:kmem_cache_free' $QUIET/trigger
	show $QUIET/trigger
	state $QUIET
	state events/kmem/kfree
	state events/kmem/kmem_cache_free
	# one soft-mode user each: removing the one accepted trigger ends it
	try_write '!enable_event:kmem:kfree' $QUIET/trigger
	try_write '!disable_event:kmem:kmem_cache_free' $QUIET/trigger
	state events/kmem/kfree
	state events/kmem/kmem_cache_free
}
check one-per-event "one trigger per command and event (File exists); enable/disable_event once per target" one_per_event

# try_long N FILE: write "traceoff" padded with spaces to N bytes in all
# (the newline included); print the size, not the text.
try_long() {
	_pad=$(printf "%$(($1 - 9))s" '')
	if echo "traceoff$_pad" 2>/tmp/.err >> "$2"; then
		echo "'traceoff' + spaces, $1 bytes >> $2: ok"
	else
		echo "'traceoff' + spaces, $1 bytes >> $2: $(write_error)"
	fi
}

# What the parser refuses, and that a refused write registers nothing:
# no trigger is listed, the event stays out of soft mode, and so does
# the target of a refused enable_event.
bad_input() {
	for _w in 'no_such_command' 'enable_event:kmem:no_such_event' \
		'enable_event:no_such_system:kfree' 'enable_event:kmem' \
		'traceon:abc' 'traceon:5x' 'traceon:99999999999999999999' \
		'traceon if no_such_field == 1' 'traceon if ret ~ 1' \
		'traceon if ret == abc' 'traceon if' 'traceon:3 if' 'traceon ret == 1' \
		'enable_event:kmem:kfree if no_such_field == 1' '!no_such_command'; do
		try_write "$_w" $QUIET/trigger
	done
	try_long 4096 $QUIET/trigger
	show $QUIET/trigger
	state $QUIET
	state events/kmem/kfree
	try_long 4095 $QUIET/trigger
	show $QUIET/trigger
}
check bad-input "unknown command or event, bad count, bad filter, no expression, 4096 bytes: errors, nothing registered" bad_input

# A filter the parser refuses leaves its reason in error_log: the
# filter's text, a caret under where the parse stopped, and what was
# wrong. Truncating error_log empties it first (bad-input left entries);
# the time stamp of each entry is cut off.
filter_error_log() {
	: > error_log
	try_write 'traceon if no_such_field == 1' $QUIET/trigger
	try_write 'traceon if ret == 1 &&' $QUIET/trigger
	sed 's/^\[ *[0-9.]*\] //' error_log
}
check filter-error-log "a refused trigger filter leaves its reason, and a caret, in error_log" filter_error_log

# traceoff:2 turns tracing off twice, counting only the hits that found
# tracing on; then traceon:1 the same way round.
onoff() {
	setup 'traceoff:2' $CHDIR/trigger
	cd . && tracing $CHDIR
	cd . && tracing $CHDIR
	echo 1 > tracing_on
	cd . && tracing $CHDIR
	echo 1 > tracing_on
	cd . && tracing $CHDIR
	try_write '!traceoff:0' $CHDIR/trigger
	try_write 'traceon:1' $CHDIR/trigger
	cd . && tracing $CHDIR
	echo 0 > tracing_on
	cd . && tracing $CHDIR
	echo 0 > tracing_on
	cd . && tracing $CHDIR
}
check onoff "traceoff:2 and traceon:1 on sys_enter_chdir: the count drops only when tracing_on changes" onoff

# The snapshot buffer is allocated when the trigger is added; the hit
# swaps the buffers.
snapshot() {
	echo 0 > snapshot
	snapshot_state
	setup 'snapshot:1' $CHDIR/trigger
	snapshot_state
	mark "one: before cd"
	cd .
	mark "two: after cd"
	cd .
	mark "three: after the second cd"
	messages snapshot
	messages trace
	show $CHDIR/trigger
	echo 0 > snapshot
}
check snapshot "snapshot:1 on sys_enter_chdir: buffer allocated when added, swapped at the first cd" snapshot

# An empty trigger file lists the commands. ">" does not clear the list
# (it works like ">>"); "!" removes one command, whatever its count or
# filter; the last removal takes the event out of soft mode.
removal() {
	show $CHDIR/trigger
	state $CHDIR
	try_truncate 'traceoff' $CHDIR/trigger
	try_truncate 'stacktrace:3' $CHDIR/trigger
	show $CHDIR/trigger
	state $CHDIR
	try_write '!traceoff' $CHDIR/trigger
	show $CHDIR/trigger
	try_write '!stacktrace if no_such_field == 1' $CHDIR/trigger
	show $CHDIR/trigger
	state $CHDIR
	try_write '!stacktrace' $CHDIR/trigger
	echo 1 > $CHDIR/enable
	try_write 'traceoff' $CHDIR/trigger
	state $CHDIR
	try_write '!traceoff' $CHDIR/trigger
	state $CHDIR
}
check removal "the empty list, > adds like >>, ! removes, the last removal leaves soft mode" removal

# Triggers belong to the instance of their trigger file: traceoff turns
# off that instance's tracing_on, enable_event finds its target in that
# instance.
instance() {
	mkdir instances/lab06
	setup 'traceoff' instances/lab06/$CHDIR/trigger
	setup 'enable_event:kmem:kmalloc' instances/lab06/$CHDIR/trigger
	show $CHDIR/trigger
	state instances/lab06/$KMALLOC
	state $KMALLOC
	cd .
	echo "tracing_on: lab06 $(cat instances/lab06/tracing_on), top level $(cat tracing_on)"
	state instances/lab06/$KMALLOC
	state $KMALLOC
}
check instance "triggers in instances/lab06 act on lab06 only" instance

# A snapshot trigger of an instance allocates and swaps that instance's
# buffers (snapshot_trigger() calls tracing_snapshot_instance() of the
# trigger file's trace_array); the top level's are left alone.
instance_snapshot() {
	echo 0 > snapshot
	mkdir instances/lab06
	setup 'snapshot:1' instances/lab06/$CHDIR/trigger
	echo "lab06: $(snapshot_state instances/lab06)"
	echo "lab06: before cd" > instances/lab06/trace_marker
	mark "top level: before cd"
	cd .
	echo "lab06: after cd" > instances/lab06/trace_marker
	mark "top level: after cd"
	messages instances/lab06/snapshot
	messages instances/lab06/trace
	echo "top level: $(snapshot_state)"
	messages trace
}
check instance-snapshot "snapshot:1 in instances/lab06 swaps lab06's buffers, not the top level's" instance_snapshot

# chdir_records: how many sys_enter_chdir records the buffer holds.
chdir_records() {
	grep -c ' sys_chdir(' trace
}

# disable_event turns its target off at the hit: the target's
# SOFT_DISABLED bit is set, and it records nothing from then on. A
# filtered enable_event turns it on only at a hit whose record matches.
# The triggering event is umask(), a builtin of the shell: "umask N"
# makes three calls, umask(0), umask(old) and umask(N).
enable_disable() {
	echo 1 > $CHDIR/enable
	setup 'disable_event:syscalls:sys_enter_chdir' $UMASK/trigger
	cd .
	umask 022
	cd .
	echo "chdir records, one cd before umask and one after: $(chdir_records)"
	state $CHDIR
	try_write '!disable_event:syscalls:sys_enter_chdir' $UMASK/trigger
	state $CHDIR
	echo > trace
	setup 'enable_event:syscalls:sys_enter_chdir if mask == 63' $UMASK/trigger
	umask 022
	cd .
	echo "chdir records after umask 022 (no match): $(chdir_records)"
	umask 077
	cd .
	echo "chdir records after umask 077 (mask 63 matches): $(chdir_records)"
	show $UMASK/trigger
	state $CHDIR
}
check enable-disable "disable_event stops its target at the hit; a filtered enable_event starts it only on a match" enable_disable

# A filtered trigger needs the record of its hit to test the filter on.
# The event is on, so its record goes to the ring buffer; with tracing_on
# at 0 none can be reserved there, and it is built in a scratch buffer
# that nobody reads, so that a filtered traceon can still turn tracing
# back on. (Were the event soft disabled, as with a trigger alone, its
# record would go to the per-CPU buffered event instead, whatever
# tracing_on is.) The filter names the check's shell.
scratch() {
	show $CHDIR/trigger
	setup 1 $CHDIR/enable
	setup 'traceon if common_pid == 0' $CHDIR/trigger
	echo 0 > tracing_on
	cd .
	read -r _on < tracing_on
	echo "tracing_on after a chdir that does not match: $_on"
	try_write '!traceon' $CHDIR/trigger
	my_pid
	setup "traceon if common_pid == $MY_PID" $CHDIR/trigger
	cd .
	read -r _on < tracing_on
	echo "tracing_on after a chdir of this shell: $_on"
	echo "chdir records: $(chdir_records)"
}
check scratch "a filtered traceon hit while tracing_on is 0 turns tracing on" scratch

# Writes to trace_marker are the hits of ftrace/print, whose trigger
# file is made with the instance's files (the event cannot be enabled).
# traceoff is a post trigger: the mark that stops tracing is recorded,
# the next one is not.
marker() {
	show $PRINT/trigger
	try_write 'traceoff' $PRINT/trigger
	mark "one"
	read -r _on < tracing_on
	echo "tracing_on: $_on"
	messages trace
	try_write "two" trace_marker
	show $PRINT/trigger
}
check marker "traceoff on ftrace/print: the first write to trace_marker is recorded, then tracing stops" marker

# trace_texts [FILE]: the lines of FILE that the check wrote (marks) and
# those the kernel wrote itself ("*** ... ***"), as their text alone.
trace_texts() {
	echo "-- ${1:-trace}:"
	trace_body "$1" | sed -e 's/.*tracing_mark_write: //' -e 's/.*: \*\*\*/***/'
}

# The snapshot trigger outlives its buffer, as in 6.12. "echo 0 > snapshot"
# frees the buffer that snapshot_trigger_init() allocated
# (tracing_snapshot_write(), kernel/trace/trace.c, asks nobody); the
# trigger stays, and its next hit finds no buffer:
# tracing_snapshot_instance_cond() writes two lines into the trace and
# turns tracing off.
snapshot_freed() {
	setup 'snapshot' $CHDIR/trigger
	echo 0 > snapshot
	echo "after echo 0 > snapshot: $(snapshot_state)"
	mark "before cd"
	cd .
	read -r _on < tracing_on
	echo "tracing_on after cd: $_on"
	trace_texts
	show $CHDIR/trigger
}
check snapshot-freed "echo 0 > snapshot frees the buffer under a snapshot trigger; its next hit stops tracing" snapshot_freed

# An enable_event trigger on a module's event holds the module:
# event_enable_trigger_init() takes a reference on its target
# (trace_event_try_get_ref(), kernel/trace/trace_events_trigger.c) and
# event_enable_trigger_free() drops it when the trigger is removed, so
# delete_module() refuses to unload the module in between
# (try_stop_module(), kernel/module/main.c). The lab kernel has no
# modules: this check runs on the debug kernel alone (make lab 6 DEBUG=1,
# make grade 6), with samples/trace_events' module.
module_trigger() {
	FOO_BAR=events/sample-trace/foo_bar
	try_insmod
	setup 'enable_event:sample-trace:foo_bar' $CHDIR/trigger
	show $CHDIR/trigger
	state $FOO_BAR
	try_rmmod "with the trigger"
	cd .
	state $FOO_BAR
	try_write '!enable_event:sample-trace:foo_bar' $CHDIR/trigger
	show $CHDIR/trigger
	try_rmmod "once the trigger is removed"
	echo "events/sample-trace after rmmod: $([ -d events/sample-trace ] && echo present || echo gone)"
}
module_check module-trigger "enable_event on a module's event holds the module until the trigger is removed" module_trigger

# A trigger goes on its event's list once its command is ready: until
# then no hit can run it. enable_event's init (event_enable_trigger_init())
# puts its target into soft mode, 0*, and registers the target's
# tracepoint, which allocates (allocate_probes() in kernel/tracepoint.c):
# a kmalloc of the writing shell itself, while kmalloc is in trigger
# mode already (a stacktrace trigger whose filter never matches). That
# kmalloc must not run the new trigger: the target reads 0* until the
# shell allocates again, which reading the list does (its seq_file
# buffer): 1*, and the count drops from 100 to 99. Reading an enable
# file allocates nothing, but opening it may: eventfs makes an event's
# file when a lookup asks for it. So the enable file is opened twice
# before the trigger goes in, and each read uses one of the open files.
init_first() {
	my_pid
	exec 3< events/sched/sched_process_fork/enable
	exec 4< events/sched/sched_process_fork/enable
	setup 'stacktrace if bytes_req == 12345678' $KMALLOC/trigger
	setup "enable_event:sched:sched_process_fork:100 if common_pid == $MY_PID" $KMALLOC/trigger
	if [ ! -e $KMALLOC/trigger ]; then
		echo "$KMALLOC/trigger: no such file"
		exec 3<&- 4<&-
		return
	fi
	read -r _v <&3
	echo "sched_process_fork once the trigger is added: $_v"
	_listed="no enable_event trigger"
	while read -r _l; do
		case $_l in
		enable_event*)	_listed=${_l% if common_pid == $MY_PID} ;;
		esac
	done < $KMALLOC/trigger
	echo "listed: $_listed"
	read -r _v <&4
	exec 3<&- 4<&-
	echo "sched_process_fork after a read of the list: $_v"
}
check init-first "a trigger takes no hit before its command's init ran: enable_event's own setup leaves its target off" init_first
