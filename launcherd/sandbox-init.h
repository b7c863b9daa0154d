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

/* Followed on the config pipe by n_floor, n_plan, then n_answer struct sock_filter (8 bytes
 * each). */
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
	/* When not 0: the floor above is one program with the plan's filter first, whose
	 * refusals are notifications too (launcherd-seccomp.h, seccomp_combine()); the plan's own
	 * filter follows the two programs, n_answer instructions, never loaded: the init runs it
	 * on a notification's data to answer with the plan's errno. n_plan is then 0. */
	uint32_t n_answer;
};

/*
 * The system calls the init, and its command child before the exec, make once the filters are
 * loaded, with the arguments that are the same every time (X(nr, arg0, arg1, arg2); the rest
 * vary or are pointers: 0 here). sandbox-init.c makes no other. When the plan's refusals are
 * notifications the init answers (n_answer, launcherd-seccomp.h), the plan must allow each of
 * these: a call of the init's the plan refused would wait for the init's own answer.
 */
#ifdef __NR_vfork
#define SANDBOX_INIT_CALL_VFORK(X) X(__NR_vfork, 0, 0, 0)
#else
#define SANDBOX_INIT_CALL_VFORK(X) X(__NR_clone, 0x4111 /* CLONE_VM|CLONE_VFORK|SIGCHLD */, 0, 0)
#endif
#define SANDBOX_INIT_CALLS(X)                                                      \
	X(__NR_fcntl, SANDBOX_INIT_FD_STATUS, 2 /* F_SETFD */, 1 /* FD_CLOEXEC */) \
	X(__NR_rt_sigprocmask, 0 /* SIG_BLOCK */, 0, 0)                            \
	X(__NR_rt_sigprocmask, 2 /* SIG_SETMASK */, 0, 0)                          \
	SANDBOX_INIT_CALL_VFORK(X)                                                 \
	X(__NR_execve, 0, 0, 0)                                                    \
	X(__NR_close_range, 0, SANDBOX_INIT_FD_STATUS, 0)                          \
	X(__NR_ppoll, 0, 2, 0)                                                     \
	X(__NR_ioctl, 0, SECCOMP_IOCTL_NOTIF_RECV, 0)                              \
	X(__NR_ioctl, 0, SECCOMP_IOCTL_NOTIF_SEND, 0)                              \
	X(__NR_ioctl, SANDBOX_INIT_FD_REPORT, 0x541B /* FIONREAD */, 0)            \
	X(__NR_openat, (uint64_t)-100 /* AT_FDCWD */, 0, 0)                        \
	X(__NR_fstatfs, 0, 0, 0)                                                   \
	X(__NR_read, 0, 0, 0)                                                      \
	X(__NR_write, 0, 0, 0)                                                     \
	X(__NR_close, 0, 0, 0)                                                     \
	X(__NR_clock_gettime, 1 /* CLOCK_MONOTONIC */, 0, 0)                       \
	X(__NR_wait4, (uint64_t)-1, 0, 1 /* WNOHANG */)                            \
	X(__NR_kill, 0, 0, 0)                                                      \
	X(__NR_rt_sigtimedwait, 0, 0, 0)                                           \
	X(__NR_exit_group, 0, 0, 0)

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
	APPLY_REPORT_DENIAL,  /* a refusal the init answered (sandbox-init.c only): what follows */
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
	/* DENIAL: which filter refused: 0 the floor, 1 the plan's (then answered with its errno) */
	uint32_t by_plan;
};

/* Exit code of a child whose set-up failed (the status pipe says why). */
#define APPLY_EXIT_SETUP_FAILED 125
