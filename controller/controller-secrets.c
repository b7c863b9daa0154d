/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The user's secret store in the controller: opened on first use in the state directory, its
 * key wiped at exit; which settings of a backend are secrets; the settings.changed event of a
 * secret change (field ids and what happened, never a value).
 */
#include "config.h"

#include <errno.h>

#include "backends/backend-descriptor.h"
#include "backends/backend-secrets.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/util.h"
#include "controller/controller.h"

int controller_secrets(struct controller *c, struct backend_secrets **ret)
{
	_cleanup_free_ char *aside = NULL;
	struct field_error fe = { 0 };
	int r;

	if (!c->secrets) {
		if (!c->state_dir)
			return -ENODEV;
		r = backend_secrets_open(c->state_dir, &c->secrets, &aside, &fe);
		if (r < 0)
			return log_warning_errno(r, "cannot open the secret store in \"%s\": %s",
						 c->state_dir, fe.reason);
		if (aside)
			log_warning("the secret store was corrupt (%s); kept aside as \"%s\"",
				    fe.reason, aside);
	}
	*ret = c->secrets;
	return 0;
}

void controller_secrets_close(struct controller *c)
{
	backend_secrets_free(c->secrets); /* wipes the key */
	c->secrets = NULL;
}

int controller_backend_secret_field(struct controller *c, const char *ref, const char *field,
				    struct field_error *fe)
{
	_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL;
	const struct backend_field *f;
	struct backend_ref r_;
	int r;

	r = controller_backend_lookup(c, ref, &r_, &d, fe);
	if (r < 0)
		return r;
	f = backend_descriptor_field(d, field);
	if (!f)
		return field_error_set(fe, -EINVAL, "params.field", NULL,
				       "the backend has no setting \"%s\"",
				       backend_field_id_is_valid(field) ? field : "?");
	if (f->type != BACKEND_FIELD_SECRET)
		return field_error_set(fe, -EINVAL, "params.field", NULL,
				       "\"%s\" is a %s setting, not a secret "
				       "(use cordon backend settings --set)",
				       field, backend_field_type_to_string(f->type));
	return 0;
}

void controller_secret_event(struct controller *c, const char *ref, const char *field,
			     const char *action, bool changed)
{
	controller_event(c, "settings.changed",
			 json_pack("{s:s,s:[s],s:b,s:s,s:b}", "backend", ref, "fields", field,
				   "secret", true, "action", action, "changed", changed));
}
