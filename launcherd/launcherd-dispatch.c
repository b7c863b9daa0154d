/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Connections and the request table (OpenSSH monitor style). Each request type has one stem
 * used everywhere: LAUNCHER_REQ_SPAWN, launcher_answer_spawn() here, ctl_launcher_spawn() in
 * the controller. A request that is unknown, arrives in the wrong state, or repeats a one-shot
 * request ends the connection: that is a protocol violation, not a user error. A user error
 * (a bad plan) gets an "error" reply and the connection stays.
 *
 * Privileged operations done on a client's behalf, the closed list (each marked "Why this is
 * safe" where it happens):
 *   1. open_tree(OPEN_TREE_CLONE) of the requester's O_PATH fds   launcherd-mount.c
 *   2. cgroup directories and limits for the sandbox              launcherd-cgroup.c
 *   3. clone3() into new namespaces                               launcherd-sandbox.c
 *   4. mounts and pivot_root inside the child's namespaces        launcherd-mount.c
 *   5. lo up inside the child's new netns                         launcherd-net.c
 *   6. setgroups/setresgid/setresuid to the requester's identity  launcherd-apply.c
 *   7. signals to the requester's own sandboxes, via pidfd        launcherd-sandbox.c
 *   8. fresh network namespaces made ahead by a helper            launcherd-net.c
 * The identity in 6 and the ownership check in 7 come from SO_PEERCRED only. Requests reach us
 * through each connection's receiver (launcherd-screen.h), with only fds we can close without
 * waiting on anyone; a plan that names one it refused is answered "invalid-plan".
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/reaper.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-frame.h"
#include "ipc/ipc-json.h"
#include "ipc/ipc-peer.h"
#include "launcherd/launcherd-audit.h"
#include "launcherd/launcherd-landlock.h"
#include "launcherd/launcherd-plan.h"
#include "launcherd/launcherd-trace.h"
#include "launcherd/launcherd.h"

#define MAX_GROUPS 1024

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

enum launcher_req {
	LAUNCHER_REQ_HELLO,
	LAUNCHER_REQ_SPAWN,
	LAUNCHER_REQ_KILL,
};

typedef int (*launcher_answer_fn)(struct conn *c, int64_t seq, json_t *msg, int *fds, size_t n_fds);

static int launcher_answer_hello(struct conn *c, int64_t seq, json_t *msg, int *fds, size_t n_fds);
static int launcher_answer_spawn(struct conn *c, int64_t seq, json_t *msg, int *fds, size_t n_fds);
static int launcher_answer_kill(struct conn *c, int64_t seq, json_t *msg, int *fds, size_t n_fds);

static const struct {
	const char *type;
	enum launcher_req req;
	enum conn_state state; /* the only state in which the request is accepted */
	bool oneshot;
	launcher_answer_fn answer;
} dispatch_table[] = {
	{ "hello", LAUNCHER_REQ_HELLO, CONN_NEW, true, launcher_answer_hello },
	{ "spawn", LAUNCHER_REQ_SPAWN, CONN_READY, false, launcher_answer_spawn },
	{ "kill", LAUNCHER_REQ_KILL, CONN_READY, false, launcher_answer_kill },
};

/* --- output ------------------------------------------------------------------------------ */

struct out_msg {
	struct out_msg *next;
	json_t *msg;
	int fds[2];
	size_t n_fds;
};

static void out_msg_free(struct out_msg *m)
{
	json_decref(m->msg);
	close_many(m->fds, m->n_fds);
	free(m);
}

static int on_writable(struct event_source *src, int fd, uint32_t revents, void *userdata);

/* Watch the socket for room while replies wait (only then: requests come from the receiver). */
static int wait_writable(struct conn *c)
{
	if (c->wsrc)
		return 0;
	return event_add_io(c->d->loop, c->fd, EPOLLOUT, on_writable, c, &c->wsrc);
}

