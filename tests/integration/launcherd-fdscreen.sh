#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# launcherd never closes an fd whose close can block. A requester who runs a FUSE server can
# leave FUSE_FLUSH unanswered, and the close() of a file on it then waits for ever: launcherd
# must refuse such fds (invalid-plan where the plan names them, dropped where it does not)
# without closing them itself, and keep answering every other client. O_PATH fds (bind sources)
# stay fine even on FUSE, and so do files on local file systems.
#
# The FUSE server (tests/helpers/stallfs.py) never answers FLUSH nor READ. Our own launch-plan
# clients get stuck as well when they exit (closing their copy of the FUSE file sends FLUSH
# too): they run in the background under timeout, their result is read from --result as soon
# as it is written, and killing the FUSE server at the end releases them all.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
ld_require_root
[ -c /dev/fuse ] || skip_all "no /dev/fuse"
command -v python3 >/dev/null || skip_all "python3 missing"
command -v timeout >/dev/null || skip_all "timeout missing"

MNT=$T/fuse
FS_PID=
BG_PIDS=
mkdir "$MNT"

# Kill the FUSE server first: that aborts the connection and frees whatever waits on it
# (launcherd, its sandboxes, our clients), then unmount, then the usual clean-up.
fs_cleanup() {
	if [ -n "$FS_PID" ]; then
		kill "$FS_PID" 2>/dev/null
		wait "$FS_PID" 2>/dev/null
	fi
	umount -l "$MNT" 2>/dev/null
	ld_reap_bg $BG_PIDS
	ld_cleanup
}
trap fs_cleanup EXIT

python3 "$S/tests/helpers/stallfs.py" "$MNT" --stall-read --pid-file "$T/fs.pid" \
	>"$T/fs.out" 2>"$T/fs.log" &
FS_PID=$!
for _ in $(seq 1 100); do
	grep -q mounted "$T/fs.out" && break
	kill -0 "$FS_PID" 2>/dev/null || break
	sleep 0.05
done
grep -q mounted "$T/fs.out" || skip_all "cannot mount a FUSE file system: $(cat "$T/fs.log")"
# The pid the server wrote itself, in case $! is a wrapper's.
[ -s "$T/fs.pid" ] && FS_PID=$(cat "$T/fs.pid")
if [ ! -f "$MNT/f" ] || [ ! -d "$MNT/d" ]; then
	skip_all "the FUSE file system does not answer"
fi

ld_start
plan 12

# hello_ok: launcherd answers another client's hello within 5 s.
hello_ok() {
	rm -f "$T/hello.json"
	timeout 5 "$LP" --socket "$T/ld.sock" --hello --result "$T/hello.json" 2>>"$T/client.log" &&
		[ -s "$T/hello.json" ]
}

# spawn_bg NAME [launch-plan options] PLAN: launch-plan in the background, under timeout, its
# result in $T/NAME.json.
spawn_bg() {
	sb_name=$1
	shift
	rm -f "$T/$sb_name.json"
	timeout 20 "$LP" --socket "$T/ld.sock" "$@" --result "$T/$sb_name.json" \
		>"$T/$sb_name.out" 2>>"$T/client.log" &
	BG_PIDS="$BG_PIDS $!"
}

