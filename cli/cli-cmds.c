/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The smaller cordon subcommands: ps, kill, wait, events, doctor, policy, controller. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/util.h"
#include "policy/policy-suggest.h"

#ifndef CORDON_LIBEXECDIR
#define CORDON_LIBEXECDIR "/usr/local/libexec"
#endif

int cli_simple_opts(struct cli *cli, int argc, char **argv, const char *usage_text, bool anywhere)
{
	static const struct option opts[] = { { "json", no_argument, NULL, 'j' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, anywhere ? "h" : "+h", opts, NULL)) >= 0) {
		switch (c) {
		case 'j':
			cli->json = true;
			break;
		case 'h':
			printf("%s", usage_text);
			return CLI_OPTS_HELP;
		default:
			fprintf(stderr, "%s", usage_text);
			return -CLI_EXIT_USAGE;
		}
	}
	return optind;
}

/*
 * "[--json] [-h] SUB ARG..." of a command with subcommands: the index of SUB in subs[] (NULL
 * terminated), with *ret_next the index of its first argument; or a negative code as
 * cli_simple_opts() returns one (usage printed).
 */
static int subcommand(struct cli *cli, int argc, char **argv, const char *usage_text,
		      const char *cmd, const char *const *subs, int *ret_next)
{
	int i = cli_simple_opts(cli, argc, argv, usage_text, false);

	if (i < 0)
		return i;
	if (i >= argc) {
		fprintf(stderr, "%s", usage_text);
		return -CLI_EXIT_USAGE;
	}
	for (int k = 0; subs[k]; k++)
		if (streq(argv[i], subs[k])) {
			*ret_next = i + 1;
			return k;
		}
	fprintf(stderr, "cordon: unknown %s command \"%s\"\n%s", cmd, argv[i], usage_text);
	return -CLI_EXIT_USAGE;
}

#define SUBCOMMAND_OR_RETURN(cli, argc, argv, text, cmd, subs, next)         \
	({                                                                   \
		int _s = subcommand(cli, argc, argv, text, cmd, subs, next); \
		if (_s < 0)                                                  \
			return _s == CLI_OPTS_HELP ? CLI_EXIT_OK : -_s;      \
		_s;                                                          \
	})

/* Connect, call, report an error; on success *ret holds the result. */
static int call_simple(struct cli *cli, const char *method, json_t *params, json_t **ret,
		       const char *what)
{
	_cleanup_json_ json_t *error = NULL;
	int r;

	if (!cli->conn && cli_connect(cli) < 0) {
		json_decref(params);
		return CLI_EXIT_UNAVAILABLE;
	}
	r = cli_call(cli, method, params, NULL, 0, ret, &error, NULL, NULL);
	if (r == -EREMOTEIO)
		return cli_report_error(error, what);
	if (r < 0)
		return CLI_EXIT_UNAVAILABLE;
	return CLI_EXIT_OK;
}

int cli_call_simple(struct cli *cli, const char *method, json_t *params, json_t **ret,
		    const char *what)
{
	return call_simple(cli, method, params, ret, what);
}

int cli_cmd_ps(struct cli *cli, int argc, char **argv)
{
	_cleanup_json_ json_t *result = NULL;
	json_t *procs, *p;
	size_t i;
	int r;

	(void)CLI_OPTS_OR_RETURN(
		cli, argc, argv,
		"Usage: cordon ps [--json]\n\nList this user's sandboxed processes.\n");
	r = call_simple(cli, "process.list", json_object(), &result, "ps");
	if (r != CLI_EXIT_OK)
		return r;
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	procs = json_object_get(result, "processes");
	printf("%-12s %-8s %-8s %-16s %s\n", "ID", "STATE", "PID", "LAUNCHER", "COMMAND");
	json_array_foreach(procs, i, p) {
		json_t *argvj = json_object_get(p, "argv"), *a;
		size_t k;

		printf("%-12s %-8s %-8lld %-16s",
		       json_string_value(json_object_get(p, "processId")),
		       json_string_value(json_object_get(p, "state")),
		       (long long)json_integer_value(json_object_get(p, "pid")),
		       json_string_value(json_object_get(p, "launcher")));
		json_array_foreach(argvj, k, a)
			printf(" %s", json_string_value(a));
		putchar('\n');
	}
	return CLI_EXIT_OK;
}

