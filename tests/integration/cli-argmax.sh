#!/usr/bin/env bash
# A command line as long as the kernel allows, end to end: CLI → controller (JSON-RPC line) →
# compiled plan → launcher frame (a memfd past 64 KiB) → launcherd → the sandbox's execve, the
# light spawn included. The bound is the kernel's own way of counting (common/util.h:
# CORDON_ARG_MAX bytes of strings, NULs and pointers; CORDON_ARG_STRLEN_MAX per string), not a
# number of arguments; a command line the sandbox's execve would refuse (E2BIG) is refused before
# anything runs, naming params.argv, instead of exiting 126.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v python3 >/dev/null || skip_all "python3 missing"
plan 17

work="$TEST_TMP/work"
mkdir -p "$work"
chmod 0755 "$work"
cd "$work" || exit 1

# The kernel's limit here, and ours: the test's sizes follow from them.
arg_max=$(getconf ARG_MAX)
# Bytes execve counts for the strings given (each with its NUL and an 8-byte pointer).
counted() { python3 -c 'import sys; print(sum(len(a.encode())+9 for a in sys.argv[1:]))' "$@"; }
env_counted=$(python3 -c 'import os; print(sum(len(k)+len(v)+2+8 for k,v in os.environ.items()))')

# 1. 100000 arguments (589 KB of them: 25 times the old 4096-argument ceiling) run, by run and
# by exec, and the sandbox's pid 1 shows which spawn served it.
out=$("$CORDON" run -- sh -c 'echo $#' sh $(seq 1 100000) 2>&1)
is "100000" "$out" "cordon run: 100000 arguments reach the command"
out=$("$CORDON" exec -- sh -c 'echo $#' sh $(seq 1 100000) 2>&1)
is "100000" "$out" "cordon exec: 100000 arguments reach the command"
out=$("$CORDON" run -- sh -c 'echo "$(cat /proc/1/comm) $# ${100000}"' sh $(seq 1 100000) 2>&1)
case "$out" in
"cordon-init 100000 100000") ok 0 "…through the light spawn (pid 1 is cordon-init): $out" ;;
*" 100000 100000") ok 0 "…through the fork spawn (the light one is off here): $out" ;;
*) ok 1 "…the last argument arrives intact: $out" ;;
esac

# 2. Close to the limit: 1.9 MiB of arguments (the sandbox's own environment is small) run.
big_args=$(python3 -c 'print(" ".join(["%05d" % i + "y" * 995 for i in range(1900)]))')
# shellcheck disable=SC2086
out=$("$CORDON" run -- sh -c 'echo $# ${#1}' sh $big_args 2>&1)
is "1900 1000" "$out" "1.9 MB of arguments ($(counted $big_args) bytes as execve counts) run"

# 3. One argument of 127 KiB runs (the kernel's per-string limit is 128 KiB with its NUL).
a127=$(head -c $((127 * 1024)) /dev/zero | tr '\0' a)
out=$("$CORDON" run -- sh -c 'echo ${#1}' sh "$a127" 2>&1)
is "130048" "$out" "a 127 KiB argument runs"
out=$("$CORDON" exec -- sh -c 'echo ${#1}' sh "$a127" 2>&1)
is "130048" "$out" "…by exec too"

