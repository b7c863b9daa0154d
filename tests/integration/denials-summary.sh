#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The end of `cordon run` and `cordon exec` (docs/DENIALS.md, "After a failed command"): when
# the command failed and something in its sandbox was refused, one summary on stderr naming
# each refusal and the policy rule that decides it (--json: a "denials" array); nothing when
# the command succeeded or nothing was refused. Through a privileged launcherd with the kernel's
# audit turned on for the test (restored at exit), as tests/integration/denials.sh does.
. "${top_srcdir:-.}/tests/integration/denials-lib.sh"
jqe() { jq -e "$@" >/dev/null; }
# summary FILE: the summary's lines in FILE (the header and what follows it, indented)
summary() { sed -n '/^cordon: [0-9]* refusals\{0,1\} in the sandbox/,$p' "$1" | grep -E '^(cordon: [0-9]|  )'; }
plan 20

cli root run -T -- sh -c 'unshare -U true; exit 3' >"$T/floor.out" 2>"$T/floor.err"
rc=$?
check "run, a failed command that hit the floor: its own exit status ($rc)" test "$rc" = 3
check "  one summary on stderr naming the system call and where it is refused ($(show "$T/floor.err"))" \
	test "$(summary "$T/floor.err")" = "cordon: 1 refusal in the sandbox (policy rule in brackets; 'cordon policy explain --path P' for a path):
  unshare CLONE_NEWUSER (syscalls.profile default)"
check "  nothing on stdout" test ! -s "$T/floor.out"

cli root run -T -- sh -c 'unshare -U true; unshare -U true; exit 1' >/dev/null 2>"$T/twice.err"
twice() {
	[ "$(summary "$1" | sed 1d)" = "  unshare CLONE_NEWUSER (syscalls.profile default) (2 times)" ] &&
		summary "$1" | head -n1 | grep -q '^cordon: 2 refusals'
}
check "the same refusal twice: one line, counted ($(show "$T/twice.err"))" twice "$T/twice.err"

cli root run -T --net proxy -- python3 -c 'import socket; socket.create_connection(("127.0.0.1", 9))' \
	>/dev/null 2>"$T/net.err"
check "a TCP connect Landlock refuses: the address and network.mode ($(summary "$T/net.err" | tail -n1))" \
	test "$(summary "$T/net.err" | sed 1d)" = "  connect-tcp 127.0.0.1:9 (network.mode proxy)"

cli root run -T -- sh -c 'echo x >/proc/x; exit 2' >/dev/null 2>"$T/fs.err"
check "a file refused by Landlock: the right, the path and policy explain's answer ($(summary "$T/fs.err" | tail -n1))" \
	test "$(summary "$T/fs.err" | sed 1d)" = "  make-reg /proc (the sandbox's own /proc)"

cli root run -T -- sh -c 'unshare -U true; exit 0' >/dev/null 2>"$T/ok.err"
check "a command that succeeds despite a refusal: no summary ($(show "$T/ok.err"))" \
	sh -c "! grep -q refusal '$T/ok.err'"
cli root run -T -- sh -c 'exit 5' >/dev/null 2>"$T/none.err"
rc=$?
check "a failed command with no refusal of its own: exit 5 ($rc), no summary (others' denials are in the stream) ($(show "$T/none.err"))" \
	sh -c "[ $rc = 5 ] && [ ! -s '$T/none.err' ]"

cli root exec -- sh -c 'echo out; unshare -U true; exit 3' >"$T/exec.out" 2>"$T/exec.err"
rc=$?
check "exec: exit 3 ($rc), the output, then the summary ($(show "$T/exec.err"))" \
	sh -c "[ $rc = 3 ] && [ \"\$(cat '$T/exec.out')\" = out ] && head -n1 '$T/exec.err' | grep -q '^unshare: ' && tail -n1 '$T/exec.err' | grep -q '^  unshare CLONE_NEWUSER (syscalls.profile default)'"
cli root exec --json -- sh -c 'unshare -U true; exit 3' >"$T/exec.json" 2>"$T/exec-json.err"
check "exec --json: the result's denials, each with its rule ($(jq -c '.denials' "$T/exec.json" | cut -c1-200))" \
	jqe '.exitCode == 3 and (.denials | length) == 1 and .denials[0].syscall == "unshare" and .denials[0].rule == "syscalls.profile default" and .denials[0].processId == .processId' "$T/exec.json"
