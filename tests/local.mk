## tests/: TAP unit tests (tests/unit), shell integration tests (tests/integration), fuzz targets
## whose corpus make check replays (tests/fuzz).
check_LIBRARIES += libtap.a
libtap_a_SOURCES = %reldir%/tap.c %reldir%/tap.h

TEST_UNIT_LDADD = libtap.a libipc.a libcommon.a $(JANSSON_LIBS)
TEST_UNIT_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)

unit_tests = \
	tests/unit/test-common-util
check_PROGRAMS += $(unit_tests)
TESTS += $(unit_tests)

tests_unit_test_common_util_SOURCES = %reldir%/unit/test-common-util.c
tests_unit_test_common_util_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_common_util_CFLAGS = $(TEST_UNIT_CFLAGS)

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
	%reldir%/fuzz/corpus
