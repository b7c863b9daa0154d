#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The admin's trail (docs/DENIALS.md, "The admin's trail"): a privileged launcherd writes one
# key=value record per sandbox start and end to the system log, whoever the requester, with
# argv[0] escaped; a user who starts many sandboxes is rate-limited, then one record counts
# what was suppressed; a user-mode launcherd writes none. The log is a datagram socket the test
# binds (CORDON_LAUNCHERD_TRAIL_SOCKET), as /dev/log is.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
ld_require_root
command -v python3 >/dev/null 2>&1 || skip_all "no python3"
command -v jq >/dev/null 2>&1 || skip_all "no jq"

# The log: every datagram to $T/log.sock, one line each, in $T/log.txt.
python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
with open(sys.argv[2], "ab", buffering=0) as f:
    f.write(b"ready\n")
    while True:
        f.write(s.recv(65536).replace(b"\n", b" ") + b"\n")
' "$T/log.sock" "$T/log.txt" &
LOG_PID=$!
trap 'kill $LOG_PID 2>/dev/null; ld_cleanup' EXIT
for _ in $(seq 50); do grep -q ready "$T/log.txt" 2>/dev/null && break; sleep 0.1; done
export CORDON_LAUNCHERD_TRAIL_SOCKET="$T/log.sock"
ld_start
plan 11

run_argv() { make_plan "$T/p.json" "$1"; shift; ld_run "$@" $STD_FDS "$T/p.json" >/dev/null 2>>"$T/client.log"; }
# rec EVENT SANDBOX: the record of that event of that sandbox (the message part)
rec() { grep "event=$1 .*sandbox=$2 " "$T/log.txt" | sed 's/^.*cordon-launcherd\[[0-9]*\]: //'; }
settle() { sleep 0.3; }

run_argv '["/bin/sh", "-c", "exit 7"]'
sb=$(json_field sandbox)
settle
start=$(rec sandbox-start "$sb")
end=$(rec sandbox-end "$sb")
check "a start record for root's sandbox $sb ($start)" \
	sh -c "echo '$start' | grep -Eq '^event=sandbox-start uid=0 sandbox=$sb pid=[0-9]+ argv0=/bin/sh network=[a-z]+ layers=namespaces,floor'"
check "an end record: exit 7, reason exited ($end)" \
	sh -c "echo '$end' | grep -Eq '^event=sandbox-end uid=0 sandbox=$sb pid=[0-9]+ exit=7 signal=0 reason=exited durationMs=[0-9]+$'"
check "  the same init pid in both" \
	test "$(echo "$start" | sed 's/.* pid=\([0-9]*\) .*/\1/')" = "$(echo "$end" | sed 's/.* pid=\([0-9]*\) .*/\1/')"
check "syslog framing: daemon.info, the identifier, a timestamp" \
	grep -Eq "^<30>[A-Z][a-z]{2} [ 0-9][0-9] [0-9:]{8} cordon-launcherd\[$LD_PID\]: event=sandbox-start .*sandbox=$sb " "$T/log.txt"

run_argv '["/bin/sh", "-c", "kill -9 $$"]' --user $TEST_USER1
sb1=$(json_field sandbox)
settle
uid1=$(id -u $TEST_USER1)
check "another user's sandbox is in the same log, with its uid ($(rec sandbox-start "$sb1" | cut -c1-80))" \
	sh -c "rec() { grep \"event=\$1 .*sandbox=\$2 \" '$T/log.txt'; }; rec sandbox-start '$sb1' | grep -q 'uid=$uid1 ' && rec sandbox-end '$sb1' | grep -q 'uid=$uid1 .* exit=0 signal=9 reason=signaled'"

# argv[0] is the requester's: spaces, quotes, '=' and control bytes are escaped, length bounded.
mkdir -p "$T/bin"
weird="$T/bin/a b\"c=d$(printf '\001')$(head -c 100 /dev/zero | tr '\0' x)"
ln -sf /bin/true "$weird"
make_plan "$T/w.json" "$(jq -nc --arg a "$weird" '[$a]')"
n0=$(wc -l <"$T/log.txt")
ld_run $STD_FDS "$T/w.json" >/dev/null 2>>"$T/client.log" # (not found in the sandbox: 127)
settle
a0=$(tail -n +$((n0 + 1)) "$T/log.txt" | grep 'event=sandbox-start ' | sed 's/.* argv0=\([^ ]*\) .*/\1/')
check "argv[0] escaped, one word ($a0)" \
	sh -c "echo '$a0' | grep -qF 'a\\x20b\\x22c\\x3dd\\x01x' && ! echo '$a0' | grep -q '[ \"=]'"
check "  and bounded (64 bytes of it: ${#a0} characters escaped)" test "${#a0}" -ge 64 -a "${#a0}" -le 90

# A user who starts many sandboxes at once: 20 records, then 2 a second; the rest counted.
before=$(grep -c "uid=$uid1 " "$T/log.txt")
run_argv '["/bin/true"]' --user $TEST_USER1 --repeat 30
settle
logged=$(( $(grep -c "uid=$uid1 " "$T/log.txt") - before ))
check "30 sandboxes of one user (60 records): rate-limited ($logged logged)" \
	test "$logged" -ge 18 -a "$logged" -le 40
run_argv '["/bin/true"]'
sbr=$(json_field sandbox)
settle
check "  root's sandbox right after is logged ($sbr)" test -n "$(rec sandbox-start "$sbr")"
sleep 3
run_argv '["/bin/true"]' --user $TEST_USER1
settle
sup=$(grep "event=trail-suppressed uid=$uid1 " "$T/log.txt" | tail -n1 | sed 's/.*suppressed=//')
check "after a pause: one record counts what was suppressed ($sup), then the user's records again" \
	test "${sup:-0}" -ge 1 -a $((logged + ${sup:-0})) -ge 58

# A user-mode launcherd logs nothing of its sandboxes.
n0=$(wc -l <"$T/log.txt")
make_plan "$T/u.json" '["/bin/true"]'
ld_run --user-mode --user $TEST_USER1 $STD_FDS "$T/u.json" >/dev/null 2>>"$T/client.log"
settle
check "a user-mode launcherd's sandbox: no record ($(( $(wc -l <"$T/log.txt") - n0 )) new)" \
	test "$(wc -l <"$T/log.txt")" = "$n0"

[ "$_tap_failed" = 0 ] || tail -n 20 "$T/launcherd.log" | sed 's/^/# /'
tap_done
