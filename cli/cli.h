/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cordon CLI: an unprivileged client of the user's controller. Links only jansson (no
 * libcurl, libsodium or libseccomp): its start-up time is part of every `cordon run`.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "ipc/ipc-jsonrpc.h"

/*
 * Exit codes (documented in cordon(1)). `run` and `exec` exit with the command's own status
 * (128+N when a signal N ended it); cordon's own failures use 120-127 so a script can tell them
 * apart from most commands' codes.
 */
enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAILURE = 1,  /* a non-run command failed (e.g. no such process) */
	CLI_EXIT_POLICY = 120, /* the policy is invalid, widens its parent, or the floor refuses */
	CLI_EXIT_SETUP = 121,  /* the sandbox could not be built */
	CLI_EXIT_UNAVAILABLE = 122,    /* the controller or launcher cannot be reached or started */
	CLI_EXIT_LIMIT = 123,	       /* a ceiling was reached (processes, memory) before start */
	CLI_EXIT_TIMEOUT = 124,	       /* the command ran past its wall-clock limit */
	CLI_EXIT_USAGE = 125,	       /* bad command line */
	CLI_EXIT_CANNOT_EXECUTE = 126, /* the program exists but could not be executed */
	CLI_EXIT_NOT_FOUND = 127,      /* the program was not found inside the sandbox */
};

struct cli {
	bool json;	      /* --json: machine-readable output */
	const char *socket;   /* --socket: controller socket path override */
	bool non_interactive; /* --non-interactive: host interactions answer "unavailable" */
	struct jsonrpc_conn *conn;
	json_int_t next_id;
};

/* Connect to the controller, starting it on demand (the embedded default). */
int cli_connect(struct cli *cli);

typedef void (*cli_notify_cb)(json_t *params, const char *method, void *userdata);

/*
 * One request, waiting for its answer. Notifications that arrive meanwhile go to notify (or are
 * dropped); requests from the controller (host interactions) are answered by the CLI.
 * Returns 0 with *ret_result set, or the negative JSON-RPC code's errno-ish mapping: on an error
 * reply, *ret_error holds the error object (and the return is -EREMOTEIO).
 */
int cli_call(struct cli *cli, const char *method, json_t *params, const int *fds, size_t n_fds,
	     json_t **ret_result, json_t **ret_error, cli_notify_cb notify, void *userdata);

/* Print an error reply (message, and the field when it names one) and map it to an exit code. */
int cli_report_error(json_t *error, const char *what);
int cli_exit_from_code(int code);

/*
 * The policy options that run, exec and `sandbox acquire` share (cli-run.c): each adds to the
 * policy (the default, the one given with --policy, or the sandbox's) as a policy patch.
 * A command's getopt table lists CLI_POLICY_OPTIONS, its own options numbered from
 * CLI_OPT_POLICY_END, and hands every CLI_OPT_* to cli_policy_option().
 */
enum {
	CLI_OPT_POLICY = 0x100,
	CLI_OPT_RO,
	CLI_OPT_RW,
	CLI_OPT_DENY,
	CLI_OPT_WORKSPACE,
	CLI_OPT_WORKSPACE_ACCESS,
	CLI_OPT_NET,
	CLI_OPT_ALLOW_DOMAIN,
	CLI_OPT_DENY_DOMAIN,
	CLI_OPT_RESOLVE,
	CLI_OPT_ENV,
	CLI_OPT_TIMEOUT,
	CLI_OPT_MEMORY,
	CLI_OPT_PIDS,
	CLI_OPT_MAX_OUTPUT,
	CLI_OPT_POLICY_END,
};

/* clang-format off */
#define CLI_POLICY_OPTIONS						\
	{ "policy", required_argument, NULL, CLI_OPT_POLICY },		\
	{ "ro", required_argument, NULL, CLI_OPT_RO },			\
	{ "rw", required_argument, NULL, CLI_OPT_RW },			\
	{ "deny", required_argument, NULL, CLI_OPT_DENY },		\
	{ "workspace", required_argument, NULL, CLI_OPT_WORKSPACE },	\
	{ "workspace-access", required_argument, NULL, CLI_OPT_WORKSPACE_ACCESS }, \
	{ "net", required_argument, NULL, CLI_OPT_NET },		\
	{ "allow-domain", required_argument, NULL, CLI_OPT_ALLOW_DOMAIN }, \
	{ "deny-domain", required_argument, NULL, CLI_OPT_DENY_DOMAIN }, \
	{ "resolve", required_argument, NULL, CLI_OPT_RESOLVE },	\
	{ "env", required_argument, NULL, CLI_OPT_ENV },		\
	{ "timeout", required_argument, NULL, CLI_OPT_TIMEOUT },	\
	{ "memory", required_argument, NULL, CLI_OPT_MEMORY },		\
	{ "pids", required_argument, NULL, CLI_OPT_PIDS },		\
	{ "max-output", required_argument, NULL, CLI_OPT_MAX_OUTPUT }
/* clang-format on */

struct cli_policy_opts {
	const char *cmd;	      /* for messages: "run", "sandbox acquire" */
	json_t *policy;		      /* --policy FILE, parsed */
	json_t *patch;		      /* everything else, as a policy patch */
	const char *policy_file;      /* --policy's FILE */
	const char *workspace_access; /* "read-only"/"read-write" when the command line says */
	bool workspace_given;	      /* --workspace DIR */
};