# wait_result NAME: until $T/NAME.json holds a whole JSON object (15 s at most). The client
# itself may never exit: it writes its result, then its exit closes its FUSE fds.
wait_result() {
	for _ in $(seq 1 75); do
		[ -s "$T/$1.json" ] && jq -e .type "$T/$1.json" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

# res NAME: "code field" of an error result, "type exitCode" of an exit report.
res() {
	jq -r 'if .type == "error" then "\(.code) \(.field)" else "\(.type) \(.exitCode)" end' \
		"$T/$1.json" 2>/dev/null
}
msg() { jq -r .message "$T/$1.json" 2>/dev/null; }
mentions_fuse() { msg "$1" | grep -qi fuse; }

# Once launcherd stopped answering, what follows cannot tell anything more: it is not run.
stuck=
not_run() { not_ok "$1 (not run: launcherd stopped answering at check $stuck)"; }
hello_check() {
	if [ -n "$stuck" ]; then
		not_run "$1"
	elif hello_ok; then
		ok "$1"
	else
		stuck=$((_tap_n + 1))
		not_ok "$1"
		diag "launcherd $LD_PID: state $(awk '{print $3}' "/proc/$LD_PID/stat" 2>/dev/null)," \
			"waiting in $(cat "/proc/$LD_PID/wchan" 2>/dev/null)"
	fi
}

# Controls: launcherd answers, and a regular file on a local file system is a fine stdout.
hello_check "control: launcherd answers a hello"
fstype=$(stat -f -c %T "$T")
make_plan "$T/out.json" '["/bin/sh", "-c", "echo hi"]'
rm -f "$T/res-out.json"
timeout 20 "$LP" --socket "$T/ld.sock" $STD_FDS --result "$T/res-out.json" "$T/out.json" \
	>"$T/out" 2>>"$T/client.log"
check "a regular file on $fstype as the sandbox's stdout: 'echo hi' writes to it" \
	test "$(cat "$T/out")" = hi -a "$(res res-out)" = "exit 0"

# a: stdin is a file on FUSE: refused, naming stdin and the file system.
make_plan "$T/stdin.json" '["/bin/true"]'
jq '.stdio.stdin = 6' "$T/stdin.json" >"$T/stdin2.json"
spawn_bg res-stdin $STD_FDS --fd-open 6="$MNT/f" "$T/stdin2.json"
wait_result res-stdin
check "a FUSE file as stdin is refused with invalid-plan plan.stdio.stdin (got: $(res res-stdin))" \
	test "$(res res-stdin)" = "invalid-plan plan.stdio.stdin"
check "the refusal says why: fuse ($(msg res-stdin))" mentions_fuse res-stdin

# b: the check that failed before: launcherd closed the fd itself and hung in FUSE_FLUSH.
hello_check "while that requester's FLUSH hangs, launcherd answers another client within 5 s"

# c: a FUSE fd the plan does not name is dropped; the sandbox runs.
make_plan "$T/true.json" '["/bin/true"]'
if [ -n "$stuck" ]; then
	not_run "an unreferenced FUSE fd is dropped and /bin/true runs"
else
	spawn_bg res-extra $STD_FDS --fd-open 6="$MNT/f" "$T/true.json"
	wait_result res-extra
	check "an unreferenced FUSE fd is dropped and /bin/true runs (got: $(res res-extra))" \
		test "$(res res-extra)" = "exit 0"
fi
hello_check "after it launcherd answers within 5 s"

# d: a seccomp program on FUSE: refused before anything reads it (the server never answers
# READ either). A 6-byte file is no BPF program anyway, so the message must name the cause.
jq '.seccomp = {"program": 6}' "$T/true.json" >"$T/seccomp.json"
if [ -n "$stuck" ]; then
	not_run "a FUSE file as the seccomp program is refused"
	not_run "the refusal says why: fuse"
else
	spawn_bg res-seccomp $STD_FDS --fd-open 6="$MNT/f" "$T/seccomp.json"
	wait_result res-seccomp
	check "a FUSE file as the seccomp program is refused with invalid-plan plan.seccomp.program (got: $(res res-seccomp))" \
		test "$(res res-seccomp)" = "invalid-plan plan.seccomp.program"
	check "the refusal says why: fuse ($(msg res-seccomp))" mentions_fuse res-seccomp
fi
hello_check "after it launcherd answers within 5 s"

# e: an O_PATH fd of a FUSE directory is a fine bind source (its close never calls the server).
# The sandbox's set-up may ask the server for attributes; launcherd itself must not wait.
jq '.mounts += [{"type": "bind", "source": 6, "target": "/mnt"}]' "$T/true.json" >"$T/bind.json"
if [ -n "$stuck" ]; then
	not_run "an O_PATH fd of a FUSE directory as a bind source"
else
	spawn_bg res-bind $STD_FDS --fd 6="$MNT/d" "$T/bind.json"
	wait_result res-bind
	diag "bind of the FUSE directory: $(res res-bind) $(msg res-bind | grep -v '^null$')"
	# Accepted: no invalid-plan (the spawn itself normally succeeds).
	check "an O_PATH fd of a FUSE directory as a bind source is accepted (got: $(res res-bind))" \
		test "$(jq -r .code "$T/res-bind.json" 2>/dev/null)" != invalid-plan
fi
hello_check "after it launcherd answers within 5 s"

diag "FUSE server: $(tr '\n' ';' <"$T/fs.log")"
tap_done
