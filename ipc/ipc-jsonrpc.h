/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * JSON-RPC 2.0 on the client channel: one JSON object per line on a SOCK_STREAM Unix socket, with
 * fds attached by SCM_RIGHTS to the first byte of the message that names them.
 *
 * A sendmsg() that carries fds carries (a prefix of) the one line that names them, as
 * jsonrpc_conn_send() does. The kernel may return earlier sends without fds and the fd-carrying
 * send in one recvmsg(), but it never reads past the end of the fd-carrying send, so the receiver
 * records, for every fd, the stream offset of the last byte that arrived with it; a message owns
 * exactly the fds recorded inside its line. Fds that arrive with a line that fails to parse are
 * closed. A message names its fds by index into that list ("stdio": {"stdin": 0, "stdout": 1}).
 *
 * Works blocking or non-blocking: jsonrpc_conn_fill() does one recvmsg() and returns -EAGAIN when
 * nothing is ready; jsonrpc_conn_send() queues what the socket does not take and
 * jsonrpc_conn_flush() continues when epoll says the socket is writable.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "ipc/ipc-fdpass.h"
#include "ipc/ipc-json.h"

/*
 * The longest line (one message) accepted; a longer one ends the connection. A request with a
 * maximal command line and environment (common/util.h: CORDON_ARG_MAX bytes as execve counts
 * them) fits whatever its bytes: JSON writes a string at most six times as long ("\u0001" for
 * a control byte) and an empty one in 3 bytes against its 9, with room for the rest.
 */
#define JSONRPC_LINE_MAX (16U * 1024U * 1024U)

/* Error codes. The standard ones, then cordon's own range (documented in docs/PROTOCOL.md). */
enum {
	JSONRPC_PARSE_ERROR = -32700,
	JSONRPC_INVALID_REQUEST = -32600,
	JSONRPC_METHOD_NOT_FOUND = -32601,
	JSONRPC_INVALID_PARAMS = -32602,
	JSONRPC_INTERNAL_ERROR = -32603,

	CORDON_ERR_POLICY_REFUSED = -32001, /* the policy or a floor forbids what was asked */
	CORDON_ERR_SETUP_FAILED = -32002,   /* the sandbox could not be built */
	CORDON_ERR_NOT_FOUND = -32003,	    /* no such process, sandbox, backend, pack */
	CORDON_ERR_PERMISSION = -32004,	    /* the caller may not touch this object */
	CORDON_ERR_LIMIT = -32005,	    /* a quota or ceiling was reached */
	CORDON_ERR_UNAVAILABLE = -32006,    /* a host interaction could not be presented */
	CORDON_ERR_BACKEND = -32007,	    /* the backend failed or is unavailable */
	CORDON_ERR_TIMEOUT = -32008,	    /* the operation timed out */
	CORDON_ERR_CANCELLED = -32009,	    /* the operation was cancelled */
	CORDON_ERR_TOO_LARGE = -32010,	    /* a message or field exceeds a hard limit */
	CORDON_ERR_BUSY = -32011,	    /* serialized operation in progress; retry */
};

/* "parse-error", "policy-refused", …; NULL for an unknown code. */
const char *jsonrpc_code_name(int code);
/* Map a negative errno to the closest code above. */
int jsonrpc_code_from_errno(int negative_errno);

struct jsonrpc_conn;

/* Wrap a connected stream socket; the conn owns fd from here on (also on failure). */
int jsonrpc_conn_new(int fd, struct jsonrpc_conn **ret);
void jsonrpc_conn_free(struct jsonrpc_conn *c);
int jsonrpc_conn_fd(const struct jsonrpc_conn *c);

/* One recvmsg() into the input buffer. > 0 bytes read, 0 EOF, -EAGAIN, -EXFULL, -errno. */
ssize_t jsonrpc_conn_fill(struct jsonrpc_conn *c);

/*
 * Take the next complete message out of the input buffer. Returns 1 with *ret set and its fds in
 * fds[0..*ret_n_fds) (fds must hold IPC_MAX_FDS; the caller owns them), 0 when no complete line
 * is buffered, -EBADMSG when the line is not a JSON object (its fds are closed, err says why; the
 * connection stays usable), -EMSGSIZE when the buffered line already exceeds JSONRPC_LINE_MAX
 * (the connection must be closed).
 */
int jsonrpc_conn_next(struct jsonrpc_conn *c, json_t **ret, int *fds, size_t *ret_n_fds,
		      struct field_error *err);

/*
 * Blocking receive: fill and parse until one message arrives, EOF (0), or an error. timeout_ms
 * < 0 waits forever; -ETIMEDOUT otherwise.
 */
int jsonrpc_conn_recv(struct jsonrpc_conn *c, json_t **ret, int *fds, size_t *ret_n_fds,
		      int timeout_ms, struct field_error *err);

/*
 * Send msg as one line with fds (borrowed: the caller keeps its copies). What the socket does not
 * take now is queued (fds duplicated) and sent by jsonrpc_conn_flush(). Returns 0 when all went
 * out, -EAGAIN when some is queued, other -errno on failure.
 */
int jsonrpc_conn_send(struct jsonrpc_conn *c, json_t *msg, const int *fds, size_t n_fds);
int jsonrpc_conn_flush(struct jsonrpc_conn *c);
/* Send and wait (poll) until everything queued has been written. */
int jsonrpc_conn_send_wait(struct jsonrpc_conn *c, json_t *msg, const int *fds, size_t n_fds);
size_t jsonrpc_conn_queued_bytes(const struct jsonrpc_conn *c);

/* Message constructors; each steals params/result/data. NULL on OOM. */
json_t *jsonrpc_request_new(json_int_t id, const char *method, json_t *params);
json_t *jsonrpc_notification_new(const char *method, json_t *params);
json_t *jsonrpc_result_new(json_t *id, json_t *result);
json_t *jsonrpc_error_new(json_t *id, int code, const char *message, json_t *data);
/* An error reply whose data names a field: {"field": …, "reason": …}. */
json_t *jsonrpc_error_field_new(json_t *id, int code, const struct field_error *fe);

enum jsonrpc_kind {
	JSONRPC_KIND_REQUEST,
	JSONRPC_KIND_NOTIFICATION,
	JSONRPC_KIND_RESULT,
	JSONRPC_KIND_ERROR,
};

/*
 * Check the JSON-RPC 2.0 envelope and classify. On success the borrowed pointers point into msg:
 * *ret_method (requests and notifications), *ret_id (requests and responses; integer or string),
 * *ret_body (params — object, array or NULL —, result, or the error object). -EINVAL with err
 * filled when the envelope is malformed (reply JSONRPC_INVALID_REQUEST).
 */
int jsonrpc_classify(json_t *msg, enum jsonrpc_kind *ret_kind, const char **ret_method,
		     json_t **ret_id, json_t **ret_body, struct field_error *err);
