/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The in-memory policy (format version 1, docs/POLICY.md) and the host facts a policy is compiled
 * or explained against. Pure data and pure helpers: no I/O, no libseccomp.
 *
 * Paths are kept in a canonical form whose first component says what they are relative to:
 * "/abs/path", "~" or "~/rest" (the caller's home), "." or "./rest" (the caller's cwd). Two paths
 * with the same anchor compare lexically; policy_resolve() makes every path absolute.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "common/cleanup.h"
#include "ipc/ipc-json.h"

#define POLICY_VERSION 1
#define POLICY_PATH_MAX 4096
#define POLICY_LIST_MAX 128	/* entries of each filesystem list */
#define POLICY_DOMAINS_MAX 1024 /* entries of each network domain list */
#define POLICY_PORTS_MAX 64
#define POLICY_ENV_MAX 256
#define POLICY_ENV_VALUE_MAX (32U * 1024U)
#define POLICY_SYSCALLS_MAX 512
#define POLICY_FILE_MAX (1024U * 1024U) /* policy_parse_file() refuses larger files */

enum policy_access {
	POLICY_ACCESS_READ_ONLY,
	POLICY_ACCESS_READ_WRITE,
};

enum policy_tmp {
	POLICY_TMP_PRIVATE, /* a private tmpfs at /tmp */
	POLICY_TMP_NONE,    /* no /tmp at all */
};

enum policy_home {
	POLICY_HOME_EMPTY, /* an empty directory at $HOME (read-only: the root is) */
	POLICY_HOME_TMPFS, /* a private writable tmpfs at $HOME */
};

/*
 * Network modes. "none" and "loopback" name one sandbox: a network namespace of its own whose
 * only interface is lo (TCP and UDP on it work; nothing leaves). "unix" is narrower: no socket
 * of any family but AF_UNIX. Narrowing and floors compare policy_network_rank(), never the
 * values, which only say where a name sits in the tables.
 */
enum policy_network {
	POLICY_NETWORK_NONE,
	POLICY_NETWORK_LOOPBACK,
	POLICY_NETWORK_PROXY,
	POLICY_NETWORK_HOST,
	POLICY_NETWORK_UNIX,
};

/* unix < none = loopback < proxy < host */
static inline int policy_network_rank(enum policy_network n)
{
	switch (n) {
	case POLICY_NETWORK_UNIX:
		return 0;
	case POLICY_NETWORK_NONE:
	case POLICY_NETWORK_LOOPBACK:
		return 1;
	case POLICY_NETWORK_PROXY:
		return 2;
	case POLICY_NETWORK_HOST:
		return 3;
	}
	return 3;
}

/* Ordered from widest to narrowest. */
enum policy_syscall_profile {
	POLICY_SYSCALLS_DEFAULT,
	POLICY_SYSCALLS_STRICT,
};

struct policy_workspace {
	bool present; /* false: "workspace": null, no workspace */
	char *path;   /* canonical */
	enum policy_access access;
	char *mount_at;	 /* absolute, normalized; NULL: at its own path */
	bool allow_home; /* may be the caller's home or contain it (refused otherwise) */
};

struct policy_limits {
	uint64_t pids;
	uint64_t memory_bytes; /* 0: the default share of RAM, see policy_resolve() */
	uint64_t cpu_seconds;  /* 0: none */
	uint64_t wall_seconds; /* 0: none */
	uint64_t max_output_bytes;
	uint64_t files;
};

struct policy {
	unsigned version;
	struct {
		char **read; /* canonical paths, NULL-terminated */
		char **write;
		char **deny;
		bool read_is_default; /* read came from the default policy: absent entries skipped */
		enum policy_tmp tmp;
		enum policy_home home;
		struct policy_workspace workspace;
		/* filesystem.hostExecuted.allow: host-executed entries (policy-hostexec.h) the
		 * policy lets the sandbox write, or "*" for all of them */
		char **host_exec_allow;
	} fs;
	struct {
		enum policy_network mode;
		char **allow_domains; /* "name", "*.suffix", either with ":port" */
		char **deny_domains;
		unsigned *allow_ports;
		size_t n_allow_ports;
		char **resolve; /* "name=address" */
	} net;
	bool host_execution;
	struct policy_limits limits;
	struct {
		char **pass; /* variable names */
		char **set;  /* "NAME=VALUE", sorted by name */
	} env;
	struct {
		enum policy_syscall_profile profile;
		char **deny;
		char **allow;
	} syscalls;
	char **optional; /* rule identifiers, see policy_optional_valid() */
	bool resolved;	 /* policy_resolve() ran: every path absolute, memory_bytes concrete */
};

struct policy *policy_new(void);
struct policy *policy_free(struct policy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct policy *, policy_free);
#define _cleanup_policy_ _cleanup_(policy_freep)
int policy_copy(const struct policy *p, struct policy **ret);

