#!/usr/bin/env bash
# The backend methods' contract (see backend-contract.py), against the test build of the
# controller (builtin:test has settings of every type).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v python3 >/dev/null || skip_all "python3 missing"
command -v strace >/dev/null || skip_all "strace missing (it makes the selection write fail)"
CORDON_CONTROLLER="$top_builddir/tests/helpers/cordon-controller-test"
[ -x "$CORDON_CONTROLLER" ] || skip_all "the test build of the controller is missing"
export CORDON_CONTROLLER
export WORK="$TEST_TMP/work" TEST_TMP
mkdir -p "$WORK"
cd "$WORK" || exit 1
python3 "$top_srcdir/tests/integration/backend-contract.py"
