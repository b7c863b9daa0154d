#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The arguments of the floor's refusals (docs/DENIALS.md): launcherd's floor answers what it
# refuses through the sandbox's init (SECCOMP_RET_USER_NOTIF, always EPERM), which reports the
# call with its arguments; a "denial" names the socket family, the namespace flag, and the
# filter that refused ("floor", or "policy" from the audit record). The program sees the same
# errno as without; allowed calls and the command's exit are unaffected; a burst is
# rate-limited; the listener is out of the command's reach. Then `cordon run`'s summary and
# `cordon policy suggest` name the argument and the deciding rule. Through a privileged
# launcherd with the kernel's audit turned on for the test (restored at exit), taking turns on
# it with the other denial tests.
DN_LANDLOCK=0
. "${top_srcdir:-.}/tests/integration/denials-lib.sh"
grep -qw user_notif /proc/sys/kernel/seccomp/actions_avail 2>/dev/null ||
	skip_all "no SECCOMP_RET_USER_NOTIF in this kernel"
hello=$("$LP" --socket "$T/ld.sock" --hello 2>&1)
[ "$(echo "$hello" | jq -r .denials.reader 2>/dev/null)" = true ] ||
	skip_all "launcherd reads no denials ($(echo "$hello" | jq -c .denials 2>/dev/null))"
plan 29

# da_plan FILE NETWORK COMMAND: a sandbox with the floor alone (no filter of the plan's).
da_plan() {
	jq -n --arg net "$2" --arg cmd "$3" '{argv: ["/bin/sh", "-c", $cmd],
	 envp: ["PATH=/usr/bin:/bin", "HOME=/tmp"], cwd: "/",
	 stdio: {stdin: 0, stdout: 1, stderr: 2},
	 mounts: [{type: "bind", source: 3, target: "/usr"},
	  {type: "symlink", target: "/bin", link: "usr/bin"},
	  {type: "symlink", target: "/lib", link: "usr/lib"},
	  {type: "symlink", target: "/lib64", link: "usr/lib64"},
	  {type: "tmpfs", target: "/tmp"}, {type: "proc", target: "/proc"},
	  {type: "dev", target: "/dev"}],
	 network: $net, dieWithRequester: true}' >"$1"
}
# da_run OUT NETWORK COMMAND [LINGER]: OUT gets the denials, then the exit, a JSON line each.
da_run() {
	da_plan "$T/da-$$.json" "$2" "$3"
	$DP "$T/ld.sock" "$T/da-$$.json" --fd 3=/usr --linger "${4:-0.5}" >"$1" 2>>"$T/client.log"
}
jqe() { jq -e "$@" >/dev/null; }
# py CODE: a python3 one-liner printing what it saw, for the sandbox's shell
errno_of() { printf "python3 -c 'import socket\ntry:\n  socket.socket(%s)\n  print(\"errno 0\")\nexcept OSError as e:\n  print(\"errno\", e.errno)'" "$1"; }

da_run "$T/nl.out" none "$(errno_of 'socket.AF_NETLINK, socket.SOCK_RAW, 9')"
check "network none, a netlink socket but NETLINK_ROUTE: one denial naming the family, the protocol and the floor ($(show "$T/nl.out"))" \
	one "$T/nl.out" '.layer == "seccomp" and .syscall == "socket" and .filter == "floor" and .family == "AF_NETLINK" and .protocol == 9 and .socketType == "SOCK_RAW" and .action == "errno"'
check "  the program saw EPERM, as without the listener" grep -q '^errno 1$' "$T/nl.out"
check "  and the command name, the sandbox's pid" \
	one "$T/nl.out" '.comm == "python3" and (.sandboxPid | type) == "number" and .sandboxPid > 1'
check "  no second report of it (the floor's refusals are not logged too)" \
	test "$(grep -c '"syscall": "socket"' "$T/nl.out")" = 1

da_run "$T/unix.out" unix "$(errno_of 'socket.AF_NETLINK, socket.SOCK_DGRAM, 0')"
check "network unix, any netlink socket: family AF_NETLINK, the floor ($(show "$T/unix.out"))" \
	one "$T/unix.out" '.syscall == "socket" and .filter == "floor" and .family == "AF_NETLINK" and .protocol == 0'
check "  EPERM" grep -q '^errno 1$' "$T/unix.out"

