#!/usr/bin/env bash
# builtin:vm (backends/vm/): a QEMU micro-VM per one-shot command, one per lease, under TCG here. The guest kernel is
# fetched beforehand (backends/vm/fetch-kernel.sh DIR, from the distribution's mirror: .ci/run
# does it with the package installs; a test talks to nothing but loopback), found in
# $CORDON_VM_CACHE or the build directory's vm-cache and linked into a <vmDir> of this test's.
# The guest helpers are built here (backends/vm/build-helpers.sh) into an offline mirror, and
# the activation takes the real path: its helpersBaseUrl (file:) fetches the agent into
# <vmDir>/bin, verified against the pins, and the backend builds the initramfs from it; a second
# activation reuses both. Then, with builtin:vm
# activated explicitly: a command's output and exit code, stdout and stderr apart, stdin, a
# signal, a timeout that kills QEMU and leaves no process, a read-only workspace that the guest
# cannot write, two boots that read different /dev/urandom bytes; leases: one VM for all of a
# lease's processes (they share the VM's /tmp, run at once, a killed or timed-out one leaves the
# lease usable, one whose output nobody reads holds up no other, a read-only command in a
# read-write lease cannot write), no QEMU left after the
# release, and a VM killed mid-lease ends its processes with a reason and fails later spawns
# saying why; and the conformance suite on
# the backend ($CONFORMANCE_CHECKS, default a bounded subset). Skipped when QEMU or the kernel
# cannot be had, unless CORDON_MUST_WORK=1.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"
. "${top_srcdir:?}/tests/integration/vm-lib.sh"
PIN=$(awk '$1 == "agent" { print $2 }' "$top_srcdir/backends/vm/helper-pins.txt")
ACTIVATE=(backend activate builtin:vm --set kernel="$VMD/vmlinux"
	--set helpersBaseUrl="file://$HELPERS/")

# nothing of QEMU's left from this test's controller
qemus() {
	local pid
	pid=$(controller_pid 2>/dev/null) || { echo 0; return; }
	for p in $(descendants "$pid"); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = qemu-system-x86 ] && echo "$p"
	done | wc -l
}

WORK="$TEST_TMP/work"
mkdir -p "$WORK"
chmod 0777 "$WORK"
cd "$WORK" || exit 1
out=$("$CORDON" "${ACTIVATE[@]}" 2>&1)
ok $? "builtin:vm activates, fetching its agent from the offline mirror ($out)"
is "$PIN 755" "$(sha256sum "$VMD/bin/agent" 2>&1 | cut -d' ' -f1) $(stat -c %a "$VMD/bin/agent" 2>&1)" \
	"the agent is in <vmDir>/bin, verified against its pin, 0755"
[ -s "$VMD/initramfs.cpio.gz" ] && [ ! "$VMD/bin/agent" -nt "$VMD/initramfs.cpio.gz" ]
ok $? "the backend built the initramfs beside the kernel from it"
gunzip -c "$VMD/initramfs.cpio.gz" | (cd "$TEST_TMP" && mkdir -p ird && cd ird &&
	cpio -i --quiet init 2>/dev/null)
cmp -s "$TEST_TMP/ird/init" "$VMD/bin/agent"
ok $? "its /init is the fetched agent"
before=$(stat -c %Y.%y "$VMD/bin/agent" "$VMD/initramfs.cpio.gz" | tr '\n' ' ')
sleep 1.1
out=$("$CORDON" "${ACTIVATE[@]}" 2>&1)
ok $? "a second activation ($out)"
is "$before" "$(stat -c %Y.%y "$VMD/bin/agent" "$VMD/initramfs.cpio.gz" | tr '\n' ' ')" \
	"reuses the agent and the initramfs (neither is written again)"

