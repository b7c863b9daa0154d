/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "backends/backend-secrets.h"
#include "backends/backend-settings.h"
#include "backends/backend-state.h"

#define SETTINGS_FILE "settings.json"
#define ACTIVE_FILE "active.json"
#define SETTINGS_VERSION 1

struct backend_settings_store {
	char *dir;
	json_t *backends; /* ref text → settings object */
};

void backend_settings_update_done(struct backend_settings_update *u)
{
	if (!u)
		return;
	json_decref(u->settings);
	for (size_t i = 0; i < u->n_secrets; i++)
		backend_secret_free(u->secrets[i].value);
	free(u->secrets);
	*u = (struct backend_settings_update){ 0 };
}

static int check_value(const struct backend_field *f, json_t *v, const char *path,
		       struct field_error *err)
{
	switch (f->type) {
	case BACKEND_FIELD_STRING:
	case BACKEND_FIELD_SECRET:
		if (!json_is_string(v))
			return field_error_set(err, -EINVAL, path, NULL, "expected a string");
		if (json_string_length(v) > BACKEND_SETTING_VALUE_MAX)
			return field_error_set(err, -E2BIG, path, NULL, "longer than %d bytes",
					       BACKEND_SETTING_VALUE_MAX);
		return 0;
	case BACKEND_FIELD_NUMBER:
		if (!json_is_number(v))
			return field_error_set(err, -EINVAL, path, NULL, "expected a number");
		if (!isfinite(json_number_value(v)))
			return field_error_set(err, -EINVAL, path, NULL, "must be finite");
		return 0;
	case BACKEND_FIELD_BOOLEAN:
		if (!json_is_boolean(v))
			return field_error_set(err, -EINVAL, path, NULL, "expected true or false");
		return 0;
	case BACKEND_FIELD_SELECT:
		if (!json_is_string(v))
			return field_error_set(err, -EINVAL, path, NULL, "expected a string");
		for (size_t i = 0; i < f->n_options; i++)
			if (streq(f->options[i].value, json_string_value(v)))
				return 0;
		return field_error_set(err, -EINVAL, path, NULL, "not one of the options");
	default:
		return field_error_set(err, -EINVAL, path, NULL, "field of unknown type");
	}
}

int backend_settings_validate(const struct backend_descriptor *d, json_t *candidate,
			      const char *path, backend_secret_configured_fn configured,
			      void *userdata, struct backend_settings_update *ret,
			      struct field_error *err)
{
	_cleanup_(backend_settings_update_done) struct backend_settings_update u = { 0 };
	const char *key;
	json_t *v;
	int r;

	if (!path)
		path = "settings";
	if (!json_is_object(candidate))
		return field_error_set(err, -EINVAL, path, NULL, "expected an object");
	u.settings = json_object();
	u.secrets = calloc(d->n_fields ? d->n_fields : 1, sizeof(*u.secrets));
	if (!u.settings || !u.secrets)
		return -ENOMEM;

	/* What is given: known ids, right types. */
	json_object_foreach(candidate, key, v) {
		const struct backend_field *f = backend_descriptor_field(d, key);
		char p[256];

		json_path_join(p, sizeof(p), path, key);
		if (!f)
			return field_error_set(err, -EINVAL, p, NULL, "unknown setting");
		if (json_is_null(v))
			continue;
		r = check_value(f, v, p, err);
		if (r < 0)
			return r;
		if (f->type == BACKEND_FIELD_SECRET) {
			struct backend_secret_input *s = &u.secrets[u.n_secrets];

			if (json_string_length(v) == 0)
				continue; /* an empty secret input means "no change" */
			if (memchr(json_string_value(v), '\0', json_string_length(v)))
				return field_error_set(err, -EINVAL, p, NULL,
						       "contains a NUL character");
			s->field = f;
			s->value =
				backend_secret_strndup(json_string_value(v), json_string_length(v));
			if (!s->value)
				return -ENOMEM;
			u.n_secrets++;
		} else if (json_object_set(u.settings, key, v) < 0)
			return -ENOMEM;
	}

