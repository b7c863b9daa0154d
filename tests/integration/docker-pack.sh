#!/usr/bin/env bash
# The Docker pack (backends/docker/) against a real engine this test starts (dockerd from
# Debian's docker.io, private state and socket, no bridge, an image built from this host's
# busybox: nothing reaches a registry; a pull goes to a closed loopback port): installed with
# the test's socket in its manifest and the floor's packSockets, activated with the image and
# the engine socket from DOCKER_HOST (the controller's, which the manifest asks for; tcp:// and
# a socket the manifest does not ask for refused), the limits' defaults (bad values refused
# naming the setting; defaultCpus the container's CPU bandwidth), the trace setting's line per
# command, then a command's output and exit code, stdin, a missing command, a timeout, the
# memory and pids limits (the plan's winning over the defaults), a read-only workspace, a
# lease's two commands in one container (timeout and kill in it, a read-only command refused in
# a read-write lease), a path with a colon, the owner of what a command writes (as an ordinary
# user), the containers a killed pack process left removed when the pack starts again, the
# conformance suite on the pack, and an engine stopped mid-run (an error, not a hang). Then,
# when podman is installed (CORDON_DOCKER_PODMAN=0: never; =1: a podman that cannot start is a
# failure under CORDON_MUST_WORK), all of it again against podman's Docker-compatible API (`podman system
# service`, private state, runc): a nested run of this script with CORDON_DOCKER_ENGINE=podman
# (which alone runs that engine only). What podman 4.3 cannot give is n/a there, on the evidence
# of that very limit (backends/docker/README.md, "Podman"): catatonit's exit 1 for a missing
# executable, no OOMKilled (the memory limit's SIGKILL is still checked), catatonit's blocked
# SIGTSTP/SIGTTIN/SIGTTOU (the conformance check signal-state).
# An engine that cannot be started is a skip, unless CORDON_MUST_WORK=1.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

# Slow (an engine of its own, a container per command): run once per CI, in the first build.
if [ -n "${CORDON_SKIP_SLOW:-}" ]; then
	echo "1..0 # SKIP slow: run in the other build"
	exit 0
fi
. "$top_srcdir/tests/helpers/docker-engine.sh"

PACK_EXE="$top_builddir/backends/docker/cordon-docker-pack"
[ -x "$CORDON" ] || skip_all "cordon not built"
[ -x "$PACK_EXE" ] || skip_all "the Docker pack is not built"
command -v python3 >/dev/null || skip_all "python3 missing"
[ "$(id -u)" = 0 ] || skip_all "the engine and the admin floor need root"

ENGINE=${CORDON_DOCKER_ENGINE:-docker}
trap 'docker_engine_stop; cleanup' EXIT
if [ "$ENGINE" = podman ]; then
	podman_engine_start "$TEST_TMP/engine" ||
		skip_all "no podman engine could be started (podman, runc)"
else
	docker_engine_start "$TEST_TMP/engine" ||
		skip_all "no Docker engine could be started (docker.io)"
fi
IMAGE=cordon-test:latest
docker_engine_image "$IMAGE" || skip_all "the test image could not be imported"
SOCK=$DOCKER_ENGINE_SOCK REF=pack:org.cordon.docker:docker

# what the engine holds of the pack's: containers with its label
pack_containers() {
	curl -s --unix-socket "$SOCK" 'http://d/containers/json?all=1&filters=%7B%22label%22%3A%5B%22org.cordon.pack%3Ddocker%22%5D%7D' |
		python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'
}

# The pack as an admin installs it for this engine: a copy whose manifest names its socket.
SRC="$TEST_TMP/packs/org.cordon.docker"
mkdir -p "$SRC" "$TEST_TMP/work"
cp "$PACK_EXE" "$SRC/"
python3 - "$top_srcdir/backends/docker/pack.json" "$SRC/pack.json" "$SOCK" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["hostSockets"] = [{"name": "engine", "path": sys.argv[3]}]
json.dump(m, open(sys.argv[2], "w"))
PY
FLOOR="$TEST_TMP/floor.json"
echo "{\"packSockets\": [\"$SOCK\"]}" >"$FLOOR"
chmod 0644 "$FLOOR"
export CORDON_LAUNCHERD_FLOOR="$FLOOR"
# The controller (started by the first cordon call) has it; the manifest asks for it.
export DOCKER_HOST="unix://$SOCK"
cd "$TEST_TMP/work" || exit 1