static int flush_queue(struct conn *c)
{
	while (c->outq) {
		struct out_msg *m = c->outq;
		int r = ipc_frame_send_json(c->fd, m->msg, m->fds, m->n_fds, MSG_DONTWAIT);

		if (r == -EAGAIN)
			return wait_writable(c);
		c->outq = m->next;
		if (!c->outq)
			c->outq_tail = &c->outq;
		c->n_outq--;
		out_msg_free(m);
		if (r < 0)
			return r;
		if (c->reading_paused && c->n_outq < CONN_OUTQ_RESUME) {
			r = event_source_set_events(c->src, EPOLLIN);
			if (r < 0)
				return r;
			c->reading_paused = false;
		}
	}
	event_source_free(c->wsrc);
	c->wsrc = NULL;
	return 0;
}

int conn_send(struct conn *c, json_t *msg, const int *fds, size_t n_fds)
{
	struct out_msg *m;

	if (c->closing)
		return -ENOTCONN;
	if (!c->outq) {
		int r = ipc_frame_send_json(c->fd, msg, fds, n_fds, MSG_DONTWAIT);

		if (r != -EAGAIN)
			return r;
	}
	/* The client is not reading: queue (fds duplicated) and wait for EPOLLOUT. */
	if (n_fds > ELEMENTSOF(m->fds))
		return -E2BIG;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->msg = json_incref(msg);
	for (size_t i = 0; i < n_fds; i++) {
		m->fds[i] = fd_dup_cloexec(fds[i], 3);
		if (m->fds[i] < 0) {
			int r = m->fds[i];

			m->n_fds = i;
			out_msg_free(m);
			return r;
		}
		m->n_fds = i + 1;
	}
	*c->outq_tail = m;
	c->outq_tail = &m->next;
	/* A requester that does not read its replies gets no more answered: we read its requests
	 * again once the queue has drained. (Messages of its sandboxes, "spawned" and "exit",
	 * are queued whatever the count: at most two for each sandbox the floor lets it have.) */
	if (++c->n_outq >= CONN_OUTQ_MAX && !c->reading_paused) {
		int r = event_source_set_events(c->src, 0);

		if (r < 0)
			return r;
		c->reading_paused = true;
	}
	return wait_writable(c);
}

int conn_send_error(struct conn *c, int64_t seq, const char *code, int error, const char *field,
		    const char *step, const char *fmt, ...)
{
	_cleanup_json_ json_t *m = NULL;
	char message[1024];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	m = json_pack("{s:s,s:I,s:s,s:i,s:s,s:s,s:s}", "type", "error", "seq", (json_int_t)seq,
		      "code", code, "errno", error < 0 ? -error : error, "field",
		      field ? field : "", "step", step ? step : "", "message", message);
	if (!m)
		return -ENOMEM;
	return conn_send(c, m, NULL, 0);
}

static int send_field_error(struct conn *c, int64_t seq, const char *code, int error,
			    const struct field_error *fe)
{
	return conn_send_error(c, seq, code, error, fe->field, "", "%s%s%s", fe->field,
			       *fe->field ? ": " : "", fe->reason);
}

/* --- answers ----------------------------------------------------------------------------- */

