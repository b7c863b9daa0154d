#!/usr/bin/env bash
# The loopback Daytona fake checked against the wire protocol alone (test-daytona-fake.py).
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 missing"; exit 0; }
exec python3 "${top_srcdir:?}/tests/fakes/test-daytona-fake.py"
