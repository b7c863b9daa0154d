/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The proxy's decision (docs/NETWORK.md "Decision order"). Pure: no I/O, no DNS. The engine asks
 * proxy_rules_check() once per request, then proxy_rules_check_address() for every address it
 * would connect to, so a name can never lead to an address the rules did not accept.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/json-cleanup.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "policy/policy-model.h"

struct proxy_pattern {
	char *text; /* canonical, as listed: "*.example.test:443" */
	char *name; /* without port: "*.example.test", "192.0.2.1", "[2001:db8::1]" */
	bool wildcard;
	unsigned port; /* 0: any port (deny) / allowPorts (allow) */
};

struct proxy_pin {
	char *text; /* canonical: "name=address" or "name:port:address" */
	char *name;
	unsigned port; /* 0: every port */
	struct proxy_addr addr;
};

struct proxy_rules {
	unsigned n_ref;
	struct proxy_pattern *allow;
	size_t n_allow;
	struct proxy_pattern *deny;
	size_t n_deny;
	unsigned *ports;
	size_t n_ports;
	struct proxy_pin *pins;
	size_t n_pins;
};

/* ---- addresses ---------------------------------------------------------------------------- */

int proxy_addr_from_sockaddr(const struct sockaddr *sa, struct proxy_addr *ret)
{
	*ret = (struct proxy_addr){ .family = sa->sa_family };
	if (sa->sa_family == AF_INET)
		memcpy(ret->bytes, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(ret->bytes, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
	else
		return -EAFNOSUPPORT;
	return 0;
}

socklen_t proxy_addr_to_sockaddr(const struct proxy_addr *a, unsigned port,
				 struct sockaddr_storage *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (a->family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ret;

		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		memcpy(&in->sin_addr, a->bytes, 4);
		return sizeof(*in);
	}
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ret;

	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons((uint16_t)port);
	memcpy(&in6->sin6_addr, a->bytes, 16);
	return sizeof(*in6);
}

const char *proxy_addr_to_string(const struct proxy_addr *a, char *buf, size_t size)
{
	if (!inet_ntop(a->family, a->bytes, buf, (socklen_t)size))
		(void)snprintf(buf, size, "?");
	return buf;
}

static int parse_addr(const char *s, struct proxy_addr *ret)
{
	*ret = (struct proxy_addr){ 0 };
	if (inet_pton(AF_INET, s, ret->bytes) == 1) {
		ret->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, ret->bytes) == 1) {
		ret->family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

static bool v4_in(const uint8_t *b, uint32_t net, unsigned bits)
{
	uint32_t a = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	uint32_t mask = bits == 0 ? 0 : ~0U << (32 - bits);

	return (a & mask) == (net & mask);
}

#define V4(a, b, c, d) \
	((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

static enum proxy_addr_class classify_v4(const uint8_t *b)
{
	static const struct {
		uint32_t net;
		unsigned bits;
		enum proxy_addr_class c;
	} table[] = {
		{ V4(255, 255, 255, 255), 32, PROXY_ADDR_BROADCAST },
		{ V4(0, 0, 0, 0), 8, PROXY_ADDR_UNSPECIFIED },
		{ V4(10, 0, 0, 0), 8, PROXY_ADDR_PRIVATE },
		{ V4(100, 64, 0, 0), 10, PROXY_ADDR_CGNAT },
		{ V4(127, 0, 0, 0), 8, PROXY_ADDR_LOOPBACK },
		{ V4(169, 254, 0, 0), 16, PROXY_ADDR_LINK_LOCAL },
		{ V4(172, 16, 0, 0), 12, PROXY_ADDR_PRIVATE },
		{ V4(192, 0, 0, 0), 24, PROXY_ADDR_RESERVED },	 /* IETF protocol assignments */
		{ V4(192, 0, 2, 0), 24, PROXY_ADDR_RESERVED },	 /* TEST-NET-1 */
		{ V4(192, 88, 99, 0), 24, PROXY_ADDR_RESERVED }, /* 6to4 relay anycast */
		{ V4(192, 168, 0, 0), 16, PROXY_ADDR_PRIVATE },
		{ V4(198, 18, 0, 0), 15, PROXY_ADDR_RESERVED },	  /* benchmarking */
		{ V4(198, 51, 100, 0), 24, PROXY_ADDR_RESERVED }, /* TEST-NET-2 */
		{ V4(203, 0, 113, 0), 24, PROXY_ADDR_RESERVED },  /* TEST-NET-3 */
		{ V4(224, 0, 0, 0), 4, PROXY_ADDR_MULTICAST },
		{ V4(240, 0, 0, 0), 4, PROXY_ADDR_RESERVED },
	};

	for (size_t i = 0; i < ELEMENTSOF(table); i++)
		if (v4_in(b, table[i].net, table[i].bits))
			return table[i].c;
	return PROXY_ADDR_PUBLIC;
}

static bool v6_prefix(const uint8_t *b, const uint8_t *prefix, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;

	if (memcmp(b, prefix, full) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));

	return (b[full] & mask) == (prefix[full] & mask);
}

static enum proxy_addr_class classify_v6(const uint8_t *b)
{
	static const uint8_t zero[16] = { 0 };
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	static const uint8_t nat64_local[6] = { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 };
	static const uint8_t sixto4[2] = { 0x20, 0x02 };
	static const uint8_t loopback[16] = { [15] = 1 };
	static const uint8_t discard[8] = { 0x01, 0x00 };
	static const uint8_t teredo[4] = { 0x20, 0x01, 0x00, 0x00 };
	static const uint8_t doc[4] = { 0x20, 0x01, 0x0d, 0xb8 };
	static const uint8_t ietf[3] = { 0x20, 0x01, 0x00 }; /* 2001::/23 IETF assignments */
	static const uint8_t ula[1] = { 0xfc };
	static const uint8_t link_local[2] = { 0xfe, 0x80 };
	static const uint8_t site_local[2] = { 0xfe, 0xc0 };
	static const uint8_t multicast[1] = { 0xff };

	if (memcmp(b, zero, 16) == 0)
		return PROXY_ADDR_UNSPECIFIED;
	if (memcmp(b, loopback, 16) == 0)
		return PROXY_ADDR_LOOPBACK;
	/* Forms that carry an IPv4 address: judged by it, so ::ffff:127.0.0.1 is loopback. */
	if (v6_prefix(b, mapped, 96) || v6_prefix(b, zero, 96) || v6_prefix(b, nat64, 96))
		return classify_v4(b + 12);
	if (v6_prefix(b, sixto4, 16))
		return classify_v4(b + 2);
	if (v6_prefix(b, nat64_local, 48))
		return PROXY_ADDR_PRIVATE;
	if (v6_prefix(b, discard, 64) || v6_prefix(b, teredo, 32) || v6_prefix(b, doc, 32) ||
	    v6_prefix(b, ietf, 23))
		return PROXY_ADDR_RESERVED;
	if (v6_prefix(b, ula, 7))
		return PROXY_ADDR_ULA;
	if (v6_prefix(b, link_local, 10))
		return PROXY_ADDR_LINK_LOCAL;
	if (v6_prefix(b, site_local, 10))
		return PROXY_ADDR_PRIVATE;
	if (v6_prefix(b, multicast, 8))
		return PROXY_ADDR_MULTICAST;
	return PROXY_ADDR_PUBLIC;
}

enum proxy_addr_class proxy_addr_classify(const struct proxy_addr *a)
{
	return a->family == AF_INET ? classify_v4(a->bytes) : classify_v6(a->bytes);
}

const char *proxy_addr_class_to_string(enum proxy_addr_class c)
{
	static const char *const names[] = {
		[PROXY_ADDR_PUBLIC] = "public",	       [PROXY_ADDR_LOOPBACK] = "loopback",
		[PROXY_ADDR_PRIVATE] = "private",      [PROXY_ADDR_LINK_LOCAL] = "link-local",
		[PROXY_ADDR_CGNAT] = "shared (CGNAT)", [PROXY_ADDR_ULA] = "unique-local",
		[PROXY_ADDR_RESERVED] = "reserved",    [PROXY_ADDR_UNSPECIFIED] = "unspecified",
		[PROXY_ADDR_MULTICAST] = "multicast",  [PROXY_ADDR_BROADCAST] = "broadcast",
	};

	return (size_t)c < ELEMENTSOF(names) ? names[c] : "?";
}

/* ---- names and patterns ------------------------------------------------------------------- */

/*
 * Check and lower-case a DNS name in place: labels of letters, digits, '-' and '_', 1–63 bytes,
 * at most PROXY_NAME_MAX in all, one trailing dot dropped.
 */
static bool name_canonicalize(char *s)
{
	size_t n = strlen(s), label = 0;

	if (n > 0 && s[n - 1] == '.')
		s[--n] = '\0';
	if (n == 0 || n > PROXY_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			s[i] = c = (char)(c - 'A' + 'a');
		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return false;
		if (++label > 63)
			return false;
	}
	return label > 0;
}

/* Is the last label made of digits only (no real top-level domain is)? */
static bool numeric_tld(const char *s)
{
	const char *dot = strrchr(s, '.');

	s = dot ? dot + 1 : s;
	return strspn(s, "0123456789") == strlen(s);
}

/*
 * Canonicalize what a client asked for: a name, an IPv4 address in any form inet_aton() takes
 * ("127.1", "0x7f.0.0.1", "2130706433" — the resolver would take them too), or an IPv6 address
 * with or without brackets. Fills v->host, v->kind and, for literals, v->addr.
 */
static bool host_canonicalize(const char *in, struct proxy_verdict *v)
{
	char buf[PROXY_NAME_MAX + 3], a[INET6_ADDRSTRLEN];
	size_t n = strlen(in);
	struct in_addr in4;

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, in, n + 1);
	if (buf[0] == '[') {
		if (buf[n - 1] != ']')
			return false;
		buf[n - 1] = '\0';
		memmove(buf, buf + 1, n - 1);
		if (!strchr(buf, ':'))
			return false; /* brackets hold IPv6 addresses only */
	}
	if (strchr(buf, ':')) {
		v->addr = (struct proxy_addr){ .family = AF_INET6 };
		if (inet_pton(AF_INET6, buf, v->addr.bytes) != 1)
			return false;
		v->kind = PROXY_HOST_IPV6;
		v->have_addr = true;
		(void)snprintf(v->host, sizeof(v->host), "[%s]",
			       proxy_addr_to_string(&v->addr, a, sizeof(a)));
		return true;
	}
	if (!name_canonicalize(buf))
		return false;
	if (inet_aton(buf, &in4) == 1) {
		v->addr = (struct proxy_addr){ .family = AF_INET };
		memcpy(v->addr.bytes, &in4, 4);
		v->kind = PROXY_HOST_IPV4;
		v->have_addr = true;
		(void)snprintf(v->host, sizeof(v->host), "%s",
			       proxy_addr_to_string(&v->addr, a, sizeof(a)));
		return true;
	}
	if (numeric_tld(buf))
		return false;
	v->kind = PROXY_HOST_NAME;
	memcpy(v->host, buf, strlen(buf) + 1);
	return true;
}

static void pattern_done(struct proxy_pattern *p)
{
	free(p->text);
	free(p->name);
}

/* Parse a pattern into p: "name", "*.suffix", "a.b.c.d", "[v6]", each optionally ":port". */
static int pattern_parse(const char *in, struct proxy_pattern *ret)
{
	_cleanup_free_ char *s = strdup(in);
	struct proxy_pattern p = { 0 };
	char *port = NULL, *name;

	if (!s)
		return -ENOMEM;
	name = s;
	if (s[0] == '[') {
		char *end = strchr(s, ']');

		if (!end || (end[1] != '\0' && end[1] != ':'))
			return -EINVAL;
		if (end[1] == ':')
			port = end + 2;
		end[1] = '\0';
	} else {
		char *colon = strchr(s, ':');

		if (colon) {
			*colon = '\0';
			port = colon + 1;
		}
	}
	if (port && (safe_atou(port, &p.port) < 0 || p.port < 1 || p.port > 65535))
		return -EINVAL;

	if (name[0] == '*') {
		if (name[1] != '.' || !name_canonicalize(name + 2) || numeric_tld(name + 2))
			return -EINVAL;
		p.wildcard = true;
		p.name = strdup(name);
	} else {
		struct proxy_verdict v = { 0 };

		/* Literals must be written canonically: "127.1" would never match anything. */
		if (!host_canonicalize(name, &v))
			return -EINVAL;
		if (v.kind == PROXY_HOST_IPV4 && inet_pton(AF_INET, name, v.addr.bytes) != 1)
			return -EINVAL;
		if (v.kind == PROXY_HOST_IPV6 && name[0] != '[')
			return -EINVAL;
		p.name = strdup(v.host);
	}
	if (!p.name)
		return -ENOMEM;
	if (p.port > 0)
		p.text = strdup_printf("%s:%u", p.name, p.port);
	else
		p.text = strdup(p.name);
	if (!p.text) {
		pattern_done(&p);
		return -ENOMEM;
	}
	*ret = p;
	return 0;
}

int proxy_pattern_canonicalize(const char *in, char **ret)
{
	struct proxy_pattern p;
	int r = pattern_parse(in, &p);

	if (r < 0)
		return r;
	free(p.name);
	*ret = p.text;
	return 0;
}

static bool pattern_name_matches(const struct proxy_pattern *p, const struct proxy_verdict *v)
{
	if (p->wildcard) {
		/* "*.example.test" covers names below example.test: not the apex, and never
		 * "example.test.evil" or "badexample.test". */
		const char *suffix = p->name + 1; /* ".example.test" */
		size_t sl = strlen(suffix), hl = strlen(v->host);

		return v->kind == PROXY_HOST_NAME && hl > sl &&
		       memcmp(v->host + hl - sl, suffix, sl) == 0;
	}
	return streq(p->name, v->host);
}

static int pin_parse(const char *in, struct proxy_pin *ret)
{
	_cleanup_free_ char *s = strdup(in);
	struct proxy_pin p = { 0 };
	char a[INET6_ADDRSTRLEN], *addr, *eq;

	if (!s)
		return -ENOMEM;
	eq = strchr(s, '=');
	if (eq) {
		/* "name=address" */
		*eq = '\0';
		addr = eq + 1;
	} else {
		/* "name:port:address" (curl --resolve); address may be bracketed. */
		char *c1 = strchr(s, ':'), *c2;

		if (!c1)
			return -EINVAL;
		*c1 = '\0';
		c2 = strchr(c1 + 1, ':');
		if (!c2)
			return -EINVAL;
		*c2 = '\0';
		if (safe_atou(c1 + 1, &p.port) < 0 || p.port < 1 || p.port > 65535)
			return -EINVAL;
		addr = c2 + 1;
		if (addr[0] == '[') {
			size_t n = strlen(addr);

			if (n < 2 || addr[n - 1] != ']')
				return -EINVAL;
			addr[n - 1] = '\0';
			addr++;
		}
	}
	if (!name_canonicalize(s) || numeric_tld(s) || parse_addr(addr, &p.addr) < 0)
		return -EINVAL;
	p.name = strdup(s);
	proxy_addr_to_string(&p.addr, a, sizeof(a));
	if (p.port > 0)
		p.text = strdup_printf(p.addr.family == AF_INET6 ? "%s:%u:[%s]" : "%s:%u:%s",
				       p.name, p.port, a);
	else
		p.text = strdup_printf("%s=%s", p.name, a);
	if (!p.name || !p.text) {
		free(p.name);
		free(p.text);
		return -ENOMEM;
	}
	*ret = p;
	return 0;
}

/* ---- rule sets ---------------------------------------------------------------------------- */

static struct proxy_rules *rules_free(struct proxy_rules *r)
{
	for (size_t i = 0; i < r->n_allow; i++)
		pattern_done(&r->allow[i]);
	for (size_t i = 0; i < r->n_deny; i++)
		pattern_done(&r->deny[i]);
	for (size_t i = 0; i < r->n_pins; i++) {
		free(r->pins[i].text);
		free(r->pins[i].name);
	}
	free(r->allow);
	free(r->deny);
	free(r->ports);
	free(r->pins);
	free(r);
	return NULL;
}

struct proxy_rules *proxy_rules_ref(struct proxy_rules *r)
{
	if (r)
		r->n_ref++;
	return r;
}

struct proxy_rules *proxy_rules_unref(struct proxy_rules *r)
{
	if (r && --r->n_ref == 0)
		rules_free(r);
	return NULL;
}

/* Parse a list of patterns, dropping exact duplicates. */
static int patterns_parse(char *const *l, struct proxy_pattern **ret, size_t *ret_n,
			  const char **reterr_entry)
{
	size_t n = strv_length(l), k = 0;
	struct proxy_pattern *a = calloc(n + 1, sizeof(*a));
	int r;

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		bool dup = false;

		r = pattern_parse(l[i], &a[k]);
		if (r < 0) {
			if (reterr_entry)
				*reterr_entry = l[i];
			goto fail;
		}
		for (size_t j = 0; j < k; j++)
			dup = dup || streq(a[j].text, a[k].text);
		if (dup)
			pattern_done(&a[k]);
		else
			k++;
	}
	*ret = a;
	*ret_n = k;
	return 0;
fail:
	for (size_t j = 0; j < k; j++)
		pattern_done(&a[j]);
	free(a);
	return r;
}

int proxy_rules_new(char *const *allow, char *const *deny, const unsigned *ports, size_t n_ports,
		    char *const *resolve, struct proxy_rules **ret, const char **reterr_entry)
{
	static const unsigned default_ports[] = { 80, 443 };
	struct proxy_rules *r = calloc(1, sizeof(*r));
	size_t n_pins = strv_length(resolve);
	int k;

	if (!r)
		return -ENOMEM;
	r->n_ref = 1;
	k = patterns_parse(allow, &r->allow, &r->n_allow, reterr_entry);
	if (k < 0)
		goto fail;
	k = patterns_parse(deny, &r->deny, &r->n_deny, reterr_entry);
	if (k < 0)
		goto fail;
	if (n_ports == 0) {
		ports = default_ports;
		n_ports = ELEMENTSOF(default_ports);
	}
	r->ports = calloc(n_ports, sizeof(unsigned));
	if (!r->ports) {
		k = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < n_ports; i++) {
		if (ports[i] < 1 || ports[i] > 65535) {
			k = -EINVAL;
			goto fail;
		}
		r->ports[r->n_ports++] = ports[i];
	}
	r->pins = calloc(n_pins + 1, sizeof(*r->pins));
	if (!r->pins) {
		k = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < n_pins; i++) {
		k = pin_parse(resolve[i], &r->pins[r->n_pins]);
		if (k < 0) {
			if (reterr_entry)
				*reterr_entry = resolve[i];
			goto fail;
		}
		r->n_pins++;
	}
	*ret = r;
	return 0;
fail:
	rules_free(r);
	return k;
}

int proxy_rules_from_policy(const struct policy *p, struct proxy_rules **ret)
{
	return proxy_rules_new(p->net.allow_domains, p->net.deny_domains, p->net.allow_ports,
			       p->net.n_allow_ports, p->net.resolve, ret, NULL);
}

static char **patterns_strv(const struct proxy_pattern *a, size_t n, const char *add,
			    const char *drop)
{
	char **l = calloc(n + 2, sizeof(char *));
	size_t k = 0;

	if (!l)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (drop && streq(a[i].text, drop))
			continue;
		l[k] = strdup(a[i].text);
		if (!l[k++])
			goto fail;
	}
	if (add) {
		l[k] = strdup(add);
		if (!l[k])
			goto fail;
	}
	return l;
fail:
	strv_free(l);
	return NULL;
}

static int rules_change(const struct proxy_rules *r, const char *pattern, bool allow,
			struct proxy_rules **ret)
{
	_cleanup_strv_free_ char **a = NULL, **d = NULL, **pins = NULL;
	_cleanup_free_ char *canon = NULL;
	int k;

	k = proxy_pattern_canonicalize(pattern, &canon);
	if (k < 0)
		return k;
	a = patterns_strv(r->allow, r->n_allow, allow ? canon : NULL, allow ? NULL : canon);
	d = patterns_strv(r->deny, r->n_deny, allow ? NULL : canon, allow ? canon : NULL);
	pins = calloc(r->n_pins + 1, sizeof(char *));
	if (!a || !d || !pins)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_pins; i++) {
		pins[i] = strdup(r->pins[i].text);
		if (!pins[i])
			return -ENOMEM;
	}
	return proxy_rules_new(a, d, r->ports, r->n_ports, pins, ret, NULL);
}

