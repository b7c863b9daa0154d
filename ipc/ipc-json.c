/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "ipc/ipc-json.h"

/* snprintf() truncates at a byte: drop a UTF-8 sequence cut short at the end, or the error could
 * not be sent back as JSON (jansson refuses invalid UTF-8). */
static void utf8_trim_incomplete(char *s)
{
	size_t len = strlen(s), i = len, need;
	unsigned char lead;

	while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
		i--;
	if (i == 0)
		return;
	lead = (unsigned char)s[i - 1];
	need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
	if (len - (i - 1) < need)
		s[i - 1] = '\0';
}

void json_path_join(char *buf, size_t size, const char *path, const char *key)
{
	if (isempty(path))
		(void)snprintf(buf, size, "%s", key);
	else
		(void)snprintf(buf, size, "%s.%s", path, key);
	utf8_trim_incomplete(buf);
}

void json_path_index(char *buf, size_t size, const char *path, size_t index)
{
	(void)snprintf(buf, size, "%s[%zu]", path ? path : "", index);
	utf8_trim_incomplete(buf);
}

int field_error_set(struct field_error *e, int code, const char *path, const char *key,
		    const char *fmt, ...)
{
	va_list ap;

	if (code > 0)
		code = -code;
	if (!e)
		return code;
	if (key)
		json_path_join(e->field, sizeof(e->field), path, key);
	else {
		(void)snprintf(e->field, sizeof(e->field), "%s", path ? path : "");
		utf8_trim_incomplete(e->field);
	}
	va_start(ap, fmt);
	(void)vsnprintf(e->reason, sizeof(e->reason), fmt, ap);
	va_end(ap);
	utf8_trim_incomplete(e->reason);
	return code;
}

int ipc_json_parse_object(const char *buf, size_t len, json_t **ret, struct field_error *err)
{
	json_error_t jerr;
	json_t *j;

	j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		return field_error_set(err, -EBADMSG, "", NULL,
				       "invalid JSON at line %d column %d: %s", jerr.line,
				       jerr.column, jerr.text);
	if (!json_is_object(j)) {
		json_decref(j);
		return field_error_set(err, -EBADMSG, "", NULL, "expected a JSON object");
	}
	*ret = j;
	return 0;
}

int ipc_json_check_keys(json_t *obj, const char *const *allowed, const char *path,
			struct field_error *err)
{
	const char *key;
	json_t *v = NULL;

	json_object_foreach(obj, key, v) {
		bool ok = false;

		for (const char *const *a = allowed; *a; a++)
			if (streq(*a, key)) {
				ok = true;
				break;
			}
		if (!ok)
			return field_error_set(err, -EINVAL, path, key, "unknown field");
	}
	return 0;
}

static int get_member(json_t *obj, const char *key, bool required, const char *path, json_t **ret,
		      struct field_error *err)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		if (required)
			return field_error_set(err, -EINVAL, path, key,
					       "required field is missing");
		return 0;
	}
	*ret = v;
	return 1;
}

int ipc_json_get_string(json_t *obj, const char *key, bool required, const char *path,
			const char **ret, struct field_error *err)
{
	json_t *v = NULL;
	int r = get_member(obj, key, required, path, &v, err);

	if (r <= 0)
		return r;
	if (!json_is_string(v))
		return field_error_set(err, -EINVAL, path, key, "expected a string");
	*ret = json_string_value(v);
	return 1;
}

int ipc_json_get_bool(json_t *obj, const char *key, bool required, const char *path, bool *ret,
		      struct field_error *err)
{
	json_t *v = NULL;
	int r = get_member(obj, key, required, path, &v, err);

	if (r <= 0)
		return r;
	if (!json_is_boolean(v))
		return field_error_set(err, -EINVAL, path, key, "expected true or false");
	*ret = json_is_true(v);
	return 1;
}

int ipc_json_get_uint64(json_t *obj, const char *key, bool required, uint64_t min, uint64_t max,
			const char *path, uint64_t *ret, struct field_error *err)
{
	json_int_t i;
	json_t *v = NULL;
	int r = get_member(obj, key, required, path, &v, err);

	if (r <= 0)
		return r;
	if (!json_is_integer(v))
		return field_error_set(err, -EINVAL, path, key, "expected an integer");
	i = json_integer_value(v);
	if (i < 0 || (uint64_t)i < min || (uint64_t)i > max)
		return field_error_set(err, -ERANGE, path, key, "out of range (%llu..%llu)",
				       (unsigned long long)min, (unsigned long long)max);
	*ret = (uint64_t)i;
	return 1;
}

int ipc_json_get_int64(json_t *obj, const char *key, bool required, int64_t min, int64_t max,
		       const char *path, int64_t *ret, struct field_error *err)
{
	json_int_t i;
	json_t *v = NULL;
	int r = get_member(obj, key, required, path, &v, err);

	if (r <= 0)
		return r;
	if (!json_is_integer(v))
		return field_error_set(err, -EINVAL, path, key, "expected an integer");
	i = json_integer_value(v);
	if (i < min || i > max)
		return field_error_set(err, -ERANGE, path, key, "out of range (%lld..%lld)",
				       (long long)min, (long long)max);
	*ret = (int64_t)i;
	return 1;
}

int ipc_json_get_object(json_t *obj, const char *key, bool required, const char *path, json_t **ret,
			struct field_error *err)
{
	json_t *v = NULL;
	int r = get_member(obj, key, required, path, &v, err);

	if (r <= 0)
		return r;
	if (!json_is_object(v))
		return field_error_set(err, -EINVAL, path, key, "expected an object");
	*ret = v;
	return 1;
}

int ipc_json_get_array(json_t *obj, const char *key, bool required, size_t max_items,
		       const char *path, json_t **ret, struct field_error *err)
{
	json_t *v = NULL;
	int r = get_member(obj, key, required, path, &v, err);

	if (r <= 0)
		return r;
	if (!json_is_array(v))
		return field_error_set(err, -EINVAL, path, key, "expected an array");
	if (json_array_size(v) > max_items)
		return field_error_set(err, -E2BIG, path, key, "too many items (at most %zu)",
				       max_items);
	*ret = v;
	return 1;
}

int ipc_json_get_strv(json_t *obj, const char *key, bool required, size_t max_items, size_t max_len,
		      const char *path, char ***ret, struct field_error *err)
{
	_cleanup_strv_free_ char **l = NULL;
	char p[256];
	json_t *a, *v;
	size_t i;
	int r;

	r = ipc_json_get_array(obj, key, required, max_items, path, &a, err);
	if (r <= 0)
		return r;
	l = calloc(json_array_size(a) + 1, sizeof(char *));
	if (!l)
		return -ENOMEM;
	json_path_join(p, sizeof(p), path, key);
	json_array_foreach(a, i, v) {
		if (!json_is_string(v)) {
			char q[256];

			json_path_index(q, sizeof(q), p, i);
			return field_error_set(err, -EINVAL, q, NULL, "expected a string");
		}
		if (json_string_length(v) > max_len) {
			char q[256];

			json_path_index(q, sizeof(q), p, i);
			return field_error_set(err, -E2BIG, q, NULL, "longer than %zu bytes",
					       max_len);
		}
		l[i] = strdup(json_string_value(v));
		if (!l[i])
			return -ENOMEM;
	}
	*ret = TAKE_PTR(l);
	return 1;
}
