#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Network "none" (and "loopback"): a network namespace of the sandbox's own, only lo, TCP on it
# working; a namespace goes back to the pool when its sandbox ended clean, for the same user's
# next sandbox only, never while another sandbox is in it, never with a socket left in it.
# Network "unix": no socket family but AF_UNIX (the seccomp floor's variant for "unix"), and
# where launcherd lets one user's "unix" sandboxes share one empty network namespace
# (privileged mode, Landlock ABI >= 6), they still cannot talk to each other, to another
# user's sandboxes or to the host. Positive controls show that each probe can succeed.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
ld_require_root
ld_start
plan 26

abi=$("$LP" --socket "$T/ld.sock" --hello 2>&1 | jq -r .landlockAbi 2>/dev/null)
host_ns=$(readlink /proc/self/ns/net)

# Positive controls: the probe finds sockets where nothing forbids them.
"$HELPERS/probe" sockets >"$T/host-sockets.out" 2>&1
check "control: on the host the socket probe succeeds" test $? = 0
make_plan "$T/lo.json" '["/probe/probe", "sockets"]'
jq '.network = "loopback"' "$T/lo.json" >"$T/lo2.json"
ld_run $STD_FDS "$T/lo2.json" >"$T/lo.out" 2>&1
check "control: in a \"loopback\" sandbox AF_INET is allowed" test $? = 0

# lo's gso size is raised to the kernel's maximum (launcherd-net.c): one segment of up to 512 KiB
# per trip through TCP instead of 64 KiB (kernels before 6.3 report no IPv4 size: then IPv6's).
jq '.argv = ["/probe/probe", "lo-gso"]' "$T/lo2.json" >"$T/gso.json"
for m in privileged user; do
	if [ $m = user ]; then ld_run --user-mode $STD_FDS "$T/gso.json" >"$T/gso.out" 2>&1
	else ld_run $STD_FDS "$T/gso.json" >"$T/gso.out" 2>&1; fi
	check "$m mode: the sandbox's lo takes 512 KiB segments ($(cat "$T/gso.out"))" \
		grep -qE '^gso 524280 ipv4 (524280|0)$' "$T/gso.out"
done

# Every mode: families the network namespace does not scope (vsock reaches the host's agents
# from any netns) or little-used ones (TIPC, AF_ALG, CAN, AF_KEY, RDS) are refused.
if "$HELPERS/probe" sockets-exotic >"$T/host-exotic.out" 2>&1; then
	ok "control: on the host the exotic-socket probe succeeds ($(grep -c SUCCEEDED "$T/host-exotic.out") families)"
	jq '.argv = ["/probe/probe", "sockets-exotic"]' "$T/lo2.json" >"$T/lo3.json"
	ld_run $STD_FDS "$T/lo3.json" >"$T/lo3.out" 2>&1
	rc=$?
	if [ "$rc" = 1 ] && [ "$(json_field exitCode)" = 1 ]; then
		ok "loopback: no vsock, TIPC, AF_ALG, CAN, AF_KEY or RDS socket"
	else
		not_ok "loopback: an exotic socket family was allowed (rc $rc): $(grep SUCCEEDED "$T/lo3.out")"
	fi
else
	ok "# SKIP this kernel offers none of the exotic families"
	ok "# SKIP (idem)"
fi
probe_refused "unix, root: no socket family but AF_UNIX (TCP, UDP, ICMP, netlink, packet, vsock, …)" -- sockets
probe_refused "unix, user $TEST_USER1: no socket family but AF_UNIX" --user $TEST_USER1 -- sockets
probe_refused "unix, user mode: no socket family but AF_UNIX" --user-mode --user $TEST_USER1 -- sockets

