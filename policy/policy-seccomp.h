/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Syscall specs (policy-syscalls.h) into seccomp programs with libseccomp, for the native
 * architecture only (other architectures hit libseccomp's bad-arch action: kill). Deny rules
 * return an errno (EPERM; ENOSYS for clone3 so libc falls back to clone; EAFNOSUPPORT for
 * refused socket families); everything else is allowed, since launcherd stacks this program on
 * its own floor filter.
 *
 * Compiled programs are cached per distinct spec (by policy_syscall_spec_key()), so compiling
 * the same policy again never re-runs libseccomp. The cache is process-wide and locked.
 */
#pragma once

#include <stddef.h>

#include "policy/policy-syscalls.h"

/* A sealed memfd (close-on-exec) holding the program as struct sock_filter[]. */
int policy_seccomp_program(const struct policy_syscall_rule *rules, size_t n, int *ret_fd);
/* Write libseccomp's pseudo-filter-code text for the spec to fd (for dumps and tests). */
int policy_seccomp_export_pfc(const struct policy_syscall_rule *rules, size_t n, int fd);
/* Parse a spec key back into rules; names point into *ret_buf, which the caller frees. */
int policy_syscall_spec_from_key(const char *key, struct policy_syscall_rule **ret, size_t *ret_n,
				 char **ret_buf);

/* How many times libseccomp ran (cache misses) since the process started. */
unsigned policy_seccomp_cache_misses(void);
/* Drop every cached program. */
void policy_seccomp_cache_clear(void);