	/* What is required. */
	for (size_t i = 0; i < d->n_fields; i++) {
		const struct backend_field *f = &d->fields[i];
		bool have = false;

		if (!f->required)
			continue;
		if (f->type == BACKEND_FIELD_SECRET) {
			for (size_t k = 0; k < u.n_secrets; k++)
				have = have || u.secrets[k].field == f;
			have = have || (configured && configured(userdata, f->id));
			if (!have)
				return field_error_set(err, -EINVAL, path, f->id,
						       "required secret is not configured");
		} else if (!json_object_get(u.settings, f->id) && !f->default_value)
			return field_error_set(err, -EINVAL, path, f->id,
					       "required setting is missing");
	}
	*ret = u;
	u = (struct backend_settings_update){ 0 };
	return 0;
}

void backend_settings_scrub_secrets(const struct backend_descriptor *d, json_t *candidate)
{
	const char *key;
	json_t *v;

	json_object_foreach(candidate, key, v) {
		const struct backend_field *f = backend_descriptor_field(d, key);

		/* jansson allocated the string; only the const of its accessor is in the way. */
		if (f && f->type == BACKEND_FIELD_SECRET && json_is_string(v))
			sodium_memzero((char *)json_string_value(v), json_string_length(v));
	}
}

int backend_settings_effective(const struct backend_descriptor *d, json_t *stored, json_t **ret)
{
	_cleanup_json_ json_t *o = json_object();

	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < d->n_fields; i++) {
		const struct backend_field *f = &d->fields[i];
		json_t *v = stored ? json_object_get(stored, f->id) : NULL;

		if (f->type == BACKEND_FIELD_SECRET)
			continue;
		if (!v || json_is_null(v))
			v = f->default_value;
		if (v && json_object_set(o, f->id, v) < 0)
			return -ENOMEM;
	}
	*ret = TAKE_PTR(o);
	return 0;
}

/* The shape of stored settings: field id → string (bounded) / finite number / boolean. */
static int check_stored(json_t *settings, const char *path, struct field_error *err)
{
	const char *key;
	json_t *v;

	if (!json_is_object(settings))
		return field_error_set(err, -EINVAL, path, NULL, "expected an object");
	if (json_object_size(settings) > BACKEND_FIELDS_MAX)
		return field_error_set(err, -E2BIG, path, NULL, "more than %d settings",
				       BACKEND_FIELDS_MAX);
	json_object_foreach(settings, key, v) {
		char p[256];

		json_path_join(p, sizeof(p), path, key);
		if (!backend_field_id_is_valid(key))
			return field_error_set(err, -EINVAL, p, NULL, "not a valid field id");
		if (json_is_string(v)) {
			if (json_string_length(v) > BACKEND_SETTING_VALUE_MAX)
				return field_error_set(err, -E2BIG, p, NULL, "longer than %d bytes",
						       BACKEND_SETTING_VALUE_MAX);
		} else if (json_is_number(v)) {
			if (!isfinite(json_number_value(v)))
				return field_error_set(err, -EINVAL, p, NULL, "must be finite");
		} else if (!json_is_boolean(v))
			return field_error_set(err, -EINVAL, p, NULL,
					       "expected a string, a number or a boolean");
	}
	return 0;
}

/* settings.json: {"version": 1, "backends": {ref: settings}} with canonical refs. */
static int parse_settings_file(const char *buf, size_t len, json_t **ret, struct field_error *err)
{
	static const char *const keys[] = { "version", "backends", NULL };
	_cleanup_json_ json_t *doc = NULL;
	json_t *backends = NULL, *v;
	const char *key;
	int r;

	r = backend_state_parse_doc(buf, len, keys, SETTINGS_VERSION, &doc, err);
	if (r < 0)
		return r;
	r = ipc_json_get_object(doc, "backends", true, "", &backends, err);
	if (r < 0)
		return r;
	json_object_foreach(backends, key, v) {
		char p[256];

		json_path_join(p, sizeof(p), "backends", key);
		r = backend_state_check_ref_key(key, p, err);
		if (r < 0)
			return r;
		r = check_stored(v, p, err);
		if (r < 0)
			return r;
	}
	*ret = json_incref(backends);
	return 0;
}

