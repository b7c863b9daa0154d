/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * builtin:test — a provider of its own, linked only into the test build of the controller
 * (tests/helpers/cordon-controller-test), never into cordon-controller. A descriptor with one
 * field of every type, so the settings and secret methods can be exercised without a pack:
 *   region (string, required, no default), count (number, default 1), verbose (boolean),
 *   mode (select fast|safe, default fast), apiKey (secret), failConfigure (boolean: configure
 *   fails, to show that a bad settings change of the active backend changes nothing),
 *   interaction (select none|confirm|input|secret-input|choice: configure asks the client that
 *   started the activation, and fails unless it gets an answer — a declined confirm too; the
 *   answer of input and choice is reported as a "test-interaction" event).
 * It runs nothing: spawns fail with EOPNOTSUPP.
 *
 * The test build's methods too: test.interaction (ask the calling client, report how it ended)
 * and test.fail (a handler failing without a reply).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "backends/backend-descriptor.h"
#include "backends/backend.h"
#include "controller/controller-interaction.h"
#include "controller/controller.h"

static json_t *test_descriptor(const struct backend_ops *ops)
{
	return json_pack("{s:s,s:s,s:s,s:{s:[{s:s,s:s,s:s,s:b},{s:s,s:s,s:s,s:i},"
			 "{s:s,s:s,s:s,s:b},{s:s,s:s,s:s,s:s,s:[s,s]},{s:s,s:s,s:s},"
			 "{s:s,s:s,s:s,s:b},{s:s,s:s,s:s,s:s,s:[s,s,s,s,s]}]},"
			 "s:{s:[s],s:s,s:[]}}",
			 "kind", "test", "name", "Test backend", "description",
			 "Settings of every type, for the test suite only.", "settings", "fields",
			 "id", "region", "type", "string", "label", "Region", "required", true,
			 "id", "count", "type", "number", "label", "Count", "defaultValue", 1, "id",
			 "verbose", "type", "boolean", "label", "Verbose", "defaultValue", false,
			 "id", "mode", "type", "select", "label", "Mode", "defaultValue", "fast",
			 "options", "fast", "safe", "id", "apiKey", "type", "secret", "label",
			 "API key", "id", "failConfigure", "type", "boolean", "label",
			 "Fail at configure", "defaultValue", false, "id", "interaction", "type",
			 "select", "label", "Ask at configure", "defaultValue", "none", "options",
			 "none", "confirm", "input", "secret-input", "choice", "claims",
			 "platforms", "linux", "isolation", "namespace", "enforces");
}

struct test_ask {
	struct backend_instance *bi;
	char kind[16];
	backend_done_cb done;
	void *ud;
};

static void test_answered(int r, json_t *answer, void *ud)
{
	struct test_ask *ta = ud;
	json_t *v = json_object_get(answer, "value");

	if (r >= 0 && streq(ta->kind, "confirm") && !json_is_true(v))
		r = -ECANCELED;
	if (r >= 0 && (streq(ta->kind, "input") || streq(ta->kind, "choice")))
		ta->bi->host->event(ta->bi->host, "test-interaction",
				    json_pack("{s:s,s:O}", "kind", ta->kind, "value", v));
	ta->done(ta->bi, r, r < 0 ? strerror(-r) : NULL, ta->ud);
	free(ta);
}

static void test_configure(struct backend_instance *bi, json_t *settings, json_t *secrets,
			   backend_done_cb done, void *ud)
{
	const char *kind = json_string_value(json_object_get(settings, "interaction"));
	_cleanup_json_ json_t *params = NULL;
	struct test_ask *ta;
	int r;

	if (json_is_true(json_object_get(settings, "failConfigure"))) {
		done(bi, -EINVAL, "failConfigure is set", ud);
		return;
	}
	if (!kind || streq(kind, "none")) {
		done(bi, 0, NULL, ud);
		return;
	}
	params = streq(kind, "choice")
			 ? json_pack("{s:s,s:[{s:s,s:s},{s:s,s:s}]}", "prompt", "Pick a flavour",
				     "options", "value", "plain", "label", "Plain", "value",
				     "spicy", "label", "Spicy")
		 : streq(kind, "secret-input")
			 ? json_pack("{s:s,s:s,s:s}", "prompt", "API key for the test backend",
				     "backend", bi->ref, "field", "apiKey")
		 : streq(kind, "confirm") ? json_pack("{s:s}", "prompt", "Install the test tools?")
					  : json_pack("{s:s}", "prompt", "Your name");
	ta = calloc(1, sizeof(*ta));
	if (!ta || !params) {
		free(ta);
		done(bi, -ENOMEM, NULL, ud);
		return;
	}
	ta->bi = bi;
	(void)snprintf(ta->kind, sizeof(ta->kind), "%s", kind);
	ta->done = done;
	ta->ud = ud;
	r = bi->host->ask(bi->host, bi->origin_client, kind, params, 20000, test_answered, ta);
	if (r < 0) {
		free(ta);
		done(bi, r, "cannot ask the client", ud);
	}
}

