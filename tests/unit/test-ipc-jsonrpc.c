/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ipc/ipc-jsonrpc.c over a SOCK_STREAM pair: line splitting (byte by byte, several per write,
 * blank and CRLF lines, garbage, JSONRPC_LINE_MAX), fd attribution by stream offset, the output
 * queue under a full socket, envelopes (classify, constructors, code names), 10,000 messages with
 * an fd each without leaking, and an echo exchange driven by common/event.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/event.h"
#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-jsonrpc.h"
#include "tests/tap.h"

#define N_MESSAGES 10000

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* A raw client socket (sv[0]) and a conn around the server end (sv[1]). */
static struct jsonrpc_conn *raw_pair(int *ret_client)
{
	struct jsonrpc_conn *c = NULL;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		bail("socketpair: %m");
	if (jsonrpc_conn_new(sv[1], &c) < 0)
		bail("jsonrpc_conn_new failed");
	*ret_client = sv[0];
	return c;
}

static void conn_pair(struct jsonrpc_conn **client, struct jsonrpc_conn **server)
{
	int fd;

	*server = raw_pair(&fd);
	if (jsonrpc_conn_new(fd, client) < 0)
		bail("jsonrpc_conn_new failed");
}

static void raw_send(int fd, const char *s)
{
	if (ipc_send_with_fds(fd, s, strlen(s), NULL, 0, 0) != (ssize_t)strlen(s))
		bail("send: %m");
}

static json_int_t msg_id(json_t *m)
{
	return json_integer_value(json_object_get(m, "id"));
}

/* Receive one message with a short timeout; closes its fds unless ret_fds is given. */
static int recv_one(struct jsonrpc_conn *c, json_t **ret, int *ret_fds, size_t *ret_n_fds)
{
	int fds[IPC_MAX_FDS];
	struct field_error e;
	size_t n_fds = 0;
	int r = jsonrpc_conn_recv(c, ret, fds, &n_fds, 5000, &e);

	if (r > 0 && ret_fds)
		memcpy(ret_fds, fds, n_fds * sizeof(int));
	else if (r > 0)
		close_many(fds, n_fds);
	if (ret_n_fds)
		*ret_n_fds = r > 0 ? n_fds : 0;
	return r;
}

static void test_splitting(void)
{
	static const char line[] =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"k\":\"v\"}}\n";
	_cleanup_json_ json_t *m = NULL;
	struct jsonrpc_conn *c;
	struct field_error e = { 0 };
	int fd, fds[IPC_MAX_FDS], r = 0;
	size_t n_fds;
	bool early = false;

	c = raw_pair(&fd);
	for (size_t i = 0; i < sizeof(line) - 1; i++) {
		if (send(fd, line + i, 1, MSG_NOSIGNAL) != 1)
			bail("send: %m");
		if (jsonrpc_conn_fill(c) != 1)
			bail("fill did not get the byte");
		r = jsonrpc_conn_next(c, &m, fds, &n_fds, &e);
		if (i + 2 < sizeof(line) && r != 0)
			early = true;
	}
	ok(!early, "a line written byte by byte yields nothing before its newline");
	is_int(1, r, "and one message at the newline");
	ok(m && streq(json_string_value(json_object_get(m, "method")), "ping") && n_fds == 0,
	   "the message is intact");
	json_decref(m);
	m = NULL;

	raw_send(fd, "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n");
	(void)jsonrpc_conn_fill(c);
	for (int i = 1; i <= 3; i++) {
		r = jsonrpc_conn_next(c, &m, fds, &n_fds, &e);
		ok(r == 1 && msg_id(m) == i, "message %d of three sent in one write", i);
		json_decref(m);
		m = NULL;
	}
	is_int(0, jsonrpc_conn_next(c, &m, fds, &n_fds, &e), "then nothing is left");

	raw_send(fd, "\n\r\n\n{\"id\":7}\r\n\r\n\n");
	(void)jsonrpc_conn_fill(c);
	r = jsonrpc_conn_next(c, &m, fds, &n_fds, &e);
	ok(r == 1 && msg_id(m) == 7, "blank and CRLF lines are skipped, a CRLF line parses");
	json_decref(m);
	m = NULL;
	is_int(0, jsonrpc_conn_next(c, &m, fds, &n_fds, &e), "trailing blank lines yield nothing");

	raw_send(fd, "not json at all\n[1,2]\n{\"id\":8}\n");
	(void)jsonrpc_conn_fill(c);
	e.reason[0] = '\0';
	r = jsonrpc_conn_next(c, &m, fds, &n_fds, &e);
	ok(r == -EBADMSG && e.reason[0], "a garbage line is -EBADMSG (%s)", e.reason);
	is_int(-EBADMSG, jsonrpc_conn_next(c, &m, fds, &n_fds, &e),
	       "a non-object line is -EBADMSG");
	r = jsonrpc_conn_next(c, &m, fds, &n_fds, &e);
	ok(r == 1 && msg_id(m) == 8, "the connection stays usable: the next line parses");

	safe_close(fd);
	jsonrpc_conn_free(c);
}

