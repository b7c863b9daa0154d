/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sending and receiving bytes together with file descriptors (SCM_RIGHTS) on Unix sockets.
 *
 * Received fds are close-on-exec from birth (MSG_CMSG_CLOEXEC). If the kernel had to drop control
 * data (MSG_CTRUNC: the sender sent more fds than we can take, or the receiver hit RLIMIT_NOFILE)
 * the call fails with -EXFULL and closes every fd that did arrive: a message with missing fds is
 * never handed on.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* The most fds one message may carry, on either channel. The kernel's own limit is 253. */
#define IPC_MAX_FDS 64

/*
 * Send len bytes with n_fds fds attached to the first byte, in one sendmsg(MSG_NOSIGNAL).
 * Returns the number of bytes sent (stream sockets may send fewer; the fds went with them)
 * or -errno. flags may add MSG_DONTWAIT.
 */
ssize_t ipc_send_with_fds(int sock, const void *buf, size_t len, const int *fds, size_t n_fds,
			  int flags);

/*
 * Receive up to len bytes and up to max_fds fds. Returns bytes received (0: orderly EOF) and
 * stores the fds in fds[0..*ret_n_fds). Errors: -EXFULL on MSG_CTRUNC, -EMSGSIZE when a datagram
 * or record was longer than len (MSG_TRUNC); in both cases every received fd is closed. flags may
 * add MSG_DONTWAIT or MSG_PEEK.
 */
ssize_t ipc_recv_with_fds(int sock, void *buf, size_t len, int *fds, size_t max_fds,
			  size_t *ret_n_fds, int flags);
