## backends/docker/: the Docker pack (pack.json + cordon-docker-pack), installed as a pack
## directory: `cordon pack install $(pkgdatadir)/packs/docker`.
dockerpackdir = $(pkgdatadir)/packs/docker
dockerpack_PROGRAMS = backends/docker/cordon-docker-pack
dist_dockerpack_DATA = backends/docker/pack.json
backends_docker_cordon_docker_pack_SOURCES = backends/docker/cordon-docker-pack.c
backends_docker_cordon_docker_pack_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBCURL_CFLAGS) -pthread
backends_docker_cordon_docker_pack_LDADD = libpacklib.a libipc.a libcommon.a $(JANSSON_LIBS) $(LIBCURL_LIBS)
backends_docker_cordon_docker_pack_LDFLAGS = -pthread

## Its test, against an engine the test starts (skipped when none can be).
TESTS += tests/integration/docker-pack.sh
EXTRA_DIST += \
	backends/docker/README.md \
	tests/integration/docker-pack.sh \
	tests/helpers/docker-engine.sh \
	bench/docker-pack.sh
