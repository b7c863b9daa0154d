/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The client socket: accept, check the peer is this user (SO_PEERCRED), read JSON-RPC lines and
 * dispatch them through the method table. A client's mistake earns an error reply, never a crash.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "controller/controller-interaction.h"
#include "controller/controller.h"
#include "ipc/ipc-peer.h"

static const struct controller_method methods[] = {
	{ "process.exec", method_process_exec },
	{ "process.spawn", method_process_spawn },
	{ "process.write", method_process_write },
	{ "process.resize", method_process_resize },
	{ "process.attach", method_process_attach },
	{ "process.closeStdin", method_process_close_stdin },
	{ "process.signal", method_process_signal },
	{ "process.wait", method_process_wait },
	{ "process.list", method_process_list },
	{ "net.allow", method_net_allow },
	{ "net.deny", method_net_deny },
	{ "sandbox.acquire", method_sandbox_acquire },
	{ "sandbox.release", method_sandbox_release },
	{ "sandbox.list", method_sandbox_list },
	{ "events.subscribe", method_events_subscribe },
	{ "policy.check", method_policy_check },
	{ "policy.explain", method_policy_explain },
	{ "host.doctor", method_host_doctor },
	{ "backend.list", method_backend_list },
	{ "backend.activate", method_backend_activate },
	{ "pack.install", method_pack_install },
	{ "pack.list", method_pack_list },
	{ "pack.enable", method_pack_enable },
	{ "pack.disable", method_pack_disable },
	{ "pack.remove", method_pack_remove },
	{ "backend.settings.get", method_backend_settings_get },
	{ "backend.settings.set", method_backend_settings_set },
	{ "secret.set", method_secret_set },
	{ "secret.clear", method_secret_clear },
};

static method_fn method_find(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(methods); i++)
		if (streq(methods[i].name, name))
			return methods[i].fn;
	for (size_t i = 0; controller_extra_methods[i].name; i++)
		if (streq(controller_extra_methods[i].name, name))
			return controller_extra_methods[i].fn;
	return NULL;
}

void controller_client_free(struct client *cl)
{
	struct controller *c;

	if (!cl)
		return;
	c = cl->ctl;
	for (struct client **p = &c->clients; *p; p = &(*p)->next)
		if (*p == cl) {
			*p = cl->next;
			break;
		}
	controller_processes_client_gone(c, cl);
	controller_sandboxes_client_gone(c, cl);
	controller_interactions_client_gone(c, cl);
	event_source_free(cl->src);
	jsonrpc_conn_free(cl->conn);
	free(cl);
}

static void dispatch(struct client *cl, json_t *msg, int *fds, size_t n_fds)
{
	struct field_error fe = { 0 };
	enum jsonrpc_kind kind;
	_cleanup_json_ json_t *p = NULL;
	const char *method;
	json_t *id, *params;
	uint64_t answered;
	method_fn fn;
	int r;

	r = jsonrpc_classify(msg, &kind, &method, &id, &params, &fe);
	if (r < 0) {
		_cleanup_json_ json_t *m = jsonrpc_error_field_new(json_object_get(msg, "id"),
								   JSONRPC_INVALID_REQUEST, &fe);
		(void)client_send(cl, m, NULL, 0);
		return;
	}
	if (kind == JSONRPC_KIND_RESULT || kind == JSONRPC_KIND_ERROR) {
		/* The answer to a host interaction we asked (controller-interaction.c). */
		controller_interaction_response(cl, id, kind == JSONRPC_KIND_RESULT ? params : NULL,
						kind == JSONRPC_KIND_ERROR ? params : NULL);
		return;
	}
	if (kind != JSONRPC_KIND_REQUEST)
		return; /* notifications from clients: none defined */
	if (params && !json_is_object(params)) {
		(void)client_reply_error(cl, id, JSONRPC_INVALID_PARAMS, "params must be an object",
					 NULL);
		return;
	}
	fn = method_find(method);
	if (!fn) {
		(void)client_reply_error(cl, id, JSONRPC_METHOD_NOT_FOUND, "no such method",
					 json_pack("{s:s}", "method", method));
		return;
	}
	answered = cl->n_responses;
	p = params ? json_incref(params) : json_object();
	r = p ? fn(cl, id, p, fds, n_fds) : -ENOMEM;
	if (r >= 0)
		return;
	log_debug_errno(r, "method %s failed: %m", method);
	/* A handler that failed without answering (out of memory, mostly) still gets its client
	 * an answer: nobody waits for ever. One that keeps id to answer later returns 0. */
	if (cl->n_responses == answered)
		(void)client_reply_error(cl, id, JSONRPC_INTERNAL_ERROR, "internal error",
					 json_pack("{s:s,s:s}", "method", method, "errno",
						   strerror(-r)));
}

