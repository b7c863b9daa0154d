/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a process sees from launcherd's floor and a plan's filter: stacked as two filters (the
 * kernel's rule: every filter runs, the most restrictive action wins, the newer filter, the
 * plan's, on a tie), or as seccomp_combine()'s one program with the init answering its
 * notifications (launcherd/sandbox-init.c). The floor here is the notifying one, whose
 * notification the init answers EPERM. For the combine tests (unit and fuzz): both must agree.
 */
#pragma once

#include <errno.h>
#include <stdint.h>

#include <linux/seccomp.h>

#include "launcherd/seccomp-bpf.h"

/* An outcome: the action, and the errno for SECCOMP_RET_ERRNO (capped like the kernel's). */
struct seccomp_outcome {
	uint32_t action;
	uint32_t error;
};

static inline struct seccomp_outcome seccomp_outcome_of(uint32_t ret)
{
	struct seccomp_outcome o = { ret & SECCOMP_RET_ACTION_FULL, 0 };

	if (o.action == SECCOMP_RET_ERRNO)
		o.error = (ret & SECCOMP_RET_DATA) > 4095 ? 4095 : ret & SECCOMP_RET_DATA;
	else if (o.action == SECCOMP_RET_USER_NOTIF) /* the floor's, answered EPERM */
		o = (struct seccomp_outcome){ SECCOMP_RET_ERRNO, EPERM };
	return o;
}

static inline struct seccomp_outcome seccomp_stacked(const struct sock_filter *plan,
						     uint32_t n_plan,
						     const struct sock_filter *floor,
						     uint32_t n_floor, const struct seccomp_data *d)
{
	uint32_t p = seccomp_bpf_run(plan, n_plan, d), f = seccomp_bpf_run(floor, n_floor, d);

	/* The kernel: ACTION_ONLY() as a signed number, lower wins, the plan first. */
	if ((int32_t)(f & SECCOMP_RET_ACTION_FULL) < (int32_t)(p & SECCOMP_RET_ACTION_FULL))
		return seccomp_outcome_of(f);
	return seccomp_outcome_of(p);
}

static inline struct seccomp_outcome seccomp_combined(const struct sock_filter *combined,
						      uint32_t n_combined,
						      const struct sock_filter *plan,
						      uint32_t n_plan, const struct seccomp_data *d)
{
	uint32_t c = seccomp_bpf_run(combined, n_combined, d), p;

	if ((c & SECCOMP_RET_ACTION_FULL) != SECCOMP_RET_USER_NOTIF)
		return seccomp_outcome_of(c);
	/* The init's answer: the plan's errno when its own program gives one, else EPERM. */
	p = seccomp_bpf_run(plan, n_plan, d);
	if ((p & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO)
		return seccomp_outcome_of(p);
	return (struct seccomp_outcome){ SECCOMP_RET_ERRNO, EPERM };
}
