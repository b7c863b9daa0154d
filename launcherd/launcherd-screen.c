/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The connection receiver (launcherd-screen.h says why it exists). screen_start() and
 * screen_recv() run in launcherd; receiver() runs in the forked receiver, which holds no
 * capability and nothing of launcherd's but the connection and its channel to launcherd.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

#include "common/cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-fdpass.h"
#include "ipc/ipc-frame.h"
#include "launcherd/launcherd-screen.h"

#ifndef F_GET_SEALS
#define F_GET_SEALS 1034
#endif
#ifndef STATX_MNT_ID
#define STATX_MNT_ID 0x00001000U
#endif

DEFINE_TRIVIAL_CLEANUP_FUNC(FILE *, fclose)

/* The receiver's send buffer: one forwarded message of the largest size, and room (the kernel
 * counts its own overhead per message, and doubles what is asked). */
#define SCREEN_SNDBUF ((int)(sizeof(struct screen_header) + IPC_FRAME_HEADER_SIZE + IPC_FRAME_MAX))

/* File systems whose close and release never wait on another process or a remote server. */
bool screen_fs_ok(const char *type)
{
	static const char *const local[] = {
		"tmpfs",  "ramfs",   "hugetlbfs", "devtmpfs", "ext2",	 "ext3",       "ext4",
		"xfs",	  "btrfs",   "f2fs",	  "bcachefs", "jfs",	 "nilfs2",     "reiserfs",
		"vfat",	  "msdos",   "exfat",	  "ntfs3",    "udf",	 "iso9660",    "squashfs",
		"erofs",  "overlay", "zfs",	  "proc",     "sysfs",	 "devpts",     "mqueue",
		"cgroup", "cgroup2", "configfs",  "debugfs",  "tracefs", "securityfs", "bpf",
	};

	for (size_t i = 0; i < ELEMENTSOF(local); i++)
		if (streq(type, local[i]))
			return true;
	return false;
}

/*
 * The file system of fd by its magic number, for a file on a mount our namespace does not list
 * (the requester's namespace is not launcherd's: under its unit, every file of the host's).
 * fstatfs() asks the file system (a FUSE server could stall it): only the receiver, which serves
 * one connection, calls it. Names as in mountinfo; -ENOENT (its magic number as the name) for
 * one not known here.
 */
static int magic_fstype(int fd, char fstype[SCREEN_FSTYPE_MAX])
{
	static const struct {
		unsigned long magic;
		const char *name;
	} known[] = {
		{ 0x01021994, "tmpfs" },
		{ 0x858458f6, "ramfs" },
		{ 0x958458f6, "hugetlbfs" },
		{ 0xef53, "ext4" },
		{ 0x58465342, "xfs" },
		{ 0x9123683e, "btrfs" },
		{ 0xf2f52010, "f2fs" },
		{ 0xca451a4e, "bcachefs" },
		{ 0x3153464a, "jfs" },
		{ 0x3434, "nilfs2" },
		{ 0x52654973, "reiserfs" },
		{ 0x4d44, "vfat" },
		{ 0x2011bab0, "exfat" },
		{ 0x7366746e, "ntfs3" },
		{ 0x15013346, "udf" },
		{ 0x9660, "iso9660" },
		{ 0x73717368, "squashfs" },
		{ 0xe0f5e1e2, "erofs" },
		{ 0x794c7630, "overlay" },
		{ 0x2fc12fc1, "zfs" },
		{ 0x9fa0, "proc" },
		{ 0x62656572, "sysfs" },
		{ 0x1cd1, "devpts" },
		{ 0x19800202, "mqueue" },
		{ 0x27e0eb, "cgroup" },
		{ 0x63677270, "cgroup2" },
		{ 0x62656570, "configfs" },
		{ 0x64626720, "debugfs" },
		{ 0x74726163, "tracefs" },
		{ 0x73636673, "securityfs" },
		{ 0xcafe4a11, "bpf" },
		/* Not on the list, named for the refusal's message. */
		{ 0x65735546, "fuse" },
		{ 0x6969, "nfs" },
		{ 0xff534d42, "cifs" },
		{ 0xfe534d42, "smb2" },
		{ 0x01021997, "9p" },
		{ 0x00c36400, "ceph" },
	};
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return -errno;
	for (size_t i = 0; i < ELEMENTSOF(known); i++)
		if ((unsigned long)sf.f_type == known[i].magic) {
			(void)snprintf(fstype, SCREEN_FSTYPE_MAX, "%s", known[i].name);
			return 0;
		}
	(void)snprintf(fstype, SCREEN_FSTYPE_MAX, "0x%lx", (unsigned long)sf.f_type);
	return -ENOENT;
}

/* The type of the file system mounted as mount id in our mount namespace, from mountinfo
 * ("ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER"). */
