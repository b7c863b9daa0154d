#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Two ordinary users on one privileged launcherd: neither can see, signal or wait on the other's
# sandboxes. And a hardened host where the client cannot create user namespaces (a seccomp
# filter) still gets a sandbox from the privileged daemon.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
ld_require_root
ld_start
plan 10

make_plan "$T/sleep.json" '["/probe/probe", "sleep-tree", "/work/ready-users"]'
as_user_exec $TEST_USER1 "$LP" --socket "$T/ld.sock" $STD_FDS --id-file "$T/id1" --result "$T/r1.json" "$T/sleep.json" >/dev/null 2>&1 &
c1=$!
# The sandbox can say "ready" before the client has written the id it got: wait for both.
for _ in $(seq 1 100); do [ -s "$T/work/ready-users" ] && [ -s "$T/id1" ] && break; sleep 0.05; done
id1=$(cat "$T/id1")
pid1=$(pgrep -u $TEST_USER1 -f "probe sleep-tree /work/ready-users" | head -1)
check "user 1's sandbox is running" test -n "$id1" -a -n "$pid1"

as_user $TEST_USER2 "$LP" --socket "$T/ld.sock" --kill "$id1" --result "$T/k2.json" >/dev/null 2>&1
check "user 2 cannot kill it through launcherd: not-found (no existence oracle)" \
	test $? = 5 -a "$(jq -r .code "$T/k2.json")" = not-found
as_user $TEST_USER2 kill -0 "$pid1" 2>/dev/null
check "user 2 cannot signal its processes directly" test $? != 0
as_user $TEST_USER2 cat /proc/$pid1/environ >/dev/null 2>&1
check "user 2 cannot read its environment" test $? != 0
as_user $TEST_USER2 "$LP" --socket "$T/ld.sock" --kill "sb-$(echo "$id1" | cut -c4-)" --signal 15 --result "$T/k2.json" >/dev/null 2>&1
check "…not with another signal either" test "$(jq -r .code "$T/k2.json")" = not-found
check "user 1's sandbox still runs" kill -0 "$pid1"

as_user $TEST_USER1 "$LP" --socket "$T/ld.sock" --kill "$id1" --result "$T/k1.json" >/dev/null 2>&1
check "user 1 can kill its own sandbox from another connection" test "$(jq -r .type "$T/k1.json")" = ok
# Bounded: if the kill did not work, the client is stopped here rather than hang the suite.
for _ in $(seq 1 100); do kill -0 $c1 2>/dev/null || break; sleep 0.05; done
kill $c1 2>/dev/null
wait $c1
check "…and the exit goes to the requester only (reason killed)" test "$(jq -r .reason "$T/r1.json")" = killed

# Hardened host: the client runs under a seccomp filter that refuses user namespaces.
make_plan "$T/p.json" '["/bin/sh", "-c", "echo sandboxed $$"]'
out=$(as_user $TEST_USER1 "$HELPERS/no-userns" "$LP" --socket "$T/ld.sock" $STD_FDS "$T/p.json" 2>>"$T/client.log")
check "client without user namespaces: the privileged daemon still gives it a sandbox" test "$out" = "sandboxed 2"
as_user $TEST_USER1 "$HELPERS/no-userns" "$LP" --user-mode "$LAUNCHERD" --floor "$T/floor.json" $STD_FDS --result "$T/um.json" "$T/p.json" >/dev/null 2>&1
check "…where user mode cannot (setup-failed at clone, not a silent exit)" \
	test "$(jq -r '.code + " " + .step' "$T/um.json")" = "setup-failed clone"
tap_done
