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
	/* seccomp() flags for the floor alone. With SECCOMP_FILTER_FLAG_NEW_LISTENER the floor's
	 * refusals are SECCOMP_RET_USER_NOTIF (launcherd-seccomp.h): the init holds the listener,
	 * answers each with EPERM and reports it on fd 4 (struct apply_report, DENIAL). */
	uint32_t floor_flags;
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
 * What the sandbox's init writes to the report pipe (fixed-size records, each written whole:
 * below PIPE_BUF, so never interleaved nor split). Once the command has ended, an EXIT record:
 * its raw wait status, and whether the init was then alone in the pid namespace (no other
 * process left, so nothing of the sandbox can run any more and launcherd may report the exit
 * before the init itself is gone). Before it, a light spawn's init may write DENIAL records,
 * at most SANDBOX_INIT_DENIALS_PER_SEC a second, never while more than
 * SANDBOX_INIT_REPORT_BACKLOG bytes wait in the pipe (the EXIT record must always fit); what
 * it did not report it counts, in the next DENIAL or in a DROPPED record at the end of its
 * one-second window (or before EXIT). launcherd's own limit (launcherd-audit.h) is lower.
 */
#define SANDBOX_INIT_DENIALS_PER_SEC 100
#define SANDBOX_INIT_REPORT_BACKLOG 16384
enum apply_report_type {
	APPLY_REPORT_EXIT,    /* status, alone: the last record */
	APPLY_REPORT_DENIAL,  /* a refusal of the floor's (sandbox-init.c only): what follows */
	APPLY_REPORT_DROPPED, /* dropped alone: refusals the init did not report */
	/* session alone: the audit session the set-up child gave the sandbox (launcherd-audit.h),
	 * written by that child, before the init runs: launcherd takes it only as the first
	 * record, and only when it asked the child for it (any later one ends the report) */
	APPLY_REPORT_SESSION,
};

struct apply_report {
	uint32_t type; /* enum apply_report_type */
	int32_t status;
	int32_t alone;
	/* DENIAL, DROPPED: refusals the init did not report before this one (its own limit);
	 * DENIAL: the refused call as the kernel handed it to the listener (struct seccomp_data), and the
	 * caller's pid in the sandbox's pid namespace. Written by the sandbox's init, which runs
	 * as the requester: launcherd checks every field before use. */
	uint32_t dropped;
	int32_t nr;
	uint32_t arch;
	uint32_t pid;
	uint32_t session; /* SESSION */
	uint64_t args[6];
	/* DENIAL: the caller's /proc/PID/comm as the init read it (best effort), NUL-padded */
	char comm[16];
};

/* Exit code of a child whose set-up failed (the status pipe says why). */
#define APPLY_EXIT_SETUP_FAILED 125
