# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared helpers for the launcherd integration tests (sourced, POSIX sh + bash features avoided
# where cheap). Each test: `. launcherd-lib.sh`, `ld_require_root`, `ld_start`, `plan N`, run
# probes with `ld_run`, `ok`/`not_ok`.
#
# Where launcherd runs. Deployed, its mounts have shared propagation: started by hand on a
# systemd host it is in the host's mount namespace, whose / is shared; under
# cordon-launcherd.service it has a namespace of its own, which systemd makes a slave of the
# host's (and shared again unless MountFlags= says otherwise). Test machines often have every
# mount private, which would hide anything a sandbox's set-up lets propagate. So every test that
# sources this file as root runs in a mount namespace of its own: the script is run again under
# `unshare --mount`, whose mounts are first made private (from then on nothing mounted in it can
# reach the namespace it came from, the real host's on a developer's systemd machine, nor the
# reverse), then shared again with `mount --make-rshared /`. In that namespace, the test's
# "host":
#  - ld_start runs launcherd as an administrator would by hand: in the host namespace;
#  - ld_start_unit (ld_start too when LD_DEPLOY=unit) runs it as the unit does, emulated from
#    systemd/cordon-launcherd.service.in: see ld_start_unit. LD_DEPLOY=unit covers the spawns
#    made through $LP (launch-plan); those of other clients must name plan.mountNamespace
#    themselves.
# ld_host_view shows what the real host's namespace (PID 1's) has mounted, to check that it did
# not change (tests/hostile/mount-lib.sh does after each deployment).
# CORDON_TEST_OUTER_NS names the namespace the test was started in (and marks the re-exec);
# LD_SHARED is 1 once the test's namespace is the shared one made here.
set -u

if [ "$(id -u)" = 0 ] && [ -z "${CORDON_TEST_OUTER_NS:-}" ] && [ -f "$0" ] &&
	unshare --mount true 2>/dev/null; then
	CORDON_TEST_OUTER_NS=$(readlink /proc/self/ns/mnt)
	export CORDON_TEST_OUTER_NS
	exec unshare --mount --propagation private -- "$(readlink /proc/$$/exe)" "$0" "$@"
fi
LD_SHARED=0
# Never in the namespace the test was started in: only in the private one made above.
if [ -n "${CORDON_TEST_OUTER_NS:-}" ] && [ "$(readlink /proc/self/ns/mnt)" != "$CORDON_TEST_OUTER_NS" ] &&
	mount --make-rshared /; then
	LD_SHARED=1
fi
# The test namespace's mounts at the start (their ids): ld_unleak removes any other.
LD_OWN_MOUNTS=" $(awk '{ print $1 }' /proc/self/mountinfo | tr '\n' ' ') "
LD_DEPLOY=${LD_DEPLOY:-hand}

B=${CORDON_TEST_BINDIR:-${top_builddir:-.}}
S=${top_srcdir:-.}
LAUNCHERD=$B/cordon-launcherd
LP=$B/tests/helpers/launch-plan
HELPERS=$B/tests/helpers
PROBE=/probe/probe
TEST_USER1=cordon-test1
TEST_USER2=cordon-test2

_tap_n=0
_tap_failed=0
plan() { echo "1..$1"; }
ok() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $*"; }
not_ok() { _tap_n=$((_tap_n + 1)); _tap_failed=$((_tap_failed + 1)); echo "not ok $_tap_n - $*"; }
diag() { echo "# $*"; }
# check DESCRIPTION COMMAND...: ok when the command succeeds.
check() { d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }

skip_all() {
	if [ "${CORDON_MUST_WORK:-0}" = 1 ]; then
		echo "1..1"
		echo "not ok 1 - cannot run: $* (CORDON_MUST_WORK=1)"
		exit 1
	fi
	echo "1..0 # SKIP $*"
	exit 0
}

ld_require_root() {
	[ "$(id -u)" = 0 ] || skip_all "needs root (privileged launcherd, test users)"
	[ -x "$LAUNCHERD" ] || skip_all "no $LAUNCHERD"
	for u in $TEST_USER1 $TEST_USER2; do
		id "$u" >/dev/null 2>&1 || useradd -M -s /bin/sh "$u" 2>/dev/null ||
			skip_all "cannot create test user $u"
	done
}

