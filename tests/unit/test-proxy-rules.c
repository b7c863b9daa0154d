/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The proxy's decision (proxy/proxy-rules.c): every rule that can decide, wildcard edge
 * cases, ports, IP literals in their odd spellings, every special address range for IPv4 and
 * IPv6 (v4-mapped and the other embedded forms), resolve pins and what they permit, live changes.
 * Lists are written space-separated to keep the cases on one line.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "proxy/proxy.h"
#include "policy/policy-model.h"
#include "policy/policy-parse.h"
#include "tests/tap.h"

static char **split(const char *s)
{
	_cleanup_free_ char *d = strdup(s ? s : "");
	char **l = calloc(strlen(d) / 2 + 2, sizeof(char *)), *save = NULL;
	size_t n = 0;

	if (!d || !l)
		bail("oom");
	for (char *t = strtok_r(d, " ", &save); t; t = strtok_r(NULL, " ", &save))
		if (!(l[n++] = strdup(t)))
			bail("oom");
	return l;
}

static struct proxy_rules *rules(const char *allow, const char *deny, const char *resolve)
{
	_cleanup_strv_free_ char **a = split(allow), **d = split(deny), **r = split(resolve);
	struct proxy_rules *ret = NULL;
	const char *bad = NULL;

	if (proxy_rules_new(a, d, NULL, 0, r, &ret, &bad) < 0)
		bail("rules do not build: %s", bad ? bad : "?");
	return ret;
}

static void decide(const struct proxy_rules *r, const char *host, unsigned port, bool allowed,
		   const char *rule, const char *reason_part)
{
	struct proxy_verdict v;

	proxy_rules_check(r, host, port, &v);
	ok(v.allowed == allowed && streq_ptr(v.rule, rule) &&
		   (!reason_part || strstr(v.reason, reason_part)),
	   "%s:%u %s by %s", host, port, allowed ? "allowed" : "denied", rule);
	if (v.allowed != allowed || !streq_ptr(v.rule, rule) ||
	    (reason_part && !strstr(v.reason, reason_part)))
		diag("got %s rule=%s reason=%s", v.allowed ? "allowed" : "denied",
		     v.rule ? v.rule : "(null)", v.reason);
}

static struct proxy_addr addr(const char *s)
{
	struct proxy_addr a = { 0 };

	if (inet_pton(AF_INET, s, a.bytes) == 1)
		a.family = AF_INET;
	else if (inet_pton(AF_INET6, s, a.bytes) == 1)
		a.family = AF_INET6;
	else
		bail("bad address %s", s);
	return a;
}

/* host:port is allowed by name; is address a acceptable for it? */
static void address(const struct proxy_rules *r, const char *host, unsigned port, const char *a,
		    bool acceptable, const char *rule)
{
	struct proxy_verdict v;
	struct proxy_addr x = addr(a);
	bool got;

	proxy_rules_check(r, host, port, &v);
	if (!v.allowed) {
		ok(false, "%s → %s: the name itself is denied: %s", host, a, v.reason);
		return;
	}
	got = proxy_rules_check_address(&v, &x);
	ok(got == acceptable && (acceptable || streq_ptr(v.rule, rule)), "%s → %s %s", host, a,
	   acceptable ? "acceptable" : "refused");
	if (got != acceptable)
		diag("reason: %s", v.reason);
}

static void test_exact_and_ports(void)
{
	_cleanup_proxy_rules_ struct proxy_rules *r = rules("pypi.org api.test:8443", NULL, NULL);

	decide(r, "pypi.org", 443, true, "allowDomains", "\"pypi.org\"");
	decide(r, "pypi.org", 80, true, "allowDomains", NULL);
	decide(r, "PyPI.ORG", 443, true, "allowDomains", NULL);
	decide(r, "pypi.org.", 443, true, "allowDomains", NULL);
	decide(r, "pypi.org", 8080, false, "allowPorts", "allowPorts [80, 443]");
	decide(r, "pypi.org", 22, false, "allowPorts", NULL);
	decide(r, "files.pypi.org", 443, false, "allowDomains", "matches no allowDomains entry");
	decide(r, "pypi.org.evil", 443, false, "allowDomains", NULL);
	decide(r, "xpypi.org", 443, false, "allowDomains", NULL);
	decide(r, "api.test", 8443, true, "allowDomains", "\"api.test:8443\"");
	/* A port-specific entry allows that port only, even one listed in allowPorts. */
	decide(r, "api.test", 443, false, "allowPorts", "port 8443 only");
	decide(r, "pypi.org", 0, false, "port", NULL);
	decide(r, "pypi.org", 65536, false, "port", NULL);

	_cleanup_strv_free_ char **a = split("web.test");
	const unsigned ports[] = { 8080 };
	_cleanup_proxy_rules_ struct proxy_rules *p = NULL;

	ok(proxy_rules_new(a, NULL, ports, 1, NULL, &p, NULL) == 0, "rules with allowPorts [8080]");
	decide(p, "web.test", 8080, true, "allowDomains", NULL);
	decide(p, "web.test", 443, false, "allowPorts", "allowPorts [8080]");
}

