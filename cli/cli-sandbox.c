/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `cordon sandbox acquire|release|list`: leases on the controller's acquired sandboxes
 * (sandbox.acquire, sandbox.release, sandbox.list). A sandbox acquired here is detached: it
 * outlives this CLI until `cordon sandbox release`; `cordon run|exec --sandbox ID` runs commands
 * in it.
 *
 * The workspace's access is always sent, never left to the controller's default for an
 * acquisition: read-only unless the command line (or the --policy file) says read-write.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"

extern char **environ;

static const char sandbox_usage_text[] =
	"Usage: cordon sandbox acquire [OPTIONS] [--setup CMD | -- PROGRAM [ARG...]]\n"
	"       cordon sandbox release ID\n"
	"       cordon sandbox list [--json]\n\n"
	"acquire: resolve a policy once and keep a sandbox for it until it is released; print its\n"
	"id. Commands run in it with 'cordon run --sandbox ID' or 'cordon exec --sandbox ID'.\n"
	"release: kill what still runs in the sandbox (and in sandboxes acquired from it), forget\n"
	"it.\n"
	"list: the acquired sandboxes.\n"
	"'cordon sandbox acquire --help' lists the options of acquire.\n";

static void acquire_usage(void)
{
	printf("Usage: cordon sandbox acquire [OPTIONS] [--setup CMD | -- PROGRAM [ARG...]]\n\n"
	       "Acquire a sandbox that outlives this command; print its id.\n\n"
	       "Options:\n"
	       "  --setup CMD            run /bin/sh -c CMD in the sandbox first; if it fails\n"
	       "                         (non-zero exit), nothing is acquired (exit 121)\n"
	       "  -- PROGRAM [ARG...]    the same, with this argv and no shell\n"
	       "  --parent ID            acquire from sandbox ID: the policy may only narrow its\n"
	       "  --workspace DIR[:ro|:rw]\n"
	       "                         the workspace (default: the current directory)\n"
	       "  --workspace-access A   read-only (the default here) or read-write\n"
	       "  --policy FILE          start from this policy instead of the default\n"
	       "  --ro PATH              expose PATH read-only (repeatable)\n"
	       "  --rw PATH              expose PATH read-write (repeatable)\n"
	       "  --deny PATH            hide PATH, even under an exposed parent (repeatable)\n"
	       "  --net MODE             none (a loopback of its own), unix (no socket but\n"
	       "                         AF_UNIX), loopback, proxy or host (default: none)\n"
	       "  --allow-domain D[:P]   with --net proxy: allow this domain (repeatable)\n"
	       "  --deny-domain D        with --net proxy: deny this domain (repeatable)\n"
	       "  --resolve H:P:ADDR     with --net proxy: pin a name to an address (repeatable)\n"
	       "  --env NAME[=VALUE]     pass NAME from this environment, or set it (repeatable)\n"
	       "  --timeout SEC          kill each command after SEC seconds of wall-clock time\n"
	       "  --memory BYTES         memory limit (suffixes K, M, G)\n"
	       "  --pids N               process limit\n"
	       "  --max-output BYTES     capture at most BYTES of each stream (exec)\n"
	       "  --json                 print the result as JSON\n"
	       "  -h, --help             show this help\n\n"
	       "Exit status: 0 acquired; 120 policy refused (or it widens --parent's), 121 the\n"
	       "sandbox or its setup command failed, 122 controller unavailable, 125 usage error.\n");
}

/*
 * The workspace's access to send: the command line's; else the --policy file's own (it says
 * so explicitly too); else read-only. A --policy file without a workspace (null) keeps none
 * unless the command line names one.
 */
static int acquire_workspace_access(struct cli_policy_opts *po)
{
	json_t *ws = json_object_get(json_object_get(po->policy, "filesystem"), "workspace");
	const char *access = po->workspace_access;

	if (!access && po->policy) {
		if (json_is_null(ws) && !po->workspace_given)
			return 0;
		access = json_string_value(json_object_get(ws, "access"));
	}
	return cli_policy_set_workspace_access(po, access ?: "read-only");
}

/* What a failed setup hook wrote on one stream (the controller's capture), on stderr. */
static void print_output(const char *stream, json_t *text)
{
	size_t n = json_string_length(text);

	if (n == 0)
		return;
	fprintf(stderr, "--- its %s:\n", stream);
	(void)loop_write(STDERR_FILENO, json_string_value(text), n);
	if (json_string_value(text)[n - 1] != '\n')
		fputc('\n', stderr);
}

