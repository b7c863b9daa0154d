/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Leases: sandbox.acquire, .release, .list. A sandbox is a policy resolved once for a
 * workspace, an optional trusted setup hook that must succeed (it runs on every acquisition,
 * never cached), then any number of processes that run under that policy or a narrowing of it,
 * until release kills what is left.
 * A sandbox acquired with a parent may only narrow the parent's policy; a widening is refused
 * with the field named.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "backends/workspace-transfer.h"
#include "common/system.h"
#include "common/util.h"
#include "controller/controller-sandbox.h"
#include "controller/controller.h"
#include "ipc/ipc-json.h"
#include "policy/policy-model.h"

static void sandbox_free(struct sandbox *s)
{
	if (s->setup_process)
		controller_process_forget_callback(s->ctl, s->setup_process);
	free(s->setup_process);
	json_decref(s->acquire_id);
	json_decref(s->release_id);
	json_decref(s->setup);
	json_decref(s->doc);
	json_decref(s->transfer_report);
	event_source_free(s->release_timer);
	policy_free(s->policy);
	ws_snapshot_free(s->snapshot);
	free(s->mount_point);
	backend_instance_unref(s->bi);
	free(s->parent);
	free(s);
}

static void sandbox_unlink(struct sandbox *s)
{
	for (struct sandbox **pp = &s->ctl->sandboxes; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			return;
		}
}

static bool attaches_by_transfer(const struct sandbox *s)
{
	return s->bi && s->bi->claims.workspace == BACKEND_ATTACH_TRANSFER &&
	       s->policy->fs.workspace.present;
}

/* The lease is over: answer whoever waits for the release, forget the sandbox. */
static void lease_gone(struct sandbox *s, int r, const char *message)
{
	struct controller *c = s->ctl;
	struct client *cl = s->releaser ? controller_client_find(c, s->releaser) : NULL;

	controller_event(c, "sandbox-release",
			 json_pack("{s:s,s:b,s:s?,s:O?}", "sandboxId", s->id, "ok", r >= 0, "error",
				   r < 0 ? message : NULL, "workspace", s->transfer_report));
	sandbox_unlink(s);
	if (cl && r >= 0)
		(void)client_reply(cl, s->release_id,
				   json_pack("{s:b,s:O?}", "released", true, "workspace",
					     s->transfer_report));
	else if (cl)
		(void)client_reply_error(cl, s->release_id, CORDON_ERR_BACKEND, message,
					 json_pack("{s:s,s:O?}", "sandboxId", s->id, "workspace",
						   s->transfer_report));
	sandbox_free(s);
}

/* Two completions of a release (the backend's, and the reconcile's for a transfer lease). */
struct release_wait {
	struct sandbox *s;
	unsigned pending;
	int r;
	char message[512];
};

static void release_step(struct release_wait *rw, int r, const char *message)
{
	if (r < 0 && rw->r >= 0) {
		rw->r = r;
		(void)snprintf(rw->message, sizeof(rw->message), "%s",
			       message ? message : strerror(-r));
	}
	if (--rw->pending > 0)
		return;
	lease_gone(rw->s, rw->r, rw->message);
	free(rw);
}

static void released_backend(struct backend_instance *bi, int r, const char *message, void *ud)
{
	release_step(ud, r, message);
}

static void reconciled(struct controller *c, int r, struct ws_snapshot *snap, json_t *report,
		       void *ud)
{
	struct release_wait *rw = ud;

	json_decref(rw->s->transfer_report);
	rw->s->transfer_report = json_incref(report);
	release_step(rw, r,
		     r == -EBADMSG ? "the backend's workspace archive is malformed: "
				     "nothing was changed on the host"
				   : "the workspace could not be reconciled");
}

/* How long a release waits for the lease's killed processes to be reported gone before the
 * backend's release runs anyway. */
#define RELEASE_WAIT_USEC (10ULL * 1000 * 1000)
#define RELEASE_POLL_USEC (20ULL * 1000)

static void release_backend(struct sandbox *s);

static int on_release_poll(struct event_source *src, void *userdata)
{
	struct sandbox *s = userdata;

	if (controller_processes_group_live(s->ctl, s->id) && now_usec() < s->release_deadline) {
		(void)event_timer_set(src, RELEASE_POLL_USEC, false);
		return 0;
	}
	release_backend(s);
	return 0;
}

/*
 * Kill what is left and end the lease: once its processes are reported gone (a transfer backend
 * must not pack a tree still being written), the backend's release (for a transfer lease: the
 * backend's tar of its tree comes back and the host workspace is reconciled with it), then the
 * sandbox is forgotten. Completes through lease_gone().
 */
