# lib.sh - the guest library shared by every lab (busybox sh, no bashisms).
#
# A lab script (labs/NN-slug/lab.sh) is a list of checks. Each check is a
# shell function whose output the host compares with the lab's "expected"
# file, after normalising pids, cpu numbers and timestamps:
#
#   check ID "title" func        the checkpoint's feature: fails on the
#                                checkpoint before it
#   guard ID "title" func        behaviour that already holds before it
#   replaced_at N ID "title" func
#                                behaviour of older checkpoints, which
#                                checkpoint N changes (the host expects a
#                                difference from N on)
#   ours_only ID "title" func    where our checkpoints deliberately differ
#                                from upstream (a WARN upstream gives):
#                                skipped on upstream
#   check_ours ID "title" func   a feature check (as check) that upstream
#                                fails on purpose of its own (a frame its
#                                stacktrace skips): skipped on upstream
#   module_check ID "title" func a feature check that loads the sample
#                                module: only on a kernel with modules
#
# Every check starts from a clean tracing state (reset_tracing) in the
# tracefs directory. Console protocol, one line each:
#   @@ftlab lab-begin NN | lab-unsupported NN WHAT | lab-end NN
#   @@ftlab check-begin NN ID KIND TITLE... | check-end NN ID rc=RC
#   @@ftlab ftracetest-case N TEST | ftracetest-begin NAME CASES |
#     ftracetest-end NAME rc=RC       (see ftracetest_run)

TRACING=/sys/kernel/tracing
STACK_TRACER=/proc/sys/kernel/stack_tracer_enabled

# ftracetest's own verbs (tools/testing/selftests/ftrace/test.d/functions,
# in the initramfs): check_requires, clear_trace, reset_tracer ...
# (Always in the guest; a host test may have no copy at hand.)
FTRACE_FUNCTIONS=${FTRACE_FUNCTIONS:-/lab/ftrace/test.d/functions}
if [ -f "$FTRACE_FUNCTIONS" ]; then
	. "$FTRACE_FUNCTIONS"
fi

ftlab() {
	echo "@@ftlab $*"
}

# --- helpers for lab checks ------------------------------------------------

# write_error: the error text of the last failed write, as the shell
# left it in /tmp/.err ("sh: write error: Invalid argument" -> "Invalid
# argument").
write_error() {
	sed 's/.*: //' /tmp/.err
}

# try_write VALUE FILE: write VALUE to FILE (appending, so that function
# probes accumulate as "echo ... >> set_ftrace_filter" does) and print
# what happened: "ok" or the error text, e.g. "Invalid argument".
try_write() {
	note_trigger_file "$2"
	if echo "$1" 2>/tmp/.err >> "$2"; then
		echo "'$1' >> $2: ok"
	else
		echo "'$1' >> $2: $(write_error)"
	fi
}

# setup VALUE FILE: a write that a check needs before it can show its
# feature (adding the probe it looks at), made as try_write does but
# quietly: a failure is printed at the end of the check ("setup: ..."),
# so that on a kernel without the feature the check's first difference
# is a line about the feature itself, not this write.
setup() {
	note_trigger_file "$2"
	if ! echo "$1" 2>/tmp/.err >> "$2"; then
		echo "setup: '$1' >> $2: $(write_error)" >> /tmp/.setup
	fi
}

# try_truncate VALUE FILE: the same with ">" (open with truncation).
try_truncate() {
	note_trigger_file "$2"
	if echo "$1" 2>/tmp/.err > "$2"; then
		echo "'$1' > $2: ok"
	else
		echo "'$1' > $2: $(write_error)"
	fi
}

# show FILE: print FILE under a title line, so that expected output says
# where each line came from.
show() {
	echo "-- $1:"
	cat "$1"
}

# count_lines FILE: the number of lines of FILE (comments included).
count_lines() {
	wc -l < "$1" | tr -d ' '
}

# mark TEXT: put a line of known text into the trace (trace_marker), so
# that a check can tell what was recorded before and after a step.
mark() {
	echo "$1" > trace_marker
}

# trace_body [FILE]: the trace without its "#" header.
trace_body() {
	grep -v '^#' "${1:-trace}"
}

