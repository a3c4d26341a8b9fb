# The gdb half of the self-test: run by make check in batch mode after the
# helpers are loaded. Each command's output is compared with "expected".
break ksys_sync if $_ft_lab_finished()
continue
echo @@selftest ft-probes\n
ft-probes
echo @@selftest ft-event\n
ft-event sched sched_switch
echo @@selftest ft-triggers\n
ft-triggers sched sched_switch
echo @@selftest ft-clock\n
ft-clock
echo @@selftest ft-break\n
ft-break
echo @@selftest end\n
