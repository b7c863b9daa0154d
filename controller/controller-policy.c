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
#include <sys/stat.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/backend.h"
#include "controller/controller.h"
#include "proxy/proxy.h"
#include "ipc/ipc-json.h"
#include "policy/policy-compile.h"
#include "policy/policy-default.h"
#include "policy/policy-explain.h"
#include "policy/policy-narrow.h"
#include "policy/policy-parse.h"

/* The command line and the caller's environment: bounded as execve counts them (common/util.h).
 * The item counts follow from the byte bound (every string costs at least its NUL and a
 * pointer); the bytes are checked once the strings are in. */
#define ARG_ITEMS_MAX CORDON_ARG_ITEMS_MAX
#define ARG_MAX_LEN (CORDON_ARG_STRLEN_MAX - 1U)

/* What execve(2) counts for these strings: each with its NUL, plus a pointer each. */
static size_t arg_size(char *const *l)
{
	size_t n = 0;

	for (; l && *l; l++)
		n += strlen(*l) + 1 + sizeof(char *);
	return n;
}

/* The same for a compiled plan's argv and envp. */
static size_t plan_arg_size(json_t *plan)
{
	static const char *const keys[] = { "argv", "envp" };
	size_t n = 0, i;
	json_t *v;

	for (size_t k = 0; k < ELEMENTSOF(keys); k++)
		json_array_foreach(json_object_get(plan, keys[k]), i, v)
			n += json_string_length(v) + 1 + sizeof(char *);
	return n;
}

void ctl_plan_done(struct ctl_plan *p)
{
	close_many(p->fds, p->n_fds);
	p->n_fds = 0;
	json_decref(TAKE_PTR(p->plan));
	p->proxy_rules = proxy_rules_unref(p->proxy_rules);
	strv_free(TAKE_PTR(p->host_exec_absent));
	free(TAKE_PTR(p->ws_path));
	free(TAKE_PTR(p->ws_mount));
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

/*
 * A limit the patch sets is one the caller asked for: it is enforced or the spawn fails, even
 * where the base lists it in "optional" (the default's memory limit, on a host without a cgroup
 * for it), unless the patch lists it in its own "optional" too.
 */
static void require_patched_limits(json_t *doc, json_t *patch)
{
	json_t *limits = json_object_get(patch, "limits"), *opt = json_object_get(doc, "optional");
	json_t *patch_opt = json_object_get(patch, "optional"), *v;
	const char *key;

	if (!json_is_object(limits) || !json_is_array(opt))
		return;
	json_object_foreach(limits, key, v) {
		_cleanup_free_ char *id = strdup_printf("limits.%s", key);
		bool keep = false;
		json_t *e;
		size_t i;

		json_array_foreach(patch_opt, i, e)
			keep |= id && json_is_string(e) && streq(json_string_value(e), id);
		for (i = json_array_size(opt); id && !keep && i-- > 0;) {
			e = json_array_get(opt, i);
			if (json_is_string(e) && streq(json_string_value(e), id))
				(void)json_array_remove(opt, i);
		}
	}
}

int controller_policy_request_parse(struct controller *c, json_t *params, bool need_argv,
				    struct policy_request *ret, struct field_error *fe)
{
	struct policy_request q = { 0 };
	int r;

	r = ipc_json_get_object(params, "policy", false, "params", &q.policy, fe);
	if (r >= 0)
		r = ipc_json_get_object(params, "policyPatch", false, "params", &q.patch, fe);
	if (r >= 0)
		r = ipc_json_get_string(params, "sandbox", false, "params", &q.sandbox, fe);
	if (r >= 0)
		r = ipc_json_get_strv(params, "argv", need_argv, ARG_ITEMS_MAX, ARG_MAX_LEN,
				      "params", &q.argv, fe);
	if (r >= 0 && q.argv && !q.argv[0])
		r = field_error_set(fe, -EINVAL, "params", "argv", "the command is empty");
	if (r >= 0)
		r = ipc_json_get_strv(params, "env", false, ARG_ITEMS_MAX, ARG_MAX_LEN, "params",
				      &q.envp, fe);
	if (r >= 0 && !q.envp && !(q.envp = calloc(1, sizeof(char *))))
		r = -ENOMEM;
	/* The command with the caller's environment, as the kernel counts them for a native
	 * exec: what it would refuse there (E2BIG) is refused here. Whatever the policy then
	 * passes of the environment is counted again with the plan. */
	if (r >= 0 && arg_size(q.argv) + arg_size(q.envp) > CORDON_ARG_MAX)
		r = field_error_set(fe, -E2BIG, "params", "argv",
				    "the command line and its environment take %zu bytes as "
				    "execve counts them (strings, NULs and pointers): at most %u",
				    arg_size(q.argv) + arg_size(q.envp), CORDON_ARG_MAX);
	if (r >= 0)
		r = ipc_json_get_string(params, "callerCwd", false, "params", &q.caller_cwd, fe);
	if (r >= 0 && !q.caller_cwd)
		q.caller_cwd = c->host.home;
	if (r >= 0 && !path_is_normalized(q.caller_cwd))
		r = field_error_set(fe, -EINVAL, "params", "callerCwd",
				    "not a normalized absolute path");
	if (r >= 0)
		r = ipc_json_get_string(params, "cwd", false, "params", &q.cwd, fe);
	if (r >= 0 && q.cwd && !path_is_normalized(q.cwd))
		r = field_error_set(fe, -EINVAL, "params", "cwd", "not a normalized absolute path");
	if (r < 0) {
		controller_policy_request_done(&q);
		return r;
	}
	*ret = q;
	return 0;
}

void controller_policy_request_done(struct policy_request *q)
{
	strv_free(TAKE_PTR(q->argv));
	strv_free(TAKE_PTR(q->envp));
}

int controller_request_policy(struct controller *c, const struct policy_request *q, json_t **ret,
			      struct field_error *fe)
{
	_cleanup_json_ json_t *doc = NULL;
	json_t *given = q->policy, *patch = q->patch, *sb_doc = NULL;
	const char *sandbox = q->sandbox;
	int r;

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
		require_patched_limits(doc, patch);
	}
	*ret = TAKE_PTR(doc);
	return 0;
}

