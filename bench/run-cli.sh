#!/usr/bin/env bash
# cordon run end to end (CLI exec + controller + launcher) paired against bwrap and plain
# fork+exec; then process.exec over an open connection. Run from a build tree:
#   bench/run-cli.sh [ROUNDS]            (uses ./cordon, ./cordon-controller, ./cordon-launcherd)
set -euo pipefail
rounds=${1:-200}
b=$(pwd)
export CORDON_CONTROLLER=$b/cordon-controller CORDON_LAUNCHERD=$b/cordon-launcherd
tmp=$(mktemp -d /tmp/cordon-bench.XXXXXX)
export XDG_RUNTIME_DIR=$tmp/run XDG_STATE_HOME=$tmp/state
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"
chmod 700 "$XDG_RUNTIME_DIR"
cleanup() {
	pid=$(head -n1 "$XDG_RUNTIME_DIR/cordon/controller.sock.lock" 2>/dev/null || true)
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/work" && cd "$tmp/work"
"$b/cordon" run -- /bin/true # start the controller: its start-up is not what we measure
bwrap=(bwrap --unshare-all --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib
	--symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp --die-with-parent /bin/true)
echo "== cordon run -- /bin/true vs bwrap (target: cordon <= 0.8x bwrap), $rounds rounds"
"$b/bench/bench-paired" -n "$rounds" ::: bwrap "${bwrap[@]}" ::: cordon-run "$b/cordon" run -- /bin/true \
	::: plain /bin/true
echo
echo "== process.exec over an open connection vs fork+exec (target: <= +1.5 ms)"
"$b/bench/bench-exec" -n "$rounds"