static int launcher_answer_hello(struct conn *c, int64_t seq, json_t *msg, int *fds, size_t n_fds)
{
	static const char *const keys[] = { "type", "seq", "version", NULL };
	struct launcherd *d = c->d;
	_cleanup_json_ json_t *reply = NULL, *unenforceable = NULL;
	struct field_error fe = { 0 };
	uint64_t version;
	int r;

	close_many(fds, n_fds);
	if (ipc_json_check_keys(msg, keys, "", &fe) < 0 ||
	    ipc_json_get_uint64(msg, "version", true, 1, INT32_MAX, "", &version, &fe) < 0) {
		(void)send_field_error(c, seq, "invalid-plan", EINVAL, &fe);
		return -EPROTO;
	}
	if (version != LAUNCHERD_PROTOCOL_VERSION) {
		(void)conn_send_error(c, seq, "invalid-plan", EPROTONOSUPPORT, "version", "",
				      "protocol version %llu not supported (launcherd speaks %d)",
				      (unsigned long long)version, LAUNCHERD_PROTOCOL_VERSION);
		return -EPROTO;
	}
	if (!floor_user_allowed(&d->floor, c->peer.uid, c->groups, c->n_groups)) {
		launcherd_trail_floor_refused(c, "hello", NULL, "floor-refused", "allow-list", "");
		(void)conn_send_error(c, seq, "floor-refused", EPERM, "", "",
				      "uid %u is not allowed by the admin floor",
				      (unsigned)c->peer.uid);
		return -EPERM;
	}

	/* What this launcherd cannot enforce, named as plan fields (for `policy explain`). */
	unenforceable = json_array();
	if (!unenforceable)
		return -ENOMEM;
	if (d->cgroup.kind == CGROUP_NONE)
		(void)json_array_append_new(unenforceable, json_string("cgroup.memoryMaxBytes"));
	if (d->landlock_abi < 1)
		(void)json_array_append_new(unenforceable, json_string("landlock"));
	else {
		if (d->landlock_abi < 4)
			(void)json_array_append_new(unenforceable, json_string("landlock.net"));
		if (d->landlock_abi < 6)
			(void)json_array_append_new(unenforceable, json_string("landlock.scope"));
	}

	reply = json_pack("{s:s,s:I,s:i,s:s,s:i,s:i,s:b,s:s,s:b,s:s,s:o,s:O}", "type", "hello",
			  "seq", (json_int_t)seq, "version", LAUNCHERD_PROTOCOL_VERSION, "mode",
			  d->mode == LAUNCHERD_PRIVILEGED ? "privileged" : "user", "uid",
			  (int)c->peer.uid, "landlockAbi", d->landlock_abi, "seccomp", 1, "cgroup",
			  cgroup_kind_to_string(d->cgroup.kind), "userns",
			  d->mode == LAUNCHERD_USER, "pidsLimit",
			  d->cgroup.kind != CGROUP_NONE ? "cgroup" : "rlimit-nproc", "floor",
			  floor_to_json(&d->floor), "unenforceable", unenforceable);
	if (!reply ||
	    json_object_set_new(reply, "denials", audit_hello(d->mode == LAUNCHERD_PRIVILEGED)) < 0)
		return -ENOMEM;
	r = conn_send(c, reply, NULL, 0);
	if (r < 0)
		return r;
	c->state = CONN_READY;
	return 0;
}

static int check_ceilings(struct conn *c, int64_t seq, const struct plan *p)
{
	const struct floor *f = &c->d->floor;
	uint64_t pids, memory;
	unsigned count;

	sandbox_usage(c->d, c->peer.uid, &count, &pids, &memory);
	if (count >= f->max_sandboxes) {
		launcherd_trail_floor_refused(c, "spawn", p, "limit", "per-user-max-sandboxes", "");
		return conn_send_error(c, seq, "limit", EAGAIN, "", "",
				       "per-user ceiling of %llu live sandboxes reached",
				       (unsigned long long)f->max_sandboxes);
	}
	if (f->pids_max && pids + p->pids_max > f->pids_max) {
		launcherd_trail_floor_refused(c, "spawn", p, "limit", "per-user-pids-max",
					      "plan.cgroup.pidsMax");
		return conn_send_error(c, seq, "limit", EAGAIN, "plan.cgroup.pidsMax", "",
				       "plan.cgroup.pidsMax: %llu more would exceed the per-user "
				       "ceiling of %llu (in use: %llu)",
				       (unsigned long long)p->pids_max,
				       (unsigned long long)f->pids_max, (unsigned long long)pids);
	}
	if (f->memory_max && memory + p->memory_max > f->memory_max) {
		launcherd_trail_floor_refused(c, "spawn", p, "limit", "per-user-memory-max",
					      "plan.cgroup.memoryMaxBytes");
		return conn_send_error(c, seq, "limit", EAGAIN, "plan.cgroup.memoryMaxBytes", "",
				       "plan.cgroup.memoryMaxBytes: %llu more would exceed the "
				       "per-user ceiling of %llu (in use: %llu)",
				       (unsigned long long)p->memory_max,
				       (unsigned long long)f->memory_max,
				       (unsigned long long)memory);
	}
	return 1;
}

