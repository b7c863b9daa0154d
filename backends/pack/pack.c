/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pack:<id>:<kind> — a backend contributed by an installed pack (SPEC §6). Each instance runs
 * the pack's executable as a process of its own, *confined*: it is spawned through the OS
 * launcher (cordon-launcherd, privileged or user mode, as builtin:auto finds it) under a policy
 * made for it — the embedded default with
 *   - its own pack directory read-only (and the system directories, as any sandbox),
 *   - a private writable state directory, <state>/pack-state/<id>/, as its workspace and cwd,
 *   - network "none" unless its manifest asks for "loopback" or "host" (the admin floor decides),
 *   - no environment but PATH and the variables of ours its manifest asks for,
 * and it dies with the instance (dieWithRequester). Its stdin and stdout are one end of a
 * socketpair; the controller speaks the launcher contract to it as newline-delimited JSON-RPC
 * 2.0 (docs/PROTOCOL.md, "Pack protocol"), passing stdio fds with SCM_RIGHTS. Every call has a
 * timeout; when the pack process dies (or breaks the protocol) its pending calls fail and the
 * instance is lost (the core's lost upcall).
 *
 * A pack never runs a command inside its own sandbox (its memory holds its secrets, its state
 * directory is its own). A pack that runs commands on this host answers spawn with "local": the
 * compiled plan the core gave is then spawned here, through the instance's own OS launcher
 * channel, as a sandbox of its own (its own pid namespace and Landlock domain), optionally with
 * its workspace taken from a directory below the pack's state directory (a transfer backend's
 * copy of the lease's tree). Those sandboxes' kills and exit reports go through the launcher, as
 * for builtin:auto. A pack that runs commands elsewhere (a remote engine) answers with the
 * sandbox it made and reports its end with an exited notification.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/backend-secrets.h"
#include "backends/backend-settings.h"
#include "backends/ctl-launcher.h"
#include "backends/pack/pack.h"
#include "common/event.h"
#include "ipc/ipc-jsonrpc.h"
#include "policy/policy-compile.h"
#include "proxy/proxy.h"

/* Outstanding host interactions one pack instance may have. */
#define PACK_INTERACTIONS_MAX 4

struct pack_inst;
typedef void (*pack_reply_cb)(struct pack_inst *pi, int r, json_t *result, json_t *error, void *ud);

struct pack_call {
	struct pack_call *next;
	struct pack_inst *pi;
	json_int_t id;
	char method[16];
	uint64_t origin; /* the client behind the call (host interactions go to it) */
	struct event_source *timer;
	pack_reply_cb cb;
	void *ud;
};

/* A sandbox the instance's launcher runs for a spawn the pack answered "local". */
struct local_sandbox {
	struct local_sandbox *next;
	char name[32];
};

struct spawn_req;

struct pack_inst {
	struct backend_instance *bi;
	unsigned long long last_progress; /* the last progress notification relayed */
	struct pack_backend *pb;
	struct ctl_launcher *l;
	struct event_source *lsrc;
	json_t *hello;
	json_t *reported; /* the hello as pack_hello() reports it, when it differs: NULL */
	char *sandbox;	  /* the pack process's own sandbox */
	struct proxy_listener *proxy; /* network "proxy": serves the pack process's own */
	struct jsonrpc_conn *conn;
	struct event_source *src;
	struct pack_call *calls;
	json_int_t next_id;
	bool gone;     /* the pack process or its channel is gone */
	bool stopping; /* we are ending it: its end is not a loss */
	unsigned interactions;
	/* configure: the request line (wipeable memory: it holds the secrets), sent once the
	 * process runs, and its completion. */
	char *configure_line;
	size_t configure_len;
	json_int_t configure_id;
	backend_done_cb configure_done;
	void *configure_ud;
	struct event_source *start_timer;
	struct spawn_req *launching;  /* local spawns sent to the launcher, not answered yet */
	struct local_sandbox *locals; /* local sandboxes running */
};

static struct pack_backend *pack_of(const struct backend_ops *ops)
{
	return (struct pack_backend *)ops;
}

static void pack_gone(struct pack_inst *pi, const char *why);
static void local_cancel_all(struct pack_inst *pi);
static bool local_exited(struct pack_inst *pi, const struct ctl_launcher_exit *e);

/* ------------------------------------------------------------------------- calls */

static void call_free(struct pack_call *call)
{
	event_source_free(call->timer);
	free(call);
}

static void call_unlink(struct pack_call *call)
{
	for (struct pack_call **p = &call->pi->calls; *p; p = &(*p)->next)
		if (*p == call) {
			*p = call->next;
			return;
		}
}

static void call_finish(struct pack_call *call, int r, json_t *result, json_t *error)
{
	call_unlink(call);
	if (call->cb)
		call->cb(call->pi, r, result, error, call->ud);
	call_free(call);
}

static int on_call_timeout(struct event_source *s, void *userdata)
{
	struct pack_call *call = userdata;

	log_warning("%s: the pack did not answer %s in time", call->pi->bi->name, call->method);
	call_finish(call, -ETIMEDOUT, NULL, NULL);
	return 0;
}

static int conn_update_events(struct pack_inst *pi)
{
	uint32_t ev = EPOLLIN | EPOLLRDHUP;

	if (jsonrpc_conn_queued_bytes(pi->conn) > 0)
		ev |= EPOLLOUT;
	return event_source_set_events(pi->src, ev);
}

static int pack_send(struct pack_inst *pi, json_t *msg, const int *fds, size_t n_fds)
{
	int r;

	if (!msg)
		return -ENOMEM;
	if (pi->gone || !pi->conn)
		return -ECONNRESET;
	r = jsonrpc_conn_send(pi->conn, msg, fds, n_fds);
	if (r == -EAGAIN)
		return conn_update_events(pi);
	return r;
}

static struct pack_call *call_register(struct pack_inst *pi, json_int_t id, const char *method,
				       unsigned timeout_ms, pack_reply_cb cb, void *ud)
{
	struct pack_call *call = calloc(1, sizeof(*call));

	if (!call)
		return NULL;
	call->pi = pi;
	call->id = id;
	(void)snprintf(call->method, sizeof(call->method), "%s", method);
	call->origin = pi->bi->origin_client;
	call->cb = cb;
	call->ud = ud;
	if (event_add_timer(pi->bi->host->loop, (uint64_t)timeout_ms * 1000ULL, false,
			    on_call_timeout, call, &call->timer) < 0) {
		free(call);
		return NULL;
	}
	call->next = pi->calls;
	pi->calls = call;
	return call;
}

/* Send a request (params stolen, fds borrowed); cb gets the answer, a timeout or the loss. */
static int pack_call(struct pack_inst *pi, const char *method, json_t *params, const int *fds,
		     size_t n_fds, unsigned timeout_ms, pack_reply_cb cb, void *ud)
{
	json_int_t id = ++pi->next_id;
	_cleanup_json_ json_t *msg = jsonrpc_request_new(id, method, params);
	struct pack_call *call;
	int r;

	if (!msg)
		return -ENOMEM;
	call = call_register(pi, id, method, timeout_ms, cb, ud);
	if (!call)
		return -ENOMEM;
	r = pack_send(pi, msg, fds, n_fds);
	if (r < 0) {
		call_unlink(call);
		call_free(call);
	}
	return r;
}

/* "message" of a pack's error object, for logs and activation steps. */
static const char *error_message(json_t *error, int r)
{
	const char *m = json_string_value(json_object_get(error, "message"));

	if (m)
		return m;
	if (r == -ETIMEDOUT)
		return "the pack did not answer in time";
	if (r == -ECONNRESET)
		return "the pack process exited";
	return strerror(r < 0 ? -r : EIO);
}

/* ------------------------------------------------------------------------- from the pack */

/* Progress of a long operation (an image pulled at prepare): a backend-progress event, display
 * text only, at most one every PROGRESS_INTERVAL_USEC per instance (the rest dropped). */
#define PROGRESS_INTERVAL_USEC (100ULL * 1000)

static void on_progress(struct pack_inst *pi, json_t *params)
{
	json_t *m = json_object_get(params, "message");
	unsigned long long now = now_usec();

	if (!json_is_string(m) || json_string_length(m) > 512 ||
	    !backend_text_is_safe(json_string_value(m), json_string_length(m))) {
		log_warning("%s: ignoring a progress notification that is not display text",
			    pi->bi->name);
		return;
	}
	if (now - pi->last_progress < PROGRESS_INTERVAL_USEC)
		return;
	pi->last_progress = now;
	pi->bi->host->event(pi->bi->host, "backend-progress",
			    json_pack("{s:s,s:s}", "launcher", pi->bi->name, "message",
				      json_string_value(m)));
}

static void on_exited(struct pack_inst *pi, json_t *params)
{
	static const char *const keys[] = { "sandbox", "exitCode",     "signal",
					    "reason",  "durationUsec", NULL };
	static const char *const reasons[] = { "exited", "signaled", "timeout",
					       "killed", "memory",   NULL };
	struct field_error fe = { 0 };
	const char *sandbox = NULL, *reason = NULL;
	int64_t code = 0, sig = 0, dur = 0;
	_cleanup_json_ json_t *exit = NULL;
	bool known = false;

	if (ipc_json_check_keys(params, keys, "params", &fe) < 0 ||
	    ipc_json_get_string(params, "sandbox", true, "params", &sandbox, &fe) < 0 ||
	    ipc_json_get_int64(params, "exitCode", false, 0, 255, "params", &code, &fe) < 0 ||
	    ipc_json_get_int64(params, "signal", false, 0, 64, "params", &sig, &fe) < 0 ||
	    ipc_json_get_string(params, "reason", true, "params", &reason, &fe) < 0 ||
	    ipc_json_get_int64(params, "durationUsec", false, 0, INT64_MAX, "params", &dur, &fe) <
		    0) {
		log_warning("%s: ignoring a malformed exited notification (%s: %s)", pi->bi->name,
			    fe.field, fe.reason);
		return;
	}
	for (const char *const *k = reasons; *k; k++)
		known = known || streq(*k, reason);
	if (!known) {
		log_warning("%s: ignoring an exited notification with reason \"%.32s\"",
			    pi->bi->name, reason);
		return;
	}
	exit = json_pack("{s:s,s:i,s:i,s:i,s:s,s:I,s:{s:b,s:b}}", "sandbox", sandbox, "pid", 0,
			 "exitCode", (int)code, "signal", (int)sig, "reason", reason,
			 "durationUsec", (json_int_t)dur, "limits", "pids", false, "memory",
			 streq(reason, "memory"));
	if (exit)
		pi->bi->host->exited(pi->bi->host, pi->bi, sandbox, exit);
}

struct interaction_req {
	struct backend_instance *bi; /* a reference while the question is out */
	json_t *id;
	bool secret;
};

static void interaction_answered(int r, json_t *answer, void *ud)
{
	struct interaction_req *ir = ud;
	struct pack_inst *pi = ir->bi->data;

	if (pi) {
		_cleanup_json_ json_t *msg = NULL;

		pi->interactions--;
		if (r >= 0 && ir->secret)
			/* The value went into the secret store; the pack gets it through
			 * configure at the next activation, never over this reply. */
			msg = jsonrpc_result_new(
				ir->id, json_pack("{s:O?,s:O?}", "configured",
						  json_object_get(answer, "configured"), "changed",
						  json_object_get(answer, "changed")));
		else if (r >= 0)
			msg = jsonrpc_result_new(ir->id, json_deep_copy(answer));
		else
			msg = jsonrpc_error_new(ir->id,
						r == -ETIMEDOUT ? CORDON_ERR_TIMEOUT
								: CORDON_ERR_UNAVAILABLE,
						r == -ETIMEDOUT ? "no answer in time"
								: "the interaction could not be "
								  "presented",
						NULL);
		if (!pi->gone)
			(void)pack_send(pi, msg, NULL, 0);
	}
	json_decref(ir->id);
	backend_instance_unref(ir->bi);
	free(ir);
}

/* The client an interaction belongs to: the call it names, else the oldest pending call's, else
 * the activation's. */
static uint64_t interaction_origin(struct pack_inst *pi, json_t *params)
{
	json_t *req = json_object_get(params, "request");
	uint64_t origin = pi->bi->origin_client;

	for (struct pack_call *call = pi->calls; call; call = call->next) {
		if (json_is_integer(req) && json_integer_value(req) == call->id)
			return call->origin;
		if (call->origin)
			origin = call->origin;
	}
	return origin;
}

static void on_interaction(struct pack_inst *pi, json_t *id, json_t *params)
{
	static const char *const keys[] = { "kind", "prompt", "options", "field", "request", NULL };
	struct field_error fe = { 0 };
	const char *kind = NULL, *field = NULL;
	_cleanup_json_ json_t *ask = NULL, *err = NULL;
	struct interaction_req *ir;
	uint64_t origin;
	int r;

	if (ipc_json_check_keys(params, keys, "params", &fe) < 0 ||
	    ipc_json_get_string(params, "kind", true, "params", &kind, &fe) < 0 ||
	    ipc_json_get_string(params, "field", false, "params", &field, &fe) < 0) {
		err = jsonrpc_error_field_new(id, JSONRPC_INVALID_PARAMS, &fe);
		(void)pack_send(pi, err, NULL, 0);
		return;
	}
	origin = interaction_origin(pi, params);
	ask = json_object();
	if (ask && json_object_get(params, "prompt"))
		(void)json_object_set(ask, "prompt", json_object_get(params, "prompt"));
	if (ask && json_object_get(params, "options"))
		(void)json_object_set(ask, "options", json_object_get(params, "options"));
	if (ask && streq(kind, "secret-input"))
		/* Only a secret field of this very backend: a pack never fills another's. */
		(void)json_object_set_new(ask, "backend", json_string(pi->bi->ref));
	if (ask && field)
		(void)json_object_set_new(ask, "field", json_string(field));
	ir = calloc(1, sizeof(*ir));
	if (!ask || !ir) {
		free(ir);
		return;
	}
	ir->bi = backend_instance_ref(pi->bi);
	ir->id = json_incref(id);
	ir->secret = streq(kind, "secret-input");
	r = origin == 0 ? -ESRCH
	    : pi->interactions >= PACK_INTERACTIONS_MAX
		    ? -EBUSY
		    : pi->bi->host->ask(pi->bi->host, origin, kind, ask,
					PACK_INTERACTION_TIMEOUT_MS, interaction_answered, ir);
	if (r < 0) {
		log_info("%s: a %s interaction cannot be presented: %s", pi->bi->name, kind,
			 r == -ESRCH ? "no client is waiting on this operation" : strerror(-r));
		err = jsonrpc_error_new(
			id, r == -EINVAL ? JSONRPC_INVALID_PARAMS : CORDON_ERR_UNAVAILABLE,
			r == -EINVAL ? "invalid interaction"
				     : "the interaction could not be presented",
			NULL);
		(void)pack_send(pi, err, NULL, 0);
		json_decref(ir->id);
		backend_instance_unref(ir->bi);
		free(ir);
		return;
	}
	pi->interactions++;
}

static void pack_message(struct pack_inst *pi, json_t *msg)
{
	struct field_error fe = { 0 };
	enum jsonrpc_kind kind;
	const char *method = NULL;
	json_t *id = NULL, *body = NULL;

	if (jsonrpc_classify(msg, &kind, &method, &id, &body, &fe) < 0) {
		pack_gone(pi, "the pack broke the protocol (not a JSON-RPC 2.0 message)");
		return;
	}
	switch (kind) {
	case JSONRPC_KIND_RESULT:
	case JSONRPC_KIND_ERROR:
		for (struct pack_call *call = pi->calls; call; call = call->next)
			if (json_is_integer(id) && json_integer_value(id) == call->id) {
				if (kind == JSONRPC_KIND_RESULT)
					call_finish(call, 0, body, NULL);
				else
					call_finish(call, -EIO, NULL, body);
				return;
			}
		log_debug("%s: an answer to no pending call", pi->bi->name);
		return;
	case JSONRPC_KIND_REQUEST:
		if (streq(method, "interaction") && json_is_object(body)) {
			on_interaction(pi, id, body);
		} else {
			_cleanup_json_ json_t *e = jsonrpc_error_new(id, JSONRPC_METHOD_NOT_FOUND,
								     "no such method", NULL);

			(void)pack_send(pi, e, NULL, 0);
		}
		return;
	case JSONRPC_KIND_NOTIFICATION:
		if (streq(method, "exited") && json_is_object(body))
			on_exited(pi, body);
		else if (streq(method, "progress") && json_is_object(body))
			on_progress(pi, body);
		else
			log_debug("%s: ignoring the notification \"%.32s\"", pi->bi->name, method);
		return;
	}
}

static int on_pack_io(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct pack_inst *pi = userdata;
	bool eof = false;

	if (revents & EPOLLOUT) {
		int r = jsonrpc_conn_flush(pi->conn);

		if (r < 0 && r != -EAGAIN)
			eof = true;
	}
	if (revents & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR)) {
		ssize_t n = jsonrpc_conn_fill(pi->conn);

		if (n == 0 || (n < 0 && n != -EAGAIN))
			eof = true;
	}
	while (!pi->gone) {
		_cleanup_json_ json_t *msg = NULL;
		int fds[IPC_MAX_FDS];
		size_t n_fds = 0;
		struct field_error fe = { 0 };
		int r = jsonrpc_conn_next(pi->conn, &msg, fds, &n_fds, &fe);

		if (r == 0)
			break;
		close_many(fds, n_fds); /* nothing the pack sends carries fds */
		if (r < 0) {
			pack_gone(pi, "the pack broke the protocol (a line that is not a JSON "
				      "object, or too long)");
			return 0;
		}
		pack_message(pi, msg);
	}
	if (pi->gone)
		return 0;
	if (eof) {
		pack_gone(pi, "the pack closed its channel");
		return 0;
	}
	return conn_update_events(pi);
}

