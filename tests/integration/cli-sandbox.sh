#!/usr/bin/env bash
# cordon sandbox acquire / release / list and run|exec --sandbox, end to end from nothing: leases
# that outlive the CLI, the setup hook (a failing one acquires nothing), commands that share the
# workspace, narrowing accepted and widening refused with the field named, the workspace access
# always explicit (read-only unless asked), release, and the --json forms.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
plan 60

work="$TEST_TMP/work"
mkdir -p "$work"
cd "$work" || exit 1

jget() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {"d": d}))' "$1"; }
listed() { "$CORDON" sandbox list --json | jget "' '.join(s['sandboxId'] for s in d['sandboxes'])"; }
# socket(AF_INET) allowed (none, loopback) or refused (unix: AF_UNIX only)
INET_PROBE='import socket
try:
    socket.socket(); print("inet")
except OSError:
    print("no-inet")'

# 1. A read-write lease, acquired by a CLI that then exits: it stays (detached) and two commands
# run in it share the workspace.
sid=$("$CORDON" sandbox acquire --workspace-access read-write 2>&1)
is 0 $? "acquire a read-write sandbox ($sid)"
case "$sid" in s[0-9]*) true ;; *) false ;; esac
ok $? "acquire prints the sandbox id"
"$CORDON" sandbox list | grep -q "^$sid .* ready .*$work (read-write)"
ok $? "list shows it ready, with its read-write workspace: $("$CORDON" sandbox list | tr '\n' '|')"
"$CORDON" run --sandbox "$sid" -- /bin/sh -c 'echo one >state.txt'
is 0 $? "run --sandbox writes in the workspace"
out=$("$CORDON" exec --sandbox "$sid" -- /bin/sh -c 'cat state.txt; echo two >>state.txt' 2>&1)
is "one" "$out" "exec --sandbox, a second command, sees the first one's file"
is "one two " "$(tr '\n' ' ' <"$work/state.txt" 2>/dev/null)" "…and its own write reached the host"
res=$("$CORDON" exec --json --sandbox "$sid" -- /bin/true)
is "$sid" "$(echo "$res" | jget 'd.get("sandboxId")')" "exec --json reports the sandbox it ran in"

# 2. The default access of an acquisition is read-only, whatever the controller's default: the CLI
# always sends it.
sro=$("$CORDON" sandbox acquire)
is 0 $? "acquire with no access option ($sro)"
is "read-only" "$("$CORDON" sandbox list --json | jget "[s for s in d['sandboxes'] if s['sandboxId']=='$sro'][0]['policy']['filesystem']['workspace']['access']")" \
	"…has a read-only workspace"
"$CORDON" run --sandbox "$sro" -- /bin/sh -c 'echo x >ro.txt' 2>/dev/null
ok $(($? == 0)) "…and a command in it cannot write there"
[ ! -e "$work/ro.txt" ]
ok $? "…nothing appeared on the host"
err=$("$CORDON" run --sandbox "$sro" --workspace-access read-write -- /bin/true 2>&1)
is 120 $? "asking a read-only sandbox for a read-write workspace is refused (120)"
echo "$err" | grep -q 'filesystem.workspace'
ok $? "…naming the field: $err"
sws=$("$CORDON" sandbox acquire --workspace "$work:rw")
"$CORDON" run --sandbox "$sws" -- /bin/sh -c 'echo rw >colon.txt' && [ -s "$work/colon.txt" ]
ok $? "--workspace DIR:rw acquires a writable workspace too"
"$CORDON" sandbox release "$sws" >/dev/null

# 3. Setup hooks: --setup CMD through /bin/sh -c, or an argv after --; both run in the sandbox.
sset=$("$CORDON" sandbox acquire --workspace-access read-write --setup 'echo prepared >setup.txt')
is 0 $? "acquire with a --setup hook ($sset)"
is "prepared" "$(cat "$work/setup.txt" 2>/dev/null)" "…the hook ran in the workspace"
is "prepared" "$("$CORDON" run --sandbox "$sset" -- /bin/cat setup.txt 2>&1)" \
	"…and a command in the sandbox sees what it prepared"
