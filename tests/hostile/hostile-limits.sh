#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Requests at every limit of the protocol are answered, and those one past it refused, without
# ever crashing or stalling launcherd: 256 mounts, 256 Landlock rules, argv and envp up to the
# command-line limit (CORDON_ARG_MAX: strings, NULs and a pointer each), a 128 KiB string, 64 fds (the protocol's most) and 253 (the kernel's), a 4096
# instruction seccomp program, a 64-byte hostname, and frames of exactly the frame limit
# (1 MiB of JSON) and one byte more. After each, another user is still served.
. "${top_srcdir:-.}/tests/hostile/hostile-lib.sh"
h_require
command -v python3 >/dev/null || skip_all "python3 missing"
ld_start
plan 22

A=$TEST_USER1
V=$TEST_USER2
h_plan "$T/base.json" '["/bin/true"]'

# send NAME CLIENT-ARGS...: as A, one request (its fds: make_plan's, unless given), 20 s for its
# answer. The answer ("spawned", "error CODE FIELD", "closed", "timeout") in $T/NAME.reply.
send() {
	sn=$1
	shift
	hc --user $A --read-timeout 20000 "$@" >"$T/$sn.out" 2>>"$T/client.log"
	{
		h_reply "$T/$sn.out" | grep -v '^hello$' | tail -1
		h_lines "$T/$sn.out" closed | jq -r .type
		h_lines "$T/$sn.out" timeout | jq -r .type
	} | head -1 >"$T/$sn.reply"
}
reply() { cat "$T/$1.reply"; }
answered() { case "$(reply "$1")" in spawned | error\ *) return 0 ;; esac; return 1; }
refused() { case "$(reply "$1")" in "error invalid-plan $2"*) return 0 ;; esac; return 1; }

# at_limit NAME DESC JQ: the plan changed by JQ at the limit must be answered; the reply named.
at_limit() {
	jq -c "$3" "$T/base.json" >"$T/$1.json"
	send "$1" $H_STD --send "$T/$1.json"
	check "$2: answered ($(reply "$1"))" answered "$1"
}
# past_limit NAME DESC JQ FIELD: refused, naming FIELD.
past_limit() {
	jq -c "$3" "$T/base.json" >"$T/$1.json"
	send "$1" $H_STD --send "$T/$1.json"
	check "$2: refused naming $4 ($(reply "$1"))" refused "$1" "$4"
}

# 1-2. Mounts.
at_limit mounts "256 mounts" '.mounts += [range(256 - (.mounts | length)) | {"type": "dir", "target": "/d\(.)"}]'
past_limit mounts1 "257 mounts" '.mounts += [range(257 - (.mounts | length)) | {"type": "dir", "target": "/d\(.)"}]' plan.mounts

# 3-4. Landlock rules.
at_limit rules "256 Landlock rules" '.landlock.fs += [range(256 - (.landlock.fs | length)) | {"path": "/usr", "access": ["read-file"]}]'
past_limit rules1 "257 Landlock rules" '.landlock.fs += [range(257 - (.landlock.fs | length)) | {"path": "/usr", "access": ["read-file"]}]' plan.landlock.fs

# 5-8. argv and envp: up to the command-line limit counted as execve counts it (each string, its
# NUL and a pointer; 2 MiB less 8 KiB), in short strings so that the frame stays under 1 MiB.
at_limit argv "200000 argv strings (2000000 bytes counted)" '.argv += [range(199999) | "a"]'
past_limit argv1 "210000 argv strings (past the limit)" '.argv += [range(209999) | "a"]' plan.argv
at_limit envp "100000 envp strings" '.envp += [range(100000) | "V="]'
past_limit envp1 "190000 envp strings (past the limit with argv)" '.envp += [range(190000) | "V="]' plan.argv

# 9-10. A string of 128 KiB, and one byte more.
at_limit string "an argv string of 128 KiB" '.argv += ["x" * 131072]'
past_limit string1 "an argv string of 128 KiB + 1" '.argv += ["x" * 131073]' 'plan.argv[1]'

# 11-12. A hostname of 64 bytes, and 65.
at_limit host "a hostname of 64 bytes" '.hostname = ("h" * 64)'
past_limit host1 "a hostname of 65 bytes" '.hostname = ("h" * 65)' plan.hostname

