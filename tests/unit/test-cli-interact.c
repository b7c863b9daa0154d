/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cli-interact.c's no-echo read on a real pseudo-terminal: echo is off while it reads, the typed
 * secret is not echoed back, the terminal mode comes back afterwards — also when a signal ends
 * the process in the middle of the read — and an over-long line is refused.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/util.h"
#include "tests/tap.h"

#define SECRET "hunter2-not-echoed"

struct pty {
	int master;
	int slave;
};

static int pty_open(struct pty *p)
{
	const char *name;

	p->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (p->master < 0 || grantpt(p->master) < 0 || unlockpt(p->master) < 0)
		return -errno;
	name = ptsname(p->master);
	if (!name)
		return -errno;
	p->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	return p->slave < 0 ? -errno : 0;
}

static bool echo_is_on(int fd)
{
	struct termios t;

	return tcgetattr(fd, &t) == 0 && (t.c_lflag & ECHO);
}

/* Read what the child writes to the terminal until want appears (or 5 s pass). */
static bool wait_for(int master, const char *want, char *seen, size_t size)
{
	size_t n = strlen(seen);

	for (int i = 0; i < 50 && !strstr(seen, want); i++) {
		struct pollfd p = { .fd = master, .events = POLLIN };
		ssize_t k;

		if (poll(&p, 1, 100) <= 0)
			continue;
		k = read(master, seen + n, size - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		seen[n] = '\0';
	}
	return strstr(seen, want) != NULL;
}

/* The child: stdin and stderr on the terminal; reads one secret and reports it on out. */
static pid_t start_reader(struct pty *p, int out, size_t size)
{
	pid_t pid = fork();

	if (pid == 0) {
		char *buf = cli_secret_alloc(size);
		size_t len = 0;
		int r;

		(void)dup2(p->slave, STDIN_FILENO);
		(void)dup2(p->slave, STDERR_FILENO);
		r = cli_read_secret("Secret: ", buf, size, &len);
		if (r < 0)
			(void)!write(out, r == -E2BIG ? "E2BIG" : "ERROR", 5);
		else
			(void)!write(out, buf, len);
		cli_secret_free(buf, size);
		_exit(0);
	}
	return pid;
}

int main(void)
{
	struct pty p;
	char seen[4096] = "", got[256] = "";
	int pipefd[2], status = 0;
	pid_t pid;
	ssize_t n;

	plan(11);
	if (pty_open(&p) < 0)
		skip_all("no pseudo-terminals here: %m");
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		bail("pipe2: %m");
	ok(echo_is_on(p.slave), "a new terminal echoes");

	/* A secret is read without echo and the mode restored. */
	pid = start_reader(&p, pipefd[1], 256);
	ok(wait_for(p.master, "Secret: ", seen, sizeof(seen)), "the prompt appears");
	ok(!echo_is_on(p.slave), "echo is off while the secret is read");
	(void)!write(p.master, SECRET "\n", strlen(SECRET) + 1);
	(void)waitpid(pid, &status, 0);
	n = read(pipefd[0], got, sizeof(got) - 1);
	got[n > 0 ? n : 0] = '\0';
	is_str(SECRET, got, "the value read is the line typed, without its newline");
	(void)wait_for(p.master, "\n", seen, sizeof(seen));
	ok(!strstr(seen, SECRET), "the secret was not echoed to the terminal");
	ok(echo_is_on(p.slave), "echo is back on afterwards");

	/* A signal in the middle of the read: the terminal is restored before the process dies. */
	seen[0] = '\0';
	pid = start_reader(&p, pipefd[1], 256);
	ok(wait_for(p.master, "Secret: ", seen, sizeof(seen)) && !echo_is_on(p.slave),
	   "reading again: echo off");
	(void)kill(pid, SIGTERM);
	(void)waitpid(pid, &status, 0);
	ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
	   "SIGTERM still ends the process (status %d)", status);
	ok(echo_is_on(p.slave), "… and the terminal echoes again");

	/* Longer than the buffer: refused, nothing half-read returned. */
	seen[0] = '\0';
	pid = start_reader(&p, pipefd[1], 8);
	ok(wait_for(p.master, "Secret: ", seen, sizeof(seen)), "a short buffer: the prompt");
	(void)!write(p.master, "0123456789abcdef\n", 17);
	(void)waitpid(pid, &status, 0);
	n = read(pipefd[0], got, sizeof(got) - 1);
	got[n > 0 ? n : 0] = '\0';
	is_str("E2BIG", got, "a line longer than the buffer is refused");
	return tap_exit_status();
}
