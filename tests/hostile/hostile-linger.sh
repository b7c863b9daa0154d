#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A lingering close must never freeze launcherd. The last close of a TCP socket with
# SO_LINGER {1, 60} and unsent data (its peer accepts and never reads) waits up to 60 s, and a
# socket hidden in an AF_UNIX socket's receive queue is closed with that AF_UNIX socket, which
# the fd screen accepts. Whichever way a requester hands such a socket over — in a hello, a
# spawn (stdin, a refused plan's stdout, a bind source, the seccomp program, an fd the plan
# does not name), a kill, a message that breaks the protocol, nested twice, or from a user the
# floor refuses — another user's hello + spawn is answered at once (1.5 s at most). The same
# for a file on a FUSE file system whose server never answers FLUSH, nested the same way, and
# for pipes whose other end the requester holds. Attacker: cordon-test1; victim: cordon-test2.
#
# Each attack has a sink of its own: stopping the sink resets the lingering connection, which
# ends any close still waiting on it, so that one frozen launcherd does not fail every later
# check.
. "${top_srcdir:-.}/tests/hostile/hostile-lib.sh"
h_require
ld_start
plan 20

A=$TEST_USER1
V=$TEST_USER2
h_plan "$T/true.json" '["/bin/true"]'

# recover: after an attack, once its sink is gone, launcherd answers again (not a check: the
# check came before; this only keeps one failure from spilling into the next).
recover() {
	h_sink_stop
	for _ in $(seq 1 30); do
		hc --user $V --read-timeout 500 >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	diag "launcherd did not recover"
}

# Who makes the last close of an fd in flight is a race between launcherd, which closes its
# copies once it has handled the message, and the receiver, which closes its own once it has
# forwarded it. The attacks load the dice in launcherd's favour, as an attacker would: every
# message is padded (15,000 more members, or large environment strings in a plan that must
# stay valid), so that launcherd still parses it when the receiver is done; messages are sent
# four times pipelined, so that the receiver forwards the last one while launcherd still
# handles the one before; and each attack is tried three times over. (Padded below 200 KB:
# launcherd's own channel from the receiver takes no more.)
pad_keys() { jq -c '. + ([range(15000) | {key: "p\(.)", value: 0}] | from_entries)' <<<"$2" >"$1"; }
pad_env() { jq -c '.envp += [range(2) | "PAD\(.)=" + ("x" * 60000)]' "$2" >"$1"; }

# attack N DESC CLIENT-ARGS...: with a fresh sink each time, the attacker's client, then
# whether the victim is still served; three times, not counting the tries where the last
# close fell to the attacker itself (its summary says so: launcherd was never in the race).
# @PORT in an argument: the sink's port.
attack() {
	at_n=$1
	at_desc=$2
	shift 2
	at_ok=1
	at_valid=0
	at_try=0
	while [ $at_valid -lt 3 ] && [ $at_try -lt 6 ]; do
		at_try=$((at_try + 1))
		if ! h_sink_start; then
			at_ok=
			break
		fi
		at_args=()
		for a in "$@"; do
			at_args+=("${a//@PORT/$H_PORT}")
		done
		hc --user $A --read-timeout 1000 --pipeline "${at_args[@]}" \
			>"$T/atk-$at_n.out" 2>>"$T/client.log"
		if ! h_served $V 1500; then
			at_ok=
			break
		fi
		[ "$(h_summary "$T/atk-$at_n.out" ownCloseWaits)" = true ] ||
			at_valid=$((at_valid + 1))
		h_sink_stop
	done
	diag "attack $at_n (try $at_try, $at_valid counted): $(h_reply "$T/atk-$at_n.out" | sort | uniq -c | tr '\n' ' ')"
	if [ -n "$at_ok" ]; then
		ok "$at_desc: another user's hello + spawn answered (${H_SERVED_MS} ms)"
	else
		not_ok "$at_desc: another user's hello + spawn answered (try $at_try: ${H_SERVED_MS:-?} ms: $(h_reply "$T/served.out" | tr '\n' ' '))"
		diag "launcherd $LD_PID: state $(awk '{print $3}' "/proc/$LD_PID/stat" 2>/dev/null)," \
			"waiting in $(cat "/proc/$LD_PID/wchan" 2>/dev/null)"
	fi
	recover
}

NEST="unix-nested:tcp-linger:@PORT"
check_served "control: the victim is served" $V 1500

# 1. In a hello (launcherd closes a hello's fds unread).
pad_keys "$T/hello.json" '{"type": "hello", "seq": 1, "version": 1}'
attack 1 "lingering socket nested in an AF_UNIX socket, in a hello" \
	--no-hello --fds-on hello --fd "$NEST" --send "$T/hello.json"

# 2. As stdin of a plan that runs.
jq -c '.stdio.stdin = 6' "$T/true.json" >"$T/stdin0.json"
pad_env "$T/stdin.json" "$T/stdin0.json"
attack 2 "…as stdin of a sandbox" $H_STD --fd "$NEST" --send "$T/stdin.json" --repeat 4

# 3. As stdout of a plan refused for another reason (an unknown field).
jq -c '.stdio.stdout = 6 | .bogus = 1' "$T/true.json" >"$T/refused0.json"
pad_env "$T/refused.json" "$T/refused0.json"
attack 3 "…as stdout of a refused plan" $H_STD --fd "$NEST" --send "$T/refused.json" --repeat 4

# 4. As a bind source.
jq -c '.mounts += [{"type": "bind", "source": 6, "target": "/mnt"}]' "$T/true.json" >"$T/bind0.json"
pad_env "$T/bind.json" "$T/bind0.json"
attack 4 "…as a bind source" $H_STD --fd "$NEST" --send "$T/bind.json" --repeat 4