# 13-14. A seccomp program of 4096 instructions (each "return allow"), and 4097.
bpf() { python3 -c 'import struct, sys; sys.stdout.buffer.write(struct.pack("<HBBI", 6, 0, 0, 0x7fff0000) * int(sys.argv[1]))' "$1" >"$2"; }
bpf 4096 "$T/bpf4096"
bpf 4097 "$T/bpf4097"
jq -c '.seccomp = {"program": 6}' "$T/base.json" >"$T/seccomp.json"
send seccomp $H_STD --fd "memfd:$T/bpf4096" --send "$T/seccomp.json"
check "a seccomp program of 4096 instructions: answered ($(reply seccomp))" answered seccomp
send seccomp1 $H_STD --fd "memfd:$T/bpf4097" --send "$T/seccomp.json"
check "…of 4097: refused naming plan.seccomp.program ($(reply seccomp1))" refused seccomp1 plan.seccomp.program

# 15-16. 64 fds with a spawn (the protocol's most), then 253 (the kernel's): the first
# answered, the second refused or the connection closed, launcherd unharmed.
send fds64 $H_STD --fd-count 64 --send "$T/base.json"
check "a spawn with 64 fds: answered ($(reply fds64))" answered fds64
send fds253 $H_STD --fd-count 253 --send "$T/base.json"
check "a spawn with 253 fds: refused or the connection closed ($(reply fds253)), launcherd unharmed" \
	eval '[ "$(reply fds253)" != timeout ] && ld_alive'

# 17-19. Frames of exactly the limit (1 MiB of JSON: a valid plan padded with environment
# strings, the last one to the byte), one byte more, and half the limit. The client sends a
# message as compact JSON in the order given (jansson's JSON_COMPACT is Python's (",", ":")), so
# the padding must be in the values, not in whitespace.
frame() {
	python3 - "$T/base.json" "$1" "$2" <<'EOF'
import json, sys
plan = json.load(open(sys.argv[1]))
size = int(sys.argv[3])
msg = {"type": "spawn", "seq": 2, "plan": plan}
dump = lambda: json.dumps(msg, separators=(",", ":"), ensure_ascii=True)
while len(dump()) + 100020 <= size:
    plan["envp"].append("P%d=%s" % (len(plan["envp"]), "x" * 100000))
plan["envp"].append("PAD=")
plan["envp"][-1] += "x" * (size - len(dump()))
assert len(dump()) == size
open(sys.argv[2], "w").write(dump())
EOF
}
frame "$T/frame.json" 1048576
frame "$T/frame1.json" 1048577
send frame $H_STD --send "$T/frame.json"
check "a frame of exactly 1 MiB of JSON (a valid plan): answered ($(reply frame))" answered frame
send frame1 $H_STD --send "$T/frame1.json"
check "a frame of 1 MiB + 1: refused, at worst by closing the connection ($(reply frame1))" \
	eval '[ "$(reply frame1)" != timeout ] && [ "$(reply frame1)" != spawned ]'
# Half the limit, where a channel sized for less would already fail.
frame "$T/frame-half.json" 524288
send half $H_STD --send "$T/frame-half.json"
check "a frame of 512 KiB: answered ($(reply half))" answered half

# 20-22. Sixteen connections at once, each sending every request above: launcherd stays.
for n in $(seq 1 16); do
	h_bg all$n --user $A "$HC" --socket "$T/ld.sock" $H_STD --pipeline --read-timeout 20000 \
		--send "$T/mounts.json" --send "$T/rules.json" --send "$T/argv.json" \
		--send "$T/envp.json" --send "$T/string.json" --send "$T/frame-half.json" \
		--quiet hello,spawned,error,exit,live
done
check_served "sixteen connections sending all of it at once: another user is served meanwhile" $V 5000
ld_reap_bg $H_BG_PIDS
H_BG_PIDS=
check "…all of them answered ($(cat "$T"/all*.out | h_lines /dev/stdin summary | jq -r '"\(.replies)/\(.sent)"' | sort | uniq -c | tr '\n' ' '))" \
	test -z "$(cat "$T"/all*.out | h_lines /dev/stdin summary | jq -r 'select(.replies != .sent)')"
check "launcherd is still running" ld_alive
tap_done
