/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Network set-up inside the sandbox's fresh network namespace (child side).
 */
#pragma once

#include <stdint.h>

#include <sys/types.h>

struct event_loop;
struct event_source;

/* Bring the loopback interface up (libnl-route). */
int net_loopback_up(void);

/*
 * A pool of fresh network namespaces, lo already up (privileged mode only). A new netns costs
 * ≈0.35 ms inside clone() plus ≈0.15 ms for lo; a helper process, forked from launcherd at start
 * and never exec'd, makes them ahead of time on another core. Each namespace is handed to exactly
 * one sandbox, which setns()es into it: nothing else has ever been inside it. An empty pool
 * (a burst of spawns, or a dead helper) falls back to CLONE_NEWNET.
 */
#define NETNS_POOL_SIZE 4

struct netns_pool {
	int sock; /* to the helper; -1 when there is no pool */
	pid_t helper;
	int fds[NETNS_POOL_SIZE];
	size_t n;
	unsigned requested; /* asked of the helper, not received yet */
	struct event_source *src;
};

int netns_pool_start(struct netns_pool *p, struct event_loop *loop);
/* An fd of a fresh netns (the caller owns it), or -1 when the pool is empty. Refills. */
int netns_pool_take(struct netns_pool *p);
void netns_pool_stop(struct netns_pool *p);

/*
 * Hook for network mode "proxy" (its own issue): create a listening TCP socket on
 * 127.0.0.1:port inside the sandbox's netns, to be passed back to the controller with
 * `spawned`; the controller serves it (docs/NETWORK.md). Runs in the child, in the sandbox's
 * network namespace, before Landlock (which then denies the sandbox any bind).
 */
int net_proxy_listener(uint16_t port, int *ret_fd);
