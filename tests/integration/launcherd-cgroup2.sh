#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# cgroup v2: where launcherd's own v2 cgroup passes pids and memory to its children (a
# delegated subtree), sandboxes get their limits from a v2 cgroup of their own: pids.max and
# memory.max set, the limits enforced and reported, the cgroup gone afterwards. On a v1/v2
# hybrid host whose pids and memory controllers are bound to v1 (the v2 hierarchy then cannot
# offer them without unmounting v1) this is skipped with the reason; launcherd-limits.sh covers
# v1 there.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
ld_require_root

if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	v2=/sys/fs/cgroup
elif [ -f /sys/fs/cgroup/unified/cgroup.controllers ]; then
	v2=/sys/fs/cgroup/unified
else
	# Not a missing kernel feature but the host's layout: a plain skip.
	echo "1..0 # SKIP no cgroup v2 hierarchy mounted"
	exit 0
fi
for c in pids memory; do
	if ! grep -qw $c "$v2/cgroup.controllers"; then
		echo "1..0 # SKIP the cgroup v2 hierarchy ($v2) has no $c controller: on this hybrid host it is bound to a v1 hierarchy (launcherd-limits.sh tests v1)"
		exit 0
	fi
done
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
if [ "$own" != / ]; then
	# launcherd uses a subtree only if its own cgroup already delegates pids and memory, which
	# the no-internal-processes rule allows for the root cgroup only: make one we can run in.
	echo "1..0 # SKIP this test runs in the v2 cgroup $own, not the root: cannot delegate pids and memory to launcherd's cgroup"
	exit 0
fi
# Delegate pids and memory from the root (what a unit with Delegate=yes gets).
echo "+pids +memory" >"$v2/cgroup.subtree_control" 2>/dev/null ||
	{ echo "1..0 # SKIP cannot enable pids and memory in $v2/cgroup.subtree_control"; exit 0; }

ld_start
plan 8
check "hello says cgroup v2" sh -c "'$LP' --socket '$T/ld.sock' --hello 2>&1 | jq -e '.cgroup == \"v2\"' >/dev/null"

make_plan "$T/sleep.json" '["/probe/probe", "sleep-tree", "/work/ready-cg2"]' \
	', "cgroup": {"pidsMax": 64, "memoryMaxBytes": 67108864}'
"$LP" --socket "$T/ld.sock" $STD_FDS --id-file "$T/id" --result "$T/r.json" "$T/sleep.json" >/dev/null 2>&1 &
c=$!
for _ in $(seq 1 100); do [ -s "$T/work/ready-cg2" ] && [ -s "$T/id" ] && break; sleep 0.05; done
id=$(cat "$T/id")
cg="$v2/cordon/$id"
check "the sandbox has a v2 cgroup of its own ($cg)" test -n "$id" -a -d "$cg"
check "pids.max is the plan's" test "$(cat "$cg/pids.max" 2>/dev/null)" = 64
check "memory.max is the plan's" test "$(cat "$cg/memory.max" 2>/dev/null)" = 67108864
"$LP" --socket "$T/ld.sock" --kill "$id" --result "$T/k.json" >/dev/null 2>&1
for _ in $(seq 1 100); do kill -0 $c 2>/dev/null || break; sleep 0.05; done
kill $c 2>/dev/null
wait $c
check "kill takes the tree down (cgroup.kill)" test "$(jq -r .reason "$T/r.json")" = killed
for _ in $(seq 1 50); do [ -d "$cg" ] || break; sleep 0.05; done
check "…and the cgroup is removed" test ! -d "$cg"

make_plan "$T/fork.json" '["/probe/probe", "forkloop", "200"]' ', "cgroup": {"pidsMax": 16}'
ld_run $STD_FDS "$T/fork.json" >/dev/null 2>&1
check "a fork loop stops at pids.max (exit report: limits.pids)" test "$(jq -r .limits.pids "$T/result.json")" = true
make_plan "$T/alloc.json" '["/probe/probe", "alloc", "256"]' ', "cgroup": {"memoryMaxBytes": 33554432}'
ld_run $STD_FDS "$T/alloc.json" >/dev/null 2>&1
check "an allocation past memory.max is stopped (reason memory)" test "$(jq -r .reason "$T/result.json")" = memory
tap_done
