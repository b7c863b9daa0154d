/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reaching the controller: connect to its socket, or start it (the embedded default) and wait
 * until it says it is listening; then synchronous JSON-RPC calls.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/system.h"
#include "common/util.h"

#ifndef CORDON_LIBEXECDIR
#define CORDON_LIBEXECDIR "/usr/local/libexec"
#endif

#define START_TIMEOUT_MS 10000
/* How long a CLI waits, in all, for a controller to take its connection: another CLI starting
 * one, or one that is exiting making way for the next. */
#define CONNECT_DEADLINE_USEC (20ULL * 1000 * 1000)
#define CONNECT_RETRY_USEC (20ULL * 1000)

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/*
 * Start `cordon-controller --daemon --ready-fd 3` detached from us (own session, reparented
 * away by a double fork) and wait for its one-byte "listening" note on a pipe. EOF without the
 * byte means it failed to start (its reason is in its log); a byte 'E' means another controller
 * won the start-up race, which is just as good.
 */
static int start_controller(const char *socket_path)
{
	const char *bin = getenv("CORDON_CONTROLLER");
	_cleanup_free_ char *dflt = NULL;
	int pipefd[2];
	pid_t pid;
	char c;
	ssize_t n;
	struct pollfd p;

	if (isempty(bin)) {
		dflt = strdup_printf("%s/cordon-controller", CORDON_LIBEXECDIR);
		if (!dflt)
			return -ENOMEM;
		bin = dflt;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int r = -errno;

		safe_close(pipefd[0]);
		safe_close(pipefd[1]);
		return r;
	}
	if (pid == 0) {
		int null;

		/* Child: new session, fork again so the controller is nobody's child but init's. */
		(void)setsid();
		if (fork() != 0)
			_exit(0);
		null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			(void)dup2(null, 0);
			(void)dup2(null, 1);
			(void)dup2(null, 2);
		}
		if (dup2(pipefd[1], 3) < 0)
			_exit(1);
		(void)fds_cloexec_from(4);
		if (socket_path)
			(void)setenv("CORDON_CONTROLLER_SOCKET", socket_path, 1);
		execl(bin, "cordon-controller", "--daemon", "--ready-fd", "3", (char *)NULL);
		_exit(127);
	}
	safe_close(pipefd[1]);
	(void)waitpid(pid, NULL, 0);

	p = (struct pollfd){ .fd = pipefd[0], .events = POLLIN };
	n = poll(&p, 1, START_TIMEOUT_MS);
	if (n <= 0) {
		safe_close(pipefd[0]);
		return n == 0 ? -ETIMEDOUT : -errno;
	}
	n = read(pipefd[0], &c, 1);
	safe_close(pipefd[0]);
	if (n != 1)
		return -ECHILD;
	/* 'E': another controller holds the user's lock (starting, or exiting): try again. */
	return c == 'E' ? -EALREADY : 0;
}

