## proxy/: the allowed-domains proxy the controller serves a sandbox's proxy listener with.
## --- allowed-domains proxy: network mode "proxy", docs/NETWORK.md --------------------------
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
