## tests/: TAP unit tests (tests/unit), shell integration tests (tests/integration), fuzz targets
## whose corpus make check replays (tests/fuzz).
check_LIBRARIES += libtap.a
libtap_a_SOURCES = %reldir%/tap.c %reldir%/tap.h
## The shell tests' TAP functions (sourced by the integration scripts).
EXTRA_DIST += %reldir%/integration/tap-lib.sh

TEST_UNIT_LDADD = libtap.a libipc.a libcommon.a $(JANSSON_LIBS)
TEST_UNIT_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)

unit_tests = \
	tests/unit/test-common-util \
	tests/unit/test-common-system \
	tests/unit/test-common-event \
	tests/unit/test-ipc-fdpass \
	tests/unit/test-ipc-frame \
	tests/unit/test-ipc-json \
	tests/unit/test-ipc-jsonrpc \
	tests/unit/test-ipc-peer
check_PROGRAMS += $(unit_tests)
TESTS += $(unit_tests)

tests_unit_test_common_util_SOURCES = %reldir%/unit/test-common-util.c
tests_unit_test_common_util_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_common_util_CFLAGS = $(TEST_UNIT_CFLAGS)

tests_unit_test_common_system_SOURCES = %reldir%/unit/test-common-system.c
tests_unit_test_common_system_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_common_system_CFLAGS = $(TEST_UNIT_CFLAGS)

tests_unit_test_common_event_SOURCES = %reldir%/unit/test-common-event.c
tests_unit_test_common_event_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_common_event_CFLAGS = $(TEST_UNIT_CFLAGS)

tests_unit_test_ipc_fdpass_SOURCES = %reldir%/unit/test-ipc-fdpass.c
tests_unit_test_ipc_fdpass_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_ipc_fdpass_CFLAGS = $(TEST_UNIT_CFLAGS)

tests_unit_test_ipc_frame_SOURCES = %reldir%/unit/test-ipc-frame.c
tests_unit_test_ipc_frame_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_ipc_frame_CFLAGS = $(TEST_UNIT_CFLAGS)
# The test wraps malloc to show an oversize frame is refused before allocation.
tests_unit_test_ipc_frame_LDFLAGS = $(AM_LDFLAGS) -Wl,--wrap=malloc

tests_unit_test_ipc_json_SOURCES = %reldir%/unit/test-ipc-json.c
tests_unit_test_ipc_json_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_ipc_json_CFLAGS = $(TEST_UNIT_CFLAGS)

tests_unit_test_ipc_jsonrpc_SOURCES = %reldir%/unit/test-ipc-jsonrpc.c
tests_unit_test_ipc_jsonrpc_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_ipc_jsonrpc_CFLAGS = $(TEST_UNIT_CFLAGS)

tests_unit_test_ipc_peer_SOURCES = %reldir%/unit/test-ipc-peer.c
tests_unit_test_ipc_peer_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_ipc_peer_CFLAGS = $(TEST_UNIT_CFLAGS)

## launcherd's mount table, with launcherd/launcherd-mountinfo.c built in (launcherd has no
## library). Root only (mounts in a private mount namespace); the allocators and pread() are
## wrapped to show that an answer from an unchanged table allocates and reads nothing.
check_PROGRAMS += tests/unit/test-launcherd-mountinfo
TESTS += tests/unit/test-launcherd-mountinfo
tests_unit_test_launcherd_mountinfo_SOURCES = %reldir%/unit/test-launcherd-mountinfo.c \
	launcherd/launcherd-mountinfo.c launcherd/launcherd-mountinfo.h
tests_unit_test_launcherd_mountinfo_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_launcherd_mountinfo_CFLAGS = $(TEST_UNIT_CFLAGS)
tests_unit_test_launcherd_mountinfo_LDFLAGS = $(AM_LDFLAGS) -Wl,--wrap=malloc \
	-Wl,--wrap=calloc -Wl,--wrap=realloc -Wl,--wrap=reallocarray -Wl,--wrap=pread

