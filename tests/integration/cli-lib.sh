# shellcheck shell=bash
# Shared set-up for the CLI/controller integration tests (sourced, not run).
#
# Each test gets a private runtime and state directory, so it starts from nothing: the first
# `cordon` call starts a controller on demand (the embedded default), which starts its own
# launcher. cleanup stops exactly the controller this test started (by the pid in its lock
# file) and removes the directories.
set -u

: "${top_builddir:?run through make check}"
: "${top_srcdir:?run through make check}"

. "$top_srcdir/tests/integration/tap-lib.sh"

CORDON="$top_builddir/cordon"
export CORDON_CONTROLLER="$top_builddir/cordon-controller"
export CORDON_LAUNCHERD="$top_builddir/cordon-launcherd"
# No system launcher: the controller starts a launcher of its own.
export CORDON_LAUNCHERD_SOCKET=/nonexistent/cordon-test/launcherd.sock

TEST_TMP=$(mktemp -d /tmp/cordon-test.XXXXXX)
chmod 0755 "$TEST_TMP"
export XDG_RUNTIME_DIR="$TEST_TMP/run"
export XDG_STATE_HOME="$TEST_TMP/state"
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"
chmod 0700 "$XDG_RUNTIME_DIR"
unset CORDON_CONTROLLER_SOCKET

controller_pid() {
	local f="$XDG_RUNTIME_DIR/cordon/controller.sock.lock"
	[ -s "$f" ] && head -n1 "$f"
}

cleanup() {
	local pid
	pid=$(controller_pid 2>/dev/null || true)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	[ -n "${CORDON_TEST_KEEP:-}" ] || rm -rf "$TEST_TMP"
}
trap cleanup EXIT

# Descendants of a pid (for leak checks).
descendants() {
	local p
	for p in $(pgrep -P "$1" 2>/dev/null); do
		echo "$p"
		descendants "$p"
	done
}
