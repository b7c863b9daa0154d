/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Compiling a policy into a launcher spawn plan (docs/PROTOCOL.md §1.3) for one caller on one
 * host. Runs in the controller, as the user: every bind source is opened here (O_PATH) so a
 * user can expose only what the user can open; the seccomp program is built here with
 * libseccomp. launcherd gets the plan and the fds, never the policy.
 *
 * A rule the host (the launcher's hello reply) cannot enforce fails the compile with the rule
 * named, unless the policy lists it in "optional"; then it is left out of the plan and listed in
 * compiled_plan.unenforced.
 *
 * The host-executed paths of every writable bind (policy-hostexec.h) are kept read-only: each
 * one that exists is bound read-only over itself (git's hooks: hidden), and each directory
 * between it and its bind is bound read-write over itself, so that it cannot be renamed away.
 * Compiling makes a git directory's missing hooks, info and config, empty, as the user (git init
 * makes them too), so that they can be bound.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ipc/ipc-json.h"
#include "policy/policy-model.h"

#define PLAN_MOUNTS_MAX 256
#define PLAN_TMP_SIZE_BYTES (256ULL * 1024 * 1024)
#define PLAN_HOME_SIZE_BYTES (256ULL * 1024 * 1024)
#define PLAN_PROXY_PORT 3128

/* How a bind source was found (policy_recompile() finds it again and compares). */
struct plan_source {
	char *host;   /* the path opened */
	char *target; /* where the sandbox sees it */
	bool rw;
	char *link;   /* it was a symlink with this text, else NULL */
	bool follow;  /* that symlink was followed and its destination bound */
	bool absent;  /* it was not there (or the symlink led nowhere): left out */
	int fd_index; /* its fd in the plan's list, -1 if none */
};

struct compiled_plan {
	json_t *plan;	/* the "plan" object of a spawn request; "stdio" is the caller's */
	int *fds;	/* owned; the plan names them by index */
	char **fd_what; /* per fd: the host path opened, or "seccomp" */
	size_t n_fds;
	size_t n_alloc;
	uint64_t max_output_bytes; /* enforced by the controller, not in the plan */
	char *seccomp_key;	   /* the syscall spec (policy_syscall_spec_key()), NULL if none */
	char **unenforced;	   /* optional rules left out on this host */
	char **skipped;		   /* absent paths left out (default system dirs, optional paths) */
	struct plan_source *sources; /* per bind, in the order the policy lists them */
	size_t n_sources;
	/* The host-executed paths in the writable binds (policy-hostexec.h): what the scan found
	 * (policy_recompile() scans again and compares), the fd index of each path it found, in
	 * its order (-1: not bound), and those absent that the sandbox could create. */
	char *host_exec_key;
	int *host_exec_fds;
	size_t n_host_exec;
	char **host_exec_absent;
};

struct compiled_plan *compiled_plan_free(struct compiled_plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct compiled_plan *, compiled_plan_free);
#define _cleanup_compiled_plan_ _cleanup_(compiled_plan_freep)

/*
 * Hand fd to the plan (also on failure: it is closed then) and return its index, for the fds
 * the caller adds after the compiler's (e.g. plan.stdio). what describes it for dumps.
 */
int compiled_plan_add_fd(struct compiled_plan *p, int fd, const char *what);

int policy_compile(const struct policy *policy, const struct compile_ctx *ctx,
		   struct compiled_plan **ret, struct field_error *err);

/*
 * The plan for another request with the same policy, caller cwd and home, host and launcher as
 * cached (compiled by policy_compile() with the same policy): only argv and envp are built
 * again, from ctx. Every bind source is opened again by its path, as the user, now — a cached
 * plan never hands out an fd opened for an earlier request, so what a sandbox sees cannot be
 * stale — and -ESTALE is returned when a path changed in a way that shapes the plan (it
 * appeared, vanished, or became another symlink): compile afresh then. The seccomp program
 * (a sealed memfd) is shared. The new plan's JSON is a shallow copy of cached's: set top-level
 * members only.
 */
int policy_recompile(const struct policy *policy, const struct compiled_plan *cached,
		     const struct compile_ctx *ctx, struct compiled_plan **ret,
		     struct field_error *err);
/* Close the bind-source fds of a plan kept for policy_recompile() (it does not use them, and an
 * open fd would pin a directory or keep a file system busy). */
void compiled_plan_close_sources(struct compiled_plan *p);