/* ------------------------------------------------------------------------- start and loss */

static void configure_complete(struct pack_inst *pi, int r, const char *message)
{
	backend_done_cb done = pi->configure_done;

	event_source_free(pi->start_timer);
	pi->start_timer = NULL;
	backend_secret_free(pi->configure_line);
	pi->configure_line = NULL;
	pi->configure_done = NULL;
	if (done)
		done(pi->bi, r, message, pi->configure_ud);
}

static void pack_gone(struct pack_inst *pi, const char *why)
{
	struct backend_instance *bi = pi->bi;

	if (pi->gone)
		return;
	pi->gone = true;
	event_source_free(pi->src);
	pi->src = NULL;
	if (!pi->stopping)
		log_warning("%s: %s", bi->name, why);
	while (pi->calls)
		call_finish(pi->calls, -ECONNRESET, NULL, NULL);
	/* Before the loss is reported: the core forgets the processes still starting. */
	local_cancel_all(pi);
	if (pi->configure_done) {
		configure_complete(pi, -ECONNRESET, why);
		return;
	}
	if (!pi->stopping)
		bi->host->lost(bi->host, bi);
}

static void on_launcher_exit(struct ctl_launcher *l, const struct ctl_launcher_exit *e, void *ud)
{
	struct pack_inst *pi = ud;
	char why[160];

	if (local_exited(pi, e))
		return;
	if (!pi->sandbox || !streq(pi->sandbox, e->sandbox))
		return;
	(void)snprintf(why, sizeof(why), "the pack process ended (%s, code %d, signal %d)",
		       e->reason, e->exit_code, e->signal);
	pack_gone(pi, why);
}

