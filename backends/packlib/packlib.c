/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The JSON-RPC loop pack programs share with the controller (packlib.h). */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backends/packlib/packlib.h"
#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-jsonrpc.h"

atomic_bool packlib_stopping;

static struct jsonrpc_conn *conn;
static const char *program = "cordon-pack";
static pthread_mutex_t send_lock = PTHREAD_MUTEX_INITIALIZER;

void packlib_send(json_t *m)
{
	pthread_mutex_lock(&send_lock);
	if (m && jsonrpc_conn_send_wait(conn, m, NULL, 0) < 0)
		fprintf(stderr, "%s: cannot write to the controller\n", program);
	pthread_mutex_unlock(&send_lock);
	json_decref(m);
}

void packlib_reply(json_t *id, json_t *result)
{
	packlib_send(jsonrpc_result_new(id, result));
}

void packlib_reply_error(json_t *id, const char *message, const char *step)
{
	packlib_send(jsonrpc_error_new(id, -32007, message,
				       step ? json_pack("{s:s}", "step", step) : NULL));
}

void packlib_copy_setting(json_t *settings, const char *key, char *buf, size_t size)
{
	const char *v = json_string_value(json_object_get(settings, key));

	if (v)
		(void)snprintf(buf, size, "%s", v);
}

void packlib_strip_slash(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
}

bool packlib_lease_ok(const char *lease)
{
	size_t n = lease ? strlen(lease) : 0;

	if (n == 0 || n > 64)
		return false;
	for (const char *p = lease; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
			return false;
	return true;
}

int packlib_fd_at(json_t *stdio, const char *name, int *fds, size_t n_fds)
{
	json_t *v = json_object_get(stdio, name);
	json_int_t i = json_integer_value(v);

	if (!json_is_integer(v) || i < 0 || (size_t)i >= n_fds || fds[i] < 0)
		return -1;
	return fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
}

long packlib_usec_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000000L + (t.tv_nsec - t0->tv_nsec) / 1000;
}

static void handle(const struct packlib_ops *ops, json_t *msg, int *fds, size_t n_fds)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *id = json_object_get(msg, "id"), *params = json_object_get(msg, "params");

	if (!method || !id)
		return; /* the controller sends the packs no notifications */
	if (streq(method, "configure"))
		ops->configure(id, params);
	else if (streq(method, "prepare"))
		ops->prepare(id);
	else if (streq(method, "isAvailable"))
		ops->probe(id);
	else if (streq(method, "spawn"))
		ops->spawn(id, params, fds, n_fds);
	else if (streq(method, "acquire"))
		ops->acquire(id, params, fds, n_fds);
	else if (streq(method, "release"))
		ops->release(id, params, fds, n_fds);
	else if (streq(method, "kill"))
		ops->kill(id, params);
	else if (streq(method, "dispose"))
		ops->dispose(id);
	else
		packlib_send(
			jsonrpc_error_new(id, JSONRPC_METHOD_NOT_FOUND, "no such method", NULL));
}

int packlib_main(const struct packlib_ops *ops)
{
	int r, null;

	program = ops->program;
	signal(SIGPIPE, SIG_IGN);
	r = jsonrpc_conn_new(fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3), &conn);
	if (r < 0) {
		fprintf(stderr, "%s: cannot set up\n", program);
		return 1;
	}
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, STDIN_FILENO) < 0)
		return 1;
	close(null);
	(void)dup2(STDERR_FILENO, STDOUT_FILENO);
	if (ops->background) {
		pthread_t t;

		if (pthread_create(&t, NULL, ops->background, NULL) == 0)
			pthread_detach(t);
	}
	for (;;) {
		_cleanup_json_ json_t *m = NULL;
		int fds[IPC_MAX_FDS];
		size_t n_fds = 0;
		struct field_error fe = { 0 };

		r = jsonrpc_conn_recv(conn, &m, fds, &n_fds, -1, &fe);
		if (r <= 0) {
			close_many(fds, n_fds);
			atomic_store(&packlib_stopping, true);
			return r < 0 ? 1 : 0;
		}
		handle(ops, m, fds, n_fds);
		close_many(fds, n_fds);
	}
}
