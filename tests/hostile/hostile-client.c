/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hostile-client: a launcher-channel client (docs/PROTOCOL.md §1) for attacks on
 * cordon-launcherd. It speaks the frame protocol itself, with any plan, any message and
 * hand-picked fds, and prints everything that happens as one JSON object per line on stdout.
 *
 *   hostile-client --socket PATH [OPTIONS]
 *   hostile-client --tcp-sink PORT_FILE
 *
 * Session: connect; a "hello" (seq 1) unless --no-hello; then the message list (--send,
 * --msg, --pause, in the order given), the whole list --repeat times; then --wait-exit and
 * --hold; then a "summary" line; exit.
 *
 * Messages:
 *   --send FILE    a JSON object from FILE. With a "type" member it is sent as it is;
 *                  without, it is a plan, sent as {"type":"spawn","plan":FILE}. A missing
 *                  "seq" is filled in (2, 3, … in sending order).
 *   --msg JSON     the same, inline: --msg '{"type":"kill","sandbox":"{LAST}"}'. A string
 *                  member "sandbox" equal to "{LAST}" becomes the id of the last "spawned".
 *   --pause MS     sleep MS milliseconds at this point of the list (replies that arrive
 *                  meanwhile are read and printed, unless --no-read).
 *   --await-exit   at this point of the list, read until the "exit" of the last sandbox
 *                  "spawned" came (at once if it did, or if none was; --read-timeout).
 *   --repeat N     send the list N times (default 1).
 *
 * Fds (--fd SPEC, repeatable; message fd i is the i-th --fd; --std is --fd 0 --fd 1 --fd 2):
 *   N              a dup of our own fd N (0, 1, 2: our stdio; others inherited from the shell)
 *   path:P         open(P, O_PATH)                  (a bind source)
 *   ro:P           open(P, O_RDONLY)                (a FUSE file: ro:$MNT/f)
 *   wr:P           open(P, O_WRONLY|O_CREAT|O_APPEND, 0666)   (a sandbox's stdout)
 *   devnull        /dev/null, O_RDWR
 *   mntns          open("/proc/self/ns/mnt")        (plan.mountNamespace)
 *   pipe-r         a pipe's read end; we keep the write end open (reads block, never EOF)
 *   pipe-w         a pipe's write end; we keep the read end open and never read it
 *   memfd:FILE     FILE's bytes copied into a memfd (a seccomp program)
 *   tcp-linger:PORT  a TCP socket connected to 127.0.0.1:PORT with SO_LINGER {1, 60} and
 *                  as much unsent data as it takes to fill both buffers (the peer must accept
 *                  and never read: --tcp-sink). Its last close waits up to 60 s for the peer.
 *                  PORT 0: our own listener, accepted here and held for our lifetime.
 *   unix-nested:SPEC an AF_UNIX socket whose receive queue holds SPEC's fd in flight (the
 *                  other end and our copy of SPEC closed): the last close of this socket is
 *                  the last close of SPEC. Recursive: unix-nested:unix-nested:tcp-linger:P.
 *                  (Our copy of SPEC is closed in a thread of its own: a FUSE file's close may
 *                  never return, unix-nested:ro:$FUSE/f.)
 * Which messages carry the fd list: --fds-on TYPES (comma-separated message types, or "all";
 * default "spawn"; "hello" puts them on the hello). --fd-count N: attach N fds (the list
 * repeated cyclically), up to 253, the kernel's limit, whatever IPC_MAX_FDS says. After the
 * last message that carries them our copies are closed (--keep-fds: kept to the end), so that
 * the copies in flight are the last ones; each in a thread of its own, so that a close that
 * waits never stops us. If one still waits at the end (launcherd and its receiver were done
 * with theirs first: our close was the last, and the attack never reached launcherd), the
 * summary says "ownCloseWaits".
 *
 * Hello: --no-hello sends none (the first message is yours: --send a hello of your own);
 * --hello-version N asks for protocol version N (default 1).
 *
 * Reading:
 *   (default)      after each request, read until its reply (same seq) or --read-timeout
 *   --pipeline     send the whole list first, then read until every request has a reply
 *   --no-read      never read anything (not even the hello reply); a "sent" line at the end
 *   --read-timeout MS  per reply (default 5000); pipelined: since the last message received
 *   --read-delay MS    sleep before each receive (a slow reader)
 *   --send-timeout MS  a send the socket has no room for that long stops sending (a
 *                  "send-blocked" line), default 10000
 *   --wait-exit    then read until every spawned sandbox's "exit" came (each --read-timeout)
 *   --hold SEC     then keep the connection (and held fds) SEC seconds more, still reading
 *                  and printing unless --no-read
 *   --quiet TYPES  do not print replies of these types (comma-separated; they still count)
 *
 * Attacks on what "spawned" gives:
 *   --probe-init MS  on each "spawned", for MS milliseconds (and at least once) try
 *                  PTRACE_SEIZE (detached again at once) and open("/proc/PID/mem") on the
 *                  sandbox's init (its "pid"); one "probe-init" line: tries and the first
 *                  success of each, else the last errno name.
 *   --hold-init    on each "spawned", a forked tracer PTRACE_SEIZEs the init with
 *                  PTRACE_O_TRACEEXIT, passes on every stop but the exit stop, and holds the
 *                  init there (alive, its report written) until we exit. "hold-init" line.
 *   --race-init MS   before each spawn is sent (not --pipeline), fork a racer that watches
 *                  the pids around the last one given out (256 before, 64 after: launcherd
 *                  may have made the set-up child ahead) and tries PTRACE_SEIZE and
 *                  open("/proc/PID/mem") on each that is launcherd's (its descendant: the
 *                  sandbox's set-up child, which turns into the init when it execs
 *                  cordon-init as the requester, before "spawned"), as fast as it can, until
 *                  the reply came or MS passed. Nothing but launcherd's processes is touched.
 *                  One "race-init" line per spawn: "ptrace" and "mem" are "ok" when they
 *                  reached an init or its vfork child (comm "cordon-init": they share their
 *                  memory), else the most telling errno (EPERM: launcherd's process was
 *                  there), "seen" how many of launcherd's processes, "pid" the one reached.
 *   --race-hold    a racer that seized an init holds it at its exit, as --hold-init does
 *                  ("held": true); the seized processes are let go when we exit.
 *   Every "spawned" keeps its pidfd: the line "live" counts our sandboxes whose init has not
 *   exited at that moment (pidfd not readable), the new one included; the summary has the
 *   most seen ("maxLive").
 *
 * More connections:
 *   --extra-conns N  before the session, N more connections, each with a hello (unless
 *                  --no-hello), held open until we exit; one "conn" line each with "result":
 *                  "hello", "error:CODE", "closed", "timeout" or "connect:ERRNO".
 *   --storm N      before the session, N connections one after the other: connect, hello,
 *                  read its reply, close. One "storm" line with the counts per result.
 *
 * Output lines (besides every reply received, as launcherd sent it, with "nfds" added when it
 * carried fds, and the lines of the options above: "probe-init", "hold-init", "race-init",
 * "live", "conn", "storm"): {"type":"closed"} (EOF or reset), {"type":"timeout","seq":N},
 * {"type":"send-blocked","sent":N}, {"type":"send-error","errno":"E…"},
 * {"type":"connect-error","errno":"E…"}, and last {"type":"summary","sent":N,"replies":N,
 * "exits":N,"closed":B,"maxLive":N,"timeouts":N,"blocked":B,"ownCloseWaits":B}.
 *
 * Exit status: 0 the session ran to its end; 2 cannot connect; 3 launcherd closed the
 * connection; 4 a reply did not come in time; 5 a send was blocked --send-timeout long; 1 a
 * local error or bad usage.
 *
 * --tcp-sink PORT_FILE: listen on 127.0.0.1 (an ephemeral port, a small receive buffer),
 * write the port to PORT_FILE, accept every connection and never read; until killed.
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-frame.h"

