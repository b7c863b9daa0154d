## backends/vm/: builtin:vm, a QEMU micro-VM per lease and per one-shot command. vm.c (the host
## side) joins libbackend.a; the guest agent is a static program the initramfs runs as PID 1
## (backends/vm/mkinitramfs.sh packs it with busybox and the kernel's virtio and 9p modules,
## which backends/vm/fetch-kernel.sh fetches).
libbackend_a_SOURCES += \
	backends/vm/vm.c backends/vm/vm.h backends/vm/vm-proto.h \
	backends/vm/forward-mux.c backends/vm/forward-mux.h \
	backends/vm/vm-baseline.c backends/vm/vm-baseline.h \
	backends/vm/vm-kernel.c backends/vm/vm-kernel.h

# Not installed: the backend fetches the pinned agent into <vmDir>/bin (below); this build's copy
# is for the tests and bench/vm.sh.
noinst_PROGRAMS += backends/vm/guest/cordon-vm-agent
backends_vm_guest_cordon_vm_agent_SOURCES = backends/vm/guest/agent.c backends/vm/vm-proto.h \
	launcherd/launcherd-audit-record.c launcherd/launcherd-audit-record.h
# Its own flags: it runs alone in the guest, so no sanitizer or shared library of the build.
backends_vm_guest_cordon_vm_agent_CFLAGS = -Os -Wall -Wextra
backends_vm_guest_cordon_vm_agent_LDFLAGS = -static -s

vmscriptsdir = $(pkgdatadir)/vm
dist_vmscripts_SCRIPTS = backends/vm/fetch-kernel.sh backends/vm/mkinitramfs.sh
# Where vm.c finds mkinitramfs.sh (it builds the default initramfs from the fetched agent): the
# directory configure chose, so written again only after a configure.
backends/vm/vm-paths.h: $(top_builddir)/config.status
	$(AM_V_GEN)$(MKDIR_P) backends/vm && \
		echo '#define VM_SCRIPTS_DIR "$(vmscriptsdir)"' >$@.tmp && mv $@.tmp $@
backends/vm/libbackend_a-vm.$(OBJEXT): backends/vm/vm-paths.h
CLEANFILES += backends/vm/vm-paths.h

TESTS += tests/integration/vm-backend.sh
EXTRA_DIST += tests/integration/vm-backend.sh tests/integration/vm-lib.sh
TESTS += tests/integration/vm-baseline.sh
EXTRA_DIST += tests/integration/vm-baseline.sh
TESTS += tests/integration/vm-proxy.sh
EXTRA_DIST += tests/integration/vm-proxy.sh
## Network "proxy"'s multiplexer on arbitrary guest bytes; make check replays
## tests/fuzz/corpus/forward-mux/.
check_PROGRAMS += tests/fuzz/fuzz-forward-mux
TESTS += tests/fuzz/fuzz-forward-mux
tests_fuzz_fuzz_forward_mux_SOURCES = tests/fuzz/fuzz-forward-mux.c tests/fuzz/fuzz-main.c \
	backends/vm/forward-mux.c backends/vm/forward-mux.h
tests_fuzz_fuzz_forward_mux_LDADD = $(FUZZ_REPLAY_LDADD)
if ENABLE_FUZZING
noinst_PROGRAMS += fuzz-forward-mux-libfuzzer
fuzz_forward_mux_libfuzzer_SOURCES = tests/fuzz/fuzz-forward-mux.c backends/vm/forward-mux.c \
	backends/vm/forward-mux.h
fuzz_forward_mux_libfuzzer_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer,address
fuzz_forward_mux_libfuzzer_LDFLAGS = -fsanitize=fuzzer,address
endif

## cordon vm setup (fetch-kernel.sh) from a local package and a local HTTP server.
TESTS += tests/integration/vm-setup.sh
EXTRA_DIST += tests/integration/vm-setup.sh
## SIGKILL of the controller while a VM boots, restores or saves a baseline.
TESTS += tests/integration/vm-controller-kill.sh
EXTRA_DIST += tests/integration/vm-controller-kill.sh

## The guest kernel inspector (cordon doctor's PVH check); make check replays
## tests/fuzz/corpus/vm-kernel/.
check_PROGRAMS += tests/fuzz/fuzz-vm-kernel
TESTS += tests/fuzz/fuzz-vm-kernel
tests_fuzz_fuzz_vm_kernel_SOURCES = tests/fuzz/fuzz-vm-kernel.c tests/fuzz/fuzz-main.c \
	backends/vm/vm-kernel.c
tests_fuzz_fuzz_vm_kernel_LDADD = libtap.a libcommon.a $(JANSSON_LIBS)
tests_fuzz_fuzz_vm_kernel_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
if ENABLE_FUZZING
noinst_PROGRAMS += fuzz-vm-kernel-libfuzzer
fuzz_vm_kernel_libfuzzer_SOURCES = tests/fuzz/fuzz-vm-kernel.c backends/vm/vm-kernel.c
fuzz_vm_kernel_libfuzzer_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer,address
fuzz_vm_kernel_libfuzzer_LDFLAGS = -fsanitize=fuzzer,address
fuzz_vm_kernel_libfuzzer_LDADD = libcommon.a
endif

