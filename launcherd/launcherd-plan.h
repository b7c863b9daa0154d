/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The spawn plan (docs/PROTOCOL.md §1.3) as launcherd holds it after validation.
 *
 * plan_parse() is the only reader of the plan JSON. It re-checks every field even though the
 * controller compiled the plan, refuses unknown fields, and names the offending field by its
 * JSON path ("plan.mounts[3].target"). It checks shape and ranges only; the admin floor is
 * applied afterwards (launcherd-floor.c), and the seccomp program is read by the caller.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "common/util.h"
#include "ipc/ipc-json.h"

/* argv and envp: bounded together the way execve(2) counts them (common/util.h), not by count */
#define PLAN_STRING_MAX (CORDON_ARG_STRLEN_MAX - 1U) /* bytes, without the NUL */
#define PLAN_MOUNTS_MAX 256
#define PLAN_LANDLOCK_RULES_MAX 256
#define PLAN_PORTS_MAX 256
#define PLAN_HOSTNAME_MAX 64
#define PLAN_PIDS_MAX 4194304ULL
#define PLAN_MEMORY_MIN (1024ULL * 1024ULL)
#define PLAN_TMPFS_SIZE_DEFAULT (64ULL * 1024ULL * 1024ULL)

enum plan_mount_type {
	PLAN_MOUNT_BIND,
	PLAN_MOUNT_TMPFS,
	PLAN_MOUNT_DIR,
	PLAN_MOUNT_SYMLINK,
	PLAN_MOUNT_PROC,
	PLAN_MOUNT_DEV,
	PLAN_MOUNT_DENY,
};

struct plan_mount {
	enum plan_mount_type type;
	char *target;	     /* normalized absolute path inside the sandbox, never "/" */
	char *link;	     /* symlink: the link text */
	int source;	     /* bind: index into the message's fds; -1 otherwise */
	bool read_only;	     /* bind: default true */
	bool optional;	     /* bind: a source that cannot be mounted is skipped */
	mode_t mode;	     /* tmpfs, dir */
	uint64_t size_bytes; /* tmpfs */
};

/*
 * "none" and "loopback": a network namespace of the sandbox's own, only lo; "unix": no socket
 * but AF_UNIX (the floor's seccomp filter), in a namespace the uid's "unix" sandboxes share.
 * The floor's maxNetwork compares plan_network_rank(): unix < none = loopback < proxy < host.
 */
enum plan_network {
	PLAN_NETWORK_NONE,
	PLAN_NETWORK_LOOPBACK,
	PLAN_NETWORK_PROXY,
	PLAN_NETWORK_HOST,
	PLAN_NETWORK_UNIX,
};

static inline int plan_network_rank(enum plan_network n)
{
	switch (n) {
	case PLAN_NETWORK_UNIX:
		return 0;
	case PLAN_NETWORK_NONE:
	case PLAN_NETWORK_LOOPBACK:
		return 1;
	case PLAN_NETWORK_PROXY:
		return 2;
	case PLAN_NETWORK_HOST:
		return 3;
	}
	return 3;
}

struct plan_landlock_rule {
	char *path;
	uint64_t access; /* LANDLOCK_ACCESS_FS_* */
};

struct plan_rlimit {
	int resource; /* RLIMIT_* */
	uint64_t value;
};

struct plan {
	char **argv;
	char **envp;
	char *cwd;
	char *hostname;
	int stdio[3]; /* fd index, -1 for /dev/null */

	struct plan_mount *mounts;
	size_t n_mounts;

	bool has_landlock;
	bool landlock_required;
	struct plan_landlock_rule *landlock_fs;
	size_t n_landlock_fs;
	bool landlock_has_net;
	uint16_t *bind_tcp;
	size_t n_bind_tcp;
	uint16_t *connect_tcp;
	size_t n_connect_tcp;
	uint64_t landlock_scope; /* CORDON_LANDLOCK_SCOPE_* */

	/* fd index of the requester's mount namespace (an nsfs fd), -1 without: where the bind
	 * sources that are not in launcherd's own namespace are cloned (launcherd-mount.c) */
	int mount_ns;

	int seccomp_program; /* fd index, -1 when the plan carries no filter */
	bool seccomp_kill;   /* floor denials kill (SIGSYS) instead of failing with EPERM */

	struct plan_rlimit rlimits[8];
	size_t n_rlimits;

	uint64_t pids_max;   /* 0: no cgroup pids limit */
	uint64_t memory_max; /* 0: no cgroup memory limit */

	enum plan_network network;
	uint16_t proxy_port;
	uint64_t timeout_ms;
	bool die_with_requester;
	/* stdin, stdout and stderr are one fd, a terminal: it becomes the sandbox's controlling
	 * terminal (a session of its own; launcherd-apply.c, session step) */
	bool controlling_tty;
};

/* What execve(2) counts for argv and envp: each string with its NUL, plus a pointer each. */
size_t plan_arg_size(char *const *argv, char *const *envp);

/* Parse and validate. n_fds is how many fds came with the message: every index must be below. */
int plan_parse(json_t *j, size_t n_fds, struct plan **ret, struct field_error *err);
/* The checks that need the fds themselves (controllingTty: a terminal). */
int plan_check_fds(const struct plan *p, const int *fds, size_t n_fds, struct field_error *err);
void plan_free(struct plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct plan *, plan_free);
#define _cleanup_plan_ _cleanup_(plan_freep)

const char *plan_network_to_string(enum plan_network n);
/* The plan's name of an RLIMIT_* ("nofile"), "?" for one a plan cannot name. */
const char *plan_rlimit_name(int resource);
int plan_network_from_string(const char *s, enum plan_network *ret);
