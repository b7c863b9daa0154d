## backends/daytona/: the Daytona pack (pack.json + cordon-daytona-pack, on libremote.a),
## installed as a pack directory: `cordon pack install $(pkgdatadir)/packs/daytona`;
## tests/fakes/daytona_fake.py: the loopback fake of the Daytona service its tests run against.
daytonapackdir = $(pkgdatadir)/packs/daytona
daytonapack_PROGRAMS = backends/daytona/cordon-daytona-pack
dist_daytonapack_DATA = backends/daytona/pack.json
backends_daytona_cordon_daytona_pack_SOURCES = backends/daytona/cordon-daytona-pack.c
backends_daytona_cordon_daytona_pack_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBCURL_CFLAGS) \
	-pthread
backends_daytona_cordon_daytona_pack_LDADD = libpacklib.a libremote.a libipc.a libcommon.a $(JANSSON_LIBS) \
	$(LIBCURL_LIBS)
backends_daytona_cordon_daytona_pack_LDFLAGS = -pthread

TESTS += \
	tests/fakes/test-daytona-fake.sh \
	tests/integration/daytona-pack.sh
EXTRA_DIST += \
	backends/daytona/README.md \
	tests/fakes/daytona_fake.py \
	tests/fakes/test-daytona-fake.py \
	tests/fakes/test-daytona-fake.sh \
	tests/integration/daytona-pack.sh \
	tests/integration/daytona-pack.py
