/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-activation: what activations cost, and what they cost the processes being spawned
 * meanwhile (targets: spawn latency during continuous activations within 1.2x of idle; an
 * activation of a ready backend under 10 ms of controller time).
 *
 * A child process holds its own controller connection and activates BACKEND back to back while
 * the parent says "go". The parent times process.exec of /bin/true in pairs: one with the child
 * parked (idle), one while it activates (busy), alternating which comes first. It reports the
 * medians, the median of the paired ratios and the wall time of each activation as the child saw
 * it; then the controller's CPU time per activation (utime+stime from /proc) over 200 back-to-back
 * activations with nothing else running.
 *
 *   bench-activation [-n PAIRS] [-b BACKEND] [SOCKET]   (default: 200 pairs, builtin:auto)
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench-controller.h"
#include "bench/bench-stats.h"
#include "common/json-cleanup.h"
#include "common/paths.h"
#include "ipc/ipc-jsonrpc.h"

#define SOLO_ACTIVATIONS 200

/* Shared with the activating child. */
struct shared {
	volatile int go;      /* parent: activate now */
	volatile int busy;    /* child: an activation is in flight or about to be */
	volatile int stop;    /* parent: exit */
	volatile long done;   /* activations completed */
	volatile long failed; /* activations that returned an error */
	double wall_us[4096]; /* wall time of each completed activation (first 4096) */
};

/* One call; the reply's result, or NULL (error printed once per kind by the caller). */
static json_t *call(struct jsonrpc_conn *conn, json_int_t id, const char *method, json_t *params)
{
	_cleanup_json_ json_t *req = jsonrpc_request_new(id, method, params);
	json_t *msg = NULL, *result;
	int fds[IPC_MAX_FDS];
	size_t n_fds = 0;
	struct field_error fe;

	if (!req || jsonrpc_conn_send_wait(conn, req, NULL, 0) < 0)
		return NULL;
	for (;;) {
		if (jsonrpc_conn_recv(conn, &msg, fds, &n_fds, -1, &fe) <= 0) {
			fprintf(stderr, "bench-activation: the controller went away\n");
			exit(1);
		}
		for (size_t i = 0; i < n_fds; i++)
			close(fds[i]);
		/* Skip notifications (events, process output). */
		if (json_object_get(msg, "id"))
			break;
		json_decref(msg);
	}
	result = json_incref(json_object_get(msg, "result"));
	if (!result) {
		char *s = json_dumps(msg, 0);

		fprintf(stderr, "bench-activation: %s failed: %s\n", method, s);
		free(s);
	}
	json_decref(msg);
	return result;
}

static void activator(const char *path, const char *backend, struct shared *sh)
{
	struct jsonrpc_conn *conn = bench_controller_connect("bench-activation", path);
	json_int_t id = 1;

	while (!sh->stop) {
		double t0;
		json_t *r;

		if (!sh->go) {
			sh->busy = 0;
			usleep(200);
			continue;
		}
		sh->busy = 1;
		t0 = bench_now_us();
		r = call(conn, id++, "backend.activate", json_pack("{s:s}", "backend", backend));
		if (!r)
			sh->failed++;
		else if (sh->done < (long)(sizeof(sh->wall_us) / sizeof(sh->wall_us[0])))
			sh->wall_us[sh->done] = bench_now_us() - t0;
		if (r)
			sh->done++;
		json_decref(r);
	}
	jsonrpc_conn_free(conn);
	_exit(0);
}

static double exec_once(struct jsonrpc_conn *conn, json_int_t id, const char *cwd)
{
	double t0 = bench_now_us();
	json_t *r = call(conn, id, "process.exec",
			 json_pack("{s:[s],s:s}", "argv", "/bin/true", "callerCwd", cwd));

	if (!r || json_integer_value(json_object_get(r, "exitCode")) != 0)
		exit(1);
	json_decref(r);
	return bench_now_us() - t0;
}

