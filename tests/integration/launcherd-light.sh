#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The light spawn (launcherd/launcherd-light.h): which spawns take it, and that those which may
# not still work. The sandbox's pid 1 says which path served it: the freestanding init names
# itself "cordon-init", the fork path's init is a copy of launcherd ("cordon-launcher", its
# name cut to 15 bytes). A root requester reads /proc/1/comm in its sandbox; from anyone else
# hidepid=invisible hides the init (it is not dumpable), so the test looks at the command's
# parent from outside instead.
#
# Privileged mode sends a plan the light way only when every bind source is on a local file
# system with nothing mounted at or beneath it (then cloned without AT_RECURSIVE, so that the
# child cannot reach anything that could stall it); user mode always. Checked: both modes take
# it; a submount, present at start or mounted later (the cached mount table must notice), sends
# the spawn the fork way and stays visible; a FUSE bind source, or a FUSE mount beneath a local
# one, goes the fork way too, and a stalled FUSE server stalls neither launcherd nor later
# spawns; cgroup limits hold on the light path; with vm.memfd_noexec=2 the light spawn is off
# and sandboxes still run.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
ld_require_root
command -v timeout >/dev/null || skip_all "timeout missing"
command -v pgrep >/dev/null || skip_all "pgrep missing"

MNT_LIST=
FS_PID=
HOLD_PID=
BG_PIDS=
NS_LD=

# Undo what the checks set up, in an order that cannot hang: the FUSE server first (killing
# it aborts its connection and frees whatever waits on it), then our mounts, our clients, the
# launcherd in its own pid namespace (its unshare ignores SIGTERM), then the usual clean-up.
light_cleanup() {
	if [ -n "$FS_PID" ]; then
		kill -CONT "$FS_PID" 2>/dev/null
		kill "$FS_PID" 2>/dev/null
		wait "$FS_PID" 2>/dev/null
	fi
	if [ -n "$HOLD_PID" ]; then
		kill "$HOLD_PID" 2>/dev/null
		wait "$HOLD_PID" 2>/dev/null
	fi
	for m in $MNT_LIST; do
		umount -l "$m" 2>/dev/null
	done
	ld_reap_bg $BG_PIDS
	if [ -n "$NS_LD" ]; then
		kill -9 "$NS_LD" 2>/dev/null
		wait "$NS_LD" 2>/dev/null
		LD_PID=
	fi
	ld_cleanup
}
trap light_cleanup EXIT

# skip_check DESCRIPTION REASON: one check that cannot run here (a failure under
# CORDON_MUST_WORK=1, as skip_all is).
skip_check() {
	if [ "${CORDON_MUST_WORK:-0}" = 1 ]; then
		not_ok "$1 (cannot run: $2; CORDON_MUST_WORK=1)"
	else
		_tap_n=$((_tap_n + 1))
		echo "ok $_tap_n # SKIP $1: $2"
	fi
}

# spawn [launch-plan options] PLAN: as root, on our launcherd, 10 s at most; the sandbox's
# stdout on ours, the result in $T/result.json.
spawn() {
	rm -f "$T/result.json"
	timeout 10 "$LP" --socket "$T/ld.sock" $STD_FDS "$@" --result "$T/result.json" \
		2>>"$T/client.log"
}

# sh_plan FILE COMMAND [EXTRA]: make_plan running `sh -c COMMAND`.
sh_plan() {
	make_plan "$1" "$(jq -nc --arg c "$2" '["/bin/sh", "-c", $c]')" "${3:-}"
}

# bind_plan FILE COMMAND: sh_plan, with fd 6 bound read-only at /mnt, readable through
# Landlock.
bind_plan() {
	sh_plan "$1.tmp" "$2"
	jq '.mounts += [{"type": "bind", "source": 6, "target": "/mnt"}] |
		.landlock.fs += [{"path": "/mnt", "access": ["read-file", "read-dir"]}]' \
		"$1.tmp" >"$1"
}