static int on_launcher_io(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct pack_inst *pi = userdata;
	int r = ctl_launcher_process(pi->l);

	if (r < 0) {
		event_source_free(pi->lsrc);
		pi->lsrc = NULL;
		pack_gone(pi, "lost the launcher that confines the pack");
	}
	return 0;
}

static int on_start_timeout(struct event_source *s, void *userdata)
{
	struct pack_inst *pi = userdata;

	pi->stopping = true;
	pack_gone(pi, "the pack process did not start in time");
	return 0;
}

static void configure_answered(struct pack_inst *pi, int r, json_t *result, json_t *error, void *ud)
{
	configure_complete(pi, r, r < 0 ? error_message(error, r) : NULL);
}

static void on_pack_spawned(struct ctl_launcher *l, const char *sandbox, int pidfd, pid_t pid,
			    int proxy_fd, const struct ctl_launcher_error *err, void *userdata)
{
	struct pack_inst *pi = userdata;
	char msg[1400];
	int r;

	safe_close(pidfd);
	if (!pi->configure_done) {
		safe_close(proxy_fd);
		return; /* timed out meanwhile */
	}
	if (proxy_fd >= 0 && pi->pb->domains) {
		/* Network "proxy": the pack reaches its own API's domains, nothing else. */
		_cleanup_proxy_rules_ struct proxy_rules *rules = NULL;
		const char *bad = NULL;

		r = proxy_rules_new(pi->pb->domains, NULL, NULL, 0, NULL, &rules, &bad);
		if (r >= 0)
			r = proxy_listener_new(pi->bi->host->loop, TAKE_FD(proxy_fd), rules, NULL,
					       NULL, NULL, &pi->proxy);
		if (r < 0)
			log_warning_errno(r, "%s: cannot serve the pack process's proxy (%s): %m",
					  pi->bi->name, bad ? bad : "");
	}
	safe_close(proxy_fd);
	if (!sandbox) {
		(void)snprintf(msg, sizeof(msg), "cannot start the pack process: %s%s%s%s",
			       err ? err->message : "unknown error",
			       err && *err->step ? " (step " : "", err ? err->step : "",
			       err && *err->step ? ")" : "");
		pi->gone = true;
		configure_complete(pi, err ? ctl_launcher_error_to_errno(err->code) : -EIO, msg);
		return;
	}
	pi->sandbox = strdup(sandbox);
	log_info("%s: pack process started in sandbox %s", pi->bi->name, sandbox);
	r = event_add_io(pi->bi->host->loop, jsonrpc_conn_fd(pi->conn), EPOLLIN | EPOLLRDHUP,
			 on_pack_io, pi, &pi->src);
	if (r >= 0 && !call_register(pi, pi->configure_id, "configure", PACK_CONFIGURE_TIMEOUT_MS,
				     configure_answered, NULL))
		r = -ENOMEM;
	/* The first line on a fresh channel: written at once, from wipeable memory. */
	if (r >= 0)
		r = loop_write(jsonrpc_conn_fd(pi->conn), pi->configure_line, pi->configure_len);
	backend_secret_free(pi->configure_line);
	pi->configure_line = NULL;
	if (r < 0) {
		while (pi->calls)
			call_finish(pi->calls, r, NULL, NULL);
		if (pi->configure_done)
			configure_complete(pi, r, "cannot talk to the pack process");
	}
}

/* The pack process's own policy, compiled for the launcher that will run it: its own directory
 * read-only, its state as its workspace, its network (with proxy: only its own API's domains),
 * and the host sockets it asked for that the admin floor lists (else it does not start). */
static int compile_pack_plan(struct pack_inst *pi, const char *state_dir,
			     struct compiled_plan **ret, struct field_error *fe)
{
	struct backend_host *h = pi->bi->host;
	struct pack_backend *pb = pi->pb;
	_cleanup_json_ json_t *patch = NULL;
	json_t *allowed = json_object_get(json_object_get(pi->hello, "floor"), "packSockets");
	char *argv[] = { pb->executable, NULL };
	char *envp[PACK_ENV_MAX + 2] = { (char *)"PATH=/usr/local/bin:/usr/bin:/bin" };
	_cleanup_strv_free_ char **extra = calloc(PACK_ENV_MAX + 1, sizeof(char *));
	size_t n = 0;
	json_t *read, *net, *pass;

