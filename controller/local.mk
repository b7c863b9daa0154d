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
	%reldir%/controller-launcher.c \
	%reldir%/controller-doctor.c
cordon_controller_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBSECCOMP_CFLAGS)
cordon_controller_LDADD = libctl_launcher.a libpolicy_compile.a libpolicy.a libipc.a \
	libcommon.a $(JANSSON_LIBS) $(LIBSECCOMP_LIBS)
