/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon vm fetch-helpers: prefetch builtin:vm's guest helpers into the directory the backend
 * uses (<vmDir>/bin: beside its kernel setting, by default $XDG_STATE_HOME/cordon/vm/bin), from
 * its helpersBaseUrl setting (or the built-in release URL). The settings come from the
 * controller; the download and the verification against the pins are cordon-vm-helpers', run
 * here as the user (the CLI links no libcurl), with its progress bar on this terminal.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/cleanup.h"
#include "common/json-cleanup.h"
#include "common/util.h"

#ifndef CORDON_LIBEXECDIR
#define CORDON_LIBEXECDIR "/usr/local/libexec"
#endif

static const char usage_text[] =
	"Usage: cordon vm fetch-helpers [--base-url URL] [--dir DIR] [--json]\n\n"
	"Fetch builtin:vm's guest helpers now (they are otherwise fetched when the backend first\n"
	"needs them), each verified against the sha256 this cordon was built with.\n"
	"  --base-url URL  where from (https:, http:, file:); default: builtin:vm's helpersBaseUrl\n"
	"                  setting, else the release mirror cordon was built with\n"
	"  --dir DIR       where to (default: bin/ beside builtin:vm's kernel setting, else\n"
	"                  $XDG_STATE_HOME/cordon/vm/bin)\n";

static const char *setting(json_t *view, const char *id)
{
	json_t *f;
	size_t i;

	json_array_foreach(json_object_get(view, "fields"), i, f) {
		if (!streq_ptr(json_string_value(json_object_get(f, "id")), id))
			continue;
		if (streq_ptr(json_string_value(json_object_get(f, "source")), "unset"))
			return NULL;
		return json_string_value(json_object_get(f, "value"));
	}
	return NULL;
}

static char *default_dir(void)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	if (!isempty(state))
		return strdup_printf("%s/cordon/vm/bin", state);
	return strdup_printf("%s/.local/state/cordon/vm/bin", isempty(home) ? "/" : home);
}

/* Run cordon-vm-helpers fetch; its lines ("NAME reused|fetched SHA256 SIZE PATH") become the
 * output. */
static int run_fetch(struct cli *cli, const char *dir, const char *base_url)
{
	_cleanup_free_ char *dflt = NULL;
	_cleanup_json_ json_t *list = json_array();
	const char *tool = getenv("CORDON_VM_HELPERS");
	const char *argv[9];
	char line[4096];
	size_t n = 0;
	int p[2], status;
	pid_t pid;
	FILE *f;

	if (isempty(tool)) {
		dflt = strdup_printf("%s/cordon-vm-helpers", CORDON_LIBEXECDIR);
		tool = dflt;
	}
	if (!tool || !list)
		return CLI_EXIT_FAILURE;
	argv[n++] = tool;
	argv[n++] = "fetch";
	argv[n++] = "--dir";
	argv[n++] = dir;
	if (base_url) {
		argv[n++] = "--base-url";
		argv[n++] = base_url;
	}
	argv[n++] = "--progress";
	argv[n] = NULL;

	if (pipe2(p, O_CLOEXEC) < 0) {
		fprintf(stderr, "cordon: vm fetch-helpers: %s\n", strerror(errno));
		return CLI_EXIT_FAILURE;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "cordon: vm fetch-helpers: %s\n", strerror(errno));
		safe_close(p[0]);
		safe_close(p[1]);
		return CLI_EXIT_FAILURE;
	}
	if (pid == 0) {
		if (dup2(p[1], STDOUT_FILENO) < 0)
			_exit(127);
		execv(tool, (char *const *)argv);
		fprintf(stderr, "cordon: vm fetch-helpers: cannot run %s: %s\n", tool,
			strerror(errno));
		_exit(127);
	}
	safe_close(p[1]);
	f = fdopen(p[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		char name[64], state[16], sha[65], path[3072];
		unsigned long long size;

		if (sscanf(line, "%63s %15s %64s %llu %3071[^\n]", name, state, sha, &size, path) !=
		    5)
			continue;
		if (cli->json)
			json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:I,s:s}", "name", name,
							      "state", state, "sha256", sha, "size",
							      (json_int_t)size, "path", path));
		else
			printf("%s: %s (%llu bytes, sha256 %s) %s\n", name, state, size, sha, path);
	}
	if (f)
		fclose(f);
	else
		safe_close(p[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return CLI_EXIT_FAILURE;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return WIFEXITED(status) && WEXITSTATUS(status) == 2 ? CLI_EXIT_USAGE
								     : CLI_EXIT_FAILURE;
	if (cli->json) {
		_cleanup_json_ json_t *out = json_pack("{s:s,s:O}", "dir", dir, "helpers", list);

		cli_print_json(out);
	}
	return CLI_EXIT_OK;
}

static int fetch_helpers(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "base-url", required_argument, NULL, 'u' },
					      { "dir", required_argument, NULL, 'd' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	_cleanup_json_ json_t *view = NULL;
	_cleanup_free_ char *dir = NULL;
	const char *base_url = NULL, *dir_arg = NULL;
	int c, r;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		switch (c) {
		case 'u':
			base_url = optarg;
			break;
		case 'd':
			dir_arg = optarg;
			break;
		case 'h':
			printf("%s", usage_text);
			return CLI_EXIT_OK;
		default:
			fprintf(stderr, "%s", usage_text);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	if (dir_arg && !path_is_absolute(dir_arg))
		return cli_usage_error("vm fetch-helpers", "--dir wants an absolute path", dir_arg);

	/* What the backend would use, unless both are given. */
	if (!dir_arg || !base_url) {
		const char *kernel;

		r = cli_call_simple(cli, "backend.settings.get",
				    json_pack("{s:s}", "backend", "builtin:vm"), &view,
				    "vm fetch-helpers");
		if (r != CLI_EXIT_OK)
			return r;
		if (!base_url)
			base_url = setting(view, "helpersBaseUrl");
		kernel = setting(view, "kernel");
		if (!dir_arg && !isempty(kernel) && strchr(kernel, '/')) {
			const char *slash = strrchr(kernel, '/');

			dir = strdup_printf("%.*s/bin", (int)(slash - kernel), kernel);
		}
	}
	if (dir_arg)
		dir = strdup(dir_arg);
	else if (!dir)
		dir = default_dir();
	if (!dir)
		return CLI_EXIT_FAILURE;
	return run_fetch(cli, dir, isempty(base_url) ? NULL : base_url);
}

int cli_cmd_vm(struct cli *cli, int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	if (streq(argv[1], "-h") || streq(argv[1], "--help")) {
		printf("%s", usage_text);
		return CLI_EXIT_OK;
	}
	if (streq(argv[1], "fetch-helpers"))
		return fetch_helpers(cli, argc - 1, argv + 1);
	fprintf(stderr, "cordon: vm: unknown command \"%s\"\n%s", argv[1], usage_text);
	return CLI_EXIT_USAGE;
}