	/* env.pass replaces the default's allowlist (compile's rule for a patch's env.pass). */
	patch = json_pack("{s:{s:[s],s:{s:s,s:s}},s:{s:s},s:{s:[s]}}", "filesystem", "read",
			  pb->dir, "workspace", "path", state_dir, "access", "read-write",
			  "network", "mode", pack_network_to_string(pb->network), "env", "pass",
			  "PATH");
	if (!patch || !extra)
		return -ENOMEM;
	/* The variables of ours its manifest asks for (the pack was enabled by a person who
	 * saw them), when set. */
	pass = json_object_get(json_object_get(patch, "env"), "pass");
	for (char **e = pb->env; e && *e && n < PACK_ENV_MAX; e++) {
		const char *v = getenv(*e);

		if (!v)
			continue;
		extra[n] = strdup_printf("%s=%s", *e, v);
		envp[n + 1] = extra[n];
		if (!extra[n++] || json_array_append_new(pass, json_string(*e)) < 0)
			return -ENOMEM;
	}
	read = json_object_get(json_object_get(patch, "filesystem"), "read");
	for (char **sock = pb->sockets; sock && *sock; sock++) {
		bool listed = false;
		size_t i;
		json_t *v;

		json_array_foreach(allowed, i, v)
			listed |= streq_ptr(json_string_value(v), *sock);
		if (!listed)
			return field_error_set(
				fe, -EPERM, "hostSockets", NULL,
				"the admin floor does not list \"%s\" in packSockets", *sock);
		/* A socket is connected to through a read-only bind: connect() needs no write
		 * access to the mount, only to the socket's inode. */
		if (json_array_append_new(read, json_string(*sock)) < 0)
			return -ENOMEM;
	}
	net = json_object_get(patch, "network");
	if (pb->domains) {
		json_t *doms = json_array();

		for (char **d = pb->domains; *d; d++)
			if (!doms || json_array_append_new(doms, json_string(*d)) < 0)
				return -ENOMEM;
		if (json_object_set_new(net, "allowDomains", doms) < 0)
			return -ENOMEM;
	}
	return h->compile(h, patch, argv, envp, state_dir, pi->hello, ret, fe);
}

/* Compile the pack process's plan and ask the launcher to start it; on_pack_spawned()
 * continues. */
