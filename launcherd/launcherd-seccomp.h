/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Seccomp for launcherd. Two programs are stacked in every sandbox:
 *
 *   1. the FLOOR, launcherd's own deny list, compiled with libseccomp ONCE when the daemon starts
 *      (never per spawn) into a BPF program kept in memory, shaped as a binary tree so the common
 *      path is short (the kernel walks the whole filter for every syscall number at load time to
 *      fill its action cache: load cost is linear in path length);
 *   2. the PLAN's program, compiled by the controller and passed as a memfd; launcherd never
 *      sees policy text. The kernel runs both filters and the most restrictive action wins, so
 *      the plan can only add denials.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <linux/filter.h>

#define SECCOMP_PROGRAM_MAX_INSNS 4096

struct seccomp_program {
	struct sock_filter *insns;
	size_t len;
};

/* What the floor does with a call it refuses. */
enum floor_action {
	FLOOR_ACTION_ERRNO, /* fail it with EPERM */
	FLOOR_ACTION_KILL,  /* kill the process (SIGSYS) */
	/* SECCOMP_RET_USER_NOTIF: the sandbox's init, which holds the filter's listener, answers
	 * EPERM and reports the call with its arguments (docs/DENIALS.md). Only for an init that
	 * takes the listener (the light spawn): with none, the caller gets ENOSYS. */
	FLOOR_ACTION_NOTIFY,
	_FLOOR_ACTION_MAX,
};

/*
 * One program for a light spawn whose floor notifies (sandbox-init.h, n_answer): the plan's
 * filter first, where each RET of an errno (but ENOSYS, no refusal: seccomp_combine()) becomes
 * SECCOMP_RET_USER_NOTIF and each RET ALLOW a jump to the floor, which follows whole. The same calls are refused as with the two filters
 * stacked, and with the same errno (the init answers with the plan's, which it learns by running
 * the plan's own program on the notification, seccomp-bpf.h); but the plan's refusals too come
 * with their arguments, and no audit record (nor the audit session that ties one to its
 * sandbox, launcherd-audit.h) is needed for either filter. -EOPNOTSUPP when the plan is not one
 * this can be done for (the two filters are then stacked as before): an instruction that
 * returns A, or an action other than allow, errno, trap and kill; a jump out of its own
 * program; no RET last; one of the init's own calls (SANDBOX_INIT_CALLS) it does not allow;
 * the two together above SECCOMP_PROGRAM_MAX_INSNS. floor: the notifying floor
 * (seccomp_floor_combinable() true). *ret is set on success only.
 */
int seccomp_combine(const struct seccomp_program *plan, const struct seccomp_program *floor,
		    struct seccomp_program *ret);

/* Whether the floor can follow a plan in one program: it sets A before reading it and reads
 * neither X nor scratch memory (libseccomp's output does not), so what the plan left there
 * cannot change its verdict. Checked once, at start. */
bool seccomp_floor_combinable(const struct seccomp_program *floor);

/* Compile the floor. unix_only: the variant for network "unix", which also denies every
 * socket family but AF_UNIX. */
int seccomp_floor_compile(enum floor_action action, bool unix_only, struct seccomp_program *ret);

/*
 * Read a plan's program from fd (memfd or regular file): 1..SECCOMP_PROGRAM_MAX_INSNS
 * instructions of 8 bytes. -EINVAL for a bad length; the kernel checks the instructions at load.
 */
int seccomp_program_read(int fd, struct seccomp_program *ret);

/* seccomp() flags for every sandbox's filters, set once at start (launcherd-audit.c:
 * SECCOMP_FILTER_FLAG_LOG while its reader runs), else 0. */
extern unsigned seccomp_load_flags;

/* Child side: install the program (no-new-privs must already be set). */
int seccomp_program_load(const struct seccomp_program *p);

void seccomp_program_done(struct seccomp_program *p);

/* Write the floor as libseccomp pseudo-filter-code text to fd, for tests and `--dump-floor`. */
int seccomp_floor_export_pfc(enum floor_action action, bool unix_only, int fd);
