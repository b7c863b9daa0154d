# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared helpers for the hostile-client tests (sourced after launcherd-lib.sh's ld_require_root
# by each tests/hostile/hostile-*.sh): attacks on a privileged launcherd that must fail, each
# one followed by the check that another user is still served. Every process a test starts is
# remembered by PID (h_bg) and stopped by h_cleanup, which runs on EXIT.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"

HC=$B/tests/hostile/hostile-client
H_BG_PIDS=
H_SINK_PID=
H_CLEANUPS=

# h_on_exit COMMAND: one more clean-up step, run first by h_cleanup (last added, first run).
h_on_exit() { H_CLEANUPS="$1;$H_CLEANUPS"; }

h_cleanup() {
	eval "$H_CLEANUPS"
	h_sink_stop
	for p in $H_BG_PIDS; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	H_BG_PIDS=
	ld_cleanup
}
trap h_cleanup EXIT

h_require() {
	ld_require_root
	[ -x "$HC" ] || skip_all "no $HC"
	command -v jq >/dev/null || skip_all "jq missing"
	command -v timeout >/dev/null || skip_all "timeout missing"
}

# h_bg NAME [--user U] COMMAND...: run COMMAND in the background (as U), stdout in
# $T/NAME.out, stderr in $T/client.log; its PID in $H_LAST and in the clean-up list.
h_bg() {
	hb_name=$1
	shift
	if [ "$1" = --user ]; then
		hb_user=$2
		shift 2
		(as_user_exec "$hb_user" "$@") >"$T/$hb_name.out" 2>>"$T/client.log" &
	else
		"$@" >"$T/$hb_name.out" 2>>"$T/client.log" &
	fi
	H_LAST=$!
	H_BG_PIDS="$H_BG_PIDS $H_LAST"
}

# h_stop PID...: SIGKILL and reap background processes we started.
h_stop() {
	for p in "$@"; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
}

# hc [--user U] ARGS...: hostile-client on our launcherd, in the foreground, bounded by 60 s.
hc() {
	if [ "$1" = --user ]; then
		hc_user=$2
		shift 2
		as_user "$hc_user" timeout -s KILL 60 "$HC" --socket "$T/ld.sock" "$@"
	else
		timeout -s KILL 60 "$HC" --socket "$T/ld.sock" "$@"
	fi
}

# h_lines FILE TYPE: the output lines of that type.
h_lines() { jq -c "select(.type == \"$2\")" "$1" 2>/dev/null; }
# h_count FILE TYPE: how many.
h_count() { h_lines "$1" "$2" | wc -l; }
# h_summary FILE KEY: a member of the client's summary line.
h_summary() { jq -r "select(.type == \"summary\") | .$2" "$1" 2>/dev/null | tail -1; }
# h_reply FILE: "type" or "error CODE FIELD" of each reply to a request (hello included).
h_reply() {
	jq -r 'select(has("seq")) | if .type == "error" then "error \(.code) \(.field)" else .type end' \
		"$1" 2>/dev/null
}

# h_wait_for FILE JQ_FILTER [TENTHS]: until a line of FILE matches (default 10 s).
h_wait_for() {
	for _ in $(seq 1 "${3:-100}"); do
		[ -n "$(jq -c "$2" "$1" 2>/dev/null)" ] && return 0
		sleep 0.1
	done
	return 1
}

# h_plan FILE ARGV_JSON [EXTRA_JSON_MEMBERS]: make_plan's sandbox without its "deny" entry. A
# deny mount under a writable bind may propagate back into launcherd's namespace on a host
# whose mounts are shared (a finding of its own, tested elsewhere): these tests must neither
# leave mounts behind nor lose the light spawn to a bind source with a mount beneath it.
h_plan() {
	make_plan "$1" "$2" "${3:-}"
	jq -c 'del(.mounts[] | select(.type == "deny"))' "$1" >"$1.tmp" && mv "$1.tmp" "$1"
}

