#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# cordon-launcherd must never link libcurl or libsodium (nor anything that parses policy text
# or touches secrets): check the built binary's dynamic section.
. "${top_srcdir:-.}/tests/integration/launcherd-lib.sh"
[ -x "$LAUNCHERD" ] || skip_all "no $LAUNCHERD"
command -v readelf >/dev/null || skip_all "no readelf"
plan 4
needed=$(readelf -d "$LAUNCHERD" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
diag "NEEDED: $(echo $needed)"
check "does not link libcurl" test -z "$(echo "$needed" | grep -i curl)"
check "does not link libsodium" test -z "$(echo "$needed" | grep -i sodium)"
check "links libseccomp, libcap and libnl (what it does use)" \
	test "$(echo "$needed" | grep -cE '^(libseccomp|libcap|libnl-3)\.so')" = 3
check "not installed setuid by the build" test ! -u "$LAUNCHERD"