static void test_wildcards(void)
{
	_cleanup_proxy_rules_ struct proxy_rules *r = rules("*.example.test", NULL, NULL);
	static const struct {
		const char *name;
		bool match;
	} cases[] = {
		{ "a.example.test", true },
		{ "a.b.example.test", true },
		{ "A.EXAMPLE.test", true },
		{ "a.example.test.", true },
		{ "example.test", false },
		{ "example.test.evil", false },
		{ "a.example.test.evil", false },
		{ "badexample.test", false },
		{ "a-example.test", false },
		{ "aexample.test", false },
		{ "test", false },
		{ ".example.test", false },
		{ "a..example.test", false },
		{ "a.example.test..", false },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct proxy_verdict v;

		proxy_rules_check(r, cases[i].name, 443, &v);
		ok(v.allowed == cases[i].match, "\"*.example.test\" %s \"%s\"",
		   cases[i].match ? "matches" : "does not match", cases[i].name);
	}
	/* Agrees with policy_domain_matches() (the policy's own notion) on valid names. */
	static const char *const pats[] = { "*.example.test", "example.test", "*.a.b", "a.b:80" };
	static const char *const names[] = { "example.test", "x.example.test", "example.test.evil",
					     "a.b",	     "x.a.b",	       "xa.b",
					     "q.x.a.b" };
	bool agree = true;

	for (size_t i = 0; i < ELEMENTSOF(pats); i++)
		for (size_t j = 0; j < ELEMENTSOF(names); j++) {
			_cleanup_proxy_rules_ struct proxy_rules *q = rules(pats[i], NULL, NULL);
			struct proxy_verdict v;

			proxy_rules_check(q, names[j], 80, &v);
			if (v.allowed != policy_domain_matches(pats[i], names[j])) {
				diag("disagree: %s vs %s", pats[i], names[j]);
				agree = false;
			}
		}
	ok(agree, "the proxy's matching agrees with policy_domain_matches()");

	/* A wildcard never covers an address. */
	char *l[] = { (char *)"*.0.0.1", NULL };
	struct proxy_rules *n = NULL;

	ok(proxy_rules_new(l, NULL, NULL, 0, NULL, &n, NULL) == -EINVAL,
	   "a wildcard over numeric labels is not a pattern");
	proxy_rules_unref(n);
}

static void test_deny_wins(void)
{
	_cleanup_proxy_rules_ struct proxy_rules *r =
		rules("*.example.test bad.example.test x.evil.test a.example.test:8080",
		      "bad.example.test *.evil.test a.example.test:80", NULL);

	decide(r, "bad.example.test", 443, false, "denyDomains", "\"bad.example.test\"");
	decide(r, "BAD.example.test.", 443, false, "denyDomains", NULL);
	decide(r, "x.evil.test", 443, false, "denyDomains", "\"*.evil.test\"");
	decide(r, "good.example.test", 443, true, "allowDomains", "\"*.example.test\"");
	/* A deny entry with a port denies that port only. */
	decide(r, "a.example.test", 80, false, "denyDomains", "\"a.example.test:80\"");
	decide(r, "a.example.test", 443, true, "allowDomains", NULL);
	decide(r, "a.example.test", 8080, true, "allowDomains", "\"a.example.test:8080\"");
}

