/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The provider of source "pack": pack:<id>:<kind> for every backend of an enabled, installed
 * pack. The ops of a pack's backend are made once per install (generation) and kept for as long
 * as the provider lives, so an instance made from an older install keeps valid ops.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "backends/pack/pack.h"
#include "common/util.h"

static const struct backend_ops *pack_ops(struct pack_provider *pp, const struct pack_entry *e,
					  const struct pack_backend_entry *be)
{
	struct pack_backend *pb;

	for (pb = pp->backends; pb; pb = pb->next)
		if (pb->generation == e->generation && streq(pb->pack_id, e->manifest->id) &&
		    streq(pb->kind, be->kind))
			return &pb->ops;
	if (pack_backend_new(pp, e, be, &pb) < 0)
		return NULL;
	pb->next = pp->backends;
	pp->backends = pb;
	return &pb->ops;
}

static const struct backend_ops *provider_find(const struct backend_provider *p,
					       const struct backend_ref *ref)
{
	struct pack_provider *pp = (struct pack_provider *)p;
	const struct pack_backend_entry *be;
	struct pack_entry *e;

	if (ref->source != BACKEND_SOURCE_PACK)
		return NULL;
	e = pack_store_find(pp->store, ref->pack_id);
	if (!e || !e->enabled)
		return NULL;
	be = pack_manifest_backend(e->manifest, ref->kind);
	return be ? pack_ops(pp, e, be) : NULL;
}

static size_t provider_list(const struct backend_provider *p, const struct backend_ops **out,
			    size_t max)
{
	struct pack_provider *pp = (struct pack_provider *)p;
	size_t n = 0;

	for (struct pack_entry *e = pack_store_first(pp->store); e; e = e->next) {
		if (!e->enabled)
			continue;
		for (size_t i = 0; i < e->manifest->n_backends && n < max; i++) {
			const struct backend_ops *ops = pack_ops(pp, e, &e->manifest->backends[i]);

			if (ops)
				out[n++] = ops;
		}
	}
	return n;
}

int pack_provider_open(const char *state_dir, struct pack_provider **ret, struct field_error *fe)
{
	struct pack_provider *pp = calloc(1, sizeof(*pp));
	int r;

	if (!pp)
		return -ENOMEM;
	pp->provider = (struct backend_provider){
		.source = "pack",
		.find = provider_find,
		.list = provider_list,
	};
	r = pack_store_open(state_dir, &pp->store, fe);
	if (r < 0) {
		free(pp);
		return r;
	}
	*ret = pp;
	return 0;
}

void pack_provider_free(struct pack_provider *pp)
{
	if (!pp)
		return;
	while (pp->backends) {
		struct pack_backend *pb = pp->backends;

		pp->backends = pb->next;
		pack_backend_free(pb);
	}
	pack_store_free(pp->store);
	free(pp);
}
