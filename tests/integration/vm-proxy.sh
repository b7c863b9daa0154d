#!/usr/bin/env bash
# builtin:vm with network "proxy" (backends/vm/forward-mux.h): the guest has no NIC; the guest
# helper `forward` listens on 127.0.0.1:3128 and carries each connection over the virtio-serial
# port "net" to the controller's allowed-domains proxy, which decides as under auto. Under TCG
# here, with the kernel of $CORDON_VM_CACHE (see vm-backend.sh) and the helpers built into an
# offline mirror. Checks: an activation and `none` commands never fetch the forwarder (and
# `none` has no way out: no route, nothing on the proxy port); a lease booted before the
# forwarder was fetched refuses a proxy command saying why; the first `proxy` command fetches
# it (verified against its pin) and rebuilds the initramfs with it; a command in the VM reaches an
# allowed, pinned name served on the host's 127.0.0.1 through the proxy env vars, plain HTTP and
# CONNECT; a name not allowed gets 403 and a `net` audit event `denied`; an allowed one `allowed`
# and `closed` events; a lease runs a proxy command; a bulk download comes through intact.
# Skipped when QEMU or the kernel cannot be had, unless CORDON_MUST_WORK=1.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"
. "${top_srcdir:?}/tests/integration/vm-lib.sh"
command -v python3 >/dev/null || need "python3 missing"
FPIN=$(awk '$1 == "forward" { print $2 }' "$top_srcdir/backends/vm/helper-pins.txt")

# The upstream: an HTTP server on the host's loopback (a name pinned to it is allowed below).
python3 - "$TEST_TMP" <<'PY' &
import http.server, os, sys
d = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        body = b"upstream says hi\n" if self.path != "/big" else bytes(range(256)) * 8192
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(os.path.join(d, "port.tmp"), "w").write("%d\n" % srv.server_address[1])
os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))
srv.serve_forever()
PY
upstream=$!
trap 'kill $upstream 2>/dev/null; cleanup' EXIT
for _ in $(seq 100); do [ -s "$TEST_TMP/port" ] && break; sleep 0.05; done
read -r port <"$TEST_TMP/port"

WORK="$TEST_TMP/work"
mkdir -p "$WORK"
chmod 0777 "$WORK"
cd "$WORK" || exit 1

out=$("$CORDON" backend activate builtin:vm --set kernel="$VMD/vmlinux" \
	--set helpersBaseUrl="file://$HELPERS/" 2>&1)
ok $? "builtin:vm activates ($out)"
"$CORDON" backend list --json 2>/dev/null | tr -d ' \n' | grep -q '"networkModes":\["none","proxy"\]'
ok $? "the descriptor claims networkModes none and proxy"
[ ! -e "$VMD/bin/forward" ]
ok $? "the activation does not fetch the forwarder"
for m in loopback host; do
	out=$("$CORDON" run --net $m -- true 2>&1)
	rc=$?
	[ $rc -ne 0 ] && ! echo "$out" | grep -q "booted without"
	ok $? "network $m is still refused (rc $rc: $(echo "$out" | head -c 200))"
done

