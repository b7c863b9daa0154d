/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The core as backends see it (struct backend_host): the upcalls that route a backend's
 * reports and requests into the core, and the providers the core finds backends through.
 */
#include "config.h"

#include "controller/controller-interaction.h"
#include "controller/controller.h"

/* ------------------------------------------------------------------------- upcalls */

/* What backends may ask of the core (struct backend_host). */
static void up_exited(struct backend_host *h, struct backend_instance *bi, const char *sandbox,
		      json_t *exit)
{
	controller_process_exited_on(controller_of(h), bi, sandbox, exit);
}

static void up_lost(struct backend_host *h, struct backend_instance *bi)
{
	struct controller *c = controller_of(h);

	controller_event(c, "backend-lost", json_pack("{s:s}", "launcher", bi->name));
	controller_processes_instance_lost(c, bi);
	controller_backend_lost(c, bi);
}

static void up_event(struct backend_host *h, const char *type, json_t *fields)
{
	controller_event(controller_of(h), type, fields);
}

static int up_ask(struct backend_host *h, uint64_t origin, const char *kind, json_t *params,
		  unsigned timeout_ms, void (*cb)(int r, json_t *answer, void *ud), void *ud)
{
	return controller_interaction_ask(controller_of(h), origin, kind, params, timeout_ms, cb,
					  ud);
}

static int up_compile(struct backend_host *h, json_t *patch, char **argv, char **envp,
		      const char *cwd, json_t *hello, struct compiled_plan **ret,
		      struct field_error *fe)
{
	return controller_compile_default(controller_of(h), patch, argv, envp, cwd, hello, ret, fe);
}

static json_t *up_launcher_hello(struct backend_host *h)
{
	return controller_launcher_hello(controller_of(h));
}

/* The providers: built-ins, the packs', and what this build adds (controller-providers.c). */
int controller_providers_open(struct controller *c)
{
	int r = controller_provider_add(c, &backend_builtin_provider);

	if (r < 0)
		return r;
	/* Before the saved selection is read: it may be one of a pack's backends. */
	(void)controller_packs_open(c);
	for (size_t i = 0; controller_extra_providers[i]; i++) {
		r = controller_provider_add(c, controller_extra_providers[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

void controller_host_init(struct controller *c)
{
	c->host.exited = up_exited;
	c->host.lost = up_lost;
	c->host.event = up_event;
	c->host.ask = up_ask;
	c->host.compile = up_compile;
	c->host.launcher_hello = up_launcher_hello;
}