static int parse_signal(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = { { "KILL", SIGKILL }, { "TERM", SIGTERM }, { "INT", SIGINT },
		      { "HUP", SIGHUP },   { "QUIT", SIGQUIT }, { "USR1", SIGUSR1 },
		      { "USR2", SIGUSR2 }, { "STOP", SIGSTOP }, { "CONT", SIGCONT } };
	int n;

	if (safe_atoi(s, &n) >= 0)
		return n > 0 && n < 65 ? n : -EINVAL;
	if (startswith(s, "SIG"))
		s += 3;
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (streq(s, names[i].name))
			return names[i].sig;
	return -EINVAL;
}

int cli_cmd_kill(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "signal", required_argument, NULL, 's' },
					      { "json", no_argument, NULL, 'j' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	_cleanup_json_ json_t *result = NULL;
	int sig = SIGKILL, c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+s:h", opts, NULL)) >= 0) {
		switch (c) {
		case 's':
			sig = parse_signal(optarg);
			if (sig < 0) {
				fprintf(stderr, "cordon: unknown signal \"%s\"\n", optarg);
				return CLI_EXIT_USAGE;
			}
			break;
		case 'j':
			cli->json = true;
			break;
		case 'h':
			printf("Usage: cordon kill [-s SIGNAL] ID\n\nSignal a sandboxed process. "
			       "The default, KILL, ends its whole process tree.\n");
			return CLI_EXIT_OK;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "Usage: cordon kill [-s SIGNAL] ID\n");
		return CLI_EXIT_USAGE;
	}
	return call_simple(cli, "process.signal",
			   json_pack("{s:s,s:i}", "processId", argv[optind], "signal", sig),
			   &result, "kill");
}

int cli_cmd_wait(struct cli *cli, int argc, char **argv)
{
	_cleanup_json_ json_t *result = NULL;
	int i, r, code, sig;

	i = CLI_OPTS_OR_RETURN(
		cli, argc, argv,
		"Usage: cordon wait [--json] ID\n\nWait for a sandboxed process to end; "
		"exit with its status.\n");
	if (i != argc - 1) {
		fprintf(stderr, "Usage: cordon wait [--json] ID\n");
		return CLI_EXIT_USAGE;
	}
	r = call_simple(cli, "process.wait", json_pack("{s:s}", "processId", argv[i]), &result,
			"wait");
	if (r != CLI_EXIT_OK)
		return r;
	if (cli->json)
		cli_print_json(result);
	code = (int)json_integer_value(json_object_get(result, "exitCode"));
	sig = (int)json_integer_value(json_object_get(result, "signal"));
	if (streq_ptr(json_string_value(json_object_get(result, "reason")), "timeout"))
		return CLI_EXIT_TIMEOUT;
	if (streq_ptr(json_string_value(json_object_get(result, "reason")), "launcher-lost"))
		return CLI_EXIT_UNAVAILABLE;
	return sig > 0 ? 128 + sig : code;
}

/* cordon events --denials / ID: which events to print */
struct event_filter {
	bool denials;	/* only "denial" events */
	const char *id; /* only events naming this process, sandbox or launcher sandbox */
};

static bool event_names(json_t *ev, const char *id)
{
	static const char *const keys[] = { "processId", "sandboxId", "instance" };

	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (streq_ptr(json_string_value(json_object_get(ev, keys[i])), id))
			return true;
	return false;
}

static void print_event(json_t *params, const char *method, void *userdata)
{
	const struct event_filter *f = userdata;
	_cleanup_free_ char *s = NULL;

	if (!streq(method, "event"))
		return;
	if (f && f->denials &&
	    !streq_ptr(json_string_value(json_object_get(params, "type")), "denial"))
		return;
	if (f && f->id && !event_names(params, f->id))
		return;
	s = json_dumps(params, JSON_COMPACT);
	if (s) {
		printf("%s\n", s);
		fflush(stdout);
	}
}