# held_run NAME N [ld_run options]: run a plan N times over one connection (--repeat); the N-th
# time its command (pid 2 of its sandbox) prints "PID UID hello", then waits for
# $T/work/NAME.go, and meanwhile we read the name of its parent, the sandbox's pid 1, from
# outside. Sets HELD_COMM and HELD_OUT.
held_run() {
	hr_name=$1
	hr_n=$2
	shift 2
	rm -f "$T/work/$hr_name".*
	hr_w=/work/$hr_name
	hr_cmd="echo >>$hr_w.count; [ \$(wc -l <$hr_w.count) -lt $hr_n ] && exit 0
		echo \$\$ \$(id -u) hello; : >$hr_w.ready
		while [ ! -e $hr_w.go ]; do sleep 0.02; done"
	make_plan "$T/$hr_name.json" "$(jq -nc --arg c "$hr_cmd" --arg m "cordon-light-$hr_name-$$" \
		'["/bin/sh", "-c", $c, $m]')"
	ld_run "$@" $STD_FDS --repeat "$hr_n" "$T/$hr_name.json" >"$T/$hr_name.out" &
	hr_bg=$!
	HELD_COMM=none
	for _ in $(seq 1 100); do
		[ -e "$T/work/$hr_name.ready" ] && break
		sleep 0.05
	done
	# The command is the "sh" with our marker whose parent is not one: the light path's init
	# was exec'd with the command's argv (but renamed itself), and the command's loop forks.
	for hr_pid in $(pgrep -f -- "cordon-light-$hr_name-$$"); do
		hr_ppid=$(awk '$1 == "PPid:" { print $2 }' "/proc/$hr_pid/status" 2>/dev/null)
		hr_comm=$(cat "/proc/$hr_ppid/comm" 2>/dev/null)
		if [ "$(cat "/proc/$hr_pid/comm" 2>/dev/null)" = sh ] && [ "$hr_comm" != sh ]; then
			HELD_COMM=$hr_comm
			break
		fi
	done
	: >"$T/work/$hr_name.go"
	wait "$hr_bg"
	HELD_OUT=$(cat "$T/$hr_name.out")
}

