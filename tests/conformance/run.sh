#!/usr/bin/env bash
# The backend conformance suite: the same checks (conformance.py) against every backend named,
#   tests/conformance/run.sh [REF...]
# REF as backend.list names it (builtin:auto, builtin:host, pack:ID:KIND); without arguments the
# REFS below, or $CORDON_CONFORMANCE_REFS (space-separated) when set. A controller of this test's
# own (the real cordon-controller; $CORDON_CONFORMANCE_CONTROLLER to pick another build) gets an
# admin floor that allows host mode, the packs the references name are installed into it, then
# each backend is activated in turn and checked through the JSON-RPC API. Run as root, the whole
# suite runs again as an ordinary user (cordon-test1 when it exists, else nobody) with a
# controller and user-mode launcher of that user's own. TAP, plus a table backend x check
# (ok / FAIL / n/a with the reason) in the log. $CONFORMANCE_CHECKS=name,name runs only those.
# A pack that needs more (an engine's socket, settings): $CORDON_CONFORMANCE_PACKS,
# $CORDON_CONFORMANCE_PACK_SOCKETS and $CORDON_CONFORMANCE_SETUP below
# (tests/integration/docker-pack.sh runs the Docker pack this way).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

# The backends every run checks, one reference a line: a new backend joins here.
REFS=(
	builtin:auto
	builtin:host
	pack:org.cordon.test:test
	pack:org.cordon.test:transfer
)

