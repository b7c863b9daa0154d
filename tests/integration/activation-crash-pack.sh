#!/usr/bin/env bash
# kill -9 of the controller at each step of an activation of the test pack's backend, whose
# configure and prepare talk to a confined pack process (see activation-crash.py).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
pack="$top_builddir/tests/packs/test-pack/cordon-test-pack"
[ -x "$pack" ] || skip_all "the test pack is not built"
command -v python3 >/dev/null || skip_all "python3 missing"
command -v strace >/dev/null || skip_all "strace missing (it places the kills)"
export WORK="$TEST_TMP/work" TEST_TMP
mkdir -p "$WORK" "$TEST_TMP/pack"
cd "$WORK" || exit 1
cp "$top_srcdir/tests/packs/test-pack/pack.json" "$pack" "$TEST_TMP/pack/" &&
	"$CORDON" pack install "$TEST_TMP/pack" >/dev/null || exit 1
CRASH_CANDIDATE='{"backend":"pack:org.cordon.test:test","settings":{"prepareDelayMs":0}}' \
	CRASH_SYSCALLS=openat,write,sendmsg,fsync,rename \
	python3 "$top_srcdir/tests/integration/activation-crash.py"