int proxy_rules_allow(const struct proxy_rules *r, const char *pattern, struct proxy_rules **ret)
{
	return rules_change(r, pattern, true, ret);
}

int proxy_rules_deny(const struct proxy_rules *r, const char *pattern, struct proxy_rules **ret)
{
	return rules_change(r, pattern, false, ret);
}

int proxy_rules_to_json(const struct proxy_rules *r, json_t **ret)
{
	_cleanup_json_ json_t *o = json_object(), *a = json_array(), *d = json_array(),
			      *p = json_array(), *pins = json_array();

	if (!o || !a || !d || !p || !pins)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_allow; i++)
		if (json_array_append_new(a, json_string(r->allow[i].text)) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < r->n_deny; i++)
		if (json_array_append_new(d, json_string(r->deny[i].text)) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < r->n_ports; i++)
		if (json_array_append_new(p, json_integer(r->ports[i])) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < r->n_pins; i++)
		if (json_array_append_new(pins, json_string(r->pins[i].text)) < 0)
			return -ENOMEM;
	if (json_object_set_new(o, "allowDomains", TAKE_PTR(a)) < 0 ||
	    json_object_set_new(o, "denyDomains", TAKE_PTR(d)) < 0 ||
	    json_object_set_new(o, "allowPorts", TAKE_PTR(p)) < 0 ||
	    json_object_set_new(o, "resolve", TAKE_PTR(pins)) < 0)
		return -ENOMEM;
	*ret = TAKE_PTR(o);
	return 0;
}

