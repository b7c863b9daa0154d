/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a policy document (format version 1, docs/POLICY.md). Unknown fields are refused;
 * every error names the JSON path ("filesystem.read[2]", "limits.pids") and the reason. Fields
 * that are absent (or null, except "workspace": null) keep the default policy's value.
 */
#pragma once

#include <stddef.h>

#include <jansson.h>

#include "ipc/ipc-json.h"
#include "policy/policy-model.h"

/* Parse a document over the default policy; validated as a whole before it is returned. */
int policy_parse_json(json_t *doc, struct policy **ret, struct field_error *err);
/* Parse len bytes of JSON (duplicate keys refused). */
int policy_parse_string(const char *buf, size_t len, struct policy **ret, struct field_error *err);
/* Read at most POLICY_FILE_MAX bytes from path, then parse. -EFBIG beyond. */
int policy_parse_file(const char *path, struct policy **ret, struct field_error *err);

/* Overlay the fields present in doc onto p (used for the default policy itself). */
int policy_parse_overlay(struct policy *p, json_t *doc, struct field_error *err);
/* Cross-field checks: duplicates, fields that only apply to some modes, optional ids. */
int policy_validate(const struct policy *p, struct field_error *err);