out=$("$CORDON" pack install "$SRC" 2>&1)
case "$out" in *"host socket engine: $SOCK"*"environment variable DOCKER_HOST"*) true ;; *) false ;; esac
ok $? "the pack installs and says it asks for the engine's socket and DOCKER_HOST ($out)"
"$CORDON" pack enable org.cordon.docker >/dev/null 2>&1
# A missing image is pulled at prepare; its registry here is a closed loopback port (nothing
# leaves the host): the activation fails with an error naming the image, and nothing else is
# tried (no other image appears on the engine).
MISSING=127.0.0.1:9/cordon-nosuch:image
t0=$SECONDS
out=$("$CORDON" backend activate "$REF" --set image=$MISSING --set socket="$SOCK" 2>&1)
rc=$?
[ $rc -ne 0 ] && case "$out" in *"$MISSING"*"could not be pulled"*) true ;; *) false ;; esac
ok $? "a missing image is pulled, and offline that fails naming it (exit $rc, $((SECONDS - t0)) s: $out)"
n=$(curl -s --unix-socket "$SOCK" http://d/images/json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
is 1 "$n" "the engine still holds only the test's image"
out=$("$CORDON" backend activate "$REF" --set image="$IMAGE" --set socket= 2>&1)
ok $? "activated with the image, the engine's socket from DOCKER_HOST ($out)"
grep -q "engine socket $SOCK (from DOCKER_HOST)" "$XDG_STATE_HOME/cordon/controller.log"
ok $? "the pack says it took the socket from DOCKER_HOST"
out=$("$CORDON" backend activate "$REF" --set socket=unix:///run/cordon-nosuch-engine.sock 2>&1)
rc=$?
[ $rc -ne 0 ] && case "$out" in *"settings.socket"*"/run/cordon-nosuch-engine.sock is not one this pack's manifest asks for"*) true ;; *) false ;; esac
ok $? "a socket the manifest does not ask for is refused, with the reason (exit $rc: $out)"

# The limits' defaults: bad values refused naming the setting (configure, or prepare for more
# CPUs than the engine has).
for bad in defaultCpus=-1 defaultCpus=2000 defaultPids=1.5 defaultMemoryBytes=1000 \
	"defaultCpus=$(($(nproc) + 1))"; do
	out=$("$CORDON" backend activate "$REF" --set "$bad" 2>&1)
	rc=$?
	[ $rc -ne 0 ] && case "$out" in *"settings.${bad%%=*}"*) true ;; *) false ;; esac
	ok $? "$bad is refused naming the setting (exit $rc: $out)"
done
out=$("$CORDON" backend activate "$REF" --set defaultCpus=0.5 --set defaultPids=100000 \
	--set defaultMemoryBytes=1073741824 --set socket="$SOCK" --set trace=true 2>&1)
ok $? "activated with defaults for the limits, and the trace on ($out)"
# Half a CPU: a CFS quota of half the period (cgroup v2 cpu.max, or v1's cfs files).
out=$("$CORDON" run -- sh -c 'cat /sys/fs/cgroup/cpu.max 2>/dev/null ||
	echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us)' 2>&1)
case "$out" in "50000 100000") true ;; *) false ;; esac
ok $? "defaultCpus=0.5 is the container's CPU bandwidth ($out)"
line=$(grep "cordon-docker-pack: trace one-shot " "$XDG_STATE_HOME/cordon/controller.log" | tail -n1)
case "$line" in *" at="*": config="*" create="*" attach="*" start="*" stream="*" wait="*" remove="*" exited="*" total="*) true ;; *) false ;; esac
ok $? "the trace logs each step of a one-shot command (${line#*trace })"

out=$("$CORDON" run -- sh -c 'echo out; echo err >&2; exit 3' 2>"$TEST_TMP/err")
is "3 out err" "$? $out $(cat "$TEST_TMP/err")" "a command's stdout, stderr and exit code"
out=$(echo piped | "$CORDON" run -- cat)
is piped "$out" "stdin reaches the command"
"$CORDON" run -- /nonexistent/command >/dev/null 2>"$TEST_TMP/err"
rc=$?
if [ "$ENGINE" = podman ] && [ $rc = 1 ] && grep -q 'catatonit.*failed to exec' "$TEST_TMP/err"; then
	na "a command missing in the image fails with exit 1, not 127: podman's init (catatonit) exits 1"