da_run "$T/unshare.out" none "unshare -U true; echo rc \$?; unshare -U true 2>&1 | tail -n 1"
check "unshare -U: flags CLONE_NEWUSER, the floor, comm unshare ($(show "$T/unshare.out"))" \
	sh -c "[ \"\$(grep -c '\"type\": \"denial\"' '$T/unshare.out')\" = 2 ] && grep '\"type\": \"denial\"' '$T/unshare.out' | head -n 1 | jq -e '.syscall == \"unshare\" and .flags == [\"CLONE_NEWUSER\"] and .filter == \"floor\" and .comm == \"unshare\"' >/dev/null"
check "  the command failed as before: EPERM (Operation not permitted), exit 1" \
	sh -c "grep -q '^rc 1$' '$T/unshare.out' && grep -q 'Operation not permitted' '$T/unshare.out'"

da_run "$T/packet.out" none "$(errno_of 'socket.AF_PACKET, socket.SOCK_RAW')"
check "AF_PACKET: family named, EPERM ($(show "$T/packet.out"))" \
	sh -c "grep -q '^errno 1$' '$T/packet.out' && grep '\"type\": \"denial\"' '$T/packet.out' | jq -e '.family == \"AF_PACKET\" and .socketType == \"SOCK_RAW\"' >/dev/null"

da_run "$T/allowed.out" none "$(errno_of 'socket.AF_UNIX, socket.SOCK_STREAM'); $(errno_of 'socket.AF_NETLINK, socket.SOCK_RAW, 0'); python3 -c 'import threading; t = threading.Thread(target=print); t.start(); t.join()'; exit 7"
check "allowed calls (AF_UNIX, NETLINK_ROUTE, a thread): no denial, their results, the exit code ($(show "$T/allowed.out"))" \
	sh -c "[ \"\$(grep -c '\"type\": \"denial\"' '$T/allowed.out')\" = 0 ] && [ \"\$(grep -c '^errno 0$' '$T/allowed.out')\" = 2 ] && grep '\"type\": \"exit\"' '$T/allowed.out' | jq -e '.exitCode == 7' >/dev/null"

# The listener is the init's alone: whoever held it could let refused calls through. Not by
# pidfd_getfd() nor /proc/1/fd (the init is never dumpable), whatever the fd's number.
cat >"$T/reach.py" <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
pidfd = libc.syscall(434, 1, 0)  # pidfd_open(1)
got = [fd for fd in range(3, 16) if libc.syscall(438, pidfd, fd, 0) >= 0]  # pidfd_getfd
opened = []
for fd in range(3, 16):
    try:
        os.close(os.open("/proc/1/fd/%d" % fd, os.O_RDONLY))
        opened.append(fd)
    except OSError:
        pass
print("pidfd", pidfd >= 0, "got", got, "opened", opened)
PY
mkdir -p "$T/py" && cp "$T/reach.py" "$T/py/" && chmod 0755 "$T/py" && chmod 0644 "$T/py/reach.py"
# da_run_py OUT SCRIPT: da_run with $T/py mounted at /py
da_run_py() {
	da_plan "$T/py-$$.json" none "python3 /py/$2"
	jq '.mounts += [{type: "bind", source: 4, target: "/py"}]' "$T/py-$$.json" >"$T/py2-$$.json"
	$DP "$T/ld.sock" "$T/py2-$$.json" --fd 3=/usr --fd 4="$T/py" --linger 0.3 >"$1" 2>>"$T/client.log"
}
da_run_py "$T/reach.out" reach.py
check "the command cannot take the init's listener (pidfd_getfd, /proc/1/fd/N) ($(show "$T/reach.out"))" \
	grep -q '^pidfd True got \[\] opened \[\]$' "$T/reach.out"

# A program that wants a listener of its own: the kernel allows one per filter chain (EBUSY).
cat >"$T/listener.py" <<'PY'
import ctypes, struct
libc = ctypes.CDLL(None, use_errno=True)
allow = struct.pack("=HBBI", 0x06, 0, 0, 0x7fff0000)  # BPF_RET|BPF_K, SECCOMP_RET_ALLOW
buf = ctypes.create_string_buffer(allow)
prog = struct.pack("=HxxxxxxQ", 1, ctypes.addressof(buf))
pbuf = ctypes.create_string_buffer(prog)
r = libc.syscall(317, 1, 8, pbuf)  # seccomp(SET_MODE_FILTER, FLAG_NEW_LISTENER)
print("listener", r if r < 0 else 0, ctypes.get_errno() if r < 0 else 0)
PY
cp "$T/listener.py" "$T/py/" && chmod 0644 "$T/py/listener.py"
da_run_py "$T/lst.out" listener.py
check "a listener of the command's own: EBUSY, the kernel's one per filter chain (a limit) ($(show "$T/lst.out"))" \
	grep -q '^listener -1 16$' "$T/lst.out"

