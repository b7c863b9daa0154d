/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "policy/policy-default.h"
#include "policy/policy-hostexec.h"
#include "policy/policy-parse.h"
#include "policy/policy-syscalls.h"

#define PATHBUF 256

/* Replace *dst with src, freeing the old vector. */
static void strv_replace(char ***dst, char **src)
{
	strv_free(*dst);
	*dst = src;
}

static int check_enum(const char *v, const char *const *names, const char *path, const char *key,
		      struct field_error *err)
{
	for (size_t i = 0; names[i]; i++)
		if (streq(v, names[i]))
			return (int)i;
	return field_error_set(err, -EINVAL, path, key, "unknown value \"%s\"", v);
}

/* Paths cordon itself provides inside every sandbox; listing them would expose the host's. */
static bool path_reserved(const char *canon)
{
	return policy_path_under(canon, "/proc") || policy_path_under(canon, "/dev");
}

/* One entry of a string list: its canonical form in *out, or an error naming q. */
typedef int (*list_item_fn)(const char *in, const char *key, const char *q, char **out,
			    struct field_error *err);

/*
 * obj[key]: an optional array of at most max strings, each made canonical by item. An entry
 * listed twice is refused, or with merge dropped (the same grant twice is one grant). 1 with
 * *ret set, 0 when absent.
 */
static int parse_list_full(json_t *obj, const char *key, const char *path, size_t max,
			   const char *expected, list_item_fn item, bool merge, char ***ret,
			   struct field_error *err)
{
	_cleanup_strv_free_ char **l = NULL;
	char p[PATHBUF];
	json_t *a = NULL, *v;
	size_t i, n = 0;
	int r;

	r = ipc_json_get_array(obj, key, false, max, path, &a, err);
	if (r <= 0)
		return r;
	json_path_join(p, sizeof(p), path, key);
	l = calloc(json_array_size(a) + 1, sizeof(char *));
	if (!l)
		return -ENOMEM;
	json_array_foreach(a, i, v) {
		char q[PATHBUF];

		json_path_index(q, sizeof(q), p, i);
		if (!json_is_string(v))
			return field_error_set(err, -EINVAL, q, NULL, "expected %s", expected);
		r = item(json_string_value(v), key, q, &l[n], err);
		if (r < 0)
			return r;
		for (size_t k = 0; k < n; k++)
			if (streq(l[k], l[n])) {
				if (!merge)
					return field_error_set(
						err, -EINVAL, q, NULL,
						"\"%s\" is already listed in %s[%zu]", l[n], p, k);
				free(l[n]);
				l[n] = NULL;
				break;
			}
		if (l[n])
			n++;
	}
	*ret = TAKE_PTR(l);
	return 1;
}

static int parse_list(json_t *obj, const char *key, const char *path, size_t max,
		      const char *expected, list_item_fn item, char ***ret, struct field_error *err)
{
	return parse_list_full(obj, key, path, max, expected, item, false, ret, err);
}

static int path_item(const char *in, const char *key, const char *q, char **out,
		     struct field_error *err)
{
	const char *reason = NULL;
	int r;

	r = policy_path_canonicalize(in, out, &reason);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return field_error_set(err, r, q, NULL, "%s", reason);
	if (streq(*out, "/") && !streq(key, "deny"))
		return field_error_set(err, -EINVAL, q, NULL,
				       "the sandbox has a fresh root; list directories "
				       "instead of \"/\"");
	if (path_reserved(*out))
		return field_error_set(err, -EINVAL, q, NULL,
				       "\"%s\" is provided by cordon and cannot be listed", *out);
	return 0;
}

static int parse_path_list(json_t *obj, const char *key, const char *path, char ***ret,
			   struct field_error *err)
{
	return parse_list_full(obj, key, path, POLICY_LIST_MAX, "a path string", path_item, true,
			       ret, err);
}

