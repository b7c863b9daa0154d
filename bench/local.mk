## bench/: benchmarks (not tests). `make bench` builds them all; bench/README.md says how to run.
##   bench/spawn             launcherd request → reaped, paired with bwrap and fork+exec
##   bench/bench-paired      paired timing of whole commands (cordon run vs bwrap)
##   bench/bench-exec        process.exec over an open controller connection
##   bench/proxy-throughput  256 MiB through the proxy vs plain loopback TCP; CONNECT latency
##   bench/bench-activation  process.exec during continuous activations vs idle; activation cost
##   bench/bench-floor-notify an allowed system call under the notifying floor vs the errno one
## Shared by every benchmark: the clock and the order statistics.
BENCH_STATS = %reldir%/bench-stats.c %reldir%/bench-stats.h
## And by those that talk to a running controller: the connection.
BENCH_CONTROLLER = %reldir%/bench-controller.c %reldir%/bench-controller.h
EXTRA_PROGRAMS = bench/spawn bench/bench-paired bench/bench-exec bench/proxy-throughput \
	bench/bench-activation bench/bench-floor-notify
bench_spawn_SOURCES = %reldir%/spawn.c $(BENCH_STATS)
bench_spawn_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
## --plan-filter: the controller's seccomp program for the default syscalls profile.
bench_spawn_LDADD = libctl_launcher.a libpolicy_compile.a libpolicy.a libipc.a libcommon.a \
	$(JANSSON_LIBS) $(LIBSECCOMP_LIBS)
bench_bench_paired_SOURCES = %reldir%/bench-paired.c $(BENCH_STATS)
bench_bench_exec_SOURCES = %reldir%/bench-exec.c $(BENCH_STATS) $(BENCH_CONTROLLER)
bench_bench_exec_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
bench_bench_exec_LDADD = libipc.a libcommon.a $(JANSSON_LIBS)
bench_bench_activation_SOURCES = %reldir%/bench-activation.c $(BENCH_STATS) $(BENCH_CONTROLLER)
bench_bench_activation_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
bench_bench_activation_LDADD = libipc.a libcommon.a $(JANSSON_LIBS)
bench_bench_floor_notify_SOURCES = %reldir%/bench-floor-notify.c $(BENCH_STATS) \
	launcherd/launcherd-seccomp.c launcherd/launcherd-seccomp.h
bench_bench_floor_notify_CFLAGS = $(AM_CFLAGS) $(LIBSECCOMP_CFLAGS)
bench_bench_floor_notify_LDADD = libcommon.a $(LIBSECCOMP_LIBS)
## The proxy's client side gets lo as launcherd sets it up in a sandbox's netns.
bench_proxy_throughput_SOURCES = %reldir%/proxy-throughput.c $(BENCH_STATS) \
	launcherd/launcherd-lo.c
bench_proxy_throughput_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LIBNL_CFLAGS)
bench_proxy_throughput_LDADD = libproxy.a libcommon.a $(JANSSON_LIBS) $(LIBNL_LIBS)
CLEANFILES += $(EXTRA_PROGRAMS)
EXTRA_DIST += %reldir%/run-cli.sh %reldir%/trace-steps.py %reldir%/README.md \
	%reldir%/denials-cost.sh
EXTRA_DIST += %reldir%/remote-pack.sh %reldir%/remote-pack.py %reldir%/vm.sh \
	%reldir%/vm-baseline.sh
bench: $(EXTRA_PROGRAMS)
.PHONY: bench