/* ---- the decision ------------------------------------------------------------------------- */

_printf_(3, 4) static void verdict_set(struct proxy_verdict *v, const char *rule, const char *fmt,
				       ...)
{
	va_list ap;

	v->rule = rule;
	va_start(ap, fmt);
	(void)vsnprintf(v->reason, sizeof(v->reason), fmt, ap);
	va_end(ap);
}

static bool port_listed(const struct proxy_rules *r, unsigned port)
{
	for (size_t i = 0; i < r->n_ports; i++)
		if (r->ports[i] == port)
			return true;
	return false;
}

static void ports_string(const struct proxy_rules *r, char *buf, size_t size)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < r->n_ports && off < size; i++) {
		int n = snprintf(buf + off, size - off, "%s%u", i ? ", " : "", r->ports[i]);

		if (n < 0)
			break;
		off += (size_t)n;
	}
}

void proxy_rules_check(const struct proxy_rules *r, const char *host, unsigned port,
		       struct proxy_verdict *v)
{
	const struct proxy_pattern *name_match = NULL;

	*v = (struct proxy_verdict){ .port = port };

	/* 1. What was asked for must be a host name or an address, and a port. */
	if (!host_canonicalize(host, v)) {
		verdict_set(v, "hostName", "denied: \"%.*s\" is not a valid host name", 255, host);
		(void)snprintf(v->host, sizeof(v->host), "%.*s", (int)sizeof(v->host) - 1, host);
		return;
	}
	if (port < 1 || port > 65535) {
		verdict_set(v, "port", "denied: port %u is not a TCP port", port);
		return;
	}

