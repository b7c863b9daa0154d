/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The activation transaction and the active instance (docs/ARCHITECTURE.md, "Activation").
 *
 * Activation of a backend (with candidate settings) is serialized — one at a time, queued — and
 * runs in this order (enum activation_step), each step completing through a callback so spawns
 * never wait on it:
 *   1. validate: the candidate settings against the backend's descriptor;
 *   2. resolve-secrets: its secrets, decrypted inside the controller only;
 *   3. configure: a new instance gets the settings and secrets (wiped right after);
 *   4. prepare: the instance gets ready, while the old one keeps serving;
 *   5. probe: its availability;
 *   6. swap: the active instance (one pointer: no moment without a confined launcher);
 *   7. persist: the selection and its settings, committed together by one atomic write — on
 *      failure, swap back (nothing stored has changed);
 *   8. dispose: drop the old instance's active reference: it is disposed once its last process
 *      ends; a failing dispose keeps the new activation, warns, and is retried in the
 *      background.
 * A failure in 1–5 leaves the running and the persisted selection as they were.
 *
 * When the active instance's launcher is lost there is no active instance until builtin:auto is
 * activated again (at once, and by the next spawn if that failed): a spawn that arrives
 * meanwhile waits for that activation (controller_backend_await()), the one case where a spawn
 * waits for an activation, since nothing else could serve it.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/backend.h"
#include "backends/backend-descriptor.h"
#include "backends/backend-secrets.h"
#include "backends/backend-settings.h"
#include "controller/controller.h"
#include "ipc/ipc-json.h"

int controller_backend_ref_param(json_t *params, struct backend_ref *ret, char *text, size_t size,
				 struct field_error *fe)
{
	json_t *j = json_object_get(params, "backend");
	int r;

	if (!j || json_is_null(j))
		return field_error_set(fe, -EINVAL, "params", "backend",
				       "required field is missing");
	r = backend_ref_from_json(j, "params.backend", ret, fe);
	if (r < 0)
		return r;
	if (backend_ref_format(ret, text, size) < 0)
		return field_error_set(fe, -EINVAL, "params.backend", NULL, "too long");
	return 0;
}

/* ------------------------------------------------------------------------- activation */

/* The activation's steps, in their order (the header comment of this file says what each does).
 * Their names are the "step" of the activation event and of a failed backend.activate. */
enum activation_step {
	STEP_QUEUED,
	STEP_VALIDATE,
	STEP_RESOLVE_SECRETS,
	STEP_CONFIGURE,
	STEP_PREPARE,
	STEP_PROBE,
	STEP_SWAP,
	STEP_PERSIST,
	STEP_DISPOSE,
	_STEP_MAX,
};

static const char *const step_names[_STEP_MAX] = {
	[STEP_QUEUED] = "queued",
	[STEP_VALIDATE] = "validate",
	[STEP_RESOLVE_SECRETS] = "resolve-secrets",
	[STEP_CONFIGURE] = "configure",
	[STEP_PREPARE] = "prepare",
	[STEP_PROBE] = "probe",
	[STEP_SWAP] = "swap",
	[STEP_PERSIST] = "persist",
	[STEP_DISPOSE] = "dispose",
};

struct activation {
	struct activation *next;
	struct controller *ctl;
	const struct backend_ops *ops;
	char ref[160];
	json_t *settings;
	json_t *secrets; /* step 2: field id → resolved value; wiped at the end of step 3 */
	uint64_t origin; /* the client that asked (host interactions go to it); 0: none */
	struct backend_instance *bi;
	struct backend_instance *old;
	activation_done_cb done;
	void *ud;
	enum activation_step step; /* the step running, or the last one run */
	bool persist; /* false at start-up: the selection on disk is what we are restoring */
};

static void activation_run(struct activation *a);

/* Overwrite every resolved secret value, then drop the object. */
static void secrets_wipe(json_t **secrets)
{
	const char *key;
	json_t *v;

	json_object_foreach(*secrets, key, v)
		if (json_is_string(v))
			explicit_bzero((char *)json_string_value(v), json_string_length(v));
	json_decref(*secrets);
	*secrets = NULL;
}

