/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Applying a spawn plan: the child side, between clone and exec. See launcherd_apply() in
 * launcherd-apply.c for the order and why.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "common/cleanup.h"
#include "launcherd/launcherd-cgroup.h"
#include "launcherd/launcherd-plan.h"
#include "launcherd/launcherd-seccomp.h"
#include "launcherd/sandbox-init.h"

const char *apply_step_to_string(enum apply_step s);

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
	int status_fd;	/* write end of the status pipe (close-on-exec) */
	int report_fd;	/* write end of the report pipe: the command's wait status (init) */
	int proxy_sock; /* network "proxy": where the listener goes back to launcherd, else -1 */
	/* The light spawn (launcherd-light.h), else both -1: the sandbox init's memfd, and the
	 * read end of the pipe launcherd wrote its struct sandbox_init_config and filters to. */
	int init_fd;
	int config_fd;
	char *const *init_argv; /* its argv (sandbox-init.h), NULL off the light path */

	bool userns; /* user mode: the sandbox runs in a new user namespace */
	/* ... unshared at the userns step, after everything that needs launcherd's own user
	 * namespace (which owns the other namespaces), instead of with the clone */
	bool userns_late;
	uid_t uid; /* the requester, from SO_PEERCRED */
	gid_t gid;
	const gid_t *groups;
	size_t n_groups;
	/* Privileged mode: the requester's own resource limits (read at its hello), where they
	 * differ from launcherd's (bit per RLIMIT_*): the sandbox starts from them, never from
	 * launcherd's, before the plan's (which dispatch checked are within them). */
	struct rlimit limits[RLIM_NLIMITS];
	uint32_t limits_differ;

	/* The bounding set we were cloned with is empty and stays so (privileged mode: launcherd
	 * emptied its own at start, and only a new user namespace could fill it again): the
	 * capabilities step reads nothing of it, one prctl() per capability. */
	bool bset_empty;
	/* launcherd reads denials: give the sandbox an audit session and report it first on
	 * report_fd (audit_child_session(), APPLY_REPORT_SESSION) */
	bool audit_session;

	int cgroup_go_fd; /* with a cgroup: one byte once launcherd moved us into it, else -1 */
	/* ... or, the light spawn, its cgroup.procs files (v1: pids, memory), each or -1: we move
	 * ourselves in */
	int cgroup_procs[2];
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
/* The same as a clone() fn, for the light spawn. */
int launcherd_apply_light(void *ctx);
