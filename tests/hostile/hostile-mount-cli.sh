#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The everyday path against a privileged launcherd, in both deployments (mount-lib.sh): an
# ordinary user (cordon-test1) whose project is in its home directory (0700, as real ones are)
# runs the real CLI with the default policy; the controller it starts uses the system launcherd
# (CORDON_LAUNCHERD_SOCKET; it cannot start one of its own). `cordon run -- echo ok` works;
# `cordon run -- sh -c 'echo hi' > out.txt` (the user's shell opens out.txt, in the project)
# works; a plain `cordon run -- true` (in a project outside the home) runs and leaves no mount at
# /etc/shadow (the default policy denies it under its bind of /etc) in launcherd's namespace nor
# the host's; and runs keep working.
. "${top_srcdir:-.}/tests/hostile/mount-lib.sh"
m_require
[ -x "$B/cordon" ] && [ -x "$B/cordon-controller" ] || skip_all "cordon or cordon-controller not built"
plan 12

U1=$TEST_USER1
home=$(getent passwd $U1 | cut -d: -f6)
case $home in
/home/?*) ;;
*) skip_all "$U1's home is $home, not under /home" ;;
esac
if [ ! -d "$home" ]; then
	mkdir -p "$home"
	chown "$U1:" "$home"
	chmod 0700 "$home"
	h_on_exit "rm -rf '$home'"
else
	h_on_exit "rm -rf '$home/proj'"
fi
proj=$home/proj
mkdir -p "$proj"
chown "$U1:" "$proj"
proj2=$T/proj
mkdir -p "$proj2"
chown "$U1:" "$proj2"
run_dir=$T/u1-run
mkdir -p "$run_dir"
chown "$U1" "$run_dir"
chmod 0700 "$run_dir"
h_on_exit controller_stop
h_on_exit ld_unleak
h_write_floor "$(cat "$S/etc/launcherd.json")"

# as_u1 [-C DIR] COMMAND...: as the user, in the project (or DIR), with the CLI's environment.
as_u1() {
	a_dir=$proj
	if [ "$1" = -C ]; then
		a_dir=$2
		shift 2
	fi
	(cd "$a_dir" && setpriv --reuid=$U1 --regid=$U1 --init-groups --reset-env env \
		HOME="$home" XDG_RUNTIME_DIR="$run_dir" PATH=/usr/bin:/bin \
		CORDON_CONTROLLER="$B/cordon-controller" CORDON_LAUNCHERD=/nonexistent \
		CORDON_LAUNCHERD_SOCKET="$T/ld.sock" "$@")
}

# controller_stop: the controller the CLI started for the user (by the pid in its lock file).
controller_stop() {
	c_pid=$(head -n 1 "$run_dir/cordon/controller.sock.lock" 2>&-)
	[ -n "$c_pid" ] || return 0
	kill "$c_pid" 2>&-
	for _ in $(seq 1 50); do
		kill -0 "$c_pid" 2>&- || break
		sleep 0.1
	done
	kill -9 "$c_pid" 2>&-
	rm -f "$run_dir/cordon/controller.sock.lock"
}

deployment() {
	m_start "$1"
	ld0=$(m_mounts_at ld /etc/shadow)
	t0=$(m_mounts_at test /etc/shadow)

	out=$(as_u1 "$B/cordon" run -- echo ok 2>&1)
	check "$1: cordon run -- echo ok, in a project in the user's home ($out)" test "$out" = ok

	rm -f "$proj/out.txt"
	err=$(as_u1 sh -c "'$B/cordon' run -- sh -c 'echo hi' >out.txt" 2>&1)
	check "$1: cordon run -- sh -c 'echo hi' > out.txt ($(cat "$proj/out.txt" 2>&-)${err:+; $err})" \
		test "$(cat "$proj/out.txt" 2>&-)" = hi

	err=$(as_u1 -C "$proj2" "$B/cordon" run -- true 2>&1)
	rc=$?
	same_mounts "$1: cordon run -- true runs (exit $rc${err:+: $err}) and leaves no mount at /etc/shadow in launcherd's namespace" \
		"0 $ld0" "$rc $(m_mounts_at ld /etc/shadow)"
	same_mounts "$1: …nor in the host's" "0 $t0" "$rc $(m_mounts_at test /etc/shadow)"

	out=$(as_u1 "$B/cordon" run -- cat "$proj/out.txt" 2>&1)
	check "$1: and a later run works as well ($out)" test "$out" = hi
	controller_stop
	m_end_deploy
}

same_mounts() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1 (before: $(echo $2); after: $(echo $3))"
	fi
}

deployment hand
deployment unit
tap_done
