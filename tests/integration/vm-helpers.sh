#!/usr/bin/env bash
# builtin:vm's guest helpers, fetched and verified (backends/vm/vm-helpers.[ch],
# cordon-vm-helpers, `cordon vm fetch-helpers`); no QEMU needed. The pins: two builds of the
# helpers (backends/vm/build-helpers.sh) in different directories give the same bytes, and they
# match backends/vm/helper-pins.txt and the pins this build compiled in (else: `make vm-pins`).
# Then, served by a loopback HTTP server: nothing is fetched before builtin:vm is activated; the
# first fetch downloads into the backend's <vmDir>/bin and the second reuses it (one GET); two at
# once download once; a tampered file on the server is refused naming the helper and both
# digests, and nothing is left in bin; a tampered file in bin is replaced by a good download; a
# redirect to another scheme is refused; a file: base works offline; an unreachable base fails
# saying where. The backend (with QEMU present; the kernel an empty file and mkinitramfs.sh a stub
# that records its call, since nothing boots): a tampered helper makes the activation fail and
# builtin:vm unavailable, naming the helper and both digests, with the previous backend still
# active; a good one over http is fetched once into <vmDir>/bin and the initramfs built from it;
# a second activation reuses both; a missing initramfs is built again from the agent there.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

TOOL="$top_builddir/cordon-vm-helpers"
PINS="$top_srcdir/backends/vm/helper-pins.txt"
{ [ -x "$CORDON" ] && [ -x "$TOOL" ]; } || skip_all "cordon or cordon-vm-helpers not built"
command -v python3 >/dev/null || skip_all "python3 missing"
export CORDON_VM_HELPERS="$TOOL"
# (the controller's, started below: builtin:vm builds its initramfs with this)
export CORDON_VM_MKINITRAMFS="$TEST_TMP/mkinitramfs-stub.sh"
cat >"$CORDON_VM_MKINITRAMFS" <<EOF
echo "\$*" >>"$TEST_TMP/mkinitramfs.calls"
echo initramfs >"\$3"
EOF
# (loopback only: no proxy from the environment)
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
CC=$(sed -n 's/^CC = //p' "$top_builddir/Makefile")

# --- the pins ---
mkdir -p "$TEST_TMP/b1" "$TEST_TMP/elsewhere/x"
(cd "$TEST_TMP/b1" && CC=$CC "$top_srcdir/backends/vm/build-helpers.sh" "$top_srcdir" out) \
	>"$TEST_TMP/build.log" 2>&1
ok $? "the helpers build ($(tail -c 300 "$TEST_TMP/build.log"))"
(cd "$TEST_TMP/elsewhere/x" && CC=$CC "$top_srcdir/backends/vm/build-helpers.sh" "$top_srcdir" \
	../../b2) >>"$TEST_TMP/build.log" 2>&1
same=0
while read -r name _; do
	cmp -s "$TEST_TMP/b1/out/$name" "$TEST_TMP/b2/$name" || same=1
done <"$TEST_TMP/b1/out/MANIFEST"
[ -s "$TEST_TMP/b1/out/MANIFEST" ] && cmp -s "$TEST_TMP/b1/out/MANIFEST" "$TEST_TMP/b2/MANIFEST"
ok $((same | $?)) "two builds in different directories give the same bytes"
is "$(grep -v '^#' "$PINS")" "$(cat "$TEST_TMP/b1/out/MANIFEST")" \
	"a fresh build matches backends/vm/helper-pins.txt (after changing a helper: make vm-pins)" ||
	diag "fresh build:" "$(cat "$TEST_TMP/b1/out/MANIFEST")"
is "$(grep -v '^#' "$PINS")" "$("$TOOL" pins)" "cordon-vm-helpers has the committed pins compiled in"
if [ "$TAP_FAILED" != 0 ]; then
	diag "the fetch checks need helpers that match the pins: run make vm-pins"
	echo "1..$TAP_N"
	done_testing
fi