# probes: the probe lines of set_ftrace_filter, as the kernel lists them:
# from checkpoint 1 on, as upstream lists them, the newest probe command first.
probes() {
	echo "-- probes in set_ftrace_filter:"
	grep ':' set_ftrace_filter || :
}

# state LABEL: what the enable file $ENABLE (the lab's event) reads, after
# LABEL: "0", "1", or in soft mode "0*" / "1*".
state() {
	_state="$1: enable reads $(cat "$ENABLE")"
	note "$_state"
	echo "$_state"
}

# note TEXT: with "make lab N TRACE=1", TEXT goes into the check's trace
# too, so that its timeline shows when the lab read what (make report N).
# It goes into a trace instance of its own, ftlab-notes (_run makes it):
# the lab's clear_trace and "cat trace" do not see it there, and no
# trigger on the top level's ftrace:print fires. Without TRACE=1, nothing.
NOTES_DIR=instances/ftlab-notes
note() {
	if [ -n "$NOTES" ]; then
		echo "$1" > "$NOTES"
	fi
}

# switches [MARK]: whether sched_switch recorded anything in the trace so
# far, or since the trace_marker line MARK.
switches() {
	if trace_since "$1" | grep -q 'sched_switch:'; then
		echo "sched_switch in trace: some"
	else
		echo "sched_switch in trace: none"
	fi
}

# trace_since [MARK]: the trace body, or its part from the line of MARK on.
trace_since() {
	if [ -n "$1" ]; then
		trace_body | sed -n "/tracing_mark_write: $1\$/,\$p"
	else
		trace_body
	fi
}

# messages FILE: FILE (trace or snapshot) under a title line, as the texts
# that mark wrote into it, one per line.
messages() {
	echo "-- $1:"
	trace_body "$1" | sed 's/.*tracing_mark_write: //'
}

# stack_entries [FILE]: how many stack trace entries the buffer holds.
stack_entries() {
	grep -c '<stack trace>' "${1:-trace}"
}

# snapshot_state [DIR]: "Snapshot is allocated" or "... freed", from the
# snapshot file of the top level or of instance DIR.
snapshot_state() {
	grep -o 'Snapshot is [a-z]*' "${1:-.}/snapshot"
}

# ops_count FUNCTION: how many ftrace_ops trace FUNCTION, as enabled_functions
# shows it: "(2)", or "not traced". (The rest of its line, trampoline
# addresses, differs from build to build.)
ops_count() {
	_n=$(grep "^$1 " enabled_functions | cut -d' ' -f2)
	echo "${_n:-not traced}"
}

# hit_functions: run a few commands that make the kernel schedule, fork and
# read files, so that probes on common functions fire.
hit_functions() {
	for _i in 1 2 3; do
		cat /proc/version > /dev/null
		sleep 0.01
	done
}

# ask_gdb COMMAND...: have the debugger run a gdb command now, for labs
# that need gdb to do what no kernel code can do yet at their checkpoint
# (lab 02 puts an event into soft mode). The request is a trace_marker
# write; gdb's "ft-serve" catches it in tracing_mark_write(), runs COMMAND
# (unattended) or shows it to the learner, then lets the guest go on.
# Such a lab says "# flags: gdb", and the harness always runs it under gdb.
ask_gdb() {
	echo "ftlab-gdb: $*" 2>/dev/null > "$TRACING/trace_marker"
}

# --- clean state between checks -------------------------------------------

# removal_of LINE: the "!" commands that remove a listed probe or trigger,
# one per line. Listings end in ":unlimited" or ":count=N" (then " if
# FILTER" for a trigger); a counted entry is removed by naming any count,
# e.g. ":0". "unlimited" may also be a counted probe whose count is -1
# ("f:traceoff:" or "f:traceoff:18446744073709551615"), so both forms are
# tried for it; the one that does not apply fails, harmlessly.
removal_of() {
	_entry=${1%% if *}
	case ${_entry##*:} in
	unlimited)	echo "!${_entry%:*}"
			echo "!${_entry%:*}:0" ;;
	count=*)	echo "!${_entry%:*}:0" ;;
	esac
}

