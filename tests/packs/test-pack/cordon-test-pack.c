/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The test suite's pack executable (tests/packs/test-pack/pack.json): the launcher contract of
 * docs/PROTOCOL.md ("Pack protocol") over stdin/stdout, one JSON-RPC 2.0 object per line, with
 * the behaviour its settings ask for:
 *   failAt          none|configure|prepare|probe|dispose: that call fails
 *   prepareDelayMs  prepare takes this long
 *   interaction     none|confirm|input|secret-input|choice: prepare asks the person first and
 *                   fails when the answer does not come
 *   token           a secret: only whether it was configured is ever shown
 * spawn runs plan.argv with the passed stdio fds as a child of this (confined) process, with
 * CORDON_TEST_GENERATION=<the instance name configure gave>, CORDON_TEST_TOKEN=configured|absent
 * and CORDON_TEST_INTERACTION=<the answer, for non-secret kinds> in its environment, and reports
 * its end with an exited notification. It logs to stderr, never a secret.
 * Not installed; built by make check.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-jsonrpc.h"

struct child {
	struct child *next;
	pid_t pid;
	char sandbox[32];
	unsigned long long start_usec;
	bool killed;
};

static struct jsonrpc_conn *conn;
static char instance[256] = "unconfigured";
static char fail_at[32] = "none";
static char interaction[32] = "none";
static char interaction_answer[512] = "";
static long long prepare_delay_ms;
static bool token_configured;
static struct child *children;
static unsigned long long next_child;
static json_int_t next_request = 1000;

static void send_msg(json_t *m)
{
	if (m && jsonrpc_conn_send_wait(conn, m, NULL, 0) < 0)
		fprintf(stderr, "cordon-test-pack: cannot write to the controller\n");
	json_decref(m);
}

static void reply(json_t *id, json_t *result)
{
	send_msg(jsonrpc_result_new(id, result));
}

static void reply_error(json_t *id, const char *message, json_t *data)
{
	send_msg(jsonrpc_error_new(id, -32007, message, data));
}

static void copy_setting(json_t *settings, const char *key, char *buf, size_t size)
{
	const char *v = json_string_value(json_object_get(settings, key));

	if (v)
		(void)snprintf(buf, size, "%s", v);
}

static void do_configure(json_t *id, json_t *params)
{
	json_t *settings = json_object_get(params, "settings");
	json_t *secrets = json_object_get(params, "secrets");
	json_t *token = json_object_get(secrets, "token");

	copy_setting(params, "instance", instance, sizeof(instance));
	copy_setting(settings, "failAt", fail_at, sizeof(fail_at));
	copy_setting(settings, "interaction", interaction, sizeof(interaction));
	prepare_delay_ms =
		(long long)json_number_value(json_object_get(settings, "prepareDelayMs"));
	token_configured = json_is_string(token) && json_string_length(token) > 0;
	/* Wipe the value from our copy of the message: we only ever say whether we had one. */
	if (json_is_string(token))
		explicit_bzero((char *)json_string_value(token), json_string_length(token));
	fprintf(stderr, "cordon-test-pack: configured %s (failAt=%s, token %s)\n", instance,
		fail_at, token_configured ? "configured" : "absent");
	if (streq(fail_at, "configure"))
		reply_error(id, "failAt=configure", NULL);
	else
		reply(id, json_object());
}

static void handle(json_t *msg);

/* Ask the controller a host interaction and wait for its answer (other messages are handled
 * meanwhile). Returns the result (owned) or NULL with *why set. */
static json_t *ask(const char *kind, char *why, size_t why_size)
{
	json_int_t rid = ++next_request;
	json_t *params = json_pack("{s:s,s:s}", "kind", kind, "prompt", "The test pack asks");

	if (streq(kind, "choice"))
		json_object_set_new(params, "options", json_pack("[s,s]", "red", "blue"));
	if (streq(kind, "secret-input"))
		json_object_set_new(params, "field", json_string("token"));
	send_msg(jsonrpc_request_new(rid, "interaction", params));
	for (;;) {
		_cleanup_json_ json_t *m = NULL;
		int fds[IPC_MAX_FDS];
		size_t n_fds = 0;
		struct field_error fe = { 0 };
		int r = jsonrpc_conn_recv(conn, &m, fds, &n_fds, -1, &fe);

		close_many(fds, n_fds);
		if (r <= 0) {
			(void)snprintf(why, why_size, "the controller went away");
			return NULL;
		}
		if (json_object_get(m, "method")) {
			handle(m);
			continue;
		}
		if (json_integer_value(json_object_get(m, "id")) != rid)
			continue;
		if (json_object_get(m, "error")) {
			(void)snprintf(why, why_size, "interaction %s: %s", kind,
				       json_string_value(json_object_get(
					       json_object_get(m, "error"), "message"))
					       ?: "error");
			return NULL;
		}
		return json_incref(json_object_get(m, "result"));
	}
}

