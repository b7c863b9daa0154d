/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Applying a spawn plan: the child side, between clone and exec. See launcherd_apply() in
 * launcherd-apply.c for the order and why.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cleanup.h"
#include "launcherd/launcherd-cgroup.h"
#include "launcherd/launcherd-plan.h"
#include "launcherd/launcherd-seccomp.h"

/* Set-up steps, in the order they run; names are API (docs/PROTOCOL.md §1.2, error "step"). */
enum apply_step {
	STEP_CLONE,
	STEP_USERNS_MAP,
	STEP_MOUNT_PRIVATE,
	STEP_ROOT,
	STEP_MOUNT,
	STEP_PIVOT_ROOT,
	STEP_NETWORK,
	STEP_CGROUP,
	STEP_HOSTNAME,
	STEP_SESSION,
	STEP_RLIMIT,
	STEP_IDENTITY,
	STEP_CAPABILITIES,
	STEP_NO_NEW_PRIVS,
	STEP_LANDLOCK,
	STEP_SECCOMP,
	STEP_FDS,
	STEP_CWD,
	STEP_EXEC,
	_STEP_MAX,
};

const char *apply_step_to_string(enum apply_step s);

/*
 * What the child writes to the status pipe when a step fails; nothing is written on success and
 * the pipe (close-on-exec) reaches EOF at exec. index names the mount (STEP_MOUNT), Landlock rule
 * (STEP_LANDLOCK) or rlimit (STEP_RLIMIT) concerned, else -1.
 */
struct apply_status {
	int32_t step;
	int32_t error; /* positive errno */
	int32_t index;
};

/*
 * What the sandbox's init writes to the report pipe once the command has ended: its raw wait
 * status, and whether the init was then alone in the pid namespace (no other process left, so
 * nothing of the sandbox can run any more and launcherd may report the exit before the init
 * itself is gone).
 */
struct apply_report {
	int32_t status;
	int32_t alone;
};

/* Exit code of a child whose set-up failed (the status pipe says why). */
#define APPLY_EXIT_SETUP_FAILED 125

/*
 * Everything the child needs, prepared by the parent before clone. The child reads it from its
 * copy of the parent's memory; nothing here is shared after the clone.
 */
struct apply_context {
	const struct plan *plan;
	const char *id; /* the sandbox id, for launcherd-trace.h only */
	const int *fds; /* the spawn message's fds, by plan index */
	size_t n_fds;
	int *tree_fds;	/* per mount: a detached clone of a bind source, or -1 */
	int devnull_fd; /* for stdio the plan leaves out */
	int netns_fd;	/* a fresh netns from the pool (lo up), or -1: CLONE_NEWNET */
	int mntns_fd;	/* an empty mount namespace from the pool, or -1: CLONE_NEWNS */
	int ipcns_fd;	/* a fresh IPC namespace from the pool, or -1: CLONE_NEWIPC */
	int status_fd;	/* write end of the status pipe (close-on-exec) */
	int report_fd;	/* write end of the report pipe: the command's wait status (init) */
	int proxy_sock; /* network "proxy": where the listener goes back to launcherd, else -1 */

	bool userns; /* user mode: the sandbox runs in a new user namespace */
	/* ... unshared at the userns step, after everything that needs launcherd's own user
	 * namespace (which owns the other namespaces), instead of with the clone */
	bool userns_late;
	uid_t uid; /* the requester, from SO_PEERCRED */
	gid_t gid;
	const gid_t *groups;
	size_t n_groups;

	/* The bounding set we were cloned with is empty and stays so (privileged mode: launcherd
	 * emptied its own at start, and only a new user namespace could fill it again): the
	 * capabilities step reads nothing of it, one prctl() per capability. */
	bool bset_empty;

	int cgroup_go_fd;     /* with a cgroup: one byte once launcherd moved us into it, else -1 */
	uint64_t nproc_limit; /* user mode without a cgroup: RLIMIT_NPROC in the new user ns */
	int landlock_abi;
	const struct seccomp_program *floor;
	const struct seccomp_program *plan_filter; /* NULL when the plan has none */
};

/*
 * User mode: map the user (and its primary group) to itself in the user namespace the caller
 * is in, new and not yet mapped; nothing else is mapped. self_dir: an O_PATH fd of /proc/self/
 * (in the child, opened while the host's /proc was still in its mount namespace: the sandbox's
 * tree may have none). 0 or -errno.
 */
int apply_map_self(int self_dir, uid_t uid, gid_t gid);

/* Namespaces every sandbox gets (plus CLONE_NEWNET unless network is "host"; CLONE_NEWCGROUP is
 * unshared by the child once launcherd moved it into its own cgroup, or cloned when it has
 * none). */
unsigned long long apply_clone_flags(const struct apply_context *ctx);

/* Child side: apply the plan and exec. Never returns. */
_noreturn_ void launcherd_apply(const struct apply_context *ctx);
