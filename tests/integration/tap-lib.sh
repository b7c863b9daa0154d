# shellcheck shell=sh
# TAP for the shell tests (sourced, not run): plan N, ok STATUS DESCRIPTION, is WANT GOT
# DESCRIPTION, skip REASON (a failure under CORDON_MUST_WORK=1), na REASON (not applicable here:
# always a plain skip), diag TEXT…, skip_all REASON ("1..0 # SKIP", or a failure under
# CORDON_MUST_WORK=1), done_testing (exits 0 when nothing failed).
TAP_N=0
TAP_FAILED=0

plan() { echo "1..$1"; }
ok() {
	TAP_N=$((TAP_N + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $TAP_N - $2"
	else
		echo "not ok $TAP_N - $2"
		TAP_FAILED=$((TAP_FAILED + 1))
		return 1
	fi
}
is() {
	TAP_N=$((TAP_N + 1))
	if [ "$1" = "$2" ]; then
		echo "ok $TAP_N - $3"
	else
		echo "not ok $TAP_N - $3"
		echo "#   wanted: $1"
		echo "#      got: $2"
		TAP_FAILED=$((TAP_FAILED + 1))
		return 1
	fi
}
skip() {
	TAP_N=$((TAP_N + 1))
	if [ "${CORDON_MUST_WORK:-0}" = 1 ]; then
		echo "not ok $TAP_N - $1 (CORDON_MUST_WORK=1)"
		TAP_FAILED=$((TAP_FAILED + 1))
	else
		echo "ok $TAP_N # SKIP $1"
	fi
}
na() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N # SKIP $1"
}
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
skip_all() {
	if [ "${CORDON_MUST_WORK:-0}" = 1 ]; then
		echo "1..1"
		echo "not ok 1 - required feature missing (CORDON_MUST_WORK=1): $*"
		exit 1
	fi
	echo "1..0 # SKIP $*"
	exit 0
}
done_testing() {
	[ "$TAP_FAILED" -eq 0 ]
	exit $?
}