static void sandbox_release(struct sandbox *s)
{
	struct controller *c = s->ctl;

	if (s->releasing)
		return;
	if (s->acquiring) {
		/* The backend is acquiring: its release follows once it answered. */
		s->release_pending = true;
		s->ready = false;
		return;
	}
	s->releasing = true;
	s->ready = false;
	controller_processes_kill_group(c, s->id);
	if (s->backend_acquired && s->bi->ops->release &&
	    controller_processes_group_live(c, s->id)) {
		s->release_deadline = now_usec() + RELEASE_WAIT_USEC;
		if (event_add_timer(c->host.loop, RELEASE_POLL_USEC, false, on_release_poll, s,
				    &s->release_timer) >= 0)
			return;
	}
	release_backend(s);
}

static void release_backend(struct sandbox *s)
{
	struct controller *c = s->ctl;
	struct release_wait *rw;
	int pp[2] = { -1, -1 };
	int r;

	if (!s->backend_acquired || !s->bi->ops->release) {
		lease_gone(s, 0, NULL);
		return;
	}
	rw = calloc(1, sizeof(*rw));
	if (!rw) {
		lease_gone(s, -ENOMEM, "out of memory");
		return;
	}
	rw->s = s;
	rw->pending = 1;
	if (attaches_by_transfer(s)) {
		if (pipe2(pp, O_CLOEXEC) < 0) {
			free(rw);
			lease_gone(s, -errno, "cannot take the workspace back from the backend");
			return;
		}
		rw->pending = 2;
		r = controller_transfer_apply(c, s->policy->fs.workspace.path, pp[0], s->snapshot,
					      s->policy, reconciled, rw);
		/* The reconcile's part is done (it took the fd); the backend still releases, and
		 * what it writes goes nowhere. rw lives on: the backend's part is pending. */
		if (r < 0)
			release_step(rw, r, "cannot reconcile the workspace");
	}
	s->bi->ops->release(s->bi, s->id, pp[1], released_backend, rw);
}

static void acquire_fail(struct sandbox *s, int code, const char *message, json_t *data);
static void acquire_ready(struct sandbox *s, bool setup);

static void setup_done(struct controller *c, const char *process_id, json_t *result, void *ud)
{
	struct sandbox *s = ud;
	const char *reason = json_string_value(json_object_get(result, "reason"));
	int code = (int)json_integer_value(json_object_get(result, "exitCode"));
	bool lost = reason && streq(reason, "launcher-lost");

	free(TAKE_PTR(s->setup_process));
	if (reason && streq(reason, "exited") && code == 0) {
		acquire_ready(s, true);
		return;
	}
	controller_event(c, "sandbox-setup-failed",
			 json_pack("{s:s,s:s?,s:i}", "sandboxId", s->id, "reason", reason,
				   "exitCode", code));
	acquire_fail(s, lost ? CORDON_ERR_BACKEND : CORDON_ERR_SETUP_FAILED,
		     lost ? "the launcher was lost while the sandbox's setup command ran"
			  : "the sandbox's setup command failed",
		     json_pack("{s:s,s:s?,s:i,s:O?,s:O?,s:O?}", "step", "setup", "reason", reason,
			       "exitCode", code, "stdout", json_object_get(result, "stdout"),
			       "stderr", json_object_get(result, "stderr"), "error",
			       json_object_get(result, "error")));
}

/* A lease's workspace is read-only unless the request's policy or patch says (a patch on top
 * of the default or the given policy: the patch's access, else the policy's, else read-only). */
static int lease_default_read_only(json_t *params)
{
	json_t *patch = json_object_get(params, "policyPatch");
	json_t *given = json_object_get(params, "policy");
	json_t *pws = json_object_get(json_object_get(patch, "filesystem"), "workspace");
	json_t *gws = json_object_get(json_object_get(given, "filesystem"), "workspace");

	if (json_object_get(pws, "access") || json_object_get(gws, "access") || json_is_null(pws) ||
	    json_is_null(gws))
		return 0;
	if (!patch) {
		patch = json_object();
		if (!patch || json_object_set_new(params, "policyPatch", patch) < 0)
			return -ENOMEM;
	} else {
		patch = json_deep_copy(patch);
		if (!patch || json_object_set_new(params, "policyPatch", patch) < 0)
			return -ENOMEM;
	}
	if (!json_object_get(patch, "filesystem") &&
	    json_object_set_new(patch, "filesystem", json_object()) < 0)
		return -ENOMEM;
	pws = json_object_get(json_object_get(patch, "filesystem"), "workspace");
	if (!pws) {
		pws = json_object();
		if (json_object_set_new(json_object_get(patch, "filesystem"), "workspace", pws) < 0)
			return -ENOMEM;
	}
	return json_object_set_new(pws, "access", json_string("read-only"));
}

