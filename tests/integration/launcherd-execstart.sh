#!/bin/sh
# cordon-launcherd started the way systemd starts it: the ExecStart= line of the built
# systemd/cordon-launcherd.service, run directly as root (its path pointed at the build tree's
# binary, as systemd-units.sh does for verify), with --socket in a temporary directory and
# --floor naming a root-owned copy of the shipped default floor (etc/launcherd.json). It must
# start in privileged mode and answer a real hello (docs/PROTOCOL.md section 1) over
# SOCK_SEQPACKET, reporting the caller's uid and exactly the shipped floor.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/integration/tap-lib.sh"


unit="$top_builddir/systemd/cordon-launcherd.service"
launcherd="$top_builddir/cordon-launcherd"
[ -f "$unit" ] || skip_all "systemd/cordon-launcherd.service not built (make)"
[ -x "$launcherd" ] || skip_all "cordon-launcherd not built (make)"
[ "$(id -u)" = 0 ] || skip_all "not root: privileged mode needs root"
command -v python3 >/dev/null 2>&1 || skip_all "python3 not found"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cordon-execstart.XXXXXX") || exit 1
chmod 0755 "$tmp"
pid=""
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

echo "1..8"

# ExecStart=[prefixes]PATH ARGS: systemd's prefixes (-@:+!) change error handling and
# privileges, none of which applies to a direct run.
line=$(sed -n 's/^ExecStart=//p' "$unit" | tail -n 1)
exe=$(echo "$line" | sed 's/^[-@:+!]*//; s/ .*//')
args=$(echo "$line" | sed 's/^[-@:+!]*[^ ]*//')
case $exe in
*/cordon-launcherd) true ;;
*) false ;;
esac
ok $? "ExecStart= runs cordon-launcherd ($line)"

cp "$top_srcdir/etc/launcherd.json" "$tmp/launcherd.json"
chown 0:0 "$tmp/launcherd.json" && chmod 0644 "$tmp/launcherd.json"
sock="$tmp/run/cordon/launcherd.sock"
# shellcheck disable=SC2086 # the unit's arguments, split as systemd splits simple words
setsid "$launcherd" $args --socket "$sock" --floor "$tmp/launcherd.json" \
	</dev/null >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 100); do
	[ -S "$sock" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
[ -S "$sock" ]
ok $? "launcherd$args listens on the socket"
[ -S "$sock" ] || diag "$(cat "$tmp/err")"

reply=$(python3 "$top_srcdir/tests/helpers/launcherd-hello.py" "$sock" 10 2>"$tmp/hello.err")
rc=$?
[ $rc -eq 0 ] && [ -n "$reply" ]
ok $? "hello over SOCK_SEQPACKET gets a framed reply"
[ $rc -eq 0 ] || diag "$(cat "$tmp/hello.err")" "$(cat "$tmp/err")"

echo "$reply" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
ok = (r.get("type") == "hello" and r.get("seq") == 1 and r.get("version") == 1
      and r.get("mode") == "privileged" and r.get("uid") == 0 and r.get("userns") is False)
sys.exit(0 if ok else 1)' 2>/dev/null
rc=$?
ok $rc "the reply: type hello, seq 1, version 1, privileged mode, uid 0 (SO_PEERCRED), no userns"
[ $rc -eq 0 ] || diag "$reply"

echo "$reply" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
f = json.load(open(sys.argv[1]))
got = r.get("floor", {})
want = {"require": f.get("require", []), "maxNetwork": f.get("maxNetwork", "proxy"),
        "hostMode": f.get("hostMode", False)}
ok = all(got.get(k) == v for k, v in want.items())
pu = got.get("perUser", {})
ok = ok and all(pu.get(k) == v for k, v in f.get("perUser", {}).items())
sys.exit(0 if ok else 1)' "$tmp/launcherd.json" 2>/dev/null
rc=$?
ok $rc "the reply's floor is the shipped default floor"
[ $rc -eq 0 ] || diag "$reply"

# Socket activation, as the .socket unit does it: systemd-socket-activate listens, hands the
# socket over as fd 3 with LISTEN_FDS/LISTEN_PID, and launcherd must serve it as it is.
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
asock="$tmp/activated.sock"
if command -v systemd-socket-activate >/dev/null; then
	(umask 0027; exec setsid systemd-socket-activate --seqpacket -l "$asock" \
		"$launcherd" --floor "$tmp/launcherd.json" </dev/null >"$tmp/a.out" 2>"$tmp/a.err") &
	pid=$!
	for _ in $(seq 100); do [ -S "$asock" ] && break; sleep 0.1; done
	mode_before=$(stat -c %a "$asock" 2>/dev/null)
	areply=$(python3 "$top_srcdir/tests/helpers/launcherd-hello.py" "$asock" 10 2>"$tmp/ahello.err")
	echo "$areply" | python3 -c 'import json,sys; r=json.load(sys.stdin); sys.exit(0 if r.get("type") == "hello" and r.get("mode") == "privileged" else 1)' 2>/dev/null
	ok $? "a socket-activated launcherd serves hello on the socket it was given"
	[ -n "$areply" ] || diag "$(cat "$tmp/a.err" "$tmp/ahello.err")"
	is_mode=$(stat -c %a "$asock" 2>/dev/null)
	[ -n "$mode_before" ] && [ "$is_mode" = "$mode_before" ]
	ok $? "it left the socket's mode as the unit set it ($mode_before, now $is_mode)"
	grep -q "socket-activated" "$tmp/a.err"
	ok $? "it says it was socket-activated"
else
	for _ in 1 2 3; do ok 1 "systemd-socket-activate missing (package systemd)"; done
fi

done_testing
