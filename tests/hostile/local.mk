## Hostile-client suite: attacks on the privileged cordon-launcherd that must fail. Shell TAP
## tests run as root against a real launcherd (tests/integration/launcherd-lib.sh, plus
## tests/hostile/hostile-lib.sh), driving hostile-client, a launcher-channel client that sends
## any plan, message or fd (its header says how). Without root they skip, unless
## CORDON_MUST_WORK=1.
check_PROGRAMS += tests/hostile/hostile-client
tests_hostile_hostile_client_SOURCES = tests/hostile/hostile-client.c
tests_hostile_hostile_client_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_hostile_hostile_client_LDADD = libipc.a libcommon.a $(JANSSON_LIBS)

hostile_tests = \
	tests/hostile/hostile-linger.sh \
	tests/hostile/hostile-init.sh \
	tests/hostile/hostile-flood.sh \
	tests/hostile/hostile-exhaust.sh \
	tests/hostile/hostile-rlimits.sh \
	tests/hostile/hostile-receiver.sh \
	tests/hostile/hostile-limits.sh
TESTS += $(hostile_tests)
EXTRA_DIST += $(hostile_tests) tests/hostile/hostile-lib.sh

## mount family: attacks through the mounts a sandbox's set-up makes, each by hand and under
## the emulated unit (tests/hostile/mount-lib.sh).
hostile_mount_tests = \
	tests/hostile/hostile-mount-propagation.sh \
	tests/hostile/hostile-mount-mntns.sh \
	tests/hostile/hostile-mount-landlock-symlink.sh \
	tests/hostile/hostile-mount-cli.sh
TESTS += $(hostile_mount_tests)
EXTRA_DIST += $(hostile_mount_tests) tests/hostile/mount-lib.sh
