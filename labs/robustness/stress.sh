# stress.sh - probes and triggers firing on every CPU while other tasks add
# and remove them, run in the guest (busybox sh, lib.sh loaded) for the
# plan item "robust:stress". STRESS_SECONDS (default 60) of guest time.
#
# Workloads, one per CPU (taskset): sync (fires the probes on ksys_sync)
# and fork (fires the triggers on sched_process_fork). Churners: one task
# adds and removes counted function probes, another counted triggers, in
# a loop. A monitor reads the listings all along: no count may be negative
# or above the count it was set to. Afterwards every stack trace in the
# buffer must have come from a registration (at most 5 per probe and 3
# per trigger registered), tracing must still work, and removing
# everything must leave the kernel clean.
#
# Two more triggers, there all along, keep one event's soft mode flipping
# (for KCSAN, scripts/labkit/races.py): "enable_event:...:sched_process_exec"
# with a large count on sched_process_fork, "disable_event:..." on
# sched_process_exit. Each /bin/true of the workloads switches
# sched_process_exec on, records it (its commit reads the event's flags in
# __event_trigger_test_discard(), kernel/trace/trace.h) and switches it
# off, on both CPUs; the monitor reads sched_process_fork's trigger file,
# and that count, while the hits change it.
# Console protocol: "@@ftlab stress NAME VALUE" lines, then
# "@@ftlab stress-end".

STRESS_SECONDS=${STRESS_SECONDS:-60}
STRESS_FILTER=$TRACING/set_ftrace_filter
STRESS_TRIGGER=$TRACING/events/sched/sched_process_fork/trigger
STRESS_FLIP_EXIT=$TRACING/events/sched/sched_process_exit/trigger
STRESS_FLIP_COUNT=1000000000

stress_workload() {
	while [ ! -e /tmp/stress.stop ]; do
		sync
		/bin/true
	done
}

# stress_churn FILE ADD REMOVE...: add and remove in a loop; counts the
# additions the kernel accepted in /tmp/stress.FILE-added.
stress_churn() {
	_name=$1 _file=$2
	shift 2
	_n=0
	while [ ! -e /tmp/stress.stop ]; do
		for _cmd in "$@"; do
			if echo "$_cmd" 2>/dev/null >> "$_file"; then
				case $_cmd in !*) ;; *) _n=$((_n + 1)) ;; esac
			fi
		done
	done
	echo "$_n" > "/tmp/stress.$_name-added"
}

# stress_monitor: every count in the listings within [0, its limit].
stress_monitor() {
	_bad=0 _reads=0
	while [ ! -e /tmp/stress.stop ]; do
		for _c in $(grep -o 'stacktrace:count=[-0-9]*' "$STRESS_FILTER") \
			  $(grep -o 'enable_event:sched:sched_kthread_stop:count=[-0-9]*' "$STRESS_FILTER"); do
			_v=${_c##*=}
			case $_c in stacktrace*) _max=5 ;; *) _max=2 ;; esac
			if [ "$_v" -lt 0 ] || [ "$_v" -gt "$_max" ]; then
				_bad=$((_bad + 1)); echo "bad probe count: $_c"
			fi
		done
		for _c in $(grep -o '^[a-z_:]*count=[-0-9]*' "$STRESS_TRIGGER"); do
			_v=${_c##*=}
			case $_c in
			stacktrace*) _max=3 ;;
			enable_event:sched:sched_process_exec:*) _max=$STRESS_FLIP_COUNT ;;
			*) _max=1 ;;
			esac
			if [ "$_v" -lt 0 ] || [ "$_v" -gt "$_max" ]; then
				_bad=$((_bad + 1)); echo "bad trigger count: $_c"
			fi
		done
		_reads=$((_reads + 1))
	done
	echo "$_bad $_reads" > /tmp/stress.monitor
}