	/* 2. denyDomains wins over everything. A bare entry covers every port. */
	for (size_t i = 0; i < r->n_deny; i++) {
		const struct proxy_pattern *p = &r->deny[i];

		if (pattern_name_matches(p, v) && (p->port == 0 || p->port == port)) {
			verdict_set(v, "denyDomains", "denied by denyDomains \"%s\"", p->text);
			return;
		}
	}

	/* 3. allowDomains: an entry with a port allows that port only, a bare one allowPorts. */
	for (size_t i = 0; i < r->n_allow; i++) {
		const struct proxy_pattern *p = &r->allow[i];

		if (!pattern_name_matches(p, v))
			continue;
		if (p->port == port || (p->port == 0 && port_listed(r, port))) {
			v->allowed = true;
			verdict_set(v, "allowDomains", "allowed by allowDomains \"%s\"", p->text);
			break;
		}
		if (!name_match)
			name_match = p;
	}
	if (!v->allowed) {
		char ports[POLICY_PORTS_MAX * 7];

		ports_string(r, ports, sizeof(ports));
		if (name_match && name_match->port)
			verdict_set(v, "allowPorts",
				    "denied: port %u is not allowed for %s (allowDomains \"%s\" "
				    "allows port %u only)",
				    port, v->host, name_match->text, name_match->port);
		else if (name_match)
			verdict_set(v, "allowPorts",
				    "denied: port %u is not allowed for %s (allowDomains \"%s\" "
				    "allows allowPorts [%s])",
				    port, v->host, name_match->text, ports);
		else if (v->kind != PROXY_HOST_NAME)
			verdict_set(v, "ipLiteral",
				    "denied: IP address %s is not listed in allowDomains", v->host);
		else
			verdict_set(v, "allowDomains", "denied: %s matches no allowDomains entry",
				    v->host);
		return;
	}

