/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `cordon run` on a terminal: the command runs on a pseudo-terminal of its own (the
 * controller's, spawn `pty: true`), its controlling terminal inside the sandbox. This terminal
 * goes to raw mode and the CLI relays both ways: what is typed goes to process.write as bytes
 * (^C, ^Z, ^\ included: the line discipline inside turns them into signals for the sandbox's
 * foreground job), process.output notifications come back to stdout, and the window size
 * follows through process.resize. The terminal's settings are restored however the CLI ends.
 *
 * `cordon attach ID` relays the same way to a detached process's terminal (process.attach: the
 * controller replays its last output first); there the detach keys, Ctrl-P then Ctrl-Q, end
 * the relay and leave the process running. A Ctrl-P is held back until the next key says
 * which: Ctrl-Q detaches, anything else goes to the process after it.
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

#define KEY_CTRL_P 0x10
#define KEY_CTRL_Q 0x11

/* This terminal's size to the process's. nudge: first one column off, so that the size changes
 * whatever it was and a full-screen program redraws (attaching to what it drew earlier). */
static void send_size(struct cli *cli, const char *process_id, bool nudge)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0)
		return;
	if (ws.ws_row == 0 || ws.ws_col == 0)
		return;
	if (nudge)
		send_request(cli, "process.resize",
			     json_pack("{s:s,s:i,s:i}", "processId", process_id, "rows",
				       (int)ws.ws_row, "cols",
				       ws.ws_col > 1 ? (int)ws.ws_col - 1 : 2));
	send_request(cli, "process.resize",
		     json_pack("{s:s,s:i,s:i}", "processId", process_id, "rows", (int)ws.ws_row,
			       "cols", (int)ws.ws_col));
}

static void send_input(struct cli *cli, const char *process_id, const char *data, size_t len)
{
	_cleanup_free_ char *b = NULL;

	if (len == 0)
		return;
	b = base64_encode(data, len);
	if (b)
		send_request(cli, "process.write",
			     json_pack("{s:s,s:s}", "processId", process_id, "data", b));
}

/* Output goes to stdout; the exit is kept; another attach taking over ends ours. */
static void on_message(json_t *params, const char *method, const char *process_id,
		       struct cli_tty_end *end)
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
	} else if (streq(method, "process.exit") && !end->exit)
		end->exit = json_incref(params);
	else if (streq(method, "process.detached"))
		end->taken_over = true;
}

static int drain(struct cli *cli, const char *process_id, struct cli_tty_end *end)
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
			on_message(body, m, process_id, end);
	}
}

int cli_tty_relay(struct cli *cli, const char *process_id, bool attach, struct cli_tty_end *end)
{
	_cleanup_close_ int sfd = -1;
	bool in_open = true, held = false; /* held: a Ctrl-P, until the next key */
	sigset_t mask;
	int r;

	*end = (struct cli_tty_end){ 0 };
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
	send_size(cli, process_id, attach);

	for (;;) {
		struct pollfd p[3] = { { .fd = jsonrpc_conn_fd(cli->conn), .events = POLLIN },
				       { .fd = sfd, .events = POLLIN },
				       { .fd = in_open ? STDIN_FILENO : -1, .events = POLLIN } };
		struct signalfd_siginfo si;

		r = drain(cli, process_id, end);
		if (r < 0)
			break;
		if (end->exit || end->taken_over) {
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
				send_size(cli, process_id, false);
			else {
				/* Killed, or our terminal hung up: the terminal back as it was, and
				 * out; the sandbox goes with our connection (attach: it runs on). */
				end->signal = (int)si.ssi_signo;
				r = 0;
				break;
			}
		}
		if (p[2].revents) {
			char buf[4096], out[sizeof(buf) + 1];
			ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
			size_t o = 0;

			if (n > 0 && !attach)
				send_input(cli, process_id, buf, (size_t)n);
			else if (n > 0) {
				/* The detach keys: Ctrl-P held back, Ctrl-Q after it detaches. */
				for (ssize_t i = 0; i < n && !end->detached; i++) {
					if (held) {
						held = false;
						if (buf[i] == KEY_CTRL_Q) {
							end->detached = true;
							break;
						}
						out[o++] = KEY_CTRL_P;
					}
					if (buf[i] == KEY_CTRL_P)
						held = true;
					else
						out[o++] = buf[i];
				}
				send_input(cli, process_id, out, o);
				if (end->detached) {
					r = 0;
					break;
				}
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
