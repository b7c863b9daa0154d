/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Strict JSON reading for both channels: duplicate keys rejected, top level must be an object,
 * unknown keys rejected by the caller's allow-list, and every error names the field by its JSON
 * path ("plan.mounts[3].target") and says why.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/cleanup.h"

struct field_error {
	char field[256];  /* JSON path of the offending field, "" for the document itself */
	char reason[256]; /* human-readable reason */
};

/* Record an error; returns -code (negative errno) for `return field_error_set(...)`. */
int field_error_set(struct field_error *e, int code, const char *path, const char *key,
		    const char *fmt, ...) _printf_(5, 6);

/* Build "path.key" or "path[index]" into buf (truncated safely). */
void json_path_join(char *buf, size_t size, const char *path, const char *key);
void json_path_index(char *buf, size_t size, const char *path, size_t index);

/* Parse len bytes as one JSON object, rejecting duplicate keys and embedded NULs. -EBADMSG. */
int ipc_json_parse_object(const char *buf, size_t len, json_t **ret, struct field_error *err);

/* Fail with -EINVAL naming the first key of obj not in the NULL-terminated list allowed. */
int ipc_json_check_keys(json_t *obj, const char *const *allowed, const char *path,
			struct field_error *err);

/*
 * Typed getters. Each returns 1 when the key is present and valid (value stored), 0 when absent
 * (or null) and not required (nothing stored), or a negative errno with err filled: -EINVAL
 * (wrong type, missing but required), -ERANGE (integer out of range), -E2BIG (too many array
 * items, string too long).
 */
int ipc_json_get_string(json_t *obj, const char *key, bool required, const char *path,
			const char **ret, struct field_error *err);
int ipc_json_get_bool(json_t *obj, const char *key, bool required, const char *path, bool *ret,
		      struct field_error *err);
int ipc_json_get_uint64(json_t *obj, const char *key, bool required, uint64_t min, uint64_t max,
			const char *path, uint64_t *ret, struct field_error *err);
int ipc_json_get_int64(json_t *obj, const char *key, bool required, int64_t min, int64_t max,
		       const char *path, int64_t *ret, struct field_error *err);
/* Object or array members: returns the borrowed value. */
int ipc_json_get_object(json_t *obj, const char *key, bool required, const char *path, json_t **ret,
			struct field_error *err);
int ipc_json_get_array(json_t *obj, const char *key, bool required, size_t max_items,
		       const char *path, json_t **ret, struct field_error *err);
/*
 * An array of strings into a fresh NULL-terminated vector. Each string at most max_len bytes,
 * no embedded NUL (jansson already refuses \u0000).
 */
int ipc_json_get_strv(json_t *obj, const char *key, bool required, size_t max_items, size_t max_len,
		      const char *path, char ***ret, struct field_error *err);