stress_main() {
	cd "$TRACING" || return
	reset_tracing
	rm -f /tmp/stress.*
	echo 4096 > buffer_size_kb
	_cpus=$(grep -c '^processor' /proc/cpuinfo)
	ftlab stress cpus "$_cpus"
	ftlab stress seconds "$STRESS_SECONDS"
	_last=$((_cpus - 1))
	ftlab stress flip-triggers "$(echo "enable_event:sched:sched_process_exec:$STRESS_FLIP_COUNT" 2>&1 >> "$STRESS_TRIGGER" &&
		echo 'disable_event:sched:sched_process_exec' 2>&1 >> "$STRESS_FLIP_EXIT" && echo ok)"
	_start=$(date +%s)
	taskset -c 0 env STRESS_ROLE=stress_workload sh -c ". /lab/lib.sh; . /lab/labs/robustness/stress.sh" &
	_w1=$!
	taskset -c "$_last" env STRESS_ROLE=stress_workload sh -c ". /lab/lib.sh; . /lab/labs/robustness/stress.sh" &
	_w2=$!
	taskset -c "$_last" env STRESS_ROLE=stress_churn STRESS_ARG=probes sh -c ". /lab/lib.sh; . /lab/labs/robustness/stress.sh" &
	_c1=$!
	taskset -c 0 env STRESS_ROLE=stress_churn STRESS_ARG=triggers sh -c ". /lab/lib.sh; . /lab/labs/robustness/stress.sh" &
	_c2=$!
	env STRESS_ROLE=stress_monitor sh -c ". /lab/lib.sh; . /lab/labs/robustness/stress.sh" &
	_m=$!
	sleep "$STRESS_SECONDS"
	touch /tmp/stress.stop
	wait $_w1 $_w2 $_c1 $_c2 $_m
	ftlab stress elapsed $(($(date +%s) - _start))
	echo 0 > tracing_on
	_p=$(cat /tmp/stress.probes-added)
	_t=$(cat /tmp/stress.triggers-added)
	ftlab stress probes-added "$_p"
	ftlab stress triggers-added "$_t"
	read -r _bad _reads < /tmp/stress.monitor
	ftlab stress monitor-reads "$_reads"
	ftlab stress bad-counts "$_bad"
	ftlab stress stack-traces "$(grep -c '<stack trace>' trace)"
	ftlab stress stack-limit $((5 * _p + 3 * _t))
	_left=$(grep -o 'sched_process_exec:count=[0-9]*' "$STRESS_TRIGGER")
	_left=${_left##*=}
	ftlab stress flips $((STRESS_FLIP_COUNT - ${_left:-$STRESS_FLIP_COUNT}))
	# everything the churners may have left, then: does tracing still work?
	remove_all set_ftrace_filter
	remove_all events/sched/sched_process_fork/trigger
	remove_all events/sched/sched_process_exit/trigger
	echo > trace
	echo 1 > tracing_on
	echo 1 > events/sched/sched_process_fork/enable
	/bin/true
	echo 0 > events/sched/sched_process_fork/enable
	ftlab stress fork-events-after "$(grep -c 'sched_process_fork:' trace)"
	echo 'ksys_sync:traceoff' >> set_ftrace_filter
	sync
	ftlab stress traceoff-probe-after "tracing_on=$(cat tracing_on)"
	reset_tracing
	ftlab stress enabled-functions "$(grep -c . enabled_functions)"
	ftlab stress soft-mode "$(grep -l '\*' events/*/*/enable | wc -l)"
	ftlab stress-end
}

case $STRESS_ROLE in
stress_workload)	stress_workload ;;
stress_churn)		case $STRESS_ARG in
			probes)	stress_churn probes "$STRESS_FILTER" 'ksys_sync:stacktrace:5' \
					'ksys_sync:enable_event:sched:sched_kthread_stop:2' \
					'!ksys_sync:stacktrace:0' \
					'!ksys_sync:enable_event:sched:sched_kthread_stop:0' ;;
			triggers) stress_churn triggers "$STRESS_TRIGGER" 'stacktrace:3' \
					'enable_event:sched:sched_kthread_stop:1' '!stacktrace' \
					'!enable_event:sched:sched_kthread_stop' ;;
			esac ;;
stress_monitor)		stress_monitor ;;
*)			stress_main ;;
esac
