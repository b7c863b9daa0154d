/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Network set-up inside the sandbox's fresh network namespace (child side).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <sys/types.h>

struct event_loop;
struct event_source;

/* Bring the loopback interface up, its gso size raised (libnl; launcherd-lo.c). */
int net_loopback_up(void);

/*
 * A pool of fresh network namespaces, lo already up (privileged mode only). A new netns costs
 * ≈0.35 ms inside clone() plus ≈0.15 ms for lo; a helper process, forked from launcherd at start
 * and never exec'd, makes them ahead of time on another core. Each namespace is handed to exactly
 * one sandbox, which setns()es into it: nothing else has ever been inside it. An empty pool
 * (a burst of spawns, or a dead helper) falls back to CLONE_NEWNET.
 */
#define NETNS_POOL_SIZE 4

/*
 * Network "unix" shares instead (privileged mode, Landlock ABI >= 6, see sandbox_netns() in
 * launcherd-sandbox.c): every "unix" sandbox of one uid joins that uid's one namespace, a fresh
 * one from the pool, kept here, that nothing else ever enters: only lo, never configured. A
 * netns per sandbox costs ≈0.35 ms to make and as much again to tear down, in kernel work
 * queues that compete with the sandboxes for the CPU. Sharing is safe because nothing in such
 * a sandbox can use the namespace: its seccomp floor allows AF_UNIX sockets only (no IP, UDP,
 * ICMP, raw, packet, netlink, vsock…), and Landlock's abstract-unix-socket scope keeps each
 * sandbox from connecting or sending to an abstract socket bound by another. Per uid, so that
 * no two users ever share one (SECURITY.md lists what one user's "unix" sandboxes still see of
 * each other: the names of their Unix sockets in /proc/net/unix).
 */
#define NETNS_SHARED_MAX 64

/*
 * Network "none" and "loopback" give each sandbox a namespace of its own, which nothing else is
 * in while the sandbox runs. When the sandbox has ended (its pid namespace is gone, so no
 * process is left in the namespace), the namespace goes back to the helper, which looks into it
 * (/proc/thread-self/net/sockstat): if the kernel counts no socket of any family in it and no
 * TCP TIME_WAIT, nothing can reach into it any more (a sandbox has no capability over the
 * namespace: it could change nothing of it but its sockets), and the helper hands it back to be
 * given to a later sandbox of the same uid; otherwise the helper lets it go. That keeps the
 * making and the teardown out of most spawns. At most NETNS_RECYCLED_MAX are kept, the oldest
 * let go first.
 */
#define NETNS_RECYCLED_MAX 8

struct netns_recycled {
	uid_t uid;
	int fd;
};

struct netns_shared {
	uid_t uid;
	int fd;
	unsigned long long last_used;
};

/*
 * The same helper makes empty mount namespaces ahead of time (privileged mode with
 * CAP_SYS_CHROOT, which setns(CLONE_NEWNS) needs; user mode, in launcherd's user namespace):
 * each a copy of launcherd's (in user mode, of the helper's own) whose tree was
 * made private, replaced by a fresh tmpfs with pivot_root and detached, so that its one mount
 * is a fresh, empty root. The sandbox setns()es into one instead of copying launcherd's mount
 * table and detaching it again itself (≈0.2 ms, most of it an RCU grace period of the detach,
 * now paid ahead of time on the helper's side). Each is handed to exactly one sandbox.
 */
#define MNTNS_POOL_SIZE 4

/*
 * In user mode the helper keeps a mount namespace of its own (a copy of the host's, owned by
 * launcherd's user namespace) in which it builds the /dev template once (launcherd, in the
 * host's, cannot) and hands out clones of it, DEVTREE_POOL_SIZE made ahead; the sandbox attaches
 * one as its /dev.
 */
#define DEVTREE_POOL_SIZE 4

/* Made-ahead namespaces of one kind, by the helper, as long as it can. */
#define NS_SLOTS_MAX 4
struct ns_slots {
	bool enabled;
	int fds[NS_SLOTS_MAX];
	size_t n;
	unsigned requested; /* asked of the helper, not received yet */
};

struct netns_pool {
	int sock; /* to the helper; -1 when there is no pool */
	pid_t helper;
	struct ns_slots net; /* NETNS_POOL_SIZE fresh network namespaces */
	struct ns_slots mnt; /* MNTNS_POOL_SIZE of them, when the helper can */
	struct ns_slots dev; /* DEVTREE_POOL_SIZE /dev trees, in user mode */
	struct event_source *src;
	struct netns_shared shared[NETNS_SHARED_MAX];
	size_t n_shared;
	struct netns_recycled recycled[NETNS_RECYCLED_MAX]; /* oldest first */
	size_t n_recycled;
	unsigned long long uses;
};

/* mntns: also keep empty mount namespaces (see MNTNS_POOL_SIZE); dev: /dev trees (user mode, see
 * DEVTREE_POOL_SIZE). */
int netns_pool_start(struct netns_pool *p, struct event_loop *loop, bool mntns, bool dev);
/* An fd of an empty mount namespace (the caller owns it), or -1. Refills. */
int netns_pool_take_mnt(struct netns_pool *p);
/* A detached /dev tree, a clone of the helper's template (the caller owns it), or -1. Refills. */
int netns_pool_take_dev(struct netns_pool *p);
/*
 * Close fd, a finished sandbox's namespace, through the helper: launcherd keeps each sandbox's
 * mount namespace until its exit is reported, so that the unmounting of its tree (an RCU grace
 * period, ≈0.1 ms) is neither in the sandbox's exit, which the requester waits for, nor in
 * launcherd's loop, but in the helper, on the other CPU when there is one.
 */
void netns_pool_release(struct netns_pool *p, int fd);
/* An fd of a fresh netns (the caller owns it), or -1 when the pool is empty. Refills. */
int netns_pool_take(struct netns_pool *p);
/* A namespace of uid's own sandbox's that ended clean (NETNS_RECYCLED_MAX), else a fresh one,
 * else -1. The caller owns it. */
int netns_pool_take_private(struct netns_pool *p, uid_t uid);
/* fd, the namespace of uid's sandbox that has ended, to the helper to be checked and recycled
 * for uid, or let go; closed here either way. */
void netns_pool_recycle(struct netns_pool *p, int fd, uid_t uid);
/* uid's shared "unix" namespace (borrowed: the pool keeps it), made from a fresh one the first
 * time; -1 when the pool is empty. The least recently used entry makes room for a new uid (its
 * sandboxes keep their namespace alive; the uid gets a new one next time). */
int netns_pool_shared(struct netns_pool *p, uid_t uid);
void netns_pool_stop(struct netns_pool *p);

/*
 * Hook for network mode "proxy": create a listening TCP socket on
 * 127.0.0.1:port inside the sandbox's netns, to be passed back to the controller with
 * `spawned`; the controller serves it (docs/NETWORK.md). Runs in the child, in the sandbox's
 * network namespace, before Landlock (which then denies the sandbox any bind).
 */
int net_proxy_listener(uint16_t port, int *ret_fd);
