#!/usr/bin/env bash
# Network mode "proxy" end to end: launcherd makes the listener inside the sandbox's netns, the
# controller serves it, and curl inside the sandbox reaches only what the policy allows.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
for t in curl python3; do command -v $t >/dev/null || skip_all "$t missing"; done
plan 20

work="$TEST_TMP/work"
mkdir -p "$work" && cd "$work" || exit 1

# An upstream HTTP server and a UDP echo server on the host's loopback.
python3 - "$TEST_TMP" <<'PY' &
import http.server, socket, sys, threading, os
d = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"upstream says hi\n"
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
def udp():
    while True:
        data, peer = u.recvfrom(512)
        open(os.path.join(d, "udp-seen"), "a").write("x")
        u.sendto(data, peer)
threading.Thread(target=udp, daemon=True).start()
open(os.path.join(d, "ports.tmp"), "w").write("%d %d\n" % (srv.server_address[1], u.getsockname()[1]))
os.rename(os.path.join(d, "ports.tmp"), os.path.join(d, "ports"))
threading.Timer(120, srv.shutdown).start()
srv.serve_forever()
PY
upstream=$!
trap 'kill $upstream 2>/dev/null; cleanup' EXIT
for _ in $(seq 100); do [ -s "$TEST_TMP/ports" ] && break; sleep 0.05; done
read -r port uport <"$TEST_TMP/ports"

net=(--net proxy --allow-domain "good.test:$port" --resolve "good.test:$port:127.0.0.1")
out=$("$CORDON" run "${net[@]}" -- curl -s "http://good.test:$port/" 2>&1)
is "upstream says hi" "$out" "plain HTTP to an allowed, pinned name goes through the proxy"
out=$("$CORDON" run "${net[@]}" -- curl -s -p "http://good.test:$port/" 2>&1)
is "upstream says hi" "$out" "CONNECT to an allowed name"
out=$("$CORDON" run "${net[@]}" -- curl -s --socks5-hostname 127.0.0.1:3128 "http://good.test:$port/" 2>&1)
is "upstream says hi" "$out" "SOCKS5 with a domain name"

code=$("$CORDON" run "${net[@]}" -- curl -s -o /dev/null -w '%{http_code}' "http://evil.test:$port/" 2>&1)
is 403 "$code" "a name not allowed gets 403"
body=$("$CORDON" run "${net[@]}" -- curl -s "http://evil.test:$port/" 2>&1)
echo "$body" | grep -q "allowDomains"
ok $? "the 403 body names the rule that denied it"
"$CORDON" events | grep '"type":"net"' | grep -q '"decision":"denied".*"domain":"evil.test"\|"domain":"evil.test".*"decision":"denied"'
ok $? "the denial is an event"
code=$("$CORDON" run "${net[@]}" -- curl -s --noproxy '' -x http://127.0.0.1:3128 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/" 2>&1)
is 403 "$code" "an IP literal is denied"
# NO_PROXY lists localhost: -x and --noproxy '' send it through the proxy anyway.
out=$("$CORDON" run "${net[@]}" --allow-domain "localhost:$port" -- curl -s --noproxy '' \
	-x http://127.0.0.1:3128 -w '\n%{http_code}' "http://localhost:$port/" 2>&1)
[ "$(echo "$out" | tail -n 1)" = 403 ] && echo "$out" | grep -q "loopback address"
ok $? "an allowed name that resolves to 127.0.0.1 without a pin is denied" || diag "$out"
# A pin is no permission: the policy refuses one for a name it does not allow (and the proxy
# would too: tests/unit/test-proxy-rules.c).
out=$("$CORDON" run "${net[@]}" --resolve "pinned.test:$port:127.0.0.1" -- curl -s \
	"http://pinned.test:$port/" 2>&1)
rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q '"pinned.test" is not in network.allowDomains'
ok $? "a name pinned to 127.0.0.1 but not allowed is refused (rc $rc: $out)"

"$CORDON" run "${net[@]}" -- curl -s -m 3 --noproxy '*' "http://127.0.0.1:$port/" >/dev/null 2>&1
ok $(($? == 0)) "a direct connect to the host's 127.0.0.1 listener fails"
"$CORDON" run "${net[@]}" -- python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)' 2>/dev/null
ok $(($? == 0)) "a raw socket cannot be opened"
out=$("$CORDON" run "${net[@]}" -- python3 -c 'import socket; print([n for _, n in socket.if_nameindex()])' 2>&1)
is "['lo']" "$out" "netlink route queries of its own namespace work (if_nameindex: only lo)"
"$CORDON" run "${net[@]}" -- python3 -c "
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1)
s.sendto(b'query', ('127.0.0.1', $uport))
s.recvfrom(512)" 2>/dev/null
ok $(($? == 0)) "UDP (plain DNS-style) to the host's loopback gets no answer"
[ ! -e "$TEST_TMP/udp-seen" ]
ok $? "…and never reached the host"
env_out=$("$CORDON" run "${net[@]}" -- sh -c 'echo "$HTTPS_PROXY $NO_PROXY"')
is "http://127.0.0.1:3128 localhost,127.0.0.1" "$env_out" "the proxy variables are set in the sandbox"

# A live allowlist change applies to new connections.
id=$("$CORDON" run --detach --net proxy --allow-domain "good.test:$port" \
	--resolve "good.test:$port:127.0.0.1" --resolve "late.test:$port:127.0.0.1" \
	--allow-domain "late.test:1" -- sh -c "
	for i in \$(seq 100); do
		[ -e go ] && break; sleep 0.1
	done
	curl -s -o before.txt -w '%{http_code}' http://late.test:$port/ > before.code
	touch asked
	for i in \$(seq 100); do
		[ -e go2 ] && break; sleep 0.1
	done
	curl -s -o /dev/null -w '%{http_code}' http://late.test:$port/ > after.code
	curl -s -o /dev/null -w '%{http_code}' http://good.test:$port/ > good-after.code
	curl -s -o /dev/null -w '%{http_code}' http://evil.test:$port/ > evil-after.code")
touch go
for _ in $(seq 100); do [ -e asked ] && break; sleep 0.1; done
# Another user cannot widen (the controller serves its own user only), and nothing changes.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$CORDON" net allow "$id" "evil.test:$port" >/dev/null 2>&1
	ok $(($? == 0)) "another user's \`cordon net allow\` is refused"
else
	na "needs root and setpriv to act as another user"
fi
"$CORDON" net allow "$id" "late.test:$port" >/dev/null && "$CORDON" net deny "$id" "good.test" >/dev/null
touch go2
"$CORDON" wait "$id" >/dev/null
is "403 200" "$(cat before.code) $(cat after.code)" "net allow: a denied name is reachable for new connections"
is 403 "$(cat good-after.code)" "net deny: a denied name is refused from then on"
is 403 "$(cat evil-after.code)" "…and the other user's allow changed nothing"
"$CORDON" events | grep -q '"type":"net-policy"'
ok $? "both changes are events"
done_testing