struct writer {
	int fd;
	const char *prefix;
	size_t len; /* total bytes to write */
	char fill, last;
};

static void *writer_thread(void *p)
{
	struct writer *w = p;
	size_t plen = strlen(w->prefix), off = 0;
	char buf[65536];

	while (off < w->len) {
		size_t n = 0;
		ssize_t k;

		while (n < sizeof(buf) && off + n < w->len) {
			size_t i = off + n;

			buf[n++] = i < plen			? w->prefix[i]
				   : i == w->len - 1 && w->last ? w->last
								: w->fill;
		}
		k = send(w->fd, buf, n, MSG_NOSIGNAL);
		if (k < 0)
			break; /* the reader gave up: EPIPE */
		off += (size_t)k;
	}
	return NULL;
}

static void test_line_max(void)
{
	/* "{}", spaces, "\n": a line of exactly JSONRPC_LINE_MAX bytes before its newline. */
	struct writer w = { .prefix = "{}", .fill = ' ', .last = '\n' };
	_cleanup_json_ json_t *m = NULL;
	struct jsonrpc_conn *c;
	pthread_t t;
	int r;

	w.len = JSONRPC_LINE_MAX + 1;

	c = raw_pair(&w.fd);
	if (pthread_create(&t, NULL, writer_thread, &w) != 0)
		bail("pthread_create failed");
	r = recv_one(c, &m, NULL, NULL);
	(void)pthread_join(t, NULL);
	ok(r == 1 && json_is_object(m), "a line of exactly JSONRPC_LINE_MAX bytes is accepted");
	safe_close(w.fd);
	jsonrpc_conn_free(c);

	w = (struct writer){ .prefix = "{\"a\":\"", .len = JSONRPC_LINE_MAX + 4096, .fill = 'x' };
	c = raw_pair(&w.fd);
	if (pthread_create(&t, NULL, writer_thread, &w) != 0)
		bail("pthread_create failed");
	r = recv_one(c, &m, NULL, NULL);
	jsonrpc_conn_free(c); /* the writer's next send fails with EPIPE */
	(void)pthread_join(t, NULL);
	is_int(-EMSGSIZE, r, "a line longer than JSONRPC_LINE_MAX is -EMSGSIZE");
	safe_close(w.fd);
}