static int parse_workspace(struct policy *p, json_t *fs, struct field_error *err)
{
	static const char *const keys[] = { "path", "access", "mountAt", "allowHome", NULL };
	static const char *const access_names[] = { "read-only", "read-write", NULL };
	const char *P = "filesystem.workspace";
	const char *s = NULL, *reason = NULL;
	json_t *w = json_object_get(fs, "workspace");
	int r;

	if (!w)
		return 0;
	if (json_is_null(w)) {
		free(p->fs.workspace.path);
		free(p->fs.workspace.mount_at);
		p->fs.workspace = (struct policy_workspace){ .present = false };
		return 0;
	}
	if (!json_is_object(w))
		return field_error_set(err, -EINVAL, P, NULL, "expected an object or null");
	r = ipc_json_check_keys(w, keys, P, err);
	if (r < 0)
		return r;
	if (!p->fs.workspace.present) {
		p->fs.workspace = (struct policy_workspace){ .present = true,
							     .access = POLICY_ACCESS_READ_WRITE };
		p->fs.workspace.path = strdup(".");
		if (!p->fs.workspace.path)
			return -ENOMEM;
	}

	r = ipc_json_get_string(w, "path", false, P, &s, err);
	if (r < 0)
		return r;
	if (r > 0) {
		char *c = NULL;

		r = policy_path_canonicalize(s, &c, &reason);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return field_error_set(err, r, P, "path", "%s", reason);
		if (streq(c, "/") || path_reserved(c)) {
			free(c);
			return field_error_set(err, -EINVAL, P, "path",
					       "the workspace cannot be \"%s\"", s);
		}
		free(p->fs.workspace.path);
		p->fs.workspace.path = c;
	}

	s = NULL;
	r = ipc_json_get_string(w, "access", false, P, &s, err);
	if (r < 0)
		return r;
	if (r > 0) {
		r = check_enum(s, access_names, P, "access", err);
		if (r < 0)
			return r;
		p->fs.workspace.access = (enum policy_access)r;
	}

	if (json_object_get(w, "mountAt")) {
		char *c = NULL;

		s = NULL;
		r = ipc_json_get_string(w, "mountAt", false, P, &s, err);
		if (r < 0)
			return r;
		if (r > 0) {
			r = policy_path_canonicalize(s, &c, &reason);
			if (r == -ENOMEM)
				return r;
			if (r < 0)
				return field_error_set(err, r, P, "mountAt", "%s", reason);
			if (c[0] != '/' || streq(c, "/") || path_reserved(c)) {
				free(c);
				return field_error_set(err, -EINVAL, P, "mountAt",
						       "must be an absolute path other than /, "
						       "/proc and /dev");
			}
		}
		free(p->fs.workspace.mount_at);
		p->fs.workspace.mount_at = c;
	}
	r = ipc_json_get_bool(w, "allowHome", false, P, &p->fs.workspace.allow_home, err);
	return r < 0 ? r : 0;
}

static int host_exec_item(const char *in, const char *key, const char *q, char **out,
			  struct field_error *err)
{
	if (!streq(in, POLICY_HOST_EXEC_ALL) && !policy_host_exec_entry_find(in))
		return field_error_set(err, -EINVAL, q, NULL,
				       "\"%s\" is not a host-executed path cordon knows (see "
				       "cordon-policy(5), HOST-EXECUTED PATHS)",
				       in);
	*out = strdup(in);
	return *out ? 0 : -ENOMEM;
}

/* filesystem.hostExecuted: {"allow": [entry ids, or "*"]} */
static int parse_host_executed(struct policy *p, json_t *fs, struct field_error *err)
{
	static const char *const keys[] = { "allow", NULL };
	const char *P = "filesystem.hostExecuted";
	json_t *h = NULL;
	char **l = NULL;
	int r;

	r = ipc_json_get_object(fs, "hostExecuted", false, "filesystem", &h, err);
	if (r <= 0)
		return r;
	r = ipc_json_check_keys(h, keys, P, err);
	if (r < 0)
		return r;
	r = parse_list(h, "allow", P, POLICY_LIST_MAX, "an entry name", host_exec_item, &l, err);
	if (r < 0)
		return r;
	if (r > 0)
		strv_replace(&p->fs.host_exec_allow, l);
	return 0;
}

