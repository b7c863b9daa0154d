/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * "cordon policy explain": for a policy and the launcher's reported capabilities, which layers
 * enforce each rule on this host (mount namespace, Landlock ABI n, seccomp, network namespace,
 * the controller's proxy, cgroup v1/v2, rlimits, launcherd's timer, the controller) and which
 * rules cannot be enforced (then the spawn fails unless the rule is optional). It mirrors
 * policy_compile()'s decisions without libseccomp; of the filesystem it only reads what the
 * compiler would scan for host-executed paths (policy-hostexec.h), and changes nothing.
 *
 * The JSON: {"host": {...}, "rules": [{"rule", "what", "layers": [..], "notes": [..],
 * "status"}], "unenforced": [{"rule", "reason", "optional"}], "spawn": "ok"|"fails"}; status is
 * "enforced", "skipped" (optional, not enforceable here), "unprotected" (a host-executed path
 * the sandbox may write: absent, or opted out) or "fails".
 */
#pragma once

#include <jansson.h>

#include "policy/policy-model.h"

int policy_explain(const struct policy *policy, const struct compile_ctx *ctx, json_t **ret);
/*
 * policy-explain-path.c (with the compiler): what a sandbox under policy finds at path
 * (absolute, normalized) on this host, from the plan the policy compiles to: {path, visible,
 * readable, writable, rule?, why, landlock?}; rule names the policy entry to change.
 */
struct field_error;
int policy_explain_path(const struct policy *p, const struct compile_ctx *ctx, const char *path,
			json_t **ret, struct field_error *fe);
/* Render an explanation as text for the CLI. */
int policy_explain_format_text(json_t *explanation, char **ret);