static int mount_fstype(uint64_t id, char fstype[SCREEN_FSTYPE_MAX])
{
	_cleanup_(fclosep) FILE *f = fopen("/proc/self/mountinfo", "re");
	_cleanup_free_ char *line = NULL;
	size_t size = 0;

	if (!f)
		return -errno;
	while (getline(&line, &size, f) > 0) {
		char *end, *sep;
		unsigned long long v = strtoull(line, &end, 10);

		if (end == line || *end != ' ' || v != id)
			continue;
		sep = strstr(end, " - ");
		if (!sep)
			return -EBADMSG;
		sep += 3;
		end = strchr(sep, ' ');
		if (!end || end == sep || (size_t)(end - sep) >= SCREEN_FSTYPE_MAX)
			return -EBADMSG;
		memcpy(fstype, sep, (size_t)(end - sep));
		fstype[end - sep] = '\0';
		return 0;
	}
	return -ENOENT; /* a mount of another namespace */
}

enum screen_verdict screen_fd(int fd, char fstype[SCREEN_FSTYPE_MAX], bool *ret_hold)
{
	struct statx stx;
	int flags = fcntl(fd, F_GETFL), domain;
	socklen_t len = sizeof(domain);

	fstype[0] = '\0';
	*ret_hold = false;
	if (flags < 0)
		return SCREEN_KIND;
	if (flags & O_PATH)
		return SCREEN_OK; /* no file operations at all: nothing to flush or release */
	/* Cached attributes only: never a request to the file system (a FUSE server). */
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MNT_ID, &stx) <
		    0 ||
	    !(stx.stx_mask & STATX_TYPE))
		return SCREEN_UNSEEN;
	/* Held (screen_header's hold): a socket (an AF_UNIX one may carry any fd in its queue)
	 * and a device other than the memory devices (/dev/null, zero, full, random, urandom:
	 * major 1), whose driver may wait at its release (a tty draining its output). */
	switch (stx.stx_mode & S_IFMT) {
	case S_IFIFO:
		return SCREEN_OK;
	case S_IFCHR:
	case S_IFBLK:
		*ret_hold = S_ISBLK(stx.stx_mode) || stx.stx_rdev_major != 1;
		return SCREEN_OK;
	case S_IFSOCK:
		if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
		    domain == AF_UNIX) {
			*ret_hold = true;
			return SCREEN_OK;
		}
		return SCREEN_SOCKET;
	case S_IFREG:
	case S_IFDIR:
	case S_IFLNK:
		if (fcntl(fd, F_GET_SEALS) >= 0)
			return SCREEN_OK; /* a memfd */
		if (fd_is_mount_ns(fd))
			return SCREEN_OK; /* a plan's mountNamespace: nsfs, nothing to flush */
		if (!(stx.stx_mask & STATX_MNT_ID) || mount_fstype(stx.stx_mnt_id, fstype) < 0) {
			/* A mount of another namespace: ask the file system itself what it is. */
			int r = magic_fstype(fd, fstype);

			if (r == -ENOENT)
				return SCREEN_FS;
			if (r < 0)
				return SCREEN_UNSEEN;
		}
		return screen_fs_ok(fstype) ? SCREEN_OK : SCREEN_FS;
	default:
		return SCREEN_KIND;
	}
}

const char *screen_reason(const struct screen_header *h, size_t i, char *buf, size_t size)
{
	switch (h->verdict[i]) {
	case SCREEN_FS:
		(void)snprintf(buf, size,
			       "a file on a \"%.*s\" file system (closing it waits on that file "
			       "system; pass a pipe, or an O_PATH fd for a bind source)",
			       SCREEN_FSTYPE_MAX, h->fstype[i]);
		return buf;
	case SCREEN_UNSEEN:
		return "a file launcherd cannot inspect without asking its file system (another "
		       "mount namespace, or a file system that denies launcherd); pass a pipe, or "
		       "an O_PATH fd for a bind source";
	case SCREEN_SOCKET:
		return "a socket other than AF_UNIX (closing it can wait for the peer)";
	default:
		return "not a file, pipe, AF_UNIX socket, device or O_PATH fd";
	}
}

/*
 * The receiver. Each message of conn: its fds screened, then forwarded to out as screen header
 * + the frame as it came, refused fds replaced by /dev/null; then, once launcherd says it has
 * closed its copies (one byte back on out), ours — so that the last close of every fd the
 * requester sent is ours, whatever the fd hides (a FUSE file's flush, a lingering TCP close, in
 * an AF_UNIX socket's queue more fds of either kind): it may stall us right there, and with us
 * only this connection.
 */
