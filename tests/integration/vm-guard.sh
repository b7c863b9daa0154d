#!/usr/bin/env bash
# builtin:vm's guard (backends/vm/guest/agent.c, GUARD in vm-proto.h): the policy's limits and
# syscall filter applied inside the guest, under TCG here (a boot per command). A command over
# its memory limit is killed (exit reason memory, limits.memory), a fork loop stops at pids.max
# (limits.pids); a system call in syscalls.deny fails with the policy's errno (EPERM) in the
# guest and gives exactly one "denial" event naming it, an allowed command none, a burst at most
# 10 and a suppressed count; a lease's commands are guarded alike; and as an ordinary user
# (cordon-test1, its own controller and user-mode launcher) the memory limit and a denial, in
# that user's stream only. Skipped as vm-backend.sh is
# (QEMU, busybox, the guest kernel), unless CORDON_MUST_WORK=1.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"
. "${top_srcdir:?}/tests/integration/vm-lib.sh"
command -v jq >/dev/null || need "jq missing"

WORK="$TEST_TMP/work"
mkdir -p "$WORK"
chmod 0777 "$WORK"
cd "$WORK" || exit 1
out=$("$CORDON" backend activate builtin:vm --set kernel="$VMD/vmlinux" \
	--set helpersBaseUrl="file://$HELPERS/" 2>&1)
ok $? "builtin:vm activates ($out)"
enf=$("$CORDON" backend list --json 2>/dev/null |
	jq -c '[.. | objects | select(.ref? == "builtin:vm") | .descriptor.claims.enforces][0]')
[ "$(echo "$enf" | jq -r 'index("limits") != null and index("syscalls") != null')" = true ]
ok $? "its claims enforce limits and syscalls ($enf)"

# denials_of ID: the denial events of process or sandbox ID, one a line.
denials_of() { "$CORDON" events --denials "$1" 2>/dev/null | grep '"type":"denial"'; }
# the process id of a `cordon run --json` exit (the command's output goes to stderr)
pid_of() { jq -r '.processId // empty' "$1" 2>/dev/null; }

# Memory: a shell holding 64 MB in a variable under a 32 MiB limit.
"$CORDON" run --json --memory 32M -- sh -c 'x=$(head -c 64000000 /dev/zero | tr "\0" a); echo ${#x}' \
	>"$TEST_TMP/mem.json" 2>"$TEST_TMP/mem.err"
rc=$?
[ "$rc" = 137 ] && [ "$(jq -r '.reason, .limits.memory' "$TEST_TMP/mem.json" | tr '\n' ' ')" = "memory true " ]
ok $? "a command over its memory limit is killed, reason memory (exit $rc, $(jq -c '{reason, limits}' "$TEST_TMP/mem.json" 2>&1 | head -c 200))"
"$CORDON" run --json --memory 32M -- sh -c 'x=$(head -c 4000000 /dev/zero | tr "\0" a); echo ${#x} >&2' \
	>"$TEST_TMP/mem2.json" 2>/dev/null
rc=$?
[ "$rc" = 0 ] && [ "$(jq -r '.reason, .limits.memory' "$TEST_TMP/mem2.json" | tr '\n' ' ')" = "exited false " ]
ok $? "a command under it runs and hits no limit (exit $rc, $(jq -c '{reason, limits}' "$TEST_TMP/mem2.json" 2>&1 | head -c 200))"

# Pids: a fork loop under pids.max 16 (each sleeper holds its process).
"$CORDON" run --json --pids 16 -- sh -c 'i=0; while [ $i -lt 64 ]; do sleep 30 & i=$((i+1)); done 2>/dev/null; echo started' \
	>"$TEST_TMP/pids.json" 2>"$TEST_TMP/pids.err"
rc=$?
[ "$(jq -r '.limits.pids' "$TEST_TMP/pids.json")" = true ]
ok $? "a fork loop stops at pids.max, limits.pids (exit $rc, $(jq -c '{reason, limits}' "$TEST_TMP/pids.json" 2>&1 | head -c 200), $(head -c 200 "$TEST_TMP/pids.err"))"

