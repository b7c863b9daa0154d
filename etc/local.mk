## etc/: the install layout beyond what Automake does by itself.
##  - $(sysconfdir)/cordon/launcherd.json: the default admin floor (cordon-launcherd.json(5)),
##    mode 0644; an existing one (an administrator's) is never overwritten, and uninstall removes
##    it only while it is still the shipped default.
##  - --with-file-caps: setcap on the installed cordon-launcherd with exactly the capabilities
##    in launcherd/launcherd-main.c's needed_caps[] (read through
##    tests/integration/launcherd-caps-lib.sh, as the systemd unit's and the SELinux module's
##    tests read it), permitted and effective, and mode 0750 (see cordon-launcherd(8), "File
##    capabilities"). Not optional_caps[]: with the effective bit, file capabilities are
##    all-or-nothing, and execve() fails with EPERM where one of them is missing from the
##    bounding set (containers commonly drop CAP_SYS_RESOURCE).
##    Off by default: then nothing is installed setuid, setgid or with file capabilities.
floordir = $(sysconfdir)/cordon
EXTRA_DIST += %reldir%/launcherd.json

install-data-local: install-floor
uninstall-local: uninstall-floor

install-floor:
	$(MKDIR_P) '$(DESTDIR)$(floordir)'
	@if test -e '$(DESTDIR)$(floordir)/launcherd.json'; then \
		echo "keeping the existing $(DESTDIR)$(floordir)/launcherd.json"; \
	else \
		echo " $(INSTALL_DATA) $(srcdir)/%reldir%/launcherd.json '$(DESTDIR)$(floordir)/launcherd.json'"; \
		$(INSTALL_DATA) $(srcdir)/%reldir%/launcherd.json '$(DESTDIR)$(floordir)/launcherd.json'; \
	fi

uninstall-floor:
	@if cmp -s $(srcdir)/%reldir%/launcherd.json '$(DESTDIR)$(floordir)/launcherd.json'; then \
		echo " rm -f '$(DESTDIR)$(floordir)/launcherd.json'"; \
		rm -f '$(DESTDIR)$(floordir)/launcherd.json'; \
	elif test -e '$(DESTDIR)$(floordir)/launcherd.json'; then \
		echo "keeping the modified $(DESTDIR)$(floordir)/launcherd.json"; \
	fi

# "cap_a,cap_b,...": the capabilities launcherd needs, from their one source.
launcherd_file_caps = top_srcdir='$(top_srcdir)' && \
	. '$(top_srcdir)/tests/integration/launcherd-caps-lib.sh' && \
	launcherd_needed_caps | cap_lower | sed 's/^/cap_/' | paste -sd, -

print-launcherd-file-caps:
	@$(launcherd_file_caps)

install-exec-hook: install-launcherd-file-caps
if WITH_FILE_CAPS
# chmod before setcap: setcap must come last (a later chown would clear the capabilities).
install-launcherd-file-caps:
	@caps=`$(launcherd_file_caps)` && test -n "$$caps" && \
	f='$(DESTDIR)$(libexecdir)/cordon-launcherd' && \
	echo " chmod 0750 $$f && $(SETCAP) $$caps+ep $$f" && \
	chmod 0750 "$$f" && $(SETCAP) "$$caps+ep" "$$f"
else
install-launcherd-file-caps:
	@:
endif

# For tests/integration/install-layout.sh: where this configuration installs what.
print-install-dirs:
	@echo 'bindir=$(bindir)'
	@echo 'libexecdir=$(libexecdir)'
	@echo 'sysconfdir=$(sysconfdir)'
	@echo 'mandir=$(mandir)'
	@echo 'docdir=$(docdir)'
	@echo 'pkgdatadir=$(pkgdatadir)'
if HAVE_SYSTEMD_SYSTEM_UNITS
	@echo 'systemdsystemunitdir=$(systemdsystemunitdir)'
endif
if HAVE_SYSTEMD_USER_UNITS
	@echo 'systemduserunitdir=$(systemduserunitdir)'
endif
if HAVE_SYSUSERS
	@echo 'sysusersdir=$(sysusersdir)'
endif
if ENABLE_SELINUX
	@echo 'selinuxpackagedir=$(selinuxpackagedir)'
endif
if WITH_FILE_CAPS
	@echo 'file_caps=yes'
else
	@echo 'file_caps=no'
endif

.PHONY: print-install-dirs install-floor uninstall-floor print-launcherd-file-caps install-launcherd-file-caps
