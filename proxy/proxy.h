/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The allowed-domains proxy of network mode "proxy" (docs/NETWORK.md). launcherd creates a
 * listening TCP socket inside the sandbox's network namespace and passes it out; the controller
 * serves it from its own event loop: HTTP CONNECT, plain HTTP absolute-URI forwarding and SOCKS5
 * (CONNECT, domain names), each connection decided by domain against a rule set built from the
 * policy's network section. Nothing runs inside the sandbox.
 *
 * Four parts:
 *   proxy-rules.c    the decision (pure): names, wildcards, ports, IP literals, address ranges,
 *                    resolve pins; every verdict names the rule that made it.
 *   proxy-request.c  the request parsers (pure, fuzzed): HTTP request head (CONNECT authority or
 *                    absolute URI, rewritten to origin form), SOCKS5 greeting and request.
 *   proxy-resolve.c  name resolution off the event loop (a few detached resolver threads that
 *                    report back through an eventfd).
 *   proxy-engine.c   the listener and the per-connection state machine: sniffing, the three
 *                    protocols, splicing with bounded buffers and backpressure, limits, audit.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <jansson.h>

#include "common/cleanup.h"
#include "common/event.h"

struct policy;

/* ---- rules (proxy-rules.c) ---------------------------------------------------------------- */

#define PROXY_NAME_MAX 253
#define PROXY_REASON_MAX 512

/* A rule set: immutable once built, reference-counted (a connection keeps the rules it was
 * decided with; a live update builds a new set). */
struct proxy_rules;

/*
 * Build a rule set. allow/deny: domain patterns as in docs/POLICY.md ("name", "*.suffix", an IPv4
 * literal, or "[v6]", each optionally ":port"; upper case folded). ports: the ports a bare allow
 * entry may use (n_ports 0: 80 and 443). resolve: pins, "name=address" (every port, the policy's
 * form) or "name:port:address" (curl's --resolve form, that port only). A bad entry fails with
 * -EINVAL and *reterr_entry pointing at it (borrowed from the caller's arrays).
 */
int proxy_rules_new(char *const *allow, char *const *deny, const unsigned *ports, size_t n_ports,
		    char *const *resolve, struct proxy_rules **ret, const char **reterr_entry);
/* The rules of a policy's network section (any mode; the lists are empty outside "proxy"). */
int proxy_rules_from_policy(const struct policy *p, struct proxy_rules **ret);
struct proxy_rules *proxy_rules_ref(struct proxy_rules *r);
struct proxy_rules *proxy_rules_unref(struct proxy_rules *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct proxy_rules *, proxy_rules_unref);
#define _cleanup_proxy_rules_ _cleanup_(proxy_rules_unrefp)

/*
 * Live changes (`cordon net allow|deny`): a copy of r with pattern added to allowDomains (and an
 * identical denyDomains entry removed) or added to denyDomains (and an identical allowDomains
 * entry removed). Allowing widens the rules and denying narrows them; the caller enforces who
 * may do which. -EINVAL for a bad pattern.
 */
int proxy_rules_allow(const struct proxy_rules *r, const char *pattern, struct proxy_rules **ret);
int proxy_rules_deny(const struct proxy_rules *r, const char *pattern, struct proxy_rules **ret);
/* Canonicalize a domain pattern (the syntax proxy_rules_new() takes); -EINVAL if it is not one. */
int proxy_pattern_canonicalize(const char *in, char **ret);

/* {"allowDomains": […], "denyDomains": […], "allowPorts": […], "resolve": […]} */
int proxy_rules_to_json(const struct proxy_rules *r, json_t **ret);

/* An IPv4 or IPv6 address (no port). */
struct proxy_addr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t bytes[16];
};

int proxy_addr_from_sockaddr(const struct sockaddr *sa, struct proxy_addr *ret);
/* Fill a sockaddr_storage for addr:port; returns its length. */
socklen_t proxy_addr_to_sockaddr(const struct proxy_addr *a, unsigned port,
				 struct sockaddr_storage *ret);
/* "192.0.2.1", "2001:db8::1" into buf (INET6_ADDRSTRLEN bytes suffice). */
const char *proxy_addr_to_string(const struct proxy_addr *a, char *buf, size_t size);

enum proxy_addr_class {
	PROXY_ADDR_PUBLIC,
	PROXY_ADDR_LOOPBACK, /* 127/8, ::1 */
	PROXY_ADDR_PRIVATE, /* 10/8, 172.16/12, 192.168/16, fec0::/10 (site-local), 64:ff9b:1::/48 */
	PROXY_ADDR_LINK_LOCAL,	/* 169.254/16, fe80::/10 */
	PROXY_ADDR_CGNAT,	/* 100.64/10 */
	PROXY_ADDR_ULA,		/* fc00::/7 */
	PROXY_ADDR_RESERVED,	/* documentation, benchmarking, 240/4, IETF and other special use */
	PROXY_ADDR_UNSPECIFIED, /* 0/8, :: */
	PROXY_ADDR_MULTICAST,	/* 224/4, ff00::/8 */
	PROXY_ADDR_BROADCAST,	/* 255.255.255.255 */
};

