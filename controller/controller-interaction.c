/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host interactions: controller → client JSON-RPC requests, matched to the client's responses
 * by (client id, request id). Each outstanding interaction owns a timer; every way it ends
 * (answer, timeout, client gone) goes through finish(), so the callback runs exactly once, and
 * never from inside controller_interaction_ask() or controller_client_free().
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/util.h"
#include "backends/backend-secrets.h"
#include "backends/backend-settings.h"
#include "controller/controller-interaction.h"
#include "controller/controller.h"

#define INTERACTION_OPTIONS_MAX 64

enum interaction_kind {
	KIND_CONFIRM,
	KIND_INPUT,
	KIND_SECRET_INPUT,
	KIND_CHOICE,
};

static const char *const kind_names[] = {
	[KIND_CONFIRM] = "confirm",
	[KIND_INPUT] = "input",
	[KIND_SECRET_INPUT] = "secret-input",
	[KIND_CHOICE] = "choice",
};

struct interaction {
	struct interaction *next;
	struct controller *ctl;
	uint64_t client_id;
	json_int_t rpc_id;
	enum interaction_kind kind;
	json_t *options;	/* choice: the normalized [{"value","label"}…] */
	struct backend_ref ref; /* secret-input */
	char field[BACKEND_FIELD_ID_MAX + 1];
	struct event_source *timer;
	int fail; /* set when the client went away: the timer reports it */
	interaction_cb cb;
	void *ud;
};

static json_int_t next_rpc_id;

static void interaction_unlink(struct interaction *it)
{
	for (struct interaction **p = &it->ctl->interactions; *p; p = &(*p)->next)
		if (*p == it) {
			*p = it->next;
			return;
		}
}

static void interaction_free(struct interaction *it)
{
	event_source_free(it->timer);
	json_decref(it->options);
	free(it);
}

/* The one way out: unlink, call back once, free. answer is borrowed. */
static void finish(struct interaction *it, int r, json_t *answer)
{
	interaction_cb cb = it->cb;
	void *ud = it->ud;

	interaction_unlink(it);
	interaction_free(it);
	cb(r, r < 0 ? NULL : answer, ud);
}

static int on_timer(struct event_source *s, void *userdata)
{
	struct interaction *it = userdata;

	finish(it, it->fail < 0 ? it->fail : -ETIMEDOUT, NULL);
	return 0;
}

static int parse_kind(const char *kind)
{
	for (size_t i = 0; i < ELEMENTSOF(kind_names); i++)
		if (streq_ptr(kind, kind_names[i]))
			return (int)i;
	return -EINVAL;
}

/* choice options: strings or {"value","label"} objects → [{"value","label"}…], values unique. */
static int normalize_options(json_t *in, json_t **ret)
{
	_cleanup_json_ json_t *out = json_array();
	json_t *o;
	size_t i;

	if (!out)
		return -ENOMEM;
	if (!json_is_array(in) || json_array_size(in) == 0 ||
	    json_array_size(in) > INTERACTION_OPTIONS_MAX)
		return -EINVAL;
	json_array_foreach(in, i, o) {
		const char *value, *label;
		json_t *p;
		size_t k;

		if (json_is_string(o)) {
			value = label = json_string_value(o);
		} else if (json_is_object(o) && json_object_size(o) <= 2 &&
			   json_is_string(json_object_get(o, "value")) &&
			   (json_object_size(o) == 1 ||
			    json_is_string(json_object_get(o, "label")))) {
			value = json_string_value(json_object_get(o, "value"));
			label = json_string_value(json_object_get(o, "label"));
			if (!label)
				label = value;
		} else
			return -EINVAL;
		if (isempty(value) || !backend_text_is_safe(value, strlen(value)) ||
		    !backend_text_is_safe(label, strlen(label)))
			return -EINVAL;
		json_array_foreach(out, k, p)
			if (streq(json_string_value(json_object_get(p, "value")), value))
				return -EINVAL;
		if (json_array_append_new(out, json_pack("{s:s,s:s}", "value", value, "label",
							 label)) < 0)
			return -ENOMEM;
	}
	*ret = TAKE_PTR(out);
	return 0;
}

