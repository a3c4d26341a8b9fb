# bench/guest.sh - the measurements of "make bench", run in the guest
# (busybox sh). /init sources it for the plan item "bench", with lib.sh
# loaded; the host (scripts/labkit/bench.py) turns the lines into tables.
#
# Each table compares cases measured in this one boot, so that their
# ratio means something under emulation, where absolute times do not.
# Every repetition runs every case of a table once, in turn, so that a
# slow moment of the host slows all cases alike. A case starts from a
# clean tracing state (reset_tracing), sets itself up, and times the
# workload with /lab/ftbench (bench/ftbench.c).
#
# Console protocol, one line each:
#   @@ftlab bench TABLE CASE REP NS      time per iteration, nanoseconds
#   @@ftlab bench-skip TABLE REASON      the kernel lacks what TABLE needs
#   @@ftlab bench-error TABLE CASE TEXT  a case could not be set up

FTBENCH=/lab/ftbench
BENCH_REPS=${BENCH_REPS:-5}
# Milliseconds per timing: long enough that the guest clock's ticks
# (jiffies, maybe) are a small part of it.
BENCH_MS=${BENCH_MS:-1000}

# The event the workload hits (FTRACE_SYSCALLS is in scripts/lab.config):
# one hit per getppid().
EVENT=events/syscalls/sys_enter_getppid

# sys_call NAME: the traced function of system call NAME.
sys_call() {
	for _f in "__x64_sys_$1" "__do_sys_$1" "sys_$1"; do
		if grep -q "^$_f\$" available_filter_functions; then
			echo "$_f"
			return
		fi
	done
}

# try SETUP...: run a setup command; on failure say which, and fail.
try() {
	if ! "$@" 2>/tmp/.bench-err; then
		ftlab bench-error "$TABLE" "$CASE" "$* failed: $(cat /tmp/.bench-err)"
		return 1
	fi
}

put() {
	echo "$1" > "$2"
}

add() {
	echo "$1" >> "$2"
}

# case_<table>_<case> functions set a case up; time_<table> times it.

case_probe_none() { :; }
case_probe_probe_unrelated() {
	# a probe on a function getppid() never calls
	try add 'vfs_fsync:traceoff' set_ftrace_filter
}
case_probe_function_tracer() {
	try put function current_tracer
}
time_probe() { "$FTBENCH" getppid "$BENCH_MS"; }

case_event_off() { :; }
case_event_soft_disabled() {
	# An enable_event probe on a function that never runs puts the event
	# into soft mode, soft disabled: its tracepoint is armed, the
	# handler returns at the SOFT_DISABLED test.
	try add "vfs_fsync:enable_event:syscalls:sys_enter_getppid" set_ftrace_filter
}
case_event_on() {
	try put 1 "$EVENT/enable"
}
time_event() { "$FTBENCH" getppid "$BENCH_MS"; }

# Switching an event on and off: by writing its enable file (which
# registers and unregisters the tracepoint), or by two probes flipping the
# soft-disable bit, one on getppid() and one on getpid(). For the probes,
# one iteration of "pair" is two flips.
case_toggle_write_enable() { :; }
case_toggle_probe_flip() {
	try add "$(sys_call getppid):enable_event:sched:sched_switch" set_ftrace_filter &&
	try add "$(sys_call getpid):disable_event:sched:sched_switch" set_ftrace_filter
}
time_toggle() {
	if [ "$CASE" = write-enable ]; then
		"$FTBENCH" write "$BENCH_MS" events/sched/sched_switch/enable 1 0
	else
		echo $(( $("$FTBENCH" pair "$BENCH_MS") / 2 ))
	fi
}

# A probe on every function, "*:traceoff", plain and counted, against
# the same probe on the functions getppid() runs and on no other: the
# same hits, with a few entries in the table instead of every function's.
# The series keeps a probe command's entries in a table of 1024 buckets
# (FTRACE_PROBE_HASH_BITS in kernel/trace/ftrace.c), and
# function_probe_dispatch() walks the function's bucket at every hit;
# 6.1 looks nothing up for the plain form, and for the counted form finds
# the count in a table of as many buckets (its ftrace_func_mapper). The
# first hit turns tracing off; every later one tests tracing_on and
# returns. The case removes its probe itself: a line by line removal of
# every function's entry would take minutes.
case_glob_none() { :; }
# The same probe on the functions the workload runs, and on no other:
# the same hits, with a table of a few entries.
case_glob_probe_path() {
	while read -r _f; do
		try add "$_f:traceoff" set_ftrace_filter || return
	done < /tmp/.bench-path
}
case_glob_probe_all() {
	try add '*:traceoff' set_ftrace_filter
}
case_glob_probe_all_counted() {
	try add '*:traceoff:1' set_ftrace_filter
}
time_glob() {
	"$FTBENCH" getppid "$BENCH_MS"
	echo '!*:traceoff' 2>/dev/null >> set_ftrace_filter
	echo '!*:traceoff:0' 2>/dev/null >> set_ftrace_filter
	echo 1 > tracing_on
}

