#!/bin/sh
# What a class's CI job runs on a learner's push, and what gather.py runs
# for each learner: grade each exercise of the push with the instructor's
# harness. The learner's repository gives work/NN.patch and nothing else.
#
#   sh classroom/grade.sh           every exercise with a work/NN.patch
#   LAB=3 sh classroom/grade.sh     exercise 3 only (the assignment)
#
# The learner's checkout is the current folder. The harness that grades
# it (patches/, labs/, exercises/, scripts/, initramfs/, gdb-scripts/,
# Makefile, classroom/) is, in this order:
#
#   * TEMPLATE_COMMIT set (a full commit hash): that commit of
#     TEMPLATE_REPO (a URL or a path; default origin), extracted into a
#     temporary folder, whose own grade.sh then runs. The kernels build in
#     ./build, where the CI cache keeps them (BUILD=DIR: elsewhere).
#   * this script is not in the current folder's checkout (the
#     container's /opt/ftlab/classroom/grade.sh, gather.py's checkout):
#     the checkout it is in, as it is, with its build/.
#   * else the learner's own copy, graded in place, and only when those
#     paths are the template's: TEMPLATE_REPO's HEAD when TEMPLATE_REPO is
#     set, else the repository's first commit (the copy of the template
#     that GitHub Classroom makes). When they differ it refuses, and
#     names the files.
#
# The work may change the files of the exercise's holes and nothing else
# (classroom/grader.py scope): it is applied and compiled, and the
# learner's code runs in QEMU only.
#
# Results, per exercise: results/NN/score.json (the points), junit.xml,
# verdict.json (graded, does not build, does not apply, refused) and
# grade.log (what make printed); results/autograding.json, GitHub
# Classroom's form, also written to $GITHUB_OUTPUT as "result" in a
# workflow run.
#
# Exit code: 0 when each exercise was graded, whatever its score (work
# that does not build or apply scores 0), or when there is nothing to
# grade; 1 when the grader failed (a package it cannot install, its own
# checkpoint or upstream 6.1 not building, a crash of the harness): the
# job fails and reports no points; 2 when it refused the learner's copy.
set -u
export DEBIAN_FRONTEND=noninteractive
GRADED="patches labs exercises scripts initramfs gdb-scripts Makefile classroom"
learner=$(pwd -P)
harness=$(cd "$(dirname "$0")/.." && pwd -P)

say() { printf '%s\n' "$*"; }
# The grader itself failed: not the learner's work.
broke() { say "GRADER FAILED (not the work's fault): $*" >&2; exit 1; }

# --- what to grade ------------------------------------------------------------

todo=""
if [ -n "${LAB:-}" ]; then
	wanted=$LAB
else
	wanted=$(for p in work/[0-9][0-9].patch; do
		[ -e "$p" ] && basename "$p" .patch
	done)
	if [ -z "$wanted" ]; then
		say "nothing to grade yet: this commit has no work/NN.patch (the first commit" \
		    "of a repository made from the template has none; 'make save N' writes it," \
		    "then commit it and push)"
		exit 0
	fi
