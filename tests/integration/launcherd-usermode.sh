#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# User mode without root: what an ordinary CI job (no sudo) can check. The client starts an
# unprivileged launcherd over a socketpair; plans run inside a new user namespace. As root, the
# same runs as the test user.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
[ -x "$LAUNCHERD" ] || skip_all "no $LAUNCHERD"
if [ "$(id -u)" = 0 ]; then
	id $TEST_USER1 >/dev/null 2>&1 || useradd -M -s /bin/sh $TEST_USER1 2>/dev/null ||
		skip_all "cannot create test user $TEST_USER1"
	run() { ld_run --user-mode --user $TEST_USER1 "$@"; }
	uid=$(id -u $TEST_USER1)
else
	run() { ld_run --user-mode "$@"; }
	uid=$(id -u)
fi
if [ "$(id -u)" = 0 ]; then
	as_user $TEST_USER1 unshare -U true 2>/dev/null || skip_all "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone / user.max_user_namespaces)"
else
	unshare -U true 2>/dev/null || skip_all "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone / user.max_user_namespaces)"
fi
plan 7

make_plan "$T/p.json" '["/bin/sh", "-c", "echo $$ $(id -u)"]'
out=$(run $STD_FDS "$T/p.json")
check "a sandbox from an unprivileged launcherd: pid 2 under the init, the user's uid" test "$out" = "2 $uid"
"$LP" --user-mode "$LAUNCHERD" --floor "$T/floor.json" --hello --result "$T/result.json" 2>/dev/null
check "hello: user mode, user namespaces" test "$(jq -r '.mode + " " + (.userns|tostring)' "$T/result.json")" = "user true"

probe_refused "user mode: write to the read-only /usr" --user-mode -- write /usr/cordon-probe
probe_refused "user mode: nested user namespace" --user-mode -- userns
probe_refused "user mode: mount" --user-mode -- mount
probe_refused "user mode: host TCP is out of reach (own netns)" --user-mode -- tcp 1

make_plan "$T/p.json" '["/probe/probe", "forkloop", "100"]' ', "cgroup": {"pidsMax": 16}'
run $STD_FDS "$T/p.json" >/dev/null 2>&1
check "user mode: pids limit through RLIMIT_NPROC in the sandbox's user namespace" \
	test "$?/$(json_field reason)/$(json_field exitCode)" = "1/exited/1"
tap_done
