# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared set-up of the denial tests (denials.sh, denials-summary.sh, denials-scope.sh,
# denials-args.sh; sourced
# after nothing else): launcherd-lib.sh, root, the kernel's audit turned on for the test (with a
# backlog of 8192: docs/DENIALS.md) and restored at exit, while holding the lock the tests that
# touch the audit take turns on; a privileged launcherd on $T/ld.sock with Landlock ABI >= 7 (or
# the test is skipped unless DN_LANDLOCK=0; CORDON_MUST_WORK=1 fails instead). Then:
#   $DP                   tests/integration/denials.py (a launcherd client that prints denials)
#   cli USER COMMAND...   cordon as USER with a controller of its own on this launcherd
#   show FILE             FILE on one line, cut to 400 characters (for test descriptions)
#   dn_plan FILE COMMAND  a plan whose Landlock refuses what its mounts allow
#   dn_run [--user U] OUT COMMAND [LINGER]   run COMMAND in such a sandbox: OUT gets the
#                         denials, then the exit, one JSON line each
#   denials OUT, one OUT JQ-FILTER, dn_skip N WHY
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
ld_require_root
DP="python3 $S/tests/integration/denials.py"
command -v python3 >/dev/null 2>&1 || skip_all "no python3"
command -v jq >/dev/null 2>&1 || skip_all "no jq"
# The kernel's audit is the whole host's: the tests that turn it on and off take turns (make
# check runs tests in parallel). A process of its own holds the lock, so that nothing this test
# starts inherits it.
(exec 9>>/tmp/cordon-test-audit.lock && flock 9 && : >"$T/audit-locked" && exec sleep 3600) &
audit_lock=$!
trap 'kill $audit_lock 2>/dev/null; ld_cleanup' EXIT
while [ ! -e "$T/audit-locked" ]; do sleep 0.1; done
audit_was=$($DP --audit 2>/dev/null) || skip_all "the kernel has no audit (CONFIG_AUDIT)"
# Restore the kernel's audit as it was (enabled, backlog limit), then the usual clean-up.
trap '$DP --audit ${audit_was% *} >/dev/null 2>&1; kill $audit_lock 2>/dev/null; dn_cleanup_controllers; ld_cleanup' EXIT
dn_cleanup_controllers() {
	for lock in "$T"/xdg-*/run/cordon/controller.sock.lock; do
		[ -s "$lock" ] || continue
		pid=$(head -n1 "$lock")
		kill "$pid" 2>/dev/null
	done
}
# On, with room for a burst (docs/DENIALS.md: the default backlog of 64 drops records).
$DP --audit 1 8192 >/dev/null || skip_all "cannot turn the kernel's audit on"
ld_start
abi=$("$LP" --socket "$T/ld.sock" --hello 2>&1 | jq -r .landlockAbi 2>/dev/null)
# DN_LANDLOCK=0 (set before sourcing): a test of seccomp's refusals alone.
[ "${DN_LANDLOCK:-1}" = 0 ] || [ "${abi:-0}" -ge 7 ] 2>/dev/null ||
	skip_all "Landlock ABI ${abi:-?} < 7: no Landlock audit"

Babs=$(cd "$B" && pwd)
CORDON="$Babs/cordon"
cli() { # cli USER COMMAND...: cordon as USER with a controller of its own on this launcherd
	d="$T/xdg-$1"
	mkdir -p "$d/run" "$d/state" "$d/ws"
	chown -R "$1" "$d" && chmod 0700 "$d/run"
	u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --clear-groups --reset-env -- env -C "$d/ws" \
		PATH=/usr/bin:/bin HOME="$d" XDG_RUNTIME_DIR="$d/run" XDG_STATE_HOME="$d/state" \
		CORDON_CONTROLLER="$Babs/cordon-controller" CORDON_LAUNCHERD="$Babs/cordon-launcherd" \
		CORDON_LAUNCHERD_SOCKET="$T/ld.sock" "$CORDON" "$@"
}
show() { tr '\n' ' ' <"$1" | cut -c1-400; }

