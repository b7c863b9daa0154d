#!/usr/bin/env bash
# The Docker pack against the Docker CLI on the same engine, paired (bench-paired): a one-shot
# `cordon run -- /bin/true` through the pack vs `docker run --rm IMAGE /bin/true`, and a command
# in a lease (`cordon run --sandbox ID`) vs `docker exec` in a running container. Run from a
# build tree, as root (it starts a private dockerd as tests/helpers/docker-engine.sh does):
#   bench/docker-pack.sh [ROUNDS]        (default 30)
# Targets: cordon / docker <= 1.1 for both. The pack runs with its trace setting on: after each
# comparison, the median time of each step of the pack's (each Engine API call, from its lines in
# the controller's log), then 20 more commands one after another, each timed from before the CLI
# starts to its end, for what lies outside the pack: from the CLI's start to the pack's receipt
# of the spawn request (CLI, controller, policy, the request), and from the pack's `exited` to
# the CLI's end (CORDON_BENCH_TRACE=0: no trace, no breakdown).
# CORDON_BENCH_ENGINE=podman: the same against `podman system service` (started as
# tests/helpers/docker-engine.sh does), the reference being the podman CLI as that service's
# client (`podman --remote --url unix://SOCKET run --rm` / `exec`).
set -uo pipefail
rounds=${1:-30}
b=$(pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "docker-pack.sh: needs root" >&2; exit 1; }
engine=${CORDON_BENCH_ENGINE:-docker}
command -v "$engine" >/dev/null || { echo "docker-pack.sh: the $engine CLI is missing" >&2; exit 1; }
. "$src/tests/helpers/docker-engine.sh"
export CORDON_CONTROLLER=$b/cordon-controller CORDON_LAUNCHERD=$b/cordon-launcherd
export CORDON_LAUNCHERD_SOCKET=/nonexistent/cordon-bench/launcherd.sock
tmp=$(mktemp -d /tmp/cordon-bench-docker.XXXXXX)
chmod 0755 "$tmp"
export XDG_RUNTIME_DIR=$tmp/run XDG_STATE_HOME=$tmp/state
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME" "$tmp/work" "$tmp/pack"
chmod 700 "$XDG_RUNTIME_DIR"
trace=${CORDON_BENCH_TRACE:-1}
tracearg=()
[ "$trace" = 1 ] && tracearg=(--set trace=true)
log=$XDG_STATE_HOME/cordon/controller.log
cid=
# stages KIND OFFSET ARGS...: the pack's trace lines of KIND (one-shot, exec) after byte OFFSET
# of the controller's log, each step's median and p90 (ms); then `cordon ARGS...` 20 times, one
# at a time, each matched with its trace line: the time before the pack got the request and
# after it sent `exited`.
stages() {
	local kind=$1 off=$2
	[ "$trace" = 1 ] || return 0
	shift 2
	python3 - "$log" "$kind" "$off" "$b/cordon" "$@" <<'PY'
import re, statistics, subprocess, sys, time
log, kind, off, cordon, cmd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
def trace_lines(off):
    with open(log, "rb") as f:
        f.seek(off)
        text = f.read().decode(errors="replace")
    return [(float(m.group(1)), m.group(2)) for m in re.finditer(
        r"cordon-docker-pack: trace %s \S+ at=([0-9.]+):(.*) \(ms\)" % re.escape(kind), text)]
def p90(l):
    l = sorted(l)
    return l[min(len(l) - 1, int(0.9 * len(l)))]
rows, order = {}, []
for at, body in trace_lines(off):
    for k, v in re.findall(r"(\S+)=([0-9.]+)", body):
        if k not in rows:
            rows[k] = []
            order.append(k)
        rows[k].append(float(v))
if not rows:
    print("(no trace lines)")
    sys.exit(0)
print("-- the pack's steps (%s, %d commands; ms)" % (kind, len(rows.get("total", []))))
print("%-16s %9s %9s %6s" % ("step", "median", "p90", "n"))
for k in order:
    print("%-16s %9.2f %9.2f %6d" % (k, statistics.median(rows[k]), p90(rows[k]), len(rows[k])))
# Outside the pack: commands one at a time, each matched with its trace line.
with open(log, "rb") as f:
    off2 = f.seek(0, 2)
spans = []
for _ in range(20):
    t0 = time.time()
    subprocess.run([cordon] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    spans.append((t0, time.time()))
lines = trace_lines(off2)
if len(lines) == len(spans):
    before, after, whole, pack = [], [], [], []
    for (t0, t1), (at, body) in zip(spans, lines):
        total = float(re.search(r"total=([0-9.]+)", body).group(1))
        before.append((at - t0) * 1000)
        after.append((t1 - at) * 1000 - total)
        whole.append((t1 - t0) * 1000)
        pack.append(total)
    print("-- outside the pack (%d commands one at a time; ms)" % len(spans))
    print("%-16s %9s %9s" % ("", "median", "p90"))
    for name, l in (("CLI->pack", before), ("pack (total)", pack), ("exited->CLI end", after),
                    ("whole command", whole)):
        print("%-16s %9.2f %9.2f" % (name, statistics.median(l), p90(l)))
else:
    print("(%d commands but %d trace lines: no breakdown)" % (len(spans), len(lines)))
PY
}
cleanup() {
	local pid
	pid=$(head -n1 "$XDG_RUNTIME_DIR/cordon/controller.sock.lock" 2>/dev/null || true)
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	[ -n "$cid" ] && cli rm -f "$cid" >/dev/null 2>&1
	docker_engine_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
if [ "$engine" = podman ]; then
	podman_engine_start "$tmp/engine" || { echo "docker-pack.sh: no engine" >&2; exit 1; }
	cli() { podman --remote --url "unix://$DOCKER_ENGINE_SOCK" "$@"; }
else
	docker_engine_start "$tmp/engine" || { echo "docker-pack.sh: no engine" >&2; exit 1; }
	cli() { docker "$@"; }
fi
IMAGE=cordon-bench:latest
docker_engine_image "$IMAGE" || exit 1
export DOCKER_HOST=unix://$DOCKER_ENGINE_SOCK
remote=()
[ "$engine" = podman ] && remote=(--remote --url "unix://$DOCKER_ENGINE_SOCK")
cp "$b/backends/docker/cordon-docker-pack" "$tmp/pack/"
python3 - "$src/backends/docker/pack.json" "$tmp/pack/pack.json" "$DOCKER_ENGINE_SOCK" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["hostSockets"] = [{"name": "engine", "path": sys.argv[3]}]
json.dump(m, open(sys.argv[2], "w"))
PY
echo "{\"packSockets\": [\"$DOCKER_ENGINE_SOCK\"]}" >"$tmp/floor.json"
chmod 0644 "$tmp/floor.json"
export CORDON_LAUNCHERD_FLOOR=$tmp/floor.json
cd "$tmp/work" || exit 1
"$b/cordon" pack install "$tmp/pack" >/dev/null &&
	"$b/cordon" pack enable org.cordon.docker >/dev/null &&
	"$b/cordon" backend activate pack:org.cordon.docker:docker --set image=$IMAGE \
		--set socket="$DOCKER_ENGINE_SOCK" "${tracearg[@]}" >/dev/null || exit 1
"$b/cordon" run -- /bin/true || exit 1
echo "engine: $engine $(curl -s --unix-socket "$DOCKER_ENGINE_SOCK" http://d/version |
	python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["Version"], "(API %s)" % v["ApiVersion"])')"

echo "== one-shot: cordon run through the pack vs $engine run --rm, $rounds rounds (target <= 1.1x)"
off=$(stat -c %s "$log")
"$b/bench/bench-paired" -n "$rounds" ::: "$engine-run" "$engine" "${remote[@]}" run --rm \
	--network none "$IMAGE" /bin/true ::: cordon-run "$b/cordon" run -- /bin/true
stages one-shot "$off" run -- /bin/true
echo
lease=$("$b/cordon" sandbox acquire --workspace-access read-write) || exit 1
"$b/cordon" run --sandbox "$lease" -- /bin/true || exit 1
cid=$(cli run -d --network none "$IMAGE" sleep 2147483647) || exit 1
echo "== in a lease: cordon run --sandbox vs $engine exec, $rounds rounds (target <= 1.1x)"
off=$(stat -c %s "$log")
"$b/bench/bench-paired" -n "$rounds" ::: "$engine-exec" "$engine" "${remote[@]}" exec "$cid" /bin/true \
	::: cordon-lease "$b/cordon" run --sandbox "$lease" -- /bin/true
stages exec "$off" run --sandbox "$lease" -- /bin/true
"$b/cordon" sandbox release "$lease" >/dev/null