/* A failed acquisition: the setup hook's exit and output, or the controller's reason. */
static int report_acquire_error(struct cli *cli, json_t *error, const char *parent)
{
	json_t *data = json_object_get(error, "data");
	const char *step = json_string_value(json_object_get(data, "step"));
	const char *reason = json_string_value(json_object_get(data, "reason"));
	const char *field = json_string_value(json_object_get(data, "field"));
	int code = (int)json_integer_value(json_object_get(error, "code"));

	if (cli->json) {
		_cleanup_json_ json_t *j = json_pack("{s:O}", "error", error);

		if (j)
			cli_print_json(j);
	}
	if (parent && field && streq(field, "params.parent")) {
		fprintf(stderr,
			"cordon: sandbox acquire: no sandbox \"%s\" to acquire from: it was "
			"released or never acquired\n",
			parent);
		return CLI_EXIT_FAILURE;
	}
	if (code != CORDON_ERR_SETUP_FAILED)
		return cli_report_error(error, "sandbox acquire");
	if (step && streq(step, "setup")) {
		if (reason && streq(reason, "exited"))
			fprintf(stderr,
				"cordon: sandbox acquire: the setup command failed (exit status "
				"%lld); no sandbox was acquired\n",
				(long long)json_integer_value(json_object_get(data, "exitCode")));
		else
			fprintf(stderr,
				"cordon: sandbox acquire: the setup command %s; no sandbox was "
				"acquired\n",
				!reason				? "failed"
				: streq(reason, "spawn-failed") ? "could not be started"
				: streq(reason, "timeout")	? "timed out and was killed"
				: streq(reason, "memory")	? "reached the memory limit"
								: "was killed");
		if (!cli->json) {
			print_output("standard output", json_object_get(data, "stdout"));
			print_output("standard error", json_object_get(data, "stderr"));
		}
	} else {
		/* The sandbox could not be built, or the setup command could not start. */
		(void)cli_report_error(error, "sandbox acquire: the setup command could not run");
		fprintf(stderr, "cordon: sandbox acquire: no sandbox was acquired\n");
	}
	return CLI_EXIT_SETUP;
}

static int sandbox_acquire(struct cli *cli, int argc, char **argv)
{
	enum {
		OPT_SETUP = CLI_OPT_POLICY_END,
		OPT_PARENT,
		OPT_JSON,
	};
	static const struct option opts[] = { CLI_POLICY_OPTIONS,
					      { "setup", required_argument, NULL, OPT_SETUP },
					      { "parent", required_argument, NULL, OPT_PARENT },
					      { "json", no_argument, NULL, OPT_JSON },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	_cleanup_(cli_policy_opts_done) struct cli_policy_opts po = { 0 };
	_cleanup_json_ json_t *params = json_object(), *env = json_array(), *setup = NULL;
	_cleanup_json_ json_t *result = NULL, *error = NULL;
	_cleanup_free_ char *cwd = NULL;
	const char *parent = NULL, *setup_cmd = NULL, *sid;
	int c, r;

	if (cli_policy_opts_init(&po, "sandbox acquire") < 0 || !params || !env)
		return log_error_errno(ENOMEM, "out of memory"), CLI_EXIT_FAILURE;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) >= 0) {
		switch (c) {
		case 'h':
			acquire_usage();
			return CLI_EXIT_OK;
		case OPT_SETUP:
			if (isempty(optarg))
				return cli_usage_error(po.cmd, "--setup needs a command", optarg);
			setup_cmd = optarg;
			break;
		case OPT_PARENT:
			if (isempty(optarg))
				return cli_usage_error(po.cmd, "--parent needs an id", optarg);
			parent = optarg;
			break;
		case OPT_JSON:
			cli->json = true;
			break;
		default:
			if (c >= CLI_OPT_POLICY && c < CLI_OPT_POLICY_END) {
				r = cli_policy_option(&po, c, optarg);
				if (r != CLI_EXIT_OK)
					return r;
				break;
			}
			fprintf(stderr, "Try 'cordon sandbox acquire --help'.\n");
			return CLI_EXIT_USAGE;
		}
	}
	/* After the options: a setup argv run as it is (getopt stopped at "--" or at the first
	 * argument; the argv must follow a "--", so a stray word is not taken for a program). */
	if (optind < argc) {
		if (!streq(argv[optind - 1], "--"))
			return cli_usage_error(
				po.cmd, "unexpected argument (a setup program goes after --)",
				argv[optind]);
		if (setup_cmd)
			return cli_usage_error(po.cmd, "--setup and -- PROGRAM exclude each other",
					       argv[optind]);
		setup = json_array();
		for (int i = optind; setup && i < argc; i++)
			json_array_append_new(setup, json_string(argv[i]));
	} else if (setup_cmd)
		setup = json_pack("[s,s,s]", "/bin/sh", "-c", setup_cmd);
	if (parent && po.policy)
		return cli_usage_error(po.cmd,
				       "--policy does not go with --parent (the parent's policy is "
				       "the base; narrow it with the other options)",
				       po.policy_file);
	r = acquire_workspace_access(&po);
	if (r < 0)
		return log_error_errno(r, "out of memory"), CLI_EXIT_FAILURE;

	for (char **e = environ; *e; e++)
		json_array_append_new(env, json_string(*e));
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return log_error_errno(errno, "cannot determine the current directory: %m"),
		       CLI_EXIT_FAILURE;
	if (po.policy)
		json_object_set(params, "policy", po.policy);
	json_object_set(params, "policyPatch", po.patch);
	if (parent)
		json_object_set_new(params, "parent", json_string(parent));
	if (setup)
		json_object_set_new(params, "setup", json_pack("{s:O}", "argv", setup));
	json_object_set(params, "env", env);
	json_object_set_new(params, "callerCwd", json_string(cwd));
	/* A lease that outlives this process: only `cordon sandbox release` ends it. */
	json_object_set_new(params, "detached", json_true());

	if (cli_connect(cli) < 0)
		return CLI_EXIT_UNAVAILABLE;
	r = cli_call(cli, "sandbox.acquire", json_incref(params), NULL, 0, &result, &error, NULL,
		     NULL);
	if (r == -EREMOTEIO)
		return report_acquire_error(cli, error, parent);
	if (r < 0)
		return CLI_EXIT_UNAVAILABLE;
	sid = json_string_value(json_object_get(result, "sandboxId"));
	if (!sid)
		return log_error("the controller's answer has no sandboxId"), CLI_EXIT_FAILURE;
	if (cli->json)
		cli_print_json(result);
	else
		printf("%s\n", sid);
	return CLI_EXIT_OK;
}