t0=$(date +%s%N)
out=$("$CORDON" run -- sh -c 'echo out; echo err >&2; exit 3' 2>"$TEST_TMP/err")
rc=$?
t1=$(date +%s%N)
is "3 out err" "$rc $out $(cat "$TEST_TMP/err")" "stdout, stderr apart and the exit code"
diag "boot + run: $(((t1 - t0) / 1000000)) ms"
out=$(echo piped | "$CORDON" run -- cat)
is piped "$out" "stdin reaches the command, and its EOF"
"$CORDON" run -- /nonexistent/command >/dev/null 2>&1
is 127 $? "a missing command is exit 127"
out=$("$CORDON" run -- sh -c 'ip -o link | cut -d: -f2 | tr -d " \n"')
is lo "$out" "the guest has only lo"
out=$("$CORDON" run -- pwd)
is "$WORK" "$out" "the command starts in the workspace, at its host path"
"$CORDON" run -- sh -c 'echo rw >rw.txt'
is rw "$(cat "$WORK/rw.txt" 2>&1)" "a read-write workspace is written through 9p"
"$CORDON" run --workspace-access read-only -- sh -c 'echo x >ro.txt' >/dev/null 2>"$TEST_TMP/err"
rc=$?
[ $rc -ne 0 ] && [ ! -e "$WORK/ro.txt" ]
ok $? "a read-only workspace cannot be written in the guest (exit $rc: $(head -c 200 "$TEST_TMP/err"))"
"$CORDON" run -- sh -c 'kill -TERM $$; sleep 5' >/dev/null 2>&1
is 143 $? "a command killed by a signal reports it (128+15)"
"$CORDON" run -- sh -c 'trap "echo got-term; exit 9" TERM; echo up; while :; do sleep 0.1; done' \
	>"$TEST_TMP/sig" 2>&1 &