# remove_all FILE: remove every probe (set_ftrace_filter) or trigger
# (events/*/*/trigger) listed in FILE. Read the list first: removing
# entries while reading the file would skip some. Probes go with one
# write per command (and target), "!*:snapshot", not one per function:
# upstream 6.12 arms the snapshot once per write that registers snapshot
# probes and disarms it once per write that removes some, so a glob
# probe on two functions removed line by line disarms twice and WARNs
# in tracing_disarm_snapshot().
remove_all() {
	grep -v '^#' "$1" | grep ':' | while read -r _line; do
		removal_of "$_line"
	done > /tmp/.removals
	case $1 in
	*set_ftrace_filter)
		sed 's/^!\([^:]*\):/!*:/' /tmp/.removals | sort -u > /tmp/.removals-glob
		mv /tmp/.removals-glob /tmp/.removals ;;
	esac
	while read -r _cmd; do
		echo "$_cmd" 2>/dev/null >> "$1"
	done < /tmp/.removals
}

# --- the trigger files to empty between checks ------------------------------

# note_trigger_file FILE: remember FILE, when it is an event's trigger file
# (try_write, setup and try_truncate call it), for trigger_files.
note_trigger_file() {
	case $1 in
	*/trigger|trigger)	;;
	*)			return 0 ;;
	esac
	case $1 in
	/*)	echo "$1" ;;
	*)	echo "$PWD/$1" ;;
	esac >> /tmp/.trigger-files
}

# trigger_files: the trigger files of the instance in the current folder
# that list a trigger. Between a lab's checks (TRIGGER_RESET=tracked, set by
# _run): those a check wrote through the helpers (note_trigger_file) and
# those of the events set_event lists (a trigger puts its event in soft
# mode, which enables it: set_event lists every enabled event). Otherwise
# (the robustness scripts, which write triggers in their own ways): one
# grep of every event's trigger file. That grep is most of a reset's time
# on a debug guest: a reset took 3.4 s on upstream 6.12's and 4.3 s on
# 6.1's, 0.6 s and 1.0 s tracked (on 6.12 eventfs makes an event's files
# anew at each open; the grep costs as much as on 6.1 all the same).
trigger_files() {
	if [ "$TRIGGER_RESET" != tracked ]; then
		grep -lv '^#' events/*/*/trigger 2>/dev/null
		return
	fi
	{
		[ -f /tmp/.trigger-files ] && cat /tmp/.trigger-files
		[ -f set_event ] && while IFS=: read -r _s _e; do
			echo "$PWD/events/$_s/$_e/trigger"
		done < set_event
	} | sort -u | while read -r _f; do
		case $_f in
		"$PWD"/events/*/*/trigger)
			[ -f "$_f" ] && grep -q -v '^#' "$_f" && echo "$_f" ;;
		esac
	done
}

# reset_instance DIR: tracing state of one trace instance back to defaults,
# with ftracetest's own verbs (test.d/functions) where they fit. Probes and
# triggers are removed with remove_all, not ftracetest's reset_ftrace_filter
# and reset_trigger: those name a counted probe "f:cmd:count=N" (fine on
# 6.1, which ignores it), miss a counted probe listed as "unlimited", and
# read every trigger file twice, which takes long under emulation.
reset_instance() (
	cd "$1" || exit
	disable_tracing
	[ -f current_tracer ] && reset_tracer
	if [ -f set_ftrace_filter ]; then
		# Filter first: in 6.1 each cached ":mod:" entry hides one probe
		# line from the listing that remove_all reads.
		echo > set_ftrace_filter
		echo > set_ftrace_notrace
		remove_all set_ftrace_filter
	fi
	for _t in $(trigger_files); do
		remove_all "$_t"
	done
	disable_events
	clear_trace
	enable_tracing
)

