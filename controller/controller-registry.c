/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The registry: the core finds backends only through its providers (one per source: builtin,
 * pack, and whatever else the build adds), never by a backend's name.
 */
#include "config.h"

#include <errno.h>

#include "backends/backend-descriptor.h"
#include "common/json-cleanup.h"
#include "common/util.h"
#include "controller/controller.h"

int controller_provider_add(struct controller *c, const struct backend_provider *p)
{
	for (size_t i = 0; i < ELEMENTSOF(c->providers) - 1; i++)
		if (!c->providers[i]) {
			c->providers[i] = p;
			return 0;
		}
	return -ENOSPC;
}

const struct backend_ops *controller_backend_find(struct controller *c, const char *ref)
{
	struct backend_ref r;
	const char *source;

	if (!ref || backend_ref_parse(ref, &r) < 0)
		return NULL;
	source = r.source == BACKEND_SOURCE_PACK ? "pack" : "builtin";
	for (size_t i = 0; c->providers[i]; i++) {
		const struct backend_ops *ops;

		if (!streq(c->providers[i]->source, source))
			continue;
		ops = c->providers[i]->find(c->providers[i], &r);
		if (ops)
			return ops;
	}
	return NULL;
}

size_t controller_backends_list(struct controller *c, const struct backend_ops **out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; c->providers[i] && n < max; i++)
		n += c->providers[i]->list(c->providers[i], out + n, max - n);
	return n;
}

/* The backend named by ref (text) and its parsed descriptor; errors name params.backend. */
int controller_backend_lookup(struct controller *c, const char *ref_text,
			      struct backend_ref *ret_ref, struct backend_descriptor **ret_d,
			      struct field_error *fe)
{
	const struct backend_ops *ops;
	int r;

	if (backend_ref_parse(ref_text, ret_ref) < 0)
		return field_error_set(fe, -EINVAL, "params.backend", NULL,
				       "not a backend reference (builtin:KIND or pack:ID:KIND)");
	ops = controller_backend_find(c, ref_text);
	if (!ops)
		return field_error_set(fe, -ENOENT, "params.backend", NULL, "no such backend");
	r = backend_ops_descriptor(ops, ret_d, fe);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return field_error_set(fe, -EINVAL, "params.backend", NULL,
				       "the backend's descriptor is invalid");
	return 0;
}
