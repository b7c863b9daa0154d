/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Parsing of the audit records launcherd turns into denials (launcherd-audit-record.h). The
 * text comes from the kernel, but parts of it (paths, command names) from the sandbox: every
 * field is bounded, decoded strictly, and a record that does not parse is dropped whole.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "launcherd/launcherd-audit-record.h"

struct cursor {
	const char *p, *end;
};

/* key=value pairs: the next one, its key and its value raw (quotes kept). 0 at the end, 1 for a
 * pair, -EBADMSG. */
static int next_pair(struct cursor *c, const char **key, size_t *klen, const char **val,
		     size_t *vlen)
{
	const char *k, *v;

	while (c->p < c->end && *c->p == ' ')
		c->p++;
	if (c->p >= c->end)
		return 0;
	k = c->p;
	while (c->p < c->end && *c->p != '=' && *c->p != ' ')
		c->p++;
	if (c->p >= c->end || *c->p != '=' || c->p == k)
		return -EBADMSG;
	*key = k;
	*klen = (size_t)(c->p - k);
	v = ++c->p;
	if (c->p < c->end && *c->p == '"') {
		c->p++;
		while (c->p < c->end && *c->p != '"')
			c->p++;
		if (c->p >= c->end)
			return -EBADMSG;
		c->p++;
	} else
		while (c->p < c->end && *c->p != ' ')
			c->p++;
	*val = v;
	*vlen = (size_t)(c->p - v);
	return 1;
}

