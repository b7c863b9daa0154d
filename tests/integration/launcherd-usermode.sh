#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# User mode without root: what an ordinary CI job (no sudo) can check. The client starts an
# unprivileged launcherd over a socketpair; plans run inside a new user namespace. As root, the
# same runs as the test user.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
[ -x "$LAUNCHERD" ] || skip_all "no $LAUNCHERD"
if [ "$(id -u)" = 0 ]; then
	id $TEST_USER1 >/dev/null 2>&1 || useradd -M -s /bin/sh $TEST_USER1 2>/dev/null ||
		skip_all "cannot create test user $TEST_USER1"
	run() { ld_run --user-mode --user $TEST_USER1 "$@"; }
	uid=$(id -u $TEST_USER1)
else
	run() { ld_run --user-mode "$@"; }
	uid=$(id -u)
fi
if [ "$(id -u)" = 0 ]; then
	as_user $TEST_USER1 unshare -U true 2>/dev/null || skip_all "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone / user.max_user_namespaces)"
else
	unshare -U true 2>/dev/null || skip_all "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone / user.max_user_namespaces)"
fi
plan 10

make_plan "$T/p.json" '["/bin/sh", "-c", "echo $$ $(id -u)"]'
out=$(run $STD_FDS "$T/p.json")
check "a sandbox from an unprivileged launcherd: pid 2 under the init, the user's uid" test "$out" = "2 $uid"
"$LP" --user-mode "$LAUNCHERD" --floor "$T/floor.json" --hello --result "$T/result.json" 2>/dev/null
check "hello: user mode, user namespaces" test "$(jq -r '.mode + " " + (.userns|tostring)' "$T/result.json")" = "user true"

probe_refused "user mode: write to the read-only /usr" --user-mode -- write /usr/cordon-probe
probe_refused "user mode: nested user namespace" --user-mode -- userns
probe_refused "user mode: mount" --user-mode -- mount
probe_refused "user mode: host TCP is out of reach (own netns)" --user-mode -- tcp 1

# launcherd keeps a user namespace of its own, which owns the sandbox's namespaces (made ahead by
# its pool, or by the clone); the sandbox runs in one more, nested, made last: every namespace
# differs from the host's, the user is mapped to itself, and no capability is left, bounding set
# included (the new user namespace had refilled it).
kinds="user mnt pid net ipc uts cgroup"
make_plan "$T/p.json" "[\"/bin/sh\", \"-c\", \"/probe/probe ns $kinds; cat /proc/self/uid_map; grep -E '^Cap(Bnd|Eff|Prm)' /proc/self/status\"]"
out=$(run $STD_FDS "$T/p.json" | tr -s ' \t' ' ')
host=$(for k in $kinds; do readlink /proc/self/ns/$k; done)
fresh=yes
for k in $kinds; do
	a=$(printf '%s\n' "$out" | grep "^$k:\[")
	[ -n "$a" ] && ! printf '%s\n' "$host" | grep -qxF "$a" || fresh=no
done
check "user mode: user, mount, pid, net, IPC, UTS and cgroup namespaces all not the host's" test "$fresh" = yes ||
	diag "sandbox: $out" "host: $host"
check "user mode: the user mapped to itself, no capability in any set" test \
	"$(printf '%s\n' "$out" | grep -v ':\[' | tr '\n' ' ')" = \
	" $uid $uid 1 CapPrm: 0000000000000000 CapEff: 0000000000000000 CapBnd: 0000000000000000 "

# ... and those namespaces are owned by launcherd's user namespace, the parent of the sandbox's:
# nothing in the sandbox holds a capability over them. Seen from here, where the kernel answers.
# (The sandbox waits for a file rather than sleeping: it ends, and its client with it, whatever
# happens here.)
rm -f "$T/work/owner-done"
make_plan "$T/p.json" '["/bin/sh", "-c", "i=0; while [ ! -e /work/owner-done ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done", "cordon-owner-probe"]'
run $STD_FDS "$T/p.json" >/dev/null 2>&1 &
client=$!
spid=
for _ in $(seq 1 100); do
	spid=$(pgrep -u "$uid" -f 'cordon-owner-probe$' | head -n1)
	[ -n "$spid" ] && break
	sleep 0.05
done
out=$([ -n "$spid" ] && "$HELPERS/probe" ns-owner "$spid" user mnt pid net ipc uts cgroup 2>&1)
own=$([ -n "$spid" ] && readlink "/proc/$spid/ns/user")
touch "$T/work/owner-done"
wait "$client" 2>/dev/null
parent=$(printf '%s\n' "$out" | sed -n 's/^user owner //p')
owners=$(printf '%s\n' "$out" | grep ' owner ' | grep -v '^user ' | cut -d' ' -f3 | sort -u)
check "user mode: the sandbox's namespaces are owned by its user namespace's parent, not by it" \
	test -n "$parent" -a "$owners" = "$parent" -a "$own" != "$parent"
[ -n "$parent" ] && [ "$owners" = "$parent" ] && [ "$own" != "$parent" ] ||
	diag "sandbox pid ${spid:-none}, user namespace $own; $out"

make_plan "$T/p.json" '["/probe/probe", "forkloop", "100"]' ', "cgroup": {"pidsMax": 16}'
run $STD_FDS "$T/p.json" >/dev/null 2>&1
check "user mode: pids limit through RLIMIT_NPROC in the sandbox's user namespace" \
	test "$?/$(json_field reason)/$(json_field exitCode)" = "1/exited/1"
tap_done