# shellcheck disable=SC2016 # $0 is the hook's own
sarg=$("$CORDON" sandbox acquire --workspace-access read-write -- /bin/sh -c 'echo "$0" >argv.txt' via-argv)
is 0 $? "acquire with a setup argv after -- ($sarg)"
is "via-argv" "$(cat "$work/argv.txt" 2>/dev/null)" "…run as given, without a shell of ours"
before=$(listed)
err=$("$CORDON" sandbox acquire --setup 'echo broken-hook >&2; exit 3' 2>&1)
is 121 $? "a failing setup hook fails the acquisition (121)"
echo "$err" | grep -q 'setup command failed (exit status 3)' && echo "$err" | grep -q broken-hook
ok $? "…saying so, with its exit status and its stderr: $(echo "$err" | tr '\n' '|')"
is "$before" "$(listed)" "…and leaves no sandbox in list"
res=$("$CORDON" sandbox acquire --json --setup 'echo out; exit 4' 2>/dev/null)
is 121 $? "acquire --json with a failing hook exits 121"
is "4 out" "$(echo "$res" | jget 'str(d["error"]["data"]["exitCode"]) + " " + d["error"]["data"]["stdout"].strip()')" \
	"…and prints the hook's exit code and output as JSON"
"$CORDON" sandbox acquire --setup '/nonexistent/hook' >/dev/null 2>&1
is 121 $? "a setup hook that cannot run fails the acquisition (121)"
is "$before" "$(listed)" "…and leaves no sandbox either"

# 4. Narrowing and widening: --net unix inside a loopback sandbox runs; --net host is refused.
slo=$("$CORDON" sandbox acquire --net loopback --workspace-access read-write)
is 0 $? "acquire a loopback sandbox ($slo)"
is "inet" "$("$CORDON" run --sandbox "$slo" -- python3 -c "$INET_PROBE" 2>&1)" \
	"…its commands may open inet sockets"
out=$("$CORDON" run --sandbox "$slo" --net unix -- python3 -c "$INET_PROBE" 2>&1)
is "0 no-inet" "$? $out" "--net unix narrows it for one command"
err=$("$CORDON" run --sandbox "$slo" --net host -- /bin/true 2>&1)
is 120 $? "--net host widens it: refused (120)"
echo "$err" | grep -q 'network.mode'
ok $? "…naming the field: $err"
err=$("$CORDON" sandbox acquire --parent "$sro" --workspace-access read-write 2>&1)
is 120 $? "acquiring from a read-only parent with a read-write workspace is refused (120)"
echo "$err" | grep -q 'filesystem.workspace'
ok $? "…naming the field: $err"
schild=$("$CORDON" sandbox acquire --parent "$slo" --net none)
is 0 $? "acquire a narrower child of the loopback sandbox ($schild)"
"$CORDON" sandbox list | grep -q "^$schild  *$slo  *ready  *none "
ok $? "list shows its parent and its network: $("$CORDON" sandbox list | grep "^$schild" )"

# 5. Release: what runs in the sandbox dies, the id is gone, --sandbox on it fails clearly.
pid=$("$CORDON" run --detach --sandbox "$sid" -- /bin/sleep 1000)
is 0 $? "a detached process in the sandbox ($pid)"
"$CORDON" sandbox release "$sid"
is 0 $? "release the sandbox"
"$CORDON" wait "$pid"
is 137 $? "…its process was killed (137)"
case " $(listed) " in *" $sid "*) false ;; *) true ;; esac
ok $? "…and it is gone from list"
err=$("$CORDON" run --sandbox "$sid" -- /bin/true 2>&1)
is 121 $? "run --sandbox on a released id fails (121)"
echo "$err" | grep -q "no sandbox \"$sid\""
ok $? "…saying which: $err"
"$CORDON" exec --sandbox "$sid" -- /bin/true >/dev/null 2>&1
is 121 $? "exec --sandbox on it too"
"$CORDON" sandbox release "$sid" 2>/dev/null
is 1 $? "releasing it again fails (1)"
res=$("$CORDON" sandbox release "$slo" --json)
is "True" "$(echo "$res" | jget 'd["released"]')" "release --json parses"
case " $(listed) " in *" $schild "*) false ;; *) true ;; esac
ok $? "releasing a parent released its child"

# 6. --json after the subcommand or before the command, and the table's own data.
res=$("$CORDON" sandbox acquire --workspace-access read-write --json)
sj=$(echo "$res" | jget 'd["sandboxId"]')
case "$sj" in s[0-9]*) true ;; *) false ;; esac
ok $? "acquire --json parses ($sj)"
is "$sj" "$("$CORDON" --json sandbox list | jget "[s['sandboxId'] for s in d['sandboxes'] if s['sandboxId']=='$sj'][0]")" \
	"cordon --json sandbox list parses and lists it"