/* Privileged mode: a plan may lower the requester's resource limits, never raise them. */
static int check_rlimits(const struct conn *c, const struct plan *plan, struct field_error *fe)
{
	if (c->d->mode != LAUNCHERD_PRIVILEGED)
		return 0; /* launcherd is the requester's own: it can raise nothing */
	for (size_t i = 0; i < plan->n_rlimits; i++) {
		const struct plan_rlimit *l = &plan->rlimits[i];
		rlim_t max = c->limits[l->resource].rlim_max;
		rlim_t want = l->value >= (uint64_t)INT64_MAX ? RLIM_INFINITY : (rlim_t)l->value;

		if (max != RLIM_INFINITY && (want == RLIM_INFINITY || want > max))
			return field_error_set(fe, -EPERM, "plan", "rlimits",
					       "%s %llu is above the requester's own hard limit "
					       "%llu",
					       plan_rlimit_name(l->resource),
					       (unsigned long long)l->value,
					       (unsigned long long)max);
	}
	return 0;
}

/* Refuse plan field path.key, which names fd k that the receiver refused: why, from its header. */
static int refused(struct field_error *fe, const struct screen_header *h, int k, const char *path,
		   const char *key)
{
	char why[256];

	return field_error_set(fe, -EBADF, path, key, "fd %d: %s", k,
			       screen_reason(h, (size_t)k, why, sizeof(why)));
}

/* An fd the plan uses that the receiver refused: the field that names it, and why. */
static int check_screened(const struct screen_header *h, const struct plan *plan,
			  struct field_error *fe)
{
	static const char *const stdio[] = { "stdin", "stdout", "stderr" };

	for (size_t i = 0; i < ELEMENTSOF(stdio); i++)
		if (plan->stdio[i] >= 0 && h->verdict[plan->stdio[i]] != SCREEN_OK)
			return refused(fe, h, plan->stdio[i], "plan.stdio", stdio[i]);
	for (size_t i = 0; i < plan->n_mounts; i++) {
		int k = plan->mounts[i].source;
		char path[64];

		if (plan->mounts[i].type != PLAN_MOUNT_BIND || h->verdict[k] == SCREEN_OK)
			continue;
		(void)snprintf(path, sizeof(path), "plan.mounts[%zu]", i);
		return refused(fe, h, k, path, "source");
	}
	if (plan->seccomp_program >= 0 && h->verdict[plan->seccomp_program] != SCREEN_OK)
		return refused(fe, h, plan->seccomp_program, "plan.seccomp", "program");
	if (plan->mount_ns >= 0 && h->verdict[plan->mount_ns] != SCREEN_OK)
		return refused(fe, h, plan->mount_ns, "plan", "mountNamespace");
	return 0;
}