# 5. As the seccomp program.
jq -c '.seccomp = {"program": 6}' "$T/true.json" >"$T/seccomp0.json"
pad_env "$T/seccomp.json" "$T/seccomp0.json"
attack 5 "…as the seccomp program" $H_STD --fd "$NEST" --send "$T/seccomp.json" --repeat 4

# 6. An fd the plan does not name.
pad_env "$T/true-pad.json" "$T/true.json"
attack 6 "…as an fd the plan does not name" $H_STD --fd "$NEST" --send "$T/true-pad.json" \
	--repeat 4

# 7. On a kill request.
pad_keys "$T/kill.json" '{"type": "kill", "sandbox": "sb-0000000000000000"}'
attack 7 "…on a kill request" --fds-on kill --fd "$NEST" --send "$T/kill.json" --repeat 4

# 8. On a message that ends the connection (an unknown type).
pad_keys "$T/bogus.json" '{"type": "bogus"}'
attack 8 "…on a message of an unknown type" --fds-on bogus --fd "$NEST" --send "$T/bogus.json"

# 9. Nested twice.
attack 9 "…nested twice, as stdin of a refused plan" $H_STD --fd "unix-nested:$NEST" \
	--send "$T/refused.json" --repeat 4

# 10. Not nested: the screen refuses the TCP socket itself (the receiver's close waits; only
# that connection's).
attack 10 "a lingering TCP socket itself as stdin (refused by the screen)" \
	$H_STD --fd "tcp-linger:@PORT" --send "$T/stdin0.json"
check "…and that spawn is refused, naming plan.stdio.stdin ($(h_reply "$T/atk-10.out" | tr '\n' ' '))" \
	grep -q 'error invalid-plan plan.stdio.stdin' <(h_reply "$T/atk-10.out")

# 11. Pipes whose other end the requester holds: a sandbox reading a pipe never written, one
# writing a pipe never read. launcherd neither reads nor writes them.
h_plan "$T/cat.json" '["/bin/sh", "-c", "cat /dev/zero >&2 & exec cat"]'
jq -c '.stdio.stdin = 6 | .stdio.stderr = 7' "$T/cat.json" >"$T/pipes.json"
# shellcheck disable=SC2086
h_bg pipes --user $A "$HC" --socket "$T/ld.sock" $H_STD --fd pipe-r --fd pipe-w \
	--send "$T/pipes.json" --hold 30
pipes_pid=$H_LAST
h_wait_for "$T/pipes.out" 'select(.type == "spawned")' 50
check_served "pipes held open by the requester as a sandbox's stdin and stderr" $V 1500
h_stop $pipes_pid

# 12. FUSE: a file whose close() waits for FLUSH for ever, hidden the same way.
MNT=$T/fuse
FS_PID=
fuse_ok=
if [ -c /dev/fuse ] && command -v python3 >/dev/null; then
	mkdir "$MNT"
	python3 "$S/tests/helpers/stallfs.py" "$MNT" --pid-file "$T/fs.pid" >"$T/fs.out" 2>"$T/fs.log" &
	FS_PID=$!
	h_on_exit 'kill $FS_PID 2>/dev/null; [ -s "$T/fs.pid" ] && kill "$(cat "$T/fs.pid")" 2>/dev/null; wait $FS_PID 2>/dev/null; umount -l "$MNT" 2>/dev/null'
	for _ in $(seq 1 100); do
		grep -q mounted "$T/fs.out" && break
		kill -0 "$FS_PID" 2>/dev/null || break
		sleep 0.05
	done
	grep -q mounted "$T/fs.out" && [ -f "$MNT/f" ] && fuse_ok=1
fi
fuse_attack() {
	if [ -z "$fuse_ok" ]; then
		ok "$1 # SKIP no FUSE file system ($(head -c 200 "$T/fs.log" 2>/dev/null))"
		return
	fi
	shift_desc=$1
	shift
	fuse_n=$((${fuse_n:-0} + 1))
	# The attacker's own exit may wait on FLUSH (its copy of the file): in the background.
	h_bg "fuse-$fuse_n" --user $A "$HC" --socket "$T/ld.sock" --read-timeout 500 "$@"
	sleep 0.7
	check_served "$shift_desc: another user's hello + spawn answered" $V 1500
}
fuse_attack "a FUSE file nested in an AF_UNIX socket, in a hello" \
	--fds-on hello --fd "unix-nested:ro:$MNT/f"
fuse_attack "…as stdin of a refused plan" $H_STD --fd "unix-nested:ro:$MNT/f" \
	--send "$T/refused.json"
fuse_attack "…nested twice, as an fd the plan does not name" $H_STD \
	--fd "unix-nested:unix-nested:ro:$MNT/f" --send "$T/true.json"

# 15-16. A user the floor refuses, whose hello carries the lingering socket.
ld_stop
h_write_floor "{\"allowUsers\": [\"$V\"]}"
ld_start
hc --user $A >"$T/refused-hello.out" 2>>"$T/client.log"
check "the floor refuses $A ($(h_reply "$T/refused-hello.out" | tr '\n' ' '))" \
	grep -q 'error floor-refused' <(h_reply "$T/refused-hello.out")
attack 15 "from a user the floor refuses, in its hello" \
	--no-hello --fds-on hello --fd "$NEST" --send "$T/hello.json"
# The same with a hello that is valid but for the user (unpadded: refused by the floor itself).
attack 16 "…in a valid hello, refused by the floor" --fds-on hello --fd "$NEST"

check "launcherd is still running" ld_alive
tap_done
