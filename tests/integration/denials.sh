#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Denials (docs/DENIALS.md): a refusal inside a sandbox becomes a "denial" message from a
# privileged launcherd, and a "denial" event in the owner's event stream. Landlock refusals (a
# file read, a write, a TCP connect) and the seccomp floor's (unshare -U) each give exactly one,
# naming what was attempted; allowed operations and refusals of the mount layout (EROFS) give
# none; a burst is rate-limited to a count; another user never sees them. The kernel's audit is
# turned on for the test and restored at exit. CORDON_MUST_WORK=1: a missing kernel feature
# fails instead of skipping.
. "${top_srcdir:-.}/tests/integration/denials-lib.sh"
plan 30

hello=$("$LP" --socket "$T/ld.sock" --hello 2>&1)
# (The kernel's audit state is "unknown" to launcherd until a record shows it on.)
check "hello: a privileged launcherd reads the denials ($(echo "$hello" | jq -c .denials))" \
	test "$(echo "$hello" | jq -r '.denials.reader, .denials.landlock' | tr '\n' ' ')" = "true true " -a \
	"$(echo "$hello" | jq -r '.denials.audit | test("^(on|unknown)$")')" = true
"$LP" --user-mode "$LAUNCHERD" --floor "$T/floor.json" --hello --result "$T/uhello.json" 2>>"$T/client.log"
uhello=$(cat "$T/uhello.json")
check "hello: a user-mode launcherd says denials are unavailable and why ($(echo "$uhello" | jq -r .denials.reason))" \
	test "$(echo "$uhello" | jq -r '.denials.reader')" = false -a -n "$(echo "$uhello" | jq -r '.denials.reason // empty')"
# launcherd follows the kernel's audit state (its configuration-change records).
$DP --audit 0 8192 >/dev/null
sleep 0.3
h0=$("$LP" --socket "$T/ld.sock" --hello 2>&1 | jq -r .denials.audit)
$DP --audit 1 8192 >/dev/null
sleep 0.3
h1=$("$LP" --socket "$T/ld.sock" --hello 2>&1 | jq -r .denials.audit)
check "hello follows the kernel's audit as it is turned off ($h0) and on again ($h1: the first record says so)" \
	test "$h0/$h1" = off/on

mkdir -p "$T/work" && chmod 0777 "$T/work"
printf 'data\n' >"$T/work/f" && chmod 0666 "$T/work/f"

# Positive control: the same operations without the refusals succeed on the host.
check "control: the probe binary is readable and /work/f writable on the host" \
	sh -c "cat '$HELPERS/probe' >/dev/null && test -w '$T/work/f'"

dn_run "$T/read.out" "cat /probe/probe >/dev/null"
check "a denied file read: one denial, landlock read-file of /probe/probe ($(show "$T/read.out"))" \
	one "$T/read.out" '.layer == "landlock" and .kind == "fs" and .access == ["read-file"] and .path == "/probe/probe"'
dn_run "$T/write.out" "echo x >> /work/f"
check "a denied write: one denial, landlock write-file of /work/f ($(show "$T/write.out"))" \
	one "$T/write.out" '.layer == "landlock" and .access == ["write-file"] and .path == "/work/f"'
dn_run "$T/create.out" "echo x > /work/new"
check "a denied creation: one denial, landlock make-reg in /work ($(show "$T/create.out"))" \
	one "$T/create.out" '.access == ["make-reg"] and .path == "/work"'
dn_run "$T/connect.out" "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 9))' 2>&1 | tail -n 1"
check "a denied TCP connect: one denial, landlock connect-tcp to port 9 ($(show "$T/connect.out"))" \
	one "$T/connect.out" '.layer == "landlock" and .kind == "net" and .access == ["connect-tcp"] and .port == 9 and .address == "127.0.0.1"'
check "  the command saw EACCES (PermissionError)" grep -q PermissionError "$T/connect.out"
dn_run "$T/unshare.out" "unshare -U true"
check "a floor syscall: one denial, seccomp unshare, errno ($(show "$T/unshare.out"))" \
	one "$T/unshare.out" '.layer == "seccomp" and .syscall == "unshare" and .action == "errno" and .comm == "unshare"'
dn_run "$T/packet.out" "python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)' 2>&1 | tail -n 1"
# (The record does not carry the family: docs/DENIALS.md, Limits.)
check "a socket family the floor refuses (AF_PACKET): one denial, seccomp socket ($(show "$T/packet.out"))" \
	one "$T/packet.out" '.layer == "seccomp" and .syscall == "socket" and .action == "errno"'