static void test_fd_attribution(void)
{
	struct jsonrpc_conn *client, *server;
	int a[2], b[2], fds[IPC_MAX_FDS];
	size_t n_fds;
	bool good = true;

	if (pipe2(a, O_CLOEXEC) < 0 || pipe2(b, O_CLOEXEC) < 0)
		bail("pipe2: %m");
	conn_pair(&client, &server);

	/* Two messages with fds, back to back, before the receiver reads anything. */
	for (int i = 1; i <= 2; i++) {
		_cleanup_json_ json_t *m = jsonrpc_request_new(i, "spawn", NULL);

		if (jsonrpc_conn_send_wait(client, m, i == 1 ? &a[0] : &b[0], 1) < 0)
			bail("send failed");
	}
	for (int i = 1; i <= 2; i++) {
		_cleanup_json_ json_t *m = NULL;
		int r = recv_one(server, &m, fds, &n_fds);

		ok(r == 1 && msg_id(m) == i && n_fds == 1 &&
			   same_file(fds[0], i == 1 ? a[0] : b[0]),
		   "back to back: message %d owns exactly its own fd", i);
		if (r == 1)
			close_many(fds, n_fds);
	}

	/* Messages without fds before, between and after those with fds. */
	{
		static const int want_fds[] = { 0, 1, 0, 2, 0 };

		for (int i = 0; i < 5; i++) {
			_cleanup_json_ json_t *m = jsonrpc_request_new(i, "x", NULL);
			const int two[] = { b[0], a[0] };

			if (jsonrpc_conn_send_wait(client, m, i == 1 ? &a[0] : two,
						   (size_t)want_fds[i]) < 0)
				bail("send failed");
		}
		for (int i = 0; i < 5; i++) {
			_cleanup_json_ json_t *m = NULL;
			int r = recv_one(server, &m, fds, &n_fds);
			bool right = r == 1 && msg_id(m) == i && n_fds == (size_t)want_fds[i];

			if (right && i == 1)
				right = same_file(fds[0], a[0]);
			if (right && i == 3)
				right = same_file(fds[0], b[0]) && same_file(fds[1], a[0]);
			ok(right, "interleaved: message %d has its %d fd(s) (got %zu)", i,
			   want_fds[i], n_fds);
			good = good && right;
			if (r == 1)
				close_many(fds, n_fds);
		}
	}
	jsonrpc_conn_free(client);
	jsonrpc_conn_free(server);
	safe_close(a[0]);
	safe_close(a[1]);
	safe_close(b[0]);
	safe_close(b[1]);
}

static void test_garbage_fds(void)
{
	_cleanup_json_ json_t *m = NULL;
	struct jsonrpc_conn *c;
	struct field_error e;
	int fd, p[2], fds[IPC_MAX_FDS];
	size_t n_fds;
	char ch;

	c = raw_pair(&fd);
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		bail("pipe2: %m");
	if (ipc_send_with_fds(fd, "{garbage\n", 9, &p[1], 1, 0) != 9)
		bail("send: %m");
	safe_close(p[1]);
	raw_send(fd, "{\"id\":9}\n");
	is_int(-EBADMSG, jsonrpc_conn_recv(c, &m, fds, &n_fds, 5000, &e),
	       "a garbage line with an fd");
	ok(read(p[0], &ch, 1) == 0, "its fd was closed (the pipe's last writer is gone)");
	ok(recv_one(c, &m, NULL, &n_fds) == 1 && msg_id(m) == 9 && n_fds == 0,
	   "the next line parses and does not inherit the fd");
	safe_close(p[0]);
	safe_close(fd);
	jsonrpc_conn_free(c);
}