## The audit record parser of launcherd's denial reader (launcherd/launcherd-audit-record.c).
check_PROGRAMS += tests/unit/test-launcherd-audit
TESTS += tests/unit/test-launcherd-audit
tests_unit_test_launcherd_audit_SOURCES = %reldir%/unit/test-launcherd-audit.c \
	launcherd/launcherd-audit-record.c launcherd/launcherd-audit-record.h
tests_unit_test_launcherd_audit_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_launcherd_audit_CFLAGS = $(TEST_UNIT_CFLAGS)

## The named arguments of the floor's refusals (launcherd/launcherd-denial-args.c).
check_PROGRAMS += tests/unit/test-launcherd-denial-args
TESTS += tests/unit/test-launcherd-denial-args
tests_unit_test_launcherd_denial_args_SOURCES = %reldir%/unit/test-launcherd-denial-args.c \
	launcherd/launcherd-denial-args.c launcherd/launcherd-denial-args.h
tests_unit_test_launcherd_denial_args_LDADD = $(TEST_UNIT_LDADD)
tests_unit_test_launcherd_denial_args_CFLAGS = $(TEST_UNIT_CFLAGS)
## A plan's filter in front of launcherd's floor (launcherd/launcherd-seccomp.c), against the two
## stacked, with the plans cordon's policies compile to.
check_PROGRAMS += tests/unit/test-launcherd-seccomp-combine
TESTS += tests/unit/test-launcherd-seccomp-combine
tests_unit_test_launcherd_seccomp_combine_SOURCES = %reldir%/unit/test-launcherd-seccomp-combine.c \
	%reldir%/seccomp-stacked.h launcherd/launcherd-seccomp.c launcherd/launcherd-seccomp.h \
	launcherd/seccomp-bpf.h
tests_unit_test_launcherd_seccomp_combine_LDADD = libtap.a libpolicy_compile.a libpolicy.a \
	libipc.a libcommon.a $(JANSSON_LIBS) $(LIBSECCOMP_LIBS)
tests_unit_test_launcherd_seccomp_combine_CFLAGS = $(TEST_UNIT_CFLAGS) $(LIBSECCOMP_CFLAGS)

## The seccomp classic-BPF interpreter (launcherd/seccomp-bpf.h), against the kernel's seccomp
## (programs loaded in children) and on a program libseccomp exports.
check_PROGRAMS += tests/unit/test-seccomp-bpf
TESTS += tests/unit/test-seccomp-bpf
tests_unit_test_seccomp_bpf_SOURCES = %reldir%/unit/test-seccomp-bpf.c launcherd/seccomp-bpf.h
tests_unit_test_seccomp_bpf_LDADD = $(TEST_UNIT_LDADD) $(LIBSECCOMP_LIBS)
tests_unit_test_seccomp_bpf_CFLAGS = $(TEST_UNIT_CFLAGS) $(LIBSECCOMP_CFLAGS)

## Fuzz targets: each defines LLVMFuzzerTestOneInput. In make check, fuzz-main.c replays the
## corpus under tests/fuzz/corpus/<target>/ as TAP; with --enable-fuzzing, libFuzzer campaigns
## (make fuzz-campaigns). The policy, proxy-request and backend-descriptor targets are built by
## their own directories' local.mk.
fuzz_targets = \
	tests/fuzz/fuzz-ipc-frame \
	tests/fuzz/fuzz-jsonrpc \
	tests/fuzz/fuzz-launcherd-plan \
	tests/fuzz/fuzz-launcherd-floor \
	tests/fuzz/fuzz-launcherd-audit \
	tests/fuzz/fuzz-seccomp-bpf \
	tests/fuzz/fuzz-launcherd-combine
