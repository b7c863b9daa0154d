#!/usr/bin/env bash
# cordon run / exec end to end, from nothing: the first call starts the controller (the
# embedded default), which starts its own launcher; then the everyday paths and their limits.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
plan 59

work="$TEST_TMP/work"
mkdir -p "$work"
cd "$work" || exit 1
echo "hello" >"$work/in.txt"

# 1. The embedded default from nothing: no controller is running yet.
[ -z "$(controller_pid 2>/dev/null)" ]
ok $? "no controller before the first call"
out=$("$CORDON" run -- /bin/echo sandboxed 2>&1)
is "sandboxed" "$out" "run prints the command's output"
pid=$(controller_pid)
[ -n "$pid" ] && kill -0 "$pid"
ok $? "the first call started a controller ($pid)"

# 2. Exit codes pass through; signals map to 128+N.
"$CORDON" run -- /bin/sh -c 'exit 7'
is 7 $? "the command's exit code is cordon's"
"$CORDON" run -- /bin/sh -c 'kill -TERM $$'
is 143 $? "a command killed by SIGTERM exits 128+15"
"$CORDON" run -- /nonexistent/program 2>/dev/null
is 127 $? "a missing program exits 127"

# 3. The default policy: workspace read-write, system read-only, secrets and network absent.
"$CORDON" run -- /bin/sh -c 'echo written >out.txt'
is "written" "$(cat "$work/out.txt" 2>/dev/null)" "the workspace (cwd) is writable by default"
# (as root on the host the file is readable, so the sandbox must hide it, not just DAC)
shadow=$("$CORDON" run -- /bin/sh -c 'cat /etc/shadow' 2>/dev/null)
case "$shadow" in *root:*) false ;; *) true ;; esac
ok $? "the host's /etc/shadow is hidden (read gave ${#shadow} bytes)"
"$CORDON" run -- /bin/sh -c 'echo x >/usr/cordon-probe' 2>/dev/null
ok $(($? == 0)) "/usr is read-only"
[ ! -e /usr/cordon-probe ]
ok $? "nothing was written to the host's /usr"
"$CORDON" run -- /bin/sh -c 'ls "$HOME" | wc -l' >"$TEST_TMP/home.txt" 2>&1
is "0" "$(tr -d ' ' <"$TEST_TMP/home.txt")" "\$HOME is empty"
SECRET_TOKEN=hunter2 "$CORDON" run -- /usr/bin/env >"$TEST_TMP/env.txt" 2>&1
! grep -q hunter2 "$TEST_TMP/env.txt"
ok $? "the caller's environment secrets do not pass"
# A listener on the host's loopback that the sandbox must not reach.
python3 -c 'import socket,sys,time
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(8)
print(s.getsockname()[1], flush=True); time.sleep(60)' >"$TEST_TMP/port" &
listener=$!
for _ in $(seq 50); do [ -s "$TEST_TMP/port" ] && break; sleep 0.1; done
port=$(cat "$TEST_TMP/port")
bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null
ok $? "the host listener on 127.0.0.1:$port is reachable outside the sandbox"
"$CORDON" run -- /bin/bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null
ok $(($? == 0)) "no network by default: the host listener is unreachable"
kill "$listener" 2>/dev/null
# By default the sandbox has a loopback of its own: a server and its client talk over it
# (test suites, language servers), IPv4 and IPv6; "unix" refuses every socket but AF_UNIX.
echo_py='import socket, sys
fam = socket.AF_INET6 if sys.argv[1] == "6" else socket.AF_INET
s = socket.socket(fam); s.bind(("::1" if fam == socket.AF_INET6 else "127.0.0.1", 0)); s.listen()
c = socket.create_connection(s.getsockname()[:2]); a, _ = s.accept(); c.sendall(b"pong"); print(a.recv(4).decode())'
is "pong" "$("$CORDON" run -- python3 -c "$echo_py" 4 2>&1)" "default: TCP over the sandbox's own 127.0.0.1"
is "pong" "$("$CORDON" run -- python3 -c "$echo_py" 6 2>&1)" "default: TCP over the sandbox's own ::1"
out=$("$CORDON" run --net unix -- python3 -c 'import socket
try:
    socket.socket(); print("inet")
except OSError as e: print(e.errno)' 2>&1)
is 1 "$out" "--net unix: socket(AF_INET) refused (EPERM)"
# Its own hostname resolves (a JVM's getLocalHost, hostname -f, Python's test_socket), to
# loopback, from the hosts file the controller keeps: the host's, one line added.
out=$("$CORDON" run -- python3 -c 'import socket; h = socket.gethostname(); print(h, socket.gethostbyname(h))' 2>&1)
is "cordon 127.0.1.1" "$out" "the sandbox's hostname resolves to loopback"
out=$("$CORDON" run -- sh -c 'grep -c . /etc/hosts' 2>&1)
is "$(($(grep -c . /etc/hosts) + 2))" "$out" "…and /etc/hosts is the host's with its line added"
# The sandbox lists its own interfaces (a NETLINK_ROUTE socket is raw by nature); raw IP
# sockets stay refused.
out=$("$CORDON" run -- python3 -c 'import socket; print([n for _, n in socket.if_nameindex()])' 2>&1)
is "['lo']" "$out" "default: if_nameindex() lists the sandbox's own lo"
out=$("$CORDON" run --net loopback -- python3 -c 'import socket; print([n for _, n in socket.if_nameindex()])' 2>&1)
is "['lo']" "$out" "--net loopback: the same"
out=$("$CORDON" run --net loopback -- python3 -c 'import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, 1); print("raw")
except OSError as e: print(e.errno)' 2>&1)
is 1 "$out" "…while a raw IP socket is still refused (EPERM)"

# 4. Read-only workspace.
"$CORDON" run --workspace "$work:ro" -- /bin/sh -c 'echo x >ro.txt' 2>/dev/null
ok $(($? == 0)) "a read-only workspace refuses writes"
[ ! -e "$work/ro.txt" ]
ok $? "nothing appeared in the read-only workspace"

# 5. exec captures output, caps it, and keeps draining so the writer never blocks.
res=$("$CORDON" --json exec --max-output 1M -- /bin/sh -c 'head -c 52428800 /dev/zero | tr "\0" a; echo done >&2; exit 3')
is 3 $? "exec exits with the command's code after 50 MiB of output"
is "true" "$(echo "$res" | python3 -c 'import json,sys; print(str(json.load(sys.stdin)["stdoutTruncated"]).lower())')" "stdout is reported truncated"
is "1048576 52428800" "$(echo "$res" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(len(r["stdout"]), r["stdoutBytes"])')" "captured exactly the cap, counted every byte"
is "done" "$(echo "$res" | python3 -c 'import json,sys; print(json.load(sys.stdin)["stderr"].strip())')" "stderr captured separately"

# 6. Timeout kills the whole tree.
start=$(date +%s)
"$CORDON" run --timeout 1 -- /bin/sh -c 'sleep 30 & sleep 30; wait' 2>/dev/null
is 124 $? "--timeout exits 124"
[ $(($(date +%s) - start)) -lt 10 ]
ok $? "the timeout fired well before the sleeps would end"

# 7. Detached processes, ps, kill, wait, events.
id=$("$CORDON" run --detach -- /bin/sleep 1000)
case "$id" in p[0-9]*) true ;; *) false ;; esac
ok $? "run --detach prints a process id ($id)"
"$CORDON" ps | grep -q "^$id .*running.*/bin/sleep 1000"
ok $? "ps lists it as running"
"$CORDON" kill "$id"
is 0 $? "kill succeeds"
"$CORDON" wait "$id"
is 137 $? "wait reports the kill (128+9)"
"$CORDON" kill p999999 2>/dev/null
is 1 $? "kill of an unknown id fails (1)"
"$CORDON" events | grep -q "\"processId\":\"$id\".*\"type\":\"exit\"\|\"type\":\"exit\".*\"processId\":\"$id\""
ok $? "events shows its exit"

