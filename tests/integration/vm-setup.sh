#!/usr/bin/env bash
# cordon vm setup (backends/vm/fetch-kernel.sh): builtin:vm's guest kernel from the
# distribution's real kernel package, never installed: the .deb apt already has
# (/var/cache/apt/archives, or $CORDON_VM_KERNEL_DEB; .ci/run fetches it with apt-get download),
# set up from the file and from a local HTTP server on 127.0.0.1 (--mirror, with --sha256), into
# the backend's <vmDir> (its kernel setting's directory) or --dir. Refused, with the kernel in
# place untouched and no temporary file left: a wrong sha256 (exit 3), a corrupt package (exit
# 3), a --mirror without --sha256 (exit 125); a setup killed midway leaves the previous kernel
# whole. The initramfs is rebuilt when the guest helpers are there; cordon doctor shows the
# kernel's path, version and PVH entry; and builtin:vm activates and runs a command on the
# kernel set up (when QEMU is here). Skipped without the package, unless CORDON_MUST_WORK=1.
. "${top_srcdir:?}/tests/integration/cli-lib.sh"

if [ -n "${CORDON_SKIP_SLOW:-}" ]; then
	echo "1..0 # SKIP slow: run in the other build"
	exit 0
fi
[ -x "$CORDON" ] || skip_all "cordon not built"
[ -x "$top_builddir/cordon-vm-helpers" ] || skip_all "cordon-vm-helpers not built"
DEB=${CORDON_VM_KERNEL_DEB:-$(ls /var/cache/apt/archives/linux-image-[0-9]*-amd64_*_amd64.deb 2>/dev/null |
	grep -v -- '-dbg_' | sort -V | tail -1)}
[ -n "$DEB" ] && [ -s "$DEB" ] ||
	skip_all "no linux-image-*-amd64 .deb in /var/cache/apt/archives (apt-get download linux-image-amd64 there, or CORDON_VM_KERNEL_DEB)"
command -v dpkg-deb >/dev/null || skip_all "dpkg-deb missing"
command -v python3 >/dev/null || skip_all "python3 missing (the test's HTTP server)"

export CORDON_VM_HELPERS="$top_builddir/cordon-vm-helpers"
export CORDON_VM_FETCH_KERNEL="$top_srcdir/backends/vm/fetch-kernel.sh"
export CORDON_VM_MKINITRAMFS="$top_srcdir/backends/vm/mkinitramfs.sh"
SHA=$(sha256sum "$DEB" | cut -d' ' -f1)
KVER=$(dpkg-deb -c "$DEB" | sed -n 's|.*\./boot/vmlinuz-\(.*\)$|\1|p' | head -1)
[ -n "$KVER" ] || skip_all "$DEB holds no /boot/vmlinuz-*"

# The test's own HTTP server on loopback, serving SRV.
SRV="$TEST_TMP/srv"
mkdir -p "$SRV"
ln -s "$DEB" "$SRV/good.deb"
head -c $(($(stat -L -c %s "$DEB") / 2)) "$DEB" >"$SRV/corrupt.deb"
(cd "$SRV" && exec python3 -m http.server 0 --bind 127.0.0.1) >"$TEST_TMP/http.log" 2>&1 &
HTTP_PID=$!
trap 'kill "$HTTP_PID" 2>/dev/null; cleanup' EXIT
PORT=
for _ in $(seq 100); do
	PORT=$(sed -n 's/.*port \([0-9][0-9]*\).*/\1/p' "$TEST_TMP/http.log" | head -1)
	[ -n "$PORT" ] && break
	sleep 0.1
done
[ -n "$PORT" ] || skip_all "the test's HTTP server did not start: $(cat "$TEST_TMP/http.log")"
URL="http://127.0.0.1:$PORT"