static void test_literals(void)
{
	_cleanup_proxy_rules_ struct proxy_rules *none = rules("*.example.test", NULL, NULL);
	_cleanup_proxy_rules_ struct proxy_rules *r =
		rules("10.1.2.3 127.0.0.1:8080 [::1]:8080 [2001:db8::1]", "10.9.9.9", NULL);

	decide(none, "192.0.2.7", 443, false, "ipLiteral", "192.0.2.7 is not listed");
	decide(none, "8.8.8.8", 443, false, "ipLiteral", NULL);
	decide(none, "[::1]", 443, false, "ipLiteral", "[::1]");
	decide(none, "::1", 443, false, "ipLiteral", NULL);
	/* Spellings the resolver would take for 127.0.0.1 are literals too. */
	decide(none, "127.1", 80, false, "ipLiteral", "127.0.0.1");
	decide(none, "0x7f.0.0.1", 80, false, "ipLiteral", "127.0.0.1");
	decide(none, "2130706433", 80, false, "ipLiteral", "127.0.0.1");
	decide(none, "017700000001", 80, false, "ipLiteral", "127.0.0.1");
	decide(none, "0x7f000001", 80, false, "ipLiteral", "127.0.0.1");

	decide(r, "10.1.2.3", 443, true, "allowDomains", "\"10.1.2.3\"");
	decide(r, "10.1.2.3", 22, false, "allowPorts", NULL);
	decide(r, "127.0.0.1", 8080, true, "allowDomains", NULL);
	decide(r, "127.1", 8080, true, "allowDomains", NULL);
	decide(r, "127.0.0.1", 80, false, "allowPorts", NULL);
	decide(r, "127.0.0.2", 8080, false, "ipLiteral", NULL);
	decide(r, "[::1]", 8080, true, "allowDomains", "\"[::1]:8080\"");
	decide(r, "[0:0::1]", 8080, true, "allowDomains", NULL);
	decide(r, "::1", 8080, true, "allowDomains", NULL);
	decide(r, "[2001:DB8:0::1]", 443, true, "allowDomains", NULL);
	/* v4-mapped is another address as far as listing goes. */
	decide(r, "[::ffff:127.0.0.1]", 8080, false, "ipLiteral", NULL);
	decide(r, "10.9.9.9", 443, false, "denyDomains", NULL);

	/* A listed literal is the explicit permission for its private address. */
	address(r, "10.1.2.3", 443, "10.1.2.3", true, NULL);
	address(r, "127.0.0.1", 8080, "127.0.0.1", true, NULL);
	address(r, "[::1]", 8080, "::1", true, NULL);

	struct proxy_verdict v;

	proxy_rules_check(r, "10.1.2.3", 443, &v);
	ok(v.have_addr && v.explicit_address && v.kind == PROXY_HOST_IPV4 &&
		   streq(v.host, "10.1.2.3"),
	   "a literal carries its address");
	proxy_rules_check(r, "::1", 8080, &v);
	ok(v.have_addr && v.kind == PROXY_HOST_IPV6 && streq(v.host, "[::1]"),
	   "an IPv6 literal is canonical and bracketed");
}

static void test_bad_hosts(void)
{
	_cleanup_proxy_rules_ struct proxy_rules *r = rules("*.example.test", NULL, NULL);
	char longname[300];

	decide(r, "", 443, false, "hostName", NULL);
	decide(r, ".", 443, false, "hostName", NULL);
	decide(r, "a..example.test", 443, false, "hostName", NULL);
	decide(r, "a b.example.test", 443, false, "hostName", NULL);
	decide(r, "a/b.example.test", 443, false, "hostName", NULL);
	decide(r, "a%2eexample.test", 443, false, "hostName", NULL);
	decide(r, "1.2.3.4.5", 443, false, "hostName", NULL);
	decide(r, "a.example.123", 443, false, "hostName", NULL);
	decide(r, "[fe80::1%eth0]", 443, false, "hostName", NULL);
	decide(r, "[::1", 443, false, "hostName", NULL);
	decide(r, "[a.example.test]", 443, false, "hostName", NULL);
	memset(longname, 'a', sizeof(longname));
	memcpy(longname + sizeof(longname) - 14, ".example.test", 14);
	decide(r, longname, 443, false, "hostName", NULL);
	memset(longname, 'a', 64);
	memcpy(longname + 64, ".example.test", 14);
	decide(r, longname, 443, false, "hostName", NULL);
	decide(r, "a_b.example.test", 443, true, "allowDomains", NULL);
}

