/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/cleanup.h"
#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-jsonrpc.h"

#define FILL_CHUNK (64U * 1024U)
/* Fds buffered but not yet claimed by a complete line; a peer sending more is cut off. */
#define PENDING_FDS_MAX (IPC_MAX_FDS * 4)

/* A maximal command line and environment, escaped, and 1 MiB for the rest of the request. */
_Static_assert(6ULL * CORDON_ARG_MAX + 1024 * 1024 <= JSONRPC_LINE_MAX,
	       "JSONRPC_LINE_MAX holds a maximal command line");

struct pending_fd {
	int fd;
	unsigned long long offset; /* stream offset of the last byte it arrived with */
};

struct out_chunk {
	struct out_chunk *next;
	char *data;
	size_t len, off;
	int fds[IPC_MAX_FDS];
	size_t n_fds;
};

struct jsonrpc_conn {
	int fd;

	/* Input: buf[0..len) holds stream bytes starting at stream offset base. */
	char *buf;
	size_t len, cap;
	size_t scanned; /* bytes of buf already searched for '\n' */
	unsigned long long base;
	struct pending_fd fds[PENDING_FDS_MAX];
	size_t n_fds;

	/* Output queue. */
	struct out_chunk *out_head, *out_tail;
	size_t out_bytes;
};

static const struct {
	int code;
	const char *name;
} code_names[] = {
	{ JSONRPC_PARSE_ERROR, "parse-error" },
	{ JSONRPC_INVALID_REQUEST, "invalid-request" },
	{ JSONRPC_METHOD_NOT_FOUND, "method-not-found" },
	{ JSONRPC_INVALID_PARAMS, "invalid-params" },
	{ JSONRPC_INTERNAL_ERROR, "internal-error" },
	{ CORDON_ERR_POLICY_REFUSED, "policy-refused" },
	{ CORDON_ERR_SETUP_FAILED, "setup-failed" },
	{ CORDON_ERR_NOT_FOUND, "not-found" },
	{ CORDON_ERR_PERMISSION, "permission-denied" },
	{ CORDON_ERR_LIMIT, "limit-reached" },
	{ CORDON_ERR_UNAVAILABLE, "unavailable" },
	{ CORDON_ERR_BACKEND, "backend-failed" },
	{ CORDON_ERR_TIMEOUT, "timeout" },
	{ CORDON_ERR_CANCELLED, "cancelled" },
	{ CORDON_ERR_TOO_LARGE, "too-large" },
	{ CORDON_ERR_BUSY, "busy" },
};

const char *jsonrpc_code_name(int code)
{
	for (size_t i = 0; i < ELEMENTSOF(code_names); i++)
		if (code_names[i].code == code)
			return code_names[i].name;
	return NULL;
}

int jsonrpc_code_from_errno(int e)
{
	switch (e) {
	case -EINVAL:
	case -ERANGE:
	case -EBADMSG:
		return JSONRPC_INVALID_PARAMS;
	case -ENOENT:
	case -ESRCH:
		return CORDON_ERR_NOT_FOUND;
	case -EPERM:
	case -EACCES:
		return CORDON_ERR_PERMISSION;
	case -EAGAIN:
	case -EUSERS:
	case -EDQUOT:
		return CORDON_ERR_LIMIT;
	case -ETIMEDOUT:
		return CORDON_ERR_TIMEOUT;
	case -ECANCELED:
		return CORDON_ERR_CANCELLED;
	case -E2BIG:
	case -EMSGSIZE:
	case -EFBIG:
		return CORDON_ERR_TOO_LARGE;
	case -EBUSY:
		return CORDON_ERR_BUSY;
	case -EOPNOTSUPP:
	case -ENODEV:
		return CORDON_ERR_BACKEND;
	default:
		return JSONRPC_INTERNAL_ERROR;
	}
}

int jsonrpc_conn_new(int fd, struct jsonrpc_conn **ret)
{
	struct jsonrpc_conn *c = calloc(1, sizeof(*c));

	if (!c) {
		safe_close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	*ret = c;
	return 0;
}

static void out_chunk_free(struct out_chunk *o)
{
	close_many(o->fds, o->n_fds);
	free(o->data);
	free(o);
}

void jsonrpc_conn_free(struct jsonrpc_conn *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_fds; i++)
		safe_close(c->fds[i].fd);
	while (c->out_head) {
		struct out_chunk *o = c->out_head;

		c->out_head = o->next;
		out_chunk_free(o);
	}
	free(c->buf);
	safe_close(c->fd);
	free(c);
}

