/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Resolver threads for the proxy. The state the workers touch lives in a reference-counted
 * `struct shared` (one reference for the loop side, one per worker), so freeing the resolver never
 * waits for a worker stuck in getaddrinfo(): the last one out closes the eventfd and frees it.
 *
 * A query is in exactly one place: the pending queue, a worker's hands, or the done queue. The
 * loop side cancels by unlinking a pending query, or by marking it so the done queue drops it.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "proxy/proxy-resolve.h"

#define WORKER_IDLE_SEC 60

struct proxy_query {
	struct proxy_query *next;
	struct shared *shared;
	char name[PROXY_NAME_MAX + 1];
	proxy_resolve_fn cb;
	void *userdata;
	bool cancelled;
	int error;
	struct proxy_addr addrs[PROXY_RESOLVE_MAX_ADDRS];
	size_t n_addrs;
};

struct shared {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned n_ref;
	bool shutdown;
	int efd;
	unsigned n_threads, n_idle, max_threads;
	struct proxy_query *pending, **pending_tail;
	struct proxy_query *done, **done_tail;
};

struct proxy_resolver {
	struct event_source *src;
	struct shared *s;
};

static void queue_push(struct proxy_query ***tail, struct proxy_query *q)
{
	q->next = NULL;
	**tail = q;
	*tail = &q->next;
}

static struct proxy_query *queue_pop(struct proxy_query **head, struct proxy_query ***tail)
{
	struct proxy_query *q = *head;

	if (q) {
		*head = q->next;
		if (!*head)
			*tail = head;
		q->next = NULL;
	}
	return q;
}

static void queue_free(struct proxy_query **head, struct proxy_query ***tail)
{
	struct proxy_query *q;

	while ((q = queue_pop(head, tail)))
		free(q);
}

/* Called with s->lock held; unlocks it (and frees s when this was the last reference). */
static void shared_unref_unlock(struct shared *s)
{
	bool last = --s->n_ref == 0;

	(void)pthread_mutex_unlock(&s->lock);
	if (!last)
		return;
	queue_free(&s->pending, &s->pending_tail);
	queue_free(&s->done, &s->done_tail);
	safe_close(s->efd);
	(void)pthread_cond_destroy(&s->cond);
	(void)pthread_mutex_destroy(&s->lock);
	free(s);
}

static void lookup(struct proxy_query *q)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;

	q->error = getaddrinfo(q->name, NULL, &hints, &res);
	if (q->error != 0)
		return;
	for (struct addrinfo *ai = res; ai && q->n_addrs < PROXY_RESOLVE_MAX_ADDRS;
	     ai = ai->ai_next) {
		struct proxy_addr a;
		bool dup = false;

		if (proxy_addr_from_sockaddr(ai->ai_addr, &a) < 0)
			continue;
		for (size_t i = 0; i < q->n_addrs; i++)
			dup = dup || memcmp(&q->addrs[i], &a, sizeof(a)) == 0;
		if (!dup)
			q->addrs[q->n_addrs++] = a;
	}
	freeaddrinfo(res);
	if (q->n_addrs == 0)
		q->error = EAI_NODATA;
}

static void *worker(void *arg)
{
	struct shared *s = arg;

	(void)pthread_mutex_lock(&s->lock);
	for (;;) {
		struct proxy_query *q;

		while (!s->shutdown && !s->pending) {
			struct timespec until;
			int r;

			(void)clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += WORKER_IDLE_SEC;
			s->n_idle++;
			r = pthread_cond_timedwait(&s->cond, &s->lock, &until);
			s->n_idle--;
			if (r == ETIMEDOUT && !s->pending)
				goto out;
		}
		if (s->shutdown)
			break;
		q = queue_pop(&s->pending, &s->pending_tail);
		(void)pthread_mutex_unlock(&s->lock);

		lookup(q);

		(void)pthread_mutex_lock(&s->lock);
		if (s->shutdown) {
			free(q);
			break;
		}
		queue_push(&s->done_tail, q);
		(void)eventfd_write(s->efd, 1);
	}
out:
	s->n_threads--;
	shared_unref_unlock(s);
	return NULL;
}

/* Called with s->lock held. Workers block every signal: the daemons take theirs by signalfd. */
static int worker_start(struct shared *s)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int r;

	r = pthread_attr_init(&attr);
	if (r != 0)
		return -r;
	(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	(void)sigfillset(&all);
	(void)pthread_sigmask(SIG_BLOCK, &all, &old);
	s->n_ref++;
	r = pthread_create(&t, &attr, worker, s);
	if (r != 0)
		s->n_ref--;
	else
		s->n_threads++;
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	(void)pthread_attr_destroy(&attr);
	return -r;
}