static void test_classes(void)
{
	static const struct {
		const char *a;
		enum proxy_addr_class c;
	} cases[] = {
		{ "8.8.8.8", PROXY_ADDR_PUBLIC },
		{ "1.1.1.1", PROXY_ADDR_PUBLIC },
		{ "127.0.0.1", PROXY_ADDR_LOOPBACK },
		{ "127.255.255.254", PROXY_ADDR_LOOPBACK },
		{ "10.0.0.1", PROXY_ADDR_PRIVATE },
		{ "10.255.255.255", PROXY_ADDR_PRIVATE },
		{ "11.0.0.1", PROXY_ADDR_PUBLIC },
		{ "172.16.0.1", PROXY_ADDR_PRIVATE },
		{ "172.31.255.255", PROXY_ADDR_PRIVATE },
		{ "172.15.255.255", PROXY_ADDR_PUBLIC },
		{ "172.32.0.1", PROXY_ADDR_PUBLIC },
		{ "192.168.1.1", PROXY_ADDR_PRIVATE },
		{ "192.169.0.1", PROXY_ADDR_PUBLIC },
		{ "169.254.169.254", PROXY_ADDR_LINK_LOCAL },
		{ "100.64.0.1", PROXY_ADDR_CGNAT },
		{ "100.127.255.255", PROXY_ADDR_CGNAT },
		{ "100.128.0.1", PROXY_ADDR_PUBLIC },
		{ "0.0.0.0", PROXY_ADDR_UNSPECIFIED },
		{ "0.1.2.3", PROXY_ADDR_UNSPECIFIED },
		{ "224.0.0.1", PROXY_ADDR_MULTICAST },
		{ "239.255.255.255", PROXY_ADDR_MULTICAST },
		{ "255.255.255.255", PROXY_ADDR_BROADCAST },
		{ "240.0.0.1", PROXY_ADDR_RESERVED },
		{ "192.0.0.8", PROXY_ADDR_RESERVED },
		{ "192.0.2.1", PROXY_ADDR_RESERVED },
		{ "198.18.0.1", PROXY_ADDR_RESERVED },
		{ "198.19.255.255", PROXY_ADDR_RESERVED },
		{ "198.51.100.1", PROXY_ADDR_RESERVED },
		{ "203.0.113.1", PROXY_ADDR_RESERVED },
		{ "::1", PROXY_ADDR_LOOPBACK },
		{ "::", PROXY_ADDR_UNSPECIFIED },
		{ "::ffff:127.0.0.1", PROXY_ADDR_LOOPBACK },
		{ "::ffff:10.0.0.1", PROXY_ADDR_PRIVATE },
		{ "::ffff:169.254.169.254", PROXY_ADDR_LINK_LOCAL },
		{ "::ffff:0.0.0.0", PROXY_ADDR_UNSPECIFIED },
		{ "::ffff:8.8.8.8", PROXY_ADDR_PUBLIC },
		{ "::127.0.0.1", PROXY_ADDR_LOOPBACK },
		{ "64:ff9b::10.0.0.1", PROXY_ADDR_PRIVATE },
		{ "64:ff9b::8.8.8.8", PROXY_ADDR_PUBLIC },
		{ "64:ff9b:1::1", PROXY_ADDR_PRIVATE },
		{ "2002:7f00:1::", PROXY_ADDR_LOOPBACK },
		{ "2002:c0a8:101::1", PROXY_ADDR_PRIVATE },
		{ "2002:808:808::1", PROXY_ADDR_PUBLIC },
		{ "fc00::1", PROXY_ADDR_ULA },
		{ "fd12:3456::1", PROXY_ADDR_ULA },
		{ "fe80::1", PROXY_ADDR_LINK_LOCAL },
		{ "febf::1", PROXY_ADDR_LINK_LOCAL },
		{ "fec0::1", PROXY_ADDR_PRIVATE },
		{ "ff02::1", PROXY_ADDR_MULTICAST },
		{ "2001:db8::1", PROXY_ADDR_RESERVED },
		{ "2001::1", PROXY_ADDR_RESERVED },
		{ "100::1", PROXY_ADDR_RESERVED },
		{ "2001:4860:4860::8888", PROXY_ADDR_PUBLIC },
		{ "2606:4700::1111", PROXY_ADDR_PUBLIC },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct proxy_addr a = addr(cases[i].a);
		enum proxy_addr_class c = proxy_addr_classify(&a);

		if (!ok(c == cases[i].c, "%s is %s", cases[i].a,
			proxy_addr_class_to_string(cases[i].c)))
			diag("got %s", proxy_addr_class_to_string(c));
	}
}

