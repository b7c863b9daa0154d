#!/usr/bin/env bash
# The Daytona pack against the loopback Daytona fake (see daytona-pack.py): activation with a
# wrong key, a lease's exec and release, the archive's download retried after a 5xx and failing
# (host unchanged) when cut mid-way, an escaping archive refused, the key never leaking, orphans
# removed after the pack is killed (found through a paged list).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

PACK_BIN="$top_builddir/backends/daytona/cordon-daytona-pack"
[ -x "$CORDON" ] || skip_all "cordon not built"
[ -x "$PACK_BIN" ] || skip_all "the Daytona pack is not built"
command -v python3 >/dev/null || skip_all "python3 missing"
# A key of the service's form; the fake accepts this one only.
export DAYTONA_TEST_KEY="dtn_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export WORK="$TEST_TMP/work" PACK_SRC="$TEST_TMP/pack-src" FAKE_DIR="$TEST_TMP/fake"
mkdir -p "$WORK" "$PACK_SRC" "$FAKE_DIR"
cp "$top_srcdir/backends/daytona/pack.json" "$PACK_BIN" "$PACK_SRC/"
cd "$WORK" || exit 1
# The Python part's TAP without its plan; its count and failures carry on here.
py=$(python3 "$top_srcdir/tests/integration/daytona-pack.py" 2>&1)
[ $? = 0 ] || TAP_FAILED=1
echo "$py" | grep -v '^1\.\.'
TAP_N=$(echo "$py" | grep -c '^ok\|^not ok')

# The conformance suite on the pack, against a fake of its own (the pack's manifest copy lets it
# reach the fake's loopback port only; the set-up enables it, stores the key and the URL).
REF=pack:org.cordon.daytona:daytona
mkdir -p "$FAKE_DIR/conformance" "$TEST_TMP/packs/org.cordon.daytona"
python3 "$top_srcdir/tests/fakes/daytona_fake.py" --port-file "$FAKE_DIR/cport" --api-key "$DAYTONA_TEST_KEY" \
	--dir "$FAKE_DIR/conformance" 2>"$FAKE_DIR/conformance.log" &
fakepid=$!
for _ in $(seq 100); do [ -s "$FAKE_DIR/cport" ] && break; sleep 0.1; done
PORT=$(cat "$FAKE_DIR/cport")
cp "$PACK_BIN" "$TEST_TMP/packs/org.cordon.daytona/"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); m["domains"]=["127.0.0.1:"+sys.argv[2]]; json.dump(m,open(sys.argv[3],"w"))' \
	"$top_srcdir/backends/daytona/pack.json" "$PORT" "$TEST_TMP/packs/org.cordon.daytona/pack.json"
cat >"$TEST_TMP/conformance-setup.sh" <<SETUP
"\$1" pack enable org.cordon.daytona &&
	printf '%s' "$DAYTONA_TEST_KEY" | "\$1" secret set $REF apiKey &&
	"\$1" backend settings $REF --set baseUrl=http://127.0.0.1:$PORT/api
SETUP
chmod 0755 "$TEST_TMP" "$TEST_TMP/packs"
chmod -R a+rX "$TEST_TMP/packs" "$TEST_TMP/conformance-setup.sh"
conf=$(CORDON_CONFORMANCE_REFS=$REF CORDON_CONFORMANCE_PACKS="$TEST_TMP/packs" \
	CORDON_CONFORMANCE_SETUP="$TEST_TMP/conformance-setup.sh" \
	bash "$top_srcdir/tests/conformance/run.sh" 2>&1)
rc=$?
kill "$fakepid" 2>/dev/null
wait "$fakepid" 2>/dev/null
echo "$conf" | grep -v '^ok\|^not ok\|^1\.\.' | sed 's/^#*/#/'
echo "$conf" | grep '^not ok' | sed 's/^/# /'
echo "$conf" | grep '^ok' | sed 's/^/# /'
ok $rc "the conformance suite passes on $REF"
echo "1..$TAP_N"
done_testing