int controller_interaction_ask(struct controller *c, uint64_t origin_client_id, const char *kind,
			       json_t *params, unsigned timeout_ms,
			       void (*cb)(int r, json_t *answer, void *ud), void *ud)
{
	static const char *const keys[] = { "prompt", "options", "field", "backend", NULL };
	_cleanup_json_ json_t *wire = NULL, *req = NULL;
	struct interaction *it;
	struct client *cl;
	const char *prompt, *field = NULL, *backend = NULL;
	unsigned outstanding = 0;
	int k, r;

	if (!cb)
		return -EINVAL;
	k = parse_kind(kind);
	if (k < 0 || !json_is_object(params) || ipc_json_check_keys(params, keys, "", NULL) < 0)
		return -EINVAL;
	prompt = json_string_value(json_object_get(params, "prompt"));
	if (isempty(prompt) || !backend_text_is_safe(prompt, strlen(prompt)))
		return -EINVAL;
	/* Each member only where its kind uses it. */
	if ((k == KIND_CHOICE) != !!json_object_get(params, "options") ||
	    (k == KIND_SECRET_INPUT) != !!json_object_get(params, "field") ||
	    (k == KIND_SECRET_INPUT) != !!json_object_get(params, "backend"))
		return -EINVAL;

	cl = controller_client_find(c, origin_client_id);
	if (!cl || cl->closing)
		return -ESRCH;
	for (struct interaction *p = c->interactions; p; p = p->next)
		if (p->client_id == origin_client_id)
			outstanding++;
	if (outstanding >= INTERACTION_PER_CLIENT_MAX)
		return -EBUSY;

	it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->ctl = c;
	it->client_id = origin_client_id;
	it->kind = (enum interaction_kind)k;
	it->cb = cb;
	it->ud = ud;
	if (k == KIND_CHOICE) {
		r = normalize_options(json_object_get(params, "options"), &it->options);
		if (r < 0)
			goto fail;
	}
	if (k == KIND_SECRET_INPUT) {
		struct field_error fe = { 0 };

		field = json_string_value(json_object_get(params, "field"));
		backend = json_string_value(json_object_get(params, "backend"));
		r = -EINVAL;
		if (!field || !backend || backend_ref_parse(backend, &it->ref) < 0 ||
		    controller_backend_secret_field(c, backend, field, &fe) < 0)
			goto fail;
		(void)snprintf(it->field, sizeof(it->field), "%s", field);
	}

	wire = json_pack("{s:s,s:s,s:O*,s:s*,s:s*}", "kind", kind_names[k], "prompt", prompt,
			 "options", it->options, "field", field, "backend", backend);
	it->rpc_id = ++next_rpc_id;
	req = jsonrpc_request_new(it->rpc_id, "host.interaction", TAKE_PTR(wire));
	r = -ENOMEM;
	if (!req)
		goto fail;
	r = event_add_timer(c->host.loop,
			    (uint64_t)(timeout_ms ? timeout_ms : INTERACTION_TIMEOUT_DEFAULT_MS) *
				    1000ULL,
			    false, on_timer, it, &it->timer);
	if (r < 0)
		goto fail;
	r = client_send(cl, req, NULL, 0);
	if (r < 0 && r != -EAGAIN) {
		r = -ESRCH;
		goto fail;
	}
	it->next = c->interactions;
	c->interactions = it;
	log_debug("host interaction %lld (%s) sent to client %llu", (long long)it->rpc_id,
		  kind_names[k], (unsigned long long)origin_client_id);
	return 0;
fail:
	interaction_free(it);
	return r;
}

