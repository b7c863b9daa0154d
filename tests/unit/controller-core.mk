## Unit tests of the controller core against a fake backend.
## test-activation.c holds the fake backend and the controller fixture too; test-process-table.c
## includes it with CORE_FIXTURE_ONLY defined.
check_PROGRAMS += tests/unit/test-activation tests/unit/test-process-table
TESTS += tests/unit/test-activation tests/unit/test-process-table
tests_unit_test_activation_SOURCES = tests/unit/test-activation.c
tests_unit_test_activation_CFLAGS = $(libcontroller_a_CFLAGS)
tests_unit_test_activation_LDADD = libtap.a $(LIBCONTROLLER_LIBS)
tests_unit_test_process_table_SOURCES = tests/unit/test-process-table.c
tests_unit_test_process_table_CFLAGS = $(libcontroller_a_CFLAGS)
tests_unit_test_process_table_LDADD = libtap.a $(LIBCONTROLLER_LIBS)
