#!/bin/sh
# The guest half of the gdb helpers' self-test (make check, on upstream
# 6.1, where every structure the helpers read exists): set up one of each
# thing a helper shows, then stop in ksys_sync for gdb to look.
cd /sys/kernel/tracing || exit 1
# ft-serve and ft-soft, as lab 02 uses them: this write becomes the
# kernel's soft-mode call, so sched_waking enters soft mode, soft disabled.
ask_gdb ft-soft sched sched_waking on
echo 1 > events/sched/sched_waking/enable
echo "sched_waking: enable reads $(cat events/sched/sched_waking/enable)"
# A snapshot in an instance of its own: 3 events swapped out, 1 left live.
mkdir instances/snap
for i in 1 2 3; do echo "before $i" > instances/snap/trace_marker; done
echo 1 > instances/snap/snapshot
echo after > instances/snap/trace_marker
# Probes and triggers last: "cat" would run vfs_read's traceon probe.
# With tracing off, traceoff probes and triggers never change anything, so
# their counts stay as written: the output does not depend on timing.
echo 0 > tracing_on
echo 'schedule:traceoff:5' >> set_ftrace_filter
echo 'vfs_read:traceon' >> set_ftrace_filter
echo 1 > events/sched/sched_switch/enable
echo 'traceoff:3 if prev_pid == 0' > events/sched/sched_switch/trigger
echo 'enable_event:sched:sched_wakeup:2' >> events/sched/sched_switch/trigger
echo mono > trace_clock
echo 0 > options/function-trace
kernel_log
echo "@@ftlab gdb-lab-finished selftest"
hostname ftlab-finished		# what $_ft_lab_finished() looks for
sync
