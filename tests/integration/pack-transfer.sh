#!/usr/bin/env bash
# A transfer backend end to end (see pack-transfer.py): the test pack's "transfer" kind gets a
# tar of the workspace at sandbox.acquire, commands of the lease change its copy, and release
# brings exactly those changes back to the host workspace (a host-executed file refused).
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
[ -x "$top_builddir/tests/packs/test-pack/cordon-test-pack" ] || skip_all "the test pack is not built"
command -v python3 >/dev/null || skip_all "python3 missing"
export WORK="$TEST_TMP/work" PACK_SRC="$TEST_TMP/pack-src"
mkdir -p "$WORK" "$PACK_SRC"
cp "$top_srcdir/tests/packs/test-pack/pack.json" "$top_builddir/tests/packs/test-pack/cordon-test-pack" \
	"$PACK_SRC/"
cd "$WORK" || exit 1
python3 "$top_srcdir/tests/integration/pack-transfer.py"