#define KERNEL_MAX_FDS 253 /* SCM_MAX_FD */
#define MAX_SPECS 256
#define MAX_HELD 4096
#define MAX_SCRIPT 256
#define MAX_LIVE 4096

struct step {
	json_t *msg; /* NULL: a pause, or with pause_ms < 0, --await-exit */
	int pause_ms;
};

static struct {
	const char *socket_path;
	int fds[MAX_SPECS];
	size_t n_fds;
	int fd_count;
	char fds_on[256];
	bool keep_fds, no_hello, no_read, pipeline, wait_exit, hold_init, race_hold;
	int race_init;
	int hello_version;
	struct step script[MAX_SCRIPT];
	size_t n_script;
	int repeat, read_timeout, read_delay, send_timeout, probe_init;
	double hold;
	char quiet[256];
	int extra_conns, storm;
} opt = {
	.fds_on = "spawn",
	.hello_version = 1,
	.repeat = 1,
	.read_timeout = 5000,
	.send_timeout = 10000,
	.probe_init = -1,
};

/* Everything kept open for our lifetime: other pipe ends, listeners, accepted peers, extra
 * connections, pidfds of held inits' tracers. */
static int held[MAX_HELD];
static size_t n_held;

static struct {
	int sock;
	int64_t next_seq;
	long sent, replies, exits, spawned, timeouts;
	bool closed, blocked;
	char last_sandbox[128];
	char last_exit[128];
	int live[MAX_LIVE];
	size_t n_live;
	int max_live;
	pid_t tracers[MAX_LIVE];
	size_t n_tracers;
} st = { .sock = -1, .next_seq = 2 };

static void hold_fd(int fd)
{
	if (fd < 0)
		return;
	if (n_held < MAX_HELD)
		held[n_held++] = fd;
	else
		safe_close(fd);
}

static const char *errname(int e)
{
	static char buf[32];

	switch (e < 0 ? -e : e) {
	case EPERM:
		return "EPERM";
	case EACCES:
		return "EACCES";
	case ESRCH:
		return "ESRCH";
	case ENOENT:
		return "ENOENT";
	case EAGAIN:
		return "EAGAIN";
	case ECONNREFUSED:
		return "ECONNREFUSED";
	case ECONNRESET:
		return "ECONNRESET";
	case EPIPE:
		return "EPIPE";
	case EMFILE:
		return "EMFILE";
	case ENFILE:
		return "ENFILE";
	case EMSGSIZE:
		return "EMSGSIZE";
	case ETOOMANYREFS:
		return "ETOOMANYREFS";
	case ENOBUFS:
		return "ENOBUFS";
	case EINVAL:
		return "EINVAL";
	case EBADF:
		return "EBADF";
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case EUSERS:
		return "EUSERS";
	default:
		(void)snprintf(buf, sizeof(buf), "E%d", e < 0 ? -e : e);
		return buf;
	}
}

/* One output line; steals j. */
static void emit(json_t *j)
{
	_cleanup_free_ char *s = NULL;

	if (!j)
		return;
	s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	if (s)
		(void)printf("%s\n", s);
}

static unsigned long long now_ms(void)
{
	return now_nsec() / 1000000ULL;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static bool listed(const char *list, const char *type)
{
	size_t n = strlen(type);

	if (streq(list, "all"))
		return true;
	for (const char *p = list; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (len == n && strncmp(p, type, n) == 0)
			return true;
		p = comma ? comma + 1 : NULL;
	}
	return false;
}

/* --- fd specs ----------------------------------------------------------------------------- */

static int memfd_from_file(const char *path)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int fd = -1;
	size_t len;
	int r;

	r = read_full_file(path, 16 * 1024 * 1024, &buf, &len);
	if (r < 0)
		return r;
	fd = memfd_create("hostile", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = loop_write(fd, buf, len);
	if (r < 0)
		return r;
	return TAKE_FD(fd);
}

static int tcp_listener(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int small = 4096, fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Inherited by accepted sockets: a small window that fills at once. */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1024) < 0) {
		int r = -errno;

		safe_close(fd);
		return r;
	}
	return fd;
}

static int local_port(int fd)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);

	if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		return -errno;
	return ntohs(sa.sin_port);
}

/* A connected TCP socket whose close lingers: SO_LINGER {1, 60} and unsent data queued behind
 * a peer window that stays shut. */
