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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/log.h"
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
	json_decref(s->doc);
	policy_free(s->policy);
	free(s->parent);
	free(s);
}

/* Kill what is left, forget the sandbox. */
static void sandbox_release(struct sandbox *s)
{
	struct controller *c = s->ctl;

	controller_processes_kill_group(c, s->id);
	for (struct sandbox **pp = &c->sandboxes; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	controller_event(c, "sandbox-release", json_pack("{s:s}", "sandboxId", s->id));
	sandbox_free(s);
}

static void setup_done(struct controller *c, const char *process_id, json_t *result, void *ud)
{
	struct sandbox *s = ud;
	const char *reason = json_string_value(json_object_get(result, "reason"));
	int code = (int)json_integer_value(json_object_get(result, "exitCode"));
	struct client *cl = controller_client_find(c, s->acquirer);
	_cleanup_json_ json_t *id = TAKE_PTR(s->acquire_id);

	free(s->setup_process);
	s->setup_process = NULL;
	s->acquirer = 0;
	if (reason && streq(reason, "exited") && code == 0) {
		s->ready = true;
		controller_event(c, "sandbox-acquire",
				 json_pack("{s:s,s:b}", "sandboxId", s->id, "setup", true));
		if (cl)
			(void)client_reply(cl, id, json_pack("{s:s}", "sandboxId", s->id));
		return;
	}
	if (cl) {
		json_t *data = json_pack("{s:s,s:s?,s:i,s:O?,s:O?}", "step", "setup", "reason",
					 reason, "exitCode", code, "stdout",
					 json_object_get(result, "stdout"), "stderr",
					 json_object_get(result, "stderr"));

		bool lost = reason && streq(reason, "launcher-lost");

		(void)client_reply_error(cl, id,
					 lost ? CORDON_ERR_BACKEND : CORDON_ERR_SETUP_FAILED,
					 lost ? "the launcher was lost while the sandbox's setup "
						"command ran"
					      : "the sandbox's setup command failed",
					 data);
	}
	controller_event(c, "sandbox-setup-failed",
			 json_pack("{s:s,s:s?,s:i}", "sandboxId", s->id, "reason", reason,
				   "exitCode", code));
	sandbox_release(s);
}

int method_sandbox_acquire(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "policy", "policyPatch", "parent",	 "setup",
					    "env",    "callerCwd",   "detached", NULL };
	static const char *const setup_keys[] = { "argv", NULL };
	struct controller *c = cl->ctl;
	struct field_error fe = { 0 };
	_cleanup_json_ json_t *pparams = NULL, *doc = NULL;
	struct policy *policy = NULL;
	const char *parent = NULL;
	json_t *setup = NULL;
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
	if (r < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	if (parent && !controller_sandbox_policy(c, parent)) {
		field_error_set(&fe, -ENOENT, "params", "parent", "no such sandbox");
		return client_reply_field_error(cl, id, CORDON_ERR_NOT_FOUND, &fe);
	}

	/* The policy as a process in the parent would see it: narrowing is checked there. */
	pparams = json_deep_copy(params);
	if (!pparams)
		return -ENOMEM;
	json_object_del(pparams, "parent");
	json_object_del(pparams, "setup");
	json_object_del(pparams, "detached");
	if (parent)
		json_object_set_new(pparams, "sandbox", json_string(parent));
	r = controller_request_policy_parsed(c, pparams, &doc, &policy, &fe);
	if (r < 0) {
		controller_event(c, "policy-refused",
				 json_pack("{s:s,s:s}", "field", fe.field, "reason", fe.reason));
		return client_reply_field_error(
			cl, id, r == -EPERM ? CORDON_ERR_POLICY_REFUSED : JSONRPC_INVALID_PARAMS,
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
	s->next = c->sandboxes;
	c->sandboxes = s;

	if (!setup) {
		s->ready = true;
		controller_event(c, "sandbox-acquire",
				 json_pack("{s:s,s:b}", "sandboxId", s->id, "setup", false));
		return client_reply(cl, id, json_pack("{s:s}", "sandboxId", s->id));
	}

	/* The trusted setup hook runs in the sandbox, under its policy, before anything else. */
	{
		_cleanup_json_ json_t *sp = NULL, *err = NULL;
		json_t *argv = json_object_get(setup, "argv");

		if (!json_is_array(argv) || json_array_size(argv) == 0) {
			field_error_set(&fe, -EINVAL, "params.setup", "argv",
					"expected a non-empty array of strings");
			sandbox_release(s);
			return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
		}
		sp = json_pack("{s:s,s:O,s:O?,s:O?}", "sandbox", s->id, "argv", argv, "env",
			       json_object_get(params, "env"), "callerCwd",
			       json_object_get(params, "callerCwd"));
		s->ready = true; /* so the setup process may use the sandbox's policy */
		s->acquirer = cl->id;
		s->acquire_id = json_incref(id);
		r = controller_process_start_internal(c, cl, sp, setup_done, s, &s->setup_process,
						      &err);
		s->ready = false;
		if (r < 0) {
			json_t *data = json_object_get(err, "data");

			json_decref(TAKE_PTR(s->acquire_id));
			s->acquirer = 0;
			sandbox_release(s);
			return client_reply_error(
				cl, id, CORDON_ERR_SETUP_FAILED,
				err ? json_string_value(json_object_get(err, "message"))
				    : "the setup command could not start",
				data ? json_incref(data) : NULL);
		}
	}
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
	if (!s)
		return client_reply_error(cl, id, CORDON_ERR_NOT_FOUND, "no such sandbox",
					  json_pack("{s:s}", "sandboxId", sid));
	/* Children acquired from it go first: they cannot outlive the policy they narrow. */
	for (struct sandbox *k = cl->ctl->sandboxes, *next; k; k = next) {
		next = k->next;
		if (k->parent && streq(k->parent, sid))
			sandbox_release(k);
	}
	sandbox_release(sandbox_find(cl->ctl, sid));
	return client_reply(cl, id, json_pack("{s:b}", "released", true));
}

int method_sandbox_list(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	json_t *list = json_array();

	for (struct sandbox *s = cl->ctl->sandboxes; s; s = s->next)
		json_array_append_new(list,
				      json_pack("{s:s,s:s?,s:b,s:O}", "sandboxId", s->id, "parent",
						s->parent, "ready", s->ready, "policy", s->doc));
	return client_reply(cl, id, json_pack("{s:o}", "sandboxes", list));
}

void controller_sandboxes_client_gone(struct controller *c, struct client *cl)
{
	for (struct sandbox *s = c->sandboxes, *next; s; s = next) {
		next = s->next;
		if (s->acquirer == cl->id) {
			s->acquirer = 0;
			json_decref(TAKE_PTR(s->acquire_id));
		}
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