# The fds of a make_plan plan: stdio /dev/null (the client's own may be anything: a file
# launcherd refuses to take), the bind sources 3, 4, 5.
H_STD="--fd devnull --fd devnull --fd devnull --fd path:/usr --fd path:$HELPERS --fd path:$T/work"

# h_served USER [MS]: another client (as USER) connects, says hello and spawns /bin/true, and
# has "spawned" within MS milliseconds (default 2000) of its start. The time taken in
# $H_SERVED_MS, the client's output in $T/served.out.
h_served() {
	hs_user=$1
	hs_max=${2:-2000}
	[ -f "$T/true.json" ] || h_plan "$T/true.json" '["/bin/true"]'
	hs_t0=$(date +%s%N)
	# shellcheck disable=SC2086
	hc --user "$hs_user" $H_STD --read-timeout "$hs_max" --send "$T/true.json" \
		>"$T/served.out" 2>>"$T/client.log"
	H_SERVED_MS=$((($(date +%s%N) - hs_t0) / 1000000))
	[ "$(h_reply "$T/served.out" | tr '\n' ' ')" = "hello spawned " ] &&
		[ "$H_SERVED_MS" -lt "$hs_max" ]
}

# check_served DESC USER [MS]: h_served as a TAP check, with what went wrong.
check_served() {
	if h_served "$2" "${3:-2000}"; then
		ok "$1 (${H_SERVED_MS} ms)"
	else
		not_ok "$1 (${H_SERVED_MS} ms: $(h_reply "$T/served.out" | tr '\n' ' '))"
		diag "launcherd $LD_PID: state $(awk '{print $3}' "/proc/$LD_PID/stat" 2>/dev/null)," \
			"waiting in $(cat "/proc/$LD_PID/wchan" 2>/dev/null)"
	fi
}

# h_sink_start: a TCP listener on loopback that accepts and never reads ($H_PORT). A socket
# connected to it with unsent data lingers on close until the sink goes: h_sink_stop kills
# it, which resets every such connection and so ends every lingering close at once.
h_sink_start() {
	rm -f "$T/sink.port"
	"$HC" --tcp-sink "$T/sink.port" 2>>"$T/client.log" &
	H_SINK_PID=$!
	for _ in $(seq 1 100); do
		[ -s "$T/sink.port" ] && break
		sleep 0.05
	done
	H_PORT=$(cat "$T/sink.port" 2>/dev/null)
	[ -n "$H_PORT" ]
}
h_sink_stop() {
	[ -n "$H_SINK_PID" ] || return 0
	kill -9 "$H_SINK_PID" 2>/dev/null
	wait "$H_SINK_PID" 2>/dev/null
	H_SINK_PID=
}

# h_write_floor JSON: the admin floor for the next ld_start (root-owned, 0644).
h_write_floor() {
	printf '%s\n' "$1" >"$T/floor.json"
	chmod 0644 "$T/floor.json"
}

# ld_rss_kb: launcherd's resident set (VmRSS, kB).
ld_rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$LD_PID/status" 2>/dev/null; }

# ld_receivers [UID]: PIDs of launcherd's connection receivers (children named
# cordon-receiver), those running as UID only when given.
ld_receivers() {
	for p in $(pgrep -P "$LD_PID" -x cordon-receiver); do
		# The real uid from status: /proc/PID itself is root's for a non-dumpable process.
		if [ -z "${1:-}" ] || [ "$(awk '/^Uid:/ {print $2}' "/proc/$p/status" 2>/dev/null)" = "$1" ]; then
			echo "$p"
		fi
	done
}

# ld_alive: launcherd is still running (not a zombie).
ld_alive() {
	[ -n "$LD_PID" ] && kill -0 "$LD_PID" 2>/dev/null &&
		[ "$(awk '{print $3}' "/proc/$LD_PID/stat" 2>/dev/null)" != Z ]
}
