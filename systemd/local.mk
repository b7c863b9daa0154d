## systemd/: units for cordon-launcherd (system, socket-activated) and cordon-controller (user),
## and the sysusers.d entry for the "cordon" group that owns the launcher socket. The .in units
## get their paths at build time; tests/integration/systemd-units.sh verifies the built ones.
## Installed where configure found the unit directories (pkg-config systemd, or
## --with-systemdsystemunitdir=, --with-systemduserunitdir=, --with-sysusersdir=).
systemd_generated = \
	%reldir%/cordon-launcherd.service \
	%reldir%/cordon-controller.service

EXTRA_DIST += \
	%reldir%/cordon-launcherd.socket \
	%reldir%/cordon-launcherd.service.in \
	%reldir%/cordon-controller.service.in \
	%reldir%/sysusers/cordon.conf \
	tests/integration/systemd-units.sh \
	tests/integration/launcherd-caps-lib.sh
CLEANFILES += $(systemd_generated)
TESTS += tests/integration/systemd-units.sh

# Built in every configuration: the test verifies them even where nothing is installed.
noinst_DATA += $(systemd_generated)

systemd_subst = $(SED) \
	-e 's|@libexecdir[@]|$(libexecdir)|g' \
	-e 's|@bindir[@]|$(bindir)|g' \
	-e 's|@sysconfdir[@]|$(sysconfdir)|g' \
	-e 's|@runstatedir[@]|$(runstatedir)|g'

%reldir%/cordon-launcherd.service: %reldir%/cordon-launcherd.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) $(@D) && \
	$(systemd_subst) $(srcdir)/%reldir%/cordon-launcherd.service.in >$@.tmp && mv -f $@.tmp $@
%reldir%/cordon-controller.service: %reldir%/cordon-controller.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) $(@D) && \
	$(systemd_subst) $(srcdir)/%reldir%/cordon-controller.service.in >$@.tmp && mv -f $@.tmp $@

if HAVE_SYSTEMD_SYSTEM_UNITS
systemdsystemunit_DATA = \
	%reldir%/cordon-launcherd.socket \
	%reldir%/cordon-launcherd.service
endif
if HAVE_SYSTEMD_USER_UNITS
systemduserunit_DATA = %reldir%/cordon-controller.service
endif
if HAVE_SYSUSERS
sysusers_DATA = %reldir%/sysusers/cordon.conf
endif
