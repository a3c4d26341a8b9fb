#!/bin/sh
# description: Event probes: enable_event and disable_event in set_ftrace_filter
# requires: set_ftrace_filter events/sched/sched_switch/enable
#
# Lab 03: FUNCTION:enable_event:SYSTEM:EVENT[:COUNT] (and disable_event)
# switch a trace event on or off when FUNCTION is hit. Adding the probe puts
# the event into soft mode (checkpoint 2): its tracepoint is registered at
# once, and a hit only flips the SOFT_DISABLED bit. The enable file shows
# soft mode with a '*'.
#
# Probes on schedule or try_to_wake_up fire between any two shell commands,
# so the checks either start from a state where a hit changes nothing, or
# use ksys_sync, which runs only when the script says "sync".

ENABLE=events/sched/sched_switch/enable

# The event stays off, its tracepoint armed, until the probed function runs.
until_hit() {
	state "before"
	setup 'ksys_sync:enable_event:sched:sched_switch' set_ftrace_filter
	probes
	state "probe added, ksys_sync not run yet"
	hit_functions
	switches
	sync
	state "after sync"
	hit_functions
	switches
}
check until-hit "the target event reads 0* and records nothing until the probe fires" until_hit

# The example of the kernel's documentation (Documentation/trace/ftrace.rst,
# "Filter commands"); commit 3cd715de's own first example was
# schedule:enable_event:sched:sched_switch. sched_switch starts enabled, so the
# probe's hits change nothing and use up no count until the event is
# switched off by hand.
enable_count() {
	echo 1 > $ENABLE
	setup 'try_to_wake_up:enable_event:sched:sched_switch:2' set_ftrace_filter
	state "probe added on an enabled event"
	hit_functions
	probes
	for _n in 1 2 3; do
		echo 0 > $ENABLE
		hit_functions
		state "off by hand, then try_to_wake_up ran ($_n)"
		probes
	done
}
check enable-count "try_to_wake_up:enable_event:sched:sched_switch:2 switches the event on twice" enable_count

# The second example: disable_event on schedule, starting from a disabled
# event, which the probe then keeps off twice.
disable_count() {
	setup 'schedule:disable_event:sched:sched_switch:2' set_ftrace_filter
	state "probe added on a disabled event"
	hit_functions
	probes
	for _n in 1 2 3; do
		echo 1 > $ENABLE
		hit_functions
		state "on by hand, then schedule ran ($_n)"
		probes
	done
}
check disable-count "schedule:disable_event:sched:sched_switch:2 switches the event off twice" disable_count

# Soft mode is counted: it ends with its last user, and the event is left
# the way the probes last set it.
removal() {
	setup 'ksys_sync:enable_event:sched:sched_switch' set_ftrace_filter
	probes
	try_write '!ksys_sync:enable_event:sched:sched_switch' set_ftrace_filter
	state "removed before it fired"
	probes

	try_write 'ksys_sync:enable_event:sched:sched_switch' set_ftrace_filter
	try_write 'schedule:enable_event:sched:sched_switch:0' set_ftrace_filter
	probes
	state "two probes"
	try_write '!schedule:enable_event:sched:sched_switch:0' set_ftrace_filter
	state "one probe left"
	sync
	state "after sync"
	try_write '!ksys_sync:enable_event:sched:sched_switch' set_ftrace_filter
	state "last probe removed"
	probes
	try_write '!ksys_sync:enable_event:sched:sched_switch' set_ftrace_filter
}
check removal "removing the last probe ends soft mode; the event keeps the state the probe set" removal

# Several event probes on one function, and one line removed. A
# function takes one probe per probe ops: one plain enable_event, one
# counted enable_event, one plain and one counted disable_event. A second
# plain enable_event on ksys_sync is refused, whatever event it names. As
# in 6.12, "!ksys_sync:enable_event:sched:sched_wakeup" removes the plain
# enable_event probe of ksys_sync, which names sched_switch: the event of
# the line is looked up, but the removal goes by function and probe ops
# only. The counted and the disable_event probes stay, and so does the
# probe on another function; an event leaves soft mode with the last
# probe that held it, and a removed probe no longer fires.
sched_state() {
	echo "sched:$1${2:+ $2}: enable reads $(cat "events/sched/$1/enable")"
}

# The listing's order of one function's probes differs from checkpoint 5
# on (a run there listed ksys_sync's plain enable_event probe after
# vfs_fsync's, where upstream lists it before): sorted, every kernel
# lists the same lines.
sorted_probes() {
	probes | sort
}

