## tests/conformance/: one suite every backend must pass, chosen by reference.
## run.sh [REF...] checks builtin:auto, builtin:host and the test pack's two kinds (test,
## transfer) by default (its REFS list: a new backend joins there with one line); conformance.py
## holds the checks.
TESTS += tests/conformance/run.sh
EXTRA_DIST += \
	tests/conformance/run.sh \
	tests/conformance/conformance.py