/*
 * Classify an address. IPv6 forms that embed an IPv4 address (v4-mapped ::ffff:0:0/96,
 * v4-compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16) are classified by the embedded address.
 */
enum proxy_addr_class proxy_addr_classify(const struct proxy_addr *a);
const char *proxy_addr_class_to_string(enum proxy_addr_class c);

/* How the destination named by a client was written. */
enum proxy_host_kind {
	PROXY_HOST_NAME,
	PROXY_HOST_IPV4,
	PROXY_HOST_IPV6,
};

/*
 * A verdict. rule is a short, stable code ("allowDomains", "denyDomains", "allowPorts",
 * "ipLiteral", "hostName", "address", "privateAddress", "port"); reason a sentence naming the
 * entry that decided (e.g. `denied by denyDomains "*.evil.test"`).
 */
struct proxy_verdict {
	bool allowed;
	const char *rule;
	char reason[PROXY_REASON_MAX];
	char host[PROXY_NAME_MAX + 3]; /* canonical: lower case, no trailing dot, v6 in brackets */
	enum proxy_host_kind kind;
	unsigned port;
	/* Where to connect when known before DNS: the literal itself or a resolve pin. */
	bool have_addr;
	struct proxy_addr addr;
	bool pinned;
	/* A pin or a listed IP literal: loopback and private destinations are permitted. */
	bool explicit_address;
};

/*
 * Decide host:port by name: host syntax, denyDomains (wins), allowDomains with their ports and
 * allowPorts, IP literals (only when listed), then the pin. An allowed verdict without have_addr
 * needs DNS; every address that DNS (or the pin) yields must then pass proxy_rules_check_address().
 */
void proxy_rules_check(const struct proxy_rules *r, const char *host, unsigned port,
		       struct proxy_verdict *ret);
/* Is the destination address acceptable for this verdict? Sets rule/reason when it is not. */
bool proxy_rules_check_address(struct proxy_verdict *v, const struct proxy_addr *a);

/* ---- request parsing (proxy-request.c) ----------------------------------------------------- */

/* SOCKS5 reply codes (RFC 1928 §6). */
#define PROXY_SOCKS_OK 0x00
#define PROXY_SOCKS_FAILURE 0x01
#define PROXY_SOCKS_NOT_ALLOWED 0x02
#define PROXY_SOCKS_HOST_UNREACHABLE 0x04
#define PROXY_SOCKS_REFUSED 0x05
#define PROXY_SOCKS_TTL_EXPIRED 0x06
#define PROXY_SOCKS_BAD_COMMAND 0x07
#define PROXY_SOCKS_BAD_ADDRESS_TYPE 0x08

enum proxy_request_kind {
	PROXY_REQUEST_CONNECT, /* HTTP CONNECT host:port */
	PROXY_REQUEST_HTTP,    /* plain HTTP, absolute http:// URI */
	PROXY_REQUEST_SOCKS5,  /* SOCKS5 CONNECT */
};

/* A refused request: the HTTP status (400, 431) or SOCKS5 reply code, the rule and a reason. */
struct proxy_request_error {
	unsigned status;
	uint8_t socks_code;
	const char *rule;   /* "request", "hostHeader", "hostName" */
	const char *reason; /* static */
};

struct proxy_request {
	enum proxy_request_kind kind;
	char host[PROXY_NAME_MAX + 3]; /* as the client wrote it (proxy_rules_check canonicalizes) */
	unsigned port;		       /* HTTP 1–65535; SOCKS5 0–65535 (the rules refuse 0) */
	size_t consumed;	       /* input bytes the request took; what follows is payload */
	/* PROXY_REQUEST_HTTP: the head for the upstream, in origin form, hop-by-hop and proxy
	 * headers dropped, Host added when absent, "Connection: close" (malloc'd, not NUL-ended). */
	char *head;
	size_t head_len;
	/* PROXY_REQUEST_HTTP: the Host header, when sent; the caller checks that its canonical form
	 * names the URI's host and port. */
	bool have_host_header;
	char host_header[PROXY_NAME_MAX + 3];
	unsigned host_header_port;
};

void proxy_request_done(struct proxy_request *r);

/*
 * Parse an HTTP proxy request head from the first len bytes a client sent: the request line
 * (CONNECT host:port, or any method with an absolute http:// URI) and headers, lines ending in
 * CRLF or LF, up to the blank line, at most head_max bytes. 0: *ret filled (free with
 * proxy_request_done()); -EAGAIN: the head is not complete yet; -EBADMSG: refused, *reterr says
 * why; -ENOMEM.
 */
