#!/usr/bin/env bash
# cordon policy explain --path P: what a sandbox under the default policy finds at P on this
# host, and the rule that decides it (a path simply not there cannot be audited: this answers
# from the plan the policy compiles to).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v git >/dev/null || skip_all "git missing"
mkdir -p "$TEST_TMP/proj" && cd "$TEST_TMP/proj" && git init -q . || exit 1

explain() { "$CORDON" --json policy explain --path "$1" 2>&1; }
field() { python3 -c 'import json,sys; j=json.load(sys.stdin); print(" ".join(str(j.get(k)) for k in sys.argv[1:]))' "$@"; }

is "True True False" "$(explain /usr/bin/env | field visible readable writable)" \
	"/usr/bin/env: visible, readable, not writable"
case "$(explain /usr/bin/env | field rule)" in "filesystem.read["*"] /usr") true ;; *) false ;; esac
ok $? "…decided by the filesystem.read entry for /usr"
is "False filesystem.deny[0] /etc/shadow" "$(explain /etc/shadow | field visible rule)" \
	"/etc/shadow: hidden, by filesystem.deny[0]"
is "True True True" "$(explain "$TEST_TMP/proj" | field visible readable writable)" \
	"the workspace: visible, readable, writable"
case "$(explain "$TEST_TMP/proj" | field rule)" in "filesystem.workspace"*) true ;; *) false ;; esac
ok $? "…by filesystem.workspace"
is "True False filesystem.hostExecuted (.git/config)" \
	"$(explain "$TEST_TMP/proj/.git/config" | field visible writable rule)" \
	".git/config in the workspace: visible but read-only, by filesystem.hostExecuted"
is "False filesystem.tmp" "$(explain /tmp/not-there-yet | field visible rule)" \
	"a path below the private /tmp is not there at the start (filesystem.tmp)"
is "False None" "$(explain /opt/nothing-binds-this | field visible rule)" \
	"a path no rule exposes is not visible, and no rule is named"
out=$("$CORDON" policy explain --path /etc/shadow 2>&1)
case "$out" in *"not visible"*"rule: filesystem.deny[0] /etc/shadow"*) true ;; *) false ;; esac
ok $? "the text form says it too ($out)"
out=$("$CORDON" policy explain --path relative/../x 2>&1)
[ $? = 125 ]
ok $? "a path that is not there and not normalized is a usage error ($out)"
echo "1..$TAP_N"
done_testing