# 8. Bad input: clear errors and documented exit codes.
"$CORDON" run --no-such-flag -- true 2>/dev/null
is 125 $? "an unknown flag is a usage error (125)"
echo '{"version": 1, "limits": {"pids": "many"}}' >"$TEST_TMP/bad.json"
err=$("$CORDON" run --policy "$TEST_TMP/bad.json" -- true 2>&1)
is 120 $? "an invalid policy is refused (120)"
echo "$err" | grep -q 'limits.pids'
ok $? "the error names the field: $err"

# 9. Repeated runs reuse the controller's compiled plan, but never a stale view of the host:
# a workspace replaced between two runs is seen as it is now.
cd "$TEST_TMP" && mkdir -p ws && echo one >ws/f && cd ws || exit 1
is "one" "$("$CORDON" run -- /bin/cat f 2>&1)" "first run in a workspace"
is "one" "$("$CORDON" run -- /bin/cat f 2>&1)" "the same run again"
cd "$TEST_TMP" && mv ws ws.old && mkdir ws && echo two >ws/f && cd ws || exit 1
is "two" "$("$CORDON" run -- /bin/cat f 2>&1)" "a replaced workspace is seen as it is now"
"$CORDON" run -- /bin/sh -c 'test -w . && echo x >g' && [ -s g ]
ok $? "and it is the writable workspace"
cd "$work" || exit 1

