/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The proxy listener and its connections, on the controller's event loop (no thread per
 * connection). A connection goes through:
 *
 *   SNIFF ──0x05──▶ SOCKS_GREETING ─▶ SOCKS_REQUEST ─┐
 *     └──"METHOD "──▶ HTTP_HEAD (CONNECT or absolute URI) ─┴▶ RESOLVING ─▶ CONNECTING ─▶ TUNNEL
 *   any refusal ─▶ REFUSING (flush the answer, shut down, drain briefly) ─▶ closed
 *
 * Each direction has one buffer of limits.buffer_size bytes: a side is not read while the
 * buffer towards the other side is full, and writing waits for the other side's EPOLLOUT, so a
 * slow reader holds at most two buffers per connection. The client's side is not read while the
 * upstream is being resolved and connected. A tunnel's sockets are registered once,
 * edge-triggered, and each wake-up moves bytes until a socket is drained or a buffer full (no
 * epoll_ctl() per chunk); a buffer that bulk traffic fills grows once to limits.buffer_max (fewer,
 * larger reads and writes: less CPU per byte), within PROXY_BUFFER_GROWTH_BUDGET for the whole
 * process. One periodic timer per listener enforces the setup and idle timeouts; accepting
 * pauses at limits.max_connections. The request parsers are proxy-request.c's.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "proxy/proxy-resolve.h"
#include "proxy/proxy.h"

#define ACCEPT_BATCH 16
#define DRAIN_USEC (2ULL * 1000000ULL) /* how long a refused client may take to read the answer */
#define SWEEP_MIN_USEC (10ULL * 1000ULL)
#define SWEEP_MAX_USEC (1000ULL * 1000ULL)

enum conn_state {
	ST_SNIFF,
	ST_HTTP_HEAD,
	ST_SOCKS_GREETING,
	ST_SOCKS_REQUEST,
	ST_RESOLVING,
	ST_CONNECTING,
	ST_TUNNEL,
	ST_REFUSING, /* writing the refusal */
	ST_DRAINING, /* refusal sent and shut down: reading until EOF, then closing */
};

enum conn_proto {
	PROTO_NONE,
	PROTO_CONNECT,
	PROTO_HTTP,
	PROTO_SOCKS5,
};

struct buf {
	uint8_t *data;
	size_t size, start, end;
};

struct conn {
	struct proxy_listener *l;
	struct conn *prev, *next;
	uint64_t id;
	enum conn_state state;
	enum conn_proto proto;
	int cfd, ufd;
	struct event_source *csrc, *usrc;
	uint32_t cev, uev; /* the events each source is registered for */
	struct buf up;	   /* client → upstream; holds the request head first */
	struct buf down;   /* upstream → client; holds our own answers first */
	bool c_eof, u_eof; /* read side ended */
	bool c_shut, u_shut;
	/* Tunnelling, the sockets are edge-triggered: what their last edges said is possible. */
	bool c_in, c_out, u_in, u_out;
	size_t answer_left; /* of our own answer, still to send when tunnelling began: not bytesDown */
	size_t grown; /* bytes this connection's buffers grew by (PROXY_BUFFER_GROWTH_BUDGET) */
	struct proxy_rules *rules; /* the rules this connection is decided with */
	struct proxy_verdict verdict;
	struct proxy_query *query;
	struct proxy_addr addrs[PROXY_RESOLVE_MAX_ADDRS];
	size_t n_addrs, i_addr;
	int connect_error;
	char address[INET6_ADDRSTRLEN];
	bool reported_allowed;
	bool reported_denied;
	uint64_t started, last_active, drain_until;
	uint64_t bytes_up, bytes_down;
};

struct proxy_listener {
	struct event_loop *loop;
	int fd;
	struct event_source *src, *sweep;
	bool accept_paused;
	struct proxy_rules *rules;
	struct proxy_limits limits;
	proxy_event_fn audit;
	void *userdata;
	struct proxy_resolver *resolver; /* started with the first name that needs DNS */
	struct conn *conns;
	unsigned n_conns;
	uint64_t next_id;
};

/*
 * Bytes by which the buffers of every listener in this process have grown (struct proxy_limits,
 * buffer_max). Only the event loop's thread touches it.
 */
static size_t buffers_grown;

static const char *const proto_names[] = {
	[PROTO_NONE] = NULL,
	[PROTO_CONNECT] = "connect",
	[PROTO_HTTP] = "http",
	[PROTO_SOCKS5] = "socks5",
};

static int conn_io(struct event_source *s, int fd, uint32_t revents, void *userdata);
static void conn_update(struct conn *c);

void proxy_limits_default(struct proxy_limits *ret)
{
	*ret = (struct proxy_limits){
		.max_connections = PROXY_DEFAULT_MAX_CONNECTIONS,
		.idle_timeout_usec = PROXY_DEFAULT_IDLE_TIMEOUT_USEC,
		.setup_timeout_usec = PROXY_DEFAULT_SETUP_TIMEOUT_USEC,
		.buffer_size = PROXY_DEFAULT_BUFFER_SIZE,
		.buffer_max = PROXY_DEFAULT_BUFFER_MAX,
	};
}