static void test_resolved_addresses(void)
{
	_cleanup_proxy_rules_ struct proxy_rules *r = rules("*.example.test", NULL, NULL);
	struct proxy_verdict v;

	proxy_rules_check(r, "a.example.test", 443, &v);
	ok(v.allowed && !v.have_addr && !v.explicit_address, "a name without a pin needs DNS");
	/* No DNS-rebinding path to the host: what DNS says is checked. */
	address(r, "a.example.test", 443, "93.184.216.34", true, NULL);
	address(r, "a.example.test", 443, "127.0.0.1", false, "privateAddress");
	address(r, "a.example.test", 443, "10.0.0.1", false, "privateAddress");
	address(r, "a.example.test", 443, "169.254.169.254", false, "privateAddress");
	address(r, "a.example.test", 443, "100.64.1.1", false, "privateAddress");
	address(r, "a.example.test", 443, "::1", false, "privateAddress");
	address(r, "a.example.test", 443, "::ffff:127.0.0.1", false, "privateAddress");
	address(r, "a.example.test", 443, "::ffff:192.168.0.1", false, "privateAddress");
	address(r, "a.example.test", 443, "fd00::1", false, "privateAddress");
	address(r, "a.example.test", 443, "fe80::1", false, "privateAddress");
	address(r, "a.example.test", 443, "0.0.0.0", false, "address");
	address(r, "a.example.test", 443, "224.0.0.1", false, "address");
	address(r, "a.example.test", 443, "2606:4700::1111", true, NULL);

	proxy_rules_check(r, "a.example.test", 443, &v);
	struct proxy_addr lo = addr("127.0.0.1");

	ok(!proxy_rules_check_address(&v, &lo) && !v.allowed && strstr(v.reason, "127.0.0.1") &&
		   strstr(v.reason, "loopback"),
	   "the refusal names the address and its range: %s", v.reason);
}

static void test_pins(void)
{
	_cleanup_proxy_rules_ struct proxy_rules *r = rules(
		"*.example.test web.test:8080 other.test", "bad.example.test",
		"a.example.test=127.0.0.1 bad.example.test=127.0.0.1 notallowed.test=127.0.0.1 "
		"web.test:8080:127.0.0.1 v6.example.test=::1 zero.example.test=0.0.0.0 "
		"m.example.test:443:[::ffff:10.0.0.1]");
	struct proxy_verdict v;

	proxy_rules_check(r, "a.example.test", 443, &v);
	ok(v.allowed && v.pinned && v.have_addr && v.explicit_address &&
		   strstr(v.reason, "a.example.test=127.0.0.1"),
	   "a pin supplies the address and says so: %s", v.reason);
	address(r, "a.example.test", 443, "127.0.0.1", true, NULL);
	address(r, "v6.example.test", 80, "::1", true, NULL);
	/* The pin is the permission for that name only: another name to the same address is not. */
	address(r, "b.example.test", 443, "127.0.0.1", false, "privateAddress");
	/* A pinned name still needs to be allowed; deny still wins. */
	decide(r, "notallowed.test", 443, false, "allowDomains", NULL);
	decide(r, "bad.example.test", 443, false, "denyDomains", NULL);
	/* curl's form pins one port. */
	proxy_rules_check(r, "web.test", 8080, &v);
	ok(v.pinned && v.explicit_address, "\"web.test:8080:127.0.0.1\" pins port 8080");
	proxy_rules_check(r, "m.example.test", 443, &v);
	ok(v.pinned && v.addr.family == AF_INET6, "a bracketed pin address");
	proxy_rules_check(r, "m.example.test", 80, &v);
	ok(v.allowed && !v.pinned && !v.explicit_address, "a port pin does not cover other ports");
	/* Never a destination, pinned or not. */
	proxy_rules_check(r, "zero.example.test", 443, &v);
	ok(v.pinned && !proxy_rules_check_address(&v, &v.addr) && streq(v.rule, "address"),
	   "a pin to 0.0.0.0 is refused: %s", v.reason);
}