check_PROGRAMS += $(fuzz_targets)
TESTS += $(fuzz_targets)
FUZZ_REPLAY_LDADD = libtap.a libipc.a libcommon.a $(JANSSON_LIBS)
tests_fuzz_fuzz_ipc_frame_SOURCES = %reldir%/fuzz/fuzz-ipc-frame.c %reldir%/fuzz/fuzz-main.c
tests_fuzz_fuzz_ipc_frame_LDADD = $(FUZZ_REPLAY_LDADD)
tests_fuzz_fuzz_ipc_frame_CFLAGS = $(TEST_UNIT_CFLAGS)
tests_fuzz_fuzz_jsonrpc_SOURCES = %reldir%/fuzz/fuzz-jsonrpc.c %reldir%/fuzz/fuzz-main.c
tests_fuzz_fuzz_jsonrpc_LDADD = $(FUZZ_REPLAY_LDADD)
tests_fuzz_fuzz_jsonrpc_CFLAGS = $(TEST_UNIT_CFLAGS)

## launcherd's two readers of outside documents, with the launcherd sources they need built in
## (launcherd has no library): the spawn plan (plan_parse(), then the floor and Landlock checks
## dispatch runs on a parsed plan) and the admin floor (floor_parse(), floor_load()'s reader).
FUZZ_LAUNCHERD_PLAN_SRC = %reldir%/fuzz/fuzz-launcherd-plan.c \
	launcherd/launcherd-plan.c launcherd/launcherd-plan.h \
	launcherd/launcherd-floor.c launcherd/launcherd-floor.h \
	launcherd/launcherd-landlock.c launcherd/launcherd-landlock.h
FUZZ_LAUNCHERD_FLOOR_SRC = %reldir%/fuzz/fuzz-launcherd-floor.c \
	launcherd/launcherd-floor.c launcherd/launcherd-floor.h \
	launcherd/launcherd-plan.c launcherd/launcherd-plan.h \
	launcherd/launcherd-landlock.c launcherd/launcherd-landlock.h
tests_fuzz_fuzz_launcherd_plan_SOURCES = $(FUZZ_LAUNCHERD_PLAN_SRC) %reldir%/fuzz/fuzz-main.c
tests_fuzz_fuzz_launcherd_plan_LDADD = $(FUZZ_REPLAY_LDADD)
tests_fuzz_fuzz_launcherd_plan_CFLAGS = $(TEST_UNIT_CFLAGS)
tests_fuzz_fuzz_launcherd_floor_SOURCES = $(FUZZ_LAUNCHERD_FLOOR_SRC) %reldir%/fuzz/fuzz-main.c
tests_fuzz_fuzz_launcherd_floor_LDADD = $(FUZZ_REPLAY_LDADD)
tests_fuzz_fuzz_launcherd_floor_CFLAGS = $(TEST_UNIT_CFLAGS)
FUZZ_LAUNCHERD_AUDIT_SRC = %reldir%/fuzz/fuzz-launcherd-audit.c \
	launcherd/launcherd-audit-record.c launcherd/launcherd-audit-record.h
tests_fuzz_fuzz_launcherd_audit_SOURCES = $(FUZZ_LAUNCHERD_AUDIT_SRC) %reldir%/fuzz/fuzz-main.c
tests_fuzz_fuzz_launcherd_audit_LDADD = $(FUZZ_REPLAY_LDADD)
tests_fuzz_fuzz_launcherd_audit_CFLAGS = $(TEST_UNIT_CFLAGS)
## The seccomp classic-BPF interpreter: a seccomp_data, then instructions.
tests_fuzz_fuzz_seccomp_bpf_SOURCES = %reldir%/fuzz/fuzz-seccomp-bpf.c launcherd/seccomp-bpf.h \
	%reldir%/fuzz/fuzz-main.c
tests_fuzz_fuzz_seccomp_bpf_LDADD = $(FUZZ_REPLAY_LDADD)
tests_fuzz_fuzz_seccomp_bpf_CFLAGS = $(TEST_UNIT_CFLAGS)
## A requester's seccomp program in front of launcherd's floor (seccomp_combine()).
FUZZ_LAUNCHERD_COMBINE_SRC = %reldir%/fuzz/fuzz-launcherd-combine.c %reldir%/seccomp-stacked.h \
	launcherd/launcherd-seccomp.c launcherd/launcherd-seccomp.h launcherd/seccomp-bpf.h
