#!/usr/bin/env bash
# What a pack may ask for: a manifest asking for network proxy (with the domains its own API
# needs) and a host socket installs disabled, and `cordon pack install` says what it asks for;
# once enabled, its process starts only when the admin floor lists the socket (packSockets),
# and then serves commands. A reinstall asking the same keeps it enabled.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
[ -x "$top_builddir/tests/packs/test-pack/cordon-test-pack" ] || skip_all "the test pack is not built"
command -v python3 >/dev/null || skip_all "python3 missing"
[ "$(id -u)" = 0 ] || skip_all "the launcher takes a floor file only from root"

SRC="$TEST_TMP/pack-src" SOCK="$TEST_TMP/engine.sock" FLOOR="$TEST_TMP/floor.json"
mkdir -p "$SRC" "$TEST_TMP/work"
cp "$top_builddir/tests/packs/test-pack/cordon-test-pack" "$SRC/"
python3 - "$top_srcdir/tests/packs/test-pack/pack.json" "$SRC/pack.json" "$SOCK" <<'PY'
import json, socket, sys
m = json.load(open(sys.argv[1]))
m["network"] = "proxy"
m["domains"] = ["api.example.invalid"]
m["hostSockets"] = [{"name": "engine", "path": sys.argv[3]}]
json.dump(m, open(sys.argv[2], "w"))
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[3])
PY
echo '{}' >"$FLOOR"
chmod 0644 "$FLOOR"
export CORDON_LAUNCHERD_FLOOR="$FLOOR"
cd "$TEST_TMP/work" || exit 1
REF=pack:org.cordon.test:test

out=$("$CORDON" pack install "$SRC" 2>&1)
ok $? "the pack installs ($out)"
case "$out" in *"network: proxy"*"domain api.example.invalid"*"host socket engine: $SOCK"*) true ;; *) false ;; esac
ok $? "cordon pack install says what it asks for: its network, domains and host socket"
case "$out" in *"not enabled"*"cordon pack enable org.cordon.test"*) true ;; *) false ;; esac
ok $? "…and that it is not enabled, and how to enable it"
out=$("$CORDON" --json pack list 2>&1)
is "false $SOCK proxy" "$(echo "$out" | python3 -c 'import json,sys; p=json.load(sys.stdin)["packs"][0]; print(str(p["enabled"]).lower(), p["asks"]["hostSockets"][0]["path"], p["asks"]["network"])')" \
	"pack list shows it disabled, with what it asks"
"$CORDON" backend activate "$REF" >/dev/null 2>&1
[ $? -ne 0 ]
ok $? "a disabled pack's backend cannot be activated"

"$CORDON" pack enable org.cordon.test >/dev/null 2>&1
ok $? "a person enables it"
out=$("$CORDON" backend activate "$REF" 2>&1)
[ $? -ne 0 ]
ok $? "with a floor that lists no socket, its process does not start"
case "$out" in *packSockets*) true ;; *) false ;; esac
ok $? "…and the failure names the floor's packSockets ($out)"

echo "{\"packSockets\": [\"$SOCK\"]}" >"$FLOOR"
out=$("$CORDON" backend activate "$REF" 2>&1)
ok $? "with the socket in the floor's packSockets, the activation succeeds ($out)"
out=$("$CORDON" exec -- /bin/echo served 2>&1)
is served "$out" "and the pack serves a command"
"$CORDON" backend activate builtin:auto >/dev/null 2>&1

out=$("$CORDON" pack install --replace "$SRC" 2>&1)
case "$out" in *"not enabled"*) false ;; *) true ;; esac
ok $? "a reinstall asking the same stays enabled ($out)"
python3 - "$SRC/pack.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["domains"].append("other.example.invalid")
json.dump(m, open(sys.argv[1], "w"))
PY
out=$("$CORDON" pack install --replace "$SRC" 2>&1)
case "$out" in *"not enabled"*) true ;; *) false ;; esac
ok $? "a reinstall asking for more is disabled again until a person enables it ($out)"
echo "1..$TAP_N"
done_testing