/* Parse the request's policy and build the compile context shared by compile and explain. */
struct request_ctx {
	struct policy *policy;
	struct compile_ctx ctx; /* argv, envp, cwd borrowed from the request */
};

static void request_ctx_done(struct request_ctx *rc)
{
	policy_free(rc->policy);
}

/*
 * The hosts file sandboxes see at /etc/hosts (compile_ctx.etc_hosts): the host's, and a line
 * that names the sandbox's hostname, so that a program resolving its own name finds it
 * (loopback, as Debian names a host's own). Kept beside the socket (in the runtime directory,
 * which no sandbox sees; the compiler binds it by fd) and made again when the host's changes.
 * NULL when it cannot be made: sandboxes then see the host's own.
 */
static const char *etc_hosts(struct controller *c)
{
	static const char line[] =
		"\n# cordon: the sandbox's own hostname\n127.0.1.1\t" POLICY_HOSTNAME "\n";
	_cleanup_free_ char *host = NULL, *data = NULL, *path = NULL;
	size_t len = 0;
	struct stat st;
	char *slash;

	if (!c->socket_path || stat("/etc/hosts", &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	if (c->etc_hosts && st.st_ino == c->etc_hosts_ino &&
	    st.st_mtim.tv_sec == c->etc_hosts_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == c->etc_hosts_mtim.tv_nsec)
		return c->etc_hosts;
	if (read_full_file("/etc/hosts", 1024 * 1024, &host, &len) < 0)
		return NULL;
	data = malloc(len + sizeof(line));
	path = strdup(c->socket_path);
	if (!data || !path || !(slash = strrchr(path, '/')))
		return NULL;
	memcpy(data, host, len);
	memcpy(data + len, line, sizeof(line));
	*slash = '\0';
	free(c->etc_hosts);
	c->etc_hosts = strdup_printf("%s/etc-hosts", path);
	if (!c->etc_hosts ||
	    write_file_atomic(c->etc_hosts, data, len + sizeof(line) - 1, 0644) < 0) {
		free(c->etc_hosts);
		c->etc_hosts = NULL;
		return NULL;
	}
	c->etc_hosts_ino = st.st_ino;
	c->etc_hosts_mtim = st.st_mtim;
	return c->etc_hosts;
}

/* The request's own part of the context: argv, env, callerCwd. */
static void request_ctx_args(struct controller *c, const struct policy_request *q,
			     struct request_ctx *rc)
{
	static char *const no_argv[] = { (char *)"/bin/true", NULL };

	rc->ctx = (struct compile_ctx){
		.argv = q->argv ? q->argv : no_argv,
		.envp = q->envp,
		.cwd = q->caller_cwd,
		.home = c->host.home,
		.uid = c->host.uid,
		.gid = c->host.gid,
		.mem_total = c->host.mem_total,
		.etc_hosts = etc_hosts(c),
	};
}

/*
 * What no sandbox of this user may see, whatever its policy says: the controller's state
 * directory (secrets and their key, settings, packs, the event log) and its runtime directory
 * (the client socket, through which a sandbox could ask for anything its user may). Both join
 * filesystem.deny, so they are hidden wherever a granted path contains them, and a grant inside
 * one of them is refused by the compiler ("… is hidden by filesystem.deny").
 */
static int hide_controller_paths(struct controller *c, struct policy *p)
{
	_cleanup_free_ char *rundir = c->socket_path ? strdup(c->socket_path) : NULL;
	const char *own[2] = { c->state_dir, NULL };
	char *slash;

	if (rundir && (slash = strrchr(rundir, '/')) && slash != rundir) {
		*slash = '\0';
		own[1] = rundir;
	}
	for (size_t i = 0; i < ELEMENTSOF(own); i++) {
		_cleanup_free_ char *canon = NULL;
		const char *reason = NULL;
		bool covered = false;
		size_t n = strv_length(p->fs.deny);
		char **l;

		if (!own[i] || policy_path_canonicalize(own[i], &canon, &reason) < 0)
			continue;
		for (size_t k = 0; k < n; k++)
			covered = covered || policy_path_under(canon, p->fs.deny[k]);
		if (covered)
			continue;
		l = reallocarray(p->fs.deny, n + 2, sizeof(char *));
		if (!l)
			return -ENOMEM;
		p->fs.deny = l;
		l[n] = TAKE_PTR(canon);
		l[n + 1] = NULL;
	}
	return 0;
}

static int request_ctx_init(struct controller *c, struct backend_instance *bi,
			    const struct policy_request *q, struct request_ctx *rc,
			    struct field_error *fe)
{
	_cleanup_json_ json_t *doc = NULL;
	json_t *hello = bi && bi->ops->hello ? bi->ops->hello(bi) : NULL;
	int r;

	r = controller_request_policy(c, q, &doc, fe);
	if (r < 0)
		return r;
	r = policy_parse_json(doc, &rc->policy, fe);
	if (r < 0)
		return r;
	r = hide_controller_paths(c, rc->policy);
	if (r < 0)
		return r;
	request_ctx_args(c, q, rc);
	if (hello) {
		r = policy_host_caps_from_hello(hello, &rc->ctx.caps, fe);
		if (r < 0)
			return r;
	}
	r = policy_resolve(rc->policy, &rc->ctx, fe);
	if (r < 0)
		return r;
	{
		const struct policy *parent = q->sandbox ? controller_sandbox_policy(c, q->sandbox)
							 : NULL;

		if (parent) {
			r = policy_narrow(parent, rc->policy, fe);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int controller_compile_default(struct controller *c, json_t *patch, char **argv, char **envp,
			       const char *cwd, json_t *hello, struct compiled_plan **ret,
			       struct field_error *fe)
{
	_cleanup_json_ json_t *doc = NULL;
	_cleanup_(policy_freep) struct policy *policy = NULL;
	json_t *pass = json_object_get(json_object_get(patch, "env"), "pass");
	const struct policy_request q = { .patch = patch };
	struct compile_ctx ctx = {
		.argv = argv,
		.envp = envp,
		.cwd = cwd,
		.home = c->host.home,
		.uid = c->host.uid,
		.gid = c->host.gid,
		.mem_total = c->host.mem_total,
		.etc_hosts = etc_hosts(c),
	};
	int r;

	r = controller_request_policy(c, &q, &doc, fe);
	if (r < 0)
		return r;
	/* A patch's env.pass replaces the default's allowlist instead of extending it. */
	if (pass)
		(void)json_object_set_new(json_object_get(doc, "env"), "pass",
					  json_deep_copy(pass));
	r = policy_parse_json(doc, &policy, fe);
	if (r < 0)
		return r;
	r = policy_host_caps_from_hello(hello, &ctx.caps, fe);
	if (r < 0)
		return r;
	r = policy_resolve(policy, &ctx, fe);
	if (r < 0)
		return r;
	return policy_compile(policy, &ctx, ret, fe);
}

static unsigned network_bit(enum policy_network m)
{
	switch (m) {
	case POLICY_NETWORK_NONE:
		return BACKEND_NETWORK_NONE;
	case POLICY_NETWORK_LOOPBACK:
		return BACKEND_NETWORK_LOOPBACK;
	case POLICY_NETWORK_PROXY:
		return BACKEND_NETWORK_PROXY;
	case POLICY_NETWORK_HOST:
		return BACKEND_NETWORK_HOST;
	case POLICY_NETWORK_UNIX:
		return BACKEND_NETWORK_UNIX;
	}
	return 0;
}

/*
 * Hold a request against the instance that will run it: its own admit() first, then its
 * claims. What it cannot honour is refused before anything runs, with the field named: a
 * workspace it cannot attach, a read-only workspace it cannot enforce, a network mode it lacks.
 */
static int backend_admit(struct backend_instance *bi, const struct policy *policy,
			 struct field_error *fe)
{
	const struct backend_claims *cl = &bi->claims;
	const struct policy_workspace *ws = &policy->fs.workspace;
	int r;

	if (bi->ops->admit) {
		r = bi->ops->admit(bi, policy, fe);
		if (r < 0)
			return r;
	}
	if (ws->present && cl->workspace == BACKEND_ATTACH_NONE)
		return field_error_set(fe, -EOPNOTSUPP, "filesystem.workspace", NULL,
				       "the active backend (%s) takes no workspace: ask for none "
				       "(\"workspace\": null)",
				       bi->ref);
	if (ws->present && ws->access == POLICY_ACCESS_READ_ONLY && !cl->read_only_workspace)
		return field_error_set(fe, -EOPNOTSUPP, "filesystem.workspace.access", NULL,
				       "the active backend (%s) cannot enforce a read-only "
				       "workspace: ask for read-write, or activate a backend that "
				       "can (builtin:auto)",
				       bi->ref);
	if (cl->network_modes && !(cl->network_modes & network_bit(policy->net.mode)))
		return field_error_set(fe, -EOPNOTSUPP, "network.mode", NULL,
				       "the active backend (%s) does not serve network mode "
				       "\"%s\"",
				       bi->ref, policy_network_to_string(policy->net.mode));
	return 0;
}

int controller_request_policy_parsed(struct controller *c, struct backend_instance *bi,
				     const struct policy_request *q, json_t **ret_doc,
				     struct policy **ret_policy, struct field_error *fe)
{
	struct request_ctx rc = { 0 };
	int r;

	r = request_ctx_init(c, bi, q, &rc, fe);
	if (r >= 0 && bi)
		r = backend_admit(bi, rc.policy, fe);
	if (r >= 0)
		r = policy_to_json(rc.policy, ret_doc);
	if (r >= 0)
		*ret_policy = TAKE_PTR(rc.policy);
	request_ctx_done(&rc);
	return r;
}

/*
 * Compiled plans of recent requests, so that a repeated request (the same policy document and
 * patch, sandbox, caller cwd, and launcher) skips parsing, resolving, narrowing and compiling:
 * policy_recompile() builds only argv and envp again. It opens every bind source again too, so
 * nothing cached can go stale: a path replaced since is exposed as it is now, and a path that
 * appeared, vanished or became another symlink makes it compile afresh. What is kept is the
 * parsed policy, the plan's JSON and the seccomp program (a sealed memfd); no bind-source fd.
 */
#define PLAN_CACHE_MAX 8

struct plan_cache_entry {
	char *key;
	json_t *hello; /* the launcher's hello it was compiled for (held: the pointer is the id) */
	struct policy *policy;
	struct compiled_plan *cp;
	unsigned long long used;
};

static struct plan_cache_entry plan_cache[PLAN_CACHE_MAX];
static unsigned long long plan_cache_clock;
static unsigned long long plan_cache_hits, plan_cache_misses;

static void plan_cache_entry_clear(struct plan_cache_entry *e)
{
	free(e->key);
	json_decref(e->hello);
	policy_free(e->policy);
	compiled_plan_free(e->cp);
	*e = (struct plan_cache_entry){ 0 };
}

/* Everything of a request that shapes its plan, other than argv and env; NULL: do not cache. */
static char *plan_cache_key(struct controller *c, const struct policy_request *q)
{
	_cleanup_free_ char *g = NULL, *pt = NULL;
	const char *cw = q->caller_cwd;

	/* A released sandbox (ids are never reused) takes the full path, which says so. */
	if (!cw || (q->sandbox && !controller_sandbox_policy(c, q->sandbox)))
		return NULL;
	if (q->policy && !(g = json_dumps(q->policy, JSON_COMPACT | JSON_SORT_KEYS)))
		return NULL;
	if (q->patch && !(pt = json_dumps(q->patch, JSON_COMPACT | JSON_SORT_KEYS)))
		return NULL;
	return strdup_printf("%zu:%s|%zu:%s|%zu:%s|%s", strlen(cw), cw,
			     q->sandbox ? strlen(q->sandbox) : 0, q->sandbox ? q->sandbox : "",
			     g ? strlen(g) : 0, g ? g : "", pt ? pt : "");
}

static struct plan_cache_entry *plan_cache_find(const char *key, json_t *hello)
{
	for (size_t i = 0; key && i < PLAN_CACHE_MAX; i++)
		if (plan_cache[i].key && plan_cache[i].hello == hello &&
		    streq(plan_cache[i].key, key)) {
			plan_cache[i].used = ++plan_cache_clock;
			return &plan_cache[i];
		}
	return NULL;
}

/* Keep policy and cp (taken) under key, in place of the least recently used entry. */
static void plan_cache_put(char *key, json_t *hello, struct policy *policy,
			   struct compiled_plan *cp)
{
	struct plan_cache_entry *e = &plan_cache[0];

	for (size_t i = 1; i < PLAN_CACHE_MAX; i++)
		if (plan_cache[i].used < e->used)
			e = &plan_cache[i];
	plan_cache_entry_clear(e);
	compiled_plan_close_sources(cp);
	*e = (struct plan_cache_entry){ .key = key,
					.hello = json_incref(hello),
					.policy = policy,
					.cp = cp,
					.used = ++plan_cache_clock };
}

/* What the active backend cannot honour is refused, the field named, before anything is
 * compiled for it (an unconfined one refuses a policy without hostExecution). */

int controller_compile_request(struct controller *c, struct backend_instance *bi,
			       const struct policy_request *q, struct ctl_plan *ret,
			       struct field_error *fe)
{
	struct request_ctx rc = { 0 };
	struct compiled_plan *cp = NULL;
	struct plan_cache_entry *e;
	const struct policy *policy;
	json_t *hello = bi->ops->hello ? bi->ops->hello(bi) : NULL;
	_cleanup_free_ char *key = plan_cache_key(c, q);
	const char *cwd = q->cwd;
	int r;

	e = plan_cache_find(key, hello);
	if (e) {
		r = backend_admit(bi, e->policy, fe);
		if (r < 0)
			goto out;
		request_ctx_args(c, q, &rc);
		r = policy_recompile(e->policy, e->cp, &rc.ctx, &cp, fe);
		if (r == -ESTALE) {
			log_debug("plan cache: a bind source changed; compiling again");
			plan_cache_entry_clear(e);
			e = NULL;
			request_ctx_done(&rc);
			rc = (struct request_ctx){ 0 };
		} else if (r < 0)
			goto out;
	}
	if (e) {
		plan_cache_hits++;
		policy = e->policy;
	} else {
		plan_cache_misses++;
		r = request_ctx_init(c, bi, q, &rc, fe);
		if (r < 0)
			goto out;
		r = backend_admit(bi, rc.policy, fe);
		if (r < 0)
			goto out;
		r = policy_compile(rc.policy, &rc.ctx, &cp, fe);
		if (r < 0)
			goto out;
		policy = rc.policy;
	}
	/* A shallow copy: the caller sets stdio (and cwd here) on it. */
	ret->plan = json_copy(cp->plan);
	if (!ret->plan) {
		r = -ENOMEM;
		goto out;
	}
	if (cwd)
		json_object_set_new(ret->plan, "cwd", json_string(cwd));
	/* The command with the environment the policy gave it, as the sandbox's execve will
	 * count them: refused here rather than failing there. */
	if (plan_arg_size(ret->plan) > CORDON_ARG_MAX) {
		r = field_error_set(fe, -E2BIG, "params", "argv",
				    "the command line and its environment take %zu bytes as execve "
				    "counts them (strings, NULs and pointers): at most %u",
				    plan_arg_size(ret->plan), CORDON_ARG_MAX);
		goto out;
	}
	ret->n_fds = 0;
	for (size_t i = 0; i < cp->n_fds; i++) {
		int k;

		if (e && ret->n_fds < IPC_MAX_FDS) {
			/* This plan is ours alone: take its fds rather than copy them. */
			ret->fds[ret->n_fds++] = TAKE_FD(cp->fds[i]);
			continue;
		}
		k = ctl_plan_add_fd(ret, cp->fds[i]);
		if (k < 0) {
			r = k;
			goto out;
		}
	}
	ret->max_output_bytes = cp->max_output_bytes;
	if (cp->host_exec_absent && !(ret->host_exec_absent = strv_copy(cp->host_exec_absent))) {
		r = -ENOMEM;
		goto out;
	}
	if (policy->fs.workspace.present) {
		const struct policy_workspace *ws = &policy->fs.workspace;

		ret->ws_path = strdup(ws->path);
		ret->ws_mount = strdup(ws->mount_at ? ws->mount_at : ws->path);
		ret->ws_read_only = ws->access == POLICY_ACCESS_READ_ONLY;
		if (!ret->ws_path || !ret->ws_mount) {
			r = -ENOMEM;
			goto out;
		}
	}
	if (policy->net.mode == POLICY_NETWORK_PROXY) {
		r = proxy_rules_from_policy(policy, &ret->proxy_rules);
		if (r < 0) {
			r = field_error_set(fe, r, "network", NULL, "cannot build the proxy rules");
			goto out;
		}
	}
	if (!e && key) {
		/* The plan's fds are the ctl_plan's copies now: keep the plan for next time. */
		plan_cache_put(TAKE_PTR(key), hello, TAKE_PTR(rc.policy), TAKE_PTR(cp));
	}
	log_debug("plan cache: %llu hits, %llu misses", plan_cache_hits, plan_cache_misses);
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
	struct policy_request q = { 0 };
	struct request_ctx rc = { 0 };
	struct field_error fe = { 0 };
	json_t *normalized = NULL;
	int r;

	r = ipc_json_check_keys(params, keys, "params", &fe);
	if (r >= 0)
		r = controller_policy_request_parse(cl->ctl, params, false, &q, &fe);
	if (r >= 0)
		r = request_ctx_init(cl->ctl, cl->ctl->active, &q, &rc, &fe);
	if (r >= 0)
		r = policy_to_json(rc.policy, &normalized);
	if (r < 0)
		r = reply_policy_error(cl, id, r, &fe);
	else
		r = client_reply(cl, id, json_pack("{s:b,s:o}", "ok", true, "policy", normalized));
	request_ctx_done(&rc);
	controller_policy_request_done(&q);
	return r;
}

/*
 * What the serving backend enforces of a policy, when it is not the fallback (builtin:auto,
 * which enforces every section the explanation describes): its claims, and a line for each
 * section it leaves unenforced, and whether the request would be refused by its claims.
 */
static int explain_backend(struct backend_instance *bi, const struct policy *policy,
			   json_t *explanation, char **text)
{
	static const struct {
		unsigned bit;
		const char *name;
	} sections[] = {
		{ BACKEND_ENFORCES_FILESYSTEM, "filesystem" },
		{ BACKEND_ENFORCES_NETWORK, "network" },
		{ BACKEND_ENFORCES_LIMITS, "limits" },
		{ BACKEND_ENFORCES_SYSCALLS, "syscalls" },
	};
	const struct backend_claims *cl = &bi->claims;
	struct field_error fe = { 0 };
	_cleanup_free_ char *lines = NULL;
	json_t *unenforced = json_array(), *j;
	int r;

	if (!unenforced)
		return -ENOMEM;
	lines = strdup_printf("\nThe active backend is %s (isolation %s, workspace %s%s):\n",
			      bi->ref, backend_isolation_to_string(cl->isolation),
			      backend_attach_to_string(cl->workspace),
			      cl->read_only_workspace ? ", read-only enforced" : "");
	for (size_t i = 0; lines && i < ELEMENTSOF(sections); i++) {
		char *more;

		if (cl->enforces & sections[i].bit)
			continue;
		(void)json_array_append_new(unenforced, json_string(sections[i].name));
		more = strdup_printf("%s  %s: NOT enforced by this backend\n", lines,
				     sections[i].name);
		free(lines);
		lines = more;
	}
	r = backend_admit(bi, policy, &fe);
	if (lines && r < 0) {
		char *more = strdup_printf("%s  this policy is refused here: %s: %s\n", lines,
					   fe.field, fe.reason);

		free(lines);
		lines = more;
	}
	j = json_pack("{s:s,s:s,s:s,s:b,s:o,s:s?}", "ref", bi->ref, "isolation",
		      backend_isolation_to_string(cl->isolation), "workspace",
		      backend_attach_to_string(cl->workspace), "readOnlyWorkspace",
		      cl->read_only_workspace, "unenforced", unenforced, "refused",
		      r < 0 ? fe.field : NULL);
	if (!j || !lines || json_object_set_new(explanation, "backend", j) < 0)
		return -ENOMEM;
	*text = TAKE_PTR(lines);
	return 0;
}

int method_policy_explain(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "policy", "policyPatch", "callerCwd", "path", NULL };
	struct policy_request q = { 0 };
	struct request_ctx rc = { 0 };
	struct field_error fe = { 0 };
	json_t *explanation = NULL;
	_cleanup_free_ char *text = NULL;
	int r;

	r = ipc_json_check_keys(params, keys, "params", &fe);
	if (r >= 0)
		r = controller_policy_request_parse(cl->ctl, params, false, &q, &fe);
	if (r >= 0)
		r = request_ctx_init(cl->ctl, cl->ctl->active, &q, &rc, &fe);
	if (r >= 0 && json_is_string(json_object_get(params, "path"))) {
		/* One path: what the sandbox finds there, and the rule that decides it. */
		r = policy_explain_path(rc.policy, &rc.ctx,
					json_string_value(json_object_get(params, "path")),
					&explanation, &fe);
		if (r < 0)
			r = reply_policy_error(cl, id, r, &fe);
		else
			r = client_reply(cl, id, explanation);
		goto out;
	}
	if (r >= 0 && json_object_get(params, "path"))
		r = field_error_set(&fe, -EINVAL, "params", "path", "expected a string");
	if (r >= 0)
		r = policy_explain(rc.policy, &rc.ctx, &explanation);
	if (r < 0) {
		r = reply_policy_error(cl, id, r, &fe);
		goto out;
	}
	if (policy_explain_format_text(explanation, &text) >= 0) {
		struct backend_instance *bi = cl->ctl->active;
		_cleanup_free_ char *more = NULL;

		if (bi && !streq(bi->ref, BACKEND_FALLBACK_REF) &&
		    explain_backend(bi, rc.policy, explanation, &more) >= 0) {
			char *all = strdup_printf("%s%s", text, more);

			if (all) {
				free(text);
				text = all;
			}
		}
		json_object_set_new(explanation, "text", json_string(text));
	}
	r = client_reply(cl, id, explanation);
out:
	request_ctx_done(&rc);
	controller_policy_request_done(&q);
	return r;
}