static void test_queue(void)
{
	_cleanup_free_ char *blob = malloc(16384 + 1);
	struct jsonrpc_conn *client, *server;
	json_t *sent[256];
	size_t n_sent = 0, got = 0, n_fds;
	int r = 0, p[2], flushes = 0;
	bool in_order = true, fd_ok = false;
	struct stat st_pipe;

	if (!blob || pipe2(p, O_CLOEXEC) < 0 || fstat(p[0], &st_pipe) < 0)
		bail("setup failed");
	memset(blob, 'q', 16384);
	blob[16384] = '\0';
	conn_pair(&client, &server);

	/* Fill the socket until the conn starts queueing. */
	while (n_sent < ELEMENTSOF(sent) - 3) {
		sent[n_sent] = jsonrpc_notification_new(
			"data", json_pack("{s:i,s:s}", "n", (int)n_sent, "blob", blob));
		r = jsonrpc_conn_send(client, sent[n_sent++], NULL, 0);
		if (r != 0)
			break;
	}
	is_int(-EAGAIN, r, "a full socket makes jsonrpc_conn_send queue (-EAGAIN after %zu)",
	       n_sent);
	ok(jsonrpc_conn_queued_bytes(client) > 0, "some bytes are queued (%zu)",
	   jsonrpc_conn_queued_bytes(client));
	/* Behind the queue: more messages, one with an fd whose only other copy we close now. */
	for (int i = 0; i < 3; i++) {
		sent[n_sent] =
			jsonrpc_notification_new("tail", json_pack("{s:i}", "n", (int)n_sent));
		r = jsonrpc_conn_send(client, sent[n_sent++], i == 1 ? &p[1] : NULL,
				      i == 1 ? 1 : 0);
		if (r != -EAGAIN)
			bail("a send behind a queue did not queue (%d)", r);
	}
	p[1] = safe_close(p[1]);

	/* Drain: the peer reads while the conn flushes. */
	while (got < n_sent && flushes < 100000) {
		int fds[IPC_MAX_FDS];
		json_t *m = NULL;

		r = jsonrpc_conn_flush(client);
		flushes++;
		if (r < 0 && r != -EAGAIN)
			break;
		(void)jsonrpc_conn_fill(server);
		while (jsonrpc_conn_next(server, &m, fds, &n_fds, NULL) == 1) {
			if (got == n_sent - 2) { /* the one with the fd */
				struct stat st;

				fd_ok = n_fds == 1 && fstat(fds[0], &st) == 0 &&
					st.st_ino == st_pipe.st_ino && st.st_dev == st_pipe.st_dev;
			} else if (n_fds != 0)
				in_order = false;
			if (!json_equal(m, sent[got]))
				in_order = false;
			close_many(fds, n_fds);
			json_decref(m);
			got++;
		}
	}
	is_int(0, r, "jsonrpc_conn_flush finally sends everything");
	is_int(0, jsonrpc_conn_queued_bytes(client), "nothing stays queued");
	ok(got == n_sent && in_order, "all %zu messages arrive intact and in order (%zu)", n_sent,
	   got);
	ok(fd_ok, "the queued fd travelled with its message though the caller closed its copy");

	for (size_t i = 0; i < n_sent; i++)
		json_decref(sent[i]);
	{
		_cleanup_json_ json_t *m = jsonrpc_notification_new("x", NULL);
		int many[IPC_MAX_FDS + 1];

		for (size_t i = 0; i < ELEMENTSOF(many); i++)
			many[i] = p[0];
		is_int(-E2BIG, jsonrpc_conn_send(client, m, many, ELEMENTSOF(many)),
		       "more than IPC_MAX_FDS fds are refused");
	}
	safe_close(p[0]);
	jsonrpc_conn_free(client);
	jsonrpc_conn_free(server);
}