static int parse_filesystem(struct policy *p, json_t *doc, struct field_error *err)
{
	static const char *const keys[] = { "read", "write",	 "deny",	 "tmp",
					    "home", "workspace", "hostExecuted", NULL };
	static const char *const tmp_names[] = { "private", "none", NULL };
	static const char *const home_names[] = { "empty", "tmpfs", NULL };
	const char *P = "filesystem";
	json_t *fs = NULL;
	const char *s = NULL;
	char **l = NULL;
	int r;

	r = ipc_json_get_object(doc, "filesystem", false, "", &fs, err);
	if (r <= 0)
		return r;
	r = ipc_json_check_keys(fs, keys, P, err);
	if (r < 0)
		return r;

	r = parse_path_list(fs, "read", P, &l, err);
	if (r < 0)
		return r;
	if (r > 0) {
		strv_replace(&p->fs.read, l);
		p->fs.read_is_default = false;
	}
	l = NULL;
	r = parse_path_list(fs, "write", P, &l, err);
	if (r < 0)
		return r;
	if (r > 0)
		strv_replace(&p->fs.write, l);
	l = NULL;
	r = parse_path_list(fs, "deny", P, &l, err);
	if (r < 0)
		return r;
	if (r > 0)
		strv_replace(&p->fs.deny, l);

	r = ipc_json_get_string(fs, "tmp", false, P, &s, err);
	if (r < 0)
		return r;
	if (r > 0) {
		r = check_enum(s, tmp_names, P, "tmp", err);
		if (r < 0)
			return r;
		p->fs.tmp = (enum policy_tmp)r;
	}
	s = NULL;
	r = ipc_json_get_string(fs, "home", false, P, &s, err);
	if (r < 0)
		return r;
	if (r > 0) {
		r = check_enum(s, home_names, P, "home", err);
		if (r < 0)
			return r;
		p->fs.home = (enum policy_home)r;
	}
	r = parse_host_executed(p, fs, err);
	if (r < 0)
		return r;
	return parse_workspace(p, fs, err);
}

/*
 * A domain pattern: "name" or "*.suffix", each optionally ":port". Labels of [a-z0-9-] (ASCII
 * upper case is folded), 1–63 bytes, at most 253 in all; no leading or trailing '-' or '.'.
 */
static int domain_canonicalize(const char *in, char **ret, const char **ret_reason)
{
	_cleanup_free_ char *d = strdup(in);
	char *colon, *name;
	size_t label = 0;

	if (!d)
		return -ENOMEM;
	colon = strchr(d, ':');
	if (colon) {
		unsigned port;

		*colon = '\0';
		if (safe_atou(colon + 1, &port) < 0 || port < 1 || port > 65535) {
			*ret_reason = "the port must be 1..65535";
			return -EINVAL;
		}
		*colon = ':';
	}
	name = d;
	if (name[0] == '*') {
		if (name[1] != '.') {
			*ret_reason = "a wildcard must be a leading \"*.\"";
			return -EINVAL;
		}
		name += 2;
	}
	if (!*name || *name == ':' || *name == '.' || *name == '-') {
		*ret_reason = "not a domain name";
		return -EINVAL;
	}
	for (char *c = name; *c && *c != ':'; c++) {
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
		if (*c == '.') {
			if (label == 0 || c[-1] == '-' || c[1] == '.' || c[1] == ':' || !c[1]) {
				*ret_reason = "empty label or label ending in '-'";
				return -EINVAL;
			}
			label = 0;
			continue;
		}
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-')) {
			*ret_reason = "only letters, digits, '-' and '.' are allowed";
			return -EINVAL;
		}
		if (++label > 63) {
			*ret_reason = "a label is longer than 63 bytes";
			return -EINVAL;
		}
	}
	if ((colon ? (size_t)(colon - name) : strlen(name)) > 253) {
		*ret_reason = "longer than 253 bytes";
		return -EINVAL;
	}
	*ret = TAKE_PTR(d);
	return 0;
}

static int domain_item(const char *in, const char *key, const char *q, char **out,
		       struct field_error *err)
{
	const char *reason = NULL;
	int r;

	r = domain_canonicalize(in, out, &reason);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return field_error_set(err, r, q, NULL, "\"%s\": %s", in, reason);
	return 0;
}

static int parse_domain_list(json_t *obj, const char *key, const char *path, char ***ret,
			     struct field_error *err)
{
	return parse_list(obj, key, path, POLICY_DOMAINS_MAX, "a domain string", domain_item, ret,
			  err);
}

/* "name=address": a pinned address for a name, used by the proxy instead of DNS. */
static int resolve_item(const char *in, const char *key, const char *q, char **out,
			struct field_error *err)
{
	_cleanup_free_ char *name = NULL, *canon = NULL;
	const char *reason = NULL, *eq = strchr(in, '=');
	unsigned char addr[16];
	int r;