sb=$(jq -r 'select(.type == "exit") | .sandbox' "$T/unshare.out")
check "  the denial names the sandbox the exit report names ($sb)" \
	test -n "$sb" -a "$(jq -r 'select(.type == "denial") | .sandbox' "$T/unshare.out")" = "$sb"

dn_run "$T/allowed.out" "cat /usr/bin/true >/dev/null && ls /probe >/dev/null && cat /work/f >/dev/null && echo ok >/tmp/x && cat /tmp/x >&2 && python3 -c 'import socket; socket.socket()'"
check "allowed operations: no denial, exit 0 ($(show "$T/allowed.out"))" \
	sh -c "[ \"\$(grep -c '\"type\": \"denial\"' '$T/allowed.out')\" = 0 ] && jq -e 'select(.type == \"exit\") | .exitCode == 0' '$T/allowed.out' >/dev/null"
dn_run "$T/threads.out" "python3 -c 'import threading; t = threading.Thread(target=print); t.start(); t.join()'"
check "a thread (clone3, answered ENOSYS by the floor for libc to fall back): no denial ($(show "$T/threads.out"))" \
	test "$(denials "$T/threads.out")" = 0
dn_run "$T/erofs.out" "echo x > /usr/x; ls /nonexistent"
check "refusals of the mount layout (EROFS, a path not there) never reach Landlock: no denial ($(show "$T/erofs.out"))" \
	test "$(denials "$T/erofs.out")" = 0

# A burst: at most 10 a second, then one record with the count of the rest.
dn_run "$T/burst.out" 'for i in $(seq 50); do cat /probe/probe 2>/dev/null; done' 1.6
n=$(jq -r 'select(.type == "denial" and .layer) | .sandbox' "$T/burst.out" | wc -l)
sup=$(jq -r 'select(.type == "denial" and .suppressed) | .suppressed' "$T/burst.out" | awk '{ s += $1 } END { print s + 0 }')
check "a burst of 50 is rate-limited: $n reported, $sup counted" test "$n" -le 10 -a "$n" -ge 1
check "  and every one is accounted for ($n + $sup = 50)" test $((n + sup)) = 50
check "  the count is one record, not a flood ($(grep -c suppressed "$T/burst.out"))" \
	test "$(grep -c suppressed "$T/burst.out")" = 1

# Another user's sandbox at the same time: each requester sees its own denials only.
dn_run --user $TEST_USER1 "$T/u1.out" "sleep 1; cat /probe/launch-plan >/dev/null; unshare -U true" 0.8 &
u1=$!
sleep 0.3
dn_run "$T/root2.out" "cat /probe/probe >/dev/null; unshare -U true; cat /probe/probe >/dev/null; sleep 1.5" 0.5
wait $u1
check "$TEST_USER1 sees its own two denials ($(show "$T/u1.out"))" \
	sh -c "[ \"\$(grep -c '\"type\": \"denial\"' '$T/u1.out')\" = 2 ] && grep -q '/probe/launch-plan' '$T/u1.out' && grep -q '\"syscall\": \"unshare\"' '$T/u1.out'"
check "  and none of root's (no /probe/probe, no root sandbox id)" \
	sh -c "! grep -q '\"/probe/probe\"' '$T/u1.out' && ! grep -qF \"\$(jq -r 'select(.type == \"exit\") | .sandbox' '$T/root2.out')\" '$T/u1.out'"
check "root sees its own three, none of $TEST_USER1's ($(show "$T/root2.out"))" \
	sh -c "[ \"\$(grep -c '\"type\": \"denial\"' '$T/root2.out')\" = 3 ] && ! grep -q launch-plan '$T/root2.out'"

# Through the controller: `cordon events --denials` of each user, both on this launcherd.
cli root run -- sh -c 'unshare -U true; true' >"$T/cli-root.run" 2>&1
cli $TEST_USER1 run -- sh -c 'unshare -U true; unshare -U true; true' >"$T/cli-u1.run" 2>&1
sleep 1
cli root events --denials >"$T/cli-root.ev" 2>&1
cli $TEST_USER1 events --denials >"$T/cli-u1.ev" 2>&1
check "cordon events --denials: root's one denial, naming the process ($(show "$T/cli-root.ev"))" \
	sh -c "[ \"\$(wc -l <'$T/cli-root.ev')\" = 1 ] && jq -e '.type == \"denial\" and .syscall == \"unshare\" and .processId == \"p1\" and (.instance | startswith(\"sb-\"))' '$T/cli-root.ev' >/dev/null"
check "  $TEST_USER1's: its own two, none of root's ($(show "$T/cli-u1.ev"))" \
	sh -c "[ \"\$(wc -l <'$T/cli-u1.ev')\" = 2 ] && ! grep -qF \"\$(jq -r .instance '$T/cli-root.ev')\" '$T/cli-u1.ev'"