const char *proxy_event_kind_to_string(enum proxy_event_kind k)
{
	static const char *const names[] = {
		[PROXY_EVENT_DENIED] = "denied",
		[PROXY_EVENT_ALLOWED] = "allowed",
		[PROXY_EVENT_CLOSED] = "closed",
	};

	return (size_t)k < ELEMENTSOF(names) ? names[k] : "?";
}

json_t *proxy_event_to_json(const struct proxy_event *e)
{
	json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "decision",
			      proxy_event_kind_to_string(e->kind), "connection",
			      (json_int_t)e->connection, "port", (json_int_t)e->port, "bytesUp",
			      (json_int_t)e->bytes_up, "bytesDown", (json_int_t)e->bytes_down,
			      "durationMs", (json_int_t)(e->duration_usec / 1000ULL));

	if (!o)
		return NULL;
	if ((e->protocol && json_object_set_new(o, "protocol", json_string(e->protocol)) < 0) ||
	    (e->domain && json_object_set_new(o, "domain", json_string(e->domain)) < 0) ||
	    (e->address && json_object_set_new(o, "address", json_string(e->address)) < 0) ||
	    (e->rule && json_object_set_new(o, "rule", json_string(e->rule)) < 0) ||
	    (e->reason && json_object_set_new(o, "reason", json_string(e->reason)) < 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- buffers ------------------------------------------------------------------------------ */

static int buf_alloc(struct buf *b, size_t size)
{
	if (b->data)
		return 0;
	b->data = malloc(size);
	if (!b->data)
		return -ENOMEM;
	b->size = size;
	b->start = b->end = 0;
	return 0;
}

static size_t buf_len(const struct buf *b)
{
	return b->end - b->start;
}

/* Free room at the end, compacting first when the data does not start at 0. */
static size_t buf_room(struct buf *b)
{
	if (!b->data)
		return 0;
	if (b->start == b->end)
		b->start = b->end = 0;
	else if (b->end == b->size && b->start > 0) {
		memmove(b->data, b->data + b->start, b->end - b->start);
		b->end -= b->start;
		b->start = 0;
	}
	return b->size - b->end;
}

static void buf_consume(struct buf *b, size_t n)
{
	b->start += n;
	if (b->start == b->end)
		b->start = b->end = 0;
}

/* Replace the first n bytes with data (the buffer grows when it must; data is bounded). */
static int buf_replace_front(struct buf *b, size_t n, const void *data, size_t len)
{
	size_t rest = buf_len(b) - n, need = len + rest;

	if (need > b->size) {
		uint8_t *p = malloc(need);

		if (!p)
			return -ENOMEM;
		memcpy(p, data, len);
		memcpy(p + len, b->data + b->start + n, rest);
		free(b->data);
		b->data = p;
		b->size = need;
	} else {
		memmove(b->data + len, b->data + b->start + n, rest);
		memcpy(b->data, data, len);
	}
	b->start = 0;
	b->end = need;
	return 0;
}

static int buf_put(struct buf *b, const void *data, size_t len)
{
	if (buf_room(b) < len)
		return -ENOBUFS;
	memcpy(b->data + b->end, data, len);
	b->end += len;
	return 0;
}

/* ---- connection lifetime and audit -------------------------------------------------------- */

static void conn_report(struct conn *c, enum proxy_event_kind kind, const char *rule,
			const char *reason)
{
	struct proxy_listener *l = c->l;
	struct proxy_event e = {
		.kind = kind,
		.connection = c->id,
		.protocol = proto_names[c->proto],
		.domain = c->verdict.host[0] ? c->verdict.host : NULL,
		.port = c->verdict.port,
		.address = c->address[0] ? c->address : NULL,
		.rule = rule,
		.reason = reason,
		.bytes_up = c->bytes_up,
		.bytes_down = c->bytes_down,
		.duration_usec = now_usec() - c->started,
	};

	if (kind == PROXY_EVENT_ALLOWED)
		c->reported_allowed = true;
	if (kind == PROXY_EVENT_DENIED)
		c->reported_denied = true;
	if (l->audit)
		l->audit(&e, l->userdata);
}

static void listener_resume_accept(struct proxy_listener *l)
{
	if (l->accept_paused && l->n_conns < l->limits.max_connections && l->src &&
	    event_source_set_events(l->src, EPOLLIN) >= 0)
		l->accept_paused = false;
}

/* Close and free c. An allowed connection reports CLOSED with rule and reason. */
static void conn_close(struct conn *c, const char *rule, const char *reason)
{
	struct proxy_listener *l = c->l;

	if (c->reported_allowed)
		conn_report(c, PROXY_EVENT_CLOSED, rule, reason);
	else if (!c->reported_denied && (c->proto != PROTO_NONE || buf_len(&c->up) > 0))
		/* Gave up on before a decision (timeout, client gone, malformed). */
		conn_report(c, PROXY_EVENT_DENIED, rule, reason);

	proxy_query_cancel(c->query);
	event_source_free(c->csrc);
	event_source_free(c->usrc);
	safe_close(c->cfd);
	safe_close(c->ufd);
	buffers_grown -= c->grown;
	free(c->up.data);
	free(c->down.data);
	proxy_rules_unref(c->rules);
	if (c->prev)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	l->n_conns--;
	free(c);
	listener_resume_accept(l);
}

static void conn_close_errno(struct conn *c, const char *side, int error)
{
	char reason[128];

	(void)snprintf(reason, sizeof(reason), "%s: %s", side, strerror(error));
	conn_close(c, "error", reason);
}

/*
 * Refuse: queue answer (a 4xx/5xx response or a SOCKS reply) to the client, report DENIED
 * (unless this is an allowed connection failing later, which reports CLOSED when it ends), then
 * flush, shut down and drain.
 */
static void conn_refuse(struct conn *c, const char *rule, const char *reason, const void *answer,
			size_t len)
{
	proxy_query_cancel(c->query);
	c->query = NULL;
	event_source_free(c->usrc);
	c->usrc = NULL;
	c->uev = 0;
	c->ufd = safe_close(c->ufd);
	if (c->reported_allowed) {
		/* Allowed, then failed (resolving, connecting): that ends it. */
		conn_report(c, PROXY_EVENT_CLOSED, rule, reason);
		c->reported_allowed = false;
		c->reported_denied = true;
	} else
		conn_report(c, PROXY_EVENT_DENIED, rule, reason);
	/* Appended: a SOCKS method reply may still be waiting in front of it. */
	if (buf_alloc(&c->down, c->l->limits.buffer_size) < 0 || buf_put(&c->down, answer, len) < 0)
		return conn_close(c, rule, reason);
	c->state = ST_REFUSING;
	c->drain_until = now_usec() + DRAIN_USEC;
	conn_update(c);
}

static void http_refuse(struct conn *c, unsigned status, const char *rule, const char *reason)
{
	const char *text = status == 400   ? "Bad Request"
			   : status == 403 ? "Forbidden"
			   : status == 431 ? "Request Header Fields Too Large"
			   : status == 502 ? "Bad Gateway"
			   : status == 504 ? "Gateway Timeout"
					   : "Error";
	_cleanup_free_ char *body = strdup_printf("cordon proxy: %s\n", reason);
	_cleanup_free_ char *msg = NULL;

	if (body)
		msg = strdup_printf("HTTP/1.1 %u %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
				    "Content-Length: %zu\r\nConnection: close\r\n"
				    "X-Cordon-Rule: %s\r\n\r\n%s",
				    status, text, strlen(body), rule, body);
	if (!msg)
		return conn_close(c, rule, reason);
	conn_refuse(c, rule, reason, msg, strlen(msg));
}

/* SOCKS5 replies (RFC 1928 §6): the bound address is not disclosed. */
static void socks_reply_bytes(uint8_t code, uint8_t out[10])
{
	const uint8_t r[10] = { 0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0 };

	memcpy(out, r, sizeof(r));
}

static void socks_refuse(struct conn *c, uint8_t code, const char *rule, const char *reason)
{
	uint8_t r[10];

	socks_reply_bytes(code, r);
	conn_refuse(c, rule, reason, r, sizeof(r));
}

/* A refusal in the client's protocol; status for HTTP, code for SOCKS. */
static void refuse(struct conn *c, unsigned status, uint8_t code, const char *rule,
		   const char *reason)
{
	if (c->proto == PROTO_SOCKS5)
		socks_refuse(c, code, rule, reason);
	else
		http_refuse(c, status, rule, reason);
}

/* ---- events registration ------------------------------------------------------------------ */

static int set_events(struct event_source *s, uint32_t *cur, uint32_t want)
{
	if (!s || *cur == want)
		return 0;
	*cur = want;
	return event_source_set_events(s, want);
}

/* Register for what each side can make progress on now; false when epoll refused (c kept). */
static bool conn_register(struct conn *c)
{
	uint32_t cw = 0, uw = 0;

	switch (c->state) {
	case ST_SNIFF:
	case ST_HTTP_HEAD:
	case ST_SOCKS_GREETING:
	case ST_SOCKS_REQUEST:
		cw = EPOLLIN;
		if (buf_len(&c->down) > 0)
			cw |= EPOLLOUT;
		break;
	case ST_RESOLVING:
		break;
	case ST_CONNECTING:
		uw = EPOLLOUT;
		break;
	case ST_TUNNEL:
		/* Registered once (tunnel_start()); tunnel_io() tracks readiness from the edges. */
		cw = uw = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
		break;
	case ST_REFUSING:
		cw = EPOLLOUT;
		break;
	case ST_DRAINING:
		cw = EPOLLIN;
		break;
	}
	return set_events(c->csrc, &c->cev, cw) >= 0 && set_events(c->usrc, &c->uev, uw) >= 0;
}

/* conn_register(), or close c. */
static void conn_update(struct conn *c)
{
	if (!conn_register(c))
		conn_close_errno(c, "epoll", errno);
}

/* ---- socket tuning ------------------------------------------------------------------------ */

/*
 * A connected socket's options for relaying: no Nagle delay (the client's bytes are forwarded
 * as they come), and a fixed send buffer when the peer is this close: a loopback address (every
 * client: the listener is in the sandbox's network namespace; a local upstream), or a handshake
 * round trip under LOCAL_RTT_USEC (another address of this host, a container on a bridge).
 * LOCAL_SNDBUF takes a whole grown relay buffer (PROXY_DEFAULT_BUFFER_MAX) in one write, and
 * per round trip is far more than a tunnel relays. Left to autotuning, a loopback socket's
 * buffer grows to tcp_wmem's maximum since nothing is ever lost; the bytes the peer's window
 * does not take at once wait unsent and are sent as the peer's ACKs open the window, from the
 * peer's CPU while we send from ours, so packets of one connection cross in the per-CPU
 * backlogs of lo (or a veth) and arrive out of order: the receiver queues them out of order and
 * the sender retransmits spuriously (measured with bench/proxy-throughput: ~70 spurious fast
 * retransmits per 1.25 GiB relayed, the receiver's CPU per GiB doubled). Smaller (256 KiB) cost
 * a write per quarter buffer and measured slower (docs/NETWORK.md). Farther peers keep
 * autotuning, which their bandwidth-delay product needs.
 */
#define LOCAL_RTT_USEC 100U
#define LOCAL_SNDBUF (1024 * 1024)

static bool peer_is_local(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct proxy_addr a;
	struct tcp_info ti = { 0 };

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 &&
	    proxy_addr_from_sockaddr((struct sockaddr *)&ss, &a) >= 0 &&
	    proxy_addr_classify(&a) == PROXY_ADDR_LOOPBACK)
		return true;
	sl = sizeof(ti);
	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &sl) == 0 &&
	       sl >= offsetof(struct tcp_info, tcpi_rtt) + sizeof(ti.tcpi_rtt) && ti.tcpi_rtt > 0 &&
	       ti.tcpi_rtt < LOCAL_RTT_USEC;
}