static int sandbox_release(struct cli *cli, int argc, char **argv)
{
	static const char usage_text[] =
		"Usage: cordon sandbox release ID\n\n"
		"Release an acquired sandbox: kill what still runs in it (and in sandboxes acquired\n"
		"from it) and forget it. An unknown ID exits 1.\n";
	_cleanup_json_ json_t *result = NULL;
	int i, r;

	i = CLI_OPTS_OR_RETURN(cli, argc, argv, usage_text);
	if (i != argc - 1) {
		fprintf(stderr, "%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	r = cli_call_simple(cli, "sandbox.release", json_pack("{s:s}", "sandboxId", argv[i]),
			    &result, "sandbox release");
	if (r == CLI_EXIT_OK && cli->json)
		cli_print_json(result);
	return r;
}

/* "PATH (read-only)" of a sandbox's policy, "-" without a workspace. */
static void print_workspace(json_t *policy)
{
	json_t *ws = json_object_get(json_object_get(policy, "filesystem"), "workspace");
	const char *path = json_string_value(json_object_get(ws, "path"));
	const char *access = json_string_value(json_object_get(ws, "access"));

	if (!path)
		printf("-\n");
	else
		printf("%s (%s)\n", path, access ?: "?");
}

static int sandbox_list(struct cli *cli, int argc, char **argv)
{
	static const char usage_text[] =
		"Usage: cordon sandbox list [--json]\n\n"
		"List the acquired sandboxes: id, the sandbox it was acquired from, state (ready,\n"
		"or setup while its setup command runs), network mode, workspace.\n";
	_cleanup_json_ json_t *result = NULL;
	json_t *s;
	size_t k;
	int i, r;

	i = CLI_OPTS_OR_RETURN(cli, argc, argv, usage_text);
	if (i != argc) {
		fprintf(stderr, "%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	r = cli_call_simple(cli, "sandbox.list", json_object(), &result, "sandbox list");
	if (r != CLI_EXIT_OK)
		return r;
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	printf("%-10s %-10s %-6s %-9s %s\n", "ID", "PARENT", "STATE", "NETWORK", "WORKSPACE");
	json_array_foreach(json_object_get(result, "sandboxes"), k, s) {
		json_t *policy = json_object_get(s, "policy");
		const char *parent = json_string_value(json_object_get(s, "parent"));
		const char *net = json_string_value(
			json_object_get(json_object_get(policy, "network"), "mode"));

		printf("%-10s %-10s %-6s %-9s ", json_string_value(json_object_get(s, "sandboxId")),
		       parent ?: "-", json_is_true(json_object_get(s, "ready")) ? "ready" : "setup",
		       net ?: "?");
		print_workspace(policy);
	}
	return CLI_EXIT_OK;
}

int cli_cmd_sandbox(struct cli *cli, int argc, char **argv)
{
	int i = cli_simple_opts(cli, argc, argv, sandbox_usage_text, false);

	if (i < 0)
		return i == CLI_OPTS_HELP ? CLI_EXIT_OK : -i;
	if (i >= argc) {
		fprintf(stderr, "%s", sandbox_usage_text);
		return CLI_EXIT_USAGE;
	}
	/* The subcommand's own argv starts at its name (getopt skips argv[0]). */
	if (streq(argv[i], "acquire"))
		return sandbox_acquire(cli, argc - i, argv + i);
	if (streq(argv[i], "release"))
		return sandbox_release(cli, argc - i, argv + i);
	if (streq(argv[i], "list"))
		return sandbox_list(cli, argc - i, argv + i);
	fprintf(stderr, "cordon: unknown sandbox command \"%s\"\n%s", argv[i], sandbox_usage_text);
	return CLI_EXIT_USAGE;
}
