/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The proxy's request parsers (proxy/proxy-request.c): what each accepts and how it rewrites
 * it, and every refusal with its status, rule and reason. tests/fuzz/fuzz-proxy-request.c checks
 * the invariants on arbitrary bytes; this file pins the verdicts.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/util.h"
#include "proxy/proxy.h"
#include "tests/tap.h"

/* An HTTP head that must parse: kind, host, port, and for plain HTTP the rewritten head. */
static void http_ok(const char *in, enum proxy_request_kind kind, const char *host, unsigned port,
		    const char *head)
{
	struct proxy_request r = { 0 };
	struct proxy_request_error e = { 0 };
	int k = proxy_request_parse_http((const uint8_t *)in, strlen(in), PROXY_HEAD_MAX, &r, &e);

	if (!is_int(0, k, "parses: %.*s", (int)strcspn(in, "\r\n"), in)) {
		diag("refused: %u %s: %s", e.status, e.rule, e.reason);
		return;
	}
	ok(r.kind == kind && streq(r.host, host) && r.port == port, "… %s port %u", host, port);
	if (head) {
		_cleanup_free_ char *got = strndup(r.head, r.head_len);

		is_str(head, got, "… rewritten head");
	}
	proxy_request_done(&r);
}

static void http_refused(const char *in, size_t len, size_t head_max, unsigned status,
			 const char *rule, const char *reason)
{
	struct proxy_request r = { 0 };
	struct proxy_request_error e = { 0 };
	int k = proxy_request_parse_http((const uint8_t *)in, len, head_max, &r, &e);

	if (!is_int(-EBADMSG, k, "refused: %s", reason))
		return proxy_request_done(&r);
	ok(e.status == status && streq(e.rule, rule) && streq(e.reason, reason), "… %u %s", status,
	   rule);
}

static void socks(const char *what, const void *in, size_t len, int want, const char *host,
		  unsigned port, uint8_t code)
{
	struct proxy_request r = { 0 };
	struct proxy_request_error e = { 0 };
	int k = proxy_request_parse_socks(in, len, &r, &e);

	is_int(want, k, "SOCKS5 %s", what);
	if (want == 0 && k == 0)
		ok(streq(r.host, host) && r.port == port && r.consumed == len, "… %s port %u", host,
		   port);
	if (want == -EBADMSG && k == want)
		is_int(code, e.socks_code, "… reply %u", code);
}

/* HTTP heads refused: 400 for what is malformed, and for what the upstream could read
 * differently from the proxy (NUL, a bare CR, folding, a space before the colon). */
#define C(in, ...)                              \
	{                                       \
		in, sizeof(in) - 1, __VA_ARGS__ \
	}
static const struct refused {
	const char *in;
	size_t len; /* NUL bytes inside included */
	unsigned status;
	const char *rule, *reason;
} refused[] = {
	C("GET /index.html HTTP/1.1\r\n\r\n", 400, "request",
	  "not a proxy request (expected an absolute http:// URI)"),
	C("GET https://a.example.test/ HTTP/1.1\r\n\r\n", 400, "request",
	  "https:// URLs need CONNECT"),
	C("CONNECT a.example.test HTTP/1.1\r\n\r\n", 400, "request", "CONNECT needs host:port"),
	C("CONNECT a.example.test:0 HTTP/1.1\r\n\r\n", 400, "request", "malformed CONNECT target"),
	C("GET http://a.example.test:+80/ HTTP/1.1\r\n\r\n", 400, "request",
	  "malformed URI authority"),
	C("GET http://u:p@a.example.test/ HTTP/1.1\r\n\r\n", 400, "request",
	  "user information in the URI is not supported"),
	C("GET http://a.example.test/ HTTP/2.0\r\n\r\n", 400, "request",
	  "unsupported HTTP version"),
	C("GET  http://a.example.test/ HTTP/1.1\r\n\r\n", 400, "request", "malformed request line"),
	C("G(T http://a.example.test/ HTTP/1.1\r\n\r\n", 400, "request",
	  "malformed request method"),
	C("GET http://a.example.test/ HTTP/1.1\r\nX: 1\0Host: evil.test\r\n\r\n", 400, "request",
	  "NUL byte in the request head"),
	C("GET http://a.example.test/ HTTP/1.1\r\nX: 1\rHost: evil.test\r\n\r\n", 400, "request",
	  "malformed line ending"),
	C("GET http://a.example.test/ HTTP/1.1\r\nHost : evil.test\r\n\r\n", 400, "request",
	  "malformed header line"),
	C("GET http://a.example.test/ HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n", 400, "request",
	  "malformed header line"),
	C("GET http://a.example.test/ HTTP/1.1\r\nHost: a.example.test\r\nhost: b\r\n\r\n", 400,
	  "hostHeader", "more than one Host header"),
	C("GET http://a.example.test/ HTTP/1.1\r\nHost: a:b:c\r\n\r\n", 400, "hostHeader",
	  "malformed Host header"),
};
#undef C

