/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writes that must reach the disk without holding up the event loop. An atomic replace (temp
 * file, fsync, rename, fsync of the directory) costs a millisecond or more of fsync here; done
 * on the loop it would make every spawn wait behind it. Each write runs on a thread of its own,
 * which touches nothing but its job (the path, the bytes, a pipe), and completes through the
 * loop: the callback runs there, exactly once.
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
	struct controller *ctl;
	char *path;
	char *data;
	size_t len;
	int r;
	int pipe[2]; /* the thread writes one byte to [1] when done; the loop reads [0] */
	struct event_source *src;
	controller_write_cb cb;
	void *ud;
};

static void job_free(struct write_job *j)
{
	event_source_free(j->src);
	safe_close(j->pipe[0]);
	safe_close(j->pipe[1]);
	free(j->path);
	free(j->data);
	free(j);
}

static void *job_run(void *arg)
{
	struct write_job *j = arg;
	int fd = j->pipe[1];

	j->r = write_file_atomic(j->path, j->data, j->len, 0600);
	/* After this byte the loop owns j again: nothing of it is touched below. */
	(void)!write(fd, "x", 1);
	return NULL;
}

static int on_job_done(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct write_job *j = userdata;
	char x;

	if (read(fd, &x, 1) != 1)
		return 0;
	j->cb(j->ctl, j->r, j->ud);
	job_free(j);
	return 0;
}

int controller_write_file_async(struct controller *c, char *path, char *data, size_t len,
				controller_write_cb cb, void *ud)
{
	struct write_job *j = calloc(1, sizeof(*j));
	pthread_attr_t attr;
	pthread_t t;
	int r;

	if (!j) {
		free(path);
		free(data);
		return -ENOMEM;
	}
	*j = (struct write_job){ .ctl = c,
				 .path = path,
				 .data = data,
				 .len = len,
				 .cb = cb,
				 .ud = ud,
				 .pipe = { -1, -1 } };
	if (pipe2(j->pipe, O_CLOEXEC) < 0) {
		r = -errno;
		goto fail;
	}
	r = event_add_io(c->loop, j->pipe[0], EPOLLIN, on_job_done, j, &j->src);
	if (r < 0)
		goto fail;
	r = -pthread_attr_init(&attr);
	if (r < 0)
		goto fail;
	(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&t, &attr, job_run, j);
	(void)pthread_attr_destroy(&attr);
	if (r < 0)
		goto fail;
	return 0;
fail:
	job_free(j);
	return r;
}
