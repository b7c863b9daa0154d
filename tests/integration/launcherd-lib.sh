# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared helpers for the launcherd integration tests (sourced, POSIX sh + bash features avoided
# where cheap). Each test: `. launcherd-lib.sh`, `ld_require_root`, `ld_start`, `plan N`, run
# probes with `ld_run`, `ok`/`not_ok`.
set -u

B=${CORDON_TEST_BINDIR:-${top_builddir:-.}}
S=${top_srcdir:-.}
LAUNCHERD=$B/cordon-launcherd
LP=$B/tests/helpers/launch-plan
HELPERS=$B/tests/helpers
PROBE=/probe/probe
TEST_USER1=cordon-test1
TEST_USER2=cordon-test2

_tap_n=0
_tap_failed=0
plan() { echo "1..$1"; }
ok() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $*"; }
not_ok() { _tap_n=$((_tap_n + 1)); _tap_failed=$((_tap_failed + 1)); echo "not ok $_tap_n - $*"; }
diag() { echo "# $*"; }
# check DESCRIPTION COMMAND...: ok when the command succeeds.
check() { d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }

skip_all() {
	if [ "${CORDON_MUST_WORK:-0}" = 1 ]; then
		echo "1..1"
		echo "not ok 1 - cannot run: $* (CORDON_MUST_WORK=1)"
		exit 1
	fi
	echo "1..0 # SKIP $*"
	exit 0
}

ld_require_root() {
	[ "$(id -u)" = 0 ] || skip_all "needs root (privileged launcherd, test users)"
	[ -x "$LAUNCHERD" ] || skip_all "no $LAUNCHERD"
	for u in $TEST_USER1 $TEST_USER2; do
		id "$u" >/dev/null 2>&1 || useradd -M -s /bin/sh "$u" 2>/dev/null ||
			skip_all "cannot create test user $u"
	done
}

