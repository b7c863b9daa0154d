#!/usr/bin/env bash
# The Docker pack against the Docker CLI on the same engine, paired (bench-paired): a one-shot
# `cordon run -- /bin/true` through the pack vs `docker run --rm IMAGE /bin/true`, and a command
# in a lease (`cordon run --sandbox ID`) vs `docker exec` in a running container. Run from a
# build tree, as root (it starts a private dockerd as tests/helpers/docker-engine.sh does):
#   bench/docker-pack.sh [ROUNDS]        (default 30)
# Targets: cordon / docker <= 1.1 for both.
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
cid=
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
		--set socket="$DOCKER_ENGINE_SOCK" >/dev/null || exit 1
"$b/cordon" run -- /bin/true || exit 1
echo "engine: $engine $(curl -s --unix-socket "$DOCKER_ENGINE_SOCK" http://d/version |
	python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["Version"], "(API %s)" % v["ApiVersion"])')"

echo "== one-shot: cordon run through the pack vs $engine run --rm, $rounds rounds (target <= 1.1x)"
"$b/bench/bench-paired" -n "$rounds" ::: "$engine-run" "$engine" "${remote[@]}" run --rm \
	--network none "$IMAGE" /bin/true ::: cordon-run "$b/cordon" run -- /bin/true
echo
lease=$("$b/cordon" sandbox acquire --workspace-access read-write) || exit 1
"$b/cordon" run --sandbox "$lease" -- /bin/true || exit 1
cid=$(cli run -d --network none "$IMAGE" sleep 2147483647) || exit 1
echo "== in a lease: cordon run --sandbox vs $engine exec, $rounds rounds (target <= 1.1x)"
"$b/bench/bench-paired" -n "$rounds" ::: "$engine-exec" "$engine" "${remote[@]}" exec "$cid" /bin/true \
	::: cordon-lease "$b/cordon" run --sandbox "$lease" -- /bin/true
"$b/cordon" sandbox release "$lease" >/dev/null
