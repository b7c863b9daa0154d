/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Backend settings and secrets for clients (docs/PROTOCOL.md): backend.settings.get,
 * backend.settings.set, secret.set, secret.clear.
 *
 * - Settings are validated against the backend's descriptor (backends/backend-settings.c),
 *   merged over what is stored, and stored under the source-qualified reference.
 * - A settings change of the *active* backend is an activation: the new settings are
 *   configured, prepared and probed in a new instance while the current one keeps serving, and
 *   stored only when the swap succeeded — a bad value can never break the running selection.
 * - Secret values never travel through the settings methods: a non-empty secret there is
 *   refused ("use cordon secret set"), an empty one or null means "no change". secret.set and
 *   secret.clear are the only ways to change them; reads return {"configured": bool} only.
 *   Secret changes take effect at the backend's next activation.
 * - Nothing here logs, emits or returns a secret value; plaintext in requests is overwritten as
 *   soon as it is stored.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/util.h"
#include "backends/backend-descriptor.h"
#include "backends/backend-secrets.h"
#include "backends/backend-settings.h"
#include "backends/backend.h"
#include "controller/controller.h"

static int reply_lookup_error(struct client *cl, json_t *id, int r, const struct field_error *fe)
{
	if (r == -ENOMEM)
		return client_reply_error(cl, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	return client_reply_field_error(
		cl, id, r == -ENOENT ? CORDON_ERR_NOT_FOUND : JSONRPC_INVALID_PARAMS, fe);
}

struct configured_query {
	struct backend_secrets *store;
	const struct backend_ref *ref;
};

static bool secret_configured(void *userdata, const char *field_id)
{
	struct configured_query *q = userdata;

	return q->store && backend_secrets_configured(q->store, q->ref, field_id);
}

static bool is_active(struct controller *c, const char *ref_text)
{
	return c->active && streq(c->active->ref, ref_text);
}

/*
 * What a client sees: {backend, active, settings: {id: value | {"configured": bool}},
 * fields: [descriptor field + "value" | "configured", "source": stored|default|unset]}.
 */
static int settings_view(struct controller *c, const struct backend_descriptor *d,
			 const struct backend_ref *ref, json_t *stored, json_t **ret)
{
	_cleanup_json_ json_t *doc = NULL, *settings = json_object(), *fields = json_array();
	struct backend_secrets *store = NULL;
	char text[BACKEND_REF_TEXT_MAX];
	json_t *dfields;
	int r;

	if (!settings || !fields)
		return -ENOMEM;
	r = backend_ref_format(ref, text, sizeof(text));
	if (r < 0)
		return r;
	r = backend_descriptor_to_json(d, &doc);
	if (r < 0)
		return r;
	(void)controller_secrets(c, &store); /* unavailable store: nothing is configured */
	dfields = json_object_get(json_object_get(doc, "settings"), "fields");
	for (size_t i = 0; i < d->n_fields; i++) {
		const struct backend_field *f = &d->fields[i];
		json_t *fj = json_deep_copy(json_array_get(dfields, i));
		json_t *v = json_object_get(stored, f->id);

		if (!fj || json_array_append_new(fields, fj) < 0)
			return -ENOMEM;
		if (f->type == BACKEND_FIELD_SECRET) {
			bool conf = store && backend_secrets_configured(store, ref, f->id);

			json_object_set_new(fj, "configured", json_boolean(conf));
			json_object_set_new(settings, f->id,
					    json_pack("{s:b}", "configured", conf));
			continue;
		}
		if (v && !json_is_null(v))
			json_object_set_new(fj, "source", json_string("stored"));
		else if (f->default_value) {
			v = f->default_value;
			json_object_set_new(fj, "source", json_string("default"));
		} else
			json_object_set_new(fj, "source", json_string("unset"));
		if (v && !json_is_null(v)) {
			json_object_set(fj, "value", v);
			json_object_set(settings, f->id, v);
		}
	}
	*ret = json_pack("{s:s,s:b,s:s*,s:O,s:O}", "backend", text, "active", is_active(c, text),
			 "launcher", is_active(c, text) ? c->active->name : NULL, "settings",
			 settings, "fields", fields);
	return *ret ? 0 : -ENOMEM;
}

int method_backend_settings_get(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "backend", NULL };
	struct controller *c = cl->ctl;
	_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL;
	_cleanup_json_ json_t *stored = NULL, *view = NULL;
	struct field_error fe = { 0 };
	struct backend_ref ref;
	char text[BACKEND_REF_TEXT_MAX];
	int r = 0;

	if (ipc_json_check_keys(params, keys, "params", &fe) < 0 ||
	    controller_backend_ref_param(params, &ref, text, sizeof(text), &fe) < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	r = controller_backend_lookup(c, text, &ref, &d, &fe);
	if (r < 0)
		return reply_lookup_error(cl, id, r, &fe);
	if (c->settings)
		r = backend_settings_store_get(c->settings, &ref, &stored);
	else
		stored = json_object();
	if (r < 0 || !stored || settings_view(c, d, &ref, stored, &view) < 0)
		return client_reply_error(cl, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	return client_reply(cl, id, TAKE_PTR(view));
}

/* The ids whose stored value differs between a and b (objects of non-secret settings). */
static json_t *changed_ids(json_t *a, json_t *b)
{
	json_t *ids = json_array(), *v;
	const char *key;

	if (!ids)
		return NULL;
	json_object_foreach(a, key, v)
		if (!json_equal(v, json_object_get(b, key)))
			json_array_append_new(ids, json_string(key));
	json_object_foreach(b, key, v)
		if (!json_object_get(a, key))
			json_array_append_new(ids, json_string(key));
	return ids;
}

struct settings_req {
	uint64_t client_id;
	json_t *id;
	char ref[BACKEND_REF_TEXT_MAX];
	json_t *old;  /* stored before */
	json_t *next; /* stored after */
};

static void settings_req_free(struct settings_req *sr)
{
	json_decref(sr->id);
	json_decref(sr->old);
	json_decref(sr->next);
	free(sr);
}

static void settings_changed(struct controller *c, const char *ref, json_t *old, json_t *next)
{
	_cleanup_json_ json_t *ids = changed_ids(old, next);

	if (ids && json_array_size(ids) > 0)
		controller_event(c, "settings.changed",
				 json_pack("{s:s,s:O,s:b}", "backend", ref, "fields", ids, "secret",
					   false));
}

static int reply_view(struct client *cl, json_t *id, const char *ref_text)
{
	_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL;
	_cleanup_json_ json_t *stored = NULL, *view = NULL;
	struct field_error fe = { 0 };
	struct backend_ref ref;
	int r;

	r = controller_backend_lookup(cl->ctl, ref_text, &ref, &d, &fe);
	if (r < 0)
		return reply_lookup_error(cl, id, r, &fe);
	if (cl->ctl->settings)
		(void)backend_settings_store_get(cl->ctl->settings, &ref, &stored);
	if (settings_view(cl->ctl, d, &ref, stored, &view) < 0)
		return client_reply_error(cl, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	return client_reply(cl, id, TAKE_PTR(view));
}

/* The active backend's settings changed through an activation (which also stored them). */
static void settings_activated(struct controller *c, int r, const char *step, const char *message,
			       const char *launcher, void *ud)
{
	struct settings_req *sr = ud;
	struct client *cl = controller_client_find(c, sr->client_id);

	if (r >= 0)
		settings_changed(c, sr->ref, sr->old, sr->next);
	if (cl && r >= 0)
		(void)reply_view(cl, sr->id, sr->ref);
	else if (cl)
		(void)client_reply_error(cl, sr->id, CORDON_ERR_BACKEND, message,
					 json_pack("{s:s,s:s,s:s}", "step", step, "errno",
						   strerror(-r), "backend", sr->ref));
	settings_req_free(sr);
}

/*
 * The candidate merged over what is stored: a non-secret id with a value replaces, with null
 * reverts to the default; a secret id must be null or "" (no change) — a value is refused.
 */
static int merge_candidate(const struct backend_descriptor *d, json_t *stored, json_t *candidate,
			   json_t **ret, struct field_error *fe)
{
	_cleanup_json_ json_t *merged = json_deep_copy(stored);
	const char *key;
	json_t *v;

	if (!merged)
		return -ENOMEM;
	json_object_foreach(candidate, key, v) {
		const struct backend_field *f = backend_descriptor_field(d, key);

		if (!f)
			continue; /* the validator names it */
		if (f->type == BACKEND_FIELD_SECRET) {
			if (json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0))
				continue; /* empty means "no change" */
			return field_error_set(fe, -EINVAL, "settings", key,
					       "a secret: set it with 'cordon secret set' "
					       "(secret.set), never with the settings");
		}
		if (json_is_null(v))
			(void)json_object_del(merged, key);
		else if (json_object_set(merged, key, v) < 0)
			return -ENOMEM;
	}
	/* Unknown ids of the candidate are refused by name (stored values of ids the descriptor
	 * no longer has are dropped by the caller). */
	json_object_foreach(candidate, key, v)
		if (!backend_descriptor_field(d, key))
			return field_error_set(fe, -EINVAL, "settings", key, "unknown setting");
	*ret = TAKE_PTR(merged);
	return 0;
}

static void wipe_strings(json_t *o)
{
	const char *key;
	json_t *v;

	json_object_foreach(o, key, v)
		if (json_is_string(v))
			sodium_memzero((char *)json_string_value(v), json_string_length(v));
}

int method_backend_settings_set(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "backend", "settings", NULL };
	struct controller *c = cl->ctl;
	_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL;
	_cleanup_json_ json_t *stored = NULL, *merged = NULL, *pruned = NULL;
	_cleanup_(backend_settings_update_done) struct backend_settings_update u = { 0 };
	struct backend_secrets *store = NULL;
	struct configured_query q;
	struct field_error fe = { 0 };
	struct settings_req *sr;
	struct backend_ref ref;
	char text[BACKEND_REF_TEXT_MAX];
	const char *key;
	json_t *candidate = NULL, *v;
	int r;

	if (ipc_json_check_keys(params, keys, "params", &fe) < 0 ||
	    controller_backend_ref_param(params, &ref, text, sizeof(text), &fe) < 0 ||
	    ipc_json_get_object(params, "settings", true, "params", &candidate, &fe) < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	r = controller_backend_lookup(c, text, &ref, &d, &fe);
	if (r < 0) {
		wipe_strings(candidate); /* which ones are secrets is unknown: all of them */
		return reply_lookup_error(cl, id, r, &fe);
	}
	r = c->settings ? backend_settings_store_get(c->settings, &ref, &stored) : -ENODEV;
	if (r == -ENODEV)
		return client_reply_error(cl, id, CORDON_ERR_BACKEND,
					  "the settings store is not available (see the "
					  "controller's log)",
					  json_pack("{s:s}", "step", "persist"));
	if (r < 0)
		return client_reply_error(cl, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	r = merge_candidate(d, stored, candidate, &merged, &fe);
	backend_settings_scrub_secrets(d, candidate);
	if (r < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	/* Keep only what the descriptor still knows: the validator refuses unknown ids. */
	pruned = json_object();
	if (!pruned)
		return -ENOMEM;
	json_object_foreach(merged, key, v)
		if (backend_descriptor_field(d, key))
			(void)json_object_set(pruned, key, v);
	(void)controller_secrets(c, &store);
	q = (struct configured_query){ .store = store, .ref = &ref };
	r = backend_settings_validate(d, pruned, "settings", secret_configured, &q, &u, &fe);
	if (r < 0)
		return client_reply_field_error(
			cl, id, r == -E2BIG ? CORDON_ERR_TOO_LARGE : JSONRPC_INVALID_PARAMS, &fe);

	sr = calloc(1, sizeof(*sr));
	if (!sr)
		return -ENOMEM;
	sr->client_id = cl->id;
	sr->id = json_incref(id);
	(void)backend_ref_format(&ref, sr->ref, sizeof(sr->ref));
	sr->old = json_incref(stored);
	sr->next = json_incref(u.settings);

	if (is_active(c, sr->ref)) {
		/* An activation with the new settings: stored only if the new instance serves. */
		r = controller_backend_activate_for(c, cl->id, sr->ref, u.settings,
						    ACTIVATE_EXPLICIT, settings_activated, sr);
		if (r < 0) {
			settings_req_free(sr);
			return client_reply_error(cl, id, CORDON_ERR_BACKEND, strerror(-r),
						  json_pack("{s:s}", "step", "activate"));
		}
		return 0;
	}
	r = backend_settings_store_put(c->settings, &ref, u.settings, &fe);
	if (r < 0) {
		log_warning_errno(r, "cannot save the settings of %s: %s", sr->ref, fe.reason);
		(void)client_reply_error(cl, id, CORDON_ERR_BACKEND,
					 "cannot save the settings; nothing was changed",
					 json_pack("{s:s,s:s,s:s}", "step", "persist", "errno",
						   strerror(-r), "reason", fe.reason));
		settings_req_free(sr);
		return r;
	}
	settings_changed(c, sr->ref, sr->old, sr->next);
	r = reply_view(cl, id, sr->ref);
	settings_req_free(sr);
	return r;
}

/* secret.set / secret.clear: the common checks. */
static int secret_params(struct client *cl, json_t *params, bool with_value,
			 struct backend_ref *ret_ref,
			 char ret_ref_text[static BACKEND_REF_TEXT_MAX], const char **ret_field,
			 json_t **ret_value, struct field_error *fe)
{
	static const char *const keys_set[] = { "backend", "field", "value", NULL };
	static const char *const keys_clear[] = { "backend", "field", NULL };
	json_t *value;
	int r;

	r = ipc_json_check_keys(params, with_value ? keys_set : keys_clear, "params", fe);
	if (r < 0)
		return r;
	r = controller_backend_ref_param(params, ret_ref, ret_ref_text, BACKEND_REF_TEXT_MAX, fe);
	if (r < 0)
		return r;
	r = ipc_json_get_string(params, "field", true, "params", ret_field, fe);
	if (r < 0)
		return r;
	r = controller_backend_secret_field(cl->ctl, ret_ref_text, *ret_field, fe);
	if (r < 0)
		return r;
	if (!with_value)
		return 0;
	value = json_object_get(params, "value");
	if (!json_is_string(value))
		return field_error_set(fe, -EINVAL, "params.value", NULL, "expected a string");
	if (json_string_length(value) > BACKEND_SETTING_VALUE_MAX)
		return field_error_set(fe, -E2BIG, "params.value", NULL, "longer than %d bytes",
				       BACKEND_SETTING_VALUE_MAX);
	*ret_value = value;
	return 0;
}

static int reply_secret_error(struct client *cl, json_t *id, int r, const struct field_error *fe)
{
	if (r == -ENOMEM)
		return client_reply_error(cl, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	if (r == -ENOENT)
		return client_reply_field_error(cl, id, CORDON_ERR_NOT_FOUND, fe);
	if (r == -E2BIG)
		return client_reply_field_error(cl, id, CORDON_ERR_TOO_LARGE, fe);
	if (r == -EINVAL)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, fe);
	/* The store failed (key file refused, disk): fe names the file, never a value. */
	return client_reply_error(cl, id, CORDON_ERR_BACKEND,
				  fe->reason[0] ? fe->reason : "the secret store is not available",
				  json_pack("{s:s,s:s}", "step", "secret-store", "errno",
					    strerror(-r)));
}

int method_secret_set(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	struct controller *c = cl->ctl;
	struct backend_secrets *store = NULL;
	struct field_error fe = { 0 };
	struct backend_ref ref;
	char ref_text[BACKEND_REF_TEXT_MAX] = "";
	const char *field = NULL;
	json_t *value = NULL;
	bool changed;
	int r;

	r = secret_params(cl, params, true, &ref, ref_text, &field, &value, &fe);
	if (r >= 0)
		r = controller_secrets(c, &store);
	changed = r >= 0 && json_string_length(value) > 0;
	if (changed) {
		if (memchr(json_string_value(value), '\0', json_string_length(value)))
			r = field_error_set(&fe, -EINVAL, "params.value", NULL,
					    "contains a NUL character");
		else
			r = backend_secrets_set(store, &ref, field, json_string_value(value), &fe);
	}
	/* Wipe the request's plaintext whatever happened. */
	if (json_is_string(value))
		sodium_memzero((char *)json_string_value(value), json_string_length(value));
	if (r < 0)
		return reply_secret_error(cl, id, r, &fe);
	/* Empty input means "no change". */
	controller_secret_event(c, ref_text, field, "set", changed);
	return client_reply(cl, id,
			    json_pack("{s:s,s:s,s:b,s:b}", "backend", ref_text, "field", field,
				      "configured", backend_secrets_configured(store, &ref, field),
				      "changed", changed));
}

int method_secret_clear(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	struct controller *c = cl->ctl;
	struct backend_secrets *store = NULL;
	struct field_error fe = { 0 };
	struct backend_ref ref;
	char ref_text[BACKEND_REF_TEXT_MAX] = "";
	const char *field = NULL;
	int r;

	r = secret_params(cl, params, false, &ref, ref_text, &field, NULL, &fe);
	if (r >= 0)
		r = controller_secrets(c, &store);
	if (r >= 0)
		r = backend_secrets_clear(store, &ref, field, &fe);
	if (r < 0)
		return reply_secret_error(cl, id, r, &fe);
	controller_secret_event(c, ref_text, field, "clear", r > 0);
	return client_reply(cl, id,
			    json_pack("{s:s,s:s,s:b,s:b}", "backend", ref_text, "field", field,
				      "configured", false, "changed", r > 0));
}
