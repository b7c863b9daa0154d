#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The admin floor (/etc/cordon/launcherd.json): file checks at start, every rule enforced on
# plans, per-user ceilings; and the setuid refusal.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
ld_require_root
plan 19

# --- setuid refusal -------------------------------------------------------------------------
cp "$LAUNCHERD" "$T/suid-launcherd"
chmod 4755 "$T/suid-launcherd"
as_user $TEST_USER1 "$T/suid-launcherd" --socket "$T/suid.sock" --floor "$T/floor.json" >"$T/suid.out" 2>&1
rc=$?
check "installed setuid: refuses to start with a clear message" \
	test "$rc" = 1 -a "$(grep -c 'refusing to run setuid' "$T/suid.out")" = 1
check "…before creating its socket" test ! -e "$T/suid.sock"

# --- fs.suid_dumpable = 1: a uid-switching set-up would be ptrace-able by the requester ---------
# The setting is global and other tests run beside this one: launcherd is shown the value
# through a file bound over /proc/sys/fs/suid_dumpable in a mount namespace of its own.
# dumpable_run VALUE: start launcherd so; 0 if it still runs after 0.3 s (then stopped), else 1.
dumpable_run() {
	echo "$1" >"$T/dumpable"
	unshare -m --propagation private sh -c \
		'mount --bind "$1" /proc/sys/fs/suid_dumpable && shift && exec "$@"' sh \
		"$T/dumpable" "$LAUNCHERD" --mode=privileged --socket "$T/dump.sock" \
		--floor "$T/floor.json" >"$T/dump.out" 2>&1 &
	p=$!
	sleep 0.3
	if kill -0 $p 2>/dev/null; then kill $p; wait $p; return 0; fi
	wait $p
	return 1
}
dumpable_run 1
check "privileged with fs.suid_dumpable=1: refuses to start, naming the setting" \
	test $? = 1 -a "$(grep -c 'fs.suid_dumpable is 1' "$T/dump.out")" = 1
dumpable_run 2
check "…and starts with fs.suid_dumpable=2" test $? = 0

# --- floor file checks ----------------------------------------------------------------------
try_floor() {
	"$LAUNCHERD" --socket "$T/f.sock" --floor "$1" >"$T/f.out" 2>&1 &
	p=$!
	sleep 0.3
	if kill -0 $p 2>/dev/null; then kill $p; wait $p; return 0; fi
	wait $p
	return 1
}
echo '{"require": ["landlock"]}' >"$T/gw.json"
chmod 0664 "$T/gw.json"
try_floor "$T/gw.json"
check "group-writable floor file: refuses to start" test $? = 1 -a "$(grep -c 'group- or world-writable' "$T/f.out")" = 1
chmod 0644 "$T/gw.json"
chown $TEST_USER1 "$T/gw.json"
try_floor "$T/gw.json"
check "floor file not owned by root: refuses to start" test $? = 1 -a "$(grep -c 'not owned by root' "$T/f.out")" = 1
echo '{"require": ["landlock"], "maxNetwrok": "none"}' >"$T/typo.json"
try_floor "$T/typo.json"
check "unknown floor field: refuses to start, naming it" test $? = 1 -a "$(grep -c 'maxNetwrok' "$T/f.out")" = 1

# --- floor rules ----------------------------------------------------------------------------
cat >"$T/floor.json" <<EOF2
{"require": ["landlock", "seccomp", "netns"], "maxNetwork": "loopback", "hostMode": false,
 "perUser": {"maxSandboxes": 2, "pidsMax": 100}}
EOF2
ld_start
"$LP" --socket "$T/ld.sock" --hello --result "$T/result.json"
check "hello reports the floor as it applies" \
	test "$(jq -c '[.floor.require, .floor.maxNetwork, .floor.perUser.pidsMax]' "$T/result.json")" = '[["landlock","seccomp","netns"],"loopback",100]'

printf '\006\000\000\000\000\000\377\177' >"$T/allow.bpf" # ret ALLOW
chmod 0644 "$T/allow.bpf"
make_plan "$T/base.json" '["/bin/true"]' ', "seccomp": {"program": 6}, "cgroup": {"pidsMax": 10}'
refused_by_floor() {
	desc=$1 expr=$2 field=$3
	jq "$expr" "$T/base.json" >"$T/p.json"
	ld_run --user $TEST_USER1 $STD_FDS --seccomp 6="$T/allow.bpf" "$T/p.json" >/dev/null 2>&1
	got="$(json_field code) $(json_field field)"
	if [ "$got" = "floor-refused $field" ]; then ok "$desc"; else not_ok "$desc: got $got"; fi
}
ld_run --user $TEST_USER1 $STD_FDS --seccomp 6="$T/allow.bpf" "$T/base.json" >/dev/null 2>&1
check "a plan that meets the floor runs" test "$?/$(json_field reason)" = "0/exited"
refused_by_floor "require landlock: a plan without it is refused" 'del(.landlock)' plan.landlock
refused_by_floor "require landlock: it cannot be made optional" '.landlock.required = false' plan.landlock.required
refused_by_floor "require seccomp: a plan without its filter is refused" 'del(.seccomp)' plan.seccomp
refused_by_floor "require netns: host network is refused" '.network = "host"' plan.network
refused_by_floor "maxNetwork loopback: proxy is refused" '.network = "proxy"' plan.network
refused_by_floor "per-user pids ceiling: a plan without a pids limit is refused" 'del(.cgroup)' plan.cgroup.pidsMax

# Ceilings over live sandboxes: 2 sandboxes, 100 pids per user.
make_plan "$T/sleep.json" '["/probe/probe", "sleep-tree", "/work/ready-floor"]' ', "seccomp": {"program": 6}, "cgroup": {"pidsMax": 60}'
as_user_exec $TEST_USER1 "$LP" --socket "$T/ld.sock" $STD_FDS --seccomp 6="$T/allow.bpf" "$T/sleep.json" >/dev/null 2>&1 &
c1=$!
for _ in $(seq 1 100); do [ -s "$T/work/ready-floor" ] && break; sleep 0.05; done
ld_run --user $TEST_USER1 $STD_FDS --seccomp 6="$T/allow.bpf" "$T/sleep.json" >/dev/null 2>&1
check "per-user pids ceiling over live sandboxes: limit" test "$(json_field code) $(json_field field)" = "limit plan.cgroup.pidsMax"
ld_run --user $TEST_USER2 $STD_FDS --seccomp 6="$T/allow.bpf" "$T/base.json" >/dev/null 2>&1
check "…another user is not affected" test "$(json_field reason)" = exited
kill -9 $c1
wait $c1 2>/dev/null
ld_stop

# One sandbox at a time: back-to-back sandboxes all run, the previous one no longer counting once
# its exit was reported (even while its init is still going away).
cat >"$T/floor.json" <<EOF2
{"perUser": {"maxSandboxes": 1}}
EOF2
ld_start
make_plan "$T/one.json" '["/bin/true"]'
ld_run --user $TEST_USER1 $STD_FDS --repeat 50 "$T/one.json" >/dev/null 2>&1
check "maxSandboxes 1: 50 back-to-back sandboxes over one connection all run" \
	test "$?/$(json_field reason)" = "0/exited"
ld_stop

cat >"$T/floor.json" <<EOF2
{"allowUsers": ["$TEST_USER2"]}
EOF2
ld_start
ld_run --user $TEST_USER1 $STD_FDS "$T/base.json" >/dev/null 2>&1
check "allowUsers: another user is refused at hello" test "$(json_field code)" = floor-refused
tap_done