is "read-write" "$("$CORDON" sandbox list --json | jget "[s for s in d['sandboxes'] if s['sandboxId']=='$sj'][0]['policy']['filesystem']['workspace']['access']")" \
	"sandbox list --json has the policy it runs under"
for s in $(listed); do "$CORDON" sandbox release "$s" >/dev/null; done
is "" "$(listed)" "every sandbox released"

# 7. Usage errors exit 125 and name what is wrong.
err=$("$CORDON" sandbox acquire --bogus 2>&1)
is "125 yes" "$? $(echo "$err" | grep -q -- '--bogus' && echo yes)" "an unknown option is a usage error naming it"
err=$("$CORDON" sandbox acquire --workspace-access sideways 2>&1)
is "125 yes" "$? $(echo "$err" | grep -q -- 'sideways' && echo yes)" "a bad --workspace-access value names it"
err=$("$CORDON" sandbox acquire stray 2>&1)
is "125 yes" "$? $(echo "$err" | grep -q -- 'stray' && echo yes)" "a stray argument (no --) names it"
echo '{"version": 1}' >"$TEST_TMP/p.json"
err=$("$CORDON" run --sandbox s1 --policy "$TEST_TMP/p.json" -- /bin/true 2>&1)
is "125 yes" "$? $(echo "$err" | grep -q -- '--policy does not go with --sandbox' && echo yes)" \
	"--policy with --sandbox is a usage error"
"$CORDON" sandbox release 2>/dev/null
is 125 $? "release without an id is a usage error"
err=$("$CORDON" sandbox frob 2>&1)
is "125 yes" "$? $(echo "$err" | grep -q -- 'frob' && echo yes)" "an unknown sandbox command names it"

# 8. cordon(1) documents every option of sandbox acquire.
missing=""
if command -v man >/dev/null; then
	text=$(MANWIDTH=200 man -l "$top_srcdir/docs/man/cordon.1" 2>/dev/null)
	for f in $("$CORDON" sandbox acquire --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
		echo "$text" | grep -qF -- "$f" || missing="$missing $f"
	done
	is "" "$missing" "cordon(1) documents every option of sandbox acquire"
else
	na "man (man-db) missing"
fi

# 9. An ordinary user (nobody) from nothing: a lease of its own controller, shared by two
# commands, released.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	u="$TEST_TMP/nobody"
	mkdir -p "$u/run" "$u/state" "$u/work" && chown -R 65534:65534 "$u" && chmod 0700 "$u/run"
	as_nobody() {
		(cd "$u/work" && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$u" \
			XDG_RUNTIME_DIR="$u/run" XDG_STATE_HOME="$u/state" "$@")
	}
	nsid=$(as_nobody "$CORDON" sandbox acquire --workspace-access read-write \
		--setup 'echo n >n.txt' 2>&1)
	is 0 $? "an ordinary user acquires a sandbox with a setup hook ($nsid)"
	out=$(as_nobody "$CORDON" run --sandbox "$nsid" -- /bin/sh -c 'echo m >>n.txt; id -u' &&
		as_nobody "$CORDON" exec --sandbox "$nsid" -- /bin/cat n.txt)
	is "65534 n m " "$(echo "$out" | tr '\n' ' ')" "…two commands share its workspace"
	as_nobody "$CORDON" sandbox release "$nsid" && [ -z "$(as_nobody "$CORDON" sandbox list --json |
		jget "' '.join(s['sandboxId'] for s in d['sandboxes'])")" ]
	ok $? "…and releases it"
	as_nobody "$CORDON" sandbox acquire --setup 'exit 5' >/dev/null 2>&1
	rc=$?
	is "121 " "$rc $(as_nobody "$CORDON" sandbox list --json |
		jget "' '.join(s['sandboxId'] for s in d['sandboxes'])")" \
		"…and a failing hook acquires nothing there either (121, list empty)"
	npid=$(head -n1 "$u/run/cordon/controller.sock.lock" 2>/dev/null)
	[ -n "$npid" ] && kill "$npid" 2>/dev/null
	for _ in $(seq 50); do [ -n "$npid" ] && kill -0 "$npid" 2>/dev/null || break; sleep 0.1; done
else
	na "needs root and setpriv to act as an ordinary user"
	na "(idem)"
	na "(idem)"
	na "(idem)"
fi

done_testing