	if (!eq)
		return field_error_set(err, -EINVAL, q, NULL, "expected \"name=address\"");
	name = strndup(in, (size_t)(eq - in));
	if (!name)
		return -ENOMEM;
	r = domain_canonicalize(name, &canon, &reason);
	if (r == -ENOMEM)
		return r;
	if (r < 0 || strchr(canon, ':') || canon[0] == '*')
		return field_error_set(err, -EINVAL, q, NULL, "\"%s\": not an exact name", name);
	if (inet_pton(AF_INET, eq + 1, addr) != 1 && inet_pton(AF_INET6, eq + 1, addr) != 1)
		return field_error_set(err, -EINVAL, q, NULL,
				       "\"%s\" is not an IPv4 or IPv6 address", eq + 1);
	*out = strdup_printf("%s=%s", canon, eq + 1);
	return *out ? 0 : -ENOMEM;
}

static int parse_resolve(json_t *net, const char *path, char ***ret, struct field_error *err)
{
	return parse_list(net, "resolve", path, POLICY_DOMAINS_MAX, "\"name=address\"",
			  resolve_item, ret, err);
}

static int parse_network(struct policy *p, json_t *doc, struct field_error *err)
{
	static const char *const keys[] = { "mode",	  "allowDomains", "denyDomains",
					    "allowPorts", "resolve",	  NULL };
	static const char *const modes[] = { "none", "loopback", "proxy", "host", "unix", NULL };
	const char *P = "network";
	json_t *net = NULL, *ports = NULL, *v;
	const char *s = NULL;
	char **l = NULL;
	size_t i;
	int r;

	r = ipc_json_get_object(doc, "network", false, "", &net, err);
	if (r <= 0)
		return r;
	r = ipc_json_check_keys(net, keys, P, err);
	if (r < 0)
		return r;
	r = ipc_json_get_string(net, "mode", false, P, &s, err);
	if (r < 0)
		return r;
	if (r > 0) {
		r = check_enum(s, modes, P, "mode", err);
		if (r < 0)
			return r;
		p->net.mode = (enum policy_network)r;
	}
	r = parse_domain_list(net, "allowDomains", P, &l, err);
	if (r < 0)
		return r;
	if (r > 0)
		strv_replace(&p->net.allow_domains, l);
	l = NULL;
	r = parse_domain_list(net, "denyDomains", P, &l, err);
	if (r < 0)
		return r;
	if (r > 0)
		strv_replace(&p->net.deny_domains, l);
	l = NULL;
	r = parse_resolve(net, P, &l, err);
	if (r < 0)
		return r;
	if (r > 0)
		strv_replace(&p->net.resolve, l);

	r = ipc_json_get_array(net, "allowPorts", false, POLICY_PORTS_MAX, P, &ports, err);
	if (r < 0)
		return r;
	if (r > 0) {
		_cleanup_free_ unsigned *a = calloc(json_array_size(ports) + 1, sizeof(unsigned));

		if (!a)
			return -ENOMEM;
		json_array_foreach(ports, i, v) {
			char q[PATHBUF];

			json_path_index(q, sizeof(q), "network.allowPorts", i);
			if (!json_is_integer(v) || json_integer_value(v) < 1 ||
			    json_integer_value(v) > 65535)
				return field_error_set(err, -EINVAL, q, NULL,
						       "expected a port number 1..65535");
			a[i] = (unsigned)json_integer_value(v);
			for (size_t k = 0; k < i; k++)
				if (a[k] == a[i])
					return field_error_set(err, -EINVAL, q, NULL,
							       "port %u is already listed", a[i]);
		}
		free(p->net.allow_ports);
		p->net.allow_ports = TAKE_PTR(a);
		p->net.n_allow_ports = json_array_size(ports);
	}
	return 0;
}

