## backends/modal/: the Modal pack's gRPC client (grpc-curl.c: gRPC over libcurl's HTTP/2) and
## Modal API (modal-api.c, messages from modal-subset.proto compiled by protoc-c at build time);
## tests/fakes/modal_fake.py: the loopback fake of Modal's gRPC services its tests run against.
MODAL_PROTO_GEN = backends/modal/modal-subset.pb-c.c backends/modal/modal-subset.pb-c.h
BUILT_SOURCES += $(MODAL_PROTO_GEN)
CLEANFILES += $(MODAL_PROTO_GEN)
$(MODAL_PROTO_GEN): $(srcdir)/backends/modal/modal-subset.proto
	$(AM_V_GEN)$(MKDIR_P) backends/modal && \
	$(PROTOC_C) --proto_path=$(srcdir)/backends/modal --c_out=backends/modal \
		$(srcdir)/backends/modal/modal-subset.proto

# the generated code, without the project's warning flags (it is not ours to fix)
noinst_LIBRARIES += libmodalproto.a
nodist_libmodalproto_a_SOURCES = $(MODAL_PROTO_GEN)
libmodalproto_a_CFLAGS = $(PROTOBUFC_CFLAGS) $(HARDEN_CFLAGS) $(SAN_CFLAGS)

noinst_LIBRARIES += libmodal.a
libmodal_a_SOURCES = \
	backends/modal/grpc-curl.c backends/modal/grpc-curl.h \
	backends/modal/modal-api.c backends/modal/modal-api.h
nodist_libmodal_a_SOURCES = backends/modal/modal-subset.pb-c.h
libmodal_a_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBCURL_CFLAGS) $(PROTOBUFC_CFLAGS) \
	-pthread
MODAL_LIBS = libmodal.a libmodalproto.a $(JANSSON_LIBS) $(LIBCURL_LIBS) $(PROTOBUFC_LIBS)

check_PROGRAMS += backends/modal/test-modal-api
backends_modal_test_modal_api_SOURCES = backends/modal/test-modal-api.c
backends_modal_test_modal_api_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(PROTOBUFC_CFLAGS)
backends_modal_test_modal_api_LDADD = $(MODAL_LIBS) libtap.a libcommon.a -lpthread

TESTS += \
	tests/fakes/test-modal-fake.sh \
	tests/integration/modal-pack.sh
EXTRA_DIST += \
	backends/modal/README.md \
	backends/modal/modal-subset.proto \
	tests/fakes/modal_fake.py \
	tests/fakes/test-modal-fake.sh \
	tests/integration/modal-pack.sh \
	tests/integration/modal-pack.py

## the Modal pack, installed as a pack directory: `cordon pack install $(pkgdatadir)/packs/modal`
modalpackdir = $(pkgdatadir)/packs/modal
modalpack_PROGRAMS = backends/modal/cordon-modal-pack
dist_modalpack_DATA = backends/modal/pack.json
backends_modal_cordon_modal_pack_SOURCES = backends/modal/cordon-modal-pack.c
backends_modal_cordon_modal_pack_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(PROTOBUFC_CFLAGS) \
	-pthread
backends_modal_cordon_modal_pack_LDADD = $(MODAL_LIBS) libpacklib.a libremote.a libipc.a libcommon.a
backends_modal_cordon_modal_pack_LDFLAGS = -pthread