/* Step 2: every configured secret field of the backend, decrypted into a->secrets. */
static int resolve_secrets(struct activation *a, char *msg, size_t msg_size)
{
	_cleanup_json_ json_t *desc = a->ops->descriptor ? a->ops->descriptor(a->ops) : NULL;
	json_t *fields = json_object_get(json_object_get(desc, "settings"), "fields"), *f;
	struct backend_secrets *store = NULL;
	struct backend_ref ref;
	size_t i;
	int r;

	a->secrets = json_object();
	if (!a->secrets)
		return -ENOMEM;
	if (backend_ref_parse(a->ref, &ref) < 0)
		return -EINVAL;
	json_array_foreach(fields, i, f) {
		const char *id = json_string_value(json_object_get(f, "id"));
		struct field_error fe = { 0 };
		_cleanup_secret_ char *value = NULL;

		if (!streq_ptr(json_string_value(json_object_get(f, "type")), "secret") || !id)
			continue;
		if (!store && controller_secrets(a->ctl, &store) < 0)
			store = NULL;
		if (!store || !backend_secrets_configured(store, &ref, id))
			continue;
		r = backend_secrets_resolve(store, &ref, id, &value, &fe);
		if (r < 0) {
			/* fe names the reference and field only, never a value. */
			(void)snprintf(msg, msg_size, "cannot resolve the secret \"%s\": %s", id,
				       fe.reason);
			return r;
		}
		if (json_object_set_new(a->secrets, id, json_string(value)) < 0)
			return -ENOMEM;
	}
	return 0;
}

struct slot_waiter {
	struct slot_waiter *next;
	backend_await_cb cb;
	void *ud;
};

/* Answer those waiting for an active instance, in arrival order: 0 when there is one, else r and
 * message. A callback may wait again: it waits for the next activation. */
static void slot_waiters_answer(struct controller *c, int r, const char *message)
{
	struct slot_waiter *list = TAKE_PTR(c->slot_waiters);

	while (list) {
		struct slot_waiter *w = list;

		list = w->next;
		w->cb(c, c->active ? 0 : r, c->active ? NULL : message, w->ud);
		free(w);
	}
}

static void activation_finish(struct activation *a, int r, const char *message)
{
	struct controller *c = a->ctl;
	char msg[1024];

	(void)snprintf(msg, sizeof(msg), "%s", message ? message : "");
	controller_event(c, "activation",
			 json_pack("{s:s,s:s?,s:b,s:s,s:s}", "backend", a->ref, "launcher",
				   a->bi && r >= 0 ? a->bi->name : NULL, "ok", r >= 0, "step",
				   step_names[a->step], "message", msg));
	if (r < 0 && a->bi) {
		/* Steps 1–6 failed: the candidate never served; it goes away now. */
		backend_instance_unref(TAKE_PTR(a->bi));
	}
	if (a->done)
		a->done(c, r, step_names[a->step], msg, a->bi ? a->bi->name : NULL, a->ud);
	json_decref(a->settings);
	secrets_wipe(&a->secrets);

	/* Serialized: start the next queued activation. */
	c->activations = a->next;
	free(a);
	/* Those waiting for an active instance are answered once there is one, or once no
	 * activation is left that could make one. */
	if (c->slot_waiters && (c->active || !c->activations))
		slot_waiters_answer(c, r < 0 ? r : -ENODEV, r < 0 ? msg : "no launcher is active");
	if (c->activations)
		activation_run(c->activations);
}

static void step_done(struct backend_instance *bi, int r, const char *message, void *ud)
{
	struct activation *a = ud;

	if (r < 0) {
		activation_finish(a, r, message ? message : strerror(-r));
		return;
	}
	activation_run(a);
}

/* Step 6 done: on failure the runtime swaps back (processes spawned meanwhile stay with the
 * instance that made them). */
static void persisted(struct controller *c, int r, void *ud)
{
	struct activation *a = ud;

	if (c->active != a->bi) {
		/* Its launcher was lost while the selection was being saved (controller_backend_lost()
		 * left the instance to us). Not saved: the previous instance serves again; saved:
		 * builtin:auto comes next, as after any loss (queued behind us, so that those waiting
		 * for an instance go on waiting). */
		if (r < 0 && a->old)
			c->active = TAKE_PTR(a->old);
		else {
			backend_instance_unref(TAKE_PTR(a->old));
			if (!c->host.exiting)
				(void)controller_backend_activate(
					c, BACKEND_FALLBACK_REF, NULL,
					c->slot_persist ? 0 : ACTIVATE_NO_PERSIST, NULL, NULL);
		}
		activation_finish(a, -ECONNRESET, "the launcher was lost during the activation");
		return;
	}
	if (r < 0) {
		c->active = a->old;
		a->old = NULL;
		activation_finish(a, r,
				  "cannot save the selection; the previous backend stays active");
		return;
	}
	activation_run(a);
}

