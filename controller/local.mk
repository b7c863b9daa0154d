## controller/: cordon-controller, the daemon core (server, method table, process table,
## sandboxes, policy requests, activation, registry, settings and secret methods, interactions,
## events, doctor). It links the backends layer (backends/), never the other way round.


## --- the controller daemon -----------------------------------------------------------------
libexec_PROGRAMS += cordon-controller
## The core's sources; the real daemon adds controller-providers.c (no extra providers), the
## test build its own providers instead.
controller_core_sources = \
	%reldir%/controller.h \
	%reldir%/controller-main.c \
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
	%reldir%/controller-persist.c \
	%reldir%/controller-packs.c \
	%reldir%/controller-doctor.c
cordon_controller_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBSECCOMP_CFLAGS) $(LIBSODIUM_CFLAGS)
cordon_controller_LDADD = libproxy.a libbackend.a libworkspace.a libctl_launcher.a libpolicy_compile.a libpolicy.a libipc.a \
	libcommon.a $(JANSSON_LIBS) $(LIBSECCOMP_LIBS) $(LIBSODIUM_LIBS)


## --- settings, secrets and host interactions -----------------------------------------------
controller_core_sources += \
	%reldir%/controller-settings.c \
	%reldir%/controller-secrets.c \
	%reldir%/controller-interaction.c %reldir%/controller-interaction.h
cordon_controller_SOURCES = $(controller_core_sources) %reldir%/controller-providers.c
## The test build of the controller: the same sources plus CORDON_TEST_HOOKS (builtin:test, a
## backend with a setting of every type, and the test.interaction method). Never installed.
check_PROGRAMS += tests/helpers/cordon-controller-test
tests_helpers_cordon_controller_test_SOURCES = $(controller_core_sources) \
	tests/helpers/controller-backend-test.c
tests_helpers_cordon_controller_test_CFLAGS = $(cordon_controller_CFLAGS) -DCORDON_TEST_HOOKS=1
tests_helpers_cordon_controller_test_LDADD = $(cordon_controller_LDADD)
TESTS += tests/integration/settings-secrets.sh
EXTRA_DIST += \
	tests/integration/settings-secrets.sh \
	tests/integration/settings-secrets.py
## --- end settings, secrets and host interactions -------------------------------------------