	/* 4. Where to connect: a listed literal and a pin are explicit; a name needs DNS. */
	if (v->kind != PROXY_HOST_NAME) {
		v->explicit_address = true;
		return;
	}
	for (size_t i = 0; i < r->n_pins; i++) {
		const struct proxy_pin *p = &r->pins[i];

		if (streq(p->name, v->host) && (p->port == 0 || p->port == port)) {
			v->have_addr = v->pinned = v->explicit_address = true;
			v->addr = p->addr;
			(void)snprintf(v->reason + strlen(v->reason),
				       sizeof(v->reason) - strlen(v->reason),
				       ", pinned by resolve \"%s\"", p->text);
			return;
		}
	}
}

bool proxy_rules_check_address(struct proxy_verdict *v, const struct proxy_addr *a)
{
	enum proxy_addr_class c = proxy_addr_classify(a);
	char s[INET6_ADDRSTRLEN];

	if (!v->allowed)
		return false;
	switch (c) {
	case PROXY_ADDR_PUBLIC:
		return true;
	case PROXY_ADDR_UNSPECIFIED:
	case PROXY_ADDR_MULTICAST:
	case PROXY_ADDR_BROADCAST:
		/* Never a destination: 0.0.0.0 would reach the host's own loopback. */
		v->allowed = false;
		verdict_set(v, "address", "denied: %s is not a destination (%s address)",
			    proxy_addr_to_string(a, s, sizeof(s)), proxy_addr_class_to_string(c));
		return false;
	default:
		if (v->explicit_address)
			return true;
		v->allowed = false;
		verdict_set(v, "privateAddress",
			    "denied: %s resolves to %s, a %s address (only a resolve pin or an IP "
			    "address listed in allowDomains permits one)",
			    v->host, proxy_addr_to_string(a, s, sizeof(s)),
			    proxy_addr_class_to_string(c));
		return false;
	}
}
