#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Set up builtin:vm's guest kernel in DIR (<vmDir>, default $XDG_STATE_HOME/cordon/vm) from the
# distribution's generic kernel package, which is fetched but never installed on the host:
#
#   fetch-kernel.sh [--package FILE.deb | --url URL] [--sha256 HEX] [--name PACKAGE]
#                   [--initramfs OUT [--agent AGENT]] [--force] [--progress] [DIR]
#
# The package comes from apt (apt-get download: verified through apt's signed index chain; the
# newest linux-image-N-amd64 apt knows, or --name), a local file (--package), or a URL
# (--url: http:, https:, file:; downloaded by cordon-vm-helpers, which needs --sha256). With
# --sha256 the package's digest must match. From it: an uncompressed PVH vmlinux (from the
# bzImage's XZ payload) and the virtio and 9p modules the guest agent loads, in load order.
#
# Layout: each kernel is a directory of its own, DIR/kernel.VERSION.SHA8.RANDOM (vmlinux, modules/,
# modules.order, kernel-version, SHA256SUMS, source: where the package came from and how it was
# verified), and DIR/kernel is a symlink to the current one; DIR/vmlinux, modules, modules.order
# and kernel-version are symlinks through DIR/kernel. A new kernel is built beside the current
# one and switched in by renaming one symlink: a setup that fails or is killed leaves the
# previous kernel in place, whole. With --initramfs (the backend's default initramfs), that file
# is removed just before the switch (its modules are the old kernel's; the backend rebuilds a
# missing one on activation) and, when AGENT exists, built again with mkinitramfs.sh.
#
# Without --force, a kernel already in place whose files match its SHA256SUMS is kept when no
# package was named (--package, --url or --name). Prints DIR/vmlinux on success.
#
# Exit status: 0 done; 1 the package could not be had (apt, a download, a missing file);
# 2 usage; 3 refused: the package does not match --sha256, is corrupt or holds no usable kernel
# (nothing changed); 4 the kernel could not be put in place or the initramfs not built.
set -eu

me=fetch-kernel
die() {
	code=$1
	shift
	echo "$me: $*" >&2
	exit "$code"
}
say() { [ -z "$progress" ] || echo "$me: $*" >&2; }

pkg_file='' url='' sha='' name='' initramfs='' agent='' force='' progress='' dir=''
while [ $# -gt 0 ]; do
	case $1 in
	--package) [ $# -ge 2 ] || die 2 "--package wants a file"; pkg_file=$2; shift ;;
	--url) [ $# -ge 2 ] || die 2 "--url wants a URL"; url=$2; shift ;;
	--sha256) [ $# -ge 2 ] || die 2 "--sha256 wants a digest"; sha=$2; shift ;;
	--name) [ $# -ge 2 ] || die 2 "--name wants a package name"; name=$2; shift ;;
	--initramfs) [ $# -ge 2 ] || die 2 "--initramfs wants a path"; initramfs=$2; shift ;;
	--agent) [ $# -ge 2 ] || die 2 "--agent wants a path"; agent=$2; shift ;;
	--force) force=1 ;;
	--progress) progress=1 ;;
	-*) die 2 "unknown option $1" ;;
	*) [ -z "$dir" ] || die 2 "one directory only"; dir=$1 ;;
	esac
	shift
