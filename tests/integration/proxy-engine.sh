#!/bin/sh
# The allowed-domains proxy engine (proxy/proxy-*.c) driven by real clients, without a
# launcher: tests/helpers/proxy-harness serves a loopback listener with rules from a policy file.
# Upstreams are local (tests/helpers/proxy-peer.py: HTTP, TLS with a certificate made here,
# echo, a slow sink, a fast source, a stalled reader); names reach them through resolve pins.
# Covered: plain HTTP, CONNECT (HTTP and TLS), SOCKS5; refusals with 403 naming the rule, and
# their audit events; wildcards; IP literals; loopback without explicit permission; malformed
# requests; 100 concurrent tunnels; fixed send buffers towards local peers; the connection
# limit; 10 MiB through a slow reader either way with the harness's RSS bounded; a client stopped
# by an upstream that never reads (all three with buffers that grow for bulk traffic and with
# buffers that never grow); idle and set-up timeouts; live allow/deny for new connections only;
# shutdown.
#
# What needs the sandbox itself (no route out of the netns, raw sockets, UDP DNS) is tested with
# the launcher. Skips (1..0) without curl, python3 or openssl; CORDON_MUST_WORK=1 makes that a
# failure.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/integration/tap-lib.sh"


for tool in curl python3 openssl; do
	command -v "$tool" >/dev/null 2>&1 || skip_all "$tool not found (Debian: apt-get install $tool)"
done
harness="$top_builddir/tests/helpers/proxy-harness"
peer="$top_srcdir/tests/helpers/proxy-peer.py"
[ -x "$harness" ] || skip_all "tests/helpers/proxy-harness not built (make check builds it)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cordon-proxy.XXXXXX") || exit 1
pids=""
cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
	for p in $pids; do
		wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Wait until file exists and is not empty (10 s).
wait_file() {
	i=0
	while [ ! -s "$1" ] && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	[ -s "$1" ]
}
# Wait until file has a line matching the pattern (10 s).
wait_grep() {
	i=0
	while ! grep -q -- "$2" "$1" 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	grep -q -- "$2" "$1" 2>/dev/null
}
# Start a peer server; sets $port.
start_peer() {
	name=$1
	mode=$2
	shift 2
	python3 "$peer" "$mode" "$tmp/$name.port" "$@" 2>"$tmp/$name.err" &
	pids="$pids $!"
	wait_file "$tmp/$name.port" || {
		diag "$name did not start:" "$(cat "$tmp/$name.err")"
		echo "Bail out! upstream $name did not start"
		exit 1
	}
	port=$(cat "$tmp/$name.port")
}
# Start a harness instance NAME with policy file and options; sets $hport and $hpid.
start_harness() {
	name=$1
	shift
	mkfifo "$tmp/$name.ctl"
	"$harness" --events "$tmp/$name.events" --control "$tmp/$name.ctl" "$@" \
		>"$tmp/$name.port" 2>"$tmp/$name.err" &
	hpid=$!
	pids="$pids $hpid"
	wait_file "$tmp/$name.port" || {
		diag "harness $name did not start:" "$(cat "$tmp/$name.err")"
		echo "Bail out! harness did not start"
		exit 1
	}
	hport=$(cat "$tmp/$name.port")
}
# The events of a harness instance that contain every given fragment.
events() {
	f="$tmp/$1.events"
	shift
	out=$(cat "$f" 2>/dev/null)
	for frag in "$@"; do
		out=$(printf '%s\n' "$out" | grep -F -- "$frag")
	done
	printf '%s' "$out"
}
# Send a control command and wait for its answer (the Nth control line).
control() {
	name=$1
	before=$(grep -c '"type":"control"' "$tmp/$name.events" 2>/dev/null)
	printf '%s\n' "$2" >"$tmp/$name.ctl"
	i=0
	while [ "$(grep -c '"type":"control"' "$tmp/$name.events" 2>/dev/null)" -le "${before:-0}" ] &&
		[ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	grep '"type":"control"' "$tmp/$name.events" | tail -n 1
}
rss_kib() {
	sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$1/status"
}
# Is pid $1 running (a zombie is not: this runs in a command substitution, where dash does not
# reap the caller's children)?
running() {
	state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)
	[ -n "$state" ] && [ "$state" != Z ]
}
# Largest VmRSS of pid while the process $2 runs.
max_rss_while() {
	m=0
	while running "$2"; do
		r=$(rss_kib "$1")
		[ -n "$r" ] && [ "$r" -gt "$m" ] && m=$r
		sleep 0.05
	done
	echo "$m"
}