_noreturn_ static void receiver(int conn, int out, int devnull, pid_t parent, uid_t uid, gid_t gid)
{
	struct __user_cap_header_struct head = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
	const size_t room = IPC_FRAME_HEADER_SIZE + IPC_FRAME_MAX;
	struct screen_header *h;
	/* devnull: launcherd's own, opened at its start (no path is looked up here: in launcherd's
	 * namespace, /dev/null is whatever that namespace mounts there). */
	(void)prctl(PR_SET_NAME, "cordon-receiver", 0, 0, 0);
	close_all_but((int[]){ conn, out, devnull }, 3);
	/* Blocking reads (launcherd's own replies on this socket all pass MSG_DONTWAIT). */
	if (fd_set_nonblock(conn, false) < 0)
		_exit(1);
	/* The requester's own uid, no groups (we are forked from the privileged launcherd): only
	 * the requester, whose connection alone we serve, can signal us; no capability at all,
	 * never dumpable, so not even it can look inside. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || setgroups(0, NULL) < 0 ||
	    setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		_exit(1);
	/* No life of our own after launcherd's (set after the switch, which clears it), nothing
	 * of its but what we serve. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
		_exit(1);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || syscall(SYS_capset, &head, none) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(1);
	/* One buffer for the largest frame, the header in front of it. */
	h = malloc(sizeof(*h) + room);
	if (!h)
		_exit(1);
	for (;;) {
		int fds[IPC_MAX_FDS], fwd[IPC_MAX_FDS];
		size_t n_fds = 0;
		ssize_t n;

		/* Blocking: we serve this connection only. Oversized, truncated or broken: gone,
		 * as launcherd would have closed the connection itself. */
		n = ipc_recv_with_fds(conn, h + 1, room, fds, IPC_MAX_FDS, &n_fds, 0);
		if (n <= 0)
			_exit(0);
		memset(h, 0, sizeof(*h));
		h->magic = SCREEN_MAGIC;
		h->n_fds = (uint32_t)n_fds;
		for (size_t i = 0; i < n_fds; i++) {
			bool hold;

			h->verdict[i] = (uint8_t)screen_fd(fds[i], h->fstype[i], &hold);
			fwd[i] = h->verdict[i] == SCREEN_OK ? fds[i] : devnull;
			if (h->verdict[i] == SCREEN_OK && hold)
				h->hold = 1;
		}
		if (ipc_send_with_fds(out, h, sizeof(*h) + (size_t)n, fwd, n_fds, 0) < 0)
			_exit(0); /* launcherd closed the connection */
		if (h->hold) {
			char done;

			do
				n = recv(out, &done, 1, 0);
			while (n < 0 && errno == EINTR);
			if (n <= 0)
				_exit(0); /* launcherd closed the connection */
		}
		close_many(fds, n_fds);
	}
}

int screen_start(int conn_fd, int devnull_fd, uid_t uid, gid_t gid, int *ret_fd, int *ret_pidfd)
{
	pid_t parent = getpid(), pid;
	int sv[2], pidfd, r;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	/* A forwarded message is the largest frame the protocol allows plus our header, one
	 * datagram: more than the default send buffer (≈208 KiB) holds. The buffer is the
	 * receiver's; FORCE, since the limit for others (net.core.wmem_max) may be lower. */
	if (setsockopt(sv[1], SOL_SOCKET, SO_SNDBUFFORCE, &(int){ SCREEN_SNDBUF }, sizeof(int)) <
		    0 &&
	    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &(int){ SCREEN_SNDBUF }, sizeof(int)) < 0) {
		r = -errno;
		close_many(sv, 2);
		return r;
	}
	/* fork(), not clone3(): a host may refuse clone3 (seccomp filters that cannot see its
	 * flags return ENOSYS); the pidfd is taken while the child cannot have been reaped. */
	pid = fork();
	if (pid == 0)
		receiver(conn_fd, sv[1], devnull_fd, parent, uid, gid);
	safe_close(sv[1]);
	if (pid < 0) {
		r = -errno;
		safe_close(sv[0]);
		return r;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		r = -errno;
		(void)kill(pid, SIGKILL);
		(void)waitpid(pid, NULL, 0);
		safe_close(sv[0]);
		return r;
	}
	*ret_fd = sv[0];
	*ret_pidfd = pidfd;
	return 0;
}

int screen_done(int fd)
{
	return send(fd, "d", 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

int screen_recv(int fd, json_t **ret, int *fds, size_t *ret_n_fds, struct screen_header *hdr)
{
	_cleanup_free_ unsigned char *buf = NULL;
	size_t n_fds = 0;
	char c;
	ssize_t n;
	int r;

	*ret_n_fds = 0;
	do
		n = recv(fd, &c, 1, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 ? -errno : 0;
	/* Our own receiver's record: its header, and a frame it held to the frame limit. */
	if ((size_t)n < sizeof(*hdr) ||
	    (size_t)n > sizeof(*hdr) + IPC_FRAME_HEADER_SIZE + IPC_FRAME_MAX)
		return -EBADMSG;
	buf = malloc((size_t)n);
	if (!buf)
		return -ENOMEM;
	n = ipc_recv_with_fds(fd, buf, (size_t)n, fds, IPC_MAX_FDS, &n_fds, MSG_DONTWAIT);
	if (n <= 0)
		return n < 0 ? (int)n : 0;
	memcpy(hdr, buf, sizeof(*hdr));
	r = hdr->magic == SCREEN_MAGIC && hdr->n_fds == n_fds ? 0 : -EBADMSG;
	if (r >= 0)
		r = ipc_frame_parse_json_fds(buf + sizeof(*hdr), (size_t)n - sizeof(*hdr), fds,
					     &n_fds, ret);
	if (r < 0) {
		close_many(fds, n_fds);
		return r;
	}
	*ret_n_fds = n_fds;
	return 1;
}
