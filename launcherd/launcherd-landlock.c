/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Landlock (kernel samples/landlock/sandboxer.c is the model): probe the ABI once, handle every
 * filesystem right the kernel knows so that anything not granted is denied, mask rights the
 * kernel does not know, and fail when the plan requires one of those.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "common/cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "launcherd/launcherd-landlock.h"
#include "launcherd/launcherd-plan.h"

/* The ruleset attribute as of ABI 6; the size passed to the kernel follows the ABI. */
struct cordon_landlock_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct cordon_landlock_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};

static const struct {
	const char *name;
	uint64_t right;
	int abi;
} fs_rights[] = {
	{ "execute", LANDLOCK_ACCESS_FS_EXECUTE, 1 },
	{ "write-file", LANDLOCK_ACCESS_FS_WRITE_FILE, 1 },
	{ "read-file", LANDLOCK_ACCESS_FS_READ_FILE, 1 },
	{ "read-dir", LANDLOCK_ACCESS_FS_READ_DIR, 1 },
	{ "remove-dir", LANDLOCK_ACCESS_FS_REMOVE_DIR, 1 },
	{ "remove-file", LANDLOCK_ACCESS_FS_REMOVE_FILE, 1 },
	{ "make-char", LANDLOCK_ACCESS_FS_MAKE_CHAR, 1 },
	{ "make-dir", LANDLOCK_ACCESS_FS_MAKE_DIR, 1 },
	{ "make-reg", LANDLOCK_ACCESS_FS_MAKE_REG, 1 },
	{ "make-sock", LANDLOCK_ACCESS_FS_MAKE_SOCK, 1 },
	{ "make-fifo", LANDLOCK_ACCESS_FS_MAKE_FIFO, 1 },
	{ "make-block", LANDLOCK_ACCESS_FS_MAKE_BLOCK, 1 },
	{ "make-sym", LANDLOCK_ACCESS_FS_MAKE_SYM, 1 },
	{ "refer", LANDLOCK_ACCESS_FS_REFER, 2 },
	{ "truncate", LANDLOCK_ACCESS_FS_TRUNCATE, 3 },
	{ "ioctl-dev", LANDLOCK_ACCESS_FS_IOCTL_DEV, 5 },
};

unsigned landlock_restrict_flags;

uint64_t landlock_access_from_name(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(fs_rights); i++)
		if (streq(name, fs_rights[i].name))
			return fs_rights[i].right;
	return 0;
}

int landlock_fs_right_abi(uint64_t right)
{
	for (size_t i = 0; i < ELEMENTSOF(fs_rights); i++)
		if (fs_rights[i].right == right)
			return fs_rights[i].abi;
	return INT32_MAX;
}

uint64_t landlock_fs_rights_for_abi(int abi)
{
	uint64_t m = 0;

	for (size_t i = 0; i < ELEMENTSOF(fs_rights); i++)
		if (fs_rights[i].abi <= abi)
			m |= fs_rights[i].right;
	return m;
}

int landlock_probe_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	if (abi < 0)
		return 0;
	return abi > LANDLOCK_ABI_KNOWN ? LANDLOCK_ABI_KNOWN : (int)abi;
}

int landlock_unenforced(const struct plan *plan, int abi, json_t *arr)
{
	uint64_t known = landlock_fs_rights_for_abi(abi);
	char f[48];

	if (!plan->has_landlock)
		return 0;
	if (abi < 1)
		return json_array_append_new(arr, json_string("landlock"));
	for (size_t i = 0; i < plan->n_landlock_fs; i++)
		if (plan->landlock_fs[i].access & ~known) {
			(void)snprintf(f, sizeof(f), "landlock.fs[%zu].access", i);
			if (json_array_append_new(arr, json_string(f)) < 0)
				return -ENOMEM;
		}
	if (plan->landlock_has_net && abi < 4 &&
	    json_array_append_new(arr, json_string("landlock.net")) < 0)
		return -ENOMEM;
	if (plan->landlock_scope && abi < 6 &&
	    json_array_append_new(arr, json_string("landlock.scope")) < 0)
		return -ENOMEM;
	return 0;
}

static size_t ruleset_attr_size(int abi)
{
	if (abi >= 6)
		return sizeof(struct cordon_landlock_ruleset_attr);
	if (abi >= 4)
		return offsetof(struct cordon_landlock_ruleset_attr, scoped);
	return offsetof(struct cordon_landlock_ruleset_attr, handled_access_net);
}

static int add_port_rules(int ruleset, const uint16_t *ports, size_t n, uint64_t access)
{
	for (size_t i = 0; i < n; i++) {
		struct cordon_landlock_net_port_attr pa = { .allowed_access = access,
							    .port = ports[i] };

		if (syscall(SYS_landlock_add_rule, ruleset, CORDON_LANDLOCK_RULE_NET_PORT, &pa, 0) <
		    0)
			return -errno;
	}
	return 0;
}