echo "1..59"

# ---- upstreams -------------------------------------------------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -keyout "$tmp/key.pem" -out "$tmp/cert.pem" \
	-subj /CN=tls.example.test -addext subjectAltName=DNS:tls.example.test \
	>/dev/null 2>"$tmp/openssl.err" || {
	diag "$(cat "$tmp/openssl.err")"
	echo "Bail out! cannot make a test certificate"
	exit 1
}
start_peer http http
HTTP=$port
start_peer tls tls "$tmp/cert.pem" "$tmp/key.pem"
TLS=$port
start_peer echo echo
ECHO=$port
start_peer sink slowsink
SINK=$port
start_peer source source 10485760
SOURCE=$port
start_peer stall stall
STALL=$port

cat >"$tmp/policy.json" <<EOF
{"version": 1, "network": {"mode": "proxy",
  "allowDomains": ["a.example.test", "*.example.test", "tls.example.test:$TLS", "localhost",
                   "127.0.0.2"],
  "denyDomains": ["bad.example.test"],
  "allowPorts": [$HTTP, $ECHO, $SINK, $SOURCE, $STALL],
  "resolve": ["a.example.test=127.0.0.1", "b.example.test=127.0.0.1",
              "bad.example.test=127.0.0.1", "tls.example.test=127.0.0.1",
              "x.example.test=127.0.0.1"]}}
EOF
start_harness main --policy "$tmp/policy.json"
P=$hport
H=$hpid
ok $? "the harness serves 127.0.0.1:$P"
proxy="http://127.0.0.1:$P"

# ---- allowed: the three protocols ------------------------------------------------------------
out=$(curl -sS -m 10 -x "$proxy" "http://a.example.test:$HTTP/hello?q=1" 2>&1)
printf '%s\n' "$out" | grep -q "^hello from upstream"
ok $? "plain HTTP through the proxy reaches an allowed, pinned name"
printf '%s\n' "$out" | grep -q "^request: GET /hello?q=1 HTTP/1.1$" &&
	printf '%s\n' "$out" | grep -qi "^header: Connection: close$" &&
	! printf '%s\n' "$out" | grep -qi "^header: Proxy-Connection"
ok $? "the upstream gets origin form, Connection: close and no proxy headers" || diag "$out"
printf '%s\n' "$out" | grep -qi "^header: Host: a.example.test:$HTTP$"
ok $? "the Host header is passed on"

out=$(curl -sS -m 10 -p -x "$proxy" "http://b.example.test:$HTTP/tunnel" 2>&1)
printf '%s\n' "$out" | grep -q "^request: GET /tunnel HTTP/1.1$"
ok $? "CONNECT (curl --proxytunnel) to a name allowed by \"*.example.test\"" || diag "$out"

out=$(curl -sS -m 10 --cacert "$tmp/cert.pem" -x "$proxy" "https://tls.example.test:$TLS/secure" 2>&1)
printf '%s\n' "$out" | grep -q "^request: GET /secure HTTP/1.1$"
ok $? "HTTPS through CONNECT, the test certificate verified end to end" || diag "$out"

out=$(curl -sS -m 10 --socks5-hostname "127.0.0.1:$P" "http://a.example.test:$HTTP/socks" 2>&1)
printf '%s\n' "$out" | grep -q "^request: GET /socks HTTP/1.1$"
ok $? "SOCKS5 with a domain name" || diag "$out"

ev=$(events main '"decision":"closed"' '"domain":"tls.example.test"' '"protocol":"connect"')
[ -n "$ev" ] && ! printf '%s' "$ev" | grep -q '"bytesDown":0,' &&
	printf '%s' "$ev" | grep -q '"durationMs":' && printf '%s' "$ev" | grep -q '"address":"127.0.0.1"'
ok $? "an allowed connection's closing event has bytes, duration and address" || diag "$ev"
ev=$(events main '"decision":"allowed"' '"domain":"a.example.test"' '"protocol":"socks5"')
printf '%s' "$ev" | grep -q 'pinned by resolve'
ok $? "the allowing event names the allowDomains entry and the pin" || diag "$ev"