# 10. The controller's own state (secrets, settings) and its socket are hidden from every
# sandbox, even one whose workspace contains them.
"$CORDON" secret --help >/dev/null 2>&1 # the state directory exists by now either way
out=$(cd "$TEST_TMP" && "$CORDON" run -- /bin/sh -c \
	"ls -A state/cordon 2>&1; ls -A run/cordon 2>&1" 2>&1)
is "" "$out" "a workspace holding the state and runtime directories shows them empty"
[ -n "$(ls -A "$XDG_STATE_HOME/cordon")" ]
ok $? "…while they are not empty on the host"
out=$(cd "$XDG_STATE_HOME/cordon" && "$CORDON" run -- /bin/true 2>&1)
echo "$out" | grep -q "hidden by filesystem.deny"
ok $? "a workspace inside the state directory is refused: $out"

# 11. Another user who reaches the socket (its directory opened up for the test) is refused by
# SO_PEERCRED, and the attempt is an event.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	sock_dir="$XDG_RUNTIME_DIR/cordon"
	chmod 0711 "$XDG_RUNTIME_DIR" "$sock_dir" && chmod 0777 "$sock_dir/controller.sock"
	setpriv --reuid=65534 --regid=65534 --clear-groups env CORDON_CONTROLLER=/nonexistent \
		CORDON_CONTROLLER_SOCKET="$sock_dir/controller.sock" "$CORDON" ps >/dev/null 2>&1
	ok $(($? == 0)) "another user's client is refused"
	chmod 0700 "$XDG_RUNTIME_DIR" "$sock_dir" && chmod 0600 "$sock_dir/controller.sock"
	"$CORDON" events | grep '"type":"client-refused"' | grep -q '"uid":65534'
	ok $? "…and the refusal is an event naming its uid"
else
	na "needs root and setpriv to act as another user"
	na "(idem)"
fi

# 12. A mount made on the host after the launcher started is a bind source like any other: the
# sandbox's mount table is copied at its spawn.
if [ "$(id -u)" = 0 ]; then
	mkdir -p "$TEST_TMP/late"
	if mount -t tmpfs -o size=1m cordon-late "$TEST_TMP/late" 2>/dev/null; then
		echo late >"$TEST_TMP/late/f"
		out=$("$CORDON" run --ro "$TEST_TMP/late" -- cat "$TEST_TMP/late/f" 2>&1)
		umount "$TEST_TMP/late"
		is "late" "$out" "a mount made after the launcher started can be bound"
	else
		na "cannot mount a tmpfs here"
	fi
else
	na "needs root to mount"
fi