else
	is 127 $rc "a command missing in the image is exit 127"
fi
t0=$SECONDS
"$CORDON" run --timeout 1 -- sleep 30 >/dev/null 2>&1
rc=$?
[ $rc = 124 ] && [ $((SECONDS - t0)) -lt 15 ]
ok $? "a timeout kills the container (exit $rc after $((SECONDS - t0)) s)"
out=$("$CORDON" --json exec --memory 16M -- sh -c 'a=$(head -c 100000000 /dev/zero | tr "\0" x)' 2>&1 |
	python3 -c 'import json,sys; r=json.load(sys.stdin); print(r.get("reason"), r.get("signal"))' 2>&1)
if [ "$ENGINE" = podman ] && [ "$out" = "signaled 9" ]; then
	ok 0 "a command over its memory limit is killed (SIGKILL)"
	na "its reason is signaled, not memory: podman 4.3 reports no OOMKilled"
else
	is memory "${out%% *}" "a command over its memory limit (the plan's, not defaultMemoryBytes') ends with reason memory ($out)"
fi
"$CORDON" run --pids 4 -- sh -c 'for i in 1 2 3 4 5 6; do sleep 1 & done; wait' >/dev/null 2>"$TEST_TMP/err"
grep -q "fork" "$TEST_TMP/err"
ok $? "the pids limit (the plan's, not defaultPids') holds in the container ($(head -c 200 "$TEST_TMP/err"))"
out=$("$CORDON" run -- pwd)
is /workspace "$out" "the command starts in the workspace, presented at /workspace"

"$CORDON" run --workspace-access read-only -- sh -c 'echo x >ro.txt' >/dev/null 2>&1
rc=$?
[ $rc -ne 0 ] && [ ! -e ro.txt ]
ok $? "a read-only workspace cannot be written from the container (exit $rc)"
"$CORDON" run -- sh -c 'echo x >rw.txt' >/dev/null 2>&1
is "0 x" "$? $(cat rw.txt 2>/dev/null)" "a read-write workspace is written on the host"
is 0 "$(pack_containers)" "one-shot containers are removed when they end"

id=$("$CORDON" sandbox acquire --workspace-access read-write 2>&1)
ok $? "a lease is acquired ($id)"
h1=$("$CORDON" run --sandbox "$id" -- sh -c 'hostname; echo one >lease.txt' 2>&1)
h2=$("$CORDON" run --sandbox "$id" -- sh -c 'hostname; cat lease.txt; exit 4' 2>&1)
rc=$?
[ -n "$h1" ] && [ "$h2" = "$h1"$'\n'one ] && [ $rc = 4 ]
ok $? "a lease runs two commands in one container ($h1 / $h2 / exit $rc)"
is 1 "$(pack_containers)" "the lease holds one container"
line=$(grep "cordon-docker-pack: trace exec " "$XDG_STATE_HOME/cordon/controller.log" | tail -n1)
case "$line" in *" at="*": config="*" exec-create="*" exec-start="*" stream="*" exec-inspect="*" total="*) true ;; *) false ;; esac
ok $? "the trace logs each step of a command in a lease (${line#*trace })"
t0=$SECONDS
"$CORDON" run --sandbox "$id" --timeout 1 -- sleep 31 >/dev/null 2>&1
rc=$?
[ $rc = 124 ] && [ $((SECONDS - t0)) -lt 10 ]
ok $? "a timeout in a lease ends its command (exit $rc after $((SECONDS - t0)) s)"
pid=$("$CORDON" run --sandbox "$id" --detach -- sleep 32 2>&1)
sleep 0.5
"$CORDON" kill "$pid" >/dev/null 2>&1
ok $? "a command in a lease is killed ($pid)"
t0=$SECONDS
timeout 20 "$CORDON" wait "$pid" >/dev/null 2>&1
rc=$?
[ $rc != 124 ] && [ $((SECONDS - t0)) -lt 10 ]
ok $? "…and ends (cordon wait: exit $rc after $((SECONDS - t0)) s)"
out=$("$CORDON" run --sandbox "$id" -- sh -c 'hostname; ps -o args | grep -c "[s]leep 3[12]"' 2>&1)
is "$h1"$'\n'0 "$out" "the lease's container still serves, and neither command is left in it"
"$CORDON" run --sandbox "$id" --workspace-access read-only -- sh -c 'echo x >narrowed.txt' >/dev/null 2>&1
rc=$?
[ $rc -ne 0 ] && [ ! -e narrowed.txt ]
ok $? "a read-only command in a read-write lease is refused, not run read-write (exit $rc)"
"$CORDON" sandbox release "$id" >/dev/null 2>&1
is 0 "$(pack_containers)" "release removes it"
mkdir -p "$TEST_TMP/work/a:b"
out=$(cd "$TEST_TMP/work/a:b" && "$CORDON" run -- sh -c 'pwd; echo x >f' 2>&1)
is "0 /workspace x" "$? $out $(cat "$TEST_TMP/work/a:b/f" 2>&1)" \
	"a workspace whose path has a colon is bound as it is (at /workspace)"