int cli_cmd_events(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "follow", no_argument, NULL, 'f' },
					      { "denials", no_argument, NULL, 'd' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	_cleanup_json_ json_t *result = NULL, *error = NULL;
	struct event_filter filter = { 0 };
	bool follow = false;
	json_t *e;
	size_t i;
	int c, r;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+fh", opts, NULL)) >= 0) {
		switch (c) {
		case 'f':
			follow = true;
			break;
		case 'd':
			filter.denials = true;
			break;
		case 'h':
			printf("Usage: cordon events [--follow] [--denials] [ID]\n\nPrint the event "
			       "stream as JSON lines: recent events, then (with --follow) new ones as "
			       "they happen. --denials: only refusals inside sandboxes (\"denial\" "
			       "events); ID: only events of that process or sandbox.\n");
			return CLI_EXIT_OK;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc)
		filter.id = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "cordon events: one ID at most\n");
		return CLI_EXIT_USAGE;
	}
	if (cli_connect(cli) < 0)
		return CLI_EXIT_UNAVAILABLE;
	r = cli_call(cli, "events.subscribe", json_pack("{s:b}", "follow", follow), NULL, 0,
		     &result, &error, print_event, &filter);
	if (r == -EREMOTEIO)
		return cli_report_error(error, "events");
	if (r < 0)
		return CLI_EXIT_UNAVAILABLE;
	json_array_foreach(json_object_get(result, "events"), i, e)
		print_event(e, "event", &filter);
	if (!follow)
		return CLI_EXIT_OK;
	/* Follow: print notifications until the controller goes away or we are interrupted. */
	for (;;) {
		_cleanup_json_ json_t *msg = NULL;
		int fds[IPC_MAX_FDS];
		size_t n_fds;
		struct field_error fe;
		enum jsonrpc_kind kind;
		const char *m;
		json_t *id, *body;

		r = jsonrpc_conn_recv(cli->conn, &msg, fds, &n_fds, -1, &fe);
		if (r == -EBADMSG)
			continue;
		if (r <= 0)
			return r == 0 ? CLI_EXIT_OK : CLI_EXIT_UNAVAILABLE;
		close_many(fds, n_fds);
		if (jsonrpc_classify(msg, &kind, &m, &id, &body, &fe) >= 0 &&
		    kind == JSONRPC_KIND_NOTIFICATION)
			print_event(body, m, &filter);
	}
}

int cli_cmd_doctor(struct cli *cli, int argc, char **argv)
{
	_cleanup_json_ json_t *result = NULL;
	json_t *checks, *ck;
	size_t i;
	int r;

	(void)CLI_OPTS_OR_RETURN(
		cli, argc, argv,
		"Usage: cordon doctor [--json]\n\nShow what this host supports for "
		"sandboxing, with a hint for each missing piece.\n");
	r = call_simple(cli, "host.doctor", json_object(), &result, "doctor");
	if (r != CLI_EXIT_OK)
		return r;
	if (cli->json) {
		cli_print_json(result);
		return CLI_EXIT_OK;
	}
	checks = json_object_get(result, "checks");
	json_array_foreach(checks, i, ck) {
		const char *hint = json_string_value(json_object_get(ck, "hint"));

		printf("%-4s %-28s %s\n", json_is_true(json_object_get(ck, "ok")) ? "ok" : "--",
		       json_string_value(json_object_get(ck, "name")),
		       json_string_value(json_object_get(ck, "detail")));
		if (hint)
			printf("     Hint: %s\n", hint);
	}
	return CLI_EXIT_OK;
}

/* The nearest directory at or above path that exists here (a path as the sandbox sees it,
 * which for a file is the host's own), or NULL. */
static char *nearest_dir(const char *path)
{
	_cleanup_free_ char *p = strdup(path);
	struct stat st;

	while (p && *p) {
		char *slash;

		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
			return TAKE_PTR(p);
		slash = strrchr(p, '/');
		if (!slash)
			break;
		if (slash == p) {
			p[1] = '\0';
			return TAKE_PTR(p);
		}
		*slash = '\0';
	}
	return NULL;
}

/*
 * cordon policy suggest ID [FILE]: the denials of process or sandbox ID (the recent events),
 * each with policy.explain's answer for its path under FILE (default: the embedded default
 * policy), and policy_suggest()'s patch and notes. Never applied.
 */