done
[ -z "$pkg_file" ] || [ -z "$url" ] || die 2 "--package and --url exclude each other"
[ -z "$name" ] || [ -z "$pkg_file$url" ] || die 2 "--name is for apt only"
[ -z "$url" ] || [ -n "$sha" ] || die 2 "--url needs --sha256 (a download is only as good as its digest)"
if [ -n "$sha" ]; then
	sha=$(echo "$sha" | tr 'A-F' 'a-f')
	case $sha in
	*[!0-9a-f]*) die 2 "--sha256 wants 64 hex digits" ;;
	esac
	[ ${#sha} -eq 64 ] || die 2 "--sha256 wants 64 hex digits"
fi
case $url in
'' | http://* | https://* | file://*) ;;
*) die 2 "--url wants http://, https:// or file://" ;;
esac
[ -z "$name" ] || expr "$name" : 'linux-image-[a-z0-9.+-]*$' >/dev/null ||
	die 2 "--name wants a linux-image-* package"
dir=${dir:-${XDG_STATE_HOME:-$HOME/.local/state}/cordon/vm}
case $dir in /*) ;; *) dir=$(pwd)/$dir ;; esac
if [ -n "$pkg_file" ]; then
	case $pkg_file in /*) ;; *) pkg_file=$(pwd)/$pkg_file ;; esac
	[ -f "$pkg_file" ] || die 1 "no package file $pkg_file"
fi

mkdir -p "$dir" || die 4 "cannot create $dir"
cd "$dir"
# One setup at a time per directory.
exec 9<"$dir"
flock 9 || die 4 "cannot lock $dir"

if [ -z "$force$pkg_file$url$name" ] && [ -s vmlinux ] && [ -s modules.order ] &&
	(cd "$(dirname "$(readlink -f vmlinux)")" && sha256sum -c --quiet SHA256SUMS) >/dev/null 2>&1; then
	say "kernel $(cat kernel-version 2>/dev/null || echo '?') already in place"
	echo "$dir/vmlinux"
	exit 0
fi

# Leftovers of a setup that was killed.
rm -rf .setup.*
tmp=$(mktemp -d "$dir/.setup.XXXXXX") || die 4 "cannot create a directory in $dir"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

# 1. The package.
if [ -n "$pkg_file" ]; then
	deb=$pkg_file
	from="file $pkg_file"
	how=${sha:+sha256}
elif [ -n "$url" ]; then
	tool=${CORDON_VM_HELPERS:-cordon-vm-helpers}
	say "downloading $url"
	rc=0
	"$tool" download --url "$url" --sha256 "$sha" --out "$tmp/package.deb" \
		${progress:+--progress} >/dev/null || rc=$?
	case $rc in
	0) ;;
	3) die 3 "the package from $url does not match --sha256: refused" ;;
	*) die 1 "the package could not be downloaded from $url" ;;
	esac
	deb=$tmp/package.deb
	from="url $url"
	how=sha256
else
	if [ -z "$name" ]; then
		name=$(apt-cache search --names-only '^linux-image-[0-9.]+-[0-9]+-amd64$' 2>/dev/null |
			cut -d' ' -f1 | sort -V | tail -1)
		[ -n "$name" ] || die 1 "no linux-image-*-amd64 package known to apt (apt-get update, or --package FILE.deb / --url URL)"
	fi
	say "downloading $name with apt-get (verified by apt's signed index)"
	mkdir "$tmp/apt"
	if [ -n "$progress" ]; then
		(cd "$tmp/apt" && apt-get download "$name" >&2) || die 1 "apt-get download $name failed"
	else
		(cd "$tmp/apt" && apt-get -q download "$name" >/dev/null 2>"$tmp/apt.err") ||
			die 1 "apt-get download $name failed: $(tail -1 "$tmp/apt.err")"
	fi
	deb=$(ls "$tmp"/apt/*.deb 2>/dev/null | head -1)
	[ -n "$deb" ] || die 1 "apt-get download $name left no package"
	from="apt $name"
	how=apt
fi
say "verifying $(basename "$deb")"
got=$(sha256sum "$deb" | cut -d' ' -f1) || die 1 "cannot read $deb"
[ -z "$sha" ] || [ "$got" = "$sha" ] ||
	die 3 "$(basename "$deb") has sha256 $got, not $sha: refused"
pname=$(dpkg-deb -f "$deb" Package 2>/dev/null) || die 3 "$(basename "$deb") is not a Debian package (corrupt?): refused"
pver=$(dpkg-deb -f "$deb" Version 2>/dev/null) || pver=unknown
case $pname in
linux-image-*) ;;
*) die 3 "$(basename "$deb") is $pname, not a linux-image package: refused" ;;
esac

# 2. The kernel and its modules.
say "extracting $pname $pver"
dpkg-deb -x "$deb" "$tmp/x" 2>"$tmp/dpkg.err" ||
	die 3 "$(basename "$deb") cannot be unpacked (corrupt?): $(tail -1 "$tmp/dpkg.err"): refused"
vmlinuz=$(ls "$tmp"/x/boot/vmlinuz-* 2>/dev/null | head -1)
[ -n "$vmlinuz" ] || die 3 "$pname holds no /boot/vmlinuz-*: refused"
kver=${vmlinuz##*/vmlinuz-}
case $kver in
*/* | '' | .*) die 3 "$pname: odd kernel version \"$kver\": refused" ;;
esac
gen=kernel.$kver.$(echo "$got" | cut -c1-8).${tmp##*/.setup.}
g=$tmp/$gen
mkdir "$g" "$g/modules"
# The bzImage's payload is XZ: decompress from its magic (fd 37 7a 58 5a 00).
off=$(LC_ALL=C grep -abo "$(printf '\3757zXZ')" "$vmlinuz" | head -1 | cut -d: -f1)
[ -n "$off" ] || die 3 "no XZ payload in $pname's vmlinuz: refused"
tail -c +$((off + 1)) "$vmlinuz" | xz -dc 2>/dev/null >"$g/vmlinux" || true
[ "$(head -c 4 "$g/vmlinux" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] ||
	die 3 "the vmlinux extracted from $pname is not an ELF file: refused"
# PVH entry: an ELF note "Xen", type 18 (XEN_ELFNOTE_PHYS32_ENTRY); QEMU's microvm needs it.
LC_ALL=C grep -qaP '\x04\x00\x00\x00[\x04\x08]\x00\x00\x00\x12\x00\x00\x00Xen\x00' "$g/vmlinux" ||
	die 3 "the vmlinux of $pname has no PVH entry note (CONFIG_PVH): refused"
: >"$g/modules.order"
for m in virtio virtio_ring virtio_mmio virtio_console netfs fscache 9pnet 9pnet_virtio 9p; do
	f=$(find "$tmp/x/lib/modules/$kver" -name "$m.ko*" 2>/dev/null | head -1)
	[ -n "$f" ] || continue # built in
	case $f in
	*.xz) xz -dc "$f" >"$g/modules/$m.ko" ;;
	*.zst) zstd -qdc "$f" >"$g/modules/$m.ko" ;;
	*) cp "$f" "$g/modules/$m.ko" ;;
	esac || die 3 "module $m of $pname cannot be unpacked: refused"
	echo "$m.ko" >>"$g/modules.order"
