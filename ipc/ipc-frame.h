/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Framed messages on the launcher channel (SOCK_SEQPACKET).
 *
 * One record is one frame: an 8-byte header (magic "CRD1" and the payload length, both
 * little-endian u32) followed by a JSON object of at most IPC_FRAME_MAX bytes, with up to
 * IPC_MAX_FDS fds attached. A larger payload (a spawn plan with a long command line) travels in
 * a sealed memfd instead: the record is the header alone, magic "CRDM" and the payload's length
 * (at most IPC_FRAME_MEMFD_MAX), and the memfd is its last fd. The receiver learns the record's size with a MSG_PEEK before
 * allocating, refuses anything over the limit, and checks the header length against the record
 * length, so a truncated or padded record is an error, never a partial message.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/util.h"
#include "ipc/ipc-fdpass.h"

#define IPC_FRAME_MAGIC 0x31445243U	  /* "CRD1" little-endian */
#define IPC_FRAME_MAGIC_MEMFD 0x4d445243U /* "CRDM": the payload is in a memfd */
#define IPC_FRAME_HEADER_SIZE 8U
/* The largest payload a record carries itself (what the receiver allocates for a record). */
#define IPC_FRAME_MAX (1024U * 1024U)
/* A sender puts a payload larger than this in a memfd instead: a record that size always fits
 * the default socket send buffer (net.core.wmem_default), whatever the sender may raise it to. */
#define IPC_FRAME_INLINE_MAX (64U * 1024U)
/*
 * The largest payload at all, carried in a memfd: a spawn plan with a maximal command line
 * (common/util.h: CORDON_ARG_MAX bytes of argv and envp, which JSON may write six times as long,
 * "\u0001" for a control byte) and the rest of the plan.
 */
#define IPC_FRAME_MEMFD_MAX (16U * 1024U * 1024U)
/*
 * …and at most this many JSON values in it (a parsed value costs some 90 bytes: 16 MiB of
 * `"",` would take the parser ~500 MB): argv and envp hold at most CORDON_ARG_ITEMS_MAX strings
 * between them, the rest of a plan far fewer than 65536 values. Bounds what one memfd frame
 * costs its receiver to some 55 MB while it is parsed (the payload's copy included; measured
 * with jansson), against some 30 MB for the worst 1 MiB record.
 */
#define IPC_FRAME_MEMFD_VALUES_MAX (CORDON_ARG_ITEMS_MAX + 65536U)

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

/*
 * The same for a frame received with fds[0..*n_fds): a "CRDM" frame's payload is read from its
 * last fd, which must be a memfd sealed against writing, growing and shrinking and exactly as
 * long as the header says (at most IPC_FRAME_MEMFD_MAX bytes and IPC_FRAME_MEMFD_VALUES_MAX JSON
 * values, else -EMSGSIZE before it is parsed); that fd is then closed and taken off
 * the list (*n_fds less one), so the message's own fd indexes are as the sender numbered them.
 * On error the fds are left to the caller.
 */
int ipc_frame_parse_json_fds(const void *frame, size_t len, int *fds, size_t *n_fds, json_t **ret);

/* Send a JSON object as one frame with fds attached. Blocking or MSG_DONTWAIT per flags. A
 * payload over IPC_FRAME_INLINE_MAX goes in a sealed memfd (one more fd: then at most
 * IPC_MAX_FDS - 1 of the caller's, else -EMSGSIZE). */
int ipc_frame_send_json(int sock, json_t *obj, const int *fds, size_t n_fds, int flags);

/*
 * Receive one frame and parse its payload as a JSON object (duplicate keys rejected).
 * Returns 1 with *ret set, 0 on orderly EOF, or -errno: -EAGAIN (non-blocking, nothing yet),
 * -EMSGSIZE (over the limit; the record is consumed and dropped), -EXFULL (control data
 * truncated), -EBADMSG (bad header or not a JSON object). On any error, received fds are closed.
 */
int ipc_frame_recv_json(int sock, json_t **ret, int *fds, size_t max_fds, size_t *ret_n_fds,
			int flags);
