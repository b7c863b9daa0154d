/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "common/cleanup.h"
#include "common/reaper.h"

struct reaper {
	struct reaper **list;
	struct reaper *next;
	int pidfd;
	struct event_source *src;
};

static void reaper_free(struct reaper *r)
{
	for (struct reaper **p = r->list; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			break;
		}
	event_source_free(r->src);
	safe_close(r->pidfd);
	free(r);
}

static int on_exit_of(struct event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct reaper *r = userdata;

	(void)waitid(P_PIDFD, (id_t)r->pidfd, &(siginfo_t){ 0 }, WEXITED | WNOHANG);
	reaper_free(r);
	return 0;
}

int reap_later(struct event_loop *l, struct reaper **list, int pidfd)
{
	struct reaper *r = calloc(1, sizeof(*r));
	int e;

	if (!r)
		return -ENOMEM;
	e = event_add_io(l, pidfd, EPOLLIN, on_exit_of, r, &r->src);
	if (e < 0) {
		free(r);
		return e;
	}
	r->list = list;
	r->next = *list;
	r->pidfd = pidfd;
	*list = r;
	return 0;
}

void reapers_release(struct reaper **list, int wait_ms)
{
	while (*list) {
		struct pollfd p = { .fd = (*list)->pidfd, .events = POLLIN };

		if (wait_ms > 0 && poll(&p, 1, wait_ms) == 1)
			(void)waitid(P_PIDFD, (id_t)p.fd, &(siginfo_t){ 0 }, WEXITED | WNOHANG);
		reaper_free(*list);
	}
}
