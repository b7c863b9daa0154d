#!/usr/bin/env bash
# kill -9 of the controller at each step of an activation of builtin:auto (see
# activation-crash.py; activation-crash-pack.sh does the same with a pack backend).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v python3 >/dev/null || skip_all "python3 missing"
command -v strace >/dev/null || skip_all "strace missing (it places the kills)"
export WORK="$TEST_TMP/work" TEST_TMP
mkdir -p "$WORK"
cd "$WORK" || exit 1
python3 "$top_srcdir/tests/integration/activation-crash.py"
