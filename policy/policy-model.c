/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/openat2.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "policy/policy-model.h"

struct policy *policy_new(void)
{
	struct policy *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->version = POLICY_VERSION;
	return p;
}

struct policy *policy_free(struct policy *p)
{
	if (!p)
		return NULL;
	strv_free(p->fs.read);
	strv_free(p->fs.write);
	strv_free(p->fs.deny);
	free(p->fs.workspace.path);
	free(p->fs.workspace.mount_at);
	strv_free(p->fs.host_exec_allow);
	strv_free(p->net.allow_domains);
	strv_free(p->net.deny_domains);
	free(p->net.allow_ports);
	strv_free(p->net.resolve);
	strv_free(p->env.pass);
	strv_free(p->env.set);
	strv_free(p->syscalls.deny);
	strv_free(p->syscalls.allow);
	strv_free(p->optional);
	free(p);
	return NULL;
}

/* Copy a vector, keeping NULL as NULL. */
static int strv_dup(char *const *l, char ***ret)
{
	if (!l) {
		*ret = NULL;
		return 0;
	}
	*ret = strv_copy(l);
	return *ret ? 0 : -ENOMEM;
}

static int strdup_maybe(const char *s, char **ret)
{
	if (!s) {
		*ret = NULL;
		return 0;
	}
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

int policy_copy(const struct policy *p, struct policy **ret)
{
	_cleanup_policy_ struct policy *c = policy_new();

	if (!c)
		return -ENOMEM;
	/* Scalars first, then replace every owned pointer with a copy. */
	*c = *p;
	c->fs.read = c->fs.write = c->fs.deny = NULL;
	c->fs.workspace.path = c->fs.workspace.mount_at = NULL;
	c->fs.host_exec_allow = NULL;
	c->net.allow_domains = c->net.deny_domains = c->net.resolve = NULL;
	c->net.allow_ports = NULL;
	c->env.pass = c->env.set = NULL;
	c->syscalls.deny = c->syscalls.allow = NULL;
	c->optional = NULL;

	if (strv_dup(p->fs.read, &c->fs.read) < 0 || strv_dup(p->fs.write, &c->fs.write) < 0 ||
	    strv_dup(p->fs.deny, &c->fs.deny) < 0 ||
	    strdup_maybe(p->fs.workspace.path, &c->fs.workspace.path) < 0 ||
	    strdup_maybe(p->fs.workspace.mount_at, &c->fs.workspace.mount_at) < 0 ||
	    strv_dup(p->fs.host_exec_allow, &c->fs.host_exec_allow) < 0 ||
	    strv_dup(p->net.allow_domains, &c->net.allow_domains) < 0 ||
	    strv_dup(p->net.deny_domains, &c->net.deny_domains) < 0 ||
	    strv_dup(p->net.resolve, &c->net.resolve) < 0 ||
	    strv_dup(p->env.pass, &c->env.pass) < 0 || strv_dup(p->env.set, &c->env.set) < 0 ||
	    strv_dup(p->syscalls.deny, &c->syscalls.deny) < 0 ||
	    strv_dup(p->syscalls.allow, &c->syscalls.allow) < 0 ||
	    strv_dup(p->optional, &c->optional) < 0)
		return -ENOMEM;
	if (p->net.n_allow_ports > 0) {
		c->net.allow_ports = calloc(p->net.n_allow_ports, sizeof(unsigned));
		if (!c->net.allow_ports)
			return -ENOMEM;
		memcpy(c->net.allow_ports, p->net.allow_ports,
		       p->net.n_allow_ports * sizeof(unsigned));
	}
	*ret = TAKE_PTR(c);
	return 0;
}

const char *policy_access_to_string(enum policy_access a)
{
	return a == POLICY_ACCESS_READ_WRITE ? "read-write" : "read-only";
}

const char *policy_tmp_to_string(enum policy_tmp t)
{
	return t == POLICY_TMP_NONE ? "none" : "private";
}

const char *policy_home_to_string(enum policy_home h)
{
	return h == POLICY_HOME_TMPFS ? "tmpfs" : "empty";
}

static const char *const network_names[] = {
	[POLICY_NETWORK_NONE] = "none",	  [POLICY_NETWORK_LOOPBACK] = "loopback",
	[POLICY_NETWORK_PROXY] = "proxy", [POLICY_NETWORK_HOST] = "host",
	[POLICY_NETWORK_UNIX] = "unix",
};

const char *policy_network_to_string(enum policy_network n)
{
	return (size_t)n < ELEMENTSOF(network_names) ? network_names[n] : "none";
}

int policy_network_from_string(const char *s, enum policy_network *ret)
{
	for (size_t i = 0; i < ELEMENTSOF(network_names); i++)
		if (streq(s, network_names[i])) {
			*ret = (enum policy_network)i;
			return 0;
		}
	return -EINVAL;
}

const char *policy_syscall_profile_to_string(enum policy_syscall_profile s)
{
	return s == POLICY_SYSCALLS_STRICT ? "strict" : "default";
}

int policy_path_canonicalize(const char *in, char **ret, const char **ret_reason)
{
	_cleanup_free_ char *out = NULL;
	const char *rest, *c;
	size_t n = 0, len;

	if (isempty(in)) {
		*ret_reason = "empty path";
		return -EINVAL;
	}
	len = strlen(in);
	if (len > POLICY_PATH_MAX) {
		*ret_reason = "path too long";
		return -EINVAL;
	}
	for (const char *q = in; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f) {
			*ret_reason = "control character in path";
			return -EINVAL;
		}
	/* Room for an added "./" prefix and the terminator. */
	out = malloc(len + 3);
	if (!out)
		return -ENOMEM;
	if (in[0] == '/') {
		rest = in;
	} else if (in[0] == '~') {
		if (in[1] != '\0' && in[1] != '/') {
			*ret_reason = "\"~user\" is not supported; use \"~\" or an absolute path";
			return -EINVAL;
		}
		out[n++] = '~';
		rest = in + 1;
	} else {
		out[n++] = '.';
		rest = in;
	}

	for (c = rest;;) {
		const char *e;
		size_t k;

		while (*c == '/')
			c++;
		if (!*c)
			break;
		e = strchr(c, '/');
		k = e ? (size_t)(e - c) : strlen(c);
		if (k == 2 && c[0] == '.' && c[1] == '.') {
			*ret_reason = "\"..\" is not allowed in a path";
			return -EINVAL;
		}
		if (!(k == 1 && c[0] == '.')) {
			out[n++] = '/';
			memcpy(out + n, c, k);
			n += k;
		}
		c += k;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	*ret = TAKE_PTR(out);
	return 0;
}

int policy_host_open(int root_fd, bool in_root, const char *path, int flags)
{
	const char *rel = streq(path, "/") ? "." : path + 1;
	int fd;

	if (in_root)
		return fd_openat2(root_fd, rel, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	fd = openat(root_fd, rel, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

bool policy_path_under(const char *path, const char *prefix)
{
	size_t n;

	if (streq(prefix, "/"))
		return path[0] == '/';
	n = strlen(prefix);
	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

char *policy_path_resolve(const char *path, const char *home, const char *cwd)
{
	const char *base, *rest;

	if (path[0] == '/')
		return strdup(path);
	base = path[0] == '~' ? home : cwd;
	rest = path + 1; /* "" or "/..." */
	if (!*rest)
		return strdup(base);
	if (streq(base, "/"))
		return strdup(rest);
	return strdup_printf("%s%s", base, rest);
}

bool policy_domain_matches(const char *pattern, const char *name)
{
	const char *colon = strchr(pattern, ':');
	size_t plen = colon ? (size_t)(colon - pattern) : strlen(pattern);
	size_t nlen = strlen(name);

	if (plen > 2 && pattern[0] == '*' && pattern[1] == '.') {
		/* "*.example.com" matches "a.example.com" and "a.b.example.com", not the apex. */
		size_t slen = plen - 1; /* ".example.com" */

		return nlen > slen && memcmp(name + nlen - slen, pattern + 1, slen) == 0;
	}
	return nlen == plen && memcmp(name, pattern, plen) == 0;
}

uint64_t policy_limit_effective(const char *field, uint64_t v)
{
	if (v == 0 && (streq(field, "cpuSeconds") || streq(field, "wallSeconds")))
		return UINT64_MAX;
	return v;
}

static const char *const optional_ids[] = {
	"landlock",	"landlock.fs",	      "landlock.net",	    "landlock.scope",
	"seccomp",	"limits.pids",	      "limits.memoryBytes", "limits.cpuSeconds",
	"limits.files", "limits.wallSeconds",
};

bool policy_optional_valid(const struct policy *p, const char *id)
{
	const char *path;

	for (size_t i = 0; i < ELEMENTSOF(optional_ids); i++)
		if (streq(id, optional_ids[i]))
			return true;
	path = startswith(id, "path:");
	if (path)
		return strv_contains(p->fs.read, path) || strv_contains(p->fs.write, path) ||
		       (p->fs.workspace.present && streq_ptr(p->fs.workspace.path, path));
	return false;
}

bool policy_is_optional(const struct policy *p, const char *id)
{
	return strv_contains(p->optional, id);
}

uint64_t policy_default_memory_bytes(uint64_t mem_total)
{
	if (mem_total == 0)
		return 2ULL * 1024 * 1024 * 1024;
	return mem_total / 2 < 1024ULL * 1024 ? 1024ULL * 1024 : mem_total / 2;
}

static int resolve_strv(char **l, const struct compile_ctx *ctx)
{
	if (!l)
		return 0;
	for (char **s = l; *s; s++) {
		char *r = policy_path_resolve(*s, ctx->home, ctx->cwd);

		if (!r)
			return -ENOMEM;
		free(*s);
		*s = r;
	}
	return 0;
}

int policy_resolve(struct policy *p, const struct compile_ctx *ctx, struct field_error *err)
{
	int r;

	if (p->resolved)
		return 0;
	if (!path_is_normalized(ctx->cwd))
		return field_error_set(err, -EINVAL, "context.cwd", NULL,
				       "not a normalized absolute path");
	if (!path_is_normalized(ctx->home))
		return field_error_set(err, -EINVAL, "context.home", NULL,
				       "not a normalized absolute path");
	r = resolve_strv(p->fs.read, ctx);
	if (r >= 0)
		r = resolve_strv(p->fs.write, ctx);
	if (r >= 0)
		r = resolve_strv(p->fs.deny, ctx);
	if (r < 0)
		return r;
	if (p->fs.workspace.present) {
		char *w = policy_path_resolve(p->fs.workspace.path, ctx->home, ctx->cwd);

		if (!w)
			return -ENOMEM;
		free(p->fs.workspace.path);
		p->fs.workspace.path = w;
	}
	/* "path:<p>" optional ids follow their paths. */
	for (char **o = p->optional; o && *o; o++) {
		const char *path = startswith(*o, "path:");
		_cleanup_free_ char *rp = NULL;
		char *id;

		if (!path)
			continue;
		rp = policy_path_resolve(path, ctx->home, ctx->cwd);
		if (!rp)
			return -ENOMEM;
		id = strdup_printf("path:%s", rp);
		if (!id)
			return -ENOMEM;
		free(*o);
		*o = id;
	}
	if (p->limits.memory_bytes == 0)
		p->limits.memory_bytes = policy_default_memory_bytes(ctx->mem_total);
	p->resolved = true;
	return 0;
}

int policy_host_caps_from_hello(json_t *hello, struct policy_host_caps *ret,
				struct field_error *err)
{
	struct policy_host_caps c = {
		.floor_max_network = POLICY_NETWORK_HOST,
	};
	const char *mode = NULL, *cgroup = NULL, *maxnet = NULL, *pids = NULL;
	uint64_t abi = 0;
	json_t *floor = NULL, *req = NULL;
	int r;

	r = ipc_json_get_string(hello, "mode", true, "", &mode, err);
	if (r < 0)
		return r;
	if (streq(mode, "privileged"))
		c.mode = POLICY_LAUNCHER_PRIVILEGED;
	else if (streq(mode, "user"))
		c.mode = POLICY_LAUNCHER_USER;
	else
		return field_error_set(err, -EINVAL, "mode", NULL, "expected privileged or user");
	r = ipc_json_get_uint64(hello, "landlockAbi", true, 0, 1000, "", &abi, err);
	if (r < 0)
		return r;
	c.landlock_abi = (unsigned)abi;
	r = ipc_json_get_bool(hello, "seccomp", true, "", &c.seccomp, err);
	if (r < 0)
		return r;
	r = ipc_json_get_bool(hello, "userns", false, "", &c.userns, err);
	if (r < 0)
		return r;
	r = ipc_json_get_string(hello, "pidsLimit", false, "", &pids, err);
	if (r < 0)
		return r;
	c.pids_nproc = pids && streq(pids, "rlimit-nproc") && c.userns;
	r = ipc_json_get_string(hello, "cgroup", false, "", &cgroup, err);
	if (r < 0)
		return r;
	if (!cgroup || streq(cgroup, "none") || streq(cgroup, ""))
		c.cgroup = POLICY_CGROUP_NONE;
	else if (streq(cgroup, "v1"))
		c.cgroup = POLICY_CGROUP_V1;
	else if (streq(cgroup, "v2"))
		c.cgroup = POLICY_CGROUP_V2;
	else
		return field_error_set(err, -EINVAL, "cgroup", NULL, "expected v1, v2 or none");

	r = ipc_json_get_object(hello, "floor", false, "", &floor, err);
	if (r < 0)
		return r;
	if (floor) {
		size_t i;
		json_t *v;

		r = ipc_json_get_array(floor, "require", false, 16, "floor", &req, err);
		if (r < 0)
			return r;
		json_array_foreach(req, i, v) {
			if (!json_is_string(v))
				return field_error_set(err, -EINVAL, "floor.require", NULL,
						       "expected strings");
			if (streq(json_string_value(v), "landlock"))
				c.floor_require_landlock = true;
			else if (streq(json_string_value(v), "seccomp"))
				c.floor_require_seccomp = true;
		}
		r = ipc_json_get_string(floor, "maxNetwork", false, "floor", &maxnet, err);
		if (r < 0)
			return r;
		if (maxnet && policy_network_from_string(maxnet, &c.floor_max_network) < 0)
			return field_error_set(err, -EINVAL, "floor.maxNetwork", NULL,
					       "unknown network mode");
		r = ipc_json_get_bool(floor, "hostMode", false, "floor", &c.floor_host_mode, err);
		if (r < 0)
			return r;
	}
	*ret = c;
	return 0;
}

static json_t *strv_to_json(char *const *l)
{
	json_t *a = json_array();

	if (!a)
		return NULL;
	for (; l && *l; l++)
		if (json_array_append_new(a, json_string(*l)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

int policy_to_json(const struct policy *p, json_t **ret)
{
	_cleanup_json_ json_t *ports = json_array(), *set = json_object(), *ws = NULL, *j = NULL;

	if (!ports || !set)
		return -ENOMEM;
	for (size_t i = 0; i < p->net.n_allow_ports; i++)
		if (json_array_append_new(ports, json_integer(p->net.allow_ports[i])) < 0)
			return -ENOMEM;
	for (char **e = p->env.set; e && *e; e++) {
		_cleanup_free_ char *name = strdup(*e);
		char *eq;

		if (!name)
			return -ENOMEM;
		eq = strchr(name, '=');
		if (!eq)
			return -EINVAL;
		*eq = '\0';
		if (json_object_set_new(set, name, json_string(eq + 1)) < 0)
			return -ENOMEM;
	}
	if (p->fs.workspace.present)
		ws = json_pack("{s:s, s:s, s:s?, s:b}", "path", p->fs.workspace.path, "access",
			       policy_access_to_string(p->fs.workspace.access), "mountAt",
			       p->fs.workspace.mount_at, "allowHome", p->fs.workspace.allow_home);
	else
		ws = json_null();
	if (!ws)
		return -ENOMEM;

	j = json_pack(
		"{s:i, s:{s:o, s:o, s:o, s:s, s:s, s:O, s:{s:o}}, s:{s:s, s:o, s:o, s:O, s:o},"
		" s:b, s:{s:I, s:I, s:I, s:I, s:I, s:I}, s:{s:o, s:O}, s:{s:s, s:o, s:o}, s:o}",
		"version", (int)p->version, "filesystem", "read", strv_to_json(p->fs.read), "write",
		strv_to_json(p->fs.write), "deny", strv_to_json(p->fs.deny), "tmp",
		policy_tmp_to_string(p->fs.tmp), "home", policy_home_to_string(p->fs.home),
		"workspace", ws, "hostExecuted", "allow", strv_to_json(p->fs.host_exec_allow),
		"network", "mode", policy_network_to_string(p->net.mode), "allowDomains",
		strv_to_json(p->net.allow_domains), "denyDomains",
		strv_to_json(p->net.deny_domains), "allowPorts", ports, "resolve",
		strv_to_json(p->net.resolve), "hostExecution", p->host_execution, "limits", "pids",
		(json_int_t)p->limits.pids, "memoryBytes", (json_int_t)p->limits.memory_bytes,
		"cpuSeconds", (json_int_t)p->limits.cpu_seconds, "wallSeconds",
		(json_int_t)p->limits.wall_seconds, "maxOutputBytes",
		(json_int_t)p->limits.max_output_bytes, "files", (json_int_t)p->limits.files, "env",
		"pass", strv_to_json(p->env.pass), "set", set, "syscalls", "profile",
		policy_syscall_profile_to_string(p->syscalls.profile), "deny",
		strv_to_json(p->syscalls.deny), "allow", strv_to_json(p->syscalls.allow),
		"optional", strv_to_json(p->optional));
	if (!j)
		return -ENOMEM;
	*ret = TAKE_PTR(j);
	return 0;
}

const char *const policy_landlock_fs_access[] = {
	"execute",   "write-file", "read-file", "read-dir",  "remove-dir", "remove-file",
	"make-char", "make-dir",   "make-reg",	"make-sock", "make-fifo",  "make-block",
	"make-sym",  "refer",	   "truncate",	"ioctl-dev",
};
const unsigned policy_landlock_fs_access_abi[] = {
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 5,
};
const size_t policy_landlock_fs_access_count = ELEMENTSOF(policy_landlock_fs_access);
