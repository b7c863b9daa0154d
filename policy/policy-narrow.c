/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/policy-hostexec.h"
#include "policy/policy-narrow.h"
#include "policy/policy-syscalls.h"

#define PATHBUF 256

enum level {
	LEVEL_NONE,
	LEVEL_READ,
	LEVEL_WRITE,
};

static const char *const level_names[] = {
	[LEVEL_NONE] = "not visible",
	[LEVEL_READ] = "read-only",
	[LEVEL_WRITE] = "writable",
};

/* The entry that decides a path's access: the deepest one containing it; deny wins a tie. */
struct decider {
	enum level level;
	const char *entry; /* the entry's path, NULL when none */
	char field[PATHBUF];
};

static void consider(struct decider *d, const char *x, const char *entry, enum level level,
		     const char *list, size_t index)
{
	size_t n = strlen(entry);

	if (!policy_path_under(x, entry))
		return;
	if (d->entry) {
		size_t m = strlen(d->entry);

		if (n < m || (n == m && !(level == LEVEL_NONE && d->level != LEVEL_NONE)))
			return;
	}
	d->entry = entry;
	d->level = level;
	if (index == SIZE_MAX)
		(void)snprintf(d->field, sizeof(d->field), "%s", list);
	else
		json_path_index(d->field, sizeof(d->field), list, index);
}

static struct decider decide(const struct policy *p, const char *x)
{
	struct decider d = { .level = LEVEL_NONE };

	for (size_t i = 0; p->fs.read && p->fs.read[i]; i++)
		consider(&d, x, p->fs.read[i], LEVEL_READ, "filesystem.read", i);
	for (size_t i = 0; p->fs.write && p->fs.write[i]; i++)
		consider(&d, x, p->fs.write[i], LEVEL_WRITE, "filesystem.write", i);
	if (p->fs.workspace.present)
		consider(&d, x, p->fs.workspace.path,
			 p->fs.workspace.access == POLICY_ACCESS_READ_WRITE ? LEVEL_WRITE
									    : LEVEL_READ,
			 "filesystem.workspace", SIZE_MAX);
	for (size_t i = 0; p->fs.deny && p->fs.deny[i]; i++)
		consider(&d, x, p->fs.deny[i], LEVEL_NONE, "filesystem.deny", i);
	return d;
}

static int check_point(const struct policy *parent, const struct policy *child, const char *x,
		       struct field_error *err)
{
	struct decider pd = decide(parent, x), cd = decide(child, x);

	if (cd.level <= pd.level)
		return 0;
	/* A workspace that is not visible at all is its path's fault, else its access's. */
	if (startswith(cd.field, "filesystem.workspace"))
		(void)snprintf(cd.field, sizeof(cd.field), "filesystem.workspace.%s",
			       pd.level == LEVEL_NONE ? "path" : "access");
	if (!streq(cd.entry, x))
		return field_error_set(err, -EPERM, cd.field, NULL,
				       "\"%s\" (below \"%s\") is %s in the parent, %s here", x,
				       cd.entry, level_names[pd.level], level_names[cd.level]);
	return field_error_set(err, -EPERM, cd.field, NULL, "\"%s\" is %s in the parent", x,
			       pd.level == LEVEL_NONE	 ? "not visible"
			       : cd.level == LEVEL_WRITE ? "not writable"
							 : level_names[pd.level]);
}