# --- the server: python3's http.server on a free loopback port, logging each request ---
SRV="$TEST_TMP/srv"
mkdir -p "$SRV/good" "$SRV/bad"
cp "$TEST_TMP/b1/out/agent" "$TEST_TMP/b1/out/forward" "$SRV/good/"
# (the forwarder is good in every mirror: the tampering is the agent's)
mkdir -p "$SRV/big"
cp "$SRV/good/forward" "$SRV/bad/forward"
cp "$SRV/good/forward" "$SRV/big/forward"
# same size, one byte changed
cp "$SRV/good/agent" "$SRV/bad/agent"
# (one byte changed: X, or Y where the agent has an X there)
c=X
[ "$(dd if="$SRV/good/agent" bs=1 skip=1000 count=1 status=none)" = X ] && c=Y
printf '%s' "$c" | dd of="$SRV/bad/agent" bs=1 seek=1000 conv=notrunc status=none
GOOD_SHA=$(sha256sum "$SRV/good/agent" | cut -d' ' -f1)
BAD_SHA=$(sha256sum "$SRV/bad/agent" | cut -d' ' -f1)
python3 - "$SRV" "$TEST_TMP/port" 2>"$TEST_TMP/srv.log" <<'EOF' &
import functools, http.server, sys
class H(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/redirect/"):
            self.send_response(302)
            self.send_header("Location", "file://" + sys.argv[1] + "/good/agent")
            self.end_headers()
            return
        super().do_GET()
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(H, directory=sys.argv[1]))
open(sys.argv[2] + ".tmp", "w").write(str(s.server_address[1]))
__import__("os").rename(sys.argv[2] + ".tmp", sys.argv[2])
s.serve_forever()
EOF
SRV_PID=$!
trap 'kill "$SRV_PID" 2>/dev/null; wait "$SRV_PID" 2>/dev/null; cleanup' EXIT
for _ in $(seq 100); do [ -s "$TEST_TMP/port" ] && break; sleep 0.05; done
PORT=$(cat "$TEST_TMP/port" 2>/dev/null)
[ -n "$PORT" ] || skip_all "the loopback HTTP server did not start: $(cat "$TEST_TMP/srv.log")"
URL="http://127.0.0.1:$PORT"
gets() { grep -c "\"GET /$1 " "$TEST_TMP/srv.log"; }
BIN="$XDG_STATE_HOME/cordon/vm/bin"
# (an output on one line, for a test's description)
one() { printf '%s' "$*" | tr '\n' ' ' | cut -c1-400; }

# --- nothing before activation; then the backend's directory, fetched once ---
out=$("$CORDON" backend list 2>&1)
ok $? "the controller is up"
"$CORDON" backend settings builtin:vm >/dev/null 2>&1
[ ! -e "$BIN" ] && [ "$(gets good/agent)" = 0 ]
ok $? "nothing is fetched before builtin:vm is activated (no $BIN, no request)"

out=$("$CORDON" vm fetch-helpers --base-url "$URL/good/" 2>"$TEST_TMP/err")
ok $? "vm fetch-helpers over http ($(one "$out" "$(cat "$TEST_TMP/err")"))"
is "$GOOD_SHA 755" "$(sha256sum "$BIN/agent" | cut -d' ' -f1) $(stat -c %a "$BIN/agent")" \
	"the agent is in the backend's <vmDir>/bin, verified, 0755"
case $out in *"agent: fetched"*"$GOOD_SHA"*) r=0 ;; *) r=1 ;; esac
ok $r "it says it fetched the agent, with its digest"
grep -q "fetching agent" "$TEST_TMP/err"
ok $? "a plain progress line when stderr is not a terminal"
out=$("$CORDON" vm fetch-helpers --base-url "$URL/good" 2>&1)
case $out in *"agent: reused"*) r=0 ;; *) r=1 ;; esac
ok $r "the second fetch reuses it ($(one "$out"))"
is 1 "$(gets good/agent)" "the server saw one GET"
is "agent forward" "$(ls -A "$BIN" | tr '\n' ' ' | sed 's/ $//')" "every helper, nothing else is left in bin"
out=$("$CORDON" vm fetch-helpers --json --base-url "$URL/good" 2>&1)
is "reused $GOOD_SHA" "$(printf '%s' "$out" | python3 -c 'import json,sys; h=json.load(sys.stdin)["helpers"][0]; print(h["state"], h["sha256"])' 2>&1)" \
	"--json lists each helper's state and digest"