static void test_classify(void)
{
	static const struct {
		const char *text;
		int r;
		enum jsonrpc_kind kind;
		const char *field; /* for errors */
	} cases[] = {
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{}}", 0,
		  JSONRPC_KIND_REQUEST, NULL },
		{ "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"m\",\"params\":[1]}", 0,
		  JSONRPC_KIND_REQUEST, NULL },
		{ "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}", 0, JSONRPC_KIND_NOTIFICATION, NULL },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}", 0, JSONRPC_KIND_RESULT, NULL },
		{ "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}",
		  0, JSONRPC_KIND_ERROR, NULL },
		{ "{\"id\":1,\"method\":\"m\"}", -EINVAL, 0, "jsonrpc" },
		{ "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\"}", -EINVAL, 0, "jsonrpc" },
		{ "{\"jsonrpc\":2,\"id\":1,\"method\":\"m\"}", -EINVAL, 0, "jsonrpc" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"m\"}", -EINVAL, 0, "id" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"m\"}", -EINVAL, 0, "id" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"extra\":1}", -EINVAL, 0,
		  "extra" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", -EINVAL, 0, "method" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}", -EINVAL, 0, "method" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"result\":1}", -EINVAL, 0,
		  "method" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":5}", -EINVAL, 0,
		  "params" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":{}}", -EINVAL, 0, "params" },
		{ "{\"jsonrpc\":\"2.0\",\"result\":1}", -EINVAL, 0, "id" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,"
		  "\"error\":{\"code\":1,\"message\":\"m\"}}",
		  -EINVAL, 0, "" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1}", -EINVAL, 0, "" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"bad\"}", -EINVAL, 0, "error" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\",\"message\":\"m\"}}",
		  -EINVAL, 0, "error" },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1}}", -EINVAL, 0, "error" },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_json_ json_t *m = json_loads(cases[i].text, JSON_REJECT_DUPLICATES, NULL);
		struct field_error e = { 0 };
		enum jsonrpc_kind kind = (enum jsonrpc_kind) - 1;
		const char *method = NULL;
		json_t *id = NULL, *body = NULL;
		int r;

		if (!m)
			bail("bad test case %zu", i);
		r = jsonrpc_classify(m, &kind, &method, &id, &body, &e);
		if (cases[i].r == 0)
			ok(r == 0 && kind == cases[i].kind, "classify %s: kind %d", cases[i].text,
			   kind);
		else
			ok(r == cases[i].r && streq(e.field, cases[i].field),
			   "classify %s: refused naming \"%s\" (%d, \"%s\": %s)", cases[i].text,
			   cases[i].field, r, e.field, e.reason);
	}
}

static int classify(json_t *m, enum jsonrpc_kind *kind, const char **method, json_t **id,
		    json_t **body)
{
	struct field_error e;

	return m ? jsonrpc_classify(m, kind, method, id, body, &e) : -ENOMEM;
}