## The guest helpers (vm-helpers.h): not installed, but fetched on first use into <vmDir>/bin
## and verified against helper-pins.txt (compiled in as vm-helpers-pins.h), by
## cordon-vm-helpers (libvmhelpers.a: libcurl, libsodium), which `cordon vm fetch-helpers` runs.
## `make vm-helpers` builds them reproducibly (build-helpers.sh: fixed flags, no build ids) into
## vm-helpers/ with a MANIFEST; `make vm-pins` rewrites helper-pins.txt from such a build, and
## tests/integration/vm-helpers.sh fails when a fresh build differs from it. Distributions set
## VM_HELPERS_BASE_URL (make VM_HELPERS_BASE_URL=…) to their mirror.
VM_HELPERS_BASE_URL = https://downloads.cordon.invalid/cordon-vm-helpers/$(PACKAGE_VERSION)/
noinst_LIBRARIES += libvmhelpers.a
libvmhelpers_a_SOURCES = backends/vm/vm-helpers.c backends/vm/vm-helpers.h
nodist_libvmhelpers_a_SOURCES = backends/vm/vm-helpers-pins.h
libvmhelpers_a_CPPFLAGS = $(AM_CPPFLAGS) -DVM_HELPERS_BASE_URL='"$(VM_HELPERS_BASE_URL)"'
libvmhelpers_a_CFLAGS = $(AM_CFLAGS) $(LIBCURL_CFLAGS) $(LIBSODIUM_CFLAGS) -pthread
backends/vm/libvmhelpers_a-vm-helpers.$(OBJEXT): backends/vm/vm-helpers-pins.h
libexec_PROGRAMS += cordon-vm-helpers
cordon_vm_helpers_SOURCES = backends/vm/vm-helpers-tool.c
cordon_vm_helpers_CPPFLAGS = $(libvmhelpers_a_CPPFLAGS)
cordon_vm_helpers_CFLAGS = $(AM_CFLAGS)
cordon_vm_helpers_LDADD = libvmhelpers.a libcommon.a $(LIBCURL_LIBS) $(LIBSODIUM_LIBS)
cordon_vm_helpers_LDFLAGS = $(AM_LDFLAGS) -pthread
backends/vm/vm-helpers-pins.h: $(srcdir)/backends/vm/helper-pins.txt $(srcdir)/backends/vm/local.mk
	$(AM_V_GEN)$(MKDIR_P) backends/vm && $(AWK) ' \
		/^#/ || NF == 0 { next } \
		NF != 3 || length($$2) != 64 || $$2 ~ /[^0-9a-f]/ || $$1 ~ /[^a-z0-9-]/ || \
		$$3 ~ /[^0-9]/ { print FILENAME ": bad line: " $$0 > "/dev/stderr"; bad = 1; exit 1 } \
		{ pins = pins sprintf("\t{ \"%s\", \"%s\", %sULL },\\\n", $$1, $$2, $$3) } \
		END { if (bad) exit 1; \
			print "/* Generated from backends/vm/helper-pins.txt (make vm-pins): do not edit. */"; \
			printf "#define VM_HELPER_PINS \\\n%s\t{ NULL, NULL, 0 }\n", pins }' \
		$(srcdir)/backends/vm/helper-pins.txt >$@.tmp && mv $@.tmp $@
CLEANFILES += backends/vm/vm-helpers-pins.h
vm-helpers:
	CC='$(CC)' $(SHELL) $(srcdir)/backends/vm/build-helpers.sh $(top_srcdir) vm-helpers
vm-pins: vm-helpers
	{ sed -n '/^#/p' $(srcdir)/backends/vm/helper-pins.txt && cat vm-helpers/MANIFEST; } \
		>$(srcdir)/backends/vm/helper-pins.txt.tmp && \
		mv $(srcdir)/backends/vm/helper-pins.txt.tmp $(srcdir)/backends/vm/helper-pins.txt
	@cat $(srcdir)/backends/vm/helper-pins.txt
.PHONY: vm-helpers vm-pins
TESTS += tests/integration/vm-helpers.sh
EXTRA_DIST += tests/integration/vm-helpers.sh backends/vm/helper-pins.txt \
	backends/vm/build-helpers.sh backends/vm/README.md

## The guard (the policy's limits and syscall filter in the guest, guest/agent.c; README.md).
TESTS += tests/integration/vm-guard.sh
EXTRA_DIST += tests/integration/vm-guard.sh

## The guard's frames (GUARD, DENIAL: vm-proto.h's parsers), fuzzed; make check replays the
## corpus (tests/fuzz/corpus/vm-frames).
check_PROGRAMS += tests/fuzz/fuzz-vm-frames
TESTS += tests/fuzz/fuzz-vm-frames
tests_fuzz_fuzz_vm_frames_SOURCES = tests/fuzz/fuzz-vm-frames.c tests/fuzz/fuzz-main.c
tests_fuzz_fuzz_vm_frames_LDADD = $(FUZZ_REPLAY_LDADD)
tests_fuzz_fuzz_vm_frames_CFLAGS = $(TEST_UNIT_CFLAGS)
if ENABLE_FUZZING
noinst_PROGRAMS += fuzz-vm-frames-libfuzzer
FUZZ_CAMPAIGN_BINARIES += fuzz-vm-frames-libfuzzer
fuzz_vm_frames_libfuzzer_SOURCES = tests/fuzz/fuzz-vm-frames.c
fuzz_vm_frames_libfuzzer_CFLAGS = $(FUZZ_CAMPAIGN_CF)
fuzz_vm_frames_libfuzzer_LDFLAGS = $(FUZZ_CAMPAIGN_LD)
endif
