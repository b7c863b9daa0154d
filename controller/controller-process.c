/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process table: exec (run to completion, capture output up to a cap while draining the
 * rest), spawn (long-lived; output to the client's fds or as notifications), write/closeStdin,
 * signal, wait, list, attach. Every process records the launcher instance that created it, and is
 * killed with its whole tree when the client that started it goes away (unless spawned detached).
 * A process on a pty keeps its last output (a ring of RING_MAX bytes) for process.attach, which
 * replays it to the client that attaches and sends it the output and exit from then on.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/backend.h"
#include "controller/controller.h"
#include "proxy/proxy.h"
#include "ipc/ipc-json.h"
#include "policy/policy-hostexec.h"

#define STR_MAX (128U * 1024U)
#define READ_CHUNK (64U * 1024U)
#define FINISHED_KEEP 256 /* finished processes kept for `wait` and `ps` */
#define FINISHED_SLACK 64
#define STDIN_MAX (16U * 1024U * 1024U)
#define RING_MAX (64U * 1024U) /* a pty's last output, replayed on attach */

enum stream_mode {
	STREAM_NULL, /* /dev/null */
	STREAM_FD,   /* a client's fd, passed straight to the sandbox */
	STREAM_PIPE, /* a pipe the controller reads (exec: captured; spawn: notified) */
};

struct capture {
	struct process *p;
	const char *name; /* "stdout" / "stderr" */
	int fd;
	struct event_source *src;
	bool notify; /* spawn: forward chunks as process.output notifications */
	char *buf;
	size_t len, alloc;
	uint64_t total;
	bool truncated;
	bool eof;
};

struct waiter {
	struct waiter *next;
	struct client *cl;
	json_t *id;
};

struct process {
	struct process *next;
	struct controller *ctl;
	char id[32];
	char *sandbox;
	char *launcher;
	pid_t pid;
	int pidfd;
	json_t *argv;
	struct client *owner;
	bool detached;
	bool is_exec;
	json_t *exec_id; /* exec: the request to answer when done */
	struct capture out[2];
	int stdin_fd;
	bool pty; /* stdin_fd is a pty's master (process.resize) */
	/* pty: the client attached to it (process.attach), which gets its output and exit
	 * instead of the owner; and its last output, for the next one to attach. */
	struct client *attached;
	char *ring;
	size_t ring_len;
	bool ring_cut; /* older output was dropped: the replay starts at a line */
	/* process.write data the pipe has not taken yet (bounded by STDIN_MAX). */
	char *in_buf;
	size_t in_len;
	struct event_source *in_src;
	bool in_close; /* closeStdin asked while data was pending */
	uint64_t max_output;
	unsigned long long start_usec, end_usec;
	/* Stage times (CLOCK_MONOTONIC µs), logged at debug level when the process finishes:
	 * request read, plan compiled, plan sent to the launcher, spawn answered, exit reported. */
	unsigned long long t_request, t_compiled, t_sent, t_spawned, t_exit;
	json_t *exit; /* the launcher's exit report, once it came */
	struct waiter *waiters;
	bool finished;
	char *group; /* the acquired sandbox (sandbox.acquire) it runs in, if any */
	/* Its workspace as the backend is handed it (struct backend_workspace). */
	char *ws_path, *ws_mount, *ws_cwd;
	bool ws_read_only;
	int ws_fd;
	struct backend_instance *bi; /* the launcher instance that created it (a reference) */
	bool starting;		     /* the launcher has not answered the spawn yet */
	json_t *spawn_id;	     /* spawn: the request to answer once started */
	int kill_pending;	     /* a signal asked for while starting */
	json_t *plan;		     /* while starting: what to send */
	int plan_fds[IPC_MAX_FDS];
	size_t n_plan_fds;
	struct proxy_rules *proxy_rules; /* network "proxy": the rules, until the listener */
	struct proxy_listener *proxy;	 /* the controller's proxy serving this sandbox */
	char **host_exec_absent;	 /* of the plan: reported if created (host_exec_check()) */
	json_t *host_exec_created;	 /* those that exist at its end, or NULL */
	/* Internal processes (a sandbox's setup hook): told here instead of a client. */
	void (*on_done)(struct controller *c, const char *process_id, json_t *result, void *ud);
	void *on_done_ud;
};

static void stdin_close(struct process *p);

/* Signal a process through the instance that created it (9: its whole tree). */
static int process_kill(struct process *p, int sig)
{
	if (p->exit || p->finished)
		return 0;
	if (p->starting) {
		p->kill_pending = sig;
		return 0;
	}
	if (!p->bi || !p->sandbox)
		return -ESRCH;
	return p->bi->ops->kill(p->bi, p->sandbox, sig);
}

static struct process *process_find(struct controller *c, const char *id)
{
	for (struct process *p = c->processes; p; p = p->next)
		if (streq(p->id, id))
			return p;
	return NULL;
}

static void capture_close(struct capture *cap)
{
	event_source_free(cap->src);
	cap->src = NULL;
	cap->fd = safe_close(cap->fd);
	cap->eof = true;
}

static void process_free(struct process *p)
{
	for (int i = 0; i < 2; i++) {
		capture_close(&p->out[i]);
		free(p->out[i].buf);
	}
	while (p->waiters) {
		struct waiter *w = p->waiters;

		p->waiters = w->next;
		json_decref(w->id);
		free(w);
	}
	event_source_free(p->in_src);
	free(p->in_buf);
	free(p->ring);
	safe_close(p->stdin_fd);
	safe_close(p->pidfd);
	json_decref(p->argv);
	json_decref(p->exec_id);
	json_decref(p->exit);
	free(p->sandbox);
	free(p->launcher);
	free(p->group);
	free(p->ws_path);
	free(p->ws_mount);
	free(p->ws_cwd);
	safe_close(p->ws_fd);
	json_decref(p->spawn_id);
	json_decref(p->plan);
	strv_free(p->host_exec_absent);
	json_decref(p->host_exec_created);
	p->proxy = proxy_listener_free(p->proxy);
	proxy_rules_unref(p->proxy_rules);
	close_many(p->plan_fds, p->n_plan_fds);
	backend_instance_unref(p->bi);
	free(p);
}

static void process_unlink(struct controller *c, struct process *p)
{
	for (struct process **pp = &c->processes; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			return;
		}
}

static const char *process_state(const struct process *p)
{
	return p->finished ? "exited" : p->exit ? "exiting" : "running";
}

/* The result object of a finished process: the launcher's report plus what we measured. */
static json_t *process_result(struct process *p, bool with_output)
{
	json_t *r = json_pack("{s:s,s:s,s:s,s:I}", "processId", p->id, "instance",
			      p->sandbox ? p->sandbox : "", "launcher",
			      p->launcher ? p->launcher : "", "durationUsec",
			      (json_int_t)(p->end_usec - p->start_usec));

	if (!r)
		return NULL;
	if (p->group)
		json_object_set_new(r, "sandboxId", json_string(p->group));
	/* Where the command saw its workspace (the host path, a policy's mountAt, a lease's). */
	if (p->ws_mount)
		json_object_set_new(r, "mountPoint", json_string(p->ws_mount));
	if (p->host_exec_created)
		json_object_set(r, "hostExecutedCreated", p->host_exec_created);
	if (p->exit) {
		static const char *const keep[] = { "exitCode", "signal", "reason", "limits",
						    NULL };

		for (const char *const *k = keep; *k; k++) {
			json_t *v = json_object_get(p->exit, *k);

			if (v)
				json_object_set(r, *k, v);
		}
	}
	if (with_output) {
		json_object_set_new(r, "maxOutputBytes", json_integer((json_int_t)p->max_output));
		for (int i = 0; i < 2; i++) {
			struct capture *cap = &p->out[i];
			char key[32];

			if (utf8_is_valid(cap->buf ? cap->buf : "", cap->len))
				json_object_set_new(r, cap->name,
						    json_stringn(cap->buf ? cap->buf : "",
								 cap->len));
			else {
				_cleanup_free_ char *b = base64_encode(cap->buf, cap->len);

				(void)snprintf(key, sizeof(key), "%sBase64", cap->name);
				json_object_set_new(r, key, json_string(b ? b : ""));
			}
			(void)snprintf(key, sizeof(key), "%sTruncated", cap->name);
			json_object_set_new(r, key, json_boolean(cap->truncated));
			(void)snprintf(key, sizeof(key), "%sBytes", cap->name);
			json_object_set_new(r, key, json_integer((json_int_t)cap->total));
		}
	}
	return r;
}

/* Forget the oldest finished processes beyond FINISHED_KEEP, in batches: one walk of the
 * table per FINISHED_SLACK exits, not one per exit. */
static void prune_finished(struct controller *c)
{
	unsigned n = 0;

	if (c->n_finished <= FINISHED_KEEP + FINISHED_SLACK)
		return;
	for (struct process **pp = &c->processes; *pp;) {
		struct process *p = *pp;

		if (p->finished && ++n > FINISHED_KEEP) {
			*pp = p->next;
			process_free(p);
			c->n_finished--;
		} else
			pp = &p->next;
	}
}

/*
 * Host-executed paths (a new .envrc, a commondir file in a git directory) that did not exist
 * when the process started and do now: the sandbox may have written something the host will
 * run later, and no mount could have kept the name from being created. Said in the result, as
 * a "host-executed-created" event, and by the CLI; nothing is removed (it may be the user's own
 * doing meanwhile, and a workspace never loses data).
 */
static void host_exec_check(struct process *p)
{
	_cleanup_strv_free_ char **created = NULL;
	_cleanup_json_ json_t *ev = NULL;

	if (!p->host_exec_absent || policy_host_exec_created(p->host_exec_absent, &created) < 0 ||
	    !created)
		return;
	p->host_exec_created = json_array();
	for (char **s = created; p->host_exec_created && *s; s++)
		(void)json_array_append_new(p->host_exec_created, json_string(*s));
	ev = json_pack("{s:s,s:O,s:O*}", "processId", p->id, "paths", p->host_exec_created, "argv",
		       p->argv);
	if (ev)
		controller_event(p->ctl, "host-executed-created", TAKE_PTR(ev));
}

/* Exit known and all captured output read: answer everyone who waits. */
static void process_maybe_finish(struct process *p)
{
	struct controller *c = p->ctl;

	if (p->finished || !p->exit || !p->out[0].eof || !p->out[1].eof)
		return;
	p->finished = true;
	c->n_finished++;
	p->end_usec = now_usec();
	log_debug("%s: timing (us after the request): compiled %llu, sent %llu, spawned %llu, "
		  "exit reported %llu, finished %llu [request at %llu]",
		  p->id, p->t_compiled - p->t_request, p->t_sent - p->t_request,
		  p->t_spawned ? p->t_spawned - p->t_request : 0,
		  p->t_exit ? p->t_exit - p->t_request : 0, p->end_usec - p->t_request,
		  p->t_request);
	stdin_close(p);
	/* Nothing signals a finished process: its pidfd goes now, not when it is pruned. */
	p->pidfd = safe_close(p->pidfd);
	host_exec_check(p);
	/* The launcher instance is no longer needed by this process: a replaced instance is
	 * disposed once its last process got here (the activation's dispose step). */
	backend_instance_unref(TAKE_PTR(p->bi));
	p->proxy = proxy_listener_free(p->proxy);

	if (p->on_done) {
		_cleanup_json_ json_t *res = process_result(p, true);

		p->on_done(c, p->id, res, p->on_done_ud);
	} else {
		/* exec answers its request; spawn tells its client with a notification. */
		if (p->exec_id && p->owner)
			(void)client_reply(p->owner, p->exec_id, process_result(p, true));
		else if (p->owner && !p->is_exec)
			(void)client_notify(p->owner, "process.exit", process_result(p, false));
		if (p->attached && p->attached != p->owner)
			(void)client_notify(p->attached, "process.exit", process_result(p, false));
	}
	json_decref(TAKE_PTR(p->exec_id));
	while (p->waiters) {
		struct waiter *w = p->waiters;

		p->waiters = w->next;
		(void)client_reply(w->cl, w->id, process_result(p, false));
		json_decref(w->id);
		free(w);
	}
	{
		json_t *ev = process_result(p, false);

		if (ev)
			json_object_set(ev, "argv", p->argv);
		controller_event(c, "exit", ev);
	}
	/* Captured output is no longer needed once delivered; nobody attaches any more. */
	for (int i = 0; i < 2; i++) {
		free(p->out[i].buf);
		p->out[i].buf = NULL;
		p->out[i].len = 0;
	}
	free(TAKE_PTR(p->ring));
	p->ring_len = 0;
	p->attached = NULL;
	prune_finished(c);
}

static void stdin_close(struct process *p)
{
	event_source_free(p->in_src);
	p->in_src = NULL;
	free(p->in_buf);
	p->in_buf = NULL;
	p->in_len = 0;
	p->stdin_fd = safe_close(p->stdin_fd);
}

/* Write what is pending; 0 when all is written, -EAGAIN when the pipe is full. */
static int stdin_flush(struct process *p)
{
	while (p->in_len > 0) {
		ssize_t n = write(p->stdin_fd, p->in_buf, p->in_len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		memmove(p->in_buf, p->in_buf + n, p->in_len - (size_t)n);
		p->in_len -= (size_t)n;
	}
	return 0;
}

static int on_stdin_writable(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct process *p = userdata;
	int r = stdin_flush(p);

	if (r == -EAGAIN)
		return 0;
	/* Drained (or the reader is gone): stop watching; close if that was asked for. */
	event_source_free(p->in_src);
	p->in_src = NULL;
	if (r < 0 || p->in_close)
		stdin_close(p);
	return 0;
}

static int capture_append(struct capture *cap, const char *data, size_t n, uint64_t max)
{
	size_t take = n;

	if (cap->len >= max) {
		cap->truncated = true;
		return 0;
	}
	if (take > max - cap->len) {
		take = (size_t)(max - cap->len);
		cap->truncated = true;
	}
	if (cap->len + take > cap->alloc) {
		size_t na = cap->alloc ? cap->alloc : 16384;
		char *nb;

		while (na < cap->len + take)
			na *= 2;
		if (na > max)
			na = (size_t)max;
		nb = realloc(cap->buf, na);
		if (!nb)
			return -ENOMEM;
		cap->buf = nb;
		cap->alloc = na;
	}
	memcpy(cap->buf + cap->len, data, take);
	cap->len += take;
	return 0;
}

/* Keep the last RING_MAX bytes of a pty's output (nobody may be attached: the command must
 * never block on its terminal, and the next to attach sees where it is). */
static void ring_append(struct process *p, const char *data, size_t n)
{
	if (!p->ring) {
		p->ring = malloc(RING_MAX);
		if (!p->ring)
			return;
	}
	if (n >= RING_MAX) {
		memcpy(p->ring, data + n - RING_MAX, RING_MAX);
		p->ring_len = RING_MAX;
		p->ring_cut = true;
		return;
	}
	if (p->ring_len + n > RING_MAX) {
		size_t drop = p->ring_len + n - RING_MAX;

		memmove(p->ring, p->ring + drop, p->ring_len - drop);
		p->ring_len -= drop;
		p->ring_cut = true;
	}
	memcpy(p->ring + p->ring_len, data, n);
	p->ring_len += n;
}

static int on_capture(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct capture *cap = userdata;
	struct process *p = cap->p;
	char chunk[READ_CHUNK];

	/* Bounded work per wake-up so one chatty process cannot starve the others. */
	for (int k = 0; k < 16; k++) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			goto eof; /* a read error ends the stream like EOF */
		}
		if (n == 0)
			goto eof;
		cap->total += (uint64_t)n;
		if (cap->notify) {
			struct client *to = p->attached ? p->attached : p->owner;
			_cleanup_free_ char *b = NULL;

			if (p->pty && p->detached) /* the only ones process.attach takes */
				ring_append(p, chunk, (size_t)n);
			b = to ? base64_encode(chunk, (size_t)n) : NULL;
			if (b)
				(void)client_notify(to, "process.output",
						    json_pack("{s:s,s:s,s:s}", "processId", p->id,
							      "stream", cap->name, "data", b));
			continue;
		}
		/* Keep up to the cap; past it keep draining so the child never blocks. */
		if (capture_append(cap, chunk, (size_t)n, p->max_output) < 0)
			goto eof;
	}
	return 0; /* more to read: level-triggered epoll calls again */
eof:
	capture_close(cap);
	process_maybe_finish(p);
	return 0;
}

