/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Backend references and descriptors. Rules a descriptor must satisfy (each refused with the
 * field's JSON path):
 *   - top level: kind, name, description, settings (optional), claims; nothing else;
 *   - every string: backend_text_is_safe() (see the header), name and labels not empty;
 *     note that the text rule refuses, among others, "on<letters>=" at the start of a word, so
 *     "online=true" is refused in a description along with "onclick=";
 *   - settings: {"fields": [...]} with at most 64 fields, ids unique and matching
 *     [a-zA-Z][a-zA-Z0-9_.-]{0,63};
 *   - a field: id, type, label required; description, required (boolean), defaultValue and
 *     options optional; options exactly for select (1..64 entries, each a string or
 *     {"value","label"?}, values unique and not empty);
 *   - defaultValue: a scalar of the field's type (string / finite number / boolean), for select
 *     one of the option values, never for a secret; null means none;
 *   - claims: platforms (not empty), enforces, isolation required; networkModes and
 *     readOnlyWorkspace optional; each from a closed vocabulary; isolation "none" only for a
 *     built-in.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "backends/backend-descriptor.h"

static bool is_lower(char c)
{
	return c >= 'a' && c <= 'z';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
	return is_lower(c) || (c >= 'A' && c <= 'Z');
}

bool backend_kind_is_valid(const char *kind)
{
	size_t n;

	if (!kind || !is_lower(kind[0]))
		return false;
	for (n = 1; kind[n]; n++)
		if (!is_lower(kind[n]) && !is_digit(kind[n]) && kind[n] != '-')
			return false;
	return n <= BACKEND_KIND_MAX;
}

bool backend_pack_id_is_valid(const char *pack_id)
{
	size_t n;

	if (!pack_id || !(is_lower(pack_id[0]) || is_digit(pack_id[0])))
		return false;
	for (n = 1; pack_id[n]; n++) {
		char c = pack_id[n];

		if (!is_lower(c) && !is_digit(c) && c != '.' && c != '-')
			return false;
		/* Labels are not empty: no "..", no trailing dot. */
		if (c == '.' && (pack_id[n - 1] == '.' || pack_id[n + 1] == '\0'))
			return false;
	}
	return n <= BACKEND_PACK_ID_MAX;
}

bool backend_field_id_is_valid(const char *id)
{
	size_t n;

	if (!id || !is_alpha(id[0]))
		return false;
	for (n = 1; id[n]; n++)
		if (!is_alpha(id[n]) && !is_digit(id[n]) && id[n] != '_' && id[n] != '.' &&
		    id[n] != '-')
			return false;
	return n <= BACKEND_FIELD_ID_MAX;
}

/* Decode one code point of valid UTF-8 at s (utf8_is_valid() checked already). */
static unsigned utf8_next(const unsigned char *s, size_t *i)
{
	unsigned char c = s[*i];

	if (c < 0x80) {
		(*i)++;
		return c;
	}
	if (c < 0xE0) {
		*i += 2;
		return ((c & 0x1FU) << 6) | (s[*i - 1] & 0x3FU);
	}
	if (c < 0xF0) {
		*i += 3;
		return ((c & 0x0FU) << 12) | ((s[*i - 2] & 0x3FU) << 6) | (s[*i - 1] & 0x3FU);
	}
	*i += 4;
	return ((c & 0x07U) << 18) | ((s[*i - 3] & 0x3FU) << 12) | ((s[*i - 2] & 0x3FU) << 6) |
	       (s[*i - 1] & 0x3FU);
}

static unsigned char ascii_lower(char c)
{
	unsigned char u = (unsigned char)c;

	return u >= 'A' && u <= 'Z' ? (unsigned char)(u | 0x20U) : u;
}

static bool ascii_contains_nocase(const char *s, size_t len, const char *needle)
{
	size_t n = strlen(needle);

	for (size_t i = 0; i + n <= len; i++) {
		size_t j;

		for (j = 0; j < n; j++)
			if (ascii_lower(s[i + j]) != (unsigned char)needle[j])
				break;
		if (j == n)
			return true;
	}
	return false;
}

/* "on<letters>=" at the start of a word (spaces allowed before '='): an HTML event handler
 * attribute such as onclick=, whatever case. */
static bool has_event_handler(const char *s, size_t len)
{
	for (size_t i = 0; i + 3 < len; i++) {
		size_t j = i + 2;

		if (i > 0 && (is_alpha(s[i - 1]) || is_digit(s[i - 1]) || s[i - 1] == '_'))
			continue;
		if (ascii_lower(s[i]) != 'o' || ascii_lower(s[i + 1]) != 'n' || !is_alpha(s[j]))
			continue;
		while (j < len && is_alpha(s[j]))
			j++;
		while (j < len && s[j] == ' ')
			j++;
		if (j < len && s[j] == '=')
			return true;
	}
	return false;
}

/* Why s is not safe display text, or NULL. */
static const char *text_problem(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	if (len > BACKEND_TEXT_MAX)
		return "longer than 1024 bytes";
	if (!utf8_is_valid(s, len))
		return "is not valid UTF-8";
	for (size_t i = 0; i < len;) {
		unsigned cp = utf8_next(u, &i);

		if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029)
			return "contains a control character";
		if (cp == '<' || cp == '>')
			return "contains '<' or '>' (descriptors are plain text, not markup)";
		if (cp == 0x061C || cp == 0x200E || cp == 0x200F ||
		    (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
			return "contains a bidirectional control character";
	}
	if (ascii_contains_nocase(s, len, "javascript:") ||
	    ascii_contains_nocase(s, len, "vbscript:"))
		return "contains a script URL";
	if (has_event_handler(s, len))
		return "contains an event handler attribute (on...=)";
	return NULL;
}

bool backend_text_is_safe(const char *s, size_t len)
{
	return s && !text_problem(s, len);
}

int backend_ref_init(struct backend_ref *ret, enum backend_source source, const char *pack_id,
		     const char *kind)
{
	struct backend_ref r = { .source = source };

	if (!backend_kind_is_valid(kind))
		return -EINVAL;
	if (source == BACKEND_SOURCE_BUILTIN) {
		if (pack_id)
			return -EINVAL;
	} else if (source == BACKEND_SOURCE_PACK) {
		if (!backend_pack_id_is_valid(pack_id))
			return -EINVAL;
		memcpy(r.pack_id, pack_id, strlen(pack_id) + 1);
	} else
		return -EINVAL;
	memcpy(r.kind, kind, strlen(kind) + 1);
	*ret = r;
	return 0;
}

int backend_ref_parse(const char *text, struct backend_ref *ret)
{
	char pack_id[BACKEND_PACK_ID_MAX + 1];
	const char *rest, *colon;

	if (!text)
		return -EINVAL;
	rest = startswith(text, "builtin:");
	if (rest)
		return backend_ref_init(ret, BACKEND_SOURCE_BUILTIN, NULL, rest);
	rest = startswith(text, "pack:");
	if (!rest)
		return -EINVAL;
	colon = strchr(rest, ':');
	if (!colon || (size_t)(colon - rest) > BACKEND_PACK_ID_MAX)
		return -EINVAL;
	memcpy(pack_id, rest, (size_t)(colon - rest));
	pack_id[colon - rest] = '\0';
	return backend_ref_init(ret, BACKEND_SOURCE_PACK, pack_id, colon + 1);
}

int backend_ref_format(const struct backend_ref *ref, char *buf, size_t size)
{
	int n;

	if (ref->source == BACKEND_SOURCE_BUILTIN)
		n = snprintf(buf, size, "builtin:%s", ref->kind);
	else
		n = snprintf(buf, size, "pack:%s:%s", ref->pack_id, ref->kind);
	if (n < 0 || (size_t)n >= size)
		return -ENOBUFS;
	return 0;
}

int backend_ref_from_json(json_t *j, const char *path, struct backend_ref *ret,
			  struct field_error *err)
{
	static const char *const keys[] = { "source", "packId", "kind", NULL };
	const char *source = "", *kind = "", *pack_id = NULL;
	bool pack;
	int r;

	if (json_is_string(j)) {
		if (backend_ref_parse(json_string_value(j), ret) < 0)
			return field_error_set(
				err, -EINVAL, path, NULL,
				"not a backend reference (builtin:<kind> or pack:<packId>:<kind>)");
		return 0;
	}
	if (!json_is_object(j))
		return field_error_set(err, -EINVAL, path, NULL,
				       "expected a backend reference (an object or a string)");
	r = ipc_json_check_keys(j, keys, path, err);
	if (r < 0)
		return r;
	r = ipc_json_get_string(j, "source", true, path, &source, err);
	if (r < 0)
		return r;
	if (streq(source, "pack"))
		pack = true;
	else if (streq(source, "builtin"))
		pack = false;
	else
		return field_error_set(err, -EINVAL, path, "source",
				       "expected \"builtin\" or \"pack\"");
	r = ipc_json_get_string(j, "kind", true, path, &kind, err);
	if (r < 0)
		return r;
	if (!backend_kind_is_valid(kind))
		return field_error_set(err, -EINVAL, path, "kind",
				       "must match [a-z][a-z0-9-]* (at most 64 bytes)");
	r = ipc_json_get_string(j, "packId", pack, path, &pack_id, err);
	if (r < 0)
		return r;
	if (!pack && r > 0)
		return field_error_set(err, -EINVAL, path, "packId",
				       "only pack backends have a packId");
	if (pack && !backend_pack_id_is_valid(pack_id))
		return field_error_set(
			err, -EINVAL, path, "packId",
			"must be reverse-DNS-like: [a-z0-9][a-z0-9.-]*, no empty label, at most 128 bytes");
	return backend_ref_init(ret, pack ? BACKEND_SOURCE_PACK : BACKEND_SOURCE_BUILTIN, pack_id,
				kind);
}

int backend_ref_to_json(const struct backend_ref *ref, json_t **ret)
{
	json_t *j;

	if (ref->source == BACKEND_SOURCE_BUILTIN)
		j = json_pack("{s:s, s:s}", "source", "builtin", "kind", ref->kind);
	else
		j = json_pack("{s:s, s:s, s:s}", "source", "pack", "packId", ref->pack_id, "kind",
			      ref->kind);
	if (!j)
		return -ENOMEM;
	*ret = j;
	return 0;
}

bool backend_ref_equal(const struct backend_ref *a, const struct backend_ref *b)
{
	return a->source == b->source && streq(a->pack_id, b->pack_id) && streq(a->kind, b->kind);
}

bool backend_ref_is_unconfined(const struct backend_ref *ref)
{
	return ref->source == BACKEND_SOURCE_BUILTIN && streq(ref->kind, "host");
}

void backend_ref_auto(struct backend_ref *ret)
{
	*ret = (struct backend_ref){ .source = BACKEND_SOURCE_BUILTIN, .kind = "auto" };
}

static const char *const field_type_names[_BACKEND_FIELD_TYPE_MAX] = {
	[BACKEND_FIELD_STRING] = "string",   [BACKEND_FIELD_NUMBER] = "number",
	[BACKEND_FIELD_BOOLEAN] = "boolean", [BACKEND_FIELD_SELECT] = "select",
	[BACKEND_FIELD_SECRET] = "secret",
};

const char *backend_field_type_to_string(enum backend_field_type t)
{
	return (unsigned)t < _BACKEND_FIELD_TYPE_MAX ? field_type_names[t] : NULL;
}

static const char *const isolation_names[_BACKEND_ISOLATION_MAX] = {
	[BACKEND_ISOLATION_NONE] = "none",     [BACKEND_ISOLATION_NAMESPACE] = "namespace",
	[BACKEND_ISOLATION_VM] = "vm",	       [BACKEND_ISOLATION_CONTAINER] = "container",
	[BACKEND_ISOLATION_REMOTE] = "remote",
};

const char *backend_isolation_to_string(enum backend_isolation i)
{
	return (unsigned)i < _BACKEND_ISOLATION_MAX ? isolation_names[i] : NULL;
}

/* The closed vocabularies of claims, bit i named names[i]. */
static const char *const platform_names[] = { "linux", "macos", "windows", NULL };
static const char *const enforces_names[] = { "filesystem", "network", "limits",
					      "syscalls",   "env",     NULL };
static const char *const network_names[] = { "none", "loopback", "proxy", "host", "unix", NULL };

static const char *const attach_names[_BACKEND_ATTACH_MAX] = {
	[BACKEND_ATTACH_DIRECT] = "direct",
	[BACKEND_ATTACH_BIND] = "bind",
	[BACKEND_ATTACH_TRANSFER] = "transfer",
	[BACKEND_ATTACH_NONE] = "none",
};

const char *backend_attach_to_string(enum backend_attach a)
{
	return (unsigned)a < _BACKEND_ATTACH_MAX ? attach_names[a] : NULL;
}

static void option_done(struct backend_option *o)
{
	free(o->value);
	free(o->label);
}

static void field_done(struct backend_field *f)
{
	free(f->id);
	free(f->label);
	free(f->description);
	json_decref(f->default_value);
	for (size_t i = 0; i < f->n_options; i++)
		option_done(&f->options[i]);
	free(f->options);
}

void backend_descriptor_free(struct backend_descriptor *d)
{
	if (!d)
		return;
	free(d->kind);
	free(d->name);
	free(d->description);
	for (size_t i = 0; i < d->n_fields; i++)
		field_done(&d->fields[i]);
	free(d->fields);
	free(d);
}

/* Check a JSON string value (at path, already joined) against the text rule. */
static int check_text(json_t *v, bool nonempty, const char *path, struct field_error *err)
{
	const char *why;

	if (!json_is_string(v))
		return field_error_set(err, -EINVAL, path, NULL, "expected a string");
	if (json_string_length(v) > BACKEND_TEXT_MAX)
		return field_error_set(err, -E2BIG, path, NULL, "longer than %d bytes",
				       BACKEND_TEXT_MAX);
	if (nonempty && json_string_length(v) == 0)
		return field_error_set(err, -EINVAL, path, NULL, "must not be empty");
	why = text_problem(json_string_value(v), json_string_length(v));
	if (why)
		return field_error_set(err, -EINVAL, path, NULL, "%s", why);
	return 0;
}

/* A text member: 1 stored in *ret (a copy), 0 absent and optional. */
static int get_text(json_t *obj, const char *key, bool required, bool nonempty, const char *path,
		    char **ret, struct field_error *err)
{
	json_t *v = json_object_get(obj, key);
	char p[256];
	int r;

	json_path_join(p, sizeof(p), path, key);
	if (!v || json_is_null(v)) {
		if (required)
			return field_error_set(err, -EINVAL, p, NULL, "required field is missing");
		return 0;
	}
	r = check_text(v, nonempty, p, err);
	if (r < 0)
		return r;
	*ret = strdup(json_string_value(v));
	return *ret ? 1 : -ENOMEM;
}

static int name_index(const char *const *names, const char *s)
{
	for (int i = 0; names[i]; i++)
		if (streq(names[i], s))
			return i;
	return -1;
}

/* "a, b or c" */
static void names_join(const char *const *names, char *buf, size_t size)
{
	size_t n = 0, used = 0;

	while (names[n])
		n++;
	buf[0] = '\0';
	for (size_t i = 0; i < n && used < size; i++) {
		int w = snprintf(buf + used, size - used, "%s%s",
				 i == 0	      ? ""
				 : i + 1 == n ? " or "
					      : ", ",
				 names[i]);

		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* An array of names from a closed vocabulary into a bit set; duplicates refused. */
static int get_name_set(json_t *obj, const char *key, bool required, bool nonempty,
			const char *const *names, const char *what, const char *path, unsigned *ret,
			struct field_error *err)
{
	char p[256], q[256], all[128];
	unsigned set = 0;
	json_t *a = NULL, *v;
	size_t i;
	int r;

	r = ipc_json_get_array(obj, key, required, 16, path, &a, err);
	if (r <= 0)
		return r;
	json_path_join(p, sizeof(p), path, key);
	if (nonempty && json_array_size(a) == 0)
		return field_error_set(err, -EINVAL, p, NULL, "must name at least one %s", what);
	names_join(names, all, sizeof(all));
	json_array_foreach(a, i, v) {
		int k;

		json_path_index(q, sizeof(q), p, i);
		if (!json_is_string(v))
			return field_error_set(err, -EINVAL, q, NULL, "expected a string");
		k = name_index(names, json_string_value(v));
		if (k < 0)
			return field_error_set(err, -EINVAL, q, NULL, "unknown %s (%s)", what, all);
		if (set & (1U << k))
			return field_error_set(err, -EINVAL, q, NULL, "\"%s\" is listed twice",
					       names[k]);
		set |= 1U << k;
	}
	*ret = set;
	return 1;
}

static int parse_claims(json_t *obj, unsigned flags, const char *path, struct backend_claims *ret,
			struct field_error *err)
{
	static const char *const keys[] = {
		"platforms",	     "enforces",  "isolation", "networkModes",
		"readOnlyWorkspace", "workspace", NULL
	};
	struct backend_claims c = { .isolation = _BACKEND_ISOLATION_MAX };
	const char *iso = "";
	int r, k;

	r = ipc_json_check_keys(obj, keys, path, err);
	if (r < 0)
		return r;
	r = get_name_set(obj, "platforms", true, true, platform_names, "platform", path,
			 &c.platforms, err);
	if (r < 0)
		return r;
	r = get_name_set(obj, "enforces", true, false, enforces_names, "policy section", path,
			 &c.enforces, err);
	if (r < 0)
		return r;
	r = ipc_json_get_string(obj, "isolation", true, path, &iso, err);
	if (r < 0)
		return r;
	for (k = 0; k < _BACKEND_ISOLATION_MAX; k++)
		if (streq(isolation_names[k], iso))
			break;
	if (k == _BACKEND_ISOLATION_MAX)
		return field_error_set(err, -EINVAL, path, "isolation",
				       "unknown isolation (namespace, vm, container or remote)");
	if (k == BACKEND_ISOLATION_NONE && !(flags & BACKEND_DESCRIPTOR_BUILTIN))
		return field_error_set(err, -EINVAL, path, "isolation",
				       "\"none\" (unconfined) is reserved for built-in backends");
	c.isolation = (enum backend_isolation)k;
	r = get_name_set(obj, "networkModes", false, false, network_names, "network mode", path,
			 &c.network_modes, err);
	if (r < 0)
		return r;
	r = ipc_json_get_bool(obj, "readOnlyWorkspace", false, path, &c.read_only_workspace, err);
	if (r < 0)
		return r;
	iso = NULL;
	r = ipc_json_get_string(obj, "workspace", false, path, &iso, err);
	if (r < 0)
		return r;
	for (k = 0; iso && k < _BACKEND_ATTACH_MAX; k++)
		if (streq(attach_names[k], iso))
			break;
	if (iso && k == _BACKEND_ATTACH_MAX)
		return field_error_set(err, -EINVAL, path, "workspace",
				       "unknown attachment (direct, bind, transfer or none)");
	c.workspace = iso ? (enum backend_attach)k : BACKEND_ATTACH_DIRECT;
	*ret = c;
	return 0;
}

static int parse_options(json_t *a, const char *path, struct backend_field *f,
			 struct field_error *err)
{
	static const char *const keys[] = { "value", "label", NULL };
	json_t *v;
	size_t i;
	int r;

	if (json_array_size(a) == 0)
		return field_error_set(err, -EINVAL, path, NULL,
				       "a select field needs at least one option");
	f->options = calloc(json_array_size(a), sizeof(struct backend_option));
	if (!f->options)
		return -ENOMEM;
	json_array_foreach(a, i, v) {
		struct backend_option *o = &f->options[i];
		char q[256], pv[256];

		json_path_index(q, sizeof(q), path, i);
		f->n_options = i + 1;
		if (json_is_string(v)) {
			r = check_text(v, true, q, err);
			if (r < 0)
				return r;
			o->value = strdup(json_string_value(v));
			o->label = strdup(json_string_value(v));
			if (!o->value || !o->label)
				return -ENOMEM;
		} else if (json_is_object(v)) {
			r = ipc_json_check_keys(v, keys, q, err);
			if (r < 0)
				return r;
			r = get_text(v, "value", true, true, q, &o->value, err);
			if (r < 0)
				return r;
			r = get_text(v, "label", false, true, q, &o->label, err);
			if (r < 0)
				return r;
			if (!o->label) {
				o->label = strdup(o->value);
				if (!o->label)
					return -ENOMEM;
			}
		} else
			return field_error_set(err, -EINVAL, q, NULL,
					       "expected a string or {\"value\", \"label\"}");
		for (size_t k = 0; k < i; k++)
			if (streq(f->options[k].value, o->value)) {
				if (json_is_object(v))
					json_path_join(pv, sizeof(pv), q, "value");
				else
					(void)snprintf(pv, sizeof(pv), "%s", q);
				return field_error_set(err, -EINVAL, pv, NULL,
						       "duplicate option value \"%s\"", o->value);
			}
	}
	return 0;
}

static int parse_default(json_t *v, const char *path, struct backend_field *f,
			 struct field_error *err)
{
	int r;

	if (f->type == BACKEND_FIELD_SECRET)
		return field_error_set(err, -EINVAL, path, NULL,
				       "a secret field cannot have a default value");
	if (!json_is_string(v) && !json_is_number(v) && !json_is_boolean(v))
		return field_error_set(err, -EINVAL, path, NULL,
				       "must be a string, a number or a boolean");
	switch (f->type) {
	case BACKEND_FIELD_STRING:
	case BACKEND_FIELD_SELECT:
		r = check_text(v, false, path, err);
		if (r < 0)
			return r;
		if (f->type == BACKEND_FIELD_SELECT) {
			bool found = false;

			for (size_t i = 0; i < f->n_options; i++)
				found = found || streq(f->options[i].value, json_string_value(v));
			if (!found)
				return field_error_set(err, -EINVAL, path, NULL,
						       "\"%s\" is not one of the options",
						       json_string_value(v));
		}
		break;
	case BACKEND_FIELD_NUMBER:
		if (!json_is_number(v))
			return field_error_set(err, -EINVAL, path, NULL,
					       "expected a number (the field's type)");
		if (!isfinite(json_number_value(v)))
			return field_error_set(err, -EINVAL, path, NULL, "must be finite");
		break;
	case BACKEND_FIELD_BOOLEAN:
		if (!json_is_boolean(v))
			return field_error_set(err, -EINVAL, path, NULL,
					       "expected true or false (the field's type)");
		break;
	default:
		return -EINVAL;
	}
	f->default_value = json_deep_copy(v);
	return f->default_value ? 0 : -ENOMEM;
}

static int parse_field(json_t *obj, const char *path, struct backend_field *f,
		       struct field_error *err)
{
	static const char *const keys[] = { "id",	"type",		"label",   "description",
					    "required", "defaultValue", "options", NULL };
	const char *type = "", *id = "";
	json_t *options = NULL, *def;
	char p[256];
	int r, k;

	if (!json_is_object(obj))
		return field_error_set(err, -EINVAL, path, NULL, "expected an object");
	r = ipc_json_check_keys(obj, keys, path, err);
	if (r < 0)
		return r;
	r = ipc_json_get_string(obj, "id", true, path, &id, err);
	if (r < 0)
		return r;
	if (!backend_field_id_is_valid(id))
		return field_error_set(err, -EINVAL, path, "id",
				       "must match [a-zA-Z][a-zA-Z0-9_.-]{0,63}");
	f->id = strdup(id);
	if (!f->id)
		return -ENOMEM;
	r = ipc_json_get_string(obj, "type", true, path, &type, err);
	if (r < 0)
		return r;
	for (k = 0; k < _BACKEND_FIELD_TYPE_MAX; k++)
		if (streq(field_type_names[k], type))
			break;
	if (k == _BACKEND_FIELD_TYPE_MAX)
		return field_error_set(
			err, -EINVAL, path, "type",
			"unknown field type (string, number, boolean, select or secret)");
	f->type = (enum backend_field_type)k;
	r = get_text(obj, "label", true, true, path, &f->label, err);
	if (r < 0)
		return r;
	r = get_text(obj, "description", false, false, path, &f->description, err);
	if (r < 0)
		return r;
	r = ipc_json_get_bool(obj, "required", false, path, &f->required, err);
	if (r < 0)
		return r;
	r = ipc_json_get_array(obj, "options", false, BACKEND_OPTIONS_MAX, path, &options, err);
	if (r < 0)
		return r;
	json_path_join(p, sizeof(p), path, "options");
	if (f->type == BACKEND_FIELD_SELECT) {
		if (!options)
			return field_error_set(err, -EINVAL, p, NULL,
					       "a select field needs at least one option");
		r = parse_options(options, p, f, err);
		if (r < 0)
			return r;
	} else if (options)
		return field_error_set(err, -EINVAL, p, NULL, "only select fields have options");
	def = json_object_get(obj, "defaultValue");
	if (def && !json_is_null(def)) {
		json_path_join(p, sizeof(p), path, "defaultValue");
		r = parse_default(def, p, f, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_settings(json_t *obj, const char *path, struct backend_descriptor *d,
			  struct field_error *err)
{
	static const char *const keys[] = { "fields", NULL };
	json_t *fields = NULL, *v;
	char p[256];
	size_t i;
	int r;

	r = ipc_json_check_keys(obj, keys, path, err);
	if (r < 0)
		return r;
	r = ipc_json_get_array(obj, "fields", true, BACKEND_FIELDS_MAX, path, &fields, err);
	if (r < 0)
		return r;
	if (json_array_size(fields) == 0)
		return 0;
	d->fields = calloc(json_array_size(fields), sizeof(struct backend_field));
	if (!d->fields)
		return -ENOMEM;
	json_path_join(p, sizeof(p), path, "fields");
	json_array_foreach(fields, i, v) {
		char q[256];

		json_path_index(q, sizeof(q), p, i);
		d->n_fields = i + 1;
		r = parse_field(v, q, &d->fields[i], err);
		if (r < 0)
			return r;
		for (size_t k = 0; k < i; k++)
			if (streq_ptr(d->fields[k].id, d->fields[i].id)) {
				char first[256];

				json_path_index(first, sizeof(first), p, k);
				return field_error_set(err, -EINVAL, q, "id",
						       "duplicate field id \"%s\" (also %s)",
						       d->fields[i].id, first);
			}
	}
	return 0;
}

int backend_descriptor_from_json(json_t *j, unsigned flags, const char *path,
				 struct backend_descriptor **ret, struct field_error *err)
{
	static const char *const keys[] = { "kind",	"name",	  "description",
					    "settings", "claims", NULL };
	_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL;
	json_t *settings = NULL, *claims = NULL;
	int r;

	if (!path)
		path = "";
	if (!json_is_object(j))
		return field_error_set(err, -EINVAL, path, NULL, "expected an object");
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	r = ipc_json_check_keys(j, keys, path, err);
	if (r < 0)
		return r;
	r = get_text(j, "kind", true, true, path, &d->kind, err);
	if (r < 0)
		return r;
	if (!backend_kind_is_valid(d->kind))
		return field_error_set(err, -EINVAL, path, "kind",
				       "must match [a-z][a-z0-9-]* (at most 64 bytes)");
	r = get_text(j, "name", true, true, path, &d->name, err);
	if (r < 0)
		return r;
	r = get_text(j, "description", true, false, path, &d->description, err);
	if (r < 0)
		return r;
	r = ipc_json_get_object(j, "settings", false, path, &settings, err);
	if (r < 0)
		return r;
	if (settings) {
		char p[256];

		json_path_join(p, sizeof(p), path, "settings");
		r = parse_settings(settings, p, d, err);
		if (r < 0)
			return r;
	}
	r = ipc_json_get_object(j, "claims", true, path, &claims, err);
	if (r < 0)
		return r;
	{
		char p[256];

		json_path_join(p, sizeof(p), path, "claims");
		r = parse_claims(claims, flags, p, &d->claims, err);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(d);
	return 0;
}

int backend_descriptor_parse(const char *buf, size_t len, unsigned flags,
			     struct backend_descriptor **ret, struct field_error *err)
{
	_cleanup_json_ json_t *j = NULL;
	int r;

	if (len > BACKEND_DESCRIPTOR_MAX_BYTES)
		return field_error_set(err, -EFBIG, "", NULL, "descriptor larger than %zu bytes",
				       BACKEND_DESCRIPTOR_MAX_BYTES);
	r = ipc_json_parse_object(buf, len, &j, err);
	if (r < 0)
		return r;
	return backend_descriptor_from_json(j, flags, "", ret, err);
}

static json_t *name_set_to_json(unsigned set, const char *const *names)
{
	json_t *a = json_array();

	if (!a)
		return NULL;
	for (unsigned i = 0; names[i]; i++)
		if ((set & (1U << i)) && json_array_append_new(a, json_string(names[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *field_to_json(const struct backend_field *f)
{
	_cleanup_json_ json_t *o = NULL;

	o = json_pack("{s:s, s:s, s:s, s:b}", "id", f->id, "type", field_type_names[f->type],
		      "label", f->label, "required", f->required);
	if (!o)
		return NULL;
	if (f->description &&
	    json_object_set_new(o, "description", json_string(f->description)) < 0)
		return NULL;
	if (f->default_value && json_object_set(o, "defaultValue", f->default_value) < 0)
		return NULL;
	if (f->type == BACKEND_FIELD_SELECT) {
		json_t *a = json_array();

		if (!a || json_object_set_new(o, "options", a) < 0)
			return NULL;
		for (size_t i = 0; i < f->n_options; i++)
			if (json_array_append_new(a, json_pack("{s:s, s:s}", "value",
							       f->options[i].value, "label",
							       f->options[i].label)) < 0)
				return NULL;
	}
	return TAKE_PTR(o);
}

int backend_descriptor_to_json(const struct backend_descriptor *d, json_t **ret)
{
	_cleanup_json_ json_t *o = NULL;
	json_t *fields, *claims;

	o = json_pack("{s:s, s:s, s:s, s:{s:[]}, s:{s:o*, s:o*, s:s, s:b, s:s}}", "kind", d->kind,
		      "name", d->name, "description", d->description, "settings", "fields",
		      "claims", "platforms", name_set_to_json(d->claims.platforms, platform_names),
		      "enforces", name_set_to_json(d->claims.enforces, enforces_names), "isolation",
		      isolation_names[d->claims.isolation], "readOnlyWorkspace",
		      d->claims.read_only_workspace, "workspace",
		      attach_names[d->claims.workspace]);
	if (!o)
		return -ENOMEM;
	claims = json_object_get(o, "claims");
	if (!json_object_get(claims, "platforms") || !json_object_get(claims, "enforces"))
		return -ENOMEM;
	if (d->claims.network_modes &&
	    json_object_set_new(claims, "networkModes",
				name_set_to_json(d->claims.network_modes, network_names)) < 0)
		return -ENOMEM;
	fields = json_object_get(json_object_get(o, "settings"), "fields");
	for (size_t i = 0; i < d->n_fields; i++)
		if (json_array_append_new(fields, field_to_json(&d->fields[i])) < 0)
			return -ENOMEM;
	*ret = TAKE_PTR(o);
	return 0;
}

const struct backend_field *backend_descriptor_field(const struct backend_descriptor *d,
						     const char *id)
{
	for (size_t i = 0; i < d->n_fields; i++)
		if (streq(d->fields[i].id, id))
			return &d->fields[i];
	return NULL;
}
