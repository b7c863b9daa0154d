/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `cordon run` and `cordon exec`: turn command-line flags into a policy patch, ask the controller
 * to start the command, and exit with its status.
 *
 *   run:  the command gets this terminal's stdin/stdout/stderr (passed as fds); signals that
 *         reach the CLI (Ctrl-C, kill) are forwarded to the sandboxed process. On a terminal
 *         (or with -t) it gets a pseudo-terminal of its own instead, relayed (cli-tty.c);
 *         detached with -t, one that `cordon attach` relays later.
 *   exec: output is captured by the controller (capped at maxOutputBytes per stream) and printed
 *         afterwards, or returned whole as JSON with --json.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "policy/policy-suggest.h"

extern char **environ;

static void run_usage(bool capture)
{
	printf("Usage: cordon %s [OPTIONS] -- COMMAND [ARG...]\n\n", capture ? "exec" : "run");
	printf("%s\n\n", capture ? "Run COMMAND in a sandbox, capture its output, print a result."
				 : "Run COMMAND in a sandbox on this terminal.");
	printf("Options:\n"
	       "  --policy FILE          start from this policy instead of the default\n"
	       "  --ro PATH              expose PATH read-only (repeatable)\n"
	       "  --rw PATH              expose PATH read-write (repeatable)\n"
	       "  --deny PATH            hide PATH, even under an exposed parent (repeatable)\n"
	       "  --workspace DIR[:ro|:rw]\n"
	       "                         the workspace (default: the current directory, read-write)\n"
	       "  --workspace-access A   read-only or read-write: the workspace's access\n"
	       "  --sandbox ID           run in this acquired sandbox ('cordon sandbox acquire'):\n"
	       "                         its policy is the base, the options here may only narrow it\n"
	       "  --cwd DIR              working directory inside the sandbox\n"
	       "  --net MODE             none (a loopback of its own), unix (no socket but\n"
	       "                         AF_UNIX), loopback, proxy or host (default: none)\n"
	       "  --allow-domain D[:P]   with --net proxy: allow this domain (repeatable)\n"
	       "  --deny-domain D        with --net proxy: deny this domain (repeatable)\n"
	       "  --resolve H:P:ADDR     with --net proxy: pin a name to an address (repeatable)\n"
	       "  --env NAME[=VALUE]     pass NAME from this environment, or set it (repeatable)\n"
	       "  --timeout SEC          kill the command after SEC seconds of wall-clock time\n"
	       "  --memory BYTES         memory limit (suffixes K, M, G)\n"
	       "  --pids N               process limit\n"
	       "  --max-output BYTES     capture at most BYTES of each stream (exec)\n"
	       "  --detach               (run) keep running when this CLI exits; print the id\n"
	       "                         (its stdio is /dev/null; with -t a terminal of its own\n"
	       "                         for 'cordon attach ID')\n"
	       "  -t, --tty              (run) give the command a terminal of its own (the\n"
	       "                         default when stdin and stdout are terminals)\n"
	       "  -T, --no-tty           (run) no terminal: the command gets this stdio as is\n"
	       "  --json                 print the result as JSON\n"
	       "  -h, --help             show this help\n\n"
	       "Exit status: the command's own (128+N if signal N ended it); 120 policy refused,\n"
	       "121 sandbox set-up failed (or no sandbox ID), 122 controller unavailable or its\n"
	       "launcher lost, "
	       "123 limit reached, 124 timed out, 125 usage error,\n"
	       "126 cannot execute, 127 command not found.\n");
}