static bool key_is(const char *key, size_t klen, const char *name)
{
	return strlen(name) == klen && memcmp(key, name, klen) == 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * A string value: "quoted" as it is, else hex-decoded (the kernel's untrusted-string form), else
 * (plain) "(null)" or "?" as empty. Never NUL inside; at most size - 1 bytes.
 */
static int get_string(const char *v, size_t vlen, char *buf, size_t size)
{
	size_t n = 0;

	if (vlen >= 2 && v[0] == '"' && v[vlen - 1] == '"') {
		if (vlen - 2 >= size)
			return -EBADMSG;
		for (size_t i = 1; i + 1 < vlen; i++)
			if (v[i] == '\0')
				return -EBADMSG;
		memcpy(buf, v + 1, vlen - 2);
		buf[vlen - 2] = 0;
		return 0;
	}
	if ((vlen == 6 && memcmp(v, "(null)", 6) == 0) || (vlen == 1 && v[0] == '?')) {
		buf[0] = 0;
		return 0;
	}
	if (vlen == 0 || vlen % 2 || vlen / 2 >= size)
		return -EBADMSG;
	for (size_t i = 0; i < vlen; i += 2) {
		int hi = hexval(v[i]), lo = hexval(v[i + 1]);

		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return -EBADMSG;
		buf[n++] = (char)(hi << 4 | lo);
	}
	buf[n] = 0;
	return 0;
}

/*
 * A path: a string as above, or an abstract UNIX socket's name (a Landlock scope record: hex,
 * its first byte NUL), written as ss(8) writes it: '@' for the leading NUL and for every NUL
 * within the name, which may hold any byte.
 */
static int get_path(const char *v, size_t vlen, char *buf, size_t size)
{
	size_t n = 0;

	if (vlen < 2 || v[0] != '0' || v[1] != '0' || vlen % 2 || vlen / 2 >= size)
		return get_string(v, vlen, buf, size);
	for (size_t i = 0; i < vlen; i += 2) {
		int hi = hexval(v[i]), lo = hexval(v[i + 1]);

		if (hi < 0 || lo < 0)
			return -EBADMSG;
		buf[n++] = hi == 0 && lo == 0 ? '@' : (char)(hi << 4 | lo);
	}
	buf[n] = 0;
	return 0;
}

/* An unsigned number in base (10 or 16, hex with an optional 0x), fitting max. */
static int get_number(const char *v, size_t vlen, int base, uint64_t max, uint64_t *ret)
{
	uint64_t x = 0;
	size_t i = 0;

	if (base == 16 && vlen > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X'))
		i = 2;
	if (i >= vlen || vlen - i > 20)
		return -EBADMSG;
	for (; i < vlen; i++) {
		int d = base == 16 ? hexval(v[i]) : (v[i] >= '0' && v[i] <= '9' ? v[i] - '0' : -1);

		if (d < 0 || x > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return -EBADMSG;
		x = x * (uint64_t)base + (uint64_t)d;
	}
	if (x > max)
		return -EBADMSG;
	*ret = x;
	return 0;
}

static int get_signed(const char *v, size_t vlen, long min, long max, long *ret)
{
	uint64_t x;
	int r;

	if (vlen > 0 && v[0] == '-') {
		r = get_number(v + 1, vlen - 1, 10, (uint64_t) - (min + 1) + 1, &x);
		if (r < 0)
			return r;
		*ret = -(long)(x - 1) - 1;
		return 0;
	}
	r = get_number(v, vlen, 10, (uint64_t)max, &x);
	if (r < 0)
		return r;
	*ret = (long)x;
	return 0;
}

/* "audit(1796157131.394:3): " */
static int parse_header(struct cursor *c, struct audit_record *r)
{
	const char *p = c->p, *q;
	uint64_t sec, ms, serial;

	if ((size_t)(c->end - p) < 6 || memcmp(p, "audit(", 6) != 0)
		return -EBADMSG;
	p += 6;
	for (q = p; q < c->end && *q != '.'; q++)
		;
	if (q >= c->end || get_number(p, (size_t)(q - p), 10, UINT64_MAX / 1000 - 1000, &sec) < 0)
		return -EBADMSG;
	p = q + 1;
	for (q = p; q < c->end && *q != ':'; q++)
		;
	if (q >= c->end || q - p != 3 || get_number(p, 3, 10, 999, &ms) < 0)
		return -EBADMSG;
	p = q + 1;
	for (q = p; q < c->end && *q != ')'; q++)
		;
	if (q >= c->end || get_number(p, (size_t)(q - p), 10, UINT32_MAX, &serial) < 0)
		return -EBADMSG;
	p = q + 1;
	if (c->end - p < 1 || *p != ':')
		return -EBADMSG;
	c->p = p + 1;
	r->msec = sec * 1000 + ms;
	r->serial = (uint32_t)serial;
	return 0;
}

/* blockers: comma-separated "fs.read_file", "net.connect_tcp", "scope.signal" words */
static int get_blockers(const char *v, size_t vlen, char *buf, size_t size)
{
	if (vlen == 0 || vlen >= size)
		return -EBADMSG;
	for (size_t i = 0; i < vlen; i++)
		if (!((v[i] >= 'a' && v[i] <= 'z') || v[i] == '_' || v[i] == '.' || v[i] == ','))
			return -EBADMSG;
	memcpy(buf, v, vlen);
	buf[vlen] = 0;
	return 0;
}

static int parse_landlock(struct cursor *c, struct audit_record *r)
{
	const char *k, *v;
	size_t kl, vl;
	uint64_t x;
	int n;

	while ((n = next_pair(c, &k, &kl, &v, &vl)) > 0) {
		int e = 0;

		if (key_is(k, kl, "domain"))
			e = get_number(v, vl, 16, UINT64_MAX, &r->domain);
		else if (key_is(k, kl, "blockers") && r->type == CORDON_AUDIT_LANDLOCK_ACCESS)
			e = get_blockers(v, vl, r->blockers, sizeof(r->blockers));
		else if (key_is(k, kl, "path") || key_is(k, kl, "name"))
			e = r->path[0] ? 0 : get_path(v, vl, r->path, sizeof(r->path));
		else if (key_is(k, kl, "dest") || key_is(k, kl, "dport") || key_is(k, kl, "src") ||
			 key_is(k, kl, "lport")) {
			e = get_number(v, vl, 10, 65535, &x);
			r->port = (int)x;
		} else if (key_is(k, kl, "daddr") || key_is(k, kl, "saddr") ||
			   key_is(k, kl, "laddr")) {
			if (vl >= sizeof(r->addr))
				return -EBADMSG;
			for (size_t i = 0; i < vl; i++)
				if (!strchr("0123456789abcdefABCDEF.:", v[i]))
					return -EBADMSG;
			memcpy(r->addr, v, vl);
			r->addr[vl] = 0;
		} else if (key_is(k, kl, "status") && r->type == CORDON_AUDIT_LANDLOCK_DOMAIN) {
			if (vl == 9 && memcmp(v, "allocated", 9) == 0)
				r->status = AUDIT_DOMAIN_ALLOCATED;
			else if (vl == 11 && memcmp(v, "deallocated", 11) == 0)
				r->status = AUDIT_DOMAIN_DEALLOCATED;
			else
				return -EBADMSG;
		} else if (key_is(k, kl, "pid") && r->type == CORDON_AUDIT_LANDLOCK_DOMAIN) {
			e = get_number(v, vl, 10, INT32_MAX, &x);
			r->pid = (pid_t)x;
		} else if (key_is(k, kl, "uid") && r->type == CORDON_AUDIT_LANDLOCK_DOMAIN) {
			e = get_number(v, vl, 10, UINT32_MAX, &x);
			r->uid = (uid_t)x;
		} else if (key_is(k, kl, "denials"))
			e = get_number(v, vl, 10, UINT64_MAX, &r->denials);
		else if (key_is(k, kl, "exe"))
			e = get_string(v, vl, r->exe, sizeof(r->exe));
		else if (key_is(k, kl, "comm"))
			e = get_string(v, vl, r->comm, sizeof(r->comm));
		if (e < 0)
			return -EBADMSG;
	}
	if (n < 0 || r->domain == 0)
		return -EBADMSG;
	if (r->type == CORDON_AUDIT_LANDLOCK_ACCESS && !r->blockers[0])
		return -EBADMSG;
	if (r->type == CORDON_AUDIT_LANDLOCK_DOMAIN &&
	    (r->status == AUDIT_DOMAIN_NONE ||
	     (r->status == AUDIT_DOMAIN_ALLOCATED && r->pid <= 0)))
		return -EBADMSG;
	return 0;
}

static int parse_seccomp(struct cursor *c, struct audit_record *r)
{
	bool have_syscall = false, have_pid = false, have_code = false;
	const char *k, *v;
	size_t kl, vl;
	uint64_t x;
	long l;
	int n;

	while ((n = next_pair(c, &k, &kl, &v, &vl)) > 0) {
		int e = 0;

		if (key_is(k, kl, "pid")) {
			e = get_number(v, vl, 10, INT32_MAX, &x);
			r->pid = (pid_t)x;
			have_pid = true;
		} else if (key_is(k, kl, "uid")) {
			e = get_number(v, vl, 10, UINT32_MAX, &x);
			r->uid = (uid_t)x;
		} else if (key_is(k, kl, "ses")) {
			e = get_number(v, vl, 10, UINT32_MAX, &x);
			r->session = (uint32_t)x;
		} else if (key_is(k, kl, "arch")) {
			e = get_number(v, vl, 16, UINT32_MAX, &x);
			r->arch = (uint32_t)x;
		} else if (key_is(k, kl, "syscall")) {
			e = get_signed(v, vl, INT32_MIN, INT32_MAX, &l);
			r->syscall = (int)l;
			have_syscall = true;
		} else if (key_is(k, kl, "code")) {
			e = get_number(v, vl, 16, UINT32_MAX, &x);
			r->code = (uint32_t)x;
			have_code = true;
		} else if (key_is(k, kl, "sig"))
			e = get_signed(v, vl, 0, 64, &r->sig);
		else if (key_is(k, kl, "comm"))
			e = get_string(v, vl, r->comm, sizeof(r->comm));
		else if (key_is(k, kl, "exe"))
			e = get_string(v, vl, r->exe, sizeof(r->exe));
		if (e < 0)
			return -EBADMSG;
	}
	if (n < 0 || !have_syscall || !have_pid || !have_code || r->pid <= 0)
		return -EBADMSG;
	return 0;
}

/* "op=set audit_enabled=1 old=0 auid=… ses=… res=1": only audit_enabled matters */
static int parse_config(struct cursor *c, struct audit_record *r)
{
	const char *k, *v;
	size_t kl, vl;
	uint64_t x;
	int n;

	while ((n = next_pair(c, &k, &kl, &v, &vl)) > 0)
		if (key_is(k, kl, "audit_enabled")) {
			if (get_number(v, vl, 10, 2, &x) < 0)
				return -EBADMSG;
			r->audit_enabled = (int)x;
		}
	return n < 0 ? -EBADMSG : 0;
}

int audit_record_parse(int type, const char *text, size_t len, struct audit_record *ret)
{
	struct cursor c = { .p = text, .end = text + len };
	struct audit_record *r = ret;
	int e;

	if (type != CORDON_AUDIT_SECCOMP && type != CORDON_AUDIT_LANDLOCK_ACCESS &&
	    type != CORDON_AUDIT_LANDLOCK_DOMAIN && type != CORDON_AUDIT_CONFIG_CHANGE)
		return -ENOENT;
	memset(r, 0, sizeof(*r));
	r->type = type;
	r->port = -1;
	r->session = UINT32_MAX;
	r->audit_enabled = -1;
	/* The kernel may end the payload with a NUL (or several): not part of the text. */
	while (c.end > c.p && c.end[-1] == '\0')
		c.end--;
	e = memchr(c.p, '\0', (size_t)(c.end - c.p)) ? -EBADMSG : parse_header(&c, r);
	if (e == 0)
		e = type == CORDON_AUDIT_SECCOMP	 ? parse_seccomp(&c, r)
		    : type == CORDON_AUDIT_CONFIG_CHANGE ? parse_config(&c, r)
							 : parse_landlock(&c, r);
	if (e < 0) {
		memset(r, 0, sizeof(*r));
		return e;
	}
	return 0;
}
