# ftracetest-all.sh - every test of the kernel's ftracetest (busybox sh).
#
# /init sources this file for the plan item "ftracetest-all", with lib.sh
# loaded. Each test of /lab/ftrace/test.d runs on its own, in the suite's
# sorted order, so that the host can map every result line to its file
# (ftracetest's summary names descriptions, not files). A test with the
# "instance" flag reports twice: its "(instance)" run follows at once, not
# at the end of the whole suite as in one ftracetest run.
#
# Console protocol (one line each):
#   @@ftlab ftall-begin TEST
#   ...ftracetest's output...
#   @@ftlab ftall-end TEST rc=RC

ftall_run() {
	cd /lab/ftrace || return
	find test.d -name '*.tc' | sort > /tmp/ftall.list
	while read -r _t; do
		_t=${_t#test.d/}
		ftlab ftall-begin "$_t"
		./ftracetest -v "test.d/$_t" 2>&1 < /dev/null
		ftlab ftall-end "$_t" "rc=$?"
	done < /tmp/ftall.list
	cd /
}

ftall_run
