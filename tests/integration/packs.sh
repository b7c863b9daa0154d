#!/usr/bin/env bash
# Packs end to end (see packs.py): install/list/enable/disable/remove, manifest and descriptor
# rejections, the test pack's backend activated and serving spawns from its confined process,
# every failure rule of the activation injected through its settings, secrets and interactions.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
[ -x "$top_builddir/tests/packs/test-pack/cordon-test-pack" ] || skip_all "the test pack is not built"
command -v python3 >/dev/null || skip_all "python3 missing"
export WORK="$TEST_TMP/work" PACK_SRC="$TEST_TMP/pack-src"
mkdir -p "$WORK" "$PACK_SRC"
cp "$top_srcdir/tests/packs/test-pack/pack.json" "$top_builddir/tests/packs/test-pack/cordon-test-pack" \
	"$PACK_SRC/"
# Debug logging: the secret checks at the end grep the controller log at its most verbose.
export CORDON_LOG_LEVEL=debug
cd "$WORK" || exit 1
python3 "$top_srcdir/tests/integration/packs.py"