VMD="$TEST_TMP/vm"
# What is in place: the kernel directory the symlink names and the digest of its vmlinux.
state() { echo "$(readlink "$1/kernel") $(sha256sum "$1/vmlinux" 2>&1 | cut -d' ' -f1)"; }
leftovers() { find "$1" -maxdepth 1 \( -name '.setup.*' -o -name '*.tmp' -o -name '.*.tmp' \) | wc -l; }

# 1. From the package file, into the backend's <vmDir> (its kernel setting).
"$CORDON" backend settings builtin:vm --set kernel="$VMD/vmlinux" >/dev/null
ok $? "the kernel setting names <vmDir>/vmlinux"
out=$("$CORDON" vm setup --package "$DEB" 2>&1)
ok $? "vm setup --package installs the kernel ($out)"
is "7f454c46" "$(head -c 4 "$VMD/vmlinux" | od -An -tx1 | tr -d ' ')" "vmlinux is an uncompressed ELF kernel"
is "$KVER" "$(cat "$VMD/kernel-version" 2>&1)" "its version is the package's"
(cd "$VMD/kernel" && sha256sum -c --quiet SHA256SUMS) >/dev/null 2>&1
ok $? "every file matches SHA256SUMS"
grep -qx 'virtio_mmio.ko\|9p.ko\|9pnet_virtio.ko' "$VMD/modules.order" && [ -s "$VMD/modules/$(head -1 "$VMD/modules.order")" ]
ok $? "the modules the agent loads are there, in load order"
grep -qx "sha256 $SHA" "$VMD/kernel/source" && grep -qx "from file $DEB" "$VMD/kernel/source"
ok $? "the package's digest and origin are recorded ($(tr '\n' ';' <"$VMD/kernel/source"))"
[ -L "$VMD/vmlinux" ] && [ -L "$VMD/kernel" ] && [ "$(find "$VMD" -maxdepth 1 -name 'kernel.*' | wc -l)" = 1 ]
ok $? "vmlinux goes through the kernel symlink to one kernel directory"
is "Xen" "$(LC_ALL=C grep -aoP '\x04\x00\x00\x00[\x04\x08]\x00\x00\x00\x12\x00\x00\x00\KXen' "$VMD/vmlinux" | head -1)" \
	"the vmlinux has a PVH entry note"

# 2. cordon doctor: the kernel's path, version, PVH.
doc=$("$CORDON" doctor --json 2>&1 | python3 -c 'import json,sys
for c in json.load(sys.stdin)["checks"]:
    if c["name"] == "vm": print(c["detail"]); print(c.get("hint", ""))')
case $doc in
*"kernel $VMD/vmlinux (version $KVER, PVH-bootable)"*) ok 0 "doctor shows the kernel, its version and PVH entry" ;;
*) ok 1 "doctor shows the kernel, its version and PVH entry ($doc)" ;;
esac

# 3. From the local HTTP server, with its sha256; a second kernel directory replaces the first.
before=$(readlink "$VMD/kernel")
out=$("$CORDON" vm setup --mirror "$URL/good.deb" --sha256 "$SHA" --json 2>&1)
ok $? "vm setup --mirror URL --sha256 installs it again ($out)"
grep -qx "from url $URL/good.deb" "$VMD/kernel/source" && grep -qx "verified sha256" "$VMD/kernel/source"
ok $? "the URL and the verification are recorded"
[ "$(readlink "$VMD/kernel")" != "$before" ] && [ ! -e "$VMD/$before" ]
ok $? "the new kernel directory replaced the old one"
is 0 "$(leftovers "$VMD")" "no temporary file left"

