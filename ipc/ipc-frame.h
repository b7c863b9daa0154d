/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Framed messages on the launcher channel (SOCK_SEQPACKET).
 *
 * One record is one frame: an 8-byte header (magic "CRD1" and the payload length, both
 * little-endian u32) followed by a JSON object of at most IPC_FRAME_MAX bytes, with up to
 * IPC_MAX_FDS fds attached. The receiver learns the record's size with a MSG_PEEK before
 * allocating, refuses anything over the limit, and checks the header length against the record
 * length, so a truncated or padded record is an error, never a partial message.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ipc/ipc-fdpass.h"

#define IPC_FRAME_MAGIC 0x31445243U /* "CRD1" little-endian */
#define IPC_FRAME_HEADER_SIZE 8U
#define IPC_FRAME_MAX (1024U * 1024U)

/* Encode payload into a frame (header + payload). *ret is malloc'd. */
int ipc_frame_encode(const void *payload, size_t len, void **ret, size_t *ret_len);

/*
 * Check a complete frame held in memory and return where its payload starts. Errors:
 * -EBADMSG (short, bad magic, length mismatch), -EMSGSIZE (over the limit).
 */
int ipc_frame_decode(const void *frame, size_t len, const char **ret_payload, size_t *ret_len);

/* ipc_frame_decode() a complete frame, then parse its payload as a JSON object (duplicate keys
 * rejected). 0 or -errno (-EBADMSG, -EMSGSIZE, or the parser's). */
int ipc_frame_parse_json(const void *frame, size_t len, json_t **ret);

/* Send a JSON object as one frame with fds attached. Blocking or MSG_DONTWAIT per flags. */
int ipc_frame_send_json(int sock, json_t *obj, const int *fds, size_t n_fds, int flags);

/*
 * Receive one frame and parse its payload as a JSON object (duplicate keys rejected).
 * Returns 1 with *ret set, 0 on orderly EOF, or -errno: -EAGAIN (non-blocking, nothing yet),
 * -EMSGSIZE (over the limit; the record is consumed and dropped), -EXFULL (control data
 * truncated), -EBADMSG (bad header or not a JSON object). On any error, received fds are closed.
 */
int ipc_frame_recv_json(int sock, json_t **ret, int *fds, size_t max_fds, size_t *ret_n_fds,
			int flags);