# ---- refused ---------------------------------------------------------------------------------
out=$(curl -sS -m 10 -w '\n%{http_code}\n' -x "$proxy" "http://other.test:$HTTP/" 2>&1)
printf '%s\n' "$out" | tail -n 1 | grep -q '^403$' &&
	printf '%s\n' "$out" | grep -q 'other.test matches no allowDomains entry'
ok $? "a name not allowed: 403 whose body names the rule" || diag "$out"
ev=$(events main '"decision":"denied"' '"domain":"other.test"' '"rule":"allowDomains"')
[ -n "$ev" ]
ok $? "... and a denied event"

out=$(curl -sS -m 10 -w '\n%{http_code}\n' -x "$proxy" "http://bad.example.test:$HTTP/" 2>&1)
printf '%s\n' "$out" | tail -n 1 | grep -q '^403$' &&
	printf '%s\n' "$out" | grep -q 'denied by denyDomains "bad.example.test"'
ok $? "denyDomains wins over \"*.example.test\" and a pin" || diag "$out"
[ -n "$(events main '"decision":"denied"' '"domain":"bad.example.test"' '"rule":"denyDomains"')" ]
ok $? "... and a denied event naming denyDomains"

out=$(curl -sS -m 10 -p -x "$proxy" "http://bad.example.test:$HTTP/" 2>&1)
rc=$?
[ $rc -ne 0 ] && printf '%s\n' "$out" | grep -q '403'
ok $? "CONNECT to a denied name gets 403" || diag "rc=$rc $out"

out=$(curl -sS -m 10 --socks5-hostname "127.0.0.1:$P" "http://bad.example.test:$HTTP/" 2>&1)
rc=$?
[ $rc -ne 0 ] && [ -n "$(events main '"protocol":"socks5"' '"domain":"bad.example.test"' '"rule":"denyDomains"')" ]
ok $? "SOCKS5 to a denied name is refused, with an event" || diag "rc=$rc $out"
out=$(python3 "$peer" socks "$P" bad.example.test "$HTTP" 1)
[ "$out" = "reply 2" ]
ok $? "... with SOCKS5 reply 2 (not allowed by ruleset)" || diag "$out"

out=$(curl -sS -m 10 -w '\n%{http_code}\n' -x "$proxy" "http://example.test.evil:$HTTP/" 2>&1)
printf '%s\n' "$out" | tail -n 1 | grep -q '^403$'
ok $? "\"*.example.test\" does not match example.test.evil" || diag "$out"
out=$(curl -sS -m 10 -w '\n%{http_code}\n' -x "$proxy" "http://example.test:$HTTP/" 2>&1)
printf '%s\n' "$out" | tail -n 1 | grep -q '^403$'
ok $? "\"*.example.test\" does not match example.test itself" || diag "$out"

out=$(curl -sS -m 10 -w '\n%{http_code}\n' -x "$proxy" "http://a.example.test:1/" 2>&1)
printf '%s\n' "$out" | tail -n 1 | grep -q '^403$' && printf '%s\n' "$out" | grep -q 'port 1 is not allowed'
ok $? "a port outside allowPorts: 403 naming allowPorts" || diag "$out"

# ---- addresses -------------------------------------------------------------------------------
out=$(curl -sS -m 10 -w '\n%{http_code}\n' -x "$proxy" "http://127.0.0.1:$HTTP/" 2>&1)
printf '%s\n' "$out" | tail -n 1 | grep -q '^403$' && printf '%s\n' "$out" | grep -q 'IP address 127.0.0.1 is not listed'
ok $? "an IP literal that is not listed is denied" || diag "$out"
out=$(curl -sS -m 10 -w '\n%{http_code}\n' -x "$proxy" "http://2130706433:$HTTP/" 2>&1)
printf '%s\n' "$out" | tail -n 1 | grep -q '^403$'
ok $? "... also spelled 2130706433" || diag "$out"
out=$(curl -sS -m 10 --socks5 "127.0.0.1:$P" "http://127.0.0.1:$HTTP/" 2>&1)
[ $? -ne 0 ] && [ -n "$(events main '"protocol":"socks5"' '"domain":"127.0.0.1"' '"rule":"ipLiteral"')" ]
ok $? "a SOCKS5 IPv4 address that is not listed is denied" || diag "$out"
out=$(curl -sS -m 10 -w '\n%{http_code}\n' -x "$proxy" "http://[::1]:$HTTP/" 2>&1)
printf '%s\n' "$out" | tail -n 1 | grep -q '^403$'
ok $? "an IPv6 literal that is not listed is denied" || diag "$out"
out=$(curl -sS -m 10 -w '\n%{http_code}\n' -x "$proxy" "http://127.0.0.2:$HTTP/" 2>&1)
printf '%s\n' "$out" | tail -n 1 | grep -Eq '^(200|502)$' &&
	[ -n "$(events main '"domain":"127.0.0.2"' '"decision":"allowed"')" ]