static int launcher_answer_spawn(struct conn *c, int64_t seq, json_t *msg, int *fds, size_t n_fds)
{
	static const char *const keys[] = { "type", "seq", "plan", NULL };
	struct launcherd *d = c->d;
	_cleanup_plan_ struct plan *plan = NULL;
	struct seccomp_program filter = { 0 };
	struct field_error fe = { 0 };
	_cleanup_json_ json_t *unenforced = NULL;
	const char *step, *rule;
	json_t *pj;
	int r, index = -1;

	r = ipc_json_check_keys(msg, keys, "", &fe);
	if (r >= 0)
		r = ipc_json_get_object(msg, "plan", true, "", &pj, &fe);
	if (r >= 0)
		r = plan_parse(pj, n_fds, &plan, &fe);
	if (r == -ENOMEM)
		goto internal;
	if (r < 0) {
		r = send_field_error(c, seq, "invalid-plan", r, &fe);
		goto done;
	}
	r = check_screened(&c->screen, plan, &fe);
	if (r >= 0 && plan->mount_ns >= 0 && !fd_is_mount_ns(fds[plan->mount_ns]))
		r = field_error_set(&fe, -EINVAL, "plan", "mountNamespace",
				    "fd %d is not a mount namespace", plan->mount_ns);
	if (r >= 0)
		r = plan_check_fds(plan, fds, n_fds, &fe);
	if (r < 0) {
		r = send_field_error(c, seq, "invalid-plan", r, &fe);
		goto done;
	}
	if (plan->seccomp_program >= 0) {
		r = seccomp_program_read(fds[plan->seccomp_program], &filter);
		if (r < 0) {
			r = conn_send_error(c, seq, "invalid-plan", r, "plan.seccomp.program", "",
					    "plan.seccomp.program: not a regular file or memfd "
					    "holding 1..%d BPF instructions (%s)",
					    SECCOMP_PROGRAM_MAX_INSNS, strerror(-r));
			goto done;
		}
	}
	r = floor_check_plan_rule(&d->floor, plan, &rule, &fe);
	if (r < 0) {
		launcherd_trail_floor_refused(c, "spawn", plan, "floor-refused", rule, fe.field);
		r = send_field_error(c, seq, "floor-refused", r, &fe);
		goto done;
	}
	r = check_rlimits(c, plan, &fe);
	if (r < 0) {
		r = send_field_error(c, seq, "limit", r, &fe);
		goto done;
	}
	/* Nothing is silently best-effort: a limit we cannot enforce fails the spawn. */
	if (plan->memory_max && d->cgroup.kind == CGROUP_NONE) {
		r = conn_send_error(c, seq, "setup-failed", EOPNOTSUPP,
				    "plan.cgroup.memoryMaxBytes", "cgroup",
				    "plan.cgroup.memoryMaxBytes cannot be enforced: launcherd has "
				    "no writable cgroup hierarchy (user mode without a delegated "
				    "cgroup); drop the limit or use the system launcherd");
		goto done;
	}
	if (plan->has_landlock && plan->landlock_required && d->landlock_abi < 1) {
		r = conn_send_error(
			c, seq, "setup-failed", EOPNOTSUPP, "plan.landlock", "landlock",
			"plan.landlock is required but this kernel has no Landlock. "
			"Hint: boot with lsm=...,landlock (CONFIG_SECURITY_LANDLOCK=y)");
		goto done;
	}
	r = check_ceilings(c, seq, plan);
	if (r <= 0)
		goto done;
	if (launcherd_suid_dumpable_debug(d)) {
		r = conn_send_error(c, seq, "setup-failed", EPERM, "", "identity",
				    "refused: fs.suid_dumpable is 1, so the requester could ptrace "
				    "the set-up while it switches to the requester's uid. Hint: "
				    "sysctl fs.suid_dumpable=0 (or 2)");
		goto done;
	}

	launcherd_trace(NULL, "checked");
	unenforced = json_array();
	if (!unenforced || landlock_unenforced(plan, d->landlock_abi, unenforced) < 0) {
		r = -ENOMEM;
		goto internal;
	}
	r = sandbox_start(c, seq, &plan, fds, n_fds, &filter, unenforced, &step, &index);
	if (r == -ENOMEM || r == -EMFILE || r == -ENFILE)
		goto internal;
	if (r == -EXDEV && index >= 0) {
		char field[64];

		(void)snprintf(field, sizeof(field), "plan.mounts[%d].source", index);
		r = conn_send_error(c, seq, "setup-failed", r, field, step,
				    "%s lies in another mount namespace than launcherd's: the plan "
				    "must name the requester's in plan.mountNamespace",
				    field);
		goto done;
	}
	if (r < 0) {
		char field[64] = "";

		if (index >= 0)
			(void)snprintf(field, sizeof(field), "plan.mounts[%d]", index);
		r = conn_send_error(c, seq, "setup-failed", r, field, step,
				    "sandbox set-up failed at step \"%s\"%s%s: %s", step,
				    *field ? " for " : "", field, strerror(-r));
		goto done;
	}
	r = 0;
	goto done;

internal:
	r = conn_send_error(c, seq, "internal", r, "", "", "launcherd: %s", strerror(-r));
done:
	seccomp_program_done(&filter);
	/* The child has its copies; every fd of the message is closed here, named or not. */
	close_many(fds, n_fds);
	return r < 0 ? r : 0;
}

