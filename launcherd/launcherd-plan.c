/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Spawn plan validation. Each parse_* function owns one object of the plan, checks its keys
 * against an allow-list first (unknown fields are refused), then each field's type and range,
 * and names the field by its JSON path on failure.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/util.h"
#include "ipc/ipc-fdpass.h"
#include "launcherd/launcherd-landlock.h"
#include "launcherd/launcherd-plan.h"

#define P "plan"

static const char *const network_names[] = {
	[PLAN_NETWORK_NONE] = "none",	[PLAN_NETWORK_LOOPBACK] = "loopback",
	[PLAN_NETWORK_PROXY] = "proxy", [PLAN_NETWORK_HOST] = "host",
	[PLAN_NETWORK_UNIX] = "unix",
};

const char *plan_network_to_string(enum plan_network n)
{
	return (size_t)n < ELEMENTSOF(network_names) ? network_names[n] : "?";
}

int plan_network_from_string(const char *s, enum plan_network *ret)
{
	for (size_t i = 0; i < ELEMENTSOF(network_names); i++)
		if (streq(s, network_names[i])) {
			*ret = (enum plan_network)i;
			return 0;
		}
	return -EINVAL;
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	strv_free(p->argv);
	strv_free(p->envp);
	free(p->cwd);
	free(p->hostname);
	for (size_t i = 0; i < p->n_mounts; i++) {
		free(p->mounts[i].target);
		free(p->mounts[i].link);
	}
	free(p->mounts);
	for (size_t i = 0; i < p->n_landlock_fs; i++)
		free(p->landlock_fs[i].path);
	free(p->landlock_fs);
	free(p->bind_tcp);
	free(p->connect_tcp);
	free(p);
}

/* An fd index named by the plan must be one of the fds that came with the message. */
static int get_fd_index(json_t *obj, const char *key, bool required, size_t n_fds, const char *path,
			int *ret, struct field_error *err)
{
	uint64_t v;
	int r;

	r = ipc_json_get_uint64(obj, key, required, 0, IPC_MAX_FDS - 1, path, &v, err);
	if (r <= 0)
		return r;
	if (v >= n_fds)
		return field_error_set(err, -EBADF, path, key,
				       "fd index %llu but the message carried %zu fds",
				       (unsigned long long)v, n_fds);
	*ret = (int)v;
	return 1;
}

static int check_target(const char *target, const char *path, struct field_error *err)
{
	if (!path_is_normalized(target))
		return field_error_set(err, -EINVAL, path, "target",
				       "not a normalized absolute path");
	if (streq(target, "/"))
		return field_error_set(err, -EINVAL, path, "target",
				       "the root is built by launcherd and cannot be a target");
	if (strlen(target) >= PATH_MAX)
		return field_error_set(err, -ENAMETOOLONG, path, "target", "longer than PATH_MAX");
	return 0;
}

size_t plan_arg_size(char *const *argv, char *const *envp)
{
	size_t n = 0;

	/* Each string is at most PLAN_STRING_MAX and there are at most CORDON_ARG_ITEMS_MAX of
	 * each: no overflow. */
	for (char *const *s = argv; s && *s; s++)
		n += strlen(*s) + 1 + sizeof(char *);
	for (char *const *s = envp; s && *s; s++)
		n += strlen(*s) + 1 + sizeof(char *);
	return n;
}