static int tcp_linger(const char *port_s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct linger lg = { .l_onoff = 1, .l_linger = 60 };
	_cleanup_close_ int fd = -1;
	static char junk[65536];
	unsigned port;
	int small = 4096, listener = -1;
	long progress;

	if (safe_atou(port_s, &port) < 0 || port > 65535)
		return -EINVAL;
	if (port == 0) {
		int p;

		listener = tcp_listener();
		if (listener < 0)
			return listener;
		hold_fd(listener);
		p = local_port(listener);
		if (p < 0)
			return p;
		port = (unsigned)p;
	}
	sa.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	if (listener >= 0) {
		/* Our own listener: accept the peer now and hold it, never read. */
		int a = accept4(listener, NULL, NULL, SOCK_CLOEXEC);

		if (a < 0)
			return -errno;
		hold_fd(a);
	}
	if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0 ||
	    fd_set_nonblock(fd, true) < 0)
		return -errno;
	memset(junk, 'x', sizeof(junk));
	/* Fill until a round makes no progress: the peer's window and our buffer are full. */
	do {
		progress = 0;
		for (;;) {
			ssize_t n = send(fd, junk, sizeof(junk), MSG_NOSIGNAL);

			if (n <= 0)
				break;
			progress += n;
		}
		sleep_ms(50);
	} while (progress > 0);
	if (fd_set_nonblock(fd, false) < 0)
		return -errno;
	return TAKE_FD(fd);
}

static int open_spec(const char *spec);

/* Closes of message fds after their last send, made in threads of their own: how many began,
 * how many returned. */
static unsigned closes_begun;
static unsigned closes_done;

static void *close_thread_uncounted(void *arg)
{
	safe_close((int)(intptr_t)arg);
	return NULL;
}

static void *close_thread(void *arg)
{
	safe_close((int)(intptr_t)arg);
	__atomic_add_fetch(&closes_done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Close in a thread of its own, not waited for: a close that waits (the last close of a
 * lingering socket, a FUSE file's FLUSH) blocks that thread only, and our exit ends it. */
static void close_detached(int fd, bool count)
{
	pthread_t t;

	if (pthread_create(&t, NULL, count ? close_thread : close_thread_uncounted,
			   (void *)(intptr_t)fd) != 0)
		return; /* kept open */
	if (count)
		closes_begun++;
	(void)pthread_detach(t);
}

static int unix_nested(const char *inner_spec)
{
	int sv[2], inner, r;

	inner = open_spec(inner_spec);
	if (inner < 0)
		return inner;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		r = -errno;
		safe_close(inner);
		return r;
	}
	r = (int)ipc_send_with_fds(sv[1], "x", 1, &inner, 1, 0);
	close_detached(inner, false);
	safe_close(sv[1]);
	if (r < 0) {
		safe_close(sv[0]);
		return r;
	}
	return sv[0];
}

static int open_spec(const char *spec)
{
	const char *v;
	int fd, p[2];
	unsigned n;

	if (safe_atou(spec, &n) >= 0)
		fd = fcntl((int)n, F_DUPFD_CLOEXEC, 3);
	else if ((v = startswith(spec, "path:")))
		fd = open(v, O_PATH | O_CLOEXEC);
	else if ((v = startswith(spec, "ro:")))
		fd = open(v, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	else if ((v = startswith(spec, "wr:")))
		fd = open(v, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0666);
	else if (streq(spec, "devnull"))
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	else if (streq(spec, "mntns"))
		fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	else if (streq(spec, "pipe-r") || streq(spec, "pipe-w")) {
		if (pipe2(p, O_CLOEXEC) < 0)
			return -errno;
		hold_fd(streq(spec, "pipe-r") ? p[1] : p[0]);
		return streq(spec, "pipe-r") ? p[0] : p[1];
	} else if ((v = startswith(spec, "memfd:")))
		return memfd_from_file(v);
	else if ((v = startswith(spec, "tcp-linger:")))
		return tcp_linger(v);
	else if ((v = startswith(spec, "unix-nested:")))
		return unix_nested(v);
	else
		return -EINVAL;
	return fd < 0 ? -errno : fd;
}

/* --- sending ------------------------------------------------------------------------------ */

/* A frame of any size with up to KERNEL_MAX_FDS fds (no IPC_FRAME_MAX / IPC_MAX_FDS check:
 * launcherd must cope with what a client may send). 0, -EAGAIN after timeout_ms without room,
 * or -errno. */
static int send_frame(int sock, const char *payload, size_t len, const int *fds, size_t n_fds,
		      int timeout_ms)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * KERNEL_MAX_FDS)];
	} control = {};
	_cleanup_free_ unsigned char *frame = malloc(IPC_FRAME_HEADER_SIZE + len);
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	unsigned long long deadline = now_ms() + (unsigned long long)timeout_ms;
	uint32_t h[2] = { htole32(IPC_FRAME_MAGIC), htole32((uint32_t)len) };

	if (!frame)
		return -ENOMEM;
	memcpy(frame, h, sizeof(h));
	memcpy(frame + IPC_FRAME_HEADER_SIZE, payload, len);
	iov = (struct iovec){ .iov_base = frame, .iov_len = IPC_FRAME_HEADER_SIZE + len };
	if (n_fds > 0) {
		struct cmsghdr *cm;

		mh.msg_control = control.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
	}
	for (;;) {
		struct pollfd pfd = { .fd = sock, .events = POLLOUT };
		long long left;

		if (sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		left = (long long)deadline - (long long)now_ms();
		if (left <= 0)
			return -EAGAIN;
		(void)poll(&pfd, 1, (int)(left > 100 ? 100 : left));
	}
}