static int open_nofollow(const char *path, int flags)
{
	return fd_openat2(AT_FDCWD, path, flags | O_PATH,
			  RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

/*
 * A rule's path, opened without following any symlink: a payload that plants one in a writable
 * directory (/work/l -> /etc) must not redirect a later sandbox's grant, as no mount target can
 * be redirected either (launcherd-mount.c). The one exception are the plan's own symlinks
 * (/bin -> usr/bin on a merged-/usr host), which launcherd made in the read-only root: a rule at
 * or under one is resolved through its link text once, and the rest again without following.
 */
static int open_rule_path(const struct plan *plan, const char *path, int flags)
{
	char buf[PATH_MAX];
	int fd = open_nofollow(path, flags);

	if (fd != -ELOOP)
		return fd;
	for (size_t i = 0; i < plan->n_mounts; i++) {
		const struct plan_mount *m = &plan->mounts[i];
		size_t n = m->type == PLAN_MOUNT_SYMLINK ? strlen(m->target) : 0;
		const char *slash;
		int len;

		if (n == 0 || strncmp(path, m->target, n) != 0 || (path[n] && path[n] != '/'))
			continue;
		if (m->link[0] == '/')
			len = snprintf(buf, sizeof(buf), "%s%s", m->link, path + n);
		else {
			slash = strrchr(m->target, '/'); /* targets are absolute: never NULL */
			len = snprintf(buf, sizeof(buf), "%.*s/%s%s", (int)(slash - m->target),
				       m->target, m->link, path + n);
		}
		if (len < 0 || (size_t)len >= sizeof(buf))
			return -ENAMETOOLONG;
		return open_nofollow(buf, flags);
	}
	return -ELOOP;
}

int landlock_prepare(const struct plan *plan, int abi, int *ret_index, int *ret_ruleset)
{
	struct cordon_landlock_ruleset_attr attr = { 0 };
	_cleanup_close_ int ruleset = -1;
	uint64_t known = landlock_fs_rights_for_abi(abi);
	int r;

	*ret_index = -1;
	*ret_ruleset = -1;
	if (!plan->has_landlock)
		return 0;
	if (abi < 1)
		return plan->landlock_required ? -EOPNOTSUPP : 0;

	/* A required right the kernel cannot enforce fails the spawn: never a silent downgrade. */
	if (plan->landlock_required) {
		for (size_t i = 0; i < plan->n_landlock_fs; i++)
			if (plan->landlock_fs[i].access & ~known) {
				*ret_index = (int)i;
				return -EOPNOTSUPP;
			}
		if (plan->landlock_has_net && abi < 4)
			return -EOPNOTSUPP;
		if (plan->landlock_scope && abi < 6)
			return -EOPNOTSUPP;
	}

	attr.handled_access_fs = known;
	if (plan->landlock_has_net && abi >= 4)
		attr.handled_access_net = CORDON_LANDLOCK_ACCESS_NET_BIND_TCP |
					  CORDON_LANDLOCK_ACCESS_NET_CONNECT_TCP;
	if (abi >= 6)
		attr.scoped = plan->landlock_scope;

	ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, ruleset_attr_size(abi), 0);
	if (ruleset < 0)
		return -errno;

	for (size_t i = 0; i < plan->n_landlock_fs; i++) {
		struct landlock_path_beneath_attr pb = { 0 };
		_cleanup_close_ int fd = -1;

		*ret_index = (int)i;
		pb.allowed_access = plan->landlock_fs[i].access & known;
		/* Most paths are directories: asked as one, a file answers ENOTDIR (no stat). */
		fd = open_rule_path(plan, plan->landlock_fs[i].path, O_DIRECTORY);
		if (fd == -ENOTDIR) {
			fd = open_rule_path(plan, plan->landlock_fs[i].path, 0);
			/* Directory-only rights on a file would be refused by the kernel: narrow
			 * them. */
			pb.allowed_access &= LANDLOCK_FILE_RIGHTS;
		}
		if (fd < 0)
			return fd;
		pb.parent_fd = fd;
		if (!pb.allowed_access)
			continue;
		if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
			return -errno;
	}
	*ret_index = -1;

	if (attr.handled_access_net) {
		r = add_port_rules(ruleset, plan->bind_tcp, plan->n_bind_tcp,
				   CORDON_LANDLOCK_ACCESS_NET_BIND_TCP);
		if (r < 0)
			return r;
		r = add_port_rules(ruleset, plan->connect_tcp, plan->n_connect_tcp,
				   CORDON_LANDLOCK_ACCESS_NET_CONNECT_TCP);
		if (r < 0)
			return r;
	}

	*ret_ruleset = TAKE_FD(ruleset);
	return 0;
}

int landlock_apply(const struct plan *plan, int abi, int *ret_index)
{
	_cleanup_close_ int ruleset = -1;
	int r = landlock_prepare(plan, abi, ret_index, &ruleset);

	if (r < 0 || ruleset < 0)
		return r;
	if (syscall(SYS_landlock_restrict_self, ruleset, landlock_restrict_flags) < 0)
		return -errno;
	return 0;
}