# path_since LINE: how the first sandbox started after line LINE of launcherd's trace was
# prepared, once it was cloned: "prepared" (the fork path) or "prepared-light"; "none" when
# none was cloned within 5 s.
path_since() {
	for _ in $(seq 1 100); do
		ps_step=$(tail -n +$(($1 + 1)) "$T/trace" | awk '
			$2 == "start" && id == "" { id = $1 }
			$1 == id && ($2 == "prepared" || $2 == "prepared-light") { p = $2 }
			$1 == id && $2 == "cloned" { print p; exit }')
		if [ -n "$ps_step" ]; then
			echo "$ps_step"
			return
		fi
		sleep 0.05
	done
	echo none
}

# hello_ok: launcherd answers another client's hello within 5 s.
hello_ok() {
	rm -f "$T/hello.json"
	timeout 5 "$LP" --socket "$T/ld.sock" --hello --result "$T/hello.json" \
		2>>"$T/client.log" && [ -s "$T/hello.json" ]
}

# spawn_bg NAME [launch-plan options] PLAN: a root spawn in the background (20 s at most),
# its stdout in $T/NAME.out, its result in $T/NAME.json.
spawn_bg() {
	sb_name=$1
	shift
	rm -f "$T/$sb_name.json"
	timeout 20 "$LP" --socket "$T/ld.sock" $STD_FDS "$@" --result "$T/$sb_name.json" \
		>"$T/$sb_name.out" 2>>"$T/client.log" &
	BG_PIDS="$BG_PIDS $!"
}

# wait_result NAME [TRIES]: until $T/NAME.json holds a whole JSON object (TRIES x 0.1 s).
wait_result() {
	for _ in $(seq 1 "${2:-100}"); do
		jq -e .type "$T/$1.json" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# A bind source with a submount from the start (check 3), one for the submount made later
# (check 4): directories on $T's local file system.
D3=$T/d3
D4=$T/d4
mkdir -p "$D3/sub" "$D4/late"
mount -t tmpfs -o size=64k tmpfs "$D3/sub" || skip_all "cannot mount a tmpfs"
MNT_LIST="$D3/sub"
echo sub-marker >"$D3/sub/marker"
chmod -R a+rX "$D3" "$D4"

# Check 5: a local directory with the FUSE file system mounted beneath it.
D5=$T/d5
MNT=$D5/f
mkdir -p "$MNT"
fuse=
if [ ! -c /dev/fuse ]; then
	fuse_why="no /dev/fuse"
elif ! command -v python3 >/dev/null; then
	fuse_why="python3 missing"
else
	python3 "$S/tests/helpers/stallfs.py" "$MNT" --pid-file "$T/fs.pid" >"$T/fs.out" \
		2>"$T/fs.log" &
	FS_PID=$!
	MNT_LIST="$MNT_LIST $MNT"
	for _ in $(seq 1 100); do
		grep -q mounted "$T/fs.out" && break
		kill -0 "$FS_PID" 2>/dev/null || break
		sleep 0.05
	done
	# The pid the server wrote itself, in case $! is a wrapper's.
	[ -s "$T/fs.pid" ] && FS_PID=$(cat "$T/fs.pid")
	if ! grep -q mounted "$T/fs.out"; then
		fuse_why="cannot mount a FUSE file system: $(cat "$T/fs.log")"
	elif [ ! -d "$MNT/d" ]; then
		fuse_why="the FUSE file system does not answer"
	else
		fuse=yes
	fi
fi

CORDON_LAUNCHERD_TRACE="$T/trace" ld_start
grep -q 'light spawn off' "$T/launcherd.log" &&
	skip_all "$(sed -n 's/.*light spawn off: \([^;]*\).*/light spawn off: \1/p' "$T/launcherd.log")"
plan 25

uid=$(id -u $TEST_USER1)
# The pools of mount namespaces are filled in the background: the first spawns may find none.
sh_plan "$T/p.json" 'echo "$(cat /proc/1/comm) $$ $(id -u) hello"'
spawn "$T/p.json" >/dev/null
spawn "$T/p.json" >/dev/null

# 1. Privileged mode.
out=$(spawn "$T/p.json")
check "privileged, root: pid 1 cordon-init, the command pid 2 as uid 0, output whole ($out)" \
	test "$out" = "cordon-init 2 0 hello"
held_run priv 1 --user $TEST_USER1
check "privileged, $TEST_USER1: pid 1 is cordon-init ($HELD_COMM)" test "$HELD_COMM" = cordon-init
check "privileged, $TEST_USER1: the command is pid 2 as uid $uid, its output whole ($HELD_OUT)" \
	test "$HELD_OUT" = "2 $uid hello"

# 2. User mode: always light, once its pools are filled (each launch-plan --user-mode starts a
# launcherd of its own: the third spawn over it).
if as_user $TEST_USER1 unshare -U true 2>/dev/null; then
	held_run user 3 --user-mode --user $TEST_USER1
	check "user mode, $TEST_USER1: pid 1 is cordon-init ($HELD_COMM)" test "$HELD_COMM" = cordon-init
	check "user mode: the command is pid 2 as uid $uid, its output whole ($HELD_OUT)" \
		test "$HELD_OUT" = "2 $uid hello"
else
	why="unprivileged user namespaces are disabled"
	skip_check "user mode: pid 1 is cordon-init" "$why"
	skip_check "user mode: the command is pid 2, its output whole" "$why"
fi

# 3. A bind source with a submount: cloned recursively, so the fork path.
bind_plan "$T/sub.json" 'echo "$(cat /proc/1/comm) [$(cat /mnt/sub/marker)]"'
out=$(spawn --fd 6="$D3" "$T/sub.json")
check "a bind source with a tmpfs beneath it: the sandbox sees the tmpfs's file ($out)" \
	test "${out#* }" = "[sub-marker]"
check "…through the fork path (pid 1 ${out%% *})" test "${out%% *}" = cordon-launcher

# 4. The same, with the submount made after launcherd started (and after it read the table).
bind_plan "$T/late.json" \
	'echo "$(cat /proc/1/comm) [$(ls -A /mnt/late)] [$(cat /mnt/late/marker 2>/dev/null)]"'
out=$(spawn --fd 6="$D4" "$T/late.json")
check "a bind source with nothing beneath it: the light path, an empty /mnt/late ($out)" \
	test "$out" = "cordon-init [] []"
mount -t tmpfs -o size=64k tmpfs "$D4/late"
MNT_LIST="$MNT_LIST $D4/late"
echo late-marker >"$D4/late/marker"
chmod a+r "$D4/late/marker"
out=$(spawn --fd 6="$D4" "$T/late.json")
check "a tmpfs mounted beneath it since: the sandbox sees its file ($out)" \
	test "${out#* }" = "[marker] [late-marker]"
check "…through the fork path (pid 1 ${out%% *})" test "${out%% *}" = cordon-launcher
umount "$D4/late"
out=$(spawn --fd 6="$D4" "$T/late.json")
check "that tmpfs unmounted: the light path again, /mnt/late the empty directory ($out)" \
	test "$out" = "cordon-init [] []"

# A bind source that is the root of its own mount (a partition, a tmpfs) with nothing on top
# of it or beneath it: its own mount point is no submount, so the light path.
D6="$T/d6"
mkdir -p "$D6"
mount -t tmpfs -o size=64k,mode=0755 tmpfs "$D6"
MNT_LIST="$MNT_LIST $D6"
echo root-marker >"$D6/marker"
chmod a+r "$D6/marker"
bind_plan "$T/root.json" 'echo "$(cat /proc/1/comm) [$(cat /mnt/marker 2>/dev/null)]"'
out=$(spawn --fd 6="$D6" "$T/root.json")
check "a bind source that is a mount's root, nothing over or under it: light ($out)" \
	test "$out" = "cordon-init [root-marker]"
# The same mount's root, held open while another tmpfs is mounted over it: cloned alone it
# would show the file beneath; the fork path clones both, as the host has them.
sleep 30 7<"$D6" &
holder=$!
sleep 0.1
mount -t tmpfs -o size=64k,mode=0755 tmpfs "$D6"
MNT_LIST="$MNT_LIST $D6"
echo over-marker >"$D6/marker"
chmod a+r "$D6/marker"
out=$(spawn --fd 6="/proc/$holder/fd/7" "$T/root.json")
kill $holder
wait $holder 2>/dev/null
umount "$D6"
check "…another mounted over it: the fork path, the sandbox sees the top one ($out)" \
	test "$out" = "cordon-launcher [over-marker]"
# 5. FUSE, its server stopped (SIGSTOP: it answers nothing, not even LOOKUP or GETATTR).
# a. A directory on FUSE (not its root, which as a mount point goes the fork way anyway) as the
# bind source of a target the command never touches: the fork path, whose child may wait for
# the server; launcherd must not. The client opens it through /proc/PID/fd of a holder that
# opened it before (a magic link: no request to the server).
# b. A local bind source with the FUSE mount beneath it and the plan's cwd on it: the fork
# path, cloned recursively, so the child waits in chdir(). On the light path that directory
# would be the plain one beneath the mount (the cwd step would fail at once), and a child
# waiting there would hold a slot for ever.
# Both go on once the server does, and report which pid 1 they had.
if [ -n "$fuse" ]; then
	sh_plan "$T/fa.json" 'echo "$(cat /proc/1/comm) fuse-bind"'
	jq '.mounts += [{"type": "bind", "source": 6, "target": "/mnt"}]' "$T/fa.json" >"$T/fa2.json"
	bind_plan "$T/fb.json" 'echo "$(cat /proc/1/comm) $(pwd)"'
	jq '.cwd = "/mnt/f/d"' "$T/fb.json" >"$T/fb2.json"
	sleep 60 7<"$MNT/d" &
	HOLD_PID=$!
	for _ in $(seq 1 100); do
		[ -e "/proc/$HOLD_PID/fd/7" ] && break
		sleep 0.02
	done
	kill -STOP "$FS_PID"

	from=$(wc -l <"$T/trace")
	spawn_bg fa --fd 6="/proc/$HOLD_PID/fd/7" "$T/fa2.json"
	pa=$(path_since "$from")
	if hello_ok; then h=answered; else h="no answer"; fi
	check "a FUSE bind source, server stopped: the fork path ($pa), hello answered in 5 s ($h)" \
		test "$pa/$h" = prepared/answered
	out=$(spawn "$T/p.json")
	check "…and another client's spawn meanwhile runs, light ($out)" \
		test "$out" = "cordon-init 2 0 hello"

	from=$(wc -l <"$T/trace")
	spawn_bg fb --fd 6="$D5" "$T/fb2.json"
	pb=$(path_since "$from")
	wait_result fb 5
	rb=$(jq -c '{type, code, step}' "$T/fb.json" 2>/dev/null)
	check "a cwd on FUSE under a local bind source: the fork path ($pb), waiting (${rb:-no result})" \
		test "$pb/$rb" = prepared/
	if hello_ok; then h=answered; else h="no answer"; fi
	check "…launcherd answers another client's hello within 5 s ($h)" test "$h" = answered
	out=$(spawn "$T/p.json")
	out2=$(spawn "$T/p.json")
	check "…a second spawn runs, light ($out)" test "$out" = "cordon-init 2 0 hello"
	check "…and a third ($out2)" test "$out2" = "cordon-init 2 0 hello"

	kill -CONT "$FS_PID"
	wait_result fa
	wait_result fb
	ra="$(jq -r '"\(.type) \(.exitCode)"' "$T/fa.json" 2>/dev/null)/$(cat "$T/fa.out")"
	check "server resumed: the FUSE bind source's spawn ran, its pid 1 cordon-launcher ($ra)" \
		test "$ra" = "exit 0/cordon-launcher fuse-bind"
	rb="$(jq -r '"\(.type) \(.exitCode)"' "$T/fb.json" 2>/dev/null)/$(cat "$T/fb.out")"
	check "…and the one with its cwd on FUSE ran there, its pid 1 cordon-launcher ($rb)" \
		test "$rb" = "exit 0/cordon-launcher /mnt/f/d"
else
	for d in "a FUSE bind source: the fork path, launcherd answers" \
		"…another client's spawn meanwhile runs, light" \
		"a cwd on FUSE beneath a local bind source: the fork path, the child waits" \
		"…launcherd answers another client's hello within 5 s" "…a second spawn runs, light" \
		"…and a third" "server resumed: the spawn with the FUSE bind source ran" \
		"…and the one with its cwd on FUSE ran there"; do
		skip_check "$d" "$fuse_why"
	done
fi

# 6. Limits: the light path makes the cgroup before the clone and the child moves itself in.
"$LP" --socket "$T/ld.sock" --hello --result "$T/hello.json" 2>>"$T/client.log"
if [ "$(jq -r .pidsLimit "$T/hello.json" 2>/dev/null)" = cgroup ]; then
	sh_plan "$T/fork.json" 'cat /proc/1/comm; exec /probe/probe forkloop 100' \
		', "cgroup": {"pidsMax": 16}'
	out=$(spawn "$T/fork.json" | sed -n 1p)
	got="exit $(json_field exitCode), limits.pids $(jq -r .limits.pids "$T/result.json" 2>/dev/null)"
	check "pids limit: the light path all the same (pid 1 $out)" test "$out" = cordon-init
	check "pids limit: a bounded fork loop is stopped ($got)" \
		test "$got" = "exit 1, limits.pids true"
else
	skip_check "pids limit: the light path all the same" "no cgroup pids controller"
	skip_check "pids limit: a bounded fork loop is stopped" "no cgroup pids controller"
fi

# 7. vm.memfd_noexec=2 (per pid namespace, inherited): no memfd may be executable, so no
# light spawn. A launcherd in a pid namespace of its own with that setting; its clients enter
# that namespace (it serves no peer whose pid it cannot see).
if ! command -v unshare >/dev/null || ! command -v nsenter >/dev/null; then
	why="unshare or nsenter missing"
elif [ ! -e /proc/sys/vm/memfd_noexec ]; then
	why="no vm.memfd_noexec (Linux < 6.3)"
elif ! unshare -p -f sysctl -q -w vm.memfd_noexec=2 2>"$T/sysctl.log"; then
	why="cannot set vm.memfd_noexec=2 in a new pid namespace: $(cat "$T/sysctl.log")"
else
	why=
fi
if [ -z "$why" ]; then
	ld_stop
	cat >"$T/ld-noexec" <<EOF
#!/bin/sh
exec unshare -p -f --kill-child sh -c 'sysctl -q -w vm.memfd_noexec=2 || exit 99; "\$0" "\$@"' \\
	"$LAUNCHERD" "\$@"
EOF
	chmod +x "$T/ld-noexec"
	real_launcherd=$LAUNCHERD
	LAUNCHERD=$T/ld-noexec
	ld_start
	LAUNCHERD=$real_launcherd
	NS_LD=$LD_PID
	ns_init=$(pgrep -P "$NS_LD" | head -n 1)
	cat >"$T/lp-ns" <<EOF
#!/bin/sh
exec nsenter -t $ns_init -p -- "$LP" "\$@"
EOF
	chmod +x "$T/lp-ns"
	LP=$T/lp-ns
	off=$(sed -n 's/.*\(light spawn off: [^;]*\).*/\1/p' "$T/launcherd.log")
	check "vm.memfd_noexec=2: launcherd says so (${off:-nothing})" test -n "$off"
	spawn "$T/p.json" >/dev/null
	out=$(spawn "$T/p.json")
	check "…and its sandboxes still run, pid 1 a copy of launcherd ($out)" \
		test "$out" = "cordon-launcher 2 0 hello"
else
	skip_check "vm.memfd_noexec=2: light spawn off" "$why"
	skip_check "…and its sandboxes still run" "$why"
fi

tap_done
