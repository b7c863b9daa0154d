#!/usr/bin/env bash
# builtin:vm snapshot baselines: a one-shot `cordon run -- /bin/true` whose VM is restored from
# a baseline (baselineEnabled) paired with the same command booting its VM cold (baselines off),
# two controllers side by side, timed in alternation by bench-paired; then the steps behind the
# restore from the first controller's log (the artifact streamed into QEMU and verified, QEMU's
# start to the agent's INIT, the first exec's round trip).
# Run from a build tree after `make bench`:
#   bench/vm-baseline.sh [ROUNDS] [KERNEL_DIR]   (default 15; KERNEL_DIR holds vmlinux, modules
#                                                  and modules.order, as fetch-kernel.sh makes them)
# Target: restore + /bin/true <= 0.15 x cold boot + /bin/true.
set -uo pipefail
rounds=${1:-15}
kdir=${2:-${CORDON_VM_CACHE:-$(pwd)/vm-cache}}
b=$(pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$b/bench/bench-paired" ] || { echo "vm-baseline.sh: run 'make bench' first" >&2; exit 1; }
[ -s "$kdir/vmlinux" ] && [ -s "$kdir/modules.order" ] ||
	{ echo "vm-baseline.sh: no guest kernel in $kdir (backends/vm/fetch-kernel.sh $kdir)" >&2; exit 1; }
command -v qemu-system-x86_64 >/dev/null || { echo "vm-baseline.sh: qemu-system-x86_64 missing" >&2; exit 1; }
tmp=$(mktemp -d /tmp/cordon-bench-vmbl.XXXXXX)
chmod 0755 "$tmp"
export CORDON_CONTROLLER=$b/cordon-controller CORDON_LAUNCHERD=$b/cordon-launcherd
export CORDON_LAUNCHERD_SOCKET=/nonexistent/cordon-bench/launcherd.sock
export CORDON_VM_HELPERS=$b/cordon-vm-helpers CORDON_VM_MKINITRAMFS=$src/backends/vm/mkinitramfs.sh
for c in warm cold; do
	mkdir -p "$tmp/$c/run" "$tmp/$c/state" "$tmp/$c/vm"
	chmod 700 "$tmp/$c/run"
	for f in vmlinux modules modules.order; do ln -s "$(cd "$kdir" && pwd)/$f" "$tmp/$c/vm/$f"; done
done
mkdir -p "$tmp/work"
cleanup() {
	local pid c
	for c in warm cold; do
		pid=$(head -n1 "$tmp/$c/run/cordon/controller.sock.lock" 2>/dev/null || true)
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
# The guest helpers from this source, as an offline mirror.
CC=$(sed -n 's/^CC = //p' "$b/Makefile")
(cd "$tmp" && CC=$CC "$src/backends/vm/build-helpers.sh" "$src" "$tmp/helpers") >"$tmp/helpers.log" 2>&1 ||
	{ echo "vm-baseline.sh: the guest helpers do not build" >&2; cat "$tmp/helpers.log" >&2; exit 1; }
as() { local c=$1; shift; env XDG_RUNTIME_DIR="$tmp/$c/run" XDG_STATE_HOME="$tmp/$c/state" "$@"; }
cd "$tmp/work" || exit 1
as warm "$b/cordon" backend activate builtin:vm --set kernel="$tmp/warm/vm/vmlinux" \
	--set helpersBaseUrl="file://$tmp/helpers/" --set baselineEnabled=true \
	--set baselineDir="$tmp/baselines" >/dev/null || exit 1
as cold "$b/cordon" backend activate builtin:vm --set kernel="$tmp/cold/vm/vmlinux" \
	--set helpersBaseUrl="file://$tmp/helpers/" >/dev/null || exit 1
# The baseline: the first VM's (a cold boot that saves it).
as warm "$b/cordon" run -- /bin/true || exit 1
log=$tmp/warm/state/cordon/controller.log
echo "builtin:vm baselines, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds," \
	"artifact $(du -k "$tmp"/baselines/*.vmstate | cut -f1) KiB"
"$b/bench/bench-paired" -n "$rounds" -w 1 \
	::: restore-run env XDG_RUNTIME_DIR="$tmp/warm/run" XDG_STATE_HOME="$tmp/warm/state" "$b/cordon" run -- /bin/true \
	::: cold-run env XDG_RUNTIME_DIR="$tmp/cold/run" XDG_STATE_HOME="$tmp/cold/state" "$b/cordon" run -- /bin/true ||
	exit 1
python3 - "$log" "$tmp/cold/state/cordon/controller.log" <<'PY'
import re, statistics, sys
def scan(path):
    ready, stream, rt, saved = [], [], [], []
    for line in open(path):
        m = re.search(r"VM ready (\d+) ms after QEMU's start", line)
        if m:
            ready.append(int(m.group(1)))
        m = re.search(r"restored from baseline \w+ \((\d+) KiB streamed and verified in (\d+) ms", line)
        if m:
            stream.append(int(m.group(2)))
        m = re.search(r"baseline \w+ saved \((\d+) KiB in (\d+) ms", line)
        if m:
            saved.append(int(m.group(2)))
        m = re.search(r"exec round trip in the VM \(one-shot\) (\d+) us", line)
        if m:
            rt.append(int(m.group(1)) / 1000)
    return ready, stream, rt, saved
def med(v):
    return "%7.1f ms (n=%d, min %.1f, max %.1f)" % (statistics.median(v), len(v), min(v), max(v)) if v else "-"
wr, ws, wrt, sv = scan(sys.argv[1])
cr, _, crt, _ = scan(sys.argv[2])
print("steps (medians, from the controllers' logs):")
print("  baseline save (stop, migrate, hash, fsync, rename, cont): " + med(sv))
print("  restore: QEMU start + artifact streamed and verified:     " + med(ws))
print("  restore: QEMU start to INIT sent (ready):                  " + med(wr[1:]))
print("  restore: first exec round trip:                            " + med(wrt[1:]))
print("  cold: QEMU start to the agent's hello (ready):            " + med(cr))
print("  cold: first exec round trip:                               " + med(crt))
PY
