#!/usr/bin/env bash
# builtin:vm: a one-shot `cordon run -- /bin/true` (a cold micro-VM boot per command) paired
# with `cordon exec --sandbox ID -- /bin/true` in a warm lease (one VM, booted at acquire), timed
# in alternation by bench-paired (cold-run's ratio is how many warm commands one boot costs); then the steps behind each, from the controller's log: QEMU's
# start to the kernel (process, firmware, kernel load), the guest kernel's boot to the agent's
# hello, and the exec round trip inside the VM (EXEC sent to EXIT received by the VM's keeper);
# and a GET through network "proxy" from a warm VM lease paired with the same from an auto lease.
# Run from a build tree after `make bench`:
#   bench/vm.sh [ROUNDS] [KERNEL_DIR]     (default 15; KERNEL_DIR holds vmlinux, as
#                                          backends/vm/fetch-kernel.sh makes it)
# Target: a command in a warm lease <= 100 ms under TCG.
set -uo pipefail
rounds=${1:-15}
kdir=${2:-${CORDON_VM_CACHE:-$(pwd)/vm-cache}}
b=$(pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$b/bench/bench-paired" ] || { echo "vm.sh: run 'make bench' first" >&2; exit 1; }
[ -x "$b/cordon-vm-helpers" ] || { echo "vm.sh: cordon-vm-helpers is not built" >&2; exit 1; }
[ -s "$kdir/vmlinux" ] || { echo "vm.sh: no guest kernel in $kdir (backends/vm/fetch-kernel.sh $kdir)" >&2; exit 1; }
command -v qemu-system-x86_64 >/dev/null || { echo "vm.sh: qemu-system-x86_64 missing" >&2; exit 1; }
tmp=$(mktemp -d /tmp/cordon-bench-vm.XXXXXX)
chmod 0755 "$tmp"
export CORDON_CONTROLLER=$b/cordon-controller CORDON_LAUNCHERD=$b/cordon-launcherd
export CORDON_LAUNCHERD_SOCKET=/nonexistent/cordon-bench/launcherd.sock
export XDG_RUNTIME_DIR=$tmp/run XDG_STATE_HOME=$tmp/state
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME" "$tmp/work" "$tmp/vm"
chmod 700 "$XDG_RUNTIME_DIR"
cleanup() {
	local pid
	pid=$(head -n1 "$XDG_RUNTIME_DIR/cordon/controller.sock.lock" 2>/dev/null || true)
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
# This build's helpers as an offline mirror (the backend fetches and verifies the agent from it
# and builds the initramfs), beside links to the kernel and its modules.
export CORDON_VM_HELPERS=$b/cordon-vm-helpers CORDON_VM_MKINITRAMFS=$src/backends/vm/mkinitramfs.sh
CC=$(sed -n 's/^CC = //p' "$b/Makefile") "$src/backends/vm/build-helpers.sh" "$src" "$tmp/helpers" >/dev/null || exit 1
for f in vmlinux modules modules.order; do ln -s "$(cd "$kdir" && pwd)/$f" "$tmp/vm/$f"; done
cd "$tmp/work" || exit 1
"$b/cordon" backend activate builtin:vm --set kernel="$tmp/vm/vmlinux" \
	--set helpersBaseUrl="file://$tmp/helpers/" >/dev/null || exit 1
sid=$("$b/cordon" sandbox acquire --workspace-access read-write) || exit 1
log=$XDG_STATE_HOME/cordon/controller.log
echo "builtin:vm, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds"
"$b/bench/bench-paired" -n "$rounds" -w 1 \
	::: warm-exec "$b/cordon" exec --sandbox "$sid" -- /bin/true \
	::: cold-run "$b/cordon" run -- /bin/true || exit 1
"$b/cordon" sandbox release "$sid" >/dev/null

# Network "proxy": one HTTP GET through the allowed-domains proxy from a warm lease, the VM's
# (the guest's forwarder, the port "net", the controller's proxy) paired with auto's (the
# listener in the sandbox's netns), both with busybox wget against a server on 127.0.0.1.
python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "3"); self.end_headers()
        self.wfile.write(b"hi\n")
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()' "$tmp/port" &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port")
net=(--net proxy --allow-domain "good.test:$port" --resolve "good.test:$port:127.0.0.1")
get=(/bin/busybox wget -q -O /dev/null "http://good.test:$port/")
# (a one-shot first: it fetches the forwarder, which the lease's VM then boots with)
"$b/cordon" run "${net[@]}" -- "${get[@]}" >/dev/null &&
	vsid=$("$b/cordon" sandbox acquire "${net[@]}") &&
	"$b/cordon" backend activate builtin:auto >/dev/null &&
	asid=$("$b/cordon" sandbox acquire "${net[@]}") &&
	"$b/bench/bench-paired" -n "$rounds" -w 1 \
		::: vm-proxy-get "$b/cordon" exec --sandbox "$vsid" -- "${get[@]}" \
		::: auto-proxy-get "$b/cordon" exec --sandbox "$asid" -- "${get[@]}"
"$b/cordon" sandbox release "$vsid" >/dev/null 2>&1
"$b/cordon" sandbox release "$asid" >/dev/null 2>&1
kill "$srv" 2>/dev/null
# The steps, from the controller's log (the lease's own boot included among the boots).
python3 - "$log" <<'PY'
import re, statistics, sys
ready, boot, rt = [], [], {"one-shot": [], "lease": []}
for line in open(sys.argv[1]):
    m = re.search(r"VM ready (\d+) ms after QEMU's start \(guest kernel boot to the agent's hello (\d+) ms", line)
    if m:
        ready.append(int(m.group(1)))
        boot.append(int(m.group(2)))
    m = re.search(r"exec round trip in the VM \((one-shot|lease)\) (\d+) us", line)
    if m:
        rt[m.group(1)].append(int(m.group(2)) / 1000)
def med(v):
    return "%7.1f ms (n=%d, min %.1f, max %.1f)" % (statistics.median(v), len(v), min(v), max(v)) if v else "-"
print("steps (medians, from the controller's log):")
print("  QEMU start to the kernel (process, firmware, load): " + med([r - b for r, b in zip(ready, boot)]))
print("  guest kernel boot to the agent's hello:             " + med(boot))
print("  QEMU start to the agent's hello (a cold boot):      " + med(ready))
print("  exec round trip, a fresh VM's first command:       " + med(rt["one-shot"]))
print("  exec round trip in the warm lease's VM:             " + med(rt["lease"]))
PY
