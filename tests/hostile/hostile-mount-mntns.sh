#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A bind source is the requester's view of a file, never launcherd's. A requester confined by a
# mount namespace of its own (here made as root, then the ordinary user cordon-test1 inside
# it, as a container or a service with ProtectSystem= would be) sees a tmpfs that hides the
# directory D/secret and a read-only bind of E. Its fds for D and E lie in that namespace,
# which launcherd's open_tree() refuses (EINVAL), and launcherd must not look the path up again
# in its own view, where D/secret holds a key and E is writable (the same inodes: a check of
# the inode does not tell the views apart). Checked in both deployments (mount-lib.sh):
#  - without "mountNamespace" the spawn is refused, naming plan.mounts[N].source, and nothing
#    of the unconfined view reaches the sandbox;
#  - with "mountNamespace" (the requester's /proc/self/ns/mnt, opened read-only and passed as a
#    message fd) the sandbox sees exactly the requester's view: D empty, E not writable even
#    bound with readOnly false;
#  - an ordinary requester (in the test's namespace): by hand, its plans run with or without
#    the field; under the unit, where every bind source is in another namespace than
#    launcherd's, a plan without it is refused (naming plan.mounts[N].source) and one with it
#    runs.
. "${top_srcdir:-.}/tests/hostile/mount-lib.sh"
m_require
h_on_exit ld_unleak
plan 16

U1=$TEST_USER1
F=$T/f4
mkdir -p "$F/D/secret" "$F/E"
echo secret >"$F/D/secret/key"
chmod 0755 "$F" "$F/D" "$F/D/secret"
chmod 0644 "$F/D/secret/key"
chmod 0777 "$F/E"

# confined NAME PLAN [--ns]: spawn PLAN as U1 from inside a mount namespace of its own where a
# tmpfs hides D/secret and E is bound read-only: m_spawn's client, run there. The outcome on stdout.
confined() {
	c_name=$1
	c_plan=$2
	c_ns=${3:-}
	c_fds="--fd path:$F/D --fd path:$F/E"
	if [ -n "$c_ns" ]; then
		jq '.mountNamespace = 8' "$c_plan" >"$T/$c_name.plan.json"
		c_fds="$c_fds --fd mntns"
	else
		cp "$c_plan" "$T/$c_name.plan.json"
	fi
	# shellcheck disable=SC2086
	unshare --mount --propagation private -- sh -c '
		mount -t tmpfs -o size=64k,mode=0755 cordon-hide "$1/D/secret" &&
		mount --bind "$1/E" "$1/E" && mount -o remount,bind,ro "$1/E" || exit 99
		shift
		exec "$@"' sh "$F" \
		setpriv --reuid="$U1" --regid="$U1" --clear-groups --reset-env -- \
		timeout -s KILL 60 "$HC" --socket "$T/ld.sock" $M_FDS $c_fds \
		--send "$T/$c_name.plan.json" --wait-exit 2>>"$T/client.log" | cat >"$T/$c_name.out"
	m_outcome "$T/$c_name.out"
}

# refused_by_source OUTCOME: a refusal naming a bind source.
refused_by_source() {
	case $1 in
	"error invalid-plan plan.mounts["*"].source "* | "error setup-failed plan.mounts["*"].source "*)
		true
		;;
	*) false ;;
	esac
}

deployment() {
	m_start "$1"
	rm -f "$F/E/"*

	# The confined requester: D at /d, E at /e with readOnly false; Landlock would let it write
	# there, so only the mount's read-only flag stands in the way.
	for v in plain ns; do
		m_sh_plan "$T/c.json" "echo @ls:\$(ls -A /d/secret); touch /e/written-$v 2>&-; echo @rc:\$?"
		m_add_mounts "$T/c.json" '[{"type": "bind", "source": 6, "target": "/d"},
			{"type": "bind", "source": 7, "target": "/e", "readOnly": false}]' \
			'[{"path": "/d", "access": ["read-file", "read-dir"]},
			  {"path": "/e", "access": ["read-file", "read-dir", "write-file", "make-reg"]}]'
		if [ $v = ns ]; then
			out_ns=$(confined c-ns "$T/c.json" --ns)
		else
			out_plain=$(confined c-plain "$T/c.json")
		fi
	done
	diag "$1: confined, without mountNamespace: $out_plain; with: $out_ns"
	check "$1: a confined requester's plan without mountNamespace is refused, naming plan.mounts[N].source ($out_plain)" \
		refused_by_source "$out_plain"
	seen=$(m_said c-plain ls)
	check "$1: …and nothing of launcherd's view reaches a sandbox (D/secret: '$seen'; E written: $(ls "$F/E" | tr '\n' ' '))" \
		test -z "$seen" -a ! -e "$F/E/written-plain"
	check "$1: with mountNamespace it runs ($out_ns)" test "$out_ns" = "exit 0"
	seen=$(m_said c-ns ls)
	check "$1: …its bind of D shows the requester's view: D/secret empty ('$seen')" \
		test "$(grep -c '^@ls:$' "$T/c-ns.out")" = 1
	rc=$(m_said c-ns rc)
	check "$1: …its writable bind of E is read-only as the requester sees it (touch exit ${rc:-none})" \
		test -n "$rc" -a "$rc" != 0 -a ! -e "$F/E/written-ns"

	# An ordinary requester, in the test's namespace.
	m_sh_plan "$T/o.json" 'echo @said:ok'
	o_plain=$(m_spawn o-plain $U1 "$T/o.json")
	o_ns=$(m_spawn o-ns $U1 "$T/o.json" --ns)
	if [ "$1" = unit ]; then
		check "unit: an ordinary plan without mountNamespace is refused, naming plan.mounts[N].source: every source is in another namespace than launcherd's ($o_plain)" \
			refused_by_source "$o_plain"
	else
		check "hand: an ordinary plan without mountNamespace runs ($o_plain, $(m_said o-plain said))" \
			test "$o_plain/$(m_said o-plain said)" = "exit 0/ok"
	fi
	check "$1: an ordinary plan with mountNamespace runs ($o_ns, $(m_said o-ns said))" \
		test "$o_ns/$(m_said o-ns said)" = "exit 0/ok"
	m_end_deploy
}

deployment hand
deployment unit
tap_done
