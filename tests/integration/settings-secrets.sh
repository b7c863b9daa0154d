#!/usr/bin/env bash
# Backend settings, secrets and host interactions (see settings-secrets.py), against the test
# build of the controller (builtin:test, test.interaction).
#
# The read-only-settings-directory case needs a directory the controller cannot write: for
# root (which ignores modes) that is a read-only bind mount, so the test runs in a private
# mount namespace of its own when it is root.
if [ "$(id -u)" = 0 ] && [ -z "${CORDON_TEST_IN_MOUNTNS:-}" ] && command -v unshare >/dev/null &&
	unshare -m --propagation private true 2>/dev/null; then
	CORDON_TEST_IN_MOUNTNS=1 exec unshare -m --propagation private "$BASH" "$0" "$@"
fi
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

[ -x "$CORDON" ] || skip_all "cordon not built"
command -v python3 >/dev/null || skip_all "python3 missing"
CORDON_CONTROLLER="$top_builddir/tests/helpers/cordon-controller-test"
[ -x "$CORDON_CONTROLLER" ] || skip_all "the test build of the controller is missing"
export CORDON_CONTROLLER
export CORDON_LOG_LEVEL=debug
export WORK="$TEST_TMP/work"
mkdir -p "$WORK"
cd "$WORK" || exit 1
python3 "$top_srcdir/tests/integration/settings-secrets.py"