cli root events --denials p2 >"$T/cli-root-p2.ev" 2>&1
check "cordon events --denials ID: only that process's (none for p2)" test ! -s "$T/cli-root-p2.ev"
cli root events >"$T/cli-root-all.ev" 2>&1
check "cordon events (no filter) shows the spawn, the exit and the denial" \
	sh -c "grep -q '\"type\":\"spawn\"' '$T/cli-root-all.ev' && grep -q '\"type\":\"exit\"' '$T/cli-root-all.ev' && grep -q '\"type\":\"denial\"' '$T/cli-root-all.ev'"
cli root doctor >"$T/doctor.out" 2>&1
check "cordon doctor: denials ok, kernel audit on ($(grep denials "$T/doctor.out"))" \
	grep -q '^ok   denials .*kernel audit on' "$T/doctor.out"

# A pack's local sandboxes: the test pack answers every spawn "local", and the controller runs
# the plan on the pack instance's own launcher link; their denials reach the user's stream as
# builtin:auto's do, and the summary of a failed command names them.
if [ -x "$Babs/tests/packs/test-pack/cordon-test-pack" ]; then
	mkdir -p "$T/pack-src"
	cp "$S/tests/packs/test-pack/pack.json" "$Babs/tests/packs/test-pack/cordon-test-pack" "$T/pack-src/"
	chmod -R a+rX "$T/pack-src"
	cli $TEST_USER2 pack install "$T/pack-src" >"$T/pack.out" 2>&1 &&
		cli $TEST_USER2 backend activate pack:org.cordon.test:test >>"$T/pack.out" 2>&1
	check "the test pack's backend is active for $TEST_USER2 ($(tail -n1 "$T/pack.out"))" \
		grep -q '^pack:org.cordon.test:test is active' "$T/pack.out"
	cli $TEST_USER2 run -- sh -c 'unshare -U true' >"$T/pack-run.out" 2>&1
	st=$?
	check "a failed command in a pack-local sandbox: its summary names the refusal (exit $st: $(show "$T/pack-run.out"))" \
		sh -c "[ $st = 1 ] && grep -q '^cordon: 1 refusal' '$T/pack-run.out' && grep -q '^  unshare ' '$T/pack-run.out'"
	sleep 1
	cli $TEST_USER2 events --denials >"$T/pack.ev" 2>&1
	cli $TEST_USER2 events >"$T/pack-all.ev" 2>&1
	inst=$(jq -r 'select(.type == "spawn") | .instance + " " + .launcher' "$T/pack-all.ev" 2>/dev/null)
	check "  cordon events --denials: one, naming the process and its pack-local sandbox ($inst; $(show "$T/pack.ev"))" \
		sh -c "[ \"\$(wc -l <'$T/pack.ev')\" = 1 ] && case '$inst' in 'sb-'*' pack:org.cordon.test:test#'*) true ;; *) false ;; esac && jq -e --arg i '${inst%% *}' '.type == \"denial\" and .syscall == \"unshare\" and .processId == \"p1\" and .instance == \$i' '$T/pack.ev' >/dev/null"
	# A pack whose commands' isolation is a container's (its claims): the host's reader sees
	# none of their refusals, and doctor says so rather than "reads the audit records".
	mkdir -p "$T/pack-ctr"
	cp "$T/pack-src/cordon-test-pack" "$T/pack-ctr/"
	sed 's/"isolation": "namespace"/"isolation": "container"/' "$T/pack-src/pack.json" >"$T/pack-ctr/pack.json"
	chmod -R a+rX "$T/pack-ctr"
	cli $TEST_USER1 pack install "$T/pack-ctr" >"$T/pack-ctr.out" 2>&1 &&
		cli $TEST_USER1 backend activate pack:org.cordon.test:test >>"$T/pack-ctr.out" 2>&1
	cli $TEST_USER1 doctor --json >"$T/doctor-ctr.json" 2>&1
	check "a pack claiming container isolation: doctor says its refusals are out of the reader's sight ($(jq -c '.checks[]? | select(.name == "denials")' "$T/doctor-ctr.json" 2>/dev/null || tail -n 2 "$T/pack-ctr.out"))" \
		jq -e '.checks[] | select(.name == "denials") | .ok == false and (.detail | test("run in a container")) and (.hint | test("builtin:auto"))' "$T/doctor-ctr.json"
else
	dn_skip 4 "the test pack is not built"
fi

[ "$_tap_failed" = 0 ] || tail -n 20 "$T/launcherd.log" | sed 's/^/# /'
tap_done
