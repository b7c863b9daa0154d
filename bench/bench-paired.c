/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-paired: time several commands in alternation (A B C A B C …, the starting command
 * rotating each round) so machine load hits them alike, then report per command the median and
 * p90 wall time and the median of the per-round ratios against the first command.
 *
 *   bench-paired [-n ROUNDS] [-w WARMUP] ::: NAME CMD [ARG…] ::: NAME CMD [ARG…] …
 *
 * Output and input of the commands go to /dev/null. A command that fails is reported and the
 * run stops: a benchmark of failures measures nothing.
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

#include "bench/bench-stats.h"

#define MAX_CMDS 8

struct cmd {
	const char *name;
	char **argv;
	double *samples; /* microseconds */
};

static double run_once(struct cmd *c)
{
	double t0 = bench_now_us();
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execvp(c->argv[0], c->argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("waitpid");
			exit(1);
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "bench-paired: \"%s\" failed (status 0x%x)\n", c->name, status);
		exit(1);
	}
	return bench_now_us() - t0;
}

int main(int argc, char **argv)
{
	struct cmd cmds[MAX_CMDS] = { 0 };
	size_t n_cmds = 0, rounds = 200, warmup = 10;
	int i = 1;

	for (; i < argc && strcmp(argv[i], ":::") != 0; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			rounds = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc)
			warmup = strtoul(argv[++i], NULL, 10);
		else {
			fprintf(stderr,
				"usage: bench-paired [-n ROUNDS] [-w WARMUP] ::: NAME CMD… ::: …\n");
			return 2;
		}
	}
	while (i < argc && n_cmds < MAX_CMDS) {
		int start = ++i; /* past ":::" */

		while (i < argc && strcmp(argv[i], ":::") != 0)
			i++;
		if (i - start < 2) {
			fprintf(stderr, "bench-paired: each command needs a NAME and a CMD\n");
			return 2;
		}
		cmds[n_cmds].name = argv[start];
		cmds[n_cmds].argv = argv + start + 1;
		argv[i < argc ? i : argc] = NULL;
		cmds[n_cmds].samples = calloc(rounds, sizeof(double));
		n_cmds++;
	}
	if (n_cmds == 0 || rounds == 0) {
		fprintf(stderr, "bench-paired: nothing to run\n");
		return 2;
	}

	for (size_t w = 0; w < warmup; w++)
		for (size_t k = 0; k < n_cmds; k++)
			(void)run_once(&cmds[k]);
	for (size_t r = 0; r < rounds; r++)
		for (size_t k = 0; k < n_cmds; k++) {
			struct cmd *c = &cmds[(k + r) % n_cmds];

			c->samples[r] = run_once(c);
		}

	printf("%-14s %10s %10s %14s\n", "command", "median_us", "p90_us",
	       n_cmds > 1 ? "ratio_vs_first" : "");
	for (size_t k = 0; k < n_cmds; k++) {
		double *ratios = calloc(rounds, sizeof(double));

		for (size_t r = 0; r < rounds; r++)
			ratios[r] = cmds[k].samples[r] / cmds[0].samples[r];
		printf("%-14s %10.0f %10.0f %14.2f\n", cmds[k].name,
		       bench_quantile(cmds[k].samples, rounds, 0.5),
		       bench_quantile(cmds[k].samples, rounds, 0.9),
		       bench_quantile(ratios, rounds, 0.5));
		free(ratios);
	}
	return 0;
}
