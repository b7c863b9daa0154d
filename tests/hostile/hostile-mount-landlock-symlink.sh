#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A Landlock rule's path is looked up in the sandbox's root as its mount targets are: a symlink
# on it is an error (ELOOP), never followed. One sandbox of an ordinary user (cordon-test1)
# plants /work/l -> /etc in its writable /work; a later plan of the same user grants writes
# on "/work/l" (and on "/work/l/sub") while its /etc is a bind that is writable as a mount and
# by file modes, and read-only by Landlock alone. Followed, the rule would grant writes to /etc.
# In both deployments (mount-lib.sh): the plan is refused (ELOOP, naming plan.landlock.fs[N]),
# /etc stays unwritable, and the same plan with its rule on a real directory runs.
. "${top_srcdir:-.}/tests/hostile/mount-lib.sh"
m_require
h_on_exit ld_unleak
plan 12

U1=$TEST_USER1
# The sandbox's /etc: writable by anyone as far as modes go; Landlock alone keeps it read-only.
mkdir -p "$T/etcdir/sub"
chmod 0777 "$T/etcdir" "$T/etcdir/sub"

# refused_eloop OUTCOME: a refusal naming a Landlock rule, for ELOOP (40).
refused_eloop() {
	case $1 in
	"error setup-failed plan.landlock.fs["*"] 40" | "error invalid-plan plan.landlock.fs["*"] 40") true ;;
	*) false ;;
	esac
}

# write_plan FILE RULE_PATH: /etc bound writable, Landlock read-only there, writes granted on
# RULE_PATH; the command tries to write /etc/pwned and /etc/sub/pwned.
write_plan() {
	m_sh_plan "$1" 'echo x >/etc/pwned; echo @etc:$?; echo x >/etc/sub/pwned; echo @sub:$?'
	m_add_mounts "$1" '[{"type": "bind", "source": 6, "target": "/etc", "readOnly": false}]' \
		"$(jq -nc --arg p "$2" '[{"path": "/etc", "access": ["read-file", "read-dir"]},
			{"path": $p, "access": ["read-file", "read-dir", "write-file", "make-reg",
			 "truncate"]}]')"
}

deployment() {
	m_start "$1"
	rv=$(m_runs_variant)
	rm -f "$T/work/l" "$T/etcdir/pwned" "$T/etcdir/sub/pwned"

	m_sh_plan "$T/plant.json" 'ln -s /etc /work/l && echo @planted:yes'
	o=$(m_spawn plant $U1 "$T/plant.json" $(m_ns_opt $rv))
	check "$1: a sandbox plants /work/l -> /etc in its writable /work ($o)" \
		test "$(m_said plant planted)" = yes -a -L "$T/work/l"

	write_plan "$T/l.json" /work/l
	o_l=$(m_spawn via-l $U1 "$T/l.json" $(m_ns_opt $rv) --fd "path:$T/etcdir")
	check "$1: a write rule on /work/l is refused: ELOOP, naming plan.landlock.fs[N] ($o_l)" \
		refused_eloop "$o_l"
	write_plan "$T/ls.json" /work/l/sub
	o_ls=$(m_spawn via-ls $U1 "$T/ls.json" $(m_ns_opt $rv) --fd "path:$T/etcdir")
	check "$1: …and one on /work/l/sub ($o_ls)" refused_eloop "$o_ls"
	check "$1: …and /etc stayed unwritable ($(ls -R "$T/etcdir" | grep -c pwned) file(s) written)" \
		test ! -e "$T/etcdir/pwned" -a ! -e "$T/etcdir/sub/pwned"

	# Control: the same plan with its write rule on a real directory runs (and writes there).
	rm -f "$T/etcdir/pwned" "$T/etcdir/sub/pwned"
	write_plan "$T/real.json" /etc/sub
	o=$(m_spawn real $U1 "$T/real.json" $(m_ns_opt $rv) --fd "path:$T/etcdir")
	w_etc=$(m_said real etc)
	w_sub=$(m_said real sub)
	check "$1: control: with the rule on a real directory the plan runs and writes only there ($o; write to /etc: ${w_etc:-none}, to /etc/sub: ${w_sub:-none})" \
		test "$o" = "exit 0" -a "$w_sub" = 0 -a -n "$w_etc" -a "$w_etc" != 0
	rm -f "$T/etcdir/sub/pwned"
	m_end_deploy
}

deployment hand
deployment unit
tap_done