# ld_reap_bg PID...: give each background process we started 5 s to end, then SIGKILL it;
# reap it either way.
ld_reap_bg() {
	for p in "$@"; do
		for _ in $(seq 1 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
}

T=$(mktemp -d /tmp/cordon-ld-test.XXXXXX)
chmod 1777 "$T"
LD_PID=
LD_UNIT_CGS=
# The clean-up does not use /dev/null: a mount that propagated out of a sandbox may have replaced
# it in the test's namespace, and a redirection that fails skips its command.
ld_cleanup() {
	ld_unleak
	ld_stop
	rm -rf "$T"
}
trap ld_cleanup EXIT

# ld_unleak: in the test's namespace (only there: LD_SHARED), unmount every mount that was not
# there when the test started: what a sandbox's set-up let propagate (the check that catches it
# comes before) or what a test mounted and left. Deepest first, a stack at one point in turn.
ld_unleak() {
	[ "$LD_SHARED" = 1 ] || return 0
	for _ in $(seq 1 20); do
		_ld_m=$(awk -v own="$LD_OWN_MOUNTS" 'index(own, " " $1 " ") == 0 { print length($5), $5 }' \
			/proc/self/mountinfo | sort -rn | awk '{ print $2 }')
		[ -n "$_ld_m" ] || return 0
		for m in $_ld_m; do
			umount -l "$m" 2>&-
		done
	done
}

# A floor that requires nothing (tests that check the floor write their own). Without root it
# could not be root-owned, which launcherd insists on: no file then (the built-in defaults).
if [ "$(id -u)" = 0 ]; then
	printf '{}\n' >"$T/floor.json"
	chmod 0644 "$T/floor.json"
fi

# _ld_wait_ready: launcherd ($LD_PID) is ready once it logged its start line, which comes after
# listen(); else bail out.
_ld_wait_ready() {
	for _ in $(seq 1 100); do
		[ -S "$T/ld.sock" ] && grep -q ' mode, Landlock' "$T/launcherd.log" && return 0
		kill -0 "$LD_PID" 2>/dev/null || break
		sleep 0.05
	done
	cat "$T/launcherd.log" >&2
	echo "Bail out! launcherd did not start ($LD_DEPLOY)"
	exit 1
}

# ld_start [launcherd options]: privileged launcherd on $T/ld.sock, started by hand in the
# test's namespace; as the unit runs it (ld_start_unit) when LD_DEPLOY=unit.
ld_start() {
	if [ "$LD_DEPLOY" = unit ]; then
		ld_start_unit "$@"
		return
	fi
	rm -f "$T/ld.sock"
	[ -f "$T/launcherd.log" ] && cat "$T/launcherd.log" >>"$T/launcherd.old.log"
	: >"$T/launcherd.log"
	"$LAUNCHERD" --socket "$T/ld.sock" --floor "$T/floor.json" "$@" 2>>"$T/launcherd.log" &
	LD_PID=$!
	_ld_wait_ready
}

# --- the unit, emulated ----------------------------------------------------------------------
# ld_start_unit [launcherd options] starts launcherd on $T/ld.sock the way systemd runs
# cordon-launcherd.service, with the values read from the unit file (LD_UNIT_FILE, by default
# systemd/cordon-launcherd.service.in), so that the emulation follows the unit:
#  - socket activation: the listening socket made here, passed as fd 3 (LISTEN_FDS/LISTEN_PID);
#    the ExecStart= line's arguments;
#  - a mount namespace of its own made as systemd makes it: a copy of the test's (shared)
#    namespace made a slave of it (`mount --make-rslave /`); ProtectSystem= (for "strict"
#    every mount remounted read-only but /dev, /proc and /sys) and ProtectHome= ("read-only":
#    /home, /root and /run/user bound onto themselves where they are not mount points, then
#    read-only); then the propagation MountFlags= says (shared, systemd's default: `mount
#    --make-rshared /`; slave: left so; private: `mount --make-rprivate /`);
#  - a cgroup of its own for the "unit" in the pids and memory hierarchies (v1), or in the v2
#    hierarchy where pids and memory can be delegated from the test's cgroup (the root), with
#    pids.max from TasksMax= (systemd's DefaultTasksMax=15% when the unit sets none); launcherd
#    is in it as the unit's main process is (Delegate=: what is beneath is its own). On stop,
#    everything left in it is killed (KillMode=control-group) and it is removed;
#  - the Limit*= values (LimitNOFILE=1024:524288 and LimitMEMLOCK=8M, systemd's defaults, when
#    the unit sets none), CapabilityBoundingSet= (setpriv --bounding-set), NoNewPrivileges=.
# Not emulated: the seccomp-based options (SystemCallArchitectures=, RestrictAddressFamilies=
# …), SELinux transitions. A setting the emulation cannot follow (PrivateTmp=yes, an unknown
# ProtectSystem= value, a Limit it cannot convert) bails out: it never runs something else.
LD_UNIT_FILE=${LD_UNIT_FILE:-$S/systemd/cordon-launcherd.service.in}

# ld_unit_values KEY: each value of KEY= in the unit's [Service] section, in order.
ld_unit_values() {
	awk -v k="$1" '
		/^[ \t]*[#;]/ { next }
		/^\[/ { svc = ($0 ~ /^\[Service\]/); next }
		svc && index($0, k "=") == 1 { print substr($0, length(k) + 2) }
	' "$LD_UNIT_FILE"
}

# ld_unit_value KEY DEFAULT: the last value of KEY=, or DEFAULT.
ld_unit_value() {
	_ld_v=$(ld_unit_values "$1" | tail -n 1)
	echo "${_ld_v:-$2}"
}

_ld_bail() {
	echo "Bail out! unit emulation ($LD_UNIT_FILE): $*"
	exit 1
}

# ld_unit_bounding_set: CapabilityBoundingSet= as a setpriv --bounding-set argument; empty when
# the unit does not restrict it. An empty assignment resets the list; "~" drops the capabilities
# listed instead (systemd.exec(5)).
ld_unit_bounding_set() {
	_ld_caps=
	_ld_inv=
	_ld_any=
	for _ld_line in $(ld_unit_values CapabilityBoundingSet | sed 's/^$/@reset/; s/^~/~ /'); do
		case $_ld_line in
		@reset) _ld_caps='' _ld_inv='' _ld_any='' ;;
		'~') _ld_inv=1 _ld_any=1 ;;
		CAP_*) _ld_caps="$_ld_caps $_ld_line" _ld_any=1 ;;
		*) _ld_bail "CapabilityBoundingSet=: $_ld_line is not a capability" ;;
		esac
	done
	[ -n "$_ld_any" ] || return 0
	if [ -n "$_ld_inv" ]; then
		_ld_out=+all
		_ld_sign=-
	else
		_ld_out=-all
		_ld_sign=+
	fi
	for c in $_ld_caps; do
		_ld_out="$_ld_out,$_ld_sign$(echo "${c#CAP_}" | tr 'A-Z' 'a-z')"
	done
	echo "$_ld_out"
}

