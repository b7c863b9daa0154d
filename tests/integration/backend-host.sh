#!/usr/bin/env bash
# builtin:host, unconfined execution, runs only what it can honour: a policy without
# "hostExecution": true is refused (exit 120, the field named) and runs nothing; so is a
# read-only workspace, from cordon run and in an acquired sandbox, since nothing unconfined can
# keep a command from writing; the policy's wall timeout kills the whole process group (exit 124,
# reason "timeout"), and what is left of the group goes when the command ends. The controller's
# own launcher gets a floor that allows host mode, so that the explicit activation is accepted.
# Run as root and as an ordinary user (nobody).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v python3 >/dev/null || skip_all "python3 missing"

FLOOR="$TEST_TMP/floor.json"
echo '{"hostMode": true}' >"$FLOOR"
chmod 0644 "$FLOOR"
export CORDON_LAUNCHERD_FLOOR="$FLOOR"
HOST_PATH=/usr/local/bin:/usr/bin:/bin

as() { # as COMMAND...: run as the suite's user, with its runtime and state directories
	if [ "$WHO" = root ]; then
		env XDG_RUNTIME_DIR="$RUNDIR" XDG_STATE_HOME="$STATEDIR" "$@"
	else
		setpriv --reuid=65534 --regid=65534 --clear-groups env -i HOME="$BASE" \
			PATH="$HOST_PATH" XDG_RUNTIME_DIR="$RUNDIR" XDG_STATE_HOME="$STATEDIR" \
			CORDON_CONTROLLER="$CORDON_CONTROLLER" CORDON_LAUNCHERD="$CORDON_LAUNCHERD" \
			CORDON_LAUNCHERD_SOCKET="$CORDON_LAUNCHERD_SOCKET" \
			CORDON_LAUNCHERD_FLOOR="$CORDON_LAUNCHERD_FLOOR" "$@"
	fi
}

# gone PID: no such process, or only a zombie waiting for its reaper.
gone() {
	[ ! -d "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# A policy for the host backend: everything the OS sandbox would enforce is optional there.
policy() { # policy FILE HOSTEXECUTION
	printf '{"version": 1, "hostExecution": %s, "optional": ["landlock", "landlock.net",
 "landlock.scope", "seccomp", "limits.pids", "limits.memoryBytes"]}\n' "$2" >"$1"
	chmod 0644 "$1"
}

