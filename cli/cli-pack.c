/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cordon pack install|list|enable|disable|remove: the controller's pack.* methods. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/json-cleanup.h"
#include "common/util.h"

static const char usage_text[] =
	"Usage: cordon pack install [--replace] DIR\n"
	"       cordon pack list [--json]\n"
	"       cordon pack enable ID\n"
	"       cordon pack disable ID\n"
	"       cordon pack remove ID\n\n"
	"install: validate the pack in DIR (its pack.json and every backend descriptor) and copy\n"
	"it into the controller's state; --replace reinstalls (upgrades) an installed id.\n"
	"list: the installed packs, enabled or not, and their backends (pack:ID:KIND).\n"
	"enable/disable: make the pack's backends available or not. Disabling or removing the\n"
	"pack of the active backend activates builtin:auto first, and is refused if that fails.\n"
	"A pack's settings and secrets are kept: reinstalling the same id gets them back.\n";

static void print_pack(json_t *p)
{
	json_t *b;
	size_t i;

	printf("%-3s %-32s %-12s %-8s %s\n", json_is_true(json_object_get(p, "active")) ? "*" : "",
	       json_string_value(json_object_get(p, "id")),
	       json_string_value(json_object_get(p, "version")),
	       json_is_true(json_object_get(p, "enabled")) ? "enabled" : "disabled",
	       json_string_value(json_object_get(p, "description")));
	json_array_foreach(json_object_get(p, "backends"), i, b)
		printf("      %s\n", json_string_value(b));
}

int cli_cmd_pack(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "json", no_argument, NULL, 'j' },
					      { "replace", no_argument, NULL, 'r' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	_cleanup_json_ json_t *result = NULL;
	bool replace = false;
	const char *sub;
	int c, r;

	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		switch (c) {
		case 'j':
			cli->json = true;
			break;
		case 'r':
			replace = true;
			break;
		case 'h':
			printf("%s", usage_text);
			return CLI_EXIT_OK;
		default:
			fprintf(stderr, "%s", usage_text);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	sub = argv[optind++];
	if (replace && !streq(sub, "install")) {
		fprintf(stderr, "cordon: --replace is for install\n%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	if (streq(sub, "list")) {
		json_t *p;
		size_t i;

		if (optind != argc) {
			fprintf(stderr, "%s", usage_text);
			return CLI_EXIT_USAGE;
		}
		r = cli_call_simple(cli, "pack.list", json_object(), &result, "pack list");
		if (r != CLI_EXIT_OK)
			return r;
		if (cli->json) {
			cli_print_json(result);
			return CLI_EXIT_OK;
		}
		printf("%-3s %-32s %-12s %-8s %s\n", "", "PACK", "VERSION", "STATE", "DESCRIPTION");
		json_array_foreach(json_object_get(result, "packs"), i, p)
			print_pack(p);
		return CLI_EXIT_OK;
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	if (streq(sub, "install")) {
		/* The controller reads the directory as the user; it needs an absolute path. */
		_cleanup_free_ char *dir = realpath(argv[optind], NULL);

		if (!dir) {
			fprintf(stderr, "cordon: pack install: \"%s\": %s\n", argv[optind],
				strerror(errno));
			return CLI_EXIT_FAILURE;
		}
		r = cli_call_simple(cli, "pack.install",
				    json_pack("{s:s,s:b}", "path", dir, "replace", replace),
				    &result, "pack install");
		if (r != CLI_EXIT_OK)
			return r;
		if (cli->json)
			cli_print_json(result);
		else {
			json_t *p = json_object_get(result, "pack");
			json_t *asks = json_object_get(p, "asks"), *v;
			const char *net = json_string_value(json_object_get(asks, "network"));
			size_t k;

			printf("%s pack %s %s\n",
			       json_is_true(json_object_get(result, "replaced")) ? "reinstalled"
										 : "installed",
			       json_string_value(json_object_get(p, "id")),
			       json_string_value(json_object_get(p, "version")));
			/* What it asks for, before anyone enables it. */
			printf("  its process's network: %s\n", net ? net : "none");
			json_array_foreach(json_object_get(asks, "domains"), k, v)
				printf("    domain %s\n", json_string_value(v));
			json_array_foreach(json_object_get(asks, "hostSockets"), k, v)
				printf("  host socket %s: %s (whoever talks to it may do what it "
				       "serves)\n",
				       json_string_value(json_object_get(v, "name")),
				       json_string_value(json_object_get(v, "path")));
			json_array_foreach(json_object_get(asks, "env"), k, v)
				printf("  environment variable %s (from the controller's "
				       "environment)\n",
				       json_string_value(v));
			if (!json_is_true(json_object_get(p, "enabled")))
				printf("  not enabled: it asks for more than a sandbox of its own; "
				       "enable it with 'cordon pack enable %s'\n",
				       json_string_value(json_object_get(p, "id")));
		}
		return CLI_EXIT_OK;
	}
	if (streq(sub, "enable") || streq(sub, "disable") || streq(sub, "remove")) {
		char method[32], what[32];

		(void)snprintf(method, sizeof(method), "pack.%s", sub);
		(void)snprintf(what, sizeof(what), "pack %s", sub);
		r = cli_call_simple(cli, method, json_pack("{s:s}", "id", argv[optind]), &result,
				    what);
		if (r != CLI_EXIT_OK)
			return r;
		if (cli->json)
			cli_print_json(result);
		else
			printf("%s %sd\n", argv[optind], sub);
		return CLI_EXIT_OK;
	}
	fprintf(stderr, "cordon: unknown pack command \"%s\"\n%s", sub, usage_text);
	return CLI_EXIT_USAGE;
}