# _ld_rlim VALUE: one systemd resource limit value as prlimit wants it.
_ld_rlim() {
	case $1 in
	infinity) echo unlimited ;;
	'' | [!0-9]* | *[!0-9KMGT] | *[!0-9]*[0-9KMGT]) return 1 ;;
	*K) echo $((${1%K} * 1024)) ;;
	*M) echo $((${1%M} * 1024 * 1024)) ;;
	*G) echo $((${1%G} * 1024 * 1024 * 1024)) ;;
	*T) echo $((${1%T} * 1024 * 1024 * 1024 * 1024)) ;;
	*) echo "$1" ;;
	esac
}

# _ld_rlim_min A B: the smaller of two prlimit values.
_ld_rlim_min() {
	if [ "$1" = unlimited ]; then
		echo "$2"
	elif [ "$2" = unlimited ] || [ "$1" -le "$2" ]; then
		echo "$1"
	else
		echo "$2"
	fi
}

# ld_unit_prlimit_args: the unit's Limit*= values (and systemd's defaults for NOFILE and
# MEMLOCK) as prlimit options, one per line. Where the test itself runs under a lower hard limit
# than the unit asks for, and cannot raise it (no CAP_SYS_RESOURCE in its bounding set, as in
# some containers), the value is lowered to it, with a diagnostic.
ld_unit_prlimit_args() {
	_ld_raise=$(((0x$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status) >> 24) & 1))
	for l in NOFILE:1024:524288 MEMLOCK:8M CPU FSIZE DATA STACK CORE RSS NPROC AS LOCKS \
		SIGPENDING MSGQUEUE NICE RTPRIO RTTIME; do
		_ld_key=${l%%:*}
		_ld_opt=--$(echo "$_ld_key" | tr 'A-Z' 'a-z')
		_ld_def=
		[ "$_ld_key" = "$l" ] || _ld_def=${l#*:}
		_ld_v=$(ld_unit_value "Limit$_ld_key" "$_ld_def")
		[ -n "$_ld_v" ] || continue
		_ld_soft=${_ld_v%%:*}
		_ld_hard=${_ld_v#*:}
		_ld_s=$(_ld_rlim "$_ld_soft") && _ld_h=$(_ld_rlim "$_ld_hard") ||
			_ld_bail "Limit$_ld_key=$_ld_v: not a value this emulation converts"
		if [ "$_ld_raise" = 0 ]; then
			_ld_cur=$(prlimit "$_ld_opt" -o HARD --noheadings --raw)
			_ld_h2=$(_ld_rlim_min "$_ld_h" "$_ld_cur")
			if [ "$_ld_h2" != "$_ld_h" ]; then
				diag "unit emulation: Limit$_ld_key=$_ld_v lowered to our hard limit $_ld_cur (no CAP_SYS_RESOURCE here)" >&2
				_ld_h=$_ld_h2
				_ld_s=$(_ld_rlim_min "$_ld_s" "$_ld_h")
			fi
		fi
		echo "$_ld_opt=$_ld_s:$_ld_h"
	done
}

# ld_unit_tasks_max: TasksMax= as a pids.max value (systemd's DefaultTasksMax=15% of the
# smaller of kernel.pid_max and kernel.threads-max when unset).
ld_unit_tasks_max() {
	_ld_v=$(ld_unit_value TasksMax 15%)
	case $_ld_v in
	infinity) echo max ;;
	*%)
		_ld_pm=$(cat /proc/sys/kernel/pid_max)
		_ld_tm=$(cat /proc/sys/kernel/threads-max)
		[ "$_ld_tm" -lt "$_ld_pm" ] && _ld_pm=$_ld_tm
		echo $((_ld_pm * ${_ld_v%\%} / 100))
		;;
	'' | *[!0-9]*) _ld_bail "TasksMax=$_ld_v: not a value this emulation converts" ;;
	*) echo "$_ld_v" ;;
	esac
}

