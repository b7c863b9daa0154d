/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The table of acquired sandboxes: found by id, their effective policy for the requests made in
 * them. The leases themselves (acquire, setup, release) are controller-lease.c's.
 */
#include "config.h"

#include "common/util.h"
#include "controller/controller-sandbox.h"
#include "controller/controller.h"

struct sandbox *sandbox_find(struct controller *c, const char *id)
{
	for (struct sandbox *s = c->sandboxes; s; s = s->next)
		if (streq(s->id, id))
			return s;
	return NULL;
}

json_t *controller_sandbox_policy_doc(struct controller *c, const char *id)
{
	struct sandbox *s = sandbox_find(c, id);

	return s && s->ready ? s->doc : NULL;
}

const struct policy *controller_sandbox_policy(struct controller *c, const char *id)
{
	struct sandbox *s = sandbox_find(c, id);

	return s && s->ready ? s->policy : NULL;
}

struct backend_instance *controller_sandbox_instance(struct controller *c, const char *id)
{
	struct sandbox *s = sandbox_find(c, id);

	return s && !s->releasing ? s->bi : NULL;
}

const char *controller_sandbox_mount_point(struct controller *c, const char *id)
{
	struct sandbox *s = sandbox_find(c, id);

	return s ? s->mount_point : NULL;
}

const char *controller_sandbox_lease(struct controller *c, const char *id)
{
	struct sandbox *s = sandbox_find(c, id);

	/* Bounded: a parent is acquired before its children, so the chain ends. */
	for (unsigned depth = 0; s && s->parent && depth < 64; depth++) {
		struct sandbox *up = sandbox_find(c, s->parent);

		if (!up)
			break;
		s = up;
	}
	return s ? s->id : id;
}
