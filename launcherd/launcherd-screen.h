/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * In privileged mode, every connection's messages reach launcherd through a receiver: a process
 * of its own (forked per connection, the requester's uid, no capabilities, never dumpable) that
 * takes each message and its fds off the requester's socket, screens the fds, and forwards the
 * message with only the fds launcherd may hold. (User mode serves its own user only: a stall
 * there would be that user's own, and files on its NFS or FUSE home must stay usable.)
 *
 * Why: close() of a file calls its file system's flush, on every close, and the last close
 * releases it. On FUSE a flush is a request to the FUSE server, waited for until it answers; a
 * requester who runs the server (any user, with fusermount or an unprivileged user namespace)
 * never answers. The release of a TCP socket with SO_LINGER waits for its peer to take the
 * unsent data; the release of an AF_UNIX socket releases the fds still queued in it, any of
 * these. A single-threaded daemon that made such a close would be frozen for every user. So:
 *  - the receiver keeps its own copies of a message's fds until launcherd says it has closed
 *    its (screen_done()), when any of them is one whose release could wait (a socket, which
 *    may hold more fds in its queue, a device whose driver may wait): launcherd's close is
 *    never the last, whatever an fd hides. (O_PATH fds, pipes, memfds, mount namespaces and
 *    files on local file systems release without waiting on anyone: a message of only those,
 *    most spawns, needs no such round trip.)
 *  - the fds launcherd may hold at all are those whose every close is harmless too (a
 *    flush that cannot wait): the receiver, which stalls instead, serves only the one
 *    connection that sent it.
 *
 * Accepted (closing never waits on another process): O_PATH fds (any file system: they have no
 * file operations), pipes, AF_UNIX sockets, character and block devices, memfds, mount
 * namespaces (a plan's mountNamespace), and files and directories whose file system is local
 * and on screen_fs_ok()'s list (by our mount table, or for a mount of another namespace by the
 * file system's magic number). Refused: the rest — files on FUSE, NFS, CIFS and other file
 * systems that flush over a wire, network sockets (a lingering close waits for the peer),
 * anonymous inodes. A refused fd is replaced in the forwarded message by /dev/null, and the
 * screen header says why, so that a plan that names it is answered with an error
 * (launcherd-dispatch.c), never run with a substitute.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "ipc/ipc-fdpass.h"

enum screen_verdict {
	SCREEN_OK = 0,
	SCREEN_FS,     /* a file on a file system whose close can wait on a server (fstype says) */
	SCREEN_UNSEEN, /* a file launcherd cannot inspect without asking its file system */
	SCREEN_SOCKET, /* a socket other than AF_UNIX */
	SCREEN_KIND,   /* not a file, pipe, socket, device or O_PATH fd */
	_SCREEN_MAX,
};

#define SCREEN_MAGIC 0x4e524353U /* "SCRN" little-endian */
#define SCREEN_FSTYPE_MAX 24

/* What precedes each forwarded message (the requester's frame follows it as it came). */
struct screen_header {
	uint32_t magic;
	uint32_t n_fds;
	/* Some fd forwarded is one whose last close could wait (a socket, a device): the receiver
	 * holds its copies until launcherd's screen_done(). */
	uint32_t hold;
	uint8_t verdict[IPC_MAX_FDS];
	char fstype[IPC_MAX_FDS][SCREEN_FSTYPE_MAX]; /* SCREEN_FS: the file system's type */
};

/* Why fd i of the message was refused, for an error message ("a file on a \"fuse\" file
 * system, …"). */
const char *screen_reason(const struct screen_header *h, size_t i, char *buf, size_t size);

/* Whether a file system of this type (mountinfo's name) is on the list above: local, its close
 * and its lookups never wait on another process or a remote server. */
bool screen_fs_ok(const char *type);

/* Screen one fd; SCREEN_OK or why not (fstype filled for SCREEN_FS), and *ret_hold whether its
 * release could wait (a socket, a device: screen_header's hold). Only the receiver calls it: for
 * a file on a mount our namespace does not list, it asks the file system (fstatfs). */
enum screen_verdict screen_fd(int fd, char fstype[SCREEN_FSTYPE_MAX], bool *ret_hold);

/*
 * launcherd's side, privileged mode (user mode serves its own user only and reads its socket
 * itself). Fork conn_fd's receiver (it runs as uid/gid, the requester's, without groups or
 * capabilities; devnull_fd, launcherd's /dev/null, replaces the fds it refuses): *ret_fd is where the screened messages arrive, *ret_pidfd the receiver's pidfd
 * (launcherd reaps it). conn_fd stays launcherd's, for replies.
 */
int screen_start(int conn_fd, int devnull_fd, uid_t uid, gid_t gid, int *ret_fd, int *ret_pidfd);

/* Tell the receiver on fd that launcherd has closed its copies of the last message's fds (sent
 * once per message whose header says hold): the receiver then closes its own, the last ones. */
int screen_done(int fd);

/*
 * Receive one screened message from the receiver: like ipc_frame_recv_json() (1, 0 at EOF,
 * -errno; fds closed on error), plus the header.
 */
int screen_recv(int fd, json_t **ret, int *fds, size_t *ret_n_fds, struct screen_header *hdr);