ok $? "a listed IP literal is allowed, loopback included" || diag "$out"
out=$(curl -sS -m 10 -w '\n%{http_code}\n' -x "$proxy" "http://localhost:$HTTP/" 2>&1)
printf '%s\n' "$out" | tail -n 1 | grep -q '^403$' && printf '%s\n' "$out" | grep -q 'loopback address'
ok $? "an allowed name that resolves to 127.0.0.1 without a pin is denied" || diag "$out"
[ -n "$(events main '"domain":"localhost"' '"rule":"privateAddress"')" ]
ok $? "... with an event naming privateAddress"
out=$(curl -sS -m 10 -w '\n%{http_code}\n' -x "$proxy" "http://nopin.example.test:$HTTP/" 2>&1)
printf '%s\n' "$out" | tail -n 1 | grep -q '^502$' && printf '%s\n' "$out" | grep -q 'cannot resolve nopin.example.test'
ok $? "an allowed name that does not resolve: 502" || diag "$out"

# ---- malformed -------------------------------------------------------------------------------
out=$(python3 "$peer" raw "$P" "GET http://a.example.test:$HTTP/ HTTP/1.1\r\nHost: other.test:$HTTP\r\n\r\n")
printf '%s\n' "$out" | head -n 1 | grep -q '^HTTP/1.1 400' && printf '%s\n' "$out" | grep -q 'does not match'
ok $? "a Host header that differs from the URI: 400" || diag "$out"
out=$(python3 "$peer" raw "$P" "GET /hello HTTP/1.1\r\nHost: a.example.test\r\n\r\n")
printf '%s\n' "$out" | head -n 1 | grep -q '^HTTP/1.1 400'
ok $? "an origin-form request (not a proxy request): 400" || diag "$out"
out=$(python3 "$peer" raw "$P" "\x16\x03\x01\x00\x05hello")
[ -z "$out" ] && [ -n "$(events main '"rule":"request"' 'unknown protocol')" ]
ok $? "an unknown protocol is closed, with an event" || diag "$out"
out=$(python3 "$peer" socks "$P" a.example.test "$ECHO" 2)
[ "$out" = "reply 7" ]
ok $? "SOCKS5 BIND: reply 7 (command not supported)" || diag "$out"
big=$(python3 -c 'print("X-Pad: " + "a" * 20000)')
out=$(python3 "$peer" raw "$P" "GET http://a.example.test:$HTTP/ HTTP/1.1\r\n$big\r\n\r\n")
printf '%s\n' "$out" | head -n 1 | grep -q '^HTTP/1.1 431'
ok $? "a request head over 16 KiB: 431" || diag "$(printf '%s' "$out" | head -c 200)"

# ---- load and memory -------------------------------------------------------------------------
# The client holds all 100 open for a while after they echoed: the count is taken then.
HOLD=3 python3 "$peer" concurrent "$P" a.example.test "$ECHO" 100 >"$tmp/concurrent.out" 2>&1 &
cpid=$!
wait_grep "$tmp/concurrent.out" '^echoed' && control main stats >"$tmp/stats100"
wait $cpid
out=$(cat "$tmp/concurrent.out")
[ "$out" = "echoed 100 of 100" ]
ok $? "100 concurrent CONNECT tunnels each echo" || diag "$out"
grep -q '"connections":100' "$tmp/stats100"
ok $? "... all 100 open in the proxy at once" || diag "$(cat "$tmp/stats100")"

