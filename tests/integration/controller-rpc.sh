#!/usr/bin/env bash
# Raw JSON-RPC tests of cordon-controller (see controller-rpc.py).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v python3 >/dev/null || skip_all "python3 missing"
export WORK="$TEST_TMP/work"
mkdir -p "$WORK"
cd "$WORK" || exit 1
python3 "$top_srcdir/tests/integration/controller-rpc.py"