# Files a command writes belong to the user who runs it: an ordinary user of its own
# controller, with access to this engine's socket (its group).
if id cordon-test1 >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	U=$(id -u cordon-test1) G=$(id -g cordon-test1)
	UB="$TEST_TMP/user"
	mkdir -p "$UB/run" "$UB/state" "$UB/work" "$UB/packs"
	cp -r "$SRC" "$UB/packs/"
	chmod 0700 "$UB/run"
	chown -R "$U:$G" "$UB"
	chgrp "$G" "$SOCK" && chmod 0660 "$SOCK"
	as_user() {
		(cd "$UB/work" && setpriv --reuid="$U" --regid="$G" --clear-groups env -i HOME="$UB" \
			PATH=/usr/local/bin:/usr/bin:/bin XDG_RUNTIME_DIR="$UB/run" \
			XDG_STATE_HOME="$UB/state" CORDON_CONTROLLER="$CORDON_CONTROLLER" \
			CORDON_LAUNCHERD="$CORDON_LAUNCHERD" CORDON_LAUNCHERD_SOCKET="$CORDON_LAUNCHERD_SOCKET" \
			CORDON_LAUNCHERD_FLOOR="$CORDON_LAUNCHERD_FLOOR" DOCKER_HOST=tcp://127.0.0.1:2375 "$@")
	}
	as_user "$CORDON" pack install "$UB/packs/org.cordon.docker" >/dev/null 2>&1
	as_user "$CORDON" pack enable org.cordon.docker >/dev/null 2>&1
	out=$(as_user "$CORDON" backend activate "$REF" --set image="$IMAGE" 2>&1)
	rc=$?
	[ $rc -ne 0 ] && case "$out" in *'DOCKER_HOST: "tcp://127.0.0.1:2375" is not a Unix socket'*) true ;; *) false ;; esac
	ok $? "a tcp:// DOCKER_HOST is refused with the reason, not used (exit $rc: $out)"
	out=$(as_user "$CORDON" backend activate "$REF" --set image="$IMAGE" --set socket="$SOCK" 2>&1)
	ok $? "an ordinary user activates it ($out)"
	out=$(as_user "$CORDON" run -- sh -c 'id -u; echo x >owned.txt' 2>&1)
	is "$U $U:$G" "$out $(stat -c %u:%g "$UB/work/owned.txt" 2>&1)" \
		"the command runs as the user, and what it writes in the workspace is the user's"
	upid=$(head -n1 "$UB/run/cordon/controller.sock.lock" 2>/dev/null)
	[ -n "$upid" ] && kill "$upid" 2>/dev/null
else
	na "no user cordon-test1 or no setpriv: ownership as an ordinary user not checked"
fi

# The pack process killed mid-run leaves its container; the next start of the pack removes it.
"$CORDON" run -- sleep 60 >/dev/null 2>&1 &
runner=$!
for _ in $(seq 100); do [ "$(pack_containers)" = 1 ] && break; sleep 0.1; done
packpid=
for p in $(descendants "$(controller_pid)"); do
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = cordon-docker-p ] && packpid=$p
done
[ -n "$packpid" ] && kill -9 "$packpid"
ok $? "the pack process is killed mid-run (pid ${packpid:-none})"
wait "$runner"
rc=$?
[ $rc -ne 0 ]
ok $? "the command's client gets an error (exit $rc)"
is 1 "$(pack_containers)" "its container is left on the engine"
out=$("$CORDON" backend activate "$REF" 2>&1)
ok $? "the pack is started again ($out)"
is 0 "$(pack_containers)" "prepare removed the container left behind"