static void test_constructors(void)
{
	enum jsonrpc_kind kind;
	const char *method;
	json_t *id, *body, *params = json_pack("{s:s}", "a", "b"), *data;

	{
		_cleanup_json_ json_t *m = jsonrpc_request_new(5, "spawn", json_incref(params));

		ok(classify(m, &kind, &method, &id, &body) == 0 && kind == JSONRPC_KIND_REQUEST &&
			   streq(method, "spawn") && json_integer_value(id) == 5 && body == params,
		   "jsonrpc_request_new builds a valid request");
	}
	{
		_cleanup_json_ json_t *m = jsonrpc_notification_new("exit", NULL);

		ok(classify(m, &kind, &method, &id, &body) == 0 &&
			   kind == JSONRPC_KIND_NOTIFICATION && streq(method, "exit") && !id &&
			   !body && !json_object_get(m, "params"),
		   "jsonrpc_notification_new builds a notification without params");
	}
	{
		_cleanup_json_ json_t *i = json_string("abc");
		_cleanup_json_ json_t *m = jsonrpc_result_new(i, json_integer(42));

		ok(classify(m, &kind, &method, &id, &body) == 0 && kind == JSONRPC_KIND_RESULT &&
			   json_equal(id, i) && json_integer_value(body) == 42,
		   "jsonrpc_result_new builds a result echoing a string id");
	}
	{
		_cleanup_json_ json_t *m = jsonrpc_result_new(NULL, NULL);

		ok(classify(m, &kind, &method, &id, &body) == 0 && kind == JSONRPC_KIND_RESULT &&
			   json_is_null(id) && json_is_null(body),
		   "jsonrpc_result_new with no id and no result uses null for both");
	}
	{
		_cleanup_json_ json_t *i = json_integer(3);
		_cleanup_json_ json_t *m = jsonrpc_error_new(i, CORDON_ERR_NOT_FOUND,
							     "no such sandbox",
							     json_pack("{s:s}", "sandbox", "sb-1"));

		ok(classify(m, &kind, &method, &id, &body) == 0 && kind == JSONRPC_KIND_ERROR &&
			   json_integer_value(json_object_get(body, "code")) == -32003 &&
			   streq(json_string_value(json_object_get(body, "message")),
				 "no such sandbox") &&
			   streq(json_string_value(
					 json_object_get(json_object_get(body, "data"), "sandbox")),
				 "sb-1"),
		   "jsonrpc_error_new builds an error with code, message and data");
	}
	{
		struct field_error fe = { .field = "plan.cwd", .reason = "not absolute" };
		_cleanup_json_ json_t *m =
			jsonrpc_error_field_new(NULL, JSONRPC_INVALID_PARAMS, &fe);

		ok(classify(m, &kind, &method, &id, &body) == 0 && kind == JSONRPC_KIND_ERROR &&
			   streq(json_string_value(json_object_get(body, "message")),
				 "plan.cwd: not absolute"),
		   "jsonrpc_error_field_new: message is \"field: reason\"");
		data = json_object_get(body, "data");
		ok(streq(json_string_value(json_object_get(data, "field")), "plan.cwd") &&
			   streq(json_string_value(json_object_get(data, "reason")),
				 "not absolute"),
		   "and data names the field and the reason");
	}
	{
		struct field_error fe = { .field = "", .reason = "bad line" };
		_cleanup_json_ json_t *m = jsonrpc_error_field_new(NULL, JSONRPC_PARSE_ERROR, &fe);

		ok(m && streq(json_string_value(
				      json_object_get(json_object_get(m, "error"), "message")),
			      "bad line"),
		   "with no field the message is the reason alone");
	}
	{
		/* A field path cut at 256 bytes inside a character must still be sendable. */
		static const char *const none[] = { NULL };
		_cleanup_free_ char *key = malloc(401);
		_cleanup_json_ json_t *o = json_object(), *m = NULL;
		struct field_error fe = { 0 };

		if (!key || !o)
			bail("out of memory");
		for (size_t i = 0; i < 400; i += 2)
			memcpy(key + i, "\xc3\xa9", 2);
		key[400] = '\0';
		(void)json_object_set_new(o, key, json_true());
		/* "x." + 253 bytes of 2-byte characters: the cut falls inside one. */
		(void)ipc_json_check_keys(o, none, "x", &fe);
		m = jsonrpc_error_field_new(NULL, JSONRPC_INVALID_PARAMS, &fe);
		ok(m != NULL, "an error naming a long non-ASCII key can be built");
	}

	/* Stolen arguments are released when construction fails (invalid UTF-8 is refused). */
	ok(!jsonrpc_request_new(1, "\xff", json_incref(params)) && params->refcount == 1,
	   "jsonrpc_request_new releases params on failure");
	ok(!jsonrpc_notification_new("\xff", json_incref(params)) && params->refcount == 1,
	   "jsonrpc_notification_new releases params on failure");
	ok(!jsonrpc_error_new(NULL, JSONRPC_INTERNAL_ERROR, "\xff", json_incref(params)) &&
		   params->refcount == 1,
	   "jsonrpc_error_new releases data on failure");
	json_decref(params);
}

