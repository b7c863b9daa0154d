/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * "cordon policy explain --path P": what a sandbox under a policy finds at P, and which rule
 * decides it. A path that is simply not there cannot be audited (nothing is refused: the mount
 * namespace has no such name), so this answers from the plan the policy compiles to on this
 * host, exactly as a spawn would get it: the last mount in the plan's order whose target
 * covers P says what is there (a bind, read-only or not; a private tmpfs; an empty home; a
 * deny; nothing), the deepest Landlock rule covering P says which rights the sandbox has there,
 * and the policy's entry whose path covers P (filesystem.read[i], .write[i], .deny[i], the
 * workspace, a host-executed path) names the rule to change.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "policy/policy-compile.h"
#include "policy/policy-explain.h"
#include "policy/policy-hostexec.h"

/* What follows base in path ("" for base itself), or NULL when path is not under base. */
static const char *rel_under(const char *path, const char *base)
{
	size_t n = strlen(base);

	if (strncmp(path, base, n) != 0 || (path[n] && path[n] != '/'))
		return NULL;
	return path[n] ? path + n + 1 : "";
}

/* The entry of list whose path covers path most closely: its index, or -1. */
static int covering(char *const *list, const char *path)
{
	size_t best = 0;
	int k = -1;

	for (size_t i = 0; list && list[i]; i++)
		if (policy_path_under(path, list[i]) && strlen(list[i]) >= best) {
			best = strlen(list[i]);
			k = (int)i;
		}
	return k;
}

/* The policy rule that puts path where it is, as a field name with its path. */
static char *rule_for(const struct policy *p, const char *path)
{
	const struct policy_workspace *ws = &p->fs.workspace;
	const char *wpath = ws->present ? (ws->mount_at ? ws->mount_at : ws->path) : NULL;
	int r = covering(p->fs.read, path), w = covering(p->fs.write, path);
	size_t lr = r >= 0 ? strlen(p->fs.read[r]) : 0, lw = w >= 0 ? strlen(p->fs.write[w]) : 0;
	size_t lws = wpath && policy_path_under(path, wpath) ? strlen(wpath) : 0;

	if (lws && lws >= lr && lws >= lw)
		return strdup_printf("filesystem.workspace (%s, %s)", wpath,
				     policy_access_to_string(ws->access));
	if (w >= 0 && lw >= lr)
		return strdup_printf("filesystem.write[%d] %s", w, p->fs.write[w]);
	if (r >= 0)
		return strdup_printf("filesystem.read[%d] %s", r, p->fs.read[r]);
	return NULL;
}

/* The Landlock rights the plan grants at path (the deepest rule covering it), or NULL. */
static json_t *landlock_rights(json_t *plan, const char *path)
{
	json_t *fs = json_object_get(json_object_get(plan, "landlock"), "fs"), *e, *best = NULL;
	size_t i, best_len = 0;

	json_array_foreach(fs, i, e) {
		const char *rp = json_string_value(json_object_get(e, "path"));

		if (rp && policy_path_under(path, rp) && strlen(rp) >= best_len) {
			best_len = strlen(rp);
			best = json_object_get(e, "access");
		}
	}
	return best;
}

static bool has_right(json_t *rights, const char *name)
{
	size_t i;
	json_t *v;

	json_array_foreach(rights, i, v)
		if (streq_ptr(json_string_value(v), name))
			return true;
	return false;
}

int policy_explain_path(const struct policy *p, const struct compile_ctx *ctx, const char *path,
			json_t **ret, struct field_error *fe)
{
	_cleanup_(compiled_plan_freep) struct compiled_plan *cp = NULL;
	_cleanup_free_ char *rule = NULL, *why = NULL;
	json_t *mounts, *m, *decider = NULL, *rights;
	const char *type = NULL;
	bool visible = false, readable = false, writable = false, landlock;
	size_t i;
	int r;

	if (!path_is_absolute(path) || !path_is_normalized(path))
		return field_error_set(fe, -EINVAL, "params", "path",
				       "expected a normalized absolute path");
	r = policy_compile(p, ctx, &cp, fe);
	if (r < 0)
		return r;
	mounts = json_object_get(cp->plan, "mounts");
	json_array_foreach(mounts, i, m) {
		const char *t = json_string_value(json_object_get(m, "target"));

		if (t && policy_path_under(path, t))
			decider = m;
	}
	type = decider ? json_string_value(json_object_get(decider, "type")) : NULL;
	landlock = json_is_object(json_object_get(cp->plan, "landlock"));
	rights = landlock_rights(cp->plan, path);
	rule = rule_for(p, path);

	if (!type) {
		why = strdup(
			"no rule puts it in the sandbox: the root is an empty, read-only tmpfs "
			"(add it to filesystem.read or filesystem.write)");
	} else if (streq(type, "deny")) {
		int k = covering(p->fs.deny, path);

		free(TAKE_PTR(rule));
		if (k >= 0)
			rule = strdup_printf("filesystem.deny[%d] %s", k, p->fs.deny[k]);
		else
			rule = strdup("filesystem.hostExecuted (hidden: a hook directory)");
		why = strdup("hidden: an empty read-only file or directory lies over it");
	} else if (streq(type, "bind") || streq(type, "symlink")) {
		bool ro = json_is_true(json_object_get(decider, "readOnly"));
		const struct policy_workspace *ws = &p->fs.workspace;
		const char *rel = ws->present ? rel_under(path, ws->path) : NULL;

		visible = true;
		readable = !landlock || has_right(rights, "read-file") ||
			   has_right(rights, "read-dir");
		writable = !ro && (!landlock || has_right(rights, "write-file") ||
				   has_right(rights, "make-reg"));
		if (ro && rel && *rel && policy_host_exec_match(p, rel)) {
			free(TAKE_PTR(rule));
			rule = strdup_printf("filesystem.hostExecuted (%s)",
					     policy_host_exec_match(p, rel));
			why = strdup("the host runs it: kept read-only inside a writable workspace "
				     "(opt out with filesystem.hostExecuted.allow)");
		} else
			why = strdup_printf("the host's %s, %s",
					    json_string_value(json_object_get(decider, "target")),
					    ro ? "bound read-only" : "bound read-write");
	} else if (streq(type, "tmpfs") || streq(type, "dir")) {
		const char *t = json_string_value(json_object_get(decider, "target"));

		bool below = !streq(path, t);

		/* It starts empty: nothing below it is there until the sandbox makes it. */
		visible = readable = !below;
		writable = streq(type, "tmpfs");
		free(TAKE_PTR(rule));
		rule = strdup(streq(t, "/tmp") ? "filesystem.tmp" : "filesystem.home");
		why = strdup_printf("%sthe sandbox's own %s %s, not the host's",
				    below ? "not there at the start: below " : "",
				    streq(type, "tmpfs") ? "private tmpfs" : "empty directory", t);
	} else {
		visible = readable = true;
		why = strdup_printf("the sandbox's own /%s", type);
	}
	if (!why)
		return -ENOMEM;
	*ret = json_pack("{s:s,s:b,s:b,s:b,s:s?,s:s,s:O?}", "path", path, "visible", visible,
			 "readable", readable, "writable", writable, "rule", rule, "why", why,
			 "landlock", rights);
	return *ret ? 0 : -ENOMEM;
}