# "none": a namespace of its own with a working loopback (no Landlock TCP rules in its plan).
make_plan "$T/none.json" '["/probe/probe", "netns"]'
jq '.network = "none" | del(.landlock.net)' "$T/none.json" >"$T/none-ns.json"
jq '.argv = ["/probe/probe", "sockets"]' "$T/none-ns.json" >"$T/none-sock.json"
ld_run --user $TEST_USER1 $STD_FDS "$T/none-sock.json" >"$T/none-sock.out" 2>&1
check "none: AF_INET and AF_INET6 sockets on the sandbox's own lo" test $? = 0
tcp_echo='import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.sendall(b"ping"); print(a.recv(4).decode()); c.close(); a.close()'
jq --arg py "$tcp_echo" '.argv = ["/usr/bin/python3", "-c", $py]' "$T/none-ns.json" >"$T/none-tcp.json"
ld_run --user $TEST_USER1 $STD_FDS "$T/none-tcp.json" >"$T/none-tcp.out" 2>&1
check "none: a TCP server and its client talk over lo ($(head -c 60 "$T/none-tcp.out"))" grep -qx ping "$T/none-tcp.out"
nsrun() { as_user "$1" "$LP" --socket "$T/ld.sock" $STD_FDS "$2" 2>>"$T/client.log"; }
n1=$(nsrun $TEST_USER1 "$T/none-ns.json"); sleep 0.3
n2=$(nsrun $TEST_USER1 "$T/none-ns.json"); sleep 0.3
n3=$(nsrun $TEST_USER2 "$T/none-ns.json"); sleep 0.3
diag "none: $TEST_USER1 $n1 then $n2, $TEST_USER2 $n3 (host $host_ns)"
check "none: never the host's namespace" test -n "$n1" -a "$n1" != "$host_ns" -a -n "$n3" -a "$n3" != "$host_ns"
check "none: a clean namespace is reused for the same user's next sandbox" test "$n1" = "$n2"
check "none: never for another user's" test "$n3" != "$n1"
# Two at once: never the same one.
jq '.argv = ["/bin/sh", "-c", "/probe/probe netns; sleep 1"]' "$T/none-ns.json" >"$T/none-slow.json"
nsrun $TEST_USER1 "$T/none-slow.json" >"$T/par1.out" &
p1=$!
nsrun $TEST_USER1 "$T/none-slow.json" >"$T/par2.out"
wait $p1
check "none: two sandboxes running at once are in different ones ($(cat "$T/par1.out") $(cat "$T/par2.out"))" \
	test -s "$T/par1.out" -a "$(cat "$T/par1.out")" != "$(cat "$T/par2.out")"
# A sandbox that leaves a TCP TIME_WAIT behind: its namespace is not reused.
tw='import socket, os; s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.close(); a.recv(1); a.close(); print(os.readlink("/proc/self/ns/net"))'
jq --arg py "$tw" '.argv = ["/usr/bin/python3", "-c", $py]' "$T/none-ns.json" >"$T/none-tw.json"
sleep 0.3
n4=$(nsrun $TEST_USER1 "$T/none-tw.json"); sleep 0.3
n5=$(nsrun $TEST_USER1 "$T/none-ns.json")
diag "none: TIME_WAIT left in $n4, next $n5"
check "none: a namespace with a TIME_WAIT left in it is not reused" test -n "$n4" -a -n "$n5" -a "$n4" != "$n5"
# A socket passed out of the sandbox keeps its namespace from being reused (a probe hands one
# through a Unix socket of the host's; the holder keeps it while the next sandbox runs).
holder="$T/work/holder.sock"
python3 - "$holder" >"$T/holder.out" 2>&1 <<'PY' &
import array, socket, sys, time
srv = socket.socket(socket.AF_UNIX)
srv.bind(sys.argv[1]); srv.listen()
import os; os.chmod(sys.argv[1], 0o777)
c, _ = srv.accept()
msg, anc, _, _ = c.recvmsg(16, socket.CMSG_SPACE(4))
fds = array.array("i"); fds.frombytes(anc[0][2][:4])
print("held", fds[0], flush=True)
time.sleep(3)
PY
hpid=$!
for _ in $(seq 1 100); do [ -S "$holder" ] && break; sleep 0.05; done
pass='import array, os, socket; t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(); u = socket.socket(socket.AF_UNIX); u.connect("/work/holder.sock"); u.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [t.fileno()]))]); print(os.readlink("/proc/self/ns/net"))'
jq --arg py "$pass" '.argv = ["/usr/bin/python3", "-c", $py]' "$T/none-ns.json" >"$T/none-pass.json"
n6=$(nsrun $TEST_USER1 "$T/none-pass.json"); sleep 0.3
n7=$(nsrun $TEST_USER1 "$T/none-ns.json")
diag "none: a socket passed out of $n6 ($(cat "$T/holder.out")), next $n7"
check "none: a namespace whose socket lives on outside is not reused" \
	test -n "$n6" -a -n "$n7" -a "$n6" != "$n7" -a "$(cut -d' ' -f1 "$T/holder.out")" = held
