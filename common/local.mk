## common/: helpers linked into every process. Pure helpers (util) apart from OS helpers (system).
noinst_LIBRARIES += libcommon.a
libcommon_a_SOURCES = \
	%reldir%/cleanup.h \
	%reldir%/json-cleanup.h \
	%reldir%/seccomp-action.h \
	%reldir%/log.c %reldir%/log.h \
	%reldir%/util.c %reldir%/util.h \
	%reldir%/system.c %reldir%/system.h \
	%reldir%/event.c %reldir%/event.h \
	%reldir%/reaper.c %reldir%/reaper.h \
	%reldir%/paths.c %reldir%/paths-state.c %reldir%/paths.h \
	%reldir%/tar.c %reldir%/tar.h
