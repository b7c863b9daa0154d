#!/bin/sh
# The systemd units: systemd-analyze verify of each built unit (no running systemd needed), the
# hardening the units promise, and CapabilityBoundingSet= against what cordon-launcherd needs:
# the needed_caps[]/optional_caps[] tables in launcherd/launcherd-main.c (statically), and, as
# root, the built launcherd started with exactly that bounding set (it must pass its capability
# check) and with each needed capability missing (it must refuse, naming it).
#
# Skips (1..0) when systemd-analyze is missing; with CORDON_MUST_WORK=1 (CI) that is a failure.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/integration/tap-lib.sh"
. "$top_srcdir/tests/integration/launcherd-caps-lib.sh"


command -v systemd-analyze >/dev/null 2>&1 || skip_all "systemd-analyze not found (Debian: systemd)"
# Generated units are in the build tree; the static ones (socket, sysusers entry) in the source.
units="$top_builddir/systemd"
for u in cordon-launcherd.service cordon-controller.service; do
	[ -f "$units/$u" ] || skip_all "systemd/$u not built (make)"
done
sock="$top_srcdir/systemd/cordon-launcherd.socket"
sysusers="$top_srcdir/systemd/sysusers/cordon.conf"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cordon-units.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
# The value of Key= in a unit file (last assignment wins, as in systemd).
unit_get() {
	sed -n "s/^$2=//p" "$1" | tail -n 1
}
words_sorted() {
	printf '%s\n' $1 | sort -u | tr '\n' ' '
}

echo "1..14"

