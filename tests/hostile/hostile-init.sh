#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The init of a light spawn (cordon-init, exec'd from launcherd's memfd as the requester) must
# never be the requester's to trace: it holds the report launcherd trusts, and before it has
# restricted itself (Landlock, seccomp) it holds no less than the sandbox. The requester
# (cordon-test1) tries PTRACE_SEIZE and /proc/PID/mem on it from the moment its set-up child
# appears (hostile-client --race-init: the pids launcherd's processes get, as fast as it can),
# with a PATH of many missing directories that keeps the init waiting on its command's exec,
# and again after "spawned" (--probe-init). And the per-user ceiling: with perUser.maxSandboxes 1
# never two sandboxes live at once — not when the requester holds an init at its exit (a seized
# init, --race-hold), nor when it spawns again the moment a kill is answered. A sandbox whose
# exit was reported runs nothing any more and no longer counts (only its init is going away,
# launcherd-sandbox.c): spawning again the moment an exit is answered always succeeds, and at
# most that one going init is still there.
. "${top_srcdir:-.}/tests/hostile/hostile-lib.sh"
h_require
ld_start
plan 11

A=$TEST_USER1
# A light plan (its bind sources have nothing beneath them) whose command the init finds at the
# end of a long PATH.
h_plan "$T/true0.json" '["true"]'
jq -c '.envp = ["PATH=" + ([range(5000) | "/nonexistent/d\(.)"] | join(":")) + ":/usr/bin",
	"HOME=/tmp"]' "$T/true0.json" >"$T/race.json"
h_plan "$T/sleep.json" '["/bin/sleep", "0.3"]'
# The control's sandbox outlives the polling for its "spawned" on a loaded machine (the client's
# exit ends it: dieWithRequester).
h_plan "$T/sleep-long.json" '["/bin/sleep", "30"]'

# 1. Control: this plan gets the light spawn (its init is cordon-init, from the memfd).
h_bg ctl --user $A "$HC" --socket "$T/ld.sock" $H_STD --send "$T/sleep-long.json" --wait-exit
h_wait_for "$T/ctl.out" 'select(.type == "spawned")' 50
ctl_pid=$(h_lines "$T/ctl.out" spawned | jq -r .pid)
ctl_exe=$(readlink "/proc/$ctl_pid/exe" 2>/dev/null)
h_stop $H_LAST
check "control: a sandbox of these plans has a light init (exe: $ctl_exe)" \
	grep -q 'memfd:cordon-sandbox-init' <<<"$ctl_exe"

# 2-3. The race: 20 spawns, each raced for from its set-up child on.
hc --user $A $H_STD --send "$T/race.json" --await-exit --repeat 20 --race-init 500 \
	--quiet hello,spawned,exit,live >"$T/race.out" 2>>"$T/client.log"
raced=$(h_count "$T/race.out" race-init)
seized=$(h_lines "$T/race.out" race-init | jq -r 'select(.ptrace == "ok") | .pid' | wc -l)
mem=$(h_lines "$T/race.out" race-init | jq -r 'select(.mem == "ok") | .pid' | wc -l)
diag "race: $(h_lines "$T/race.out" race-init | jq -r '"\(.ptrace)/\(.mem)"' | sort | uniq -c | tr '\n' ' ')"
check "the requester never seizes an init while it sets up (PTRACE_SEIZE won $seized of $raced races)" \
	test "$raced" -ge 15 -a "$seized" = 0
check "…nor opens its /proc/PID/mem (won $mem of $raced)" test "$raced" -ge 15 -a "$mem" = 0

# 4-5. After "spawned", in a loop while the command runs.
hc --user $A $H_STD --send "$T/sleep.json" --await-exit --repeat 5 --probe-init 250 \
	--quiet hello,spawned,exit,live >"$T/probe.out" 2>>"$T/client.log"