done
rm -rf "$tmp/x" "$tmp/apt" "$tmp/package.deb"
echo "$kver" >"$g/kernel-version"
echo "$got  $(basename "$deb")" >"$g/package.sha256"
{
	echo "package $pname $pver"
	echo "sha256 $got"
	echo "from $from"
	echo "verified ${how:-none}"
	echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$g/source"
(cd "$g" && sha256sum vmlinux modules.order modules/*.ko >SHA256SUMS) 2>/dev/null ||
	(cd "$g" && sha256sum vmlinux modules.order >SHA256SUMS) || die 4 "cannot write in $dir"
chmod -R a+rX,go-w "$g"
sync -f "$g/vmlinux" 2>/dev/null || sync

# 3. The switch: the new directory beside the old, then one rename of the kernel symlink.
say "installing kernel $kver into $dir"
mv "$g" "$dir/$gen" || die 4 "cannot move the kernel into $dir"
[ -z "$initramfs" ] || rm -f "$initramfs"
ln -s "$gen" "$tmp/kernel" && mv -T "$tmp/kernel" "$dir/kernel" || die 4 "cannot switch $dir/kernel"
# The fixed names, through kernel/ (once; a flat layout of an older fetch-kernel.sh is replaced).
for f in modules.order kernel-version modules vmlinux; do
	[ "$(readlink "$f" 2>/dev/null)" = "kernel/$f" ] && continue
	ln -s "kernel/$f" "$tmp/$f.link" || die 4 "cannot write in $dir"
	if [ -d "$f" ] && [ ! -L "$f" ]; then
		mv "$f" "$tmp/$f.old" || die 4 "cannot replace $dir/$f"
	fi
	mv -T "$tmp/$f.link" "$f" || die 4 "cannot replace $dir/$f"
done
rm -f SHA256SUMS package.sha256
for old in kernel.*; do
	[ "$old" = "$gen" ] || rm -rf "$old"
done
sync -f "$dir" 2>/dev/null || true

# 4. The initramfs, when the agent is there (else the backend builds it on activation).
if [ -n "$initramfs" ] && [ -n "$agent" ] && [ -f "$agent" ]; then
	say "building $initramfs"
	mk=${CORDON_VM_MKINITRAMFS:-$(dirname "$0")/mkinitramfs.sh}
	/bin/sh "$mk" "$agent" "$dir" "$initramfs" || die 4 "the initramfs $initramfs could not be built"
fi
say "kernel $kver ($pname $pver, sha256 $got, verified: ${how:-none}) in $dir"
echo "$dir/vmlinux"