# _ld_unit_cgroup: make the unit's cgroups (LD_UNIT_CGS: one directory per hierarchy, for
# launcherd), with pids.max from TasksMax=. None (and a diagnostic) where the host's layout
# has no place for them.
_ld_unit_cgroup() {
	LD_UNIT_CGS=
	_ld_name=cordon-unit.$$
	_ld_tasks=$(ld_unit_tasks_max)
	_ld_own_p=$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup)
	_ld_own_m=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
	_ld_own_2=$(sed -n 's/^0:://p' /proc/self/cgroup)
	if [ -n "$_ld_own_p" ] && [ -n "$_ld_own_m" ] && [ -d /sys/fs/cgroup/pids ] &&
		[ -d /sys/fs/cgroup/memory ]; then
		_ld_p=/sys/fs/cgroup/pids${_ld_own_p%/}/$_ld_name
		_ld_m=/sys/fs/cgroup/memory${_ld_own_m%/}/$_ld_name
		{ mkdir "$_ld_p" && LD_UNIT_CGS=$_ld_p && mkdir "$_ld_m" &&
			LD_UNIT_CGS="$LD_UNIT_CGS $_ld_m" && echo "$_ld_tasks" >"$_ld_p/pids.max"; } ||
			_ld_bail "cannot make the unit's v1 cgroups ($_ld_p, $_ld_m)"
	elif [ -f /sys/fs/cgroup/cgroup.controllers ] && [ "$_ld_own_2" = / ] &&
		grep -qw pids /sys/fs/cgroup/cgroup.controllers &&
		grep -qw memory /sys/fs/cgroup/cgroup.controllers &&
		echo "+pids +memory" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
		_ld_p=/sys/fs/cgroup/$_ld_name
		{ mkdir "$_ld_p" && LD_UNIT_CGS=$_ld_p && echo "$_ld_tasks" >"$_ld_p/pids.max"; } ||
			_ld_bail "cannot make the unit's cgroup $_ld_p"
	else
		diag "unit emulation: no cgroup for the unit on this host's layout" \
			"(v1 pids '$_ld_own_p', memory '$_ld_own_m'; v2 '$_ld_own_2')"
	fi
}

