## backends/: the backend model and every backend, one library the controller links: references
## and descriptors, the settings, secret and state stores, the instance lifecycle, the OS
## launcher client, builtin:auto, builtin:host, the pack backend and its store and manifest.
## Nothing here includes a controller header (tests/layering checks it). The launcher never
## links it.
noinst_LIBRARIES += libbackend.a
libbackend_a_SOURCES = \
	%reldir%/backend.c %reldir%/backend.h \
	%reldir%/builtin.c \
	%reldir%/backend-descriptor.c %reldir%/backend-descriptor.h \
	%reldir%/backend-state.c %reldir%/backend-state.h \
	%reldir%/backend-settings.c %reldir%/backend-settings.h \
	%reldir%/backend-secrets.c %reldir%/backend-secrets.h \
	%reldir%/auto/auto.c \
	%reldir%/host/host.c \
	%reldir%/pack/pack.c %reldir%/pack/pack.h \
	%reldir%/pack/pack-provider.c \
	%reldir%/pack/pack-manifest.c %reldir%/pack/pack-manifest.h \
	%reldir%/pack/pack-store.c %reldir%/pack/pack-store.h
libbackend_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBSODIUM_CFLAGS) $(LIBSECCOMP_CFLAGS)

## The controller's end of the launcher channel on its own (the launch-plan helper and the spawn
## benchmark link only this): libipc, libcommon and jansson.
noinst_LIBRARIES += libctl_launcher.a
libctl_launcher_a_SOURCES = %reldir%/ctl-launcher.c %reldir%/ctl-launcher.h
libctl_launcher_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
## What a program linking libbackend.a adds to its LDADD.
LIBBACKEND_LIBS = libbackend.a libipc.a libcommon.a $(LIBSODIUM_LIBS) $(JANSSON_LIBS) $(LIBSECCOMP_LIBS)

BACKEND_TESTS_LIBS = libtap.a $(LIBBACKEND_LIBS)
BACKEND_TESTS_CF = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBSODIUM_CFLAGS)

backend_unit_tests = \
	tests/unit/test-backend-descriptor \
	tests/unit/test-backend-settings \
	tests/unit/test-backend-secrets
check_PROGRAMS += $(backend_unit_tests)
TESTS += $(backend_unit_tests)

tests_unit_test_backend_descriptor_SOURCES = tests/unit/test-backend-descriptor.c
tests_unit_test_backend_descriptor_LDADD = $(BACKEND_TESTS_LIBS)
tests_unit_test_backend_descriptor_CFLAGS = $(BACKEND_TESTS_CF)

tests_unit_test_backend_settings_SOURCES = tests/unit/test-backend-settings.c
tests_unit_test_backend_settings_LDADD = $(BACKEND_TESTS_LIBS)
tests_unit_test_backend_settings_CFLAGS = $(BACKEND_TESTS_CF)

tests_unit_test_backend_secrets_SOURCES = tests/unit/test-backend-secrets.c
tests_unit_test_backend_secrets_LDADD = $(BACKEND_TESTS_LIBS)
tests_unit_test_backend_secrets_CFLAGS = $(BACKEND_TESTS_CF)
# The test wraps free() to see that a resolved secret is zero when it is released.
tests_unit_test_backend_secrets_LDFLAGS = $(AM_LDFLAGS) -Wl,--wrap=free

## The descriptor parser's fuzz target; make check replays tests/fuzz/corpus/backend-descriptor/.
check_PROGRAMS += tests/fuzz/fuzz-backend-descriptor
TESTS += tests/fuzz/fuzz-backend-descriptor
tests_fuzz_fuzz_backend_descriptor_SOURCES = tests/fuzz/fuzz-backend-descriptor.c \
	tests/fuzz/fuzz-main.c
tests_fuzz_fuzz_backend_descriptor_LDADD = $(BACKEND_TESTS_LIBS)
tests_fuzz_fuzz_backend_descriptor_CFLAGS = $(BACKEND_TESTS_CF)

if ENABLE_FUZZING
noinst_PROGRAMS += fuzz-backend-descriptor-libfuzzer
fuzz_backend_descriptor_libfuzzer_SOURCES = tests/fuzz/fuzz-backend-descriptor.c
fuzz_backend_descriptor_libfuzzer_CFLAGS = $(BACKEND_TESTS_CF) -fsanitize=fuzzer,address
fuzz_backend_descriptor_libfuzzer_LDFLAGS = -fsanitize=fuzzer,address
fuzz_backend_descriptor_libfuzzer_LDADD = $(LIBBACKEND_LIBS)
endif

EXTRA_DIST += \
	tests/fixtures/descriptors