static void relay_sockopts(int fd)
{
	int one = 1, size = LOCAL_SNDBUF;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (peer_is_local(fd))
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

/* ---- upstream ----------------------------------------------------------------------------- */

static void conn_connect_next(struct conn *c);
static void tunnel_start(struct conn *c);

static void upstream_connected(struct conn *c)
{
	relay_sockopts(c->ufd);
	if (buf_alloc(&c->down, c->l->limits.buffer_size) < 0)
		return conn_close_errno(c, "memory", ENOMEM);
	if (c->proto == PROTO_CONNECT) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

		(void)buf_put(&c->down, ok, sizeof(ok) - 1);
	} else if (c->proto == PROTO_SOCKS5) {
		uint8_t r[10];

		socks_reply_bytes(PROXY_SOCKS_OK, r);
		(void)buf_put(&c->down, r, sizeof(r));
	}
	tunnel_start(c);
}

static void conn_connect_failed(struct conn *c, int error)
{
	char reason[PROXY_REASON_MAX];
	uint8_t code = error == ECONNREFUSED ? PROXY_SOCKS_REFUSED
		       : error == ETIMEDOUT  ? PROXY_SOCKS_TTL_EXPIRED
		       : error == EHOSTUNREACH || error == ENETUNREACH
			       ? PROXY_SOCKS_HOST_UNREACHABLE
			       : PROXY_SOCKS_FAILURE;

	(void)snprintf(reason, sizeof(reason), "cannot connect to %s port %u (%s): %s",
		       c->verdict.host, c->verdict.port, c->address, strerror(error));
	refuse(c, 502, code, "connect", reason);
}

