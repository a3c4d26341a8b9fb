# run.sh - the differential conformance corpus, run in the guest (busybox sh).
#
# /init sources this file for the plan item "conformance", with lib.sh
# loaded. For every case of the corpus (labs/conformance/corpus) it starts
# from a clean tracing state, performs the case's steps, then prints what a
# user of tracefs would see: the result of each write ("ok" or the error
# text), the contents of every file written, the "enable" file of every
# event the case names, and tracing_on. The host runs the same corpus on
# unmodified 6.1 and on a checkpoint, and compares case by case.
#
# Console protocol (one line each):
#   @@ftlab conf-begin ID
#   ...what the case printed...
#   @@ftlab conf-end ID
#   @@ftlab conf-summary CASES
#
# Corpus lines: "ID FLAGS STEP [ ;; STEP ]...", FLAGS "-" or a comma list.
# Steps:
#   > FILE VALUE     write VALUE (opening FILE with truncation)
#   >> FILE VALUE    append VALUE
#   cat FILE         show FILE now
#   mkdir DIR, rmdir DIR
#   hit              make the kernel run ksys_sync once, schedule and read
#   snapshot [DIR]   "allocated" or "freed": the snapshot buffer of DIR
#   has TEXT FILE    whether FILE contains TEXT (a space in TEXT: {sp})
#   enabled FUNC     how many ftrace_ops trace FUNC (lib.sh's ops_count)
# In a VALUE: {sp} a space, {tab} a tab, {nl} a newline, {rep:N:TEXT}
# TEXT N times, and {nonl} at the end: no newline after the value.
#
# The flag "warns" marks a case that makes unmodified 6.1 WARN: a "!!"
# glob reaches WARN_ON(not) in its unregister_ftrace_function_probe_func(),
# and the guest boots with panic_on_warn=1. On upstream (ftlab.kernel=
# upstream on the kernel command line) the guest does not perform such a
# case's "!!" writes and prints "skipped on upstream (it WARNs)" as their
# result; the host puts 6.1's errno in its place (EINVAL, returned right
# after the WARN, before any state changes). Every other kernel performs
# them, and must not WARN.

CONF_DIR=${CONF_DIR:-/lab/labs/conformance}
CONF_TMP=${CONF_TMP:-/tmp/conf}
CONF_KERNEL=${CONF_KERNEL:-$(lab_kernel)}
mkdir -p "$CONF_TMP"

# conf_expand VALUE: VALUE with its {macros} replaced; sets _nonl.
conf_expand() {
	_v=$1
	_nonl=
	case $_v in
	*'{nonl}')	_nonl=1; _v=${_v%\{nonl\}} ;;
	esac
	while :; do
		case $_v in
		*'{sp}'*)	_v="${_v%%\{sp\}*} ${_v#*\{sp\}}" ;;
		*'{tab}'*)	_v="${_v%%\{tab\}*}	${_v#*\{tab\}}" ;;
		*'{nl}'*)	_v="${_v%%\{nl\}*}
${_v#*\{nl\}}" ;;
		*)		break ;;
		esac
	done
	while :; do
		case $_v in
		*'{rep:'*'}'*)
			_pre=${_v%%\{rep:*}
			_r=${_v#*\{rep:}
			_spec=${_r%%\}*}
			_post=${_r#*\}}
			_v="$_pre$(awk -v n="${_spec%%:*}" -v t="${_spec#*:}" \
				'BEGIN { while (n-- > 0) printf "%s", t }')$_post" ;;
		*)		break ;;
		esac
	done
}

# conf_emit: write the expanded value, as "echo" does (one write call).
conf_emit() {
	if [ -n "$_nonl" ]; then
		echo -n "$_v"
	else
		echo "$_v"
	fi
}

# conf_write MODE FILE VALUE: one write, and its result.
conf_write() {
	conf_expand "$3"
	if [ -n "$_warns" ] && [ "$CONF_KERNEL" = upstream ]; then
		case $3 in
		'!!'*)	echo "'$3' $1 $2: skipped on upstream (it WARNs)"
			return ;;
		esac
	fi
	if [ "$1" = ">" ]; then
		conf_emit 2>"$CONF_TMP/err" > "$2"
	else
		conf_emit 2>"$CONF_TMP/err" >> "$2"
	fi
	_rc=$?
	if [ $_rc -eq 0 ]; then
		_res=ok
	else
		_res=
		read -r _res < "$CONF_TMP/err"
		_res=${_res##*: }
	fi
	echo "'$3' $1 $2: $_res"
}