tests_fuzz_fuzz_launcherd_combine_SOURCES = $(FUZZ_LAUNCHERD_COMBINE_SRC) %reldir%/fuzz/fuzz-main.c
tests_fuzz_fuzz_launcherd_combine_LDADD = $(FUZZ_REPLAY_LDADD) $(LIBSECCOMP_LIBS)
tests_fuzz_fuzz_launcherd_combine_CFLAGS = $(TEST_UNIT_CFLAGS) $(LIBSECCOMP_CFLAGS)

if ENABLE_FUZZING
## libFuzzer + ASan builds of every fuzz target (fuzz-<target>-libfuzzer at the top of the build
## tree). make fuzz-campaigns runs each for FUZZ_SECONDS on a copy of its corpus, in
## fuzz-campaigns/<target>/ (the log, the grown corpus, any crash-, leak-, timeout- or oom- input),
## and fails if any campaign found something. FUZZ_CAMPAIGNS picks targets, FUZZ_FLAGS adds
## libFuzzer options: make fuzz-campaigns FUZZ_CAMPAIGNS=launcherd-plan FUZZ_SECONDS=60
noinst_PROGRAMS += fuzz-ipc-frame-libfuzzer fuzz-jsonrpc-libfuzzer \
	fuzz-launcherd-plan-libfuzzer fuzz-launcherd-floor-libfuzzer \
	fuzz-launcherd-audit-libfuzzer fuzz-seccomp-bpf-libfuzzer \
	fuzz-launcherd-combine-libfuzzer
## Every libFuzzer program, including those the other local.mk files define.
FUZZ_CAMPAIGN_BINARIES = fuzz-ipc-frame-libfuzzer fuzz-jsonrpc-libfuzzer fuzz-tar-libfuzzer \
	fuzz-policy-libfuzzer fuzz-proxy-request-libfuzzer fuzz-backend-descriptor-libfuzzer \
	fuzz-launcherd-plan-libfuzzer fuzz-launcherd-floor-libfuzzer \
	fuzz-launcherd-audit-libfuzzer fuzz-launcherd-combine-libfuzzer fuzz-forward-mux-libfuzzer \
	fuzz-vm-kernel-libfuzzer fuzz-seccomp-bpf-libfuzzer