# ld_reap_bg PID...: give each background process we started 5 s to end, then SIGKILL it;
# reap it either way.
ld_reap_bg() {
	for p in "$@"; do
		for _ in $(seq 1 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
}

T=$(mktemp -d /tmp/cordon-ld-test.XXXXXX)
chmod 1777 "$T"
LD_PID=
ld_cleanup() {
	if [ -n "$LD_PID" ]; then
		kill "$LD_PID" 2>/dev/null
		wait "$LD_PID" 2>/dev/null
	fi
	rm -rf "$T"
}
trap ld_cleanup EXIT

# A floor that requires nothing (tests that check the floor write their own). Without root it
# could not be root-owned, which launcherd insists on: no file then (the built-in defaults).
if [ "$(id -u)" = 0 ]; then
	printf '{}\n' >"$T/floor.json"
	chmod 0644 "$T/floor.json"
fi

# ld_start [launcherd options]: privileged launcherd on $T/ld.sock.
ld_start() {
	rm -f "$T/ld.sock"
	[ -f "$T/launcherd.log" ] && cat "$T/launcherd.log" >>"$T/launcherd.old.log"
	: >"$T/launcherd.log"
	"$LAUNCHERD" --socket "$T/ld.sock" --floor "$T/floor.json" "$@" 2>>"$T/launcherd.log" &
	LD_PID=$!
	# Ready once it logged its start line, which comes after listen().
	for _ in $(seq 1 100); do
		[ -S "$T/ld.sock" ] && grep -q ' mode, Landlock' "$T/launcherd.log" && return 0
		kill -0 "$LD_PID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$T/launcherd.log" >&2
	echo "Bail out! launcherd did not start"
	exit 1
}

ld_stop() {
	[ -n "$LD_PID" ] || return 0
	kill "$LD_PID" 2>/dev/null
	wait "$LD_PID" 2>/dev/null
	LD_PID=
}

# as_user USER COMMAND...: run as an ordinary user with no supplementary groups.
as_user() {
	u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --clear-groups --reset-env -- "$@"
}

# as_user_exec USER COMMAND...: as_user, replacing the (sub)shell: for `as_user_exec … &`, so
# that $! is the command itself.
as_user_exec() {
	u=$1
	shift
	exec setpriv --reuid="$u" --regid="$u" --clear-groups --reset-env -- "$@"
}

# make_plan FILE ARGV_JSON [EXTRA_JSON_MEMBERS]: the standard sandbox used by the probes:
# /usr read-only (fd 3) with the merged-/usr links, the probes read-only at /probe (fd 4), a
# writable bind at /work (fd 5), a private /tmp, proc, dev, Landlock over all of it,
# network none. EXTRA is spliced in as more members (", \"cgroup\": {...}").
make_plan() {
	mp_file=$1
	mp_argv=$2
	mp_extra=${3:-}
	cat >"$mp_file" <<EOF
{"argv": $mp_argv,
 "envp": ["PATH=/usr/bin:/bin:/probe", "HOME=/tmp"],
 "cwd": "/",
 "stdio": {"stdin": 0, "stdout": 1, "stderr": 2},
 "mounts": [
  {"type": "bind", "source": 3, "target": "/usr"},
  {"type": "symlink", "target": "/bin", "link": "usr/bin"},
  {"type": "symlink", "target": "/lib", "link": "usr/lib"},
  {"type": "symlink", "target": "/lib64", "link": "usr/lib64"},
  {"type": "symlink", "target": "/sbin", "link": "usr/sbin"},
  {"type": "bind", "source": 4, "target": "/probe"},
  {"type": "bind", "source": 5, "target": "/work", "readOnly": false},
  {"type": "deny", "target": "/work/secret"},
  {"type": "tmpfs", "target": "/tmp"},
  {"type": "proc", "target": "/proc"},
  {"type": "dev", "target": "/dev"}
 ],
 "landlock": {"required": true,
  "fs": [
   {"path": "/", "access": ["read-dir"]},
   {"path": "/usr", "access": ["execute", "read-file", "read-dir"]},
   {"path": "/probe", "access": ["execute", "read-file", "read-dir"]},
   {"path": "/work", "access": ["read-file", "read-dir", "write-file", "make-reg", "make-dir",
     "make-sym", "remove-file", "remove-dir", "truncate", "refer"]},
   {"path": "/tmp", "access": ["read-file", "read-dir", "write-file", "make-reg", "make-dir",
     "make-sym", "remove-file", "remove-dir", "truncate", "refer"]},
   {"path": "/dev", "access": ["read-file", "write-file", "read-dir", "ioctl-dev"]},
   {"path": "/proc", "access": ["read-file", "read-dir"]}],
  "net": {"bindTcp": [], "connectTcp": []},
  "scope": ["abstract-unix-socket", "signal"]},
 "network": "none",
 "dieWithRequester": true$mp_extra
}
EOF
}

# The writable directory bound at /work, and a file next to it that must stay out of reach.
mkdir -p "$T/work" "$T/outside" "$T/work/secret"
echo "top secret" >"$T/work/secret/key"
echo "outside" >"$T/outside/file"
chmod -R a+rwX "$T/work" "$T/outside"

# ld_run [--user U] [--user-mode] [launch-plan options] PLAN: run a plan against our launcherd
# with the standard fds. Result JSON in $T/result.json; status in $?.
ld_run() {
	who=
	mode=socket
	while :; do
		case "$1" in
		--user) who=$2; shift 2 ;;
		--user-mode) mode=user; shift ;;
		*) break ;;
		esac
	done
	rm -f "$T/result.json"
	if [ "$mode" = user ]; then
		set -- "$LP" --user-mode "$LAUNCHERD" --floor "$T/floor.json" "$@"
	else
		set -- "$LP" --socket "$T/ld.sock" "$@"
	fi
	if [ -n "$who" ]; then
		as_user "$who" "$@" --result "$T/result.json" 2>>"$T/client.log"
	else
		"$@" --result "$T/result.json" 2>>"$T/client.log"
	fi
}