int jsonrpc_conn_fd(const struct jsonrpc_conn *c)
{
	return c->fd;
}

ssize_t jsonrpc_conn_fill(struct jsonrpc_conn *c)
{
	int fds[IPC_MAX_FDS];
	size_t n_fds = 0;
	ssize_t n;

	if (c->cap - c->len < FILL_CHUNK) {
		size_t ncap;
		char *nb;

		if (size_add_overflow(c->len, FILL_CHUNK, &ncap))
			return -ENOMEM;
		if (ncap < c->cap * 2)
			ncap = c->cap * 2;
		nb = realloc(c->buf, ncap);
		if (!nb)
			return -ENOMEM;
		c->buf = nb;
		c->cap = ncap;
	}
	n = ipc_recv_with_fds(c->fd, c->buf + c->len, c->cap - c->len, fds, IPC_MAX_FDS, &n_fds,
			      MSG_DONTWAIT);
	if (n < 0)
		return n;
	if (n_fds > 0) {
		if (n_fds > PENDING_FDS_MAX - c->n_fds) {
			close_many(fds, n_fds);
			return -EXFULL;
		}
		/* One recvmsg() may return the bytes of earlier sends without fds followed by the
		 * send that carried these fds; it always stops inside or at the end of that send.
		 * Its first byte is unknown, its last received byte is not: record that one. */
		for (size_t i = 0; i < n_fds; i++)
			c->fds[c->n_fds++] =
				(struct pending_fd){ fds[i], c->base + c->len + (size_t)n - 1 };
	}
	c->len += (size_t)n;
	return n;
}

/* Move fds that arrived with bytes before stream offset end out of the pending list: into out[]
 * when out is non-NULL, else closed. */
static size_t take_fds_before(struct jsonrpc_conn *c, unsigned long long end, int *out)
{
	size_t taken = 0, kept = 0;

	for (size_t i = 0; i < c->n_fds; i++) {
		if (c->fds[i].offset < end) {
			if (out && taken < IPC_MAX_FDS)
				out[taken++] = c->fds[i].fd;
			else
				safe_close(c->fds[i].fd);
		} else
			c->fds[kept++] = c->fds[i];
	}
	c->n_fds = kept;
	return taken;
}

static void consume(struct jsonrpc_conn *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
	/* The stale tail: a consumed line may have carried a secret (secret.set). */
	explicit_bzero(c->buf + c->len, n);
	c->base += n;
	c->scanned = 0;
}

int jsonrpc_conn_next(struct jsonrpc_conn *c, json_t **ret, int *fds, size_t *ret_n_fds,
		      struct field_error *err)
{
	size_t line_len, n_fds;
	char *nl;
	int r;

	*ret_n_fds = 0;
	for (;;) {
		nl = c->len > c->scanned ? memchr(c->buf + c->scanned, '\n', c->len - c->scanned)
					 : NULL;
		if (!nl) {
			c->scanned = c->len;
			if (c->len > JSONRPC_LINE_MAX)
				return -EMSGSIZE;
			return 0;
		}
		line_len = (size_t)(nl - c->buf);
		if (line_len > JSONRPC_LINE_MAX)
			return -EMSGSIZE;
		/* Blank lines (e.g. "\r\n" keep-alives from a terminal) are skipped. */
		if (line_len == 0 || (line_len == 1 && c->buf[0] == '\r')) {
			(void)take_fds_before(c, c->base + line_len + 1, NULL);
			consume(c, line_len + 1);
			continue;
		}
		break;
	}

	n_fds = take_fds_before(c, c->base + line_len + 1, fds);
	r = ipc_json_parse_object(c->buf, line_len, ret, err);
	consume(c, line_len + 1);
	if (r < 0) {
		close_many(fds, n_fds);
		return r;
	}
	*ret_n_fds = n_fds;
	return 1;
}

