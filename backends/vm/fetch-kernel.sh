#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Fetch a guest kernel for builtin:vm into DIR (default: $XDG_STATE_HOME/cordon/vm):
# the Debian generic kernel .deb (apt-get download verifies it through apt's signed
# index chain), an uncompressed PVH vmlinux extracted from its bzImage, and the virtio and
# 9p modules the guest agent loads, in load order (DIR/modules.order). package.sha256 records
# the .deb's digest, SHA256SUMS every extracted file's.
set -eu

dir=${1:-${XDG_STATE_HOME:-$HOME/.local/state}/cordon/vm}
pkg=${CORDON_VM_KERNEL_PACKAGE:-}
mkdir -p "$dir"
cd "$dir"
if [ -s vmlinux ] && [ -s modules.order ] && sha256sum -c --quiet SHA256SUMS 2>/dev/null; then
	echo "$dir/vmlinux"
	exit 0
fi
if [ -z "$pkg" ]; then
	pkg=$(apt-cache search --names-only '^linux-image-[0-9.]+-[0-9]+-amd64$' |
		cut -d' ' -f1 | sort -V | tail -1)
fi
[ -n "$pkg" ] || { echo "fetch-kernel: no linux-image-*-amd64 package known to apt" >&2; exit 1; }
tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download "$pkg" >&2)
deb=$(ls "$tmp"/*.deb)
dpkg-deb -x "$deb" "$tmp/x"
vmlinuz=$(ls "$tmp"/x/boot/vmlinuz-*)
kver=${vmlinuz##*/vmlinuz-}
# The bzImage's payload is XZ: decompress from its magic (fd 37 7a 58 5a 00).
off=$(grep -abo "$(printf '\3757zXZ')" "$vmlinuz" | head -1 | cut -d: -f1)
[ -n "$off" ] || { echo "fetch-kernel: no XZ payload in $vmlinuz" >&2; exit 1; }
tail -c +$((off + 1)) "$vmlinuz" | xz -dc 2>/dev/null >"$tmp/vmlinux" || true
[ "$(head -c 4 "$tmp/vmlinux" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] ||
	{ echo "fetch-kernel: the extracted vmlinux is not an ELF file" >&2; exit 1; }
mkdir -p "$tmp/modules"
: >"$tmp/modules.order"
for m in virtio virtio_ring virtio_mmio virtio_console netfs fscache 9pnet 9pnet_virtio 9p; do
	f=$(find "$tmp/x/lib/modules/$kver" -name "$m.ko*" | head -1)
	[ -n "$f" ] || continue # built in
	case $f in
	*.xz) xz -dc "$f" >"$tmp/modules/$m.ko" ;;
	*) cp "$f" "$tmp/modules/$m.ko" ;;
	esac
	echo "$m.ko" >>"$tmp/modules.order"
done
rm -rf modules
mv "$tmp/modules" modules
mv "$tmp/modules.order" modules.order
mv "$tmp/vmlinux" vmlinux
echo "$kver" >kernel-version
(cd "$tmp" && sha256sum "${deb##*/}") >package.sha256
sha256sum vmlinux modules.order modules/*.ko >SHA256SUMS.new
mv SHA256SUMS.new SHA256SUMS
echo "$dir/vmlinux"
