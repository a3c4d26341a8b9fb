# hostile.sh - the hostile-input test, run in the guest (busybox sh, with
# lib.sh loaded), for the plan item "robust:hostile".
#
# The host generated the writes from a seed (scripts/labkit/hostile.py) and
# packed them as /lab/robust/hostile.ops:
#   S SEED COUNT            the seed and the number of writes
#   P INDEX PATH            a file under tracefs that the writes use
#   R N KIND                a round begins (KIND: structured or chaos)
#   W INDEX MODE PIECE...   a write: MODE "a" (>>), "t" (>), or "p": each
#                           PIECE its own write(2) on one open file; a
#                           PIECE is an "echo -ne" argument without spaces
#   E N                     the round ends: print verdicts and listings
# Console protocol (the host's parser: hostile.parse):
#   @@ftlab hostile-begin SEED COUNT
#   @@ftlab hostile-round N KIND VERDICTS   one character per write
#   @@ftlab hostile-list NAME | hostile-files   then the listing's lines
#   @@ftlab hostile-other N TEXT            an error text with no character
#   @@ftlab hostile-clean                   the listings after removing all
#   @@ftlab hostile-end SECONDS

HOSTILE_OPS=${HOSTILE_OPS:-/lab/robust/hostile.ops}
EVENT_FILES="events/sched/sched_kthread_stop events/sched/sched_kthread_stop_ret events/sched/sched_process_fork"

# hostile_verdict: the verdict character of the error in /tmp/.e.
hostile_verdict() {
	read -r _err < /tmp/.e
	case ${_err##*: } in
	"Invalid argument")		_c=I ;;
	"No such device")		_c=D ;;
	"Device or resource busy")	_c=B ;;
	"No such file or directory")	_c=F ;;
	"File exists")			_c=X ;;
	"No space left on device")	_c=S ;;
	"Cannot allocate memory")	_c=M ;;
	"Operation not permitted")	_c=P ;;
	"Permission denied")		_c=A ;;
	"Bad address")			_c=U ;;
	"Argument list too long")	_c=L ;;
	"Numerical result out of range") _c=R ;;
	"No such process")		_c=H ;;
	"Resource temporarily unavailable") _c=G ;;
	"Too many open files")		_c=T ;;
	"nonexistent directory")	_c=Z ;;
	*)				_c="?"; ftlab hostile-other "$_round" "$_err" ;;
	esac
	_v="$_v$_c"
}

# hostile_write INDEX MODE PIECES: one write of the ops file.
hostile_write() {
	eval "_f=\$_path$1"
	case $2 in
	a)	if echo -ne "$3" 2>/tmp/.e >> "$_f"; then _v="$_v."; else hostile_verdict; fi ;;
	t)	if echo -ne "$3" 2>/tmp/.e > "$_f"; then _v="$_v."; else hostile_verdict; fi ;;
	p)	if { _ok=1
			for _p in $3; do
				echo -ne "$_p" >&3 || { _ok=; break; }
			done
			[ -n "$_ok" ]; } 2>/tmp/.e 3>>"$_f"; then
			_v="$_v."
		else
			hostile_verdict
		fi ;;
	esac
}

# hostile_short FILE: FILE sorted, or "(N lines)" when it has over 30:
# which functions a glob matches differs from kernel to kernel.
hostile_short() {
	_n=$(grep -c . "$1")
	if [ "$_n" -gt 30 ]; then
		echo "($_n lines)"
	else
		sort "$1"
	fi
}

# hostile_listings: what a user sees in the files the writes went to.
hostile_listings() {
	set +f
	ftlab hostile-list set_ftrace_filter
	grep ':' set_ftrace_filter
	ftlab hostile-list set_ftrace_filter-functions
	grep -v ':' set_ftrace_filter > /tmp/.functions
	hostile_short /tmp/.functions
	ftlab hostile-list set_ftrace_notrace
	hostile_short set_ftrace_notrace
	ftlab hostile-files
	# cat -v: a filter's error message quotes the filter, random bytes
	# and all, which the console would mangle
	for _e in $EVENT_FILES; do
		grep -H '' "$_e/trigger" "$_e/enable" "$_e/filter"
	done | cat -v
	grep -H '' trace_clock options/*
	set -f
}

hostile_clean() {
	reset_tracing
	for _e in $EVENT_FILES; do
		echo 0 > "$_e/filter"
	done
	echo local > trace_clock
	while IFS=: read -r _o _val; do
		echo "$_val" > "$_o"
	done < /tmp/options.before
	echo > error_log 2>/dev/null
	ftlab hostile-clean
	ftlab hostile-list enabled_functions
	cat enabled_functions
	ftlab hostile-list set_ftrace_filter
	cat set_ftrace_filter
	ftlab hostile-list soft-mode
	grep -H '\*' events/*/*/enable
	ftlab hostile-list triggers
	grep -Hv '^#' events/*/*/trigger
	ftlab hostile-list options-changed
	grep -H '' options/* | grep -vxF -f /tmp/options.before
	ftlab hostile-list tracing_on
	cat tracing_on
}

hostile_main() {
	cd "$TRACING" || return
	reset_tracing
	grep -H '' options/* > /tmp/options.before
	_start=$(date +%s)
	_round=
	set -f
	while read -r _w _a _b _c; do
		case $_w in
		S)	ftlab hostile-begin "$_a" "$_b" ;;
		P)	eval "_path$_a=\$_b" ;;
		R)	_round=$_a _kind=$_b _v= ;;
		W)	hostile_write "$_a" "$_b" "$_c" ;;
		E)	ftlab hostile-round "$_round" "$_kind" "$_v"
			hostile_listings ;;
		esac
	done < "$HOSTILE_OPS"
	set +f
	hostile_clean
	ftlab hostile-end $(($(date +%s) - _start))
}

hostile_main