static void conn_connect_next(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int r;

	event_source_free(c->usrc);
	c->usrc = NULL;
	c->uev = 0;
	c->ufd = safe_close(c->ufd);
	if (c->i_addr >= c->n_addrs)
		return conn_connect_failed(c, c->connect_error ? c->connect_error : EHOSTUNREACH);

	const struct proxy_addr *a = &c->addrs[c->i_addr++];

	proxy_addr_to_string(a, c->address, sizeof(c->address));
	if (!c->reported_allowed)
		conn_report(c, PROXY_EVENT_ALLOWED, c->verdict.rule, c->verdict.reason);
	len = proxy_addr_to_sockaddr(a, c->verdict.port, &ss);
	c->ufd = socket(a->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	if (c->ufd < 0)
		return conn_close_errno(c, "socket", errno);
	r = event_add_io(c->l->loop, c->ufd, 0, conn_io, c, &c->usrc);
	if (r < 0)
		return conn_close_errno(c, "epoll", -r);
	c->state = ST_CONNECTING;
	if (connect(c->ufd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
		c->connect_error = errno;
		return conn_connect_next(c);
	}
	/* Even an immediate success is reported through EPOLLOUT. */
	conn_update(c);
}

static void upstream_check_connect(struct conn *c)
{
	int error = 0;
	socklen_t len = sizeof(error);

	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &error, &len) < 0)
		error = errno;
	if (error != 0) {
		c->connect_error = error;
		return conn_connect_next(c);
	}
	upstream_connected(c);
}

