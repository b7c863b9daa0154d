/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A compiled plan as stable, line-oriented text: for golden tests and "cordon policy compile
 * --dump". Fds appear as "fd:N -> what" (the host path the compiler opened); the seccomp program
 * as libseccomp's pseudo-filter code.
 */
#pragma once

#include "policy/policy-compile.h"

enum {
	POLICY_DUMP_PFC = 1 << 0, /* append the seccomp program as pfc text */
};

int policy_dump(const struct compiled_plan *plan, unsigned flags, char **ret);