static int parse_argv_envp(json_t *j, struct plan *p, struct field_error *err)
{
	size_t size;
	int r;

	r = ipc_json_get_strv(j, "argv", true, CORDON_ARG_ITEMS_MAX, PLAN_STRING_MAX, P, &p->argv,
			      err);
	if (r < 0)
		return r;
	if (!p->argv[0])
		return field_error_set(err, -EINVAL, P, "argv", "needs at least the program");
	if (isempty(p->argv[0]))
		return field_error_set(err, -EINVAL, P ".argv[0]", NULL, "empty program name");

	r = ipc_json_get_strv(j, "envp", false, CORDON_ARG_ITEMS_MAX, PLAN_STRING_MAX, P, &p->envp,
			      err);
	if (r < 0)
		return r;
	if (r == 0) {
		p->envp = calloc(1, sizeof(char *));
		if (!p->envp)
			return -ENOMEM;
	}
	for (size_t i = 0; p->envp[i]; i++) {
		const char *eq = strchr(p->envp[i], '=');

		if (!eq || eq == p->envp[i]) {
			char q[64];

			json_path_index(q, sizeof(q), P ".envp", i);
			return field_error_set(err, -EINVAL, q, NULL,
					       "expected NAME=VALUE with a non-empty NAME");
		}
	}
	/* What the sandbox's execve would refuse with E2BIG is refused here. */
	size = plan_arg_size(p->argv, p->envp);
	if (size > CORDON_ARG_MAX)
		return field_error_set(
			err, -E2BIG, P, "argv",
			"argv and envp take %zu bytes as execve counts them (strings, "
			"NULs and pointers): at most %u",
			size, CORDON_ARG_MAX);
	return 0;
}

static int parse_identity_fields(json_t *j, struct plan *p, struct field_error *err)
{
	const char *s;
	int r;

	r = ipc_json_get_string(j, "cwd", false, P, &s, err);
	if (r < 0)
		return r;
	if (r > 0 && !path_is_normalized(s))
		return field_error_set(err, -EINVAL, P, "cwd", "not a normalized absolute path");
	p->cwd = strdup(r > 0 ? s : "/");
	if (!p->cwd)
		return -ENOMEM;

	r = ipc_json_get_string(j, "hostname", false, P, &s, err);
	if (r < 0)
		return r;
	if (r > 0) {
		size_t n = strlen(s);

		if (n < 1 || n > PLAN_HOSTNAME_MAX)
			return field_error_set(err, -EINVAL, P, "hostname", "1 to %d characters",
					       PLAN_HOSTNAME_MAX);
		if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") !=
		    n)
			return field_error_set(err, -EINVAL, P, "hostname",
					       "only letters, digits, '.' and '-'");
	}
	p->hostname = strdup(r > 0 ? s : "cordon");
	return p->hostname ? 0 : -ENOMEM;
}