# 13. An ordinary user (nobody) from nothing: the controller starts a user-mode launcher, and the
# embedded default runs — its memory limit is optional, and its pids limit holds through
# RLIMIT_NPROC in the sandbox's own user namespace where there is no cgroup. A limit the user
# asks for explicitly is refused when it cannot be enforced, naming the rule (exit 120).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	u="$TEST_TMP/nobody"
	mkdir -p "$u/run" "$u/state" "$u/work" && chown -R 65534:65534 "$u" && chmod 0700 "$u/run"
	as_nobody() {
		(cd "$u/work" && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$u" \
			XDG_RUNTIME_DIR="$u/run" XDG_STATE_HOME="$u/state" "$@")
	}
	out=$(as_nobody "$CORDON" run -- /bin/sh -c 'id -u; grep "^Max processes" /proc/self/limits' 2>&1)
	out=$(echo $out | cut -d' ' -f1,4)
	is "65534 1024" "$(echo $out)" "an ordinary user runs the default policy (pids limit by RLIMIT_NPROC)"
	# That limit is each sandbox's own: one holding 12 processes leaves another its full 16.
	as_nobody "$CORDON" run --pids 16 --timeout 6 -- /bin/sh -c \
		'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 30 & done; echo up >held; wait' \
		>/dev/null 2>&1 &
	holder=$!
	for _ in $(seq 100); do [ -s "$u/work/held" ] && break; sleep 0.05; done
	out=$(as_nobody "$CORDON" run --pids 16 -- /bin/sh -c \
		'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 0.2 & done; wait && echo forked' 2>&1)
	is "forked" "$out" "…each sandbox its own pids limit: 12 processes with another holding 12"
	wait "$holder" 2>/dev/null
	uses=$(as_nobody "$CORDON" doctor 2>/dev/null | sed -n 's/.*launcher uses: //p')
	out=$(as_nobody "$CORDON" run --memory 64M -- /bin/true 2>&1)
	rc=$?
	if [ "$uses" = none ]; then
		[ $rc = 120 ] && echo "$out" | grep -q 'limits.memoryBytes: the launcher has no cgroup'
		ok $? "…an explicit --memory it cannot enforce is refused, naming the rule (rc $rc: $out)"
	else
		is 0 $rc "…an explicit --memory is enforced in its cgroup ($uses)"
	fi
	as_nobody "$CORDON" policy explain 2>&1 | grep -q 'RLIMIT_NPROC in the sandbox'
	ok $? "…and policy explain says how the pids limit is enforced there"
	npid=$(head -n1 "$u/run/cordon/controller.sock.lock" 2>/dev/null)
	[ -n "$npid" ] && kill "$npid" 2>/dev/null
	for _ in $(seq 50); do [ -n "$npid" ] && kill -0 "$npid" 2>/dev/null || break; sleep 0.1; done
else
	na "needs root and setpriv to act as an ordinary user"
	na "(idem)"
	na "(idem)"
fi


# 14. A path listed again is the same grant: the workspace given again with --rw, or a default
# read-only directory with --ro, runs; a conflicting listing is still refused, naming the field.
cd "$work" || exit 1
rm -f "$work/dup.txt"
err=$("$CORDON" run --rw "$PWD" -- /bin/sh -c 'echo dup >dup.txt' 2>&1)
is 0 $? "--rw \"\$PWD\" (the workspace itself) runs: $err"
is "dup" "$(cat "$work/dup.txt" 2>/dev/null)" "…and the workspace is writable once"
"$CORDON" run --ro /usr --deny /etc/shadow -- /bin/true
is 0 $? "--ro /usr and --deny /etc/shadow, already in the default, run"
mkdir -p "$work/both"
err=$("$CORDON" run --rw "$work/both" --deny "$work/both" -- /bin/true 2>&1)
is 120 $? "a path both written and denied is refused (120)"
echo "$err" | grep -q 'filesystem.write\[0\]'
ok $? "…naming the field: $err"
# doctor reports the host pieces the built backends use (builtin:vm's QEMU, accelerator, kernel
# and helpers among them), nothing for a backend that is a pack (Docker).
doc=$("$CORDON" doctor 2>&1)
echo "$doc" | grep -q 'landlock' && echo "$doc" | grep -qE '^(ok|--) +vm ' && ! echo "$doc" | grep -qi docker
ok $? "doctor checks the host, builtin:vm included, and names no docker engine: $(echo "$doc" | tr '\n' ' ')"

done_testing