static int connect_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int size = 4 * 1024 * 1024, fd;

	if (strlen(opt.socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, opt.socket_path, strlen(opt.socket_path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Room for a frame at the limit and beyond (root may force it past wmem_max). */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		safe_close(fd);
		return r;
	}
	return fd;
}

/* --- receiving ---------------------------------------------------------------------------- */

/* Our sandboxes whose init has not exited (pidfd not readable); the others are dropped. */
static int live_count(void)
{
	size_t k = 0;

	for (size_t i = 0; i < st.n_live; i++) {
		struct pollfd pfd = { .fd = st.live[i], .events = POLLIN };

		if (poll(&pfd, 1, 0) > 0) {
			safe_close(st.live[i]);
			continue;
		}
		st.live[k++] = st.live[i];
	}
	st.n_live = k;
	return (int)k;
}

static void note_live(const char *sandbox, int pidfd)
{
	int live;

	(void)live_count();
	if (pidfd >= 0 && st.n_live < MAX_LIVE)
		st.live[st.n_live++] = pidfd;
	else
		safe_close(pidfd);
	live = (int)st.n_live;
	if (live > st.max_live)
		st.max_live = live;
	emit(json_pack("{s:s,s:s,s:i}", "type", "live", "sandbox", sandbox, "count", live));
}

static void probe_init(pid_t pid)
{
	unsigned long long end =
		now_ms() + (unsigned long long)(opt.probe_init > 0 ? opt.probe_init : 0);
	const char *ptrace_res = NULL, *mem_res = NULL;
	char path[64];
	int tries = 0, pt_err = 0, mem_err = 0;

	(void)snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	do {
		int fd;

		tries++;
		if (!ptrace_res) {
			if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) == 0) {
				ptrace_res = "ok";
				(void)ptrace(PTRACE_DETACH, pid, NULL, NULL);
			} else
				pt_err = errno;
		}
		if (!mem_res) {
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				mem_res = "ok";
				safe_close(fd);
			} else
				mem_err = errno;
		}
		if (ptrace_res && mem_res)
			break;
	} while (now_ms() < end);
	emit(json_pack("{s:s,s:i,s:i,s:s,s:s}", "type", "probe-init", "pid", (int)pid, "tries",
		       tries, "ptrace", ptrace_res ? ptrace_res : errname(pt_err), "mem",
		       mem_res ? mem_res : errname(mem_err)));
}

/* The tracer: seize the init, let it run through every stop but its exit, and hold it there
 * until we are killed or the parent is gone. */
/* As the tracer of pid (seized with PTRACE_O_TRACEEXIT) and maybe of others we seized: let
 * each run through every stop, but pid at its exit, which is held there, alive, its report
 * written, until we are killed. */
_noreturn_ static void trace_hold(pid_t pid)
{
	for (;;) {
		int status;
		pid_t w = waitpid(-1, &status, __WALL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			for (;;)
				pause(); /* nothing more to wait for: hold what we hold */
		}
		if (!WIFSTOPPED(status))
			continue;
		if (w == pid && status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8)))
			continue; /* held: never continued */
		/* A signal-delivery stop passes the signal on; a group stop or event, nothing. */
		if (status >> 16 == 0 && WSTOPSIG(status) != SIGTRAP)
			(void)ptrace(PTRACE_CONT, w, NULL, (void *)(long)WSTOPSIG(status));
		else if (status >> 16 == PTRACE_EVENT_STOP)
			(void)ptrace(PTRACE_LISTEN, w, NULL, NULL);
		else
			(void)ptrace(PTRACE_CONT, w, NULL, NULL);
	}
}

_noreturn_ static void tracer(pid_t pid, int report)
{
	char c;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (ptrace(PTRACE_SEIZE, pid, NULL, (void *)(long)PTRACE_O_TRACEEXIT) < 0) {
		c = (char)errno;
		(void)!write(report, &c, 1);
		_exit(1);
	}
	c = 0;
	(void)!write(report, &c, 1);
	safe_close(report);
	trace_hold(pid);
}

/* pid's comm ("" if gone) and parent (0 if gone). */
static pid_t proc_stat(pid_t pid, char comm[32])
{
	char path[64], buf[512], *open_paren, *close_paren;
	_cleanup_close_ int fd = -1;
	int ppid = 0;
	ssize_t n;

	comm[0] = '\0';
	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren - open_paren - 1 >= 32)
		return 0;
	memcpy(comm, open_paren + 1, (size_t)(close_paren - open_paren - 1));
	comm[close_paren - open_paren - 1] = '\0';
	if (sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

/* Whether pid is a sandbox init (or its vfork child, which shares its memory, before exec). */
static bool is_init(pid_t pid)
{
	char comm[32];

	return proc_stat(pid, comm) > 0 && streq(comm, "cordon-init");
}

/* Whether pid descends from launcherd (within a few generations): one of its set-up children,
 * inits, or their vfork children, never another launcherd's nor anyone else's process. */
static bool from_launcherd(pid_t pid, pid_t launcherd)
{
	char comm[32];

	for (int depth = 0; depth < 4 && pid > 1; depth++) {
		pid = proc_stat(pid, comm);
		if (pid == launcherd)
			return true;
	}
	return false;
}

/* The pids raced for: launcherd may have made a sandbox's set-up child ahead of the request
 * (a while before: RACE_BEFORE), or makes it on the request (RACE_AFTER). */
#define RACE_BEFORE 256
#define RACE_AFTER 64
#define RACE_SPAN (RACE_BEFORE + RACE_AFTER)

enum {
	RACE_UNKNOWN,
	RACE_OTHER,
	RACE_OURS,  /* a descendant of launcherd */
	RACE_CHILD, /* launcherd's own child: a set-up child, then an init */
};

/*
 * The racer (--race-init): forked just before a spawn is sent. Each pid around the last one
 * given out (RACE_BEFORE before it, RACE_AFTER after) that turns out to be launcherd's (a
 * descendant: the sandbox's set-up child, later its init, and the init's vfork child) is tried
 * with PTRACE_SEIZE and open("/proc/PID/mem") as fast as we can, until the spawn's reply came
 * (a byte on stop) or ms passed: the set-up child turns into the init when it execs
 * cordon-init as the requester, and an attempt that waits on the exec gets in right after it.
 * No other process is ever touched. One "race-init" line: "ptrace" and "mem" are "ok" when
 * they reached an init or its vfork child (comm "cordon-init": they share their memory), else
 * the most telling errno (EPERM: launcherd's process was there), "seen" how many of
 * launcherd's processes. With hold, a seized init (launcherd's child itself) is then held at
 * its exit (trace_hold); a seized vfork child is let go on.
 */
_noreturn_ static void racer(pid_t base, pid_t launcherd, int ms, bool hold, int stop)
{
	unsigned long long end = now_ms() + (unsigned long long)ms;
	const char *pt = "ESRCH", *mem = "ESRCH";
	unsigned char state[RACE_SPAN + 1] = { 0 };
	pid_t won = 0, vfork_child = 0, mem_pid = 0;
	long passes = 0;
	int seen = 0;
	char c;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	(void)fd_set_nonblock(stop, true);
	while (!won && now_ms() < end && read(stop, &c, 1) < 0) {
		passes++;
		for (int i = 1; i <= RACE_SPAN && !won; i++) {
			pid_t p = base - RACE_BEFORE + i;
			char path[64];
			int fd;

			if (state[i] == RACE_OTHER)
				continue;
			if (state[i] == RACE_UNKNOWN) {
				char comm[32];
				pid_t parent = proc_stat(p, comm);

				if (parent == 0)
					continue; /* not yet */
				state[i] = parent == launcherd		  ? RACE_CHILD
					   : from_launcherd(p, launcherd) ? RACE_OURS
									  : RACE_OTHER;
				if (state[i] == RACE_OTHER)
					continue;
				seen++;
			}
			if (ptrace(PTRACE_SEIZE, p, NULL,
				   (void *)(long)(hold && state[i] == RACE_CHILD
							  ? PTRACE_O_TRACEEXIT
							  : 0)) == 0) {
				if (is_init(p)) {
					pt = "ok";
					if (!hold || state[i] == RACE_CHILD)
						won = p;
					else if (!vfork_child)
						vfork_child = p; /* and on, for the init itself */
				}
				state[i] = RACE_OTHER; /* seized (the command too) until we exit */
				continue;
			}
			if (errno == ESRCH) {
				state[i] = RACE_OTHER; /* gone */
				continue;
			}
			if (!streq(pt, "ok"))
				pt = errname(errno);
			/* /proc/PID/mem now and then: it costs a path walk. */
			if (mem_pid || passes % 8 != 0)
				continue;
			(void)snprintf(path, sizeof(path), "/proc/%d/mem", (int)p);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				if (is_init(p)) {
					mem_pid = p;
					mem = "ok";
				}
				safe_close(fd);
			} else if (errno != ENOENT && errno != ESRCH)
				mem = errname(errno);
		}
	}
	if ((won || vfork_child) && !mem_pid) {
		pid_t target = won ? won : vfork_child;
		char path[64];
		int fd;

		(void)snprintf(path, sizeof(path), "/proc/%d/mem", (int)target);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			mem = "ok";
			mem_pid = target;
			safe_close(fd);
		}
	}
	emit(json_pack("{s:s,s:i,s:s,s:s,s:i,s:I,s:b}", "type", "race-init", "pid",
		       (int)(won	   ? won
			     : vfork_child ? vfork_child
					   : mem_pid),
		       "ptrace", pt, "mem", mem, "seen", seen, "passes", (json_int_t)passes, "held",
		       won && hold));
	(void)fflush(stdout);
	/* Whatever we seized goes on (the init held at its exit) until we are killed. */
	if (streq(pt, "ok"))
		trace_hold(hold ? won : 0);
	_exit(0);
}