# A burst: the init reports at most 100 a second, launcherd sends 10; every one is counted.
da_run "$T/burst.out" none "python3 -c '
import socket
for i in range(50):
  try: socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
  except OSError: pass'" 1.6
n=$(jq -r 'select(.type == "denial" and .layer) | .sandbox' "$T/burst.out" | wc -l)
sup=$(jq -r 'select(.type == "denial" and .suppressed) | .suppressed' "$T/burst.out" | awk '{ s += $1 } END { print s + 0 }')
check "a burst of 50 refusals is rate-limited: $n reported, $sup counted" test "$n" -le 10 -a "$n" -ge 1
check "  and every one is accounted for ($n + $sup = 50)" test $((n + sup)) = 50
da_run "$T/flood.out" none "python3 -c '
import socket
for i in range(300):
  try: socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
  except OSError: pass'" 2.2
n=$(jq -r 'select(.type == "denial" and .layer) | .sandbox' "$T/flood.out" | wc -l)
sup=$(jq -r 'select(.type == "denial" and .suppressed) | .suppressed' "$T/flood.out" | awk '{ s += $1 } END { print s + 0 }')
check "a flood of 300 (above the init's own limit): $n reported, every one counted ($n + $sup = 300)" \
	test "$n" -le 10 -a $((n + sup)) = 300
check "  the command's exit is still reported by its init ($(grep -o '"exitCode": [0-9]*' "$T/flood.out"))" \
	grep -q '"exitCode": 0' "$T/flood.out"

# Through cordon: the summary after a failed command, and `cordon policy suggest`.
# summary FILE: the summary's refusal lines
summary() { sed -n '/^cordon: [0-9]* refusals\{0,1\} in the sandbox/,$p' "$1" | grep '^  '; }

echo '{"version": 1, "syscalls": {"allow": ["unshare"]}}' >"$T/allow-unshare.json"
chmod 0644 "$T/allow-unshare.json"
cli root run -T --policy "$T/allow-unshare.json" -- sh -c 'unshare -U true; exit 3' >/dev/null 2>"$T/s-floor.err"
check "summary: unshare with the profile's refusal lifted names the flag and the floor ($(summary "$T/s-floor.err"))" \
	test "$(summary "$T/s-floor.err")" = "  unshare CLONE_NEWUSER (launcherd's floor)"
cli root run -T -- sh -c 'unshare -U true; exit 3' >/dev/null 2>"$T/s-policy.err"
check "summary: unshare under the default profile names the flag and the policy's rule, which refused it first ($(summary "$T/s-policy.err"))" \
	test "$(summary "$T/s-policy.err")" = "  unshare CLONE_NEWUSER (syscalls.profile default)"
cli root run -T -- python3 -c 'import ctypes; libc = ctypes.CDLL(None, use_errno=True); libc.syscall(103, 10, 0, 0); exit(ctypes.get_errno())' >/dev/null 2>"$T/s-syslog.err"
rc=$?
check "summary: a call only the profile refuses (syslog) names the profile; the program saw EPERM ($rc: $(summary "$T/s-syslog.err"))" \
	test "$rc/$(summary "$T/s-syslog.err")" = "1/  syslog (syscalls.profile default)"
cli root run -T --net unix -- python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM)' >/dev/null 2>"$T/s-unix.err"
check "summary: a netlink socket under network unix names the family and network.mode ($(summary "$T/s-unix.err"))" \
	test "$(summary "$T/s-unix.err")" = "  socket AF_NETLINK protocol 0 (network.mode unix)"

