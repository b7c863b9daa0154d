/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "launcherd/launcherd-trace.h"

int launcherd_trace_fd = -1;

void launcherd_trace_open(void)
{
	const char *path = getenv("CORDON_LAUNCHERD_TRACE");

	if (!path || !*path)
		return;
	/* Close-on-exec: a sandbox never inherits it (it is closed before the payload's exec
	 * like every other launcherd fd). */
	launcherd_trace_fd =
		open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
}

void launcherd_trace_write(const char *id, const char *step)
{
	struct timespec ts;
	char line[128];
	int n;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(line, sizeof(line), "%s %s %lld\n", id ? id : "-", step,
		     (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	if (n > 0 && (size_t)n < sizeof(line))
		(void)!write(launcherd_trace_fd, line, (size_t)n);
}