static void test_step(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	done(bi, 0, NULL, ud);
}

static int test_spawn(struct backend_instance *bi, const struct backend_spawn *req,
		      backend_spawn_cb cb, void *ud)
{
	return -EOPNOTSUPP;
}

static int test_kill(struct backend_instance *bi, const char *sandbox, int sig)
{
	return -ESRCH;
}

static int test_dispose(struct backend_instance *bi)
{
	return 0;
}

static void test_free(struct backend_instance *bi)
{
}

static const struct backend_ops backend_test_ops = {
	.source = "builtin",
	.kind = "test",
	.confined = true,
	.descriptor = test_descriptor,
	.configure = test_configure,
	.prepare = test_step,
	.probe = test_step,
	.hello = NULL,
	.spawn = test_spawn,
	.kill = test_kill,
	.dispose = test_dispose,
	.free = test_free,
};

static const struct backend_ops *test_find(const struct backend_provider *p,
					   const struct backend_ref *ref)
{
	return ref->source == BACKEND_SOURCE_BUILTIN && streq(ref->kind, "test") ? &backend_test_ops
										 : NULL;
}

static size_t test_list(const struct backend_provider *p, const struct backend_ops **out,
			size_t max)
{
	/* Not listed: found by its reference only, as before. */
	return 0;
}

static const struct backend_provider test_provider = {
	.source = "builtin",
	.find = test_find,
	.list = test_list,
};

/* ------------------------------------------------------------------------- test methods */

/*
 * test.interaction (only in the test build of the controller, tests/helpers/): ask the calling
 * client itself; the reply says how the interaction ended. For secret-input the answer is
 * reported without its value.
 */
struct test_req {
	struct controller *ctl;
	uint64_t client_id;
	json_t *id;
};

static void test_done(int r, json_t *answer, void *ud)
{
	struct test_req *tr = ud;
	struct client *cl = controller_client_find(tr->ctl, tr->client_id);
	_cleanup_json_ json_t *shown = answer ? json_deep_copy(answer) : NULL;

	if (shown && json_object_get(shown, "configured"))
		(void)json_object_del(shown, "value"); /* secret-input: never shown */
	if (cl)
		(void)client_reply(cl, tr->id,
				   json_pack("{s:i,s:s,s:O?,s:O?}", "r", r, "error",
					     r < 0 ? strerror(-r) : "", "answer", shown, "value",
					     answer && !json_object_get(answer, "configured")
						     ? json_object_get(answer, "value")
						     : NULL));
	json_decref(tr->id);
	free(tr);
}

static int method_test_interaction(struct client *cl, json_t *id, json_t *params, int *fds,
				   size_t n)
{
	_cleanup_json_ json_t *p = json_deep_copy(params);
	struct test_req *tr;
	const char *kind = json_string_value(json_object_get(params, "kind"));
	unsigned timeout = (unsigned)json_integer_value(json_object_get(params, "timeoutMs"));
	uint64_t target = cl->id;
	int r;

	if (!p)
		return -ENOMEM;
	if (json_is_integer(json_object_get(params, "clientOffset")))
		target += (uint64_t)json_integer_value(json_object_get(params, "clientOffset"));
	(void)json_object_del(p, "kind");
	(void)json_object_del(p, "timeoutMs");
	(void)json_object_del(p, "clientOffset");
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	tr->ctl = cl->ctl;
	tr->client_id = cl->id;
	tr->id = json_incref(id);
	r = controller_interaction_ask(cl->ctl, target, kind, p, timeout, test_done, tr);
	if (r < 0) {
		json_decref(tr->id);
		free(tr);
		return client_reply(cl, id,
				    json_pack("{s:i,s:s,s:b}", "r", r, "error", strerror(-r),
					      "refused", true));
	}
	return 0;
}

/* test.fail: fails with -ENOMEM without replying, as a handler out of memory would; the
 * dispatcher must answer for it. */
static int method_test_fail(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	return -ENOMEM;
}

/* What the test build adds, instead of controller/controller-providers.c's empty lists. */
const struct backend_provider *const controller_extra_providers[] = { &test_provider, NULL };
const struct controller_method controller_extra_methods[] = {
	{ "test.interaction", method_test_interaction },
	{ "test.fail", method_test_fail },
	{},
};
