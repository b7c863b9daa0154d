/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * From a request to a spawn plan: the request's policy (its own document, or the embedded
 * default) with the CLI's flags merged on top (policyPatch: objects merge, arrays append, values
 * replace), parsed and validated, then compiled for this caller against what the launcher said
 * it can enforce. Also policy.check and policy.explain.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "controller/controller.h"
#include "controller/proxy.h"
#include "ipc/ipc-json.h"
#include "policy/policy-compile.h"
#include "policy/policy-default.h"
#include "policy/policy-explain.h"
#include "policy/policy-narrow.h"
#include "policy/policy-parse.h"

#define ARGV_MAX 4096
#define ENV_MAX 4096
#define ARG_MAX_LEN (128U * 1024U)

void ctl_plan_done(struct ctl_plan *p)
{
	close_many(p->fds, p->n_fds);
	p->n_fds = 0;
	json_decref(TAKE_PTR(p->plan));
	p->proxy_rules = proxy_rules_unref(p->proxy_rules);
}

int ctl_plan_add_fd(struct ctl_plan *p, int fd)
{
	int d;

	if (p->n_fds >= IPC_MAX_FDS)
		return -E2BIG;
	d = fd_dup_cloexec(fd, 3);
	if (d < 0)
		return d;
	p->fds[p->n_fds] = d;
	return (int)p->n_fds++;
}

/* patch onto base, in place: objects merge recursively, arrays append, anything else replaces. */
static int merge_patch(json_t *base, json_t *patch)
{
	const char *key;
	json_t *v;

	json_object_foreach(patch, key, v) {
		json_t *b = json_object_get(base, key);

		if (json_is_object(b) && json_is_object(v)) {
			int r = merge_patch(b, v);

			if (r < 0)
				return r;
		} else if (json_is_array(b) && json_is_array(v)) {
			if (json_array_extend(b, v) < 0)
				return -ENOMEM;
		} else if (json_object_set(base, key, v) < 0)
			return -ENOMEM;
	}
	return 0;
}

int controller_request_policy(struct controller *c, json_t *params, json_t **ret,
			      struct field_error *fe)
{
	_cleanup_json_ json_t *doc = NULL;
	json_t *given = NULL, *patch = NULL, *sb_doc = NULL;
	const char *sandbox = NULL;
	int r;

	r = ipc_json_get_object(params, "policy", false, "params", &given, fe);
	if (r < 0)
		return r;
	r = ipc_json_get_object(params, "policyPatch", false, "params", &patch, fe);
	if (r < 0)
		return r;
	r = ipc_json_get_string(params, "sandbox", false, "params", &sandbox, fe);
	if (r < 0)
		return r;
	if (sandbox) {
		/* Inside an acquired sandbox its policy is the base; a patch may only narrow it
		 * (checked after parsing, see request_ctx_init()). */
		if (given)
			return field_error_set(fe, -EINVAL, "params", "policy",
					       "a process in a sandbox takes the sandbox's policy "
					       "(narrow it with policyPatch)");
		sb_doc = controller_sandbox_policy_doc(c, sandbox);
		if (!sb_doc)
			return field_error_set(fe, -ENOENT, "params", "sandbox", "no such sandbox");
		doc = json_deep_copy(sb_doc);
	} else if (given)
		doc = json_deep_copy(given);
	else {
		json_error_t je;

		doc = json_loads(policy_default_json, JSON_REJECT_DUPLICATES, &je);
	}
	if (!doc)
		return -ENOMEM;
	if (patch) {
		r = merge_patch(doc, patch);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(doc);
	return 0;
}

/* Parse the request's policy and build the compile context shared by compile and explain. */
struct request_ctx {
	struct policy *policy;
	char **argv;
	char **envp;
	const char *caller_cwd;
	struct compile_ctx ctx;
};

static void request_ctx_done(struct request_ctx *rc)
{
	policy_free(rc->policy);
	strv_free(rc->argv);
	strv_free(rc->envp);
}

static int request_ctx_init(struct controller *c, json_t *params, bool need_argv,
			    struct request_ctx *rc, struct field_error *fe)
{
	_cleanup_json_ json_t *doc = NULL;
	json_t *hello = controller_launcher_hello(c);
	static char *const no_argv[] = { (char *)"/bin/true", NULL };
	int r;

	r = controller_request_policy(c, params, &doc, fe);
	if (r < 0)
		return r;
	r = policy_parse_json(doc, &rc->policy, fe);
	if (r < 0)
		return r;
	r = ipc_json_get_strv(params, "argv", need_argv, ARGV_MAX, ARG_MAX_LEN, "params", &rc->argv,
			      fe);
	if (r < 0)
		return r;
	if (rc->argv && !rc->argv[0])
		return field_error_set(fe, -EINVAL, "params", "argv", "the command is empty");
	r = ipc_json_get_strv(params, "env", false, ENV_MAX, ARG_MAX_LEN, "params", &rc->envp, fe);
	if (r < 0)
		return r;
	if (!rc->envp) {
		rc->envp = calloc(1, sizeof(char *));
		if (!rc->envp)
			return -ENOMEM;
	}
	r = ipc_json_get_string(params, "callerCwd", false, "params", &rc->caller_cwd, fe);
	if (r < 0)
		return r;
	if (!rc->caller_cwd)
		rc->caller_cwd = c->home;
	if (!path_is_normalized(rc->caller_cwd))
		return field_error_set(fe, -EINVAL, "params", "callerCwd",
				       "not a normalized absolute path");