const char *policy_access_to_string(enum policy_access a);
const char *policy_tmp_to_string(enum policy_tmp t);
const char *policy_home_to_string(enum policy_home h);
const char *policy_network_to_string(enum policy_network n);
const char *policy_syscall_profile_to_string(enum policy_syscall_profile s);
int policy_network_from_string(const char *s, enum policy_network *ret);

/*
 * Canonicalize a path as written in a policy: "~", "~/x", ".", "x/y", "/x//y/./z". Refuses
 * empty paths, "..", "~user", control characters and paths longer than POLICY_PATH_MAX.
 * Returns 0 and a fresh string, -EINVAL with *ret_reason set to a static reason, or -ENOMEM.
 */
int policy_path_canonicalize(const char *in, char **ret, const char **ret_reason);
/* True when path equals prefix or lies below it; paths with different anchors never do. */
bool policy_path_under(const char *path, const char *prefix);
/* An absolute host path as policies look paths up: relative to root_fd (the host's "/", or a
 * test root, resolved inside it when in_root: RESOLVE_IN_ROOT), flags | O_CLOEXEC. The fd, or
 * -errno. */
int policy_host_open(int root_fd, bool in_root, const char *path, int flags);
/* Resolve a canonical path against home and cwd (both absolute, normalized). NULL on OOM. */
char *policy_path_resolve(const char *path, const char *home, const char *cwd);

/* True when the domain pattern (with an optional ":port") covers name (without a port). */
bool policy_domain_matches(const char *pattern, const char *name);

/* The effective limits value treating 0 as the documented meaning ("none" → UINT64_MAX). */
uint64_t policy_limit_effective(const char *field, uint64_t v);

/* Is id a known rule identifier for "optional" in this policy? */
bool policy_optional_valid(const struct policy *p, const char *id);
bool policy_is_optional(const struct policy *p, const char *id);

/* The policy as a version-1 JSON document with every field present (defaults filled in). */
int policy_to_json(const struct policy *p, json_t **ret);

/* ---- the host a policy is compiled or explained against ---- */

enum policy_launcher_mode {
	POLICY_LAUNCHER_PRIVILEGED,
	POLICY_LAUNCHER_USER,
};

enum policy_cgroup {
	POLICY_CGROUP_NONE,
	POLICY_CGROUP_V1,
	POLICY_CGROUP_V2,
};

/* What the launcher said in its hello reply (PROTOCOL.md §1.2), including its admin floor. */
struct policy_host_caps {
	enum policy_launcher_mode mode;
	unsigned landlock_abi; /* 0: no Landlock */
	bool seccomp;
	enum policy_cgroup cgroup;
	bool userns;
	/* hello's pidsLimit "rlimit-nproc": without a cgroup, plan.cgroup.pidsMax is enforced
	 * with RLIMIT_NPROC in the sandbox's own user namespace (that sandbox's processes only) */
	bool pids_nproc;
	bool floor_require_landlock;
	bool floor_require_seccomp;
	enum policy_network floor_max_network;
	bool floor_host_mode;
};

/* The hostname of every sandbox (its own uts namespace). */
#define POLICY_HOSTNAME "cordon"

struct compile_ctx {
	char *const *argv; /* the command, NULL-terminated, at least one element */
	char *const *envp; /* the caller's environment */
	const char *cwd;   /* the caller's cwd: absolute, normalized */
	const char *home;  /* the caller's home: absolute, normalized */
	uid_t uid;
	gid_t gid;
	struct policy_host_caps caps;
	uint64_t mem_total; /* bytes of RAM (MemTotal); 0: unknown */
	/*
	 * Where host paths are looked up; NULL or "/" for the real root. Tests point this at a
	 * fake tree so golden plans do not depend on the host's layout.
	 */
	const char *host_root;
	/*
	 * A hosts file that also names the sandbox's hostname (POLICY_HOSTNAME), bound read-only
	 * over /etc/hosts where the policy shows the host's (a regular file there); NULL: none.
	 */
	const char *etc_hosts;
};

/* Parse a launcher hello reply into caps. Unknown members are ignored (the reply may grow). */
int policy_host_caps_from_hello(json_t *hello, struct policy_host_caps *ret,
				struct field_error *err);

/*
 * Make a policy concrete for one caller: every path absolute (resolved against ctx->home and
 * ctx->cwd) and memory_bytes set to the default share of RAM when 0. Idempotent.
 */
int policy_resolve(struct policy *p, const struct compile_ctx *ctx, struct field_error *err);
/* The default memory limit for a host with mem_total bytes of RAM (half; 2 GiB if unknown). */
uint64_t policy_default_memory_bytes(uint64_t mem_total);

/* Landlock filesystem access names (PROTOCOL.md §1.3) in ABI order, and the ABI of each. */
extern const char *const policy_landlock_fs_access[];
extern const unsigned policy_landlock_fs_access_abi[];
extern const size_t policy_landlock_fs_access_count;
