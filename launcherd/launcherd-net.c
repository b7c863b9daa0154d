/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <arpa/inet.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/event.h"
#include "common/log.h"
#include "ipc/ipc-fdpass.h"
#include "launcherd/launcherd-mount.h"
#include "launcherd/launcherd-net.h"

/*
 * An empty mount namespace (MNTNS_POOL_SIZE): its fd, or -errno. We end up back in ours. Made
 * as a copy of seed, whose one mount is an empty read-only tmpfs made once from a copy of ours
 * (seed -1: that one), with a fresh tmpfs mounted over it (mount_make_empty_root()): a copy of
 * the host's table would copy and then unmount every mount of the host (21 on a small VM) per
 * namespace, each freed after an RCU grace period. ns_dir: our /proc/self/ns, there being no
 * /proc in the copy.
 */
static int make_mntns(int own, int seed, int ns_dir)
{
	_cleanup_close_ int fd = -1;
	int r;

	if (seed >= 0 && setns(seed, CLONE_NEWNS) < 0)
		return -errno;
	if (unshare(CLONE_NEWNS) < 0) {
		r = -errno;
		if (seed >= 0 && setns(own, CLONE_NEWNS) < 0)
			_exit(1);
		return r;
	}
	fd = openat(ns_dir, "mnt", O_RDONLY | O_CLOEXEC);
	r = fd < 0 ? -errno : mount_make_empty_root(seed < 0);
	/* Back, or the next one would be a copy of this one: stop rather than go on. */
	if (setns(own, CLONE_NEWNS) < 0)
		_exit(1);
	return r < 0 ? r : TAKE_FD(fd);
}

/*
 * Whether the network namespace fd, a finished sandbox's, is empty (NETNS_RECYCLED_MAX): no
 * socket of any family counted in it ("sockets: used", which counts every socket user space
 * made in the namespace, wherever its fd went, until it is freed) and no TCP TIME_WAIT. Read
 * from inside it; we go back to own after, or stop.
 */
static bool netns_is_empty(int fd, int own)
{
	char buf[512];
	unsigned used = 1, inuse = 1, orphan = 1, tw = 1;
	ssize_t n = -1;
	int pfd;

	/* Why this is safe: we only read the kernel's counters in it, and go straight back. */
	if (setns(fd, CLONE_NEWNET) < 0)
		return false;
	pfd = open("/proc/thread-self/net/sockstat", O_RDONLY | O_CLOEXEC);
	if (pfd >= 0) {
		n = read(pfd, buf, sizeof(buf) - 1);
		safe_close(pfd);
	}
	if (setns(own, CLONE_NEWNET) < 0)
		_exit(1);
	if (n <= 0)
		return false;
	buf[n] = 0;
	if (sscanf(buf, "sockets: used %u TCP: inuse %u orphan %u tw %u", &used, &inuse, &orphan,
		   &tw) != 4)
		return false;
	return used == 0 && inuse == 0 && orphan == 0 && tw == 0;
}

/* The helper's answer: yes with fd (then closed here), or no without one. */
static void helper_answer(int sock, char yes, char no, int fd)
{
	char c = fd >= 0 ? yes : no;

	if (ipc_send_with_fds(sock, &c, 1, &fd, fd >= 0 ? 1 : 0, 0) < 0)
		_exit(1);
	safe_close(fd);
}

/*
 * The helper: per request byte, a fresh netns ('w', answered 'n'), an empty mount namespace
 * ('m', answered 'm', or 'M' without an fd when that cannot be done) or, with dev (user mode), a
 * clone of its /dev template ('d', answered 'd', or 'D' without an fd), sent back as an fd; or
 * ('c', with an fd, not answered) a namespace to let go of, so that its teardown runs here; or
 * ('r' and a uid, with a network namespace's fd) a finished sandbox's namespace, answered 'R'
 * and the uid with it when it is empty (netns_is_empty()), let go of otherwise. Never returns.
 */
