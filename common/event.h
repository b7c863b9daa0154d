/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small epoll loop for the daemons: fd sources with a callback, one-shot and periodic timers
 * (timerfd), and safe removal from inside a callback. Single-threaded.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

struct event_loop;
struct event_source;

/* The callback owns its error handling (and the source's lifetime); a negative return is only
 * logged at debug level. */
typedef int (*event_io_cb)(struct event_source *s, int fd, uint32_t revents, void *userdata);
typedef int (*event_timer_cb)(struct event_source *s, void *userdata);

int event_loop_new(struct event_loop **ret);
void event_loop_free(struct event_loop *l);

/* Watch fd (not owned) for events (EPOLLIN, EPOLLOUT, …). */
int event_add_io(struct event_loop *l, int fd, uint32_t events, event_io_cb cb, void *userdata,
		 struct event_source **ret);
int event_source_set_events(struct event_source *s, uint32_t events);

/* Fire once after usec, or every usec when periodic. */
int event_add_timer(struct event_loop *l, uint64_t usec, bool periodic, event_timer_cb cb,
		    void *userdata, struct event_source **ret);
/* Re-arm a timer (0 disarms). */
int event_timer_set(struct event_source *s, uint64_t usec, bool periodic);

/* Remove and free a source; safe from inside any callback, including its own. NULL is fine. */
void event_source_free(struct event_source *s);

/* Dispatch one round of events, waiting up to timeout_ms (-1 forever). */
int event_loop_run_once(struct event_loop *l, int timeout_ms);
/* Run until event_loop_exit(); returns the code given there. */
int event_loop_run(struct event_loop *l);
void event_loop_exit(struct event_loop *l, int code);
