## cli/: the `cordon` command. Unprivileged; links only jansson (no libcurl, libsodium, libseccomp).
bin_PROGRAMS += cordon
cordon_SOURCES = \
	%reldir%/cli.h \
	%reldir%/cli-main.c \
	%reldir%/cli-client.c \
	%reldir%/cli-run.c \
	%reldir%/cli-cmds.c
cordon_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
cordon_LDADD = libipc.a libcommon.a $(JANSSON_LIBS)

## End-to-end tests through the CLI (controller started on demand, user-mode launcher).
TESTS += \
	tests/integration/cli-run.sh
EXTRA_DIST += \
	tests/integration/cli-lib.sh \
	tests/integration/cli-run.sh
TESTS += tests/integration/controller-rpc.sh
EXTRA_DIST += \
	tests/integration/controller-rpc.sh \
	tests/integration/controller-rpc.py \
	tests/helpers/rpc.py
man_MANS += docs/man/cordon.1
TESTS += tests/integration/man-cordon.sh
EXTRA_DIST += docs/man/cordon.1 tests/integration/man-cordon.sh
TESTS += tests/integration/controller-backend.sh
EXTRA_DIST += \
	tests/integration/controller-backend.sh \
	tests/integration/controller-backend.py
TESTS += tests/integration/proxy-sandbox.sh
EXTRA_DIST += tests/integration/proxy-sandbox.sh