static void activation_run(struct activation *a)
{
	struct controller *c = a->ctl;
	int r;

	a->step++;
	switch (a->step) {
	case STEP_VALIDATE:
		/* A pack may have been disabled or removed while this activation was queued. */
		if (controller_backend_find(c, a->ref) != a->ops) {
			activation_finish(a, -ENOENT,
					  "the backend is no longer available (its pack was "
					  "disabled, removed or reinstalled)");
			return;
		}
		r = controller_backend_validate_settings(c, a->ops, a->ref, a->settings, NULL);
		if (r < 0) {
			activation_finish(a, r, "the settings do not fit the backend's descriptor");
			return;
		}
		activation_run(a);
		return;
	case STEP_RESOLVE_SECRETS: { /* configure() gets them; they are wiped after */
		char msg[512] = "cannot resolve the secrets";

		r = resolve_secrets(a, msg, sizeof(msg));
		if (r < 0) {
			activation_finish(a, r, msg);
			return;
		}
		activation_run(a);
		return;
	}
	case STEP_CONFIGURE:
		r = backend_instance_new(&c->host, a->ops, &a->bi);
		if (r < 0) {
			activation_finish(a, r, "out of memory");
			return;
		}
		{
			/* configure() copies what it needs of the secrets before it returns;
			 * the activation may even finish (and a be freed) inside it. */
			json_t *secrets = TAKE_PTR(a->secrets);

			a->bi->origin_client = a->origin;
			a->ops->configure(a->bi, a->settings, secrets, step_done, a);
			secrets_wipe(&secrets);
			return;
		}
	case STEP_PREPARE:
		a->ops->prepare(a->bi, step_done, a);
		return;
	case STEP_PROBE:
		a->ops->probe(a->bi, step_done, a);
		return;
	case STEP_SWAP: /* one pointer store; the old instance keeps serving its processes */
		a->old = c->active;
		c->active = a->bi;
		if (a->bi->ops->hello && a->bi->ops->hello(a->bi)) {
			json_decref(c->confined_hello);
			c->confined_hello = json_incref(a->bi->ops->hello(a->bi));
		}
		activation_run(a);
		return;
	case STEP_PERSIST: /* on failure swap back */
		if (!a->persist) {
			activation_run(a);
			return;
		}
		r = controller_backend_persist(c, a->ref, a->settings, persisted, a);
		if (r < 0)
			persisted(c, r, a);
		return;
	case STEP_DISPOSE: /* the previous instance goes once its last process ends */
		a->bi->origin_client = 0;
		if (a->old)
			backend_instance_unref(TAKE_PTR(a->old));
		log_info("activated %s", a->bi->name);
		activation_finish(a, 0, NULL);
		return;
	case STEP_QUEUED:
	case _STEP_MAX:
		break;
	}
	activation_finish(a, -EINVAL, "internal error: unknown activation step");
}

int controller_backend_activate(struct controller *c, const char *ref, json_t *settings,
				unsigned flags, activation_done_cb done, void *ud)
{
	return controller_backend_activate_for(c, 0, ref, settings, flags, done, ud);
}

