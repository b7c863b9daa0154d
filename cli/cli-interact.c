/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host interactions on the terminal (docs/PROTOCOL.md "host.interaction"): while the
 * CLI waits for any call's answer, the controller may ask it something on a launcher's behalf.
 * On a terminal: confirm is "y/N", input a line, secret-input a line read without echo, choice a
 * numbered list. Without a terminal on stdin, or with --non-interactive, the answer is
 * {"unavailable": true} and the operation fails cleanly.
 *
 * Prompts go to stderr (stdout stays the command's output); stdin is read one byte at a time so
 * nothing past the answer's line is consumed. A secret is read into locked memory, without echo;
 * the terminal mode is restored on every way out, a signal included, and the secret is wiped
 * once sent.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/json-cleanup.h"
#include "common/util.h"

#define ANSWER_MAX 4096
#define CHOICE_ATTEMPTS 3

/* ------------------------------------------------------------------------- no-echo terminal */

static struct termios saved_termios;
static volatile sig_atomic_t termios_saved;
static const int restore_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP };
static struct sigaction saved_actions[ELEMENTSOF(restore_signals)];

static void restore_termios(void)
{
	if (termios_saved) {
		(void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_termios);
		termios_saved = 0;
	}
}

/* Async-signal-safe: put the terminal back, then let the signal do what it would have done. */
static void on_signal(int sig)
{
	restore_termios();
	(void)signal(sig, SIG_DFL);
	(void)raise(sig);
}

static int echo_off(void)
{
	struct termios t;
	struct sigaction sa = { .sa_handler = on_signal };

	if (tcgetattr(STDIN_FILENO, &saved_termios) < 0)
		return -errno;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ELEMENTSOF(restore_signals); i++)
		(void)sigaction(restore_signals[i], &sa, &saved_actions[i]);
	termios_saved = 1;
	t = saved_termios;
	t.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK | ECHONL);
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) < 0) {
		int r = -errno;

		restore_termios();
		return r;
	}
	return 0;
}

static void echo_on(void)
{
	restore_termios();
	for (size_t i = 0; i < ELEMENTSOF(restore_signals); i++)
		(void)sigaction(restore_signals[i], &saved_actions[i], NULL);
}

/* ------------------------------------------------------------------------- reading */

/*
 * One line from fd (without its newline) into buf (size bytes, NUL-terminated). -ENODATA at
 * EOF before anything was read, -E2BIG when the line is longer than size - 1 (the rest of it is
 * consumed).
 */
static int read_line(int fd, char *buf, size_t size, size_t *ret_len)
{
	size_t n = 0;
	bool any = false, overflow = false;

	for (;;) {
		char ch;
		ssize_t k = read(fd, &ch, 1);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0) {
			if (!any)
				return -ENODATA;
			break;
		}
		any = true;
		if (ch == '\n')
			break;
		if (n + 1 < size)
			buf[n++] = ch;
		else
			overflow = true;
	}
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
	*ret_len = n;
	return overflow ? -E2BIG : 0;
}

char *cli_secret_alloc(size_t size)
{
	char *p = calloc(1, size);

	if (p)
		(void)mlock(p, size); /* best effort: RLIMIT_MEMLOCK may forbid it */
	return p;
}

void cli_secret_free(char *p, size_t size)
{
	if (!p)
		return;
	explicit_bzero(p, size);
	(void)munlock(p, size);
	free(p);
}

/* Print text a controller sent, with anything that could steer the terminal replaced. */
static void put_safe(const char *s)
{
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		fputc(ch < 0x20 || ch == 0x7f ? '?' : ch, stderr);
	}
}

int cli_read_secret(const char *prompt, char *buf, size_t size, size_t *ret_len)
{
	int r, q;

	/* Echo off first, as getpass() does: once the prompt shows, typing is hidden. */
	q = echo_off();
	if (prompt) {
		put_safe(prompt);
		fflush(stderr);
	}
	r = read_line(STDIN_FILENO, buf, size, ret_len);
	if (q >= 0)
		echo_on();
	fputc('\n', stderr);
	return r;
}

/* ------------------------------------------------------------------------- answering */

static int send_result(struct cli *cli, json_t *id, json_t *result)
{
	_cleanup_json_ json_t *msg = jsonrpc_result_new(id, result);

	if (!msg)
		return -ENOMEM;
	return jsonrpc_conn_send_wait(cli->conn, msg, NULL, 0);
}

static int answer_unavailable(struct cli *cli, json_t *id)
{
	return send_result(cli, id, json_pack("{s:b}", "unavailable", true));
}

static int ask_line(const char *prompt, const char *suffix, char *buf, size_t size)
{
	size_t len;

	put_safe(prompt);
	fputs(suffix, stderr);
	fflush(stderr);
	return read_line(STDIN_FILENO, buf, size, &len);
}

