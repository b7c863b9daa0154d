## cordon-launcherd integration tests: shell TAP run against a real launcherd on a
## temporary socket, as root (privileged mode) and as the test users cordon-test1/2 (user mode,
## cross-user checks). Helpers: launch-plan (a ctl-launcher client), probe (escape attempts run
## inside the sandbox), no-userns (a client that cannot create user namespaces).
check_PROGRAMS += tests/helpers/launch-plan tests/helpers/probe tests/helpers/no-userns
tests_helpers_launch_plan_SOURCES = tests/helpers/launch-plan.c
tests_helpers_launch_plan_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_helpers_launch_plan_LDADD = libctl_launcher.a libipc.a libcommon.a $(JANSSON_LIBS)
tests_helpers_probe_SOURCES = tests/helpers/probe.c
tests_helpers_no_userns_SOURCES = tests/helpers/no-userns.c
tests_helpers_no_userns_CFLAGS = $(AM_CFLAGS) $(LIBSECCOMP_CFLAGS)
tests_helpers_no_userns_LDADD = $(LIBSECCOMP_LIBS)

launcherd_integration_tests = \
	tests/integration/launcherd-deps.sh \
	tests/integration/launcherd-basic.sh \
	tests/integration/launcherd-plan.sh \
	tests/integration/launcherd-confine.sh \
	tests/integration/launcherd-limits.sh \
	tests/integration/launcherd-floor.sh \
	tests/integration/launcherd-users.sh \
	tests/integration/launcherd-usermode.sh \
	tests/integration/launcherd-netnone.sh \
	tests/integration/launcherd-fdscreen.sh \
	tests/integration/launcherd-light.sh \
	tests/integration/launcherd-cgroup2.sh \
	tests/integration/denials.sh \
	tests/integration/denials-summary.sh \
	tests/integration/denials-scope.sh \
	tests/integration/denials-args.sh \
	tests/integration/launcherd-trail.sh
TESTS += $(launcherd_integration_tests)
EXTRA_DIST += $(launcherd_integration_tests) tests/integration/launcherd-lib.sh \
	tests/integration/denials-lib.sh \
	tests/helpers/stallfs.py tests/integration/denials.py
