/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The default policy: what "cordon run CMD" gets with no policy and no flags, and the base that
 * every policy document is read over (an absent field keeps its default).
 */
#pragma once

#include <stdbool.h>

#include "policy/policy-model.h"

/* The embedded default policy document (docs/POLICY.md shows the same text). */
extern const char policy_default_json[];

/* A fresh copy of the default policy. */
int policy_default_new(struct policy **ret);

/*
 * Is path one of the default policy's system directories (filesystem.read)? Such a directory
 * is skipped when absent on a host (/lib64, /libx32, …), wherever the policy listed it.
 */
bool policy_default_is_system_dir(const char *path);
