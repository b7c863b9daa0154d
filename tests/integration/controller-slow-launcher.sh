#!/usr/bin/env bash
# A stopped launcher stalls no client of the controller (see controller-slow-launcher.py).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v python3 >/dev/null || skip_all "python3 missing"
export WORK="$TEST_TMP/work" TEST_TMP
mkdir -p "$WORK"
cd "$WORK" || exit 1
python3 "$top_srcdir/tests/integration/controller-slow-launcher.py"
