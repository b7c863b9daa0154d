# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared helpers for the mount family of the hostile suite (sourced by each
# tests/hostile/hostile-mount-*.sh): attacks through the mounts a sandbox's set-up makes, each
# run against launcherd as it is deployed (tests/integration/launcherd-lib.sh): by hand in the
# test's namespace, whose mounts are shared ("hand"), and as the unit runs it, in a namespace
# of its own that is a slave of the test's ("unit"; "unit-shared" with systemd's default
# MountFlags=shared). The test's namespace stands for the host; the real host's (PID 1's) is
# checked unchanged after every deployment.
. "${top_srcdir:-.}/tests/hostile/hostile-lib.sh"

# Stdio for every sandbox: pipes, which launcherd takes in either deployment (a file of the
# test's namespace is refused by the unit's launcherd for reasons of its own, not what these
# tests are about): stdin one that never gives anything, stdout and stderr the client's stdout,
# a pipe m_spawn reads (the sandbox's lines among the client's JSON lines; what a probe
# reports, it prints as "@KEY:VALUE": m_said). Then make_plan's three bind sources: fds 3, 4
# and 5. A test's own fds follow from 6.
M_FDS="--fd pipe-r --fd 1 --fd 1 --fd path:/usr --fd path:$HELPERS --fd path:$T/work"
# What the host view is taken of: where these attacks aim.
M_HOST_PATHS="/etc /dev /home $T"

# m_require: root, hostile-client, and the private namespace launcherd-lib.sh made: today's
# launcherd lets mounts propagate, and nothing here may ever run in a namespace that is not the
# test's own.
m_require() {
	h_require
	[ "$LD_SHARED" = 1 ] ||
		skip_all "not in a private mount namespace of the test's own with / shared (launcherd-lib.sh)"
	M_HOST_BEFORE=$(ld_host_view $M_HOST_PATHS)
}

# m_start DEPLOY: (re)start launcherd: "hand" (ld_start, in the test's namespace), "unit"
# (ld_start_unit), or "unit-shared": the unit with MountFlags= left to systemd's default
# (shared), so that its namespace's mounts are peers of one another whatever the unit says.
# M_DEPLOY names the one running.
m_start() {
	ld_stop
	M_DEPLOY=$1
	case $1 in
	unit) ld_start_unit ;;
	unit-shared)
		m_unit_file=$LD_UNIT_FILE
		sed '/^MountFlags=/d' "$LD_UNIT_FILE" >"$T/unit-shared.service.in"
		LD_UNIT_FILE=$T/unit-shared.service.in
		ld_start_unit
		LD_UNIT_FILE=$m_unit_file
		;;
	*)
		LD_DEPLOY=hand
		ld_start
		;;
	esac
}

# m_end_deploy: undo in the test's namespace whatever came there (ld_unleak: a file over
# /dev/null, say; the check that catches it came before), stop launcherd, and check that the
# real host's namespace did not change.
m_end_deploy() {
	ld_unleak
	ld_stop
	_m_after=$(ld_host_view $M_HOST_PATHS)
	if [ "$_m_after" = "$M_HOST_BEFORE" ]; then
		ok "$M_DEPLOY: the real host's mount namespace (PID 1's) is unchanged at $M_HOST_PATHS"
	else
		not_ok "$M_DEPLOY: the real host's mount namespace (PID 1's) changed"
		diag "before: $M_HOST_BEFORE"
		diag "after:  $_m_after"
	fi
}

# m_mounts_at WHERE PATH...: mount points at or beneath the PATHs, one per line (a stack of
# mounts at one point: that many lines), in launcherd's namespace (WHERE "ld") or the test's
# ("test").
m_mounts_at() {
	_m_w=$1
	shift
	if [ "$_m_w" = ld ]; then
		ld_mounts_at "/proc/$LD_PID/mountinfo" "$@" | awk '{ print $5 }' | sort
	else
		ld_mounts_at /proc/self/mountinfo "$@" | awk '{ print $5 }' | sort
	fi
}

