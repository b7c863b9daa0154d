#!/usr/bin/env bash
# The loopback E2B fake checked against the wire protocol alone (test-e2b-fake.py).
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 missing"; exit 0; }
exec python3 "${top_srcdir:?}/tests/fakes/test-e2b-fake.py"
