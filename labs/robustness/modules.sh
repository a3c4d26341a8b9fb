# modules.sh - module lifetime, run in the guest (busybox sh, lib.sh
# loaded) for the plan item "robust:modules", on a debug kernel (it has
# modules; /lab/robust/trace-events-sample.ko is samples/trace_events).
#
# An enable_event probe and an enable_event trigger pointing at the
# module's event hold the module: rmmod must fail while either exists,
# with 6.1's error, and succeed once it is removed; loading it again works.
# A trigger on the module's own event holds it too (own_trigger_steps);
# 6.1 lets rmmod go on and WARNs, so those steps are skipped there; so
# are the steps of a probe whose action calls the probed function
# (recursion_steps), which nests into itself on 6.1.
# Console protocol: "@@ftlab module STEP RESULT" ("ok" or the error text),
# then "@@ftlab module-end".

MOD=/lab/robust/trace-events-sample.ko
MOD_NAME=trace_events_sample
MOD_EVENT=sample-trace:foo_bar

# module_step STEP COMMAND...: run COMMAND, print its result.
module_step() {
	_step=$1
	shift
	if _out=$("$@" 2>&1); then
		ftlab module "$_step" ok
	else
		ftlab module "$_step" "${_out##*: }"
	fi
}

module_write() {
	echo "$1" >> "$2"
}

# A trigger on the module's own event keeps the event in trigger mode,
# its tracepoint registered: the module must stay until the trigger goes.
# 6.1 takes no reference for it (register_trigger() and
# trace_event_trigger_enable_disable(), kernel/trace/trace_events_trigger.c):
# its rmmod succeeds, then tp_module_going_check_quiescent() (kernel/tracepoint.c)
# WARNs, which panics a debug guest. Not run on 6.1: the host records the
# skip as a difference in the series' favour (robust.MODULE_OURS_ONLY).
own_trigger_steps() {
	if [ "$(lab_kernel)" = upstream ]; then
		for _step in add-own-trigger rmmod-with-own-trigger remove-own-trigger \
			rmmod-after-own-trigger reload-after-own-trigger; do
			ftlab module "$_step" skipped
		done
		return
	fi
	module_step add-own-trigger module_write traceoff events/sample-trace/foo_bar/trigger
	module_step rmmod-with-own-trigger rmmod "$MOD_NAME"
	module_step remove-own-trigger module_write '!traceoff' events/sample-trace/foo_bar/trigger
	module_step rmmod-after-own-trigger rmmod "$MOD_NAME"
	module_step reload-after-own-trigger insmod "$MOD"
}

# A probe whose action calls the function it probes: the stacktrace
# probe records a stack with stack_trace_save() (kernel/stacktrace.c).
# It belongs here because it needs a kernel with modules: ftrace then
# gives the probe's ftrace_ops a trampoline of its own, which calls the
# dispatcher, function_probe_dispatch() (kernel/trace/ftrace.c), directly,
# with no recursion guard unless the ops asks for one
# (FTRACE_OPS_FL_RECURSION, set in get_probe_kind()). Without it a hit
# nests into the probe again from inside __ftrace_trace_stack()
# (kernel/trace/trace.c), whose own recursion guard then records nothing,
# but the nested hit has spent a count: 6.1 gives 7 stack traces for the
# 10 counts, so the steps are skipped there (robust.MODULE_OURS_ONLY).
# KASAN's bookkeeping calls stack_trace_save() on every allocation, so
# the probe's count runs out.
recursion_steps() {
	if [ "$(lab_kernel)" = upstream ]; then
		for _step in add-recursive-probe recursive-probe-count recursive-probe-traces \
			remove-recursive-probe; do
			ftlab module "$_step" skipped
		done
		return
	fi
	echo > trace
	module_step add-recursive-probe module_write stack_trace_save:stacktrace:10 set_ftrace_filter
	ls -R /sys/kernel/tracing > /dev/null
	sync
	sleep 1
	ftlab module recursive-probe-count "$(sed -n 's/^stack_trace_save:stacktrace:\(count=\)\{0,1\}//p' set_ftrace_filter)"
	ftlab module recursive-probe-traces "$(grep -c '<stack trace>' trace)"
	module_step remove-recursive-probe module_write '!stack_trace_save:stacktrace:0' set_ftrace_filter
}

modules_main() {
	cd "$TRACING" || return
	reset_tracing
	if [ ! -f "$MOD" ]; then
		ftlab module load "no module in the initramfs"
		ftlab module-end
		return
	fi
	module_step load insmod "$MOD"
	ftlab module event-dir "$([ -d events/sample-trace/foo_bar ] && echo present || echo missing)"
	module_step add-probe module_write "ksys_sync:enable_event:$MOD_EVENT" set_ftrace_filter
	ftlab module probe-target-enable "$(cat events/sample-trace/foo_bar/enable)"
	module_step rmmod-with-probe rmmod "$MOD_NAME"
	module_step remove-probe module_write "!ksys_sync:enable_event:$MOD_EVENT" set_ftrace_filter
	module_step rmmod-after-probe rmmod "$MOD_NAME"
	ftlab module event-dir-after-rmmod "$([ -d events/sample-trace ] && echo present || echo gone)"
	module_step reload insmod "$MOD"
	module_step add-trigger module_write "enable_event:$MOD_EVENT" events/sched/sched_kthread_stop/trigger
	module_step rmmod-with-trigger rmmod "$MOD_NAME"
	module_step remove-trigger module_write "!enable_event:$MOD_EVENT" events/sched/sched_kthread_stop/trigger
	module_step rmmod-after-trigger rmmod "$MOD_NAME"
	module_step load-again insmod "$MOD"
	module_step enable-event module_write 1 events/sample-trace/foo_bar/enable
	sleep 2
	ftlab module events-traced "$(grep -c 'foo_bar:' trace)"
	module_step disable-event module_write 0 events/sample-trace/foo_bar/enable
	own_trigger_steps
	recursion_steps
	module_step rmmod-final rmmod "$MOD_NAME"
	ftlab module enabled-functions "$(grep -c . enabled_functions)"
	ftlab module-end
}

modules_main
