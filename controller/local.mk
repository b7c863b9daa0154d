## controller/: cordon-controller (the lead extends this fragment).

## --- launcher client (issue 3): the controller's end of the launcher channel -------------
## Self-contained: needs libipc, libcommon and jansson only.
noinst_LIBRARIES += libctl_launcher.a
libctl_launcher_a_SOURCES = %reldir%/ctl-launcher.c %reldir%/ctl-launcher.h
libctl_launcher_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
## --- end launcher client -------------------------------------------------------------------

## --- the controller daemon -----------------------------------------------------------------
libexec_PROGRAMS += cordon-controller
cordon_controller_SOURCES = \
	%reldir%/controller.h \
	%reldir%/controller-main.c \
	%reldir%/controller-server.c \
	%reldir%/controller-events.c \
	%reldir%/controller-process.c \
	%reldir%/controller-policy.c \
	%reldir%/controller-sandbox.c \
	%reldir%/controller-backend.h \
	%reldir%/controller-backend.c \
	%reldir%/controller-backend-auto.c \
	%reldir%/controller-backend-host.c \
	%reldir%/controller-persist.c \
	%reldir%/controller-backend-pack.c \
	%reldir%/controller-packs.c %reldir%/controller-packs.h \
	%reldir%/pack-store.c %reldir%/pack-store.h \
	%reldir%/controller-doctor.c
cordon_controller_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBSECCOMP_CFLAGS) $(LIBSODIUM_CFLAGS)
cordon_controller_LDADD = libproxy.a libctl_launcher.a libbackend.a libpolicy_compile.a libpolicy.a libipc.a \
	libcommon.a $(JANSSON_LIBS) $(LIBSECCOMP_LIBS) $(LIBSODIUM_LIBS)

## --- allowed-domains proxy (issue 6): network mode "proxy", docs/NETWORK.md ----------------
## The engine the controller serves a sandbox's proxy listener with; jansson and libcommon only.
noinst_LIBRARIES += libproxy.a
libproxy_a_SOURCES = \
	%reldir%/proxy.h \
	%reldir%/proxy-rules.c \
	%reldir%/proxy-request.c \
	%reldir%/proxy-resolve.c %reldir%/proxy-resolve.h \
	%reldir%/proxy-engine.c
libproxy_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)

PROXY_TESTS_LIBS = libtap.a libproxy.a libpolicy.a libipc.a libcommon.a $(JANSSON_LIBS)
check_PROGRAMS += tests/unit/test-proxy-rules tests/unit/test-proxy-request tests/helpers/proxy-harness
TESTS += tests/unit/test-proxy-rules tests/unit/test-proxy-request tests/integration/proxy-engine.sh
tests_unit_test_proxy_rules_SOURCES = tests/unit/test-proxy-rules.c
tests_unit_test_proxy_rules_LDADD = $(PROXY_TESTS_LIBS)
tests_unit_test_proxy_rules_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_proxy_request_SOURCES = tests/unit/test-proxy-request.c
tests_unit_test_proxy_request_LDADD = $(PROXY_TESTS_LIBS)
tests_unit_test_proxy_request_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
## The engine on a loopback listener with rules from a policy file, for proxy-engine.sh.
tests_helpers_proxy_harness_SOURCES = tests/helpers/proxy-harness.c
tests_helpers_proxy_harness_LDADD = $(PROXY_TESTS_LIBS)
tests_helpers_proxy_harness_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
EXTRA_DIST += \
	tests/integration/proxy-engine.sh \
	tests/helpers/proxy-peer.py \
	docs/NETWORK.md
## The request parsers' fuzz target; make check replays tests/fuzz/corpus/proxy-request/.
check_PROGRAMS += tests/fuzz/fuzz-proxy-request
TESTS += tests/fuzz/fuzz-proxy-request
tests_fuzz_fuzz_proxy_request_SOURCES = tests/fuzz/fuzz-proxy-request.c tests/fuzz/fuzz-main.c
tests_fuzz_fuzz_proxy_request_LDADD = $(PROXY_TESTS_LIBS)
tests_fuzz_fuzz_proxy_request_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
if ENABLE_FUZZING
noinst_PROGRAMS += fuzz-proxy-request-libfuzzer
fuzz_proxy_request_libfuzzer_SOURCES = tests/fuzz/fuzz-proxy-request.c
fuzz_proxy_request_libfuzzer_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) -fsanitize=fuzzer,address
fuzz_proxy_request_libfuzzer_LDFLAGS = -fsanitize=fuzzer,address
fuzz_proxy_request_libfuzzer_LDADD = libproxy.a libpolicy.a libipc.a libcommon.a $(JANSSON_LIBS)
endif
## --- end allowed-domains proxy -------------------------------------------------------------

## --- settings, secrets and host interactions (issue 5 items 4, 5, 7) ----------------------
cordon_controller_SOURCES += \
	%reldir%/controller-settings.c \
	%reldir%/controller-interaction.c %reldir%/controller-interaction.h
## The test build of the controller: the same sources plus CORDON_TEST_HOOKS (builtin:test, a
## backend with a setting of every type, and the test.interaction method). Never installed.
check_PROGRAMS += tests/helpers/cordon-controller-test
tests_helpers_cordon_controller_test_SOURCES = $(cordon_controller_SOURCES) \
	tests/helpers/controller-backend-test.c
tests_helpers_cordon_controller_test_CFLAGS = $(cordon_controller_CFLAGS) -DCORDON_TEST_HOOKS=1
tests_helpers_cordon_controller_test_LDADD = $(cordon_controller_LDADD)
TESTS += tests/integration/settings-secrets.sh
EXTRA_DIST += \
	tests/integration/settings-secrets.sh \
	tests/integration/settings-secrets.py
## --- end settings, secrets and host interactions -------------------------------------------
