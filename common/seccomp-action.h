/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The "action" of a seccomp denial event (docs/DENIALS.md), from the action of a seccomp
 * return value: what launcherd's reader says of an audit record, and builtin:vm of its guest's.
 */
#pragma once

#include <stdint.h>

#include <linux/seccomp.h>

static inline const char *seccomp_action_name(uint32_t code)
{
	switch (code & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_ERRNO:
		return "errno";
	case SECCOMP_RET_KILL_PROCESS:
	case SECCOMP_RET_KILL_THREAD:
		return "kill";
	case SECCOMP_RET_TRAP:
		return "trap";
	default:
		return "other";
	}
}
