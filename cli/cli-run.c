/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `cordon run` and `cordon exec`: turn command-line flags into a policy patch, ask the controller
 * to start the command, and exit with its status.
 *
 *   run:  the command gets this terminal's stdin/stdout/stderr (passed as fds); signals that
 *         reach the CLI (Ctrl-C, kill) are forwarded to the sandboxed process.
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
	       "  --workspace DIR[:ro]   the workspace (default: the current directory, read-write)\n"
	       "  --cwd DIR              working directory inside the sandbox\n"
	       "  --net MODE             none, loopback, proxy or host (default: none)\n"
	       "  --allow-domain D[:P]   with --net proxy: allow this domain (repeatable)\n"
	       "  --deny-domain D        with --net proxy: deny this domain (repeatable)\n"
	       "  --resolve H:P:ADDR     with --net proxy: pin a name to an address (repeatable)\n"
	       "  --env NAME[=VALUE]     pass NAME from this environment, or set it (repeatable)\n"
	       "  --timeout SEC          kill the command after SEC seconds of wall-clock time\n"
	       "  --memory BYTES         memory limit (suffixes K, M, G)\n"
	       "  --pids N               process limit\n"
	       "  --max-output BYTES     capture at most BYTES of each stream (exec)\n"
	       "  --detach               (run) keep running when this CLI exits; print the id\n"
	       "                         (its stdio is /dev/null)\n"
	       "  --json                 print the result as JSON\n"
	       "  -h, --help             show this help\n\n"
	       "Exit status: the command's own (128+N if signal N ended it); 120 policy refused,\n"
	       "121 sandbox set-up failed, 122 controller unavailable or its launcher lost,\n"
	       "123 limit reached, 124 timed out, 125 usage error, 126 cannot execute,\n"
	       "127 command not found.\n");
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

static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "cordon: %s: \"%s\"\nTry 'cordon run --help'.\n", what, arg);
	return CLI_EXIT_USAGE;
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