int controller_backend_activate_for(struct controller *c, uint64_t origin_client, const char *ref,
				    json_t *settings, unsigned flags, activation_done_cb done,
				    void *ud)
{
	bool explicit_request = flags & ACTIVATE_EXPLICIT;
	const struct backend_ops *ops = controller_backend_find(c, ref);
	struct activation *a, **tail;

	if (!ops)
		return -ENOENT;
	/* Never unconfined by accident: host only by an explicit request, and only if the floor of
	 * the running launcher allows host mode. */
	if (!ops->confined) {
		/* The floor of the OS launcher (an unconfined instance has none of its own: the
		 * floor it was allowed by is the one to hold a re-activation against). */
		json_t *hello = controller_launcher_hello(c);
		json_t *floor = json_object_get(hello ? hello : c->confined_hello, "floor");

		if (!explicit_request)
			return -EPERM;
		if (!json_is_true(json_object_get(floor, "hostMode")))
			return -EACCES;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->ctl = c;
	a->ops = ops;
	(void)snprintf(a->ref, sizeof(a->ref), "%s", ref);
	a->settings = settings ? json_incref(settings) : json_object();
	a->done = done;
	a->ud = ud;
	a->origin = origin_client;
	a->persist = !(flags & ACTIVATE_NO_PERSIST);
	for (tail = &c->activations; *tail; tail = &(*tail)->next)
		;
	*tail = a;
	if (c->activations == a)
		activation_run(a);
	return 0;
}

bool controller_backend_pack_in_use(struct controller *c, const char *pack_id)
{
	if (c->active && streq_ptr(c->active->ops->pack_id, pack_id))
		return true;
	for (struct activation *a = c->activations; a; a = a->next)
		if (streq_ptr(a->ops->pack_id, pack_id))
			return true;
	return false;
}

/* Activate builtin:auto unless an activation is already under way. A lost builtin:auto comes
 * back as itself: the saved selection does not change; a lost pack backend gives way to
 * builtin:auto, which is saved (PROTOCOL.md §6.2). */
static int slot_reestablish(struct controller *c)
{
	if (c->activations || c->host.exiting)
		return 0;
	return controller_backend_activate(c, BACKEND_FALLBACK_REF, NULL,
					   c->slot_persist ? 0 : ACTIVATE_NO_PERSIST, NULL, NULL);
}

void controller_backend_lost(struct controller *c, struct backend_instance *bi)
{
	if (c->active == bi && !c->host.exiting) {
		/* Re-establish a confined launcher; spawns wait for it meanwhile. */
		c->active = NULL;
		c->slot_persist = !streq(bi->ref, BACKEND_FALLBACK_REF);
		/* Lost between its swap and the end of its activation (step 7 under way): the
		 * activation keeps its reference and finds another instance (persisted()). */
		if (c->activations && c->activations->bi == bi)
			return;
		backend_instance_unref(bi);
		(void)slot_reestablish(c);
	}
}

int controller_backend_await(struct controller *c, backend_await_cb cb, void *ud)
{
	struct slot_waiter *w, **tail;
	int r;

	if (c->active)
		return 1;
	if (c->host.exiting)
		return -ESHUTDOWN;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->cb = cb;
	w->ud = ud;
	for (tail = &c->slot_waiters; *tail; tail = &(*tail)->next)
		;
	*tail = w;
	/* Nothing under way (its last attempt failed): this request tries again. The attempt may
	 * end before this returns, w answered. */
	r = slot_reestablish(c);
	if (r < 0)
		controller_backend_await_cancel(c, ud);
	return r < 0 ? r : 0;
}

void controller_backend_await_cancel(struct controller *c, void *ud)
{
	for (struct slot_waiter **pp = &c->slot_waiters; *pp;) {
		struct slot_waiter *w = *pp;

		if (w->ud == ud) {
			*pp = w->next;
			free(w);
		} else
			pp = &w->next;
	}
}

const char *controller_launcher_name(struct controller *c)
{
	return c->active ? c->active->name : "none";
}

/* How long the controller's exit waits for instances to be disposed of (a pack answering
 * "dispose", a launcher letting go). */
#define STOP_DISPOSE_USEC (3ULL * 1000 * 1000)

void controller_backends_stop(struct controller *c)
{
	unsigned long long deadline = now_usec() + STOP_DISPOSE_USEC;

	if (c->active)
		backend_instance_unref(TAKE_PTR(c->active));
	/* Nobody is left to answer (the clients are gone). */
	while (c->slot_waiters) {
		struct slot_waiter *w = c->slot_waiters;

		c->slot_waiters = w->next;
		free(w);
	}
	/* A failed disposal waiting to be retried is tried once more now, and then given up
	 * (nothing is retried once we are exiting). */
	backend_disposals_retry_now();
	/* The main loop is over: run it for the disposals still under way, for a while. */
	while (backend_disposals_pending() && now_usec() < deadline)
		if (event_loop_run_once(c->host.loop, 50) < 0)
			break;
	backend_disposals_free();
	backend_launcher_reapers_free();
	backend_settings_store_free(TAKE_PTR(c->settings));
	json_decref(TAKE_PTR(c->confined_hello));
}

/* Start-up: the persisted selection, else (or when it cannot be established) builtin:auto. */
static void startup_done(struct controller *c, int r, const char *step, const char *message,
			 const char *name, void *ud)
{
	int *state = ud;

	*state = r < 0 ? -1 : 1;
	if (r < 0)
		log_warning("cannot activate the saved backend (%s: %s)", step, message);
}

int controller_backends_start(struct controller *c)
{
	_cleanup_free_ char *saved = NULL, *aside = NULL;
	_cleanup_json_ json_t *settings = NULL;
	struct field_error fe = { 0 };
	bool fallback_up = false;
	int state = 0, r;

	r = backend_settings_store_open(c->state_dir, &c->settings, &aside, &fe);
	if (r < 0)
		log_warning_errno(
			r,
			"cannot open the backend settings in \"%s\": %s; settings will not "
			"persist",
			c->state_dir, fe.reason);
	else if (aside)
		log_warning("the backend settings file was corrupt (%s); kept aside as \"%s\"",
			    fe.reason, aside);

	r = controller_backend_load_selection(c, &saved, &settings);
	if (r >= 0 && saved && !streq(saved, BACKEND_FALLBACK_REF)) {
		/* The OS launcher first, as in a session that selected the saved backend: one
		 * without a launcher of its own (builtin:vm) takes its capabilities from the
		 * backend active before it. Whether it comes up or not, the saved one is tried. */
		r = controller_backend_activate(c, BACKEND_FALLBACK_REF, NULL, ACTIVATE_NO_PERSIST,
						startup_done, &state);
		while (r >= 0 && state == 0)
			if (event_loop_run_once(c->host.loop, 1000) < 0)
				break;
		if (state == 1)
			fallback_up = true;
		state = 0;
		r = controller_backend_activate(c, saved, settings,
						ACTIVATE_EXPLICIT | ACTIVATE_NO_PERSIST,
						startup_done, &state);
		while (r >= 0 && state == 0)
			if (event_loop_run_once(c->host.loop, 1000) < 0)
				break;
		if (state == 1 || fallback_up)
			return 0;
	}
	state = 0;
	r = controller_backend_activate(c, BACKEND_FALLBACK_REF, NULL, ACTIVATE_NO_PERSIST,
					startup_done, &state);
	while (r >= 0 && state == 0)
		if (event_loop_run_once(c->host.loop, 1000) < 0)
			break;
	return state == 1 ? 0 : -ENODEV;
}

/* ------------------------------------------------------------------------- settings, persistence */

struct secret_query {
	struct backend_secrets *store;
	struct backend_ref ref;
};

static bool secret_is_configured(void *userdata, const char *field_id)
{
	struct secret_query *q = userdata;

	return q->store && backend_secrets_configured(q->store, &q->ref, field_id);
}

/* Step 1: the candidate settings against the backend's descriptor, through the same validation
 * packs get (backends/backend-settings.c): unknown ids, types, required fields, options. A
 * required secret must be configured in the secret store. */
int controller_backend_validate_settings(struct controller *c, const struct backend_ops *ops,
					 const char *ref, json_t *settings, struct field_error *fe)
{
	_cleanup_json_ json_t *empty = NULL;
	struct backend_descriptor *d = NULL;
	struct backend_settings_update u = { 0 };
	struct secret_query q = { 0 };
	int r;

	if (backend_ref_parse(ref, &q.ref) >= 0 && controller_secrets(c, &q.store) < 0)
		q.store = NULL;
	r = backend_ops_descriptor(ops, &d, fe);
	if (r < 0)
		return r;
	if (!settings)
		settings = empty = json_object();
	r = backend_settings_validate(d, settings, "settings", secret_is_configured, &q, &u, fe);
	if (r >= 0 && u.n_secrets > 0)
		/* Secret values change only through secret.set (and secret-input interactions),
		 * never through settings, which are persisted in the clear. */
		r = field_error_set(fe, -EINVAL, "settings", u.secrets[0].field->id,
				    "a secret is set with secret.set (cordon secret set), not "
				    "in settings; an empty value means no change");
	backend_settings_update_done(&u);
	backend_descriptor_free(d);
	return r;
}

/*
 * Step 6: the selection and the candidate's settings, committed together by one atomic replace
 * of active.json (backend-settings.h), written on the writer thread. Only once that write
 * succeeded are the settings copied into settings.json under the source-qualified key; when it
 * fails nothing on disk or in the store has changed. A crash between the two is repaired at
 * start-up (controller_backend_load_selection()): active.json's settings win. builtin:host is
 * written only because it was explicitly activated; reading it back never yields it.
 */
struct persist_req {
	uint64_t generation;
	struct backend_ref ref;
	json_t *settings;
	controller_write_cb cb;
	void *ud;
};

static void persist_done(struct controller *c, int r, void *ud)
{
	struct persist_req *p = ud;

	if (r < 0)
		log_warning_errno(r, "cannot save the active selection: %m");
	else {
		struct field_error fe = { 0 };
		int q;

		c->generation = p->generation;
		/* Committed: a failure here only delays settings.json (active.json has them). */
		q = c->settings
			    ? backend_settings_store_commit(c->settings, &p->ref, p->settings, &fe)
			    : 0;
		if (q < 0)
			log_warning_errno(q,
					  "cannot copy the saved settings into settings.json "
					  "(kept with the selection): %s",
					  fe.reason);
	}
	p->cb(c, r, p->ud);
	json_decref(p->settings);
	free(p);
}

int controller_backend_persist(struct controller *c, const char *ref, json_t *settings,
			       controller_write_cb cb, void *ud)
{
	struct backend_active a = { 0 };
	struct persist_req *p;
	char *path = NULL, *text = NULL;
	size_t len;
	int r;

	if (!c->settings)
		return -ENODEV;
	r = backend_ref_parse(ref, &a.ref);
	if (r < 0)
		return r;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->settings = settings ? json_deep_copy(settings) : json_object();
	if (!p->settings) {
		free(p);
		return -ENOMEM;
	}
	a.generation = c->generation + 1;
	a.settings = p->settings;
	r = backend_active_text(c->settings, &a, true, &path, &text, &len);
	if (r < 0) {
		json_decref(p->settings);
		free(p);
		return r;
	}
	p->generation = a.generation;
	p->ref = a.ref;
	p->cb = cb;
	p->ud = ud;
	/* The selection changes with every activation: written on a thread, the loop goes on
	 * serving spawns. */
	r = controller_write_file_async(c, path, text, len, persist_done, p);
	if (r < 0) {
		json_decref(p->settings);
		free(p);
	}
	return r;
}

int controller_backend_load_selection(struct controller *c, char **ret_ref, json_t **ret_settings)
{
	_cleanup_json_ json_t *committed = NULL;
	struct backend_active a = { 0 };
	struct field_error fe = { 0 };
	char text[BACKEND_REF_TEXT_MAX];
	int r;

	*ret_ref = NULL;
	*ret_settings = NULL;
	if (!c->settings)
		return 0;
	/* Never unconfined from disk: a saved builtin:host reads back as builtin:auto. */
	r = backend_active_load(c->settings, false, &a, &fe);
	if (r < 0)
		return r;
	committed = TAKE_PTR(a.settings);
	if (r == BACKEND_ACTIVE_FALLBACK)
		log_warning("the saved selection is unusable (%s); using builtin:auto", fe.reason);
	c->generation = a.generation;
	r = backend_ref_format(&a.ref, text, sizeof(text));
	if (r < 0)
		return r;
	/* The settings committed with the selection win: a crash (or a failed write) after
	 * active.json was replaced left settings.json behind. */
	if (committed) {
		r = backend_settings_store_commit(c->settings, &a.ref, committed, &fe);
		if (r == 0)
			log_info("the settings of %s saved with the selection were copied into "
				 "settings.json",
				 text);
		else if (r < 0)
			log_warning_errno(r,
					  "cannot copy the settings of %s into settings.json: %s",
					  text, fe.reason);
	}
	*ret_ref = strdup(text);
	if (!*ret_ref)
		return -ENOMEM;
	(void)backend_settings_store_get(c->settings, &a.ref, ret_settings);
	return 0;
}

/* ------------------------------------------------------------------------- client methods */

int method_backend_list(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	struct controller *c = cl->ctl;
	const struct backend_ops *all[256];
	size_t n_all = controller_backends_list(c, all, ELEMENTSOF(all));
	json_t *list = json_array();

	for (size_t i = 0; i < n_all; i++) {
		const struct backend_ops *ops = all[i];
		char ref[160];
		bool active;

		(void)backend_ops_ref(ops, ref, sizeof(ref));
		active = c->active && streq(c->active->ref, ref);
		json_array_append_new(list, json_pack("{s:s,s:{s:s,s:s,s:s*},s:o,s:b,s:b,s:s?}",
						      "ref", ref, "backend", "source", ops->source,
						      "kind", ops->kind, "packId", ops->pack_id,
						      "descriptor", ops->descriptor(ops),
						      "confined", ops->confined, "active", active,
						      "launcher", active ? c->active->name : NULL));
	}
	return client_reply(cl, id,
			    json_pack("{s:o,s:s?}", "backends", list, "active",
				      c->active ? c->active->ref : NULL));
}

struct activate_req {
	uint64_t client; /* struct client.id: found again by id, never by address */
	json_t *id;
};

static void activate_done(struct controller *c, int r, const char *step, const char *message,
			  const char *launcher, void *ud)
{
	struct activate_req *ar = ud;
	/* The requester may have gone while the activation ran (and another client may have
	 * come at the same address). */
	struct client *cl = controller_client_find(c, ar->client);

	if (cl) {
		if (r >= 0)
			(void)client_reply(cl, ar->id,
					   json_pack("{s:s,s:s}", "active", c->active->ref,
						     "launcher", launcher));
		else
			(void)client_reply_error(cl, ar->id, CORDON_ERR_BACKEND, message,
						 json_pack("{s:s,s:s}", "step", step, "errno",
							   strerror(-r)));
	}
	json_decref(ar->id);
	free(ar);
}

int method_backend_activate(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "backend", "settings", NULL };
	struct field_error fe = { 0 };
	struct activate_req *ar;
	char ref[BACKEND_REF_TEXT_MAX];
	const char *key;
	json_t *given = NULL, *v;
	_cleanup_json_ json_t *settings = NULL;
	struct backend_ref bref;
	int r;

	if (ipc_json_check_keys(params, keys, "params", &fe) < 0 ||
	    controller_backend_ref_param(params, &bref, ref, sizeof(ref), &fe) < 0 ||
	    ipc_json_get_object(params, "settings", false, "params", &given, &fe) < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	if (!controller_backend_find(cl->ctl, ref))
		return client_reply_error(cl, id, CORDON_ERR_NOT_FOUND, "no such backend",
					  json_pack("{s:s}", "backend", ref));
	/* The candidate: the stored settings with the given ones on top (null: back to the
	 * default), so an activation without settings keeps what was saved — also what a
	 * reinstalled pack gets back. */
	if (cl->ctl->settings)
		(void)backend_settings_store_get(cl->ctl->settings, &bref, &settings);
	if (!settings)
		settings = json_object();
	if (!settings)
		return -ENOMEM;
	json_object_foreach(given, key, v)
		if (json_is_null(v))
			(void)json_object_del(settings, key);
		else
			(void)json_object_set(settings, key, v);
	r = controller_backend_validate_settings(cl->ctl, controller_backend_find(cl->ctl, ref),
						 ref, settings, &fe);
	if (r < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	ar = calloc(1, sizeof(*ar));
	if (!ar)
		return -ENOMEM;
	ar->client = cl->id;
	ar->id = json_incref(id);
	r = controller_backend_activate_for(cl->ctl, cl->id, ref, settings, ACTIVATE_EXPLICIT,
					    activate_done, ar);
	if (r < 0) {
		json_decref(ar->id);
		free(ar);
		if (r == -EPERM || r == -EACCES)
			return client_reply_error(cl, id, CORDON_ERR_POLICY_REFUSED,
						  "the unconfined host backend is not allowed here "
						  "(the admin floor forbids host mode)",
						  json_pack("{s:s}", "backend", ref));
		return client_reply_error(cl, id, CORDON_ERR_BACKEND, strerror(-r), NULL);
	}
	return 0;
}