# _ld_unit_cgroup_stop: KillMode=control-group (every process left in the unit's cgroups is one
# of launcherd's), then the cgroups removed.
_ld_unit_cgroup_stop() {
	[ -n "$LD_UNIT_CGS" ] || return 0
	for _ in $(seq 1 50); do
		# shellcheck disable=SC2086
		_ld_left=$(find $LD_UNIT_CGS -name cgroup.procs -exec cat {} + 2>&-)
		[ -n "$_ld_left" ] || break
		# shellcheck disable=SC2086
		kill -9 $_ld_left 2>&-
		sleep 0.1
	done
	for _ in $(seq 1 50); do
		# shellcheck disable=SC2086
		find $LD_UNIT_CGS -depth -type d -exec rmdir {} + 2>&-
		_ld_gone=1
		for c in $LD_UNIT_CGS; do
			[ -d "$c" ] && _ld_gone=
		done
		[ -n "$_ld_gone" ] && break
		sleep 0.1
	done
	[ -n "$_ld_gone" ] || diag "unit emulation: could not remove $LD_UNIT_CGS"
	LD_UNIT_CGS=
}

# Run as root in the unit's new mount namespace (a copy of the test's): $1 ProtectSystem=,
# $2 ProtectHome=, $3 MountFlags=, $4 the unit's cgroups; then exec the rest.
_LD_UNIT_NS='set -e
protect_system=$1 protect_home=$2 mount_flags=$3 cgs=$4
shift 4
mount --make-rslave /
# ro_tree DIR: DIR and every mount beneath it read-only (for / but /dev, /proc and /sys); DIR
# bound onto itself first where it is not a mount point.
ro_tree() {
	[ -e "$1" ] || return 0
	mountpoint -q "$1" || mount --rbind "$1" "$1"
	findmnt -rn -o TARGET | while read -r m; do
		m=$(printf "%b" "$m")
		if [ "$1" = / ]; then
			case $m in
			/dev | /dev/* | /proc | /proc/* | /sys | /sys/*) continue ;;
			esac
		else
			case $m in
			"$1" | "$1"/*) ;;
			*) continue ;;
			esac
		fi
		mount -o remount,bind,ro "$m"
	done
}
case $protect_system in
strict) ro_tree / ;;
full) for d in /usr /boot /efi /etc; do ro_tree $d; done ;;
yes | true) for d in /usr /boot /efi; do ro_tree $d; done ;;
no | false) ;;
*) echo "ProtectSystem=$protect_system: not emulated" >&2; exit 1 ;;
esac
case $protect_home in
read-only) for d in /home /root /run/user; do ro_tree $d; done ;;
yes | true | tmpfs)
	for d in /home /root /run/user; do
		[ ! -d $d ] || mount -t tmpfs -o ro,mode=0755,nosuid,nodev tmpfs $d
	done
	;;
no | false) ;;
*) echo "ProtectHome=$protect_home: not emulated" >&2; exit 1 ;;
esac
case $mount_flags in
shared) mount --make-rshared / ;;
slave) ;;
private) mount --make-rprivate / ;;
*) echo "MountFlags=$mount_flags: not emulated" >&2; exit 1 ;;
esac
for c in $cgs; do echo $$ >"$c/cgroup.procs"; done
exec "$@"'

# The listening socket as the .socket unit makes it, given as fd 3 to the rest of the command
# line, with LISTEN_PID (one process all along: every step execs the next) and LISTEN_FDS.
_LD_ACTIVATE='import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
s.listen(128)
if s.fileno() != 3:
    os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.environ["LISTEN_PID"] = str(os.getpid())
os.environ["LISTEN_FDS"] = "1"
os.execvp(sys.argv[2], sys.argv[2:])'

# Under the unit every bind source is in another mount namespace than launcherd's, and a plan
# must name the requester's: while a unit runs, $LP is this wrapper of launch-plan, which gives a
# plan that names none the requester's namespace (launch-plan's own, opened by it with --fd-open
# at the next free index) as plan.mountNamespace, in a copy of the plan in $dir. $lp: the real
# launch-plan.
_LD_LP_UNIT='plan=
next=3
expect=
for a in "$@"; do
	if [ -n "$expect" ]; then
		case $expect in
		fd) i=${a%%=*}; [ "$i" -ge "$next" ] && next=$((i + 1)) ;;
		esac
		expect=
		continue
	fi
	case $a in
	--user-mode | --raw | --hello | --kill | --kill=* | --raw=*) exec "$lp" "$@" ;;
	--fd | --fd-open | --seccomp) expect=fd ;;
	--fd=* | --fd-open=* | --seccomp=*) i=${a#*=}; i=${i%%=*}; [ "$i" -ge "$next" ] && next=$((i + 1)) ;;
	--*=*) ;;
	--*) expect=value ;;
	*) plan=$a ;;
	esac
done
if [ -z "$plan" ] || ! jq -e "has(\"argv\") and (has(\"mountNamespace\") | not)" "$plan" >/dev/null 2>&1; then
	exec "$lp" "$@"
fi
out=$dir/lp-unit.$(id -u).$$.json
jq ".mountNamespace = $next" "$plan" >"$out" || exit 1
i=0
for a in "$@"; do
	[ $i = 0 ] && set --
	i=$((i + 1))
	[ "$a" = "$plan" ] && a=$out
	set -- "$@" "$a"
done
exec "$lp" "$@" --fd-open "$next=/proc/self/ns/mnt"'

ld_start_unit() {
	command -v python3 >/dev/null || skip_all "python3 missing (the unit emulation's socket)"
	{ command -v setpriv && command -v prlimit && command -v findmnt && command -v mountpoint; } \
		>/dev/null || skip_all "setpriv, prlimit, findmnt or mountpoint missing (unit emulation)"
	case $(ld_unit_value PrivateTmp no) in
	no | false) ;;
	*) _ld_bail "PrivateTmp=$(ld_unit_value PrivateTmp no): not emulated" ;;
	esac
	_ld_args=$(ld_unit_value ExecStart '' | sed 's/^[-@:+!]*[^ ]*//')
	_ld_bset=$(ld_unit_bounding_set)
	_ld_nnp=
	case $(ld_unit_value NoNewPrivileges no) in
	yes | true | 1) _ld_nnp=--no-new-privs ;;
	esac
	_ld_limits=$(ld_unit_prlimit_args)
	_ld_unit_cgroup
	rm -f "$T/ld.sock"
	[ -f "$T/launcherd.log" ] && cat "$T/launcherd.log" >>"$T/launcherd.old.log"
	: >"$T/launcherd.log"
	# shellcheck disable=SC2086 # the unit's arguments and limits, split as words
	python3 -c "$_LD_ACTIVATE" "$T/ld.sock" \
		unshare --mount --propagation unchanged -- \
		sh -c "$_LD_UNIT_NS" sh "$(ld_unit_value ProtectSystem no)" \
		"$(ld_unit_value ProtectHome no)" "$(ld_unit_value MountFlags shared)" "$LD_UNIT_CGS" \
		prlimit $_ld_limits -- \
		setpriv ${_ld_bset:+--bounding-set "$_ld_bset"} $_ld_nnp -- \
		"$LAUNCHERD" $_ld_args --socket "$T/ld.sock" --floor "$T/floor.json" "$@" \
		2>>"$T/launcherd.log" &
	LD_PID=$!
	LD_DEPLOY=unit
	_ld_wait_ready
	if [ "$LP" = "$B/tests/helpers/launch-plan" ]; then
		printf '#!/bin/sh\nlp=%s\ndir=%s\n%s\n' "$LP" "$T" "$_LD_LP_UNIT" >"$T/launch-plan-unit"
		chmod 0755 "$T/launch-plan-unit"
		LP=$T/launch-plan-unit
	fi
}

