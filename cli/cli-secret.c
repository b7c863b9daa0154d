/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon secret set|clear REF FIELD, and cordon backend settings REF [--set ID=VALUE]….
 *
 * A secret's value never comes from argv (where every user on the host can read it in
 * /proc/PID/cmdline): `secret set` reads it from a no-echo prompt when stdin is a terminal, or
 * from stdin otherwise (one value; a single trailing newline is dropped). Empty input means
 * "no change", and the CLI says so.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/json-cleanup.h"
#include "common/util.h"

/* The controller's BACKEND_SETTING_VALUE_MAX. */
#define SECRET_MAX 4096

/* The whole of stdin (not a terminal) as one value, without a single trailing newline. */
static int read_secret_stdin(char *buf, size_t size, size_t *ret_len)
{
	size_t n = 0;

	for (;;) {
		ssize_t k;

		if (n + 1 >= size)
			return -E2BIG;
		k = read(STDIN_FILENO, buf + n, size - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += (size_t)k;
	}
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
	*ret_len = n;
	return 0;
}

static int secret_set(struct cli *cli, const char *ref, const char *field)
{
	_cleanup_json_ json_t *result = NULL, *params = NULL;
	char *buf = cli_secret_alloc(SECRET_MAX + 2);
	json_t *value;
	size_t len = 0;
	int r;

	if (!buf)
		return CLI_EXIT_FAILURE;
	if (isatty(STDIN_FILENO)) {
		_cleanup_free_ char *prompt = strdup_printf(
			"Secret %s of %s (input hidden; empty: no change): ", field, ref);

		r = cli_read_secret(prompt, buf, SECRET_MAX + 1, &len);
	} else
		r = read_secret_stdin(buf, SECRET_MAX + 2, &len);
	if (r == -E2BIG || (r >= 0 && len > SECRET_MAX)) {
		cli_secret_free(buf, SECRET_MAX + 2);
		fprintf(stderr, "cordon: secret set: the value is longer than %d bytes\n",
			SECRET_MAX);
		return CLI_EXIT_USAGE;
	}
	if (r == -ENODATA)
		r = 0, len = 0;
	if (r < 0) {
		cli_secret_free(buf, SECRET_MAX + 2);
		fprintf(stderr, "cordon: secret set: cannot read the value: %s\n", strerror(-r));
		return CLI_EXIT_FAILURE;
	}
	if (memchr(buf, '\0', len)) {
		cli_secret_free(buf, SECRET_MAX + 2);
		fprintf(stderr, "cordon: secret set: the value contains a NUL byte\n");
		return CLI_EXIT_USAGE;
	}
	value = json_stringn(buf, len);
	cli_secret_free(buf, SECRET_MAX + 2);
	if (!value)
		return CLI_EXIT_FAILURE;
	/* Held here too, so jansson's copy can be wiped once the request is sent. */
	params = json_pack("{s:s,s:s,s:O}", "backend", ref, "field", field, "value", value);
	if (!params) {
		json_decref(value);
		return CLI_EXIT_FAILURE;
	}
	r = cli_call_simple(cli, "secret.set", json_incref(params), &result, "secret set");
	explicit_bzero((char *)json_string_value(value), json_string_length(value));
	json_decref(value);
	if (r != CLI_EXIT_OK)
		return r;
	if (cli->json)
		cli_print_json(result);
	else if (!json_is_true(json_object_get(result, "changed")))
		printf("empty input: %s of %s is unchanged (%s)\n", field, ref,
		       json_is_true(json_object_get(result, "configured")) ? "configured"
									   : "not configured");
	else
		printf("%s of %s: configured\n", field, ref);
	return CLI_EXIT_OK;
}

int cli_cmd_secret(struct cli *cli, int argc, char **argv)
{
	static const char usage_text[] =
		"Usage: cordon secret set REF FIELD [--json]\n"
		"       cordon secret clear REF FIELD [--json]\n\n"
		"set: read the value of the secret setting FIELD of backend REF from a prompt\n"
		"without echo (stdin is a terminal) or from stdin, never from the command line.\n"
		"Empty input changes nothing. clear: remove the stored value.\n"
		"Values are encrypted at rest and never shown; the next activation of REF uses them.\n";
	_cleanup_json_ json_t *result = NULL;
	const char *pos[3];
	int n = 0, first, r;

	/* Options anywhere: "cordon secret set REF FIELD --json". */
	first = cli_simple_opts(cli, argc, argv, usage_text, true);
	if (first < 0)
		return first == CLI_OPTS_HELP ? CLI_EXIT_OK : -first;
	for (int i = first; i < argc; i++) {
		if (n == 3) {
			fprintf(stderr,
				"cordon: secret: too many arguments (a value is never given on the "
				"command line; it is read from stdin)\n%s",
				usage_text);
			return CLI_EXIT_USAGE;
		}
		pos[n++] = argv[i];
	}
	if (n != 3 || (!streq(pos[0], "set") && !streq(pos[0], "clear"))) {
		fprintf(stderr, "%s", usage_text);
		return CLI_EXIT_USAGE;
	}
	if (streq(pos[0], "set"))
		return secret_set(cli, pos[1], pos[2]);
	r = cli_call_simple(cli, "secret.clear",
			    json_pack("{s:s,s:s}", "backend", pos[1], "field", pos[2]), &result,
			    "secret clear");
	if (r != CLI_EXIT_OK)
		return r;
	if (cli->json)
		cli_print_json(result);
	else
		printf("%s of %s: %s\n", pos[2], pos[1],
		       json_is_true(json_object_get(result, "changed")) ? "cleared"
									: "was not configured");
	return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------------- backend settings */

static const char settings_usage[] =
	"Usage: cordon backend settings REF [--set ID=VALUE]... [--reset ID]... [--json]\n\n"
	"Show every setting of backend REF: its label, type and value (or default); secrets\n"
	"only as configured or not. --set changes a setting (checked against the backend's\n"
	"descriptor), --reset returns it to its default. A change of the active backend is an\n"
	"activation: if the new settings do not work, nothing changes. Secrets are set with\n"
	"'cordon secret set REF ID'.\n";

/* The field of the descriptor view with this id. */
static json_t *find_field(json_t *view, const char *id)
{
	json_t *f;
	size_t i;

	json_array_foreach(json_object_get(view, "fields"), i, f)
		if (streq_ptr(json_string_value(json_object_get(f, "id")), id))
			return f;
	return NULL;
}

json_t *cli_setting_value(json_t *view, const char *ref, const char *id, const char *text)
{
	json_t *field = find_field(view, id);
	const char *type = json_string_value(json_object_get(field, "type"));

	if (streq_ptr(type, "secret")) {
		fprintf(stderr,
			"cordon: %s is a secret: use 'cordon secret set %s %s' "
			"(values never go on the command line)\n",
			id, ref, id);
		return NULL;
	}
	if (streq_ptr(type, "number")) {
		char *end = NULL;
		double d;

		errno = 0;
		d = strtod(text, &end);
		if (!isempty(text) && end && *end == '\0' && errno == 0 && isfinite(d))
			return d == (double)(json_int_t)d && !strpbrk(text, ".eE")
				       ? json_integer((json_int_t)d)
				       : json_real(d);
	}
	if (streq_ptr(type, "boolean")) {
		if (streq(text, "true") || streq(text, "yes") || streq(text, "1"))
			return json_true();
		if (streq(text, "false") || streq(text, "no") || streq(text, "0"))
			return json_false();
	}
	return json_string(text);
}

/* A value as text: strings as they are, numbers, true/false. */
static void format_value(json_t *v, char *buf, size_t size)
{
	if (json_is_string(v))
		(void)snprintf(buf, size, "%s", json_string_value(v));
	else if (json_is_integer(v))
		(void)snprintf(buf, size, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		(void)snprintf(buf, size, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		(void)snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
	else
		buf[0] = '\0';
}

static void print_view(json_t *view)
{
	json_t *f;
	size_t i;

	printf("%s%s\n", json_string_value(json_object_get(view, "backend")),
	       json_is_true(json_object_get(view, "active")) ? " (active)" : "");
	if (json_array_size(json_object_get(view, "fields")) == 0) {
		printf("  (no settings)\n");
		return;
	}
	printf("  %-20s %-8s %-28s %s\n", "ID", "TYPE", "VALUE", "LABEL");
	json_array_foreach(json_object_get(view, "fields"), i, f) {
		const char *type = json_string_value(json_object_get(f, "type"));
		const char *source = json_string_value(json_object_get(f, "source"));
		char value[256], shown[300];

		if (streq_ptr(type, "secret"))
			(void)snprintf(shown, sizeof(shown), "%s",
				       json_is_true(json_object_get(f, "configured"))
					       ? "configured"
					       : "not configured");
		else if (streq_ptr(source, "unset"))
			(void)snprintf(shown, sizeof(shown), "(not set)");
		else {
			format_value(json_object_get(f, "value"), value, sizeof(value));
			(void)snprintf(shown, sizeof(shown), "%s%s", value,
				       streq_ptr(source, "default") ? " (default)" : "");
		}
		printf("  %-20s %-8s %-28s %s%s\n", json_string_value(json_object_get(f, "id")),
		       type, shown, json_string_value(json_object_get(f, "label")),
		       json_is_true(json_object_get(f, "required")) ? " (required)" : "");
	}
}

int cli_cmd_backend_settings(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "set", required_argument, NULL, 's' },
					      { "reset", required_argument, NULL, 'r' },
					      { "json", no_argument, NULL, 'j' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	_cleanup_json_ json_t *view = NULL, *result = NULL, *changes = json_object();
	_cleanup_(strv_freep) char **sets = NULL;
	size_t n_sets = 0;
	const char *ref = NULL;
	int c, r;

	if (!changes)
		return CLI_EXIT_FAILURE;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		switch (c) {
		case 's':
		case 'r': {
			char **n = realloc(sets, (n_sets + 2) * sizeof(char *));

			if (!n)
				return CLI_EXIT_FAILURE;
			sets = n;
			/* "=ID" marks a reset: an id never starts with '='. */
			sets[n_sets] = c == 'r' ? strdup_printf("=%s", optarg) : strdup(optarg);
			sets[++n_sets] = NULL;
			if (!sets[n_sets - 1])
				return CLI_EXIT_FAILURE;
			if (c == 's' && (!strchr(optarg, '=') || optarg[0] == '=')) {
				fprintf(stderr, "cordon: expected --set ID=VALUE\n%s",
					settings_usage);
				return CLI_EXIT_USAGE;
			}
			break;
		}
		case 'j':
			cli->json = true;
			break;
		case 'h':
			printf("%s", settings_usage);
			return CLI_EXIT_OK;
		default:
			fprintf(stderr, "%s", settings_usage);
			return CLI_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "%s", settings_usage);
		return CLI_EXIT_USAGE;
	}
	ref = argv[optind];

	r = cli_call_simple(cli, "backend.settings.get", json_pack("{s:s}", "backend", ref), &view,
			    "backend settings");
	if (r != CLI_EXIT_OK)
		return r;
	if (n_sets == 0) {
		if (cli->json)
			cli_print_json(view);
		else
			print_view(view);
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < n_sets; i++) {
		char *eq = strchr(sets[i] + 1, '=');
		json_t *v;

		if (sets[i][0] == '=') {
			json_object_set_new(changes, sets[i] + 1, json_null());
			continue;
		}
		*eq = '\0';
		v = cli_setting_value(view, ref, sets[i], eq + 1);
		if (!v)
			return CLI_EXIT_USAGE;
		json_object_set_new(changes, sets[i], v);
	}
	r = cli_call_simple(cli, "backend.settings.set",
			    json_pack("{s:s,s:O}", "backend", ref, "settings", changes), &result,
			    "backend settings");
	if (r != CLI_EXIT_OK)
		return r;
	if (cli->json)
		cli_print_json(result);
	else
		print_view(result);
	return CLI_EXIT_OK;
}