# Bounded memory through harness $1 (port $2, pid $3): 10 MiB to a slow reader either way, and
# an upstream that never reads. In the last, the relay must stop reading from the client once its
# buffer towards the upstream is full, so what the client can push is bounded by the socket
# buffers on the way (at most twice tcp_wmem's and tcp_rmem's maximum) plus the buffer (1 MiB
# once grown). Six tests.
memory_checks() {
	what=$1
	rss0=$(rss_kib "$3")
	python3 "$peer" upload "$2" a.example.test "$SINK" 10485760 >"$tmp/upload.out" 2>&1 &
	up=$!
	rss_max=$(max_rss_while "$3" $up)
	wait $up
	grep -q '^got 10485760$' "$tmp/upload.out"
	ok $? "$what: 10 MiB to a slow reader arrive whole" || diag "$(cat "$tmp/upload.out")"
	[ $((rss_max - rss0)) -lt 4096 ]
	ok $? "... the proxy's RSS grew by $((rss_max - rss0)) KiB (< 4 MiB)"

	rss0=$(rss_kib "$3")
	python3 "$peer" slowread "$2" a.example.test "$SOURCE" >"$tmp/download.out" 2>&1 &
	down=$!
	rss_max=$(max_rss_while "$3" $down)
	wait $down
	grep -q '^read 10485760$' "$tmp/download.out"
	ok $? "$what: 10 MiB from a fast source to a slow reading client arrive whole" ||
		diag "$(cat "$tmp/download.out")"
	[ $((rss_max - rss0)) -lt 4096 ]
	ok $? "... the proxy's RSS grew by $((rss_max - rss0)) KiB (< 4 MiB)"

	wmax=$(awk '{print $3}' /proc/sys/net/ipv4/tcp_wmem)
	rmax=$(awk '{print $3}' /proc/sys/net/ipv4/tcp_rmem)
	bound=$((2 * wmax + 2 * rmax + 2 * 1048576))
	rss0=$(rss_kib "$3")
	python3 "$peer" push "$2" a.example.test "$STALL" $((bound + 67108864)) >"$tmp/push.out" 2>&1 &
	push=$!
	rss_max=$(max_rss_while "$3" $push)
	wait $push
	pushed=$(sed -n 's/^pushed //p' "$tmp/push.out")
	[ -n "$pushed" ] && [ "$pushed" -gt 0 ] && [ "$pushed" -lt "$bound" ]
	ok $? "$what: a client writing to a stalled upstream is stopped after $pushed bytes (< $bound)" ||
		diag "$(cat "$tmp/push.out")"
	[ $((rss_max - rss0)) -lt 4096 ]
	ok $? "... the proxy's RSS grew by $((rss_max - rss0)) KiB (< 4 MiB)"
}
memory_checks "growing buffers" "$P" "$H"
# The slow reader's tunnel carried exactly 10 MiB from the upstream: bytesDown counts those, not
# the proxy's own "200 Connection established" before them.
[ -n "$(events main '"decision":"closed"' '"bytesDown":10485760,')" ]
ok $? "a tunnel's bytesDown is the upstream's bytes only (10485760)" ||
	diag "$(events main '"decision":"closed"' | tail -n 3)"

# ---- live changes ----------------------------------------------------------------------------
mkfifo "$tmp/tunnel.ctl"
python3 "$peer" tunnel "$P" a.example.test "$ECHO" "$tmp/tunnel.ctl" >"$tmp/tunnel.out" 2>&1 &
tpid=$!
pids="$pids $tpid"
exec 7>"$tmp/tunnel.ctl"
echo one >&7
wait_grep "$tmp/tunnel.out" "^echo: one$"
ok $? "a tunnel is open before the change" || diag "$(cat "$tmp/tunnel.out")"
# Its two sockets in the proxy, and every other the proxy has open (all peers here are local),
# have fixed send buffers rather than autotuned ones (proxy-engine.c, relay_sockopts()): the
# kernel reports twice the size set, capped at net.core.wmem_max.
wmax=$(cat /proc/sys/net/core/wmem_max)
want=$(((wmax < 1048576 ? wmax : 1048576) * 2))
tbs=$(ss -tnmpH state established 2>&1 | awk -v p="pid=$H," '
	index($0, p) { mine = 1; next }
	mine && /skmem:/ { sub(/.*,tb/, ""); sub(/,.*/, ""); print }
	{ mine = 0 }' | sort | uniq -c | awk '{ printf "%sx%s ", $2, $1 }')
case $tbs in
"${want}x"[2-9]" " | "${want}x"[1-9][0-9]" ") true ;;
*) false ;;
esac
ok $? "the proxy's sockets to local peers have $want-byte send buffers" ||
	diag "send buffers (size x count): $tbs" "$(ss -tnmp state established 2>&1)"