# 4. Refusals: the kernel in place stays, nothing is left behind.
good=$(state "$VMD")
wrong=$(echo "$SHA" | tr '0-9a-f' '1-9a-f0')
out=$("$CORDON" vm setup --mirror "$URL/good.deb" --sha256 "$wrong" 2>&1)
is 3 "$?" "a wrong sha256 is refused, exit 3 ($out)"
case $out in *"$wrong"*) ok 0 "the error names the digest expected" ;; *) ok 1 "the error names the digest expected ($out)" ;; esac
is "$good" "$(state "$VMD")" "the kernel in place is untouched"
is 0 "$(leftovers "$VMD")" "no temporary file left"
out=$("$CORDON" vm setup --package "$SRV/corrupt.deb" 2>&1)
is 3 "$?" "a corrupt package is refused, exit 3 ($out)"
is "$good" "$(state "$VMD")" "the kernel in place is untouched"
is 0 "$(leftovers "$VMD")" "no temporary file left"
out=$("$CORDON" vm setup --mirror "$URL/corrupt.deb" --sha256 "$(sha256sum "$SRV/corrupt.deb" | cut -d' ' -f1)" 2>&1)
is 3 "$?" "a corrupt package of the right digest is refused too ($out)"
is "$good" "$(state "$VMD")" "the kernel in place is untouched"
out=$("$CORDON" vm setup --package "$SRV/corrupt.deb" --sha256 "$SHA" 2>&1)
is 3 "$?" "a local file whose digest is not --sha256 is refused ($out)"
out=$("$CORDON" vm setup --mirror "$URL/nothing.deb" --sha256 "$SHA" 2>&1)
is 1 "$?" "a URL that does not answer the file: exit 1 ($out)"
"$CORDON" vm setup --mirror "$URL/good.deb" >/dev/null 2>&1
is 125 "$?" "--mirror without --sha256 is a usage error"
"$CORDON" vm setup --package /nonexistent.deb >/dev/null 2>&1
is 1 "$?" "a missing package file: exit 1"
is "$good" "$(state "$VMD")" "after all of them, the same kernel"

# 5. Killed midway (the whole process group, during the extraction): the previous kernel stays
# whole, and the next setup clears what it left.
setsid "$CORDON" vm setup --package "$DEB" --force >/dev/null 2>&1 &
kpid=$!
for _ in $(seq 200); do
	[ -n "$(find "$VMD" -maxdepth 2 -path '*/.setup.*/kernel.*' 2>/dev/null)" ] && break
	sleep 0.05
done
kill -9 -- -"$kpid" 2>/dev/null
wait "$kpid" 2>/dev/null
is "$good" "$(state "$VMD")" "a setup killed midway leaves the kernel in place"
(cd "$VMD/kernel" && sha256sum -c --quiet SHA256SUMS) >/dev/null 2>&1
ok $? "whole: its files match SHA256SUMS"

# 6. With the guest helpers fetched, setup rebuilds the initramfs from them and this kernel.
CC=$(sed -n 's/^CC = //p' "$top_builddir/Makefile")
HELPERS="$TEST_TMP/helpers"
if (cd "$TEST_TMP" && CC=$CC "$top_srcdir/backends/vm/build-helpers.sh" "$top_srcdir" "$HELPERS") \
	>"$TEST_TMP/helpers.log" 2>&1 &&
	"$CORDON" vm fetch-helpers --base-url "file://$HELPERS/" >/dev/null 2>&1; then
	out=$("$CORDON" vm setup --mirror "$URL/good.deb" --sha256 "$SHA" 2>&1)
	ok $? "vm setup with the helpers there ($out)"
	[ -s "$VMD/initramfs.cpio.gz" ] && [ ! "$VMD/kernel/vmlinux" -nt "$VMD/initramfs.cpio.gz" ]
	ok $? "the initramfs is rebuilt after the kernel"
	m=$(head -1 "$VMD/modules.order")
	gunzip -c "$VMD/initramfs.cpio.gz" | (mkdir -p "$TEST_TMP/ird" && cd "$TEST_TMP/ird" &&
		cpio -i --quiet -d "lib/modules/$m" 2>/dev/null)
	cmp -s "$TEST_TMP/ird/lib/modules/$m" "$VMD/modules/$m"
	ok $? "with this kernel's modules ($m)"
	is 0 "$(leftovers "$VMD")" "what the killed setup left is gone"