int backend_settings_store_open(const char *dir, struct backend_settings_store **ret,
				char **ret_aside, struct field_error *err)
{
	_cleanup_free_ struct backend_settings_store *s = NULL;
	int r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->dir = strdup(dir);
	if (!s->dir)
		return -ENOMEM;
	r = backend_state_load(dir, SETTINGS_FILE, parse_settings_file, &s->backends, ret_aside,
			       err);
	if (r < 0) {
		free(s->dir);
		return r;
	}
	*ret = TAKE_PTR(s);
	return r;
}

void backend_settings_store_free(struct backend_settings_store *s)
{
	if (!s)
		return;
	json_decref(s->backends);
	free(s->dir);
	free(s);
}

/* Write backends as the whole file; the caller swaps it in only on success. */
static int store_write(struct backend_settings_store *s, json_t *backends)
{
	_cleanup_json_ json_t *doc = NULL;

	doc = json_pack("{s:i, s:O}", "version", SETTINGS_VERSION, "backends", backends);
	if (!doc)
		return -ENOMEM;
	return backend_state_json_write(s->dir, SETTINGS_FILE, doc);
}

int backend_settings_store_get(struct backend_settings_store *s, const struct backend_ref *ref,
			       json_t **ret)
{
	char key[BACKEND_REF_TEXT_MAX];
	json_t *v, *copy;
	int r;

	r = backend_ref_format(ref, key, sizeof(key));
	if (r < 0)
		return r;
	v = json_object_get(s->backends, key);
	copy = v ? json_deep_copy(v) : json_object();
	if (!copy)
		return -ENOMEM;
	*ret = copy;
	return v ? 1 : 0;
}

/* The stored document with settings under ref's key, checked, in *ret_next; 1 when the store
 * holds those settings already, else 0; or -errno. */
static int store_with(struct backend_settings_store *s, const struct backend_ref *ref,
		      json_t *settings, json_t **ret_next, struct field_error *err)
{
	_cleanup_json_ json_t *next = NULL;
	char key[BACKEND_REF_TEXT_MAX];
	int r;

	r = backend_ref_format(ref, key, sizeof(key));
	if (r < 0)
		return r;
	r = check_stored(settings, "settings", err);
	if (r < 0)
		return r;
	next = json_deep_copy(s->backends);
	if (!next || json_object_set_new(next, key, json_deep_copy(settings)) < 0)
		return -ENOMEM;
	r = json_equal(json_object_get(s->backends, key), settings) ? 1 : 0;
	*ret_next = TAKE_PTR(next);
	return r;
}

int backend_settings_store_put(struct backend_settings_store *s, const struct backend_ref *ref,
			       json_t *settings, struct field_error *err)
{
	_cleanup_json_ json_t *next = NULL;
	int r;

	r = store_with(s, ref, settings, &next, err);
	if (r < 0)
		return r;
	r = store_write(s, next);
	if (r < 0)
		return field_error_set(err, r, "", NULL, "cannot write %s/%s: %s", s->dir,
				       SETTINGS_FILE, strerror(-r));
	json_decref(s->backends);
	s->backends = TAKE_PTR(next);
	return 0;
}

int backend_settings_store_commit(struct backend_settings_store *s, const struct backend_ref *ref,
				  json_t *settings, struct field_error *err)
{
	_cleanup_json_ json_t *next = NULL;
	int r;

	r = store_with(s, ref, settings, &next, err);
	if (r != 0)
		return r;
	json_decref(s->backends);
	s->backends = json_incref(next);
	r = store_write(s, next);
	if (r < 0)
		return field_error_set(err, r, "", NULL, "cannot write %s/%s: %s", s->dir,
				       SETTINGS_FILE, strerror(-r));
	return 0;
}

int backend_settings_store_purge(struct backend_settings_store *s, const struct backend_ref *ref)
{
	_cleanup_json_ json_t *next = NULL;
	char key[BACKEND_REF_TEXT_MAX];
	int r;

	r = backend_ref_format(ref, key, sizeof(key));
	if (r < 0)
		return r;
	if (!json_object_get(s->backends, key))
		return 0;
	next = json_deep_copy(s->backends);
	if (!next)
		return -ENOMEM;
	(void)json_object_del(next, key);
	r = store_write(s, next);
	if (r < 0)
		return r;
	json_decref(s->backends);
	s->backends = TAKE_PTR(next);
	return 1;
}