_noreturn_ static void netns_helper(int sock, bool dev)
{
	int own_mnt, own_net, seed_mnt = -1, ns_dir, dev_template = -1;

	/* Nothing of launcherd's but this socket; and no life of its own after launcherd's. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (dup2(sock, 3) < 0)
		_exit(1);
	(void)syscall(SYS_close_range, 4U, ~0U, 0U);
	sock = 3;
	/* Why this is safe: our own copy of the mount table, owned by launcherd's user namespace;
	 * nothing is attached in it, the template is a detached tree. */
	if (dev && (unshare(CLONE_NEWNS) < 0 || mount_dev_template(&dev_template) < 0))
		dev_template = -1;
	own_mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	own_net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	ns_dir = open("/proc/self/ns", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (own_mnt >= 0 && ns_dir >= 0)
		seed_mnt = make_mntns(own_mnt, -1, ns_dir);
	for (;;) {
		char msg[1 + sizeof(uint32_t)], c;
		int fd = -1;
		size_t n_fds = 0;
		ssize_t n = ipc_recv_with_fds(sock, msg, sizeof(msg), &fd, 1, &n_fds, 0);

		if (n <= 0)
			_exit(0);
		c = msg[0];
		if (n_fds > 0 && c == 'r' && n == (ssize_t)sizeof(msg) && own_net >= 0 &&
		    netns_is_empty(fd, own_net)) {
			msg[0] = 'R';
			if (ipc_send_with_fds(sock, msg, sizeof(msg), &fd, 1, 0) < 0)
				_exit(1);
			safe_close(fd);
			continue;
		}
		if (n_fds > 0) {
			/* 'c' (or an 'r' not kept): the last reference to a finished sandbox's
			 * namespace; closing it tears it down (an RCU grace period, work queues)
			 * here rather than in launcherd. */
			safe_close(fd);
			continue;
		}
		if (c == 'm') {
			/* Why this is safe: the namespace's root is a tmpfs made here, empty, over
			 * the seed's empty read-only one; launcherd gives it to one sandbox, which
			 * builds its root in it. */
			helper_answer(sock, 'm', 'M',
				      seed_mnt >= 0 ? make_mntns(own_mnt, seed_mnt, ns_dir)
						    : -EBADF);
			continue;
		}
		if (c == 'd') {
			helper_answer(sock, 'd', 'D',
				      dev_template < 0 ? -EBADF : mount_dev_clone(dev_template));
			continue;
		}
		/* Why this is safe: the namespace is new and empty; this process only brings lo up
		 * in it and passes it to launcherd, which gives it to one sandbox. */
		if (unshare(CLONE_NEWNET) == 0 && net_loopback_up() >= 0)
			fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		helper_answer(sock, 'n', 'n', fd); /* no fd: launcherd stops the pool */
	}
}

_Static_assert(NETNS_POOL_SIZE <= NS_SLOTS_MAX && MNTNS_POOL_SIZE <= NS_SLOTS_MAX &&
		       DEVTREE_POOL_SIZE <= NS_SLOTS_MAX,
	       "struct ns_slots too small");

static bool slots_request(struct netns_pool *p, struct ns_slots *sl, size_t size, char byte)
{
	while (p->sock >= 0 && sl->enabled && sl->n + sl->requested < size) {
		if (write(p->sock, &byte, 1) != 1)
			return false;
		sl->requested++;
	}
	return true;
}

static void pool_request(struct netns_pool *p)
{
	if (slots_request(p, &p->net, NETNS_POOL_SIZE, 'w') &&
	    slots_request(p, &p->mnt, MNTNS_POOL_SIZE, 'm'))
		(void)slots_request(p, &p->dev, DEVTREE_POOL_SIZE, 'd');
}

static void slots_clear(struct ns_slots *sl)
{
	close_many(sl->fds, sl->n);
	*sl = (struct ns_slots){ 0 };
}

/* The helper's answer for one of sl's kind: an fd, or none (it cannot: no pool of that kind
 * from now on, and sandboxes make their own). */
static void slots_receive(struct ns_slots *sl, size_t size, const int *fd, size_t n_fds,
			  const char *what)
{
	if (sl->requested)
		sl->requested--;
	if (n_fds == 0) {
		log_warning("%s namespace helper failed: no %s namespace pool", what, what);
		slots_clear(sl);
	} else if (sl->n < size)
		sl->fds[sl->n++] = fd[0];
	else
		safe_close(fd[0]);
}

/* A namespace the helper found empty, for uid's next sandbox; the oldest kept makes room. */
static void recycled_keep(struct netns_pool *p, int fd, uid_t uid)
{
	if (p->n_recycled == NETNS_RECYCLED_MAX) {
		netns_pool_release(p, p->recycled[0].fd);
		memmove(p->recycled, p->recycled + 1,
			(NETNS_RECYCLED_MAX - 1) * sizeof(p->recycled[0]));
		p->n_recycled--;
	}
	p->recycled[p->n_recycled++] = (struct netns_recycled){ .uid = uid, .fd = fd };
}

static int on_pool(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct netns_pool *p = userdata;
	char msg[1 + sizeof(uint32_t)], c;
	int nsfd[1];
	size_t n_fds = 0;
	ssize_t n;

	n = ipc_recv_with_fds(fd, msg, sizeof(msg), nsfd, 1, &n_fds, MSG_DONTWAIT);
	if (n == -EAGAIN)
		return 0;
	c = n > 0 ? msg[0] : 0;
	if (n == (ssize_t)sizeof(msg) && c == 'R') {
		uint32_t uid;

		memcpy(&uid, msg + 1, sizeof(uid));
		if (n_fds > 0)
			recycled_keep(p, nsfd[0], (uid_t)uid);
		return 0;
	}
	/* 'M': cannot make them here (no CAP_SYS_CHROOT for mount namespaces?). */
	if (n > 0 && (c == 'm' || c == 'M')) {
		slots_receive(&p->mnt, MNTNS_POOL_SIZE, nsfd, n_fds, "mount");
		return 0;
	}
	if (n > 0 && (c == 'd' || c == 'D')) {
		slots_receive(&p->dev, DEVTREE_POOL_SIZE, nsfd, n_fds, "/dev");
		return 0;
	}
	if (n <= 0 || n_fds == 0) {
		/* The helper is gone or failing: no pool from now on, CLONE_NEWNET instead. */
		if (n > 0)
			log_warning("network namespace helper failed: no netns pool");
		netns_pool_stop(p);
		return 0;
	}
	slots_receive(&p->net, NETNS_POOL_SIZE, nsfd, n_fds, "network");
	return 0;
}

int netns_pool_start(struct netns_pool *p, struct event_loop *loop, bool mntns, bool dev)
{
	int sv[2], r;
	pid_t pid;

	*p = (struct netns_pool){
		.sock = -1, .net.enabled = true, .mnt.enabled = mntns, .dev.enabled = dev
	};
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close_many(sv, 2);
		return r;
	}
	if (pid == 0) {
		safe_close(sv[0]);
		netns_helper(sv[1], dev);
	}
	safe_close(sv[1]);
	p->sock = sv[0];
	p->helper = pid;
	r = event_add_io(loop, p->sock, EPOLLIN, on_pool, p, &p->src);
	if (r < 0) {
		netns_pool_stop(p);
		return r;
	}
	pool_request(p);
	return 0;
}