ld_stop() {
	if [ -n "$LD_PID" ]; then
		kill "$LD_PID" 2>&-
		wait "$LD_PID" 2>&-
		LD_PID=
	fi
	_ld_unit_cgroup_stop
	[ "$LP" != "$T/launch-plan-unit" ] || LP=$B/tests/helpers/launch-plan
}

# ld_mounts_at MOUNTINFO PATH...: the lines of MOUNTINFO (a /proc/PID/mountinfo) whose mount
# point is one of the PATHs or beneath one.
ld_mounts_at() {
	_ld_f=$1
	shift
	awk -v paths="$*" '
		BEGIN { n = split(paths, p, " ") }
		{ for (i = 1; i <= n; i++) if ($5 == p[i] || index($5, p[i] "/") == 1) { print; next } }
	' "$_ld_f"
}

# ld_host_view PATH...: what the namespace the test was started in (PID 1's: the real host's)
# has mounted at or beneath the PATHs (mount point, root, type and source), sorted. A snapshot
# taken before a test and one after must be the same: nothing a test does may reach it.
ld_host_view() {
	ld_mounts_at /proc/1/mountinfo "$@" | awk '{ s = $0; sub(/.* - /, "", s); print $5, $4, s }' |
		sort
}

# as_user USER COMMAND...: run as an ordinary user with no supplementary groups.
as_user() {
	u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --clear-groups --reset-env -- "$@"
}

