# ftracetest-all.sh - every test of the kernel's ftracetest (busybox sh).
#
# /init sources this file for the plan item "ftracetest-all", with lib.sh
# loaded: the whole suite, in its sorted order, in one ftracetest run
# (lib.sh's ftracetest_run says how the host maps results to files). As in
# a plain ftracetest run, the "(instance)" runs come after all the tests.

find /lab/ftrace/test.d -name '*.tc' | sed 's|^/lab/ftrace/test.d/||' | sort > /tmp/ftall.list
ftracetest_run all /tmp/ftall.list