static int on_done(struct event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct proxy_resolver *r = userdata;
	struct shared *s = r->s;
	struct proxy_query *list, **tail;
	eventfd_t v;

	(void)src;
	(void)revents;
	(void)eventfd_read(fd, &v);
	(void)pthread_mutex_lock(&s->lock);
	list = s->done;
	s->done = NULL;
	s->done_tail = &s->done;
	/* Unlink first: a callback may cancel other queries of this batch. */
	for (struct proxy_query *q = list; q; q = q->next)
		q->shared = NULL;
	(void)pthread_mutex_unlock(&s->lock);
	tail = &list;

	while (list) {
		struct proxy_query *q = queue_pop(&list, &tail);

		if (!q->cancelled)
			q->cb(q->error, q->addrs, q->n_addrs, q->userdata);
		free(q);
	}
	return 0;
}

int proxy_resolver_new(struct event_loop *loop, unsigned max_threads, struct proxy_resolver **ret)
{
	_cleanup_free_ struct proxy_resolver *r = calloc(1, sizeof(*r));
	_cleanup_free_ struct shared *s = calloc(1, sizeof(*s));
	int k;

	if (!r || !s)
		return -ENOMEM;
	s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->efd < 0)
		return -errno;
	s->n_ref = 1;
	s->max_threads = max_threads > 0 ? max_threads : PROXY_RESOLVE_DEFAULT_THREADS;
	s->pending_tail = &s->pending;
	s->done_tail = &s->done;
	k = pthread_mutex_init(&s->lock, NULL);
	if (k == 0) {
		k = pthread_cond_init(&s->cond, NULL);
		if (k != 0)
			(void)pthread_mutex_destroy(&s->lock);
	}
	if (k != 0) {
		safe_close(s->efd);
		return -k;
	}
	k = event_add_io(loop, s->efd, EPOLLIN, on_done, r, &r->src);
	if (k < 0) {
		safe_close(s->efd);
		(void)pthread_cond_destroy(&s->cond);
		(void)pthread_mutex_destroy(&s->lock);
		return k;
	}
	r->s = TAKE_PTR(s);
	*ret = TAKE_PTR(r);
	return 0;
}

struct proxy_resolver *proxy_resolver_free(struct proxy_resolver *r)
{
	struct shared *s;

	if (!r)
		return NULL;
	s = r->s;
	event_source_free(r->src);
	(void)pthread_mutex_lock(&s->lock);
	s->shutdown = true;
	queue_free(&s->pending, &s->pending_tail);
	queue_free(&s->done, &s->done_tail);
	(void)pthread_cond_broadcast(&s->cond);
	shared_unref_unlock(s);
	free(r);
	return NULL;
}

int proxy_resolve(struct proxy_resolver *r, const char *name, proxy_resolve_fn cb, void *userdata,
		  struct proxy_query **ret)
{
	struct shared *s = r->s;
	struct proxy_query *q;
	size_t n = strlen(name);

	if (n == 0 || n > PROXY_NAME_MAX)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	memcpy(q->name, name, n + 1);
	q->cb = cb;
	q->userdata = userdata;

	(void)pthread_mutex_lock(&s->lock);
	if (s->n_idle == 0 && s->n_threads < s->max_threads) {
		int k = worker_start(s);

		if (k < 0 && s->n_threads == 0) {
			(void)pthread_mutex_unlock(&s->lock);
			free(q);
			return k;
		}
	}
	q->shared = s;
	queue_push(&s->pending_tail, q);
	(void)pthread_cond_signal(&s->cond);
	(void)pthread_mutex_unlock(&s->lock);
	*ret = q;
	return 0;
}

void proxy_query_cancel(struct proxy_query *q)
{
	struct shared *s;

	if (!q)
		return;
	s = q->shared;
	if (!s) {
		/* Already handed back to the loop and being dispatched in this round. */
		q->cancelled = true;
		return;
	}
	(void)pthread_mutex_lock(&s->lock);
	for (struct proxy_query **p = &s->pending; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			if (!*p)
				s->pending_tail = p;
			(void)pthread_mutex_unlock(&s->lock);
			free(q);
			return;
		}
	/* With a worker, or in the done queue: dropped when it comes back. */
	q->cancelled = true;
	(void)pthread_mutex_unlock(&s->lock);
}