static int do_confirm(struct cli *cli, json_t *id, const char *prompt)
{
	char line[64];

	if (ask_line(prompt, " [y/N] ", line, sizeof(line)) == -ENODATA)
		return answer_unavailable(cli, id);
	return send_result(cli, id,
			   json_pack("{s:b}", "value",
				     ascii_strcaseeq(line, "y") || ascii_strcaseeq(line, "yes")));
}

static int do_input(struct cli *cli, json_t *id, const char *prompt)
{
	_cleanup_free_ char *line = malloc(ANSWER_MAX + 1);
	int r;

	if (!line)
		return -ENOMEM;
	r = ask_line(prompt, ": ", line, ANSWER_MAX + 1);
	if (r < 0) {
		if (r == -E2BIG)
			fprintf(stderr, "cordon: the answer is longer than %d bytes\n", ANSWER_MAX);
		return answer_unavailable(cli, id);
	}
	return send_result(cli, id, json_pack("{s:s}", "value", line));
}

static int do_secret(struct cli *cli, json_t *id, const char *prompt)
{
	_cleanup_json_ json_t *msg = NULL;
	char *buf = cli_secret_alloc(ANSWER_MAX + 1);
	json_t *value;
	size_t len = 0;
	int r;

	if (!buf)
		return -ENOMEM;
	put_safe(prompt);
	r = cli_read_secret(" (input hidden; empty: no change): ", buf, ANSWER_MAX + 1, &len);
	if (r < 0) {
		cli_secret_free(buf, ANSWER_MAX + 1);
		if (r == -E2BIG)
			fprintf(stderr, "cordon: the secret is longer than %d bytes\n", ANSWER_MAX);
		return answer_unavailable(cli, id);
	}
	if (len == 0)
		fprintf(stderr, "cordon: empty input: the secret is unchanged\n");
	value = json_stringn(buf, len);
	cli_secret_free(buf, ANSWER_MAX + 1);
	msg = jsonrpc_result_new(id, json_pack("{s:o}", "value", value));
	if (!msg)
		return -ENOMEM;
	r = jsonrpc_conn_send_wait(cli->conn, msg, NULL, 0);
	/* jansson's copy of the plaintext: overwrite it now that it is sent. */
	explicit_bzero((char *)json_string_value(value), json_string_length(value));
	return r;
}

static int do_choice(struct cli *cli, json_t *id, const char *prompt, json_t *options)
{
	size_t n = json_array_size(options), i;
	json_t *o;

	if (n == 0)
		return answer_unavailable(cli, id);
	put_safe(prompt);
	fputc('\n', stderr);
	json_array_foreach(options, i, o) {
		const char *label = json_string_value(json_object_get(o, "label"));

		fprintf(stderr, "  %zu) ", i + 1);
		put_safe(label ? label : json_string_value(json_object_get(o, "value")));
		fputc('\n', stderr);
	}
	for (int attempt = 0; attempt < CHOICE_ATTEMPTS; attempt++) {
		char line[32], prompt_n[48];
		unsigned k;

		(void)snprintf(prompt_n, sizeof(prompt_n), "Choose 1-%zu: ", n);
		if (ask_line("", prompt_n, line, sizeof(line)) == -ENODATA)
			break;
		if (safe_atou(line, &k) >= 0 && k >= 1 && k <= n) {
			const char *v = json_string_value(
				json_object_get(json_array_get(options, k - 1), "value"));

			return send_result(cli, id, json_pack("{s:s}", "value", v ? v : ""));
		}
		fprintf(stderr, "cordon: not a number from 1 to %zu\n", n);
	}
	return answer_unavailable(cli, id);
}

int cli_interact_answer(struct cli *cli, json_t *id, const char *method, json_t *params)
{
	const char *kind = json_string_value(json_object_get(params, "kind"));
	const char *prompt = json_string_value(json_object_get(params, "prompt"));

	if (!streq_ptr(method, "host.interaction")) {
		_cleanup_json_ json_t *reply =
			jsonrpc_error_new(id, JSONRPC_METHOD_NOT_FOUND, "no such method", NULL);

		return reply ? jsonrpc_conn_send_wait(cli->conn, reply, NULL, 0) : -ENOMEM;
	}
	if (cli->non_interactive || !isatty(STDIN_FILENO) || !kind || !prompt)
		return answer_unavailable(cli, id);
	if (streq(kind, "confirm"))
		return do_confirm(cli, id, prompt);
	if (streq(kind, "input"))
		return do_input(cli, id, prompt);
	if (streq(kind, "secret-input"))
		return do_secret(cli, id, prompt);
	if (streq(kind, "choice"))
		return do_choice(cli, id, prompt, json_object_get(params, "options"));
	return answer_unavailable(cli, id);
}
