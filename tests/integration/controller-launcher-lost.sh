#!/usr/bin/env bash
# The controller loses its launcher (kill -9 of its own launcherd, of the system one): what ran
# there ends at once with reason launcher-lost, and the next spawn works (see
# controller-launcher-lost.py).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v python3 >/dev/null || skip_all "python3 missing"
export WORK="$TEST_TMP/work" TEST_TMP
mkdir -p "$WORK"
cd "$WORK" || exit 1
python3 "$top_srcdir/tests/integration/controller-launcher-lost.py"
