# The gdb half of the self-test: run by make check in batch mode after the
# helpers are loaded. Every command, function and pretty-printer runs once;
# the output of each section is compared with "expected".
echo @@selftest help ft\n
help ft
echo @@selftest ft-serve\n
ft-serve
break ksys_sync if $_ft_lab_finished()
commands
  silent
end
continue
echo @@selftest ft-probes\n
ft-probes
echo @@selftest ft-event\n
ft-event sched sched_switch
echo @@selftest ft-soft\n
ft-event sched sched_waking
ft-soft sched sched_switch on
echo @@selftest ft-event-set\n
ft-event-set sched sched_waking -SOFT_DISABLED
ft-event-set sched sched_waking +SOFT_DISABLED
echo @@selftest ft-triggers\n
ft-triggers sched sched_switch
echo @@selftest ft-snapshot\n
ft-snapshot snap
echo @@selftest ft-clock\n
ft-clock
echo @@selftest ft-callsite\n
ft-callsite schedule
ft-callsite vfs_write
echo @@selftest ft-console\n
ft-console 1
echo @@selftest printers and functions\n
print *$ft_probe
print *$ft_event
print *$ft_trigger
print $_ft_has_probes()
print $_ft_has_probes("snap")
print $_ft_lab_finished()
echo @@selftest ft-break\n
ft-break
ft-break trigger
echo @@selftest end\n
