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
