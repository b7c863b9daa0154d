/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/proxy-throughput: the allowed-domains proxy engine against plain loopback TCP.
 *
 *   bench/proxy-throughput [--mib N] [--rounds R] [--connects K] [--buffer BYTES]
 *                          [--pipe-max BYTES] [--copy-only]
 *
 * A forked server on 127.0.0.1 (sink: read to EOF, then close; echo: answer one byte) and the
 * proxy engine in a forked child on its own event loop, with rules allowing "bench.test" pinned
 * to 127.0.0.1. Then, paired and interleaved:
 *   throughput  N MiB (default 256) client → server, directly and through a CONNECT tunnel,
 *               timed from the first byte to the server's close; R rounds (default 11), the
 *               order within a pair alternating; same client (128 KiB writes, TCP_NODELAY)
 *               and server on both paths, only the tunnel differs;
 *   latency     K times (default 500) connect + one-byte echo directly, and connect + CONNECT +
 *               200 + one-byte echo through the proxy; the difference is what a CONNECT adds.
 * Reports medians: throughput each way and the per-pair ratio, and the added latency; and where
 * the time goes: the CPU time (/proc/PID/schedstat) client, server and proxy spent per GiB on
 * each path. With fewer free cores than the three processes, the ratio is bounded by the ratio
 * of those totals. --copy-only relays through the engine's buffers instead of splice() pipes.
 * Not a test: numbers depend on the machine.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench-stats.h"
#include "common/cleanup.h"
#include "common/event.h"
#include "common/system.h"
#include "common/util.h"
#include "controller/proxy.h"

static int listen_any(unsigned *ret_port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) < 0) {
		safe_close(fd);
		return -errno;
	}
	*ret_port = ntohs(sin.sin_port);
	return fd;
}

static int connect_port(unsigned port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				   .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		safe_close(fd);
		return -1;
	}
	return fd;
}

/* One connection at a time: first byte 'e' echoes one byte; 's' sinks to EOF. */
_noreturn_ static void server(int lfd)
{
	static char buf[1 << 17];

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), one = 1;
		char mode;

		if (fd < 0)
			continue;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (read(fd, &mode, 1) == 1) {
			if (mode == 'e')
				(void)loop_write(fd, "e", 1);
			else
				while (read(fd, buf, sizeof(buf)) > 0)
					;
		}
		safe_close(fd);
	}
}

static size_t buffer_size = PROXY_DEFAULT_BUFFER_SIZE, pipe_max = PROXY_DEFAULT_PIPE_MAX;
static bool copy_only;

_noreturn_ static void proxy(int lfd, unsigned upstream)
{
	_cleanup_free_ char *allow = strdup_printf("bench.test:%u", upstream);
	char *a[] = { allow, NULL }, *pins[] = { (char *)"bench.test=127.0.0.1", NULL };
	struct proxy_listener *l = NULL;
	struct proxy_rules *r = NULL;
	struct event_loop *loop = NULL;
	struct proxy_limits limits;

	proxy_limits_default(&limits);
	limits.buffer_size = buffer_size;
	limits.pipe_max = pipe_max;
	limits.copy_only = copy_only;
	if (!allow || proxy_rules_new(a, NULL, NULL, 0, pins, &r, NULL) < 0 ||
	    event_loop_new(&loop) < 0 ||
	    proxy_listener_new(loop, lfd, r, &limits, NULL, NULL, &l) < 0)
		_exit(1);
	(void)event_loop_run(loop);
	_exit(0);
}