/* Keep the addresses the verdict accepts; refuse when none is left. */
static void conn_use_addresses(struct conn *c, const struct proxy_addr *addrs, size_t n)
{
	struct proxy_verdict first_refusal = { 0 };
	bool refused = false;

	c->n_addrs = c->i_addr = 0;
	for (size_t i = 0; i < n; i++) {
		struct proxy_verdict v = c->verdict;

		if (proxy_rules_check_address(&v, &addrs[i]))
			c->addrs[c->n_addrs++] = addrs[i];
		else if (!refused) {
			first_refusal = v;
			refused = true;
		}
	}
	if (c->n_addrs == 0) {
		c->verdict = first_refusal;
		return refuse(c, 403, PROXY_SOCKS_NOT_ALLOWED, c->verdict.rule, c->verdict.reason);
	}
	conn_connect_next(c);
}

static void on_resolved(int error, const struct proxy_addr *addrs, size_t n, void *userdata)
{
	struct conn *c = userdata;
	char reason[PROXY_REASON_MAX];

	c->query = NULL;
	if (error != 0) {
		(void)snprintf(reason, sizeof(reason), "cannot resolve %s: %s", c->verdict.host,
			       gai_strerror(error));
		return refuse(c, 502, PROXY_SOCKS_HOST_UNREACHABLE, "resolve", reason);
	}
	conn_use_addresses(c, addrs, n);
}

/* The request named host:port: decide, then resolve or connect. */
static void conn_decide(struct conn *c, const char *host, unsigned port)
{
	struct proxy_listener *l = c->l;
	int r;

	proxy_rules_check(c->rules, host, port, &c->verdict);
	if (!c->verdict.allowed)
		return refuse(c, 403, PROXY_SOCKS_NOT_ALLOWED, c->verdict.rule, c->verdict.reason);
	if (c->verdict.have_addr)
		return conn_use_addresses(c, &c->verdict.addr, 1);

	if (!l->resolver) {
		r = proxy_resolver_new(l->loop, 0, &l->resolver);
		if (r < 0)
			return refuse(c, 502, PROXY_SOCKS_FAILURE, "resolve",
				      "the resolver is unavailable");
	}
	r = proxy_resolve(l->resolver, c->verdict.host, on_resolved, c, &c->query);
	if (r < 0)
		return refuse(c, 502, PROXY_SOCKS_FAILURE, "resolve",
			      "the resolver is unavailable");
	c->state = ST_RESOLVING;
	conn_update(c);
}

/* ---- requests (parsed by proxy-request.c) ------------------------------------------------ */

static void request_refuse(struct conn *c, const struct proxy_request_error *e)
{
	refuse(c, e->status, e->socks_code, e->rule, e->reason);
}

/* The HTTP request head is complete or refused: decide CONNECT, or forward the rewritten head. */
static void http_handle(struct conn *c, size_t limit)
{
	struct proxy_request r;
	struct proxy_request_error e;
	struct proxy_verdict a, b;
	int k = proxy_request_parse_http(c->up.data + c->up.start, buf_len(&c->up), limit, &r, &e);

	if (k == -EAGAIN)
		return conn_update(c);
	if (k == -ENOMEM)
		return conn_close_errno(c, "memory", ENOMEM);
	c->proto = buf_len(&c->up) >= 8 && memcmp(c->up.data + c->up.start, "CONNECT ", 8) == 0
			   ? PROTO_CONNECT
			   : PROTO_HTTP;
	if (k < 0)
		return request_refuse(c, &e);
	if (r.kind == PROXY_REQUEST_CONNECT) {
		/* Anything after the head (an early TLS ClientHello) stays and is forwarded. */
		buf_consume(&c->up, r.consumed);
		return conn_decide(c, r.host, r.port);
	}
	if (r.have_host_header) {
		/* Compare canonical forms: case, trailing dot and literal spelling aside. */
		proxy_rules_check(c->rules, r.host, r.port, &a);
		proxy_rules_check(c->rules, r.host_header, r.host_header_port, &b);
		if (!streq(a.host, b.host) || r.port != r.host_header_port) {
			proxy_request_done(&r);
			return http_refuse(c, 400, "hostHeader",
					   "the Host header does not match the request URI");
		}
	}
	k = buf_replace_front(&c->up, r.consumed, r.head, r.head_len);
	proxy_request_done(&r);
	if (k < 0)
		return conn_close_errno(c, "memory", ENOMEM);
	conn_decide(c, r.host, r.port);
}

