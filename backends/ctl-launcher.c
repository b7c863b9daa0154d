/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/ctl-launcher.h"
#include "ipc/ipc-fdpass.h"
#include "ipc/ipc-frame.h"

struct pending {
	struct pending *next;
	int64_t seq;
	bool done;
	json_t *reply;	      /* blocking requests: the reply, kept for the caller */
	int fds[IPC_MAX_FDS]; /* …and its fds */
	size_t n_fds;
	ctl_launcher_spawn_cb spawn_cb; /* async spawn */
	ctl_launcher_hello_cb hello_cb; /* async hello */
	void *userdata;
};

struct exit_item {
	struct exit_item *next;
	struct ctl_launcher_exit e;
};

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

struct ctl_launcher {
	int fd;
	pid_t child; /* launcherd of our own we started, or 0 */
	pid_t pid;   /* the launcherd process as far as we know it (ctl_launcher_pidfd()), or 0 */
	int pidfd;   /* …a pidfd of it, or -1 */
	int64_t next_seq;
	struct pending *pending;
	struct exit_item *exits; /* reports nobody has taken yet, oldest first */
	ctl_launcher_exit_cb exit_cb;
	void *exit_userdata;
	ctl_launcher_denial_cb denial_cb;
	void *denial_userdata;
	bool broken;
};

int ctl_launcher_error_to_errno(const char *code)
{
	static const struct {
		const char *code;
		int error;
	} map[] = {
		{ "invalid-plan", EINVAL }, { "floor-refused", EPERM }, { "setup-failed", EIO },
		{ "exec-failed", ENOEXEC }, { "limit", EAGAIN },	{ "not-found", ESRCH },
	};

	for (size_t i = 0; i < ELEMENTSOF(map); i++)
		if (streq_ptr(code, map[i].code))
			return -map[i].error;
	return -EPROTO;
}

static struct ctl_launcher *launcher_new(int fd)
{
	struct ctl_launcher *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->fd = fd;
	l->pidfd = -1;
	l->next_seq = 1;
	return l;
}

/*
 * The process that made the socket at the other end of fd listen, as a pidfd: the launcherd
 * started on that socket. None (-1) for pid 1, which made it for a socket-activated launcherd
 * (then the connection's end is what tells: its unit goes down with it), nor when its pid is
 * not visible here. SO_PEERPIDFD cannot name a recycled pid; kernels before 6.5 lack it, and a
 * pidfd of the pid SO_PEERCRED gave is the next best.
 */
static int peer_pidfd(int fd, pid_t *ret_pid)
{
	struct ucred uc = { 0 };
	socklen_t len = sizeof(uc);
	int pidfd = -1;

	*ret_pid = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0 || uc.pid <= 1)
		return -1;
	len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0 || pidfd < 0)
		pidfd = (int)syscall(SYS_pidfd_open, uc.pid, 0);
	if (pidfd >= 0)
		*ret_pid = uc.pid;
	return pidfd < 0 ? -1 : pidfd;
}

int ctl_launcher_connect(const char *path, struct ctl_launcher **ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	*ret = launcher_new(fd);
	if (!*ret)
		return -ENOMEM;
	(*ret)->pidfd = peer_pidfd(fd, &(*ret)->pid);
	TAKE_FD(fd);
	return 0;
}

int ctl_launcher_start_own(const char *launcherd_path, const char *floor_path, bool user_mode,
			   struct ctl_launcher **ret)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int r = -errno;

		close_many(sv, 2);
		return r;
	}
	if (pid == 0) {
		const char *argv[] = { launcherd_path,	user_mode ? "--mode=user" : "--mode=auto",
				       "--socket-fd=3", floor_path ? "--floor" : NULL,
				       floor_path,	NULL };

		/* dup2 onto 3 clears close-on-exec for that one fd. */
		if (sv[1] == 3 ? fd_set_cloexec(3, false) < 0 : dup2(sv[1], 3) < 0)
			_exit(127);
		execv(launcherd_path, (char **)argv);
		_exit(127);
	}
	safe_close(sv[1]);
	*ret = launcher_new(sv[0]);
	if (!*ret) {
		safe_close(sv[0]);
		(void)waitpid(pid, NULL, 0);
		return -ENOMEM;
	}
	(*ret)->child = (*ret)->pid = pid;
	/* Our child: it cannot have been reaped, so the pid is still its own. */
	(*ret)->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if ((*ret)->pidfd < 0)
		(*ret)->pidfd = -1;
	return 0;
}

