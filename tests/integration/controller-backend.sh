#!/usr/bin/env bash
# The activation transaction (see controller-backend.py).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v python3 >/dev/null || skip_all "python3 missing"
export WORK="$TEST_TMP/work"
mkdir -p "$WORK"
cd "$WORK" || exit 1
python3 "$top_srcdir/tests/integration/controller-backend.py"
