/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The proxy's request parsers (proxy/proxy-request.c) on arbitrary bytes: the HTTP request
 * head (CONNECT authority, absolute URI, headers) with the real head limit and a small one, the
 * SOCKS5 greeting, the SOCKS5 request on its own and after a greeting. Every host a parser
 * accepts then goes through the rules (proxy_rules_check(), which canonicalizes it) as the
 * engine would. The parsers' promises are checked, and a broken one aborts:
 *   - a parsed request used at most the bytes given, names a host and a port in range;
 *   - one byte less of a complete head is "incomplete", never another verdict;
 *   - the rewritten head is in origin form, ends the head once with "Connection: close", and
 *     carries no NUL, no bare CR and no proxy header;
 *   - a refusal names a rule, a reason and an HTTP status or SOCKS5 code.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/proxy.h"
#include "tests/fuzz/fuzz.h"

static const struct proxy_rules *rules(void)
{
	static struct proxy_rules *r;
	char *allow[] = { (char *)"a.example.test", (char *)"*.example.test", (char *)"192.0.2.7",
			  (char *)"[2001:db8::1]:443", NULL };
	char *deny[] = { (char *)"bad.example.test", NULL };
	char *pins[] = { (char *)"a.example.test=127.0.0.1", (char *)"b.example.test:80:10.0.0.1",
			 NULL };

	if (!r && proxy_rules_new(allow, deny, NULL, 0, pins, &r, NULL) < 0)
		abort();
	return r;
}

static void check_host(const char *host, size_t size, unsigned port)
{
	struct proxy_verdict v;

	check(memchr(host, '\0', size));
	check(port <= 65535);
	proxy_rules_check(rules(), host, port, &v);
	check(v.rule && v.reason[0]);
	check(!v.allowed || (v.host[0] && v.port >= 1));
}

static void check_error(int r, const struct proxy_request_error *e, bool http)
{
	check(r == -EBADMSG);
	check(e->rule && e->reason && e->reason[0]);
	if (http)
		check(e->status == 400 || e->status == 431);
	else
		check(e->socks_code != PROXY_SOCKS_OK);
}

/* Is there a line "name:" (any case) in the head? */
static bool has_header(const char *head, size_t len, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i + n < len; i++)
		if ((i == 0 || head[i - 1] == '\n') && strncasecmp(head + i, name, n) == 0 &&
		    head[i + n] == ':')
			return true;
	return false;
}

static void check_http(const uint8_t *data, size_t size, size_t head_max)
{
	struct proxy_request req;
	struct proxy_request_error e;
	int r = proxy_request_parse_http(data, size, head_max, &req, &e);

	if (r == -EAGAIN) {
		check(size < head_max);
		return;
	}
	if (r != 0)
		return check_error(r, &e, true);
	check(req.consumed >= 2 && req.consumed <= size && req.consumed <= head_max);
	check(req.port >= 1 && req.port <= 65535);
	check(req.host[0]);
	check_host(req.host, sizeof(req.host), req.port);
	if (req.kind == PROXY_REQUEST_HTTP) {
		static const char tail[] = "Connection: close\r\n\r\n";
		const char *h = req.head, *sp;
		size_t n = req.head_len, t = sizeof(tail) - 1;

		/* LF-only lines become CRLF; Host and Connection lines may be added. */
		check(h && n > t && n <= 2 * req.consumed + 64);
		check(memcmp(h + n - t, tail, t) == 0);
		check(!memchr(h, '\0', n));
		/* Origin form: "METHOD /…". */
		sp = memchr(h, ' ', n);
		check(h[0] != ' ' && sp && sp[1] == '/');
		for (size_t i = 0; i < n; i++)
			check(h[i] != '\r' || (i + 1 < n && h[i + 1] == '\n'));
		/* The blank line comes once, at the end. */
		check(!memmem(h, n - 2, "\r\n\r\n", 4));
		check(!has_header(h, n, "proxy-connection") &&
		      !has_header(h, n, "proxy-authorization") && !has_header(h, n, "keep-alive") &&
		      !has_header(h, n, "upgrade") && !has_header(h, n, "te"));
		check(has_header(h, n, "host"));
		if (req.have_host_header)
			check_host(req.host_header, sizeof(req.host_header), req.host_header_port);
	} else {
		check(req.kind == PROXY_REQUEST_CONNECT && !req.head);
	}
	proxy_request_done(&req);

	/* A byte less of the head is not complete yet. */
	r = proxy_request_parse_http(data, req.consumed - 1, head_max, &req, &e);
	check(r == -EAGAIN);
}

static void check_socks_request(const uint8_t *data, size_t size)
{
	struct proxy_request req;
	struct proxy_request_error e;
	int r = proxy_request_parse_socks(data, size, &req, &e);

	if (r == -EAGAIN)
		return;
	if (r != 0)
		return check_error(r, &e, false);
	check(req.kind == PROXY_REQUEST_SOCKS5 && !req.head);
	check(req.consumed >= 8 && req.consumed <= size);
	check(req.host[0]);
	check_host(req.host, sizeof(req.host), req.port);
	r = proxy_request_parse_socks(data, req.consumed - 1, &req, &e);
	check(r == -EAGAIN);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxy_request_error e;
	size_t used;
	int r;

	check_http(data, size, PROXY_HEAD_MAX);
	check_http(data, size, 256);
	check_socks_request(data, size);

	r = proxy_request_parse_socks_greeting(data, size, &used, &e);
	if (r == 0) {
		check(used >= 3 && used <= size);
		check_socks_request(data + used, size - used);
	} else if (r != -EAGAIN)
		check_error(r, &e, false);
	return 0;
}
