#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The admin's trail (docs/DENIALS.md, "The admin's trail"): a privileged launcherd writes one
# key=value record per sandbox start and end to the system log, whoever the requester, with
# argv[0] escaped; a user who starts many sandboxes is rate-limited, then one record counts
# what was suppressed; a user-mode launcherd writes none. The end record counts the sandbox's
# denials (a seccomp refusal: the kernel logs those even with its audit off, so this test leaves
# the audit alone) and names the admin floor's rules; a spawn or a connection the floor refuses
# gets a record of its own. The log is a datagram socket the test binds
# (CORDON_LAUNCHERD_TRAIL_SOCKET), as /dev/log is.
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
plan 20

run_argv() { make_plan "$T/p.json" "$1"; shift; ld_run "$@" $STD_FDS "$T/p.json" >/dev/null 2>>"$T/client.log"; }
# rec EVENT SANDBOX: the record of that event of that sandbox (the message part)
rec() { grep "event=$1 .*sandbox=$2 " "$T/log.txt" | sed 's/^.*cordon-launcherd\[[0-9]*\]: //'; }
settle() { sleep 0.3; }
# ended SANDBOX: wait for its end record (with the denial reader it waits for the sandbox's last
# denials: 2 s after its end).
ended() {
	for _ in $(seq 60); do [ -n "$(rec sandbox-end "$1")" ] && return 0; sleep 0.1; done
	return 1
}
reader=$("$LP" --socket "$T/ld.sock" --hello 2>&1 | jq -r .denials.reader)

run_argv '["/bin/sh", "-c", "exit 7"]'
sb=$(json_field sandbox)
ended "$sb"
start=$(rec sandbox-start "$sb")
end=$(rec sandbox-end "$sb")
check "a start record for root's sandbox $sb ($start)" \
	sh -c "echo '$start' | grep -Eq '^event=sandbox-start uid=0 sandbox=$sb pid=[0-9]+ argv0=/bin/sh network=[a-z]+ layers=namespaces,floor'"
check "an end record: exit 7, reason exited, the floor's rules, no denials ($end)" \
	sh -c "echo '$end' | grep -Eq '^event=sandbox-end uid=0 sandbox=$sb pid=[0-9]+ exit=7 signal=0 reason=exited durationMs=[0-9]+ floor=max-network-proxy denials=0 denialsSuppressed=0$'"
check "  the same init pid in both" \
	test "$(echo "$start" | sed 's/.* pid=\([0-9]*\) .*/\1/')" = "$(echo "$end" | sed 's/.* pid=\([0-9]*\) .*/\1/')"
check "syslog framing: daemon.info, the identifier, a timestamp" \
	grep -Eq "^<30>[A-Z][a-z]{2} [ 0-9][0-9] [0-9:]{8} cordon-launcherd\[$LD_PID\]: event=sandbox-start .*sandbox=$sb " "$T/log.txt"

run_argv '["/bin/sh", "-c", "kill -9 $$"]' --user $TEST_USER1
sb1=$(json_field sandbox)
ended "$sb1"
uid1=$(id -u $TEST_USER1)
check "another user's sandbox is in the same log, with its uid ($(rec sandbox-start "$sb1" | cut -c1-80))" \
	sh -c "rec() { grep \"event=\$1 .*sandbox=\$2 \" '$T/log.txt'; }; rec sandbox-start '$sb1' | grep -q 'uid=$uid1 ' && rec sandbox-end '$sb1' | grep -q 'uid=$uid1 .* exit=0 signal=9 reason=signaled'"

# Its denials: a floor system call refused twice (seccomp), counted in its end record.
check "the denial reader runs (hello: $reader)" test "$reader" = true
t0=$(date +%s%N)
run_argv '["/bin/sh", "-c", "unshare -U true; unshare -U true; exit 3"]' --user $TEST_USER1
sbd=$(json_field sandbox)
ended "$sbd"
t1=$(date +%s%N)
endd=$(rec sandbox-end "$sbd")
check "a sandbox refused twice: its end record says denials=2 ($endd)" \
	sh -c "echo '$endd' | grep -Eq '^event=sandbox-end uid=$uid1 sandbox=$sbd .* exit=3 .* denials=2 denialsSuppressed=0$'"
check "  written once its last denials can no longer come ($(( (t1 - t0) / 1000000 )) ms after the start)" \
	test $(( (t1 - t0) / 1000000 )) -ge 1900
# A burst: the requester is told 10 a second (docs/DENIALS.md); the record counts them all, and
# those held back.
run_argv '["/bin/sh", "-c", "for i in $(seq 25); do unshare -U true; done"]' --user $TEST_USER1
sbb=$(json_field sandbox)
ended "$sbb"
endb=$(rec sandbox-end "$sbb")
supb=$(echo "$endb" | sed -n 's/.* denialsSuppressed=\([0-9]*\)$/\1/p')
check "a burst of 25: denials=25, denialsSuppressed=${supb:-?} of them ($endb)" \
	sh -c "echo '$endb' | grep -q ' denials=25 denialsSuppressed=' && [ '${supb:-0}' -ge 5 ] && [ '${supb:-0}' -le 15 ]"

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
nlog=$(wc -l <"$T/log.txt")
run_argv '["/bin/true"]' --user $TEST_USER1 --repeat 30
sleep 2.6 # their end records, held for their denials
logged=$(( $(grep -c "uid=$uid1 " "$T/log.txt") - before ))
check "30 sandboxes of one user (60 records): rate-limited ($logged logged)" \
	test "$logged" -ge 18 -a "$logged" -le 40