# as_user_exec USER COMMAND...: as_user, replacing the (sub)shell: for `as_user_exec … &`, so
# that $! is the command itself.
as_user_exec() {
	u=$1
	shift
	exec setpriv --reuid="$u" --regid="$u" --clear-groups --reset-env -- "$@"
}

# make_plan FILE ARGV_JSON [EXTRA_JSON_MEMBERS]: the standard sandbox used by the probes:
# /usr read-only (fd 3) with the merged-/usr links, the probes read-only at /probe (fd 4), a
# writable bind at /work (fd 5), a private /tmp, proc, dev, Landlock over all of it,
# network "unix" (no socket but AF_UNIX). EXTRA is spliced in as more members (", \"cgroup\": {...}").
make_plan() {
	mp_file=$1
	mp_argv=$2
	mp_extra=${3:-}
	cat >"$mp_file" <<EOF
{"argv": $mp_argv,
 "envp": ["PATH=/usr/bin:/bin:/probe", "HOME=/tmp"],
 "cwd": "/",
 "stdio": {"stdin": 0, "stdout": 1, "stderr": 2},
 "mounts": [
  {"type": "bind", "source": 3, "target": "/usr"},
  {"type": "symlink", "target": "/bin", "link": "usr/bin"},
  {"type": "symlink", "target": "/lib", "link": "usr/lib"},
  {"type": "symlink", "target": "/lib64", "link": "usr/lib64"},
  {"type": "symlink", "target": "/sbin", "link": "usr/sbin"},
  {"type": "bind", "source": 4, "target": "/probe"},
  {"type": "bind", "source": 5, "target": "/work", "readOnly": false},
  {"type": "deny", "target": "/work/secret"},
  {"type": "tmpfs", "target": "/tmp"},
  {"type": "proc", "target": "/proc"},
  {"type": "dev", "target": "/dev"}
 ],
 "landlock": {"required": true,
  "fs": [
   {"path": "/", "access": ["read-dir"]},
   {"path": "/usr", "access": ["execute", "read-file", "read-dir"]},
   {"path": "/probe", "access": ["execute", "read-file", "read-dir"]},
   {"path": "/work", "access": ["read-file", "read-dir", "write-file", "make-reg", "make-dir",
     "make-sym", "remove-file", "remove-dir", "truncate", "refer"]},
   {"path": "/tmp", "access": ["read-file", "read-dir", "write-file", "make-reg", "make-dir",
     "make-sym", "remove-file", "remove-dir", "truncate", "refer"]},
   {"path": "/dev", "access": ["read-file", "write-file", "read-dir", "ioctl-dev"]},
   {"path": "/proc", "access": ["read-file", "read-dir"]}],
  "net": {"bindTcp": [], "connectTcp": []},
  "scope": ["abstract-unix-socket", "signal"]},
 "network": "unix",
 "dieWithRequester": true$mp_extra
}
EOF
}

# The writable directory bound at /work, and a file next to it that must stay out of reach.
mkdir -p "$T/work" "$T/outside" "$T/work/secret"
echo "top secret" >"$T/work/secret/key"
echo "outside" >"$T/outside/file"
chmod -R a+rwX "$T/work" "$T/outside"

# ld_run [--user U] [--user-mode] [launch-plan options] PLAN: run a plan against our launcherd
# with the standard fds. Result JSON in $T/result.json; status in $?.
ld_run() {
	who=
	mode=socket
	while :; do
		case "$1" in
		--user) who=$2; shift 2 ;;
		--user-mode) mode=user; shift ;;
		*) break ;;
		esac
	done
	rm -f "$T/result.json"
	if [ "$mode" = user ]; then
		set -- "$LP" --user-mode "$LAUNCHERD" --floor "$T/floor.json" "$@"
	else
		set -- "$LP" --socket "$T/ld.sock" "$@"
	fi
	if [ -n "$who" ]; then
		as_user "$who" "$@" --result "$T/result.json" 2>>"$T/client.log"
	else
		"$@" --result "$T/result.json" 2>>"$T/client.log"
	fi
}

