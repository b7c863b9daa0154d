/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Spawn-path timing for performance work: with CORDON_LAUNCHERD_TRACE=FILE in launcherd's
 * environment, every step of every spawn appends "ID STEP NANOSECONDS\n" (CLOCK_MONOTONIC) to
 * FILE, from the daemon and from the child alike (O_APPEND, one write per line). Off, a trace
 * point is one branch. bench/trace-steps.py turns a trace into per-step medians.
 */
#pragma once

#include <time.h>

#include "common/cleanup.h"

extern int launcherd_trace_fd;

/* Open the trace file named by the environment, if any (launcherd-main.c, at start). */
void launcherd_trace_open(void);
void launcherd_trace_write(const char *id, const char *step);

static inline void launcherd_trace(const char *id, const char *step)
{
	if (_unlikely_(launcherd_trace_fd >= 0))
		launcherd_trace_write(id, step);
}