static void do_prepare(json_t *id)
{
	if (prepare_delay_ms > 0) {
		struct timespec ts = { prepare_delay_ms / 1000,
				       (prepare_delay_ms % 1000) * 1000000 };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	if (!streq(interaction, "none")) {
		char why[512] = "";
		_cleanup_json_ json_t *answer = ask(interaction, why, sizeof(why));
		_cleanup_free_ char *text = NULL;

		if (!answer) {
			reply_error(id, why, NULL);
			return;
		}
		/* A secret-input answer carries no value (it went into the secret store). */
		text = json_dumps(answer, JSON_COMPACT | JSON_SORT_KEYS);
		(void)snprintf(interaction_answer, sizeof(interaction_answer), "%s",
			       text ? text : "");
	}
	if (streq(fail_at, "prepare"))
		reply_error(id, "failAt=prepare", NULL);
	else
		reply(id, json_object());
}

static void do_probe(json_t *id)
{
	if (streq(fail_at, "probe"))
		reply(id, json_pack("{s:b,s:s}", "available", false, "reason", "failAt=probe"));
	else
		reply(id, json_pack("{s:b}", "available", true));
}

static int stdio_fd(json_t *stdio, const char *name, const int *fds, size_t n_fds)
{
	json_t *v = json_object_get(stdio, name);
	json_int_t k = json_is_integer(v) ? json_integer_value(v) : -1;

	return k >= 0 && (size_t)k < n_fds ? fds[k] : -1;
}

static void do_spawn(json_t *id, json_t *params, const int *fds, size_t n_fds)
{
	json_t *plan = json_object_get(params, "plan"), *stdio = json_object_get(params, "stdio");
	_cleanup_strv_free_ char **argv = NULL, **envp = NULL;
	struct field_error fe = { 0 };
	const char *cwd = NULL;
	int io[3], status[2], err = 0;
	struct child *ch;
	ssize_t k;
	pid_t pid;

	if (ipc_json_get_strv(plan, "argv", true, 4096, 128 * 1024, "plan", &argv, &fe) < 0 ||
	    ipc_json_get_strv(plan, "envp", false, 4096, 128 * 1024, "plan", &envp, &fe) < 0 ||
	    ipc_json_get_string(plan, "cwd", false, "plan", &cwd, &fe) < 0 || !argv[0]) {
		reply_error(id, "bad spawn request",
			    json_pack("{s:s,s:s}", "code", "setup-failed", "step", "plan"));
		return;
	}
	{
		size_t n = strv_length(envp);
		char **e = realloc(envp, (n + 4) * sizeof(char *));

		if (!e)
			return;
		envp = e;
		envp[n++] = strdup_printf("CORDON_TEST_GENERATION=%s", instance);
		envp[n++] = strdup_printf("CORDON_TEST_TOKEN=%s",
					  token_configured ? "configured" : "absent");
		envp[n++] = strdup_printf("CORDON_TEST_INTERACTION=%s", interaction_answer);
		envp[n] = NULL;
	}
	io[0] = stdio_fd(stdio, "stdin", fds, n_fds);
	io[1] = stdio_fd(stdio, "stdout", fds, n_fds);
	io[2] = stdio_fd(stdio, "stderr", fds, n_fds);
	if (pipe2(status, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid < 0) {
		reply_error(id, "fork failed",
			    json_pack("{s:s,s:s,s:i}", "code", "setup-failed", "step", "fork",
				      "errno", errno));
		close(status[0]);
		close(status[1]);
		return;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		const char *step = "fds";

		close(status[0]);
		/* Move every source above 2 first, so no dup2() overwrites a later one. */
		for (int i = 0; i < 3; i++)
			io[i] = fcntl(io[i] >= 0 ? io[i] : null, F_DUPFD_CLOEXEC, 3);
		for (int i = 0; i < 3; i++)
			if (io[i] < 0 || dup2(io[i], i) < 0)
				goto fail;
		(void)setsid();
		step = "cwd";
		if (cwd && chdir(cwd) < 0)
			goto fail;
		step = "exec";
		execvpe(argv[0], argv, envp);
fail:
		err = errno;
		(void)!write(status[1], &err, sizeof(err));
		(void)!write(status[1], step, strlen(step));
		_exit(127);
	}
	close(status[1]);
	k = read(status[0], &err, sizeof(err));
	if (k == (ssize_t)sizeof(err)) {
		char step[16] = "";

		(void)!read(status[0], step, sizeof(step) - 1);
		close(status[0]);
		(void)waitpid(pid, NULL, 0);
		reply_error(id,
			    streq(step, "exec") ? "cannot execute the command"
						: "cannot set up the command",
			    json_pack("{s:s,s:s,s:i}", "code",
				      streq(step, "exec") ? "exec-failed" : "setup-failed", "step",
				      step, "errno", err));
		return;
	}
	close(status[0]);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return;
	ch->pid = pid;
	ch->start_usec = now_usec();
	(void)snprintf(ch->sandbox, sizeof(ch->sandbox), "t%llu", ++next_child);
	ch->next = children;
	children = ch;
	reply(id, json_pack("{s:s,s:i}", "sandbox", ch->sandbox, "pid", (int)pid));
}

static struct child *find_child(const char *sandbox)
{
	for (struct child *ch = children; ch; ch = ch->next)
		if (streq_ptr(sandbox, ch->sandbox))
			return ch;
	return NULL;
}

static void do_kill(json_t *id, json_t *params)
{
	struct child *ch = find_child(json_string_value(json_object_get(params, "sandbox")));
	int sig = (int)json_integer_value(json_object_get(params, "signal"));

	if (!ch) {
		send_msg(jsonrpc_error_new(id, -32003, "no such sandbox", NULL));
		return;
	}
	if (sig == SIGKILL)
		ch->killed = true;
	if (kill(-ch->pid, sig) < 0)
		(void)kill(ch->pid, sig);
	reply(id, json_object());
}

static void do_dispose(json_t *id)
{
	if (streq(fail_at, "dispose")) {
		reply_error(id, "failAt=dispose", NULL);
		return;
	}
	for (struct child *ch = children; ch; ch = ch->next)
		(void)kill(-ch->pid, SIGKILL);
	reply(id, json_object());
}

static void reap(void)
{
	for (;;) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		struct child **p;

		if (pid <= 0)
			return;
		for (p = &children; *p; p = &(*p)->next)
			if ((*p)->pid == pid)
				break;
		if (*p) {
			struct child *ch = *p;
			bool sig = WIFSIGNALED(st);

			*p = ch->next;
			send_msg(jsonrpc_notification_new(
				"exited", json_pack("{s:s,s:i,s:i,s:s,s:I}", "sandbox", ch->sandbox,
						    "exitCode", sig ? 0 : WEXITSTATUS(st), "signal",
						    sig ? WTERMSIG(st) : 0, "reason",
						    ch->killed ? "killed"
						    : sig      ? "signaled"
							       : "exited",
						    "durationUsec",
						    (json_int_t)(now_usec() - ch->start_usec))));
			free(ch);
		}
	}
}

static void handle_with_fds(json_t *msg, const int *fds, size_t n_fds)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *id = json_object_get(msg, "id"), *params = json_object_get(msg, "params");

	if (!method || !id)
		return;
	if (streq(method, "configure"))
		do_configure(id, params);
	else if (streq(method, "prepare"))
		do_prepare(id);
	else if (streq(method, "isAvailable"))
		do_probe(id);
	else if (streq(method, "spawn"))
		do_spawn(id, params, fds, n_fds);
	else if (streq(method, "kill"))
		do_kill(id, params);
	else if (streq(method, "dispose"))
		do_dispose(id);
	else
		send_msg(jsonrpc_error_new(id, -32601, "no such method", NULL));
}

