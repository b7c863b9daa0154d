#!/usr/bin/env bash
# Parallel first use: with no controller running, 32 `cordon run -- /bin/true` started at once
# all succeed (one starts the controller, the others wait for it); and again while an idle
# controller is exiting (none is dropped: the next controller takes over).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
cd "$TEST_TMP" || exit 1
mkdir -p work && cd work || exit 1

stop_controller() {
	local pid
	pid=$(controller_pid 2>/dev/null || true)
	[ -n "$pid" ] || return 0
	kill "$pid" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
}

# N at once; prints how many did not exit 0, and their codes.
burst() {
	local n=$1 pids=() bad=0 codes=""
	for _ in $(seq "$n"); do
		"$CORDON" run -- /bin/true >/dev/null 2>>"$TEST_TMP/burst.err" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p"
		rc=$?
		if [ "$rc" != 0 ]; then
			bad=$((bad + 1))
			codes="$codes $rc"
		fi
	done
	echo "$bad$codes"
}

for round in 1 2 3; do
	stop_controller
	out=$(burst 32)
	is 0 "$out" "cold start, round $round: 32 at once all succeed (failures: $out)"
done

for round in 1 2 3; do
	stop_controller
	# An on-demand controller that exits after 1 idle second; the burst lands around it.
	"$CORDON_CONTROLLER" --daemon --idle-exit 1 >/dev/null 2>&1 &
	for _ in $(seq 100); do [ -S "$XDG_RUNTIME_DIR/cordon/controller.sock" ] && break; sleep 0.02; done
	sleep "0.$((8 + round))"
	out=$(burst 32)
	is 0 "$out" "during an idle exit, round $round: 32 at once all succeed (failures: $out)"
done
[ -s "$TEST_TMP/burst.err" ] && diag "$(sort "$TEST_TMP/burst.err" | uniq -c | head -5)"
echo "1..$TAP_N"
done_testing