static void socks_handle(struct conn *c)
{
	static const uint8_t no_auth[2] = { 0x05, 0x00 }, none[2] = { 0x05, 0xff };
	struct proxy_request r;
	struct proxy_request_error e;
	size_t used;
	int k;

	if (c->state == ST_SOCKS_GREETING) {
		k = proxy_request_parse_socks_greeting(c->up.data + c->up.start, buf_len(&c->up),
						       &used, &e);
		if (k == -EAGAIN)
			return conn_update(c);
		if (k < 0)
			return conn_refuse(c, e.rule, e.reason, none, sizeof(none));
		buf_consume(&c->up, used);
		if (buf_alloc(&c->down, c->l->limits.buffer_size) < 0)
			return conn_close_errno(c, "memory", ENOMEM);
		(void)buf_put(&c->down, no_auth, sizeof(no_auth));
		c->state = ST_SOCKS_REQUEST;
	}
	k = proxy_request_parse_socks(c->up.data + c->up.start, buf_len(&c->up), &r, &e);
	if (k == -EAGAIN)
		return conn_update(c);
	if (k < 0)
		return request_refuse(c, &e);
	buf_consume(&c->up, r.consumed);
	conn_decide(c, r.host, r.port);
}

/* ---- I/O ---------------------------------------------------------------------------------- */

/* Read from fd into b; returns bytes read, 0 at EOF, -EAGAIN or another -errno. */
static ssize_t read_into(int fd, struct buf *b)
{
	size_t room = buf_room(b);
	ssize_t n;

	if (room == 0)
		return -ENOBUFS;
	n = read(fd, b->data + b->end, room);
	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	b->end += (size_t)n;
	return n;
}

static ssize_t write_from(int fd, struct buf *b)
{
	ssize_t n;

	if (buf_len(b) == 0)
		return 0;
	n = send(fd, b->data + b->start, buf_len(b), MSG_NOSIGNAL);
	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	buf_consume(b, (size_t)n);
	return n;
}

/* Bytes from the client before the request is complete. */
static void conn_read_request(struct conn *c)
{
	size_t limit = c->up.size < PROXY_HEAD_MAX ? c->up.size : PROXY_HEAD_MAX;
	ssize_t n = read_into(c->cfd, &c->up);

	if (n == -EAGAIN)
		return;
	if (n == -ENOBUFS)
		return refuse(c, 431, PROXY_SOCKS_FAILURE, "request", "request head too large");
	if (n < 0)
		return conn_close_errno(c, "client", (int)-n);
	if (n == 0)
		return conn_close(c, "request", "the client closed before completing its request");
	c->last_active = now_usec();

	if (c->state == ST_SNIFF) {
		uint8_t b = c->up.data[c->up.start];

		if (b == 0x05) {
			c->proto = PROTO_SOCKS5;
			c->state = ST_SOCKS_GREETING;
		} else if (b >= 'A' && b <= 'Z') {
			c->state = ST_HTTP_HEAD;
		} else {
			c->proto = PROTO_NONE;
			conn_report(c, PROXY_EVENT_DENIED, "request",
				    "unknown protocol (not HTTP or SOCKS5)");
			return conn_close(c, "request", NULL);
		}
	}
	if (c->state == ST_HTTP_HEAD)
		return http_handle(c, limit);
	socks_handle(c);
}

/*
 * Pass on a half-close once everything before it has been delivered; close c when both
 * directions have ended. Returns false when c was closed.
 */
static bool conn_pass_eof(struct conn *c)
{
	size_t up_pending = buf_len(&c->up);
	size_t down_pending = buf_len(&c->down);

	if (c->c_eof && up_pending == 0 && !c->u_shut) {
		(void)shutdown(c->ufd, SHUT_WR);
		c->u_shut = true;
	}
	if (c->u_eof && down_pending == 0 && !c->c_shut) {
		(void)shutdown(c->cfd, SHUT_WR);
		c->c_shut = true;
	}
	if (c->c_shut && c->u_shut) {
		conn_close(c, "eof", "both sides finished");
		return false;
	}
	return true;
}

/* The socket error behind EPOLLERR on fd; closes c. */
static void conn_close_sockerr(struct conn *c, int fd)
{
	int error = 0;
	socklen_t len = sizeof(error);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) < 0 || error == 0)
		error = EPIPE;
	conn_close_errno(c, fd == c->cfd ? "client" : "upstream", error);
}

/*
 * A full buffer means bulk traffic: let it grow once to limits.buffer_max, within the process's
 * budget. Refused or not, the buffer keeps working.
 */
static void buf_grow(struct conn *c, struct buf *b)
{
	size_t want = c->l->limits.buffer_max;
	uint8_t *p;

	if (want <= b->size || buffers_grown + (want - b->size) > PROXY_BUFFER_GROWTH_BUDGET)
		return;
	p = realloc(b->data, want);
	if (!p)
		return;
	c->grown += want - b->size;
	buffers_grown += want - b->size;
	b->data = p;
	b->size = want;
}

/*
 * One direction of a tunnel: empty its buffer into out, fill it from in, until neither moves.
 * On return either in is drained (EAGAIN, or at EOF) and the buffer sent as far as out takes,
 * or the buffer is full and out is too (its flag cleared): its EPOLLOUT edge resumes the loop,
 * so no edge can be missed. Returns false when c was closed.
 */
