## tests/packs/: the test pack (pack.json + an executable built by make check, never installed)
## and the pack integration tests (tests/integration/packs.sh, pack-secrets.sh, pack-transfer.sh).
check_PROGRAMS += tests/packs/test-pack/cordon-test-pack
tests_packs_test_pack_cordon_test_pack_SOURCES = tests/packs/test-pack/cordon-test-pack.c
tests_packs_test_pack_cordon_test_pack_LDADD = libipc.a $(LIBWORKSPACE_LIBS)
tests_packs_test_pack_cordon_test_pack_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBSODIUM_CFLAGS)

## The manifest parser (libbackend).
check_PROGRAMS += tests/unit/test-pack-manifest
TESTS += tests/unit/test-pack-manifest
tests_unit_test_pack_manifest_SOURCES = tests/unit/test-pack-manifest.c
tests_unit_test_pack_manifest_LDADD = $(BACKEND_TESTS_LIBS)
tests_unit_test_pack_manifest_CFLAGS = $(BACKEND_TESTS_CF)

TESTS += \
	tests/integration/packs.sh \
	tests/integration/pack-secrets.sh \
	tests/integration/pack-transfer.sh \
	tests/integration/pack-asks.sh
EXTRA_DIST += \
	tests/integration/pack-asks.sh \
	tests/packs/test-pack/pack.json \
	tests/integration/packs.sh \
	tests/integration/packs.py \
	tests/integration/pack-secrets.sh \
	tests/integration/pack-secrets.py \
	tests/integration/pack-transfer.sh \
	tests/integration/pack-transfer.py