# Eventfs (kernel/trace/trace_events.c, fs/tracefs/event_inode.c) makes
# an event's files when a lookup or a directory read asks for them and
# lets them go when nothing holds them; a shell glob such as
# events/*/*/trigger reads every event's folder and so makes them all
# again, where a kernel before eventfs kept every file from boot. The
# cases: one trigger file read, every event's trigger file read, every
# event's enable file read (the enable files exist at every checkpoint;
# the trigger files from checkpoint 6 on). One iteration is one whole
# glob with every file read.
case_eventfs_one_file() { :; }
case_eventfs_glob_enable() { :; }
case_eventfs_glob_trigger() { :; }
time_eventfs() {
	case $CASE in
	one-file)	"$FTBENCH" glob "$BENCH_MS" events/sched/sched_switch/enable ;;
	glob-enable)	"$FTBENCH" glob "$BENCH_MS" 'events/*/*/enable' ;;
	glob-trigger)	"$FTBENCH" glob "$BENCH_MS" 'events/*/*/trigger' ;;
	esac
}

case_trigger_none() { :; }
case_trigger_filter_never() {
	try put 'traceoff if common_pid < 0' "$EVENT/trigger"
}
time_trigger() { "$FTBENCH" getppid "$BENCH_MS"; }

# path_functions: the traced functions that the getppid() loop runs,
# one per line, as the function tracer sees them in a short run (read
# before the tracer changes: a new tracer empties the buffer). The loop
# runs hundreds of times; a function seen fewer than 100 times belongs
# to the program's start or end, or to an interrupt.
path_functions() {
	reset_tracing
	echo function > current_tracer
	"$FTBENCH" getppid 50 > /dev/null
	echo 0 > tracing_on
	grep ' ftbench-' trace | sed 's/.*: \([^ ]*\) <-.*/\1/' | sort | uniq -c |
		awk '$1 >= 100 { print $2 }'
	reset_tracing
}

# table TABLE CASE...: every case, BENCH_REPS times.
table() {
	TABLE=$1
	shift
	_rep=1
	while [ "$_rep" -le "$BENCH_REPS" ]; do
		for CASE in "$@"; do
			reset_tracing
			"case_${TABLE}_$(echo "$CASE" | tr - _)" || continue
			_ns=$(time_"$TABLE")
			ftlab bench "$TABLE" "$CASE" "$_rep" "$_ns"
		done
		_rep=$((_rep + 1))
	done
	reset_tracing
}

# has_probe COMMAND: does set_ftrace_filter know the probe COMMAND?
has_probe() {
	reset_tracing
	echo "vfs_fsync:$1" >> set_ftrace_filter 2>/dev/null
	_ok=$?
	reset_tracing
	return $_ok
}

run_bench() {
	cd "$TRACING" || return
	table probe none probe-unrelated function-tracer
	path_functions > /tmp/.bench-path
	ftlab bench-info glob "$(wc -l < available_filter_functions) functions in available_filter_functions, $(wc -l < /tmp/.bench-path) run by the workload"
	table glob none probe-path probe-all probe-all-counted
	if has_probe enable_event:sched:sched_switch; then
		table event off soft-disabled on
		table toggle write-enable probe-flip
	else
		ftlab bench-skip event "no enable_event probe to soft disable an event with"
		ftlab bench-skip toggle "no enable_event probe"
	fi
	if [ -f "$EVENT/trigger" ]; then
		table eventfs one-file glob-enable glob-trigger
	else
		table eventfs one-file glob-enable
	fi
	if [ -f "$EVENT/trigger" ]; then
		table trigger none filter-never
	else
		ftlab bench-skip trigger "no event trigger files"
	fi
}

run_bench
