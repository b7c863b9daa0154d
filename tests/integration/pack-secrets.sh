#!/usr/bin/env bash
# A pack's secrets stay with the pack (see pack-secrets.py): a command run through the test pack
# with its token configured finds the token in no process memory, environment or command line
# it can see, cannot see or signal the pack process, and cannot write the pack's state.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
[ -x "$top_builddir/tests/packs/test-pack/cordon-test-pack" ] || skip_all "the test pack is not built"
command -v python3 >/dev/null || skip_all "python3 missing"
export WORK="$TEST_TMP/work" PACK_SRC="$TEST_TMP/pack-src"
mkdir -p "$WORK" "$PACK_SRC"
cp "$top_srcdir/tests/packs/test-pack/pack.json" "$top_builddir/tests/packs/test-pack/cordon-test-pack" \
	"$PACK_SRC/"
cd "$WORK" || exit 1
python3 "$top_srcdir/tests/integration/pack-secrets.py"
