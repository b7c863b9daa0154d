/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-exec: the latency of process.exec over an already open controller connection (policy
 * compile + launcher spawn + capture + reply), paired round by round with a plain fork+exec of
 * the same command from this process. Reports medians, p90 and the median paired difference.
 *
 *   bench-exec [-n ROUNDS] [SOCKET]     (default socket: the user's controller)
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/paths.h"
#include "ipc/ipc-jsonrpc.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n, double q)
{
	qsort(v, n, sizeof(double), cmp_double);
	return v[(size_t)(q * (double)(n - 1) + 0.5)];
}

static double fork_exec(const char *prog)
{
	double t0 = now_us();
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1);
		execl(prog, prog, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	return now_us() - t0;
}

int main(int argc, char **argv)
{
	size_t rounds = 300;
	char *path = NULL;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct jsonrpc_conn *conn;
	double *a, *b, *d;
	char cwd[4096];
	int fd, opt;

	while ((opt = getopt(argc, argv, "n:")) >= 0)
		if (opt == 'n')
			rounds = strtoul(optarg, NULL, 10);
	if (optind < argc)
		path = strdup(argv[optind]);
	else if (cordon_controller_socket_path(&path, 0) < 0)
		return 1;
	if (!getcwd(cwd, sizeof(cwd)))
		return 1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "bench-exec: cannot connect to %s: %m (start it: cordon ps)\n",
			path);
		return 1;
	}
	if (jsonrpc_conn_new(fd, &conn) < 0)
		return 1;
	a = calloc(rounds, sizeof(double));
	b = calloc(rounds, sizeof(double));
	d = calloc(rounds, sizeof(double));
	for (size_t r = 0; r < rounds + 10; r++) {
		json_t *req = jsonrpc_request_new((json_int_t)r + 1, "process.exec",
						  json_pack("{s:[s],s:s}", "argv", "/bin/true",
							    "callerCwd", cwd));
		json_t *msg = NULL;
		int fds[IPC_MAX_FDS];
		size_t n_fds;
		struct field_error fe;
		double t0 = now_us(), t1;

		if (jsonrpc_conn_send_wait(conn, req, NULL, 0) < 0 ||
		    jsonrpc_conn_recv(conn, &msg, fds, &n_fds, -1, &fe) <= 0) {
			fprintf(stderr, "bench-exec: the controller went away\n");
			return 1;
		}
		t1 = now_us() - t0;
		if (!json_object_get(msg, "result") ||
		    json_integer_value(
			    json_object_get(json_object_get(msg, "result"), "exitCode"))) {
			char *s = json_dumps(msg, 0);

			fprintf(stderr, "bench-exec: exec failed: %s\n", s);
			return 1;
		}
		json_decref(req);
		json_decref(msg);
		if (r >= 10) {
			a[r - 10] = t1;
			b[r - 10] = fork_exec("/bin/true");
			d[r - 10] = a[r - 10] - b[r - 10];
		}
	}
	printf("%-22s %10s %10s\n", "", "median_us", "p90_us");
	printf("%-22s %10.0f %10.0f\n", "fork+exec /bin/true", median(b, rounds, 0.5),
	       median(b, rounds, 0.9));
	printf("%-22s %10.0f %10.0f\n", "process.exec (rpc)", median(a, rounds, 0.5),
	       median(a, rounds, 0.9));
	printf("median paired difference: %.0f us (target <= 1500)\n", median(d, rounds, 0.5));
	jsonrpc_conn_free(conn);
	return 0;
}
