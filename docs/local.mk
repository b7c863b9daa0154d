## docs/: the man pages of the daemons and the file formats (cordon.1 is in cli/local.mk) and
## the architecture notes. docs/man/cordon-policy.5 is generated from docs/POLICY.md by
## docs/man/md2man.py and committed (so building needs no Python): `make update-man` after
## editing POLICY.md; tests/integration/man-pages.sh fails while the two disagree.
man_MANS += \
	%reldir%/man/cordon-controller.8 \
	%reldir%/man/cordon-launcherd.8 \
	%reldir%/man/cordon-policy.5 \
	%reldir%/man/cordon-launcherd.json.5
EXTRA_DIST += \
	%reldir%/man/cordon-controller.8 \
	%reldir%/man/cordon-launcherd.8 \
	%reldir%/man/cordon-policy.5 \
	%reldir%/man/cordon-launcherd.json.5 \
	%reldir%/man/md2man.py \
	%reldir%/ARCHITECTURE.md \
	%reldir%/DENIALS.md

update-man:
	$(AM_V_GEN)python3 $(srcdir)/%reldir%/man/md2man.py --source 'cordon $(PACKAGE_VERSION)' \
		$(srcdir)/%reldir%/POLICY.md >$(srcdir)/%reldir%/man/cordon-policy.5.tmp && \
	mv -f $(srcdir)/%reldir%/man/cordon-policy.5.tmp $(srcdir)/%reldir%/man/cordon-policy.5
.PHONY: update-man

## Deployment tests: every page renders without warnings and documents every option
## and field; a DESTDIR install lays out exactly the expected files and modes; launcherd started
## from the installed unit's ExecStart= line serves a hello.
TESTS += \
	tests/integration/man-pages.sh \
	tests/integration/install-layout.sh \
	tests/integration/launcherd-execstart.sh
EXTRA_DIST += \
	tests/integration/man-pages.sh \
	tests/integration/install-layout.sh \
	tests/integration/launcherd-execstart.sh \
	tests/helpers/launcherd-hello.py
