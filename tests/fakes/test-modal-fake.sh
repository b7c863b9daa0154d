#!/usr/bin/env bash
# The Modal client (backends/modal/test-modal-api) against the loopback Modal fake, whose auth
# tokens live 2 s so that one expires mid-test, and against a second one served over TLS.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" -c 'import grpc, grpc_tools' 2>/dev/null ||
	{ echo "1..0 # SKIP python3-grpcio/python3-grpc-tools missing"; exit 0; }
dir=$(mktemp -d)
trap 'kill $fake $tfake 2>/dev/null; wait $fake $tfake 2>/dev/null; rm -rf "$dir"' EXIT
export MODAL_FAKE_TOKEN_ID=ak-test$RANDOM
export MODAL_FAKE_TOKEN_SECRET=as-secret$RANDOM$RANDOM$RANDOM
"$PY" "${top_srcdir:?}/tests/fakes/modal_fake.py" --port-file "$dir/port" \
	--token-id "$MODAL_FAKE_TOKEN_ID" --token-secret "$MODAL_FAKE_TOKEN_SECRET" \
	--token-ttl 15 --dir "$dir/sandboxes" 2>"$dir/fake.log" &
fake=$!
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
[ -s "$dir/port" ] || { echo "1..0 # SKIP the fake did not start: $(tail -1 "$dir/fake.log")"; exit 0; }
export MODAL_FAKE_URL="http://127.0.0.1:$(cat "$dir/port")"

# A second fake served over TLS with a certificate of a CA made here (and another CA, trusted by
# nobody); without openssl the client's TLS tests are skipped.
tls() {
	command -v openssl >/dev/null || return 1
	for ca in ca wrong; do
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "$dir/$ca.key" -out "$dir/$ca.pem" -days 2 -subj "/CN=cordon test $ca" \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=keyCertSign 2>/dev/null ||
			return 1
	done
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/srv.key" \
		-out "$dir/srv.csr" -subj "/CN=127.0.0.1" 2>/dev/null || return 1
	printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
		>"$dir/srv.ext"
	openssl x509 -req -in "$dir/srv.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
		-out "$dir/srv.pem" -days 2 -extfile "$dir/srv.ext" 2>/dev/null || return 1
	"$PY" "${top_srcdir:?}/tests/fakes/modal_fake.py" --port-file "$dir/tport" \
		--token-id "$MODAL_FAKE_TOKEN_ID" --token-secret "$MODAL_FAKE_TOKEN_SECRET" \
		--dir "$dir/tls-sandboxes" --tls-cert "$dir/srv.pem" --tls-key "$dir/srv.key" \
		2>"$dir/tfake.log" &
	tfake=$!
	for _ in $(seq 100); do [ -s "$dir/tport" ] && break; sleep 0.1; done
	[ -s "$dir/tport" ] || return 1
	export MODAL_FAKE_TLS_URL="https://127.0.0.1:$(cat "$dir/tport")" \
		MODAL_FAKE_CA="$dir/ca.pem" MODAL_FAKE_WRONG_CA="$dir/wrong.pem"
}
tfake=
tls || echo "# no TLS fake (openssl or the fake failed): TLS tests skipped" >&2
"${top_builddir:-.}/backends/modal/test-modal-api"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# fake: /' "$dir/fake.log" >&2
[ $rc -eq 0 ] || [ ! -f "$dir/tfake.log" ] || sed 's/^/# TLS fake: /' "$dir/tfake.log" >&2
exit $rc
