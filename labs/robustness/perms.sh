# perms.sh - permissions of tracefs, run in the guest (busybox sh, lib.sh
# loaded) for the plan item "robust:perms".
#
# 1. The mode, owner and type of every tracefs file at the top level, in
#    options/, in one event's folder and in a new instance: the host
#    compares the listing with upstream 6.1's.
# 2. An unprivileged user (uid 65534, made with busybox su) tries to add
#    and remove a function probe and an event trigger, to change the clock,
#    an option, an event's enable and filter: every write must be refused,
#    and root must then see exactly what it saw before. It tries twice:
#    as tracefs is, and with every folder on the way opened to all, so
#    that the files' own modes are what refuses it.
# Console protocol:
#   @@ftlab perms-modes           then "MODE UID GID PATH" lines
#   @@ftlab perms-try WHAT RESULT one per attempt ("ok" or the error text)
#   @@ftlab perms-state BEFORE|AFTER   then what root sees
#   @@ftlab perms-end

perms_modes() {
	ftlab perms-modes
	mkdir instances/perms
	for _f in * options/* events/sched/sched_switch/* instances/perms/*; do
		[ -e "$_f" ] && stat -c '%A %u %g %n' "$_f"
	done
	rmdir instances/perms
}

perms_state() {
	ftlab perms-state "$1"
	grep -H '' set_ftrace_filter events/sched/sched_kthread_stop/trigger \
		events/sched/sched_kthread_stop/enable events/sched/sched_kthread_stop/filter \
		trace_clock options/sym-offset tracing_on current_tracer
	wc -l < enabled_functions
}

# perms_try WHAT VALUE FILE: VALUE >> FILE as the unprivileged user.
perms_try() {
	_r=$(su -s /bin/sh nobody -c "echo '$2' >> '$TRACING/$3'" 2>&1)
	if [ $? -eq 0 ]; then
		ftlab perms-try "$1" ok
	else
		ftlab perms-try "$1" "${_r##*: }"
	fi
}

# perms_attempts SUFFIX: everything the user tries, each named with SUFFIX.
perms_attempts() {
	perms_try "add-probe$1" 'vfs_fsync:traceon' set_ftrace_filter
	perms_try "remove-probe$1" '!ksys_sync:traceoff' set_ftrace_filter
	perms_try "add-event-probe$1" 'vfs_fsync:enable_event:sched:sched_switch' set_ftrace_filter
	perms_try "notrace$1" 'schedule' set_ftrace_notrace
	perms_try "add-trigger$1" 'stacktrace' events/sched/sched_kthread_stop/trigger
	perms_try "remove-trigger$1" '!traceoff' events/sched/sched_kthread_stop/trigger
	perms_try "clock$1" 'global' trace_clock
	perms_try "option$1" 1 options/sym-offset
	perms_try "enable$1" 1 events/sched/sched_kthread_stop/enable
	perms_try "filter$1" 'pid > 1' events/sched/sched_kthread_stop/filter
	perms_try "tracing_on$1" 0 tracing_on
	perms_try "tracer$1" function current_tracer
	_r=$(su -s /bin/sh nobody -c "mkdir '$TRACING/instances/user'" 2>&1)
	if [ $? -eq 0 ]; then ftlab perms-try "mkdir-instance$1" ok; rmdir instances/user
	else ftlab perms-try "mkdir-instance$1" "${_r##*: }"; fi
	_r=$(su -s /bin/sh nobody -c "cat '$TRACING/set_ftrace_filter'" 2>&1)
	if [ $? -eq 0 ]; then ftlab perms-try "read-filter$1" ok
	else ftlab perms-try "read-filter$1" "${_r##*: }"; fi
}

perms_main() {
	cd "$TRACING" || return
	reset_tracing
	mkdir -p /etc
	grep -q '^nobody:' /etc/passwd 2>/dev/null ||
		echo 'nobody:x:65534:65534:nobody:/:/bin/sh' >> /etc/passwd
	grep -q '^nogroup:' /etc/group 2>/dev/null || echo 'nogroup:x:65534:' >> /etc/group
	perms_modes
	# root's state: one probe and one trigger, for the user to try to remove
	echo 'ksys_sync:traceoff' >> set_ftrace_filter
	echo 'traceoff' >> events/sched/sched_kthread_stop/trigger
	perms_state BEFORE
	ftlab perms-user "$(su -s /bin/sh nobody -c 'id -u')"
	perms_attempts ""
	# Then with every folder on the way open to all (chmod a+rx): the
	# files' own modes must refuse the user.
	_dirs=". events events/sched events/sched/sched_kthread_stop options instances"
	_modes=$(stat -c %a $_dirs)
	chmod a+rx $_dirs
	ftlab perms-folders $(stat -c %a $_dirs)
	perms_attempts -open-folders
	set -- $_modes
	for _d in $_dirs; do
		chmod "$1" "$_d"
		shift
	done
	perms_state AFTER
	reset_tracing
	ftlab perms-end
}

perms_main
