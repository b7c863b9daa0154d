#!/usr/bin/env bash
# builtin:vm when cordon-controller is killed (SIGKILL) while a VM boots, before the guest's
# agent is ready: during a cold boot, during a restore from a snapshot baseline, and while the
# keeper saves a baseline. Each time the QEMU this test's controller started (found by pid among
# its descendants, the keeper its parent) and its keeper are gone within seconds (QEMU dies with
# its keeper, the keeper with the controller: PR_SET_PDEATHSIG), the next activation (in a
# controller started again on demand) removes what a killed save left in the baseline
# directory, and the baseline cache stays usable: the next command runs, from a complete
# baseline or after a cold boot that saves one, never from a partial artifact.
# The guest's tsc_early_khz is the same in two controllers' VMs. Skipped when QEMU or the
# kernel cannot be had, unless CORDON_MUST_WORK=1.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"
. "${top_srcdir:?}/tests/integration/vm-lib.sh"
BL="$TEST_TMP/baselines"
LOG="$XDG_STATE_HOME/cordon/controller.log"
WORK="$TEST_TMP/work"
mkdir -p "$WORK"
chmod 0777 "$WORK"
cd "$WORK" || exit 1

# "PID STARTTIME": a process, told apart from a later one of the same pid.
ident() { echo "$1 $(awk '{print $22}' "/proc/$1/stat" 2>/dev/null)"; }
alive() {
	local st
	st=$(awk '{print $22, $3}' "/proc/${1% *}/stat" 2>/dev/null) || return 1
	[ "${st% *}" = "${1#* }" ] && [ "${st#* }" != Z ]
}
# Wait up to 10 s for a process to be gone (or a zombie).
gone() {
	for _ in $(seq 100); do
		alive "$1" || return 0
		sleep 0.1
	done
	return 1
}
# The QEMU of this test's controller, once it runs: "QEMU_PID KEEPER_PID" (empty after 60 s).
find_qemu() {
	local cpid p
	for _ in $(seq 3000); do
		cpid=$(controller_pid 2>/dev/null)
		if [ -n "$cpid" ]; then
			for p in $(descendants "$cpid"); do
				if [ "$(cat /proc/"$p"/comm 2>/dev/null)" = qemu-system-x86 ]; then
					echo "$p $(awk '{print $4}' /proc/"$p"/stat)"
					return
				fi
			done
		fi
		sleep 0.02
	done
}
leftovers() { find "$BL" -maxdepth 1 -name '.tmp-*' 2>/dev/null | wc -l; }
lines() { wc -l <"$LOG" 2>/dev/null || echo 0; }
since() { tail -n +$(($1 + 1)) "$LOG" 2>/dev/null | grep -c -- "$2"; }
consistent() {
	local m a
	for m in "$BL"/*.json; do
		a=${m%.json}.vmstate
		[ "$(sha256sum <"$a" | cut -d' ' -f1)" = \
			"$(grep -o '"artifact":{"sha256":"[0-9a-f]*"' "$m" | grep -o '[0-9a-f]\{64\}')" ] ||
			return 1
	done
}

out=$("$CORDON" backend activate builtin:vm --set kernel="$VMD/vmlinux" \
	--set helpersBaseUrl="file://$HELPERS/" --set baselineEnabled=true \
	--set baselineDir="$BL" 2>&1)
ok $? "builtin:vm activates with baselines on ($out)"

# After a kill: an explicit activation of builtin:vm in the new controller.
reactivate() { "$CORDON" backend activate builtin:vm 2>&1; }

# Start a command, find its QEMU, SIGKILL the controller when check says so; $KILLED: whether
# the command had not finished by then.
kill_mid_boot() {
	local when=$1 cpid q keeper
	"$CORDON" run -- sh -c 'echo finished' >"$TEST_TMP/run.out" 2>&1 &
	RUN=$!
	# Its command line is empty between the exec's new name and the ELF loader's arguments. A
	# QEMU that ends before showing it (once under CI's load: one the keeper started and
	# stopped at once) is not the VM's: look again.
	for _ in 1 2 3; do
		q=$(find_qemu)
		TSC=
		for _ in $(seq 500); do
			TSC=$(tr '\0' '\n' <"/proc/${q% *}/cmdline" 2>/dev/null |
				grep -o 'tsc_early_khz=[0-9]*')
			[ -n "$TSC" ] && break
			[ -e "/proc/${q% *}" ] || break
			sleep 0.01
		done
		[ -n "$TSC" ] && break
		diag "QEMU ${q% *} ended before its command line could be read ($(ls "$BL" 2>/dev/null | tr '\n' ' '))"
	done
	cpid=$(controller_pid)
	QEMU=$(ident "${q% *}")
	KEEPER=$(ident "${q#* }")
	if [ "$when" = save ]; then
		for _ in $(seq 3000); do
			[ "$(leftovers)" != 0 ] && break
			sleep 0.005
		done
		SAVING=$(leftovers)
	fi
	KILLED_EARLY=1
	grep -q finished "$TEST_TMP/run.out" && KILLED_EARLY=0
	kill -9 "$cpid"
	wait "$RUN" 2>/dev/null
	grep -q finished "$TEST_TMP/run.out" && KILLED_EARLY=0
}

# 1. A cold boot (no baseline yet).
kill_mid_boot now
[ -n "${QEMU% *}" ] && [ "$KILLED_EARLY" = 1 ]
ok $? "the controller was killed while the VM booted (QEMU ${QEMU% *}, keeper ${KEEPER% *})"
gone "$QEMU"
ok $? "its QEMU is gone"
gone "$KEEPER"
ok $? "its keeper is gone"
n=$(lines)
out=$("$CORDON" run -- sh -c 'echo next' 2>&1)
is next "$out" "the next command runs, in a controller started on demand with builtin:vm saved"
is "1 1" "$(since "$n" 'baseline [0-9a-f]* saved') $(find "$BL" -maxdepth 1 -name '*.json' | wc -l)" \
	"it booted cold and saved a baseline"
consistent
ok $? "the baseline is whole (its manifest names its artifact's digest)"
is 0 "$(leftovers)" "no temporary file in the baseline directory"

TSC1=$TSC

# 2. A restore from that baseline.
before=$(sha256sum "$BL"/*.vmstate "$BL"/*.json)
kill_mid_boot now
[ -n "${QEMU% *}" ] && [ "$KILLED_EARLY" = 1 ]
ok $? "the controller was killed while the VM was restored (QEMU ${QEMU% *})"
gone "$QEMU"
ok $? "its QEMU is gone"
gone "$KEEPER"
ok $? "its keeper is gone"
is "$before" "$(sha256sum "$BL"/*.vmstate "$BL"/*.json)" "the baseline is untouched"
[ -n "$TSC1" ]
ok $? "the guest's TSC frequency comes from the host ($TSC1)"
is "$TSC1" "$TSC" "the same in another controller's VM (a stable source, not a calibration)"
out=$(reactivate)
ok $? "the next activation ($out)"
n=$(lines)
out=$("$CORDON" run -- sh -c 'echo restored' 2>&1)
is restored "$out" "the next command runs"
is 1 "$(since "$n" 'restored from baseline')" "restored from the baseline"

# 3. While the keeper saves a baseline: a new configuration (memory) boots cold and saves one.
"$CORDON" backend settings builtin:vm --set memoryMiB=320 >/dev/null 2>&1
ok $? "another configuration (memoryMiB=320)"
kill_mid_boot save
if [ "${SAVING:-0}" != 0 ]; then
	ok 0 "the controller was killed while the keeper saved a baseline (QEMU ${QEMU% *})"
	gone "$QEMU"
	ok $? "its QEMU is gone"
	gone "$KEEPER"
	ok $? "its keeper is gone"
	out=$(reactivate)
	ok $? "the next activation ($out)"
	is 0 "$(leftovers)" "it removed the killed save's temporary files"
	n=$(lines)
	out=$("$CORDON" run -- sh -c 'echo after-save' 2>&1)
	is after-save "$out" "the next command runs"
	consistent
	ok $? "every baseline left is whole"
	out=$("$CORDON" run -- sh -c 'echo again' 2>&1)
	is again "$out" "and the one after"
	[ "$(since "$n" 'restored from baseline')" -ge 1 ]
	ok $? "restored from a complete baseline"
else
	for _ in 1 2 3 4 5 6 7 8 9; do na "the save was over before it could be seen"; done
fi
n=0
for p in $(descendants "$(controller_pid)"); do
	[ "$(cat /proc/"$p"/comm 2>/dev/null)" = qemu-system-x86 ] && n=$((n + 1))
done
is 0 "$n" "no QEMU of this test's controller is left"
echo "1..$TAP_N"
done_testing