suite() {
	WHO=$1 BASE=$2
	RUNDIR="$BASE/run" STATEDIR="$BASE/state"
	# root uses the controller cli-lib.sh stops at the end; nobody one of its own
	[ "$WHO" = root ] && RUNDIR=$XDG_RUNTIME_DIR STATEDIR=$XDG_STATE_HOME
	local work="$BASE/work" yes="$BASE/yes.json" no="$BASE/no.json" out rc start bg
	mkdir -p "$BASE" "$work" "$RUNDIR" "$STATEDIR"
	chmod 0700 "$RUNDIR"
	policy "$yes" true
	policy "$no" false
	[ "$WHO" = root ] || chown -R 65534:65534 "$BASE"
	cd "$work" || return

	out=$(as "$CORDON" backend activate builtin:host 2>&1)
	ok $? "$WHO: builtin:host is activated explicitly, the floor allowing host mode ($out)"

	# 1. hostExecution false: refused, nothing runs (it would read /etc/shadow; only its size
	# is printed, so that no log of a failure holds its content).
	out=$(as "$CORDON" run --policy "$no" -- /bin/sh -c \
		"touch '$work/ran-no'; wc -c </etc/shadow" 2>&1)
	is 120 $? "$WHO: a policy with \"hostExecution\": false is refused (exit 120)"
	case "$out" in *hostExecution*) true ;; *) false ;; esac
	ok $? "$WHO: …naming hostExecution ($out)"
	[ ! -e "$work/ran-no" ]
	ok $? "$WHO: …and the command did not run"
	out=$(as "$CORDON" run -- /bin/sh -c "touch '$work/ran-default'" 2>&1)
	rc=$?
	[ "$rc" = 120 ] && [ ! -e "$work/ran-default" ] &&
		case "$out" in *hostExecution*) true ;; *) false ;; esac
	ok $? "$WHO: the default policy (hostExecution false) is refused the same way ($rc: $out)"

	# 2. hostExecution true: runs, unconfined, in the host's mount namespace.
	out=$(as "$CORDON" run --policy "$yes" -- /bin/sh -c \
		'readlink /proc/self/ns/mnt; echo written >out.txt; exit 7' 2>&1)
	rc=$?
	[ "$rc" = 7 ] && [ "$out" = "$(readlink /proc/self/ns/mnt)" ] &&
		[ "$(cat "$work/out.txt" 2>/dev/null)" = written ]
	ok $? "$WHO: a policy with \"hostExecution\": true runs on the host ($rc: $out)"

	# 3. The wall timeout kills the whole process group.
	start=$(date +%s)
	as "$CORDON" run --policy "$yes" --timeout 1 -- /bin/sh -c \
		'sleep 30 & echo $! >bg.pid; sleep 30' 2>/dev/null
	is 124 $? "$WHO: --timeout 1 exits 124"
	[ $(($(date +%s) - start)) -lt 10 ]
	ok $? "$WHO: …well before the sleeps would end"
	bg=$(cat "$work/bg.pid" 2>/dev/null)
	for _ in $(seq 50); do [ -n "$bg" ] && gone "$bg" && break; sleep 0.1; done
	[ -n "$bg" ] && gone "$bg"
	ok $? "$WHO: …and its background child ($bg) is gone too"
	# What the command leaves in its group when it ends goes with it (as with a sandbox's init).
	as "$CORDON" run --policy "$yes" -- /bin/sh -c \
		'sleep 30 >/dev/null 2>&1 & echo $! >bg2.pid' 2>/dev/null
	bg=$(cat "$work/bg2.pid" 2>/dev/null)
	for _ in $(seq 50); do [ -n "$bg" ] && gone "$bg" && break; sleep 0.1; done
	[ -n "$bg" ] && gone "$bg"
	ok $? "$WHO: a background child left in the group ($bg) ends with the command"
	out=$(as "$CORDON" --json exec --policy "$yes" --timeout 1 -- /bin/sleep 3 2>&1)
	is timeout "$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("reason"))' 2>&1)" \
		"$WHO: exec reports reason \"timeout\""

	# 4. A read-only workspace cannot be enforced: refused, nothing written.
	out=$(as "$CORDON" run --policy "$yes" --workspace "$work:ro" -- /bin/sh -c \
		'echo x >ro.txt' 2>&1)
	is 120 $? "$WHO: a read-only workspace is refused (exit 120)"
	case "$out" in *filesystem.workspace.access*) true ;; *) false ;; esac
	ok $? "$WHO: …naming filesystem.workspace.access ($out)"
	[ ! -e "$work/ro.txt" ]
	ok $? "$WHO: …and nothing was written to it"

	# 5. The same in an acquired sandbox whose workspace is read-only.
	out=$(as python3 - "$top_srcdir/tests/helpers" "$RUNDIR/cordon/controller.sock" "$yes" \
		"$work" <<'PY' 2>&1
import json, sys
sys.path.insert(0, sys.argv[1])
from rpc import Conn
c = Conn(sys.argv[2])
with open(sys.argv[3]) as f:
    pol = json.load(f)
work = sys.argv[4]
r = c.call("sandbox.acquire", {"policy": pol, "callerCwd": work, "policyPatch":
           {"filesystem": {"workspace": {"path": work, "access": "read-only"}}}})
e = r.get("error") or {}
print(e.get("code"), e.get("data", {}).get("field"))
if "result" in r:
    c.call("sandbox.release", {"sandboxId": r["result"]["sandboxId"]})
PY
	)
	is "-32001 filesystem.workspace.access" "$out" \
		"$WHO: a read-only sandbox is refused at acquisition (host cannot enforce it), the field named"
	[ ! -e "$work/acq.txt" ]
	ok $? "$WHO: …and nothing was written"

	# 6. policy explain says what the active backend does not enforce.
	out=$(as "$CORDON" policy explain "$yes" 2>&1)
	case "$out" in *"active backend is builtin:host"*"filesystem: NOT enforced"*) true ;; *) false ;; esac
	ok $? "$WHO: policy explain names builtin:host and the sections it does not enforce"
	python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); p.setdefault("filesystem", {})["workspace"] = {"path": sys.argv[2], "access": "read-only"}; json.dump(p, open(sys.argv[3], "w"))' \
		"$yes" "$work" "$TEST_TMP/ro-$WHO.json" && chmod 644 "$TEST_TMP/ro-$WHO.json"
	out=$(as "$CORDON" --json policy explain "$TEST_TMP/ro-$WHO.json" 2>&1)
	is "filesystem.workspace.access" "$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["backend"].get("refused"))' 2>&1)" \
		"$WHO: …and, in JSON, that a read-only workspace would be refused there"
	cd / || return
}

suite root "$TEST_TMP/as-root"

# As an ordinary user (nobody): the controller starts a user-mode launcher.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	suite nobody "$TEST_TMP/as-nobody"
	npid=$(head -n1 "$TEST_TMP/as-nobody/run/cordon/controller.sock.lock" 2>/dev/null)
	if [ -n "$npid" ]; then
		kill "$npid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$npid" 2>/dev/null || break; sleep 0.1; done
	fi
else
	for _ in $(seq 18); do na "needs root and setpriv to act as an ordinary user"; done
fi

echo "1..$TAP_N"
done_testing