runner=$!
for _ in $(seq 300); do grep -q up "$TEST_TMP/sig" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$runner"
wait "$runner"
rc=$?
grep -q got-term "$TEST_TMP/sig"
ok $? "a signal reaches the command in the guest (exit $rc, $(tr '\n' ' ' <"$TEST_TMP/sig"))"
t0=$SECONDS
"$CORDON" run --timeout 8 -- sleep 60 >/dev/null 2>&1
rc=$?
[ $rc = 124 ] && [ $((SECONDS - t0)) -lt 40 ]
ok $? "a timeout ends the VM (exit $rc after $((SECONDS - t0)) s)"
sleep 0.5
is 0 "$(qemus)" "no QEMU process is left"
a=$("$CORDON" run -- sh -c 'head -c 16 /dev/urandom | od -An -tx1 | tr -d " \n"')
b=$("$CORDON" run -- sh -c 'head -c 16 /dev/urandom | od -An -tx1 | tr -d " \n"')
[ -n "$a" ] && [ ${#a} = 32 ] && [ "$a" != "$b" ]
ok $? "two boots read different /dev/urandom bytes ($a / $b)"
y=$("$CORDON" run -- date +%Y)
is "$(date +%Y)" "$y" "the guest's clock is the host's"
is 0 "$(qemus)" "no QEMU process is left at the end"

# Leases: one VM, booted at acquire, runs every process of the lease.
sid=$("$CORDON" sandbox acquire --workspace-access read-write 2>"$TEST_TMP/err")
ok $? "a lease on builtin:vm is acquired ($sid $(head -c 300 "$TEST_TMP/err"))"
is 1 "$(qemus)" "the lease has one QEMU"
tok="tok-$RANDOM-$RANDOM"
"$CORDON" exec --sandbox "$sid" -- sh -c "echo $tok >/tmp/shared"
out=$("$CORDON" exec --sandbox "$sid" -- cat /tmp/shared 2>&1)
is "$tok" "$out" "a second process of the lease sees the first's file in the VM's /tmp"
[ ! -e /tmp/shared ] || ! grep -qs "$tok" /tmp/shared
ok $? "that file is in the VM, not on the host"
is 1 "$(qemus)" "processes of the lease start no QEMU of their own"
t0=$(date +%s%N)
out=$("$CORDON" exec --sandbox "$sid" -- /bin/true 2>&1)
rc=$?
t1=$(date +%s%N)
is 0 "$rc" "/bin/true in the warm lease ($out)"
diag "a command in the warm lease: $(((t1 - t0) / 1000000)) ms"
# At once: each waits (up to 30 s) for the other's file, so neither ends alone.
"$CORDON" run --sandbox "$sid" -- sh -c 'touch /tmp/a; i=0
	while [ ! -e /tmp/b ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	[ -e /tmp/b ] && echo a-saw-b' >"$TEST_TMP/a" 2>&1 &
pa=$!
"$CORDON" run --sandbox "$sid" -- sh -c 'touch /tmp/b; i=0
	while [ ! -e /tmp/a ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	[ -e /tmp/a ] && echo b-saw-a' >"$TEST_TMP/b" 2>&1
rb=$?
wait "$pa"
ra=$?
is "0 0 a-saw-b b-saw-a" "$ra $rb $(cat "$TEST_TMP/a") $(cat "$TEST_TMP/b")" \
	"two processes of the lease run at once"
# stdin of one process while another runs
out=$(printf 'one\ntwo\n' | "$CORDON" run --sandbox "$sid" -- wc -l 2>&1)
is 2 "$(echo "$out" | tr -d ' ')" "a process of the lease reads its own stdin to EOF"
# A process whose output nobody reads holds up no other process of the lease.
"$CORDON" run --sandbox "$sid" -- yes > >(sleep 60) 2>/dev/null &
py=$!
sleep 2
out=$(timeout 60 "$CORDON" exec --sandbox "$sid" -- echo not-held-up 2>&1)
is not-held-up "$out" "a process whose output is not read holds up no other one in the lease"
kill -KILL "$py"
wait "$py" 2>/dev/null
# A process killed (its client gone) or timed out leaves the lease usable.
"$CORDON" run --sandbox "$sid" -- sh -c 'echo $$ >/tmp/victim; exec sleep 300' >/dev/null 2>&1 &
pv=$!
for _ in $(seq 300); do
	"$CORDON" exec --sandbox "$sid" -- test -s /tmp/victim 2>/dev/null && break
	sleep 0.1
done
kill -KILL "$pv"
wait "$pv" 2>/dev/null
gone=1
for _ in $(seq 100); do
	if "$CORDON" exec --sandbox "$sid" -- sh -c 'kill -0 "$(cat /tmp/victim)"' 2>/dev/null; then
		sleep 0.1
	else
		gone=0
		break
	fi
done
is 0 "$gone" "a process whose client was killed is killed in the VM"
"$CORDON" run --sandbox "$sid" --timeout 2 -- sleep 60 >/dev/null 2>&1
is 124 $? "a timeout in the lease ends the process (exit 124)"
out=$("$CORDON" exec --sandbox "$sid" -- cat /tmp/shared 2>&1)
is "$tok" "$out" "the lease is still usable, in the same VM, after a kill and a timeout"
# The lease's access is fixed at acquire: a read-only command in this read-write lease gets a
# read-only workspace of its own; the next command writes again.
"$CORDON" run --sandbox "$sid" --workspace-access read-only -- sh -c 'echo x >ro-in-rw.txt' \
	>/dev/null 2>&1
rc=$?
[ $rc -ne 0 ] && [ ! -e "$WORK/ro-in-rw.txt" ]
ok $? "a read-only command in a read-write lease cannot write the workspace (exit $rc)"
"$CORDON" run --sandbox "$sid" -- sh -c 'echo rw >rw-in-lease.txt'
is rw "$(cat "$WORK/rw-in-lease.txt" 2>&1)" "the lease's next command writes it"
"$CORDON" run --sandbox "$sid" -- sleep 300 >/dev/null 2>&1 &
pl=$!
sleep 1
"$CORDON" sandbox release "$sid" >/dev/null 2>"$TEST_TMP/err"
ok $? "the lease is released ($(head -c 300 "$TEST_TMP/err"))"
is 0 "$(qemus)" "no QEMU is left once the release returned"
wait "$pl"
rc=$?
[ $rc -ne 0 ]
ok $? "the process left in the lease ended with it (exit $rc)"
sro=$("$CORDON" sandbox acquire 2>/dev/null)
"$CORDON" run --sandbox "$sro" -- sh -c 'echo x >ro-lease.txt' >/dev/null 2>&1
rc=$?
[ $rc -ne 0 ] && [ ! -e "$WORK/ro-lease.txt" ]
ok $? "a read-only lease's VM cannot write the workspace (exit $rc)"
"$CORDON" sandbox release "$sro" >/dev/null 2>&1
# A VM that dies mid-lease: its processes end with a reason, the lease's later spawns fail
# saying why, and the release still works.
sid=$("$CORDON" sandbox acquire --workspace-access read-write 2>/dev/null)
"$CORDON" run --sandbox "$sid" -- sh -c 'touch /tmp/up; exec sleep 300' >/dev/null \
	2>"$TEST_TMP/lost" &
pl=$!
for _ in $(seq 300); do
	"$CORDON" exec --sandbox "$sid" -- test -e /tmp/up 2>/dev/null && break
	sleep 0.1
done
qpid=$(for p in $(descendants "$(controller_pid)"); do
	[ "$(cat /proc/"$p"/comm 2>/dev/null)" = qemu-system-x86 ] && echo "$p"
done | head -1)
[ -n "$qpid" ] && kill -KILL "$qpid"
wait "$pl"
rc=$?
is 122 "$rc" "a process of a lease whose VM was killed ends as launcher-lost (exit 122: $(head -c 300 "$TEST_TMP/lost"))"
out=$("$CORDON" run --sandbox "$sid" -- /bin/true 2>&1)
rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "VM is gone"
ok $? "a later spawn in the lost lease fails saying why (exit $rc: $out)"
"$CORDON" events | grep '"type":"backend-lease-lost"' | grep -q "\"sandboxId\":\"$sid\""
ok $? "a backend-lease-lost event names the lease"
"$CORDON" sandbox release "$sid" >/dev/null 2>&1
ok $? "the lost lease is released"
is 0 "$(qemus)" "no QEMU is left after the lost lease"

# The conformance suite on builtin:vm: a bounded subset (each check boots several VMs) unless
# $CONFORMANCE_CHECKS says, with the lease checks that run in a VM. timeout and cancel check the
# exit reason only: a VM's processes are not on the host (the checks above show no QEMU is left).
SETUP="$TEST_TMP/vm-setup.sh"
# (an activation with the kernel: the suite's own activations keep the stored settings. For the
# ordinary user's run it is the first cordon call, so the controller it starts gets the
# environment; each user has a <vmDir> of its own, where its controller fetches the agent.)
cat >"$SETUP" <<SH
export CORDON_VM_HELPERS="$CORDON_VM_HELPERS" CORDON_VM_MKINITRAMFS="$CORDON_VM_MKINITRAMFS"
vmd=\$XDG_STATE_HOME/vm
mkdir -p "\$vmd"
for f in vmlinux modules modules.order; do ln -sfn "$CACHE/\$f" "\$vmd/\$f"; done
"\$1" backend activate builtin:vm --set kernel="\$vmd/vmlinux" \\
	--set helpersBaseUrl="file://$HELPERS/" >/dev/null
SH
chmod 0755 "$SETUP"
out=$(CORDON_CONFORMANCE_REFS=builtin:vm CORDON_CONFORMANCE_SETUP="$SETUP" \
	CONFORMANCE_CHECKS="${CONFORMANCE_CHECKS-exit-codes,stdio,stdin,env,cwd,timeout,cancel,read-only,read-write,cli-run,narrowing,lease-pinning,leases}" \
	bash "$top_srcdir/tests/conformance/run.sh" 2>&1)
rc=$?
echo "$out" | sed 's/^/# conformance: /'
[ $rc = 0 ]
ok $? "the conformance suite passes on builtin:vm"
echo "1..$TAP_N"
done_testing