static pid_t last_pid(void)
{
	_cleanup_free_ char *v = NULL;
	int n;

	if (read_full_file("/proc/sys/kernel/ns_last_pid", 32, &v, NULL) < 0)
		return 0;
	n = (int)strtol(v, NULL, 10);
	return (pid_t)n;
}

/* Fork a racer for the spawn about to be sent; *ret_stop tells it the reply came. */
static void racer_start(int *ret_stop)
{
	pid_t base = last_pid(), t;
	struct ucred peer = { 0 };
	socklen_t len = sizeof(peer);
	int p[2], ready[2];
	char c;

	*ret_stop = -1;
	/* launcherd's pid: its processes are the only ones we race for. */
	if (getsockopt(st.sock, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0 || peer.pid <= 0 ||
	    pipe2(p, O_CLOEXEC) < 0)
		return;
	(void)fflush(stdout);
	if (pipe2(ready, O_CLOEXEC) < 0) {
		safe_close(p[0]);
		safe_close(p[1]);
		return;
	}
	t = fork();
	if (t == 0) {
		safe_close(p[1]);
		safe_close(ready[0]);
		(void)!write(ready[1], "", 1);
		safe_close(ready[1]);
		racer(base, peer.pid, opt.race_init, opt.race_hold, p[0]);
	}
	safe_close(p[0]);
	safe_close(ready[1]);
	/* The spawn goes once the racer runs. */
	if (t > 0)
		(void)!read(ready[0], &c, 1);
	safe_close(ready[0]);
	if (t < 0) {
		safe_close(p[1]);
		return;
	}
	if (st.n_tracers < MAX_LIVE)
		st.tracers[st.n_tracers++] = t;
	*ret_stop = p[1];
}

static void hold_init(pid_t pid)
{
	int p[2];
	char c = (char)EIO;
	pid_t t;

	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	(void)fflush(stdout);
	t = fork();
	if (t == 0) {
		safe_close(p[0]);
		tracer(pid, p[1]);
	}
	safe_close(p[1]);
	if (t > 0 && read(p[0], &c, 1) != 1)
		c = (char)EIO;
	safe_close(p[0]);
	if (t > 0 && st.n_tracers < MAX_LIVE)
		st.tracers[st.n_tracers++] = t;
	emit(json_pack("{s:s,s:i,s:s}", "type", "hold-init", "pid", (int)pid, "result",
		       t > 0 && c == 0 ? "held" : errname(t < 0 ? errno : c)));
}

/* Receive and print one message (poll first, up to timeout_ms). 1: one came (*seq its seq, or
 * 0), 0: nothing in time, -1: closed. */
static int recv_one(int timeout_ms, int64_t *seq)
{
	struct pollfd pfd = { .fd = st.sock, .events = POLLIN };
	_cleanup_json_ json_t *m = NULL;
	int fds[IPC_MAX_FDS];
	size_t n_fds = 0;
	const char *type;
	int r;

	*seq = 0;
	if (st.closed)
		return -1;
	if (opt.read_delay > 0)
		sleep_ms(opt.read_delay);
	r = poll(&pfd, 1, timeout_ms);
	if (r < 0 && errno == EINTR)
		return 0;
	if (r <= 0)
		return 0;
	r = ipc_frame_recv_json(st.sock, &m, fds, IPC_MAX_FDS, &n_fds, MSG_DONTWAIT);
	if (r == -EAGAIN)
		return 0;
	if (r <= 0) {
		st.closed = true;
		emit(json_pack("{s:s,s:s}", "type", "closed", "errno", r < 0 ? errname(r) : ""));
		return -1;
	}
	type = json_string_value(json_object_get(m, "type"));
	if (json_is_integer(json_object_get(m, "seq")))
		*seq = json_integer_value(json_object_get(m, "seq"));
	if (type && streq(type, "exit")) {
		const char *sb = json_string_value(json_object_get(m, "sandbox"));

		st.exits++;
		(void)snprintf(st.last_exit, sizeof(st.last_exit), "%s", sb ? sb : "");
	} else
		st.replies++;
	if (n_fds > 0)
		(void)json_object_set_new(m, "nfds", json_integer((json_int_t)n_fds));
	if (!type || !listed(opt.quiet, type))
		emit(json_incref(m));
	if (type && streq(type, "spawned")) {
		const char *sb = json_string_value(json_object_get(m, "sandbox"));
		pid_t pid = (pid_t)json_integer_value(json_object_get(m, "pid"));

		st.spawned++;
		if (sb)
			(void)snprintf(st.last_sandbox, sizeof(st.last_sandbox), "%s", sb);
		if (opt.probe_init >= 0 && pid > 0)
			probe_init(pid);
		if (opt.hold_init && pid > 0)
			hold_init(pid);
		note_live(sb ? sb : "", n_fds > 0 ? fds[0] : -1);
		if (n_fds > 0)
			fds[0] = -1;
	}
	close_many(fds, n_fds);
	return 1;
}

/* Read until the reply with this seq, or timeout_ms of nothing. */
static int wait_reply(int64_t seq)
{
	for (;;) {
		int64_t got;
		int r = recv_one(opt.read_timeout, &got);

		if (r < 0)
			return -1;
		if (r == 0) {
			st.timeouts++;
			emit(json_pack("{s:s,s:I}", "type", "timeout", "seq", (json_int_t)seq));
			return 0;
		}
		if (got == seq)
			return 1;
	}
}

/* Read whatever comes for ms milliseconds. */
static void read_for(int ms)
{
	unsigned long long end = now_ms() + (unsigned long long)ms;

	for (;;) {
		long long left = (long long)end - (long long)now_ms();
		int64_t got;

		if (left <= 0)
			return;
		if (opt.no_read || st.closed) {
			sleep_ms((int)left);
			return;
		}
		(void)recv_one((int)left, &got);
	}
}

/* Read until the last spawned sandbox's exit (at once if it came already). */
static void await_exit(void)
{
	while (!opt.no_read && !st.closed && *st.last_sandbox &&
	       !streq(st.last_exit, st.last_sandbox)) {
		int64_t got;

		if (recv_one(opt.read_timeout, &got) == 0) {
			st.timeouts++;
			emit(json_pack("{s:s,s:s}", "type", "timeout", "waiting", "exit"));
			return;
		}
	}
}

/* --- the session -------------------------------------------------------------------------- */

/* One message: seq filled in, "{LAST}" replaced, fds attached per --fds-on. */
static int send_msg(json_t *tmpl, bool last_with_fds, int64_t *ret_seq)
{
	_cleanup_json_ json_t *m = json_deep_copy(tmpl);
	_cleanup_free_ char *text = NULL;
	const char *type, *sb;
	int fds[KERNEL_MAX_FDS];
	size_t n = 0;
	int r;

	if (!m)
		return -ENOMEM;
	if (!json_object_get(m, "type")) {
		json_t *w = json_pack("{s:s,s:O}", "type", "spawn", "plan", m);

		json_decref(m);
		m = w;
		if (!m)
			return -ENOMEM;
	}
	if (!json_object_get(m, "seq"))
		(void)json_object_set_new(m, "seq", json_integer(st.next_seq++));
	*ret_seq = json_integer_value(json_object_get(m, "seq"));
	sb = json_string_value(json_object_get(m, "sandbox"));
	if (sb && streq(sb, "{LAST}"))
		(void)json_object_set_new(m, "sandbox", json_string(st.last_sandbox));
	type = json_string_value(json_object_get(m, "type"));
	if (type && listed(opt.fds_on, type) && opt.n_fds > 0) {
		size_t want = opt.fd_count > 0 ? (size_t)opt.fd_count : opt.n_fds;

		for (; n < want && n < KERNEL_MAX_FDS; n++)
			fds[n] = opt.fds[n % opt.n_fds];
	}
	text = json_dumps(m, JSON_COMPACT);
	if (!text)
		return -ENOMEM;
	r = send_frame(st.sock, text, strlen(text), fds, n, opt.send_timeout);
	if (r == 0 && n > 0 && last_with_fds && !opt.keep_fds) {
		for (size_t i = 0; i < opt.n_fds; i++)
			close_detached(opt.fds[i], true);
		opt.n_fds = 0;
	}
	return r;
}

static bool is_spawn(json_t *m)
{
	const char *type = json_string_value(json_object_get(m, "type"));

	return !type || streq(type, "spawn");
}

static bool carries_fds(json_t *m)
{
	const char *type = json_string_value(json_object_get(m, "type"));

	return listed(opt.fds_on, type ? type : "spawn");
}

static int open_conn_hello(char *result, size_t size)
{
	_cleanup_json_ json_t *hello = NULL, *reply = NULL;
	_cleanup_free_ char *text = NULL;
	int fds[IPC_MAX_FDS];
	size_t n_fds = 0;
	struct pollfd pfd;
	int fd, r;

	fd = connect_socket();
	if (fd < 0) {
		(void)snprintf(result, size, "connect:%s", errname(fd));
		return -1;
	}
	if (opt.no_hello) {
		(void)snprintf(result, size, "connected");
		return fd;
	}
	hello = json_pack("{s:s,s:i,s:i}", "type", "hello", "seq", 1, "version", opt.hello_version);
	text = hello ? json_dumps(hello, JSON_COMPACT) : NULL;
	if (!text || send_frame(fd, text, strlen(text), NULL, 0, opt.send_timeout) < 0) {
		(void)snprintf(result, size, "closed");
		return fd;
	}
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&pfd, 1, opt.read_timeout) <= 0) {
		(void)snprintf(result, size, "timeout");
		return fd;
	}
	r = ipc_frame_recv_json(fd, &reply, fds, IPC_MAX_FDS, &n_fds, MSG_DONTWAIT);
	close_many(fds, n_fds);
	if (r <= 0)
		(void)snprintf(result, size, "closed");
	else if (streq_ptr(json_string_value(json_object_get(reply, "type")), "hello"))
		(void)snprintf(result, size, "hello");
	else
		(void)snprintf(result, size, "error:%s",
			       json_string_value(json_object_get(reply, "code")) ?: "?");
	return fd;
}