	rc->ctx = (struct compile_ctx){
		.argv = rc->argv ? rc->argv : no_argv,
		.envp = rc->envp,
		.cwd = rc->caller_cwd,
		.home = c->home,
		.uid = c->uid,
		.gid = c->gid,
		.mem_total = c->mem_total,
	};
	if (hello) {
		r = policy_host_caps_from_hello(hello, &rc->ctx.caps, fe);
		if (r < 0)
			return r;
	}
	r = policy_resolve(rc->policy, &rc->ctx, fe);
	if (r < 0)
		return r;
	{
		const char *sandbox = NULL;
		const struct policy *parent;

		(void)ipc_json_get_string(params, "sandbox", false, "params", &sandbox, fe);
		parent = sandbox ? controller_sandbox_policy(c, sandbox) : NULL;
		if (parent) {
			r = policy_narrow(parent, rc->policy, fe);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int controller_request_policy_parsed(struct controller *c, json_t *params, json_t **ret_doc,
				     struct policy **ret_policy, struct field_error *fe)
{
	struct request_ctx rc = { 0 };
	int r;

	r = request_ctx_init(c, params, false, &rc, fe);
	if (r >= 0)
		r = policy_to_json(rc.policy, ret_doc);
	if (r >= 0)
		*ret_policy = TAKE_PTR(rc.policy);
	request_ctx_done(&rc);
	return r;
}

int controller_compile_request(struct controller *c, json_t *params, struct ctl_plan *ret,
			       struct field_error *fe)
{
	struct request_ctx rc = { 0 };
	struct compiled_plan *cp = NULL;
	const char *cwd = NULL;
	int r;

	r = request_ctx_init(c, params, true, &rc, fe);
	if (r < 0)
		goto out;
	r = ipc_json_get_string(params, "cwd", false, "params", &cwd, fe);
	if (r < 0)
		goto out;
	if (cwd && !path_is_normalized(cwd)) {
		r = field_error_set(fe, -EINVAL, "params", "cwd", "not a normalized absolute path");
		goto out;
	}
	r = policy_compile(rc.policy, &rc.ctx, &cp, fe);
	if (r < 0)
		goto out;
	ret->plan = json_incref(cp->plan);
	if (cwd)
		json_object_set_new(ret->plan, "cwd", json_string(cwd));
	ret->n_fds = 0;
	for (size_t i = 0; i < cp->n_fds; i++) {
		int k = ctl_plan_add_fd(ret, cp->fds[i]);

		if (k < 0) {
			r = k;
			goto out;
		}
	}
	ret->max_output_bytes = cp->max_output_bytes;
	if (rc.policy->net.mode == POLICY_NETWORK_PROXY) {
		r = proxy_rules_from_policy(rc.policy, &ret->proxy_rules);
		if (r < 0) {
			r = field_error_set(fe, r, "network", NULL, "cannot build the proxy rules");
			goto out;
		}
	}
out:
	compiled_plan_free(cp);
	request_ctx_done(&rc);
	return r;
}

static int reply_policy_error(struct client *cl, json_t *id, int r, struct field_error *fe)
{
	if (r == -ENOMEM)
		return client_reply_error(cl, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	return client_reply_field_error(
		cl, id, r == -EPERM ? CORDON_ERR_POLICY_REFUSED : JSONRPC_INVALID_PARAMS, fe);
}

int method_policy_check(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "policy", "policyPatch", "callerCwd", NULL };
	struct request_ctx rc = { 0 };
	struct field_error fe = { 0 };
	json_t *normalized = NULL;
	int r;

	r = ipc_json_check_keys(params, keys, "params", &fe);
	if (r >= 0)
		r = request_ctx_init(cl->ctl, params, false, &rc, &fe);
	if (r >= 0)
		r = policy_to_json(rc.policy, &normalized);
	if (r < 0)
		r = reply_policy_error(cl, id, r, &fe);
	else
		r = client_reply(cl, id, json_pack("{s:b,s:o}", "ok", true, "policy", normalized));
	request_ctx_done(&rc);
	return r;
}

int method_policy_explain(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "policy", "policyPatch", "callerCwd", NULL };
	struct request_ctx rc = { 0 };
	struct field_error fe = { 0 };
	json_t *explanation = NULL;
	_cleanup_free_ char *text = NULL;
	int r;

	r = ipc_json_check_keys(params, keys, "params", &fe);
	if (r >= 0)
		r = request_ctx_init(cl->ctl, params, false, &rc, &fe);
	if (r >= 0)
		r = policy_explain(rc.policy, &rc.ctx, &explanation);
	if (r < 0) {
		r = reply_policy_error(cl, id, r, &fe);
		goto out;
	}
	if (policy_explain_format_text(explanation, &text) >= 0)
		json_object_set_new(explanation, "text", json_string(text));
	r = client_reply(cl, id, explanation);
out:
	request_ctx_done(&rc);
	return r;
}
