#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# One probe per confinement rule, each an escape attempt that would SUCCEED if the rule were
# missing, run in three configurations: privileged launcherd with a root requester, privileged
# launcherd with an ordinary user, and a user-mode launcherd started by an ordinary user.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
ld_require_root
ld_start

# Host-side targets: a TCP listener on 127.0.0.1 and an abstract Unix socket.
port=$((20000 + $$ % 20000))
abstract="cordon-test-$$"
"$HELPERS/probe" tcp-listen $port >"$T/tcp.out" 2>&1 &
tcp_pid=$!
"$HELPERS/probe" abstract-listen "$abstract" >"$T/abs.out" 2>&1 &
abs_pid=$!
trap 'kill $tcp_pid $abs_pid 2>/dev/null; ld_cleanup' EXIT
# Sanity: the host side really is reachable from outside a sandbox (once the listeners are up:
# on a loaded machine that can take a while).
for what in "tcp $port" "abstract $abstract"; do
	for _ in $(seq 1 100); do
		"$HELPERS/probe" $what >/dev/null 2>&1 && break
		sleep 0.05
	done
	"$HELPERS/probe" $what >/dev/null || echo "Bail out! host listener not reachable: $what"
done

host_pid=$$
n_probes=26
plan $((3 * n_probes))

# A seccomp program from the plan, stacked on the floor: deny kill(2) (nr 62) with EPERM.
# struct sock_filter {u16 code; u8 jt, jf; u32 k}, little-endian.
printf '\040\000\000\000\000\000\000\000' >"$T/deny-kill.bpf"                 # ld [0] (nr)
printf '\025\000\000\001\076\000\000\000' >>"$T/deny-kill.bpf"                # jeq 62, 0, 1
printf '\006\000\000\000\001\000\005\000' >>"$T/deny-kill.bpf"                # ret ERRNO(1)
printf '\006\000\000\000\000\000\377\177' >>"$T/deny-kill.bpf"                # ret ALLOW
chmod 0644 "$T/deny-kill.bpf"

run_probes() {
	label=$1
	shift
	# "$@": options for ld_run (--user U, --user-mode)
	probe_refused "$label: write to the read-only /usr" "$@" -- write /usr/cordon-probe
	probe_refused "$label: write to the read-only root" "$@" -- write /cordon-probe
	probe_refused "$label: write via a symlink planted in /work" "$@" -- symlink-write /work /usr/lib/cordon-probe
	probe_refused "$label: hard link from outside the writable set" "$@" -- hardlink /probe/probe /work
	probe_refused "$label: rename out of a read-only mount" "$@" -- rename /probe/probe /work/stolen
	probe_refused "$label: write via /proc/self/root" "$@" -- write /proc/self/root/usr/cordon-probe
	probe_refused "$label: read a denied file (overmounted)" "$@" -- read /work/secret/key
	probe_refused "$label: read a host file that was not mounted" "$@" -- read /etc/shadow
	probe_refused "$label: see a host pid in /proc" "$@" -- see-pid $host_pid
	probe_refused "$label: signal a host pid" "$@" -- kill $host_pid
	probe_refused "$label: ptrace a host pid" "$@" -- ptrace $host_pid
	probe_refused "$label: create a user namespace (unshare)" "$@" -- userns
	probe_refused "$label: create a user namespace (clone)" "$@" -- clone-userns
	probe_refused "$label: mount" "$@" -- mount
	probe_refused "$label: load a bpf program" "$@" -- bpf
	probe_refused "$label: io_uring" "$@" -- io-uring
	probe_refused "$label: raw and packet sockets" "$@" -- raw-socket
	probe_refused "$label: personality(ADDR_NO_RANDOMIZE)" "$@" -- personality
	probe_refused "$label: keyctl/add_key" "$@" -- keyctl
	probe_refused "$label: x32 system call ABI" "$@" -- x32
	probe_refused "$label: reach a TCP listener on the host's 127.0.0.1" "$@" -- tcp $port
	probe_refused "$label: reach an abstract Unix socket on the host" "$@" -- abstract "$abstract"
	probe_refused "$label: inherit a stray fd from the requester" "$@" --fd 6=/etc -- fds
	SECRET_TOKEN=hunter2 probe_refused "$label: see the requester's environment secrets" "$@" -- env SECRET_TOKEN
	probe_refused "$label: the plan's seccomp filter adds a denial" "$@" --seccomp 6="$T/deny-kill.bpf" -- kill 1
	# TIOCSTI with a real terminal as stdin (script(1) gives the client a pty).
	make_plan "$T/tty.json" '["/probe/probe", "tiocsti"]'
	prefix=
	target="--socket $T/ld.sock"
	for o in "$@"; do
		case "$o" in
		--user-mode) target="--user-mode $LAUNCHERD --floor $T/floor.json" ;;
		--user) prefix=user ;;
		*) [ "$prefix" = user ] && prefix="setpriv --reuid=$o --regid=$o --clear-groups" ;;
		esac
	done
	if script -qec "$prefix $LP $target $STD_FDS $T/tty.json" /dev/null >"$T/tty.out" 2>&1 </dev/null; then
		not_ok "$label: TIOCSTI into the terminal ($(head -c 200 "$T/tty.out"))"
	elif grep -q refused "$T/tty.out"; then
		ok "$label: TIOCSTI into the terminal"
	else
		not_ok "$label: TIOCSTI ($(head -c 200 "$T/tty.out"))"
	fi
}

chmod 0644 "$T/deny-kill.bpf"

run_probes "privileged, root requester"
run_probes "privileged, user $TEST_USER1" --user $TEST_USER1
run_probes "user mode, $TEST_USER1" --user-mode --user $TEST_USER1
tap_done