void ctl_launcher_free(struct ctl_launcher *l)
{
	if (!l)
		return;
	safe_close(l->fd);
	safe_close(l->pidfd);
	while (l->pending) {
		struct pending *p = l->pending;

		l->pending = p->next;
		json_decref(p->reply);
		close_many(p->fds, p->n_fds);
		free(p);
	}
	while (l->exits) {
		struct exit_item *e = l->exits;

		l->exits = e->next;
		free(e);
	}
	if (l->child > 0)
		while (waitpid(l->child, NULL, 0) < 0 && errno == EINTR)
			;
	free(l);
}

int ctl_launcher_fd(const struct ctl_launcher *l)
{
	return l->fd;
}

int ctl_launcher_pidfd(const struct ctl_launcher *l, pid_t *ret_pid)
{
	if (ret_pid)
		*ret_pid = l->pid;
	return l->pidfd;
}

int ctl_launcher_reap_child(struct ctl_launcher *l, int *ret_status)
{
	int status = 0;
	pid_t r;

	if (l->child <= 0)
		return 0;
	do
		r = waitpid(l->child, &status, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return 0;
	l->child = 0;
	if (ret_status)
		*ret_status = status;
	return 1;
}

void ctl_launcher_abort(struct ctl_launcher *l, const char *message)
{
	struct ctl_launcher_error e = { .error = ECONNRESET };
	struct pending *list = TAKE_PTR(l->pending);

	l->broken = true;
	(void)snprintf(e.code, sizeof(e.code), "launcher-lost");
	(void)snprintf(e.message, sizeof(e.message), "%s", message);
	/* Detached first: a callback may make requests of its own (they fail: broken). */
	while (list) {
		struct pending *p = list;

		list = p->next;
		if (p->spawn_cb)
			p->spawn_cb(l, NULL, -1, 0, -1, &e, p->userdata);
		else if (p->hello_cb)
			p->hello_cb(l, NULL, &e, p->userdata);
		else {
			/* A blocking request's record: its caller removes it. */
			p->next = l->pending;
			l->pending = p;
			continue;
		}
		free(p);
	}
}

void ctl_launcher_set_exit_handler(struct ctl_launcher *l, ctl_launcher_exit_cb cb, void *userdata)
{
	l->exit_cb = cb;
	l->exit_userdata = userdata;
}

void ctl_launcher_set_denial_handler(struct ctl_launcher *l, ctl_launcher_denial_cb cb,
				     void *userdata)
{
	l->denial_cb = cb;
	l->denial_userdata = userdata;
}

/* A "denial" as the event carries it: only the members docs/PROTOCOL.md names, each of its
 * type and bounded; NULL when the message does not check. */
static json_t *denial_copy(json_t *m)
{
	static const char *const strs[] = { "layer",	  "kind",    "path",   "address", "syscall",
					    "action",	  "comm",    "exe",    "filter",  "family",
					    "socketType", "request", "persona" };
	static const char *const ints[] = { "port",	  "syscallNr",	"pid",	   "timeMs",
					    "suppressed", "sandboxPid", "protocol" };
	_cleanup_json_ json_t *d = json_object();
	json_t *sb = json_object_get(m, "sandbox"), *access = json_object_get(m, "access"), *v;
	json_t *flags = json_object_get(m, "flags");
	size_t i;

	if (!d || !json_is_string(sb) || json_string_length(sb) == 0 ||
	    json_string_length(sb) > 64 || json_object_set(d, "instance", sb) < 0)
		return NULL;
	for (i = 0; i < ELEMENTSOF(strs); i++) {
		v = json_object_get(m, strs[i]);
		if (!v || json_is_null(v))
			continue;
		if (!json_is_string(v) || json_string_length(v) > 4096 ||
		    json_object_set(d, strs[i], v) < 0)
			return NULL;
	}
	for (i = 0; i < ELEMENTSOF(ints); i++) {
		v = json_object_get(m, ints[i]);
		if (!v)
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_object_set(d, ints[i], v) < 0)
			return NULL;
	}
	if (access) {
		if (!json_is_array(access) || json_array_size(access) > 32)
			return NULL;
		for (i = 0; i < json_array_size(access); i++) {
			v = json_array_get(access, i);
			if (!json_is_string(v) || json_string_length(v) > 64)
				return NULL;
		}
		if (json_object_set(d, "access", access) < 0)
			return NULL;
	}
	/* The floor's refusals: the namespace flags of clone() and unshare(), a few names. */
	if (flags) {
		if (!json_is_array(flags) || json_array_size(flags) > 16)
			return NULL;
		for (i = 0; i < json_array_size(flags); i++) {
			v = json_array_get(flags, i);
			if (!json_is_string(v) || json_string_length(v) > 32)
				return NULL;
		}
		if (json_object_set(d, "flags", flags) < 0)
			return NULL;
	}
	if (!json_object_get(d, "layer") && !json_object_get(d, "suppressed"))
		return NULL;
	return TAKE_PTR(d);
}

