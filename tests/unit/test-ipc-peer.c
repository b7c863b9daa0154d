/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ipc/ipc-peer.c: SO_PEERCRED on a socketpair, -EPERM for another uid, errors for sockets without
 * a peer; then (as root) a child that drops to uid/gid 65534 connects to an abstract and to a path
 * socket, and the server sees 65534 while the child sees root.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-peer.h"
#include "tests/tap.h"

#define NOBODY 65534

static void test_socketpair(void)
{
	struct ucred uc = { 0 };
	int sv[2], p[2], s;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(p, O_CLOEXEC) < 0)
		bail("socketpair/pipe2: %m");
	is_int(0, ipc_peer_cred(sv[0], &uc), "ipc_peer_cred on a socketpair");
	ok(uc.pid == getpid() && uc.uid == getuid() && uc.gid == getgid(),
	   "reports our own pid, uid and gid (%d %u %u)", (int)uc.pid, uc.uid, uc.gid);
	memset(&uc, 0, sizeof(uc));
	is_int(0, ipc_peer_require_uid(sv[1], getuid(), &uc),
	       "ipc_peer_require_uid accepts our uid");
	is_int(getpid(), uc.pid, "and fills in the credentials");
	is_int(-EPERM, ipc_peer_require_uid(sv[1], getuid() + 1, NULL), "another uid is -EPERM");

	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		bail("socket: %m");
	is_int(-ENOTCONN, ipc_peer_cred(s, &uc), "an unconnected socket has no peer (-ENOTCONN)");
	is_int(-ENOTCONN, ipc_peer_require_uid(s, getuid(), NULL),
	       "and ipc_peer_require_uid does not accept it");
	is_int(-ENOTSOCK, ipc_peer_cred(p[0], &uc), "a pipe is not a socket");
	safe_close(s);
	safe_close(sv[0]);
	safe_close(sv[1]);
	safe_close(p[0]);
	safe_close(p[1]);
}

/* In the child: become nobody, connect, check the server is root, report one byte. */
_noreturn_ static void child_connect(const struct sockaddr_un *sa, socklen_t len, pid_t server)
{
	struct ucred uc;
	char verdict;
	int s;

	if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
	    setresuid(NOBODY, NOBODY, NOBODY) < 0)
		_exit(10);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (const struct sockaddr *)sa, len) < 0)
		_exit(11);
	verdict = ipc_peer_cred(s, &uc) == 0 && uc.uid == 0 && uc.pid == server ? 'y' : 'n';
	if (write(s, &verdict, 1) != 1)
		_exit(12);
	/* Wait for the server to finish looking at us. */
	(void)loop_read(s, &verdict, 1);
	_exit(0);
}

static void test_other_uid(const char *what, const struct sockaddr_un *sa, socklen_t len)
{
	_cleanup_close_ int l = -1, c = -1;
	struct pollfd pfd;
	struct ucred uc = { 0 };
	pid_t pid;
	int status = -1;
	char verdict = 0;

	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (const struct sockaddr *)sa, len) < 0 || listen(l, 1) < 0)
		bail("%s: socket/bind/listen: %m", what);
	if (sa->sun_path[0] && chmod(sa->sun_path, 0666) < 0)
		bail("chmod %s: %m", sa->sun_path);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		bail("fork: %m");
	if (pid == 0)
		child_connect(sa, len, getppid());

	pfd = (struct pollfd){ .fd = l, .events = POLLIN };
	if (poll(&pfd, 1, 5000) == 1)
		c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (c >= 0) {
		is_int(0, ipc_peer_cred(c, &uc), "%s: ipc_peer_cred on the accepted socket", what);
		ok(uc.uid == NOBODY && uc.gid == NOBODY && uc.pid == pid,
		   "%s: the server sees uid/gid %d and the child's pid (%u %u %d)", what, NOBODY,
		   uc.uid, uc.gid, (int)uc.pid);
		is_int(-EPERM, ipc_peer_require_uid(c, 0, NULL), "%s: requiring root refuses it",
		       what);
		is_int(0, ipc_peer_require_uid(c, NOBODY, NULL), "%s: requiring %d accepts it",
		       what, NOBODY);
		pfd = (struct pollfd){ .fd = c, .events = POLLIN };
		if (poll(&pfd, 1, 5000) != 1 || read(c, &verdict, 1) != 1)
			verdict = 0;
		ok(verdict == 'y', "%s: the child sees the server as root with the server's pid",
		   what);
		(void)loop_write(c, "k", 1);
	} else {
		ok(false, "%s: the child running as uid %d did not connect", what, NOBODY);
		skip(4, "no connection");
	}
	if (c < 0)
		(void)kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		diag("%s: child exited with status 0x%x", what, status);
}

int main(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/cordon-test-peer.XXXXXX";
	socklen_t len;
	int n;

	plan(18);
	test_socketpair();

	if (geteuid() != 0) {
		skip(10, "dropping to another uid needs root");
		return tap_exit_status();
	}

	/* Abstract: no file, no permissions. */
	n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "cordon-test-peer-%d",
		     (int)getpid());
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	test_other_uid("abstract", &sa, len);

	/* Path: the directory must be searchable and the socket writable by nobody. */
	if (!mkdtemp(dir) || chmod(dir, 0755) < 0)
		bail("mkdtemp/chmod: %m");
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	(void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", dir);
	test_other_uid("path", &sa, (socklen_t)sizeof(sa));
	(void)unlink(sa.sun_path);
	(void)rmdir(dir);
	return tap_exit_status();
}
