/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a notifying floor (docs/DENIALS.md) costs an allowed system call: none, against the
 * floor that answers EPERM itself. Each round forks one process per variant, in alternating
 * order: it loads the floor (FLOOR_ACTION_ERRNO, or FLOOR_ACTION_NOTIFY holding the listener
 * it never reads) or none, then times in a loop
 *   - getppid(), a call the floor never looks at by argument (the kernel's action cache lets
 *     it through without running the filter),
 *   - ioctl(FIONREAD) on a pipe, which the floor checks by argument (TIOCSTI, TIOCLINUX): the
 *     filter runs to its end every time,
 *   - socket(AF_UNIX) + close(), socket's path through the family rules,
 * and reports ns per call; and what loading each costs (ns, once per spawn), with what the init
 * adds for the notifying one (the listener, the signalfd). Printed: the median of each variant, and the median of the
 * per-round ratios notify / errno (1.00: the same).
 *
 *   bench/bench-floor-notify [--rounds N] [--calls N]
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/seccomp.h>

#include "bench/bench-stats.h"
#include "launcherd/launcherd-seccomp.h"

enum {
	V_NONE,
	V_ERRNO,
	V_NOTIFY,
	_V_MAX
};
enum {
	T_LOAD,
	T_GETPPID,
	T_IOCTL,
	T_SOCKET,
	_T_MAX
};
static const char *const vname[] = { "no filter", "floor, errno", "floor, notify" };
static const char *const tname[] = { "load (+listener, signalfd)", "getppid()", "ioctl(FIONREAD)",
				     "socket(AF_UNIX)+close" };

static struct seccomp_program floors[_V_MAX];

/* In a fresh child: load the variant, time each call, write _T_MAX doubles (ns per call). */
static int measure(int v, unsigned calls, double ret[_T_MAX])
{
	int p[2], pp[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0 || pipe2(pp, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		double out[_T_MAX];
		int n = 0;

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(1);
		out[T_LOAD] = 0;
		if (v != V_NONE) {
			struct sock_fprog prog = { .len = (unsigned short)floors[v].len,
						   .filter = floors[v].insns };
			sigset_t all;
			double t0 = bench_now_us();

			/* What the init does per spawn: the notifying floor's listener and the
			 * signalfd its loop waits on, against the floor alone. The listener is
			 * held and never read: an allowed call never reaches it. */
			sigfillset(&all);
			if (v == V_NOTIFY && signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK) < 0)
				_exit(2);
			if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				    v == V_NOTIFY ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0,
				    &prog) < 0)
				_exit(2);
			out[T_LOAD] = (bench_now_us() - t0) * 1000.0;
		}
		for (int t = T_GETPPID; t < _T_MAX; t++) {
			double t0 = bench_now_us();

			for (unsigned i = 0; i < calls; i++) {
				if (t == T_GETPPID)
					(void)syscall(SYS_getppid);
				else if (t == T_IOCTL)
					(void)ioctl(pp[0], FIONREAD, &n);
				else {
					int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

					if (fd >= 0)
						(void)close(fd);
				}
			}
			out[t] = (bench_now_us() - t0) * 1000.0 / calls;
		}
		_exit(write(p[1], out, sizeof(out)) == (ssize_t)sizeof(out) ? 0 : 3);
	}
	(void)close(p[1]);
	(void)close(pp[0]);
	(void)close(pp[1]);
	{
		ssize_t n = read(p[0], ret, sizeof(double) * _T_MAX);
		int status = 0;

		(void)close(p[0]);
		(void)waitpid(pid, &status, 0);
		if (n != (ssize_t)(sizeof(double) * _T_MAX) || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			return -EIO;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "rounds", required_argument, NULL, 'r' },
					      { "calls", required_argument, NULL, 'c' },
					      {} };
	unsigned rounds = 21, calls = 200000;
	double *s[_V_MAX][_T_MAX], *ratio[_T_MAX];
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		if (c == 'r')
			rounds = (unsigned)strtoul(optarg, NULL, 10);
		else if (c == 'c')
			calls = (unsigned)strtoul(optarg, NULL, 10);
		else
			return 2;
	}
	if (rounds == 0 || calls == 0)
		return 2;
	if (seccomp_floor_compile(FLOOR_ACTION_ERRNO, false, &floors[V_ERRNO]) < 0 ||
	    seccomp_floor_compile(FLOOR_ACTION_NOTIFY, false, &floors[V_NOTIFY]) < 0) {
		fprintf(stderr, "cannot compile the floor (no user notification here?)\n");
		return 1;
	}
	for (int t = 0; t < _T_MAX; t++) {
		for (int v = 0; v < _V_MAX; v++)
			s[v][t] = calloc(rounds, sizeof(double));
		ratio[t] = calloc(rounds, sizeof(double));
	}
	for (unsigned r = 0; r < rounds; r++) {
		double got[_V_MAX][_T_MAX];

		/* Alternating order, so that a drift in the machine's load hits both alike. */
		for (int k = 0; k < _V_MAX; k++) {
			int v = r % 2 ? _V_MAX - 1 - k : k;

			if (measure(v, calls, got[v]) < 0) {
				fprintf(stderr, "round %u, %s: the child failed\n", r, vname[v]);
				return 1;
			}
		}
		for (int t = 0; t < _T_MAX; t++) {
			for (int v = 0; v < _V_MAX; v++)
				s[v][t][r] = got[v][t];
			ratio[t][r] = got[V_ERRNO][t] > 0 ? got[V_NOTIFY][t] / got[V_ERRNO][t] : 0;
		}
	}
	printf("%u rounds of %u calls, ns per call (median):\n", rounds, calls);
	for (int t = 0; t < _T_MAX; t++) {
		printf("  %-24s", tname[t]);
		for (int v = 0; v < _V_MAX; v++)
			printf("  %s %.1f", vname[v], bench_median(s[v][t], rounds));
		printf("  notify/errno %.3f (quartiles %.3f-%.3f)\n",
		       bench_median(ratio[t], rounds), bench_quantile(ratio[t], rounds, 0.25),
		       bench_quantile(ratio[t], rounds, 0.75));
	}
	return 0;
}