reset_tracing() {
	cd "$TRACING" || return 1
	for _d in instances/*; do
		[ -d "$_d" ] || continue
		[ "$_d" = "$NOTES_DIR" ] || reset_instance "$_d"
		rmdir "$_d"
	done
	reset_instance "$TRACING"
	rm -f /tmp/.trigger-files
	echo local > trace_clock 2>/dev/null
	# The stack tracer has its own ftrace_ops on every function; a test
	# that fails half way (ftracetest's func_stack_tracer.tc before
	# checkpoint 7) can leave it on.
	if [ -w "$STACK_TRACER" ]; then
		echo 0 > "$STACK_TRACER"
	fi
}

# --- running checks --------------------------------------------------------

# only ID: run only that check of the lab ("make lab N CHECK=ID"); the
# others are skipped, not reported.
skipped() {
	[ -n "$ONLY" ] && [ "$1" != "$ONLY" ]
}

_run() {
	_kind=$1 _id=$2 _title=$3 _fn=$4
	skipped "$_id" && return
	TRIGGER_RESET=tracked
	reset_tracing
	TRIGGER_RESET=
	NOTES= _saved=
	if tracing_saved; then
		_saved=1
		mkdir "$TRACING/$NOTES_DIR" && NOTES=$TRACING/$NOTES_DIR/trace_marker
	fi
	ftlab check-begin "$LAB" "$_id" "$_kind" "$_title"
	kernel_log_mark "check $LAB $_id"
	: > /tmp/.setup
	(cd "$TRACING" && "$_fn") 2>&1
	_rc=$?
	cat /tmp/.setup
	ftlab check-end "$LAB" "$_id" "rc=$_rc"
	if [ -n "$_saved" ]; then
		save-trace "$LAB-$_id" > /dev/null
	fi
}

# "make lab N TRACE=1" (ftlab.trace=1 on the kernel command line): after
# each check, its buffers go to the host as a trace.dat (save-trace, which
# the host packs in with trace-cmd). Before the next check clears them,
# and after the check-end line, so that the check's output is as without.
tracing_saved() {
	case " $(cat /proc/cmdline) " in
	*" ftlab.trace=1 "*)	return 0 ;;
	esac
	return 1
}

check() {
	_run check "$1" "$2" "$3"
}

guard() {
	_run guard "$1" "$2" "$3"
}

replaced_at() {
	_run "replaced-at-$1" "$2" "$3" "$4"
}

# --- checks that load a module ---------------------------------------------

# The sample module of samples/trace_events (its event sample-trace:foo_bar).
# A kernel with modules (the debug variant) has it in its initramfs
# (labrun.Session.boot); the lab kernel has no modules.
SAMPLE_MODULE=/lab/robust/trace-events-sample.ko
SAMPLE_MODULE_NAME=trace_events_sample

# module_check ID "title" func: a feature check that loads the sample
# module. It runs only where the module is; elsewhere it neither runs nor
# prints anything, and the host does not expect it (series.LabCheck.runs_on).
module_check() {
	[ -f "$SAMPLE_MODULE" ] || return 0
	_run check "$1" "$2" "$3"
}

# try_insmod, try_rmmod LABEL: load or unload the sample module and print
# what happened: "ok" or the error text ("Resource temporarily
# unavailable": delete_module() refuses a module in use).
try_insmod() {
	if _out=$(insmod "$SAMPLE_MODULE" 2>&1); then
		echo "insmod $SAMPLE_MODULE_NAME: ok"
	else
		echo "insmod $SAMPLE_MODULE_NAME: ${_out##*: }"
	fi
}

try_rmmod() {
	if _out=$(rmmod "$SAMPLE_MODULE_NAME" 2>&1); then
		echo "rmmod $SAMPLE_MODULE_NAME $1: ok"
	else
		echo "rmmod $SAMPLE_MODULE_NAME $1: ${_out##*: }"
	fi
}

# on_one_cpu: keep the running check, and every command it starts, on
# CPU 0: for a check whose output depends on which CPU's buffer an event
# lands in (a debug kernel boots with two CPUs). A check runs in a subshell
# of its own (_run), so this ends with it; /proc/self, read by a builtin,
# is that subshell.
on_one_cpu() {
	read -r _self _rest < /proc/self/stat
	taskset -p 1 "$_self" > /dev/null
}

# The kernel the host booted: "upstream" or "cpN" (ftlab.kernel= on the
# kernel command line).
lab_kernel() {
	sed -n 's/.*ftlab\.kernel=\([^ ]*\).*/\1/p' /proc/cmdline
}

