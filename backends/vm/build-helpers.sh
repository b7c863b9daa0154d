#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Build builtin:vm's guest helpers reproducibly: build-helpers.sh SRCDIR OUTDIR
# SRCDIR is the top of the source tree, OUTDIR gets one static, stripped program per helper
# and MANIFEST ("NAME SHA256 SIZE", one a line, sorted by name). The flags are fixed (the
# build's CFLAGS do not apply): the same source on the same toolchain gives the same bytes in any
# build directory, so the digests in backends/vm/helper-pins.txt hold. CC picks the compiler.
set -eu

# The helpers: NAME SOURCES (relative to backends/vm/). Adding one is a line here, then
# `make vm-pins`.
HELPERS='
agent guest/agent.c ../../launcherd/launcherd-audit-record.c
forward guest/forward.c forward-mux.c
'

src=$(cd "$1" && pwd)
out=$2
cc=${CC:-cc}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export LC_ALL=C TZ=UTC
unset SOURCE_DATE_EPOCH
# What the helpers include of the tree: its top (launcherd's audit record parser), and an empty
# config.h in place of the build's (the parser needs nothing of it).
inc="$out/.include"
mkdir -p "$inc"
: >"$inc/config.h"
: >"$out/MANIFEST.tmp"
echo "$HELPERS" | while read -r name sources; do
	[ -n "$name" ] || continue
	set --
	for s in $sources; do
		set -- "$@" "$src/backends/vm/$s"
	done
	# shellcheck disable=SC2086 # (CC may carry words: "ccache gcc")
	$cc -std=gnu11 -Os -Wall -Wextra -static -s \
		-ffile-prefix-map="$src"=. -ffile-prefix-map="$out"=. -fno-ident \
		-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2 -I"$src" -iquote "$inc" \
		-Wl,--build-id=none \
		-o "$out/$name.tmp" "$@"
	mv "$out/$name.tmp" "$out/$name"
	sum=$(sha256sum "$out/$name")
	echo "$name ${sum%% *} $(stat -c %s "$out/$name")" >>"$out/MANIFEST.tmp"
done
sort "$out/MANIFEST.tmp" >"$out/MANIFEST"
rm -rf "$inc"
rm -f "$out/MANIFEST.tmp"