static void test_build_errors(void)
{
	static const char *const bad_patterns[] = {
		"*foo.test", "foo.*.test", "a.test:0", "a.test:65536", "a.test:x",
		"[::1",	     "[::1]x",	   "127.1",    "::1",	       "a..test",
		"*.",	     "",	   "*.1.2",    "a b",	       "a.test:",
	};
	static const char *const bad_pins[] = {
		"x.test=notanaddress", "x.test",	 "x.test:80", "x.test:0:127.0.0.1",
		"*.x.test=127.0.0.1",  "x.test:80:[::1",
	};

	for (size_t i = 0; i < ELEMENTSOF(bad_patterns); i++) {
		char *l[] = { (char *)bad_patterns[i], NULL };
		struct proxy_rules *r = NULL;
		const char *bad = NULL;

		ok(proxy_rules_new(l, NULL, NULL, 0, NULL, &r, &bad) == -EINVAL && bad == l[0],
		   "pattern \"%s\" refused", bad_patterns[i]);
		proxy_rules_unref(r);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad_pins); i++) {
		char *l[] = { (char *)bad_pins[i], NULL };
		struct proxy_rules *r = NULL;
		const char *bad = NULL;

		ok(proxy_rules_new(NULL, NULL, NULL, 0, l, &r, &bad) == -EINVAL && bad == l[0],
		   "pin \"%s\" refused", bad_pins[i]);
		proxy_rules_unref(r);
	}
	const unsigned ports[] = { 0 };
	struct proxy_rules *r = NULL;

	ok(proxy_rules_new(NULL, NULL, ports, 1, NULL, &r, NULL) == -EINVAL, "port 0 refused");
	proxy_rules_unref(r);
}

static void test_live_changes(void)
{
	_cleanup_proxy_rules_ struct proxy_rules *r = rules("a.test b.test", "c.test", NULL);
	_cleanup_proxy_rules_ struct proxy_rules *w = NULL, *n = NULL, *x = NULL;
	_cleanup_json_ json_t *j = NULL;
	_cleanup_free_ char *s = NULL;
	struct proxy_verdict v;

	ok(proxy_rules_allow(r, "C.Test", &w) == 0, "allow c.test");
	proxy_rules_check(w, "c.test", 443, &v);
	ok(v.allowed, "allowing drops the identical deny entry");
	proxy_rules_check(r, "c.test", 443, &v);
	ok(!v.allowed, "the original rules are unchanged");
	ok(proxy_rules_deny(w, "a.test", &n) == 0, "deny a.test");
	proxy_rules_check(n, "a.test", 443, &v);
	ok(!v.allowed && streq(v.rule, "denyDomains"), "denied after the change");
	proxy_rules_check(n, "b.test", 443, &v);
	ok(v.allowed, "the rest stays allowed");
	ok(proxy_rules_deny(n, "*.", &x) == -EINVAL && !x, "a bad pattern is refused");

	ok(proxy_rules_to_json(n, &j) == 0, "to JSON");
	s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	is_str("{\"allowDomains\":[\"b.test\",\"c.test\"],\"allowPorts\":[80,443],"
	       "\"denyDomains\":[\"a.test\"],\"resolve\":[]}",
	       s, "the changed rules as JSON");

	_cleanup_free_ char *c = NULL;

	ok(proxy_pattern_canonicalize("*.EXAMPLE.test.:443", &c) == 0 &&
		   streq(c, "*.example.test:443"),
	   "patterns are folded to lower case without a trailing dot");
	free(TAKE_PTR(c));
	ok(proxy_pattern_canonicalize("[0::1]:80", &c) == 0 && streq(c, "[::1]:80"),
	   "IPv6 patterns are canonical");
}

static void test_from_policy(void)
{
	static const char doc[] =
		"{\"version\":1,\"network\":{\"mode\":\"proxy\",\"allowDomains\":[\"*.example.test\","
		"\"api.test:8443\"],\"denyDomains\":[\"bad.example.test\"],\"allowPorts\":[443],"
		"\"resolve\":[\"a.example.test=127.0.0.1\"]}}";
	_cleanup_policy_ struct policy *p = NULL;
	_cleanup_proxy_rules_ struct proxy_rules *r = NULL;
	struct field_error fe = { "", "" };
	struct proxy_verdict v;

	if (policy_parse_string(doc, strlen(doc), &p, &fe) < 0)
		bail("policy: %s: %s", fe.field, fe.reason);
	ok(proxy_rules_from_policy(p, &r) == 0, "rules from a policy");
	decide(r, "x.example.test", 443, true, "allowDomains", NULL);
	decide(r, "x.example.test", 80, false, "allowPorts", "allowPorts [443]");
	decide(r, "bad.example.test", 443, false, "denyDomains", NULL);
	decide(r, "api.test", 8443, true, "allowDomains", NULL);
	proxy_rules_check(r, "a.example.test", 443, &v);
	ok(v.pinned && v.explicit_address, "the policy's pin applies");
}

int main(void)
{
	plan_lazy();
	test_exact_and_ports();
	test_wildcards();
	test_deny_wins();
	test_literals();
	test_bad_hosts();
	test_classes();
	test_resolved_addresses();
	test_pins();
	test_build_errors();
	test_live_changes();
	test_from_policy();
	return tap_exit_status();
}
