/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Narrowing: a child policy (a nested sandbox, a per-command policy under a session's) may only
 * take away: fewer or shallower paths, read-only instead of read-write, a narrower network, a
 * subset of domains and ports, lower limits, more syscalls denied, fewer optional rules. Any
 * widening is refused with the child's field named; nothing is clamped.
 *
 * Paths compare lexically within one anchor ("/", "~", "."); paths of different anchors never
 * cover each other, so call policy_resolve() on both policies first for an exact answer (the
 * controller does). Symlinks are not followed: the compiler opens every path as the user.
 */
#pragma once

#include "ipc/ipc-json.h"
#include "policy/policy-model.h"

/* 0 when child only narrows parent; -EPERM with err naming the child's widening field. */
int policy_narrow(const struct policy *parent, const struct policy *child, struct field_error *err);