static int policy_suggest_cmd(struct cli *cli, const char *id, json_t *params)
{
	_cleanup_json_ json_t *evs = NULL, *checked = NULL, *denials = json_array(), *out = NULL;
	json_t *e, *items, *it;
	size_t i;
	int r;

	if (!denials)
		return CLI_EXIT_FAILURE;
	r = call_simple(cli, "events.subscribe", json_object(), &evs, "policy suggest");
	if (r != CLI_EXIT_OK)
		return r;
	json_array_foreach(json_object_get(evs, "events"), i, e)
		if (streq_ptr(json_string_value(json_object_get(e, "type")), "denial") &&
		    event_names(e, id))
			json_array_append(denials, e);
	if (json_array_size(denials) == 0) {
		if (cli->json) {
			_cleanup_json_ json_t *none =
				json_pack("{s:s,s:{},s:[]}", "id", id, "patch", "items");

			cli_print_json(none);
		} else
			printf("%s: no refusal among the recent events: nothing to suggest\n", id);
		return CLI_EXIT_OK;
	}
	r = call_simple(cli, "policy.check", json_incref(params), &checked, "policy suggest");
	if (r != CLI_EXIT_OK)
		return r;
	json_array_foreach(denials, i, e) {
		_cleanup_json_ json_t *q = NULL, *ex = NULL, *err = NULL;
		_cleanup_free_ char *dir = NULL;
		const char *path = json_string_value(json_object_get(e, "path"));

		if (!streq_ptr(json_string_value(json_object_get(e, "kind")), "fs") || !path)
			continue;
		q = json_deep_copy(params);
		if (!q)
			return CLI_EXIT_FAILURE;
		json_object_set_new(q, "path", json_string(path));
		if (cli_call(cli, "policy.explain", json_incref(q), NULL, 0, &ex, &err, NULL,
			     NULL) >= 0)
			json_object_set(e, "explain", ex);
		dir = nearest_dir(path);
		if (dir)
			json_object_set_new(e, "dir", json_string(dir));
	}
	if (policy_suggest(json_object_get(checked, "policy"), denials, &out) < 0)
		return log_error("out of memory"), CLI_EXIT_FAILURE;
	json_object_set_new(out, "id", json_string(id));
	if (cli->json) {
		cli_print_json(out);
		return CLI_EXIT_OK;
	}
	items = json_object_get(out, "items");
	json_array_foreach(items, i, it) {
		const char *ch = json_string_value(json_object_get(it, "change"));

		printf("%s: %s%s\n", json_string_value(json_object_get(it, "what")),
		       ch ? "" : "nothing to suggest: ",
		       ch ? ch : json_string_value(json_object_get(it, "none")));
	}
	if (json_object_size(json_object_get(out, "patch")) > 0) {
		_cleanup_free_ char *s =
			json_dumps(json_object_get(out, "patch"), JSON_INDENT(2) | JSON_SORT_KEYS);

		printf("The policy patch (not applied; merge it into the policy: objects merge, "
		       "arrays append):\n%s\n",
		       s ? s : "?");
	} else
		printf("No policy change would have allowed %s.\n",
		       json_array_size(items) == 1 ? "it" : "them");
	return CLI_EXIT_OK;
}