static bool tunnel_move(struct conn *c, bool from_client)
{
	int in = from_client ? c->cfd : c->ufd, out = from_client ? c->ufd : c->cfd;
	struct buf *b = from_client ? &c->up : &c->down;
	bool *readable = from_client ? &c->c_in : &c->u_in;
	bool *writable = from_client ? &c->u_out : &c->c_out;
	bool *eof = from_client ? &c->c_eof : &c->u_eof;
	uint64_t *bytes = from_client ? &c->bytes_up : &c->bytes_down;
	bool moved = false;
	ssize_t n;

	for (;;) {
		bool progress = false;

		if (buf_len(b) > 0 && *writable) {
			n = write_from(out, b);
			if (n > 0) {
				size_t own = from_client ? 0 : c->answer_left;

				own = own < (size_t)n ? own : (size_t)n;
				c->answer_left -= own;
				*bytes += (uint64_t)n - own;
				progress = true;
			} else if (n == -EAGAIN)
				*writable = false;
			else {
				conn_close_errno(c, from_client ? "upstream" : "client",
						 n < 0 ? (int)-n : EPIPE);
				return false;
			}
		}
		if (!*eof && *readable && buf_room(b) > 0) {
			n = read_into(in, b);
			if (n > 0) {
				progress = true;
				if (buf_len(b) == b->size)
					buf_grow(c, b);
			} else if (n == 0)
				*eof = true;
			else if (n == -EAGAIN)
				*readable = false;
			else {
				conn_close_errno(c, from_client ? "client" : "upstream", (int)-n);
				return false;
			}
		}
		if (!progress)
			break;
		moved = true;
	}
	if (moved)
		c->last_active = now_usec();
	return true;
}

/* An edge on fd of a tunnel. */
static void tunnel_io(struct conn *c, int fd, uint32_t revents)
{
	if (revents & EPOLLERR)
		return conn_close_sockerr(c, fd);
	if (revents & (EPOLLIN | EPOLLRDHUP | EPOLLHUP))
		*(fd == c->cfd ? &c->c_in : &c->u_in) = true;
	if (revents & EPOLLOUT)
		*(fd == c->cfd ? &c->c_out : &c->u_out) = true;
	if (tunnel_move(c, true) && tunnel_move(c, false))
		(void)conn_pass_eof(c);
}

/*
 * The upstream is connected: tunnel. Both sockets count as ready until they say otherwise, so
 * the answer, a rewritten head or early data go at once rather than after another round of
 * epoll.
 */
static void tunnel_start(struct conn *c)
{
	c->state = ST_TUNNEL;
	c->last_active = now_usec();
	c->c_in = c->u_in = c->c_out = c->u_out = true;
	/* What is towards the client now is ours (the 200, the SOCKS replies), not the upstream's. */
	c->answer_left = buf_len(&c->down);
	if (!conn_register(c))
		return conn_close_errno(c, "epoll", errno);
	if (tunnel_move(c, true) && tunnel_move(c, false))
		(void)conn_pass_eof(c);
}

static int conn_io(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct conn *c = userdata;
	ssize_t n;

	switch (c->state) {
	case ST_SNIFF:
	case ST_HTTP_HEAD:
	case ST_SOCKS_GREETING:
	case ST_SOCKS_REQUEST:
		if (revents & EPOLLOUT) {
			n = write_from(c->cfd, &c->down);
			if (n < 0 && n != -EAGAIN)
				return conn_close_errno(c, "client", (int)-n), 0;
		}
		if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))
			conn_read_request(c);
		else
			conn_update(c);
		return 0;
	case ST_RESOLVING:
	case ST_CONNECTING:
		/* The client is not read meanwhile: only EPOLLHUP/EPOLLERR come from it. */
		if (fd == c->cfd) {
			if (revents & (EPOLLHUP | EPOLLERR))
				return conn_close(c, "error", "the client went away during set-up"),
				       0;
			return 0;
		}
		upstream_check_connect(c);
		return 0;
	case ST_TUNNEL:
		tunnel_io(c, fd, revents);
		return 0;
	case ST_REFUSING:
		n = write_from(c->cfd, &c->down);
		if (n < 0 && n != -EAGAIN)
			return conn_close(c, "refused", NULL), 0;
		if (buf_len(&c->down) == 0) {
			(void)shutdown(c->cfd, SHUT_WR);
			c->state = ST_DRAINING;
		}
		conn_update(c);
		return 0;
	case ST_DRAINING: {
		uint8_t sink[4096];

		n = read(c->cfd, sink, sizeof(sink));
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return conn_close(c, "refused", NULL), 0;
		return 0;
	}
	}
	return 0;
}

/* ---- listener ----------------------------------------------------------------------------- */

static void conn_new(struct proxy_listener *l, int fd)
{
	struct conn *c = calloc(1, sizeof(*c));
	int r;

	if (!c || buf_alloc(&c->up, l->limits.buffer_size) < 0) {
		if (c)
			free(c);
		safe_close(fd);
		return;
	}
	relay_sockopts(fd);
	c->l = l;
	c->id = ++l->next_id;
	c->cfd = fd;
	c->ufd = -1;
	c->started = c->last_active = now_usec();
	c->rules = proxy_rules_ref(l->rules);
	c->next = l->conns;
	if (l->conns)
		l->conns->prev = c;
	l->conns = c;
	l->n_conns++;
	r = event_add_io(l->loop, fd, EPOLLIN, conn_io, c, &c->csrc);
	if (r < 0)
		return conn_close(c, "error", "epoll");
	c->cev = EPOLLIN;
}

