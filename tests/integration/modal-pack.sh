#!/usr/bin/env bash
# The Modal pack against the loopback Modal fake (see modal-pack.py): activation with a wrong
# secret, a lease's exec and release, the auth token expiring mid-lease, the secret never
# leaking, a registry image built at activation with its progress shown (and a failing build's
# message), the API over TLS with the caFile setting (and another CA refused), orphans removed
# after the pack is killed; then the conformance suite on the pack.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

PACK_BIN="$top_builddir/backends/modal/cordon-modal-pack"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
[ -x "$CORDON" ] || skip_all "cordon not built"
[ -x "$PACK_BIN" ] || skip_all "the Modal pack is not built"
"$PY" -c 'import grpc, grpc_tools' 2>/dev/null || skip_all "python3-grpcio/python3-grpc-tools missing"
# Credentials of the service's form; the fake accepts these only.
export MODAL_TEST_TOKEN_ID="ak-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export MODAL_TEST_TOKEN_SECRET="as-$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export WORK="$TEST_TMP/work" PACK_SRC="$TEST_TMP/pack-src" FAKE_DIR="$TEST_TMP/fake"
mkdir -p "$WORK" "$PACK_SRC" "$FAKE_DIR"
cp "$top_srcdir/backends/modal/pack.json" "$PACK_BIN" "$PACK_SRC/"
cd "$WORK" || exit 1
# The Python part's TAP without its plan; its count and failures carry on here.
py=$("$PY" "$top_srcdir/tests/integration/modal-pack.py" 2>&1)
[ $? = 0 ] || TAP_FAILED=1
echo "$py" | grep -v '^1\.\.'
TAP_N=$(echo "$py" | grep -c '^ok\|^not ok')

# The conformance suite on the pack, against a fake of its own (the pack's manifest copy lets it
# reach the fake's loopback port only; the set-up enables it, stores the token and the settings).
REF=pack:org.cordon.modal:modal
mkdir -p "$FAKE_DIR/conformance" "$TEST_TMP/packs/org.cordon.modal"
"$PY" "$top_srcdir/tests/fakes/modal_fake.py" --port-file "$FAKE_DIR/cport" \
	--token-id "$MODAL_TEST_TOKEN_ID" --token-secret "$MODAL_TEST_TOKEN_SECRET" \
	--dir "$FAKE_DIR/conformance" 2>"$FAKE_DIR/conformance.log" &
fakepid=$!
for _ in $(seq 100); do [ -s "$FAKE_DIR/cport" ] && break; sleep 0.1; done
PORT=$(cat "$FAKE_DIR/cport")
cp "$PACK_BIN" "$TEST_TMP/packs/org.cordon.modal/"
"$PY" -c 'import json,sys; m=json.load(open(sys.argv[1])); m["domains"]=["127.0.0.1:"+sys.argv[2]]; json.dump(m,open(sys.argv[3],"w"))' \
	"$top_srcdir/backends/modal/pack.json" "$PORT" "$TEST_TMP/packs/org.cordon.modal/pack.json"
cat >"$TEST_TMP/conformance-setup.sh" <<SETUP
"\$1" pack enable org.cordon.modal &&
	printf '%s' "$MODAL_TEST_TOKEN_ID" | "\$1" secret set $REF tokenId &&
	printf '%s' "$MODAL_TEST_TOKEN_SECRET" | "\$1" secret set $REF tokenSecret &&
	"\$1" backend settings $REF --set serverUrl=http://127.0.0.1:$PORT --set image=im-conformance
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
