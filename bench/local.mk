## bench/: benchmarks (not tests). `make bench/spawn && sudo bench/spawn --launcherd ./cordon-launcherd`
EXTRA_PROGRAMS = bench/spawn
bench_spawn_SOURCES = %reldir%/spawn.c
bench_spawn_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
bench_spawn_LDADD = libctl_launcher.a libipc.a libcommon.a $(JANSSON_LIBS)
CLEANFILES += bench/spawn