FUZZ_CAMPAIGN_CF = $(TEST_UNIT_CFLAGS) -fsanitize=fuzzer,address
FUZZ_CAMPAIGN_LD = -fsanitize=fuzzer,address
fuzz_ipc_frame_libfuzzer_SOURCES = %reldir%/fuzz/fuzz-ipc-frame.c
fuzz_ipc_frame_libfuzzer_CFLAGS = $(FUZZ_CAMPAIGN_CF)
fuzz_ipc_frame_libfuzzer_LDFLAGS = $(FUZZ_CAMPAIGN_LD)
fuzz_ipc_frame_libfuzzer_LDADD = libipc.a libcommon.a $(JANSSON_LIBS)
fuzz_jsonrpc_libfuzzer_SOURCES = %reldir%/fuzz/fuzz-jsonrpc.c
fuzz_jsonrpc_libfuzzer_CFLAGS = $(FUZZ_CAMPAIGN_CF)
fuzz_jsonrpc_libfuzzer_LDFLAGS = $(FUZZ_CAMPAIGN_LD)
fuzz_jsonrpc_libfuzzer_LDADD = libipc.a libcommon.a $(JANSSON_LIBS)
fuzz_launcherd_plan_libfuzzer_SOURCES = $(FUZZ_LAUNCHERD_PLAN_SRC)
fuzz_launcherd_plan_libfuzzer_CFLAGS = $(FUZZ_CAMPAIGN_CF)
fuzz_launcherd_plan_libfuzzer_LDFLAGS = $(FUZZ_CAMPAIGN_LD)
fuzz_launcherd_plan_libfuzzer_LDADD = libipc.a libcommon.a $(JANSSON_LIBS)
fuzz_launcherd_floor_libfuzzer_SOURCES = $(FUZZ_LAUNCHERD_FLOOR_SRC)
fuzz_launcherd_floor_libfuzzer_CFLAGS = $(FUZZ_CAMPAIGN_CF)
fuzz_launcherd_floor_libfuzzer_LDFLAGS = $(FUZZ_CAMPAIGN_LD)
fuzz_launcherd_floor_libfuzzer_LDADD = libipc.a libcommon.a $(JANSSON_LIBS)
fuzz_launcherd_audit_libfuzzer_SOURCES = $(FUZZ_LAUNCHERD_AUDIT_SRC)
fuzz_launcherd_audit_libfuzzer_CFLAGS = $(FUZZ_CAMPAIGN_CF)
fuzz_launcherd_audit_libfuzzer_LDFLAGS = $(FUZZ_CAMPAIGN_LD)
fuzz_launcherd_audit_libfuzzer_LDADD = libipc.a libcommon.a $(JANSSON_LIBS)
fuzz_seccomp_bpf_libfuzzer_SOURCES = %reldir%/fuzz/fuzz-seccomp-bpf.c launcherd/seccomp-bpf.h
fuzz_seccomp_bpf_libfuzzer_CFLAGS = $(FUZZ_CAMPAIGN_CF)
fuzz_seccomp_bpf_libfuzzer_LDFLAGS = $(FUZZ_CAMPAIGN_LD)
fuzz_launcherd_combine_libfuzzer_SOURCES = $(FUZZ_LAUNCHERD_COMBINE_SRC)
fuzz_launcherd_combine_libfuzzer_CFLAGS = $(FUZZ_CAMPAIGN_CF) $(LIBSECCOMP_CFLAGS)
fuzz_launcherd_combine_libfuzzer_LDFLAGS = $(FUZZ_CAMPAIGN_LD)
fuzz_launcherd_combine_libfuzzer_LDADD = libipc.a libcommon.a $(JANSSON_LIBS) $(LIBSECCOMP_LIBS)

FUZZ_SECONDS = 600
FUZZ_FLAGS =
FUZZ_CAMPAIGNS = ipc-frame jsonrpc policy proxy-request backend-descriptor launcherd-plan \
	launcherd-floor launcherd-audit launcherd-combine forward-mux seccomp-bpf
fuzz-campaigns: $(FUZZ_CAMPAIGN_BINARIES)
	@failed=; for t in $(FUZZ_CAMPAIGNS); do \
	  d=fuzz-campaigns/$$t; \
	  rm -rf $$d && $(MKDIR_P) $$d/corpus && \
	  cp $(top_srcdir)/tests/fuzz/corpus/$$t/* $$d/corpus/ || exit 1; \
	  echo "fuzz-campaigns: $$t for $(FUZZ_SECONDS) s ($$d/log)"; \
	  if ./fuzz-$$t-libfuzzer -max_total_time=$(FUZZ_SECONDS) -timeout=30 \
	      -artifact_prefix=$$d/ $(FUZZ_FLAGS) $$d/corpus >$$d/log 2>&1; then \
	    grep '^#[0-9]' $$d/log | tail -n 1; \
	  else \
	    failed="$$failed $$t"; tail -n 30 $$d/log; \
	  fi; \
	done; \
	if test -n "$$failed"; then echo "fuzz-campaigns: FAILED:$$failed"; exit 1; fi
else
fuzz-campaigns:
	@echo "fuzz-campaigns: configure with CC=clang --enable-fuzzing"; exit 1
endif
clean-local: clean-fuzz-campaigns
clean-fuzz-campaigns:
	rm -rf fuzz-campaigns
.PHONY: fuzz-campaigns clean-fuzz-campaigns

EXTRA_DIST += \
	%reldir%/fuzz/fuzz.h \
	%reldir%/fuzz/corpus

## The layering: nothing under backends/ includes a controller header or calls into the core,
## and controller/ has no dependency cycle (checked on the objects of this build).
TESTS += %reldir%/layering/run.sh
EXTRA_DIST += %reldir%/layering/run.sh %reldir%/layering/layering.py