static void copy_str(char *dst, size_t size, json_t *v)
{
	(void)snprintf(dst, size, "%s", json_is_string(v) ? json_string_value(v) : "");
}

static void parse_error(json_t *m, struct ctl_launcher_error *e)
{
	if (!e)
		return;
	copy_str(e->code, sizeof(e->code), json_object_get(m, "code"));
	e->error = (int)json_integer_value(json_object_get(m, "errno"));
	copy_str(e->field, sizeof(e->field), json_object_get(m, "field"));
	copy_str(e->step, sizeof(e->step), json_object_get(m, "step"));
	copy_str(e->message, sizeof(e->message), json_object_get(m, "message"));
}

static void local_error(struct ctl_launcher_error *e, int r, const char *what)
{
	if (!e)
		return;
	*e = (struct ctl_launcher_error){ .error = -r };
	(void)snprintf(e->code, sizeof(e->code), "internal");
	(void)snprintf(e->message, sizeof(e->message), "%s: %s", what, strerror(-r));
}

static void handle_exit(struct ctl_launcher *l, json_t *m)
{
	struct exit_item *it;
	json_t *limits = json_object_get(m, "limits");

	it = calloc(1, sizeof(*it));
	if (!it)
		return;
	copy_str(it->e.sandbox, sizeof(it->e.sandbox), json_object_get(m, "sandbox"));
	copy_str(it->e.reason, sizeof(it->e.reason), json_object_get(m, "reason"));
	it->e.pid = (pid_t)json_integer_value(json_object_get(m, "pid"));
	it->e.exit_code = (int)json_integer_value(json_object_get(m, "exitCode"));
	it->e.signal = (int)json_integer_value(json_object_get(m, "signal"));
	it->e.duration_usec = (uint64_t)json_integer_value(json_object_get(m, "durationUsec"));
	it->e.limit_pids = json_is_true(json_object_get(limits, "pids"));
	it->e.limit_memory = json_is_true(json_object_get(limits, "memory"));
	if (l->exit_cb) {
		l->exit_cb(l, &it->e, l->exit_userdata);
		free(it);
		return;
	}
	/* Append: reports stay in arrival order. */
	{
		struct exit_item **p = &l->exits;

		while (*p)
			p = &(*p)->next;
		*p = it;
	}
}

/* Receive and route one message. Returns 1 handled, 0 nothing (non-blocking), < 0 error. */
static int recv_one(struct ctl_launcher *l, bool block)
{
	_cleanup_json_ json_t *m = NULL;
	int fds[IPC_MAX_FDS];
	size_t n_fds = 0;
	json_t *jseq;
	int r;

	if (l->broken)
		return -ECONNRESET;
	r = ipc_frame_recv_json(l->fd, &m, fds, IPC_MAX_FDS, &n_fds, block ? 0 : MSG_DONTWAIT);
	if (r == -EAGAIN)
		return 0;
	if (r <= 0) {
		l->broken = true;
		return r < 0 ? r : -ECONNRESET;
	}
	if (streq_ptr(json_string_value(json_object_get(m, "type")), "exit")) {
		close_many(fds, n_fds);
		handle_exit(l, m);
		return 1;
	}
	if (streq_ptr(json_string_value(json_object_get(m, "type")), "denial")) {
		json_t *d = l->denial_cb ? denial_copy(m) : NULL;

		close_many(fds, n_fds);
		if (d)
			l->denial_cb(l, d, l->denial_userdata);
		return 1;
	}
	jseq = json_object_get(m, "seq");
	for (struct pending **pp = &l->pending; *pp; pp = &(*pp)->next) {
		struct pending *p = *pp;

		if (!json_is_integer(jseq) || json_integer_value(jseq) != p->seq)
			continue;
		if (p->hello_cb) {
			struct ctl_launcher_error e = { 0 };
			bool ok = streq_ptr(json_string_value(json_object_get(m, "type")), "hello");

			*pp = p->next;
			close_many(fds, n_fds);
			if (!ok)
				parse_error(m, &e);
			p->hello_cb(l, ok ? m : NULL, ok ? NULL : &e, p->userdata);
			free(p);
			return 1;
		}
		if (p->spawn_cb) {
			const char *type = json_string_value(json_object_get(m, "type"));

			*pp = p->next;
			if (streq_ptr(type, "spawned") && n_fds >= 1) {
				if (n_fds > 2)
					close_many(fds + 2, n_fds - 2);
				p->spawn_cb(l, json_string_value(json_object_get(m, "sandbox")),
					    fds[0],
					    (pid_t)json_integer_value(json_object_get(m, "pid")),
					    n_fds >= 2 ? fds[1] : -1, NULL, p->userdata);
			} else {
				struct ctl_launcher_error e = { 0 };

				close_many(fds, n_fds);
				parse_error(m, &e);
				p->spawn_cb(l, NULL, -1, 0, -1, &e, p->userdata);
			}
			free(p);
			return 1;
		}
		p->reply = TAKE_PTR(m);
		memcpy(p->fds, fds, n_fds * sizeof(int));
		p->n_fds = n_fds;
		p->done = true;
		return 1;
	}
	/* A reply nobody waits for: drop it. */
	close_many(fds, n_fds);
	return 1;
}

