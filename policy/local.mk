## policy/: the policy format (parse, validate, defaults, narrow, explain; jansson only, so the CLI
## can check and explain a policy without libseccomp) and its compiler into launcher spawn plans
## (compile, dump; libseccomp), used by the controller.
noinst_LIBRARIES += libpolicy.a libpolicy_compile.a
libpolicy_a_SOURCES = \
	%reldir%/policy-model.c %reldir%/policy-model.h \
	%reldir%/policy-syscalls.c %reldir%/policy-syscalls.h \
	%reldir%/policy-default.c %reldir%/policy-default.h \
	%reldir%/policy-hostexec.c %reldir%/policy-hostexec.h \
	%reldir%/policy-parse.c %reldir%/policy-parse.h \
	%reldir%/policy-narrow.c %reldir%/policy-narrow.h \
	%reldir%/policy-explain.c %reldir%/policy-explain.h \
	%reldir%/policy-suggest.c %reldir%/policy-suggest.h
libpolicy_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)

libpolicy_compile_a_SOURCES = \
	%reldir%/policy-seccomp.c %reldir%/policy-seccomp.h \
	%reldir%/policy-compile.c %reldir%/policy-compile.h \
	%reldir%/policy-explain-path.c \
	%reldir%/policy-dump.c %reldir%/policy-dump.h
libpolicy_compile_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBSECCOMP_CFLAGS)

POLICY_TESTS_LIBS = libtap.a libpolicy.a libipc.a libcommon.a $(JANSSON_LIBS)
POLICY_COMPILE_TESTS_LIBS = libtap.a libpolicy_compile.a libpolicy.a libipc.a libcommon.a \
	$(LIBSECCOMP_LIBS) $(JANSSON_LIBS)
POLICY_TESTS_CF = $(AM_CFLAGS) $(JANSSON_CFLAGS)

policy_unit_tests = \
	tests/unit/test-policy-parse \
	tests/unit/test-policy-compile \
	tests/unit/test-policy-narrow \
	tests/unit/test-policy-explain \
	tests/unit/test-policy-hostexec \
	tests/unit/test-policy-suggest
check_PROGRAMS += $(policy_unit_tests)
TESTS += $(policy_unit_tests)

tests_unit_test_policy_parse_SOURCES = tests/unit/test-policy-parse.c
tests_unit_test_policy_parse_LDADD = $(POLICY_TESTS_LIBS)
tests_unit_test_policy_parse_CFLAGS = $(POLICY_TESTS_CF)

tests_unit_test_policy_compile_SOURCES = tests/unit/test-policy-compile.c
tests_unit_test_policy_compile_LDADD = $(POLICY_COMPILE_TESTS_LIBS)
tests_unit_test_policy_compile_CFLAGS = $(POLICY_TESTS_CF)

tests_unit_test_policy_narrow_SOURCES = tests/unit/test-policy-narrow.c
tests_unit_test_policy_narrow_LDADD = $(POLICY_TESTS_LIBS)
tests_unit_test_policy_narrow_CFLAGS = $(POLICY_TESTS_CF)

tests_unit_test_policy_explain_SOURCES = tests/unit/test-policy-explain.c
tests_unit_test_policy_explain_LDADD = $(POLICY_TESTS_LIBS)
tests_unit_test_policy_explain_CFLAGS = $(POLICY_TESTS_CF)

tests_unit_test_policy_hostexec_SOURCES = tests/unit/test-policy-hostexec.c
tests_unit_test_policy_hostexec_LDADD = $(POLICY_TESTS_LIBS)
tests_unit_test_policy_hostexec_CFLAGS = $(POLICY_TESTS_CF)

tests_unit_test_policy_suggest_SOURCES = tests/unit/test-policy-suggest.c
tests_unit_test_policy_suggest_LDADD = $(POLICY_TESTS_LIBS)
tests_unit_test_policy_suggest_CFLAGS = $(POLICY_TESTS_CF)

## The policy reader's fuzz target; make check replays tests/fuzz/corpus/policy/.
check_PROGRAMS += tests/fuzz/fuzz-policy
TESTS += tests/fuzz/fuzz-policy
tests_fuzz_fuzz_policy_SOURCES = tests/fuzz/fuzz-policy.c tests/fuzz/fuzz-main.c
tests_fuzz_fuzz_policy_LDADD = $(POLICY_TESTS_LIBS)
tests_fuzz_fuzz_policy_CFLAGS = $(POLICY_TESTS_CF)

if ENABLE_FUZZING
noinst_PROGRAMS += fuzz-policy-libfuzzer
fuzz_policy_libfuzzer_SOURCES = tests/fuzz/fuzz-policy.c
fuzz_policy_libfuzzer_CFLAGS = $(POLICY_TESTS_CF) -fsanitize=fuzzer,address
fuzz_policy_libfuzzer_LDFLAGS = -fsanitize=fuzzer,address
fuzz_policy_libfuzzer_LDADD = libpolicy.a libipc.a libcommon.a $(JANSSON_LIBS)
endif

EXTRA_DIST += \
	docs/POLICY.md \
	tests/fixtures/valid \
	tests/fixtures/invalid \
	tests/fixtures/golden
