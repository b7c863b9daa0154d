/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ipc/ipc-fdpass.c on SOCK_STREAM and SOCK_SEQPACKET pairs: fds arrive close-on-exec and refer to
 * the files sent; more fds than the receiver takes (too many, or RLIMIT_NOFILE) is -EXFULL with no
 * fd left open; an oversize record is -EMSGSIZE with its fds closed; the send-side limits; EOF
 * and -EAGAIN.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/system.h"
#include "ipc/ipc-fdpass.h"
#include "tests/tap.h"

static bool fd_has_cloexec(int fd)
{
	int f = fcntl(fd, F_GETFD);

	return f >= 0 && (f & FD_CLOEXEC);
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* Send n_send fds to a receiver taking max_fds: the message must be refused, no fd left open. */
static void check_exfull(const char *name, int sv[2], int fd, size_t n_send, size_t max_fds)
{
	int fds[IPC_MAX_FDS], got[IPC_MAX_FDS];
	size_t n_got = 99;
	char buf[16];
	int before;
	ssize_t r;

	for (size_t i = 0; i < n_send; i++)
		fds[i] = fd;
	before = count_open_fds();
	if (ipc_send_with_fds(sv[0], "x", 1, fds, n_send, 0) != 1)
		bail("send failed");
	r = ipc_recv_with_fds(sv[1], buf, sizeof(buf), got, max_fds, &n_got, 0);
	ok(r == -EXFULL && n_got == 0, "%s: %zu fds to a receiver taking %zu is -EXFULL (got %zd)",
	   name, n_send, max_fds, r);
	is_int(before, count_open_fds(), "%s: and none of them is left open", name);
}

static void test_type(int type, const char *name)
{
	int sv[2], p[2], got[IPC_MAX_FDS], many[IPC_MAX_FDS + 1];
	_cleanup_close_ int devnull = -1;
	size_t n_got = 0;
	struct rlimit rl, low;
	char buf[64];
	int before, lowest;
	ssize_t n;

	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(p, O_CLOEXEC) < 0)
		bail("socketpair/pipe2: %m");
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0)
		bail("open /dev/null: %m");

	/* Round trip. */
	n = ipc_send_with_fds(sv[0], "hello", 5, (int[]){ p[0], devnull }, 2, 0);
	is_int(5, n, "%s: send 5 bytes with 2 fds", name);
	n = ipc_recv_with_fds(sv[1], buf, sizeof(buf), got, IPC_MAX_FDS, &n_got, 0);
	is_int(5, n, "%s: receive the 5 bytes", name);
	ok(n == 5 && memcmp(buf, "hello", 5) == 0, "%s: the bytes are intact", name);
	is_int(2, n_got, "%s: both fds arrive", name);
	if (n_got == 2) {
		ok(fd_has_cloexec(got[0]) && fd_has_cloexec(got[1]),
		   "%s: received fds are close-on-exec from birth", name);
		ok(same_file(got[0], p[0]) && same_file(got[1], devnull),
		   "%s: they refer to the files sent, in order", name);
		close_many(got, n_got);
	} else
		skip(2, "no fds to check");

	/* Too many fds: an even and an odd limit (CMSG_SPACE pads odd counts by one slot). */
	check_exfull(name, sv, devnull, 3, 2);
	check_exfull(name, sv, devnull, 2, 1);
	check_exfull(name, sv, devnull, 1, 0);

	/* The receiver's RLIMIT_NOFILE leaves room for one of three fds. */
	lowest = fcntl(0, F_DUPFD, 0);
	if (lowest < 0 || getrlimit(RLIMIT_NOFILE, &rl) < 0)
		bail("fcntl/getrlimit: %m");
	safe_close(lowest);
	before = count_open_fds();
	if (ipc_send_with_fds(sv[0], "x", 1, (int[]){ devnull, devnull, devnull }, 3, 0) != 1)
		bail("send failed");
	low = rl;
	low.rlim_cur = (rlim_t)lowest + 1;
	if (setrlimit(RLIMIT_NOFILE, &low) < 0)
		bail("setrlimit: %m");
	n = ipc_recv_with_fds(sv[1], buf, sizeof(buf), got, IPC_MAX_FDS, &n_got, 0);
	(void)setrlimit(RLIMIT_NOFILE, &rl);
	is_int(-EXFULL, n, "%s: fds lost to RLIMIT_NOFILE are -EXFULL", name);
	is_int(before, count_open_fds(), "%s: and the one that did arrive is closed", name);

	/* After the refusals the channel is still in step. */
	if (ipc_send_with_fds(sv[0], "next", 4, NULL, 0, 0) != 4)
		bail("send failed");
	n = ipc_recv_with_fds(sv[1], buf, sizeof(buf), got, IPC_MAX_FDS, &n_got, 0);
	ok(n == 4 && memcmp(buf, "next", 4) == 0 && n_got == 0,
	   "%s: the next message reads normally", name);

	/* Send-side limits. */
	for (size_t i = 0; i < ELEMENTSOF(many); i++)
		many[i] = devnull;
	is_int(-E2BIG, ipc_send_with_fds(sv[0], "x", 1, many, IPC_MAX_FDS + 1, 0),
	       "%s: sending more than IPC_MAX_FDS is refused", name);
	is_int(1, ipc_send_with_fds(sv[0], "x", 1, many, IPC_MAX_FDS, 0),
	       "%s: sending exactly IPC_MAX_FDS works", name);
	n = ipc_recv_with_fds(sv[1], buf, sizeof(buf), got, IPC_MAX_FDS, &n_got, 0);
	ok(n == 1 && n_got == IPC_MAX_FDS, "%s: and all %d arrive", name, IPC_MAX_FDS);
	if (n == 1)
		close_many(got, n_got);
	is_int(-EINVAL, ipc_send_with_fds(sv[0], "", 0, &devnull, 1, 0),
	       "%s: fds without a byte to travel with are refused", name);

	is_int(-EAGAIN,
	       ipc_recv_with_fds(sv[1], buf, sizeof(buf), got, IPC_MAX_FDS, &n_got, MSG_DONTWAIT),
	       "%s: MSG_DONTWAIT with nothing queued is -EAGAIN", name);

	if (type == SOCK_SEQPACKET) {
		char big[100];

		memset(big, 'b', sizeof(big));
		before = count_open_fds();
		if (ipc_send_with_fds(sv[0], big, sizeof(big), (int[]){ devnull, p[1] }, 2, 0) !=
		    100)
			bail("send failed");
		n = ipc_recv_with_fds(sv[1], buf, 10, got, IPC_MAX_FDS, &n_got, 0);
		is_int(-EMSGSIZE, n, "%s: a record longer than the buffer is -EMSGSIZE", name);
		is_int(before, count_open_fds(), "%s: and its fds are closed", name);
	}

	safe_close(sv[0]);
	n = ipc_recv_with_fds(sv[1], buf, sizeof(buf), got, IPC_MAX_FDS, &n_got, 0);
	ok(n == 0 && n_got == 0, "%s: orderly EOF returns 0", name);
	is_int(-EPIPE, ipc_send_with_fds(sv[1], "x", 1, NULL, 0, 0),
	       "%s: sending to a closed peer is -EPIPE, not SIGPIPE", name);

	safe_close(sv[1]);
	safe_close(p[0]);
	safe_close(p[1]);
}

int main(void)
{
	int before;

	plan(47);
	before = count_open_fds();
	test_type(SOCK_STREAM, "stream");
	test_type(SOCK_SEQPACKET, "seqpacket");
	is_int(before, count_open_fds(), "no fd leaked over the whole test");
	return tap_exit_status();
}
