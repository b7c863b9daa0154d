/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Workspace transfer for a lease on a transfer backend (backends/workspace-transfer.h): at
 * acquire a tar of the workspace goes into a pipe the backend reads (the snapshot of what was
 * sent is kept); at release the backend's tar of its tree comes back through a pipe and the
 * host workspace is reconciled with it, as the user (the controller is the user), refusing
 * what the policy keeps read-only. Both run on a thread of their own — the event loop never
 * waits for a workspace — and complete through the loop, exactly once.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/workspace-transfer.h"
#include "common/event.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "controller/controller.h"
#include "policy/policy-hostexec.h"

struct transfer_job {
	struct controller *ctl;
	bool apply;
	int dir_fd;
	int data_fd; /* the pipe end: written (send) or read (apply) */
	int notify[2];
	struct event_source *src;
	struct ws_snapshot *snapshot; /* send: made; apply: borrowed */
	const struct policy *policy;  /* apply: borrowed, outlives the job (the lease's) */
	struct ws_report report;
	int r;
	controller_transfer_cb cb;
	void *ud;
};

static void job_free(struct transfer_job *j)
{
	event_source_free(j->src);
	safe_close(j->notify[0]);
	safe_close(j->notify[1]);
	safe_close(j->dir_fd);
	safe_close(j->data_fd);
	if (!j->apply)
		ws_snapshot_free(j->snapshot);
	ws_report_done(&j->report);
	free(j);
}

/* A path the policy keeps read-only: a host-executed one (git's configuration and hooks,
 * .envrc, …) the policy does not opt out of, at any depth. */
static bool may_write(const char *relpath, const char **reason, void *userdata)
{
	struct transfer_job *j = userdata;

	if (j->policy && policy_host_exec_match(j->policy, relpath)) {
		*reason = "a host-executed path, read-only under the policy "
			  "(filesystem.hostExecuted)";
		return false;
	}
	return true;
}

static void *worker(void *arg)
{
	struct transfer_job *j = arg;
	const struct ws_limits limits = WS_LIMITS_DEFAULT;
	const struct ws_rules rules = { .may_write = may_write, .userdata = j };

	if (j->apply)
		j->r = ws_archive_apply(j->dir_fd, j->data_fd, j->snapshot, &limits, &rules,
					&j->report);
	else
		j->r = ws_archive_write(j->dir_fd, j->data_fd, &limits, &j->snapshot, &j->report);
	/* The backend sees the end of the stream now, not when the loop gets to it. */
	j->data_fd = safe_close(j->data_fd);
	/* Last: the loop may free j the moment the notify pipe closes. */
	{
		int done = j->notify[1];

		j->notify[1] = -1;
		safe_close(done);
	}
	return NULL;
}

static int on_done(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct transfer_job *j = userdata;
	_cleanup_json_ json_t *report = ws_report_to_json(&j->report);
	struct ws_snapshot *snap = j->apply ? NULL : TAKE_PTR(j->snapshot);

	if (j->r < 0)
		log_warning_errno(j->r, "workspace %s failed: %s: %m",
				  j->apply ? "reconcile" : "send", j->report.error);
	j->cb(j->ctl, j->r, snap, report, j->ud);
	job_free(j);
	return 0;
}

static int transfer_start(struct controller *c, bool apply, const char *ws_path, int data_fd,
			  const struct ws_snapshot *snapshot, const struct policy *policy,
			  controller_transfer_cb cb, void *ud)
{
	struct transfer_job *j = calloc(1, sizeof(*j));
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	int r;

	if (!j) {
		safe_close(data_fd);
		return -ENOMEM;
	}
	*j = (struct transfer_job){ .ctl = c,
				    .apply = apply,
				    .data_fd = data_fd,
				    .notify = { -1, -1 },
				    .cb = cb,
				    .ud = ud,
				    .dir_fd = -1 };
	j->snapshot = (struct ws_snapshot *)snapshot;
	j->policy = policy;
	r = ws_report_init(&j->report);
	if (r >= 0) {
		j->dir_fd = open(ws_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (j->dir_fd < 0)
			r = -errno;
	}
	if (r >= 0 && pipe2(j->notify, O_CLOEXEC | O_NONBLOCK) < 0)
		r = -errno;
	if (r >= 0)
		r = event_add_io(c->host.loop, j->notify[0], EPOLLIN, on_done, j, &j->src);
	if (r < 0)
		goto fail;
	/* The thread takes no signal: they stay with the loop's signalfd. */
	sigfillset(&all);
	(void)pthread_sigmask(SIG_BLOCK, &all, &old);
	(void)pthread_attr_init(&attr);
	(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&t, &attr, worker, j);
	(void)pthread_attr_destroy(&attr);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0)
		goto fail;
	return 0;
fail:
	if (apply)
		j->snapshot = NULL;
	job_free(j);
	return r;
}

int controller_transfer_send(struct controller *c, const char *ws_path, int out_fd,
			     controller_transfer_cb cb, void *ud)
{
	return transfer_start(c, false, ws_path, out_fd, NULL, NULL, cb, ud);
}

int controller_transfer_apply(struct controller *c, const char *ws_path, int in_fd,
			      const struct ws_snapshot *snapshot, const struct policy *policy,
			      controller_transfer_cb cb, void *ud)
{
	return transfer_start(c, true, ws_path, in_fd, snapshot, policy, cb, ud);
}
