/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"

const char *startswith(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(s, prefix, n) == 0 ? s + n : NULL;
}

bool endswith(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

int safe_atou64(const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	/* No leading zeros except "0" itself: "010" is ambiguous. */
	if (s[0] == '0' && s[1])
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
			return -ERANGE;
	}
	*ret = v;
	return 0;
}

int safe_atou(const char *s, unsigned *ret)
{
	uint64_t v;
	int r = safe_atou64(s, &v);

	if (r < 0)
		return r;
	if (v > UINT_MAX)
		return -ERANGE;
	*ret = (unsigned)v;
	return 0;
}

int safe_atoi(const char *s, int *ret)
{
	bool neg = false;
	uint64_t v;
	int r;

	if (s && *s == '-') {
		neg = true;
		s++;
	}
	r = safe_atou64(s, &v);
	if (r < 0)
		return r;
	if (neg ? v > (uint64_t)INT_MAX + 1 : v > INT_MAX)
		return -ERANGE;
	*ret = neg ? (int)(-(int64_t)v) : (int)v;
	return 0;
}

size_t strv_length(char *const *l)
{
	size_t n = 0;

	if (l)
		while (l[n])
			n++;
	return n;
}

void strv_free(char **l)
{
	if (!l)
		return;
	for (char **p = l; *p; p++)
		free(*p);
	free(l);
}

char **strv_copy(char *const *l)
{
	size_t n = strv_length(l);
	char **c = calloc(n + 1, sizeof(char *));

	if (!c)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		c[i] = strdup(l[i]);
		if (!c[i]) {
			strv_free(c);
			return NULL;
		}
	}
	return c;
}

bool strv_contains(char *const *l, const char *s)
{
	if (l)
		for (; *l; l++)
			if (streq(*l, s))
				return true;
	return false;
}

bool path_is_absolute(const char *p)
{
	return p && p[0] == '/';
}

bool path_is_normalized(const char *p)
{
	const char *c;

	if (!path_is_absolute(p))
		return false;
	if (streq(p, "/"))
		return true;
	for (const char *q = p; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			return false;
	if (endswith(p, "/"))
		return false;
	/* Walk components: each starts after a '/'. */
	for (c = p + 1;;) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);

		if (n == 0)
			return false;
		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		if (!e)
			break;
		c = e + 1;
	}
	return true;
}

bool path_startswith(const char *path, const char *prefix)
{
	size_t n;

	if (streq(prefix, "/"))
		return path_is_absolute(path);
	n = strlen(prefix);
	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

char *strdup_printf(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return r < 0 ? NULL : s;
}

bool ascii_strcaseeq(const char *a, const char *b)
{
	for (;; a++, b++) {
		char x = *a, y = *b;

		if (x >= 'A' && x <= 'Z')
			x = (char)(x - 'A' + 'a');
		if (y >= 'A' && y <= 'Z')
			y = (char)(y - 'A' + 'a');
		if (x != y)
			return false;
		if (!x)
			return true;
	}
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *base64_encode(const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t n = (len + 2) / 3 * 4, o = 0;
	char *s;

	if (len > (SIZE_MAX - 1) / 4 * 3 - 2)
		return NULL;
	s = malloc(n + 1);
	if (!s)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)p[i] << 16;

		if (i + 1 < len)
			v |= (unsigned)p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		s[o++] = b64[(v >> 18) & 63];
		s[o++] = b64[(v >> 12) & 63];
		s[o++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		s[o++] = i + 2 < len ? b64[v & 63] : '=';
	}
	s[o] = '\0';
	return s;
}

static int b64_value(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;

	return p ? (int)(p - b64) : -1;
}

int base64_decode(const char *s, size_t len, void **ret, size_t *ret_len)
{
	unsigned char *out;
	size_t o = 0;

	if (len % 4 != 0)
		return -EINVAL;
	out = malloc(len / 4 * 3 + 1);
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < len; i += 4) {
		int a = b64_value(s[i]), b = b64_value(s[i + 1]);
		int c = s[i + 2] == '=' ? -2 : b64_value(s[i + 2]);
		int d = s[i + 3] == '=' ? -2 : b64_value(s[i + 3]);
		bool last = i + 4 == len;

		if (a < 0 || b < 0 || c == -1 || d == -1 || (c == -2 && d != -2) ||
		    ((c == -2 || d == -2) && !last) || (c == -2 && (b & 15)) ||
		    (c >= 0 && d == -2 && (c & 3))) {
			free(out);
			return -EINVAL;
		}
		out[o++] = (unsigned char)(a << 2 | b >> 4);
		if (c >= 0)
			out[o++] = (unsigned char)((b & 15) << 4 | c >> 2);
		if (d >= 0)
			out[o++] = (unsigned char)((c & 3) << 6 | d);
	}
	*ret = out;
	*ret_len = o;
	return 0;
}

bool utf8_is_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		unsigned char c = p[i];
		size_t n;
		uint32_t cp;

		if (c == 0)
			return false;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			n = 1, cp = c & 0x1F;
		else if (c >= 0xE0 && c <= 0xEF)
			n = 2, cp = c & 0x0F;
		else if (c >= 0xF0 && c <= 0xF4)
			n = 3, cp = c & 0x07;
		else
			return false;
		for (size_t k = 1; k <= n; k++) {
			if (i + k >= len || (p[i + k] & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3F);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += n + 1;
	}
	return true;
}