int cli_cmd_run(struct cli *cli, int argc, char **argv, bool capture)
{
	enum {
		OPT_POLICY = 0x100,
		OPT_RO,
		OPT_RW,
		OPT_DENY,
		OPT_WORKSPACE,
		OPT_CWD,
		OPT_NET,
		OPT_ALLOW_DOMAIN,
		OPT_DENY_DOMAIN,
		OPT_RESOLVE,
		OPT_ENV,
		OPT_TIMEOUT,
		OPT_MEMORY,
		OPT_PIDS,
		OPT_MAX_OUTPUT,
		OPT_DETACH,
		OPT_JSON,
	};
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "ro", required_argument, NULL, OPT_RO },
		{ "rw", required_argument, NULL, OPT_RW },
		{ "deny", required_argument, NULL, OPT_DENY },
		{ "workspace", required_argument, NULL, OPT_WORKSPACE },
		{ "cwd", required_argument, NULL, OPT_CWD },
		{ "net", required_argument, NULL, OPT_NET },
		{ "allow-domain", required_argument, NULL, OPT_ALLOW_DOMAIN },
		{ "deny-domain", required_argument, NULL, OPT_DENY_DOMAIN },
		{ "resolve", required_argument, NULL, OPT_RESOLVE },
		{ "env", required_argument, NULL, OPT_ENV },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "memory", required_argument, NULL, OPT_MEMORY },
		{ "pids", required_argument, NULL, OPT_PIDS },
		{ "max-output", required_argument, NULL, OPT_MAX_OUTPUT },
		{ "detach", no_argument, NULL, OPT_DETACH },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	_cleanup_json_ json_t *patch = json_object(), *params = json_object(), *policy = NULL;
	_cleanup_json_ json_t *result = NULL, *error = NULL, *cmd = json_array(),
			      *env = json_array();
	_cleanup_free_ char *cwd = NULL;
	const char *cwd_in = NULL;
	struct run_state st = { 0 };
	unsigned long long t_start = now_usec(), t_connected, t_answered;
	bool detach = false;
	uint64_t v;
	int c, r;

	if (!patch || !params || !cmd || !env)
		return log_error_errno(ENOMEM, "out of memory");
	optind = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) >= 0) {
		switch (c) {
		case 'h':
			run_usage(capture);
			return CLI_EXIT_OK;
		case OPT_POLICY: {
			json_error_t je;

			json_decref(policy);
			policy = json_load_file(optarg, JSON_REJECT_DUPLICATES, &je);
			if (!policy) {
				fprintf(stderr, "cordon: policy \"%s\": line %d column %d: %s\n",
					optarg, je.line, je.column, je.text);
				return CLI_EXIT_POLICY;
			}
			break;
		}
		case OPT_RO:
		case OPT_RW:
		case OPT_DENY:
			json_array_append_new(patch_arr(patch_obj(patch, "filesystem"),
							c == OPT_RO   ? "read"
							: c == OPT_RW ? "write"
								      : "deny"),
					      json_string(optarg));
			break;
		case OPT_WORKSPACE: {
			_cleanup_free_ char *p = strdup(optarg);
			const char *access = "read-write";
			char *colon;

			if (!p)
				return CLI_EXIT_FAILURE;
			colon = strrchr(p, ':');
			if (colon && (streq(colon, ":ro") || streq(colon, ":rw"))) {
				access = streq(colon, ":ro") ? "read-only" : "read-write";
				*colon = '\0';
			}
			if (isempty(p))
				return usage_error("--workspace needs a directory", optarg);
			json_object_set_new(patch_obj(patch, "filesystem"), "workspace",
					    json_pack("{s:s,s:s}", "path", p, "access", access));
			break;
		}
		case OPT_CWD:
			cwd_in = optarg;
			break;
		case OPT_NET:
			if (!streq(optarg, "none") && !streq(optarg, "loopback") &&
			    !streq(optarg, "proxy") && !streq(optarg, "host"))
				return usage_error("--net must be none, loopback, proxy or host",
						   optarg);
			json_object_set_new(patch_obj(patch, "network"), "mode",
					    json_string(optarg));
			break;
		case OPT_ALLOW_DOMAIN:
		case OPT_DENY_DOMAIN:
			json_array_append_new(patch_arr(patch_obj(patch, "network"),
							c == OPT_ALLOW_DOMAIN ? "allowDomains"
									      : "denyDomains"),
					      json_string(optarg));
			break;
		case OPT_RESOLVE: {
			/* curl's HOST:PORT:ADDRESS (the pin holds for every port of HOST), or the
			 * policy's own HOST=ADDRESS. */
			const char *c1 = strchr(optarg, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
			_cleanup_free_ char *pin = NULL;

			if (strchr(optarg, '='))
				pin = strdup(optarg);
			else if (c1 && c2 && c1 > optarg && c2[1])
				pin = strdup_printf("%.*s=%s", (int)(c1 - optarg), optarg, c2 + 1);
			else
				return usage_error("--resolve needs HOST:PORT:ADDRESS", optarg);
			json_array_append_new(patch_arr(patch_obj(patch, "network"), "resolve"),
					      json_string(pin));
			break;
		}
		case OPT_ENV: {
			const char *eq = strchr(optarg, '=');
			json_t *e = patch_obj(patch, "env");

			if (eq == optarg)
				return usage_error("--env needs a NAME", optarg);
			if (eq) {
				_cleanup_free_ char *name = strndup(optarg, (size_t)(eq - optarg));

				json_object_set_new(patch_obj(e, "set"), name, json_string(eq + 1));
			} else
				json_array_append_new(patch_arr(e, "pass"), json_string(optarg));
			break;
		}
		case OPT_TIMEOUT:
			if (safe_atou64(optarg, &v) < 0 || v == 0)
				return usage_error("--timeout needs a positive number of seconds",
						   optarg);
			json_object_set_new(patch_obj(patch, "limits"), "wallSeconds",
					    json_integer((json_int_t)v));
			break;
		case OPT_MEMORY:
		case OPT_MAX_OUTPUT:
			if (parse_size(optarg, &v) < 0 || v == 0)
				return usage_error("expected a size in bytes (suffix K, M or G)",
						   optarg);
			json_object_set_new(patch_obj(patch, "limits"),
					    c == OPT_MEMORY ? "memoryBytes" : "maxOutputBytes",
					    json_integer((json_int_t)v));
			break;
		case OPT_PIDS:
			if (safe_atou64(optarg, &v) < 0 || v == 0)
				return usage_error("--pids needs a positive number", optarg);
			json_object_set_new(patch_obj(patch, "limits"), "pids",
					    json_integer((json_int_t)v));
			break;
		case OPT_DETACH:
			detach = true;
			break;
		case OPT_JSON:
			cli->json = true;
			break;
		default:
			fprintf(stderr, "Try 'cordon %s --help'.\n", capture ? "exec" : "run");
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "cordon: no command given\nTry 'cordon %s --help'.\n",
			capture ? "exec" : "run");
		return CLI_EXIT_USAGE;
	}
	if (detach && capture)
		return usage_error("--detach goes with run, not exec", "--detach");
	for (int i = optind; i < argc; i++)
		json_array_append_new(cmd, json_string(argv[i]));
	for (char **e = environ; *e; e++)
		json_array_append_new(env, json_string(*e));
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return log_error_errno(errno, "cannot determine the current directory: %m"),
		       CLI_EXIT_FAILURE;

	if (policy)
		json_object_set(params, "policy", policy);
	if (json_object_size(patch) > 0)
		json_object_set(params, "policyPatch", patch);
	json_object_set(params, "argv", cmd);
	json_object_set(params, "env", env);
	json_object_set_new(params, "callerCwd", json_string(cwd));
	if (cwd_in)
		json_object_set_new(params, "cwd", json_string(cwd_in));

	r = cli_connect(cli);
	if (r < 0)
		return CLI_EXIT_UNAVAILABLE;
	t_connected = now_usec();

	if (capture) {
		json_t *out, *err;

		r = cli_call_simple(cli, "process.exec", json_incref(params), &result, "exec");
		if (r != CLI_EXIT_OK)
			return r;
		if (cli->json) {
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
		return exit_status_of(result);
	}

	/* run: our stdio goes to the command as fds 0, 1, 2 of this message. A detached command
	 * outlives us: it gets none of our stdio (it would hold a pipe or terminal of ours open
	 * after we are gone); its output is discarded unless it redirects it itself. */
	if (detach) {
		json_object_set_new(params, "stdio",
				    json_pack("{s:s,s:s,s:s}", "stdin", "null", "stdout", "null",
					      "stderr", "null"));
		json_object_set_new(params, "detached", json_true());
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
		     detach ? 0 : 3, &result, &error, on_notify, &st);
	if (r == -EREMOTEIO)
		return cli_report_error(error, "run");
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
	r = wait_forwarding_signals(cli, &st);
	if (r < 0) {
		log_error_errno(r, "lost the controller while waiting for the command: %m");
		return CLI_EXIT_UNAVAILABLE;
	}
	log_debug("timing (us after the start of the command): connected %llu, spawn answered "
		  "%llu, exit notified %llu [started at %llu]",
		  t_connected - t_start, t_answered - t_start, now_usec() - t_start, t_start);
	if (cli->json)
		cli_print_json(st.exit);
	else
		print_exit_note(st.exit);
	r = exit_status_of(st.exit);
	json_decref(st.exit);
	return r;
}
