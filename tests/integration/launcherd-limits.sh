#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Limits and teardown: pids and memory limits (cgroup in privileged mode, RLIMIT_NPROC in user
# mode), wall-clock timeout, cancel and die-with-requester taking the whole tree down, and the
# per-sandbox cgroup removed afterwards.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
ld_require_root
# Its step trace says when "exit" went out relative to the init's end.
CORDON_LAUNCHERD_TRACE="$T/trace" ld_start
plan 20

# tree_gone FILE: no process of the sandbox is left (they all have FILE on their command line).
tree_gone() {
	for _ in $(seq 1 50); do
		pgrep -f "probe sleep-tree $1" >/dev/null || return 0
		sleep 0.05
	done
	return 1
}
wait_file() { for _ in $(seq 1 100); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }

cg_snapshot "$T/cg-before"

make_plan "$T/p.json" '["/probe/probe", "forkloop", "100"]' ', "cgroup": {"pidsMax": 16}'
ld_run --user $TEST_USER1 $STD_FDS "$T/p.json" >"$T/out" 2>&1
rc=$?
check "pids limit: a bounded fork loop is stopped" test "$rc" = 1
check "pids limit: reported in the exit report" test "$(jq -r .limits.pids "$T/result.json")" = true

make_plan "$T/p.json" '["/probe/probe", "alloc", "256"]' ', "cgroup": {"memoryMaxBytes": 33554432}'
ld_run --user $TEST_USER1 $STD_FDS "$T/p.json" >"$T/out" 2>&1
rc=$?
check "memory limit: a 256 MiB allocation under a 32 MiB limit is killed" test "$rc" = 137
check "memory limit: reason memory, limit reported" test "$(json_field reason)/$(jq -r .limits.memory "$T/result.json")" = "memory/true"

check "cgroups of finished sandboxes are removed" test "$(cg_leaked_since "$T/cg-before")" = 0

make_plan "$T/p.json" '["/probe/probe", "sleep-tree", "/work/ready-timeout"]' ', "timeoutMs": 300'
ld_run --user $TEST_USER1 $STD_FDS "$T/p.json" >"$T/out" 2>&1
rc=$?
check "timeout: the sandbox is killed (SIGKILL) with reason timeout" test "$rc/$(json_field reason)" = "137/timeout"
check "timeout: children and grandchildren are gone too" tree_gone /work/ready-timeout

# step_before ID A B: in launcherd's trace, sandbox ID reached step A before step B.
step_before() {
	awk -v id="$1" -v a="$2" -v b="$3" '$1 == id && $2 == a { ta = $3 } $1 == id && $2 == b { tb = $3 }
		END { exit !(ta && tb && ta < tb) }' "$T/trace"
}

