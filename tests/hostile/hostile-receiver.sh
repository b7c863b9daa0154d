#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Each connection's receiver (launcherd's child, named cordon-receiver) must be its requester's
# alone to stop: a process running as nobody (65534), or as another user, cannot kill another
# user's receiver, and that user's connection keeps working; the requester killing its own
# receiver ends that connection only. A receiver holds no capability and cannot be traced or
# read by anyone but root.
. "${top_srcdir:-.}/tests/hostile/hostile-lib.sh"
h_require
ld_start
plan 10

A=$TEST_USER1
B=$TEST_USER2
uid_a=$(id -u $A)
KILL='{"type": "kill", "sandbox": "sb-0000000000000000"}'

# conn NAME USER: a connection that says hello, waits 3 s, then asks once more.
conn() {
	h_bg "$1" --user "$2" "$HC" --socket "$T/ld.sock" --pause 3000 --msg "$KILL" --read-timeout 3000
}
# answered NAME: its request after the pause was answered (not-found), the connection open.
answered() { [ "$(h_reply "$T/$1.out" | tail -1)" = "error not-found sandbox" ]; }

# 1-4. Nobody kills every receiver it can see; A's connection goes on.
conn a1 $A
h_wait_for "$T/a1.out" 'select(.type == "hello")' 50
rcv=$(ld_receivers)
diag "receivers: $(for r in $rcv; do echo "$r:$(awk '/^Uid:/ {print $2}' /proc/$r/status)"; done | tr '\n' ' ')"
killed=
for r in $rcv; do
	setpriv --reuid=65534 --regid=65534 --clear-groups -- kill -9 "$r" 2>/dev/null && killed="$killed $r"
done
check "nobody (65534) cannot kill a receiver (killed:${killed:- none})" test -z "$killed" -a -n "$rcv"
killed=
for r in $rcv; do
	as_user $B kill -9 "$r" 2>/dev/null && killed="$killed $r"
done
check "another user cannot kill it either (killed:${killed:- none})" test -z "$killed"
wait $H_LAST
check "…and the connection keeps working ($(h_reply "$T/a1.out" | tr '\n' ' ')$(h_lines "$T/a1.out" closed))" \
	answered a1

# 4-6. What a receiver is.
conn a2 $A
h_wait_for "$T/a2.out" 'select(.type == "hello")' 50
r=$(ld_receivers | head -1)
caps=$(awk '/^Cap(Prm|Eff|Bnd|Amb):/ {print $2}' "/proc/$r/status" 2>/dev/null | sort -u | tr '\n' ' ')
check "a receiver holds no capability ($caps)" test "$caps" = "0000000000000000 "
as_user $A head -c 1 "/proc/$r/environ" >/dev/null 2>&1
check "its requester cannot read its memory (/proc/PID/environ)" test $? != 0
check "it runs as its requester (uid $(awk '/^Uid:/ {print $2}' "/proc/$r/status" 2>/dev/null), requester $uid_a)" \
	test "$(awk '/^Uid:/ {print $2}' "/proc/$r/status" 2>/dev/null)" = "$uid_a"
wait $H_LAST

# 7-10. The requester kills its own receiver: that connection ends, the others do not.
conn a3 $A
h_wait_for "$T/a3.out" 'select(.type == "hello")' 50
own=$(ld_receivers "$uid_a")
conn a4 $A
conn b1 $B
h_wait_for "$T/a4.out" 'select(.type == "hello")' 50
h_wait_for "$T/b1.out" 'select(.type == "hello")' 50
ok_kill=
[ -n "$own" ] && as_user $A kill -9 $own 2>/dev/null && ok_kill=1
check "the requester can stop its own receiver (${own:-none found as uid $uid_a})" test -n "$ok_kill"
wait $H_BG_PIDS 2>/dev/null
check "…which ends that connection ($(h_reply "$T/a3.out" | tr '\n' ' ')$(h_lines "$T/a3.out" closed))" \
	test -n "$(h_lines "$T/a3.out" closed)"
check "…not its other connection ($(h_reply "$T/a4.out" | tr '\n' ' '))" answered a4
check "…nor another user's ($(h_reply "$T/b1.out" | tr '\n' ' '))" answered b1
tap_done