int ctl_launcher_process(struct ctl_launcher *l)
{
	for (;;) {
		int r = recv_one(l, false);

		if (r <= 0)
			return r;
	}
}

static struct pending *pending_add(struct ctl_launcher *l)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->seq = l->next_seq++;
	p->next = l->pending;
	l->pending = p;
	return p;
}

static void pending_remove(struct ctl_launcher *l, struct pending *p)
{
	for (struct pending **pp = &l->pending; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	json_decref(p->reply);
	close_many(p->fds, p->n_fds);
	free(p);
}

/* Send msg (its "seq" set here) and block until the reply. *ret_p stays in the list. */
static int request(struct ctl_launcher *l, json_t *msg, const int *fds, size_t n_fds,
		   struct pending **ret_p)
{
	struct pending *p;
	int r;

	if (l->broken)
		return -ECONNRESET;
	p = pending_add(l);
	if (!p)
		return -ENOMEM;
	if (json_object_set_new(msg, "seq", json_integer(p->seq)) < 0) {
		pending_remove(l, p);
		return -ENOMEM;
	}
	r = ipc_frame_send_json(l->fd, msg, fds, n_fds, 0);
	while (r >= 0 && !p->done)
		r = recv_one(l, true);
	if (r < 0) {
		pending_remove(l, p);
		return r;
	}
	*ret_p = p;
	return 0;
}

static const char *reply_type(const struct pending *p)
{
	return json_string_value(json_object_get(p->reply, "type"));
}

/* A blocking request whose reply must be of type want: 0 with *ret_p (the caller removes it), or
 * -errno with reterr filled from the error reply or the local failure. */
static int request_expect(struct ctl_launcher *l, json_t *msg, const int *fds, size_t n_fds,
			  const char *want, struct ctl_launcher_error *reterr,
			  struct pending **ret_p)
{
	struct pending *p;
	int r;

	if (!msg)
		return -ENOMEM;
	r = request(l, msg, fds, n_fds, &p);
	if (r < 0) {
		local_error(reterr, r, json_string_value(json_object_get(msg, "type")));
		return r;
	}
	if (!streq_ptr(reply_type(p), want)) {
		parse_error(p->reply, reterr);
		r = ctl_launcher_error_to_errno(
			json_string_value(json_object_get(p->reply, "code")));
		pending_remove(l, p);
		return r;
	}
	*ret_p = p;
	return 0;
}

/* Send msg (its "seq" set here) for p, whose callback will take the reply; on failure p is
 * removed. */
static int send_async(struct ctl_launcher *l, json_t *msg, const int *fds, size_t n_fds,
		      struct pending *p)
{
	int r = json_object_set_new(msg, "seq", json_integer(p->seq)) < 0 ? -ENOMEM : 0;

	if (r >= 0 && l->broken)
		r = -ECONNRESET;
	if (r >= 0)
		r = ipc_frame_send_json(l->fd, msg, fds, n_fds, 0);
	if (r < 0)
		pending_remove(l, p);
	return r;
}

static json_t *hello_msg(void)
{
	return json_pack("{s:s,s:i}", "type", "hello", "version", 1);
}

int ctl_launcher_hello_async(struct ctl_launcher *l, ctl_launcher_hello_cb cb, void *userdata)
{
	_cleanup_json_ json_t *msg = hello_msg();
	struct pending *p;

	if (!msg)
		return -ENOMEM;
	p = pending_add(l);
	if (!p)
		return -ENOMEM;
	p->hello_cb = cb;
	p->userdata = userdata;
	return send_async(l, msg, NULL, 0, p);
}

void ctl_launcher_cancel_hello(struct ctl_launcher *l, void *userdata)
{
	for (struct pending **pp = &l->pending; *pp;) {
		struct pending *p = *pp;

		if (p->hello_cb && p->userdata == userdata) {
			*pp = p->next;
			free(p);
		} else
			pp = &p->next;
	}
}

pid_t ctl_launcher_take_child(struct ctl_launcher *l)
{
	pid_t pid = l->child;

	l->child = 0;
	return pid;
}

int ctl_launcher_hello(struct ctl_launcher *l, json_t **ret_info, struct ctl_launcher_error *reterr)
{
	_cleanup_json_ json_t *msg = hello_msg();
	struct pending *p;
	int r;

	r = request_expect(l, msg, NULL, 0, "hello", reterr, &p);
	if (r < 0)
		return r;
	if (ret_info)
		*ret_info = json_incref(p->reply);
	pending_remove(l, p);
	return 0;
}

static json_t *spawn_msg(json_t *plan)
{
	return json_pack("{s:s,s:O}", "type", "spawn", "plan", plan);
}

int ctl_launcher_spawn(struct ctl_launcher *l, json_t *plan, const int *fds, size_t n_fds,
		       char **ret_sandbox, int *ret_pidfd, struct ctl_launcher_error *reterr)
{
	_cleanup_json_ json_t *msg = spawn_msg(plan);
	struct pending *p;
	char *id;
	int r;

	r = request_expect(l, msg, fds, n_fds, "spawned", reterr, &p);
	if (r < 0)
		return r;
	if (p->n_fds < 1) {
		local_error(reterr, -EPROTO, "spawned without a pidfd");
		pending_remove(l, p);
		return -EPROTO;
	}
	id = strdup(json_string_value(json_object_get(p->reply, "sandbox")) ?: "");
	if (id) {
		*ret_sandbox = id;
		*ret_pidfd = TAKE_FD(p->fds[0]);
	}
	pending_remove(l, p);
	return id ? 0 : -ENOMEM;
}

int ctl_launcher_spawn_async(struct ctl_launcher *l, json_t *plan, const int *fds, size_t n_fds,
			     ctl_launcher_spawn_cb cb, void *userdata)
{
	_cleanup_json_ json_t *msg = spawn_msg(plan);
	struct pending *p;

	if (!msg)
		return -ENOMEM;
	p = pending_add(l);
	if (!p)
		return -ENOMEM;
	p->spawn_cb = cb;
	p->userdata = userdata;
	return send_async(l, msg, fds, n_fds, p);
}

int ctl_launcher_kill_async(struct ctl_launcher *l, const char *sandbox, int sig)
{
	_cleanup_json_ json_t *msg = json_pack("{s:s,s:I,s:s,s:i}", "type", "kill", "seq",
					       (json_int_t)l->next_seq++, "sandbox", sandbox,
					       "signal", sig);

	if (!msg)
		return -ENOMEM;
	if (l->broken)
		return -ECONNRESET;
	return ipc_frame_send_json(l->fd, msg, NULL, 0, 0);
}

int ctl_launcher_kill(struct ctl_launcher *l, const char *sandbox, int sig,
		      struct ctl_launcher_error *reterr)
{
	_cleanup_json_ json_t *msg =
		json_pack("{s:s,s:s,s:i}", "type", "kill", "sandbox", sandbox, "signal", sig);
	struct pending *p;
	int r;

	r = request_expect(l, msg, NULL, 0, "ok", reterr, &p);
	if (r < 0)
		return r;
	pending_remove(l, p);
	return 0;
}

int ctl_launcher_wait_exit(struct ctl_launcher *l, const char *sandbox,
			   struct ctl_launcher_exit *ret)
{
	for (;;) {
		for (struct exit_item **pp = &l->exits; *pp; pp = &(*pp)->next) {
			struct exit_item *it = *pp;

			if (!streq(it->e.sandbox, sandbox))
				continue;
			*ret = it->e;
			*pp = it->next;
			free(it);
			return 0;
		}
		{
			/* Blocking: exit reports are queued, whatever the handler says. */
			ctl_launcher_exit_cb cb = l->exit_cb;
			int r;

			l->exit_cb = NULL;
			r = recv_one(l, true);
			l->exit_cb = cb;
			if (r < 0)
				return r;
		}
	}
}