/* utime + stime of pid, in microseconds. */
static double cpu_us(pid_t pid)
{
	char p[64], buf[2048], *s;
	unsigned long ut = 0, st = 0;
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	s = strrchr(buf, ')');
	/* After ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
	 * stime (fields 3..15 of proc(5)). */
	if (!s ||
	    sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}

static pid_t controller_pid(const char *path)
{
	char lock[4200], line[64] = "";
	FILE *f;

	snprintf(lock, sizeof(lock), "%s.lock", path);
	f = fopen(lock, "re");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	return (pid_t)atoi(line);
}

int main(int argc, char **argv)
{
	const char *backend = "builtin:auto";
	size_t pairs = 200, n_wall;
	char *path = NULL, cwd[4096];
	struct jsonrpc_conn *conn;
	struct shared *sh;
	double *idle, *busy, *ratio, cpu0, cpu1;
	long act0, act1;
	pid_t child, ctl;
	int opt;

	while ((opt = getopt(argc, argv, "n:b:")) >= 0) {
		if (opt == 'n')
			pairs = strtoul(optarg, NULL, 10);
		else if (opt == 'b')
			backend = optarg;
		else {
			fprintf(stderr,
				"usage: bench-activation [-n PAIRS] [-b BACKEND] [SOCKET]\n");
			return 2;
		}
	}
	if (pairs == 0)
		pairs = 1;
	if (optind < argc)
		path = strdup(argv[optind]);
	else if (cordon_controller_socket_path(&path, 0) < 0)
		return 1;
	if (!path || !getcwd(cwd, sizeof(cwd)))
		return 1;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	conn = bench_controller_connect("bench-activation", path);
	ctl = controller_pid(path);
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0)
		activator(path, backend, sh);

	/* Warm-up: a few execs and activations. */
	for (int i = 0; i < 10; i++)
		(void)exec_once(conn, 1000000 + i, cwd);
	idle = calloc(pairs, sizeof(double));
	busy = calloc(pairs, sizeof(double));
	ratio = calloc(pairs, sizeof(double));
	if (!idle || !busy || !ratio)
		return 1;
	act0 = sh->done;
	for (size_t i = 0; i < pairs; i++) {
		for (int k = 0; k < 2; k++) {
			bool want_busy = (k == 0) == (i % 2 == 0);

			sh->go = want_busy;
			/* Wait until the child is in the state we measure. */
			while (sh->busy != want_busy)
				usleep(50);
			if (want_busy) {
				/* Let the activation get under way before the spawn. */
				long d = sh->done;

				while (sh->done == d && sh->failed == 0)
					usleep(100);
				busy[i] = exec_once(conn, (json_int_t)i * 2 + k + 1, cwd);
			} else
				idle[i] = exec_once(conn, (json_int_t)i * 2 + k + 1, cwd);
		}
		ratio[i] = busy[i] / idle[i];
	}
	sh->go = 0;
	while (sh->busy)
		usleep(100);
	act1 = sh->done;
	sh->stop = 1;
	waitpid(child, NULL, 0);

	/* The controller's own CPU per activation, with nothing else going on. */
	cpu0 = cpu_us(ctl);
	for (int i = 0; i < SOLO_ACTIVATIONS; i++) {
		json_t *r = call(conn, 2000000 + i, "backend.activate",
				 json_pack("{s:s}", "backend", backend));

		if (!r)
			return 1;
		json_decref(r);
	}
	cpu1 = cpu_us(ctl);

	n_wall = (size_t)(act1 < 4096 ? act1 : 4096);
	printf("backend %s, %zu pairs, %ld activations (%ld failed)\n", backend, pairs, act1 - act0,
	       sh->failed);
	printf("%-34s %10s %10s\n", "", "median_us", "p90_us");
	printf("%-34s %10.0f %10.0f\n", "process.exec, idle", bench_quantile(idle, pairs, 0.5),
	       bench_quantile(idle, pairs, 0.9));
	printf("%-34s %10.0f %10.0f\n", "process.exec, during activations",
	       bench_quantile(busy, pairs, 0.5), bench_quantile(busy, pairs, 0.9));
	printf("%-34s %10.0f %10.0f\n", "backend.activate (wall, client)",
	       bench_quantile(sh->wall_us, n_wall, 0.5), bench_quantile(sh->wall_us, n_wall, 0.9));
	printf("median paired ratio busy/idle: %.3f (target <= 1.2)\n",
	       bench_quantile(ratio, pairs, 0.5));
	if (ctl > 0 && cpu0 >= 0 && cpu1 >= 0)
		printf("controller CPU per activation: %.2f ms over %d back-to-back activations "
		       "(target < 10)\n",
		       (cpu1 - cpu0) / 1e3 / SOLO_ACTIVATIONS, SOLO_ACTIVATIONS);
	jsonrpc_conn_free(conn);
	return sh->failed ? 1 : 0;
}