# Standard fds for make_plan plans.
STD_FDS="--fd 3=/usr --fd 4=$HELPERS --fd 5=$T/work"

# json_field KEY: a top-level field of $T/result.json.
json_field() { jq -r ".$1" "$T/result.json" 2>/dev/null; }

# probe_refused DESC [run options] -- PROBE ARGS: the probe must exit 1 (refused).
probe_refused() {
	desc=$1
	shift
	opts=
	extra=
	# Mode options (--user U, --user-mode) go first, fd options after the standard fds.
	while [ "$1" != "--" ]; do
		case "$1" in
		--user) opts="$opts $1 $2"; shift ;;
		--user-mode) opts="$opts $1" ;;
		*) extra="$extra $1" ;;
		esac
		shift
	done
	shift
	make_plan "$T/p.json" "$(printf '%s\n' "$@" | jq -R . | jq -s -c '["/probe/probe"] + .')"
	# A "--seccomp N=FILE" fd is the plan's own seccomp program.
	case "$extra" in
	*--seccomp\ *)
		n=${extra#*--seccomp }
		jq ".seccomp = {\"program\": ${n%%=*}}" "$T/p.json" >"$T/p2.json" && mv "$T/p2.json" "$T/p.json"
		;;
	esac
	# shellcheck disable=SC2086
	ld_run $opts $STD_FDS $extra "$T/p.json" >"$T/probe.out" 2>&1
	rc=$?
	# Exit 1 from the probe itself, as the exit report confirms (launch-plan also exits 1 for
	# its own failures, which must not count as a refusal).
	if [ "$rc" = 1 ] && [ "$(json_field type)/$(json_field exitCode)" = exit/1 ]; then
		ok "$desc"
	else
		not_ok "$desc (probe exit $rc: $(cat "$T/probe.out" | head -3))"
		[ -f "$T/result.json" ] && diag "$(cat "$T/result.json")"
	fi
}

tap_done() {
	[ "$_tap_failed" = 0 ]
}

# Sandbox cgroups are shared by every launcherd on the host, and make check runs tests in
# parallel: count as leaked only a cgroup that appeared since cg_snapshot, holds no process, and
# is still there, still empty, 6 s later. Another test's sandbox has either started or been
# removed by then: launcherd retries the removal of a cgroup a dying task still pins for 5 s at
# most (a v1 memory cgroup after an OOM kill can take a while), so only a real leak outlasts it.
cg_list() {
	ls -d /sys/fs/cgroup/pids/cordon/sb-* /sys/fs/cgroup/memory/*/*/cordon/sb-* \
		/sys/fs/cgroup/memory/cordon/sb-* 2>/dev/null | sort
}
cg_snapshot() { cg_list >"$1"; }
cg_empty() { [ -d "$1" ] && [ ! -s "$1/cgroup.procs" ]; }
cg_leaked_since() {
	local d n=0 suspects= left
	sleep 0.3
	for d in $(comm -13 "$1" <(cg_list)); do
		cg_empty "$d" && suspects="$suspects $d"
	done
	for _ in $(seq 1 60); do
		[ -n "$suspects" ] || break
		left=
		for d in $suspects; do
			cg_empty "$d" && left="$left $d"
		done
		suspects=$left
		[ -n "$suspects" ] && sleep 0.1
	done
	for d in $suspects; do
		n=$((n + 1))
	done
	echo $n
}

# launcherd's open fds, less the prepared network and mount namespaces of its pool: the
# pool is refilled in the background, so those come and go by design and are not leaks.
ld_fd_count() {
	local f n=0
	for f in /proc/$LD_PID/fd/*; do
		case "$(readlink "$f" 2>/dev/null)" in
		net:\[* | mnt:\[*) ;;
		*) n=$((n + 1)) ;;
		esac
	done
	echo $n
}