static int tunnel(unsigned proxy_port, unsigned upstream)
{
	char req[128], resp[128];
	size_t got = 0;
	int fd = connect_port(proxy_port);

	if (fd < 0)
		return -1;
	(void)snprintf(req, sizeof(req), "CONNECT bench.test:%u HTTP/1.1\r\n\r\n", upstream);
	if (loop_write(fd, req, strlen(req)) < 0)
		return safe_close(fd);
	while (got < sizeof(resp) - 1) {
		ssize_t n = read(fd, resp + got, 1);

		if (n <= 0)
			return safe_close(fd);
		got++;
		resp[got] = '\0';
		if (got >= 4 && memcmp(resp + got - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	if (strncmp(resp, "HTTP/1.1 200", 12) != 0)
		return safe_close(fd);
	return fd;
}

/* Seconds to push bytes through fd and see the server close. */
static double transfer(int fd, uint64_t bytes)
{
	static char buf[1 << 17];
	unsigned long long t0 = now_nsec();
	char c;

	memset(buf, 'x', sizeof(buf));
	buf[0] = 's';
	while (bytes > 0) {
		size_t k = bytes < sizeof(buf) ? (size_t)bytes : sizeof(buf);

		if (loop_write(fd, buf, k) < 0)
			return -1;
		buf[0] = 'x';
		bytes -= k;
	}
	(void)shutdown(fd, SHUT_WR);
	while (read(fd, &c, 1) > 0)
		;
	safe_close(fd);
	return (double)(now_nsec() - t0) / 1e9;
}

/* CPU time a process has run, in ns (/proc/PID/schedstat: on-CPU time first). */
static uint64_t cpu_ns(pid_t pid)
{
	_cleanup_free_ char *path = strdup_printf("/proc/%d/schedstat", (int)pid), *text = NULL;
	unsigned long long v;

	if (!path || read_full_file(path, 256, &text, NULL) < 0 || sscanf(text, "%llu", &v) != 1)
		return 0;
	return (uint64_t)v;
}

/* CPU of the client (this process), the server and the proxy. */
struct cpu {
	uint64_t v[3];
};

static struct cpu cpu_now(pid_t server, pid_t proxy)
{
	return (struct cpu){ { cpu_ns(getpid()), cpu_ns(server), cpu_ns(proxy) } };
}

static double echo_once(int fd, unsigned long long t0)
{
	char c;

	if (fd < 0 || loop_write(fd, "e", 1) < 0 || read(fd, &c, 1) != 1) {
		safe_close(fd);
		return -1;
	}
	safe_close(fd);
	return (double)(now_nsec() - t0) / 1e3; /* µs */
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mib", required_argument, NULL, 'm' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "connects", required_argument, NULL, 'c' },
		{ "buffer", required_argument, NULL, 'b' },
		{ "pipe-max", required_argument, NULL, 'p' },
		{ "copy-only", no_argument, NULL, 'C' },
		{},
	};
	unsigned mib = 256, rounds = 11, connects = 500, sport, pport;
	_cleanup_free_ double *direct = NULL, *proxied = NULL, *ratio = NULL, *ld = NULL,
			      *lp = NULL, *added = NULL;
	pid_t spid, ppid;
	uint64_t v;
	int c, sfd, pfd;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		if (c == 'm' && safe_atou(optarg, &mib) >= 0 && mib > 0)
			continue;
		if (c == 'r' && safe_atou(optarg, &rounds) >= 0 && rounds > 0)
			continue;
		if (c == 'c' && safe_atou(optarg, &connects) >= 0 && connects > 0)
			continue;
		if (c == 'b' && safe_atou64(optarg, &v) >= 0 && v >= 512 && v <= (1U << 30)) {
			buffer_size = (size_t)v;
			continue;
		}
		if (c == 'p' && safe_atou64(optarg, &v) >= 0 && v <= (1U << 30)) {
			pipe_max = (size_t)v;
			continue;
		}
		if (c == 'C') {
			copy_only = true;
			continue;
		}
		fprintf(stderr, "usage: proxy-throughput [--mib N] [--rounds R] [--connects K] "
				"[--buffer BYTES] [--pipe-max BYTES] [--copy-only]\n");
		return 2;
	}
	direct = calloc(rounds, sizeof(double));
	proxied = calloc(rounds, sizeof(double));
	ratio = calloc(rounds, sizeof(double));
	ld = calloc(connects, sizeof(double));
	lp = calloc(connects, sizeof(double));
	added = calloc(connects, sizeof(double));
	if (!direct || !proxied || !ratio || !ld || !lp || !added)
		return 1;
	(void)signal(SIGPIPE, SIG_IGN);

	sfd = listen_any(&sport);
	pfd = listen_any(&pport);
	if (sfd < 0 || pfd < 0)
		return fprintf(stderr, "listen: %s\n", strerror(-(sfd < 0 ? sfd : pfd))), 1;
	spid = fork();
	if (spid == 0)
		server(sfd);
	ppid = fork();
	if (ppid == 0) {
		safe_close(sfd);
		proxy(pfd, sport);
	}
	safe_close(sfd);
	safe_close(pfd);

	uint64_t bytes = (uint64_t)mib << 20;
	/* CPU ns spent by client, server, proxy during the transfers of each path. */
	uint64_t cpu[2][3] = { { 0 } };

	for (unsigned i = 0; i < rounds; i++) {
		/* Alternate which goes first so drift does not favour one side. */
		for (unsigned k = 0; k < 2; k++) {
			bool via_proxy = (i + k) % 2;
			int fd = via_proxy ? tunnel(pport, sport) : connect_port(sport);
			struct cpu c0 = cpu_now(spid, ppid), c1;
			double t = transfer(fd, bytes);

			c1 = cpu_now(spid, ppid);
			if (t <= 0)
				return fprintf(stderr, "transfer failed\n"), 1;
			(via_proxy ? proxied : direct)[i] = (double)mib / t;
			for (unsigned j = 0; j < 3; j++)
				cpu[via_proxy][j] += c1.v[j] - c0.v[j];
		}
		ratio[i] = proxied[i] / direct[i];
		printf("round %u: direct %.0f MiB/s, proxy %.0f MiB/s, ratio %.3f\n", i + 1,
		       direct[i], proxied[i], ratio[i]);
	}
	for (unsigned i = 0; i < connects; i++) {
		unsigned long long t0 = now_nsec();

		ld[i] = echo_once(connect_port(sport), t0);
		t0 = now_nsec();
		lp[i] = echo_once(tunnel(pport, sport), t0);
		if (ld[i] < 0 || lp[i] < 0)
			return fprintf(stderr, "echo failed\n"), 1;
		added[i] = lp[i] - ld[i];
	}

	printf("throughput (%u MiB, %u paired rounds, %zu-byte buffers, %s %zu): direct %.0f MiB/s, "
	       "proxy %.0f MiB/s, median ratio %.3f\n",
	       mib, rounds, buffer_size, copy_only ? "copying, no pipes" : "splice, pipes up to",
	       copy_only ? (size_t)0 : pipe_max, bench_median(direct, rounds),
	       bench_median(proxied, rounds), bench_median(ratio, rounds));
	/* Where the time goes: CPU ms per GiB moved, per process (2 paths × rounds transfers). */
	double gib = (double)bytes * rounds / (double)(1ULL << 30);

	printf("CPU ms per GiB: direct client %.0f + server %.0f (+ idle proxy %.0f) = %.0f; "
	       "proxy client %.0f + server %.0f + proxy %.0f = %.0f\n",
	       cpu[0][0] / 1e6 / gib, cpu[0][1] / 1e6 / gib, cpu[0][2] / 1e6 / gib,
	       (cpu[0][0] + cpu[0][1] + cpu[0][2]) / 1e6 / gib, cpu[1][0] / 1e6 / gib,
	       cpu[1][1] / 1e6 / gib, cpu[1][2] / 1e6 / gib,
	       (cpu[1][0] + cpu[1][1] + cpu[1][2]) / 1e6 / gib);
	printf("connect + 1-byte echo (%u paired): direct %.1f us, through CONNECT %.1f us, "
	       "median added %.1f us\n",
	       connects, bench_median(ld, connects), bench_median(lp, connects),
	       bench_median(added, connects));

	(void)kill(spid, SIGTERM);
	(void)kill(ppid, SIGTERM);
	(void)waitpid(spid, NULL, 0);
	(void)waitpid(ppid, NULL, 0);
	return 0;
}
