/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench-stats.h"

double bench_now_us(void)
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

/* A sorted copy of v (aborts when out of memory: a benchmark has no better answer). */
static double *sorted(const double *v, size_t n)
{
	double *c = malloc(n * sizeof(double));

	if (!c)
		abort();
	memcpy(c, v, n * sizeof(double));
	qsort(c, n, sizeof(double), cmp_double);
	return c;
}

double bench_quantile(const double *v, size_t n, double q)
{
	double *c, r;

	if (n == 0)
		return 0;
	c = sorted(v, n);
	r = c[(size_t)(q * (double)(n - 1) + 0.5)];
	free(c);
	return r;
}

double bench_median(const double *v, size_t n)
{
	double *c, r;

	if (n == 0)
		return 0;
	c = sorted(v, n);
	r = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
	free(c);
	return r;
}
