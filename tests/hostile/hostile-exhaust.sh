#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# One user at its ceilings must not make another user's hello or spawn fail: launcherd's fds,
# and the processes it may have, are shared by every user. launcherd is started as an
# administrator's shell would start it, with RLIMIT_NOFILE 1024:1048576 (it must raise the
# soft limit to the hard one itself). User A then holds as many sandboxes as it is allowed,
# from four connections; user B must still be served. Then A keeps messages of 64 fds each in
# flight, pipelined from four connections: B must be served every time. And
# the ceilings that keep one user from taking every process exist by default: the built-in
# floor and the shipped one set a per-user pids ceiling. (Memory ceilings are the host's size:
# an administrator sets perUser.memoryMaxBytes; cgroup memory limits reserve nothing.)
. "${top_srcdir:-.}/tests/hostile/hostile-lib.sh"
h_require
command -v prlimit >/dev/null || skip_all "prlimit missing"
plan 9

A=$TEST_USER1
V=$TEST_USER2

# launcherd under a by-hand shell's limits, soft 1024 (the hard one: 1048576 on most hosts, or
# ours when lower and we cannot raise it): a wrapper that execs it, so $LD_PID is launcherd.
hard=$(prlimit --nofile -o HARD --noheadings --raw)
[ "$hard" = unlimited ] && hard=1048576
[ "$hard" -gt 1048576 ] && hard=1048576
[ "$hard" -gt 4096 ] || skip_all "RLIMIT_NOFILE hard limit $hard: too low to show anything"
prlimit --nofile=1024:1048576 true 2>/dev/null && hard=1048576
REAL_LAUNCHERD=$LAUNCHERD
cat >"$T/launcherd-nofile" <<EOF
#!/bin/sh
exec prlimit --nofile=1024:$hard -- "$REAL_LAUNCHERD" "\$@"
EOF
chmod 0755 "$T/launcherd-nofile"
LAUNCHERD=$T/launcherd-nofile
ld_start
LAUNCHERD=$REAL_LAUNCHERD

nofile=$(awk '/^Max open files/ {print $4 " " $5}' "/proc/$LD_PID/limits")
check "launcherd started with RLIMIT_NOFILE 1024:$hard raises its soft limit to the hard one ($nofile)" \
	test "$nofile" = "$hard $hard"

# Small sandboxes that wait, with cgroup limits (accepted under any per-user ceiling), that
# outlive a connection that breaks.
h_plan "$T/wait.json" '["/bin/sleep", "60"]' \
	', "cgroup": {"pidsMax": 8, "memoryMaxBytes": 33554432}'
jq -c '.dieWithRequester = false' "$T/wait.json" >"$T/wait2.json"
# 2-5. A holds as many as it may (256 by default), from four connections.
for n in 1 2 3 4; do
	h_bg fill$n --user $A "$HC" --socket "$T/ld.sock" $H_STD --send "$T/wait2.json" --repeat 64 \
		--read-timeout 3000 --hold 60 --quiet live
done
fill_pids=$H_BG_PIDS
# Until all four have had their 65 answers (the hello's, then each spawn's) or lost their
# connection, 30 s at most.
for _ in $(seq 1 300); do
	finished=0
	for n in 1 2 3 4; do
		{ [ "$(h_reply "$T/fill$n.out" | wc -l)" -ge 65 ] || [ -n "$(h_lines "$T/fill$n.out" closed)" ]; } &&
			finished=$((finished + 1))
	done
	[ $finished = 4 ] && break
	sleep 0.1
done
diag "A's spawns: $(cat "$T"/fill?.out | h_reply /dev/stdin | sort | uniq -c | tr '\n' ' ')" \
	"$(cat "$T"/fill?.out | h_lines /dev/stdin closed | sort | uniq -c | tr '\n' ' ');" \
	"launcherd: $(ld_fd_count) fds, $(ps -o pid= --ppid "$LD_PID" | wc -l) children"
check "user A up to its ceiling: no spawn failed for want of launcherd's fds, no connection lost ($(cat "$T"/fill?.out | h_reply /dev/stdin | grep -c 'error internal') internal errors)" \
	test -z "$(cat "$T"/fill?.out | h_reply /dev/stdin | grep 'error internal')" \
	-a -z "$(cat "$T"/fill?.out | h_lines /dev/stdin closed)"
check_served "…and user B is served meanwhile" $V 3000
check "…without an internal error ($(h_reply "$T/served.out" | tr '\n' ' '))" \
	test -z "$(h_reply "$T/served.out" | grep 'error internal')"
hc --user $V --extra-conns 8 --read-timeout 3000 >"$T/conns.out" 2>>"$T/client.log"
check "…and can open more connections ($(h_lines "$T/conns.out" conn | jq -r .result | sort | uniq -c | tr '\n' ' '))" \
	test "$(h_lines "$T/conns.out" conn | jq -c 'select(.result == "hello")' | wc -l)" = 8
h_stop $fill_pids
H_BG_PIDS=

# 6-7. Fds in flight: A's four connections pipeline spawn requests carrying 64 fds each (a plan
# refused at once: only the fds cost anything), while B spawns ten times over. (A fresh
# launcherd, started the same way.)
ld_stop
LAUNCHERD=$T/launcherd-nofile
ld_start
LAUNCHERD=$REAL_LAUNCHERD
jq -c '.bogus = 1' "$T/wait.json" >"$T/refused.json"
# shellcheck disable=SC2016
for n in 1 2 3 4; do
	# Connection after connection (one that breaks is made again), until $T/fds-stop, 20 s
	# at most: each client ends by itself within 2 s, and the loop once it sees the file.
	h_bg fds$n --user $A bash -c 'end=$((SECONDS + 20))
		while [ $SECONDS -lt $end ] && [ ! -e "$4" ]; do
			"$0" --socket "$1" $2 --fd-count 64 --keep-fds --send "$3" --repeat 100000 \
				--pipeline --send-timeout 1000 --no-read --hold 1
		done' "$HC" "$T/ld.sock" "$H_STD" "$T/refused.json" "$T/fds-stop"
done
fds_pids=$H_BG_PIDS
sleep 0.5
served=0
for _ in $(seq 1 10); do
	h_served $V 3000 && served=$((served + 1))
done
diag "B's last try: $(h_reply "$T/served.out" | tr '\n' ' ')$(h_lines "$T/served.out" closed)"
check "B is served every time while A keeps 64-fd messages in flight ($served of 10)" test $served = 10
touch "$T/fds-stop"
ld_reap_bg $fds_pids
check "launcherd is still running" ld_alive

# 8-9. The default ceilings: the built-in floor (no floor file) and the shipped one.
ld_stop
rm -f "$T/floor.json"
ld_start
hc --user $A >"$T/builtin.out" 2>>"$T/client.log"
per_user=$(h_lines "$T/builtin.out" hello | jq -c .floor.perUser)
check "the built-in floor has a per-user pids ceiling ($per_user)" \
	test "$(jq -r '.pidsMax > 0' <<<"$per_user")" = true
ld_stop
cp "$S/etc/launcherd.json" "$T/floor.json"
chmod 0644 "$T/floor.json"
ld_start
hc --user $A >"$T/shipped.out" 2>>"$T/client.log"
per_user=$(h_lines "$T/shipped.out" hello | jq -c .floor.perUser)
check "the shipped floor (etc/launcherd.json) has a per-user pids ceiling ($per_user)" \
	test "$(jq -r '.pidsMax > 0' <<<"$per_user")" = true
tap_done
