/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Packs in the controller: the pack provider (backends/pack/: the store and the enabled packs'
 * backends) in the registry, and the pack.* methods (docs/PROTOCOL.md §4).
 *
 * Disabling or removing a pack whose backend is active — or about to be, by a queued
 * activation — first activates builtin:auto through the normal activation transaction; if that
 * fails the pack operation is refused and nothing changes. A pack's settings, secrets and
 * private state directory are never removed here: reinstalling the same id gets them back.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/util.h"
#include "backends/pack/pack.h"
#include "controller/controller.h"
#include "ipc/ipc-json.h"

int controller_packs_open(struct controller *c)
{
	struct field_error fe = { 0 };
	int r = pack_provider_open(c->state_dir, &c->packs, &fe);

	if (r < 0)
		return log_warning_errno(r, "cannot open the pack store in \"%s/packs\": %s",
					 c->state_dir, fe.reason);
	return controller_provider_add(c, &c->packs->provider);
}

void controller_packs_close(struct controller *c)
{
	pack_provider_free(TAKE_PTR(c->packs));
}

/* ------------------------------------------------------------------------- methods */

static int reply_no_store(struct client *cl, json_t *id)
{
	return client_reply_error(cl, id, CORDON_ERR_BACKEND,
				  "the pack store is not available (see the controller's log)",
				  NULL);
}

static json_t *entry_json(struct controller *c, const struct pack_entry *e)
{
	json_t *j = pack_entry_to_json(e);
	bool active = c->active && c->active->ops->pack_id &&
		      streq(c->active->ops->pack_id, e->manifest->id);

	if (j)
		(void)json_object_set_new(j, "active", json_boolean(active));
	return j;
}