fi
for n in $wanted; do
	case $n in
	*[!0-9]*) broke "LAB=$LAB: exercise numbers, separated by spaces" ;;
	esac
	n=${n#"${n%%[!0]*}"}		# 03 is 3
	n=${n:-0}
	nn=$(printf %02d "$n")
	if [ -e "work/$nn.patch" ]; then
		todo="$todo $n"
	else
		say "exercise $n: nothing to grade yet: this commit has no work/$nn.patch" \
		    "('make save $n' writes it, then commit it and push)"
	fi
done
[ -n "$todo" ] || exit 0

if ! command -v python3 >/dev/null || ! command -v make >/dev/null \
		|| ! command -v git >/dev/null; then
	{ apt-get update -qq && apt-get install -y -qq --no-install-recommends \
		python3 make git ca-certificates; } || broke "cannot install python3, make and git"
fi

# --- which harness ------------------------------------------------------------

if [ -n "${TEMPLATE_COMMIT:-}" ] && [ "${FTLAB_PINNED:-}" != "$TEMPLATE_COMMIT" ]; then
	case $TEMPLATE_COMMIT in
	*[!0-9a-f]*) broke "TEMPLATE_COMMIT=$TEMPLATE_COMMIT: a full commit hash, in lowercase" ;;
	esac
	[ ${#TEMPLATE_COMMIT} -ge 40 ] || broke "TEMPLATE_COMMIT=$TEMPLATE_COMMIT: the full hash"
	repo=${TEMPLATE_REPO:-origin}
	if ! git cat-file -e "$TEMPLATE_COMMIT^{commit}" 2>/dev/null; then
		git fetch -q --depth=1 "$repo" "$TEMPLATE_COMMIT" 2>/dev/null \
			|| git fetch -q "$repo" "+refs/heads/*:refs/ftlab-template/*"
	fi
	git cat-file -e "$TEMPLATE_COMMIT^{commit}" 2>/dev/null \
		|| broke "commit $TEMPLATE_COMMIT is not in $repo (TEMPLATE_COMMIT, TEMPLATE_REPO)"
	pinned=$(mktemp -d "${TMPDIR:-/tmp}/ftlab-grader.XXXXXX") || broke "mktemp failed"
	# shellcheck disable=SC2086
	git archive "$TEMPLATE_COMMIT" $GRADED | tar -x -C "$pinned"
	[ -f "$pinned/classroom/grade.sh" ] \
		|| broke "cannot extract $GRADED from $TEMPLATE_COMMIT of $repo"
	say "grading with the harness of $TEMPLATE_COMMIT ($repo); of this repository," \
	    "only work/NN.patch is used"
	FTLAB_PINNED=$TEMPLATE_COMMIT BUILD=${BUILD:-$learner/build} \
		sh "$pinned/classroom/grade.sh"
	rc=$?
	rm -rf "$pinned"
	exit $rc
fi

if [ "$harness" = "$learner" ]; then
	git rev-parse --git-dir >/dev/null 2>&1 \
		|| broke "$learner is not a git checkout: set TEMPLATE_COMMIT, the grader's commit"
	if [ -n "${TEMPLATE_REPO:-}" ]; then
		git fetch -q --depth=1 "$TEMPLATE_REPO" HEAD \
			|| broke "cannot fetch TEMPLATE_REPO=$TEMPLATE_REPO"
		ref=$(git rev-parse FETCH_HEAD)
		what="the template's HEAD ($TEMPLATE_REPO, $ref)"
	else
		if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
			git fetch -q --unshallow || broke "cannot fetch this repository's history"
		fi
		# shellcheck disable=SC2046
		set -- $(git rev-list --max-parents=0 HEAD)
		[ $# -eq 1 ] \
			|| broke "this repository has $# first commits: set TEMPLATE_COMMIT"
		ref=$1
		what="this repository's first commit ($ref)"
	fi
	# shellcheck disable=SC2086
	changed=$({ git diff --name-only "$ref" -- $GRADED
		    git ls-files --others --exclude-standard -- $GRADED; } | sort -u)
	if [ -n "$changed" ]; then
		# shellcheck disable=SC2086
		set -- $changed
		say "REFUSED: the grader is this repository's own copy, and it differs from" \
		    "$what in $# file(s):"
		say "$changed" | sed -n '1,20s/^/    /p'
		say "A learner's push changes work/NN.patch only. Set TEMPLATE_COMMIT (and" \
		    "TEMPLATE_REPO) to grade with the instructor's copy (classroom/README.adoc)."
		exit 2
	fi
	say "grading with this repository's copy of the harness: it is $what"
fi

# --- the grades ---------------------------------------------------------------

build=${BUILD:-$harness/build}
helper() { python3 "$harness/classroom/grader.py" "$@"; }

if [ "$harness" != "$learner" ]; then
	# The work goes into the grader's checkout: one that holds work of its
	# own (a developer's clone) is never written over.
	if [ ! -e "$harness/work/.grader" ] \
			&& ls "$harness"/work/[0-9][0-9].patch >/dev/null 2>&1; then
		broke "$harness/work holds work of its own: grade with a checkout that has none"
	fi
	{ mkdir -p "$harness/work" && : > "$harness/work/.grader"; } \
		|| broke "cannot write $harness/work"
	rm -f "$harness"/work/[0-9][0-9].patch
fi

(cd "$harness" && make deps) || broke "make deps failed (its output is above)"

# run LOG COMMAND...: the command in the harness, its output shown and
# added to LOG; its exit code in rc. quiet LOG COMMAND...: the same into a
# new LOG, shown only when the command fails.
run() {
	out=$1
	shift
	{ (cd "$harness" && "$@") 2>&1; echo $? > "$out.rc"; } | tee -a "$out"
	rc=$(cat "$out.rc")
	rm -f "$out.rc"
}
quiet() {
	out=$1
	shift
	(cd "$harness" && "$@") > "$out" 2>&1
	rc=$?
	[ "$rc" -eq 0 ] || cat "$out"
}

# grade N: one exercise, to results/NN. Returns 1 when the grader failed.
grade() {
	n=$1
	nn=$(printf %02d "$n")
	dir=$learner/results/$nn
	log=$dir/grade.log
	shown=results/$nn/grade.log
	{ rm -rf "$dir" && mkdir -p "$dir"; } || broke "cannot write $dir"
	helper scope "$n" "$learner/work/$nn.patch" > "$dir/scope.txt"
	case $? in
	0) ;;
	3) helper zero "$n" "$dir" refused "$(cat "$dir/scope.txt")"; return ;;
	*) say "GRADER FAILED: grader.py scope $n (its message is above)"; return 1 ;;
	esac
	if [ "$harness" != "$learner" ]; then
		cp "$learner/work/$nn.patch" "$harness/work/$nn.patch" \
			&& helper forget "$n" "$build" || return 1
	fi
	say "exercise $n: make exercise $n takes work/$nn.patch (its output: $shown)"
	quiet "$log" make exercise "$n"
	if [ "$rc" -ne 0 ]; then
		if grep -q "does not apply to the skeleton" "$log"; then
			why="work/$nn.patch does not apply to the skeleton of exercise $n:"
			helper zero "$n" "$dir" "does not apply" "$why git's message is in $shown"
			return
		fi
		say "GRADER FAILED: make exercise $n exited $rc (its output: $shown)"
		return 1
	fi
	run "$log" make grade "$n" "RESULTS=$dir"
	if [ -f "$dir/score.json" ]; then
		# make grade scores the conformance cases against upstream 6.1's
		# run; without one, that line would be wrong, not the work.
		if grep -q "no run of upstream [0-9.]* to compare with" "$log"; then
			say "GRADER FAILED: no run of upstream 6.1 to compare the corpus with" \
			    "(see $shown)"
			return 1
		fi
		helper graded "$n" "$dir"
		return
	fi
	if grep -q "building your checkpoint $n (student/cp$n) failed" "$log"; then
		full=$(sed -n 's/.*full log: //p' "$log" | tail -n 1)
		why="your checkpoint $n does not compile: the first errors are in $shown"
		helper zero "$n" "$dir" "does not build" "$why${full:+, the whole build in $full}"
		return
	fi
	say "GRADER FAILED: make grade $n exited $rc without a score (its output: $shown)"
	return 1
}

status=0
for n in $todo; do
	start=$(date +%s)
	grade "$n" || status=1
	say "exercise $n: done in $(( $(date +%s) - start )) s"
done
if [ $status -ne 0 ]; then
	say "GRADER FAILED on at least one exercise (above): no points are reported"
	exit 1
fi
# shellcheck disable=SC2086
result=$(helper classroom "$learner/results" $todo) || broke "grader.py classroom failed"
if [ -n "${GITHUB_OUTPUT:-}" ]; then
	say "result=$result" >> "$GITHUB_OUTPUT"
fi
say "points: results/autograding.json; the tests: results/NN/junit.xml"
exit 0