# upstream_skips ID "title": on upstream, report check ID as skipped, an
# "ours-only" check (grade.py expects this line); fails elsewhere.
upstream_skips() {
	[ "$(lab_kernel)" = upstream ] || return 1
	ftlab check-begin "$LAB" "$1" ours-only "$2"
	echo "skipped: upstream differs here on purpose"
	ftlab check-end "$LAB" "$1" "rc=0"
}

ours_only() {
	skipped "$1" && return
	upstream_skips "$1" "$2" && return
	_run ours-only "$1" "$2" "$3"
}

check_ours() {
	skipped "$1" && return
	upstream_skips "$1" "$2" && return
	_run check "$1" "$2" "$3"
}

# requirement_missing WORD: a "# requires:" word, as ftracetest's own
# check_requires reads it (a tracefs file, "name:tracer", or
# "text":README). Prints nothing if met, else WORD.
requirement_missing() {
	if ! (
		exit_unsupported() { exit 1; }
		cd "$TRACING" && eval check_requires "$1"	# eval: as ftracetest does
	) > /dev/null 2>&1; then
		echo "$1"
	fi
}

lab_script() {
	for _s in /lab/labs/"$1"-*/lab.sh; do
		[ -f "$_s" ] && echo "$_s"
	done
}

# run_lab NN[:ID]: lab NN, or only its check ID.
run_lab() {
	LAB=${1%%:*}
	ONLY=
	case $1 in *:*) ONLY=${1#*:} ;; esac
	_script=$(lab_script "$LAB")
	if [ -z "$_script" ]; then
		ftlab error "no lab $LAB in the initramfs"
		return
	fi
	ftlab lab-begin "$LAB"
	_missing=
	for _req in $(sed -n 's/^# requires://p' "$_script"); do
		_missing="$_missing$(requirement_missing "$_req")"
	done
	if [ -n "$_missing" ]; then
		ftlab lab-unsupported "$LAB" "$_missing"
	else
		(. "$_script")
	fi
	reset_tracing
	ftlab lab-end "$LAB"
}

# --- the kernel log ----------------------------------------------------------

# kernel_log_mark TEXT: a line "ftlab-mark: TEXT" in the kernel log, at
# debug level (the console does not show it). _run marks where each check
# begins, so that the host can charge a report found in the kernel log at
# the end (lockdep, RCU, KASAN with a kernel that does not panic) to the
# check that was running (qemu.reports_by_check).
kernel_log_mark() {
	echo "<7>ftlab-mark: $*" > /dev/kmsg 2>/dev/null
}

# uptime_s: the seconds since boot, whole (/proc/uptime).
uptime_s() {
	read -r _up _idle < /proc/uptime
	echo "${_up%%.*}"
}

# kmemleak_scan FILE: scan for leaks so that everything the run leaked is
# reported. One scan is not enough (mm/kmemleak.c, kmemleak_scan()): an
# object found unreferenced is reported only when its checksum is the one
# the previous scan computed (an object new since the last scan has none
# yet, so it is held grey, "modified", until the next one), and only when
# it is MSECS_MIN_AGE (5 s) older than the scan's start. So: a first scan
# that takes every object's checksum, then, at least 6 s after the run's
# last allocation, a second one that reports what is still unreferenced.
# The mark makes kmemleak's own "new suspected" line the leaks', not the
# last check's (qemu.reports_by_check).
kmemleak_scan() {
	kernel_log_mark kmemleak
	_t0=$(uptime_s)
	echo scan > "$1"
	_wait=$((_t0 + 6 - $(uptime_s)))
	[ "$_wait" -gt 0 ] && sleep "$_wait"
	echo scan > "$1"
}

# kernel_log: the whole kernel log, between marker lines, at the end of a
# run. The console shows only errors; lockdep, RCU and kmemleak report at
# a lower level, so the host scans this copy for them. With kmemleak in
# the kernel, scan for leaks first (kmemleak_scan).
kernel_log() {
	_leaks=/sys/kernel/debug/kmemleak
	[ -d /sys/kernel/debug ] && mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	if [ -w "$_leaks" ]; then
		kmemleak_scan "$_leaks"
	fi
	ftlab kernel-log-begin
	dmesg
	if [ -r "$_leaks" ]; then
		echo "ftlab-mark: kmemleak"
		cat "$_leaks"
	fi
	ftlab kernel-log-end
}