static int launcher_answer_kill(struct conn *c, int64_t seq, json_t *msg, int *fds, size_t n_fds)
{
	static const char *const keys[] = { "type", "seq", "sandbox", "signal", NULL };
	_cleanup_json_ json_t *reply = NULL;
	struct field_error fe = { 0 };
	const char *id;
	uint64_t sig = SIGKILL;
	struct sandbox *s;
	int r;

	close_many(fds, n_fds);
	r = ipc_json_check_keys(msg, keys, "", &fe);
	if (r >= 0)
		r = ipc_json_get_string(msg, "sandbox", true, "", &id, &fe);
	if (r >= 0)
		r = ipc_json_get_uint64(msg, "signal", false, 1, 64, "", &sig, &fe);
	if (r < 0)
		return send_field_error(c, seq, "invalid-plan", r, &fe);
	s = sandbox_find(c->d, id, c->peer.uid);
	if (!s)
		return conn_send_error(c, seq, "not-found", ESRCH, "sandbox", "",
				       "no sandbox \"%s\" of uid %u", id, (unsigned)c->peer.uid);
	r = sandbox_signal(s, (int)sig, KILL_REQUEST);
	if (r < 0)
		return conn_send_error(c, seq, "internal", r, "", "", "cannot signal: %s",
				       strerror(-r));
	reply = json_pack("{s:s,s:I}", "type", "ok", "seq", (json_int_t)seq);
	return reply ? conn_send(c, reply, NULL, 0) : -ENOMEM;
}

/* --- connections ------------------------------------------------------------------------- */

/* Returns < 0 when the connection must end. */
static int dispatch(struct conn *c, json_t *msg, int *fds, size_t n_fds)
{
	const char *type = json_string_value(json_object_get(msg, "type"));
	json_t *jseq = json_object_get(msg, "seq");
	int64_t seq;

	if (!type || !json_is_integer(jseq) || json_integer_value(jseq) < 1) {
		close_many(fds, n_fds);
		return -EPROTO;
	}
	seq = json_integer_value(jseq);
	for (size_t i = 0; i < ELEMENTSOF(dispatch_table); i++) {
		unsigned bit = 1U << dispatch_table[i].req;

		if (!streq(type, dispatch_table[i].type))
			continue;
		if (c->state != dispatch_table[i].state ||
		    (dispatch_table[i].oneshot && (c->oneshot_seen & bit))) {
			log_debug("uid %u: \"%s\" out of order: closing", (unsigned)c->peer.uid,
				  type);
			close_many(fds, n_fds);
			return -EPROTO;
		}
		if (dispatch_table[i].oneshot)
			c->oneshot_seen |= bit;
		return dispatch_table[i].answer(c, seq, msg, fds, n_fds);
	}
	log_debug("uid %u: unknown request \"%s\": closing", (unsigned)c->peer.uid, type);
	close_many(fds, n_fds);
	return -EPROTO;
}

static int on_writable(struct event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct conn *c = userdata;

	if (flush_queue(c) < 0)
		conn_close(c);
	return 0;
}

