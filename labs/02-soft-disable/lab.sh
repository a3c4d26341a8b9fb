#!/bin/sh
# description: Soft disable: an event that is registered but records nothing
# requires: events/sched/sched_switch/enable set_event trace_marker
# flags: gdb
#
# Lab 02: an event file can be in soft mode (SOFT_MODE): its tracepoint
# stays registered, and one bit, SOFT_DISABLED, says whether the event
# records. The enable file shows it as "0*" or "1*".
#
# At this checkpoint no kernel code puts an event into soft mode yet (the
# probes of lab 03 will), so the lab has gdb make one of its own writes to
# the enable file a soft-mode user's call: after "ask_gdb ft-soft sched
# sched_switch on", the next "echo 1 > enable" runs
# trace_event_enable_disable(file, 1, soft_disable=1), that is the kernel's
# event_soft_mode_get; "off" and "echo 0" run event_soft_mode_put. The
# harness runs this lab under gdb, which serves the requests. Every check
# takes the event out of soft mode before it ends: reset_tracing cannot,
# as writes to "enable" no longer leave soft mode.

ENABLE=events/sched/sched_switch/enable

# Is the tracepoint registered? set_event lists every event whose
# tracepoint is registered, soft disabled or not.
armed() {
	if grep -qx 'sched:sched_switch' set_event; then
		echo "set_event lists sched:sched_switch (its tracepoint is registered)"
	else
		echo "set_event does not list sched:sched_switch"
	fi
}

# Let tasks switch, then say whether sched_switch recorded since a mark
# written just before. The trace is not emptied: it keeps every window, so
# that a check's trace (make lab 2 TRACE=1) shows which states recorded.
WINDOW=0
switches_now() {
	WINDOW=$((WINDOW + 1))
	mark "window $WINDOW"
	hit_functions
	switches "window $WINDOW"
}

# A soft-mode user arrives (sm_ref + 1) or leaves (sm_ref - 1).
soft_on() {
	ask_gdb ft-soft sched sched_switch on
	echo 1 > $ENABLE
}

soft_off() {
	ask_gdb ft-soft sched sched_switch off
	echo 0 > $ENABLE
}

# Without soft mode the enable file has two states and no '*'.
plain() {
	state "at start"
	echo 1 > $ENABLE
	state "after echo 1"
	switches_now
	echo 0 > $ENABLE
	state "after echo 0"
	armed
	switches_now
}
guard plain "without soft mode, enable reads 0 or 1 and means it" plain

# A disabled event put into soft mode is soft disabled: registered, silent.
# When its last soft-mode user leaves, its tracepoint goes too.
soft_disabled() {
	state "disabled by the user"
	soft_on
	state "in soft mode, soft disabled"
	armed
	switches_now
	soft_off
	state "out of soft mode"
	armed
}
check soft-disabled "a soft disabled event reads 0*, keeps its tracepoint and records nothing" soft_disabled

# In soft mode a write to enable changes SOFT_DISABLED and nothing else.
soft_writes() {
	soft_on
	state "in soft mode"
	echo 1 > $ENABLE
	state "after echo 1"
	ask_gdb ft-event sched sched_switch
	switches_now
	echo 0 > $ENABLE
	state "after echo 0"
	armed
	switches_now
	soft_off
	state "out of soft mode"
	armed
}
check soft-writes "in soft mode, echo 1/0 > enable only flips the soft bit: 1*, then 0*" soft_writes

# An event that is already on keeps its tracepoint and goes on recording
# when a soft-mode user arrives: it reads 1*, not 0*. When that user
# leaves, the event is left on, as the user found it.
soft_on_enabled() {
	echo 1 > $ENABLE
	state "enabled by the user"
	soft_on
	state "in soft mode"
	switches_now
	soft_off
	state "out of soft mode"
	armed
	switches_now
	echo 0 > $ENABLE
}
check soft-on-enabled "an enabled event entering soft mode reads 1* and records; it leaves as 1" soft_on_enabled

# Soft mode is counted (sm_ref): with two users the first to leave
# changes nothing, and the last leaves the event as the users' writes
# set it: here 1*, so the event stays on and registered.
two_users() {
	soft_on
	soft_on
	state "two soft-mode users"
	echo 1 > $ENABLE
	state "after echo 1"
	soft_off
	state "one user left"
	armed
	soft_off
	state "the last user left"
	armed
	switches_now
	echo 0 > $ENABLE
}
check two-users "with two soft-mode users soft mode ends with the last; from 1* the event stays on" two_users