probed=$(h_count "$T/probe.out" probe-init)
diag "after spawned: $(h_lines "$T/probe.out" probe-init | jq -r '"\(.ptrace)/\(.mem)"' | sort | uniq -c | tr '\n' ' ')"
check "after \"spawned\": no PTRACE_SEIZE of the init ($probed probed)" \
	test "$probed" = 5 -a -z "$(h_lines "$T/probe.out" probe-init | jq -r 'select(.ptrace == "ok")')"
check "…nor /proc/PID/mem" \
	test "$probed" = 5 -a -z "$(h_lines "$T/probe.out" probe-init | jq -r 'select(.mem == "ok")')"

# The per-user ceiling: one live sandbox.
ld_stop
h_write_floor '{"perUser": {"maxSandboxes": 1}}'
ld_start
hc --user $A >"$T/hello.out" 2>>"$T/client.log"
check "control: the floor says perUser.maxSandboxes 1" \
	test "$(h_lines "$T/hello.out" hello | jq -r .floor.perUser.maxSandboxes)" = 1

# 7. An init held at its exit (its exit reported, itself not reaped), then a spawn at once.
hc --user $A $H_STD --send "$T/race.json" --await-exit --repeat 10 --race-init 500 \
	--race-hold --read-timeout 3000 --quiet hello,exit,live >"$T/hold.out" 2>>"$T/client.log"
held=$(h_lines "$T/hold.out" race-init | jq -r 'select(.held) | .pid' | wc -l)
diag "held inits: $held; spawns: $(h_reply "$T/hold.out" | sort | uniq -c | tr '\n' ' ')"
check "a held init still counts: never two sandboxes live at once (at most $(h_summary "$T/hold.out" maxLive), $held held)" \
	test "$(h_summary "$T/hold.out" maxLive)" -le 1

# 8. Spawn again the moment the exit came, 100 times.
hc --user $A $H_STD --send "$T/true0.json" --await-exit --repeat 100 \
	--quiet hello,spawned,exit,live >"$T/exitrace.out" 2>>"$T/client.log"
diag "exit race: $(h_reply "$T/exitrace.out" | sort | uniq -c | tr '\n' ' ')"
check "spawning again on each exit: every spawn runs, the previous init at most going away (at most $(h_summary "$T/exitrace.out" maxLive) live, $(h_summary "$T/exitrace.out" exits) exits)" \
	test "$(h_summary "$T/exitrace.out" maxLive)" -le 2 -a "$(h_summary "$T/exitrace.out" exits)" -ge 50

# 9. Kill, then spawn again the moment the kill is answered, 15 times (and once more after a
# pause, which the killed one's teardown may need).
h_plan "$T/long.json" '["/bin/sleep", "10"]'
hc --user $A $H_STD --send "$T/long.json" --msg '{"type": "kill", "sandbox": "{LAST}", "signal": 9}' \
	--send "$T/long.json" --pause 150 --repeat 15 --quiet hello,exit,live \
	>"$T/killrace.out" 2>>"$T/client.log"
diag "kill race: $(h_reply "$T/killrace.out" | sort | uniq -c | tr '\n' ' ')"
check "spawning again on each kill's answer: never two live at once (at most $(h_summary "$T/killrace.out" maxLive))" \
	test "$(h_summary "$T/killrace.out" maxLive)" -le 1 -a "$(h_reply "$T/killrace.out" | grep -c spawned)" -ge 2

# 10. The same from two connections at once (each counts its own: the sum must stay <= 1 too).
for n in 1 2; do
	h_bg two$n --user $A "$HC" --socket "$T/ld.sock" $H_STD --send "$T/race.json" --await-exit \
		--repeat 20 --race-init 200 --race-hold --read-timeout 3000 --quiet hello,exit,live
done
wait $H_BG_PIDS 2>/dev/null
two=0
for n in 1 2; do
	two=$((two + $(h_summary "$T/two$n.out" maxLive)))
done
diag "two connections: $(cat "$T/two1.out" "$T/two2.out" | h_reply /dev/stdin | sort | uniq -c | tr '\n' ' ')"
check "two connections of one user, holding inits: at most one sandbox each ($two)" test "$two" -le 2

check "launcherd is still running" ld_alive
tap_done