# conf_note_file FILE, conf_note_event PREFIX SYSTEM EVENT: remember what
# to show after the steps (each once, in order of first mention).
conf_note_file() {
	case " $_files " in
	*" $1 "*)	;;
	*)		_files="$_files $1" ;;
	esac
}

conf_note_event() {
	case $3 in
	''|*[!a-z0-9_]*)	return ;;
	esac
	case $2 in
	''|*[!a-z0-9_]*)	return ;;
	esac
	_e="$1events/$2/$3/enable"
	case " $_enables " in
	*" $_e "*)	;;
	*)		_enables="$_enables $_e" ;;
	esac
}

# conf_note_write FILE VALUE: the files and events a write concerns.
conf_note_write() {
	conf_note_file "$1"
	_pfx=
	case $1 in
	instances/*/*)	_pfx=${1#instances/}; _pfx="instances/${_pfx%%/*}/" ;;
	esac
	case $1 in
	*events/*/*/*)
		_r=${1#"$_pfx"events/}
		_evt=${_r#*/}
		conf_note_event "$_pfx" "${_r%%/*}" "${_evt%%/*}" ;;
	esac
	case $2 in
	*able_event:*:*)
		_r=${2#*able_event:}
		_sys=${_r%%:*}
		_r=${_r#*:}
		conf_note_event "$_pfx" "$_sys" "${_r%%[!a-z0-9_]*}" ;;
	esac
	case $1 in
	*/trigger)		_triggers="$_triggers $1" ;;
	*set_ftrace_filter)	_probes=1 ;;
	esac
}

# conf_value FILE: _value becomes the first line of FILE (read by the
# shell itself: a fork costs more than the read under emulation).
conf_value() {
	_value="no such file"
	[ -f "$1" ] && read -r _value < "$1"
}

# conf_show FILE: a file's contents under a title line.
conf_show() {
	if [ -f "$1" ]; then
		echo "-- $1:"
		cat "$1"
	else
		echo "-- $1: no such file"
	fi
}

conf_snapshot_state() {
	_s="${1:+$1/}snapshot"
	if [ -f "$_s" ]; then
		echo "snapshot${1:+ of $1}: $(grep -o 'Snapshot is [a-z]*' "$_s" | cut -d' ' -f3)"
	else
		echo "snapshot${1:+ of $1}: no such file"
	fi
}

conf_hit() {
	sync
	cat /proc/version > /dev/null
	sleep 0.01
}

# conf_step STEP: one step of a case.
conf_step() {
	_op=${1%% *}
	_arg=${1#"$_op"}
	_arg=${_arg# }
	case $_op in
	'>'|'>>')
		_file=${_arg%% *}
		_val=${_arg#"$_file"}
		_val=${_val# }
		conf_note_write "$_file" "$_val"
		conf_write "$_op" "$_file" "$_val" ;;
	cat)	conf_show "$_arg" ;;
	mkdir|rmdir)
		if $_op "$_arg" 2>"$CONF_TMP/err"; then
			echo "$_op $_arg: ok"
		else
			read -r _res < "$CONF_TMP/err"
			echo "$_op $_arg: ${_res##*: }"
		fi ;;
	hit)	conf_hit; echo "hit" ;;
	snapshot)	conf_snapshot_state "$_arg" ;;
	has)
		_text=${_arg%% *}
		_f=${_arg#* }
		conf_expand "$_text"
		if grep -qF -- "$_v" "$_f" 2>/dev/null; then
			echo "$_f has '$_text': yes"
		else
			echo "$_f has '$_text': no"
		fi ;;
	enabled)	echo "enabled_functions $_arg: $(ops_count "$_arg")" ;;
	*)	echo "bad step in the corpus: $1" ;;
	esac
}

