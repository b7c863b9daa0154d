/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writes that must reach the disk without holding up the event loop. An atomic replace (temp
 * file, fsync, rename, fsync of the directory) costs a millisecond or more of fsync here; done
 * on the loop it would make every spawn wait behind it. One writer thread, started with the
 * controller, takes jobs in order; it touches nothing but the queue and its jobs (a path and
 * the bytes), and each job completes through the loop: the callback runs there, exactly once.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "controller/controller.h"

struct write_job {
	struct write_job *next;
	char *path;
	char *data;
	size_t len;
	int r;
	controller_write_cb cb;
	void *ud;
};

/* Shared with the writer thread, under lock. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct write_job *todo, **todo_tail; /* for the thread */
	struct write_job *done, **done_tail; /* for the loop */
	int notify[2];			     /* a byte on [1] for each finished job */
	struct event_source *src;
	struct controller *ctl;
	bool started;
} w = { .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .notify = { -1, -1 } };

static void job_free(struct write_job *j)
{
	free(j->path);
	free(j->data);
	free(j);
}

static void *writer(void *arg)
{
	for (;;) {
		struct write_job *j;

		pthread_mutex_lock(&w.lock);
		while (!w.todo)
			pthread_cond_wait(&w.wake, &w.lock);
		j = w.todo;
		w.todo = j->next;
		if (!w.todo)
			w.todo_tail = &w.todo;
		pthread_mutex_unlock(&w.lock);

		j->r = write_file_atomic(j->path, j->data, j->len, 0600);

		pthread_mutex_lock(&w.lock);
		j->next = NULL;
		*w.done_tail = j;
		w.done_tail = &j->next;
		pthread_mutex_unlock(&w.lock);
		(void)!write(w.notify[1], "x", 1);
	}
	return NULL;
}

static int on_done(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	char buf[64];
	struct write_job *list;

	(void)!read(fd, buf, sizeof(buf));
	pthread_mutex_lock(&w.lock);
	list = w.done;
	w.done = NULL;
	w.done_tail = &w.done;
	pthread_mutex_unlock(&w.lock);
	while (list) {
		struct write_job *j = list;

		list = j->next;
		j->cb(w.ctl, j->r, j->ud);
		job_free(j);
	}
	return 0;
}

int controller_persist_start(struct controller *c)
{
	pthread_t t;
	int r;

	if (w.started)
		return 0;
	w.todo_tail = &w.todo;
	w.done_tail = &w.done;
	w.ctl = c;
	if (pipe2(w.notify, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	r = event_add_io(c->host.loop, w.notify[0], EPOLLIN, on_done, NULL, &w.src);
	if (r < 0)
		return r;
	r = -pthread_create(&t, NULL, writer, NULL);
	if (r < 0)
		return r;
	(void)pthread_detach(t);
	w.started = true;
	return 0;
}

int controller_write_file_async(struct controller *c, char *path, char *data, size_t len,
				controller_write_cb cb, void *ud)
{
	struct write_job *j;

	if (!w.started) {
		free(path);
		free(data);
		return -ENOTCONN;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		free(path);
		free(data);
		return -ENOMEM;
	}
	*j = (struct write_job){ .path = path, .data = data, .len = len, .cb = cb, .ud = ud };
	pthread_mutex_lock(&w.lock);
	*w.todo_tail = j;
	w.todo_tail = &j->next;
	pthread_cond_signal(&w.wake);
	pthread_mutex_unlock(&w.lock);
	return 0;
}
