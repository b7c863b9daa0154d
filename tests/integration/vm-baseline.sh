#!/usr/bin/env bash
# builtin:vm snapshot baselines (backends/vm/vm-baseline.c), under TCG here: with
# baselineEnabled, the first VM boots cold and saves a baseline at its agent's hello (an artifact
# and its manifest, last, in a 0700 directory); the next ones restore it (faster; the
# controller's log says so), each with its own /dev/urandom and clock; a flipped byte in the
# artifact, an edited manifest or another baselineEpoch: a backend-baseline-invalid event, one
# cold boot and a fresh baseline; the least recently used go beyond
# baselineMaxInactiveArtifacts or baselineMaxBytes; and nothing of a command (its argv) is in the cache. Skipped
# when QEMU or the kernel cannot be had, unless CORDON_MUST_WORK=1.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"
. "${top_srcdir:?}/tests/integration/vm-lib.sh"
BL="$TEST_TMP/baselines"
LOG="$XDG_STATE_HOME/cordon/controller.log"
SETS=(--set kernel="$VMD/vmlinux" --set helpersBaseUrl="file://$HELPERS/"
	--set baselineEnabled=true --set baselineDir="$BL" --set baselineMaxInactiveArtifacts=2)

WORK="$TEST_TMP/work"
mkdir -p "$WORK"
chmod 0777 "$WORK"
cd "$WORK" || exit 1

ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
count() {
	local n
	n=$(grep -c -- "$1" "$LOG" 2>/dev/null)
	echo "${n:-0}"
}
manifests() { find "$BL" -maxdepth 1 -name '*.json' | wc -l; }
artifacts() { find "$BL" -maxdepth 1 -name '*.vmstate' | wc -l; }
# Every manifest names its artifact's digest.
consistent() {
	local m a
	for m in "$BL"/*.json; do
		a=${m%.json}.vmstate
		[ "$(sha256sum <"$a" | cut -d' ' -f1)" = \
			"$(grep -o '"artifact":{"sha256":"[0-9a-f]*"' "$m" | grep -o '[0-9a-f]\{64\}')" ] ||
			return 1
	done
}

out=$("$CORDON" backend activate builtin:vm "${SETS[@]}" 2>&1)
ok $? "builtin:vm activates with baselines on ($out)"

SECRET="cordon-baseline-canary-$RANDOM$RANDOM"
t=$(date +%s%N)
out=$("$CORDON" run -- sh -c "echo cold; : $SECRET" 2>&1)
cold_ms=$(ms "$t")
is cold "$out" "the first command runs (cold boot: $cold_ms ms)"
is "1 1 700" "$(manifests) $(artifacts) $(stat -c %a "$BL" 2>&1)" \
	"it left one artifact and its manifest, in a 0700 directory"
is 1 "$(count 'baseline [0-9a-f]* saved')" "the controller's log says the baseline was saved"
consistent
ok $? "the manifest holds the artifact's sha256"
KEY=$(basename "$(ls "$BL"/*.json)" .json)
grep -q '"owner":'"$(id -u)" "$BL/$KEY.json" && grep -q '"epoch":0' "$BL/$KEY.json" &&
	grep -q '"accelerator":"tcg"' "$BL/$KEY.json" && grep -q '"qemu":{"sha256":"' "$BL/$KEY.json"
ok $? "the manifest binds QEMU's digest, the accelerator, the epoch and the owner"
is "" "$(find "$BL" -maxdepth 1 -type f ! -perm 0400)" "its files are 0400"

t=$(date +%s%N)
out=$("$CORDON" run -- sh -c 'echo warm' 2>&1)
warm_ms=$(ms "$t")
is warm "$out" "the second command runs"
is 1 "$(count 'restored from baseline')" "its VM was restored from the baseline"
[ "$warm_ms" -lt "$cold_ms" ]
ok $? "restore + run ($warm_ms ms) is faster than cold boot + run ($cold_ms ms)"

a=$("$CORDON" run -- sh -c 'head -c 32 /dev/urandom | od -An -tx1 | tr -d " \n"; echo " $(date +%s)"')
b=$("$CORDON" run -- sh -c 'head -c 32 /dev/urandom | od -An -tx1 | tr -d " \n"')
is 3 "$(count 'restored from baseline')" "both were restored"
[ "$(count 'baseline [0-9a-f]* saved')" = 1 ]
ok $? "and no other baseline was saved"
[ -n "$a" ] && [ "${a%% *}" != "$b" ] && [ ${#b} -eq 64 ]
ok $? "two restored VMs read different /dev/urandom bytes ($a / $b)"
gt=${a##* }
ht=$(date +%s)
[ $((ht - gt)) -lt 30 ] && [ $((gt - ht)) -lt 30 ]
ok $? "a restored guest has the host's clock (guest $gt, host $ht)"
out=$("$CORDON" run -- sh -c 'echo ws >ws.txt; cat ws.txt')
is "ws ws" "$out $(cat "$WORK/ws.txt" 2>&1)" "the workspace is mounted after the restore, read-write"
sid=$("$CORDON" sandbox acquire --workspace-access read-write 2>&1)
ok $? "a lease is acquired ($sid)"
out=$("$CORDON" exec --sandbox "$sid" -- sh -c 'echo lease; cat ws.txt' 2>&1)
"$CORDON" sandbox release "$sid" >/dev/null 2>&1
is "lease ws 5" "$(echo $out) $(count 'restored from baseline')" "a lease's VM is restored too"

# One byte flipped in the middle of the artifact: refused, cold once, a fresh baseline.
size=$(stat -c %s "$BL/$KEY.vmstate")
chmod u+w "$BL/$KEY.vmstate"
off=$((size / 2))
byte=$(dd if="$BL/$KEY.vmstate" bs=1 skip=$off count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
printf "\\$(printf %03o $(((byte + 1) % 256)))" |
	dd of="$BL/$KEY.vmstate" bs=1 seek=$off conv=notrunc 2>/dev/null
chmod u-w "$BL/$KEY.vmstate"
inv0=$(count 'baseline invalid')
out=$("$CORDON" run -- sh -c 'echo after-tamper' 2>&1)
is after-tamper "$out" "a command still runs when the artifact was tampered with"
is $((inv0 + 1)) "$(count 'baseline invalid: the artifact.s digest does not match')" \
	"the digest mismatch was caught"
"$CORDON" events 2>/dev/null | grep '"type":"backend-baseline-invalid"' | grep -q digest
ok $? "a backend-baseline-invalid event says why"
is 2 "$(count 'baseline [0-9a-f]* saved')" "it booted cold and saved a fresh baseline"
consistent
ok $? "the fresh manifest matches the fresh artifact"
out=$("$CORDON" run -- sh -c 'echo again' 2>&1)
is "again 6" "$out $(count 'restored from baseline')" "the next VM restores the fresh one"

# An edited manifest: refused once.
chmod u+w "$BL/$KEY.json"
sed -i 's/"memoryMiB":256/"memoryMiB":257/' "$BL/$KEY.json"
out=$("$CORDON" run -- sh -c 'echo edited' 2>&1)
is edited "$out" "a command runs when the manifest was edited"
is 1 "$(count 'baseline refused: the manifest does not match')" "the edited manifest was refused"
is "3 6" "$(count 'baseline [0-9a-f]* saved') $(count 'restored from baseline')" \
	"that VM booted cold and saved a fresh baseline"

# Another epoch: refused once, then restored.
out=$("$CORDON" backend settings builtin:vm --set baselineEpoch=1 2>&1)
ok $? "the epoch changes ($out)"
out=$("$CORDON" run -- true 2>&1)
is 1 "$(count 'baseline refused: the baseline epoch changed')" "a baseline of another epoch is refused"
"$CORDON" events 2>/dev/null | grep '"type":"backend-baseline-invalid"' | grep -q epoch
ok $? "with an event"
"$CORDON" run -- true
is "4 7" "$(count 'baseline [0-9a-f]* saved') $(count 'restored from baseline')" \
	"cold once, then restored"
grep -q '"epoch":1' "$BL/$KEY.json"
ok $? "the fresh manifest has the new epoch"

# LRU by count (2): a read-only workspace and another memory size are other configurations.
"$CORDON" run --workspace-access read-only -- true
is 2 "$(manifests)" "a second configuration, a second baseline"
touch -d '-1 hour' "$BL"/*.json
"$CORDON" run -- true
sleep 0.1
out=$("$CORDON" backend settings builtin:vm --set memoryMiB=192 2>&1)
ok $? "the memory size changes ($out)"
"$CORDON" run -- true
is "2 2" "$(manifests) $(artifacts)" "a third configuration: the least recently used goes"
[ -e "$BL/$KEY.json" ]
ok $? "the most recently used (restored just before) stays"
grep -q '"memoryMiB":192' "$BL"/*.json
ok $? "and the newest"
# LRU by bytes: room for one artifact.
out=$("$CORDON" backend settings builtin:vm --set baselineMaxBytes=100000000 2>&1)
ok $? "the byte limit changes ($out)"
"$CORDON" run --workspace-access read-only -- true
is 1 "$(manifests)" "beyond the byte limit the least recently used go"
grep -q 'readonly=on' "$BL"/*.json
ok $? "the newest stays"
is "" "$(find "$BL" -name '.tmp-*')" "no temporary file is left"

is "" "$(grep -rl -- "$SECRET" "$BL" 2>&1)" "nothing of a command's is in the cache"
echo "1..$TAP_N"
done_testing
