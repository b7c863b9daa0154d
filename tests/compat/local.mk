## Compatibility suite: real third-party test suites (CPython's regression tests, GLib's
## installed tests) run in cordon's default sandbox and in an equally strict bubblewrap sandbox,
## compared case by case (tests/compat/README.md). Slow: skipped under CORDON_SKIP_SLOW=1.
compat_tests = tests/compat/cpython.sh tests/compat/glib.sh
TESTS += $(compat_tests)
EXTRA_DIST += $(compat_tests) tests/compat/compat-lib.sh tests/compat/junit-compare.py \
	tests/compat/README.md
clean-local: clean-compat
clean-compat:
	-rm -rf tests/compat/cpython.results tests/compat/glib.results
.PHONY: clean-compat