static int parse_stdio(json_t *j, size_t n_fds, struct plan *p, struct field_error *err)
{
	static const char *const keys[] = { "stdin", "stdout", "stderr", NULL };
	json_t *o;
	int r;

	p->stdio[0] = p->stdio[1] = p->stdio[2] = -1;
	r = ipc_json_get_object(j, "stdio", false, P, &o, err);
	if (r <= 0)
		return r;
	r = ipc_json_check_keys(o, keys, P ".stdio", err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < 3; i++) {
		r = get_fd_index(o, keys[i], false, n_fds, P ".stdio", &p->stdio[i], err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_mount(json_t *m, const char *path, size_t n_fds, struct plan_mount *pm,
		       struct field_error *err)
{
	static const struct {
		const char *name;
		enum plan_mount_type type;
		const char *const keys[6];
	} types[] = {
		{ "bind", PLAN_MOUNT_BIND, { "type", "target", "source", "readOnly", "optional" } },
		{ "tmpfs", PLAN_MOUNT_TMPFS, { "type", "target", "mode", "sizeBytes" } },
		{ "dir", PLAN_MOUNT_DIR, { "type", "target", "mode" } },
		{ "symlink", PLAN_MOUNT_SYMLINK, { "type", "target", "link" } },
		{ "proc", PLAN_MOUNT_PROC, { "type", "target" } },
		{ "dev", PLAN_MOUNT_DEV, { "type", "target" } },
		{ "deny", PLAN_MOUNT_DENY, { "type", "target" } },
	};
	const char *type, *target, *link;
	uint64_t v;
	size_t t;
	int r;

	if (!json_is_object(m))
		return field_error_set(err, -EINVAL, path, NULL, "expected an object");
	r = ipc_json_get_string(m, "type", true, path, &type, err);
	if (r < 0)
		return r;
	for (t = 0; t < ELEMENTSOF(types); t++)
		if (streq(type, types[t].name))
			break;
	if (t == ELEMENTSOF(types))
		return field_error_set(err, -EINVAL, path, "type",
				       "unknown mount type (bind, tmpfs, dir, symlink, proc, dev, "
				       "deny)");
	r = ipc_json_check_keys(m, types[t].keys, path, err);
	if (r < 0)
		return r;

	pm->type = types[t].type;
	pm->source = -1;
	pm->read_only = true;
	pm->mode = 0755;
	pm->size_bytes = PLAN_TMPFS_SIZE_DEFAULT;

	r = ipc_json_get_string(m, "target", true, path, &target, err);
	if (r < 0)
		return r;
	r = check_target(target, path, err);
	if (r < 0)
		return r;
	pm->target = strdup(target);
	if (!pm->target)
		return -ENOMEM;

	switch (pm->type) {
	case PLAN_MOUNT_BIND:
		r = get_fd_index(m, "source", true, n_fds, path, &pm->source, err);
		if (r < 0)
			return r;
		r = ipc_json_get_bool(m, "readOnly", false, path, &pm->read_only, err);
		if (r < 0)
			return r;
		r = ipc_json_get_bool(m, "optional", false, path, &pm->optional, err);
		if (r < 0)
			return r;
		break;
	case PLAN_MOUNT_TMPFS:
		pm->mode = 01777;
		r = ipc_json_get_uint64(m, "sizeBytes", false, 4096, UINT64_C(1) << 40, path,
					&pm->size_bytes, err);
		if (r < 0)
			return r;
		/* the mode as for dir */
		__attribute__((fallthrough));
	case PLAN_MOUNT_DIR:
		r = ipc_json_get_uint64(m, "mode", false, 0, 07777, path, &v, err);
		if (r < 0)
			return r;
		if (r > 0)
			pm->mode = (mode_t)v;
		break;
	case PLAN_MOUNT_SYMLINK:
		r = ipc_json_get_string(m, "link", true, path, &link, err);
		if (r < 0)
			return r;
		if (isempty(link) || strlen(link) >= PATH_MAX)
			return field_error_set(err, -EINVAL, path, "link",
					       "must be 1 to PATH_MAX-1 bytes");
		pm->link = strdup(link);
		if (!pm->link)
			return -ENOMEM;
		break;
	case PLAN_MOUNT_PROC:
	case PLAN_MOUNT_DEV:
	case PLAN_MOUNT_DENY:
		break;
	}
	return 0;
}

static int parse_mounts(json_t *j, size_t n_fds, struct plan *p, struct field_error *err)
{
	json_t *a, *m;
	size_t i;
	int r;

	r = ipc_json_get_array(j, "mounts", false, PLAN_MOUNTS_MAX, P, &a, err);
	if (r <= 0)
		return r;
	p->mounts = calloc(json_array_size(a) + 1, sizeof(*p->mounts));
	if (!p->mounts)
		return -ENOMEM;
	json_array_foreach(a, i, m) {
		char path[64];

		json_path_index(path, sizeof(path), P ".mounts", i);
		p->n_mounts = i + 1; /* so plan_free() sees what parse_mount() allocated */
		r = parse_mount(m, path, n_fds, &p->mounts[i], err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_ports(json_t *o, const char *key, const char *path, uint16_t **ret, size_t *ret_n,
		       struct field_error *err)
{
	char q[96];
	json_t *a, *v;
	size_t i;
	int r;

	r = ipc_json_get_array(o, key, false, PLAN_PORTS_MAX, path, &a, err);
	if (r <= 0)
		return r;
	*ret = calloc(json_array_size(a) + 1, sizeof(uint16_t));
	if (!*ret)
		return -ENOMEM;
	json_path_join(q, sizeof(q), path, key);
	json_array_foreach(a, i, v) {
		char e[128];

		json_path_index(e, sizeof(e), q, i);
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 65535)
			return field_error_set(err, -EINVAL, e, NULL, "expected a port 1..65535");
		(*ret)[i] = (uint16_t)json_integer_value(v);
	}
	*ret_n = json_array_size(a);
	return 0;
}

static int parse_landlock(json_t *j, struct plan *p, struct field_error *err)
{
	static const char *const keys[] = { "required", "fs", "net", "scope", NULL };
	static const char *const rule_keys[] = { "path", "access", NULL };
	static const char *const net_keys[] = { "bindTcp", "connectTcp", NULL };
	json_t *o, *a, *v, *net;
	size_t i;
	int r;

	r = ipc_json_get_object(j, "landlock", false, P, &o, err);
	if (r <= 0)
		return r;
	p->has_landlock = true;
	p->landlock_required = true;
	r = ipc_json_check_keys(o, keys, P ".landlock", err);
	if (r < 0)
		return r;
	r = ipc_json_get_bool(o, "required", false, P ".landlock", &p->landlock_required, err);
	if (r < 0)
		return r;

	r = ipc_json_get_array(o, "fs", false, PLAN_LANDLOCK_RULES_MAX, P ".landlock", &a, err);
	if (r < 0)
		return r;
	if (r > 0) {
		p->landlock_fs = calloc(json_array_size(a) + 1, sizeof(*p->landlock_fs));
		if (!p->landlock_fs)
			return -ENOMEM;
		json_array_foreach(a, i, v) {
			struct plan_landlock_rule *rule = &p->landlock_fs[i];
			char q[64], qa[80];
			const char *s;
			json_t *acc, *name;
			size_t k;

			p->n_landlock_fs = i + 1;
			json_path_index(q, sizeof(q), P ".landlock.fs", i);
			if (!json_is_object(v))
				return field_error_set(err, -EINVAL, q, NULL, "expected an object");
			r = ipc_json_check_keys(v, rule_keys, q, err);
			if (r < 0)
				return r;
			r = ipc_json_get_string(v, "path", true, q, &s, err);
			if (r < 0)
				return r;
			if (!path_is_normalized(s))
				return field_error_set(err, -EINVAL, q, "path",
						       "not a normalized absolute path");
			rule->path = strdup(s);
			if (!rule->path)
				return -ENOMEM;
			r = ipc_json_get_array(v, "access", true, 32, q, &acc, err);
			if (r < 0)
				return r;
			json_path_join(qa, sizeof(qa), q, "access");
			json_array_foreach(acc, k, name) {
				uint64_t bit =
					json_is_string(name)
						? landlock_access_from_name(json_string_value(name))
						: 0;

				if (!bit) {
					char e[96];

					json_path_index(e, sizeof(e), qa, k);
					return field_error_set(err, -EINVAL, e, NULL,
							       "unknown filesystem access right");
				}
				rule->access |= bit;
			}
			if (!rule->access)
				return field_error_set(
					err, -EINVAL, q, "access",
					"grants nothing; leave the path out instead");
		}
	}

	r = ipc_json_get_object(o, "net", false, P ".landlock", &net, err);
	if (r < 0)
		return r;
	if (r > 0) {
		p->landlock_has_net = true;
		r = ipc_json_check_keys(net, net_keys, P ".landlock.net", err);
		if (r < 0)
			return r;
		r = parse_ports(net, "bindTcp", P ".landlock.net", &p->bind_tcp, &p->n_bind_tcp,
				err);
		if (r < 0)
			return r;
		r = parse_ports(net, "connectTcp", P ".landlock.net", &p->connect_tcp,
				&p->n_connect_tcp, err);
		if (r < 0)
			return r;
	}

	r = ipc_json_get_array(o, "scope", false, 8, P ".landlock", &a, err);
	if (r < 0)
		return r;
	if (r > 0)
		json_array_foreach(a, i, v) {
			const char *s = json_is_string(v) ? json_string_value(v) : "";
			char q[64];

			json_path_index(q, sizeof(q), P ".landlock.scope", i);
			if (streq(s, "abstract-unix-socket"))
				p->landlock_scope |= CORDON_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET;
			else if (streq(s, "signal"))
				p->landlock_scope |= CORDON_LANDLOCK_SCOPE_SIGNAL;
			else
				return field_error_set(err, -EINVAL, q, NULL,
						       "unknown scope (abstract-unix-socket, "
						       "signal)");
		}
	return 0;
}

static int parse_seccomp(json_t *j, size_t n_fds, struct plan *p, struct field_error *err)
{
	static const char *const keys[] = { "program", "denyAction", NULL };
	const char *action;
	json_t *o;
	int r;

	p->seccomp_program = -1;
	r = ipc_json_get_object(j, "seccomp", false, P, &o, err);
	if (r <= 0)
		return r;
	r = ipc_json_check_keys(o, keys, P ".seccomp", err);
	if (r < 0)
		return r;
	r = get_fd_index(o, "program", true, n_fds, P ".seccomp", &p->seccomp_program, err);
	if (r < 0)
		return r;
	r = ipc_json_get_string(o, "denyAction", false, P ".seccomp", &action, err);
	if (r < 0)
		return r;
	if (r > 0) {
		if (streq(action, "kill"))
			p->seccomp_kill = true;
		else if (!streq(action, "errno"))
			return field_error_set(err, -EINVAL, P ".seccomp", "denyAction",
					       "expected \"errno\" or \"kill\"");
	}
	return 0;
}

static const struct {
	const char *name;
	int resource;
} rlimit_names[] = {
	{ "nofile", RLIMIT_NOFILE },   { "core", RLIMIT_CORE },	  { "cpu", RLIMIT_CPU },
	{ "fsize", RLIMIT_FSIZE },     { "nproc", RLIMIT_NPROC }, { "as", RLIMIT_AS },
	{ "memlock", RLIMIT_MEMLOCK }, { "stack", RLIMIT_STACK },
};

const char *plan_rlimit_name(int resource)
{
	for (size_t i = 0; i < ELEMENTSOF(rlimit_names); i++)
		if (rlimit_names[i].resource == resource)
			return rlimit_names[i].name;
	return "?";
}

static int parse_rlimits(json_t *j, struct plan *p, struct field_error *err)
{
	const char *key;
	json_t *o, *v;
	int r;

	r = ipc_json_get_object(j, "rlimits", false, P, &o, err);
	if (r <= 0)
		return r;
	json_object_foreach(o, key, v) {
		size_t i;
		uint64_t value;

		for (i = 0; i < ELEMENTSOF(rlimit_names); i++)
			if (streq(key, rlimit_names[i].name))
				break;
		if (i == ELEMENTSOF(rlimit_names))
			return field_error_set(err, -EINVAL, P ".rlimits", key, "unknown field");
		r = ipc_json_get_uint64(o, key, true, 0, INT64_MAX, P ".rlimits", &value, err);
		if (r < 0)
			return r;
		if (value > 1024 * 1024 && rlimit_names[i].resource == RLIMIT_NOFILE)
			return field_error_set(err, -ERANGE, P ".rlimits", key,
					       "out of range (0..1048576)");
		p->rlimits[p->n_rlimits].resource = rlimit_names[i].resource;
		p->rlimits[p->n_rlimits].value = value;
		p->n_rlimits++;
	}
	return 0;
}

static int parse_cgroup(json_t *j, struct plan *p, struct field_error *err)
{
	static const char *const keys[] = { "pidsMax", "memoryMaxBytes", NULL };
	json_t *o;
	int r;

	r = ipc_json_get_object(j, "cgroup", false, P, &o, err);
	if (r <= 0)
		return r;
	r = ipc_json_check_keys(o, keys, P ".cgroup", err);
	if (r < 0)
		return r;
	r = ipc_json_get_uint64(o, "pidsMax", false, 1, PLAN_PIDS_MAX, P ".cgroup", &p->pids_max,
				err);
	if (r < 0)
		return r;
	r = ipc_json_get_uint64(o, "memoryMaxBytes", false, PLAN_MEMORY_MIN, INT64_MAX, P ".cgroup",
				&p->memory_max, err);
	return r < 0 ? r : 0;
}

static int parse_network(json_t *j, struct plan *p, struct field_error *err)
{
	const char *s;
	uint64_t v;
	int r;

	p->network = PLAN_NETWORK_NONE;
	r = ipc_json_get_string(j, "network", false, P, &s, err);
	if (r < 0)
		return r;
	if (r > 0 && plan_network_from_string(s, &p->network) < 0)
		return field_error_set(err, -EINVAL, P, "network",
				       "expected none, loopback, proxy, host or unix");
	p->proxy_port = 3128;
	r = ipc_json_get_uint64(j, "proxyPort", false, 1, 65535, P, &v, err);
	if (r < 0)
		return r;
	if (r > 0) {
		if (p->network != PLAN_NETWORK_PROXY)
			return field_error_set(err, -EINVAL, P, "proxyPort",
					       "only with network \"proxy\"");
		p->proxy_port = (uint16_t)v;
	}
	return 0;
}

int plan_parse(json_t *j, size_t n_fds, struct plan **ret, struct field_error *err)
{
	static const char *const keys[] = {
		"argv",		  "envp",      "cwd",	    "hostname",		"stdio",
		"mounts",	  "landlock",  "seccomp",   "rlimits",		"cgroup",
		"network",	  "proxyPort", "timeoutMs", "dieWithRequester", "mountNamespace",
		"controllingTty", NULL,
	};
	_cleanup_plan_ struct plan *p = NULL;
	int r;

	if (!json_is_object(j))
		return field_error_set(err, -EINVAL, P, NULL, "expected an object");
	r = ipc_json_check_keys(j, keys, P, err);
	if (r < 0)
		return r;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->seccomp_program = -1;
	p->mount_ns = -1;
	p->die_with_requester = true;

	r = parse_argv_envp(j, p, err);
	if (r >= 0)
		r = parse_identity_fields(j, p, err);
	if (r >= 0)
		r = parse_stdio(j, n_fds, p, err);
	if (r >= 0)
		r = parse_mounts(j, n_fds, p, err);
	if (r >= 0)
		r = get_fd_index(j, "mountNamespace", false, n_fds, P, &p->mount_ns, err);
	if (r >= 0)
		r = parse_landlock(j, p, err);
	if (r >= 0)
		r = parse_seccomp(j, n_fds, p, err);
	if (r >= 0)
		r = parse_rlimits(j, p, err);
	if (r >= 0)
		r = parse_cgroup(j, p, err);
	if (r >= 0)
		r = parse_network(j, p, err);
	if (r >= 0)
		r = ipc_json_get_uint64(j, "timeoutMs", false, 0, UINT64_C(1) << 40, P,
					&p->timeout_ms, err);
	if (r >= 0)
		r = ipc_json_get_bool(j, "dieWithRequester", false, P, &p->die_with_requester, err);
	if (r >= 0)
		r = ipc_json_get_bool(j, "controllingTty", false, P, &p->controlling_tty, err);
	if (r < 0)
		return r;
	/* A controlling terminal is the one the command's stdio is: one fd, all three. That it
	 * is a terminal at all is checked on the fd itself (plan_check_fds(), and again by the
	 * kernel at TIOCSCTTY in the child). */
	if (p->controlling_tty &&
	    (p->stdio[0] < 0 || p->stdio[1] != p->stdio[0] || p->stdio[2] != p->stdio[0]))
		return field_error_set(err, -EINVAL, P, "controllingTty",
				       "needs stdio.stdin, stdout and stderr to be the same fd");
	*ret = TAKE_PTR(p);
	return 0;
}

int plan_check_fds(const struct plan *p, const int *fds, size_t n_fds, struct field_error *err)
{
	if (!p->controlling_tty)
		return 0;
	if (p->stdio[0] < 0 || (size_t)p->stdio[0] >= n_fds || !isatty(fds[p->stdio[0]]))
		return field_error_set(err, -ENOTTY, P, "controllingTty",
				       "stdio.stdin is not a terminal");
	return 0;
}
