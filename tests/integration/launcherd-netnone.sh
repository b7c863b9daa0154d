#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Network "none": no socket family but AF_UNIX (the seccomp floor's variant for "none"), and
# where launcherd lets one user's "none" sandboxes share one empty network namespace
# (privileged mode, Landlock ABI >= 6), they still cannot talk to each other, to another
# user's sandboxes or to the host. Positive controls show that each probe can succeed.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
ld_require_root
ld_start
plan 18

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
probe_refused "none, root: no socket family but AF_UNIX (TCP, UDP, ICMP, netlink, packet, vsock, …)" -- sockets
probe_refused "none, user $TEST_USER1: no socket family but AF_UNIX" --user $TEST_USER1 -- sockets
probe_refused "none, user mode: no socket family but AF_UNIX" --user-mode --user $TEST_USER1 -- sockets

# Where the sandboxes sit.
make_plan "$T/ns.json" '["/probe/probe", "netns"]'
ns_a=$(as_user $TEST_USER1 "$LP" --socket "$T/ld.sock" $STD_FDS "$T/ns.json" 2>>"$T/client.log")
ns_b=$(as_user $TEST_USER1 "$LP" --socket "$T/ld.sock" $STD_FDS "$T/ns.json" 2>>"$T/client.log")
ns_c=$(as_user $TEST_USER2 "$LP" --socket "$T/ld.sock" $STD_FDS "$T/ns.json" 2>>"$T/client.log")
diag "netns: host $host_ns, $TEST_USER1 $ns_a $ns_b, $TEST_USER2 $ns_c (Landlock ABI $abi)"
check "a \"none\" sandbox is never in the host's network namespace" \
	test -n "$ns_a" -a "$ns_a" != "$host_ns" -a "$ns_c" != "$host_ns"
check "two users never share a network namespace" test "$ns_a" != "$ns_c" -a "$ns_b" != "$ns_c"
if [ "${abi:-0}" -ge 6 ]; then
	check "one user's \"none\" sandboxes share one (Landlock ABI $abi scopes abstract sockets)" \
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
# B: the same user, "none", the same namespace where shared: Landlock's scope refuses it.
probe_refused "another \"none\" sandbox of the same user cannot connect to A's abstract socket" \
	--user $TEST_USER1 -- abstract "$abstract"
probe_refused "another user's \"none\" sandbox cannot connect to it" --user $TEST_USER2 -- abstract "$abstract"
"$HELPERS/probe" abstract "$abstract" >/dev/null 2>&1
check "the host cannot reach it either (not the host's namespace)" test $? = 1
kill $lpid 2>/dev/null
wait $lpid 2>/dev/null
tap_done