several() {
	setup 'ksys_sync:enable_event:sched:sched_switch' set_ftrace_filter
	setup 'ksys_sync:enable_event:sched:sched_waking:5' set_ftrace_filter
	setup 'ksys_sync:disable_event:sched:sched_wakeup' set_ftrace_filter
	setup 'vfs_fsync:enable_event:sched:sched_switch' set_ftrace_filter
	sorted_probes
	try_write 'ksys_sync:enable_event:sched:sched_wakeup' set_ftrace_filter
	try_write '!ksys_sync:enable_event:sched:sched_wakeup' set_ftrace_filter
	sorted_probes
	sched_state sched_switch
	sched_state sched_waking
	sched_state sched_wakeup
	sync
	sched_state sched_switch "after sync"
	sched_state sched_waking "after sync"
	sched_state sched_wakeup "after sync"
	sorted_probes
}
check several "one plain enable_event probe per function; !f:enable_event removes it whatever event it names" several

errors() {
	setup 'ksys_sync:enable_event:sched:sched_switch:0x2' set_ftrace_filter
	probes
	try_write 'ksys_sync:enable_event:nosuchsystem:sched_switch' set_ftrace_filter
	try_write 'ksys_sync:enable_event:sched:nosuchevent' set_ftrace_filter
	try_write 'ksys_sync:enable_event:sched' set_ftrace_filter
	try_write 'ksys_sync:enable_event' set_ftrace_filter
	try_write 'ksys_sync:disable_event:sched:sched_switch:' set_ftrace_filter
	try_write 'ksys_sync:disable_event:sched:sched_switch:two' set_ftrace_filter
	try_write 'ksys_sync:disable_event:sched:sched_switch:99999999999999999999' set_ftrace_filter
	try_write 'no_such_function_xyz:disable_event:sched:sched_wakeup' set_ftrace_filter
	try_write 'ksys_sync:disable_event:sched:sched_wakeup' set_ftrace_notrace
	try_write '!ksys_sync:disable_event:sched:sched_switch' set_ftrace_filter
	echo "sched_wakeup (no probe was added): $(cat events/sched/sched_wakeup/enable)"
	probes
}
check errors "bad probe lines fail with the errors of 6.12 and leave no soft mode behind" errors

# The removal rule of the probes, in full: "!GLOB:enable_event:SYSTEM:EVENT"
# removes the plain enable_event probe of every function GLOB matches,
# whatever event each one names. event_probe_callback()
# (kernel/trace/trace_events.c) looks the event of the line up, so it must
# exist, then hands only the glob and the probe ops to
# unregister_ftrace_function_probe_func(). 6.12's event_enable_func()
# does the same. Event triggers tell their targets apart (lab 06):
# there, "!enable_event:sched:sched_wakeup" removes only the trigger
# that names sched_wakeup.
any_event() {
	setup 'ksys_sync:enable_event:sched:sched_switch' set_ftrace_filter
	setup 'vfs_fsync:enable_event:sched:sched_waking' set_ftrace_filter
	setup 'vfs_fsync:disable_event:sched:sched_wakeup' set_ftrace_filter
	sorted_probes
	try_write '!*sync:enable_event:sched:sched_wakeup' set_ftrace_filter
	sorted_probes
	sched_state sched_switch
	sched_state sched_waking
	sched_state sched_wakeup
	try_write '!*sync:disable_event:sched:no_such_event' set_ftrace_filter
	try_write '!*sync:disable_event:sched:sched_switch' set_ftrace_filter
	sorted_probes
	sched_state sched_wakeup
}
check any-event "!*sync:enable_event:sched:sched_wakeup removes the enable_event probes of ksys_sync and vfs_fsync, which name other events" any_event

# A probe on a module's event holds the module: event_probe_add() takes a
# reference on it (trace_event_try_get_ref(), kernel/trace/trace_events.c),
# and the last event_probe_put() drops it, so delete_module() refuses to
# unload it while the probe exists (try_stop_module(), kernel/module/main.c:
# "Resource temporarily unavailable") and unloads it once the probe is gone.
# The lab kernel has no modules: this check runs on the debug kernel alone
# (make lab 3 DEBUG=1, make grade 3), with samples/trace_events' module.
module_ref() {
	ENABLE=events/sample-trace/foo_bar/enable
	try_insmod
	setup 'ksys_sync:enable_event:sample-trace:foo_bar' set_ftrace_filter
	probes
	state "probe added"
	try_rmmod "with the probe"
	sync
	state "after sync"
	try_write '!ksys_sync:enable_event:sample-trace:foo_bar' set_ftrace_filter
	probes
	try_rmmod "once the probe is removed"
	echo "events/sample-trace after rmmod: $([ -d events/sample-trace ] && echo present || echo gone)"
}
module_check module-ref "a probe on a module's event holds the module until the probe is removed" module_ref
