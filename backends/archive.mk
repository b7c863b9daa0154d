## backends/: workspace archives (transfer backends). libworkspace.a snapshots a workspace tree
## into a tar (common/tar) and reconciles the tree with a backend's tar of it; the controller
## links it (jansson for the report, libsodium for the content hashes).
noinst_LIBRARIES += libworkspace.a
libworkspace_a_SOURCES = \
	%reldir%/workspace-transfer.c %reldir%/workspace-transfer.h
libworkspace_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBSODIUM_CFLAGS)
## What a program linking libworkspace.a adds to its LDADD.
LIBWORKSPACE_LIBS = libworkspace.a libcommon.a $(LIBSODIUM_LIBS) $(JANSSON_LIBS)

archive_unit_tests = \
	tests/unit/test-tar \
	tests/unit/test-workspace-transfer
check_PROGRAMS += $(archive_unit_tests)
TESTS += $(archive_unit_tests)

tests_unit_test_tar_SOURCES = tests/unit/test-tar.c
tests_unit_test_tar_LDADD = libtap.a libcommon.a $(JANSSON_LIBS)
tests_unit_test_tar_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)

tests_unit_test_workspace_transfer_SOURCES = tests/unit/test-workspace-transfer.c
tests_unit_test_workspace_transfer_LDADD = libtap.a $(LIBWORKSPACE_LIBS)
tests_unit_test_workspace_transfer_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBSODIUM_CFLAGS)

## The tar reader's fuzz target; make check replays tests/fuzz/corpus/tar/.
check_PROGRAMS += tests/fuzz/fuzz-tar
TESTS += tests/fuzz/fuzz-tar
tests_fuzz_fuzz_tar_SOURCES = tests/fuzz/fuzz-tar.c tests/fuzz/fuzz-main.c
tests_fuzz_fuzz_tar_LDADD = libtap.a libcommon.a $(JANSSON_LIBS)
tests_fuzz_fuzz_tar_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)

if ENABLE_FUZZING
noinst_PROGRAMS += fuzz-tar-libfuzzer
fuzz_tar_libfuzzer_SOURCES = tests/fuzz/fuzz-tar.c
fuzz_tar_libfuzzer_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) -fsanitize=fuzzer,address
fuzz_tar_libfuzzer_LDFLAGS = -fsanitize=fuzzer,address
fuzz_tar_libfuzzer_LDADD = libcommon.a $(JANSSON_LIBS)
endif