# The conformance suite on the pack.
cat >"$TEST_TMP/conformance-setup.sh" <<EOF
"\$1" pack enable org.cordon.docker &&
	"\$1" backend settings $REF --set image=$IMAGE --set socket=$SOCK
EOF
chmod 0755 "$TEST_TMP" "$TEST_TMP/packs"
chmod -R a+rX "$TEST_TMP/packs" "$TEST_TMP/conformance-setup.sh"
# Podman: catatonit starts the command with SIGTSTP, SIGTTIN and SIGTTOU blocked.
checks=
if [ "$ENGINE" = podman ] &&
	[ "$("$CORDON" run -- grep SigBlk /proc/self/status 2>&1)" = "SigBlk:	0000000000380000" ]; then
	checks=$(python3 -c 'import re,sys; print(",".join(n for n in re.findall(r"^\s+\(\"([a-z-]+)\", check_", open(sys.argv[1]).read(), re.M) if n != "signal-state"))' \
		"$top_srcdir/tests/conformance/conformance.py")
	na "conformance signal-state: podman's init (catatonit 0.1.7) blocks SIGTSTP, SIGTTIN and SIGTTOU in the command"
fi
conf=$(CONFORMANCE_CHECKS=$checks CORDON_CONFORMANCE_REFS=$REF CORDON_CONFORMANCE_PACKS="$TEST_TMP/packs" \
	CORDON_CONFORMANCE_PACK_SOCKETS=$SOCK CORDON_CONFORMANCE_SETUP="$TEST_TMP/conformance-setup.sh" \
	bash "$top_srcdir/tests/conformance/run.sh" 2>&1)
rc=$?
echo "$conf" | grep -v '^ok\|^not ok\|^1\.\.' | sed 's/^#*/#/'
echo "$conf" | grep '^not ok' | sed 's/^/# /'
ok $rc "the conformance suite passes on $REF"

# The engine stopped mid-run: the command ends with an error, never hangs.
cd "$TEST_TMP/work" || exit 1
"$CORDON" run -- sleep 120 >/dev/null 2>&1 &
runner=$!
for _ in $(seq 100); do [ "$(pack_containers)" = 1 ] && break; sleep 0.1; done
t0=$SECONDS
docker_engine_stop
for _ in $(seq 600); do kill -0 "$runner" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$runner" 2>/dev/null; then
	kill "$runner"
	ok 1 "the engine stopped mid-run: the command still runs after 60 s"
else
	wait "$runner"
	rc=$?
	[ $rc -ne 0 ]
	ok $? "the engine stopped mid-run: the command ends with an error (exit $rc, $((SECONDS - t0)) s)"
fi

# The same checks against podman: a nested run, its results renumbered into this one's.
if [ -z "${CORDON_DOCKER_ENGINE:-}" ] && [ "${CORDON_DOCKER_PODMAN:-}" != 0 ] &&
	{ [ "${CORDON_DOCKER_PODMAN:-}" = 1 ] || command -v podman >/dev/null 2>&1; }; then
	docker_engine_stop
	cd "$top_builddir" || exit 1
	nested=$(CORDON_DOCKER_ENGINE=podman bash "$0" 2>&1)
	rc=$?
	failed=$TAP_FAILED
	while IFS= read -r line; do
		case "$line" in
		"ok "*" # SKIP "*) na "podman: ${line#* # SKIP }" ;;
		"ok "*) ok 0 "podman: ${line#ok * - }" ;;
		"not ok "*) ok 1 "podman: ${line#not ok * - }" ;;
		"1..0 # SKIP "*) skip "podman: ${line#1..0 # SKIP }" ;;
		"1.."*) ;;
		*) printf '%s\n' "$line" ;;
		esac
	done <<<"$nested"
	[ $rc -ne 0 ] && [ "$TAP_FAILED" = "$failed" ] && ok 1 "podman: the nested run failed (exit $rc)"
fi

echo "1..$TAP_N"
done_testing