/* secret-input: store what the person typed, then hand cb the wipeable answer. */
static void finish_secret(struct interaction *it, json_t *value)
{
	struct controller *c = it->ctl;
	struct backend_secrets *store = NULL;
	struct field_error fe = { 0 };
	char text[BACKEND_REF_TEXT_MAX] = "";
	_cleanup_json_ json_t *answer = NULL;
	bool changed = json_string_length(value) > 0;
	int r;

	r = controller_secrets(c, &store);
	if (r >= 0 && changed)
		r = backend_secrets_set(store, &it->ref, it->field, json_string_value(value), &fe);
	if (r < 0) {
		/* fe names the backend and field only, never the value. */
		log_warning_errno(r, "cannot store the secret answered for %s: %s", it->field,
				  fe.reason[0] ? fe.reason : "secret store unavailable");
		finish(it, r, NULL);
		return;
	}
	(void)backend_ref_format(&it->ref, text, sizeof(text));
	controller_secret_event(c, text, it->field, "set", changed);
	answer = json_pack("{s:b,s:b,s:O*}", "configured",
			   backend_secrets_configured(store, &it->ref, it->field), "changed",
			   changed, "value", changed ? value : NULL);
	if (!answer) {
		finish(it, -ENOMEM, NULL);
		return;
	}
	finish(it, 0, answer);
	/* The callback has returned: overwrite the plaintext jansson holds (the request's copy
	 * is the same string object). */
	sodium_memzero((char *)json_string_value(value), json_string_length(value));
}

void controller_interaction_response(struct client *cl, json_t *id, json_t *result, json_t *error)
{
	struct controller *c = cl->ctl;
	struct interaction *it = NULL;
	json_t *value;

	if (!json_is_integer(id))
		return;
	for (struct interaction *p = c->interactions; p; p = p->next)
		if (p->client_id == cl->id && p->rpc_id == json_integer_value(id) && !p->fail)
			it = p;
	if (!it) {
		log_debug("client %llu answered an interaction it was not asked (id %lld)",
			  (unsigned long long)cl->id, (long long)json_integer_value(id));
		return;
	}
	if (error || json_is_true(json_object_get(result, "unavailable"))) {
		finish(it, -ENOTTY, NULL);
		return;
	}
	value = json_object_get(result, "value");
	if (!json_is_object(result) || json_object_size(result) != 1 || !value) {
		finish(it, -EBADMSG, NULL);
		return;
	}
	switch (it->kind) {
	case KIND_CONFIRM:
		if (!json_is_boolean(value)) {
			finish(it, -EBADMSG, NULL);
			return;
		}
		break;
	case KIND_INPUT:
	case KIND_SECRET_INPUT:
		if (!json_is_string(value) ||
		    json_string_length(value) > BACKEND_SETTING_VALUE_MAX ||
		    memchr(json_string_value(value), '\0', json_string_length(value))) {
			finish(it, -EBADMSG, NULL);
			return;
		}
		if (it->kind == KIND_SECRET_INPUT) {
			finish_secret(it, value);
			return;
		}
		break;
	case KIND_CHOICE: {
		bool listed = false;
		json_t *o;
		size_t i;

		json_array_foreach(it->options, i, o)
			listed = listed || (json_is_string(value) &&
					    streq(json_string_value(value),
						  json_string_value(json_object_get(o, "value"))));
		if (!listed) {
			finish(it, -EBADMSG, NULL);
			return;
		}
		break;
	}
	}
	finish(it, 0, result);
}

void controller_interactions_client_gone(struct controller *c, struct client *cl)
{
	for (struct interaction *p = c->interactions; p; p = p->next)
		if (p->client_id == cl->id && !p->fail) {
			/* Report from the timer: the client is being freed right now. */
			p->fail = -ECONNRESET;
			if (event_timer_set(p->timer, 1, false) < 0)
				log_debug("cannot re-arm an interaction timer");
		}
}

void controller_interactions_free(struct controller *c)
{
	while (c->interactions) {
		struct interaction *it = c->interactions;

		c->interactions = it->next;
		interaction_free(it);
	}
}
