#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Nothing a sandbox's set-up mounts may propagate out of the sandbox. A bind mount launcherd
# makes is a clone of the requester's source; a clone of a shared mount joins its peer group,
# and what is then mounted on it (a later bind, deny, tmpfs, proc or dev of the same plan)
# appears in every peer: launcherd's namespace, the host's, other sandboxes. Attacks, by an
# ordinary user (cordon-test1), each in every deployment (mount-lib.sh: by hand; the unit; the
# unit with systemd's default MountFlags=shared) and both ways of sending a plan (without and
# with "mountNamespace"):
#  - a plan like the controller's default (/etc bound read-only, /etc/shadow denied): no mount
#    at /etc/shadow is left in launcherd's namespace nor the host's;
#  - a group file of the user's own bound at /etc/group under a bind of /etc, and under a bind
#    of / at /host: launcherd's and the host's /etc/group unchanged, and the user's next
#    sandbox (launcherd reads the groups of a connection from /etc/group) has the user's own
#    groups only and cannot read /etc/shadow;
#  - a file of the user's own bound over a file inside a directory another user's running
#    sandbox binds (cordon-test2): that sandbox still reads its own file;
#  - every mount type (bind, deny of a file and of a directory, tmpfs, proc, dev) under an
#    earlier bind: nothing of them under its source in launcherd's namespace nor the host's;
#  - a file of the user's own bound over /dev/null (which comes from launcherd's /dev
#    template): launcherd's and the host's /dev/null unchanged, the next sandbox's /dev/null
#    the device.
# And the real host's namespace (PID 1's) unchanged after each deployment (mount-lib.sh).
. "${top_srcdir:-.}/tests/hostile/mount-lib.sh"
m_require
h_on_exit ld_unleak
plan 45

U1=$TEST_USER1
U2=$TEST_USER2
gid1=$(id -g $U1)

# The attacker's files: a group file putting it in root's and shadow's groups, a file for
# /dev/null, one for another sandbox's file.
mkdir -p "$T/u1"
chown "$U1" "$T/u1"
as_user $U1 sh -c "awk -F: -v OFS=: -v u=$U1 '\$1 == \"root\" || \$1 == \"shadow\" { \$4 = \$4 == \"\" ? u : \$4 \",\" u } { print }' /etc/group >'$T/u1/group' &&
	echo FAKE >'$T/u1/null' && echo EVIL >'$T/u1/evil'"
# The victim's directory, and a tree with a mount point of each type for the last attack.
mkdir -p "$T/shared" "$T/tree/b" "$T/tree/dd" "$T/tree/t" "$T/tree/p" "$T/tree/dv"
echo original >"$T/shared/f"
: >"$T/tree/df"
chmod -R a+rX "$T/shared" "$T/tree"

M_NOT_RUN=
# ran NAME VARIANT OUTCOME: a plan that must run in this deployment (m_runs_variant) ran.
ran() {
	diag "$M_DEPLOY: $1 ($2): $3"
	[ "$2" != "$(m_runs_variant)" ] || [ "$3" = "exit 0" ] || M_NOT_RUN="$M_NOT_RUN $1($2): $3;"
}

# same DESC BEFORE AFTER: a check that a list of mount points did not change.
same() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1"
		diag "before: $(echo $2)"
		diag "after:  $(echo $3)"
	fi
}