static int capture_start(struct capture *cap)
{
	int r;

	if (cap->fd < 0 || cap->src)
		return 0;
	r = fd_set_nonblock(cap->fd, true);
	if (r < 0)
		return r;
	return event_add_io(cap->p->ctl->host.loop, cap->fd, EPOLLIN, on_capture, cap, &cap->src);
}

/* A pseudo-terminal pair: the master stays with us, the slave becomes the process's stdio. */
static int open_pty(int *ret_master, int *ret_slave)
{
	_cleanup_close_ int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	char name[64];
	int s;

	if (m < 0)
		return -errno;
	if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name)) != 0)
		return -errno;
	s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0)
		return -errno;
	*ret_master = TAKE_FD(m);
	*ret_slave = s;
	return 0;
}

/* A memfd holding data, positioned at 0: stdin for exec without a writer to babysit. */
static int stdin_memfd(const void *data, size_t len)
{
	_cleanup_close_ int fd = memfd_create("cordon-stdin", MFD_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = loop_write(fd, data, len);
	if (r < 0)
		return r;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* An error object {code, message, data} as a JSON-RPC error carries it. Steals data. */
static json_t *error_obj(int code, const char *message, json_t *data)
{
	json_t *e = json_pack("{s:i,s:s}", "code", code, "message", message);

	if (e && data)
		json_object_set_new(e, "data", data);
	else
		json_decref(data);
	return e;
}

static json_t *error_field_obj(int code, const struct field_error *fe)
{
	char msg[600];

	if (*fe->field)
		(void)snprintf(msg, sizeof(msg), "%s: %s", fe->field, fe->reason);
	else
		(void)snprintf(msg, sizeof(msg), "%s", fe->reason);
	return error_obj(code, msg,
			 json_pack("{s:s,s:s}", "field", fe->field, "reason", fe->reason));
}

static int reply_error_obj(struct client *cl, json_t *id, json_t *err)
{
	json_t *data = json_object_get(err, "data");

	return client_reply_error(cl, id, (int)json_integer_value(json_object_get(err, "code")),
				  json_string_value(json_object_get(err, "message")),
				  data ? json_incref(data) : NULL);
}

/* Translate a launcher error (PROTOCOL.md §1.2) into a client error object. */
static json_t *launcher_error_obj(json_t *lerr, int r)
{
	const char *code = json_string_value(json_object_get(lerr, "code"));
	const char *msg = json_string_value(json_object_get(lerr, "message"));
	int err = (int)json_integer_value(json_object_get(lerr, "errno"));
	json_t *data = json_object();
	int jcode = CORDON_ERR_SETUP_FAILED;
	char text[512];

	if (lerr) {
		static const char *const copy[] = { "code", "step", "field", "errno", NULL };

		for (const char *const *k = copy; *k; k++)
			if (json_object_get(lerr, *k))
				json_object_set(data, streq(*k, "code") ? "launcherCode" : *k,
						json_object_get(lerr, *k));
	}
	if (code && streq(code, "exec-failed")) {
		json_object_set_new(data, "exitStatus", json_integer(err == ENOENT ? 127 : 126));
		(void)snprintf(text, sizeof(text), "%s", msg ? msg : "cannot execute the command");
	} else if (code && streq(code, "floor-refused")) {
		jcode = CORDON_ERR_POLICY_REFUSED;
		(void)snprintf(text, sizeof(text), "the administrator's floor refuses this: %s",
			       msg ? msg : "");
	} else if (code && streq(code, "limit")) {
		jcode = CORDON_ERR_LIMIT;
		(void)snprintf(text, sizeof(text), "%s", msg ? msg : "a ceiling was reached");
	} else if (code && streq(code, "launcher-lost")) {
		/* The launcher went away before it answered (ctl_launcher_abort()). */
		jcode = CORDON_ERR_BACKEND;
		(void)snprintf(text, sizeof(text), "the launcher was lost: %s", msg ? msg : "");
	} else if (code && streq(code, "invalid-plan")) {
		/* Our compiler produced something the launcher refused: a bug on our side. */
		jcode = JSONRPC_INTERNAL_ERROR;
		(void)snprintf(text, sizeof(text), "the launcher refused the compiled plan: %s",
			       msg ? msg : "");
	} else if (lerr)
		(void)snprintf(text, sizeof(text), "sandbox set-up failed: %s", msg ? msg : "");
	else {
		jcode = CORDON_ERR_BACKEND;
		(void)snprintf(text, sizeof(text), "the launcher is not available: %s",
			       strerror(r < 0 ? -r : r));
	}
	return error_obj(jcode, text, data);
}

struct start_args {
	bool exec;
	bool detached;
	bool pty;
	int stdio_fd[3]; /* STREAM_FD: the client's fd; else -1 */
	enum stream_mode mode[3];
	void *stdin_data; /* exec: bytes for stdin */
	size_t stdin_len;
};

static int parse_stdio(json_t *params, int *fds, size_t n_fds, struct start_args *a,
		       struct field_error *fe)
{
	static const char *const names[3] = { "stdin", "stdout", "stderr" };
	static const char *const keys[] = { "stdin", "stdout", "stderr", NULL };
	json_t *stdio = NULL;
	int r;

	r = ipc_json_get_object(params, "stdio", false, "params", &stdio, fe);
	if (r < 0)
		return r;
	if (stdio) {
		r = ipc_json_check_keys(stdio, keys, "params.stdio", fe);
		if (r < 0)
			return r;
	}
	for (int i = 0; i < 3; i++) {
		json_t *v = stdio ? json_object_get(stdio, names[i]) : NULL;

		a->stdio_fd[i] = -1;
		if (!v) {
			a->mode[i] = i == 0 ? STREAM_NULL : STREAM_PIPE;
			continue;
		}
		if (json_is_integer(v)) {
			json_int_t k = json_integer_value(v);

			if (k < 0 || (size_t)k >= n_fds || fds[k] < 0)
				return field_error_set(
					fe, -EINVAL, "params.stdio", names[i],
					"names fd %lld, but the message carries %zu fds",
					(long long)k, n_fds);
			a->mode[i] = STREAM_FD;
			a->stdio_fd[i] = fds[k];
		} else if (json_is_string(v) && streq(json_string_value(v), "pipe"))
			a->mode[i] = STREAM_PIPE;
		else if (json_is_string(v) && streq(json_string_value(v), "null"))
			a->mode[i] = STREAM_NULL;
		else
			return field_error_set(fe, -EINVAL, "params.stdio", names[i],
					       "expected an fd index, \"pipe\" or \"null\"");
	}
	return 0;
}

/* What follows base in path ("" for base itself), or NULL when path is not under base. */
static const char *path_under(const char *path, const char *base)
{
	size_t n = strlen(base);

	if (streq(base, "/"))
		return path + 1;
	if (strncmp(path, base, n) != 0 || (path[n] && path[n] != '/'))
		return NULL;
	return path[n] ? path + n + 1 : "";
}

/*
 * The workspace the backend is handed with the spawn: the policy's, where the sandbox (or the
 * lease) presents it, the cwd relative to that; a directory fd, opened as the user, for a
 * backend that does not see the host path itself (not on the hot path of builtin:auto).
 */
static int process_workspace(struct process *p, struct ctl_plan *plan, const char *group)
{
	const char *lease_mount = group ? controller_sandbox_mount_point(p->ctl, group) : NULL;
	const char *cwd = json_string_value(json_object_get(p->plan, "cwd"));
	const char *rel;

	if (!plan->ws_path)
		return 0;
	/* The plan's cwd is where the sandbox sees it: relative to the policy's mount point. */
	rel = cwd ? path_under(cwd, plan->ws_mount) : NULL;
	if (rel && !(p->ws_cwd = strdup(*rel ? rel : ".")))
		return -ENOMEM;
	/* A backend that binds the host path somewhere of its own (an engine's container)
	 * presents it at /workspace unless the policy says where (mountAt). */
	if (!lease_mount && p->bi->claims.workspace == BACKEND_ATTACH_BIND &&
	    streq(plan->ws_mount, plan->ws_path))
		lease_mount = BACKEND_BIND_MOUNT_POINT;
	p->ws_path = TAKE_PTR(plan->ws_path);
	p->ws_read_only = plan->ws_read_only;
	p->ws_mount = lease_mount ? strdup(lease_mount) : TAKE_PTR(plan->ws_mount);
	if (!p->ws_mount)
		return -ENOMEM;
	if (p->bi->claims.workspace != BACKEND_ATTACH_DIRECT) {
		p->ws_fd = open(p->ws_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (p->ws_fd < 0)
			return -errno;
	}
	return 0;
}

/*
 * Validate, compile and spawn. On success *ret is the registered process (owned by the table);
 * on failure *ret_error is an error object for the requester and the return is negative.
 */
static int process_create(struct controller *c, struct client *cl, json_t *params, int *fds,
			  size_t n_fds, bool exec, struct process **ret, json_t **ret_error)
{
	static const char *const exec_keys[] = { "policy",	"policyPatch", "sandbox", "argv",
						 "env",		"callerCwd",   "cwd",	  "stdin",
						 "stdinBase64", NULL };
	static const char *const spawn_keys[] = { "policy",   "policyPatch", "sandbox", "argv",
						  "env",      "callerCwd",   "cwd",	"stdio",
						  "detached", "pty",	     NULL };
	struct ctl_plan plan = { 0 };
	struct field_error fe = { 0 };
	struct start_args a = { .exec = exec };
	struct backend_instance *bi;
	struct policy_request q = { 0 };
	const char *group = NULL;
	int out_r[2] = { -1, -1 };
	struct process *p;
	unsigned long long t_request = now_usec(), t_compiled;
	int stdin_w = -1, pty_master = -1, pty_slave = -1;
	json_t *stdio;
	int r;

	r = ipc_json_check_keys(params, exec ? exec_keys : spawn_keys, "params", &fe);
	if (r < 0)
		goto bad_params;
	if (exec) {
		const char *text = NULL, *b64 = NULL;

		if (ipc_json_get_string(params, "stdin", false, "params", &text, &fe) < 0 ||
		    ipc_json_get_string(params, "stdinBase64", false, "params", &b64, &fe) < 0)
			goto bad_params;
		if (text && b64) {
			field_error_set(&fe, -EINVAL, "params", "stdinBase64",
					"give stdin or stdinBase64, not both");
			goto bad_params;
		}
		if (text) {
			a.stdin_len = json_string_length(json_object_get(params, "stdin"));
			a.stdin_data = malloc(a.stdin_len + 1);
			if (!a.stdin_data) {
				r = -ENOMEM;
				goto fail;
			}
			memcpy(a.stdin_data, text, a.stdin_len);
		} else if (b64 &&
			   base64_decode(b64, strlen(b64), &a.stdin_data, &a.stdin_len) < 0) {
			field_error_set(&fe, -EINVAL, "params", "stdinBase64", "not valid base64");
			goto bad_params;
		}
		if (a.stdin_len > STDIN_MAX) {
			field_error_set(&fe, -E2BIG, "params", "stdin", "larger than 16 MiB");
			goto bad_params;
		}
		for (int i = 0; i < 3; i++) {
			a.mode[i] = i == 0 ? (a.stdin_data ? STREAM_FD : STREAM_NULL) : STREAM_PIPE;
			a.stdio_fd[i] = -1;
		}
	} else {
		if (parse_stdio(params, fds, n_fds, &a, &fe) < 0 ||
		    ipc_json_get_bool(params, "detached", false, "params", &a.detached, &fe) < 0 ||
		    ipc_json_get_bool(params, "pty", false, "params", &a.pty, &fe) < 0)
			goto bad_params;
		if (a.pty && json_object_get(params, "stdio")) {
			field_error_set(
				&fe, -EINVAL, "params", "pty",
				"a pty is the process's stdin, stdout and stderr: no stdio");
			goto bad_params;
		}
	}

	/* The request's policy part, parsed once here. */
	r = controller_policy_request_parse(c, params, true, &q, &fe);
	if (r == -ENOMEM)
		goto fail;
	if (r < 0)
		goto bad_params;
	group = q.sandbox;
	/* The instance that will run it: an acquired sandbox's (its lease pins it), else the
	 * active one. The plan is compiled for its hello and held against its claims. */
	bi = group ? controller_sandbox_instance(c, group) : c->active;
	if (group && !bi) {
		field_error_set(&fe, -ENOENT, "params", "sandbox", "no such sandbox");
		*ret_error = error_field_obj(CORDON_ERR_NOT_FOUND, &fe);
		r = -ENOENT;
		goto out;
	}
	if (!bi) {
		*ret_error = error_obj(
			CORDON_ERR_BACKEND,
			"the launcher is not available: no launcher is active (its launcher was lost "
			"and is being re-established, or an activation failed)",
			NULL);
		r = -ENODEV;
		goto out;
	}
	r = controller_compile_request(c, bi, &q, &plan, &fe);
	t_compiled = now_usec();
	/* -EOPNOTSUPP naming a rule: the host cannot enforce it, and it is not optional. */
	if (r == -EINVAL || r == -EPERM || r == -ENOENT || r == -ERANGE || r == -E2BIG ||
	    (r == -EOPNOTSUPP && *fe.field)) {
		controller_event(c, "policy-refused",
				 json_pack("{s:s,s:s}", "field", fe.field, "reason", fe.reason));
		*ret_error = error_field_obj(r == -EPERM || r == -EOPNOTSUPP
						     ? CORDON_ERR_POLICY_REFUSED
						     : JSONRPC_INVALID_PARAMS,
					     &fe);
		goto out;
	}
	if (r < 0)
		goto fail;
	/* A transfer backend sees the workspace only through a lease (the tree goes in at its
	 * acquisition and comes back at its release): a one-shot run would lose its changes. */
	if (!group && plan.ws_path && bi->claims.workspace == BACKEND_ATTACH_TRANSFER) {
		field_error_set(
			&fe, -EOPNOTSUPP, "params", "sandbox",
			"the active backend (%s) transfers the workspace: run the command "
			"in a lease (sandbox.acquire, then \"sandbox\": ID; cordon run does "
			"this by itself)",
			bi->ref);
		*ret_error = error_field_obj(CORDON_ERR_POLICY_REFUSED, &fe);
		r = -EOPNOTSUPP;
		goto out;
	}

	/* Wire stdio: fds for the sandbox go into the plan; our ends of pipes stay with us. */
	stdio = json_object();
	json_object_set_new(plan.plan, "stdio", stdio);
	if (a.pty) {
		int k;

		r = open_pty(&pty_master, &pty_slave);
		if (r < 0)
			goto fail;
		k = ctl_plan_add_fd(&plan, pty_slave);
		pty_slave = safe_close(pty_slave);
		if (k < 0) {
			r = k;
			goto fail;
		}
		json_object_set_new(stdio, "stdin", json_integer(k));
		json_object_set_new(stdio, "stdout", json_integer(k));
		json_object_set_new(stdio, "stderr", json_integer(k));
		/* Its own terminal: job control, /dev/tty and ^C work inside (the launcher makes
		 * it the sandbox's controlling terminal, in a session of its own). */
		json_object_set_new(plan.plan, "controllingTty", json_true());
	}
	for (int i = 0; i < 3 && !a.pty; i++) {
		static const char *const names[3] = { "stdin", "stdout", "stderr" };
		int child_fd = -1, k;

		if (i == 0 && exec && a.stdin_data) {
			child_fd = stdin_memfd(a.stdin_data, a.stdin_len);
			if (child_fd < 0) {
				r = child_fd;
				goto fail;
			}
		} else if (a.mode[i] == STREAM_FD) {
			/* The client's fd, copied into the plan (the request keeps its own). */
			k = ctl_plan_add_fd(&plan, a.stdio_fd[i]);
			if (k < 0) {
				r = k;
				goto fail;
			}
			json_object_set_new(stdio, names[i], json_integer(k));
			continue;
		} else if (a.mode[i] == STREAM_PIPE) {
			int pp[2];

			if (pipe2(pp, O_CLOEXEC) < 0) {
				r = -errno;
				goto fail;
			}
			if (i == 0) {
				stdin_w = pp[1];
				child_fd = pp[0];
			} else {
				out_r[i - 1] = pp[0];
				child_fd = pp[1];
			}
		} else
			continue; /* absent: /dev/null */
		if (child_fd < 0) {
			r = child_fd;
			goto fail;
		}
		k = ctl_plan_add_fd(&plan, child_fd);
		safe_close(child_fd);
		if (k < 0) {
			r = k;
			goto fail;
		}
		json_object_set_new(stdio, names[i], json_integer(k));
	}
	if (a.detached)
		json_object_set_new(plan.plan, "dieWithRequester", json_false());

	p = calloc(1, sizeof(*p));
	if (!p) {
		r = -ENOMEM;
		goto fail;
	}
	p->ctl = c;
	(void)snprintf(p->id, sizeof(p->id), "p%llu", ++c->next_process);
	p->bi = backend_instance_ref(bi);
	p->ws_fd = -1;
	p->launcher = strdup(p->bi->name);
	p->starting = true;
	p->pidfd = -1;
	p->plan = TAKE_PTR(plan.plan);
	p->proxy_rules = TAKE_PTR(plan.proxy_rules);
	memcpy(p->plan_fds, plan.fds, plan.n_fds * sizeof(int));
	p->n_plan_fds = plan.n_fds;
	plan.n_fds = 0;
	p->argv = json_incref(json_object_get(params, "argv"));
	p->owner = cl;
	p->detached = a.detached;
	p->is_exec = exec;
	p->stdin_fd = -1;
	p->out[0].fd = p->out[1].fd = -1;
	if (pty_master >= 0) {
		/* One fd both ways: output is read from it, process.write writes to it. */
		p->stdin_fd = fd_dup_cloexec(pty_master, 3);
		p->pty = true;
		out_r[0] = TAKE_FD(pty_master);
	} else if (stdin_w >= 0)
		p->stdin_fd = TAKE_FD(stdin_w);
	if (p->stdin_fd >= 0)
		(void)fd_set_nonblock(p->stdin_fd, true);
	p->out[0].eof = p->out[1].eof = true;
	p->max_output = plan.max_output_bytes;
	p->host_exec_absent = TAKE_PTR(plan.host_exec_absent);
	p->start_usec = now_usec();
	p->t_request = t_request;
	p->t_compiled = t_compiled;
	r = process_workspace(p, &plan, group);
	if (r < 0) {
		process_free(p);
		goto fail;
	}
	p->next = c->processes;
	c->processes = p;
	/* Output is watched only once the spawn is answered (on_spawned()), so a client never sees
	 * output of a process whose id it has not been told yet. */
	for (int i = 0; i < 2; i++) {
		p->out[i].p = p;
		p->out[i].name = i == 0 ? "stdout" : "stderr";
		p->out[i].notify = !exec;
		p->out[i].fd = TAKE_FD(out_r[i]);
		p->out[i].eof = p->out[i].fd < 0;
	}
	log_debug("%s: compile %llu us", p->id, t_compiled - t_request);

	if (group)
		p->group = strdup(group);
	*ret = p;
	r = 0;
	goto out;

bad_params:
	*ret_error = error_field_obj(JSONRPC_INVALID_PARAMS, &fe);
	r = -EINVAL;
	goto out;
fail:
	*ret_error = error_obj(JSONRPC_INTERNAL_ERROR, strerror(-r), NULL);
out:
	close_many(out_r, 2);
	safe_close(stdin_w);
	safe_close(pty_master);
	safe_close(pty_slave);
	free(a.stdin_data);
	ctl_plan_done(&plan);
	controller_policy_request_done(&q);
	return r;
}

/* Result of a spawn that never started: what exec and internal callers get. */
static json_t *start_failure_result(struct process *p, json_t *err)
{
	json_t *r = json_pack("{s:s,s:s,s:s,s:O?}", "processId", p->id, "launcher", p->launcher,
			      "reason", "spawn-failed", "error", err);
	return r;
}

static void process_drop(struct process *p)
{
	process_unlink(p->ctl, p);
	process_free(p);
}

static void claim_early_exit(struct process *p);

/* Every decision of a sandbox's proxy is an audit event. */
static void on_net_event(const struct proxy_event *e, void *ud)
{
	struct process *p = ud;
	json_t *f = proxy_event_to_json(e);

	if (!f)
		return;
	json_object_set_new(f, "processId", json_string(p->id));
	controller_event(p->ctl, "net", f);
}

static void on_spawned(struct backend_instance *bi, const char *sandbox, int pidfd, int proxy_fd,
		       pid_t pid, json_t *lerr, void *ud)
{
	struct process *p = ud;
	struct controller *c = p->ctl;

	p->starting = false;
	p->t_spawned = now_usec();
	/* The sandbox has its copies of the fds now (or failed): drop ours, so EOF comes when it
	 * exits and a failed start closes the pipes at once. */
	close_many(p->plan_fds, p->n_plan_fds);
	p->n_plan_fds = 0;
	json_decref(TAKE_PTR(p->plan));
	p->ws_fd = safe_close(p->ws_fd); /* the backend had it for the spawn */

	if (!sandbox) {
		_cleanup_json_ json_t *err = launcher_error_obj(lerr, -EIO);

		safe_close(proxy_fd);

		controller_event(c, "spawn-failed",
				 json_pack("{s:s,s:O,s:O?}", "launcher", bi->name, "argv", p->argv,
					   "error", lerr));
		if (p->on_done) {
			_cleanup_json_ json_t *res = start_failure_result(p, err);

			p->on_done(c, p->id, res, p->on_done_ud);
		} else if (p->owner && (p->exec_id || p->spawn_id))
			(void)reply_error_obj(p->owner, p->exec_id ? p->exec_id : p->spawn_id, err);
		process_drop(p);
		return;
	}

	p->sandbox = strdup(sandbox);
	p->pidfd = pidfd;
	p->pid = pid;
	if (proxy_fd >= 0 && p->proxy_rules) {
		/* Serve the listener launcherd made inside the sandbox's netns. */
		int r = proxy_listener_new(c->host.loop, proxy_fd, p->proxy_rules, NULL,
					   on_net_event, p, &p->proxy);

		if (r < 0)
			log_warning_errno(r, "cannot serve the proxy of %s: %m", p->id);
	} else
		safe_close(proxy_fd);
	/* Reply before any exit report, so the client learns its processId first; and before the
	 * event, whose write to the event log need not delay the client. */
	if (p->spawn_id && p->owner)
		(void)client_reply(p->owner, p->spawn_id,
				   json_pack("{s:s,s:s,s:s,s:i,s:s?}", "processId", p->id,
					     "instance", p->sandbox, "launcher", p->launcher, "pid",
					     (int)p->pid, "sandboxId", p->group));
	json_decref(TAKE_PTR(p->spawn_id));
	controller_event(c, "spawn",
			 json_pack("{s:s,s:s,s:s,s:i,s:O,s:b,s:s?}", "processId", p->id, "instance",
				   p->sandbox, "launcher", p->launcher, "pid", (int)p->pid, "argv",
				   p->argv, "exec", p->is_exec, "sandboxId", p->group));
	for (int i = 0; i < 2; i++)
		if (capture_start(&p->out[i]) < 0)
			capture_close(&p->out[i]);
	if (p->kill_pending)
		(void)process_kill(p, p->kill_pending);
	else if (!p->owner && !p->detached && !p->on_done)
		(void)process_kill(p, SIGKILL); /* its client left while it was starting */
	claim_early_exit(p);
}

/*
 * Hand the compiled plan to the instance; the answer comes through on_spawned() (possibly before
 * this returns). When the instance cannot take the request at all, the process is dropped
 * without callbacks and the error returned: the caller answers.
 */
static int process_launch(struct process *p, json_t **ret_error)
{
	struct backend_instance *bi;
	struct backend_workspace ws;
	struct backend_spawn req;
	int r;

	p->t_sent = now_usec();
	/* A pack's host interactions during this spawn go to the spawning client (bi outlives
	 * p: its freeing is deferred, see backend_instance_unref()). */
	bi = p->bi;
	ws = (struct backend_workspace){
		.host_path = p->ws_path,
		.dir_fd = p->ws_fd,
		.read_only = p->ws_read_only,
		.mount_point = p->ws_mount,
		.cwd = p->ws_cwd,
	};
	req = (struct backend_spawn){
		.plan = p->plan,
		.fds = p->plan_fds,
		.n_fds = p->n_plan_fds,
		.lease = p->group ? controller_sandbox_lease(p->ctl, p->group) : NULL,
		.workspace = &ws,
	};
	bi->origin_client = p->owner ? p->owner->id : 0;
	r = bi->ops->spawn(bi, &req, on_spawned, p);
	bi->origin_client = 0;

	if (r < 0) {
		*ret_error = error_obj(CORDON_ERR_BACKEND, "the launcher is not available",
				       json_pack("{s:s,s:s}", "launcher", p->launcher, "error",
						 strerror(-r)));
		process_drop(p);
	}
	return r;
}

/*
 * A spawn or exec that came while no instance is active (its launcher was lost): it waits for
 * the one being activated, and is then handled as if it came then; if none can be, it fails
 * (backend-failed) and the next request tries again.
 */
struct parked_request {
	struct parked_request *next;
	struct client *cl;
	json_t *id;
	json_t *params;
	int fds[IPC_MAX_FDS];
	size_t n_fds;
	bool exec;
};

static int process_start(struct client *cl, json_t *id, json_t *params, int *fds, size_t n,
			 bool exec, bool may_wait);

static void parked_free(struct parked_request *pk)
{
	json_decref(pk->id);
	json_decref(pk->params);
	close_many(pk->fds, pk->n_fds);
	free(pk);
}

static void parked_unlink(struct controller *c, struct parked_request *pk)
{
	for (struct parked_request **pp = &c->parked; *pp; pp = &(*pp)->next)
		if (*pp == pk) {
			*pp = pk->next;
			return;
		}
}

static void on_launcher_ready(struct controller *c, int r, const char *message, void *ud)
{
	struct parked_request *pk = ud;

	parked_unlink(c, pk);
	if (r < 0) {
		char text[1200];

		(void)snprintf(text, sizeof(text), "the launcher is not available: %s",
			       message ? message : strerror(-r));
		(void)client_reply_error(pk->cl, pk->id, CORDON_ERR_BACKEND, text,
					 json_pack("{s:s}", "error", strerror(-r)));
	} else
		(void)process_start(pk->cl, pk->id, pk->params, pk->fds, pk->n_fds, pk->exec,
				    false);
	parked_free(pk);
}

static int process_park(struct client *cl, json_t *id, json_t *params, int *fds, size_t n,
			bool exec)
{
	struct controller *c = cl->ctl;
	struct parked_request *pk = calloc(1, sizeof(*pk));
	int r;

	if (!pk)
		return -ENOMEM;
	pk->cl = cl;
	pk->id = json_incref(id);
	pk->params = json_incref(params);
	pk->exec = exec;
	/* The request's fds are ours until it is handled. */
	for (size_t i = 0; i < n && i < IPC_MAX_FDS; i++)
		pk->fds[i] = TAKE_FD(fds[i]);
	pk->n_fds = n < IPC_MAX_FDS ? n : IPC_MAX_FDS;
	pk->next = c->parked;
	c->parked = pk;
	r = controller_backend_await(c, on_launcher_ready, pk);
	if (r == 0)
		return 0; /* pk is on_launcher_ready()'s (it may have run already) */
	parked_unlink(c, pk);
	if (r > 0)
		r = process_start(cl, id, params, pk->fds, pk->n_fds, exec, false);
	else
		r = client_reply_error(cl, id, CORDON_ERR_BACKEND, "the launcher is not available",
				       json_pack("{s:s}", "error", strerror(-r)));
	parked_free(pk);
	return r;
}

static int process_start(struct client *cl, json_t *id, json_t *params, int *fds, size_t n,
			 bool exec, bool may_wait)
{
	_cleanup_json_ json_t *err = NULL;
	struct process *p = NULL;
	int r;

	if (!cl->ctl->active && may_wait)
		return process_park(cl, id, params, fds, n, exec);
	r = process_create(cl->ctl, cl, params, fds, n, exec, &p, &err);
	if (r >= 0) {
		if (exec)
			p->exec_id = json_incref(id);
		else
			p->spawn_id = json_incref(id);
		r = process_launch(p, &err);
	}
	if (r < 0)
		return err ? reply_error_obj(cl, id, err) : r;
	return 0;
}

int method_process_exec(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	return process_start(cl, id, params, fds, n, true, true);
}

int method_process_spawn(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	return process_start(cl, id, params, fds, n, false, true);
}

/* Look up params.processId; answers the error itself and returns NULL when absent. */
static struct process *lookup(struct client *cl, json_t *id, json_t *params,
			      const char *const *keys)
{
	struct field_error fe = { 0 };
	const char *pid = NULL;
	struct process *p;

	if (ipc_json_check_keys(params, keys, "params", &fe) < 0 ||
	    ipc_json_get_string(params, "processId", true, "params", &pid, &fe) < 0) {
		(void)client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
		return NULL;
	}
	p = process_find(cl->ctl, pid);
	if (!p) {
		(void)client_reply_error(cl, id, CORDON_ERR_NOT_FOUND, "no such process",
					 json_pack("{s:s}", "processId", pid));
		return NULL;
	}
	return p;
}

int method_process_write(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "processId", "data", "text", NULL };
	struct process *p = lookup(cl, id, params, keys);
	struct field_error fe = { 0 };
	const char *b64 = NULL, *text = NULL;
	_cleanup_free_ void *data = NULL;
	size_t len = 0;
	char *nb;
	int r;

	if (!p)
		return 0;
	if (ipc_json_get_string(params, "data", false, "params", &b64, &fe) < 0 ||
	    ipc_json_get_string(params, "text", false, "params", &text, &fe) < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	if (!!b64 == !!text) {
		field_error_set(&fe, -EINVAL, "params", "data", "give data (base64) or text");
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	}
	if (b64 && base64_decode(b64, strlen(b64), &data, &len) < 0) {
		field_error_set(&fe, -EINVAL, "params", "data", "not valid base64");
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	}
	if (text) {
		len = json_string_length(json_object_get(params, "text"));
		data = malloc(len ? len : 1);
		if (!data)
			return -ENOMEM;
		memcpy(data, text, len);
	}
	if (p->stdin_fd < 0 || p->in_close)
		return client_reply_error(cl, id, CORDON_ERR_NOT_FOUND,
					  "this process has no open stdin pipe (spawn it with "
					  "stdio.stdin \"pipe\" or pty)",
					  NULL);
	if (p->in_len + len > STDIN_MAX)
		return client_reply_error(cl, id, CORDON_ERR_LIMIT,
					  "more than 16 MiB of stdin is waiting for the process",
					  NULL);
	nb = realloc(p->in_buf, p->in_len + len + 1);
	if (!nb)
		return -ENOMEM;
	p->in_buf = nb;
	memcpy(p->in_buf + p->in_len, data, len);
	p->in_len += len;
	r = stdin_flush(p);
	if (r == -EAGAIN && !p->in_src)
		r = event_add_io(cl->ctl->host.loop, p->stdin_fd, EPOLLOUT, on_stdin_writable, p,
				 &p->in_src);
	if (r < 0 && r != -EAGAIN) {
		stdin_close(p);
		return client_reply_error(cl, id, CORDON_ERR_NOT_FOUND,
					  "the process closed its stdin", NULL);
	}
	return client_reply(cl, id,
			    json_pack("{s:I,s:I}", "written", (json_int_t)len, "pending",
				      (json_int_t)p->in_len));
}

/* A pty's window size: TIOCSWINSZ on the master (the kernel sends SIGWINCH to the foreground
 * process group inside). */
int method_process_resize(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "processId", "rows", "cols", NULL };
	struct process *p = lookup(cl, id, params, keys);
	struct field_error fe = { 0 };
	uint64_t rows, cols;
	struct winsize ws;

	if (!p)
		return 0;
	if (ipc_json_get_uint64(params, "rows", true, 1, UINT16_MAX, "params", &rows, &fe) < 0 ||
	    ipc_json_get_uint64(params, "cols", true, 1, UINT16_MAX, "params", &cols, &fe) < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	if (!p->pty || p->stdin_fd < 0)
		return client_reply_error(cl, id, CORDON_ERR_NOT_FOUND,
					  "this process has no terminal (spawn it with pty)", NULL);
	ws = (struct winsize){ .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };
	if (ioctl(p->stdin_fd, TIOCSWINSZ, &ws) < 0)
		return client_reply_error(cl, id, CORDON_ERR_NOT_FOUND,
					  "the process's terminal is gone", NULL);
	return client_reply(cl, id, json_object());
}

/*
 * Attach to a detached process's terminal: the answer replays its last output (up to RING_MAX
 * bytes, from the start of a line when older output was dropped); from then on this client gets
 * its process.output and process.exit notifications, until it disconnects (the process runs on)
 * or another client attaches: the last to attach takes over, and the one it replaces is told
 * (process.detached). Only a process spawned with pty and detached: one without a terminal has
 * nothing to attach to, and one that is not detached belongs to the client that started it.
 * Every client here is this user (SO_PEERCRED): the owner of every process in the table.
 */
int method_process_attach(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "processId", NULL };
	struct process *p = lookup(cl, id, params, keys);
	_cleanup_free_ char *b = NULL;
	const char *replay;
	size_t len;

	if (!p)
		return 0;
	if (p->exit || p->finished)
		return client_reply_error(cl, id, CORDON_ERR_NOT_FOUND, "the process has exited",
					  json_pack("{s:s,s:s}", "processId", p->id, "reason",
						    "exited"));
	if (!p->pty)
		return client_reply_error(
			cl, id, CORDON_ERR_NOT_FOUND,
			"the process has no terminal to attach to (spawn it with pty)",
			json_pack("{s:s,s:s}", "processId", p->id, "reason", "no-terminal"));
	if (!p->detached)
		return client_reply_error(
			cl, id, CORDON_ERR_BUSY,
			"the process is not detached: its terminal belongs to the client that "
			"started it",
			json_pack("{s:s,s:s}", "processId", p->id, "reason", "not-detached"));
	replay = p->ring ? p->ring : "";
	len = p->ring_len;
	if (p->ring_cut) {
		const char *nl = memchr(replay, '\n', len);

		if (nl) {
			len -= (size_t)(nl + 1 - replay);
			replay = nl + 1;
		}
	}
	b = base64_encode(replay, len);
	if (!b)
		return client_reply_error(cl, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	if (p->attached && p->attached != cl)
		(void)client_notify(p->attached, "process.detached",
				    json_pack("{s:s,s:s}", "processId", p->id, "reason",
					      "taken-over"));
	p->attached = cl;
	return client_reply(cl, id,
			    json_pack("{s:s,s:s,s:I}", "processId", p->id, "replay", b,
				      "replayBytes", (json_int_t)len));
}

int method_process_close_stdin(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "processId", NULL };
	struct process *p = lookup(cl, id, params, keys);

	if (!p)
		return 0;
	/* Pending data is delivered first; EOF follows it. A pty has no EOF of its own: closing
	 * our side of it would hang up the terminal, which is what closing means there too. */
	if (p->in_len > 0)
		p->in_close = true;
	else
		stdin_close(p);
	return client_reply(cl, id, json_object());
}

int method_process_signal(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "processId", "signal", NULL };
	struct field_error fe = { 0 };
	uint64_t sig = SIGKILL;
	struct process *p;
	int r;

	if (ipc_json_get_uint64(params, "signal", false, 1, 64, "params", &sig, &fe) < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	p = lookup(cl, id, params, keys);
	if (!p)
		return 0;
	if (p->exit)
		return client_reply(cl, id, json_pack("{s:b}", "delivered", false));
	r = process_kill(p, (int)sig);
	if (r < 0)
		return client_reply_error(cl, id, CORDON_ERR_BACKEND, strerror(-r), NULL);
	return client_reply(cl, id, json_pack("{s:b}", "delivered", true));
}

int method_process_wait(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "processId", NULL };
	struct process *p = lookup(cl, id, params, keys);
	struct waiter *w;

	if (!p)
		return 0;
	if (p->finished)
		return client_reply(cl, id, process_result(p, false));
	w = calloc(1, sizeof(*w));
	if (!w)
		return client_reply_error(cl, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	w->cl = cl;
	w->id = json_incref(id);
	w->next = p->waiters;
	p->waiters = w;
	return 0;
}

int method_process_list(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { NULL };
	struct field_error fe = { 0 };
	json_t *list = json_array();

	if (ipc_json_check_keys(params, keys, "params", &fe) < 0) {
		json_decref(list);
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	}
	for (struct process *p = cl->ctl->processes; p; p = p->next) {
		json_t *e = json_pack("{s:s,s:s,s:s,s:s,s:i,s:O,s:b,s:b,s:b}", "processId", p->id,
				      "state", process_state(p), "instance", p->sandbox, "launcher",
				      p->launcher, "pid", (int)p->pid, "argv", p->argv, "detached",
				      p->detached, "pty", p->pty, "attached", p->attached != NULL);

		if (e && p->finished) {
			_cleanup_json_ json_t *res = process_result(p, false);

			if (res)
				json_object_update(e, res);
		}
		json_array_append_new(list, e);
	}
	return client_reply(cl, id, json_pack("{s:o}", "processes", list));
}

#define EARLY_EXITS_MAX 64

/* An exit report for a sandbox whose spawn answer has not been processed yet is kept here (it
 * can overtake the answer) and claimed when the process starts. */
static void claim_early_exit(struct process *p)
{
	struct controller *c = p->ctl;
	json_t *v;
	size_t i;

	json_array_foreach(c->early_exits, i, v)
		if (streq_ptr(json_string_value(json_object_get(v, "launcher")), p->bi->name) &&
		    streq_ptr(json_string_value(json_object_get(v, "sandbox")), p->sandbox)) {
			_cleanup_json_ json_t *exit = json_incref(json_object_get(v, "exit"));

			json_array_remove(c->early_exits, i);
			p->exit = json_incref(exit);
			p->end_usec = p->t_exit = now_usec();
			process_maybe_finish(p);
			return;
		}
}

void controller_process_exited_on(struct controller *c, struct backend_instance *bi,
				  const char *sandbox, json_t *exit)
{
	for (struct process *p = c->processes; p; p = p->next)
		if (p->bi == bi && p->sandbox && streq(p->sandbox, sandbox) && !p->exit) {
			p->exit = json_incref(exit);
			p->end_usec = p->t_exit = now_usec();
			process_maybe_finish(p);
			return;
		}
	if (!c->early_exits)
		c->early_exits = json_array();
	json_array_append_new(c->early_exits, json_pack("{s:s,s:s,s:O}", "launcher", bi->name,
							"sandbox", sandbox, "exit", exit));
	while (json_array_size(c->early_exits) > EARLY_EXITS_MAX)
		json_array_remove(c->early_exits, 0);
}

void controller_processes_instance_lost(struct controller *c, struct backend_instance *bi)
{
	_cleanup_json_ json_t *exit = json_pack("{s:i,s:i,s:s}", "exitCode", 0, "signal", SIGKILL,
						"reason", "launcher-lost");
	bool again;

	/* The sandboxes it made end now, whether or not their init died with it: a pid
	 * namespace's init takes the rest of the namespace along. */
	for (struct process *p = c->processes, *next; p; p = next) {
		next = p->next;
		if (p->bi != bi || p->exit || p->finished)
			continue;
		if (p->starting) {
			on_spawned(bi, NULL, -1, -1, 0, NULL, p); /* drops p */
			continue;
		}
		if (p->pidfd >= 0 &&
		    syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0) < 0 &&
		    errno != ESRCH)
			log_warning_errno(errno, "%s: cannot kill the sandbox %s: %m", p->id,
					  p->sandbox);
		p->exit = json_incref(exit);
		p->end_usec = p->t_exit = now_usec();
	}
	/* Each finishes once its output is read to the end (the killed sandbox closes its pipes);
	 * finishing one may prune others, so the walk starts over after each. */
	do {
		again = false;
		for (struct process *p = c->processes; p; p = p->next)
			if (exit && p->bi == bi && p->exit == exit && !p->finished &&
			    p->out[0].eof && p->out[1].eof) {
				process_maybe_finish(p);
				again = true;
				break;
			}
	} while (again);
}

void controller_processes_client_gone(struct controller *c, struct client *cl)
{
	for (struct parked_request **pp = &c->parked; *pp;) {
		struct parked_request *pk = *pp;

		if (pk->cl != cl) {
			pp = &pk->next;
			continue;
		}
		*pp = pk->next;
		controller_backend_await_cancel(c, pk);
		parked_free(pk);
	}
	for (struct process *p = c->processes; p; p = p->next) {
		for (struct waiter **w = &p->waiters; *w;) {
			if ((*w)->cl == cl) {
				struct waiter *dead = *w;

				*w = dead->next;
				json_decref(dead->id);
				free(dead);
			} else
				w = &(*w)->next;
		}
		if (p->attached == cl)
			p->attached = NULL; /* detached: the process runs on */
		if (p->owner != cl)
			continue;
		p->owner = NULL;
		json_decref(TAKE_PTR(p->exec_id));
		if (!p->detached && !p->exit)
			(void)process_kill(p, SIGKILL);
	}
}

void controller_processes_kill_all(struct controller *c)
{
	for (struct process *p = c->processes; p; p = p->next)
		if (!p->exit)
			(void)process_kill(p, SIGKILL);
}

bool controller_processes_idle(struct controller *c)
{
	for (struct process *p = c->processes; p; p = p->next)
		if (!p->finished)
			return false;
	return true;
}

void controller_processes_free(struct controller *c)
{
	while (c->parked) {
		struct parked_request *pk = c->parked;

		c->parked = pk->next;
		parked_free(pk);
	}
	while (c->processes) {
		struct process *p = c->processes;

		c->processes = p->next;
		process_free(p);
	}
	c->n_finished = 0;
}

int controller_process_start_internal(struct controller *c, struct client *owner, json_t *params,
				      void (*on_done)(struct controller *c, const char *process_id,
						      json_t *result, void *ud),
				      void *ud, char **ret_id, json_t **ret_error)
{
	struct process *p = NULL;
	int r = process_create(c, owner, params, NULL, 0, true, &p, ret_error);

	if (r < 0)
		return r;
	p->on_done = on_done;
	p->on_done_ud = ud;
	if (ret_id)
		*ret_id = strdup(p->id);
	r = process_launch(p, ret_error);
	if (r < 0 && ret_id) {
		free(*ret_id);
		*ret_id = NULL;
	}
	return r;
}

void controller_processes_kill_group(struct controller *c, const char *group)
{
	for (struct process *p = c->processes; p; p = p->next)
		if (p->group && streq(p->group, group) && !p->exit)
			(void)process_kill(p, SIGKILL);
}

bool controller_processes_group_live(struct controller *c, const char *group)
{
	for (struct process *p = c->processes; p; p = p->next)
		if (p->group && streq(p->group, group) && !p->exit && !p->finished)
			return true;
	return false;
}

void controller_process_forget_callback(struct controller *c, const char *process_id)
{
	struct process *p = process_find(c, process_id);

	if (p) {
		p->on_done = NULL;
		p->on_done_ud = NULL;
	}
}

/*
 * net.allow / net.deny {processId, domain}: change the allowlist of a live sandbox's proxy; new
 * connections get the new rules, open ones keep theirs. Narrowing (deny) is always allowed;
 * widening (allow) only by the sandbox's owner — this controller serves one user, and
 * SO_PEERCRED already checked every client is that user — and both are audited.
 */
static int method_net_change(struct client *cl, json_t *id, json_t *params, bool allow)
{
	static const char *const keys[] = { "processId", "domain", NULL };
	struct process *p = lookup(cl, id, params, keys);
	struct proxy_rules *n = NULL;
	struct field_error fe = { 0 };
	const char *domain = NULL;
	json_t *rules = NULL;
	int r;

	if (!p)
		return 0;
	if (ipc_json_get_string(params, "domain", true, "params", &domain, &fe) < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	if (!p->proxy)
		return client_reply_error(
			cl, id, CORDON_ERR_NOT_FOUND,
			"this process has no proxy (network mode is not proxy, or "
			"it has ended)",
			NULL);
	r = allow ? proxy_rules_allow(proxy_listener_rules(p->proxy), domain, &n)
		  : proxy_rules_deny(proxy_listener_rules(p->proxy), domain, &n);
	if (r < 0) {
		field_error_set(&fe, r, "params", "domain",
				"not a domain pattern (NAME, *.SUFFIX, "
				"optionally :PORT)");
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	}
	proxy_listener_update_rules(p->proxy, n);
	(void)proxy_rules_to_json(n, &rules);
	proxy_rules_unref(n);
	controller_event(cl->ctl, "net-policy",
			 json_pack("{s:s,s:s,s:s,s:i,s:i,s:O?}", "processId", p->id, "change",
				   allow ? "allow" : "deny", "domain", domain, "byPid",
				   (int)cl->pid, "byUid", (int)cl->uid, "rules", rules));
	return client_reply(cl, id, json_pack("{s:o?}", "rules", rules));
}

int method_net_allow(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	return method_net_change(cl, id, params, true);
}

int method_net_deny(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	return method_net_change(cl, id, params, false);
}
