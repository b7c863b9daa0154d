#!/usr/bin/env bash
# kill -9 of the controller at each step of an activation (see activation-crash.py).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v python3 >/dev/null || skip_all "python3 missing"
command -v strace >/dev/null || skip_all "strace missing (it places the kills)"
# strace attaches to the controller: needs ptrace of our own child (Yama scope <= 1) or root.
export WORK="$TEST_TMP/work" TEST_TMP
mkdir -p "$WORK"
cd "$WORK" || exit 1
python3 "$top_srcdir/tests/integration/activation-crash.py"