deployment() {
	m_start "$1"
	M_NOT_RUN=
	rv=$(m_runs_variant)

	# 1. The controller's default: /etc read-only, /etc/shadow denied.
	ld0=$(m_mounts_at ld /etc/shadow)
	t0=$(m_mounts_at test /etc/shadow)
	for v in $M_VARIANTS; do
		make_plan "$T/deny.json" '["/bin/true"]'
		m_add_mounts "$T/deny.json" '[{"type": "bind", "source": 6, "target": "/etc"},
			{"type": "deny", "target": "/etc/shadow"}]'
		ran default-like $v "$(m_spawn deny-$v $U1 "$T/deny.json" $(m_ns_opt $v) --fd path:/etc)"
	done
	same "$1: a default-like plan (deny /etc/shadow under a bind of /etc) leaves no mount at /etc/shadow in launcherd's namespace" \
		"$ld0" "$(m_mounts_at ld /etc/shadow)"
	same "$1: …nor in the host's" "$t0" "$(m_mounts_at test /etc/shadow)"

	# 2. A group file of the user's own over /etc/group, under a bind of /etc and of /.
	ld0=$(m_mounts_at ld /etc)
	t0=$(m_mounts_at test /etc)
	for v in $M_VARIANTS; do
		make_plan "$T/grp.json" '["/bin/true"]'
		m_add_mounts "$T/grp.json" '[{"type": "bind", "source": 6, "target": "/etc"},
			{"type": "bind", "source": 7, "target": "/etc/group"}]'
		ran "group file under /etc" $v "$(m_spawn grp-etc-$v $U1 "$T/grp.json" $(m_ns_opt $v) \
			--fd path:/etc --fd "path:$T/u1/group")"
		make_plan "$T/grp.json" '["/bin/true"]'
		m_add_mounts "$T/grp.json" '[{"type": "bind", "source": 6, "target": "/host"},
			{"type": "bind", "source": 7, "target": "/host/etc/group"}]'
		ran "group file under /" $v "$(m_spawn grp-root-$v $U1 "$T/grp.json" $(m_ns_opt $v) \
			--fd path:/ --fd "path:$T/u1/group")"
	done
	same "$1: a group file bound under a bind of /etc or / leaves no mount at /etc in launcherd's namespace" \
		"$ld0" "$(m_mounts_at ld /etc)"
	same "$1: …nor in the host's" "$t0" "$(m_mounts_at test /etc)"
	# The user's next sandbox, on a new connection (launcherd reads its groups at hello).
	m_sh_plan "$T/next.json" 'echo @id:$(id -G); head -c 1 /etc/shadow >/dev/null 2>&1; echo @shadow:$?'
	m_add_mounts "$T/next.json" '[{"type": "bind", "source": 6, "target": "/etc"}]' \
		'[{"path": "/etc", "access": ["read-file", "read-dir"]}]'
	ran "next sandbox" $rv "$(m_spawn next $U1 "$T/next.json" $(m_ns_opt $rv) --fd path:/etc)"
	ids=$(m_said next id)
	check "$1: the user's next sandbox has its own group only (${ids:-no output}, not 0 or 42)" \
		test "$ids" = "$gid1"
	sh_rc=$(m_said next shadow)
	check "$1: …and cannot read /etc/shadow (head exit ${sh_rc:-none})" \
		test -n "$sh_rc" -a "$sh_rc" != 0

	# 3. Another user's running sandbox: a file over one in the directory it binds.
	rm -f "$T/work/run."*
	m_sh_plan "$T/victim.json" 'echo @before:$(cat /shared/f); echo @ready:
		while [ ! -e /work/run.go ]; do sleep 0.05; done; echo @after:$(cat /shared/f)'
	m_add_mounts "$T/victim.json" '[{"type": "bind", "source": 6, "target": "/shared"}]' \
		'[{"path": "/shared", "access": ["read-file", "read-dir"]}]'
	jq '.timeoutMs = 20000' "$T/victim.json" >"$T/victim2.json"
	m_spawn victim $U2 "$T/victim2.json" $(m_ns_opt $rv) --fd "path:$T/shared" >"$T/victim.outcome" &
	victim=$!
	H_BG_PIDS="$H_BG_PIDS $victim"
	for _ in $(seq 1 100); do
		grep -q '^@ready:' "$T/victim.out" 2>&- && break
		sleep 0.05
	done
	ld0=$(m_mounts_at ld "$T/shared")
	t0=$(m_mounts_at test "$T/shared")
	for v in $M_VARIANTS; do
		make_plan "$T/over.json" '["/bin/true"]'
		m_add_mounts "$T/over.json" '[{"type": "bind", "source": 6, "target": "/s"},
			{"type": "bind", "source": 7, "target": "/s/f"}]'
		ran "file over another sandbox's" $v "$(m_spawn over-$v $U1 "$T/over.json" \
			$(m_ns_opt $v) --fd "path:$T/shared" --fd "path:$T/u1/evil")"
	done
	: >"$T/work/run.go"
	wait $victim
	ran "the other user's sandbox" $rv "$(cat "$T/victim.outcome")"
	seen="$(m_said victim before) $(m_said victim after)"
	check "$1: another user's running sandbox still reads its own file ($seen)" \
		test "$seen" = "original original"
	same "$1: …and the file's directory has no mount in launcherd's namespace nor the host's" \
		"$ld0 $t0" "$(m_mounts_at ld "$T/shared") $(m_mounts_at test "$T/shared")"

	# 4. Every mount type under an earlier bind.
	ld0=$(m_mounts_at ld "$T/tree")
	t0=$(m_mounts_at test "$T/tree")
	for v in $M_VARIANTS; do
		make_plan "$T/types.json" '["/bin/true"]'
		m_add_mounts "$T/types.json" '[{"type": "bind", "source": 6, "target": "/tree"},
			{"type": "bind", "source": 4, "target": "/tree/b"},
			{"type": "deny", "target": "/tree/df"},
			{"type": "deny", "target": "/tree/dd"},
			{"type": "tmpfs", "target": "/tree/t"},
			{"type": "proc", "target": "/tree/p"},
			{"type": "dev", "target": "/tree/dv"}]'
		ran "every type under a bind" $v "$(m_spawn types-$v $U1 "$T/types.json" $(m_ns_opt $v) \
			--fd "path:$T/tree")"
	done
	same "$1: bind, deny (file, dir), tmpfs, proc, dev under an earlier bind: nothing under its source in launcherd's namespace" \
		"$ld0" "$(m_mounts_at ld "$T/tree")"
	same "$1: …nor in the host's" "$t0" "$(m_mounts_at test "$T/tree")"

	# 5. /dev/null, from launcherd's /dev template. Last, and what reached the test's namespace
	# is undone at once (ld_unleak): a /dev/null replaced by a read-only file breaks every
	# redirection to it.
	ld0=$(m_mounts_at ld /dev/null)
	t0=$(m_mounts_at test /dev/null)
	l1=
	t1=
	for v in $M_VARIANTS; do
		make_plan "$T/null.json" '["/bin/true"]'
		m_add_mounts "$T/null.json" '[{"type": "bind", "source": 6, "target": "/dev/null"}]'
		o=$(m_spawn null-$v $U1 "$T/null.json" $(m_ns_opt $v) --fd "path:$T/u1/null")
		l1="$l1$(m_mounts_at ld /dev/null);"
		t1="$t1$(m_mounts_at test /dev/null);"
		ld_unleak
		ran "a file over /dev/null" $v "$o"
	done
	ld0="$ld0;$ld0;"
	t0="$t0;$t0;"
	m_sh_plan "$T/null2.json" 'if [ -c /dev/null ] && echo x >/dev/null && [ ! -s /dev/null ]; then
		echo @null:device; else echo @null:replaced; fi'
	ran "next sandbox's /dev/null" $rv "$(m_spawn null2 $U2 "$T/null2.json" $(m_ns_opt $rv))"
	same "$1: a file bound over the sandbox's /dev/null: launcherd's /dev/null unchanged" "$ld0" "$l1"
	same "$1: …the host's too" "$t0" "$t1"
	check "$1: …and the next sandbox's /dev/null is the device ($(m_said null2 null))" \
		test "$(m_said null2 null)" = device

	check "$1: the plans that must run ran (${M_NOT_RUN:-all})" test -z "$M_NOT_RUN"
	m_end_deploy
}

deployment hand
deployment unit
deployment unit-shared
tap_done