static void test_codes(void)
{
	static const struct {
		int code;
		const char *name;
	} table[] = {
		{ -32700, "parse-error" },	 { -32600, "invalid-request" },
		{ -32601, "method-not-found" },	 { -32602, "invalid-params" },
		{ -32603, "internal-error" },	 { -32001, "policy-refused" },
		{ -32002, "setup-failed" },	 { -32003, "not-found" },
		{ -32004, "permission-denied" }, { -32005, "limit-reached" },
		{ -32006, "unavailable" },	 { -32007, "backend-failed" },
		{ -32008, "timeout" },		 { -32009, "cancelled" },
		{ -32010, "too-large" },	 { -32011, "busy" },
	};
	bool all = true;

	for (size_t i = 0; i < ELEMENTSOF(table); i++)
		if (!streq_ptr(jsonrpc_code_name(table[i].code), table[i].name)) {
			diag("code %d: %s", table[i].code, jsonrpc_code_name(table[i].code));
			all = false;
		}
	ok(all, "jsonrpc_code_name gives the documented name of all %zu codes", ELEMENTSOF(table));
	ok(!jsonrpc_code_name(0) && !jsonrpc_code_name(-32000), "unknown codes have no name");
	ok(jsonrpc_code_from_errno(-ERANGE) == JSONRPC_INVALID_PARAMS &&
		   jsonrpc_code_from_errno(-ENOENT) == CORDON_ERR_NOT_FOUND &&
		   jsonrpc_code_from_errno(-EMSGSIZE) == CORDON_ERR_TOO_LARGE &&
		   jsonrpc_code_from_errno(-ENOMEM) == JSONRPC_INTERNAL_ERROR,
	   "jsonrpc_code_from_errno maps errnos to their codes");
}

static void test_many(void)
{
	struct jsonrpc_conn *client, *server;
	_cleanup_close_ int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int before, bad = 0;

	if (devnull < 0)
		bail("open /dev/null: %m");
	conn_pair(&client, &server);
	before = count_open_fds();
	for (int i = 1; i <= N_MESSAGES; i++) {
		_cleanup_json_ json_t *out = jsonrpc_request_new(i, "write", NULL), *in = NULL;
		int fds[IPC_MAX_FDS];
		size_t n_fds = 0;

		if (jsonrpc_conn_send_wait(client, out, &devnull, 1) < 0 ||
		    recv_one(server, &in, fds, &n_fds) != 1) {
			bad++;
			continue;
		}
		if (!json_equal(in, out) || n_fds != 1 || !same_file(fds[0], devnull))
			bad++;
		close_many(fds, n_fds);
	}
	is_int(0, bad, "%d messages with an fd each arrive intact", N_MESSAGES);
	is_int(before, count_open_fds(), "and no fd leaked");
	jsonrpc_conn_free(client);
	jsonrpc_conn_free(server);
}

struct echo {
	struct event_loop *loop;
	struct jsonrpc_conn *client, *server;
	struct event_source *client_src, *server_src;
	json_t *params[3];
	int replies, wrong;
};

static int on_server(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct echo *e = userdata;
	ssize_t n = jsonrpc_conn_fill(e->server);
	int fds[IPC_MAX_FDS];
	json_t *m = NULL;
	size_t n_fds;

	if (n == 0 || (n < 0 && n != -EAGAIN)) {
		event_source_free(s);
		e->server_src = NULL;
		return 0;
	}
	while (jsonrpc_conn_next(e->server, &m, fds, &n_fds, NULL) == 1) {
		enum jsonrpc_kind kind;
		const char *method;
		json_t *id, *body, *reply;

		if (classify(m, &kind, &method, &id, &body) == 0 && kind == JSONRPC_KIND_REQUEST &&
		    streq(method, "echo")) {
			reply = jsonrpc_result_new(id, json_incref(body));
			if (!reply || jsonrpc_conn_send(e->server, reply, NULL, 0) < 0)
				e->wrong++;
			json_decref(reply);
		} else
			e->wrong++;
		close_many(fds, n_fds);
		json_decref(m);
	}
	return 0;
}