# --- systemd-analyze verify --------------------------------------------------------------------
# verify insists that ExecStart= names an executable: point it at the build tree's binary, or at
# a stand-in when that binary is not built yet (the unit's syntax is what is verified here).
mkdir -p "$tmp/system" "$tmp/user" "$tmp/bin" "$tmp/xdg"
chmod 0700 "$tmp/xdg"
standins=""
retarget() { # unit, destination
	exe=$(unit_get "$1" ExecStart | sed 's/^[-@:+!]*//; s/ .*//')
	name=${exe##*/}
	if [ -x "$top_builddir/$name" ]; then
		new="$top_builddir/$name"
	else
		new="$tmp/bin/$name"
		printf '#!/bin/sh\nexit 0\n' >"$new"
		chmod +x "$new"
		standins="$standins $name"
	fi
	sed "s|^ExecStart=\\([-@:+!]*\\)$exe|ExecStart=\\1$new|" "$1" >"$2"
}
cp "$sock" "$tmp/system/"
retarget "$units/cordon-launcherd.service" "$tmp/system/cordon-launcherd.service"
retarget "$units/cordon-controller.service" "$tmp/user/cordon-controller.service"
[ -z "$standins" ] || diag "ExecStart= stand-in (not built yet):$standins"

out=$(cd "$tmp/system" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no \
	./cordon-launcherd.socket ./cordon-launcherd.service 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$out" ]
ok $? "systemd-analyze verify cordon-launcherd.socket cordon-launcherd.service (no diagnostics)"
[ -z "$out" ] || diag "$out"

out=$(cd "$tmp/user" && XDG_RUNTIME_DIR="$tmp/xdg" SYSTEMD_LOG_LEVEL=notice \
	systemd-analyze --user verify --man=no ./cordon-controller.service 2>&1)
rc=$?
[ $rc -eq 0 ] && [ -z "$out" ]
ok $? "systemd-analyze --user verify cordon-controller.service (no diagnostics)"
[ -z "$out" ] || diag "$out"

left=$(grep -l '@[a-z_]*@' "$units/cordon-launcherd.service" "$units/cordon-controller.service")
[ -z "$left" ]
ok $? "every @variable@ in the .in units was substituted"
[ -z "$left" ] || diag "$left"

# --- the socket --------------------------------------------------------------------------------
[ "$(unit_get "$sock" ListenSequentialPacket)" = "%t/cordon/launcherd.sock" ] &&
	[ "$(unit_get "$sock" SocketGroup)" = cordon ] &&
	[ "$(unit_get "$sock" SocketMode)" = 0660 ] &&
	[ "$(unit_get "$sock" Accept)" != yes ]
ok $? "the socket: SOCK_SEQPACKET at %t/cordon/launcherd.sock, group cordon, mode 0660, one service"

if command -v systemd-sysusers >/dev/null 2>&1; then
	mkdir -p "$tmp/sysroot/etc"
	systemd-sysusers --root="$tmp/sysroot" "$sysusers" >/dev/null 2>&1 &&
		grep -q '^cordon:' "$tmp/sysroot/etc/group"
	ok $? "sysusers.d/cordon.conf creates the cordon group (systemd-sysusers --root)"
else
	skip "systemd-sysusers not found"
fi

# --- hardening ---------------------------------------------------------------------------------
svc="$units/cordon-launcherd.service"
bad=""
want() { # key value
	[ "$(unit_get "$svc" "$1")" = "$2" ] || bad="$bad $1=$(unit_get "$svc" "$1")(want $2)"
}
want NoNewPrivileges yes
want ProtectSystem strict
want ProtectHome read-only
want SystemCallArchitectures native
want LockPersonality yes
want Type simple
[ -z "$bad" ]
ok $? "launcherd: NoNewPrivileges=yes ProtectSystem=strict ProtectHome=read-only SystemCallArchitectures=native LockPersonality=yes"
[ -z "$bad" ] || diag "$bad"

# launcherd uses AF_UNIX and AF_NETLINK; the filter is inherited by sandboxes, whose loopback
# and proxy networking need AF_INET/AF_INET6 (see the unit's comment). Nothing else.
fam=$(words_sorted "$(unit_get "$svc" RestrictAddressFamilies)")
[ "$fam" = "$(words_sorted "AF_UNIX AF_NETLINK AF_INET AF_INET6")" ]
ok $? "RestrictAddressFamilies= is AF_UNIX AF_NETLINK (launcherd) + AF_INET AF_INET6 (sandboxes)"

# Options whose seccomp filters sandboxes would inherit and that break them: JIT compilers
# (MemoryDenyWriteExecute=yes), the hostname step (ProtectHostname=), clone3 (RestrictNamespaces=).
bad=""
[ "$(unit_get "$svc" MemoryDenyWriteExecute)" = no ] || bad="$bad MemoryDenyWriteExecute"
[ "$(unit_get "$svc" PrivateTmp)" = no ] || bad="$bad PrivateTmp"
grep -qE '^(ProtectHostname|RestrictNamespaces|SystemCallFilter|PrivateNetwork|PrivateUsers)=' "$svc" &&
	bad="$bad $(grep -oE '^(ProtectHostname|RestrictNamespaces|SystemCallFilter|PrivateNetwork|PrivateUsers)=' "$svc" | tr '\n' ' ')"
[ -z "$bad" ]
ok $? "launcherd: no option that sandboxes would inherit and break (MemoryDenyWriteExecute=no, PrivateTmp=no, no ProtectHostname/RestrictNamespaces/...)"
[ -z "$bad" ] || diag "$bad"

[ "$(unit_get "$svc" Delegate)" = "pids memory" ] && [ -z "$(unit_get "$svc" User)" ]
ok $? "launcherd runs as root with a delegated cgroup subtree (Delegate=pids memory)"

# --- CapabilityBoundingSet= against launcherd --------------------------------------------------
bset=$(unit_get "$svc" CapabilityBoundingSet)
expected=$(words_sorted "$(launcherd_caps)")
got=$(words_sorted "$bset")
[ -n "$expected" ] && [ "$expected" = "$got" ]
ok $? "CapabilityBoundingSet= is exactly launcherd-main.c's needed_caps[] + optional_caps[]"
[ "$expected" = "$got" ] || diag "launcherd: $expected" "    unit: $got"

unlisted=""
for c in $(launcherd_caps_referenced); do
	case " $expected " in *" $c "*) ;; *) unlisted="$unlisted $c" ;; esac
