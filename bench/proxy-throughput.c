/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/proxy-throughput: the allowed-domains proxy engine against plain loopback TCP.
 *
 *   bench/proxy-throughput [--mib N] [--rounds R] [--connects K] [--buffer BYTES]
 *                          [--buffer-max BYTES] [--host-lo] [--verbose]
 *
 * A forked server on 127.0.0.1 (sink: read to EOF, then close; source: send the bytes asked
 * for, then close; echo: answer one byte) and the proxy engine in a forked child on its own event
 * loop, with rules allowing "bench.test" pinned to 127.0.0.1. As in a sandbox of network mode
 * proxy, the proxy's listener and the client's end of each tunnel are in a network namespace of
 * their own, its lo brought up by launcherd's own code (launcherd-lo.c), and the proxy connects
 * to the server in the host's (--host-lo, or without the privilege to make one: all on the
 * host's lo). Then, paired and interleaved:
 *   throughput  N MiB (default 256) each way, directly and through a CONNECT tunnel: upload
 *               (client → server, timed from the first byte to the server's close) and download
 *               (server → client, timed from the request to the client's EOF); R rounds
 *               (default 11), the order within a pair alternating; the same client and server
 *               (128 KiB reads and writes, TCP_NODELAY) on both paths, only the tunnel differs;
 *   latency     K times (default 500) connect + one-byte echo directly, and connect + CONNECT +
 *               200 + one-byte echo through the proxy; the difference is what a CONNECT adds.
 * Reports medians: throughput each way and path and the per-pair ratio, and the added latency;
 * and where the time goes: the CPU time (/proc/PID/schedstat) client, server and proxy spent
 * per GiB on each path, and how often each was put on a CPU per MiB (wake-ups). With fewer free
 * cores than the three processes, the proxy path is bounded by its total over the cores: the
 * ratio that bound allows is printed.
 * --buffer and --buffer-max set the engine's buffers (struct proxy_limits); --verbose prints
 * every transfer's rate, CPU and wake-ups.
 * Not a test: numbers depend on the machine.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
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
#include "proxy/proxy.h"
#include "launcherd/launcherd-net.h"

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

/* The host's network namespace and the "sandbox's" (-1: all on the host's lo). */
static int host_ns = -1, sandbox_ns = -1;

/* A client socket, in the sandbox's namespace when there is one and in_sandbox; -1 on error. */
static int client_socket(bool in_sandbox)
{
	int fd, one = 1;

	if (in_sandbox && sandbox_ns >= 0 && setns(sandbox_ns, CLONE_NEWNET) < 0)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (in_sandbox && sandbox_ns >= 0 && setns(host_ns, CLONE_NEWNET) < 0)
		return safe_close(fd);
	if (fd >= 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* fd connected to 127.0.0.1:port, or -1 (fd closed). */
static int connect_port(int fd, unsigned port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				   .sin_port = htons((uint16_t)port) };

	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		return safe_close(fd);
	return fd;
}

/*
 * One connection at a time: first byte 'e' echoes one byte; 's' sinks to EOF; 'd' and a
 * 64-bit count sends that many bytes.
 */
_noreturn_ static void server(int lfd)
{
	static char buf[1 << 17];
	uint64_t left;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), one = 1;
		char mode;

		if (fd < 0)
			continue;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (read(fd, &mode, 1) == 1) {
			if (mode == 'e')
				(void)loop_write(fd, "e", 1);
			else if (mode == 'd') {
				if (read(fd, &left, sizeof(left)) != sizeof(left))
					left = 0;
				memset(buf, 'x', sizeof(buf));
				while (left > 0) {
					size_t k = left < sizeof(buf) ? (size_t)left : sizeof(buf);

					if (loop_write(fd, buf, k) < 0)
						break;
					left -= k;
				}
			} else
				while (read(fd, buf, sizeof(buf)) > 0)
					;
		}
		safe_close(fd);
	}
}

static size_t buffer_size = PROXY_DEFAULT_BUFFER_SIZE, buffer_max = PROXY_DEFAULT_BUFFER_MAX;
static bool verbose;

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
	limits.buffer_max = buffer_max;
	if (!allow || proxy_rules_new(a, NULL, NULL, 0, pins, &r, NULL) < 0 ||
	    event_loop_new(&loop) < 0 ||
	    proxy_listener_new(loop, lfd, r, &limits, NULL, NULL, &l) < 0)
		_exit(1);
	(void)event_loop_run(loop);
	_exit(0);
}