static void handle(json_t *msg)
{
	handle_with_fds(msg, NULL, 0);
}

int main(void)
{
	sigset_t mask;
	int sfd, r;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	(void)sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	/* stdin and stdout are the same socket; keep our own descriptor of it. */
	r = jsonrpc_conn_new(fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3), &conn);
	if (sfd < 0 || r < 0) {
		fprintf(stderr, "cordon-test-pack: cannot set up\n");
		return 1;
	}
	/* Nothing of ours writes to the channel by accident: stdin is /dev/null, stdout our
	 * stderr. */
	{
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null < 0 || dup2(null, STDIN_FILENO) < 0)
			return 1;
		close(null);
	}
	(void)dup2(STDERR_FILENO, STDOUT_FILENO);
	fprintf(stderr, "cordon-test-pack: started (pid %d)\n", (int)getpid());
	for (;;) {
		struct pollfd p[2] = { { jsonrpc_conn_fd(conn), POLLIN, 0 }, { sfd, POLLIN, 0 } };

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return 1;
		if (p[1].revents) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == sizeof(si))
				;
			reap();
		}
		if (p[0].revents) {
			ssize_t n = jsonrpc_conn_fill(conn);

			if (n == 0 || (n < 0 && n != -EAGAIN && n != -EINTR)) {
				for (struct child *ch = children; ch; ch = ch->next)
					(void)kill(-ch->pid, SIGKILL);
				return 0;
			}
			for (;;) {
				_cleanup_json_ json_t *m = NULL;
				int fds[IPC_MAX_FDS];
				size_t n_fds = 0;
				struct field_error fe = { 0 };

				r = jsonrpc_conn_next(conn, &m, fds, &n_fds, &fe);
				if (r <= 0)
					break;
				handle_with_fds(m, fds, n_fds);
				close_many(fds, n_fds);
			}
		}
	}
}