# conf_clean: back to the clean state after a case. lib.sh's reset_tracing
# reads every trigger file of every instance, which takes seconds under
# emulation; a case touches few files, and the guest knows which: the
# trigger files it wrote are emptied, probes are removed if it wrote to a
# set_ftrace_filter, then instances go, and the rest of reset_tracing's
# work is done, plus what reset_tracing leaves alone: the function-trace
# option and the snapshot buffer. conf_state, before the first case and
# after the last, proves that nothing was left behind.
conf_clean() {
	cd "$TRACING" || return
	for _t in $_triggers; do
		[ -f "$_t" ] && remove_all "$_t"
	done
	for _d in instances/*; do
		[ -d "$_d" ] || continue
		conf_clean_dir "$_d"
		rmdir "$_d"
	done
	conf_clean_dir .
	echo local > trace_clock
	[ -f options/function-trace ] && echo 1 > options/function-trace
	[ -f snapshot ] && echo 0 > snapshot
}

conf_clean_dir() {
	echo 0 > "$1/tracing_on"
	echo nop > "$1/current_tracer"
	if [ -f "$1/set_ftrace_filter" ]; then
		[ -n "$_probes" ] && remove_all "$1/set_ftrace_filter"
		echo > "$1/set_ftrace_filter"
		echo > "$1/set_ftrace_notrace"
	fi
	echo 0 > "$1/events/enable"
	echo > "$1/trace"
	echo 1 > "$1/tracing_on"
}

# conf_case ID FLAGS STEPS
conf_case() {
	_files= _enables= _triggers= _probes= _warns=
	case ",$2," in
	*,warns,*)	_warns=1 ;;
	esac
	ftlab conf-begin "$1"
	_steps=$3
	while [ -n "$_steps" ]; do
		case $_steps in
		*' ;; '*)	_step=${_steps%% ;; *}; _steps=${_steps#* ;; } ;;
		*)		_step=$_steps; _steps= ;;
		esac
		conf_step "$_step"
	done
	for _f in $_files; do
		conf_show "$_f"
	done
	for _e in $_enables; do
		case " $_files " in
		*" $_e "*)	continue ;;	# shown above, as a file written
		esac
		conf_value "$_e"
		echo "-- $_e: $_value"
	done
	conf_value tracing_on
	_on="tracing_on: $_value"
	if [ -d instances/conf ]; then
		conf_value instances/conf/tracing_on
		_on="$_on, instances/conf: $_value"
	fi
	echo "$_on"
	ftlab conf-end "$1"
	conf_clean
}

# conf_state: everything a case could leave behind, read the slow way
# (every trigger and enable file). Printed before the first case and after
# the last one; the host checks that both are the same.
conf_state() {
	echo "instances: $(ls instances | tr '\n' ' ')"
	echo "tracing_on: $(cat tracing_on)"
	echo "current_tracer: $(cat current_tracer)"
	echo "stack tracer: $(cat "$STACK_TRACER" 2>/dev/null || echo none)"
	echo "trace_clock: $(cat trace_clock)"
	conf_show set_ftrace_filter
	conf_show set_ftrace_notrace
	echo "enabled_functions: $(wc -l < enabled_functions)"
	echo "-- triggers:"
	grep -Hv '^#' events/*/*/trigger 2>/dev/null
	echo "-- events not 0:"
	grep -Hv '^0$' events/*/*/enable
	conf_show set_event
	conf_show options/function-trace
	conf_snapshot_state
}

conf_run() {
	reset_tracing
	conf_clean
	ftlab conf-begin state-initial
	conf_state
	ftlab conf-end state-initial
	_n=0
	while IFS= read -r _line <&3; do
		case $_line in
		''|'#'*)	continue ;;
		esac
		_id=${_line%%[ 	]*}
		_rest=${_line#"$_id"}
		_rest=${_rest#"${_rest%%[! 	]*}"}
		_flags=${_rest%%[ 	]*}
		_rest=${_rest#"$_flags"}
		_rest=${_rest#"${_rest%%[! 	]*}"}
		cd "$TRACING"
		conf_case "$_id" "$_flags" "$_rest" 2>&1
		_n=$((_n + 1))
	done 3< "$CONF_DIR/corpus"
	reset_tracing
	conf_clean
	ftlab conf-begin state-final
	conf_state
	ftlab conf-end state-final
	ftlab conf-summary "$_n"
}

# CONF_LIBRARY_ONLY=1: only define the functions (the host's unit tests).
if [ -z "$CONF_LIBRARY_ONLY" ]; then
	conf_run
	cd /
fi
