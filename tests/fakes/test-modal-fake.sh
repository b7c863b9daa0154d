#!/usr/bin/env bash
# The Modal client (backends/modal/test-modal-api) against the loopback Modal fake, whose auth
# tokens live 2 s so that one expires mid-test.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" -c 'import grpc, grpc_tools' 2>/dev/null ||
	{ echo "1..0 # SKIP python3-grpcio/python3-grpc-tools missing"; exit 0; }
dir=$(mktemp -d)
trap 'kill "$fake" 2>/dev/null; wait "$fake" 2>/dev/null; rm -rf "$dir"' EXIT
export MODAL_FAKE_TOKEN_ID=ak-test$RANDOM
export MODAL_FAKE_TOKEN_SECRET=as-secret$RANDOM$RANDOM$RANDOM
"$PY" "${top_srcdir:?}/tests/fakes/modal_fake.py" --port-file "$dir/port" \
	--token-id "$MODAL_FAKE_TOKEN_ID" --token-secret "$MODAL_FAKE_TOKEN_SECRET" \
	--token-ttl 2 --dir "$dir/sandboxes" 2>"$dir/fake.log" &
fake=$!
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
[ -s "$dir/port" ] || { echo "1..0 # SKIP the fake did not start: $(tail -1 "$dir/fake.log")"; exit 0; }
export MODAL_FAKE_URL="http://127.0.0.1:$(cat "$dir/port")"
"${top_builddir:-.}/backends/modal/test-modal-api"
rc=$?
[ $rc -eq 0 ] || sed 's/^/# fake: /' "$dir/fake.log" >&2
exit $rc