static int on_conn(struct event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct conn *c = userdata;
	_cleanup_json_ json_t *msg = NULL;
	int fds[IPC_MAX_FDS];
	size_t n_fds = 0;
	int r;

	launcherd_trace(NULL, "readable");
	if (c->reading_paused) {
		/* Only a hang-up wakes us now: the receiver is gone, so is the requester. */
		conn_close(c);
		return 0;
	}
	if (c->receiver >= 0)
		r = screen_recv(c->rfd, &msg, fds, &n_fds, &c->screen);
	else
		r = ipc_frame_recv_json(c->rfd, &msg, fds, IPC_MAX_FDS, &n_fds, MSG_DONTWAIT);
	if (r == -EAGAIN)
		return 0;
	launcherd_trace(NULL, "received");
	if (r <= 0) {
		/* EOF (the requester, hence its receiver, is gone), or a frame that broke the
		 * framing rules: the connection ends. */
		conn_close(c);
		return 0;
	}
	r = dispatch(c, msg, fds, n_fds);
	/* Every fd of the message is closed by now (each answer closes them): the receiver may
	 * close its copies, the last ones (launcherd-screen.h). */
	if (c->receiver >= 0 && c->screen.hold && r >= 0 && screen_done(c->rfd) < 0)
		r = -EPIPE;
	if (r < 0 && r != -ENOMEM)
		conn_close(c);
	return 0;
}

/* The peer user's groups from the system database, primary group first. */
static int lookup_groups(struct conn *c)
{
	struct passwd *pw = getpwuid(c->peer.uid);
	int n = MAX_GROUPS;

	c->groups = calloc(MAX_GROUPS, sizeof(gid_t));
	if (!c->groups)
		return -ENOMEM;
	if (!pw) {
		/* No passwd entry (a bare uid): the primary gid only, no supplementary groups. */
		c->groups[0] = c->peer.gid;
		c->n_groups = 1;
		return 0;
	}
	if (getgrouplist(pw->pw_name, c->peer.gid, c->groups, &n) < 0)
		return -E2BIG;
	c->n_groups = (size_t)n;
	return 0;
}

/* Without CAP_SYS_RESOURCE prlimit() cannot read another user's limits: /proc/PID/limits
 * (world-readable) lists them in RLIMIT_* order, a header line first, each value from column 26
 * on ("Max open files            1024                 524288               files"). */
static int proc_limits(pid_t pid, struct rlimit *limits)
{
	_cleanup_free_ char *text = NULL;
	char path[64];
	const char *line;
	int res = -1;
	int r;

	(void)snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	r = read_full_file(path, 8192, &text, NULL);
	if (r < 0)
		return r;
	for (line = text; line && res < RLIM_NLIMITS; res++) {
		char soft[32], hard[32];
		const char *nl = strchr(line, '\n');

		if (res >= 0) {
			if (strlen(line) < 27 || sscanf(line + 26, "%31s %31s", soft, hard) != 2)
				return -EBADMSG;
			limits[res].rlim_cur = streq(soft, "unlimited") ? RLIM_INFINITY
									: strtoull(soft, NULL, 10);
			limits[res].rlim_max = streq(hard, "unlimited") ? RLIM_INFINITY
									: strtoull(hard, NULL, 10);
		}
		line = nl ? nl + 1 : NULL;
	}
	return res == RLIM_NLIMITS ? 0 : -EBADMSG;
}

/*
 * Privileged mode: the requester's resource limits, read from the process that connected (its
 * pidfd from SO_PEERPIDFD, checked alive after the read, so that the pid was not reused), and
 * which of them differ from ours. A sandbox starts from these, never from launcherd's own:
 * an admin's per-user limits (pam_limits, a unit's Limit*=) hold in it as in the requester.
 */
static int read_peer_limits(struct conn *c, int sock)
{
	_cleanup_close_ int pidfd = -1;
	socklen_t len = sizeof(pidfd);
	bool by_proc = false;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
		return -errno;
	for (int res = 0; res < RLIM_NLIMITS; res++) {
		struct rlimit own;

		if (!by_proc && prlimit(c->peer.pid, res, NULL, &c->limits[res]) < 0) {
			int r = errno == EPERM ? proc_limits(c->peer.pid, c->limits) : -errno;

			if (r < 0)
				return r;
			by_proc = true;
		}
		if (getrlimit(res, &own) < 0)
			return -errno;
		if (own.rlim_cur != c->limits[res].rlim_cur ||
		    own.rlim_max != c->limits[res].rlim_max)
			c->limits_differ |= 1U << res;
	}
	/* Still the process that connected: the limits read were its own. */
	if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0)
		return -errno;
	return 0;
}