# two at once into an empty directory: one downloads, the other waits and reuses
"$TOOL" fetch --dir "$TEST_TMP/two" --base-url "$URL/good" >"$TEST_TMP/two.1" 2>&1 &
p1=$!
"$TOOL" fetch --dir "$TEST_TMP/two" --base-url "$URL/good" >"$TEST_TMP/two.2" 2>&1 &
p2=$!
wait $p1
r1=$?
wait $p2
is "0 0 2" "$r1 $? $(gets good/agent)" "two fetches at once both succeed with one download"

# --- tampering ---
out=$("$CORDON" vm fetch-helpers --dir "$TEST_TMP/t1" --base-url "$URL/bad" 2>&1)
is 1 $? "a tampered helper on the server is refused"
case $out in *"helper agent"*"$BAD_SHA"*"$GOOD_SHA"*) r=0 ;; *) r=1 ;; esac
ok $r "the refusal names the helper and both digests ($(one "$out"))"
is "" "$(ls -A "$TEST_TMP/t1" 2>&1)" "nothing is left in bin"
{ cat "$SRV/good/agent"; echo extra; } >"$SRV/big/agent"
out=$("$TOOL" fetch --dir "$TEST_TMP/t2" --base-url "$URL/big" 2>&1)
r=$?
case $out in *"helper agent from $URL/big/agent is larger than its pin (sha256 $GOOD_SHA"*) r2=0 ;; *) r2=1 ;; esac
is "1 0 " "$r $r2 $(ls -A "$TEST_TMP/t2" 2>&1)" "a larger file is refused and not kept ($(one "$out"))"

cp "$SRV/bad/agent" "$BIN/agent"
out=$("$CORDON" vm fetch-helpers --base-url "$URL/good" 2>&1)
ok $? "a tampered helper in bin is fetched again ($(one "$out"))"
is "$GOOD_SHA 3" "$(sha256sum "$BIN/agent" | cut -d' ' -f1) $(gets good/agent)" \
	"and replaced by the good one (one more GET)"

out=$("$TOOL" fetch --dir "$TEST_TMP/off" --offline 2>&1)
is 1 $? "offline, a missing helper fails ($(one "$out"))"
cp "$SRV/bad/agent" "$TEST_TMP/off/agent"
out=$("$TOOL" fetch --dir "$TEST_TMP/off" --offline 2>&1)
case $out in *"agent"*"$BAD_SHA"*"$GOOD_SHA"*) r=0 ;; *) r=1 ;; esac
ok $r "offline, a tampered helper in bin is refused with both digests ($(one "$out"))"

out=$("$CORDON" vm fetch-helpers --dir "$TEST_TMP/redir" --base-url "$URL/redirect/" 2>&1)
r=$?
case $out in *"redirected to another scheme: refused"*) r2=0 ;; *) r2=1 ;; esac
[ $r -ne 0 ] && [ $r2 = 0 ] && [ ! -e "$TEST_TMP/redir/agent" ]
ok $? "a redirect from http: to file: is refused ($(one "$out"))"

# --- file: and unreachable bases ---
out=$("$CORDON" vm fetch-helpers --dir "$TEST_TMP/f" --base-url "file://$SRV/good/" 2>&1)
ok $? "a file: base works offline ($(one "$out"))"
is "$GOOD_SHA" "$(sha256sum "$TEST_TMP/f/agent" 2>&1 | cut -d' ' -f1)" "and is verified"
out=$("$CORDON" vm fetch-helpers --dir "$TEST_TMP/f2" --base-url "file://$SRV/none/" 2>&1)
r=$?
case $out in *"helper agent: file://$SRV/none/agent"*) r2=0 ;; *) r2=1 ;; esac
is "1 0" "$r $r2" "a file: base without the helper fails naming the URL ($(one "$out"))"
out=$("$CORDON" vm fetch-helpers --dir "$TEST_TMP/u" --base-url "http://127.0.0.1:1/x/" 2>&1)
r=$?
case $out in *"helper agent: http://127.0.0.1:1/x/agent: "*) r2=0 ;; *) r2=1 ;; esac
is "1 0" "$r $r2" "an unreachable base fails naming the helper and the URL ($(one "$out"))"
is "" "$(ls -A "$TEST_TMP/u" 2>&1)" "and leaves nothing"
out=$("$CORDON" vm fetch-helpers --dir "$TEST_TMP/s" --base-url "ftp://127.0.0.1/" 2>&1)
case $out in *"not https://, http:// or file://"*) r=0 ;; *) r=1 ;; esac
ok $r "another scheme is refused ($(one "$out"))"


