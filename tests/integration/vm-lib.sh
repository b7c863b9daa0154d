# SPDX-License-Identifier: LGPL-2.1-or-later
# Shared set-up of the builtin:vm tests (vm-backend.sh, vm-baseline.sh, vm-controller-kill.sh,
# vm-guard.sh, vm-proxy.sh; sourced after cli-lib.sh). Slow (a boot per command under TCG): run
# once per CI, in the first build (CORDON_SKIP_SLOW skips). Skipped when cordon, QEMU, busybox
# or the guest kernel cannot be had (a failure under CORDON_MUST_WORK=1). Then:
#   CACHE    the guest kernel's directory ($CORDON_VM_CACHE, made by backends/vm/fetch-kernel.sh)
#   HELPERS  the guest helpers' offline mirror: this source built as the pins say
#            (tests/integration/vm-helpers.sh fails when it does not)
#   VMD      a <vmDir>: the cached kernel and its modules, linked; bin/ and the initramfs are
#            the backend's
# and the controller runs the build's cordon-vm-helpers and mkinitramfs.sh.
if [ -n "${CORDON_SKIP_SLOW:-}" ]; then
	echo "1..0 # SKIP slow: run in the other build"
	exit 0
fi

CACHE=${CORDON_VM_CACHE:-$top_builddir/vm-cache}
need() { skip_all "$1"; }
[ -x "$CORDON" ] || skip_all "cordon not built"
[ -x "$top_builddir/cordon-vm-helpers" ] || skip_all "cordon-vm-helpers not built"
command -v qemu-system-x86_64 >/dev/null || need "qemu-system-x86_64 missing (qemu-system-x86)"
[ -x /bin/busybox ] || need "no static busybox (busybox-static)"
{ [ -s "$CACHE/vmlinux" ] && [ -s "$CACHE/modules.order" ]; } ||
	need "no guest kernel in $CACHE (backends/vm/fetch-kernel.sh $CACHE fetches it)"
chmod -R a+rX "$CACHE"
export CORDON_VM_HELPERS="$top_builddir/cordon-vm-helpers"
export CORDON_VM_MKINITRAMFS="$top_srcdir/backends/vm/mkinitramfs.sh"
CC=$(sed -n 's/^CC = //p' "$top_builddir/Makefile")
HELPERS="$TEST_TMP/helpers"
(cd "$TEST_TMP" && CC=$CC "$top_srcdir/backends/vm/build-helpers.sh" "$top_srcdir" "$HELPERS") \
	>"$TEST_TMP/helpers.log" 2>&1 || need "the guest helpers do not build: $(tail -c 300 "$TEST_TMP/helpers.log")"
VMD="$TEST_TMP/vm"
mkdir -p "$VMD"
for f in vmlinux modules modules.order; do ln -s "$CACHE/$f" "$VMD/$f"; done
chmod a+rx "$TEST_TMP" "$VMD"
