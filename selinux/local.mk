## selinux/: the SELinux policy module (cordon_launcherd_t, cordon_controller_t,
## cordon_sandbox_t). With --with-selinux it is built by the distribution's policy development
## Makefile (SELINUX_DEVEL_MAKEFILE), installed to $(datadir)/selinux/packages, and checked by
## tests/integration/selinux-policy.sh (linked against the distribution's policy, then sesearch).
selinux_sources = \
	%reldir%/cordon.te \
	%reldir%/cordon.fc \
	%reldir%/cordon.if
EXTRA_DIST += $(selinux_sources) tests/integration/selinux-policy.sh

if ENABLE_SELINUX
selinuxpackagedir = $(datadir)/selinux/packages
selinuxpackage_DATA = %reldir%/cordon.pp
CLEANFILES += %reldir%/cordon.pp
TESTS += tests/integration/selinux-policy.sh

# The development Makefile builds in the directory that holds the sources (and writes tmp/
# there), so it runs on copies in selinux/build/. MAKEFLAGS is cleared: command-line variables
# of this make (TESTS=, V=...) are not for it.
%reldir%/cordon.pp: $(selinux_sources)
	$(AM_V_GEN)rm -rf %reldir%/build && $(MKDIR_P) %reldir%/build && \
	for f in $(selinux_sources); do \
		if test -f "$$f"; then cp "$$f" %reldir%/build/; else cp "$(srcdir)/$$f" %reldir%/build/; fi; \
	done && \
	(cd %reldir%/build && MAKEFLAGS= MAKELEVEL= MFLAGS= \
		$(MAKE) -f $(SELINUX_DEVEL_MAKEFILE) cordon.pp >build.log 2>&1 || \
		{ cat build.log >&2; exit 1; }) && \
	cp %reldir%/build/cordon.pp $@
endif

clean-local: clean-selinux-build
clean-selinux-build:
	rm -rf %reldir%/build
.PHONY: clean-selinux-build