run_argv '["/bin/true"]'
sbr=$(json_field sandbox)
ended "$sbr"
check "  root's sandbox right after is logged ($sbr)" test -n "$(rec sandbox-start "$sbr")"
sleep 3
run_argv '["/bin/true"]' --user $TEST_USER1
ended "$(json_field sandbox)"
# (The end records are held 2 s for their denials, as the bucket refills: a suppressed count may
# come before each that is logged.)
after=$(tail -n +$((nlog + 1)) "$T/log.txt")
sup=$(echo "$after" | grep "event=trail-suppressed uid=$uid1 " | sed 's/.*suppressed=//' | awk '{ s += $1 } END { print s + 0 }')
kept=$(echo "$after" | grep -c "event=sandbox-.* uid=$uid1 ")
check "after a pause: what was suppressed is counted ($sup), then the user's records again: all 62 accounted for ($kept + $sup)" \
	test "$sup" -ge 1 -a $((kept + sup)) = 62 -a -n "$(rec sandbox-end "$(json_field sandbox)")"

# A user-mode launcherd logs nothing of its sandboxes.
n0=$(wc -l <"$T/log.txt")
make_plan "$T/u.json" '["/bin/true"]'
ld_run --user-mode --user $TEST_USER1 $STD_FDS "$T/u.json" >/dev/null 2>>"$T/client.log"
settle
check "a user-mode launcherd's sandbox: no record ($(( $(wc -l <"$T/log.txt") - n0 )) new)" \
	test "$(wc -l <"$T/log.txt")" = "$n0"

# The admin floor: what a sandbox was held to is in its end record; a spawn it refuses, and a
# user it does not allow, get a record each.
ld_stop
printf '{"require": ["netns"], "maxNetwork": "loopback", "allowUsers": ["root", "%s"]}\n' \
	"$TEST_USER1" >"$T/floor.json"
ld_start
run_argv '["/bin/true"]' --user $TEST_USER1
sbf=$(json_field sandbox)
ended "$sbf"
check "the end record names the floor's rules ($(rec sandbox-end "$sbf" | sed 's/.* floor=//'))" \
	sh -c "grep 'event=sandbox-end .*sandbox=$sbf ' '$T/log.txt' | grep -q ' floor=allow-list,require-netns,max-network-loopback denials='"
n0=$(wc -l <"$T/log.txt")
make_plan "$T/true.json" '["/bin/true"]'
jq '.network = "host"' "$T/true.json" >"$T/host.json"
ld_run --user $TEST_USER1 $STD_FDS "$T/host.json" >/dev/null 2>>"$T/client.log"
code=$(json_field code)
settle
refusal=$(tail -n +$((n0 + 1)) "$T/log.txt" | grep 'event=floor-refused ' | sed 's/^.*cordon-launcherd\[[0-9]*\]: //')
check "a spawn the floor refuses ($code): one record, naming the rule and the field ($refusal)" \
	test "$code" = floor-refused -a "$refusal" = "event=floor-refused uid=$uid1 request=spawn code=floor-refused rule=require-netns field=plan.network argv0=/bin/true network=host"
check "  and no sandbox record" \
	test -z "$(tail -n +$((n0 + 1)) "$T/log.txt" | grep 'event=sandbox-')"
jq '.network = "proxy"' "$T/true.json" >"$T/proxy.json"
n0=$(wc -l <"$T/log.txt")
ld_run $STD_FDS "$T/proxy.json" >/dev/null 2>>"$T/client.log"
settle
check "  the network ceiling: rule max-network ($(tail -n +$((n0 + 1)) "$T/log.txt" | grep -o 'rule=[^ ]*'))" \
	sh -c "tail -n +$((n0 + 1)) '$T/log.txt' | grep -q 'event=floor-refused uid=0 request=spawn code=floor-refused rule=max-network field=plan.network argv0=/bin/true network=proxy$'"
uid2=$(id -u $TEST_USER2)
n0=$(wc -l <"$T/log.txt")
ld_run --user $TEST_USER2 $STD_FDS "$T/p.json" >/dev/null 2>>"$T/client.log"
code=$(json_field code)
settle
check "a user the floor does not allow ($code): a record at hello ($(tail -n +$((n0 + 1)) "$T/log.txt" | grep -o 'event=floor-refused.*'))" \
	sh -c "[ '$code' = floor-refused ] && tail -n +$((n0 + 1)) '$T/log.txt' | grep -q 'event=floor-refused uid=$uid2 request=hello code=floor-refused rule=allow-list field=- argv0=- network=-$'"

[ "$_tap_failed" = 0 ] || tail -n 20 "$T/launcherd.log" | sed 's/^/# /'
tap_done