static int parse_active(const char *buf, size_t len, bool allow_unconfined,
			struct backend_active *ret, struct field_error *err)
{
	static const char *const keys[] = { "backend", "generation", "settings", NULL };
	_cleanup_json_ json_t *doc = NULL;
	struct backend_active a = { 0 };
	const char *text = NULL;
	json_t *settings = NULL;
	int r;

	r = ipc_json_parse_object(buf, len, &doc, err);
	if (r < 0)
		return r;
	r = ipc_json_check_keys(doc, keys, "", err);
	if (r < 0)
		return r;
	r = ipc_json_get_string(doc, "backend", true, "", &text, err);
	if (r < 0)
		return r;
	if (backend_ref_parse(text, &a.ref) < 0)
		return field_error_set(err, -EINVAL, "backend", NULL, "not a backend reference");
	if (backend_ref_is_unconfined(&a.ref) && !allow_unconfined)
		return field_error_set(err, -EPERM, "backend", NULL,
				       "an unconfined backend is not allowed");
	r = ipc_json_get_uint64(doc, "generation", true, 0, INT64_MAX, "", &a.generation, err);
	if (r < 0)
		return r;
	r = ipc_json_get_object(doc, "settings", false, "", &settings, err);
	if (r < 0)
		return r;
	if (settings) {
		r = check_stored(settings, "settings", err);
		if (r < 0)
			return r;
		a.settings = json_incref(settings);
	}
	*ret = a;
	return 0;
}

int backend_active_load(struct backend_settings_store *s, bool allow_unconfined,
			struct backend_active *ret, struct field_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = backend_state_file_read(s->dir, ACTIVE_FILE, (size_t)64 * 1024, &buf, &len, err);
	if (r == -ENOMEM)
		return r;
	if (r >= 0) {
		r = parse_active(buf, len, allow_unconfined, ret, err);
		if (r == -ENOMEM)
			return r;
		if (r >= 0)
			return BACKEND_ACTIVE_LOADED;
	}
	/* Missing, torn, invalid or not allowed: the safe default, never anything else. */
	*ret = (struct backend_active){ .generation = 0 };
	backend_ref_auto(&ret->ref);
	return r == -ENOENT ? BACKEND_ACTIVE_DEFAULT : BACKEND_ACTIVE_FALLBACK;
}

static int active_doc(const struct backend_active *a, bool allow_unconfined, json_t **ret)
{
	char text[BACKEND_REF_TEXT_MAX];
	int r;

	if (backend_ref_is_unconfined(&a->ref) && !allow_unconfined)
		return -EPERM;
	if (a->generation > INT64_MAX)
		return -ERANGE;
	r = backend_ref_format(&a->ref, text, sizeof(text));
	if (r < 0)
		return r;
	*ret = json_pack("{s:s, s:I}", "backend", text, "generation", (json_int_t)a->generation);
	if (*ret && a->settings &&
	    json_object_set_new(*ret, "settings", json_deep_copy(a->settings)) < 0) {
		json_decref(*ret);
		*ret = NULL;
	}
	return *ret ? 0 : -ENOMEM;
}

int backend_active_save(struct backend_settings_store *s, const struct backend_active *a,
			bool allow_unconfined)
{
	_cleanup_json_ json_t *doc = NULL;
	int r;

	r = active_doc(a, allow_unconfined, &doc);
	if (r < 0)
		return r;
	return backend_state_json_write(s->dir, ACTIVE_FILE, doc);
}

int backend_active_text(struct backend_settings_store *s, const struct backend_active *a,
			bool allow_unconfined, char **ret_path, char **ret_text, size_t *ret_len)
{
	_cleanup_json_ json_t *doc = NULL;
	_cleanup_free_ char *path = NULL;
	int r;

	r = active_doc(a, allow_unconfined, &doc);
	if (r < 0)
		return r;
	path = strdup_printf("%s/%s", s->dir, ACTIVE_FILE);
	if (!path)
		return -ENOMEM;
	r = backend_state_json_text(doc, ret_text, ret_len);
	if (r < 0)
		return r;
	*ret_path = TAKE_PTR(path);
	return 0;
}
