/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common/cleanup.h"
#include "common/system.h"
#include "ipc/ipc-fdpass.h"

ssize_t ipc_send_with_fds(int sock, const void *buf, size_t len, const int *fds, size_t n_fds,
			  int flags)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * IPC_MAX_FDS)];
	} control;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (n_fds > IPC_MAX_FDS)
		return -E2BIG;
	if (len == 0)
		return -EINVAL; /* fds need at least one byte to travel with */
	if (n_fds > 0) {
		struct cmsghdr *cmsg;

		memset(&control, 0, sizeof(control));
		mh.msg_control = control.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		cmsg = CMSG_FIRSTHDR(&mh);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * n_fds);
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* Collect SCM_RIGHTS fds out of a received message. CMSG_SPACE() rounds the control buffer up to
 * 8 bytes, so with an odd max_fds the kernel installs one fd more than asked for without setting
 * MSG_CTRUNC: close any beyond max and mark the message truncated, as the kernel would have. */
static size_t collect_fds(struct msghdr *mh, int *fds, size_t max_fds)
{
	size_t n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t k;
		int *p;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		p = (int *)(void *)CMSG_DATA(c);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, p + i, sizeof(int));
			if (n < max_fds)
				fds[n++] = fd;
			else {
				safe_close(fd);
				mh->msg_flags |= MSG_CTRUNC;
			}
		}
	}
	return n;
}

ssize_t ipc_recv_with_fds(int sock, void *buf, size_t len, int *fds, size_t max_fds,
			  size_t *ret_n_fds, int flags)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * IPC_MAX_FDS)];
	} control;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	size_t n_fds = 0;
	ssize_t n;

	if (max_fds > IPC_MAX_FDS)
		max_fds = IPC_MAX_FDS;
	*ret_n_fds = 0;
	if (max_fds > 0) {
		mh.msg_control = control.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * max_fds);
	}
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;

	if (max_fds > 0)
		n_fds = collect_fds(&mh, fds, max_fds);
	if (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) {
		int r = (mh.msg_flags & MSG_CTRUNC) ? -EXFULL : -EMSGSIZE;

		close_many(fds, n_fds);
		return r;
	}
	*ret_n_fds = n_fds;
	return n;
}