# Standard fds for make_plan plans.
STD_FDS="--fd 3=/usr --fd 4=$HELPERS --fd 5=$T/work"

# json_field KEY: a top-level field of $T/result.json.
json_field() { jq -r ".$1" "$T/result.json" 2>/dev/null; }

# probe_refused DESC [run options] -- PROBE ARGS: the probe must exit 1 (refused).
probe_refused() {
	desc=$1
	shift
	opts=
	extra=
	# Mode options (--user U, --user-mode) go first, fd options after the standard fds.
	while [ "$1" != "--" ]; do
		case "$1" in
		--user) opts="$opts $1 $2"; shift ;;
		--user-mode) opts="$opts $1" ;;
		*) extra="$extra $1" ;;
		esac
		shift
	done
	shift
	make_plan "$T/p.json" "$(printf '%s\n' "$@" | jq -R . | jq -s -c '["/probe/probe"] + .')"
	# A "--seccomp N=FILE" fd is the plan's own seccomp program.
	case "$extra" in
	*--seccomp\ *)
		n=${extra#*--seccomp }
		jq ".seccomp = {\"program\": ${n%%=*}}" "$T/p.json" >"$T/p2.json" && mv "$T/p2.json" "$T/p.json"
		;;
	esac
	# shellcheck disable=SC2086
	ld_run $opts $STD_FDS $extra "$T/p.json" >"$T/probe.out" 2>&1
	rc=$?
	# Exit 1 from the probe itself, as the exit report confirms (launch-plan also exits 1 for
	# its own failures, which must not count as a refusal).
	if [ "$rc" = 1 ] && [ "$(json_field type)/$(json_field exitCode)" = exit/1 ]; then
		ok "$desc"
	else
		not_ok "$desc (probe exit $rc: $(cat "$T/probe.out" | head -3))"
		[ -f "$T/result.json" ] && diag "$(cat "$T/result.json")"
	fi
}

tap_done() {
	[ "$_tap_failed" = 0 ]
}

# Sandbox cgroups are shared by every launcherd on the host, and make check runs tests in
# parallel: count as leaked only a cgroup that appeared since cg_snapshot, holds no process, and
# is still there, still empty, 6 s later. Another test's sandbox has either started or been
# removed by then: launcherd retries the removal of a cgroup a dying task still pins for 5 s at
# most (a v1 memory cgroup after an OOM kill can take a while), so only a real leak outlasts it.
cg_list() {
	ls -d /sys/fs/cgroup/pids/cordon/sb-* /sys/fs/cgroup/memory/*/*/cordon/sb-* \
		/sys/fs/cgroup/memory/cordon/sb-* /sys/fs/cgroup/pids/cordon-unit.*/cordon/sb-* \
		/sys/fs/cgroup/memory/*/*/cordon-unit.*/cordon/sb-* \
		/sys/fs/cgroup/memory/cordon-unit.*/cordon/sb-* /sys/fs/cgroup/cordon-unit.*/cordon/sb-* \
		2>/dev/null | sort
}
cg_snapshot() { cg_list >"$1"; }
cg_empty() { [ -d "$1" ] && [ ! -s "$1/cgroup.procs" ]; }
cg_leaked_since() {
	local d n=0 suspects= left
	sleep 0.3
	for d in $(comm -13 "$1" <(cg_list)); do
		cg_empty "$d" && suspects="$suspects $d"
	done
	for _ in $(seq 1 60); do
		[ -n "$suspects" ] || break
		left=
		for d in $suspects; do
			cg_empty "$d" && left="$left $d"
		done
		suspects=$left
		[ -n "$suspects" ] && sleep 0.1
	done
	for d in $suspects; do
		n=$((n + 1))
	done
	echo $n
}

# launcherd's open fds, less the prepared network and mount namespaces of its pool: the
# pool is refilled in the background, so those come and go by design and are not leaks.
ld_fd_count() {
	local f n=0
	for f in /proc/$LD_PID/fd/*; do
		case "$(readlink "$f" 2>/dev/null)" in
		net:\[* | mnt:\[*) ;;
		*) n=$((n + 1)) ;;
		esac
	done
	echo $n
}