check "  and no summary on stderr ($(show "$T/exec-json.err"))" sh -c "! grep -q refusal '$T/exec-json.err'"
cli root run -T --json -- sh -c 'unshare -U true; exit 4' >"$T/run.json" 2>/dev/null
check "run --json: the exit's denials ($(jq -c '[.exitCode, (.denials | length)]' "$T/run.json"))" \
	jqe '.exitCode == 4 and (.denials | length) == 1 and .denials[0].kind == "syscall"' "$T/run.json"
cli root exec --json -- sh -c 'unshare -U true; true' >"$T/exec-ok.json" 2>/dev/null
check "exec --json of a command that succeeds: no denials member" \
	jqe '.exitCode == 0 and (has("denials") | not)' "$T/exec-ok.json"

# An ordinary user: the summary of its own sandbox, through its own controller.
cli $TEST_USER1 run -T -- sh -c 'unshare -U true; exit 3' >/dev/null 2>"$T/u1.err"
rc=$?
check "$TEST_USER1: exit 3 ($rc) and its own summary ($(show "$T/u1.err"))" \
	test "$rc/$(summary "$T/u1.err" | wc -l)" = 3/2
t0=$(date +%s%N)
cli root run -T -- sh -c 'exit 6' >/dev/null 2>&1
t1=$(date +%s%N)
check "the wait for late records is bounded ($(( (t1 - t0) / 1000000 )) ms for a failed run)" \
	test $(( (t1 - t0) / 1000000 )) -lt 3000


# cordon policy suggest ID: the smallest change that would have allowed each refusal; never
# applied. The processes by what they were refused (the recent events say).
cli root events --denials >"$T/ev.json" 2>&1
pid_of() { jq -r "select($1) | .processId" "$T/ev.json" | head -n1; }
p_floor=$(pid_of '.syscall == "unshare"')
p_net=$(pid_of '.kind == "net"')
p_fs=$(pid_of '.kind == "fs"')
echo '{"version": 1, "network": {"mode": "proxy"}}' >"$T/proxy.json"
chmod 0644 "$T/proxy.json"
cli root policy suggest --json "$p_net" "$T/proxy.json" >"$T/sug-net.json" 2>&1
check "suggest $p_net (a TCP connect under proxy): network.mode host with the port ($(jq -c .patch "$T/sug-net.json"))" \
	jqe '.patch == {"network": {"mode": "host", "allowPorts": [9]}} and (.items | length) == 1' "$T/sug-net.json"
cli root policy suggest "$p_floor" >"$T/sug-floor.out" 2>&1
rc=$?
# (The default profile refuses unshare before the floor does: the denial says so, filter
# "policy", and the suggestion lifts the profile's refusal, saying what the floor still refuses.)
check "suggest $p_floor (unshare, the profile's refusal): syscalls.allow, the floor's part said ($(show "$T/sug-floor.out"))" \
	sh -c "[ $rc = 0 ] && grep -q '^unshare CLONE_NEWUSER: syscalls.allow += \"unshare\".*floor still refuses' '$T/sug-floor.out'"
cli root policy suggest --json "$p_fs" >"$T/sug-fs.json" 2>&1
check "suggest $p_fs (/proc): nothing, the sandbox's own ($(jq -c .items "$T/sug-fs.json"))" \
	jqe '.patch == {} and (.items[0].none | test("own /proc"))' "$T/sug-fs.json"
cli root policy suggest p999 >"$T/sug-none.out" 2>&1
check "suggest of a process without refusals says so ($(show "$T/sug-none.out"))" \
	grep -q "^p999: no refusal" "$T/sug-none.out"
cli $TEST_USER1 policy suggest --json "$p_net" >"$T/sug-u1.json" 2>&1
check "another user's suggest never sees root's refusals ($(jq -c .items "$T/sug-u1.json" 2>/dev/null | cut -c1-100))" \
	jqe '.items == [] or all(.items[]; .what != "connect-tcp 127.0.0.1:9")' "$T/sug-u1.json"

[ "$_tap_failed" = 0 ] || tail -n 20 "$T/launcherd.log" | sed 's/^/# /'
tap_done
