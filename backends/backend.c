/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The instance lifecycle: made by the core for an activation, held by the active selection and
 * by every process it started, disposed of (from a timer of its own, never inside its callbacks)
 * when the last reference goes; a failing disposal is retried in the background.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "common/event.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/util.h"

#define DISPOSE_RETRY_USEC (5ULL * 1000000ULL)

static unsigned long long instance_counter;

int backend_instance_new(struct backend_host *h, const struct backend_ops *ops,
			 struct backend_instance **ret)
{
	struct backend_instance *bi = calloc(1, sizeof(*bi));
	_cleanup_backend_descriptor_ struct backend_descriptor *d = NULL;
	_cleanup_json_ json_t *desc = ops->descriptor ? ops->descriptor(ops) : NULL;
	struct field_error fe = { 0 };
	int r;

	if (!bi)
		return -ENOMEM;
	/* The claims are what the core holds every request against: parsed once, here. */
	r = desc ? backend_descriptor_from_json(
			   desc, streq(ops->source, "builtin") ? BACKEND_DESCRIPTOR_BUILTIN : 0,
			   "descriptor", &d, &fe)
		 : -ENOMEM;
	if (r < 0) {
		free(bi);
		return r;
	}
	bi->claims = d->claims;
	bi->host = h;
	bi->ops = ops;
	bi->refs = 1;
	(void)backend_ops_ref(ops, bi->ref, sizeof(bi->ref));
	(void)snprintf(bi->name, sizeof(bi->name), "%s#%llu", bi->ref, ++instance_counter);
	*ret = bi;
	return 0;
}

int backend_ops_descriptor(const struct backend_ops *ops, struct backend_descriptor **ret,
			   struct field_error *fe)
{
	_cleanup_json_ json_t *desc = ops->descriptor ? ops->descriptor(ops) : NULL;

	if (!desc)
		return -ENOMEM;
	/* Only a built-in may describe itself as unconfined (isolation "none"). */
	return backend_descriptor_from_json(
		desc, streq(ops->source, "builtin") ? BACKEND_DESCRIPTOR_BUILTIN : 0, "descriptor",
		ret, fe);
}

int backend_ops_ref(const struct backend_ops *ops, char *buf, size_t size)
{
	int n = ops->pack_id ? snprintf(buf, size, "%s:%s:%s", ops->source, ops->pack_id, ops->kind)
			     : snprintf(buf, size, "%s:%s", ops->source, ops->kind);

	return n < 0 || (size_t)n >= size ? -ENOBUFS : 0;
}

struct backend_instance *backend_instance_ref(struct backend_instance *bi)
{
	if (bi)
		bi->refs++;
	return bi;
}

struct dispose_retry {
	struct dispose_retry *next;
	struct backend_instance *bi;
	struct event_source *timer;
	unsigned attempts;
};

/* Disposals under way: the controller's exit waits for them (controller_backends_stop()). */
static struct dispose_retry *disposals;

static void dispose_done(struct backend_instance *bi, int r, const char *message, void *ud);

/* Dispose and free an instance nobody holds any more. Runs from its own timer, never from inside
 * the instance's callbacks (its last process may end inside its own exit report). */
static int on_dispose(struct event_source *s, void *userdata)
{
	struct dispose_retry *dr = userdata;
	struct backend_instance *bi = dr->bi;

	if (bi->ops->dispose_async)
		bi->ops->dispose_async(bi, dispose_done, dr);
	else
		dispose_done(bi, bi->ops->dispose(bi), NULL, dr);
	return 0;
}

static void dispose_done(struct backend_instance *bi, int r, const char *message, void *ud)
{
	struct dispose_retry *dr = ud;

	if (r < 0) {
		/* A failing disposal never undoes the activation that let the instance go: warn
		 * and retry in the background. */
		if (dr->attempts == 0)
			bi->host->event(bi->host, "backend-cleanup-failed",
					json_pack("{s:s,s:s}", "launcher", bi->name, "error",
						  message ? message : strerror(-r)));
		/* Retried in the background, but not past our own exit. */
		if (++dr->attempts < 10 && !bi->host->exiting) {
			log_warning_errno(r, "cleanup of %s failed (attempt %u: %s); retrying: %m",
					  bi->name, dr->attempts, message ? message : "");
			(void)event_timer_set(dr->timer, DISPOSE_RETRY_USEC, false);
			return;
		}
		log_error_errno(r, "giving up the cleanup of %s: %m", bi->name);
	}
	bi->host->event(bi->host, "backend-disposed",
			json_pack("{s:s,s:b,s:i}", "launcher", bi->name, "ok", r >= 0, "attempts",
				  /* the failed ones, and the one that succeeded */
				  (int)dr->attempts + (r >= 0)));
	for (struct dispose_retry **p = &disposals; *p; p = &(*p)->next)
		if (*p == dr) {
			*p = dr->next;
			break;
		}
	event_source_free(dr->timer);
	bi->ops->free(bi);
	free(bi);
	free(dr);
}

void backend_instance_unref(struct backend_instance *bi)
{
	struct dispose_retry *dr;

	if (!bi || --bi->refs > 0)
		return;
	dr = calloc(1, sizeof(*dr));
	if (dr) {
		dr->bi = bi;
		if (event_add_timer(bi->host->loop, 1, false, on_dispose, dr, &dr->timer) >= 0) {
			dr->next = disposals;
			disposals = dr;
			return;
		}
		free(dr);
	}
	/* No timer: dispose here (only reached when out of memory). */
	if (bi->ops->dispose)
		(void)bi->ops->dispose(bi);
	bi->ops->free(bi);
	free(bi);
}

bool backend_disposals_pending(void)
{
	return disposals != NULL;
}

void backend_disposals_retry_now(void)
{
	for (struct dispose_retry *dr = disposals; dr; dr = dr->next)
		if (dr->attempts > 0)
			(void)event_timer_set(dr->timer, 1, false);
}

void backend_disposals_free(void)
{
	while (disposals) {
		struct dispose_retry *dr = disposals;

		disposals = dr->next;
		log_warning("%s: not disposed of at exit", dr->bi->name);
		event_source_free(dr->timer);
		free(dr);
	}
}
