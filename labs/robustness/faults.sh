# faults.sh - every registering write, failed at each of its allocations
# in turn, run in the guest (busybox sh, lib.sh loaded) for the plan item
# "robust:faults", on a debug kernel (CONFIG_FAILSLAB, FAIL_PAGE_ALLOC).
#
# /lab/robust/faults.list (written by the host, scripts/labkit/faults.py)
# holds one write per line, its fields separated by tabs:
#   NAME  FILE  VALUE  UNDO  STATE-FILES...
# (UNDO: shell commands that remove what the write added).
# For each, with the write's state (the STATE-FILES read back) known
# before and after it:
#   n = 1, 2, ...: the shell's own n-th allocation is made to fail
#   (/proc/thread-self/fail-nth: only this task, only once), then
#   "echo VALUE >> FILE" runs: its open, its write and its close. Whether
#   the n-th allocation came is read back: fail-nth then reads 0. When it
#   did not, the write makes n-1 allocations, and the sweep of it ends.
#   After a failed write the state must be as before it (or, if the
#   write succeeded all the same, as after it); the same write without a
#   fault must then succeed, and UNDO must bring the state back.
# Everything between arming fail-nth and reading it back is a shell
# builtin writing through descriptors opened beforehand: no fork, no other
# open, so the n-th allocation is the write's own.
# Console protocol:
#   @@ftlab fault-write NAME            a write's sweep begins
#   @@ftlab fault-clean NAME PROBLEM    without faults, something is wrong
#   @@ftlab fault N RESULT STATE        the n-th allocation failed: the
#                                       write's result ("ok" or the error
#                                       text), the state: before, after or
#                                       other (then "@@ftlab fault-state")
#   @@ftlab fault-redo N RESULT STATE   the same write without a fault
#   @@ftlab fault-undo N STATE          after UNDO
#   @@ftlab fault-allocations NAME K
#   @@ftlab faults-end

FAULTS_LIST=/lab/robust/faults.list
FAULTS_DEBUGFS=/sys/kernel/debug
FAIL_NTH=/proc/thread-self/fail-nth

# faults_setup: both fault attributes count every allocation of a task
# with fail-nth set (their defaults skip allocations that may sleep, and
# order-0 pages), and print nothing when they fail one. The ring buffer
# shrinks to its minimum (two pages per CPU), so that allocating a
# snapshot buffer takes a few allocations, not hundreds.
faults_setup() {
	mount -t debugfs debugfs "$FAULTS_DEBUGFS" 2>/dev/null
	for _attr in failslab fail_page_alloc; do
		echo N > "$FAULTS_DEBUGFS/$_attr/ignore-gfp-wait"
		echo 0 > "$FAULTS_DEBUGFS/$_attr/verbose"
	done
	echo N > "$FAULTS_DEBUGFS/fail_page_alloc/ignore-gfp-highmem"
	echo 0 > "$FAULTS_DEBUGFS/fail_page_alloc/min-order"
	echo 4 > buffer_size_kb
	# Enabling an event with record-cmd on registers the comm recorder's
	# sched_switch probe; 6.1's tracing_start_sched_switch() ignores an
	# allocation failure there, and the later unregistration WARNs (on
	# 6.1 as on the checkpoints: labs/robustness/README.adoc). Off, so
	# that the sweep goes on past it.
	echo 0 > options/record-cmd
}

# faults_state FILE...: the files' contents, as one line, in $_state
# (read with builtins: a fork here would be far slower on a debug guest).
faults_state() {
	_state=
	for _f in "$@"; do
		while IFS= read -r _l; do
			# enabled_functions: only "function (ops)"; the rest
			# (a trampoline's address, or none when allocating
			# one failed and the kernel did without) may differ
			[ "$_f" = enabled_functions ] && _l="${_l%%)*})"
			_state="$_state|$_l"
		done < "$_f"
		_state="$_state;"
	done
}