static int on_client(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct echo *e = userdata;
	int fds[IPC_MAX_FDS];
	json_t *m = NULL;
	size_t n_fds;

	if (jsonrpc_conn_fill(e->client) == 0) {
		event_loop_exit(e->loop, -ECONNRESET);
		return 0;
	}
	while (jsonrpc_conn_next(e->client, &m, fds, &n_fds, NULL) == 1) {
		enum jsonrpc_kind kind;
		const char *method;
		json_t *id, *body;

		if (classify(m, &kind, &method, &id, &body) < 0 || kind != JSONRPC_KIND_RESULT ||
		    json_integer_value(id) != e->replies + 1 ||
		    !json_equal(body, e->params[e->replies]))
			e->wrong++;
		e->replies++;
		close_many(fds, n_fds);
		json_decref(m);
		if (e->replies == 3)
			event_loop_exit(e->loop, 0);
	}
	return 0;
}

static int on_watchdog(struct event_source *s, void *userdata)
{
	event_loop_exit(userdata, -ETIMEDOUT);
	return 0;
}

static void test_echo(void)
{
	struct echo e = { 0 };
	struct event_source *dog = NULL;
	int r;

	conn_pair(&e.client, &e.server);
	if (event_loop_new(&e.loop) < 0 ||
	    event_add_io(e.loop, jsonrpc_conn_fd(e.server), EPOLLIN, on_server, &e, &e.server_src) <
		    0 ||
	    event_add_io(e.loop, jsonrpc_conn_fd(e.client), EPOLLIN, on_client, &e, &e.client_src) <
		    0 ||
	    event_add_timer(e.loop, 5000000, false, on_watchdog, e.loop, &dog) < 0)
		bail("event loop set-up failed");
	for (int i = 0; i < 3; i++) {
		_cleanup_json_ json_t *m = NULL;

		e.params[i] =
			json_pack("{s:i,s:[s,s]}", "n", i, "words", "hello", i ? "again" : "first");
		m = jsonrpc_request_new(i + 1, "echo", json_incref(e.params[i]));
		if (jsonrpc_conn_send(e.client, m, NULL, 0) < 0)
			bail("send failed");
	}
	r = event_loop_run(e.loop);
	is_int(0, r, "the epoll-driven echo exchange completes");
	ok(e.replies == 3 && e.wrong == 0,
	   "three requests get three matching results in order (%d, %d wrong)", e.replies, e.wrong);

	event_source_free(dog);
	event_source_free(e.client_src);
	event_source_free(e.server_src);
	event_loop_free(e.loop);
	for (int i = 0; i < 3; i++)
		json_decref(e.params[i]);
	jsonrpc_conn_free(e.client);
	jsonrpc_conn_free(e.server);
}

static void test_recv_end(void)
{
	_cleanup_json_ json_t *m = NULL;
	struct jsonrpc_conn *c;
	int fd, fds[IPC_MAX_FDS];
	size_t n_fds;
	unsigned long long t0;

	c = raw_pair(&fd);
	t0 = now_nsec();
	is_int(-ETIMEDOUT, jsonrpc_conn_recv(c, &m, fds, &n_fds, 50, NULL),
	       "recv with nothing sent times out");
	ok(now_nsec() - t0 >= 45000000ULL, "after the timeout (ms granularity), not before");
	is_int(-EAGAIN, jsonrpc_conn_fill(c), "a fill with nothing to read is -EAGAIN");
	raw_send(fd, "{\"id\":1}");
	safe_close(fd);
	is_int(0, jsonrpc_conn_recv(c, &m, fds, &n_fds, 5000, NULL),
	       "EOF returns 0 (an unterminated last line is not a message)");
	jsonrpc_conn_free(c);
}

int main(void)
{
	int before;

	plan(77);
	before = count_open_fds();
	test_splitting();
	test_line_max();
	test_fd_attribution();
	test_garbage_fds();
	test_queue();
	test_classify();
	test_constructors();
	test_codes();
	test_many();
	test_echo();
	test_recv_end();
	is_int(before, count_open_fds(), "no fd leaked over the whole test");
	return tap_exit_status();
}