# Commands that end alone: "exit" may go out on the init's report, before the init is reaped.
# Whether it does for a given sandbox depends on which of the two events launcherd sees first
# (both can be ready when it wakes), so: 20 back to back, and at least one took the early path.
make_plan "$T/p.json" '["/bin/true"]'
from=$(wc -l <"$T/trace")
ld_run --user $TEST_USER1 $STD_FDS --repeat 20 "$T/p.json" >"$T/out" 2>&1
early=$(tail -n +$((from + 1)) "$T/trace" | awk '$2 == "exit-sent" { e[$1] = $3 } $2 == "init-reaped" { r[$1] = $3 }
	END { n = 0; for (id in e) if (id in r && e[id] < r[id]) n++; print n }')
check "commands that end alone: exit is sent before the init is reaped ($early of 20)" \
	test "$early" -ge 1

# The command ends, leaving a grandchild behind: "exit" waits for the init's end, when the
# kernel has killed the rest, so that nothing is left once the client has it.
make_plan "$T/p.json" '["/bin/sh", "-c", "/probe/probe sleep-tree /work/ready-orphan & while [ ! -s /work/ready-orphan ]; do sleep 0.01; done; exit 5"]'
ld_run --user $TEST_USER1 $STD_FDS "$T/p.json" >"$T/out" 2>&1
rc=$?
left=$(pgrep -f "probe sleep-tree /work/ready-orphan")
check "a command that leaves a grandchild behind: its own exit code, reason exited" \
	test "$rc/$(json_field reason)/$(json_field exitCode)" = "5/exited/5"
check "…exit is sent only once its init is reaped, and no process of it is left" \
	eval 'step_before "$(json_field sandbox)" init-reaped exit-sent && test -z "$left"'

# Cancel through a kill request from another connection of the same user.
rm -f "$T/work/ready-cancel" "$T/id"
make_plan "$T/p.json" '["/probe/probe", "sleep-tree", "/work/ready-cancel"]' ', "cgroup": {"pidsMax": 64}'
as_user $TEST_USER1 timeout 30 "$LP" --socket "$T/ld.sock" $STD_FDS --id-file "$T/id" --result "$T/cancel.json" "$T/p.json" >/dev/null 2>&1 &
client=$!
wait_file "$T/work/ready-cancel"
wait_file "$T/id" # the sandbox can be ready before the client wrote down its id
check "cancel: the grandchild was running" test -s "$T/work/ready-cancel"
as_user $TEST_USER1 timeout 30 "$LP" --socket "$T/ld.sock" --kill "$(cat "$T/id")" --result "$T/kill.json" >/dev/null 2>&1
check "cancel: kill request answered ok" test "$(jq -r .type "$T/kill.json")" = ok
wait $client
check "cancel: reason killed" test "$(jq -r .reason "$T/cancel.json")" = killed
check "cancel: no process of the tree survives" tree_gone /work/ready-cancel

# Die with the requester: the client is killed; launcherd kills its sandbox.
make_plan "$T/p.json" '["/probe/probe", "sleep-tree", "/work/ready-dwr"]'
as_user_exec $TEST_USER1 "$LP" --socket "$T/ld.sock" $STD_FDS "$T/p.json" >/dev/null 2>&1 &
client=$!
wait_file "$T/work/ready-dwr"
kill -9 $client
wait $client 2>/dev/null
check "die-with-requester: the whole tree dies with the connection" tree_gone /work/ready-dwr

# dieWithRequester false: survives the requester, still killed on its timeout.
make_plan "$T/p.json" '["/probe/probe", "sleep-tree", "/work/ready-nodwr"]' ', "timeoutMs": 1500'
sed -i 's/"dieWithRequester": true/"dieWithRequester": false/' "$T/p.json"
as_user_exec $TEST_USER1 "$LP" --socket "$T/ld.sock" $STD_FDS "$T/p.json" >/dev/null 2>&1 &
client=$!
wait_file "$T/work/ready-nodwr"
kill -9 $client
wait $client 2>/dev/null
sleep 0.3
alive() { pgrep -f "probe sleep-tree $1" >/dev/null; }
check "dieWithRequester false: the sandbox outlives its requester" alive /work/ready-nodwr
check "…and is still killed by its timeout" tree_gone /work/ready-nodwr

# User mode: pids through RLIMIT_NPROC in the sandbox's user namespace.
make_plan "$T/p.json" '["/probe/probe", "forkloop", "100"]' ', "cgroup": {"pidsMax": 16}'
ld_run --user-mode --user $TEST_USER1 $STD_FDS "$T/p.json" >"$T/out" 2>&1
check "user mode: the pids limit holds without a cgroup (RLIMIT_NPROC per user ns)" test $? = 1
make_plan "$T/p.json" '["/bin/true"]' ', "cgroup": {"memoryMaxBytes": 33554432}'
ld_run --user-mode --user $TEST_USER1 $STD_FDS "$T/p.json" >"$T/out" 2>&1
check "user mode: a memory limit it cannot enforce fails the spawn, naming the field" \
	test "$(json_field code)/$(json_field field)" = "setup-failed/plan.cgroup.memoryMaxBytes"

sleep 0.2
check "no cgroup left behind" test "$(cg_leaked_since "$T/cg-before")" = 0
tap_done