# --- harness self-tests ------------------------------------------------------

# warn_from_user_space: the write that makes upstream WARN (6.1 and 6.12: its
# unregister_ftrace_function_probe_func() has WARN_ON(not) for "!!").
# The host expects the run to fail at once with the WARN shown.
warn_from_user_space() {
	echo 'schedule:traceoff' >> "$TRACING/set_ftrace_filter"
	echo '!!schedule:traceoff' >> "$TRACING/set_ftrace_filter"
}

# log_report: a report at warning level, below the console's loglevel, as
# lockdep writes one. Only the scan of the kernel log can find it.
log_report() {
	echo '<4>WARNING: possible circular locking dependency detected (ftlab self-test)' > /dev/kmsg
}

# --- ftracetest, gdb mode, shell ------------------------------------------

# ftracetest_run NAME LIST: the tests named in the file LIST (paths under
# test.d) in one run of the kernel's ftracetest, unmodified. A run has a
# fixed cost (its set-up, the clean-up after the last test, the summary)
# of seconds on a debug guest: one run per test paid it for every test.
# ftracetest numbers its results [1], [2] ... in the order it runs the
# tests: those of LIST in LIST's order, then, each in a new trace
# instance, those with the "instance" flag (found with ftracetest's own
# grep). The "ftracetest-case" lines tell the host which is which:
#   @@ftlab ftracetest-case N TEST          TEST@instance for a second run
#   @@ftlab ftracetest-begin NAME CASES
#   ...ftracetest's output...
#   @@ftlab ftracetest-end NAME rc=RC
ftracetest_run() {
	cd /lab/ftrace || return
	_n=0
	for _t in $(cat "$2"); do
		_n=$((_n + 1))
		ftlab ftracetest-case "$_n" "$_t"
	done
	for _t in $(cat "$2"); do
		grep -q "^#[ \t]*flags:.*instance" "test.d/$_t" || continue
		_n=$((_n + 1))
		ftlab ftracetest-case "$_n" "$_t@instance"
	done
	ftlab ftracetest-begin "$1" "$_n"
	# -l: the log folder 6.1's ftracetest picks by default; given, it also
	# keeps 6.12's from replacing a logs/latest link, whose unlink prints
	# "unlink: can't remove ..." on every fresh guest.
	./ftracetest -v -l "/lab/ftrace/logs/$(date +%Y%m%d-%H%M%S)/" \
		$(sed 's|^|test.d/|' "$2") 2>&1 < /dev/null
	ftlab ftracetest-end "$1" "rc=$?"
	cd /
}

# run_ftracetest: the tests of labs/ftracetest.matrix, in the suite's order.
run_ftracetest() {
	ftracetest_run matrix /lab/ftracetest.list
}

# run_gdb_lab NN[:ID]: under "make gdb", run lab NN's script once the debugger
# has set its breakpoints (gdb resumes the paused guest), then stay up so
# that gdb can still look around.
run_gdb_lab() {
	run_lab "$1"
	kernel_log
	ftlab gdb-lab-finished "${1%%:*}"
	# The unattended gdb check stops at the first ksys_sync that finds
	# this host name ($_ft_lab_finished reads it in the guest's memory):
	# the lab's own syncs do not end it, this one does.
	hostname ftlab-finished
	sync
	echo "The lab script has finished; the guest stays up for gdb (quit gdb to stop it)."
	while :; do sleep 3600; done
}

run_shell() {
	cd "$TRACING"
	cat <<'BANNER'

  ftrace trigger labs: a busybox shell in tracefs (/sys/kernel/tracing).
  Try: cat README; echo schedule:traceoff >> set_ftrace_filter
  Leave with "reboot -f" (or Ctrl-A then X).

BANNER
	if [ -x /usr/bin/save-trace ]; then
		echo "  save-trace NAME: the buffers as trace-cmd's trace.dat, to the host."
		echo
	fi
	setsid cttyhack sh -l
}
