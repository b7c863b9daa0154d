/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cordon: the command-line client. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/log.h"
#include "common/util.h"

static const struct command {
	const char *name;
	const char *summary;
} commands[] = {
	{ "run", "run a command in a sandbox on this terminal" },
	{ "exec", "run a command in a sandbox and capture its output" },
	{ "sandbox", "acquire, release or list sandboxes that commands can share (--sandbox)" },
	{ "ps", "list sandboxed processes" },
	{ "kill", "signal a sandboxed process (default: kill its whole tree)" },
	{ "wait", "wait for a sandboxed process to end" },
	{ "attach", "attach this terminal to a detached process's terminal (run --detach -t)" },
	{ "events", "show the event stream (spawn, exit, denials, changes)" },
	{ "doctor", "show what this host supports, with a hint for each missing piece" },
	{ "policy", "check or explain a policy file" },
	{ "net", "allow or deny a domain for a running process (network mode proxy)" },
	{ "backend", "list backends, activate one, or show and change its settings" },
	{ "secret", "set or clear a backend's secret setting (value never on the command line)" },
	{ "pack", "install, list, enable, disable or remove backend packs" },
	{ "vm",
	  "set up builtin:vm's guest kernel (vm setup), fetch its helpers (vm fetch-helpers)" },
	{ "controller", "run the per-user controller in the foreground" },
};

/*
 * --json is a global flag, and every command but those that take a command line of their own
 * (run and exec parse their options up to the command; controller passes its arguments on)
 * accepts it anywhere after its name, up to a "--": "cordon backend list --json" is
 * "cordon --json backend list". Taken out of argv here, once for all of them.
 */
static int take_json(struct cli *cli, const char *cmd, int argc, char **argv)
{
	int n = 1;

	if (streq(cmd, "run") || streq(cmd, "exec") || streq(cmd, "controller"))
		return argc;
	for (int i = 1; i < argc; i++) {
		if (streq(argv[i], "--")) {
			while (i < argc)
				argv[n++] = argv[i++];
			break;
		}
		if (streq(argv[i], "--json"))
			cli->json = true;
		else
			argv[n++] = argv[i];
	}
	argv[n] = NULL;
	return n;
}

static void usage(void)
{
	printf("Usage: cordon [--json] [--socket PATH] [--non-interactive] COMMAND [OPTIONS]\n\n"
	       "Run untrusted commands in a sandbox described by a policy.\n\nCommands:\n");
	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		printf("  %-12s %s\n", commands[i].name, commands[i].summary);
	printf("\n'cordon COMMAND --help' describes each command. See cordon(1).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "json", no_argument, NULL, 'j' },
					      { "socket", required_argument, NULL, 's' },
					      { "non-interactive", no_argument, NULL, 'n' },
					      { "help", no_argument, NULL, 'h' },
					      { "version", no_argument, NULL, 'V' },
					      {} };
	struct cli cli = { 0 };
	const char *cmd;
	int c, r;

	log_set_ident("cordon");
	log_parse_environment();
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) >= 0) {
		switch (c) {
		case 'j':
			cli.json = true;
			break;
		case 's':
			cli.socket = optarg;
			break;
		case 'n':
			cli.non_interactive = true;
			break;
		case 'h':
			usage();
			return CLI_EXIT_OK;
		case 'V':
			printf("cordon %s\n", PACKAGE_VERSION);
			return CLI_EXIT_OK;
		default:
			fprintf(stderr, "Try 'cordon --help'.\n");
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage();
		return CLI_EXIT_USAGE;
	}
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	argc = take_json(&cli, cmd, argc, argv);

	if (streq(cmd, "run") || streq(cmd, "exec"))
		r = cli_cmd_run(&cli, argc, argv, streq(cmd, "exec"));
	else if (streq(cmd, "sandbox"))
		r = cli_cmd_sandbox(&cli, argc, argv);
	else if (streq(cmd, "ps"))
		r = cli_cmd_ps(&cli, argc, argv);
	else if (streq(cmd, "kill"))
		r = cli_cmd_kill(&cli, argc, argv);
	else if (streq(cmd, "wait"))
		r = cli_cmd_wait(&cli, argc, argv);
	else if (streq(cmd, "attach"))
		r = cli_cmd_attach(&cli, argc, argv);
	else if (streq(cmd, "events"))
		r = cli_cmd_events(&cli, argc, argv);
	else if (streq(cmd, "doctor"))
		r = cli_cmd_doctor(&cli, argc, argv);
	else if (streq(cmd, "policy"))
		r = cli_cmd_policy(&cli, argc, argv);
	else if (streq(cmd, "net"))
		r = cli_cmd_net(&cli, argc, argv);
	else if (streq(cmd, "backend"))
		r = cli_cmd_backend(&cli, argc, argv);
	else if (streq(cmd, "secret"))
		r = cli_cmd_secret(&cli, argc, argv);
	else if (streq(cmd, "pack"))
		r = cli_cmd_pack(&cli, argc, argv);
	else if (streq(cmd, "vm"))
		r = cli_cmd_vm(&cli, argc, argv);
	else if (streq(cmd, "controller"))
		r = cli_cmd_controller(&cli, argc, argv);
	else if (streq(cmd, "help")) {
		usage();
		r = CLI_EXIT_OK;
	} else {
		fprintf(stderr, "cordon: unknown command \"%s\"\nTry 'cordon --help'.\n", cmd);
		r = CLI_EXIT_USAGE;
	}
	jsonrpc_conn_free(cli.conn);
	return r;
}
