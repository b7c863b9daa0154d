/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The proxy's request parsers (docs/NETWORK.md "Protocols"): bytes in, a parsed request or the
 * reason it is refused out. Pure: no I/O, no rules, no state between calls, so the engine can
 * call them again as more bytes arrive and tests/fuzz/fuzz-proxy-request.c can feed them
 * anything. The decision on the host is the caller's (proxy_rules_check()).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cleanup.h"
#include "common/util.h"
#include "proxy/proxy.h"

#define HTTP_METHOD_MAX 32

void proxy_request_done(struct proxy_request *r)
{
	if (!r)
		return;
	free(r->head);
	r->head = NULL;
	r->head_len = 0;
}

static int refuse(struct proxy_request_error *e, unsigned status, uint8_t socks_code,
		  const char *rule, const char *reason)
{
	*e = (struct proxy_request_error){
		.status = status,
		.socks_code = socks_code,
		.rule = rule,
		.reason = reason,
	};
	return -EBADMSG;
}

static int http_refuse(struct proxy_request_error *e, unsigned status, const char *rule,
		       const char *reason)
{
	return refuse(e, status, PROXY_SOCKS_FAILURE, rule, reason);
}

/* RFC 9110 tchar. */
static bool is_token_char(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* Split "host[:port]" or "[v6][:port]" (n bytes of s); port default_port when absent. */
static int split_authority(const char *s, size_t n, char *host, size_t host_size, unsigned *port,
			   unsigned default_port)
{
	const char *colon = NULL;
	size_t hl;

	if (n == 0)
		return -EINVAL;
	if (s[0] == '[') {
		const char *end = memchr(s, ']', n);

		if (!end)
			return -EINVAL;
		hl = (size_t)(end - s) + 1;
		if (hl < n) {
			if (s[hl] != ':')
				return -EINVAL;
			colon = s + hl;
		}
	} else {
		colon = memchr(s, ':', n);
		hl = colon ? (size_t)(colon - s) : n;
	}
	if (hl == 0 || hl >= host_size)
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	*port = default_port;
	if (colon) {
		char p[8];
		size_t pl = n - (size_t)(colon + 1 - s);

		if (pl == 0 || pl >= sizeof(p))
			return -EINVAL;
		memcpy(p, colon + 1, pl);
		p[pl] = '\0';
		if (strspn(p, "0123456789") != pl || safe_atou(p, port) < 0 || *port < 1 ||
		    *port > 65535)
			return -EINVAL;
	}
	return 0;
}

/* Hop-by-hop and proxy headers that are not forwarded ("Connection: close" is added). */
static bool header_dropped(const char *line, size_t name_len)
{
	static const char *const names[] = {
		"connection",
		"proxy-connection",
		"keep-alive",
		"proxy-authorization",
		"proxy-authenticate",
		"te",
		"upgrade",
	};

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (strlen(names[i]) == name_len && strncasecmp(line, names[i], name_len) == 0)
			return true;
	return false;
}

/* The end of the request head: just after the blank line (CRLF CRLF or LF LF); 0 if absent. */
static size_t http_head_end(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		if (p[i] != '\n')
			continue;
		if (p[i + 1] == '\n')
			return i + 2;
		if (i + 2 < n && p[i + 1] == '\r' && p[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/*
 * The next line of head[*pos, end): *ret_line, *ret_len without its LF and one CR before it.
 * A CR anywhere else is refused: a line must mean the same to us and to the upstream.
 */
static int next_line(const char *head, size_t end, size_t *pos, const char **ret_line,
		     size_t *ret_len)
{
	const char *s = head + *pos, *lf = memchr(s, '\n', end - *pos);
	size_t n;

	if (!lf)
		return -EINVAL;
	n = (size_t)(lf - s);
	*pos += n + 1;
	if (n > 0 && s[n - 1] == '\r')
		n--;
	if (memchr(s, '\r', n))
		return -EINVAL;
	*ret_line = s;
	*ret_len = n;
	return 0;
}

struct out {
	char *data;
	size_t len, size;
};

static int out_add(struct out *o, const char *s, size_t n)
{
	if (o->len + n > o->size)
		return -ENOBUFS;
	memcpy(o->data + o->len, s, n);
	o->len += n;
	return 0;
}

static int out_addz(struct out *o, const char *s)
{
	return out_add(o, s, strlen(s));
}

/* Headers of an absolute-URI request, forwarded into o; the Host header recorded in r. */
static int http_headers(const char *head, size_t head_len, size_t *pos, struct out *o,
			struct proxy_request *r, struct proxy_request_error *e)
{
	for (;;) {
		const char *line, *v;
		size_t n, name_len, vl;

		if (next_line(head, head_len, pos, &line, &n) < 0)
			return http_refuse(e, 400, "request", "malformed line ending");
		if (n == 0)
			return 0;
		/* field-name ":" — no folding, no space before the colon (RFC 9112 §5.1). */
		name_len = 0;
		while (name_len < n && is_token_char(line[name_len]))
			name_len++;
		if (name_len == 0 || name_len >= n || line[name_len] != ':')
			return http_refuse(e, 400, "request", "malformed header line");
		if (name_len == 4 && strncasecmp(line, "host", 4) == 0) {
			if (r->have_host_header)
				return http_refuse(e, 400, "hostHeader",
						   "more than one Host header");
			r->have_host_header = true;
			v = line + 5;
			vl = n - 5;
			while (vl > 0 && (*v == ' ' || *v == '\t'))
				v++, vl--;
			while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			if (split_authority(v, vl, r->host_header, sizeof(r->host_header),
					    &r->host_header_port, 80) < 0)
				return http_refuse(e, 400, "hostHeader", "malformed Host header");
		}
		if (header_dropped(line, name_len))
			continue;
		if (out_add(o, line, n) < 0 || out_add(o, "\r\n", 2) < 0)
			return http_refuse(e, 431, "request", "request head too large");
	}
}

int proxy_request_parse_http(const uint8_t *data, size_t len, size_t head_max,
			     struct proxy_request *ret, struct proxy_request_error *reterr)
{
	_cleanup_free_ char *buf = NULL;
	struct proxy_request r = { 0 };
	const char *head = (const char *)data, *line, *sp1, *sp2, *target, *version, *authority,
		   *path;
	size_t head_len, pos = 0, n, target_len, authority_len, path_len;
	struct out o;
	int k;

	head_len = http_head_end(data, len < head_max ? len : head_max);
	if (head_len == 0)
		return len >= head_max
			       ? http_refuse(reterr, 431, "request", "request head too large")
			       : -EAGAIN;
	if (memchr(head, '\0', head_len))
		return http_refuse(reterr, 400, "request", "NUL byte in the request head");
	if (next_line(head, head_len, &pos, &line, &n) < 0)
		return http_refuse(reterr, 400, "request", "malformed line ending");
	if (n == 0)
		return http_refuse(reterr, 400, "request", "empty request line");

	/* METHOD SP request-target SP HTTP-version */
	sp1 = memchr(line, ' ', n);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - line)) : NULL;
	if (!sp1 || !sp2 || memchr(sp2 + 1, ' ', n - (size_t)(sp2 + 1 - line)) || sp1 == line ||
	    sp2 == sp1 + 1 || (size_t)(sp1 - line) >= HTTP_METHOD_MAX)
		return http_refuse(reterr, 400, "request", "malformed request line");
	for (const char *m = line; m < sp1; m++)
		if (!is_token_char(*m))
			return http_refuse(reterr, 400, "request", "malformed request method");
	target = sp1 + 1;
	target_len = (size_t)(sp2 - target);
	version = sp2 + 1;
	if (line + n - version != 8 ||
	    (memcmp(version, "HTTP/1.1", 8) != 0 && memcmp(version, "HTTP/1.0", 8) != 0))
		return http_refuse(reterr, 400, "request", "unsupported HTTP version");

	if (sp1 - line == 7 && memcmp(line, "CONNECT", 7) == 0) {
		r.kind = PROXY_REQUEST_CONNECT;
		/* authority-form: the port is required. */
		if (target[0] == '[' ? !memmem(target, target_len, "]:", 2)
				     : !memchr(target, ':', target_len))
			return http_refuse(reterr, 400, "request", "CONNECT needs host:port");
		if (split_authority(target, target_len, r.host, sizeof(r.host), &r.port, 0) < 0)
			return http_refuse(reterr, 400, "request", "malformed CONNECT target");
		/* Anything after the head (an early TLS ClientHello) is payload. */
		r.consumed = head_len;
		*ret = r;
		return 0;
	}

	r.kind = PROXY_REQUEST_HTTP;
	if (target_len < 7 || strncasecmp(target, "http://", 7) != 0)
		return http_refuse(
			reterr, 400, "request",
			target_len >= 8 && strncasecmp(target, "https://", 8) == 0
				? "https:// URLs need CONNECT"
				: "not a proxy request (expected an absolute http:// URI)");
	authority = target + 7;
	authority_len = 0;
	while (authority_len < target_len - 7 && !strchr("/?#", authority[authority_len]))
		authority_len++;
	path = authority + authority_len;
	path_len = target_len - 7 - authority_len;
	if (memchr(authority, '@', authority_len))
		return http_refuse(reterr, 400, "request",
				   "user information in the URI is not supported");
	if (split_authority(authority, authority_len, r.host, sizeof(r.host), &r.port, 80) < 0)
		return http_refuse(reterr, 400, "request", "malformed URI authority");

	/*
	 * The rewritten head: lines ending in a bare LF get CRLF (a header line is at least "x:\n",
	 * so that at most doubles it), plus the Host and Connection lines.
	 */
	o.size = 2 * head_len + authority_len + 64;
	o.len = 0;
	o.data = buf = malloc(o.size);
	if (!buf)
		return -ENOMEM;
	if (out_add(&o, line, (size_t)(target - line)) < 0 ||
	    (path_len == 0 || path[0] != '/' ? out_addz(&o, "/") : 0) < 0 ||
	    out_add(&o, path, path_len) < 0 || out_add(&o, " ", 1) < 0 ||
	    out_add(&o, version, 8) < 0 || out_add(&o, "\r\n", 2) < 0)
		return http_refuse(reterr, 431, "request", "request head too large");
	k = http_headers(head, head_len, &pos, &o, &r, reterr);
	if (k < 0)
		return k;
	if (!r.have_host_header &&
	    (out_addz(&o, "Host: ") < 0 || out_add(&o, authority, authority_len) < 0 ||
	     out_add(&o, "\r\n", 2) < 0))
		return http_refuse(reterr, 431, "request", "request head too large");
	/* One request per proxy connection: the next one may name another host. */
	if (out_addz(&o, "Connection: close\r\n\r\n") < 0)
		return http_refuse(reterr, 431, "request", "request head too large");
	r.consumed = head_len;
	r.head = TAKE_PTR(buf);
	r.head_len = o.len;
	*ret = r;
	return 0;
}

int proxy_request_parse_socks_greeting(const uint8_t *data, size_t len, size_t *ret_consumed,
				       struct proxy_request_error *reterr)
{
	if (len >= 1 && data[0] != 0x05)
		return refuse(reterr, 0, PROXY_SOCKS_FAILURE, "request", "not a SOCKS5 greeting");
	if (len < 2 || len < 2 + (size_t)data[1])
		return -EAGAIN;
	if (!memchr(data + 2, 0x00, data[1]))
		return refuse(reterr, 0, PROXY_SOCKS_FAILURE, "request",
			      "SOCKS5 client offers no method without authentication");
	*ret_consumed = 2 + (size_t)data[1];
	return 0;
}

int proxy_request_parse_socks(const uint8_t *data, size_t len, struct proxy_request *ret,
			      struct proxy_request_error *reterr)
{
	struct proxy_request r = { .kind = PROXY_REQUEST_SOCKS5 };
	size_t need;

	/* VER CMD RSV ATYP DST.ADDR DST.PORT */
	if (len < 5)
		return -EAGAIN;
	if (data[0] != 0x05 || data[2] != 0x00)
		return refuse(reterr, 0, PROXY_SOCKS_FAILURE, "request",
			      "malformed SOCKS5 request");
	switch (data[3]) {
	case 0x01:
		need = 4 + 4 + 2;
		break;
	case 0x03:
		need = 4 + 1 + (size_t)data[4] + 2;
		break;
	case 0x04:
		need = 4 + 16 + 2;
		break;
	default:
		return refuse(reterr, 0, PROXY_SOCKS_BAD_ADDRESS_TYPE, "request",
			      "unsupported SOCKS5 address type");
	}
	if (len < need)
		return -EAGAIN;
	if (data[1] != 0x01)
		return refuse(reterr, 0, PROXY_SOCKS_BAD_COMMAND, "request",
			      "only the SOCKS5 CONNECT command is supported");
	if (data[3] == 0x01)
		(void)inet_ntop(AF_INET, data + 4, r.host, sizeof(r.host));
	else if (data[3] == 0x04) {
		r.host[0] = '[';
		(void)inet_ntop(AF_INET6, data + 4, r.host + 1, sizeof(r.host) - 2);
		strcat(r.host, "]");
	} else {
		if (data[4] == 0 || memchr(data + 5, 0, data[4]))
			return refuse(reterr, 0, PROXY_SOCKS_NOT_ALLOWED, "hostName",
				      "malformed host name");
		memcpy(r.host, data + 5, data[4]);
		r.host[data[4]] = '\0';
	}
	r.port = (unsigned)data[need - 2] << 8 | data[need - 1];
	r.consumed = need;
	*ret = r;
	return 0;
}