static int parse_limits(struct policy *p, json_t *doc, struct field_error *err)
{
	static const char *const keys[] = { "pids",	   "memoryBytes",    "cpuSeconds",
					    "wallSeconds", "maxOutputBytes", "files",
					    NULL };
	const struct {
		const char *key;
		uint64_t min, max;
		uint64_t *dst;
	} fields[] = {
		{ "pids", 1, 4194304, &p->limits.pids },
		{ "memoryBytes", 0, UINT64_C(1) << 52, &p->limits.memory_bytes },
		{ "cpuSeconds", 0, UINT64_C(1) << 31, &p->limits.cpu_seconds },
		{ "wallSeconds", 0, UINT64_C(1) << 31, &p->limits.wall_seconds },
		{ "maxOutputBytes", 1, UINT64_C(1) << 32, &p->limits.max_output_bytes },
		{ "files", 16, 1048576, &p->limits.files },
	};
	json_t *lim = NULL;
	int r;

	r = ipc_json_get_object(doc, "limits", false, "", &lim, err);
	if (r <= 0)
		return r;
	r = ipc_json_check_keys(lim, keys, "limits", err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
		uint64_t v;

		r = ipc_json_get_uint64(lim, fields[i].key, false, fields[i].min, fields[i].max,
					"limits", &v, err);
		if (r < 0)
			return r;
		if (r == 0)
			continue;
		if (streq(fields[i].key, "memoryBytes") && v != 0 && v < 1024 * 1024)
			return field_error_set(err, -ERANGE, "limits", "memoryBytes",
					       "at least 1048576 (1 MiB), or 0 for the default");
		*fields[i].dst = v;
	}
	return 0;
}