/* The literal's length, NUL bytes inside included. */
#define SOCKS(what, in, ...) socks(what, in, sizeof(in) - 1, __VA_ARGS__)

int main(void)
{
	struct proxy_request_error e;
	const char *pad;
	size_t used;

	plan_lazy();

	http_ok("CONNECT A.Example.Test:443 HTTP/1.1\r\nHost: a.example.test:443\r\n\r\n",
		PROXY_REQUEST_CONNECT, "A.Example.Test", 443, NULL);
	http_ok("CONNECT [2001:db8::1]:8443 HTTP/1.0\n\n", PROXY_REQUEST_CONNECT, "[2001:db8::1]",
		8443, NULL);
	http_ok("GET http://a.example.test:8080/p?q=1 HTTP/1.1\r\nHost: a.example.test:8080\r\n"
		"Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\nTE: trailers\r\n"
		"Accept: */*\r\n\r\n",
		PROXY_REQUEST_HTTP, "a.example.test", 8080,
		"GET /p?q=1 HTTP/1.1\r\nHost: a.example.test:8080\r\nAccept: */*\r\n"
		"Connection: close\r\n\r\n");
	http_ok("POST http://a.example.test?x HTTP/1.0\nContent-Length: 0\n\n", PROXY_REQUEST_HTTP,
		"a.example.test", 80,
		"POST /?x HTTP/1.0\r\nContent-Length: 0\r\nHost: a.example.test\r\n"
		"Connection: close\r\n\r\n");

	/* A head whose blank line has not arrived, and one that is too long. */
	is_int(-EAGAIN,
	       proxy_request_parse_http((const uint8_t *)"GET http://a.exa", 16, PROXY_HEAD_MAX,
					&(struct proxy_request){ 0 }, &e),
	       "an incomplete head asks for more");
	pad = "GET http://a.example.test/ HTTP/1.1\r\nX-Pad: aaaaaaaaaaaaaaaa";
	http_refused(pad, strlen(pad), 32, 431, "request", "request head too large");

	for (size_t i = 0; i < ELEMENTSOF(refused); i++)
		http_refused(refused[i].in, refused[i].len, PROXY_HEAD_MAX, refused[i].status,
			     refused[i].rule, refused[i].reason);

	is_int(0,
	       proxy_request_parse_socks_greeting((const uint8_t *)"\x05\x02\x02\x00", 4, &used,
						  &e),
	       "SOCKS5 greeting offering no authentication");
	is_int(4, (int)used, "… takes its 4 bytes");
	is_int(-EAGAIN,
	       proxy_request_parse_socks_greeting((const uint8_t *)"\x05\x02\x00", 3, &used, &e),
	       "… a greeting cut short asks for more");
	is_int(-EBADMSG,
	       proxy_request_parse_socks_greeting((const uint8_t *)"\x05\x01\x02", 3, &used, &e),
	       "… one offering only username/password is refused");

	SOCKS("domain",
	      "\x05\x01\x00\x03\x0e"
	      "a.example.test\x01\xbb",
	      0, "a.example.test", 443, 0);
	SOCKS("IPv4", "\x05\x01\x00\x01\xc0\x00\x02\x07\x00\x50", 0, "192.0.2.7", 80, 0);
	SOCKS("IPv6", "\x05\x01\x00\x04\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01\x01\xbb", 0,
	      "[2001:db8::1]", 443, 0);
	SOCKS("cut short",
	      "\x05\x01\x00\x03\x0e"
	      "a.exa",
	      -EAGAIN, NULL, 0, 0);
	SOCKS("BIND", "\x05\x02\x00\x01\xc0\x00\x02\x07\x00\x50", -EBADMSG, NULL, 0,
	      PROXY_SOCKS_BAD_COMMAND);
	SOCKS("address type 9", "\x05\x01\x00\x09\x00", -EBADMSG, NULL, 0,
	      PROXY_SOCKS_BAD_ADDRESS_TYPE);
	SOCKS("NUL in the name",
	      "\x05\x01\x00\x03\x03"
	      "a\0b\x00\x50",
	      -EBADMSG, NULL, 0, PROXY_SOCKS_NOT_ALLOWED);
	SOCKS("bad version", "\x04\x01\x00\x01\xc0\x00\x02\x07\x00\x50", -EBADMSG, NULL, 0,
	      PROXY_SOCKS_FAILURE);

	return tap_exit_status();
}
