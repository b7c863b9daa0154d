/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The provider of source "builtin": builtin:auto and builtin:host. */
#include "config.h"

#include "backends/backend-descriptor.h"
#include "backends/backend.h"
#include "backends/vm/vm.h"
#include "common/util.h"

static const struct backend_ops *const builtins[] = { &backend_auto_ops, &backend_host_ops,
						      &backend_vm_ops };

static const struct backend_ops *builtin_find(const struct backend_provider *p,
					      const struct backend_ref *ref)
{
	if (ref->source != BACKEND_SOURCE_BUILTIN)
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(builtins); i++)
		if (streq(builtins[i]->kind, ref->kind))
			return builtins[i];
	return NULL;
}

static size_t builtin_list(const struct backend_provider *p, const struct backend_ops **out,
			   size_t max)
{
	size_t n = 0;

	for (; n < ELEMENTSOF(builtins) && n < max; n++)
		out[n] = builtins[n];
	return n;
}

const struct backend_provider backend_builtin_provider = {
	.source = "builtin",
	.find = builtin_find,
	.list = builtin_list,
};