# m_spawn NAME USER PLAN [--ns] [hostile-client --fd SPEC...]: spawn PLAN (make_plan's fds, then
# the --fd SPECs) as USER ("root" for root) and wait for its exit. --ns: the requester's mount
# namespace as the last fd, named by the plan's "mountNamespace". The client's output and the
# sandbox's in $T/NAME.out; the outcome on stdout: "exit CODE", "error CODE FIELD ERRNO", or
# "none".
m_spawn() {
	_m_name=$1
	_m_user=$2
	_m_plan=$3
	shift 3
	_m_ns=
	if [ "${1:-}" = --ns ]; then
		_m_ns=1
		shift
	fi
	# The fd count: six of M_FDS and one per --fd SPEC pair.
	_m_nfds=$((6 + $# / 2))
	if [ -n "$_m_ns" ]; then
		jq ".mountNamespace = $_m_nfds" "$_m_plan" >"$T/$_m_name.plan.json"
		set -- "$@" --fd mntns
	else
		cp "$_m_plan" "$T/$_m_name.plan.json"
	fi
	if [ "$_m_user" = root ]; then
		# shellcheck disable=SC2086
		hc $M_FDS "$@" --send "$T/$_m_name.plan.json" --wait-exit 2>>"$T/client.log" |
			cat >"$T/$_m_name.out"
	else
		# shellcheck disable=SC2086
		hc --user "$_m_user" $M_FDS "$@" --send "$T/$_m_name.plan.json" --wait-exit \
			2>>"$T/client.log" | cat >"$T/$_m_name.out"
	fi
	_m_o=$(m_outcome "$T/$_m_name.out")
	[ "$_m_o" != none ] ||
		diag "$_m_name: no outcome: $(tail -n 3 "$T/$_m_name.out" | tr '\n' ' ')" \
			"$(tail -n 3 "$T/client.log" | tr '\n' ' ')" >&2
	echo "$_m_o"
}

# m_outcome FILE: the outcome of the spawn in a hostile-client output FILE (see m_spawn).
m_outcome() {
	_m_o=$(grep '^{"' "$1" | jq -r 'if .type == "error" then "error \(.code) \(.field) \(.errno)"
		elif .type == "exit" then "exit \(.exitCode)" else empty end' 2>>"$T/client.log" |
		tail -n 1)
	echo "${_m_o:-none}"
}

# m_said NAME KEY: what the sandbox of m_spawn NAME printed as "@KEY:VALUE" lines (the VALUEs).
m_said() {
	sed -n "s/^@$2://p" "$T/$1.out"
}

# m_variants: the ways a requester may send a plan in this deployment, as m_spawn options:
# "plain" (no mountNamespace) and "ns" (with it).
M_VARIANTS="plain ns"
m_ns_opt() { [ "$1" = ns ] && echo --ns; }

# m_runs_variant VARIANT: the variant in which a plan must run in this deployment: by hand,
# "plain" (the sources are in launcherd's namespace); under the unit every bind source is in
# another namespace than launcherd's, and a plan must name the requester's: "ns".
m_runs_variant() {
	case $M_DEPLOY in
	unit*) echo ns ;;
	*) echo plain ;;
	esac
}

# m_add_mounts FILE JSON_ARRAY [LANDLOCK_FS_JSON_ARRAY]: append mounts (and Landlock rules) to
# a make_plan plan.
m_add_mounts() {
	jq --argjson m "$2" --argjson l "${3:-[]}" '.mounts += $m | .landlock.fs += $l' "$1" \
		>"$1.tmp" && mv "$1.tmp" "$1"
}

# m_sh_plan FILE COMMAND: make_plan running `sh -c COMMAND`.
m_sh_plan() {
	make_plan "$1" "$(jq -nc --arg c "$2" '["/bin/sh", "-c", $c]')"
}