# 4. What the kernel refuses. Natively a shell cannot even start cordon with such a command line,
# so the CLI is given a larger stack (its own ARG_MAX grows with it) or the request is sent
# straight to the controller: either way it must be refused before anything runs.
over=$(python3 -c "
import sys
need = $arg_max - $env_counted - 29 + 2048  # over by 2 KiB
n = need // 1009 + 1
print(n * 1009 + $(counted sh -c 'touch ran' sh) + $env_counted, file=sys.stderr)
print(' '.join(['%05d' % i + 'z' * 995 for i in range(n)]))" 2>"$TEST_TMP/total")
total=$(cat "$TEST_TMP/total")
# shellcheck disable=SC2086
(sh -c 'touch ran' sh $over) 2>/dev/null
is 126 $? "natively, $total bytes (ARG_MAX $arg_max) are refused by the kernel (E2BIG)"
rm -f ran
# shellcheck disable=SC2086
out=$(ulimit -s 65536 && "$CORDON" run -- sh -c 'touch ran' sh $over 2>&1)
rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q 'params.argv' && echo "$out" | grep -q 'at most'
ok $? "cordon run refuses it up front, naming params.argv (rc $rc: $(echo "$out" | cut -c1-200))"
[ ! -e ran ]
ok $? "…and nothing ran"
# shellcheck disable=SC2086
out=$(ulimit -s 65536 && "$CORDON" exec -- sh -c 'touch ran' sh $over 2>&1)
rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q 'params.argv' && [ ! -e ran ]
ok $? "cordon exec refuses it too (rc $rc)"

# 5. The environment counts with the arguments: 8 variables of 100 KB and 1.3 MB of arguments
# are over together, and each alone runs.
args13=$(python3 -c 'print(" ".join(["%05d" % i + "w" * 995 for i in range(1300)]))')
bigenv=()
for i in 1 2 3 4 5 6 7 8; do bigenv+=("CORDON_TEST_BIG$i=$(head -c 100000 /dev/zero | tr '\0' e)"); done
# shellcheck disable=SC2086
out=$(ulimit -s 65536 && env "${bigenv[@]}" "$CORDON" run -- sh -c 'touch ran' sh $args13 2>&1)
rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q 'params.argv' && echo "$out" | grep -q environment &&
	[ ! -e ran ]
ok $? "a large environment with 1.3 MB of arguments is refused, naming params.argv (rc $rc)"
# shellcheck disable=SC2086
out=$("$CORDON" run -- sh -c 'echo $#' sh $args13 2>&1)
is "1300" "$out" "…the arguments alone run"
out=$(env "${bigenv[@]}" "$CORDON" run -- sh -c 'echo ok' 2>&1)
is "ok" "$out" "…and the environment alone"

# 6. One string over the kernel's 128 KiB: the CLI cannot be started with one, so a client sends
# it straight to the controller (process.exec): refused, naming the argument.
sock="$XDG_RUNTIME_DIR/cordon/controller.sock"
out=$(python3 - "$sock" "$work" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
req = {"jsonrpc": "2.0", "id": 1, "method": "process.exec",
       "params": {"argv": ["sh", "-c", "touch ran", "sh", "b" * (129 * 1024)],
                  "env": ["PATH=/usr/bin:/bin"], "callerCwd": sys.argv[2]}}
s.sendall(json.dumps(req).encode() + b"\n")
buf = b""
while not buf.endswith(b"\n"):
    d = s.recv(65536)
    if not d:
        break
    buf += d
print(json.dumps(json.loads(buf).get("error")))
EOF
)
echo "$out" | grep -q '"params.argv\[4\]"' && echo "$out" | grep -q 'longer than 131071'
ok $? "a 129 KiB argument is refused, naming params.argv[4]: $out"
[ ! -e ran ]
ok $? "…and nothing ran"

# 7. An ordinary user: the same 100000 arguments through a user-mode launcher of its own.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	u="$TEST_TMP/nobody"
	mkdir -p "$u/run" "$u/state" "$u/work" && chown -R 65534:65534 "$u" && chmod 0700 "$u/run"
	as_nobody() {
		(cd "$u/work" && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$u" \
			XDG_RUNTIME_DIR="$u/run" XDG_STATE_HOME="$u/state" "$@")
	}
	out=$(as_nobody "$CORDON" run -- sh -c 'echo $#' sh $(seq 1 100000) 2>&1)
	is "100000" "$out" "an ordinary user: 100000 arguments by cordon run"
	out=$(as_nobody "$CORDON" exec -- sh -c 'echo $#' sh $(seq 1 100000) 2>&1)
	is "100000" "$out" "…and by cordon exec"
	npid=$(head -n1 "$u/run/cordon/controller.sock.lock" 2>/dev/null)
	[ -n "$npid" ] && kill "$npid" 2>/dev/null
	for _ in $(seq 50); do [ -n "$npid" ] && kill -0 "$npid" 2>/dev/null || break; sleep 0.1; done
else
	na "needs root and setpriv to act as an ordinary user"
	na "(idem)"
fi
