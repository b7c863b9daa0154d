#!/usr/bin/env bash
# cordon run end to end (CLI exec + controller + launcher) paired against bwrap and plain
# fork+exec; then process.exec over an open connection. Run from a build tree:
#   bench/run-cli.sh [--privileged] [--repeat K] [ROUNDS]
# (uses ./cordon, ./cordon-controller, ./cordon-launcherd; CORDON_LAUNCHERD overrides the last).
#
# By default the controller starts a launcherd of its own (no system launcher): privileged mode
# as root, user mode as anyone else (to measure that, run this as an ordinary user, e.g.
# `setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp bench/run-cli.sh`). With
# --privileged (as root) a privileged cordon-launcherd is started on a private socket with an
# empty floor and the controller uses it, as it would use /run/cordon/launcherd.sock. Each of
# the K repetitions runs both benchmarks; quote the median ratio and the spread across them.
set -euo pipefail
rounds=200 repeat=1 privileged=0
while [ $# -gt 0 ]; do
	case $1 in
	--privileged) privileged=1 ;;
	--repeat) repeat=$2; shift ;;
	-h | --help) sed -n '2,10p' "$0"; exit 0 ;;
	*) rounds=$1 ;;
	esac
	shift
done
b=$(pwd)
export CORDON_CONTROLLER=$b/cordon-controller CORDON_LAUNCHERD=${CORDON_LAUNCHERD:-$b/cordon-launcherd}
tmp=$(mktemp -d /tmp/cordon-bench.XXXXXX)
export XDG_RUNTIME_DIR=$tmp/run XDG_STATE_HOME=$tmp/state
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"
chmod 700 "$XDG_RUNTIME_DIR"
ld_pid=
cleanup() {
	pid=$(head -n1 "$XDG_RUNTIME_DIR/cordon/controller.sock.lock" 2>/dev/null || true)
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	[ -n "$ld_pid" ] && kill "$ld_pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
if [ "$privileged" = 1 ]; then
	[ "$(id -u)" = 0 ] || { echo "run-cli.sh: --privileged needs root" >&2; exit 1; }
	printf '{}\n' >"$tmp/floor.json" && chmod 0644 "$tmp/floor.json"
	"$CORDON_LAUNCHERD" --socket "$tmp/ld.sock" --floor "$tmp/floor.json" 2>"$tmp/ld.log" &
	ld_pid=$!
	for _ in $(seq 100); do [ -S "$tmp/ld.sock" ] && break; sleep 0.05; done
	export CORDON_LAUNCHERD_SOCKET=$tmp/ld.sock
else
	# No system launcher: the controller starts a user-mode one of its own.
	export CORDON_LAUNCHERD_SOCKET=$tmp/no-launcherd.sock
fi
mkdir -p "$tmp/work" && cd "$tmp/work"
"$b/cordon" run -- /bin/true # start the controller: its start-up is not what we measure
echo "launcher: $("$b/cordon" doctor 2>/dev/null | sed -n 's/^ok *launcher *//p')"
bwrap=(bwrap --unshare-all --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib
	--symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp --die-with-parent /bin/true)
for k in $(seq "$repeat"); do
	echo "== [$k/$repeat] cordon run -- /bin/true vs bwrap (target: cordon <= 0.8x bwrap), $rounds rounds"
	"$b/bench/bench-paired" -n "$rounds" ::: bwrap "${bwrap[@]}" ::: cordon-run "$b/cordon" run -- /bin/true \
		::: plain /bin/true
	echo
	echo "== [$k/$repeat] process.exec over an open connection vs fork+exec (target: <= +1.5 ms)"
	"$b/bench/bench-exec" -n "$rounds"
	echo
done