static int check_points(const struct policy *parent, const struct policy *child,
			char *const *points, struct field_error *err)
{
	for (; points && *points; points++) {
		int r = check_point(parent, child, *points, err);

		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Access is constant between entry paths of either policy, so comparing at every entry path of
 * both covers every path.
 */
static int narrow_filesystem(const struct policy *parent, const struct policy *child,
			     struct field_error *err)
{
	const struct policy *ps[] = { child, parent };
	int r;

	for (size_t k = 0; k < ELEMENTSOF(ps); k++) {
		const struct policy *p = ps[k];
		char *ws[] = { p->fs.workspace.present ? p->fs.workspace.path : NULL, NULL };

		r = check_points(parent, child, p->fs.read, err);
		if (r >= 0)
			r = check_points(parent, child, p->fs.write, err);
		if (r >= 0)
			r = check_points(parent, child, ws, err);
		if (r >= 0)
			r = check_points(parent, child, p->fs.deny, err);
		if (r < 0)
			return r;
	}
	if (child->fs.tmp == POLICY_TMP_PRIVATE && parent->fs.tmp == POLICY_TMP_NONE)
		return field_error_set(err, -EPERM, "filesystem.tmp", NULL,
				       "the parent has no /tmp");
	if (child->fs.home == POLICY_HOME_TMPFS && parent->fs.home == POLICY_HOME_EMPTY)
		return field_error_set(err, -EPERM, "filesystem.home", NULL,
				       "the parent's $HOME is read-only (\"empty\")");
	/* A host-executed path the parent keeps read-only stays so; the home stays refused. */
	for (size_t i = 0; child->fs.host_exec_allow && child->fs.host_exec_allow[i]; i++) {
		const char *id = child->fs.host_exec_allow[i];
		char q[PATHBUF];

		if (streq(id, POLICY_HOST_EXEC_ALL) ? strv_contains(parent->fs.host_exec_allow, id)
						    : policy_host_exec_allowed(parent, id))
			continue;
		json_path_index(q, sizeof(q), "filesystem.hostExecuted.allow", i);
		return field_error_set(err, -EPERM, q, NULL, "\"%s\" is protected by the parent",
				       id);
	}
	if (child->fs.workspace.present && child->fs.workspace.allow_home &&
	    !(parent->fs.workspace.present && parent->fs.workspace.allow_home))
		return field_error_set(
			err, -EPERM, "filesystem.workspace.allowHome", NULL,
			"the parent does not allow the home directory as a workspace");
	return 0;
}

/*
 * Is a child's allowDomains entry covered by one of the parent's? Names: an exact name by an
 * equal name or a matching "*.suffix"; "*.a.b" by "*.a.b" or "*.b". Ports: a parent entry with a
 * port covers only that port; a child entry with a port needs it in the parent's allowPorts when
 * the covering parent entry has none.
 */
static bool domain_covered(const struct policy *parent, const char *entry)
{
	const char *colon = strchr(entry, ':');
	_cleanup_free_ char *name = strndup(entry, colon ? (size_t)(colon - entry) : strlen(entry));

	if (!name)
		return false;
	for (char **p = parent->net.allow_domains; p && *p; p++) {
		const char *pc = strchr(*p, ':');
		bool match;

		if (pc && (!colon || !streq(pc, colon)))
			continue;
		if (!pc && colon) {
			unsigned port = (unsigned)strtoul(colon + 1, NULL, 10);
			bool found = false;

			for (size_t k = 0; k < parent->net.n_allow_ports; k++)
				if (parent->net.allow_ports[k] == port)
					found = true;
			if (!found)
				continue;
		}
		if (name[0] == '*')
			match = (*p)[0] == '*' &&
				(strncmp(*p, name, strlen(name)) == 0
					 ? ((*p)[strlen(name)] == '\0' || (*p)[strlen(name)] == ':')
					 : policy_domain_matches(*p, name + 2));
		else
			match = policy_domain_matches(*p, name);
		if (match)
			return true;
	}
	return false;
}

static int narrow_network(const struct policy *parent, const struct policy *child,
			  struct field_error *err)
{
	char q[PATHBUF];

	if (policy_network_rank(child->net.mode) > policy_network_rank(parent->net.mode))
		return field_error_set(err, -EPERM, "network.mode", NULL,
				       "\"%s\" is wider than the parent's \"%s\"",
				       policy_network_to_string(child->net.mode),
				       policy_network_to_string(parent->net.mode));
	if ((child->net.mode != POLICY_NETWORK_PROXY && child->net.mode != POLICY_NETWORK_HOST) ||
	    child->net.mode != parent->net.mode)
		return 0;

	for (size_t i = 0; child->net.allow_domains && child->net.allow_domains[i]; i++)
		if (!domain_covered(parent, child->net.allow_domains[i])) {
			json_path_index(q, sizeof(q), "network.allowDomains", i);
			return field_error_set(err, -EPERM, q, NULL,
					       "\"%s\" is not allowed by the parent",
					       child->net.allow_domains[i]);
		}
	for (size_t i = 0; parent->net.deny_domains && parent->net.deny_domains[i]; i++)
		if (!strv_contains(child->net.deny_domains, parent->net.deny_domains[i]))
			return field_error_set(err, -EPERM, "network.denyDomains", NULL,
					       "the parent denies \"%s\"; keep it denied",
					       parent->net.deny_domains[i]);
	for (size_t i = 0; i < child->net.n_allow_ports; i++) {
		bool found = false;

		for (size_t k = 0; k < parent->net.n_allow_ports; k++)
			if (parent->net.allow_ports[k] == child->net.allow_ports[i])
				found = true;
		if (!found) {
			json_path_index(q, sizeof(q), "network.allowPorts", i);
			return field_error_set(err, -EPERM, q, NULL,
					       "port %u is not allowed by the parent",
					       child->net.allow_ports[i]);
		}
	}
	for (size_t i = 0; child->net.resolve && child->net.resolve[i]; i++)
		if (!strv_contains(parent->net.resolve, child->net.resolve[i])) {
			json_path_index(q, sizeof(q), "network.resolve", i);
			return field_error_set(err, -EPERM, q, NULL,
					       "\"%s\" is not pinned by the parent",
					       child->net.resolve[i]);
		}
	return 0;
}

static int narrow_limits(const struct policy *parent, const struct policy *child,
			 struct field_error *err)
{
	const struct {
		const char *key;
		uint64_t p, c;
	} l[] = {
		{ "pids", parent->limits.pids, child->limits.pids },
		{ "cpuSeconds", parent->limits.cpu_seconds, child->limits.cpu_seconds },
		{ "wallSeconds", parent->limits.wall_seconds, child->limits.wall_seconds },
		{ "maxOutputBytes", parent->limits.max_output_bytes,
		  child->limits.max_output_bytes },
		{ "files", parent->limits.files, child->limits.files },
	};
	uint64_t pm = parent->limits.memory_bytes, cm = child->limits.memory_bytes;

	for (size_t i = 0; i < ELEMENTSOF(l); i++) {
		uint64_t p = policy_limit_effective(l[i].key, l[i].p);
		uint64_t c = policy_limit_effective(l[i].key, l[i].c);

		if (c <= p)
			continue;
		if (p == UINT64_MAX || c != UINT64_MAX)
			return field_error_set(err, -EPERM, "limits", l[i].key,
					       "%llu is above the parent's %llu",
					       (unsigned long long)c, (unsigned long long)p);
		return field_error_set(err, -EPERM, "limits", l[i].key,
				       "0 (none) is above the parent's %llu",
				       (unsigned long long)p);
	}
	/* 0 is "the default share of RAM", known only once resolved against a host. */
	if (pm == cm)
		return 0;
	if (pm == 0 || cm == 0)
		return field_error_set(err, -EPERM, "limits", "memoryBytes",
				       "cannot compare %llu with the default share of RAM; resolve "
				       "both policies first",
				       (unsigned long long)(cm ? cm : pm));
	if (cm > pm)
		return field_error_set(err, -EPERM, "limits", "memoryBytes",
				       "%llu is above the parent's %llu", (unsigned long long)cm,
				       (unsigned long long)pm);
	return 0;
}

static bool rule_at_least(const struct policy_syscall_rule *c, size_t n_c,
			  const struct policy_syscall_rule *want)
{
	for (size_t i = 0; i < n_c; i++)
		if (streq(c[i].name, want->name))
			return c[i].cond == want->cond || c[i].cond == POLICY_SYSCALL_DENY;
	return false;
}

static int narrow_syscalls(const struct policy *parent, const struct policy *child,
			   struct field_error *err)
{
	_cleanup_free_ struct policy_syscall_rule *pr = NULL, *cr = NULL;
	size_t n_p = 0, n_c = 0;
	char q[PATHBUF];
	int r;

	if (child->syscalls.profile < parent->syscalls.profile)
		return field_error_set(err, -EPERM, "syscalls.profile", NULL,
				       "\"%s\" is wider than the parent's \"%s\"",
				       policy_syscall_profile_to_string(child->syscalls.profile),
				       policy_syscall_profile_to_string(parent->syscalls.profile));
	r = policy_syscall_spec(parent, &pr, &n_p);
	if (r < 0)
		return r;
	r = policy_syscall_spec(child, &cr, &n_c);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n_p; i++) {
		if (rule_at_least(cr, n_c, &pr[i]))
			continue;
		for (size_t k = 0; child->syscalls.allow && child->syscalls.allow[k]; k++)
			if (streq(child->syscalls.allow[k], pr[i].name)) {
				json_path_index(q, sizeof(q), "syscalls.allow", k);
				return field_error_set(err, -EPERM, q, NULL,
						       "\"%s\" is denied by the parent",
						       pr[i].name);
			}
		return field_error_set(err, -EPERM, "syscalls.deny", NULL,
				       "\"%s\" is denied by the parent; add it", pr[i].name);
	}
	return 0;
}

int policy_narrow(const struct policy *parent, const struct policy *child, struct field_error *err)
{
	char q[PATHBUF];
	int r;

	r = narrow_filesystem(parent, child, err);
	if (r < 0)
		return r;
	r = narrow_network(parent, child, err);
	if (r < 0)
		return r;
	if (child->host_execution && !parent->host_execution)
		return field_error_set(err, -EPERM, "hostExecution", NULL,
				       "the parent does not allow host execution");
	r = narrow_limits(parent, child, err);
	if (r < 0)
		return r;
	for (size_t i = 0; child->env.pass && child->env.pass[i]; i++)
		if (!strv_contains(parent->env.pass, child->env.pass[i])) {
			json_path_index(q, sizeof(q), "env.pass", i);
			return field_error_set(err, -EPERM, q, NULL,
					       "the parent does not pass \"%s\"",
					       child->env.pass[i]);
		}
	r = narrow_syscalls(parent, child, err);
	if (r < 0)
		return r;
	for (size_t i = 0; child->optional && child->optional[i]; i++)
		if (!strv_contains(parent->optional, child->optional[i])) {
			json_path_index(q, sizeof(q), "optional", i);
			return field_error_set(err, -EPERM, q, NULL,
					       "\"%s\" is required by the parent",
					       child->optional[i]);
		}
	return 0;
}
