/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What launcherd's set-up child and the sandbox's init (cordon-sandbox-init, sandbox-init.c)
 * share: the set-up steps, the records on the status and report pipes, and how the child hands
 * the init its work. Included by freestanding code: <stdint.h> only.
 *
 * The light spawn (launcherd-light.h): launcherd clones the child with CLONE_VM, so nothing of
 * its address space is copied; the child builds the sandbox as usual up to and including its
 * working directory, then execs the init from a sealed memfd launcherd made at start, which
 * leaves launcherd's memory. The init, a few pages of static code with no libc, restricts
 * itself with the Landlock ruleset and the seccomp filters it is handed, runs the command as
 * its child and reports its end. Its argv is "cordon-init" followed by the command's argv, its
 * environment the command's. The fds it finds:
 */
#pragma once

#include <stdint.h>

#define SANDBOX_INIT_FD_STATUS 3  /* the status pipe: its EOF is the command's exec */
#define SANDBOX_INIT_FD_REPORT 4  /* the report pipe: struct apply_report */
#define SANDBOX_INIT_FD_CONFIG 5  /* a pipe: struct sandbox_init_config, then the filters */
#define SANDBOX_INIT_FD_RULESET 6 /* when open: the Landlock ruleset to restrict to */
#define SANDBOX_INIT_FD_TRACE 7	  /* when open: launcherd's trace file (launcherd-trace.h) */

#define SANDBOX_INIT_MAGIC 0x43524e49U /* "INRC" */

/* Followed on the config pipe by n_floor, then n_plan struct sock_filter (8 bytes each). */
struct sandbox_init_config {
	uint32_t magic;
	uint32_t n_floor; /* launcherd's floor filter, loaded first */
	uint32_t n_plan;  /* the plan's own filter, 0 for none */
	/* landlock_restrict_self() and seccomp() flags: launcherd's denial reader asks for the
	 * refusals to be logged (launcherd-audit.h), else 0 */
	uint16_t landlock_flags;
	uint16_t seccomp_flags;
	char id[24]; /* the sandbox id, NUL-terminated, for trace lines */
};

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

/*
 * What the child (or the init) writes to the status pipe when a step fails; nothing is written
 * on success and the pipe (close-on-exec) reaches EOF at the command's exec. index names the
 * mount (STEP_MOUNT), Landlock rule (STEP_LANDLOCK), rlimit (STEP_RLIMIT) or seccomp filter
 * (STEP_SECCOMP: 0 the plan's, -1 the floor) concerned, else -1.
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