else
	for _ in 1 2 3 4; do skip "the guest helpers do not build: $(tail -c 300 "$TEST_TMP/helpers.log")"; done
fi

# 7. doctor: a kernel that is not PVH-bootable, and a missing one.
VMB="$TEST_TMP/vm-bad"
mkdir -p "$VMB"
dpkg-deb --fsys-tarfile "$DEB" | tar -xO "./boot/vmlinuz-$KVER" >"$VMB/vmlinux"
"$CORDON" backend settings builtin:vm --set kernel="$VMB/vmlinux" >/dev/null
doc=$("$CORDON" doctor --json 2>&1 | python3 -c 'import json,sys
for c in json.load(sys.stdin)["checks"]:
    if c["name"] == "vm": print(c["ok"], c["detail"], c.get("hint", ""))')
case $doc in
False*"not PVH-bootable"*"cordon vm setup"*) ok 0 "doctor: a bzImage is not PVH-bootable, and says what to run" ;;
*) ok 1 "doctor: a bzImage is not PVH-bootable, and says what to run ($doc)" ;;
esac
"$CORDON" backend settings builtin:vm --set kernel="$TEST_TMP/none/vmlinux" >/dev/null
doc=$("$CORDON" doctor --json 2>&1 | python3 -c 'import json,sys
for c in json.load(sys.stdin)["checks"]:
    if c["name"] == "vm": print(c["ok"], c["detail"], c.get("hint", ""))')
case $doc in
False*"missing: $TEST_TMP/none/vmlinux"*"cordon vm setup"*) ok 0 "doctor: a missing kernel, and cordon vm setup to fetch one" ;;
*) ok 1 "doctor: a missing kernel, and cordon vm setup to fetch one ($doc)" ;;
esac
# A kernel setting that is not <dir>/vmlinux: setup wants --dir rather than guess.
"$CORDON" backend settings builtin:vm --set kernel="$VMB/bzImage" >/dev/null
"$CORDON" vm setup --package "$DEB" >/dev/null 2>&1
is 125 "$?" "a kernel setting not named vmlinux: setup asks for --dir"

"$CORDON" backend settings builtin:vm --set kernel="$VMD/vmlinux" >/dev/null
ok $? "the kernel setting names <vmDir>/vmlinux again"

# 8. builtin:vm activates on what setup made, and runs a command.
if command -v qemu-system-x86_64 >/dev/null && [ -x /bin/busybox ] && [ -s "$VMD/initramfs.cpio.gz" ]; then
	chmod a+rx "$TEST_TMP" "$VMD"
	WORK="$TEST_TMP/work"
	mkdir -p "$WORK"
	cd "$WORK" || exit 1
	out=$("$CORDON" backend activate builtin:vm --set helpersBaseUrl="file://$HELPERS/" 2>&1)
	ok $? "builtin:vm activates after vm setup ($out)"
	out=$("$CORDON" exec -- /bin/sh -c 'uname -r' 2>&1)
	is "$KVER" "$out" "a command runs in a guest on the kernel set up"
	cd "$TEST_TMP" || exit 1
else
	for _ in 1 2; do skip "no QEMU, busybox-static or initramfs here"; done
fi

# 9. An older flat layout (files, not symlinks) is replaced in place.
VMF="$TEST_TMP/vm-flat"
mkdir -p "$VMF/modules"
echo old >"$VMF/vmlinux"
echo old.ko >"$VMF/modules.order"
echo x >"$VMF/modules/old.ko"
out=$("$CORDON" vm setup --package "$DEB" --dir "$VMF" 2>&1)
ok $? "vm setup --dir over a flat layout ($out)"
[ -L "$VMF/vmlinux" ] && [ -L "$VMF/modules" ] && [ ! -e "$VMF/modules/old.ko" ] &&
	[ "$(head -c 4 "$VMF/vmlinux" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]
ok $? "its files became the symlinks to the new kernel"
is 0 "$(leftovers "$VMF")" "no temporary file left"
echo "1..$TAP_N"
done_testing