kill $hpid 2>/dev/null
wait $hpid 2>/dev/null

# Where the sandboxes sit.
make_plan "$T/ns.json" '["/probe/probe", "netns"]'
ns_a=$(as_user $TEST_USER1 "$LP" --socket "$T/ld.sock" $STD_FDS "$T/ns.json" 2>>"$T/client.log")
ns_b=$(as_user $TEST_USER1 "$LP" --socket "$T/ld.sock" $STD_FDS "$T/ns.json" 2>>"$T/client.log")
ns_c=$(as_user $TEST_USER2 "$LP" --socket "$T/ld.sock" $STD_FDS "$T/ns.json" 2>>"$T/client.log")
diag "netns: host $host_ns, $TEST_USER1 $ns_a $ns_b, $TEST_USER2 $ns_c (Landlock ABI $abi)"
check "a \"unix\" sandbox is never in the host's network namespace" \
	test -n "$ns_a" -a "$ns_a" != "$host_ns" -a "$ns_c" != "$host_ns"
check "two users never share a network namespace" test "$ns_a" != "$ns_c" -a "$ns_b" != "$ns_c"
if [ "${abi:-0}" -ge 6 ]; then
	check "one user's \"unix\" sandboxes share one (Landlock ABI $abi scopes abstract sockets)" \
		test "$ns_a" = "$ns_b"
else
	check "below Landlock ABI 6 every sandbox has its own namespace" test "$ns_a" != "$ns_b"
fi
# Without the abstract-socket scope in the plan, never shared.
jq 'del(.landlock.scope)' "$T/ns.json" >"$T/ns2.json"
ns_d=$(as_user $TEST_USER1 "$LP" --socket "$T/ld.sock" $STD_FDS "$T/ns2.json" 2>>"$T/client.log")
check "a plan without Landlock's abstract-socket scope gets a namespace of its own" \
	test -n "$ns_d" -a "$ns_d" != "$ns_a" -a "$ns_d" != "$host_ns"

# Sandbox A (user 1) listens on an abstract Unix socket in its namespace, and (control) connects
# to it itself: within one sandbox the socket is reachable.
abstract="cordon-netnone-$$"
make_plan "$T/listen.json" "[\"/bin/sh\", \"-c\", \"/probe/probe abstract-listen $abstract & sleep 0.3; /probe/probe abstract $abstract; wait\"]"
as_user_exec $TEST_USER1 "$LP" --socket "$T/ld.sock" $STD_FDS "$T/listen.json" >"$T/listen.out" 2>>"$T/client.log" &
lpid=$!
trap 'kill $lpid 2>/dev/null; ld_cleanup' EXIT
for _ in $(seq 1 100); do grep -q listening "$T/listen.out" && break; sleep 0.05; done
for _ in $(seq 1 100); do grep -q "connect @abstract" "$T/listen.out" && break; sleep 0.05; done
check "sandbox A listens on @$abstract" grep -q listening "$T/listen.out"
check "control: inside A itself the socket is reachable" grep -q "SUCCEEDED: connect @abstract" "$T/listen.out"
# B: the same user, "unix", the same namespace where shared: Landlock's scope refuses it.
probe_refused "another \"unix\" sandbox of the same user cannot connect to A's abstract socket" \
	--user $TEST_USER1 -- abstract "$abstract"
probe_refused "another user's \"unix\" sandbox cannot connect to it" --user $TEST_USER2 -- abstract "$abstract"
"$HELPERS/probe" abstract "$abstract" >/dev/null 2>&1
check "the host cannot reach it either (not the host's namespace)" test $? = 1
kill $lpid 2>/dev/null
wait $lpid 2>/dev/null
tap_done
