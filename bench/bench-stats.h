/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What every benchmark in bench/ measures with and reports: a monotonic clock and order
 * statistics over samples (the samples are left as they are). */
#pragma once

#include <stddef.h>

/* CLOCK_MONOTONIC in microseconds. */
double bench_now_us(void);
/* The q-quantile by nearest rank (q = 0.5 the median, 0.9 the p90); 0 for no samples. */
double bench_quantile(const double *v, size_t n, double q);
/* The median, the mean of the two middle samples when n is even; 0 for no samples. */
double bench_median(const double *v, size_t n);
