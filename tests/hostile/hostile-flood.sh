#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A requester who floods launcherd must cost it a bounded amount and starve no one: 40,000
# requests from a client that never reads its replies leave launcherd's resident set within a
# few MB of where it was (it stops reading that connection while its replies wait), and another
# user is served meanwhile; a slow reader gets every reply, in time, and starves no one either;
# a storm of connections, up to and past the per-user cap of 64, neither starves another user
# nor leaves launcherd with more fds or unreaped receivers than it had. Attacker: cordon-test1;
# victim: cordon-test2.
. "${top_srcdir:-.}/tests/hostile/hostile-lib.sh"
h_require
# Under AddressSanitizer freed memory waits in a quarantine (256 MB) before it is reused, so
# launcherd's resident set grows with every request answered, bounded queue or not: without it,
# the same measure holds in that build too, with room for the shadow memory and the allocator's
# caches (≈3.3 MB there, ≈0.1 MB without; an unbounded queue grows by 50 MB).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
MB=1024
grep -qa __asan_init "$LAUNCHERD" && MB=2048
ld_start
plan 12

A=$TEST_USER1
V=$TEST_USER2
KILL='{"type": "kill", "sandbox": "sb-0000000000000000"}'
# Warm up (the victim's first spawn), then launcherd's size and fds at rest.
h_served $V 5000 >/dev/null
sleep 0.3
rss0=$(ld_rss_kb)
fds0=$(ld_fd_count)

# 1-3. A slow reader: 12,000 requests pipelined, its replies read one per ms (first: the flood
# below leaves a heap that would hide what this one costs). Then a smaller one, to the end:
# every request answered, none lost to the back-pressure.
h_bg slow --user $A "$HC" --socket "$T/ld.sock" --msg "$KILL" --repeat 12000 --pipeline \
	--send-timeout 2000 --read-delay 1 --read-timeout 10000 --quiet error
slow_pid=$H_LAST
sleep 1.5
check_served "a slow reader draining its replies: another user is served meanwhile" $V 2000
rss3=$(ld_rss_kb)
h_stop $slow_pid
check "…and launcherd's VmRSS stays within $((4 * MB / 1024)) MB of the start meanwhile (+$((rss3 - rss0)) kB)" \
	test $((rss3 - rss0)) -lt $((4 * MB))
hc --user $A --msg "$KILL" --repeat 1000 --pipeline --send-timeout 2000 --read-delay 1 \
	--read-timeout 10000 --quiet error >"$T/slow2.out" 2>>"$T/client.log"
sent=$(h_summary "$T/slow2.out" sent)
replies=$(h_summary "$T/slow2.out" replies)
check "a slow reader gets a reply to every request it sent ($replies of $sent, closed: $(h_summary "$T/slow2.out" closed))" \
	test -n "$sent" -a "$sent" = "$replies" -a "$(h_summary "$T/slow2.out" closed)" = false

# 4-6. 40,000 requests, never a reply read. Sending stops when launcherd stops taking them.
h_bg flood --user $A "$HC" --socket "$T/ld.sock" --msg "$KILL" --repeat 40000 --no-read \
	--send-timeout 3000 --hold 30
flood_pid=$H_LAST
h_wait_for "$T/flood.out" 'select(.type == "sent" or .type == "send-blocked" or .type == "send-error")' 400
sleep 0.5
rss1=$(ld_rss_kb)
diag "flood: $(h_lines "$T/flood.out" sent)$(h_lines "$T/flood.out" send-blocked); launcherd VmRSS ${rss0} kB -> ${rss1} kB"
check "40,000 requests never read: launcherd's VmRSS grows by less than $((4 * MB / 1024)) MB (+$((rss1 - rss0)) kB)" \
	test $((rss1 - rss0)) -lt $((4 * MB))
check_served "…and another user is served meanwhile" $V 2000
# The same, once more, from a second connection of the same user: the bound is per connection,
# and this is the point where an unbounded queue would have doubled.
h_bg flood2 --user $A "$HC" --socket "$T/ld.sock" --msg "$KILL" --repeat 40000 --no-read \
	--send-timeout 3000 --hold 30
flood2_pid=$H_LAST
h_wait_for "$T/flood2.out" 'select(.type == "sent" or .type == "send-blocked" or .type == "send-error")' 400
sleep 0.5
rss2=$(ld_rss_kb)
check "a second flooding connection: still less than $((8 * MB / 1024)) MB over the start (+$((rss2 - rss0)) kB)" \
	test $((rss2 - rss0)) -lt $((8 * MB))
h_stop $flood_pid $flood2_pid

# 7-9. Past the per-user cap: 70 connections held open.
h_bg conns --user $A "$HC" --socket "$T/ld.sock" --extra-conns 70 --read-timeout 3000 --hold 20
conns_pid=$H_LAST
h_wait_for "$T/conns.out" 'select(.type == "conn" and .index == 69)' 300
results=$(h_lines "$T/conns.out" conn | jq -r .result | sort | uniq -c | tr '\n' ' ')
diag "70 connections: $results"
check "70 connections of one user: 64 served, the rest refused at once ($results)" \
	test "$(h_lines "$T/conns.out" conn | jq -c 'select(.result == "hello")' | wc -l)" = 64 \
	-a -z "$(h_lines "$T/conns.out" conn | jq -c 'select(.result == "timeout")')"
check_served "…and another user is still served" $V 2000
# The cap held (64 connections): a storm of connect + hello + close on top.
hc --user $A --storm 300 --read-timeout 3000 >"$T/storm.out" 2>>"$T/client.log"
diag "storm: $(h_lines "$T/storm.out" storm)"
check_served "a storm of 300 more connections at the cap: another user is served after it" $V 2000
h_stop $conns_pid

# 10-11. Afterwards launcherd holds no more than it did: fds, receivers.
for _ in $(seq 1 50); do
	[ "$(ld_fd_count)" -le $((fds0 + 2)) ] && [ -z "$(ld_receivers)" ] && break
	sleep 0.1
done
check "no fds left behind ($fds0 at rest before, $(ld_fd_count) after)" \
	test "$(ld_fd_count)" -le $((fds0 + 2))
zombies=$(ps -o stat= --ppid "$LD_PID" 2>/dev/null | grep -c '^Z')
check "no receiver left behind, running ($(ld_receivers | wc -l)) or unreaped ($zombies)" \
	test -z "$(ld_receivers)" -a "$zombies" = 0

check "launcherd is still running" ld_alive
tap_done
