/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "launcherd/launcherd-floor.h"

static void floor_defaults(struct floor *f)
{
	*f = (struct floor){
		.max_network = PLAN_NETWORK_PROXY,
		.host_mode = false,
		.max_sandboxes = 256,
		.pids_max = 65536,
	};
}

void floor_done(struct floor *f)
{
	strv_free(f->allow_users);
	strv_free(f->allow_groups);
	strv_free(f->pack_sockets);
	f->allow_users = f->allow_groups = f->pack_sockets = NULL;
}

static int parse_floor(json_t *j, struct floor *f, struct field_error *err)
{
	static const char *const keys[] = { "require",	   "maxNetwork",  "hostMode",
					    "allowUsers",  "allowGroups", "perUser",
					    "packSockets", NULL };
	static const char *const per_user_keys[] = { "maxSandboxes", "pidsMax", "memoryMaxBytes",
						     NULL };
	_cleanup_strv_free_ char **require = NULL;
	const char *s;
	json_t *pu;
	int r;

	r = ipc_json_check_keys(j, keys, "", err);
	if (r < 0)
		return r;
	r = ipc_json_get_strv(j, "require", false, 16, 32, "", &require, err);
	if (r < 0)
		return r;
	for (size_t i = 0; require && require[i]; i++) {
		if (streq(require[i], "landlock"))
			f->require_landlock = true;
		else if (streq(require[i], "seccomp"))
			f->require_seccomp = true;
		else if (streq(require[i], "netns"))
			f->require_netns = true;
		else {
			char q[32];

			json_path_index(q, sizeof(q), "require", i);
			return field_error_set(err, -EINVAL, q, NULL,
					       "unknown layer (landlock, seccomp, netns)");
		}
	}
	r = ipc_json_get_string(j, "maxNetwork", false, "", &s, err);
	if (r < 0)
		return r;
	if (r > 0 && plan_network_from_string(s, &f->max_network) < 0)
		return field_error_set(err, -EINVAL, "", "maxNetwork",
				       "expected none, loopback, proxy, host or unix");
	r = ipc_json_get_bool(j, "hostMode", false, "", &f->host_mode, err);
	if (r < 0)
		return r;
	r = ipc_json_get_strv(j, "allowUsers", false, 4096, 256, "", &f->allow_users, err);
	if (r < 0)
		return r;
	r = ipc_json_get_strv(j, "allowGroups", false, 4096, 256, "", &f->allow_groups, err);
	if (r < 0)
		return r;
	r = ipc_json_get_strv(j, "packSockets", false, 64, 4096, "", &f->pack_sockets, err);
	if (r < 0)
		return r;
	for (size_t i = 0; f->pack_sockets && f->pack_sockets[i]; i++)
		if (!path_is_absolute(f->pack_sockets[i]) ||
		    !path_is_normalized(f->pack_sockets[i])) {
			char q[32];

			json_path_index(q, sizeof(q), "packSockets", i);
			return field_error_set(err, -EINVAL, q, NULL,
					       "expected a normalized absolute path");
		}
	r = ipc_json_get_object(j, "perUser", false, "", &pu, err);
	if (r < 0)
		return r;
	if (r > 0) {
		r = ipc_json_check_keys(pu, per_user_keys, "perUser", err);
		if (r < 0)
			return r;
		r = ipc_json_get_uint64(pu, "maxSandboxes", false, 1, 1U << 20, "perUser",
					&f->max_sandboxes, err);
		if (r < 0)
			return r;
		r = ipc_json_get_uint64(pu, "pidsMax", false, 1, PLAN_PIDS_MAX, "perUser",
					&f->pids_max, err);
		if (r < 0)
			return r;
		f->pids_max_required = r > 0;
		r = ipc_json_get_uint64(pu, "memoryMaxBytes", false, PLAN_MEMORY_MIN, INT64_MAX,
					"perUser", &f->memory_max, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int floor_parse(const char *text, size_t len, struct floor *ret, struct field_error *err)
{
	_cleanup_json_ json_t *j = NULL;
	struct floor f;

	floor_defaults(&f);
	if (len > FLOOR_FILE_MAX)
		return field_error_set(err, -EFBIG, "", NULL, "larger than %u bytes",
				       FLOOR_FILE_MAX);
	if (ipc_json_parse_object(text, len, &j, err) < 0)
		return -EINVAL;
	if (parse_floor(j, &f, err) < 0) {
		floor_done(&f);
		return -EINVAL;
	}
	*ret = f;
	return 0;
}

int floor_load(const char *path, struct floor *ret, struct field_error *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *text = NULL;
	struct floor f;
	struct stat st;
	size_t len;
	int r;

	floor_defaults(&f);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT) {
			*ret = f;
			return 0;
		}
		return field_error_set(err, -errno, "", NULL, "cannot open: %m");
	}
	/* Checked on the open file, so what we read is what we checked. */
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return field_error_set(err, -EPERM, "", NULL, "not a regular file");
	if (st.st_uid != 0)
		return field_error_set(err, -EPERM, "", NULL, "not owned by root (uid %u)",
				       (unsigned)st.st_uid);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return field_error_set(err, -EPERM, "", NULL,
				       "group- or world-writable (mode %04o)",
				       (unsigned)(st.st_mode & 07777));
	r = read_full_fd(fd, FLOOR_FILE_MAX, &text, &len);
	if (r < 0)
		return field_error_set(err, r, "", NULL, "cannot read: %s", strerror(-r));
	return floor_parse(text, len, ret, err);
}

bool floor_user_allowed(const struct floor *f, uid_t uid, const gid_t *groups, size_t n_groups)
{
	struct passwd *pw;

	if (!f->allow_users && !f->allow_groups)
		return true;
	pw = getpwuid(uid);
	if (pw && f->allow_users && strv_contains(f->allow_users, pw->pw_name))
		return true;
	for (size_t i = 0; f->allow_groups && f->allow_groups[i]; i++) {
		struct group *g = getgrnam(f->allow_groups[i]);

		if (!g)
			continue;
		for (size_t k = 0; k < n_groups; k++)
			if (groups[k] == g->gr_gid)
				return true;
	}
	return false;
}

int floor_check_plan_rule(const struct floor *f, const struct plan *p, const char **ret_rule,
			  struct field_error *err)
{
	const char *unused;

	if (!ret_rule)
		ret_rule = &unused;
	*ret_rule = NULL;
	if (f->require_landlock && !p->has_landlock) {
		*ret_rule = "require-landlock";
		return field_error_set(err, -EPERM, "plan", "landlock",
				       "required by the admin floor");
	}
	if (f->require_landlock && !p->landlock_required) {
		*ret_rule = "require-landlock";
		return field_error_set(err, -EPERM, "plan.landlock", "required",
				       "the admin floor requires Landlock: it cannot be optional");
	}
	if (f->require_seccomp && p->seccomp_program < 0) {
		*ret_rule = "require-seccomp";
		return field_error_set(err, -EPERM, "plan", "seccomp",
				       "required by the admin floor");
	}
	if (f->require_netns && p->network == PLAN_NETWORK_HOST) {
		*ret_rule = "require-netns";
		return field_error_set(err, -EPERM, "plan", "network",
				       "the admin floor requires a network namespace");
	}
	if (plan_network_rank(p->network) > plan_network_rank(f->max_network)) {
		*ret_rule = "max-network";
		return field_error_set(err, -EPERM, "plan", "network",
				       "\"%s\" is above the admin floor's maximum \"%s\"",
				       plan_network_to_string(p->network),
				       plan_network_to_string(f->max_network));
	}
	if (f->pids_max_required && !p->pids_max) {
		*ret_rule = "pids-max-required";
		return field_error_set(err, -EPERM, "plan.cgroup", "pidsMax",
				       "required by the admin floor (per-user ceiling %llu)",
				       (unsigned long long)f->pids_max);
	}
	if (f->memory_max && !p->memory_max) {
		*ret_rule = "memory-max-required";
		return field_error_set(err, -EPERM, "plan.cgroup", "memoryMaxBytes",
				       "required by the admin floor (per-user ceiling %llu)",
				       (unsigned long long)f->memory_max);
	}
	return 0;
}

int floor_check_plan(const struct floor *f, const struct plan *p, struct field_error *err)
{
	return floor_check_plan_rule(f, p, NULL, err);
}

void floor_rules(const struct floor *f, char *buf, size_t size)
{
	(void)snprintf(buf, size, "%s%s%s%smax-network-%s%s%s",
		       f->allow_users || f->allow_groups ? "allow-list," : "",
		       f->require_landlock ? "require-landlock," : "",
		       f->require_seccomp ? "require-seccomp," : "",
		       f->require_netns ? "require-netns," : "",
		       plan_network_to_string(f->max_network),
		       f->pids_max_required ? ",pids-max-required" : "",
		       f->memory_max ? ",memory-max-required" : "");
}

json_t *floor_to_json(const struct floor *f)
{
	json_t *req = json_array();
	json_t *o;

	if (!req)
		return NULL;
	if (f->require_landlock)
		(void)json_array_append_new(req, json_string("landlock"));
	if (f->require_seccomp)
		(void)json_array_append_new(req, json_string("seccomp"));
	if (f->require_netns)
		(void)json_array_append_new(req, json_string("netns"));
	o = json_pack("{s:o,s:s,s:b,s:{s:I,s:I,s:I}}", "require", req, "maxNetwork",
		      plan_network_to_string(f->max_network), "hostMode", f->host_mode, "perUser",
		      "maxSandboxes", (json_int_t)f->max_sandboxes, "pidsMax",
		      (json_int_t)f->pids_max, "memoryMaxBytes", (json_int_t)f->memory_max);
	if (o) {
		json_t *socks = json_array();

		for (size_t i = 0; socks && f->pack_sockets && f->pack_sockets[i]; i++)
			(void)json_array_append_new(socks, json_string(f->pack_sockets[i]));
		if (!socks || json_object_set_new(o, "packSockets", socks) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}
