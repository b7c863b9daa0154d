## controller/: cordon-controller, the daemon core (server, method table, process table,
## sandboxes, policy requests, activation, registry, settings and secret methods, interactions,
## events, doctor). It links the backends layer (backends/), never the other way round.


## --- the controller daemon -----------------------------------------------------------------
## The core as a library: the daemon is its main() and the providers list; the test build of
## the controller and the core's unit tests link the same objects.
noinst_LIBRARIES += libcontroller.a
libcontroller_a_SOURCES = \
	%reldir%/controller.h \
	%reldir%/controller-server.c \
	%reldir%/controller-client.c \
	%reldir%/controller-events.c \
	%reldir%/controller-process.c \
	%reldir%/controller-policy.c \
	%reldir%/controller-sandbox.c %reldir%/controller-sandbox.h \
	%reldir%/controller-lease.c \
	%reldir%/controller-transfer.c \
	%reldir%/controller-backend.c \
	%reldir%/controller-registry.c \
	%reldir%/controller-host.c \
	%reldir%/controller-persist.c \
	%reldir%/controller-packs.c \
	%reldir%/controller-doctor.c \
	%reldir%/controller-settings.c \
	%reldir%/controller-secrets.c \
	%reldir%/controller-interaction.c %reldir%/controller-interaction.h
libcontroller_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBSECCOMP_CFLAGS) $(LIBSODIUM_CFLAGS)
## What a program linking the core adds to its LDADD.
LIBCONTROLLER_LIBS = libcontroller.a libbackend.a libworkspace.a libproxy.a libctl_launcher.a \
	libpolicy_compile.a libpolicy.a libipc.a libcommon.a $(JANSSON_LIBS) $(LIBSECCOMP_LIBS) \
	$(LIBSODIUM_LIBS)

libexec_PROGRAMS += cordon-controller
cordon_controller_SOURCES = %reldir%/controller-main.c %reldir%/controller-providers.c
cordon_controller_CFLAGS = $(libcontroller_a_CFLAGS)
cordon_controller_LDADD = $(LIBCONTROLLER_LIBS)

## The test build of the controller: the same core with the test build's providers and methods
## (builtin:test, a backend with a setting of every type; test.interaction, test.fail). Never
## installed.
check_PROGRAMS += tests/helpers/cordon-controller-test
tests_helpers_cordon_controller_test_SOURCES = %reldir%/controller-main.c \
	tests/helpers/controller-backend-test.c
tests_helpers_cordon_controller_test_CFLAGS = $(libcontroller_a_CFLAGS)
tests_helpers_cordon_controller_test_LDADD = $(LIBCONTROLLER_LIBS)
TESTS += tests/integration/settings-secrets.sh
EXTRA_DIST += \
	tests/integration/settings-secrets.sh \
	tests/integration/settings-secrets.py
## --- end settings, secrets and host interactions -------------------------------------------
