#!/usr/bin/env bash
# A private Docker engine for a test: sourced, then
#   docker_engine_start DIR   start dockerd (Debian's docker.io) with its state and socket under
#                             DIR, no bridge, no firewall or forwarding changes; sets
#                             DOCKER_ENGINE_SOCK and DOCKER_ENGINE_PID; non-zero when it cannot
#   docker_engine_image NAME  import a small image NAME (busybox-static, from this host's files;
#                             nothing reaches a registry)
#   podman_engine_start DIR   the same with `podman system service` (its compat API) instead:
#                             runc as the runtime (crun refuses hybrid cgroup layouts), cgroupfs,
#                             default ulimits capped at what the service itself may have
#                             (the pack caps its own nofile/nproc at these)
#   docker_engine_stop        stop the engine by its PID only (podman: also the conmon processes
#                             whose bundle lies under DIR, by PID; then its leftover mounts)
# Set CORDON_DOCKER_NO_INSTALL=1 to never apt-get install docker.io or busybox-static.

docker_engine_ping() {
	[ "$(curl -s -m 2 --unix-socket "$DOCKER_ENGINE_SOCK" http://d/_ping 2>/dev/null)" = OK ]
}

docker_engine_install() {
	local missing=0 c
	for c in "$@"; do command -v "$c" >/dev/null 2>&1 || missing=1; done
	[ $missing = 0 ] && return 0
	[ "${CORDON_DOCKER_NO_INSTALL:-0}" = 1 ] && return 1
	[ "$(id -u)" = 0 ] || return 1
	command -v apt-get >/dev/null || return 1
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q \
		--no-install-recommends docker.io busybox-static curl >&2 || return 1
}

docker_engine_start() {
	local dir=$1
	docker_engine_install dockerd containerd runc curl busybox || return 1
	mkdir -p "$dir/data" "$dir/exec" || return 1
	echo '{}' >"$dir/daemon.json"
	DOCKER_ENGINE_SOCK=$dir/engine.sock
	dockerd --config-file "$dir/daemon.json" -H "unix://$DOCKER_ENGINE_SOCK" \
		--data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" \
		--bridge=none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
		--log-level=warn </dev/null >"$dir/engine.log" 2>&1 &
	DOCKER_ENGINE_PID=$!
	for _ in $(seq 1 600); do
		docker_engine_ping && return 0
		kill -0 "$DOCKER_ENGINE_PID" 2>/dev/null || break
		sleep 0.1
	done
	tail -20 "$dir/engine.log" >&2
	docker_engine_stop
	return 1
}

podman_engine_run() {
	CONTAINERS_CONF="$1/containers.conf" podman --root "$1/root" --runroot "$1/run" \
		--tmpdir "$1/tmp" --runtime runc --cgroup-manager cgroupfs --events-backend file \
		system service --time=0 "unix://$DOCKER_ENGINE_SOCK" </dev/null >"$1/engine.log" 2>&1 &
	DOCKER_ENGINE_PID=$!
}

podman_engine_start() {
	local dir=$1 nofile nproc pidmax
	if ! command -v podman >/dev/null 2>&1 || [ ! -x /usr/libexec/podman/catatonit ]; then
		[ "${CORDON_DOCKER_NO_INSTALL:-0}" = 1 ] && return 1
		[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || return 1
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q \
			--no-install-recommends podman runc catatonit busybox-static curl >&2 || return 1
	fi
	command -v runc >/dev/null 2>&1 || return 1
	mkdir -p "$dir/root" "$dir/run" "$dir/tmp" || return 1
	DOCKER_ENGINE_DIR=$dir
	DOCKER_ENGINE_SOCK=$dir/engine.sock
	# Podman's default nofile/nproc (1048576) cannot be set without CAP_SYS_RESOURCE: cap them
	# at the hard limits podman runs with (it lowers its own nproc to pid_max).
	nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] && nofile=1048576
	nproc=$(ulimit -Hu); [ "$nproc" = unlimited ] && nproc=1048576
	pidmax=$(cat /proc/sys/kernel/pid_max)
	[ "$nofile" -gt 1048576 ] && nofile=1048576
	[ "$nproc" -gt "$pidmax" ] && nproc=$pidmax
	[ "$nofile" -gt 20000 ] && nofile=20000
	[ "$nproc" -gt 32768 ] && nproc=32768
	printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' \
		"$nofile" "$nofile" "$nproc" "$nproc" >"$dir/containers.conf"
	podman_engine_run "$dir"
	for _ in $(seq 1 600); do
		docker_engine_ping && return 0
		kill -0 "$DOCKER_ENGINE_PID" 2>/dev/null || break
		sleep 0.1
	done
	tail -20 "$dir/engine.log" >&2
	docker_engine_stop
	return 1
}

docker_engine_image() {
	local name=$1 w r a bb out
	bb=$(command -v busybox) || return 1
	w=$(mktemp -d) || return 1
	r=$w/rootfs
	mkdir -p "$r/bin" "$r/etc" "$r/tmp" "$r/workspace" "$r/proc" "$r/sys" "$r/dev"
	chmod 1777 "$r/tmp"
	cp "$bb" "$r/bin/busybox"
	for a in $("$r/bin/busybox" --list); do [ -e "$r/bin/$a" ] || ln -s busybox "$r/bin/$a"; done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$r/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
	tar -C "$r" -cf "$w/rootfs.tar" .
	out=$(curl -sS --unix-socket "$DOCKER_ENGINE_SOCK" -X POST -H 'Content-Type: application/x-tar' \
		--data-binary @"$w/rootfs.tar" "http://d/images/create?fromSrc=-&repo=${name%:*}&tag=${name##*:}")
	rm -rf "$w"
	case "$out" in *'"status":"sha256:'*) return 0 ;; esac
	echo "image import failed: $out" >&2
	return 1
}

docker_engine_stop() {
	[ -n "${DOCKER_ENGINE_PID:-}" ] || return 0
	kill "$DOCKER_ENGINE_PID" 2>/dev/null
	for _ in $(seq 1 100); do
		kill -0 "$DOCKER_ENGINE_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$DOCKER_ENGINE_PID" 2>/dev/null
	wait "$DOCKER_ENGINE_PID" 2>/dev/null
	DOCKER_ENGINE_PID=
	[ -n "${DOCKER_ENGINE_DIR:-}" ] || return 0
	# Podman: conmon outlives the service (exec sessions keep theirs for minutes). SIGKILL,
	# not SIGTERM, which would run its cleanup command and mount the storage again.
	local p m
	for p in $(pgrep -x conmon 2>/dev/null); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null |
			grep -qF -- " -b $DOCKER_ENGINE_DIR/root/overlay-containers/" && kill -9 "$p"
	done
	sleep 0.2
	for _ in 1 2 3 4; do
		m=$(grep -o " $DOCKER_ENGINE_DIR/[^ ]*" /proc/mounts | sort -ru)
		[ -z "$m" ] && break
		for p in $m; do umount -l "$p" 2>/dev/null; done
	done
	DOCKER_ENGINE_DIR=
}
