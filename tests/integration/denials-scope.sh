#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Refusal kinds beyond denials.sh's (docs/DENIALS.md, "What is reported"), each exactly one
# denial naming what was refused: Landlock's scoping of an abstract UNIX socket connect across
# the sandbox's edge (two sandboxes of one user sharing a network namespace: network "unix"), a
# TCP bind, an execute; a system call only the policy's profile refuses and one only launcherd's
# floor refuses, each named with its rule by `cordon run --json`. A signal cannot cross the
# sandbox's edge at all: its pid namespace hides every process outside its Landlock domain (no
# process of the sandbox is outside it), so Landlock's signal scope never has to decide; the
# test shows a signal to a host process fails for want of a name, with no denial. Through a
# privileged launcherd with the kernel's audit on (denials-lib.sh).
. "${top_srcdir:-.}/tests/integration/denials-lib.sh"
plan 16
mkdir -p "$T/work" && chmod 0777 "$T/work"

# An abstract UNIX socket across the edge. A listener in one sandbox (network "unix": the
# requester's shared network namespace, so the name is reachable from another sandbox of the
# same user); its own connect, in its own domain, succeeds; another sandbox's is Landlock's to
# refuse.
name="cordon-dn-scope-$$"
export DN_PLAN_JQ='.network = "unix"'
dn_run "$T/listen.out" "python3 -c '
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(\"\\0$name\")
s.listen(4)
c = socket.socket(socket.AF_UNIX)
c.connect(\"\\0$name\")
print(\"netns\", os.readlink(\"/proc/self/ns/net\"), \"self-ok\", flush=True)
time.sleep(4)
'" 0.5 &
listener=$!
for _ in $(seq 100); do grep -q self-ok "$T/listen.out" 2>/dev/null && break; sleep 0.05; done
dn_run "$T/connect.out" "python3 -c '
import os, socket
print(\"netns\", os.readlink(\"/proc/self/ns/net\"), flush=True)
c = socket.socket(socket.AF_UNIX)
try:
    c.connect(\"\\0$name\")
    print(\"connected\")
except OSError as e:
    print(\"refused\", e.errno)
'"
wait $listener
unset DN_PLAN_JQ
ns_l=$(grep -o 'netns net:\[[0-9]*\]' "$T/listen.out")
ns_c=$(grep -o 'netns net:\[[0-9]*\]' "$T/connect.out")
check "control: the listener's own connect succeeds, no denial ($(show "$T/listen.out"))" \
	sh -c "grep -q self-ok '$T/listen.out' && [ \"\$(grep -c '\"type\": \"denial\"' '$T/listen.out')\" = 0 ]"
check "  and both sandboxes share a network namespace ($ns_l, $ns_c): the name is in reach" \
	test -n "$ns_l" -a "$ns_l" = "$ns_c"
check "an abstract UNIX socket connect from another sandbox: refused with EPERM ($(grep -E '^(connected|refused)' "$T/connect.out"))" \
	grep -q '^refused 1$' "$T/connect.out"
check "  one denial, landlock scope abstract-unix-socket, naming the socket @$name ($(show "$T/connect.out"))" \
	one "$T/connect.out" '.layer == "landlock" and .kind == "scope" and .access == ["abstract-unix-socket"] and .path == "@'"$name"'"'

# A TCP bind: the plan grants no port.
dn_run "$T/bind.out" "python3 -c 'import socket; socket.socket().bind((\"127.0.0.1\", 8080))' 2>&1 | tail -n 1"
check "a denied TCP bind: one denial, landlock bind-tcp of port 8080 ($(show "$T/bind.out"))" \
	one "$T/bind.out" '.layer == "landlock" and .kind == "net" and .access == ["bind-tcp"] and .port == 8080'
check "  the command saw EACCES (PermissionError)" grep -q PermissionError "$T/bind.out"
dn_run "$T/bind0.out" "python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"\\0x\")'"
check "  control: an AF_UNIX bind (no TCP port) is not refused ($(show "$T/bind0.out"))" \
	test "$(denials "$T/bind0.out")" = 0

# An execute: /probe may be listed, not executed (nor read).
check "control: the probe runs on the host" sh -c "'$HELPERS/probe' --help >/dev/null 2>&1; [ \$? != 126 ]"
dn_run "$T/exec.out" "/probe/probe --help; echo rc=\$?"
check "a denied execute: one denial, landlock execute of /probe/probe ($(show "$T/exec.out"))" \
	one "$T/exec.out" '.layer == "landlock" and .kind == "fs" and (.access | index("execute")) != null and .path == "/probe/probe"'
check "  the command saw exit 126 (cannot execute)" grep -q '^rc=126$' "$T/exec.out"

# A signal: inside the sandbox, allowed; to a host process, no name to send it to.
sleep 30 &
host_pid=$!
dn_run "$T/signal.out" "sleep 5 & kill \$! && echo inside-ok; kill -0 $host_pid 2>&1; echo rc=\$?"
kill $host_pid 2>/dev/null
check "a signal within the sandbox: delivered, no denial ($(show "$T/signal.out"))" \
	sh -c "grep -q inside-ok '$T/signal.out' && [ \"\$(grep -c '\"type\": \"denial\"' '$T/signal.out')\" = 0 ]"
check "  to a host process (pid $host_pid): no such process in its pid namespace, so no denial" \
	sh -c "grep -qi 'no such process' '$T/signal.out' && grep -q '^rc=1$' '$T/signal.out'"

# A system call only the profile refuses, and one only launcherd's floor refuses: the summary
# names each one's rule (docs/DENIALS.md, "After a failed command").
cli root run -T --json -- python3 -c 'import ctypes, sys; sys.exit(0 if ctypes.CDLL(None).klogctl(10, None, 0) >= 0 else 1)' \
	>"$T/profile.json" 2>"$T/profile.err"
check "a system call of the profile (syslog): one denial, rule syscalls.profile default ($(jq -c .denials "$T/profile.json" 2>/dev/null | cut -c1-300))" \
	jq -e '.exitCode == 1 and (.denials | length) == 1 and .denials[0].syscall == "syslog" and .denials[0].action == "errno" and .denials[0].rule == "syscalls.profile default" and .denials[0].count == 1' "$T/profile.json"
cli root run -T --json -- python3 -c 'import ctypes, sys; sys.exit(0 if ctypes.CDLL(None).mount(b"none", b"/tmp", b"tmpfs", 0, None) >= 0 else 1)' \
	>"$T/floor.json" 2>"$T/floor.err"
# The profile refuses mount too, and the kernel answers with its errno first: both are named.
check "a system call of launcherd's floor and the profile (mount): one denial, both rules ($(jq -c .denials "$T/floor.json" 2>/dev/null | cut -c1-300))" \
	jq -e '.exitCode == 1 and (.denials | length) == 1 and .denials[0].syscall == "mount" and .denials[0].rule == "syscalls.profile default and launcherd'"'"'s floor" and .denials[0].count == 1' "$T/floor.json"
echo '{"version": 1, "syscalls": {"allow": ["syslog"]}}' >"$T/allow-syslog.json"
chmod 0644 "$T/allow-syslog.json"
cli root run -T --json --policy "$T/allow-syslog.json" -- python3 -c 'import ctypes, sys; sys.exit(0 if ctypes.CDLL(None).klogctl(10, None, 0) >= 0 else 1)' \
	>"$T/allowed.json" 2>"$T/allowed.err"
check "  control: with syscalls.allow syslog, the profile's refusal is lifted: no denial ($(jq -c '[.exitCode, .denials]' "$T/allowed.json" 2>/dev/null))" \
	jq -e '.exitCode == 1 and (has("denials") | not)' "$T/allowed.json"
echo '{"version": 1, "syscalls": {"allow": ["syslog", "mount"]}}' >"$T/allow-mount.json"
chmod 0644 "$T/allow-mount.json"
cli root run -T --json --policy "$T/allow-mount.json" -- python3 -c 'import ctypes, sys; sys.exit(0 if ctypes.CDLL(None).mount(b"none", b"/tmp", b"tmpfs", 0, None) >= 0 else 1)' \
	>"$T/floor2.json" 2>"$T/floor2.err"
check "  and the floor's is not: mount stays refused with syscalls.allow mount ($(jq -c '[.exitCode, .denials[0].rule]' "$T/floor2.json" 2>/dev/null; head -c 200 "$T/floor2.err"))" \
	jq -e '.exitCode == 1 and (.denials | length) == 1 and .denials[0].syscall == "mount" and .denials[0].rule == "launcherd'"'"'s floor"' "$T/floor2.json"

[ "$_tap_failed" = 0 ] || tail -n 20 "$T/launcherd.log" | sed 's/^/# /'
tap_done
