/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * launch-plan: a test driver for cordon-launcherd, through backends/ctl-launcher.
 *
 *   launch-plan [--socket PATH | --user-mode LAUNCHERD [--floor FILE]]
 *               [--fd N=PATH]... [--fd-open N=PATH]... [--seccomp N=FILE] [--result FILE]
 *               [--id-file FILE] [--kill-after MS] [--repeat N] PLAN.json
 *   launch-plan [--socket PATH | --user-mode …] --hello
 *   launch-plan [--socket PATH | --user-mode …] --kill ID [--signal N]
 *   launch-plan [--socket PATH] --raw FILE
 *        protocol tests: send each line of FILE as a frame as-is (no automatic hello) and print
 *        one line per message: the reply, {"type":"closed"} on EOF, {"type":"none"} if silent.
 *
 * Fds 0, 1 and 2 of the message are our own stdin, stdout and stderr (a plan's "stdio" names
 * them by index), so the sandbox's stdio is ours. --fd N=PATH opens PATH with O_PATH as message
 * fd N (bind sources); --fd-open N=PATH opens it read-only, as an ordinary file (a file on a
 * FUSE file system, which launcherd must refuse); --seccomp N=FILE copies a BPF program into a
 * memfd as fd N. Indices after 2 must be contiguous, whichever option gives them.
 *
 * --repeat N spawns the plan N times back to back over the one connection, each once the
 * previous one's exit came, stopping at the first that fails or exits non-zero.
 *
 * The result (the exit report, or the error) is written as JSON to --result, else to stderr.
 * Exit status: the sandbox's exit code, 128+signal; 125 when launcherd refused or the set-up
 * failed; 126/127 when exec failed (not executable / not found); 1 for local errors.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/ctl-launcher.h"
#include "ipc/ipc-fdpass.h"
#include "ipc/ipc-frame.h"

static const char *result_path;

static void write_result(json_t *j)
{
	_cleanup_free_ char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	FILE *f = result_path ? fopen(result_path, "we") : stderr;

	if (!s || !f)
		return;
	(void)fprintf(f, "%s\n", s);
	if (f != stderr)
		(void)fclose(f);
}

static int report_error(const struct ctl_launcher_error *e)
{
	_cleanup_json_ json_t *j = json_pack("{s:s,s:s,s:i,s:s,s:s,s:s}", "type", "error", "code",
					     e->code, "errno", e->error, "field", e->field, "step",
					     e->step, "message", e->message);

	if (j)
		write_result(j);
	if (streq(e->code, "exec-failed"))
		return e->error == ENOENT ? 127 : 126;
	if (streq(e->code, "internal"))
		return 1;
	return 125;
}

static int raw_session(const char *socket_path, const char *file)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *text = NULL;
	char *save = NULL;

	if (read_full_file(file, 1024 * 1024, &text, NULL) < 0)
		return 1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	memcpy(sa.sun_path, socket_path, strlen(socket_path));
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return 1;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		_cleanup_json_ json_t *m = json_loads(line, 0, NULL), *reply = NULL;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int fds[IPC_MAX_FDS];
		size_t n_fds = 0;
		int r;

		if (!m || ipc_frame_send_json(fd, m, NULL, 0, 0) < 0) {
			printf("{\"type\":\"closed\"}\n");
			break;
		}
		if (poll(&pfd, 1, 2000) <= 0) {
			printf("{\"type\":\"none\"}\n");
			continue;
		}
		r = ipc_frame_recv_json(fd, &reply, fds, IPC_MAX_FDS, &n_fds, 0);
		close_many(fds, n_fds);
		if (r <= 0) {
			printf("{\"type\":\"closed\"}\n");
			break;
		}
		{
			_cleanup_free_ char *s = json_dumps(reply, JSON_COMPACT | JSON_SORT_KEYS);

			printf("%s\n", s ? s : "{}");
		}
	}
	return 0;
}

static int die_usage(const char *msg)
{
	(void)fprintf(stderr, "launch-plan: %s\n", msg);
	return 1;
}