# --- the backend: activation fetches what it needs (once builtin:vm does: its helpersBaseUrl
# setting), and a tampered helper makes it unavailable, saying why ---
active() { "$CORDON" backend list 2>&1 | awk '$1 == "*" { print $2 }'; }
calls() { if [ -e "$TEST_TMP/mkinitramfs.calls" ]; then wc -l <"$TEST_TMP/mkinitramfs.calls"; else echo 0; fi; }
if ! "$CORDON" backend settings builtin:vm --json 2>/dev/null | grep -q '"helpersBaseUrl"'; then
	na "builtin:vm does not fetch its helpers yet (no helpersBaseUrl setting)"
elif ! command -v qemu-system-x86_64 >/dev/null; then
	na "qemu-system-x86_64 missing: builtin:vm is unavailable before it would fetch"
else
	VMD="$TEST_TMP/vmdir"
	mkdir -p "$VMD"
	: >"$VMD/vmlinux"
	was=$(active)
	n0=$(gets bad/agent)
	out=$("$CORDON" backend activate builtin:vm --set kernel="$VMD/vmlinux" \
		--set helpersBaseUrl="$URL/bad/" 2>&1)
	r=$?
	case $out in *"helper agent"*"$BAD_SHA"*"$GOOD_SHA"*) r2=0 ;; *) r2=1 ;; esac
	[ $r -ne 0 ] && [ $r2 = 0 ] && [ -z "$(ls -A "$VMD/bin" 2>/dev/null)" ]
	ok $? "builtin:vm with a tampered helper is unavailable, saying why ($(one "$out"))"
	is $((n0 + 1)) "$(gets bad/agent)" "its activation asked for the agent once"
	[ -n "$was" ] && [ "$was" != builtin:vm ] && [ "$(active)" = "$was" ]
	ok $? "the previous backend stays active ($was; now $(active))"
	is "0 no" "$(calls) $([ -e "$VMD/initramfs.cpio.gz" ] && echo yes || echo no)" \
		"and no initramfs is built"

	ACT=(backend activate builtin:vm --set kernel="$VMD/vmlinux" --set helpersBaseUrl="$URL/good/")
	n0=$(gets good/agent)
	out=$("$CORDON" "${ACT[@]}" 2>&1)
	ok $? "builtin:vm activates with its helpers served over http ($(one "$out"))"
	is "builtin:vm $GOOD_SHA $((n0 + 1))" \
		"$(active) $(sha256sum "$VMD/bin/agent" 2>&1 | cut -d' ' -f1) $(gets good/agent)" \
		"it fetched the agent once into <vmDir>/bin, verified"
	is "$VMD/bin/agent $VMD $VMD/initramfs.cpio.gz" "$(cat "$TEST_TMP/mkinitramfs.calls" 2>&1)" \
		"and built the initramfs beside the kernel from it"
	out=$("$CORDON" "${ACT[@]}" 2>&1)
	ok $? "activated again ($(one "$out"))"
	is "$((n0 + 1)) 1" "$(gets good/agent) $(calls)" \
		"the agent and the initramfs are reused: no GET, no build"
	rm -f "$VMD/initramfs.cpio.gz"
	out=$("$CORDON" "${ACT[@]}" 2>&1)
	is "0 $((n0 + 1)) 2" "$? $(gets good/agent) $(calls)" \
		"a missing initramfs is built again from the agent there, with no GET ($(one "$out"))"
fi

echo "1..$TAP_N"
done_testing