static bool env_name_valid(const char *n)
{
	if (isempty(n) || strlen(n) > 255)
		return false;
	for (const char *c = n; *c; c++)
		if (*c == '=' || (unsigned char)*c <= 0x20 || *c == 0x7f)
			return false;
	return true;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int parse_env(struct policy *p, json_t *doc, struct field_error *err)
{
	static const char *const keys[] = { "pass", "set", NULL };
	json_t *env = NULL, *set = NULL, *v;
	char **l = NULL;
	const char *k;
	int r;

	r = ipc_json_get_object(doc, "env", false, "", &env, err);
	if (r <= 0)
		return r;
	r = ipc_json_check_keys(env, keys, "env", err);
	if (r < 0)
		return r;
	r = ipc_json_get_strv(env, "pass", false, POLICY_ENV_MAX, 255, "env", &l, err);
	if (r < 0)
		return r;
	if (r > 0) {
		for (size_t i = 0; l[i]; i++) {
			char q[PATHBUF];

			json_path_index(q, sizeof(q), "env.pass", i);
			if (!env_name_valid(l[i])) {
				strv_free(l);
				return field_error_set(err, -EINVAL, q, NULL,
						       "not a variable name");
			}
		}
		strv_replace(&p->env.pass, l);
	}

	r = ipc_json_get_object(env, "set", false, "env", &set, err);
	if (r < 0)
		return r;
	if (r > 0) {
		_cleanup_strv_free_ char **s = NULL;
		size_t n = 0;

		if (json_object_size(set) > POLICY_ENV_MAX)
			return field_error_set(err, -E2BIG, "env", "set",
					       "too many variables (at most %d)", POLICY_ENV_MAX);
		s = calloc(json_object_size(set) + 1, sizeof(char *));
		if (!s)
			return -ENOMEM;
		json_object_foreach(set, k, v) {
			if (!env_name_valid(k))
				return field_error_set(err, -EINVAL, "env.set", k,
						       "not a variable name");
			if (streq(k, "HOME"))
				return field_error_set(
					err, -EINVAL, "env.set", k,
					"HOME is set by cordon to the sandbox's home");
			if (!json_is_string(v))
				return field_error_set(err, -EINVAL, "env.set", k,
						       "expected a string");
			if (json_string_length(v) > POLICY_ENV_VALUE_MAX)
				return field_error_set(err, -E2BIG, "env.set", k,
						       "longer than %u bytes",
						       POLICY_ENV_VALUE_MAX);
			s[n] = strdup_printf("%s=%s", k, json_string_value(v));
			if (!s[n])
				return -ENOMEM;
			n++;
		}
		qsort(s, n, sizeof(char *), cmp_str);
		strv_replace(&p->env.set, TAKE_PTR(s));
	}
	return 0;
}

static int syscall_item(const char *in, const char *key, const char *q, char **out,
			struct field_error *err)
{
	if (!policy_syscall_name_known(in))
		return field_error_set(err, -EINVAL, q, NULL, "unknown syscall \"%s\"", in);
	*out = strdup(in);
	return *out ? 0 : -ENOMEM;
}

static int parse_syscall_list(json_t *sc, const char *key, char ***ret, struct field_error *err)
{
	return parse_list(sc, key, "syscalls", POLICY_SYSCALLS_MAX, "a syscall name", syscall_item,
			  ret, err);
}

static int parse_syscalls(struct policy *p, json_t *doc, struct field_error *err)
{
	static const char *const keys[] = { "profile", "deny", "allow", NULL };
	static const char *const profiles[] = { "default", "strict", NULL };
	json_t *sc = NULL;
	const char *s = NULL;
	char **l = NULL;
	int r;

	r = ipc_json_get_object(doc, "syscalls", false, "", &sc, err);
	if (r <= 0)
		return r;
	r = ipc_json_check_keys(sc, keys, "syscalls", err);
	if (r < 0)
		return r;
	r = ipc_json_get_string(sc, "profile", false, "syscalls", &s, err);
	if (r < 0)
		return r;
	if (r > 0) {
		r = check_enum(s, profiles, "syscalls", "profile", err);
		if (r < 0)
			return r;
		p->syscalls.profile = (enum policy_syscall_profile)r;
	}
	r = parse_syscall_list(sc, "deny", &l, err);
	if (r < 0)
		return r;
	if (r > 0)
		strv_replace(&p->syscalls.deny, l);
	l = NULL;
	r = parse_syscall_list(sc, "allow", &l, err);
	if (r < 0)
		return r;
	if (r > 0)
		strv_replace(&p->syscalls.allow, l);
	return 0;
}

static int parse_optional(struct policy *p, json_t *doc, struct field_error *err)
{
	_cleanup_strv_free_ char **l = NULL;
	int r;

	r = ipc_json_get_strv(doc, "optional", false, 256, POLICY_PATH_MAX + 8, "", &l, err);
	if (r <= 0)
		return r;
	/* "path:<p>" names a path as written; keep it in canonical form like the lists. */
	for (size_t i = 0; l[i]; i++) {
		const char *path = startswith(l[i], "path:"), *reason = NULL;
		char *c = NULL, *id;
		char q[PATHBUF];

		if (!path)
			continue;
		json_path_index(q, sizeof(q), "optional", i);
		r = policy_path_canonicalize(path, &c, &reason);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return field_error_set(err, r, q, NULL, "%s", reason);
		id = strdup_printf("path:%s", c);
		free(c);
		if (!id)
			return -ENOMEM;
		free(l[i]);
		l[i] = id;
	}
	strv_replace(&p->optional, TAKE_PTR(l));
	return 0;
}

int policy_parse_overlay(struct policy *p, json_t *doc, struct field_error *err)
{
	static const char *const keys[] = { "version",	     "filesystem", "network",
					    "hostExecution", "limits",	   "env",
					    "syscalls",	     "optional",   NULL };
	uint64_t version = 0;
	int r;

	if (!json_is_object(doc))
		return field_error_set(err, -EINVAL, "", NULL, "expected a JSON object");
	r = ipc_json_check_keys(doc, keys, "", err);
	if (r < 0)
		return r;
	r = ipc_json_get_uint64(doc, "version", true, 1, 1000, "", &version, err);
	if (r < 0)
		return r;
	if (version != POLICY_VERSION)
		return field_error_set(err, -EPROTONOSUPPORT, "version", NULL,
				       "unsupported version %llu (this cordon reads version %d)",
				       (unsigned long long)version, POLICY_VERSION);
	r = parse_filesystem(p, doc, err);
	if (r >= 0)
		r = parse_network(p, doc, err);
	if (r >= 0)
		r = ipc_json_get_bool(doc, "hostExecution", false, "", &p->host_execution, err);
	if (r >= 0)
		r = parse_limits(p, doc, err);
	if (r >= 0)
		r = parse_env(p, doc, err);
	if (r >= 0)
		r = parse_syscalls(p, doc, err);
	if (r >= 0)
		r = parse_optional(p, doc, err);
	return r < 0 ? r : 0;
}

static int find_in(char **l, const char *s)
{
	for (size_t i = 0; l && l[i]; i++)
		if (streq(l[i], s))
			return (int)i;
	return -1;
}

int policy_validate(const struct policy *p, struct field_error *err)
{
	char q[PATHBUF];
	int k;

	if (strv_contains(p->fs.host_exec_allow, POLICY_HOST_EXEC_ALL) &&
	    strv_length(p->fs.host_exec_allow) > 1) {
		k = find_in(p->fs.host_exec_allow, POLICY_HOST_EXEC_ALL);
		json_path_index(q, sizeof(q), "filesystem.hostExecuted.allow", k == 0 ? 1 : 0);
		return field_error_set(err, -EINVAL, q, NULL,
				       "\"%s\" is already allowed by \"*\" (allow[%d])",
				       p->fs.host_exec_allow[k == 0 ? 1 : 0], k);
	}
	/*
	 * A path in both read and write, or that is the workspace as well, is one grant with the
	 * broadest access listed: the compiler merges them once every path is resolved.
	 */

	if (p->net.mode != POLICY_NETWORK_PROXY) {
		if (strv_length(p->net.allow_domains) > 0)
			return field_error_set(err, -EINVAL, "network.allowDomains", NULL,
					       "only used with mode \"proxy\" (mode is \"%s\")",
					       policy_network_to_string(p->net.mode));
		if (strv_length(p->net.deny_domains) > 0)
			return field_error_set(err, -EINVAL, "network.denyDomains", NULL,
					       "only used with mode \"proxy\" (mode is \"%s\")",
					       policy_network_to_string(p->net.mode));
		if (strv_length(p->net.resolve) > 0)
			return field_error_set(err, -EINVAL, "network.resolve", NULL,
					       "only used with mode \"proxy\" (mode is \"%s\")",
					       policy_network_to_string(p->net.mode));
	}
	for (size_t i = 0; p->net.resolve && p->net.resolve[i]; i++) {
		_cleanup_free_ char *name =
			strndup(p->net.resolve[i], strcspn(p->net.resolve[i], "="));
		bool allowed = false;

		if (!name)
			return -ENOMEM;
		for (char **d = p->net.allow_domains; d && *d; d++)
			if (policy_domain_matches(*d, name))
				allowed = true;
		if (!allowed) {
			json_path_index(q, sizeof(q), "network.resolve", i);
			return field_error_set(err, -EINVAL, q, NULL,
					       "\"%s\" is not in network.allowDomains", name);
		}
	}

	for (size_t i = 0; p->syscalls.allow && p->syscalls.allow[i]; i++) {
		json_path_index(q, sizeof(q), "syscalls.allow", i);
		if (!policy_syscall_profile_has(p->syscalls.profile, p->syscalls.allow[i]))
			return field_error_set(
				err, -EINVAL, q, NULL, "\"%s\" is not denied by profile \"%s\"",
				p->syscalls.allow[i],
				policy_syscall_profile_to_string(p->syscalls.profile));
		k = find_in(p->syscalls.deny, p->syscalls.allow[i]);
		if (k >= 0)
			return field_error_set(err, -EINVAL, q, NULL,
					       "\"%s\" is also listed in syscalls.deny[%d]",
					       p->syscalls.allow[i], k);
	}

	for (size_t i = 0; p->optional && p->optional[i]; i++) {
		json_path_index(q, sizeof(q), "optional", i);
		if (!policy_optional_valid(p, p->optional[i]))
			return field_error_set(err, -EINVAL, q, NULL,
					       startswith(p->optional[i], "path:")
						       ? "\"%s\" names no path of filesystem.read, "
							 "filesystem.write or the workspace"
						       : "unknown rule identifier \"%s\"",
					       p->optional[i]);
		k = find_in(p->optional, p->optional[i]);
		if (k >= 0 && (size_t)k < i)
			return field_error_set(err, -EINVAL, q, NULL, "\"%s\" is already listed",
					       p->optional[i]);
	}
	return 0;
}

int policy_parse_json(json_t *doc, struct policy **ret, struct field_error *err)
{
	_cleanup_policy_ struct policy *p = NULL;
	int r;

	r = policy_default_new(&p);
	if (r < 0)
		return field_error_set(err, r, "", NULL, "cannot build the default policy");
	r = policy_parse_overlay(p, doc, err);
	if (r < 0)
		return r;
	r = policy_validate(p, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(p);
	return 0;
}

int policy_parse_string(const char *buf, size_t len, struct policy **ret, struct field_error *err)
{
	_cleanup_json_ json_t *doc = NULL;
	int r;

	r = ipc_json_parse_object(buf, len, &doc, err);
	if (r < 0)
		return r;
	return policy_parse_json(doc, ret, err);
}

int policy_parse_file(const char *path, struct policy **ret, struct field_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = read_full_file(path, POLICY_FILE_MAX, &buf, &len);
	if (r == -EFBIG)
		return field_error_set(err, r, "", NULL, "larger than %u bytes", POLICY_FILE_MAX);
	if (r < 0)
		return field_error_set(err, r, "", NULL, "cannot read: %s", strerror(-r));
	return policy_parse_string(buf, len, ret, err);
}
