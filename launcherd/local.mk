## launcherd/: cordon-launcherd, the privileged confinement engine (the only privileged part).
## Links libcap, libseccomp, libnl and jansson; never libcurl or libsodium (tests/integration/
## launcherd-deps.sh checks the built binary).
libexec_PROGRAMS += cordon-launcherd
cordon_launcherd_SOURCES = \
	%reldir%/launcherd.h \
	%reldir%/launcherd-main.c \
	%reldir%/launcherd-dispatch.c \
	%reldir%/launcherd-sandbox.c \
	%reldir%/launcherd-apply.c %reldir%/launcherd-apply.h \
	%reldir%/launcherd-plan.c %reldir%/launcherd-plan.h \
	%reldir%/launcherd-floor.c %reldir%/launcherd-floor.h \
	%reldir%/launcherd-mount.c %reldir%/launcherd-mount.h \
	%reldir%/launcherd-landlock.c %reldir%/launcherd-landlock.h \
	%reldir%/launcherd-seccomp.c %reldir%/launcherd-seccomp.h \
	%reldir%/launcherd-cgroup.c %reldir%/launcherd-cgroup.h \
	%reldir%/launcherd-net.c %reldir%/launcherd-net.h %reldir%/launcherd-lo.c \
	%reldir%/launcherd-screen.c %reldir%/launcherd-screen.h \
	%reldir%/launcherd-trace.c %reldir%/launcherd-trace.h
cordon_launcherd_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBCAP_CFLAGS) \
	$(LIBSECCOMP_CFLAGS) $(LIBNL_CFLAGS)
cordon_launcherd_LDADD = libipc.a libcommon.a $(JANSSON_LIBS) $(LIBCAP_LIBS) \
	$(LIBSECCOMP_LIBS) $(LIBNL_LIBS)
