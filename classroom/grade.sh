#!/bin/sh
# What a CI job runs on a learner's push: install the Debian packages the
# labs need, resume each exercise from its saved work and grade it. The
# pushed work/NN.patch wins over the student/cpN branch that a cached
# build/ holds: make exercise takes a patch that changed since the tree
# last saved it, and keeps the branch aside.
#
#   classroom/grade.sh           every exercise with a work/NN.patch
#   LAB=3 classroom/grade.sh     exercise 3 only (the assignment)
#
# Each exercise's JUnit report and score go to results/NN/ (make grade
# RESULTS=results/NN). Exits 1 when any grade has a failed test, so that
# the pipeline shows red until the work passes.
set -u
cd "$(dirname "$0")/.." || exit 1
export DEBIAN_FRONTEND=noninteractive
if ! command -v python3 >/dev/null || ! command -v make >/dev/null; then
	apt-get update -qq && apt-get install -y -qq --no-install-recommends python3 make
fi
make deps || exit 1

# The exercises to grade: LAB, else the numbers of work/NN.patch.
labs=${LAB:-$(for p in work/[0-9][0-9].patch; do
	[ -e "$p" ] && basename "$p" .patch | sed 's/^0//'
done)}
if [ -z "$labs" ]; then
	echo "nothing to grade: no work/NN.patch in this push ('make save N' writes it)"
	exit 1
fi

status=0
for n in $labs; do
	dir=results/$(printf %02d "$n")
	start=$(date +%s)
	if make exercise "$n" && make grade "$n" RESULTS="$dir"; then
		:
	else
		status=1
	fi
	echo "exercise $n graded in $(( $(date +%s) - start )) s"
done
exit $status