static void extra_conns(void)
{
	for (int i = 0; i < opt.extra_conns; i++) {
		char result[64];
		int fd = open_conn_hello(result, sizeof(result));

		hold_fd(fd);
		emit(json_pack("{s:s,s:i,s:s}", "type", "conn", "index", i, "result", result));
	}
}

static void storm(void)
{
	_cleanup_json_ json_t *counts = json_object();

	for (int i = 0; i < opt.storm && counts; i++) {
		char result[64];
		int fd = open_conn_hello(result, sizeof(result));
		json_t *c = json_object_get(counts, result);

		safe_close(fd);
		(void)json_object_set_new(counts, result,
					  json_integer(c ? json_integer_value(c) + 1 : 1));
	}
	emit(json_pack("{s:s,s:i,s:O}", "type", "storm", "connections", opt.storm, "results",
		       counts));
}

static int session(void)
{
	size_t last_fd_step = SIZE_MAX;
	int r;

	st.sock = connect_socket();
	if (st.sock < 0) {
		emit(json_pack("{s:s,s:s}", "type", "connect-error", "errno", errname(st.sock)));
		return 2;
	}
	/* The last message that carries the fd list: our copies go after it. */
	for (size_t i = 0; i < opt.n_script; i++)
		if (opt.script[i].msg && carries_fds(opt.script[i].msg))
			last_fd_step = i;

	if (!opt.no_hello) {
		_cleanup_json_ json_t *hello = json_pack("{s:s,s:i,s:i}", "type", "hello", "seq", 1,
							 "version", opt.hello_version);
		int64_t seq;
		bool hello_last = listed(opt.fds_on, "hello") && last_fd_step == SIZE_MAX;

		r = hello ? send_msg(hello, hello_last, &seq) : -ENOMEM;
		if (r < 0) {
			emit(json_pack("{s:s,s:s}", "type", "send-error", "errno", errname(r)));
			st.closed = true;
		} else {
			st.sent++;
			if (!opt.no_read && wait_reply(seq) == 0)
				return 4;
		}
	}
	for (int round = 0; round < opt.repeat && !st.closed && !st.blocked; round++)
		for (size_t i = 0; i < opt.n_script && !st.closed && !st.blocked; i++) {
			struct step *s = &opt.script[i];
			int race_stop = -1;
			bool race;
			int64_t seq;

			if (!s->msg && s->pause_ms < 0) {
				await_exit();
				continue;
			}
			if (!s->msg) {
				read_for(s->pause_ms);
				continue;
			}
			race = opt.race_init > 0 && !opt.pipeline && !opt.no_read &&
			       is_spawn(s->msg);
			if (race)
				racer_start(&race_stop);
			r = send_msg(s->msg, round == opt.repeat - 1 && i == last_fd_step, &seq);
			if (r == -EAGAIN) {
				st.blocked = true;
				emit(json_pack("{s:s,s:I}", "type", "send-blocked", "sent",
					       (json_int_t)st.sent));
				break;
			}
			if (r < 0) {
				emit(json_pack("{s:s,s:s,s:I}", "type", "send-error", "errno",
					       errname(r), "sent", (json_int_t)st.sent));
				st.closed = true;
				break;
			}
			st.sent++;
			if (opt.no_read || opt.pipeline)
				continue;
			(void)wait_reply(seq);
			if (race && race_stop >= 0) {
				(void)!write(race_stop, "", 1);
				race_stop = safe_close(race_stop);
			}
		}
	if (opt.no_read)
		emit(json_pack("{s:s,s:I}", "type", "sent", "count", (json_int_t)st.sent));
	/* Pipelined: the replies, until all came or nothing did for --read-timeout. */
	if (opt.pipeline && !opt.no_read) {
		/* Every request (the hello too) has exactly one reply. */
		while (!st.closed && st.replies < st.sent) {
			int64_t got;

			if (recv_one(opt.read_timeout, &got) == 0) {
				st.timeouts++;
				emit(json_pack("{s:s,s:i}", "type", "timeout", "missing",
					       (int)(st.sent - st.replies)));
				break;
			}
		}
	}
	if (opt.wait_exit && !opt.no_read)
		while (!st.closed && st.exits < st.spawned) {
			int64_t got;

			if (recv_one(opt.read_timeout, &got) == 0) {
				st.timeouts++;
				emit(json_pack("{s:s,s:s}", "type", "timeout", "waiting", "exit"));
				break;
			}
		}
	if (opt.hold > 0)
		read_for((int)(opt.hold * 1000));
	return 0;
}