done
[ -z "$unlisted" ]
ok $? "every capability launcherd's sources name is in its needed/optional tables"
[ -z "$unlisted" ] || diag "named in launcherd/*.c but not in the tables:$unlisted"

# Behaviour: run the built launcherd with the unit's bounding set. It narrows its capabilities to
# its tables (restrict_own_capabilities()) after loading the floor and probing cgroups, and
# before it binds its socket: an over-long socket path then stops it right there, before it
# serves anything.
launcherd="$top_builddir/cordon-launcherd"
printf '{}\n' >"$tmp/floor.json"
chmod 0644 "$tmp/floor.json"
long_sock="$tmp/$(printf '%0120d' 0).sock"
run_bounded() { # comma-separated setpriv capability list; prints stderr
	timeout 10 setpriv --bounding-set "-all,$1" --inh-caps -all --ambient-caps -all -- \
		"$launcherd" --mode=privileged --floor "$tmp/floor.json" --socket "$long_sock" 2>&1 >/dev/null
}
bound_ok=""
if [ "$(id -u)" != 0 ]; then
	bound_ok="not root"
elif ! command -v setpriv >/dev/null 2>&1; then
	bound_ok="setpriv not found (util-linux)"
elif [ ! -x "$launcherd" ]; then
	bound_ok="cordon-launcherd not built"
else
	held=$(setpriv --dump 2>/dev/null | sed -n 's/^Capability bounding set: //p')
	for c in $(launcherd_needed_caps | cap_lower); do
		case ",$held," in *",$c,"*) ;; *) bound_ok="this process lacks cap_$c (container?)" ;; esac
	done
fi
if [ -n "$bound_ok" ]; then
	skip "launcherd starts with exactly the unit's bounding set: $bound_ok"
	skip "launcherd refuses to start without each needed capability: $bound_ok"
else
	list=$(printf '%s\n' $bset | cap_lower | sed 's/^/+/' | tr '\n' ',' | sed 's/,$//')
	out=$(run_bounded "$list")
	printf '%s\n' "$out" | grep -q 'is too long' && ! printf '%s\n' "$out" | grep -q 'needs cap_'
	ok $? "launcherd passes its capability check with exactly the unit's bounding set"
	printf '%s\n' "$out" | grep -q 'is too long' || diag "$out"
	bad=""
	for c in $(launcherd_needed_caps | cap_lower); do
		l=$(printf '%s\n' $bset | cap_lower | grep -vx "$c" | sed 's/^/+/' | tr '\n' ',' | sed 's/,$//')
		out=$(run_bounded "$l")
		printf '%s\n' "$out" | grep -qi "needs cap_$c" || bad="$bad cap_$c"
	done
	[ -z "$bad" ]
	ok $? "launcherd refuses to start without each needed capability ($(launcherd_needed_caps | cap_lower | tr '\n' ' ' | sed 's/ $//'))"
	[ -z "$bad" ] || diag "started (or failed otherwise) without:$bad"
fi

# --- the controller's user unit ----------------------------------------------------------------
ctl="$units/cordon-controller.service"
[ "$(unit_get "$ctl" UMask)" = 0077 ] && [ "$(unit_get "$ctl" NoNewPrivileges)" = yes ] &&
	[ "$(unit_get "$ctl" WantedBy)" = default.target ] &&
	[ -z "$(unit_get "$ctl" CapabilityBoundingSet)$(unit_get "$ctl" AmbientCapabilities)" ]
ok $? "controller user unit: UMask=0077, NoNewPrivileges=yes, no capabilities, WantedBy=default.target"

if systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
	diag "$(cd "$tmp/system" && systemd-analyze security --offline=yes --no-pager \
		./cordon-launcherd.service 2>/dev/null | tail -n 1)"
fi

# Failures are the not-ok lines; the exit status stays 0 so the driver does not count them twice.
exit 0
