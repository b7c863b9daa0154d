#!/usr/bin/env bash
# libremote.a (backends/remote/test-remote-http.c) against the loopback E2B fake.
. "${top_srcdir:?}/tests/integration/tap-lib.sh"
BIN="$top_builddir/backends/remote/test-remote-http"
[ -x "$BIN" ] || skip_all "test-remote-http not built"
command -v python3 >/dev/null || skip_all "python3 missing"
dir=$(mktemp -d /tmp/cordon-remote.XXXXXX)
trap 'kill "$fake" 2>/dev/null; wait "$fake" 2>/dev/null; rm -rf "$dir"' EXIT
export E2B_FAKE_KEY="e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')"
python3 "$top_srcdir/tests/fakes/e2b_fake.py" --port-file "$dir/port" --api-key "$E2B_FAKE_KEY" \
	--dir "$dir" --no-namespace 2>"$dir/fake.log" &
fake=$!
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
E2B_FAKE_URL="http://127.0.0.1:$(cat "$dir/port")" "$BIN"