# The policy's filter goes in front of the floor, one program (launcherd-seccomp.h): its
# refusals are the init's to answer too, with the policy's own errno, and come with their
# arguments; no audit session is made for the sandbox.
echo '{"version": 1, "syscalls": {"profile": "strict"}}' >"$T/strict.json"
chmod 0644 "$T/strict.json"
cli root run -T --policy "$T/strict.json" -- python3 -c 'import errno, socket
try: socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
except OSError as e: exit(e.errno)' >/dev/null 2>"$T/s-packet.err"
rc=$?
check "summary: AF_PACKET under the strict profile: the profile's errno (EAFNOSUPPORT, 97), not the floor's EPERM, and the family named ($rc: $(summary "$T/s-packet.err"))" \
	test "$rc/$(summary "$T/s-packet.err")" = "97/  socket AF_PACKET (syscalls.profile strict)"
cli root run -T -- python3 -c 'import threading
t = threading.Thread(target=print); t.start(); t.join(); exit(3)' >/dev/null 2>"$T/s-thread.err"
rc=$?
check "a thread under the default profile (clone3 answered ENOSYS by it, libc then uses clone): no refusal, no summary ($rc: $(cat "$T/s-thread.err"))" \
	test "$rc/$(summary "$T/s-thread.err")" = "3/"
if [ "$(cat /proc/self/loginuid)" = 4294967295 ]; then
	cli root run -T -- cat /proc/self/loginuid >"$T/luid.out" 2>&1
	check "no login uid (no audit session) is set for a sandbox whose refusals its init reports ($(cat "$T/luid.out"))" \
		grep -qx 4294967295 "$T/luid.out"
else
	skip "the tests' own login uid is set: no sandbox can have a session of its own"
fi
# A policy that refuses a call of the init's own (kill: it forwards signals) cannot go in front
# of the floor (the init would wait on itself): the two filters are stacked, the refusal comes
# from the audit record, tied to the sandbox by an audit session of its own.
echo '{"version": 1, "syscalls": {"deny": ["kill"]}}' >"$T/deny-kill.json"
chmod 0644 "$T/deny-kill.json"
cli root run -T --policy "$T/deny-kill.json" -- sh -c 'kill -0 $$ 2>/dev/null; echo "kill $?"; cat /proc/self/loginuid; echo; exit 4' >"$T/kill.out" 2>"$T/s-kill.err"
rc=$?
check "a policy refusing kill: the command runs and ends (exit 4), kill refused ($rc: $(cat "$T/kill.out" | tr '\n' ' '))" \
	test "$rc/$(head -n 1 "$T/kill.out")" = "4/kill 1"
check "  its refusal reported all the same, by the audit record ($(summary "$T/s-kill.err"))" \
	test "$(summary "$T/s-kill.err")" = "  kill (syscalls.deny)"
if [ "$(cat /proc/self/loginuid)" = 4294967295 ]; then
	check "  and the sandbox has its own audit session (login uid 0)" \
		test "$(sed -n 2p "$T/kill.out")" = 0
else
	skip "the tests' own login uid is set"
fi

sleep 0.3
cli root events --denials >"$T/ev.json" 2>&1
pid_of() { jq -r "select($1) | .processId" "$T/ev.json" | head -n1; }
p_floor=$(pid_of '.syscall == "unshare" and .filter == "floor"')
p_policy=$(pid_of '.syscall == "unshare" and .filter == "policy"')
check "events: the floor's unshare carries its flags and filter through the controller ($(jq -c 'select(.filter == "floor") | [.syscall, .flags, .comm]' "$T/ev.json" | head -n1))" \
	sh -c "grep '^{' '$T/ev.json' | jq -s -e 'map(select(.processId == \"$p_floor\")) | length == 1 and .[0].flags == [\"CLONE_NEWUSER\"] and .[0].comm == \"unshare\"' >/dev/null"
cli root policy suggest "$p_floor" "$T/allow-unshare.json" >"$T/sug-floor.out" 2>&1
check "suggest $p_floor (the floor's CLONE_NEWUSER): nothing, naming the flag ($(show "$T/sug-floor.out"))" \
	grep -q "nothing to suggest: launcherd's floor refused unshare CLONE_NEWUSER" "$T/sug-floor.out"
cli root policy suggest --json "$p_policy" >"$T/sug-policy.json" 2>&1
check "suggest $p_policy (the profile's unshare): syscalls.allow, the floor's part said ($(jq -c .patch "$T/sug-policy.json"))" \
	jqe '.patch == {"syscalls": {"allow": ["unshare"]}} and (.items[0].change | test("floor still refuses"))' "$T/sug-policy.json"

[ "$_tap_failed" = 0 ] || tail -n 20 "$T/launcherd.log" | sed 's/^/# /'
tap_done