/* The newest of fds[0..*n) (the caller owns it), or -1; asks the helper for more either way. */
static int pool_pop(struct netns_pool *p, int *fds, size_t *n)
{
	int fd = *n > 0 ? fds[--*n] : -1;

	pool_request(p);
	return fd;
}

int netns_pool_take(struct netns_pool *p)
{
	return pool_pop(p, p->net.fds, &p->net.n);
}

int netns_pool_take_private(struct netns_pool *p, uid_t uid)
{
	for (size_t i = p->n_recycled; i-- > 0;)
		if (p->recycled[i].uid == uid) {
			int fd = p->recycled[i].fd;

			memmove(p->recycled + i, p->recycled + i + 1,
				(p->n_recycled - i - 1) * sizeof(p->recycled[0]));
			p->n_recycled--;
			return fd;
		}
	return netns_pool_take(p);
}

void netns_pool_recycle(struct netns_pool *p, int fd, uid_t uid)
{
	char msg[1 + sizeof(uint32_t)] = { 'r' };
	uint32_t u = (uint32_t)uid;

	if (fd < 0)
		return;
	memcpy(msg + 1, &u, sizeof(u));
	/* Without a helper (or if it cannot take it now), the teardown happens here. */
	if (p->sock >= 0)
		(void)ipc_send_with_fds(p->sock, msg, sizeof(msg), &fd, 1, MSG_DONTWAIT);
	safe_close(fd);
}

int netns_pool_take_mnt(struct netns_pool *p)
{
	return pool_pop(p, p->mnt.fds, &p->mnt.n);
}

int netns_pool_take_dev(struct netns_pool *p)
{
	return pool_pop(p, p->dev.fds, &p->dev.n);
}

void netns_pool_release(struct netns_pool *p, int fd)
{
	if (fd < 0)
		return;
	/* Without a helper (or if it cannot take it now), the teardown happens here. */
	if (p->sock >= 0)
		(void)ipc_send_with_fds(p->sock, "c", 1, &fd, 1, MSG_DONTWAIT);
	safe_close(fd);
}

int netns_pool_shared(struct netns_pool *p, uid_t uid)
{
	struct netns_shared *e = NULL;
	int fd;

	for (size_t i = 0; i < p->n_shared; i++)
		if (p->shared[i].uid == uid) {
			e = &p->shared[i];
			e->last_used = ++p->uses;
			return e->fd;
		}
	fd = netns_pool_take(p);
	if (fd < 0)
		return -1;
	if (p->n_shared < NETNS_SHARED_MAX)
		e = &p->shared[p->n_shared++];
	else {
		e = &p->shared[0];
		for (size_t i = 1; i < p->n_shared; i++)
			if (p->shared[i].last_used < e->last_used)
				e = &p->shared[i];
		safe_close(e->fd);
	}
	*e = (struct netns_shared){ .uid = uid, .fd = fd, .last_used = ++p->uses };
	return fd;
}

void netns_pool_stop(struct netns_pool *p)
{
	event_source_free(p->src);
	p->src = NULL;
	p->sock = safe_close(p->sock);
	slots_clear(&p->net);
	slots_clear(&p->mnt);
	slots_clear(&p->dev);
	for (size_t i = 0; i < p->n_shared; i++)
		safe_close(p->shared[i].fd);
	p->n_shared = 0;
	for (size_t i = 0; i < p->n_recycled; i++)
		safe_close(p->recycled[i].fd);
	p->n_recycled = 0;
	if (p->helper > 0) {
		(void)kill(p->helper, SIGKILL);
		(void)waitpid(p->helper, NULL, 0);
		p->helper = 0;
	}
}

int net_proxy_listener(uint16_t port, int *ret_fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int)) < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	if (listen(fd, 128) < 0)
		return -errno;
	*ret_fd = TAKE_FD(fd);
	return 0;
}