int cli_policy_opts_init(struct cli_policy_opts *po, const char *cmd);
void cli_policy_opts_done(struct cli_policy_opts *po);
/* Apply option c (a CLI_OPT_* below CLI_OPT_POLICY_END) with argument arg: CLI_EXIT_OK, or the
 * exit code after saying why. */
int cli_policy_option(struct cli_policy_opts *po, int c, const char *arg);
/* Set patch.filesystem.workspace.access. */
int cli_policy_set_workspace_access(struct cli_policy_opts *po, const char *access);
/* A usage error: "cordon: WHAT: "ARG"" and where to look; CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *what, const char *arg);

/* Subcommands. */
int cli_cmd_run(struct cli *cli, int argc, char **argv, bool capture);

/* How a relay ended (cli_tty_relay()): one of these is set. */
struct cli_tty_end {
	json_t *exit;	 /* the process.exit notification (the caller's reference) */
	int signal;	 /* a signal ended the CLI: SIGTERM, SIGHUP, SIGINT, SIGQUIT */
	bool detached;	 /* attach: the detach keys (Ctrl-P Ctrl-Q) */
	bool taken_over; /* attach: another client attached (process.detached) */
};

/*
 * cli-tty.c: relay a process spawned with a pty (this terminal in raw mode while it runs) until
 * its exit notification or a signal that ends the CLI; attach (`cordon attach`): also until the
 * detach keys or another attach. The terminal is restored on return, and at exit whatever
 * happens.
 */
int cli_tty_relay(struct cli *cli, const char *process_id, bool attach, struct cli_tty_end *end);
void cli_tty_restore(void);
/* `cordon attach ID` (cli-run.c). */
int cli_cmd_attach(struct cli *cli, int argc, char **argv);
int cli_cmd_sandbox(struct cli *cli, int argc, char **argv);
int cli_cmd_ps(struct cli *cli, int argc, char **argv);
int cli_cmd_kill(struct cli *cli, int argc, char **argv);
int cli_cmd_wait(struct cli *cli, int argc, char **argv);
int cli_cmd_events(struct cli *cli, int argc, char **argv);
int cli_cmd_doctor(struct cli *cli, int argc, char **argv);
int cli_cmd_policy(struct cli *cli, int argc, char **argv);
int cli_cmd_controller(struct cli *cli, int argc, char **argv);
int cli_cmd_backend(struct cli *cli, int argc, char **argv);
int cli_cmd_net(struct cli *cli, int argc, char **argv);
int cli_cmd_secret(struct cli *cli, int argc, char **argv);

/*
 * "[--json] [-h]" of a command without options of its own: optind; or, usage printed,
 * CLI_OPTS_HELP (-h) or -CLI_EXIT_USAGE. anywhere: the options may follow the arguments
 * (getopt's permutation), else they end at the first argument.
 */
#define CLI_OPTS_HELP (-CLI_EXIT_OK - 1000)
int cli_simple_opts(struct cli *cli, int argc, char **argv, const char *usage_text, bool anywhere);
/* cli_simple_opts() (options before the arguments), returning the exit code on -h or a
 * usage error. */
#define CLI_OPTS_OR_RETURN(cli, argc, argv, text)                       \
	({                                                              \
		int _o = cli_simple_opts(cli, argc, argv, text, false); \
		if (_o < 0)                                             \
			return _o == CLI_OPTS_HELP ? CLI_EXIT_OK : -_o; \
		_o;                                                     \
	})
int cli_cmd_pack(struct cli *cli, int argc, char **argv);
/* `cordon vm fetch-helpers` (cli-vm.c). */
int cli_cmd_vm(struct cli *cli, int argc, char **argv);
/* Connect if needed, call, report an error reply (returning its exit code); params is stolen. */
int cli_call_simple(struct cli *cli, const char *method, json_t *params, json_t **ret,
		    const char *what);
/* `cordon backend settings REF …` (cli-secret.c); argv[0] is "settings". */
/*
 * A --set ID=VALUE as the type of field ID in view (a backend.settings.get answer) wants it:
 * numbers and booleans parsed, anything that does not parse sent as a string, so the
 * controller's error names the field. NULL (said why): a secret, which never goes on the
 * command line. (cli-secret.c)
 */
json_t *cli_setting_value(json_t *view, const char *ref, const char *id, const char *text);
int cli_cmd_backend_settings(struct cli *cli, int argc, char **argv);

/* cli-interact.c: answer a request from the controller (host.interaction) on the terminal, or
 * "unavailable" without one. */
int cli_interact_answer(struct cli *cli, json_t *id, const char *method, json_t *params);
/* Read one line from stdin without echo (prompt on stderr) into buf; -ENODATA at EOF, -E2BIG
 * when longer than size - 1. */
int cli_read_secret(const char *prompt, char *buf, size_t size, size_t *ret_len);
/* Locked (best effort), zeroed memory for plaintext; cli_secret_free() wipes it. */
char *cli_secret_alloc(size_t size);
void cli_secret_free(char *p, size_t size);

/* Print a JSON value (pretty) on stdout. */
void cli_print_json(json_t *j);
