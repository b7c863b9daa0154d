/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `cordon run` on a terminal: the command runs on a pseudo-terminal of its own (the
 * controller's, spawn `pty: true`), its controlling terminal inside the sandbox. This terminal
 * goes to raw mode and the CLI relays both ways: what is typed goes to process.write as bytes
 * (^C, ^Z, ^\ included: the line discipline inside turns them into signals for the sandbox's
 * foreground job), process.output notifications come back to stdout, and the window size
 * follows through process.resize. The terminal's settings are restored however the CLI ends.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"

/* The terminal's settings before raw mode; restored once by every way out. */
static struct termios saved;
static int saved_fd = -1;

void cli_tty_restore(void)
{
	if (saved_fd < 0)
		return;
	(void)tcsetattr(saved_fd, TCSAFLUSH, &saved);
	saved_fd = -1;
}

/* Raw mode on fd (a terminal), its settings saved for cli_tty_restore(). */
static int tty_raw(int fd)
{
	static bool registered;
	struct termios raw;

	if (tcgetattr(fd, &saved) < 0)
		return -errno;
	if (!registered) {
		if (atexit(cli_tty_restore) != 0)
			return -ENOMEM;
		registered = true;
	}
	raw = saved;
	cfmakeraw(&raw);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	saved_fd = fd;
	if (tcsetattr(fd, TCSANOW, &raw) < 0) {
		saved_fd = -1;
		return -errno;
	}
	return 0;
}

static void send_request(struct cli *cli, const char *method, json_t *params)
{
	_cleanup_json_ json_t *req = jsonrpc_request_new(++cli->next_id, method, params);

	if (req)
		(void)jsonrpc_conn_send_wait(cli->conn, req, NULL, 0);
}

static void send_size(struct cli *cli, const char *process_id)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0)
		return;
	if (ws.ws_row == 0 || ws.ws_col == 0)
		return;
	send_request(cli, "process.resize",
		     json_pack("{s:s,s:i,s:i}", "processId", process_id, "rows", (int)ws.ws_row,
			       "cols", (int)ws.ws_col));
}

/* Output goes to stdout; the exit is kept. */
static void on_message(json_t *params, const char *method, const char *process_id,
		       json_t **ret_exit)
{
	const char *pid = json_string_value(json_object_get(params, "processId"));

	if (!pid || !streq(pid, process_id))
		return;
	if (streq(method, "process.output")) {
		const char *b64 = json_string_value(json_object_get(params, "data"));
		_cleanup_free_ void *data = NULL;
		size_t len = 0;

		if (b64 && base64_decode(b64, strlen(b64), &data, &len) >= 0)
			(void)loop_write(STDOUT_FILENO, data, len);
	} else if (streq(method, "process.exit") && !*ret_exit)
		*ret_exit = json_incref(params);
}

static int drain(struct cli *cli, const char *process_id, json_t **ret_exit)
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
		    kind == JSONRPC_KIND_NOTIFICATION && json_is_object(body))
			on_message(body, m, process_id, ret_exit);
	}
}

int cli_tty_relay(struct cli *cli, const char *process_id, json_t **ret_exit, int *ret_signal)
{
	_cleanup_close_ int sfd = -1;
	bool in_open = true;
	sigset_t mask;
	int r;

	*ret_exit = NULL;
	*ret_signal = 0;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGWINCH);
	(void)sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return -errno;
	if (isatty(STDIN_FILENO)) {
		r = tty_raw(STDIN_FILENO);
		if (r < 0)
			log_warning_errno(r, "cannot put the terminal in raw mode: %m");
	}
	send_size(cli, process_id);

	for (;;) {
		struct pollfd p[3] = { { .fd = jsonrpc_conn_fd(cli->conn), .events = POLLIN },
				       { .fd = sfd, .events = POLLIN },
				       { .fd = in_open ? STDIN_FILENO : -1, .events = POLLIN } };
		struct signalfd_siginfo si;

		r = drain(cli, process_id, ret_exit);
		if (r < 0)
			break;
		if (*ret_exit) {
			r = 0;
			break;
		}
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if (p[1].revents & POLLIN && read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGWINCH)
				send_size(cli, process_id);
			else {
				/* Killed, or our terminal hung up: the terminal back as it was, and
				 * out; the sandbox goes with our connection. */
				*ret_signal = (int)si.ssi_signo;
				r = 0;
				break;
			}
		}
		if (p[2].revents) {
			char buf[4096];
			ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

			if (n > 0) {
				_cleanup_free_ char *b = base64_encode(buf, (size_t)n);

				if (b)
					send_request(cli, "process.write",
						     json_pack("{s:s,s:s}", "processId", process_id,
							       "data", b));
			} else if (n == 0 || (errno != EINTR && errno != EAGAIN))
				in_open = false; /* our stdin ended: the command's terminal stays */
		}
		if (p[0].revents) {
			ssize_t n = jsonrpc_conn_fill(cli->conn);

			if (n == 0) {
				r = -ECONNRESET;
				break;
			}
			if (n < 0 && n != -EAGAIN) {
				r = (int)n;
				break;
			}
		}
	}
	cli_tty_restore();
	return r;
}