/* fd (a client_socket(true)) through a CONNECT tunnel to upstream, or -1 (fd closed). */
static int tunnel(int fd, unsigned proxy_port, unsigned upstream)
{
	char req[128], resp[128];
	size_t got = 0;

	fd = connect_port(fd, proxy_port);
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

/* Seconds to have the server send bytes through fd and see its close. */
static double download(int fd, uint64_t bytes)
{
	static char buf[1 << 17];
	unsigned long long t0 = now_nsec();
	char req[1 + sizeof(bytes)] = { 'd' };
	uint64_t got = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	memcpy(req + 1, &bytes, sizeof(bytes));
	if (loop_write(fd, req, sizeof(req)) < 0)
		return safe_close(fd), -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		got += (uint64_t)n;
	safe_close(fd);
	return got == bytes ? (double)(now_nsec() - t0) / 1e9 : -1;
}

/* Seconds to push bytes through fd and see the server close. */
static double upload(int fd, uint64_t bytes)
{
	static char buf[1 << 17];
	unsigned long long t0 = now_nsec();
	char c;

	if (fd < 0)
		return -1;
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

/*
 * CPU time a process has run, in ns, and how many times it was put on a CPU (a wake-up or a
 * preemption's return): /proc/PID/schedstat's first and third fields.
 */
static void sched_stat(pid_t pid, uint64_t *ret_ns, uint64_t *ret_runs)
{
	_cleanup_free_ char *path = strdup_printf("/proc/%d/schedstat", (int)pid), *text = NULL;
	unsigned long long ns, wait, runs;

	*ret_ns = *ret_runs = 0;
	if (!path || read_full_file(path, 256, &text, NULL) < 0 ||
	    sscanf(text, "%llu %llu %llu", &ns, &wait, &runs) != 3)
		return;
	*ret_ns = ns;
	*ret_runs = runs;
}

/* CPU and times run of the client (this process), the server and the proxy. */
struct cpu {
	uint64_t v[3], runs[3];
};

static struct cpu cpu_now(pid_t server, pid_t proxy)
{
	struct cpu c;

	sched_stat(getpid(), &c.v[0], &c.runs[0]);
	sched_stat(server, &c.v[1], &c.runs[1]);
	sched_stat(proxy, &c.v[2], &c.runs[2]);
	return c;
}

static void transfer_report(const char *name, bool via_proxy, unsigned mib, double t,
			    const struct cpu *c0, const struct cpu *c1)
{
	printf("  %s %s: %.0f MiB/s; CPU ms per GiB client %.0f, server %.0f, proxy %.0f; "
	       "times on a CPU per MiB %.1f, %.1f, %.1f\n",
	       name, via_proxy ? "proxy" : "direct", mib / t,
	       (double)(c1->v[0] - c0->v[0]) / 1e6 * 1024 / mib,
	       (double)(c1->v[1] - c0->v[1]) / 1e6 * 1024 / mib,
	       (double)(c1->v[2] - c0->v[2]) / 1e6 * 1024 / mib,
	       (double)(c1->runs[0] - c0->runs[0]) / mib, (double)(c1->runs[1] - c0->runs[1]) / mib,
	       (double)(c1->runs[2] - c0->runs[2]) / mib);
}

/*
 * The "sandbox's" network namespace, lo up as launcherd brings it up, entered (the caller makes
 * the proxy's listener there and goes back to host_ns). Needs CAP_SYS_ADMIN.
 */
static int make_sandbox_netns(void)
{
	int r;

	host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (host_ns < 0 || unshare(CLONE_NEWNET) < 0)
		return -errno;
	sandbox_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	r = sandbox_ns < 0 ? -errno : net_loopback_up();
	if (r < 0) {
		(void)setns(host_ns, CLONE_NEWNET);
		sandbox_ns = safe_close(sandbox_ns);
		errno = -r;
	}
	return r;
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

/* One direction's figures: MiB/s per path and round, and what each process spent. */
struct way {
	const char *name;
	double (*run)(int fd, uint64_t bytes);
	double *mibs[2], *ratio;
	uint64_t cpu[2][3], runs[2][3]; /* [via proxy][client, server, proxy] */
};

/*
 * The fastest the proxy path could go on ncpu CPUs given the CPU it used: no faster than its
 * busiest process alone, nor than all three sharing every CPU perfectly. Against the direct
 * path's measured median, the ratio this allows.
 */
static double ratio_bound(const struct way *w, unsigned rounds, unsigned ncpu, double gib)
{
	double busiest = 0, total = 0, ms_direct = 1024.0 * 1e3 / bench_median(w->mibs[0], rounds);

	for (unsigned j = 0; j < 3; j++) {
		double ms = (double)w->cpu[1][j] / 1e6 / gib;

		busiest = ms > busiest ? ms : busiest;
		total += ms;
	}
	total /= ncpu;
	return ms_direct / (busiest > total ? busiest : total);
}

static void way_report(const struct way *w, unsigned mib, unsigned rounds, unsigned ncpu)
{
	double gib = (double)mib * rounds / 1024.0;
	const uint64_t(*c)[3] = w->cpu, (*r)[3] = w->runs;

	printf("%s (%u MiB, %u paired rounds, buffers %zu growing to %zu, client in %s): direct "
	       "%.0f MiB/s, proxy %.0f MiB/s, median ratio %.3f\n",
	       w->name, mib, rounds, buffer_size, buffer_max,
	       sandbox_ns >= 0 ? "a netns of its own" : "the host's netns",
	       bench_median(w->mibs[0], rounds), bench_median(w->mibs[1], rounds),
	       bench_median(w->ratio, rounds));
	printf("  CPU ms per GiB: direct client %.0f + server %.0f (+ idle proxy %.0f) = %.0f; "
	       "proxy client %.0f + server %.0f + proxy %.0f = %.0f\n",
	       c[0][0] / 1e6 / gib, c[0][1] / 1e6 / gib, c[0][2] / 1e6 / gib,
	       (c[0][0] + c[0][1] + c[0][2]) / 1e6 / gib, c[1][0] / 1e6 / gib, c[1][1] / 1e6 / gib,
	       c[1][2] / 1e6 / gib, (c[1][0] + c[1][1] + c[1][2]) / 1e6 / gib);
	printf("  times on a CPU per MiB: direct client %.1f, server %.1f; proxy client %.1f, "
	       "server %.1f, proxy %.1f\n",
	       r[0][0] / gib / 1024, r[0][1] / gib / 1024, r[1][0] / gib / 1024,
	       r[1][1] / gib / 1024, r[1][2] / gib / 1024);
	printf("  on %u CPUs that CPU time allows the proxy path at most ratio %.3f\n", ncpu,
	       ratio_bound(w, rounds, ncpu, gib));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mib", required_argument, NULL, 'm' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "connects", required_argument, NULL, 'c' },
		{ "buffer", required_argument, NULL, 'b' },
		{ "buffer-max", required_argument, NULL, 'B' },
		{ "host-lo", no_argument, NULL, 'H' },
		{ "verbose", no_argument, NULL, 'v' },
		{},
	};
	unsigned mib = 256, rounds = 11, connects = 500, sport, pport;
	_cleanup_free_ double *ld = NULL, *lp = NULL, *added = NULL;
	struct way ways[2] = { { .name = "upload", .run = upload },
			       { .name = "download", .run = download } };
	pid_t spid, ppid;
	uint64_t v;
	bool host_lo = false;
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
		if (c == 'B' && safe_atou64(optarg, &v) >= 0 && v <= (1U << 30)) {
			buffer_max = (size_t)v;
			continue;
		}
		if (c == 'H') {
			host_lo = true;
			continue;
		}
		if (c == 'v') {
			verbose = true;
			continue;
		}
		fprintf(stderr, "usage: proxy-throughput [--mib N] [--rounds R] [--connects K] "
				"[--buffer BYTES] [--buffer-max BYTES] [--host-lo] [--verbose]\n");
		return 2;
	}
	for (unsigned w = 0; w < 2; w++) {
		ways[w].mibs[0] = calloc(rounds, sizeof(double));
		ways[w].mibs[1] = calloc(rounds, sizeof(double));
		ways[w].ratio = calloc(rounds, sizeof(double));
		if (!ways[w].mibs[0] || !ways[w].mibs[1] || !ways[w].ratio)
			return 1;
	}
	ld = calloc(connects, sizeof(double));
	lp = calloc(connects, sizeof(double));
	added = calloc(connects, sizeof(double));
	if (!ld || !lp || !added)
		return 1;
	(void)signal(SIGPIPE, SIG_IGN);

	sfd = listen_any(&sport);
	if (!host_lo && make_sandbox_netns() < 0)
		fprintf(stderr, "proxy-throughput: no network namespace of its own for the client "
				"(%m): all on the host's lo\n");
	pfd = listen_any(&pport);
	if (sandbox_ns >= 0 && setns(host_ns, CLONE_NEWNET) < 0)
		return fprintf(stderr, "setns: %m\n"), 1;
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

	for (unsigned i = 0; i < rounds; i++) {
		for (unsigned w = 0; w < 2; w++) {
			struct way *way = &ways[w];

			/* Alternate which goes first so drift does not favour one side. */
			for (unsigned k = 0; k < 2; k++) {
				bool via_proxy = (i + k) % 2;
				int fd = client_socket(via_proxy);

				fd = via_proxy ? tunnel(fd, pport, sport) : connect_port(fd, sport);
				struct cpu c0 = cpu_now(spid, ppid), c1;
				double t = way->run(fd, bytes);

				c1 = cpu_now(spid, ppid);
				if (t <= 0)
					return fprintf(stderr, "%s failed\n", way->name), 1;
				way->mibs[via_proxy][i] = (double)mib / t;
				if (verbose)
					transfer_report(way->name, via_proxy, mib, t, &c0, &c1);
				for (unsigned j = 0; j < 3; j++) {
					way->cpu[via_proxy][j] += c1.v[j] - c0.v[j];
					way->runs[via_proxy][j] += c1.runs[j] - c0.runs[j];
				}
			}
			way->ratio[i] = way->mibs[1][i] / way->mibs[0][i];
		}
		printf("round %u: upload direct %.0f MiB/s, proxy %.0f MiB/s, ratio %.3f; download "
		       "direct %.0f MiB/s, proxy %.0f MiB/s, ratio %.3f\n",
		       i + 1, ways[0].mibs[0][i], ways[0].mibs[1][i], ways[0].ratio[i],
		       ways[1].mibs[0][i], ways[1].mibs[1][i], ways[1].ratio[i]);
	}
	for (unsigned i = 0; i < connects; i++) {
		/* Sockets made first: entering the sandbox's namespace is not the proxy's cost. */
		int dfd = client_socket(false), pfd2 = client_socket(true);
		unsigned long long t0 = now_nsec();

		ld[i] = echo_once(connect_port(dfd, sport), t0);
		t0 = now_nsec();
		lp[i] = echo_once(tunnel(pfd2, pport, sport), t0);
		if (ld[i] < 0 || lp[i] < 0)
			return fprintf(stderr, "echo failed\n"), 1;
		added[i] = lp[i] - ld[i];
	}

	cpu_set_t set;
	unsigned ncpu = sched_getaffinity(0, sizeof(set), &set) == 0 ? (unsigned)CPU_COUNT(&set)
								     : 1;

	for (unsigned w = 0; w < 2; w++)
		way_report(&ways[w], mib, rounds, ncpu);
	printf("connect + 1-byte echo (%u paired): direct %.1f us, through CONNECT %.1f us, "
	       "median added %.1f us\n",
	       connects, bench_median(ld, connects), bench_median(lp, connects),
	       bench_median(added, connects));

	(void)kill(spid, SIGTERM);
	(void)kill(ppid, SIGTERM);
	(void)waitpid(spid, NULL, 0);
	(void)waitpid(ppid, NULL, 0);
	for (unsigned w = 0; w < 2; w++) {
		free(ways[w].mibs[0]);
		free(ways[w].mibs[1]);
		free(ways[w].ratio);
	}
	return 0;
}
