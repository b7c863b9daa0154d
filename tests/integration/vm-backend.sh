#!/usr/bin/env bash
# builtin:vm (backends/vm/): a QEMU micro-VM per command, under TCG here. The guest kernel is
# fetched beforehand (backends/vm/fetch-kernel.sh DIR, from the distribution's mirror: .ci/run
# does it with the package installs; a test talks to nothing but loopback), found in
# $CORDON_VM_CACHE or the build directory's vm-cache, and the initramfs built from the agent
# this build made; then, with builtin:vm
# activated explicitly: a command's output and exit code, stdout and stderr apart, stdin, a
# signal, a timeout that kills QEMU and leaves no process, a read-only workspace that the guest
# cannot write, two boots that read different /dev/urandom bytes, and the conformance suite on
# the backend ($CONFORMANCE_CHECKS, default a bounded subset). Skipped when QEMU or the kernel
# cannot be had, unless CORDON_MUST_WORK=1.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

# Slow (a boot per command under TCG): run once per CI, in the first build.
if [ -n "${CORDON_SKIP_SLOW:-}" ]; then
	echo "1..0 # SKIP slow: run in the other build"
	exit 0
fi

AGENT="$top_builddir/backends/vm/guest/cordon-vm-agent"
CACHE=${CORDON_VM_CACHE:-$top_builddir/vm-cache}
# (skip_all is a failure under CORDON_MUST_WORK=1)
need() { skip_all "$1"; }
[ -x "$CORDON" ] || skip_all "cordon not built"
[ -x "$AGENT" ] || need "the guest agent is not built"
command -v qemu-system-x86_64 >/dev/null || need "qemu-system-x86_64 missing (qemu-system-x86)"
[ -x /bin/busybox ] || need "no static busybox (busybox-static)"
[ -s "$CACHE/vmlinux" ] ||
	need "no guest kernel in $CACHE (backends/vm/fetch-kernel.sh $CACHE fetches it)"
if [ ! -s "$CACHE/initramfs.cpio.gz" ] || [ "$AGENT" -nt "$CACHE/initramfs.cpio.gz" ]; then
	"$top_srcdir/backends/vm/mkinitramfs.sh" "$AGENT" "$CACHE" "$CACHE/initramfs.cpio.gz" ||
		need "the initramfs could not be built"
fi
chmod -R a+rX "$CACHE"

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
out=$("$CORDON" backend activate builtin:vm --set kernel="$CACHE/vmlinux" 2>&1)
ok $? "builtin:vm activates ($out)"

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

# The conformance suite on builtin:vm: a bounded subset (each check boots several VMs) unless
# $CONFORMANCE_CHECKS says. timeout and cancel check the exit reason only: a VM's processes are
# not on the host (the checks above show no QEMU is left).
SETUP="$TEST_TMP/vm-setup.sh"
# (an activation with the kernel: the suite's own activations keep the stored settings)
cat >"$SETUP" <<SH
"\$1" backend activate builtin:vm --set kernel="$CACHE/vmlinux" >/dev/null
SH
chmod 0755 "$SETUP"
out=$(CORDON_CONFORMANCE_REFS=builtin:vm CORDON_CONFORMANCE_SETUP="$SETUP" \
	CONFORMANCE_CHECKS="${CONFORMANCE_CHECKS-exit-codes,stdio,stdin,env,cwd,timeout,cancel,read-only,read-write}" \
	bash "$top_srcdir/tests/conformance/run.sh" 2>&1)
rc=$?
echo "$out" | sed 's/^/# conformance: /'
[ $rc = 0 ]
ok $? "the conformance suite passes on builtin:vm"
echo "1..$TAP_N"
done_testing
