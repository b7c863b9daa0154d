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
	%reldir%/launcherd-trace.c %reldir%/launcherd-trace.h \
	%reldir%/launcherd-light.c %reldir%/launcherd-light.h \
	%reldir%/launcherd-mountinfo.c %reldir%/launcherd-mountinfo.h \
	%reldir%/launcherd-audit.c %reldir%/launcherd-audit.h \
	%reldir%/launcherd-audit-record.c %reldir%/launcherd-audit-record.h \
	%reldir%/launcherd-denial-args.c %reldir%/launcherd-denial-args.h \
	%reldir%/sandbox-init.h %reldir%/seccomp-bpf.h
nodist_cordon_launcherd_SOURCES = %reldir%/sandbox-init-blob.h
cordon_launcherd_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBCAP_CFLAGS) \
	$(LIBSECCOMP_CFLAGS) $(LIBNL_CFLAGS)
cordon_launcherd_LDADD = libipc.a libcommon.a $(JANSSON_LIBS) $(LIBCAP_LIBS) \
	$(LIBSECCOMP_LIBS) $(LIBNL_LIBS)

## The sandbox's init for the light spawn (sandbox-init.c): freestanding and static, built with
## flags of its own (none of the build's CFLAGS, hardening or sanitizers, which assume a libc),
## and embedded in cordon-launcherd as bytes (sandbox-init-blob.h), which it execs from a sealed
## memfd. Where there are no stubs for the target, the blob is empty and launcherd spawns as
## before.
SANDBOX_INIT_FLAGS = -std=gnu11 -O2 -Wall -Wextra $(SANDBOX_INIT_WERROR) -ffreestanding \
	-fno-builtin -fno-stack-protector -fno-asynchronous-unwind-tables -fno-pie -no-pie \
	-nostdlib -static -Wl,--build-id=none -Wl,-z,noexecstack -s
if SANDBOX_INIT
%reldir%/cordon-sandbox-init: %reldir%/sandbox-init.c %reldir%/sandbox-init.h \
	%reldir%/seccomp-bpf.h
	$(AM_V_CC)$(MKDIR_P) %reldir% && \
	$(CC) $(SANDBOX_INIT_FLAGS) -I$(top_srcdir) -o $@ $(top_srcdir)/%reldir%/sandbox-init.c
%reldir%/sandbox-init-blob.h: %reldir%/cordon-sandbox-init
	$(AM_V_GEN)od -An -v -tx1 %reldir%/cordon-sandbox-init | \
	sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g' > $@.tmp && mv $@.tmp $@
else
%reldir%/sandbox-init-blob.h:
	$(AM_V_GEN)$(MKDIR_P) %reldir% && echo '/* no sandbox init for this target */' > $@
endif
BUILT_SOURCES = %reldir%/sandbox-init-blob.h
CLEANFILES += %reldir%/cordon-sandbox-init %reldir%/sandbox-init-blob.h
EXTRA_DIST += %reldir%/sandbox-init.c