# pack_source ID DIR: assemble the pack ID into DIR (a pack directory as `cordon pack install`
# takes it); false when this suite does not know where the pack comes from.
pack_source() {
	case "$1" in
	org.cordon.test)
		[ -x "$top_builddir/tests/packs/test-pack/cordon-test-pack" ] || return 1
		mkdir -p "$2" &&
			cp "$top_srcdir/tests/packs/test-pack/pack.json" \
				"$top_builddir/tests/packs/test-pack/cordon-test-pack" "$2/"
		;;
	*)
		# Any other pack: a directory of that name in $CORDON_CONFORMANCE_PACKS.
		[ -n "${CORDON_CONFORMANCE_PACKS:-}" ] && [ -d "$CORDON_CONFORMANCE_PACKS/$1" ] &&
			mkdir -p "${2%/*}" && cp -r "$CORDON_CONFORMANCE_PACKS/$1" "$2"
		;;
	esac
}

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v python3 >/dev/null || skip_all "python3 missing"
if [ $# -gt 0 ]; then
	REFS=("$@")
elif [ -n "${CORDON_CONFORMANCE_REFS:-}" ]; then
	read -r -a REFS <<<"$CORDON_CONFORMANCE_REFS"
fi
[ -n "${CORDON_CONFORMANCE_CONTROLLER:-}" ] && export CORDON_CONTROLLER="$CORDON_CONFORMANCE_CONTROLLER"
[ -x "$CORDON_CONTROLLER" ] || skip_all "the controller ($CORDON_CONTROLLER) is not built"

# builtin:host is activated only where the admin floor allows host mode, and a launcher takes
# a floor only when root owns it: without root, the host backend is left out (n/a).
if [ "$(id -u)" = 0 ]; then
	FLOOR="$TEST_TMP/floor.json"
	# $CORDON_CONFORMANCE_PACK_SOCKETS (space-separated paths): host sockets a pack under test
	# asks for (a container engine's), listed in the floor's packSockets.
	socks=
	for s in ${CORDON_CONFORMANCE_PACK_SOCKETS:-}; do socks="$socks${socks:+, }\"$s\""; done
	echo "{\"hostMode\": true${socks:+, \"packSockets\": [$socks]}}" >"$FLOOR"
	chmod 0644 "$FLOOR"
	export CORDON_LAUNCHERD_FLOOR="$FLOOR"
else
	kept=()
	for ref in "${REFS[@]}"; do
		if [ "$ref" = builtin:host ]; then
			na "builtin:host: n/a, host mode needs an admin floor owned by root (run as root)"
		else
			kept+=("$ref")
		fi
	done
	REFS=("${kept[@]}")
fi
export PYTHONDONTWRITEBYTECODE=1
HOST_PATH=/usr/local/bin:/usr/bin:/bin
SUITE_FAILED=0

as() { # as COMMAND...: run as the suite's user, with its runtime and state directories
	if [ "$WHO" = self ]; then
		env XDG_RUNTIME_DIR="$RUNDIR" XDG_STATE_HOME="$STATEDIR" "$@"
	else
		setpriv --reuid="$USER_ID" --regid="$USER_GID" --clear-groups env -i HOME="$BASE" \
			PATH="$HOST_PATH" XDG_RUNTIME_DIR="$RUNDIR" XDG_STATE_HOME="$STATEDIR" \
			CORDON_CONTROLLER="$CORDON_CONTROLLER" CORDON_LAUNCHERD="$CORDON_LAUNCHERD" \
			CORDON_LAUNCHERD_SOCKET="$CORDON_LAUNCHERD_SOCKET" \
			CORDON_LAUNCHERD_FLOOR="$CORDON_LAUNCHERD_FLOOR" PYTHONDONTWRITEBYTECODE=1 \
			top_srcdir="$top_srcdir" top_builddir="$top_builddir" \
			CONFORMANCE_WORK="$CONFORMANCE_WORK" CONFORMANCE_TAP_BASE="$CONFORMANCE_TAP_BASE" \
			CONFORMANCE_COUNT_FILE="$CONFORMANCE_COUNT_FILE" \
			CONFORMANCE_CHECKS="${CONFORMANCE_CHECKS:-}" "$@"
	fi
}

suite() { # suite WHO BASE: WHO "self" (whoever runs this) or another user's name
	WHO=$1 BASE=$2
	RUNDIR="$BASE/run" STATEDIR="$BASE/state"
	# this user takes the controller cli-lib.sh stops at the end; another user one of its own
	[ "$WHO" = self ] && RUNDIR=$XDG_RUNTIME_DIR STATEDIR=$XDG_STATE_HOME
	export CONFORMANCE_WORK="$BASE/work" CONFORMANCE_COUNT_FILE="$BASE/count"
	export CONFORMANCE_TAP_BASE=$TAP_N
	local ref id out rc label
	mkdir -p "$BASE" "$CONFORMANCE_WORK" "$RUNDIR" "$STATEDIR"
	chmod 0700 "$RUNDIR"
	for ref in "${REFS[@]}"; do
		case "$ref" in pack:*:*) ;; *) continue ;; esac
		id=${ref#pack:}
		id=${id%%:*}
		[ -d "$BASE/packs/$id" ] && continue
		pack_source "$id" "$BASE/packs/$id" || diag "$WHO: no source for the pack $id"
	done
	[ "$WHO" = self ] || chown -R "$USER_ID:$USER_GID" "$BASE"
	cd "$CONFORMANCE_WORK" || return
	for id in "$BASE"/packs/*; do
		[ -d "$id" ] || continue
		out=$(as "$CORDON" pack install "$id" 2>&1) || diag "$WHO: cordon pack install $id: $out"
	done
	# $CORDON_CONFORMANCE_SETUP: a script run as the suite's user once the packs are installed
	# (its argument: the cordon CLI), e.g. to enable a pack that asks for a host socket and
	# store the settings its backend needs.
	if [ -n "${CORDON_CONFORMANCE_SETUP:-}" ]; then
		out=$(as bash "$CORDON_CONFORMANCE_SETUP" "$CORDON" 2>&1) ||
			diag "$WHO: $CORDON_CONFORMANCE_SETUP: $out"
	fi
	label=$WHO
	[ "$WHO" = self ] && label=$(id -un)
	as python3 "$top_srcdir/tests/conformance/conformance.py" --label "$label" "${REFS[@]}"
	rc=$?
	[ "$rc" = 0 ] || SUITE_FAILED=1
	TAP_N=$(cat "$CONFORMANCE_COUNT_FILE" 2>/dev/null || echo "$TAP_N")
	if [ "$rc" != 0 ] && [ "$TAP_N" = "$CONFORMANCE_TAP_BASE" ]; then
		ok 1 "$WHO: conformance.py ran no check (exit $rc)"
		SUITE_FAILED=1
	fi
	cd / || return
}

if [ ${#REFS[@]} = 0 ]; then
	echo "1..$TAP_N"
	exit 0
fi

suite self "$TEST_TMP/as-self"

# As an ordinary user: the controller starts a user-mode launcher of its own.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	if id cordon-test1 >/dev/null 2>&1; then
		USER_ID=$(id -u cordon-test1) USER_GID=$(id -g cordon-test1) WHO=cordon-test1
	else
		USER_ID=65534 USER_GID=65534 WHO=nobody
	fi
	suite "$WHO" "$TEST_TMP/as-user"
	npid=$(head -n1 "$TEST_TMP/as-user/run/cordon/controller.sock.lock" 2>/dev/null)
	if [ -n "$npid" ]; then
		kill "$npid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$npid" 2>/dev/null || break; sleep 0.1; done
	fi
else
	na "the ordinary-user run needs root and setpriv (this run is as $(id -un))"
fi

echo "1..$TAP_N"
[ "$SUITE_FAILED" = 0 ] && [ "$TAP_FAILED" = 0 ]