static int memfd_from_file(const char *path)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int fd, r;

	r = read_full_file(path, 1024 * 1024, &buf, &len);
	if (r < 0)
		return r;
	fd = memfd_create("seccomp-plan", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = loop_write(fd, buf, len);
	if (r < 0) {
		safe_close(fd);
		return r;
	}
	return fd;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "user-mode", required_argument, NULL, 'u' },
		{ "floor", required_argument, NULL, 'F' },
		{ "fd", required_argument, NULL, 'f' },
		{ "fd-open", required_argument, NULL, 'o' },
		{ "seccomp", required_argument, NULL, 'S' },
		{ "result", required_argument, NULL, 'r' },
		{ "id-file", required_argument, NULL, 'i' },
		{ "kill-after", required_argument, NULL, 'k' },
		{ "hello", no_argument, NULL, 'H' },
		{ "kill", required_argument, NULL, 'K' },
		{ "signal", required_argument, NULL, 'g' },
		{ "raw", required_argument, NULL, 'R' },
		{ "repeat", required_argument, NULL, 'n' },
		{},
	};
	const char *socket_path = NULL, *user_mode = NULL, *floor_path = NULL, *id_file = NULL;
	const char *kill_id = NULL;
	int fds[IPC_MAX_FDS] = { 0, 1, 2 };
	size_t n_fds = 3;
	int kill_after = -1, sig = 9, repeat = 1, c, r;
	bool hello_only = false;
	struct ctl_launcher *l = NULL;
	struct ctl_launcher_error err = { 0 };
	struct ctl_launcher_exit ex;
	_cleanup_json_ json_t *plan = NULL, *info = NULL, *res = NULL;
	_cleanup_free_ char *sandbox = NULL;
	json_error_t jerr;
	int pidfd = -1;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		switch (c) {
		case 's':
			socket_path = optarg;
			break;
		case 'u':
			user_mode = optarg;
			break;
		case 'F':
			floor_path = optarg;
			break;
		case 'f':
		case 'o':
		case 'S': {
			char *eq = strchr(optarg, '=');
			int idx;

			if (!eq)
				return die_usage("--fd/--fd-open/--seccomp: expected N=PATH");
			*eq = '\0';
			if (safe_atoi(optarg, &idx) < 0 || (size_t)idx != n_fds ||
			    n_fds >= IPC_MAX_FDS)
				return die_usage(
					"--fd/--fd-open/--seccomp: indices must run 3, 4, … in order");
			if (c == 'f')
				fds[n_fds] = open(eq + 1, O_PATH | O_CLOEXEC);
			else if (c == 'o')
				fds[n_fds] = open(eq + 1, O_RDONLY | O_CLOEXEC);
			else
				fds[n_fds] = memfd_from_file(eq + 1);
			if (fds[n_fds] < 0) {
				(void)fprintf(stderr, "launch-plan: %s: %s\n", eq + 1,
					      strerror(errno));
				return 1;
			}
			n_fds++;
			break;
		}
		case 'r':
			result_path = optarg;
			break;
		case 'i':
			id_file = optarg;
			break;
		case 'n':
			repeat = atoi(optarg);
			if (repeat < 1)
				repeat = 1;
			break;
		case 'k':
			if (safe_atoi(optarg, &kill_after) < 0)
				return die_usage("--kill-after: expected milliseconds");
			break;
		case 'H':
			hello_only = true;
			break;
		case 'K':
			kill_id = optarg;
			break;
		case 'g':
			if (safe_atoi(optarg, &sig) < 0)
				return die_usage("--signal: expected a number");
			break;
		case 'R':
			if (!socket_path)
				return die_usage("--raw needs --socket first");
			return raw_session(socket_path, optarg);
		default:
			return die_usage("bad option");
		}
	}
	if (!hello_only && !kill_id && optind != argc - 1)
		return die_usage("expected one plan file");

	if (user_mode)
		r = ctl_launcher_start_own(user_mode, floor_path, true, &l);
	else
		r = ctl_launcher_connect(socket_path ? socket_path
						     : CORDON_RUNSTATEDIR "/cordon/launcherd.sock",
					 &l);
	if (r < 0) {
		(void)fprintf(stderr, "launch-plan: cannot reach launcherd: %s\n", strerror(-r));
		return 1;
	}
	r = ctl_launcher_hello(l, &info, &err);
	if (r < 0) {
		r = report_error(&err);
		ctl_launcher_free(l);
		return r;
	}
	if (hello_only) {
		write_result(info);
		ctl_launcher_free(l);
		return 0;
	}
	if (kill_id) {
		r = ctl_launcher_kill(l, kill_id, sig, &err);
		if (r < 0) {
			(void)report_error(&err);
			ctl_launcher_free(l);
			return r == -ESRCH ? 5 : 1;
		}
		res = json_pack("{s:s}", "type", "ok");
		write_result(res);
		ctl_launcher_free(l);
		return 0;
	}

	plan = json_load_file(argv[optind], JSON_REJECT_DUPLICATES, &jerr);
	if (!plan) {
		(void)fprintf(stderr, "launch-plan: %s:%d: %s\n", argv[optind], jerr.line,
			      jerr.text);
		return 1;
	}
	for (int round = 0; round < repeat; round++) {
		free(TAKE_PTR(sandbox));
		json_decref(TAKE_PTR(res));
		r = ctl_launcher_spawn(l, plan, fds, n_fds, &sandbox, &pidfd, &err);
		if (r < 0) {
			r = report_error(&err);
			ctl_launcher_free(l);
			return r;
		}
		if (id_file) {
			FILE *f = fopen(id_file, "we");

			if (f) {
				(void)fprintf(f, "%s\n", sandbox);
				(void)fclose(f);
			}
		}
		if (kill_after >= 0) {
			/* Wait on the pidfd: an early exit ends the wait. */
			struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

			if (poll(&pfd, 1, kill_after) == 0 &&
			    ctl_launcher_kill(l, sandbox, sig, &err) < 0)
				(void)fprintf(stderr, "launch-plan: kill: %s\n", err.message);
		}
		r = ctl_launcher_wait_exit(l, sandbox, &ex);
		safe_close(pidfd);
		if (r < 0) {
			(void)fprintf(stderr, "launch-plan: lost launcherd: %s\n", strerror(-r));
			ctl_launcher_free(l);
			return 1;
		}
		res = json_pack("{s:s,s:s,s:i,s:i,s:i,s:s,s:I,s:{s:b,s:b}}", "type", "exit",
				"sandbox", ex.sandbox, "pid", (int)ex.pid, "exitCode", ex.exit_code,
				"signal", ex.signal, "reason", ex.reason, "durationUsec",
				(json_int_t)ex.duration_usec, "limits", "pids", ex.limit_pids,
				"memory", ex.limit_memory);
		if (res)
			write_result(res);
		if (ex.signal || ex.exit_code)
			break;
	}
	for (size_t i = 3; i < n_fds; i++)
		safe_close(fds[i]);
	ctl_launcher_free(l);
	return ex.signal ? 128 + ex.signal : ex.exit_code;
}