int proxy_request_parse_http(const uint8_t *data, size_t len, size_t head_max,
			     struct proxy_request *ret, struct proxy_request_error *reterr);
/*
 * SOCKS5 greeting (VER NMETHODS METHODS…). 0: the client offers "no authentication", the
 * greeting took *ret_consumed bytes; -EAGAIN; -EBADMSG (answer 05 ff).
 */
int proxy_request_parse_socks_greeting(const uint8_t *data, size_t len, size_t *ret_consumed,
				       struct proxy_request_error *reterr);
/* SOCKS5 request (VER CMD RSV ATYP DST.ADDR DST.PORT), CONNECT only. As above. */
int proxy_request_parse_socks(const uint8_t *data, size_t len, struct proxy_request *ret,
			      struct proxy_request_error *reterr);

/* ---- the listener (proxy-engine.c) -------------------------------------------------------- */

enum proxy_event_kind {
	PROXY_EVENT_DENIED,  /* a request refused (the connection is closed after the answer) */
	PROXY_EVENT_ALLOWED, /* a request allowed: the upstream connection is being opened */
	PROXY_EVENT_CLOSED,  /* an allowed connection ended: bytes, duration, why it ended */
};

/* What the audit callback is given; every string is borrowed for the call only. */
struct proxy_event {
	enum proxy_event_kind kind;
	uint64_t connection;  /* per-listener sequence number, ties ALLOWED to CLOSED */
	const char *protocol; /* "connect", "http", "socks5", or NULL before it was recognized */
	const char *domain;   /* canonical host as requested, or NULL */
	unsigned port;
	const char *address; /* the upstream address used, or NULL */
	const char *rule;    /* see struct proxy_verdict; for CLOSED "eof", "idle", "error"… */
	const char *reason;
	uint64_t bytes_up;   /* client → upstream, payload only (not the request head) */
	uint64_t bytes_down; /* upstream → client */
	uint64_t duration_usec;
};

const char *proxy_event_kind_to_string(enum proxy_event_kind k);
/* The event as the JSON fields the controller emits with controller_event(c, "net", …). */
json_t *proxy_event_to_json(const struct proxy_event *e);

typedef void (*proxy_event_fn)(const struct proxy_event *e, void *userdata);

struct proxy_limits {
	unsigned max_connections;    /* concurrent, per listener; accepting pauses at the limit */
	uint64_t idle_timeout_usec;  /* no byte either way for this long closes a connection */
	uint64_t setup_timeout_usec; /* request head, resolution and connect must finish in this */
	size_t buffer_size;	     /* per direction and connection; also bounds a request head */
	/*
	 * A tunnel's buffer that bulk traffic fills grows once to buffer_max (fewer, larger reads
	 * and writes: less CPU per byte) while all buffers grown by this process stay within
	 * PROXY_BUFFER_GROWTH_BUDGET. At most buffer_size: buffers never grow.
	 */
	size_t buffer_max;
};

#define PROXY_DEFAULT_MAX_CONNECTIONS 128U
#define PROXY_DEFAULT_IDLE_TIMEOUT_USEC (300ULL * 1000000ULL)
#define PROXY_DEFAULT_SETUP_TIMEOUT_USEC (30ULL * 1000000ULL)
#define PROXY_DEFAULT_BUFFER_SIZE (64U * 1024U)
#define PROXY_DEFAULT_BUFFER_MAX (1024U * 1024U)
/* What grown buffers of the whole process (every listener, every sandbox) may add up to. */
#define PROXY_BUFFER_GROWTH_BUDGET (16U * 1024U * 1024U)
#define PROXY_HEAD_MAX (16U * 1024U) /* a request head longer than this is refused (431) */

void proxy_limits_default(struct proxy_limits *ret);

struct proxy_listener;

/*
 * Serve listen_fd (a listening TCP socket, made non-blocking here; the listener takes ownership
 * and closes it) on loop with rules (a reference is taken). audit gets every decision. limits
 * NULL: the defaults.
 */
int proxy_listener_new(struct event_loop *loop, int listen_fd, struct proxy_rules *rules,
		       const struct proxy_limits *limits, proxy_event_fn audit, void *userdata,
		       struct proxy_listener **ret);
/* New connections are decided with rules from now on; existing ones are unaffected. */
void proxy_listener_update_rules(struct proxy_listener *l, struct proxy_rules *rules);
/* The rules new connections get (borrowed). */
const struct proxy_rules *proxy_listener_rules(const struct proxy_listener *l);
/* Live connections (accepted, not yet closed). */
unsigned proxy_listener_connections(const struct proxy_listener *l);
/* Close every connection (each allowed one reports CLOSED with rule "shutdown") and the listener. */
struct proxy_listener *proxy_listener_free(struct proxy_listener *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct proxy_listener *, proxy_listener_free);
