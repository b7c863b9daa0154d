/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Name resolution for the proxy without blocking the event loop: getaddrinfo() runs on a few
 * detached worker threads (started on demand, ended when idle) that hand results back through an
 * eventfd watched by the loop. Callbacks run on the loop's thread only.
 */
#pragma once

#include <stddef.h>

#include "common/event.h"
#include "proxy/proxy.h"

#define PROXY_RESOLVE_MAX_ADDRS 16
#define PROXY_RESOLVE_DEFAULT_THREADS 4U

struct proxy_resolver;
struct proxy_query;

/*
 * error: 0, or an EAI_* code from getaddrinfo() (gai_strerror() names it). addrs holds n unique
 * addresses in the resolver's order. The query is freed after the callback returns.
 */
typedef void (*proxy_resolve_fn)(int error, const struct proxy_addr *addrs, size_t n,
				 void *userdata);

int proxy_resolver_new(struct event_loop *loop, unsigned max_threads, struct proxy_resolver **ret);
/* Pending and running queries are dropped without their callbacks; workers that are still inside
 * getaddrinfo() finish on their own and clean up after themselves. */
struct proxy_resolver *proxy_resolver_free(struct proxy_resolver *r);

/* Resolve name (TCP addresses, IPv4 and IPv6); cb runs later on the loop, never from here. */
int proxy_resolve(struct proxy_resolver *r, const char *name, proxy_resolve_fn cb, void *userdata,
		  struct proxy_query **ret);
/* The callback will not run; the query is freed now or when its worker hands it back. */
void proxy_query_cancel(struct proxy_query *q);