/* flock() with a deadline: the connect lock is held only for moments. */
static int lock_until(int fd, int how, unsigned long long deadline)
{
	while (flock(fd, how | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (now_usec() >= deadline)
			return -ETIMEDOUT;
		(void)usleep(1000);
	}
	return 0;
}

int cli_connect(struct cli *cli)
{
	_cleanup_free_ char *path = NULL, *lock_path = NULL;
	_cleanup_close_ int lock_fd = -1;
	unsigned long long deadline = now_usec() + CONNECT_DEADLINE_USEC;
	int fd, r;

	if (cli->socket) {
		path = strdup(cli->socket);
		if (!path)
			return -ENOMEM;
	} else {
		r = cordon_controller_socket_path(&path, 1);
		if (r < 0)
			return log_error_errno(r, "cannot use the cordon runtime directory: %m");
	}

	/*
	 * Every connect happens under the connect lock ("<socket>.connect"): shared for a
	 * connect, exclusive to start a controller, so that of several CLIs started at once one
	 * starts it and the others wait for it; and a controller exits when idle only with the
	 * lock exclusive and no connection pending, so it never drops one made meanwhile.
	 */
	lock_path = strdup_printf("%s.connect", path);
	if (!lock_path)
		return -ENOMEM;
	lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	/* A socket we cannot lock beside (another user's, given with --socket) is only
	 * connected to: nothing of ours starts there. */
	if (lock_fd >= 0) {
		r = lock_until(lock_fd, LOCK_SH, deadline);
		if (r < 0)
			return log_error_errno(r, "cannot take \"%s\": %m", lock_path);
	}
	fd = connect_unix(path);
	if (lock_fd >= 0 && (fd == -ENOENT || fd == -ECONNREFUSED)) {
		/* Start one (or wait for the one another CLI is starting). */
		(void)flock(lock_fd, LOCK_UN);
		r = lock_until(lock_fd, LOCK_EX, deadline);
		if (r < 0)
			return log_error_errno(r, "cannot take \"%s\": %m", lock_path);
		for (;;) {
			fd = connect_unix(path);
			if (fd != -ENOENT && fd != -ECONNREFUSED)
				break;
			r = start_controller(cli->socket ? path : NULL);
			if (r == -EALREADY && now_usec() < deadline) {
				/* One is exiting (or starting without us): it goes, then ours. */
				(void)usleep(CONNECT_RETRY_USEC);
				continue;
			}
			if (r == -ECHILD)
				return log_error_errno(
					r,
					"cordon-controller exited before it was ready; its log is "
					"~/.local/state/cordon/controller.log (or run 'cordon "
					"controller' to see why)");
			if (r == -EALREADY)
				r = -ETIMEDOUT;
			if (r < 0)
				return log_error_errno(r, "could not start cordon-controller: %m");
		}
	}
	r = jsonrpc_conn_new(fd, &cli->conn);
	if (r < 0)
		return r;
	return 0;
}

int cli_call(struct cli *cli, const char *method, json_t *params, const int *fds, size_t n_fds,
	     json_t **ret_result, json_t **ret_error, cli_notify_cb notify, void *userdata)
{
	_cleanup_json_ json_t *req = NULL;
	json_int_t id = ++cli->next_id;
	int r;

	req = jsonrpc_request_new(id, method, params);
	if (!req)
		return -ENOMEM;
	r = jsonrpc_conn_send_wait(cli->conn, req, fds, n_fds);
	if (r < 0)
		return log_error_errno(r, "cannot send to the controller: %m");

	for (;;) {
		_cleanup_json_ json_t *msg = NULL;
		int rfds[IPC_MAX_FDS];
		size_t n_rfds = 0;
		struct field_error fe = { 0 };
		enum jsonrpc_kind kind;
		const char *m;
		json_t *mid, *body;

		r = jsonrpc_conn_recv(cli->conn, &msg, rfds, &n_rfds, -1, &fe);
		if (r == 0)
			return log_error_errno(ECONNRESET, "the controller closed the connection");
		if (r == -EBADMSG)
			continue; /* not ours to fix; skip the garbled line */
		if (r < 0)
			return log_error_errno(r, "cannot read from the controller: %m");
		close_many(rfds, n_rfds);
		if (jsonrpc_classify(msg, &kind, &m, &mid, &body, &fe) < 0)
			continue;
		switch (kind) {
		case JSONRPC_KIND_NOTIFICATION:
			if (notify)
				notify(body, m, userdata);
			break;
		case JSONRPC_KIND_REQUEST:
			/* A host interaction: cli-interact.c renders it or answers unavailable. */
			(void)cli_interact_answer(cli, mid, m, body);
			break;
		case JSONRPC_KIND_RESULT:
		case JSONRPC_KIND_ERROR:
			if (!json_is_integer(mid) || json_integer_value(mid) != id)
				break;
			if (kind == JSONRPC_KIND_ERROR) {
				if (ret_error)
					*ret_error = json_incref(body);
				return -EREMOTEIO;
			}
			if (ret_result)
				*ret_result = json_incref(body);
			return 0;
		}
	}
}

int cli_exit_from_code(int code)
{
	switch (code) {
	case CORDON_ERR_POLICY_REFUSED:
	case JSONRPC_INVALID_PARAMS:
		return CLI_EXIT_POLICY;
	case CORDON_ERR_SETUP_FAILED:
		return CLI_EXIT_SETUP;
	case CORDON_ERR_LIMIT:
		return CLI_EXIT_LIMIT;
	case CORDON_ERR_TIMEOUT:
		return CLI_EXIT_TIMEOUT;
	case CORDON_ERR_BACKEND:
	case CORDON_ERR_UNAVAILABLE:
		return CLI_EXIT_UNAVAILABLE;
	default:
		return CLI_EXIT_FAILURE;
	}
}

int cli_report_error(json_t *error, const char *what)
{
	json_t *data = json_object_get(error, "data");
	const char *msg = json_string_value(json_object_get(error, "message"));
	int code = (int)json_integer_value(json_object_get(error, "code"));
	const char *name = jsonrpc_code_name(code);

	fprintf(stderr, "cordon: %s: %s%s%s%s\n", what, msg ? msg : "failed", name ? " (" : "",
		name ? name : "", name ? ")" : "");
	if (json_is_object(data)) {
		const char *hint = json_string_value(json_object_get(data, "hint"));
		json_t *status = json_object_get(data, "exitStatus");

		if (hint)
			fprintf(stderr, "Hint: %s\n", hint);
		/* exec failures carry the shell-convention status: 126 or 127. */
		if (json_is_integer(status))
			return (int)json_integer_value(status);
	}
	return cli_exit_from_code(code);
}

void cli_print_json(json_t *j)
{
	_cleanup_free_ char *s = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);

	if (s)
		printf("%s\n", s);
}