# Syscalls: chdir denied by the policy.
cat >"$TEST_TMP/deny.json" <<'JSON'
{"version": 1, "syscalls": {"deny": ["chdir"]}}
JSON
"$CORDON" run --json --policy "$TEST_TMP/deny.json" -- sh -c 'cd /tmp; echo "status $?" >&2' \
	>"$TEST_TMP/deny.out" 2>"$TEST_TMP/deny.err"
grep -q "Operation not permitted" "$TEST_TMP/deny.err" && grep -q "status [1-9]" "$TEST_TMP/deny.err"
ok $? "a denied syscall fails with EPERM in the guest ($(head -c 300 "$TEST_TMP/deny.err" | tr '\n' ' '))"
id=$(pid_of "$TEST_TMP/deny.out")
sleep 0.3
denials_of "$id" >"$TEST_TMP/deny.ev"
[ "$(wc -l <"$TEST_TMP/deny.ev")" = 1 ] || diag "all denials: $("$CORDON" events --denials 2>&1 | tail -c 1500)"
[ "$(wc -l <"$TEST_TMP/deny.ev")" = 1 ] &&
	jq -e '.layer == "seccomp" and .kind == "syscall" and .syscall == "chdir" and .action == "errno" and (.pid | type) == "number"' "$TEST_TMP/deny.ev" >/dev/null
ok $? "exactly one denial event, naming chdir (id $id: $(head -c 400 "$TEST_TMP/deny.ev"))"

"$CORDON" run --json --policy "$TEST_TMP/deny.json" -- sh -c 'echo allowed >&2' \
	>"$TEST_TMP/allow.out" 2>"$TEST_TMP/allow.err"
id=$(pid_of "$TEST_TMP/allow.out")
sleep 0.3
[ -n "$id" ] && [ "$(denials_of "$id" | wc -l)" = 0 ] && grep -q allowed "$TEST_TMP/allow.err"
ok $? "an allowed command gives no denial (id $id)"

"$CORDON" run --json --policy "$TEST_TMP/deny.json" -- sh -c 'i=0; while [ $i -lt 40 ]; do cd / 2>/dev/null; i=$((i+1)); done' \
	>"$TEST_TMP/burst.out" 2>/dev/null
id=$(pid_of "$TEST_TMP/burst.out")
sleep 0.3
denials_of "$id" >"$TEST_TMP/burst.ev"
n=$(jq -s '[.[] | select(.syscall == "chdir")] | length' "$TEST_TMP/burst.ev")
s=$(jq -s '[.[] | .suppressed // 0] | add' "$TEST_TMP/burst.ev")
[ "$n" -ge 1 ] && [ "$n" -le 10 ] && [ $((n + s)) = 40 ]
ok $? "a burst of 40 is rate-limited: $n reported, $s suppressed"

# A lease's commands are guarded alike.
sid=$("$CORDON" sandbox acquire --policy "$TEST_TMP/deny.json" --pids 8 2>"$TEST_TMP/err")
ok $? "a lease with the policy ($sid $(head -c 300 "$TEST_TMP/err"))"
out=$("$CORDON" exec --sandbox "$sid" -- sh -c 'cd /tmp 2>&1; echo "status $?"' 2>&1)
echo "$out" | grep -q "Operation not permitted"
ok $? "a lease's command is filtered ($(echo "$out" | head -c 200 | tr '\n' ' '))"
"$CORDON" exec --json --sandbox "$sid" -- sh -c 'i=0; while [ $i -lt 32 ]; do sleep 30 & i=$((i+1)); done 2>/dev/null' \
	>"$TEST_TMP/lpids.json" 2>/dev/null
[ "$(jq -r '.limits.pids' "$TEST_TMP/lpids.json")" = true ]
ok $? "and limited ($(jq -c . "$TEST_TMP/lpids.json" 2>&1 | head -c 300))"
out=$("$CORDON" exec --sandbox "$sid" -- echo still-here 2>&1)
is still-here "$out" "the lease runs the next command (the last one's processes are gone)"
t0=$(date +%s%N)
for _ in 1 2 3 4 5; do "$CORDON" exec --sandbox "$sid" -- true; done
diag "a guarded command in the lease: $((($(date +%s%N) - t0) / 5000000)) ms each (exec round trip, under TCG)"
"$CORDON" exec --json --sandbox "$sid" --timeout 1 -- sleep 60 >"$TEST_TMP/tmo.json" 2>/dev/null
is "timeout" "$(jq -r .reason "$TEST_TMP/tmo.json" 2>&1)" \
	"a guarded command's timeout ($(jq -r '.durationUsec / 1000 | floor' "$TEST_TMP/tmo.json" 2>&1) ms)"