static int tcp_sink(const char *port_file)
{
	char buf[16];
	int l = tcp_listener(), p;

	if (l < 0 || (p = local_port(l)) < 0) {
		(void)fprintf(stderr, "hostile-client: cannot listen: %s\n", strerror(errno));
		return 1;
	}
	(void)snprintf(buf, sizeof(buf), "%d\n", p);
	if (write_file_atomic(port_file, buf, strlen(buf), 0644) < 0) {
		(void)fprintf(stderr, "hostile-client: cannot write %s\n", port_file);
		return 1;
	}
	for (;;) {
		int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);

		if (a >= 0)
			hold_fd(a);
		else if (errno != EINTR)
			sleep_ms(100);
	}
}

static int die_usage(const char *msg)
{
	(void)fprintf(stderr, "hostile-client: %s\n", msg);
	return 1;
}

static int add_step(json_t *msg, int pause_ms)
{
	if (opt.n_script >= MAX_SCRIPT)
		return die_usage("too many messages");
	opt.script[opt.n_script++] = (struct step){ .msg = msg, .pause_ms = pause_ms };
	return 0;
}

static int parse_int(const char *s, int *ret, const char *what)
{
	if (safe_atoi(s, ret) < 0 || *ret < 0) {
		(void)fprintf(stderr, "hostile-client: %s: expected a number, got \"%s\"\n", what,
			      s);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "fd", required_argument, NULL, 'f' },
		{ "std", no_argument, NULL, '0' },
		{ "fd-count", required_argument, NULL, 'N' },
		{ "fds-on", required_argument, NULL, 'O' },
		{ "keep-fds", no_argument, NULL, 'k' },
		{ "no-hello", no_argument, NULL, 'H' },
		{ "hello-version", required_argument, NULL, 'v' },
		{ "send", required_argument, NULL, 'S' },
		{ "msg", required_argument, NULL, 'm' },
		{ "pause", required_argument, NULL, 'p' },
		{ "await-exit", no_argument, NULL, 'a' },
		{ "repeat", required_argument, NULL, 'n' },
		{ "pipeline", no_argument, NULL, 'P' },
		{ "no-read", no_argument, NULL, 'R' },
		{ "read-timeout", required_argument, NULL, 't' },
		{ "read-delay", required_argument, NULL, 'd' },
		{ "send-timeout", required_argument, NULL, 'T' },
		{ "wait-exit", no_argument, NULL, 'w' },
		{ "hold", required_argument, NULL, 'h' },
		{ "quiet", required_argument, NULL, 'q' },
		{ "probe-init", required_argument, NULL, 'i' },
		{ "hold-init", no_argument, NULL, 'I' },
		{ "race-init", required_argument, NULL, 'r' },
		{ "race-hold", no_argument, NULL, 'Z' },
		{ "extra-conns", required_argument, NULL, 'x' },
		{ "storm", required_argument, NULL, 'X' },
		{ "tcp-sink", required_argument, NULL, 'L' },
		{},
	};
	json_error_t jerr;
	int c, r;

	(void)setvbuf(stdout, NULL, _IOLBF, 0);
	(void)signal(SIGPIPE, SIG_IGN);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		json_t *m;

		switch (c) {
		case 's':
			opt.socket_path = optarg;
			break;
		case '0':
		case 'f': {
			const char *std[] = { "0", "1", "2" };
			const char *one[] = { optarg };
			const char **specs = c == '0' ? std : one;
			size_t n = c == '0' ? 3 : 1;

			for (size_t i = 0; i < n; i++) {
				int fd;

				if (opt.n_fds >= MAX_SPECS)
					return die_usage("too many --fd");
				fd = open_spec(specs[i]);
				if (fd < 0) {
					(void)fprintf(stderr, "hostile-client: --fd %s: %s\n",
						      specs[i], strerror(-fd));
					return 1;
				}
				opt.fds[opt.n_fds++] = fd;
			}
			break;
		}
		case 'N':
			if (parse_int(optarg, &opt.fd_count, "--fd-count") < 0)
				return 1;
			break;
		case 'O':
			(void)snprintf(opt.fds_on, sizeof(opt.fds_on), "%s", optarg);
			break;
		case 'k':
			opt.keep_fds = true;
			break;
		case 'H':
			opt.no_hello = true;
			break;
		case 'v':
			if (parse_int(optarg, &opt.hello_version, "--hello-version") < 0)
				return 1;
			break;
		case 'S':
		case 'm':
			m = c == 'S' ? json_load_file(optarg, JSON_REJECT_DUPLICATES, &jerr)
				     : json_loads(optarg, JSON_REJECT_DUPLICATES, &jerr);
			if (!json_is_object(m)) {
				(void)fprintf(stderr, "hostile-client: %s: line %d: %s\n",
					      c == 'S' ? optarg : "--msg", jerr.line,
					      m ? "not a JSON object" : jerr.text);
				return 1;
			}
			if (add_step(m, 0) < 0)
				return 1;
			break;
		case 'p': {
			int ms;

			if (parse_int(optarg, &ms, "--pause") < 0 || add_step(NULL, ms) < 0)
				return 1;
			break;
		}
		case 'a':
			if (add_step(NULL, -1) < 0)
				return 1;
			break;
		case 'n':
			if (parse_int(optarg, &opt.repeat, "--repeat") < 0)
				return 1;
			break;
		case 'P':
			opt.pipeline = true;
			break;
		case 'R':
			opt.no_read = true;
			break;
		case 't':
			if (parse_int(optarg, &opt.read_timeout, "--read-timeout") < 0)
				return 1;
			break;
		case 'd':
			if (parse_int(optarg, &opt.read_delay, "--read-delay") < 0)
				return 1;
			break;
		case 'T':
			if (parse_int(optarg, &opt.send_timeout, "--send-timeout") < 0)
				return 1;
			break;
		case 'w':
			opt.wait_exit = true;
			break;
		case 'h':
			opt.hold = strtod(optarg, NULL);
			break;
		case 'q':
			(void)snprintf(opt.quiet, sizeof(opt.quiet), "%s", optarg);
			break;
		case 'i':
			if (parse_int(optarg, &opt.probe_init, "--probe-init") < 0)
				return 1;
			break;
		case 'I':
			opt.hold_init = true;
			break;
		case 'r':
			if (parse_int(optarg, &opt.race_init, "--race-init") < 0)
				return 1;
			break;
		case 'Z':
			opt.race_hold = true;
			break;
		case 'x':
			if (parse_int(optarg, &opt.extra_conns, "--extra-conns") < 0)
				return 1;
			break;
		case 'X':
			if (parse_int(optarg, &opt.storm, "--storm") < 0)
				return 1;
			break;
		case 'L':
			return tcp_sink(optarg);
		default:
			return die_usage(
				"bad option (see the header of tests/hostile/hostile-client.c)");
		}
	}
	if (!opt.socket_path || optind != argc)
		return die_usage("usage: hostile-client --socket PATH [OPTIONS]");

	if (opt.storm > 0)
		storm();
	if (opt.extra_conns > 0)
		extra_conns();
	r = session();
	/* Did the last close of a message fd fall to us (it is still waiting)? Then the attack
	 * did not reach launcherd: the test tries again. */
	for (int i = 0; i < 20 && __atomic_load_n(&closes_done, __ATOMIC_SEQ_CST) < closes_begun;
	     i++)
		sleep_ms(10);
	emit(json_pack("{s:s,s:I,s:I,s:I,s:b,s:i,s:I,s:b,s:b}", "type", "summary", "sent",
		       (json_int_t)st.sent, "replies", (json_int_t)st.replies, "exits",
		       (json_int_t)st.exits, "closed", st.closed, "maxLive", st.max_live,
		       "timeouts", (json_int_t)st.timeouts, "blocked", st.blocked, "ownCloseWaits",
		       __atomic_load_n(&closes_done, __ATOMIC_SEQ_CST) < closes_begun));
	for (size_t i = 0; i < st.n_tracers; i++) {
		(void)kill(st.tracers[i], SIGKILL);
		(void)waitpid(st.tracers[i], NULL, 0);
	}
	if (r)
		return r;
	if (st.blocked)
		return 5;
	if (st.closed)
		return 3;
	if (st.timeouts)
		return 4;
	return 0;
}