res=$(control main "deny a.example.test")
printf '%s' "$res" | grep -q '"result":0' && printf '%s' "$res" | grep -q '"denyDomains":\["bad.example.test","a.example.test"\]'
ok $? "deny a.example.test on the live listener" || diag "$res"
out=$(curl -sS -m 10 -w '\n%{http_code}\n' -x "$proxy" "http://a.example.test:$HTTP/" 2>&1)
printf '%s\n' "$out" | tail -n 1 | grep -q '^403$' && printf '%s\n' "$out" | grep -q 'denyDomains "a.example.test"'
ok $? "a new connection is denied" || diag "$out"
echo two >&7
wait_grep "$tmp/tunnel.out" "^echo: two$"
ok $? "the existing tunnel is unaffected" || diag "$(cat "$tmp/tunnel.out")"
res=$(control main "allow a.example.test")
out=$(curl -sS -m 10 -x "$proxy" "http://a.example.test:$HTTP/again" 2>&1)
printf '%s\n' "$out" | grep -q "^request: GET /again HTTP/1.1$"
ok $? "allow a.example.test again: new connections pass" || diag "$res" "$out"

# Shutdown: the open tunnel reports "shutdown", the harness exits 0.
kill -TERM "$H"
wait "$H"
rc=$?
[ $rc -eq 0 ] && [ -n "$(events main '"decision":"closed"' '"rule":"shutdown"')" ]
ok $? "stopping the listener closes the tunnel with a shutdown event" || diag "rc=$rc"
echo quit >&7
exec 7>&-
wait "$tpid" 2>/dev/null

# ---- buffers that never grow -------------------------------------------------------------------
# As when the process's growth budget is spent: the same bounds hold, with 64 KiB buffers.
start_harness fixed --policy "$tmp/policy.json" --buffer-max 0
out=$(curl -sS -m 10 -p -x "http://127.0.0.1:$hport" "http://b.example.test:$HTTP/fixed" 2>&1)
printf '%s\n' "$out" | grep -q "^request: GET /fixed HTTP/1.1$"
ok $? "fixed buffers: CONNECT through them" || diag "$out"
memory_checks "fixed buffers" "$hport" "$hpid"

# ---- limits ----------------------------------------------------------------------------------
start_harness limits --policy "$tmp/policy.json" --max-connections 2 --idle-timeout-ms 400 \
	--setup-timeout-ms 600
L=$hport
out=$(python3 "$peer" raw "$L" "CONNECT a.example.test:$ECHO HTTP/1.1\r\n\r\n")
printf '%s\n' "$out" | head -n 1 | grep -q '^HTTP/1.1 200' &&
	[ -n "$(events limits '"decision":"closed"' '"rule":"idle"')" ]
ok $? "an idle tunnel is closed after the idle timeout" || diag "$out"
start=$(date +%s)
out=$(python3 "$peer" raw "$L" "GET http://a.exa")
[ -z "$out" ] && [ $(($(date +%s) - start)) -lt 5 ] &&
	[ -n "$(events limits '"decision":"denied"' '"rule":"timeout"')" ]
ok $? "an incomplete request is dropped after the set-up timeout" || diag "$out"

start_harness cap --policy "$tmp/policy.json" --max-connections 2
L=$hport
for t in 1 2; do
	mkfifo "$tmp/hold$t.ctl"
	python3 "$peer" tunnel "$L" a.example.test "$ECHO" "$tmp/hold$t.ctl" >"$tmp/hold$t.out" 2>&1 &
	pids="$pids $!"
	eval "hold$t=\$!"
done
exec 8>"$tmp/hold1.ctl" 9>"$tmp/hold2.ctl"
wait_grep "$tmp/hold1.out" '^open$' && wait_grep "$tmp/hold2.out" '^open$'
curl -sS -m 1 -x "http://127.0.0.1:$L" "http://a.example.test:$HTTP/" >/dev/null 2>&1
rc=$?
[ $rc -eq 28 ]
ok $? "at max-connections 2 a third connection waits (curl timed out: rc $rc)"
echo quit >&8
exec 8>&-
wait "$hold1" 2>/dev/null
out=$(curl -sS -m 10 -x "http://127.0.0.1:$L" "http://a.example.test:$HTTP/later" 2>&1)
printf '%s\n' "$out" | grep -q "^request: GET /later HTTP/1.1$"
ok $? "... and is served once one ends" || diag "$out"
echo quit >&9
exec 9>&-

done_testing
