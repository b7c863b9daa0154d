## tests/: TAP unit tests (tests/unit), shell integration tests (tests/integration), fuzz targets
## whose corpus make check replays (tests/fuzz).
check_LIBRARIES += libtap.a
libtap_a_SOURCES = %reldir%/tap.c %reldir%/tap.h
## The shell tests' TAP functions (sourced by the integration scripts).
EXTRA_DIST += %reldir%/integration/tap-lib.sh

TEST_UNIT_LDADD = libtap.a libipc.a libcommon.a $(JANSSON_LIBS)
TEST_UNIT_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)

unit_tests = \
	tests/unit/test-common-util \
	tests/unit/test-common-system \
	tests/unit/test-common-event \
	tests/unit/test-ipc-fdpass \
	tests/unit/test-ipc-frame \
	tests/unit/test-ipc-json \
	tests/unit/test-ipc-jsonrpc \
	tests/unit/test-ipc-peer
check_PROGRAMS += $(unit_tests)
TESTS += $(unit_tests)

tests_unit_test_common_util_SOURCES = %reldir%/unit/test-common-util.c
tests_unit_test_common_util_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_common_util_CFLAGS = $(TEST_UNIT_CFLAGS)

tests_unit_test_common_system_SOURCES = %reldir%/unit/test-common-system.c
tests_unit_test_common_system_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_common_system_CFLAGS = $(TEST_UNIT_CFLAGS)

tests_unit_test_common_event_SOURCES = %reldir%/unit/test-common-event.c
tests_unit_test_common_event_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_common_event_CFLAGS = $(TEST_UNIT_CFLAGS)

tests_unit_test_ipc_fdpass_SOURCES = %reldir%/unit/test-ipc-fdpass.c
tests_unit_test_ipc_fdpass_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_ipc_fdpass_CFLAGS = $(TEST_UNIT_CFLAGS)

tests_unit_test_ipc_frame_SOURCES = %reldir%/unit/test-ipc-frame.c
tests_unit_test_ipc_frame_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_ipc_frame_CFLAGS = $(TEST_UNIT_CFLAGS)
# The test wraps malloc to show an oversize frame is refused before allocation.
tests_unit_test_ipc_frame_LDFLAGS = $(AM_LDFLAGS) -Wl,--wrap=malloc

tests_unit_test_ipc_json_SOURCES = %reldir%/unit/test-ipc-json.c
tests_unit_test_ipc_json_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_ipc_json_CFLAGS = $(TEST_UNIT_CFLAGS)

tests_unit_test_ipc_jsonrpc_SOURCES = %reldir%/unit/test-ipc-jsonrpc.c
tests_unit_test_ipc_jsonrpc_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_ipc_jsonrpc_CFLAGS = $(TEST_UNIT_CFLAGS)

tests_unit_test_ipc_peer_SOURCES = %reldir%/unit/test-ipc-peer.c
tests_unit_test_ipc_peer_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_ipc_peer_CFLAGS = $(TEST_UNIT_CFLAGS)

## launcherd's mount table, with launcherd/launcherd-mountinfo.c built in (launcherd has no
## library). Root only (mounts in a private mount namespace); the allocators and pread() are
## wrapped to show that an answer from an unchanged table allocates and reads nothing.
check_PROGRAMS += tests/unit/test-launcherd-mountinfo
TESTS += tests/unit/test-launcherd-mountinfo
tests_unit_test_launcherd_mountinfo_SOURCES = %reldir%/unit/test-launcherd-mountinfo.c \
	launcherd/launcherd-mountinfo.c launcherd/launcherd-mountinfo.h
tests_unit_test_launcherd_mountinfo_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_launcherd_mountinfo_CFLAGS = $(TEST_UNIT_CFLAGS)
tests_unit_test_launcherd_mountinfo_LDFLAGS = $(AM_LDFLAGS) -Wl,--wrap=malloc \
	-Wl,--wrap=calloc -Wl,--wrap=realloc -Wl,--wrap=reallocarray -Wl,--wrap=pread

## Fuzz targets: each defines LLVMFuzzerTestOneInput. In make check, fuzz-main.c replays the
## corpus under tests/fuzz/corpus/<target>/ as TAP; with --enable-fuzzing, libFuzzer campaigns.
fuzz_targets = \
	tests/fuzz/fuzz-ipc-frame \
	tests/fuzz/fuzz-jsonrpc
check_PROGRAMS += $(fuzz_targets)
TESTS += $(fuzz_targets)
FUZZ_REPLAY_LDADD = libtap.a libipc.a libcommon.a $(JANSSON_LIBS)
tests_fuzz_fuzz_ipc_frame_SOURCES = %reldir%/fuzz/fuzz-ipc-frame.c %reldir%/fuzz/fuzz-main.c
tests_fuzz_fuzz_ipc_frame_LDADD = $(FUZZ_REPLAY_LDADD)
tests_fuzz_fuzz_ipc_frame_CFLAGS = $(TEST_UNIT_CFLAGS)
tests_fuzz_fuzz_jsonrpc_SOURCES = %reldir%/fuzz/fuzz-jsonrpc.c %reldir%/fuzz/fuzz-main.c
tests_fuzz_fuzz_jsonrpc_LDADD = $(FUZZ_REPLAY_LDADD)
tests_fuzz_fuzz_jsonrpc_CFLAGS = $(TEST_UNIT_CFLAGS)

if ENABLE_FUZZING
## libFuzzer campaigns: make fuzz-campaigns, then run e.g. ./fuzz-ipc-frame-libfuzzer corpus/
noinst_PROGRAMS += fuzz-ipc-frame-libfuzzer fuzz-jsonrpc-libfuzzer
fuzz_ipc_frame_libfuzzer_SOURCES = %reldir%/fuzz/fuzz-ipc-frame.c
fuzz_ipc_frame_libfuzzer_CFLAGS = $(TEST_UNIT_CFLAGS) -fsanitize=fuzzer,address
fuzz_ipc_frame_libfuzzer_LDFLAGS = -fsanitize=fuzzer,address
fuzz_ipc_frame_libfuzzer_LDADD = libipc.a libcommon.a $(JANSSON_LIBS)
fuzz_jsonrpc_libfuzzer_SOURCES = %reldir%/fuzz/fuzz-jsonrpc.c
fuzz_jsonrpc_libfuzzer_CFLAGS = $(TEST_UNIT_CFLAGS) -fsanitize=fuzzer,address
fuzz_jsonrpc_libfuzzer_LDFLAGS = -fsanitize=fuzzer,address
fuzz_jsonrpc_libfuzzer_LDADD = libipc.a libcommon.a $(JANSSON_LIBS)
endif

EXTRA_DIST += \
	%reldir%/fuzz/fuzz.h \
	%reldir%/fuzz/corpus