int jsonrpc_conn_recv(struct jsonrpc_conn *c, json_t **ret, int *fds, size_t *ret_n_fds,
		      int timeout_ms, struct field_error *err)
{
	unsigned long long deadline =
		timeout_ms >= 0 ? now_nsec() / 1000000ULL + (unsigned)timeout_ms : 0;

	for (;;) {
		int r = jsonrpc_conn_next(c, ret, fds, ret_n_fds, err);
		ssize_t n;

		if (r != 0)
			return r;
		n = jsonrpc_conn_fill(c);
		if (n == 0)
			return 0;
		if (n == -EAGAIN) {
			struct pollfd p = { .fd = c->fd, .events = POLLIN };
			int wait = -1;

			if (timeout_ms >= 0) {
				unsigned long long now = now_nsec() / 1000000ULL;

				if (now >= deadline)
					return -ETIMEDOUT;
				wait = (int)(deadline - now);
			}
			if (poll(&p, 1, wait) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (n < 0)
			return (int)n;
	}
}

size_t jsonrpc_conn_queued_bytes(const struct jsonrpc_conn *c)
{
	return c->out_bytes;
}

int jsonrpc_conn_flush(struct jsonrpc_conn *c)
{
	while (c->out_head) {
		struct out_chunk *o = c->out_head;
		ssize_t n = ipc_send_with_fds(c->fd, o->data + o->off, o->len - o->off, o->fds,
					      o->n_fds, MSG_DONTWAIT);

		if (n < 0)
			return (int)n;
		/* The fds went with the first byte. */
		close_many(o->fds, o->n_fds);
		o->n_fds = 0;
		o->off += (size_t)n;
		c->out_bytes -= (size_t)n;
		if (o->off < o->len)
			return -EAGAIN;
		c->out_head = o->next;
		if (!c->out_head)
			c->out_tail = NULL;
		out_chunk_free(o);
	}
	return 0;
}

int jsonrpc_conn_send(struct jsonrpc_conn *c, json_t *msg, const int *fds, size_t n_fds)
{
	_cleanup_free_ char *text = NULL;
	struct out_chunk *o;
	size_t len, off = 0;
	char *data;

	if (n_fds > IPC_MAX_FDS)
		return -E2BIG;
	text = json_dumps(msg, JSON_COMPACT);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	if (len > JSONRPC_LINE_MAX)
		return -EMSGSIZE;
	data = realloc(text, len + 1);
	if (!data)
		return -ENOMEM;
	text = data;
	text[len++] = '\n';

	/* Nothing queued: try to send straight away. */
	if (!c->out_head) {
		ssize_t n = ipc_send_with_fds(c->fd, text, len, fds, n_fds, MSG_DONTWAIT);

		if (n < 0 && n != -EAGAIN)
			return (int)n;
		if (n >= 0) {
			if ((size_t)n == len)
				return 0;
			off = (size_t)n;
			n_fds = 0; /* already gone with the first byte */
		}
	}

	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n_fds; i++) {
		int d = fd_dup_cloexec(fds[i], 3);

		if (d < 0) {
			int r = d;

			out_chunk_free(o);
			return r;
		}
		o->fds[o->n_fds++] = d;
	}
	o->data = TAKE_PTR(text);
	o->len = len;
	o->off = off;
	if (c->out_tail)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	c->out_bytes += len - off;
	return -EAGAIN;
}

int jsonrpc_conn_send_wait(struct jsonrpc_conn *c, json_t *msg, const int *fds, size_t n_fds)
{
	int r = jsonrpc_conn_send(c, msg, fds, n_fds);

	while (r == -EAGAIN) {
		struct pollfd p = { .fd = c->fd, .events = POLLOUT };

		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			return -errno;
		r = jsonrpc_conn_flush(c);
	}
	return r;
}

static json_t *envelope(void)
{
	return json_pack("{s:s}", "jsonrpc", "2.0");
}

json_t *jsonrpc_request_new(json_int_t id, const char *method, json_t *params)
{
	json_t *m = envelope();

	if (!m || json_object_set_new(m, "id", json_integer(id)) < 0 ||
	    json_object_set_new(m, "method", json_string(method)) < 0) {
		json_decref(params); /* stolen even on failure */
		json_decref(m);
		return NULL;
	}
	if (params && json_object_set_new(m, "params", params) < 0) {
		json_decref(m);
		return NULL;
	}
	return m;
}

json_t *jsonrpc_notification_new(const char *method, json_t *params)
{
	json_t *m = envelope();

	if (!m || json_object_set_new(m, "method", json_string(method)) < 0) {
		json_decref(params); /* stolen even on failure */
		json_decref(m);
		return NULL;
	}
	if (params && json_object_set_new(m, "params", params) < 0) {
		json_decref(m);
		return NULL;
	}
	return m;
}

json_t *jsonrpc_result_new(json_t *id, json_t *result)
{
	json_t *m = envelope();

	if (!m || json_object_set(m, "id", id ? id : json_null()) < 0) {
		json_decref(result); /* stolen even on failure */
		json_decref(m);
		return NULL;
	}
	if (json_object_set_new(m, "result", result ? result : json_null()) < 0) {
		json_decref(m);
		return NULL;
	}
	return m;
}

json_t *jsonrpc_error_new(json_t *id, int code, const char *message, json_t *data)
{
	json_t *m = envelope(), *e = json_pack("{s:i,s:s}", "code", code, "message", message);

	if (!e)
		json_decref(data); /* stolen even on failure */
	else if (data && json_object_set_new(e, "data", data) < 0) {
		json_decref(e);
		e = NULL;
	}
	if (!m || !e || json_object_set(m, "id", id ? id : json_null()) < 0) {
		json_decref(e);
		json_decref(m);
		return NULL;
	}
	if (json_object_set_new(m, "error", e) < 0) {
		json_decref(m);
		return NULL;
	}
	return m;
}

json_t *jsonrpc_error_field_new(json_t *id, int code, const struct field_error *fe)
{
	char msg[600];
	json_t *data;

	if (*fe->field)
		(void)snprintf(msg, sizeof(msg), "%s: %s", fe->field, fe->reason);
	else
		(void)snprintf(msg, sizeof(msg), "%s", fe->reason);
	data = json_pack("{s:s,s:s}", "field", fe->field, "reason", fe->reason);
	return jsonrpc_error_new(id, code, msg, data);
}

int jsonrpc_classify(json_t *msg, enum jsonrpc_kind *ret_kind, const char **ret_method,
		     json_t **ret_id, json_t **ret_body, struct field_error *err)
{
	json_t *ver = json_object_get(msg, "jsonrpc");
	json_t *id = json_object_get(msg, "id");
	json_t *method = json_object_get(msg, "method");
	json_t *params = json_object_get(msg, "params");
	json_t *result = json_object_get(msg, "result");
	json_t *error = json_object_get(msg, "error");

	if (!json_is_string(ver) || !streq(json_string_value(ver), "2.0"))
		return field_error_set(err, -EINVAL, "", "jsonrpc", "must be \"2.0\"");
	if (id && !json_is_integer(id) && !json_is_string(id) && !json_is_null(id))
		return field_error_set(err, -EINVAL, "", "id", "must be an integer or a string");

	static const char *const members[] = { "jsonrpc", "id",	   "method", "params",
					       "result",  "error", NULL };
	int r = ipc_json_check_keys(msg, members, "", err);

	if (r < 0)
		return r;

	*ret_method = NULL;
	*ret_id = id;
	*ret_body = NULL;
	if (method) {
		if (!json_is_string(method) || json_string_length(method) == 0)
			return field_error_set(err, -EINVAL, "", "method",
					       "must be a non-empty string");
		if (result || error)
			return field_error_set(err, -EINVAL, "", "method",
					       "a request carries no result or error");
		if (params && !json_is_object(params) && !json_is_array(params))
			return field_error_set(err, -EINVAL, "", "params",
					       "must be an object or an array");
		*ret_method = json_string_value(method);
		*ret_body = params;
		*ret_kind = id ? JSONRPC_KIND_REQUEST : JSONRPC_KIND_NOTIFICATION;
		return 0;
	}
	if (params)
		return field_error_set(err, -EINVAL, "", "params", "params without a method");
	if (!id)
		return field_error_set(err, -EINVAL, "", "id", "a response needs an id");
	if (!!result == !!error)
		return field_error_set(err, -EINVAL, "", NULL,
				       "a response carries exactly one of result and error");
	if (error) {
		json_t *code = json_object_get(error, "code"),
		       *m = json_object_get(error, "message");

		if (!json_is_object(error) || !json_is_integer(code) || !json_is_string(m))
			return field_error_set(
				err, -EINVAL, "", "error",
				"must be an object with an integer code and a message");
		*ret_kind = JSONRPC_KIND_ERROR;
		*ret_body = error;
		return 0;
	}
	*ret_kind = JSONRPC_KIND_RESULT;
	*ret_body = result;
	return 0;
}
