/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/event.h"
#include "common/log.h"

#define MAX_EVENTS 64

struct event_source {
	struct event_loop *loop;
	struct event_source *next_dead;
	int fd;
	bool owns_fd; /* timers own their timerfd */
	bool dead;
	event_io_cb io_cb;
	event_timer_cb timer_cb;
	void *userdata;
};

struct event_loop {
	int epfd;
	bool exiting;
	int exit_code;
	struct event_source *dead; /* freed after the current dispatch round */
	unsigned dispatching;
};

int event_loop_new(struct event_loop **ret)
{
	struct event_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int r = -errno;

		free(l);
		return r;
	}
	*ret = l;
	return 0;
}

static void reap_dead(struct event_loop *l)
{
	while (l->dead) {
		struct event_source *s = l->dead;

		l->dead = s->next_dead;
		free(s);
	}
}

void event_loop_free(struct event_loop *l)
{
	if (!l)
		return;
	reap_dead(l);
	safe_close(l->epfd);
	free(l);
}

int event_add_io(struct event_loop *l, int fd, uint32_t events, event_io_cb cb, void *userdata,
		 struct event_source **ret)
{
	struct event_source *s = calloc(1, sizeof(*s));
	struct epoll_event ev = { .events = events };

	if (!s)
		return -ENOMEM;
	s->loop = l;
	s->fd = fd;
	s->io_cb = cb;
	s->userdata = userdata;
	ev.data.ptr = s;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int r = -errno;

		free(s);
		return r;
	}
	if (ret)
		*ret = s;
	return 0;
}

int event_source_set_events(struct event_source *s, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = s };

	return epoll_ctl(s->loop->epfd, EPOLL_CTL_MOD, s->fd, &ev) < 0 ? -errno : 0;
}

int event_timer_set(struct event_source *s, uint64_t usec, bool periodic)
{
	struct itimerspec its = { 0 };

	its.it_value.tv_sec = (time_t)(usec / 1000000ULL);
	its.it_value.tv_nsec = (long)(usec % 1000000ULL) * 1000L;
	if (periodic)
		its.it_interval = its.it_value;
	return timerfd_settime(s->fd, 0, &its, NULL) < 0 ? -errno : 0;
}

int event_add_timer(struct event_loop *l, uint64_t usec, bool periodic, event_timer_cb cb,
		    void *userdata, struct event_source **ret)
{
	struct event_source *s;
	int fd, r;

	fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	r = event_add_io(l, fd, EPOLLIN, NULL, userdata, &s);
	if (r < 0) {
		safe_close(fd);
		return r;
	}
	s->owns_fd = true;
	s->timer_cb = cb;
	if (usec > 0) {
		r = event_timer_set(s, usec, periodic);
		if (r < 0) {
			event_source_free(s);
			return r;
		}
	}
	if (ret)
		*ret = s;
	return 0;
}

void event_source_free(struct event_source *s)
{
	struct event_loop *l;

	if (!s || s->dead)
		return;
	l = s->loop;
	(void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, s->fd, NULL);
	if (s->owns_fd)
		safe_close(s->fd);
	s->fd = -1;
	s->dead = true;
	if (l->dispatching) {
		/* Events for s may still be in this round's array: free after the round. */
		s->next_dead = l->dead;
		l->dead = s;
	} else
		free(s);
}

int event_loop_run_once(struct event_loop *l, int timeout_ms)
{
	struct epoll_event evs[MAX_EVENTS];
	int n;

	n = epoll_wait(l->epfd, evs, MAX_EVENTS, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;

	l->dispatching++;
	for (int i = 0; i < n; i++) {
		struct event_source *s = evs[i].data.ptr;
		int r;

		if (s->dead)
			continue;
		if (s->timer_cb) {
			uint64_t expirations;

			if (read(s->fd, &expirations, sizeof(expirations)) < 0)
				continue; /* spurious wake-up after a re-arm */
			r = s->timer_cb(s, s->userdata);
		} else
			r = s->io_cb(s, s->fd, evs[i].events, s->userdata);
		if (r < 0)
			log_debug_errno(r, "event source callback failed: %m");
	}
	l->dispatching--;
	if (!l->dispatching)
		reap_dead(l);
	return n;
}

int event_loop_run(struct event_loop *l)
{
	while (!l->exiting) {
		int r = event_loop_run_once(l, -1);

		if (r < 0)
			return r;
	}
	return l->exit_code;
}

void event_loop_exit(struct event_loop *l, int code)
{
	l->exiting = true;
	l->exit_code = code;
}