# faults_which FILE...: the files' state, then in $_which "before",
# "after" or "other", comparing it with the write's recorded states.
faults_which() {
	faults_state "$@"
	if [ "$_state" = "$_before" ]; then
		_which=before
	elif [ "$_state" = "$_after" ]; then
		_which=after
	else
		_which=other
	fi
}

# faults_result RC: $_result is "ok" for RC 0, else the error text of the
# shell's message ("sh: write error: Cannot allocate memory"), which went to
# descriptor 7, the file /tmp/.fault-err.
faults_result() {
	_result=ok
	if [ "$1" -ne 0 ]; then
		IFS= read -r _msg < /tmp/.fault-err
		_result=${_msg##*: }
	fi
}

# faults_write FILE VALUE: VALUE >> FILE, its result in $_result.
faults_write() {
	: > /tmp/.fault-err
	echo "$2" 2>&7 >> "$1"
	faults_result $?
}

# faults_armed N FILE VALUE: the write with the shell's N-th allocation
# failing; $_left is what fail-nth reads after it (0: the N-th came).
faults_armed() {
	: > /tmp/.fault-err
	exec 5> "$FAIL_NTH" 6< "$FAIL_NTH"
	echo "$1" >&5
	echo "$3" 2>&7 >> "$2"
	_rc=$?
	read -r _left <&6
	echo 0 >&5
	exec 5>&- 6<&-
	faults_result "$_rc"
}

# faults_undo: run the write's UNDO commands.
faults_undo() {
	eval "$_undo" 2>/dev/null
}

# faults_sweep NAME FILE VALUE UNDO STATE-FILES...
faults_sweep() {
	_name=$1 _file=$2 _value=$3 _undo=$4
	shift 4
	ftlab fault-write "$_name"
	faults_state "$@"
	_before=$_state
	faults_write "$_file" "$_value"
	if [ "$_result" != ok ]; then
		ftlab fault-clean "$_name" "the write fails without a fault: $_result"
		return
	fi
	faults_state "$@"
	_after=$_state
	faults_undo
	faults_state "$@"
	if [ "$_state" != "$_before" ]; then
		ftlab fault-clean "$_name" "the undo does not restore the state: $_state"
		return
	fi
	_n=1
	while :; do
		faults_armed "$_n" "$_file" "$_value"
		if [ "${_left:-1}" != 0 ]; then
			ftlab fault-allocations "$_name" $((_n - 1))
			faults_undo
			return
		fi
		faults_which "$@"
		ftlab fault "$_n" "$_result" "$_which"
		[ "$_which" = other ] && ftlab fault-state "$_state"
		if [ "$_result" != ok ]; then
			faults_write "$_file" "$_value"
			faults_which "$@"
			if [ "$_result" != ok ] || [ "$_which" != after ]; then
				ftlab fault-redo "$_n" "$_result" "$_which"
			fi
		fi
		faults_undo
		faults_which "$@"
		[ "$_which" != before ] && ftlab fault-undo "$_n" "$_which"
		_n=$((_n + 1))
	done
}

faults_main() {
	cd "$TRACING" || return
	reset_tracing
	if [ ! -w "$FAIL_NTH" ]; then
		ftlab fault-clean setup "no $FAIL_NTH: the kernel has no fault injection"
		ftlab faults-end
		return
	fi
	faults_setup
	[ -f /lab/robust/trace-events-sample.ko ] && insmod /lab/robust/trace-events-sample.ko
	mkdir instances/faults
	exec 7>> /tmp/.fault-err
	while IFS='	' read -r _name _file _value _undo _files; do
		# shellcheck disable=SC2086 # the state files are a list
		faults_sweep "$_name" "$_file" "$_value" "$_undo" $_files
	done < "$FAULTS_LIST"
	exec 7>&-
	reset_tracing		# removes the instance too
	ftlab faults-end
}

faults_main
