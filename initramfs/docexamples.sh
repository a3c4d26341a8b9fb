# docexamples.sh - the documentation's console examples, run in the guest
# (busybox sh, lib.sh loaded). /init sources it for the plan item
# "docexamples".
#
# The host extracts the examples from doc/*.adoc (scripts/labkit/
# docexamples.py) into /lab/docexamples: "list" says, one line per example,
# "ID KERNEL,KERNEL...", the kernels whose checkpoint has the example's
# section; ID.sh holds its commands between "@@ftlab ex-cmd ID N" and
# "@@ftlab ex-rc ID N RC" lines. Each example starts from a clean tracing
# state, in tracefs, as the documents say.

# docexamples_restore: what reset_tracing leaves as an example set it,
# back to the boot defaults: the snapshot buffer (freed) and the
# function-trace option (set).
docexamples_restore() {
	[ -f "$TRACING/snapshot" ] && echo 0 > "$TRACING/snapshot"
	[ -f "$TRACING/options/function-trace" ] && echo 1 > "$TRACING/options/function-trace"
	:
}

_ex_kernel=$(lab_kernel)
while read -r _ex_id _ex_kernels; do
	case ",$_ex_kernels," in
	*",$_ex_kernel,"*)	;;
	*)			continue ;;
	esac
	reset_tracing
	ftlab ex-begin "$_ex_id"
	(cd "$TRACING" && . "/lab/docexamples/$_ex_id.sh") 2>&1
	ftlab ex-end "$_ex_id"
	docexamples_restore
done < /lab/docexamples/list
reset_tracing
