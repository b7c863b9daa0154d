## cli/: the `cordon` command. Unprivileged; links only jansson (no libcurl, libsodium, libseccomp);
## libpolicy.a (jansson only) for `cordon policy suggest`.
bin_PROGRAMS += cordon
cordon_SOURCES = \
	%reldir%/cli.h \
	%reldir%/cli-main.c \
	%reldir%/cli-client.c \
	%reldir%/cli-run.c \
	%reldir%/cli-tty.c \
	%reldir%/cli-sandbox.c \
	%reldir%/cli-cmds.c \
	%reldir%/cli-pack.c \
	%reldir%/cli-interact.c \
	%reldir%/cli-secret.c \
	%reldir%/cli-vm.c
cordon_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
cordon_LDADD = libpolicy.a libipc.a libcommon.a $(JANSSON_LIBS)
# -static-pie unless configured --disable-static-cli: its start-up is part of every `cordon run`.
cordon_LDFLAGS = $(AM_LDFLAGS) $(CLI_LDFLAGS)

## End-to-end tests through the CLI (controller started on demand, user-mode launcher).
TESTS += \
	tests/integration/cli-run.sh \
	tests/integration/cli-sandbox.sh \
	tests/integration/cli-parallel.sh \
	tests/integration/policy-explain-path.sh \
	tests/integration/cli-persistence.sh \
	tests/integration/cli-tty.sh \
	tests/integration/cli-argmax.sh
EXTRA_DIST += \
	tests/integration/cli-lib.sh \
	tests/integration/cli-argmax.sh \
	tests/integration/cli-tty.sh \
	tests/integration/cli-run.sh \
	tests/integration/cli-sandbox.sh \
	tests/integration/cli-parallel.sh \
	tests/integration/policy-explain-path.sh \
	tests/integration/cli-persistence.sh
## builtin:host refuses what it cannot honour and keeps the wall timeout.
TESTS += tests/integration/backend-host.sh
EXTRA_DIST += tests/integration/backend-host.sh
TESTS += tests/integration/controller-rpc.sh
EXTRA_DIST += \
	tests/integration/controller-rpc.sh \
	tests/integration/controller-rpc.py \
	tests/helpers/rpc.py \
	tests/helpers/ctl.py
man_MANS += docs/man/cordon.1
TESTS += tests/integration/man-cordon.sh
EXTRA_DIST += docs/man/cordon.1 tests/integration/man-cordon.sh
TESTS += tests/integration/controller-backend.sh
EXTRA_DIST += \
	tests/integration/controller-backend.sh \
	tests/integration/controller-backend.py
TESTS += tests/integration/controller-launcher-lost.sh
EXTRA_DIST += \
	tests/integration/controller-launcher-lost.sh \
	tests/integration/controller-launcher-lost.py
TESTS += tests/integration/activation-crash.sh tests/integration/activation-crash-pack.sh
EXTRA_DIST += \
	tests/integration/activation-crash.sh \
	tests/integration/activation-crash-pack.sh \
	tests/integration/activation-crash.py
TESTS += tests/integration/proxy-sandbox.sh
EXTRA_DIST += tests/integration/proxy-sandbox.sh
## The no-echo secret prompt on a real pseudo-terminal (cli-interact.c).
check_PROGRAMS += tests/unit/test-cli-interact
TESTS += tests/unit/test-cli-interact
tests_unit_test_cli_interact_SOURCES = tests/unit/test-cli-interact.c cli/cli-interact.c
tests_unit_test_cli_interact_LDADD = libtap.a libipc.a libcommon.a $(JANSSON_LIBS)
tests_unit_test_cli_interact_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
## The backend methods' contract: settings and selection committed together, object
## references, --json after the arguments (against the test build of the controller).
TESTS += tests/integration/backend-contract.sh
EXTRA_DIST += \
	tests/integration/backend-contract.sh \
	tests/integration/backend-contract.py
TESTS += tests/integration/controller-slow-launcher.sh
EXTRA_DIST += \
	tests/integration/controller-slow-launcher.sh \
	tests/integration/controller-slow-launcher.py
## cordon vm setup runs fetch-kernel.sh from the directory configure chose (vm-paths.h).
cli/cordon-cli-vm.$(OBJEXT): backends/vm/vm-paths.h