# none: no way out, and nothing listens on the proxy port (busybox nc).
out=$("$CORDON" run --net none -- sh -c 'ip -o link | cut -d: -f2 | tr -d " \n"; echo;
	nc -w 3 127.0.0.1 3128 </dev/null >/dev/null 2>&1 && echo "proxyport open" || echo "proxyport closed";
	nc -w 3 10.0.2.2 '"$port"' </dev/null >/dev/null 2>&1 && echo "out open" || echo "out closed"' 2>&1)
is "lo
proxyport closed
out closed" "$out" "none: only lo, nothing on 127.0.0.1:3128, no route out"
[ ! -e "$VMD/bin/forward" ]
ok $? "a none command does not fetch the forwarder"

net=(--net proxy --allow-domain "good.test:$port" --resolve "good.test:$port:127.0.0.1")
# A lease acquired before the forwarder was ever fetched: its VM has none, and a proxy command
# there fails saying so (the fetch starts, for the next VM).
sid=$("$CORDON" sandbox acquire "${net[@]}" 2>"$TEST_TMP/err")
ok $? "a proxy lease acquired before the forwarder is fetched ($sid $(head -c 300 "$TEST_TMP/err"))"
out=$("$CORDON" exec --sandbox "$sid" -- true 2>&1)
rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "booted without the guest's forwarder"
ok $? "a proxy command in it fails saying why (rc $rc: $(echo "$out" | head -c 300))"
"$CORDON" sandbox release "$sid" >/dev/null 2>&1
out=$("$CORDON" run "${net[@]}" -- sh -c 'echo "$http_proxy $HTTPS_PROXY"; wget -q -O - http://good.test:'"$port"'/' 2>"$TEST_TMP/err")
rc=$?
is "0 http://127.0.0.1:3128 http://127.0.0.1:3128
upstream says hi" "$rc $out" "proxy: plain HTTP to an allowed, pinned name through the proxy env vars ($(head -c 300 "$TEST_TMP/err"))"
is "$FPIN 755" "$(sha256sum "$VMD/bin/forward" 2>&1 | cut -d' ' -f1) $(stat -c %a "$VMD/bin/forward" 2>&1)" \
	"the first proxy command fetched the forwarder, verified against its pin"
gunzip -c "$VMD/initramfs.cpio.gz" | (cd "$TEST_TMP" && mkdir -p ird && cd ird &&
	cpio -i --quiet --make-directories sbin/cordon-forward 2>/dev/null)
cmp -s "$TEST_TMP/ird/sbin/cordon-forward" "$VMD/bin/forward"
ok $? "the initramfs was rebuilt with it as /sbin/cordon-forward"

# CONNECT by hand (busybox nc): the proxy's 200, then the tunnel to the upstream.
out=$("$CORDON" run "${net[@]}" -- sh -c 'printf "CONNECT good.test:'"$port"' HTTP/1.1\r\nHost: good.test:'"$port"'\r\n\r\nGET / HTTP/1.0\r\n\r\n" |
	nc 127.0.0.1 3128' 2>&1)
echo "$out" | grep -q "^HTTP/1.1 200" && echo "$out" | grep -q "upstream says hi"
ok $? "CONNECT to an allowed name tunnels to the upstream ($(echo "$out" | head -c 300 | tr '\r\n' '  '))"

out=$("$CORDON" run "${net[@]}" -- sh -c 'wget -q -O - http://evil.test:'"$port"'/ 2>&1; echo "rc $?"' 2>&1)
echo "$out" | grep -q "403" && echo "$out" | grep -q "rc 1"
ok $? "a name not allowed gets 403 ($(echo "$out" | tr '\n' ' ' | head -c 300))"
ev=$("$CORDON" events 2>/dev/null | grep '"type":"net"')
echo "$ev" | grep '"domain":"evil.test"' | grep -q '"decision":"denied"'
ok $? "…and a net event: denied, domain evil.test"
echo "$ev" | grep '"domain":"good.test"' | grep -q '"decision":"allowed"' &&
	echo "$ev" | grep '"domain":"good.test"' | grep -q '"decision":"closed"'
ok $? "the allowed connections are net events allowed and closed"

# A bulk download (2 MiB): flow control and framing carry every byte.
out=$("$CORDON" run "${net[@]}" -- sh -c 'wget -q -O - http://good.test:'"$port"'/big | md5sum' 2>&1)
want=$(python3 -c 'import hashlib; print(hashlib.md5(bytes(range(256)) * 8192).hexdigest())')
is "$want  -" "$out" "2 MiB through the forwarder arrive intact"

# A lease: the proxy command runs in the lease's VM (booted after the forwarder was fetched).
sid=$("$CORDON" sandbox acquire "${net[@]}" 2>"$TEST_TMP/err")
ok $? "a lease on builtin:vm ($sid $(head -c 300 "$TEST_TMP/err"))"
out=$("$CORDON" exec --sandbox "$sid" -- wget -q -O - "http://good.test:$port/" 2>&1)
is "upstream says hi" "$out" "a proxy command in a lease reaches the allowed name"
out=$("$CORDON" exec --sandbox "$sid" -- sh -c 'wget -q -O - http://evil.test:'"$port"'/ >/dev/null 2>&1; echo $?' 2>&1)
is 1 "$out" "…and not a name not allowed"
"$CORDON" sandbox release "$sid" >/dev/null 2>&1
ok $? "the lease is released"

echo "1..$TAP_N"
done_testing