static int listener_io(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct proxy_listener *l = userdata;

	for (unsigned i = 0; i < ACCEPT_BATCH; i++) {
		int cfd;

		if (l->n_conns >= l->limits.max_connections) {
			/* The backlog holds the rest until a connection ends. */
			if (event_source_set_events(l->src, 0) >= 0)
				l->accept_paused = true;
			return 0;
		}
		cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* Out of fds: pause until the sweep timer, not spin. */
				if (event_source_set_events(l->src, 0) >= 0)
					l->accept_paused = true;
				return -errno;
			}
			return 0; /* EAGAIN, ECONNABORTED, … */
		}
		conn_new(l, cfd);
	}
	return 0;
}

static int listener_sweep(struct event_source *s, void *userdata)
{
	struct proxy_listener *l = userdata;
	uint64_t now = now_usec();
	char reason[128];

	for (struct conn *c = l->conns, *next; c; c = next) {
		next = c->next;
		if (c->state == ST_TUNNEL) {
			if (now - c->last_active >= l->limits.idle_timeout_usec) {
				(void)snprintf(reason, sizeof(reason), "no data for %llu ms",
					       (unsigned long long)(l->limits.idle_timeout_usec /
								    1000ULL));
				conn_close(c, "idle", reason);
			}
		} else if (c->state == ST_REFUSING || c->state == ST_DRAINING) {
			if (now >= c->drain_until)
				conn_close(c, "refused", NULL);
		} else if (now - c->started >= l->limits.setup_timeout_usec) {
			(void)snprintf(
				reason, sizeof(reason), "the request was not set up within %llu ms",
				(unsigned long long)(l->limits.setup_timeout_usec / 1000ULL));
			if (c->state == ST_RESOLVING || c->state == ST_CONNECTING)
				refuse(c, 504, PROXY_SOCKS_TTL_EXPIRED, "timeout", reason);
			else
				conn_close(c, "timeout", reason);
		}
	}
	listener_resume_accept(l);
	return 0;
}

int proxy_listener_new(struct event_loop *loop, int listen_fd, struct proxy_rules *rules,
		       const struct proxy_limits *limits, proxy_event_fn audit, void *userdata,
		       struct proxy_listener **ret)
{
	struct proxy_listener *l;
	uint64_t sweep;
	int r;

	l = calloc(1, sizeof(*l));
	if (!l) {
		safe_close(listen_fd);
		return -ENOMEM;
	}
	l->loop = loop;
	l->fd = listen_fd;
	l->rules = proxy_rules_ref(rules);
	l->audit = audit;
	l->userdata = userdata;
	if (limits)
		l->limits = *limits;
	else
		proxy_limits_default(&l->limits);
	if (l->limits.max_connections == 0 || l->limits.buffer_size < 512 ||
	    l->limits.idle_timeout_usec == 0 || l->limits.setup_timeout_usec == 0) {
		r = -EINVAL;
		goto fail;
	}
	r = fd_set_nonblock(listen_fd, true);
	if (r < 0)
		goto fail;
	r = event_add_io(loop, listen_fd, EPOLLIN, listener_io, l, &l->src);
	if (r < 0)
		goto fail;
	sweep = l->limits.idle_timeout_usec < l->limits.setup_timeout_usec
			? l->limits.idle_timeout_usec
			: l->limits.setup_timeout_usec;
	sweep /= 4;
	sweep = sweep < SWEEP_MIN_USEC	 ? SWEEP_MIN_USEC
		: sweep > SWEEP_MAX_USEC ? SWEEP_MAX_USEC
					 : sweep;
	r = event_add_timer(loop, sweep, true, listener_sweep, l, &l->sweep);
	if (r < 0)
		goto fail;
	*ret = l;
	return 0;
fail:
	proxy_listener_free(l);
	return r;
}

void proxy_listener_update_rules(struct proxy_listener *l, struct proxy_rules *rules)
{
	proxy_rules_ref(rules);
	proxy_rules_unref(l->rules);
	l->rules = rules;
}

const struct proxy_rules *proxy_listener_rules(const struct proxy_listener *l)
{
	return l->rules;
}

unsigned proxy_listener_connections(const struct proxy_listener *l)
{
	return l->n_conns;
}

struct proxy_listener *proxy_listener_free(struct proxy_listener *l)
{
	if (!l)
		return NULL;
	event_source_free(l->src);
	l->src = NULL;
	event_source_free(l->sweep);
	while (l->conns)
		conn_close(l->conns, "shutdown", "the sandbox's proxy was stopped");
	proxy_resolver_free(l->resolver);
	safe_close(l->fd);
	proxy_rules_unref(l->rules);
	free(l);
	return NULL;
}