static int parse_size(const char *s, uint64_t *ret)
{
	_cleanup_free_ char *num = strdup(s);
	uint64_t v, mul = 1;
	size_t n;

	if (!num)
		return -ENOMEM;
	n = strlen(num);
	if (n > 0) {
		switch (num[n - 1]) {
		case 'K':
		case 'k':
			mul = 1024ULL;
			break;
		case 'M':
		case 'm':
			mul = 1024ULL * 1024ULL;
			break;
		case 'G':
		case 'g':
			mul = 1024ULL * 1024ULL * 1024ULL;
			break;
		default:
			break;
		}
		if (mul != 1)
			num[n - 1] = '\0';
	}
	if (safe_atou64(num, &v) < 0 || __builtin_mul_overflow(v, mul, &v) || v > INT64_MAX)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* patch.<a>.<b> as an object/array, created on demand. */
static json_t *patch_obj(json_t *patch, const char *a)
{
	json_t *o = json_object_get(patch, a);

	if (!o) {
		o = json_object();
		json_object_set_new(patch, a, o);
	}
	return o;
}

static json_t *patch_arr(json_t *obj, const char *key)
{
	json_t *a = json_object_get(obj, key);

	if (!a) {
		a = json_array();
		json_object_set_new(obj, key, a);
	}
	return a;
}

int cli_usage_error(const char *cmd, const char *what, const char *arg)
{
	fprintf(stderr, "cordon: %s: \"%s\"\nTry 'cordon %s --help'.\n", what, arg, cmd);
	return CLI_EXIT_USAGE;
}

int cli_policy_opts_init(struct cli_policy_opts *po, const char *cmd)
{
	*po = (struct cli_policy_opts){ .cmd = cmd, .patch = json_object() };
	return po->patch ? 0 : -ENOMEM;
}

void cli_policy_opts_done(struct cli_policy_opts *po)
{
	json_decref(po->policy);
	json_decref(po->patch);
	*po = (struct cli_policy_opts){ 0 };
}

static int parse_access(const char *s, const char **ret)
{
	if (streq(s, "read-only") || streq(s, "ro"))
		*ret = "read-only";
	else if (streq(s, "read-write") || streq(s, "rw"))
		*ret = "read-write";
	else
		return -EINVAL;
	return 0;
}

int cli_policy_set_workspace_access(struct cli_policy_opts *po, const char *access)
{
	json_t *ws = patch_obj(patch_obj(po->patch, "filesystem"), "workspace");

	if (!ws)
		return -ENOMEM;
	return json_object_set_new(ws, "access", json_string(access)) < 0 ? -ENOMEM : 0;
}

int cli_policy_option(struct cli_policy_opts *po, int c, const char *arg)
{
	json_t *patch = po->patch;
	uint64_t v;

	switch (c) {
	case CLI_OPT_POLICY: {
		json_error_t je;

		json_decref(po->policy);
		po->policy = json_load_file(arg, JSON_REJECT_DUPLICATES, &je);
		if (!po->policy) {
			fprintf(stderr, "cordon: policy \"%s\": line %d column %d: %s\n", arg,
				je.line, je.column, je.text);
			return CLI_EXIT_POLICY;
		}
		po->policy_file = arg;
		break;
	}
	case CLI_OPT_RO:
	case CLI_OPT_RW:
	case CLI_OPT_DENY:
		json_array_append_new(patch_arr(patch_obj(patch, "filesystem"),
						c == CLI_OPT_RO	  ? "read"
						: c == CLI_OPT_RW ? "write"
								  : "deny"),
				      json_string(arg));
		break;
	case CLI_OPT_WORKSPACE: {
		_cleanup_free_ char *p = strdup(arg);
		char *colon;

		if (!p)
			return CLI_EXIT_FAILURE;
		colon = strrchr(p, ':');
		if (colon && (streq(colon, ":ro") || streq(colon, ":rw"))) {
			po->workspace_access = streq(colon, ":ro") ? "read-only" : "read-write";
			*colon = '\0';
		}
		if (isempty(p))
			return cli_usage_error(po->cmd, "--workspace needs a directory", arg);
		json_object_set_new(patch_obj(patch_obj(patch, "filesystem"), "workspace"), "path",
				    json_string(p));
		po->workspace_given = true;
		break;
	}
	case CLI_OPT_WORKSPACE_ACCESS:
		if (parse_access(arg, &po->workspace_access) < 0)
			return cli_usage_error(
				po->cmd, "--workspace-access must be read-only or read-write", arg);
		break;
	case CLI_OPT_NET:
		if (!streq(arg, "none") && !streq(arg, "loopback") && !streq(arg, "proxy") &&
		    !streq(arg, "host") && !streq(arg, "unix"))
			return cli_usage_error(
				po->cmd, "--net must be none, loopback, proxy, host or unix", arg);
		json_object_set_new(patch_obj(patch, "network"), "mode", json_string(arg));
		break;
	case CLI_OPT_ALLOW_DOMAIN:
	case CLI_OPT_DENY_DOMAIN:
		json_array_append_new(patch_arr(patch_obj(patch, "network"),
						c == CLI_OPT_ALLOW_DOMAIN ? "allowDomains"
									  : "denyDomains"),
				      json_string(arg));
		break;
	case CLI_OPT_RESOLVE: {
		/* curl's HOST:PORT:ADDRESS (the pin holds for every port of HOST), or the
		 * policy's own HOST=ADDRESS. */
		const char *c1 = strchr(arg, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		_cleanup_free_ char *pin = NULL;

		if (strchr(arg, '='))
			pin = strdup(arg);
		else if (c1 && c2 && c1 > arg && c2[1])
			pin = strdup_printf("%.*s=%s", (int)(c1 - arg), arg, c2 + 1);
		else
			return cli_usage_error(po->cmd, "--resolve needs HOST:PORT:ADDRESS", arg);
		json_array_append_new(patch_arr(patch_obj(patch, "network"), "resolve"),
				      json_string(pin));
		break;
	}
	case CLI_OPT_ENV: {
		const char *eq = strchr(arg, '=');
		json_t *e = patch_obj(patch, "env");

		if (eq == arg)
			return cli_usage_error(po->cmd, "--env needs a NAME", arg);
		if (eq) {
			_cleanup_free_ char *name = strndup(arg, (size_t)(eq - arg));

			json_object_set_new(patch_obj(e, "set"), name, json_string(eq + 1));
		} else
			json_array_append_new(patch_arr(e, "pass"), json_string(arg));
		break;
	}
	case CLI_OPT_TIMEOUT:
		if (safe_atou64(arg, &v) < 0 || v == 0)
			return cli_usage_error(po->cmd,
					       "--timeout needs a positive number of seconds", arg);
		json_object_set_new(patch_obj(patch, "limits"), "wallSeconds",
				    json_integer((json_int_t)v));
		break;
	case CLI_OPT_MEMORY:
	case CLI_OPT_MAX_OUTPUT:
		if (parse_size(arg, &v) < 0 || v == 0)
			return cli_usage_error(po->cmd,
					       "expected a size in bytes (suffix K, M or G)", arg);
		json_object_set_new(patch_obj(patch, "limits"),
				    c == CLI_OPT_MEMORY ? "memoryBytes" : "maxOutputBytes",
				    json_integer((json_int_t)v));
		break;
	case CLI_OPT_PIDS:
		if (safe_atou64(arg, &v) < 0 || v == 0)
			return cli_usage_error(po->cmd, "--pids needs a positive number", arg);
		json_object_set_new(patch_obj(patch, "limits"), "pids",
				    json_integer((json_int_t)v));
		break;
	default:
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

/*
 * An error reply to a request in an acquired sandbox that names no sandbox (released, never
 * acquired, or still running its setup hook) says so plainly: exit 121, as for a sandbox that
 * could not be built. Anything else as cli_report_error().
 */
static int report_run_error(json_t *error, const char *what, const char *sandbox)
{
	json_t *data = json_object_get(error, "data");
	const char *field = json_string_value(json_object_get(data, "field"));

	if (sandbox && field && streq(field, "params.sandbox")) {
		fprintf(stderr,
			"cordon: %s: no sandbox \"%s\": it was released or never acquired "
			"('cordon sandbox list' shows the sandboxes)\n",
			what, sandbox);
		return CLI_EXIT_SETUP;
	}
	return cli_report_error(error, what);
}

struct run_state {
	const char *process_id;
	json_t *exit;
};

static void on_notify(json_t *params, const char *method, void *userdata)
{
	struct run_state *st = userdata;
	const char *pid;

	if (!streq(method, "process.exit") || !json_is_object(params))
		return;
	pid = json_string_value(json_object_get(params, "processId"));
	if (st->process_id && pid && streq(pid, st->process_id) && !st->exit)
		st->exit = json_incref(params);
}

/* Exit status of the CLI for a finished process. */
static int exit_status_of(json_t *exit)
{
	const char *reason = json_string_value(json_object_get(exit, "reason"));
	int code = (int)json_integer_value(json_object_get(exit, "exitCode"));
	int sig = (int)json_integer_value(json_object_get(exit, "signal"));

	if (reason && streq(reason, "timeout"))
		return CLI_EXIT_TIMEOUT;
	if (reason && streq(reason, "launcher-lost"))
		return CLI_EXIT_UNAVAILABLE;
	if (sig > 0)
		return 128 + sig;
	return code;
}

static void print_exit_note(json_t *exit)
{
	const char *reason = json_string_value(json_object_get(exit, "reason"));
	json_t *created = json_object_get(exit, "hostExecutedCreated"), *v;
	size_t i;

	/* Files the host may run later that the sandbox may have created (cordon-policy(5),
	 * HOST-EXECUTED PATHS): say so, whatever the exit. */
	json_array_foreach(created, i, v)
		fprintf(stderr,
			"cordon: warning: \"%s\" did not exist when the command started and does "
			"now; tools on this host may run what it says (review it before you run "
			"git or direnv here)\n",
			json_string_value(v) ? json_string_value(v) : "?");
	if (!reason || streq(reason, "exited"))
		return;
	if (streq(reason, "timeout"))
		fprintf(stderr, "cordon: the command timed out and was killed\n");
	else if (streq(reason, "memory"))
		fprintf(stderr, "cordon: the command was killed: memory limit reached\n");
	else if (streq(reason, "killed"))
		fprintf(stderr, "cordon: the command was killed\n");
	else if (streq(reason, "launcher-lost"))
		fprintf(stderr, "cordon: the command was killed: its launcher was lost "
				"(cordon-launcherd exited or was restarted)\n");
}

/* Handle every complete message already buffered. Returns < 0 on a broken stream. */
static int drain_buffered(struct cli *cli, struct run_state *st)
{
	for (;;) {
		_cleanup_json_ json_t *msg = NULL;
		int rfds[IPC_MAX_FDS];
		size_t n_rfds = 0;
		struct field_error fe;
		enum jsonrpc_kind kind;
		const char *m;
		json_t *mid, *body;
		int r = jsonrpc_conn_next(cli->conn, &msg, rfds, &n_rfds, &fe);

		if (r == 0)
			return 0;
		if (r == -EBADMSG)
			continue;
		if (r < 0)
			return r;
		close_many(rfds, n_rfds);
		if (jsonrpc_classify(msg, &kind, &m, &mid, &body, &fe) >= 0 &&
		    kind == JSONRPC_KIND_NOTIFICATION)
			on_notify(body, m, st);
	}
}

/*
 * Wait for the process's exit notification, forwarding signals that reach us. The notification
 * may already sit in the connection's buffer (read together with the spawn's answer), so the
 * buffer is drained before every wait on the socket.
 */
static int wait_forwarding_signals(struct cli *cli, struct run_state *st)
{
	_cleanup_close_ int sfd = -1;
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return -errno;

	for (;;) {
		struct pollfd p[2] = { { .fd = jsonrpc_conn_fd(cli->conn), .events = POLLIN },
				       { .fd = sfd, .events = POLLIN } };
		struct signalfd_siginfo si;
		int r = drain_buffered(cli, st);

		if (r < 0)
			return r;
		if (st->exit)
			return 0;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[1].revents & POLLIN && read(sfd, &si, sizeof(si)) == sizeof(si)) {
			_cleanup_json_ json_t *req = NULL;

			req = jsonrpc_request_new(++cli->next_id, "process.signal",
						  json_pack("{s:s,s:i}", "processId",
							    st->process_id, "signal",
							    (int)si.ssi_signo));
			if (req)
				(void)jsonrpc_conn_send_wait(cli->conn, req, NULL, 0);
		}
		if (p[0].revents) {
			ssize_t n = jsonrpc_conn_fill(cli->conn);

			if (n == 0)
				return -ECONNRESET;
			if (n < 0 && n != -EAGAIN)
				return (int)n;
		}
	}
}

/*
 * The refusals of a command that failed (docs/DENIALS.md): the controller's "denial" events of
 * its process, each with the policy rule that decides it, printed once on stderr (or, with
 * --json, as the result's "denials"). The kernel's records may trail the exit: when the
 * launcher reads them, the stream is followed for a short bounded time after the exit.
 */
#define DENIALS_WAIT_USEC 200000ULL
#define DENIALS_MAX 64
#define DENIALS_LINES 10

struct denials {
	const char *process_id;
	const char *instance; /* the launcher's sandbox: a denial that came before the spawn
			       * event (their order is the launcher's) names only that */
	json_t *list;
	long long suppressed;
};

static void denial_collect(json_t *ev, const char *method, void *userdata)
{
	struct denials *d = userdata;
	json_t *s;

	const char *pid = json_string_value(json_object_get(ev, "processId"));

	if (!streq(method, "event") ||
	    !streq_ptr(json_string_value(json_object_get(ev, "type")), "denial"))
		return;
	if (pid ? !streq(pid, d->process_id)
		: !d->instance || !*d->instance ||
			    !streq_ptr(json_string_value(json_object_get(ev, "instance")),
				       d->instance))
		return;
	s = json_object_get(ev, "suppressed");
	if (json_is_integer(s))
		d->suppressed += json_integer_value(s);
	else if (json_array_size(d->list) < DENIALS_MAX)
		(void)json_array_append(d->list, ev);
	else
		d->suppressed++;
}

/* The process's denials: those already in the stream, then (reader on) those that come within
 * DENIALS_WAIT_USEC. Errors leave what was collected. */
static void denials_fetch(struct cli *cli, struct denials *d)
{
	_cleanup_json_ json_t *result = NULL, *error = NULL;
	unsigned long long deadline;
	json_t *e;
	size_t i;

	if (cli_call(cli, "events.subscribe", json_pack("{s:b}", "follow", true), NULL, 0, &result,
		     &error, denial_collect, d) < 0)
		return;
	json_array_foreach(json_object_get(result, "events"), i, e)
		denial_collect(e, "event", d);
	if (!json_is_true(json_object_get(result, "denialsReader")))
		return;
	deadline = now_usec() + DENIALS_WAIT_USEC;
	for (;;) {
		struct pollfd p = { .fd = jsonrpc_conn_fd(cli->conn), .events = POLLIN };
		unsigned long long now;
		ssize_t n;

		for (;;) {
			_cleanup_json_ json_t *msg = NULL;
			int rfds[IPC_MAX_FDS];
			size_t n_rfds = 0;
			struct field_error fe;
			enum jsonrpc_kind kind;
			const char *m;
			json_t *mid, *body;
			int r = jsonrpc_conn_next(cli->conn, &msg, rfds, &n_rfds, &fe);

			if (r == 0)
				break;
			if (r == -EBADMSG)
				continue;
			if (r < 0)
				return;
			close_many(rfds, n_rfds);
			if (jsonrpc_classify(msg, &kind, &m, &mid, &body, &fe) >= 0 &&
			    kind == JSONRPC_KIND_NOTIFICATION)
				denial_collect(body, m, d);
		}
		now = now_usec();
		if (now >= deadline)
			return;
		if (poll(&p, 1, (int)((deadline - now + 999) / 1000)) < 0 && errno != EINTR)
			return;
		if (!(p.revents & POLLIN))
			continue;
		n = jsonrpc_conn_fill(cli->conn);
		if (n == 0 || (n < 0 && n != -EAGAIN))
			return;
	}
}

/* The policy members of the command's request, for policy.explain and policy.check. */
static json_t *denials_policy_params(json_t *params)
{
	static const char *const keys[] = { "policy", "policyPatch", "callerCwd" };
	json_t *q = json_object();

	for (size_t i = 0; q && i < ELEMENTSOF(keys); i++)
		if (json_object_get(params, keys[i]))
			(void)json_object_set(q, keys[i], json_object_get(params, keys[i]));
	return q;
}

/* Which rule decides a denial, as policy.explain and the normalized policy say; NULL when it
 * cannot be told (a run in an acquired sandbox: its policy is the lease's). */
static char *denial_rule(struct cli *cli, json_t *params, json_t **normalized, json_t *ev)
{
	const char *kind = json_string_value(json_object_get(ev, "kind"));
	const char *path = json_string_value(json_object_get(ev, "path"));
	json_t *pol;

	if (streq_ptr(kind, "scope"))
		return strdup(
			"Landlock scoping: a sandbox never signals or connects out of itself");
	if (json_object_get(params, "sandbox"))
		return NULL;
	if (streq_ptr(kind, "fs") && path) {
		_cleanup_json_ json_t *res = NULL, *err = NULL, *q = denials_policy_params(params);
		const char *rule, *why;

		if (!q)
			return NULL;
		json_object_set_new(q, "path", json_string(path));
		if (cli_call(cli, "policy.explain", json_incref(q), NULL, 0, &res, &err, NULL,
			     NULL) < 0)
			return NULL;
		rule = json_string_value(json_object_get(res, "rule"));
		why = json_string_value(json_object_get(res, "why"));
		if (rule)
			return strdup_printf(
				"%s: %s", rule,
				json_is_true(json_object_get(res, "writable"))	 ? "writable"
				: json_is_true(json_object_get(res, "readable")) ? "read-only"
										 : "not readable");
		return why ? strdup(why) : NULL;
	}
	if (!*normalized) {
		_cleanup_json_ json_t *err = NULL, *q = denials_policy_params(params);

		if (!q || cli_call(cli, "policy.check", json_incref(q), NULL, 0, normalized, &err,
				   NULL, NULL) < 0)
			return NULL;
	}
	pol = json_object_get(*normalized, "policy");
	if (streq_ptr(kind, "net"))
		return strdup_printf(
			"network.mode %s",
			json_string_value(json_object_get(json_object_get(pol, "network"), "mode"))
				?: "?");
	if (streq_ptr(kind, "syscall"))
		return strdup(policy_denial_decider(pol, ev));
	return NULL;
}

/* "write-file /usr/x", "connect-tcp 127.0.0.1:9", "unshare": what was refused. */
static char *denial_what(json_t *ev)
{
	json_t *acc = json_object_get(ev, "access");
	const char *kind = json_string_value(json_object_get(ev, "kind"));
	_cleanup_free_ char *a = NULL;
	size_t i;
	json_t *v;

	if (streq_ptr(kind, "syscall"))
		return policy_denial_syscall_what(ev);
	json_array_foreach(acc, i, v) {
		char *n = strdup_printf("%s%s%s", a ? a : "", a ? "," : "",
					json_string_value(v) ?: "?");

		if (!n)
			return NULL;
		free(a);
		a = n;
	}
	if (streq_ptr(kind, "fs"))
		return strdup_printf("%s %s", a ?: "access",
				     json_string_value(json_object_get(ev, "path")) ?: "?");
	if (streq_ptr(kind, "net"))
		return strdup_printf("%s %s:%lld", a ?: "tcp",
				     json_string_value(json_object_get(ev, "address")) ?: "?",
				     (long long)json_integer_value(json_object_get(ev, "port")));
	return strdup_printf("%s (%s)", a ?: "scope", kind ?: "?");
}

/*
 * After a failed command: its denials, with their rules, into result (--json: "denials",
 * "denialsSuppressed") or once on stderr, one line per distinct refusal. Nothing when there
 * were none.
 */
static void denials_report(struct cli *cli, json_t *params, const char *process_id, json_t *result)
{
	_cleanup_json_ json_t *normalized = NULL, *seen = json_object();
	struct denials d = { .process_id = process_id,
			     .instance = json_string_value(json_object_get(result, "instance")),
			     .list = json_array() };
	size_t i, lines = 0, distinct = 0;
	json_t *ev;

	if (!process_id || !d.list || !seen) {
		json_decref(d.list);
		return;
	}
	denials_fetch(cli, &d);
	if (json_array_size(d.list) == 0 && d.suppressed == 0) {
		json_decref(d.list);
		return;
	}
	json_array_foreach(d.list, i, ev) {
		_cleanup_free_ char *what = denial_what(ev), *rule = NULL;
		json_t *prev = what ? json_object_get(seen, what) : NULL;

		if (prev) {
			/* The same refusal again: counted on its first report. */
			json_object_set_new(
				prev, "count",
				json_integer(json_integer_value(json_object_get(prev, "count")) +
					     1));
			continue;
		}
		rule = denial_rule(cli, params, &normalized, ev);
		if (rule)
			json_object_set_new(ev, "rule", json_string(rule));
		json_object_set_new(ev, "count", json_integer(1));
		if (what)
			json_object_set(seen, what, ev);
		distinct++;
	}
	if (cli->json) {
		_cleanup_json_ json_t *uniq = json_array();

		json_array_foreach(d.list, i, ev)
			if (json_object_get(ev, "count"))
				json_array_append(uniq, ev);
		json_object_set(result, "denials", uniq);
		if (d.suppressed)
			json_object_set_new(result, "denialsSuppressed",
					    json_integer(d.suppressed));
		json_decref(d.list);
		return;
	}
	fprintf(stderr,
		"cordon: %zu refusal%s in the sandbox (policy rule in brackets; "
		"'cordon policy explain --path P' for a path):\n",
		json_array_size(d.list) + (size_t)d.suppressed,
		json_array_size(d.list) + (size_t)d.suppressed == 1 ? "" : "s");
	json_array_foreach(d.list, i, ev) {
		_cleanup_free_ char *what = NULL;
		long long n = json_integer_value(json_object_get(ev, "count"));
		const char *rule = json_string_value(json_object_get(ev, "rule"));

		if (n == 0)
			continue;
		if (lines++ == DENIALS_LINES) {
			fprintf(stderr, "  … and %zu more kinds\n", distinct - DENIALS_LINES);
			break;
		}
		what = denial_what(ev);
		fprintf(stderr, "  %s%s%s%s", what ?: "?", rule ? " (" : "", rule ?: "",
			rule ? ")" : "");
		if (n > 1)
			fprintf(stderr, " (%lld times)", n);
		fputc('\n', stderr);
	}
	if (d.suppressed)
		fprintf(stderr, "  and %lld more, not reported one by one\n", d.suppressed);
	json_decref(d.list);
}

/* What run_command() returns when the active backend runs commands only in leases. */
#define RUN_NEEDS_LEASE (-1)

/* The controller's refusal of a one-shot run on a backend that transfers the workspace. */
static bool needs_lease(json_t *error)
{
	json_t *data = json_object_get(error, "data");

	return json_integer_value(json_object_get(error, "code")) == CORDON_ERR_POLICY_REFUSED &&
	       streq_ptr(json_string_value(json_object_get(data, "field")), "params.sandbox");
}

/* Run (or exec) the command the request describes; its exit status, or RUN_NEEDS_LEASE. */
static int run_command(struct cli *cli, json_t *params, bool capture, bool detach, bool tty,
		       const char *sandbox, unsigned long long t_start)
{
	_cleanup_json_ json_t *result = NULL, *error = NULL;
	struct run_state st = { 0 };
	unsigned long long t_answered;
	int r;

	if (capture) {
		json_t *out, *err;

		r = cli_call(cli, "process.exec", json_incref(params), NULL, 0, &result, &error,
			     NULL, NULL);
		if (r == -EREMOTEIO && !sandbox && needs_lease(error))
			return RUN_NEEDS_LEASE;
		if (r == -EREMOTEIO)
			return report_run_error(error, "exec", sandbox);
		if (r < 0)
			return CLI_EXIT_UNAVAILABLE;
		if (cli->json) {
			if (exit_status_of(result) != 0)
				denials_report(
					cli, params,
					json_string_value(json_object_get(result, "processId")),
					result);
			cli_print_json(result);
			return exit_status_of(result);
		}
		out = json_object_get(result, "stdout");
		err = json_object_get(result, "stderr");
		if (json_is_string(out))
			(void)loop_write(STDOUT_FILENO, json_string_value(out),
					 json_string_length(out));
		if (json_is_string(err))
			(void)loop_write(STDERR_FILENO, json_string_value(err),
					 json_string_length(err));
		if (json_is_true(json_object_get(result, "stdoutTruncated")) ||
		    json_is_true(json_object_get(result, "stderrTruncated")))
			fprintf(stderr, "cordon: output truncated at %lld bytes per stream\n",
				(long long)json_integer_value(
					json_object_get(result, "maxOutputBytes")));
		print_exit_note(result);
		if (exit_status_of(result) != 0)
			denials_report(cli, params,
				       json_string_value(json_object_get(result, "processId")),
				       result);
		return exit_status_of(result);
	}

	/* run: our stdio goes to the command as fds 0, 1, 2 of this message. A detached command
	 * outlives us: it gets none of our stdio (it would hold a pipe or terminal of ours open
	 * after we are gone); its output is discarded unless it redirects it itself, or it gets a
	 * terminal of the controller's (-t), which keeps its last output for `cordon attach`. */
	if (detach && tty) {
		json_object_del(params, "stdio");
		json_object_set_new(params, "pty", json_true());
		json_object_set_new(params, "detached", json_true());
	} else if (detach) {
		json_object_set_new(params, "stdio",
				    json_pack("{s:s,s:s,s:s}", "stdin", "null", "stdout", "null",
					      "stderr", "null"));
		json_object_set_new(params, "detached", json_true());
	} else if (tty) {
		/* A terminal of its own: the controller's pty, relayed by us (no fds). */
		json_object_del(params, "stdio");
		json_object_set_new(params, "pty", json_true());
	} else
		json_object_set_new(params, "stdio",
				    json_pack("{s:i,s:i,s:i}", "stdin", 0, "stdout", 1, "stderr",
					      2));
	{
		sigset_t mask;

		/* Block before spawning so no signal is lost between spawn and the wait loop. */
		sigemptyset(&mask);
		sigaddset(&mask, SIGINT);
		sigaddset(&mask, SIGTERM);
		sigaddset(&mask, SIGHUP);
		sigaddset(&mask, SIGQUIT);
		(void)sigprocmask(SIG_BLOCK, &mask, NULL);
	}
	r = cli_call(cli, "process.spawn", json_incref(params), (const int[]){ 0, 1, 2 },
		     detach || tty ? 0 : 3, &result, &error, on_notify, &st);
	if (r == -EREMOTEIO && !sandbox && !detach && needs_lease(error))
		return RUN_NEEDS_LEASE;
	if (r == -EREMOTEIO)
		return report_run_error(error, "run", sandbox);
	if (r < 0)
		return CLI_EXIT_UNAVAILABLE;
	t_answered = now_usec();
	st.process_id = json_string_value(json_object_get(result, "processId"));
	if (!st.process_id)
		return log_error("the controller's answer has no processId"), CLI_EXIT_FAILURE;
	if (detach) {
		if (cli->json)
			cli_print_json(result);
		else
			printf("%s\n", st.process_id);
		return CLI_EXIT_OK;
	}
	if (tty) {
		struct cli_tty_end end;

		r = cli_tty_relay(cli, st.process_id, false, &end);
		st.exit = end.exit;
		if (r >= 0 && end.signal > 0) {
			/* Our own end (killed, or our terminal hung up): the terminal is restored;
			 * the command goes with our connection. */
			json_decref(st.exit);
			return 128 + end.signal;
		}
	} else
		r = wait_forwarding_signals(cli, &st);
	if (r < 0) {
		log_error_errno(r, "lost the controller while waiting for the command: %m");
		return CLI_EXIT_UNAVAILABLE;
	}
	log_debug("timing (us after the start of the command): spawn answered %llu, exit notified "
		  "%llu [started at %llu]",
		  t_answered - t_start, now_usec() - t_start, t_start);
	r = exit_status_of(st.exit);
	if (cli->json) {
		if (r != 0)
			denials_report(cli, params, st.process_id, st.exit);
		cli_print_json(st.exit);
	} else {
		print_exit_note(st.exit);
		if (r != 0)
			denials_report(cli, params, st.process_id, st.exit);
	}
	json_decref(st.exit);
	return r;
}

/*
 * The active backend sees the workspace only through a lease: the command runs in one of its
 * own, acquired with the command's policy (its workspace read-write unless the command line
 * or the policy says), released at the end, which brings the changes back. What could not be
 * applied (conflicts, refused paths) is said on stderr.
 */
static int run_in_lease(struct cli *cli, json_t *params, bool capture, bool tty, const char *name,
			unsigned long long t_start)
{
	_cleanup_json_ json_t *acq = json_object(), *result = NULL, *error = NULL;
	json_t *patch = json_object_get(params, "policyPatch"), *ws, *counts;
	_cleanup_free_ char *id = NULL;
	int r, status;

	if (!acq)
		return CLI_EXIT_FAILURE;
	patch = patch ? json_deep_copy(patch) : json_object();
	ws = json_object_get(json_object_get(patch, "filesystem"), "workspace");
	if (!json_object_get(ws, "access") &&
	    !json_object_get(json_object_get(json_object_get(json_object_get(params, "policy"),
							     "filesystem"),
					     "workspace"),
			     "access")) {
		if (!json_object_get(patch, "filesystem"))
			json_object_set_new(patch, "filesystem", json_object());
		if (!ws) {
			ws = json_object();
			json_object_set_new(json_object_get(patch, "filesystem"), "workspace", ws);
		}
		json_object_set_new(ws, "access", json_string("read-write"));
	}
	json_object_set_new(acq, "policyPatch", patch);
	if (json_object_get(params, "policy"))
		json_object_set(acq, "policy", json_object_get(params, "policy"));
	json_object_set(acq, "env", json_object_get(params, "env"));
	json_object_set(acq, "callerCwd", json_object_get(params, "callerCwd"));
	r = cli_call(cli, "sandbox.acquire", json_incref(acq), NULL, 0, &result, &error, NULL,
		     NULL);
	if (r == -EREMOTEIO)
		return cli_report_error(error, name);
	if (r < 0)
		return CLI_EXIT_UNAVAILABLE;
	id = strdup(json_string_value(json_object_get(result, "sandboxId")) ?: "");
	if (!id || !*id)
		return log_error("the controller's answer has no sandboxId"), CLI_EXIT_FAILURE;
	log_debug("running in lease %s (the backend transfers the workspace)", id);
	json_object_del(params, "policy");
	json_object_del(params, "policyPatch");
	json_object_set_new(params, "sandbox", json_string(id));
	status = run_command(cli, params, capture, false, tty, id, t_start);

	json_decref(TAKE_PTR(result));
	json_decref(TAKE_PTR(error));
	r = cli_call(cli, "sandbox.release", json_pack("{s:s}", "sandboxId", id), NULL, 0, &result,
		     &error, NULL, NULL);
	if (r == -EREMOTEIO) {
		cli_report_error(error, name);
		return status == CLI_EXIT_OK ? CLI_EXIT_FAILURE : status;
	}
	if (r < 0)
		return CLI_EXIT_UNAVAILABLE;
	counts = json_object_get(json_object_get(result, "workspace"), "counts");
	if (json_integer_value(json_object_get(counts, "conflict")) > 0 ||
	    json_integer_value(json_object_get(counts, "refused")) > 0) {
		size_t i;
		json_t *it;

		fprintf(stderr, "cordon: %s: not every change came back to the workspace:\n", name);
		json_array_foreach(json_object_get(json_object_get(result, "workspace"), "items"),
				   i, it) {
			const char *action = json_string_value(json_object_get(it, "action"));

			if (action && (streq(action, "conflict") || streq(action, "refused")))
				fprintf(stderr, "  %s %s%s%s\n", action,
					json_string_value(json_object_get(it, "path")),
					json_object_get(it, "reason") ? ": " : "",
					json_string_value(json_object_get(it, "reason")) ?: "");
		}
	}
	return status;
}

int cli_cmd_run(struct cli *cli, int argc, char **argv, bool capture)
{
	enum {
		OPT_CWD = CLI_OPT_POLICY_END,
		OPT_SANDBOX,
		OPT_DETACH,
		OPT_JSON,
		OPT_TTY = 't',
		OPT_NO_TTY = 'T',
	};
	static const struct option opts[] = { CLI_POLICY_OPTIONS,
					      { "cwd", required_argument, NULL, OPT_CWD },
					      { "sandbox", required_argument, NULL, OPT_SANDBOX },
					      { "detach", no_argument, NULL, OPT_DETACH },
					      { "json", no_argument, NULL, OPT_JSON },
					      { "tty", no_argument, NULL, OPT_TTY },
					      { "no-tty", no_argument, NULL, OPT_NO_TTY },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	const char *name = capture ? "exec" : "run";
	_cleanup_(cli_policy_opts_done) struct cli_policy_opts po = { 0 };
	_cleanup_json_ json_t *params = json_object();
	_cleanup_json_ json_t *cmd = json_array(), *env = json_array();
	_cleanup_free_ char *cwd = NULL;
	const char *cwd_in = NULL, *sandbox = NULL;
	unsigned long long t_start = now_usec(), t_connected;
	bool detach = false, tty;
	int c, r, tty_opt = -1; /* -1: as the terminal says; 0 -T; 1 -t */

	if (cli_policy_opts_init(&po, name) < 0 || !params || !cmd || !env)
		return log_error_errno(ENOMEM, "out of memory"), CLI_EXIT_FAILURE;
	optind = 0;
	while ((c = getopt_long(argc, argv, capture ? "+h" : "+htT", opts, NULL)) >= 0) {
		switch (c) {
		case 'h':
			run_usage(capture);
			return CLI_EXIT_OK;
		case OPT_CWD:
			cwd_in = optarg;
			break;
		case OPT_SANDBOX:
			if (isempty(optarg))
				return cli_usage_error(name, "--sandbox needs an id", optarg);
			sandbox = optarg;
			break;
		case OPT_DETACH:
			detach = true;
			break;
		case OPT_JSON:
			cli->json = true;
			break;
		case OPT_TTY:
		case OPT_NO_TTY:
			if (capture) /* exec captures: no terminal to give */
				return cli_usage_error(name, "a terminal goes with run, not exec",
						       c == OPT_TTY ? "--tty" : "--no-tty");
			tty_opt = c == OPT_TTY;
			break;
		default:
			if (c >= CLI_OPT_POLICY && c < CLI_OPT_POLICY_END) {
				r = cli_policy_option(&po, c, optarg);
				if (r != CLI_EXIT_OK)
					return r;
				break;
			}
			fprintf(stderr, "Try 'cordon %s --help'.\n", name);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "cordon: no command given\nTry 'cordon %s --help'.\n", name);
		return CLI_EXIT_USAGE;
	}
	if (detach && capture)
		return cli_usage_error(name, "--detach goes with run, not exec", "--detach");
	if (sandbox && po.policy)
		return cli_usage_error(
			name,
			"--policy does not go with --sandbox (the sandbox's policy is "
			"the base; narrow it with the other options)",
			po.policy_file);
	/* The workspace's access: as the command line says; a --workspace DIR alone is
	 * read-write (the default's), except in a sandbox, whose access it keeps. */
	if (po.workspace_access || (po.workspace_given && !sandbox)) {
		r = cli_policy_set_workspace_access(&po, po.workspace_access ?: "read-write");
		if (r < 0)
			return log_error_errno(r, "out of memory"), CLI_EXIT_FAILURE;
	}
	for (int i = optind; i < argc; i++)
		json_array_append_new(cmd, json_string(argv[i]));
	for (char **e = environ; *e; e++)
		json_array_append_new(env, json_string(*e));
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return log_error_errno(errno, "cannot determine the current directory: %m"),
		       CLI_EXIT_FAILURE;

	if (po.policy)
		json_object_set(params, "policy", po.policy);
	if (json_object_size(po.patch) > 0)
		json_object_set(params, "policyPatch", po.patch);
	if (sandbox)
		json_object_set_new(params, "sandbox", json_string(sandbox));
	json_object_set(params, "argv", cmd);
	json_object_set(params, "env", env);
	json_object_set_new(params, "callerCwd", json_string(cwd));
	if (cwd_in)
		json_object_set_new(params, "cwd", json_string(cwd_in));

	r = cli_connect(cli);
	if (r < 0)
		return CLI_EXIT_UNAVAILABLE;
	t_connected = now_usec();
	log_debug("connected after %llu us", t_connected - t_start);
	/* A terminal of its own: asked for, or ours is one both ways (detached: only asked for). */
	tty = !capture && (tty_opt == 1 || (!detach && tty_opt < 0 && isatty(STDIN_FILENO) &&
					    isatty(STDOUT_FILENO)));
	r = run_command(cli, params, capture, detach, tty, sandbox, t_start);
	if (r == RUN_NEEDS_LEASE)
		r = run_in_lease(cli, params, capture, tty, name, t_start);
	return r;
}

static const char attach_usage[] =
	"Usage: cordon attach [--json] ID\n\n"
	"Attach this terminal to the terminal of process ID, started with\n"
	"'cordon run --detach -t': its last output is shown again, then what it writes;\n"
	"what is typed goes to it. Ctrl-P Ctrl-Q detaches and leaves it running. The last\n"
	"to attach takes over: an earlier attach ends.\n\n"
	"Exit status: the command's own if it ends while attached (128+N if signal N\n"
	"ended it); 0 when detached; 1 no such process, it has exited or it is not\n"
	"detached; 122 controller unavailable; 125 usage error, or the process has no\n"
	"terminal.\n";

int cli_cmd_attach(struct cli *cli, int argc, char **argv)
{
	_cleanup_json_ json_t *result = NULL, *error = NULL;
	struct cli_tty_end end;
	const char *b64, *id;
	int i, r;

	i = cli_simple_opts(cli, argc, argv, attach_usage, true);
	if (i < 0)
		return i == CLI_OPTS_HELP ? CLI_EXIT_OK : -i;
	if (i != argc - 1) {
		fprintf(stderr, "Usage: cordon attach [--json] ID\nTry 'cordon attach --help'.\n");
		return CLI_EXIT_USAGE;
	}
	id = argv[i];
	r = cli_connect(cli);
	if (r < 0)
		return CLI_EXIT_UNAVAILABLE;
	r = cli_call(cli, "process.attach", json_pack("{s:s}", "processId", id), NULL, 0, &result,
		     &error, NULL, NULL);
	if (r == -EREMOTEIO) {
		json_t *data = json_object_get(error, "data");

		if (streq_ptr(json_string_value(json_object_get(data, "reason")), "no-terminal")) {
			fprintf(stderr,
				"cordon: attach: %s has no terminal to attach to (start it with "
				"'cordon run --detach -t')\n",
				id);
			return CLI_EXIT_USAGE;
		}
		return cli_report_error(error, "attach");
	}
	if (r < 0)
		return CLI_EXIT_UNAVAILABLE;
	/* What it wrote while nobody was attached, then the live terminal. */
	b64 = json_string_value(json_object_get(result, "replay"));
	if (b64 && *b64) {
		_cleanup_free_ void *data = NULL;
		size_t len = 0;

		if (base64_decode(b64, strlen(b64), &data, &len) >= 0)
			(void)loop_write(STDOUT_FILENO, data, len);
	}
	r = cli_tty_relay(cli, id, true, &end);
	if (r < 0) {
		log_error_errno(r, "lost the controller while attached: %m");
		return CLI_EXIT_UNAVAILABLE;
	}
	if (end.signal > 0)
		return 128 + end.signal; /* the process runs on */
	if (end.detached || end.taken_over) {
		fprintf(stderr, "\r\ncordon: %s %s; it runs on ('cordon attach %s' to come back)\n",
			end.taken_over ? "another attach took over" : "detached from", id, id);
		return CLI_EXIT_OK;
	}
	if (cli->json)
		cli_print_json(end.exit);
	else
		print_exit_note(end.exit);
	r = exit_status_of(end.exit);
	json_decref(end.exit);
	return r;
}
