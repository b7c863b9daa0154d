#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Build the builtin:vm initramfs: mkinitramfs.sh AGENT KERNEL_DIR OUT [FORWARD]
# AGENT is the static guest agent (it becomes /init), KERNEL_DIR what fetch-kernel.sh made
# (modules/ and modules.order), OUT the gzip'd newc cpio, FORWARD the guest helper `forward`
# (network "proxy"; /sbin/cordon-forward) when it was fetched. Busybox comes from busybox-static
# (/bin/busybox), with a link for each applet.
set -eu
agent=$1 kdir=$2 out=$3 forward=${4:-}
busybox=${CORDON_VM_BUSYBOX:-/bin/busybox}
[ -x "$busybox" ] || { echo "mkinitramfs: no static busybox at $busybox (busybox-static)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/sbin" "$tmp/usr/bin" "$tmp/usr/sbin" "$tmp/dev" "$tmp/proc" \
	"$tmp/sys" "$tmp/tmp" "$tmp/etc" "$tmp/lib/modules" "$tmp/root"
cp "$agent" "$tmp/init"
chmod 0755 "$tmp/init"
if [ -n "$forward" ]; then
	cp "$forward" "$tmp/sbin/cordon-forward"
	chmod 0755 "$tmp/sbin/cordon-forward"
fi
cp "$busybox" "$tmp/bin/busybox"
for a in $("$busybox" --list-full); do
	[ -e "$tmp/$a" ] || ln -s /bin/busybox "$tmp/$a"
done
cp "$kdir"/modules/*.ko "$tmp/lib/modules/"
cp "$kdir/modules.order" "$tmp/etc/agent-modules"
echo 'root:x:0:0:root:/root:/bin/sh' >"$tmp/etc/passwd"
echo 'root:x:0:' >"$tmp/etc/group"
(cd "$tmp" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