int method_pack_install(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { "path", "replace", NULL };
	struct controller *c = cl->ctl;
	struct field_error fe = { 0 };
	struct pack_entry *e = NULL;
	const char *path = NULL;
	bool replace = false, replaced = false;
	int r;

	if (ipc_json_check_keys(params, keys, "params", &fe) < 0 ||
	    ipc_json_get_string(params, "path", true, "params", &path, &fe) < 0 ||
	    ipc_json_get_bool(params, "replace", false, "params", &replace, &fe) < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	if (!path_is_absolute(path)) {
		field_error_set(&fe, -EINVAL, "params", "path", "must be an absolute path");
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	}
	if (!c->packs)
		return reply_no_store(cl, id);
	r = pack_store_install(c->packs->store, path, replace, &e, &replaced, &fe);
	if (r == -ENOMEM)
		return client_reply_error(cl, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	if (r < 0) {
		/* A manifest field keeps its own path; a file or directory problem is "path". */
		char field[sizeof(fe.field)];

		if (!*fe.field) {
			(void)snprintf(field, sizeof(field), "%s", "path");
			memcpy(fe.field, field, sizeof(field));
		} else {
			(void)snprintf(field, sizeof(field), "manifest.%s", fe.field);
			memcpy(fe.field, field, sizeof(field));
		}
		if (!*fe.reason)
			(void)snprintf(fe.reason, sizeof(fe.reason), "%s", strerror(-r));
		log_info("refused to install the pack in \"%s\": %s: %s", path, fe.field,
			 fe.reason);
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	}
	log_info("installed pack %s %s from \"%s\"%s", e->manifest->id, e->manifest->version, path,
		 replaced ? " (replacing the installed one)" : "");
	controller_event(c, "pack-installed",
			 json_pack("{s:s,s:s,s:b}", "pack", e->manifest->id, "version",
				   e->manifest->version, "replaced", replaced));
	return client_reply(cl, id,
			    json_pack("{s:o,s:b}", "pack", entry_json(c, e), "replaced", replaced));
}

int method_pack_list(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	static const char *const keys[] = { NULL };
	struct controller *c = cl->ctl;
	struct field_error fe = { 0 };
	json_t *list;

	if (ipc_json_check_keys(params, keys, "params", &fe) < 0)
		return client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
	list = json_array();
	for (struct pack_entry *e = pack_store_first(c->packs ? c->packs->store : NULL); e && list;
	     e = e->next)
		json_array_append_new(list, entry_json(c, e));
	return client_reply(cl, id, json_pack("{s:o}", "packs", list));
}

/* params {"id"} → the installed entry, or an error answered here (NULL). */
static struct pack_entry *lookup(struct client *cl, json_t *id, json_t *params, const char **ret_id)
{
	static const char *const keys[] = { "id", NULL };
	struct field_error fe = { 0 };
	struct pack_entry *e;
	const char *pack = NULL;

	if (ipc_json_check_keys(params, keys, "params", &fe) < 0 ||
	    ipc_json_get_string(params, "id", true, "params", &pack, &fe) < 0) {
		(void)client_reply_field_error(cl, id, JSONRPC_INVALID_PARAMS, &fe);
		return NULL;
	}
	if (!cl->ctl->packs) {
		(void)reply_no_store(cl, id);
		return NULL;
	}
	e = pack_store_find(cl->ctl->packs->store, pack);
	if (!e) {
		(void)client_reply_error(cl, id, CORDON_ERR_NOT_FOUND, "no such pack",
					 json_pack("{s:s}", "id", pack));
		return NULL;
	}
	*ret_id = pack;
	return e;
}

int method_pack_enable(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	const char *pack = NULL;
	struct pack_entry *e = lookup(cl, id, params, &pack);
	int r;

	if (!e)
		return 0;
	r = pack_store_set_enabled(cl->ctl->packs->store, pack, true);
	if (r < 0)
		return client_reply_error(
			cl, id, CORDON_ERR_BACKEND, "cannot save the pack record; nothing changed",
			json_pack("{s:s,s:s}", "id", pack, "errno", strerror(-r)));
	controller_event(cl->ctl, "pack-enabled", json_pack("{s:s}", "pack", pack));
	return client_reply(cl, id, json_pack("{s:o}", "pack", entry_json(cl->ctl, e)));
}

struct pack_op {
	struct controller *ctl;
	uint64_t client_id;
	json_t *id;
	char pack[BACKEND_PACK_ID_MAX + 1];
	bool remove;
};

/* Disable or remove now that no backend of the pack serves or is about to. */
static void pack_op_finish(struct pack_op *op)
{
	struct controller *c = op->ctl;
	struct client *cl = controller_client_find(c, op->client_id);
	int r;

	if (!c->packs || !pack_store_find(c->packs->store, op->pack)) {
		if (cl)
			(void)client_reply_error(cl, op->id, CORDON_ERR_NOT_FOUND, "no such pack",
						 json_pack("{s:s}", "id", op->pack));
		return;
	}
	r = op->remove ? pack_store_remove(c->packs->store, op->pack)
		       : pack_store_set_enabled(c->packs->store, op->pack, false);
	if (r < 0) {
		if (cl)
			(void)client_reply_error(
				cl, op->id, CORDON_ERR_BACKEND,
				op->remove ? "cannot remove the pack; it stays installed"
					   : "cannot save the pack record; it stays enabled",
				json_pack("{s:s,s:s}", "id", op->pack, "errno", strerror(-r)));
		return;
	}
	log_info("%s pack %s", op->remove ? "removed" : "disabled", op->pack);
	controller_event(c, op->remove ? "pack-removed" : "pack-disabled",
			 json_pack("{s:s}", "pack", op->pack));
	if (cl)
		(void)client_reply(cl, op->id,
				   json_pack("{s:s,s:b,s:b,s:s}", "id", op->pack, "removed",
					     op->remove, "enabled", false, "active",
					     controller_launcher_name(c)));
}

static void pack_op_free(struct pack_op *op)
{
	json_decref(op->id);
	free(op);
}

static void fallback_done(struct controller *c, int r, const char *step, const char *message,
			  const char *launcher, void *ud)
{
	struct pack_op *op = ud;
	struct client *cl = controller_client_find(c, op->client_id);

	if (r < 0) {
		log_warning(
			"refusing to %s pack %s: the safe fallback builtin:auto failed (%s: %s)",
			op->remove ? "remove" : "disable", op->pack, step, message);
		if (cl)
			(void)client_reply_error(
				cl, op->id, CORDON_ERR_BACKEND,
				"the pack owns the active backend and builtin:auto could not be "
				"activated in its place; the pack stays as it was",
				json_pack("{s:s,s:s,s:s}", "id", op->pack, "step", step, "reason",
					  message));
	} else
		pack_op_finish(op);
	pack_op_free(op);
}

static int pack_disable_or_remove(struct client *cl, json_t *id, json_t *params, bool remove)
{
	const char *pack = NULL;
	struct pack_entry *e = lookup(cl, id, params, &pack);
	struct pack_op *op;
	int r;

	if (!e)
		return 0;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	op->ctl = cl->ctl;
	op->client_id = cl->id;
	op->id = json_incref(id);
	op->remove = remove;
	(void)snprintf(op->pack, sizeof(op->pack), "%s", pack);
	if (!controller_backend_pack_in_use(cl->ctl, pack)) {
		pack_op_finish(op);
		pack_op_free(op);
		return 0;
	}
	/* The safe fallback first, through the activation queue (after whatever activation of
	 * the pack is running or queued). */
	r = controller_backend_activate_for(cl->ctl, cl->id, BACKEND_FALLBACK_REF, NULL,
					    ACTIVATE_EXPLICIT, fallback_done, op);
	if (r < 0) {
		pack_op_free(op);
		return client_reply_error(cl, id, CORDON_ERR_BACKEND,
					  "cannot activate builtin:auto in place of the pack; the "
					  "pack stays as it was",
					  json_pack("{s:s,s:s}", "id", pack, "errno",
						    strerror(-r)));
	}
	return 0;
}

int method_pack_disable(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	return pack_disable_or_remove(cl, id, params, false);
}

int method_pack_remove(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	return pack_disable_or_remove(cl, id, params, true);
}