/* Kill a receiver and reap it once it has exited (it may first have to finish a close that
 * waits on a file system: launcherd-screen.h). */
static void receiver_stop(struct launcherd *d, int pidfd)
{
	if (pidfd < 0)
		return;
	(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	/* Cannot wait for it: a zombie until launcherd exits, rather than a blocked loop. */
	if (reap_later(d->loop, &d->reapers, pidfd) < 0)
		safe_close(pidfd);
}

void conn_receivers_release(struct launcherd *d)
{
	/* Reaped once gone (killed already: a moment at most), unless a close stalls one: then
	 * it dies with us (its parent-death signal) and init reaps it. */
	reapers_release(&d->reapers, 100);
}

static size_t conns_of(const struct launcherd *d, uid_t uid)
{
	size_t n = 0;

	for (const struct conn *c = d->conns; c; c = c->next)
		n += c->peer.uid == uid;
	return n;
}

int conn_new(struct launcherd *d, int fd)
{
	_cleanup_close_ int cfd = fd;
	struct conn *c;
	int r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->d = d;
	c->fd = c->rfd = c->receiver = -1;
	c->outq_tail = &c->outq;
	r = ipc_peer_cred(cfd, &c->peer);
	if (r >= 0 && d->mode == LAUNCHERD_USER && c->peer.uid != getuid())
		r = -EPERM; /* user mode cannot switch identities: serve our own user only */
	/* Each connection has a process of its own (its receiver): a bounded number per user. */
	if (r >= 0 && conns_of(d, c->peer.uid) >= LAUNCHERD_CONNS_PER_USER_MAX)
		r = -EUSERS;
	if (r >= 0)
		r = lookup_groups(c);
	if (r >= 0 && d->mode == LAUNCHERD_PRIVILEGED)
		r = read_peer_limits(c, cfd);
	/* Privileged mode: the requester's fds come through its receiver (launcherd-screen.h).
	 * User mode serves its own user only, whose stall would be its own: we read the socket
	 * ourselves (a second fd of it, for epoll) and take every fd, so that files on an NFS or
	 * FUSE home stay usable as stdio. */
	if (r >= 0 && d->mode == LAUNCHERD_PRIVILEGED)
		r = screen_start(cfd, d->devnull_fd, c->peer.uid, c->peer.gid, &c->rfd,
				 &c->receiver);
	else if (r >= 0) {
		c->rfd = fcntl(cfd, F_DUPFD_CLOEXEC, 3);
		r = c->rfd < 0 ? -errno : 0;
	}
	if (r >= 0)
		r = fd_set_nonblock(c->rfd, true);
	if (r >= 0)
		r = event_add_io(d->loop, c->rfd, EPOLLIN, on_conn, c, &c->src);
	if (r < 0) {
		safe_close(c->rfd);
		receiver_stop(d, c->receiver);
		free(c->groups);
		free(c);
		return r;
	}
	c->fd = TAKE_FD(cfd);
	c->next = d->conns;
	d->conns = c;
	log_debug("connection from uid %u pid %d", (unsigned)c->peer.uid, (int)c->peer.pid);
	return 0;
}

void conn_close(struct conn *c)
{
	struct launcherd *d = c->d;

	if (c->closing)
		return;
	c->closing = true;
	for (struct conn **p = &d->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	sandbox_detach_conn(d, c);
	audit_conn_closed(c); /* no denial is sent to it any more */
	event_source_free(c->src);
	event_source_free(c->wsrc);
	safe_close(c->rfd);
	receiver_stop(d, c->receiver);
	while (c->outq) {
		struct out_msg *m = c->outq;

		c->outq = m->next;
		out_msg_free(m);
	}
	safe_close(c->fd);
	free(c->groups);
	free(c);
	launcherd_maybe_exit(d);
}