"$CORDON" sandbox release "$sid" >/dev/null 2>&1
ok $? "the lease is released"

# An ordinary user's controller, with a user-mode launcher that may have no cgroup of its own:
# the guest's limits and filter do not depend on it.
if id cordon-test1 >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	U="$TEST_TMP/as-user"
	mkdir -p "$U/run" "$U/state/vm" "$U/work"
	for f in vmlinux modules modules.order; do ln -s "$CACHE/$f" "$U/state/vm/$f"; done
	chmod 0700 "$U/run"
	chown -R cordon-test1: "$U"
	as_user() {
		(cd "$U/work" && setpriv --reuid="$(id -u cordon-test1)" --regid="$(id -g cordon-test1)" \
			--clear-groups env -i HOME="$U" PATH=/usr/local/bin:/usr/bin:/bin \
			XDG_RUNTIME_DIR="$U/run" XDG_STATE_HOME="$U/state" \
			CORDON_CONTROLLER="$CORDON_CONTROLLER" CORDON_LAUNCHERD="$CORDON_LAUNCHERD" \
			CORDON_LAUNCHERD_SOCKET="$CORDON_LAUNCHERD_SOCKET" \
			CORDON_VM_HELPERS="$CORDON_VM_HELPERS" CORDON_VM_MKINITRAMFS="$CORDON_VM_MKINITRAMFS" \
			"$@")
	}
	out=$(as_user "$CORDON" backend activate builtin:vm --set kernel="$U/state/vm/vmlinux" \
		--set helpersBaseUrl="file://$HELPERS/" 2>&1)
	ok $? "cordon-test1: builtin:vm activates ($out)"
	as_user "$CORDON" run --json --memory 32M -- sh -c 'x=$(head -c 64000000 /dev/zero | tr "\0" a); echo ${#x} >&2' \
		>"$TEST_TMP/umem.json" 2>"$TEST_TMP/umem.err"
	rc=$?
	[ "$rc" = 137 ] && [ "$(jq -r '.reason, .limits.memory' "$TEST_TMP/umem.json" | tr '\n' ' ')" = "memory true " ]
	ok $? "cordon-test1: a command over its memory limit is killed, reason memory (exit $rc, $(jq -c '{reason, limits}' "$TEST_TMP/umem.json" 2>&1 | head -c 200) $(head -c 200 "$TEST_TMP/umem.err"))"
	nroot=$("$CORDON" events --denials 2>/dev/null | grep -c '"syscall":"chdir"')
	as_user "$CORDON" run --json --policy "$TEST_TMP/deny.json" -- sh -c 'cd /tmp; echo "status $?" >&2' \
		>"$TEST_TMP/udeny.out" 2>"$TEST_TMP/udeny.err"
	id=$(pid_of "$TEST_TMP/udeny.out")
	sleep 0.3
	as_user "$CORDON" events --denials "$id" 2>/dev/null | grep '"type":"denial"' >"$TEST_TMP/udeny.ev"
	grep -q "Operation not permitted" "$TEST_TMP/udeny.err" && [ "$(wc -l <"$TEST_TMP/udeny.ev")" = 1 ] &&
		jq -e '.syscall == "chdir"' "$TEST_TMP/udeny.ev" >/dev/null
	ok $? "cordon-test1: a denied syscall fails and is one denial event in that user's stream ($(head -c 300 "$TEST_TMP/udeny.ev"))"
	is "$nroot" "$("$CORDON" events --denials 2>/dev/null | grep -c '"syscall":"chdir"')" \
		"and none in root's"
	npid=$(head -n1 "$U/run/cordon/controller.sock.lock" 2>/dev/null)
	if [ -n "$npid" ]; then
		kill "$npid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$npid" 2>/dev/null || break; sleep 0.1; done
	fi
else
	diag "no cordon-test1 or setpriv: the ordinary user's run is skipped"
fi

echo "1..$TAP_N"
done_testing