/* The acquisition failed after the sandbox was made: tell the acquirer, end the lease. */
static void acquire_fail(struct sandbox *s, int code, const char *message, json_t *data)
{
	struct client *cl = controller_client_find(s->ctl, s->acquirer);
	_cleanup_json_ json_t *id = TAKE_PTR(s->acquire_id);

	s->acquirer = 0;
	if (cl)
		(void)client_reply_error(cl, id, code, message, data);
	else
		json_decref(data);
	sandbox_release(s);
}

static void acquire_ready(struct sandbox *s, bool setup)
{
	struct client *cl = controller_client_find(s->ctl, s->acquirer);
	_cleanup_json_ json_t *id = TAKE_PTR(s->acquire_id);

	s->acquirer = 0;
	s->ready = true;
	controller_event(s->ctl, "sandbox-acquire",
			 json_pack("{s:s,s:b,s:s}", "sandboxId", s->id, "setup", setup, "launcher",
				   s->bi->name));
	if (cl)
		(void)client_reply(cl, id,
				   json_pack("{s:s,s:s,s:s?}", "sandboxId", s->id, "launcher",
					     s->bi->name, "mountPoint", s->mount_point));
}

/* The trusted setup hook runs in the sandbox, under its policy, before anything else. */
static void acquire_setup(struct sandbox *s)
{
	_cleanup_json_ json_t *sp = NULL, *err = NULL, *setup = TAKE_PTR(s->setup);
	struct controller *c = s->ctl;
	json_t *data;
	int r;

	if (!json_object_get(setup, "argv")) {
		acquire_ready(s, false);
		return;
	}
	sp = json_pack("{s:s,s:O,s:O?,s:O?}", "sandbox", s->id, "argv",
		       json_object_get(setup, "argv"), "env", json_object_get(setup, "env"),
		       "callerCwd", json_object_get(setup, "callerCwd"));
	if (!sp) {
		acquire_fail(s, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	s->ready = true; /* so the setup process may use the sandbox's policy */
	r = controller_process_start_internal(c, controller_client_find(c, s->owner), sp,
					      setup_done, s, &s->setup_process, &err);
	s->ready = false;
	if (r >= 0)
		return;
	data = json_object_get(err, "data");
	acquire_fail(s, CORDON_ERR_SETUP_FAILED,
		     err && json_string_value(json_object_get(err, "message"))
			     ? json_string_value(json_object_get(err, "message"))
			     : "the setup command could not start",
		     data ? json_incref(data) : NULL);
}

/* Two completions of an acquisition on a transfer backend: the backend's and the sending of
 * the workspace; one for any other backend with an acquire call. */
struct acquire_wait {
	struct sandbox *s;
	unsigned pending;
	int r;
	char message[512];
};

static void acquire_step(struct acquire_wait *aw, int r, const char *message)
{
	struct sandbox *s = aw->s;
	char msg[sizeof(aw->message)];

	if (r < 0 && aw->r >= 0) {
		aw->r = r;
		(void)snprintf(aw->message, sizeof(aw->message), "%s",
			       message ? message : strerror(-r));
	}
	if (--aw->pending > 0)
		return;
	r = aw->r;
	memcpy(msg, aw->message, sizeof(msg));
	free(aw);
	s->acquiring = false;
	if (s->release_pending) {
		s->release_pending = false;
		if (r < 0)
			s->backend_acquired = false; /* nothing to release at the backend */
		acquire_fail(s, CORDON_ERR_BACKEND,
			     "the sandbox was released while it was acquired", NULL);
		return;
	}
	if (r < 0)
		acquire_fail(s, CORDON_ERR_BACKEND, msg,
			     json_pack("{s:s,s:s,s:s}", "step", "acquire", "launcher", s->bi->name,
				       "errno", strerror(-r)));
	else
		acquire_setup(s);
}

static void acquired_backend(struct backend_instance *bi, int r, const char *message,
			     const char *mount_point, void *ud)
{
	struct acquire_wait *aw = ud;

	if (r >= 0) {
		aw->s->backend_acquired = true;
		if (mount_point && !(aw->s->mount_point = strdup(mount_point)))
			r = -ENOMEM;
	}
	acquire_step(aw, r, message);
}

static void hydrated(struct controller *c, int r, struct ws_snapshot *snap, json_t *report,
		     void *ud)
{
	struct acquire_wait *aw = ud;

	aw->s->snapshot = snap;
	acquire_step(aw, r,
		     r == -E2BIG || r == -EFBIG
			     ? "the workspace is too large to send to the backend"
			     : "the workspace could not be sent to the backend");
}

/* The backend's part of an acquisition: its acquire call, with the workspace sent along for a
 * transfer backend. Continues in acquire_step(). */
static void acquire_backend(struct sandbox *s)
{
	const struct policy_workspace *pw = &s->policy->fs.workspace;
	struct backend_workspace ws = {
		.host_path = pw->present ? pw->path : NULL,
		.dir_fd = -1,
		.read_only = pw->access == POLICY_ACCESS_READ_ONLY,
		.mount_point = pw->present ? (pw->mount_at ? pw->mount_at : pw->path) : NULL,
		.cwd = NULL,
	};
	struct acquire_wait *aw;
	int pp[2] = { -1, -1 };
	int r;

	if (!s->bi->ops->acquire) {
		acquire_setup(s);
		return;
	}
	aw = calloc(1, sizeof(*aw));
	if (!aw) {
		acquire_fail(s, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return;
	}
	aw->s = s;
	aw->pending = 1;
	s->acquiring = true;
	if (attaches_by_transfer(s)) {
		if (pipe2(pp, O_CLOEXEC) < 0) {
			s->acquiring = false;
			free(aw);
			acquire_fail(s, CORDON_ERR_BACKEND, "cannot send the workspace", NULL);
			return;
		}
		aw->pending = 2;
		r = controller_transfer_send(s->ctl, pw->path, pp[1], hydrated, aw);
		if (r < 0) {
			aw->pending = 1;
			aw->r = r;
			(void)snprintf(aw->message, sizeof(aw->message),
				       "cannot send the workspace: %s", strerror(-r));
		}
	}
	s->bi->ops->acquire(s->bi, s->id, &ws, pp[0], acquired_backend, aw);
}

int method_sandbox_acquire(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "policy", "policyPatch", "parent",	 "setup",
					    "env",    "callerCwd",   "detached", NULL };
	static const char *const setup_keys[] = { "argv", NULL };
	struct controller *c = cl->ctl;
	struct field_error fe = { 0 };
	_cleanup_json_ json_t *pparams = NULL, *doc = NULL;
	struct policy_request q = { 0 };
	struct backend_instance *bi;
	struct policy *policy = NULL;
	const char *parent = NULL;
	json_t *setup = NULL, *argv;
	struct sandbox *s;
	bool detached = false;
	int r;

	r = ipc_json_check_keys(params, keys, "params", &fe);
	if (r >= 0)
		r = ipc_json_get_string(params, "parent", false, "params", &parent, &fe);
	if (r >= 0)
		r = ipc_json_get_object(params, "setup", false, "params", &setup, &fe);
	if (r >= 0 && setup)
		r = ipc_json_check_keys(setup, setup_keys, "params.setup", &fe);
	if (r >= 0)
		r = ipc_json_get_bool(params, "detached", false, "params", &detached, &fe);
	argv = json_object_get(setup, "argv");
	if (r >= 0 && setup && (!json_is_array(argv) || json_array_size(argv) == 0))
		r = field_error_set(&fe, -EINVAL, "params.setup", "argv",
				    "expected a non-empty array of strings");
	if (r < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	if (parent && !controller_sandbox_policy(c, parent)) {
		field_error_set(&fe, -ENOENT, "params", "parent", "no such sandbox");
		return client_reply_field_error(cl, id, CORDON_ERR_NOT_FOUND, &fe);
	}
	/* The lease is pinned to the instance serving now (a child to its parent's): a later
	 * activation does not move it. */
	bi = parent ? controller_sandbox_instance(c, parent) : c->active;
	if (!bi)
		return client_reply_error(cl, id, CORDON_ERR_BACKEND,
					  "the launcher is not available: no launcher is active",
					  NULL);

	/* The policy as a process in the parent would see it: narrowing is checked there. An
	 * agent runtime's lease: the workspace is read-only unless the request says otherwise. */
	pparams = json_pack("{s:O*,s:O*,s:O*,s:O*,s:s*}", "policy",
			    json_object_get(params, "policy"), "policyPatch",
			    json_object_get(params, "policyPatch"), "env",
			    json_object_get(params, "env"), "callerCwd",
			    json_object_get(params, "callerCwd"), "sandbox", parent);
	if (!pparams)
		return -ENOMEM;
	if (!parent && lease_default_read_only(pparams) < 0)
		return -ENOMEM;
	r = controller_policy_request_parse(c, pparams, false, &q, &fe);
	if (r >= 0)
		r = controller_request_policy_parsed(c, bi, &q, &doc, &policy, &fe);
	controller_policy_request_done(&q);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		controller_event(c, "policy-refused",
				 json_pack("{s:s,s:s}", "field", fe.field, "reason", fe.reason));
		return client_reply_field_error(cl, id,
						r == -EPERM || r == -EOPNOTSUPP
							? CORDON_ERR_POLICY_REFUSED
						: r == -ENOENT ? CORDON_ERR_NOT_FOUND
							       : JSONRPC_INVALID_PARAMS,
						&fe);
	}

	s = calloc(1, sizeof(*s));
	if (!s) {
		policy_free(policy);
		return -ENOMEM;
	}
	s->ctl = c;
	(void)snprintf(s->id, sizeof(s->id), "s%llu", ++c->next_sandbox);
	s->parent = parent ? strdup(parent) : NULL;
	s->doc = TAKE_PTR(doc);
	s->policy = policy;
	s->owner = cl->id;
	s->detached = detached;
	s->bi = backend_instance_ref(bi);
	s->acquirer = cl->id;
	s->acquire_id = json_incref(id);
	s->setup = json_pack("{s:O*,s:O*,s:O*}", "argv", argv, "env",
			     json_object_get(params, "env"), "callerCwd",
			     json_object_get(params, "callerCwd"));
	s->next = c->sandboxes;
	c->sandboxes = s;
	if (!s->setup) {
		acquire_fail(s, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		return 0;
	}
	/* A child lease shares its parent's backend lease: only a top-level one acquires. */
	if (parent)
		acquire_setup(s);
	else
		acquire_backend(s);
	return 0;
}

int method_sandbox_release(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "sandboxId", NULL };
	struct field_error fe = { 0 };
	const char *sid = NULL;
	struct sandbox *s;

	if (ipc_json_check_keys(params, keys, "params", &fe) < 0 ||
	    ipc_json_get_string(params, "sandboxId", true, "params", &sid, &fe) < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	s = sandbox_find(cl->ctl, sid);
	if (!s || s->releasing)
		return client_reply_error(cl, id, CORDON_ERR_NOT_FOUND, "no such sandbox",
					  json_pack("{s:s}", "sandboxId", sid));
	/* Children acquired from it go first: they cannot outlive the policy they narrow. */
	for (struct sandbox *k = cl->ctl->sandboxes, *next; k; k = next) {
		next = k->next;
		if (k->parent && streq(k->parent, sid))
			sandbox_release(k);
	}
	/* Answered when the lease is over (for a transfer lease: once the workspace is back). */
	s->releaser = cl->id;
	s->release_id = json_incref(id);
	sandbox_release(s);
	return 0;
}

int method_sandbox_list(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	json_t *list = json_array();

	for (struct sandbox *s = cl->ctl->sandboxes; s; s = s->next)
		if (!s->releasing)
			json_array_append_new(list,
					      json_pack("{s:s,s:s?,s:b,s:O,s:s,s:s?}", "sandboxId",
							s->id, "parent", s->parent, "ready",
							s->ready, "policy", s->doc, "launcher",
							s->bi->name, "mountPoint", s->mount_point));
	return client_reply(cl, id, json_pack("{s:o}", "sandboxes", list));
}

void controller_sandboxes_client_gone(struct controller *c, struct client *cl)
{
	for (struct sandbox *s = c->sandboxes, *next; s; s = next) {
		next = s->next;
		if (s->acquirer == cl->id) {
			/* Nobody will learn this sandbox's id: it goes, detached or not. */
			s->acquirer = 0;
			json_decref(TAKE_PTR(s->acquire_id));
			sandbox_release(s);
			continue;
		}
		if (s->releaser == cl->id)
			s->releaser = 0;
		if (s->owner != cl->id)
			continue;
		s->owner = 0;
		if (!s->detached)
			sandbox_release(s);
	}
}

void controller_sandboxes_free(struct controller *c)
{
	while (c->sandboxes) {
		struct sandbox *s = c->sandboxes;

		c->sandboxes = s->next;
		sandbox_free(s);
	}
}