# dn_plan FILE COMMAND: a plan whose Landlock refuses what its mounts allow: /probe may be
# listed but not read, /work is mounted read-write but may only be read, TCP connect to no
# port; network loopback (sockets allowed, so the refusal is Landlock's).
dn_plan() {
	jq -n --arg cmd "$2" '{argv: ["/bin/sh", "-c", $cmd],
	 envp: ["PATH=/usr/bin:/bin", "HOME=/tmp"], cwd: "/",
	 stdio: {stdin: 0, stdout: 1, stderr: 2},
	 mounts: [{type: "bind", source: 3, target: "/usr"},
	  {type: "symlink", target: "/bin", link: "usr/bin"},
	  {type: "symlink", target: "/lib", link: "usr/lib"},
	  {type: "symlink", target: "/lib64", link: "usr/lib64"},
	  {type: "bind", source: 4, target: "/probe"},
	  {type: "bind", source: 5, target: "/work", readOnly: false},
	  {type: "tmpfs", target: "/tmp"}, {type: "proc", target: "/proc"},
	  {type: "dev", target: "/dev"}],
	 landlock: {required: true, fs: [
	  {path: "/", access: ["read-dir"]},
	  {path: "/usr", access: ["execute", "read-file", "read-dir"]},
	  {path: "/probe", access: ["read-dir"]},
	  {path: "/work", access: ["read-file", "read-dir"]},
	  {path: "/tmp", access: ["read-file", "read-dir", "write-file", "make-reg", "remove-file"]},
	  {path: "/dev", access: ["read-file", "write-file", "read-dir", "ioctl-dev"]},
	  {path: "/proc", access: ["read-file", "read-dir"]}],
	  net: {bindTcp: [], connectTcp: []}, scope: ["abstract-unix-socket", "signal"]},
	 network: "loopback", dieWithRequester: true}' >"$1"
}
# dn_run [--user U] OUT COMMAND [LINGER]: run COMMAND in such a sandbox (DN_PLAN_JQ, when set,
# is a jq filter applied to its plan); OUT gets the denials, then the exit, one JSON line each.
dn_run() {
	who=
	if [ "$1" = --user ]; then who=$2; shift 2; fi
	# A plan file of its own (named after OUT): runs in the background must not share one.
	dn_plan "$1.plan.json" "$2"
	if [ -n "${DN_PLAN_JQ:-}" ]; then
		jq "$DN_PLAN_JQ" "$1.plan.json" >"$1.plan.jq" && mv "$1.plan.jq" "$1.plan.json"
	fi
	chmod 0644 "$1.plan.json"
	set -- "$1" "$1.plan.json" "${3:-0.5}"
	if [ -n "$who" ]; then
		as_user "$who" $DP "$T/ld.sock" "$2" --fd 3=/usr --fd 4="$HELPERS" --fd 5="$T/work" \
			--linger "$3" >"$1" 2>>"$T/client.log"
	else
		$DP "$T/ld.sock" "$2" --fd 3=/usr --fd 4="$HELPERS" --fd 5="$T/work" \
			--linger "$3" >"$1" 2>>"$T/client.log"
	fi
}
denials() { grep -c '"type": "denial"' "$1"; }
# one OUT JQ-FILTER: exactly one denial, and it matches the filter.
one() {
	[ "$(denials "$1")" = 1 ] && grep '"type": "denial"' "$1" | jq -e "$2" >/dev/null
}
# dn_skip N WHY: N tests that cannot run here (CORDON_MUST_WORK=1: failed).
dn_skip() {
	for _ in $(seq "$1"); do
		if [ "${CORDON_MUST_WORK:-0}" = 1 ]; then
			not_ok "$2 (CORDON_MUST_WORK=1)"
		else
			_tap_n=$((_tap_n + 1))
			echo "ok $_tap_n # SKIP $2"
		fi
	done
}