static int on_client(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct client *cl = userdata;
	bool eof = false;

	if (revents & EPOLLOUT) {
		int r = jsonrpc_conn_flush(cl->conn);

		if (r < 0 && r != -EAGAIN)
			cl->closing = true;
	}
	if (revents & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR)) {
		ssize_t n = jsonrpc_conn_fill(cl->conn);

		if (n == 0 || (n < 0 && n != -EAGAIN))
			eof = true;
	}
	/* Every complete message buffered now: epoll reports the socket, not our buffer, so a
	 * message left here would wait for the client's next write. One read is at most 64 KiB, so
	 * this stays bounded. */
	while (!cl->closing) {
		_cleanup_json_ json_t *msg = NULL;
		int fds[IPC_MAX_FDS];
		size_t n_fds = 0;
		struct field_error fe = { 0 };
		int r = jsonrpc_conn_next(cl->conn, &msg, fds, &n_fds, &fe);

		if (r == 0)
			break;
		if (r == -EBADMSG) {
			_cleanup_json_ json_t *m =
				jsonrpc_error_field_new(NULL, JSONRPC_PARSE_ERROR, &fe);
			(void)client_send(cl, m, NULL, 0);
			continue;
		}
		if (r < 0) {
			_cleanup_json_ json_t *m =
				jsonrpc_error_new(NULL, CORDON_ERR_TOO_LARGE,
						  "message longer than the line limit", NULL);
			(void)client_send(cl, m, NULL, 0);
			(void)jsonrpc_conn_flush(cl->conn);
			cl->closing = true;
			break;
		}
		dispatch(cl, msg, fds, n_fds);
		close_many(fds, n_fds);
	}
	if (eof || cl->closing) {
		controller_client_free(cl);
		return 0;
	}
	return client_update_events(cl);
}

static int on_accept(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct controller *c = userdata;

	for (;;) {
		_cleanup_close_ int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct ucred uc;
		struct client *cl;
		int r;

		if (cfd < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		/* Only this user: the socket's directory is 0700 already, this is the second lock. A
		 * refusal is audited: someone else tried to drive this user's sandboxes. */
		r = ipc_peer_cred(cfd, &uc);
		if (r < 0 || uc.uid != c->host.uid) {
			log_warning("refusing a client that is not uid %u (uid %d, pid %d)",
				    (unsigned)c->host.uid, r < 0 ? -1 : (int)uc.uid,
				    r < 0 ? -1 : (int)uc.pid);
			controller_event(c, "client-refused",
					 json_pack("{s:i,s:i,s:s}", "uid", r < 0 ? -1 : (int)uc.uid,
						   "pid", r < 0 ? -1 : (int)uc.pid, "reason",
						   r < 0 ? "no peer credentials"
							 : "not this user"));
			continue;
		}
		cl = calloc(1, sizeof(*cl));
		if (!cl)
			return -ENOMEM;
		cl->ctl = c;
		cl->id = ++c->next_client_id;
		cl->uid = uc.uid;
		cl->pid = uc.pid;
		r = jsonrpc_conn_new(TAKE_FD(cfd), &cl->conn);
		if (r < 0) {
			free(cl);
			return r;
		}
		r = event_add_io(c->host.loop, jsonrpc_conn_fd(cl->conn), EPOLLIN | EPOLLRDHUP,
				 on_client, cl, &cl->src);
		if (r < 0) {
			jsonrpc_conn_free(cl->conn);
			free(cl);
			return r;
		}
		cl->next = c->clients;
		c->clients = cl;
	}
}

int controller_listen(struct controller *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	mode_t old;
	int r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* We hold the lock (controller-main.c): a socket file left here is stale. */
	(void)unlink(path);
	old = umask(0077);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0)
		return -errno;
	if (listen(fd, 128) < 0)
		return -errno;
	r = event_add_io(c->host.loop, fd, EPOLLIN, on_accept, c, &c->listen_src);
	if (r < 0)
		return r;
	c->listen_fd = TAKE_FD(fd);
	return 0;
}