static int pack_spawn_process(struct pack_inst *pi, char *msg, size_t msg_size)
{
	_cleanup_(compiled_plan_freep) struct compiled_plan *cp = NULL;
	_cleanup_free_ char *state_dir = NULL;
	struct field_error fe = { 0 };
	int sp[2], k, r;

	r = pack_store_state_dir(pi->pb->provider->store, pi->pb->pack_id, true, &state_dir);
	if (r < 0) {
		(void)snprintf(msg, msg_size, "cannot make the pack's state directory: %s",
			       strerror(-r));
		return r;
	}
	r = compile_pack_plan(pi, state_dir, &cp, &fe);
	if (r < 0) {
		(void)snprintf(msg, msg_size, "cannot confine the pack: %s: %s", fe.field,
			       fe.reason);
		return r;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return -errno;
	r = jsonrpc_conn_new(sp[0], &pi->conn);
	if (r < 0) {
		safe_close(sp[1]);
		return r;
	}
	(void)fd_set_nonblock(sp[0], true);
	k = compiled_plan_add_fd(cp, sp[1], "pack-channel");
	if (k < 0)
		return k;
	(void)json_object_set_new(cp->plan, "stdio",
				  json_pack("{s:i,s:i}", "stdin", k, "stdout", k));
	k = compiled_plan_add_fd(cp, fd_dup_cloexec(STDERR_FILENO, 3), "stderr");
	if (k >= 0)
		(void)json_object_set_new(json_object_get(cp->plan, "stdio"), "stderr",
					  json_integer(k));
	(void)json_object_set_new(cp->plan, "cwd", json_string(state_dir));
	r = ctl_launcher_spawn_async(pi->l, cp->plan, cp->fds, cp->n_fds, on_pack_spawned, pi);
	if (r < 0)
		(void)snprintf(msg, msg_size, "cannot ask the launcher to start the pack: %s",
			       strerror(-r));
	return r;
}

/*
 * A refusal in one of the instance's sandboxes (docs/DENIALS.md): launcherd sends a sandbox's
 * denials to its requester alone, here this instance's own launcher link, whose sandboxes are
 * the pack process's and the local ones. A local sandbox's go to the user's stream as
 * builtin:auto's do, naming the sandbox as its spawn event did ("instance"); they may trail its
 * exit report, so they are told by not being the pack process's own. Those of the pack process
 * (before its spawn answer it is the only sandbox there) are the pack's, not the user's.
 */
static void on_launcher_denial(struct ctl_launcher *l, json_t *denial, void *ud)
{
	struct pack_inst *pi = ud;
	const char *sb = json_string_value(json_object_get(denial, "instance"));

	(void)l;
	if (!sb || !pi->sandbox || streq(sb, pi->sandbox)) {
		json_decref(denial);
		return;
	}
	pi->bi->host->event(pi->bi->host, "denial", denial);
}

/* The host's denial reader sees a refusal only in a sandbox of the host's launcher: the pack's
 * local sandboxes, hence a pack whose commands' isolation is the namespace one. A container, a
 * VM or a remote service refuses out of its sight: its hello says so (events.subscribe's
 * denialsReader, cordon doctor), so that no client waits for denials that cannot come. */
static int pack_reported_hello(struct pack_inst *pi)
{
	enum backend_isolation iso = pi->bi->claims.isolation;
	json_t *dn;

	if (iso == BACKEND_ISOLATION_NAMESPACE ||
	    !json_is_true(json_object_get(json_object_get(pi->hello, "denials"), "reader")))
		return 0;
	dn = json_pack("{s:b,s:s++,s:s}", "reader", false, "reason",
		       "the backend's commands run in ",
		       iso == BACKEND_ISOLATION_VM	    ? "a VM"
		       : iso == BACKEND_ISOLATION_CONTAINER ? "a container"
							    : "a remote service",
		       " (its claims): the host's denial reader sees none of their refusals",
		       "hint",
		       "a backend whose commands run in the host's own sandboxes (builtin:auto)");
	pi->reported = json_deep_copy(pi->hello);
	if (!dn || !pi->reported) {
		json_decref(dn);
		return -ENOMEM;
	}
	/* (dn is the object's even when this fails) */
	return json_object_set_new(pi->reported, "denials", dn) < 0 ? -ENOMEM : 0;
}

/* The launcher answered hello: the pack's policy can be compiled for it. */
static void on_pack_hello(struct ctl_launcher *l, json_t *info,
			  const struct ctl_launcher_error *err, void *userdata)
{
	struct pack_inst *pi = userdata;
	char msg[1400] = "";
	int r;

	if (!pi->configure_done)
		return; /* timed out meanwhile */
	r = backend_launcher_hello_check(pi->bi, info, err, msg, sizeof(msg));
	if (r >= 0) {
		pi->hello = json_incref(info);
		r = pack_reported_hello(pi);
	}
	if (r >= 0)
		r = pack_spawn_process(pi, msg, sizeof(msg));
	if (r < 0) {
		pi->gone = true;
		configure_complete(pi, r, *msg ? msg : strerror(-r));
	}
}

/* Start the launcher that confines the pack process, without waiting for it: on_pack_hello()
 * continues, all of it under one start timeout. */
static int pack_start(struct pack_inst *pi, char *msg, size_t msg_size)
{
	struct backend_host *h = pi->bi->host;
	int r;

	r = backend_launcher_open(pi->bi, &pi->l, msg, msg_size);
	if (r < 0)
		return r;
	ctl_launcher_set_exit_handler(pi->l, on_launcher_exit, pi);
	ctl_launcher_set_denial_handler(pi->l, on_launcher_denial, pi);
	r = event_add_io(h->loop, ctl_launcher_fd(pi->l), EPOLLIN, on_launcher_io, pi, &pi->lsrc);
	if (r < 0)
		return r;
	r = event_add_timer(h->loop, PACK_START_TIMEOUT_MS * 1000ULL, false, on_start_timeout, pi,
			    &pi->start_timer);
	if (r < 0)
		return r;
	return ctl_launcher_hello_async(pi->l, on_pack_hello, pi);
}

/* ------------------------------------------------------------------------- backend ops */

static json_t *pack_descriptor(const struct backend_ops *ops)
{
	return json_deep_copy(pack_of(ops)->descriptor);
}

/* The configure request as one line in wipeable memory; secrets (borrowed) are not kept. The
 * pack gets the effective settings: the candidate's values over the descriptor's defaults. */
static int configure_line(struct pack_inst *pi, json_t *settings, json_t *secrets)
{
	_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL;
	_cleanup_json_ json_t *msg = NULL, *effective = NULL, *none = json_object();
	int r;
	size_t n;

	if (!none)
		return -ENOMEM;
	r = backend_descriptor_from_json(pi->pb->descriptor, 0, "descriptor", &d, NULL);
	if (r < 0)
		return r;
	r = backend_settings_effective(d, settings, &effective);
	if (r < 0)
		return r;
	pi->configure_id = ++pi->next_id;
	msg = jsonrpc_request_new(pi->configure_id, "configure",
				  json_pack("{s:s,s:O,s:O}", "instance", pi->bi->name, "settings",
					    effective, "secrets", secrets ? secrets : none));
	if (!msg)
		return -ENOMEM;
	n = json_dumpb(msg, NULL, 0, JSON_COMPACT);
	if (n == 0)
		return -ENOMEM;
	pi->configure_line = backend_secret_alloc(n + 1);
	if (!pi->configure_line)
		return -ENOMEM;
	if (json_dumpb(msg, pi->configure_line, n, JSON_COMPACT) != n)
		return -ENOMEM;
	pi->configure_line[n] = '\n';
	pi->configure_len = n + 1;
	/* msg referenced the caller's secret strings (O: a reference, not a copy); dropping it
	 * leaves them to the caller, who wipes them. */
	return 0;
}

static void pack_configure(struct backend_instance *bi, json_t *settings, json_t *secrets,
			   backend_done_cb done, void *ud)
{
	struct pack_inst *pi = calloc(1, sizeof(*pi));
	char msg[1400] = "";
	int r;

	if (!pi) {
		done(bi, -ENOMEM, "out of memory", ud);
		return;
	}
	pi->bi = bi;
	pi->pb = pack_of(bi->ops);
	bi->data = pi;
	r = configure_line(pi, settings, secrets);
	if (r < 0) {
		backend_secret_free(TAKE_PTR(pi->configure_line));
		done(bi, r, r == -ENOMEM ? "out of memory" : "cannot build the configure request",
		     ud);
		return;
	}
	pi->configure_done = done;
	pi->configure_ud = ud;
	r = pack_start(pi, msg, sizeof(msg));
	if (r < 0) {
		pi->gone = true;
		configure_complete(pi, r, *msg ? msg : strerror(-r));
	}
}

struct step_req {
	backend_done_cb done;
	void *ud;
	bool probe;
};

static void step_answered(struct pack_inst *pi, int r, json_t *result, json_t *error, void *ud)
{
	struct step_req *sr = ud;
	const char *reason = NULL;

	if (r >= 0 && sr->probe) {
		json_t *avail = json_object_get(result, "available");

		reason = json_string_value(json_object_get(result, "reason"));
		if (!json_is_boolean(avail))
			r = -EBADMSG, reason = "the pack's isAvailable answer has no boolean "
					       "\"available\"";
		else if (!json_is_true(avail))
			r = -ENODEV, reason = reason ? reason : "the pack says it is unavailable";
	}
	sr->done(pi->bi, r, r < 0 ? (reason ? reason : error_message(error, r)) : NULL, sr->ud);
	free(sr);
}

static void pack_step(struct backend_instance *bi, const char *method, unsigned timeout_ms,
		      bool probe, backend_done_cb done, void *ud)
{
	struct pack_inst *pi = bi->data;
	struct step_req *sr = calloc(1, sizeof(*sr));
	int r;

	if (!sr) {
		done(bi, -ENOMEM, "out of memory", ud);
		return;
	}
	*sr = (struct step_req){ done, ud, probe };
	r = pi && !pi->gone
		    ? pack_call(pi, method, json_object(), NULL, 0, timeout_ms, step_answered, sr)
		    : -ECONNRESET;
	if (r < 0) {
		free(sr);
		done(bi, r, r == -ECONNRESET ? "the pack process is gone" : strerror(-r), ud);
	}
}

static void pack_prepare(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	pack_step(bi, "prepare", PACK_PREPARE_TIMEOUT_MS, false, done, ud);
}

static void pack_probe(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	pack_step(bi, "isAvailable", PACK_PROBE_TIMEOUT_MS, true, done, ud);
}

static json_t *pack_hello(struct backend_instance *bi)
{
	struct pack_inst *pi = bi->data;

	/* The floor and capabilities of the OS launcher that confines the pack (and whether
	 * denials can come: pack_reported_hello()). */
	return !pi ? NULL : pi->reported ? pi->reported : pi->hello;
}

/* ------------------------------------------------------------------------- spawn */

/* A spawn request while the pack decides, and while a local sandbox is being started. */
struct spawn_req {
	struct spawn_req *next; /* in pi->launching */
	struct pack_inst *pi;
	backend_spawn_cb cb;
	void *ud;
	json_t *plan;	      /* a copy of the compiled plan */
	int fds[IPC_MAX_FDS]; /* copies of its fds */
	size_t n_fds;
	char *ws_mount; /* where the command sees its workspace; NULL: no workspace */
	bool cancelled; /* the callback ran already: a sandbox started now is killed */
};

static void spawn_req_free(struct spawn_req *sr)
{
	if (!sr)
		return;
	json_decref(sr->plan);
	close_many(sr->fds, sr->n_fds);
	free(sr->ws_mount);
	free(sr);
}

/* A launcher-style error object for the spawn callback. */
static json_t *spawn_error(const char *code, int err, const char *step, const char *message)
{
	return json_pack("{s:s,s:i,s:s,s:s,s:s}", "code", code, "errno", err, "field", "", "step",
			 step, "message", message);
}

static struct local_sandbox *local_find(struct pack_inst *pi, const char *sandbox, bool take)
{
	for (struct local_sandbox **pp = &pi->locals; *pp; pp = &(*pp)->next) {
		struct local_sandbox *ls = *pp;

		if (!streq(ls->name, sandbox))
			continue;
		if (take)
			*pp = ls->next;
		return ls;
	}
	return NULL;
}

/* A local sandbox's exit report: to the core, as builtin:auto reports one. */
static bool local_exited(struct pack_inst *pi, const struct ctl_launcher_exit *e)
{
	struct local_sandbox *ls = local_find(pi, e->sandbox, true);
	_cleanup_json_ json_t *j = NULL;

	if (!ls)
		return false;
	free(ls);
	j = json_pack("{s:s,s:i,s:i,s:i,s:s,s:I,s:{s:b,s:b}}", "sandbox", e->sandbox, "pid",
		      (int)e->pid, "exitCode", e->exit_code, "signal", e->signal, "reason",
		      e->reason, "durationUsec", (json_int_t)e->duration_usec, "limits", "pids",
		      e->limit_pids, "memory", e->limit_memory);
	if (j)
		pi->bi->host->exited(pi->bi->host, pi->bi, e->sandbox, j);
	return true;
}

static void local_cancel_all(struct pack_inst *pi)
{
	for (struct spawn_req *sr = pi->launching; sr; sr = sr->next) {
		_cleanup_json_ json_t *lerr = NULL;

		if (sr->cancelled)
			continue;
		sr->cancelled = true;
		lerr = spawn_error("launcher-lost", ECONNRESET, "pack",
				   "the pack's instance ended while the command was starting");
		sr->cb(pi->bi, NULL, -1, -1, 0, lerr, sr->ud);
	}
}

static void local_spawned(struct ctl_launcher *l, const char *sandbox, int pidfd, pid_t pid,
			  int proxy_fd, const struct ctl_launcher_error *err, void *userdata)
{
	struct spawn_req *sr = userdata;
	struct pack_inst *pi = sr->pi;
	_cleanup_json_ json_t *e = NULL;
	struct local_sandbox *ls;

	for (struct spawn_req **pp = &pi->launching; *pp; pp = &(*pp)->next)
		if (*pp == sr) {
			*pp = sr->next;
			break;
		}
	if (sr->cancelled) {
		/* Nobody takes it any more. */
		if (sandbox)
			(void)ctl_launcher_kill_async(l, sandbox, SIGKILL);
		safe_close(pidfd);
		safe_close(proxy_fd);
		spawn_req_free(sr);
		return;
	}
	if (err)
		e = json_pack("{s:s,s:i,s:s,s:s,s:s}", "code", err->code, "errno", err->error,
			      "field", err->field, "step", err->step, "message", err->message);
	else {
		/* Its exit report and kills go through this instance's launcher. */
		ls = calloc(1, sizeof(*ls));
		if (ls) {
			(void)snprintf(ls->name, sizeof(ls->name), "%s", sandbox);
			ls->next = pi->locals;
			pi->locals = ls;
		} else
			log_error("%s: out of memory: the exit of sandbox %s will not be reported",
				  pi->bi->name, sandbox);
	}
	sr->cb(pi->bi, sandbox, pidfd, proxy_fd, pid, e, sr->ud);
	spawn_req_free(sr);
}

/* path relative to base ("" for base itself), or NULL when path is not base or below it. */
static const char *path_below(const char *path, const char *base)
{
	size_t n = strlen(base);

	if (streq(base, "/"))
		return path[0] == '/' ? path + 1 : NULL;
	if (strncmp(path, base, n) != 0 || (path[n] && path[n] != '/'))
		return NULL;
	return path[n] ? path + n + 1 : "";
}

/*
 * The local answer's workspace: the plan's workspace bind takes its source from dir (a directory
 * strictly below the pack's state directory, reached without a symlink), and what the plan binds
 * from the host below the workspace (host-executed paths kept read-only, read and write grants
 * under it) is dropped with its Landlock rules: the command sees the pack's copy of the tree, and
 * nothing of the host's through it. Deny entries stay.
 */
static int local_workspace(struct spawn_req *sr, const char *dir, char *msg, size_t msg_size)
{
	struct pack_inst *pi = sr->pi;
	_cleanup_free_ char *state_dir = NULL;
	_cleanup_close_ int state_fd = -1, fd = -1;
	json_t *mounts = json_object_get(sr->plan, "mounts");
	json_t *rules = json_object_get(json_object_get(sr->plan, "landlock"), "fs");
	const char *rel;
	json_int_t source = -1;
	int r;

	if (pi->bi->claims.workspace != BACKEND_ATTACH_TRANSFER) {
		(void)snprintf(msg, msg_size, "a local workspace is for a transfer backend only");
		return -EPERM;
	}
	if (!sr->ws_mount) {
		(void)snprintf(msg, msg_size, "a local workspace for a request without one");
		return -EINVAL;
	}
	r = pack_store_state_dir(pi->pb->provider->store, pi->pb->pack_id, false, &state_dir);
	if (r < 0) {
		(void)snprintf(msg, msg_size, "the pack has no state directory");
		return r;
	}
	rel = path_is_normalized(dir) ? path_below(dir, state_dir) : NULL;
	if (!rel || !*rel) {
		(void)snprintf(msg, msg_size,
			       "the local workspace \"%.256s\" is not below the pack's state "
			       "directory",
			       dir);
		return -EPERM;
	}
	state_fd = open(state_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (state_fd < 0)
		return -errno;
	fd = fd_openat2(state_fd, rel, O_PATH | O_DIRECTORY,
			RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
				RESOLVE_NO_XDEV);
	if (fd < 0) {
		(void)snprintf(
			msg, msg_size,
			"the local workspace \"%.256s\" is not a directory reached without a "
			"symlink: %s",
			dir, strerror(-fd));
		return fd;
	}
	for (size_t i = 0; i < json_array_size(mounts);) {
		json_t *m = json_array_get(mounts, i);
		const char *type = json_string_value(json_object_get(m, "type"));
		const char *target = json_string_value(json_object_get(m, "target"));
		const char *below = target ? path_below(target, sr->ws_mount) : NULL;

		if (type && streq(type, "bind") && below && !*below) {
			source = json_integer_value(json_object_get(m, "source"));
			i++;
		} else if (type && (streq(type, "bind") || streq(type, "symlink")) && below)
			(void)json_array_remove(mounts, i);
		else
			i++;
	}
	if (source < 0 || (size_t)source >= sr->n_fds) {
		(void)snprintf(msg, msg_size, "the plan has no workspace bind at \"%.256s\"",
			       sr->ws_mount);
		return -EINVAL;
	}
	for (size_t i = 0; i < json_array_size(rules);) {
		const char *path =
			json_string_value(json_object_get(json_array_get(rules, i), "path"));
		const char *below = path ? path_below(path, sr->ws_mount) : NULL;

		if (below && *below)
			(void)json_array_remove(rules, i);
		else
			i++;
	}
	safe_close(sr->fds[source]);
	sr->fds[source] = TAKE_FD(fd);
	return 0;
}

/* An env entry a local answer may add: CORDON_PACK_<[A-Z0-9_]+>=value, a name no program gives
 * a meaning to. */
static bool local_env_ok(const char *e)
{
	const char *p;

	if (!e || !startswith(e, "CORDON_PACK_") || strlen(e) > 4096)
		return false;
	for (p = e + strlen("CORDON_PACK_"); *p && *p != '='; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return *p == '=' && p > e + strlen("CORDON_PACK_");
}

static int local_env(struct spawn_req *sr, json_t *env, char *msg, size_t msg_size)
{
	json_t *envp = json_object_get(sr->plan, "envp");
	size_t i;
	json_t *v;

	if (!env)
		return 0;
	if (!json_is_array(env) || json_array_size(env) > 32) {
		(void)snprintf(msg, msg_size, "local.env is not an array of at most 32 strings");
		return -EINVAL;
	}
	if (!envp) {
		envp = json_array();
		if (!envp || json_object_set_new(sr->plan, "envp", envp) < 0)
			return -ENOMEM;
	}
	json_array_foreach(env, i, v) {
		const char *e = json_string_value(v);
		size_t n, k;
		json_t *old;

		if (!local_env_ok(e)) {
			(void)snprintf(msg, msg_size,
				       "local.env[%zu] is not CORDON_PACK_<NAME>=<value>", i);
			return -EINVAL;
		}
		n = (size_t)(strchr(e, '=') - e) + 1;
		json_array_foreach(envp, k, old)
			if (json_string_value(old) && strncmp(json_string_value(old), e, n) == 0)
				break;
		if (k < json_array_size(envp) ? json_array_set(envp, k, v) < 0
					      : json_array_append(envp, v) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The pack answered "local": start the plan on the instance's launcher. */
static void local_start(struct spawn_req *sr, json_t *local)
{
	static const char *const keys[] = { "workspace", "env", NULL };
	struct pack_inst *pi = sr->pi;
	struct field_error fe = { 0 };
	const char *dir = NULL;
	_cleanup_json_ json_t *lerr = NULL;
	char msg[600] = "";
	int r;

	if (!json_is_object(local))
		r = -EINVAL, (void)snprintf(msg, sizeof(msg), "\"local\" is not an object");
	else if (ipc_json_check_keys(local, keys, "local", &fe) < 0 ||
		 ipc_json_get_string(local, "workspace", false, "local", &dir, &fe) < 0)
		r = -EINVAL, (void)snprintf(msg, sizeof(msg), "%s: %s", fe.field, fe.reason);
	else
		r = local_env(sr, json_object_get(local, "env"), msg, sizeof(msg));
	if (r >= 0 && dir)
		r = local_workspace(sr, dir, msg, sizeof(msg));
	if (r >= 0 && (!pi->l || pi->gone))
		r = -ECONNRESET, (void)snprintf(msg, sizeof(msg), "the pack's instance ended");
	if (r >= 0) {
		sr->next = pi->launching;
		pi->launching = sr;
		r = ctl_launcher_spawn_async(pi->l, sr->plan, sr->fds, sr->n_fds, local_spawned,
					     sr);
		if (r >= 0) {
			/* The launcher has its copies: EOF on the pipes comes when the sandbox
			 * ends. */
			close_many(sr->fds, sr->n_fds);
			sr->n_fds = 0;
			return;
		}
		pi->launching = sr->next;
		(void)snprintf(msg, sizeof(msg), "cannot ask the launcher to start the command: %s",
			       strerror(-r));
	}
	log_warning("%s: a local spawn failed: %s", pi->bi->name, msg);
	lerr = spawn_error("setup-failed", -r, "pack", msg);
	sr->cb(pi->bi, NULL, -1, -1, 0, lerr, sr->ud);
	spawn_req_free(sr);
}

static void spawn_answered(struct pack_inst *pi, int r, json_t *result, json_t *error, void *ud)
{
	struct spawn_req *sr = ud;
	const char *sandbox = json_string_value(json_object_get(result, "sandbox"));
	json_t *local = json_object_get(result, "local");
	_cleanup_json_ json_t *lerr = NULL;

	if (r >= 0 && local && !sandbox) {
		local_start(sr, local);
		return;
	}
	if (r >= 0 && (local || !sandbox || strlen(sandbox) == 0 || strlen(sandbox) > 64)) {
		r = -EBADMSG;
		sandbox = NULL;
	}
	if (r < 0) {
		json_t *data = json_object_get(error, "data");
		const char *code = json_string_value(json_object_get(data, "code"));

		/* A pack's own error: its code if it is one of the launcher's, else setup-failed;
		 * a timeout or a lost pack: no launcher error (backend-failed). */
		if (error)
			lerr = json_pack(
				"{s:s,s:i,s:s,s:s,s:s}", "code",
				code && (streq(code, "exec-failed") ||
					 streq(code, "setup-failed") || streq(code, "limit"))
					? code
					: "setup-failed",
				"errno", (int)json_integer_value(json_object_get(data, "errno")),
				"field", "", "step",
				json_string_value(json_object_get(data, "step")) ?: "pack",
				"message", error_message(error, r));
		else if (r == -EBADMSG)
			lerr = spawn_error("setup-failed", EBADMSG, "pack",
					   "the pack's spawn answer has not exactly one of a valid "
					   "\"sandbox\" and \"local\"");
		sr->cb(pi->bi, NULL, -1, -1, 0, lerr, sr->ud);
	} else
		sr->cb(pi->bi, sandbox, -1, -1,
		       (pid_t)json_integer_value(json_object_get(result, "pid")), NULL, sr->ud);
	spawn_req_free(sr);
}

/* The spawn's workspace as the pack is told it, or JSON null. */
static json_t *workspace_json(const struct backend_workspace *ws, bool with_host)
{
	if (!ws || !ws->host_path)
		return json_null();
	return json_pack("{s:s?,s:s,s:s,s:s?}", "hostPath", with_host ? ws->host_path : NULL,
			 "mountPoint", ws->mount_point ? ws->mount_point : ws->host_path, "access",
			 ws->read_only ? "read-only" : "read-write", "cwd", ws->cwd);
}

static int pack_spawn(struct backend_instance *bi, const struct backend_spawn *req,
		      backend_spawn_cb cb, void *ud)
{
	static const char *const plan_keys[] = { "argv",      "envp",	 "cwd",	   "network",
						 "timeoutMs", "rlimits", "cgroup", NULL };
	static const char *const stdio_names[] = { "stdin", "stdout", "stderr" };
	struct pack_inst *pi = bi->data;
	json_t *stdio = json_object_get(req->plan, "stdio");
	_cleanup_json_ json_t *p = NULL, *io = NULL, *params = NULL;
	struct spawn_req *sr;
	int pass[3];
	size_t n_pass = 0;
	int r;

	if (!pi || pi->gone)
		return -ENODEV;
	if (req->n_fds > IPC_MAX_FDS)
		return -E2BIG;
	/* What the pack is told: never the plan's mount sources or seccomp program. Only the
	 * stdio fds go over. */
	p = json_object();
	io = json_object();
	if (!p || !io)
		return -ENOMEM;
	for (const char *const *k = plan_keys; *k; k++)
		if (json_object_get(req->plan, *k))
			(void)json_object_set(p, *k, json_object_get(req->plan, *k));
	for (size_t i = 0; i < ELEMENTSOF(stdio_names); i++) {
		json_t *v = json_object_get(stdio, stdio_names[i]);
		json_int_t k = json_is_integer(v) ? json_integer_value(v) : -1;

		if (k < 0 || (size_t)k >= req->n_fds)
			continue;
		pass[n_pass] = req->fds[k];
		(void)json_object_set_new(io, stdio_names[i], json_integer((json_int_t)n_pass));
		n_pass++;
	}
	params = json_pack("{s:O,s:O,s:s?,s:o}", "plan", p, "stdio", io, "lease", req->lease,
			   "workspace", workspace_json(req->workspace, true));
	sr = calloc(1, sizeof(*sr));
	if (!params || !sr) {
		free(sr);
		return -ENOMEM;
	}
	*sr = (struct spawn_req){ .pi = pi, .cb = cb, .ud = ud };
	/* Kept for a local answer: the whole plan and copies of its fds. */
	sr->plan = json_deep_copy(req->plan);
	if (req->workspace && req->workspace->host_path)
		sr->ws_mount = strdup(req->workspace->mount_point ? req->workspace->mount_point
								  : req->workspace->host_path);
	if (!sr->plan || (req->workspace && req->workspace->host_path && !sr->ws_mount)) {
		spawn_req_free(sr);
		return -ENOMEM;
	}
	for (size_t i = 0; i < req->n_fds; i++) {
		int d = fd_dup_cloexec(req->fds[i], 3);

		if (d < 0) {
			spawn_req_free(sr);
			return d;
		}
		sr->fds[sr->n_fds++] = d;
	}
	r = pack_call(pi, "spawn", TAKE_PTR(params), pass, n_pass, PACK_SPAWN_TIMEOUT_MS,
		      spawn_answered, sr);
	if (r < 0)
		spawn_req_free(sr);
	return r;
}

static void kill_answered(struct pack_inst *pi, int r, json_t *result, json_t *error, void *ud)
{
	if (r < 0)
		log_warning("%s: kill failed: %s", pi->bi->name, error_message(error, r));
}

static int pack_kill(struct backend_instance *bi, const char *sandbox, int sig)
{
	struct pack_inst *pi = bi->data;

	if (pi && pi->l && local_find(pi, sandbox, false))
		/* Never waits for the launcher: the event loop serves every client. */
		return ctl_launcher_kill_async(pi->l, sandbox, sig);
	if (!pi || pi->gone)
		return -ENODEV;
	return pack_call(pi, "kill", json_pack("{s:s,s:i}", "sandbox", sandbox, "signal", sig),
			 NULL, 0, PACK_KILL_TIMEOUT_MS, kill_answered, NULL);
}

/* ------------------------------------------------------------------------- leases */

/* The pack knows no such call (an error "method not found"). */
static bool method_unknown(int r, json_t *error)
{
	return r == -EIO &&
	       json_integer_value(json_object_get(error, "code")) == JSONRPC_METHOD_NOT_FOUND;
}

struct lease_req {
	backend_acquire_cb acquired;
	backend_done_cb released;
	void *ud;
};

static void acquire_answered(struct pack_inst *pi, int r, json_t *result, json_t *error, void *ud)
{
	struct lease_req *lr = ud;
	const char *mp = json_string_value(json_object_get(result, "mountPoint"));
	bool transfer = pi->bi->claims.workspace == BACKEND_ATTACH_TRANSFER;
	const char *msg = NULL;

	if (method_unknown(r, error) && !transfer)
		r = 0; /* nothing to do per lease */
	else if (method_unknown(r, error))
		msg = "the pack does not implement acquire, which a transfer backend needs";
	else if (r >= 0 && mp && (!path_is_normalized(mp) || mp[0] != '/'))
		r = -EBADMSG, msg = "the pack's acquire answer has an invalid \"mountPoint\"";
	else if (r < 0)
		msg = error_message(error, r);
	if (r < 0)
		log_warning("%s: acquire failed: %s", pi->bi->name, msg);
	lr->acquired(pi->bi, r, msg, r >= 0 ? mp : NULL, lr->ud);
	free(lr);
}

static void pack_acquire(struct backend_instance *bi, const char *lease,
			 const struct backend_workspace *ws, int archive_fd,
			 backend_acquire_cb done, void *ud)
{
	struct pack_inst *pi = bi->data;
	struct lease_req *lr = calloc(1, sizeof(*lr));
	int r;

	if (!lr) {
		safe_close(archive_fd);
		done(bi, -ENOMEM, "out of memory", NULL, ud);
		return;
	}
	*lr = (struct lease_req){ .acquired = done, .ud = ud };
	r = pi && !pi->gone ? pack_call(pi, "acquire",
					json_pack("{s:s,s:o}", "lease", lease, "workspace",
						  workspace_json(ws, false)),
					&archive_fd, archive_fd >= 0 ? 1 : 0,
					PACK_ACQUIRE_TIMEOUT_MS, acquire_answered, lr)
			    : -ECONNRESET;
	/* The pack has its copy (or none): the controller's writer sees EPIPE if it goes. */
	safe_close(archive_fd);
	if (r < 0) {
		free(lr);
		done(bi, r, r == -ECONNRESET ? "the pack process is gone" : strerror(-r), NULL, ud);
	}
}

static void release_answered(struct pack_inst *pi, int r, json_t *result, json_t *error, void *ud)
{
	struct lease_req *lr = ud;
	bool transfer = pi->bi->claims.workspace == BACKEND_ATTACH_TRANSFER;
	const char *msg = NULL;

	if (method_unknown(r, error) && !transfer)
		r = 0;
	else if (method_unknown(r, error))
		msg = "the pack does not implement release, which a transfer backend needs";
	else if (r < 0)
		msg = error_message(error, r);
	if (r < 0)
		log_warning("%s: release failed: %s", pi->bi->name, msg);
	lr->released(pi->bi, r, msg, lr->ud);
	free(lr);
}

static void pack_release(struct backend_instance *bi, const char *lease, int archive_fd,
			 backend_done_cb done, void *ud)
{
	struct pack_inst *pi = bi->data;
	struct lease_req *lr;
	int r;

	if (!pi || pi->gone) {
		safe_close(archive_fd);
		/* A direct lease has nothing left at a pack that is gone; a transfer lease's tree
		 * went with it. */
		if (bi->claims.workspace == BACKEND_ATTACH_TRANSFER)
			done(bi, -ECONNRESET, "the pack process is gone with the lease's workspace",
			     ud);
		else
			done(bi, 0, NULL, ud);
		return;
	}
	lr = calloc(1, sizeof(*lr));
	if (!lr) {
		safe_close(archive_fd);
		done(bi, -ENOMEM, "out of memory", ud);
		return;
	}
	*lr = (struct lease_req){ .released = done, .ud = ud };
	r = pack_call(pi, "release", json_pack("{s:s}", "lease", lease), &archive_fd,
		      archive_fd >= 0 ? 1 : 0, PACK_RELEASE_TIMEOUT_MS, release_answered, lr);
	/* Ours closed at once: the controller's reader sees the end once the pack closes its
	 * copy. */
	safe_close(archive_fd);
	if (r < 0) {
		free(lr);
		done(bi, r, strerror(-r), ud);
	}
}

/* End the pack process: closing the launcher channel kills its sandbox (dieWithRequester). */
static void pack_stop(struct pack_inst *pi)
{
	pi->stopping = true;
	pack_gone(pi, "stopped");
	pi->proxy = proxy_listener_free(pi->proxy);
	event_source_free(pi->lsrc);
	pi->lsrc = NULL;
	backend_launcher_reap_later(pi->bi->host, pi->l);
	/* Closing the channel ends the local sandboxes too (dieWithRequester); the spawns still
	 * at the launcher were answered by pack_gone(). */
	ctl_launcher_free(pi->l);
	pi->l = NULL;
	while (pi->launching) {
		struct spawn_req *sr = pi->launching;

		pi->launching = sr->next;
		spawn_req_free(sr);
	}
	while (pi->locals) {
		struct local_sandbox *ls = pi->locals;

		pi->locals = ls->next;
		free(ls);
	}
}

struct dispose_req {
	backend_done_cb done;
	void *ud;
	struct backend_instance *bi;
	struct event_source *timer;
	int r;
	char message[256];
};

/* The completion runs from a timer of its own: it may free the instance, which must not happen
 * inside the instance's own channel callback. */
static int dispose_complete(struct event_source *s, void *userdata)
{
	struct dispose_req *dr = userdata;

	event_source_free(dr->timer);
	dr->done(dr->bi, dr->r, dr->r < 0 ? dr->message : NULL, dr->ud);
	free(dr);
	return 0;
}

static void dispose_answered(struct pack_inst *pi, int r, json_t *result, json_t *error, void *ud)
{
	struct dispose_req *dr = ud;

	/* A failed dispose keeps the process for the next attempt. */
	if (r >= 0)
		pack_stop(pi);
	dr->r = r;
	(void)snprintf(dr->message, sizeof(dr->message), "%s", error_message(error, r));
	if (event_add_timer(pi->bi->host->loop, 1, false, dispose_complete, dr, &dr->timer) < 0) {
		/* Out of memory: leave the instance (and its process, if it failed) be. */
		log_error("%s: cannot complete the disposal", pi->bi->name);
		free(dr);
	}
}

static void pack_dispose_async(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	struct pack_inst *pi = bi->data;
	struct dispose_req *dr;
	int r;

	if (!pi || pi->gone) {
		if (pi)
			pack_stop(pi);
		done(bi, 0, NULL, ud);
		return;
	}
	dr = calloc(1, sizeof(*dr));
	if (!dr) {
		done(bi, -ENOMEM, "out of memory", ud);
		return;
	}
	*dr = (struct dispose_req){ .done = done, .ud = ud, .bi = bi };
	bi->origin_client = 0;
	r = pack_call(pi, "dispose", json_object(), NULL, 0, PACK_DISPOSE_TIMEOUT_MS,
		      dispose_answered, dr);
	if (r < 0) {
		free(dr);
		pack_stop(pi);
		done(bi, 0, NULL, ud);
	}
}

static int pack_dispose(struct backend_instance *bi)
{
	struct pack_inst *pi = bi->data;

	if (pi)
		pack_stop(pi);
	return 0;
}

static void pack_free(struct backend_instance *bi)
{
	struct pack_inst *pi = bi->data;

	if (!pi)
		return;
	pack_stop(pi);
	event_source_free(pi->start_timer);
	backend_secret_free(pi->configure_line);
	jsonrpc_conn_free(pi->conn);
	json_decref(pi->hello);
	json_decref(pi->reported);
	free(pi->sandbox);
	free(pi);
	bi->data = NULL;
}

/* ------------------------------------------------------------------------- construction */

int pack_backend_new(struct pack_provider *pp, const struct pack_entry *e,
		     const struct pack_backend_entry *be, struct pack_backend **ret)
{
	struct pack_backend *pb = calloc(1, sizeof(*pb));

	if (!pb)
		return -ENOMEM;
	pb->provider = pp;
	pb->generation = e->generation;
	(void)snprintf(pb->pack_id, sizeof(pb->pack_id), "%s", e->manifest->id);
	(void)snprintf(pb->kind, sizeof(pb->kind), "%s", be->kind);
	pb->dir = strdup(e->dir);
	pb->executable = strdup_printf("%s/%s", e->dir, e->manifest->executable);
	pb->network = e->manifest->network;
	if ((e->manifest->domains && !(pb->domains = strv_copy(e->manifest->domains))) ||
	    (e->manifest->env && !(pb->env = strv_copy(e->manifest->env)))) {
		pack_backend_free(pb);
		return -ENOMEM;
	}
	for (size_t i = 0; i < e->manifest->n_sockets; i++) {
		size_t n = strv_length(pb->sockets);
		char **l = realloc(pb->sockets, (n + 2) * sizeof(char *));

		if (!l) {
			pack_backend_free(pb);
			return -ENOMEM;
		}
		pb->sockets = l;
		l[n] = strdup(e->manifest->sockets[i].path);
		l[n + 1] = NULL;
		if (!l[n]) {
			pack_backend_free(pb);
			return -ENOMEM;
		}
	}
	pb->descriptor = json_deep_copy(be->descriptor_json);
	if (!pb->dir || !pb->executable || !pb->descriptor) {
		pack_backend_free(pb);
		return -ENOMEM;
	}
	pb->ops = (struct backend_ops){
		.source = "pack",
		.pack_id = pb->pack_id,
		.kind = pb->kind,
		.confined = true,
		.descriptor = pack_descriptor,
		.configure = pack_configure,
		.prepare = pack_prepare,
		.probe = pack_probe,
		.hello = pack_hello,
		.spawn = pack_spawn,
		.acquire = pack_acquire,
		.release = pack_release,
		.kill = pack_kill,
		.dispose = pack_dispose,
		.dispose_async = pack_dispose_async,
		.free = pack_free,
	};
	*ret = pb;
	return 0;
}

void pack_backend_free(struct pack_backend *pb)
{
	if (!pb)
		return;
	free(pb->dir);
	free(pb->executable);
	strv_free(pb->domains);
	strv_free(pb->env);
	strv_free(pb->sockets);
	json_decref(pb->descriptor);
	free(pb);
}
