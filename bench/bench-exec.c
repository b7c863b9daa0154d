/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-exec: the latency of process.exec over an already open controller connection (policy
 * compile + launcher spawn + capture + reply), paired round by round with a plain fork+exec of
 * the same command from this process. Reports medians, p90 and the median paired difference.
 *
 *   bench-exec [-n ROUNDS] [SOCKET…]    (default socket: the user's controller)
 *
 * With several sockets (e.g. two builds' controllers) their rounds alternate, the order
 * rotating every round, and each gets its own median and paired difference.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench-controller.h"
#include "bench/bench-stats.h"
#include "common/json-cleanup.h"
#include "common/paths.h"
#include "ipc/ipc-jsonrpc.h"

static double fork_exec(const char *prog)
{
	double t0 = bench_now_us();
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1);
		execl(prog, prog, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	return bench_now_us() - t0;
}

/* One process.exec of /bin/true round trip, in microseconds. */
static double rpc_exec(struct jsonrpc_conn *conn, json_int_t id, const char *cwd)
{
	json_t *req = jsonrpc_request_new(id, "process.exec",
					  json_pack("{s:[s],s:s}", "argv", "/bin/true", "callerCwd",
						    cwd));
	json_t *msg = NULL;
	int fds[IPC_MAX_FDS];
	size_t n_fds;
	struct field_error fe;
	double t0 = bench_now_us(), t;

	if (jsonrpc_conn_send_wait(conn, req, NULL, 0) < 0 ||
	    jsonrpc_conn_recv(conn, &msg, fds, &n_fds, -1, &fe) <= 0) {
		fprintf(stderr, "bench-exec: the controller went away\n");
		exit(1);
	}
	t = bench_now_us() - t0;
	if (!json_object_get(msg, "result") ||
	    json_integer_value(json_object_get(json_object_get(msg, "result"), "exitCode"))) {
		char *s = json_dumps(msg, 0);

		fprintf(stderr, "bench-exec: exec failed: %s\n", s);
		exit(1);
	}
	json_decref(req);
	json_decref(msg);
	return t;
}

#define MAX_SOCKETS 4

int main(int argc, char **argv)
{
	size_t rounds = 300, n_sockets = 0;
	const char *paths[MAX_SOCKETS];
	char *dflt = NULL;
	struct jsonrpc_conn *conn[MAX_SOCKETS];
	double *a[MAX_SOCKETS], *d[MAX_SOCKETS], *b;
	char cwd[4096];
	int opt;

	while ((opt = getopt(argc, argv, "n:")) >= 0)
		if (opt == 'n')
			rounds = strtoul(optarg, NULL, 10);
	for (; optind < argc && n_sockets < MAX_SOCKETS; optind++)
		paths[n_sockets++] = argv[optind];
	if (n_sockets == 0) {
		if (cordon_controller_socket_path(&dflt, 0) < 0)
			return 1;
		paths[n_sockets++] = dflt;
	}
	if (rounds == 0 || !getcwd(cwd, sizeof(cwd)))
		return 1;
	b = calloc(rounds * n_sockets, sizeof(double));
	for (size_t k = 0; k < n_sockets; k++) {
		conn[k] = bench_controller_connect("bench-exec", paths[k]);
		a[k] = calloc(rounds, sizeof(double));
		d[k] = calloc(rounds, sizeof(double));
		for (json_int_t w = 1; w <= 10; w++) /* warm-up: the controller's plan cache */
			(void)rpc_exec(conn[k], w, cwd);
	}
	/* Paired: each exec is followed by a plain fork+exec; with several controllers the
	 * order rotates every round so that load hits them alike. */
	for (size_t r = 0; r < rounds; r++)
		for (size_t i = 0; i < n_sockets; i++) {
			size_t k = (i + r) % n_sockets;

			a[k][r] = rpc_exec(conn[k], (json_int_t)r + 11, cwd);
			b[r * n_sockets + k] = fork_exec("/bin/true");
			d[k][r] = a[k][r] - b[r * n_sockets + k];
		}
	printf("%-22s %10s %10s %16s\n", "", "median_us", "p90_us", "paired_diff_us");
	printf("%-22s %10.0f %10.0f\n", "fork+exec /bin/true",
	       bench_quantile(b, rounds * n_sockets, 0.5),
	       bench_quantile(b, rounds * n_sockets, 0.9));
	for (size_t k = 0; k < n_sockets; k++) {
		char name[32];

		snprintf(name, sizeof(name), n_sockets > 1 ? "process.exec [%zu]" : "process.exec",
			 k + 1);
		printf("%-22s %10.0f %10.0f %16.0f\n", name, bench_quantile(a[k], rounds, 0.5),
		       bench_quantile(a[k], rounds, 0.9), bench_quantile(d[k], rounds, 0.5));
		jsonrpc_conn_free(conn[k]);
	}
	if (n_sockets > 1)
		for (size_t k = 0; k < n_sockets; k++)
			printf("[%zu] %s\n", k + 1, paths[k]);
	printf("target: median paired difference <= 1500 us\n");
	free(dflt);
	return 0;
}