int cli_cmd_policy(struct cli *cli, int argc, char **argv)
{
	static const char usage_text[] =
		"Usage: cordon policy check FILE\n"
		"       cordon policy explain [FILE] [--path P]\n"
		"       cordon policy suggest ID [FILE]\n\n"
		"check: validate FILE; errors name the JSON field and the reason.\n"
		"explain: show which layer enforces each rule of FILE (default: the embedded\n"
		"default policy) on this host, and what cannot be enforced; with --path P, whether a\n"
		"sandbox under it sees P, may read or write it, and which rule decides.\n"
		"suggest: from the refusals of process or sandbox ID (cordon events --denials ID),\n"
		"the smallest change to FILE (the policy it ran under; default: the embedded\n"
		"default) that would have allowed each, as a policy patch. Never applied.\n";
	static const char *const subs[] = { "check", "explain", "suggest", NULL };
	const char *suggest_id = NULL;
	_cleanup_json_ json_t *result = NULL, *params = json_object();
	const char *sub;
	int i, r;

	sub = subs[SUBCOMMAND_OR_RETURN(cli, argc, argv, usage_text, "policy", subs, &i)];
	if (streq(sub, "suggest")) {
		if (i >= argc) {
			fprintf(stderr, "%s", usage_text);
			return CLI_EXIT_USAGE;
		}
		suggest_id = argv[i++];
	}
	/* explain --path P (anywhere after the subcommand): what a sandbox finds at P. */
	for (int k = i; streq(sub, "explain") && k < argc; k++)
		if (streq(argv[k], "--path")) {
			_cleanup_free_ char *cwd = getcwd(NULL, 0), *joined = NULL, *real = NULL;

			if (k + 1 >= argc) {
				fprintf(stderr, "%s", usage_text);
				return CLI_EXIT_USAGE;
			}
			joined = path_is_absolute(argv[k + 1])
					 ? strdup(argv[k + 1])
					 : strdup_printf("%s/%s", cwd ? cwd : "/", argv[k + 1]);
			real = joined ? realpath(joined, NULL) : NULL;
			if (!real && joined && path_is_normalized(joined))
				real = strdup(joined);
			if (!real) {
				fprintf(stderr,
					"cordon: policy explain: --path \"%s\": give it as a "
					"normalized absolute path (it does not exist here)\n",
					argv[k + 1]);
				return CLI_EXIT_USAGE;
			}
			json_object_set_new(params, "path", json_string(real));
			memmove(argv + k, argv + k + 2, (size_t)(argc - k - 2) * sizeof(char *));
			argc -= 2;
			break;
		}
	if (i < argc) {
		json_error_t je;
		json_t *p = json_load_file(argv[i], JSON_REJECT_DUPLICATES, &je);

		if (!p) {
			fprintf(stderr, "cordon: policy \"%s\": line %d column %d: %s\n", argv[i],
				je.line, je.column, je.text);
			return CLI_EXIT_POLICY;
		}
		json_object_set_new(params, "policy", p);
		i++;
	} else if (streq(sub, "check")) {
		fprintf(stderr, "%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	if (i != argc) {
		fprintf(stderr, "%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	{
		_cleanup_free_ char *cwd = getcwd(NULL, 0);

		if (cwd)
			json_object_set_new(params, "callerCwd", json_string(cwd));
	}
	if (suggest_id)
		return policy_suggest_cmd(cli, suggest_id, params);
	r = call_simple(cli, streq(sub, "check") ? "policy.check" : "policy.explain",
			json_incref(params), &result,
			streq(sub, "check") ? "policy check" : "policy explain");
	if (r != CLI_EXIT_OK)
		return r;
	if (cli->json)
		cli_print_json(result);
	else if (streq(sub, "check"))
		printf("%s: ok\n", argv[i - 1]);
	else if (json_object_get(params, "path")) {
		printf("%s: %s%s%s\n  %s\n", json_string_value(json_object_get(result, "path")),
		       json_is_true(json_object_get(result, "visible")) ? "visible" : "not visible",
		       json_is_true(json_object_get(result, "readable")) ? ", readable" : "",
		       json_is_true(json_object_get(result, "writable"))  ? ", writable"
		       : json_is_true(json_object_get(result, "visible")) ? ", not writable"
									  : "",
		       json_string_value(json_object_get(result, "why")));
		if (json_string_value(json_object_get(result, "rule")))
			printf("  rule: %s\n", json_string_value(json_object_get(result, "rule")));
	} else {
		const char *text = json_string_value(json_object_get(result, "text"));

		if (text)
			fputs(text, stdout);
		else
			cli_print_json(result);
	}
	return CLI_EXIT_OK;
}

int cli_cmd_controller(struct cli *cli, int argc, char **argv)
{
	const char *bin = getenv("CORDON_CONTROLLER");
	_cleanup_free_ char *dflt = NULL;

	if (isempty(bin)) {
		dflt = strdup_printf("%s/cordon-controller", CORDON_LIBEXECDIR);
		if (!dflt)
			return CLI_EXIT_FAILURE;
		bin = dflt;
	}
	/* argv[0] is "controller"; everything after it goes to the daemon. */
	argv[0] = (char *)"cordon-controller";
	execv(bin, argv);
	log_error_errno(errno, "cannot run \"%s\": %m", bin);
	return CLI_EXIT_UNAVAILABLE;
}

int cli_cmd_backend(struct cli *cli, int argc, char **argv)
{
	static const char usage_text[] =
		"Usage: cordon backend list [--json]\n"
		"       cordon backend activate REF [--set ID=VALUE]... [--json]\n"
		"       cordon backend settings REF [--set ID=VALUE]... [--reset ID]... [--json]\n\n"
		"list: every backend (builtin:auto, builtin:host, pack:ID:KIND), its descriptor and\n"
		"claims, and which one serves new processes.\n"
		"activate: switch new processes to REF, atomically; running processes stay with the\n"
		"launcher that created them. A failure leaves the current backend active.\n"
		"settings: show every setting of REF (value or default; secrets only as configured\n"
		"or not), or change some; a change of the active backend is an activation.\n"
		"Secrets are set with 'cordon secret set REF FIELD', never on the command line.\n";
	static const char *const subs[] = { "list", "activate", "settings", NULL };
	_cleanup_json_ json_t *result = NULL, *settings = json_object();
	const char *sub;
	int i, r;

	sub = subs[SUBCOMMAND_OR_RETURN(cli, argc, argv, usage_text, "backend", subs, &i)];
	if (streq(sub, "settings"))
		return cli_cmd_backend_settings(cli, argc - i + 1, argv + i - 1);
	if (streq(sub, "list")) {
		json_t *b;
		size_t k;

		if (i != argc) {
			fprintf(stderr, "%s", usage_text);
			return CLI_EXIT_USAGE;
		}
		r = call_simple(cli, "backend.list", json_object(), &result, "backend list");
		if (r != CLI_EXIT_OK)
			return r;
		if (cli->json) {
			cli_print_json(result);
			return CLI_EXIT_OK;
		}
		printf("%-3s %-28s %-10s %s\n", "", "BACKEND", "ISOLATION", "NAME");
		json_array_foreach(json_object_get(result, "backends"), k, b) {
			json_t *d = json_object_get(b, "descriptor");

			printf("%-3s %-28s %-10s %s\n",
			       json_is_true(json_object_get(b, "active")) ? "*" : "",
			       json_string_value(json_object_get(b, "ref")),
			       json_string_value(
				       json_object_get(json_object_get(d, "claims"), "isolation")),
			       json_string_value(json_object_get(d, "name")));
		}
		return CLI_EXIT_OK;
	}
	if (streq(sub, "activate")) {
		_cleanup_json_ json_t *view = NULL;
		const char *ref;

		if (i >= argc) {
			fprintf(stderr, "%s", usage_text);
			return CLI_EXIT_USAGE;
		}
		ref = argv[i++];
		for (; i < argc; i++) {
			_cleanup_free_ char *id = NULL;
			const char *eq;
			json_t *v;

			if (!streq(argv[i], "--set") || i + 1 >= argc ||
			    !(eq = strchr(argv[i + 1], '=')) || eq == argv[i + 1]) {
				fprintf(stderr, "cordon: expected --set ID=VALUE\n%s", usage_text);
				return CLI_EXIT_USAGE;
			}
			i++;
			/* The descriptor says each value's type (a number, a boolean). */
			if (!view) {
				r = call_simple(cli, "backend.settings.get",
						json_pack("{s:s}", "backend", ref), &view,
						"backend activate");
				if (r != CLI_EXIT_OK)
					return r;
			}
			id = strndup(argv[i], (size_t)(eq - argv[i]));
			v = id ? cli_setting_value(view, ref, id, eq + 1) : NULL;
			if (!v)
				return id ? CLI_EXIT_USAGE : CLI_EXIT_FAILURE;
			json_object_set_new(settings, id, v);
		}
		r = call_simple(cli, "backend.activate",
				json_pack("{s:s,s:O}", "backend", ref, "settings", settings),
				&result, "backend activate");
		if (r != CLI_EXIT_OK)
			return r;
		if (cli->json)
			cli_print_json(result);
		else
			printf("%s is active (%s)\n",
			       json_string_value(json_object_get(result, "active")),
			       json_string_value(json_object_get(result, "launcher")));
		return CLI_EXIT_OK;
	}
	return CLI_EXIT_USAGE; /* not reached: subs[] has no other */
}

int cli_cmd_net(struct cli *cli, int argc, char **argv)
{
	static const char usage_text[] =
		"Usage: cordon net allow ID DOMAIN\n"
		"       cordon net deny ID DOMAIN\n\n"
		"Change the allowed domains of a running process in network mode proxy: new\n"
		"connections follow the change, open ones keep theirs. DOMAIN is NAME, *.SUFFIX,\n"
		"optionally with :PORT. Every change is an event.\n";
	_cleanup_json_ json_t *result = NULL;
	int i, r;

	i = CLI_OPTS_OR_RETURN(cli, argc, argv, usage_text);
	if (argc - i != 3 || (!streq(argv[i], "allow") && !streq(argv[i], "deny"))) {
		fprintf(stderr, "%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	r = call_simple(cli, streq(argv[i], "allow") ? "net.allow" : "net.deny",
			json_pack("{s:s,s:s}", "processId", argv[i + 1], "domain", argv[i + 2]),
			&result, "net");
	if (r == CLI_EXIT_OK && cli->json)
		cli_print_json(result);
	return r;
}
