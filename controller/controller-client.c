/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Talking to a connected client: replies, errors, notifications, each queued without blocking;
 * a client that does not read its replies is dropped rather than buffered without bound. Every
 * response counts in client.n_responses, so the dispatcher can tell a handler that answered
 * from one that did not.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "controller/controller.h"

/* A client whose unread replies exceed this is dropped rather than buffered without bound. */
#define CLIENT_QUEUE_MAX (64U * 1024U * 1024U)

int client_update_events(struct client *cl)
{
	uint32_t ev = EPOLLIN | EPOLLRDHUP;

	if (jsonrpc_conn_queued_bytes(cl->conn) > 0)
		ev |= EPOLLOUT;
	return event_source_set_events(cl->src, ev);
}

struct client *controller_client_find(struct controller *c, uint64_t id)
{
	for (struct client *k = c->clients; k; k = k->next)
		if (k->id == id)
			return k;
	return NULL;
}

int client_send(struct client *cl, json_t *msg, const int *fds, size_t n_fds)
{
	int r;

	if (!msg)
		return -ENOMEM;
	if (cl->closing)
		return -ECONNRESET;
	r = jsonrpc_conn_send(cl->conn, msg, fds, n_fds);
	if (r == -EAGAIN) {
		if (jsonrpc_conn_queued_bytes(cl->conn) > CLIENT_QUEUE_MAX) {
			log_warning("client pid %d does not read its replies; dropping it",
				    (int)cl->pid);
			cl->closing = true;
			return -ENOBUFS;
		}
		return client_update_events(cl);
	}
	if (r < 0) {
		cl->closing = true;
		return r;
	}
	return 0;
}

int client_reply(struct client *cl, json_t *id, json_t *result)
{
	_cleanup_json_ json_t *m = jsonrpc_result_new(id, result);

	cl->n_responses++;

	return client_send(cl, m, NULL, 0);
}

int client_reply_error(struct client *cl, json_t *id, int code, const char *message, json_t *data)
{
	_cleanup_json_ json_t *m = jsonrpc_error_new(id, code, message, data);

	cl->n_responses++;

	return client_send(cl, m, NULL, 0);
}

int client_reply_field_error(struct client *cl, json_t *id, int code, const struct field_error *fe)
{
	_cleanup_json_ json_t *m = jsonrpc_error_field_new(id, code, fe);

	cl->n_responses++;

	return client_send(cl, m, NULL, 0);
}

int client_notify(struct client *cl, const char *method, json_t *params)
{
	_cleanup_json_ json_t *m = jsonrpc_notification_new(method, params);

	return client_send(cl, m, NULL, 0);
}
