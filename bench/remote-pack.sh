#!/usr/bin/env bash
# The E2B and Daytona packs against their loopback fakes (tests/fakes/): hydrate (sandbox.acquire
# of a 10,000-file, 100 MiB workspace) and reconcile (sandbox.release after a command changed
# some of it) in MiB/s and files/s, medians of ROUNDS; and what an exec through cordon and the
# pack adds over the fake's own time for the same command, paired in alternation (medians).
# Run from a build tree (as root, like the integration tests: the controller starts a launcher
# of its own):
#   bench/remote-pack.sh [e2b|daytona|all] [ROUNDS] [EXECS]     (defaults: all 5 200)
# ROUNDS 0: the exec part only. CORDON_BENCH_PACK=FILE: that build of the pack's program instead
# (one pack, for a before/after comparison). Target: at most 20 ms added per exec on loopback.
set -uo pipefail
which=${1:-all}
rounds=${2:-5}
execs=${3:-200}
b=$(pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
command -v python3 >/dev/null || { echo "remote-pack.sh: python3 is missing" >&2; exit 1; }
export top_builddir=$b top_srcdir=$src
export CORDON_CONTROLLER=$b/cordon-controller CORDON_LAUNCHERD=$b/cordon-launcherd
export CORDON_LAUNCHERD_SOCKET=/nonexistent/cordon-bench/launcherd.sock
unset CORDON_CONTROLLER_SOCKET
tmp=$(mktemp -d /tmp/cordon-bench-remote.XXXXXX)
chmod 0755 "$tmp"
cleanup() {
	local pid
	pid=$(head -n1 "$XDG_RUNTIME_DIR/cordon/controller.sock.lock" 2>/dev/null || true)
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	[ -n "${CORDON_BENCH_KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
export XDG_RUNTIME_DIR=$tmp/run XDG_STATE_HOME=$tmp/state
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"
chmod 700 "$XDG_RUNTIME_DIR"
case $which in
all) packs="e2b daytona" ;;
e2b | daytona) packs=$which ;;
*) echo "usage: remote-pack.sh [e2b|daytona|all] [ROUNDS] [EXECS]" >&2; exit 2 ;;
esac
rc=0
for p in $packs; do
	python3 "$src/bench/remote-pack.py" "$p" "$rounds" "$execs" "$tmp/$p" || rc=1
done
exit $rc
