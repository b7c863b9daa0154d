## backends/remote/: libremote.a, the HTTP client remote packs share (libcurl, jansson);
## backends/e2b/: the E2B pack (pack.json + cordon-e2b-pack), installed as a pack directory:
## `cordon pack install $(pkgdatadir)/packs/e2b`; tests/fakes/: the loopback fake of the E2B
## service its tests run against.
noinst_LIBRARIES += libremote.a
libremote_a_SOURCES = \
	backends/remote/remote-http.c backends/remote/remote-http.h \
	backends/remote/remote-owner.c backends/remote/remote-owner.h
libremote_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBCURL_CFLAGS) -pthread

e2bpackdir = $(pkgdatadir)/packs/e2b
e2bpack_PROGRAMS = backends/e2b/cordon-e2b-pack
dist_e2bpack_DATA = backends/e2b/pack.json
backends_e2b_cordon_e2b_pack_SOURCES = backends/e2b/cordon-e2b-pack.c
backends_e2b_cordon_e2b_pack_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBCURL_CFLAGS) -pthread
backends_e2b_cordon_e2b_pack_LDADD = libpacklib.a libremote.a libipc.a libcommon.a $(JANSSON_LIBS) \
	$(LIBCURL_LIBS)
backends_e2b_cordon_e2b_pack_LDFLAGS = -pthread

check_PROGRAMS += backends/remote/test-remote-http
backends_remote_test_remote_http_SOURCES = backends/remote/test-remote-http.c
backends_remote_test_remote_http_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBCURL_CFLAGS)
backends_remote_test_remote_http_LDADD = libremote.a libtap.a libcommon.a $(JANSSON_LIBS) \
	$(LIBCURL_LIBS) -lpthread

TESTS += \
	tests/fakes/test-remote-http.sh \
	tests/fakes/test-e2b-fake.sh \
	tests/integration/e2b-pack.sh
EXTRA_DIST += \
	backends/e2b/README.md \
	tests/fakes/e2b_fake.py \
	tests/fakes/test-e2b-fake.py \
	tests/fakes/test-remote-http.sh \
	tests/fakes/test-e2b-fake.sh \
	tests/integration/e2b-pack.sh \
	tests/integration/e2b-pack.py
