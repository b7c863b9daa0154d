/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Syscall names and cordon's syscall profiles, as data (no libseccomp here, so the CLI can
 * validate a policy without linking it). policy-seccomp.c turns a spec into BPF.
 *
 * A profile entry denies a syscall outright or only for some arguments (a "condition"). The
 * effective spec of a policy is its profile plus syscalls.deny (outright) minus syscalls.allow.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "policy/policy-model.h"

enum policy_syscall_cond {
	POLICY_SYSCALL_DENY,	      /* EPERM, any arguments */
	POLICY_SYSCALL_ENOSYS,	      /* ENOSYS, so libc falls back (clone3 → clone) */
	POLICY_SYSCALL_CLONE_NS,      /* clone() with a CLONE_NEW* flag: EPERM */
	POLICY_SYSCALL_IOCTL_TTY,     /* ioctl() TIOCSTI / TIOCLINUX: EPERM */
	POLICY_SYSCALL_SOCKET_FAMILY, /* socket() outside AF_UNIX, AF_INET, AF_INET6: EAFNOSUPPORT */
};

struct policy_syscall_rule {
	const char *name;
	enum policy_syscall_cond cond;
};

/* Is name a syscall libseccomp knows on any supported architecture? */
bool policy_syscall_name_known(const char *name);

/* The profile's entries, in a stable order; *ret_n set to the count. */
const struct policy_syscall_rule *policy_syscall_profile_rules(enum policy_syscall_profile profile,
							       size_t *ret_n);
/* Is name in the profile (with any condition)? */
bool policy_syscall_profile_has(enum policy_syscall_profile profile, const char *name);

/* A human-readable description of a condition, "" for POLICY_SYSCALL_DENY. */
const char *policy_syscall_cond_to_string(enum policy_syscall_cond cond);

/*
 * The effective spec of a policy: rules sorted by name, one per syscall (an outright deny from
 * syscalls.deny replaces a conditional profile entry). The caller frees the array (names are
 * borrowed from p and from static tables).
 */
int policy_syscall_spec(const struct policy *p, struct policy_syscall_rule **ret, size_t *ret_n);
/* A stable text key for a spec ("chroot,clone:clone-ns,…"), the seccomp cache key. */
char *policy_syscall_spec_key(const struct policy_syscall_rule *rules, size_t n);
