/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ustar + pax codec; see tar.h. Header layout (POSIX.1-2001 ustar), offsets and widths:
 * name 0/100, mode 100/8, uid 108/8, gid 116/8, size 124/12, mtime 136/12, chksum 148/8,
 * typeflag 156/1, linkname 157/100, magic 257/6, version 263/2, uname 265/32, gname 297/32,
 * devmajor 329/8, devminor 337/8, prefix 345/155, then 12 unused bytes (required zero here).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/system.h"
#include "common/tar.h"

#define F_NAME 0, 100
#define F_MODE 100, 8
#define F_UID 108, 8
#define F_GID 116, 8
#define F_SIZE 124, 12
#define F_MTIME 136, 12
#define F_CHKSUM 148, 8
#define O_TYPEFLAG 156
#define F_LINKNAME 157, 100
#define F_MAGIC 257, 6
#define F_VERSION 263, 2
#define F_UNAME 265, 32
#define F_GNAME 297, 32
#define F_DEVMAJOR 329, 8
#define F_DEVMINOR 337, 8
#define F_PREFIX 345, 155
#define F_UNUSED 500, 12

#define OCTAL_7_MAX 07777777ULL

static const uint8_t zero_block[TAR_BLOCK_SIZE];

const char *tar_typeflag_name(char typeflag)
{
	switch (typeflag) {
	case '0':
	case '\0':
		return "regular file";
	case '1':
		return "hard link";
	case '2':
		return "symlink";
	case '3':
		return "character device";
	case '4':
		return "block device";
	case '5':
		return "directory";
	case '6':
		return "FIFO";
	case '7':
		return "contiguous file";
	case 'x':
		return "pax extended header";
	case 'g':
		return "pax global header";
	default:
		return "unknown type";
	}
}

static unsigned header_checksum(const uint8_t *b)
{
	unsigned sum = 0;

	for (size_t i = 0; i < TAR_BLOCK_SIZE; i++)
		sum += (i >= 148 && i < 156) ? (unsigned)' ' : b[i];
	return sum;
}

void tar_header_fix_checksum(uint8_t block[TAR_BLOCK_SIZE])
{
	char buf[9];

	(void)snprintf(buf, sizeof(buf), "%06o", header_checksum(block));
	memcpy(block + 148, buf, 6);
	block[154] = '\0';
	block[155] = ' ';
}

/* ---------------------------------------------------------------------------------------------
 * Writer
 */

static void put_octal(uint8_t *b, size_t off, size_t width, uint64_t v)
{
	char buf[24];

	/* width - 1 digits, zero-filled, then a NUL. */
	(void)snprintf(buf, sizeof(buf), "%0*" PRIo64, (int)(width - 1), v);
	memcpy(b + off, buf, width - 1);
	b[off + width - 1] = '\0';
}

static int format_block(char typeflag, const char *name, const char *link, uint32_t mode,
			uint64_t uid, uint64_t gid, uint64_t size, int64_t mtime,
			uint8_t b[TAR_BLOCK_SIZE])
{
	size_t nl = strlen(name), ll = strlen(link);

	if (nl > 100 || ll > 100)
		return -ENAMETOOLONG;
	if (size > TAR_USTAR_SIZE_MAX || mtime < 0 || (uint64_t)mtime > TAR_USTAR_SIZE_MAX ||
	    uid > OCTAL_7_MAX || gid > OCTAL_7_MAX)
		return -ERANGE;
	memset(b, 0, TAR_BLOCK_SIZE);
	memcpy(b, name, nl);
	put_octal(b, F_MODE, mode & 07777);
	put_octal(b, F_UID, uid);
	put_octal(b, F_GID, gid);
	put_octal(b, F_SIZE, size);
	put_octal(b, F_MTIME, (uint64_t)mtime);
	b[O_TYPEFLAG] = (uint8_t)typeflag;
	memcpy(b + 157, link, ll);
	/* magic "ustar\0" and version "00", byte by byte: GCC's -O1 -fsanitize=address array
	 * bounds check misjudges a memcpy at this offset. */
	for (size_t i = 0; i < 8; i++)
		b[257 + i] = (uint8_t) "ustar\0"
				       "00"[i];
	put_octal(b, F_DEVMAJOR, 0);
	put_octal(b, F_DEVMINOR, 0);
	tar_header_fix_checksum(b);
	return 0;
}

static char entry_typeflag(enum tar_type t)
{
	switch (t) {
	case TAR_REGULAR:
		return '0';
	case TAR_DIRECTORY:
		return '5';
	case TAR_SYMLINK:
		return '2';
	default:
		return 0;
	}
}

int tar_format_header(const struct tar_entry *e, uint8_t block[TAR_BLOCK_SIZE])
{
	char tf = entry_typeflag(e->type);

	if (!tf)
		return -EINVAL;
	return format_block(tf, e->path, e->link, e->mode, e->uid, e->gid, e->size, e->mtime,
			    block);
}

void tar_writer_init(struct tar_writer *w, int fd)
{
	*w = (struct tar_writer){ .fd = fd };
}

/* Append the record "%d key=value\n" to buf (capacity cap, length *len). */
static int pax_append(char *buf, size_t cap, size_t *len, const char *key, const char *value)
{
	size_t body = strlen(key) + strlen(value) + 3; /* ' ', '=', '\n' */
	size_t total = body, digits = 0;

	/* The length counts its own digits: grow until the digit count is stable. */
	for (;;) {
		size_t d = 1;

		for (size_t t = total; t >= 10; t /= 10)
			d++;
		if (d == digits)
			break;
		digits = d;
		total = body + digits;
	}
	if (total >= cap - *len)
		return -ENAMETOOLONG;
	(void)snprintf(buf + *len, cap - *len, "%zu %s=%s\n", total, key, value);
	*len += total;
	return 0;
}

static bool entry_valid(const struct tar_entry *e)
{
	if (!entry_typeflag(e->type) || e->path[0] == '\0' ||
	    memchr(e->path, '\0', sizeof(e->path)) == NULL ||
	    memchr(e->link, '\0', sizeof(e->link)) == NULL)
		return false;
	if (e->type != TAR_REGULAR && e->size != 0)
		return false;
	if ((e->type == TAR_SYMLINK) != (e->link[0] != '\0'))
		return false;
	return true;
}

int tar_writer_header(struct tar_writer *w, const struct tar_entry *e)
{
	_cleanup_free_ char *pax = NULL;
	size_t paxlen = 0, cap = 2 * TAR_PATH_MAX + 256;
	uint8_t block[TAR_BLOCK_SIZE];
	char name[101], link[101], num[32];
	uint64_t size = e->size, uid = e->uid, gid = e->gid;
	int64_t mtime = e->mtime;
	int r;

	if (w->in_entry || !entry_valid(e))
		return -EINVAL;

	pax = malloc(cap);
	if (!pax)
		return -ENOMEM;
	/* Whatever does not fit the ustar header goes to a pax record; the header keeps a
	 * truncated or zero stand-in, which a pax reader ignores. */
	if (strlen(e->path) > 100 && (r = pax_append(pax, cap, &paxlen, "path", e->path)) < 0)
		return r;
	if (strlen(e->link) > 100 && (r = pax_append(pax, cap, &paxlen, "linkpath", e->link)) < 0)
		return r;
	if (size > TAR_USTAR_SIZE_MAX) {
		(void)snprintf(num, sizeof(num), "%" PRIu64, size);
		if ((r = pax_append(pax, cap, &paxlen, "size", num)) < 0)
			return r;
		size = 0;
	}
	if (mtime < 0 || (uint64_t)mtime > TAR_USTAR_SIZE_MAX) {
		(void)snprintf(num, sizeof(num), "%" PRId64, mtime);
		if ((r = pax_append(pax, cap, &paxlen, "mtime", num)) < 0)
			return r;
		mtime = 0;
	}
	if (uid > OCTAL_7_MAX) {
		(void)snprintf(num, sizeof(num), "%" PRIu64, uid);
		if ((r = pax_append(pax, cap, &paxlen, "uid", num)) < 0)
			return r;
		uid = 0;
	}
	if (gid > OCTAL_7_MAX) {
		(void)snprintf(num, sizeof(num), "%" PRIu64, gid);
		if ((r = pax_append(pax, cap, &paxlen, "gid", num)) < 0)
			return r;
		gid = 0;
	}

	(void)snprintf(name, sizeof(name), "%s", e->path);
	(void)snprintf(link, sizeof(link), "%s", e->link);

	if (paxlen > 0) {
		char pname[64];

		(void)snprintf(pname, sizeof(pname), "PaxHeaders/%lu", ++w->pax_serial);
		r = format_block('x', pname, "", 0644, 0, 0, paxlen, mtime, block);
		if (r < 0)
			return r;
		r = loop_write(w->fd, block, sizeof(block));
		if (r < 0)
			return r;
		r = loop_write(w->fd, pax, paxlen);
		if (r < 0)
			return r;
		if (paxlen % TAR_BLOCK_SIZE != 0) {
			r = loop_write(w->fd, zero_block, TAR_BLOCK_SIZE - paxlen % TAR_BLOCK_SIZE);
			if (r < 0)
				return r;
		}
	}

	r = format_block(entry_typeflag(e->type), name, link, e->mode, uid, gid, size, mtime,
			 block);
	if (r < 0)
		return r;
	r = loop_write(w->fd, block, sizeof(block));
	if (r < 0)
		return r;
	w->in_entry = true;
	w->size = w->remaining = e->size;
	return 0;
}

int tar_writer_data(struct tar_writer *w, const void *buf, size_t len)
{
	int r;

	if (!w->in_entry || len > w->remaining)
		return -EINVAL;
	r = loop_write(w->fd, buf, len);
	if (r < 0)
		return r;
	w->remaining -= len;
	return 0;
}

int tar_writer_end_entry(struct tar_writer *w)
{
	int r;

	if (!w->in_entry || w->remaining != 0)
		return -EINVAL;
	if (w->size % TAR_BLOCK_SIZE != 0) {
		r = loop_write(w->fd, zero_block, TAR_BLOCK_SIZE - w->size % TAR_BLOCK_SIZE);
		if (r < 0)
			return r;
	}
	w->in_entry = false;
	return 0;
}

int tar_writer_finish(struct tar_writer *w)
{
	int r;

	if (w->in_entry)
		return -EINVAL;
	r = loop_write(w->fd, zero_block, TAR_BLOCK_SIZE);
	if (r < 0)
		return r;
	return loop_write(w->fd, zero_block, TAR_BLOCK_SIZE);
}

/* ---------------------------------------------------------------------------------------------
 * Reader
 */

static ssize_t fd_read(void *userdata, void *buf, size_t len)
{
	const struct tar_reader *r = userdata;

	for (;;) {
		ssize_t n = read(r->fd, buf, len);

		if (n >= 0)
			return n;
		if (errno != EINTR)
			return -errno;
	}
}

void tar_reader_init(struct tar_reader *r, tar_read_fn read_fn, void *userdata)
{
	*r = (struct tar_reader){ .read = read_fn, .userdata = userdata, .fd = -1 };
}

void tar_reader_init_fd(struct tar_reader *r, int fd)
{
	tar_reader_init(r, fd_read, r);
	r->fd = fd;
}

const char *tar_reader_error(const struct tar_reader *r)
{
	return r->error;
}

_printf_(4, 5) static int fail_at(struct tar_reader *r, int code, uint64_t at, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(r->error))
		(void)snprintf(r->error + n, sizeof(r->error) - (size_t)n,
			       " (header at offset %" PRIu64 ")", at);
	r->failed = true;
	r->error_code = code;
	return code;
}

/* Exactly len bytes, or -EBADMSG (truncated) / -errno (read error). */
static int read_exact(struct tar_reader *r, void *buf, size_t len, uint64_t at)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = r->read(r->userdata, p, len);

		if (n < 0)
			return fail_at(r, (int)n, at, "read error: %s", strerror((int)-n));
		if (n == 0)
			return fail_at(r, -EBADMSG, at,
				       "truncated archive: input ends at offset %" PRIu64,
				       r->offset);
		if ((size_t)n > len)
			return fail_at(r, -EIO, at, "read error: reader returned too much");
		p += n;
		len -= (size_t)n;
		r->offset += (uint64_t)n;
	}
	return 0;
}

static int skip_bytes(struct tar_reader *r, uint64_t n, uint64_t at)
{
	uint8_t buf[4096];

	while (n > 0) {
		size_t chunk = n < sizeof(buf) ? (size_t)n : sizeof(buf);
		int k = read_exact(r, buf, chunk, at);

		if (k < 0)
			return k;
		n -= chunk;
	}
	return 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* A numeric field: octal digits, then one or more NUL or space to the field's end. optional: an
 * all-NUL field is 0. */
static int parse_octal(struct tar_reader *r, uint64_t at, const uint8_t *b, size_t off,
		       size_t width, const char *field, bool optional, uint64_t *ret)
{
	const uint8_t *f = b + off;
	uint64_t v = 0;
	size_t i = 0;

	if (f[0] & 0x80)
		return fail_at(r, -EBADMSG, at, "%s: base-256 numbers are not supported", field);
	if (optional && all_zero(f, width)) {
		*ret = 0;
		return 0;
	}
	for (; i < width && f[i] >= '0' && f[i] <= '7'; i++)
		v = v * 8 + (uint64_t)(f[i] - '0'); /* at most 12 digits: no overflow */
	if (i == 0)
		return fail_at(r, -EBADMSG, at, "%s: not an octal number", field);
	if (i == width)
		return fail_at(r, -EBADMSG, at, "%s: no NUL or space terminator", field);
	for (; i < width; i++)
		if (f[i] != '\0' && f[i] != ' ')
			return fail_at(r, -EBADMSG, at, "%s: junk after the number", field);
	*ret = v;
	return 0;
}

/* A string field into out (capacity >= width + 1): bytes up to the first NUL, then only NULs.
 * need_nul: the field must hold a NUL (else it may fill the whole width). */
static int parse_string(struct tar_reader *r, uint64_t at, const uint8_t *b, size_t off,
			size_t width, const char *field, bool need_nul, char *out)
{
	const uint8_t *f = b + off;
	const uint8_t *nul = memchr(f, '\0', width);
	size_t len = nul ? (size_t)(nul - f) : width;

	if (!nul && need_nul)
		return fail_at(r, -EBADMSG, at, "%s: not NUL-terminated", field);
	if (!all_zero(f + len, width - len))
		return fail_at(r, -EBADMSG, at, "%s: bytes after the terminating NUL", field);
	if (out) {
		memcpy(out, f, len);
		out[len] = '\0';
	}
	return 0;
}

struct pax_state {
	bool has_path, has_link, has_size, has_mtime, has_uid, has_gid;
	char path[TAR_PATH_MAX + 1];
	char link[TAR_PATH_MAX + 1];
	uint64_t size, uid, gid;
	int64_t mtime;
	uint32_t mtime_nsec;
};

static int pax_decimal(const char *v, size_t len, uint64_t *ret)
{
	uint64_t x = 0;

	if (len == 0 || len > 20)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		if (x > (UINT64_MAX - (uint64_t)(v[i] - '0')) / 10)
			return -ERANGE;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*ret = x;
	return 0;
}

/* "[-]seconds[.fraction]" */
static int pax_time(const char *v, size_t len, int64_t *ret_sec, uint32_t *ret_nsec)
{
	const char *dot = memchr(v, '.', len);
	size_t il = dot ? (size_t)(dot - v) : len;
	bool neg = len > 0 && v[0] == '-';
	uint64_t sec, nsec = 0;
	size_t fl = dot ? len - il - 1 : 0;

	if (pax_decimal(v + neg, il - neg, &sec) < 0 || sec > (uint64_t)INT64_MAX + neg)
		return -EINVAL;
	if (dot) {
		if (fl == 0)
			return -EINVAL;
		for (size_t i = 0; i < fl; i++) {
			char c = dot[1 + i];

			if (c < '0' || c > '9')
				return -EINVAL;
			if (i < 9)
				nsec = nsec * 10 + (uint64_t)(c - '0');
		}
		for (size_t i = fl; i < 9; i++)
			nsec *= 10;
	}
	if (!neg) {
		*ret_sec = (int64_t)sec;
		*ret_nsec = (uint32_t)nsec;
	} else if (sec == 0 && nsec == 0) {
		*ret_sec = 0; /* "-0" */
		*ret_nsec = 0;
	} else if (nsec == 0) {
		*ret_sec = -(int64_t)(sec - 1) - 1; /* down to INT64_MIN */
		*ret_nsec = 0;
	} else {
		/* -s.f is -(s + 1) + (1 - .f) */
		if (sec >= (uint64_t)INT64_MAX)
			return -EINVAL;
		*ret_sec = -(int64_t)sec - 1;
		*ret_nsec = (uint32_t)(1000000000U - nsec);
	}
	return 0;
}

static bool key_is(const char *key, size_t klen, const char *want)
{
	return klen == strlen(want) && memcmp(key, want, klen) == 0;
}

/* Parse pax records into st (global: a 'g' header, which may not set path, linkpath or size). */
static int pax_parse(struct tar_reader *r, uint64_t at, const char *buf, size_t n, bool global,
		     struct pax_state *st)
{
	size_t pos = 0;

	while (pos < n) {
		size_t len = 0, i = pos, klen, vlen;
		const char *key, *eq, *value;

		if (buf[i] < '1' || buf[i] > '9')
			return fail_at(r, -EBADMSG, at,
				       "pax record at %zu: length is not a decimal number", pos);
		for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) {
			len = len * 10 + (size_t)(buf[i] - '0');
			if (len > n)
				return fail_at(r, -EBADMSG, at,
					       "pax record at %zu: length beyond the header", pos);
		}
		if (i >= n || buf[i] != ' ')
			return fail_at(r, -EBADMSG, at,
				       "pax record at %zu: no space after the length", pos);
		if (len > n - pos)
			return fail_at(r, -EBADMSG, at,
				       "pax record at %zu: length beyond the header", pos);
		if (len < i + 1 - pos + 3 || buf[pos + len - 1] != '\n')
			return fail_at(r, -EBADMSG, at,
				       "pax record at %zu: length does not end at a newline", pos);
		key = buf + i + 1;
		eq = memchr(key, '=', (size_t)(buf + pos + len - 1 - key));
		if (!eq || eq == key)
			return fail_at(r, -EBADMSG, at, "pax record at %zu: no 'key=value'", pos);
		if (memchr(key, '\0', (size_t)(eq - key)))
			return fail_at(r, -EBADMSG, at, "pax record at %zu: NUL in the key", pos);
		klen = (size_t)(eq - key);
		value = eq + 1;
		vlen = (size_t)(buf + pos + len - 1 - value);
		pos += len;

		if (klen > 11 && memcmp(key, "GNU.sparse.", 11) == 0)
			return fail_at(r, -EBADMSG, at,
				       "pax %.*s: GNU sparse files are not supported", (int)klen,
				       key);
		if (global && (key_is(key, klen, "path") || key_is(key, klen, "linkpath") ||
			       key_is(key, klen, "size")))
			return fail_at(r, -EBADMSG, at,
				       "pax global %.*s: not supported in a global header",
				       (int)klen, key);

		if (key_is(key, klen, "path") || key_is(key, klen, "linkpath")) {
			bool is_path = key_is(key, klen, "path");
			char *out = is_path ? st->path : st->link;

			if (vlen > TAR_PATH_MAX)
				return fail_at(r, -EBADMSG, at, "pax %s: longer than %u bytes",
					       is_path ? "path" : "linkpath", TAR_PATH_MAX);
			if (memchr(value, '\0', vlen))
				return fail_at(r, -EBADMSG, at, "pax %s: contains a NUL byte",
					       is_path ? "path" : "linkpath");
			memcpy(out, value, vlen);
			out[vlen] = '\0';
			/* An empty value removes the keyword: the header field applies. */
			if (is_path)
				st->has_path = vlen > 0;
			else
				st->has_link = vlen > 0;
		} else if (key_is(key, klen, "size") || key_is(key, klen, "uid") ||
			   key_is(key, klen, "gid")) {
			uint64_t v = 0;
			bool set = vlen > 0;

			if (set && pax_decimal(value, vlen, &v) < 0)
				return fail_at(r, -EBADMSG, at, "pax %.*s: not a decimal number",
					       (int)klen, key);
			if (key_is(key, klen, "size")) {
				st->has_size = set;
				st->size = v;
			} else if (key_is(key, klen, "uid")) {
				st->has_uid = set;
				st->uid = v;
			} else {
				st->has_gid = set;
				st->gid = v;
			}
		} else if (key_is(key, klen, "mtime")) {
			st->has_mtime = vlen > 0;
			if (vlen > 0 && pax_time(value, vlen, &st->mtime, &st->mtime_nsec) < 0)
				return fail_at(r, -EBADMSG, at, "pax mtime: not a time");
		}
		/* Other keys (atime, ctime, uname, gname, charset, comment, hdrcharset, vendor
		 * keys such as SCHILY.xattr.*) carry nothing this reader returns. */
	}
	return 0;
}

struct header {
	char typeflag;
	char name[101], link[101], prefix[156];
	uint64_t mode, uid, gid, size, mtime;
};

static int parse_header(struct tar_reader *r, uint64_t at, const uint8_t *b, struct header *h)
{
	uint64_t sum, dev;
	int k;

	if ((k = parse_octal(r, at, b, F_CHKSUM, "chksum", false, &sum)) < 0)
		return k;
	if (sum != header_checksum(b))
		return fail_at(r, -EBADMSG, at,
			       "chksum: %" PRIu64 " does not match the header (%u)", sum,
			       header_checksum(b));
	if (memcmp(b + 257, "ustar  \0", 8) == 0)
		return fail_at(r, -EBADMSG, at,
			       "magic: GNU tar format is not supported (write ustar or pax)");
	if (memcmp(b + 257, "ustar\0", 6) != 0)
		return fail_at(r, -EBADMSG, at, "magic: not \"ustar\"");
	if (memcmp(b + 263, "00", 2) != 0)
		return fail_at(r, -EBADMSG, at, "version: not \"00\"");
	h->typeflag = b[O_TYPEFLAG] ? (char)b[O_TYPEFLAG] : '0';
	if ((k = parse_string(r, at, b, F_NAME, "name", false, h->name)) < 0 ||
	    (k = parse_string(r, at, b, F_LINKNAME, "linkname", false, h->link)) < 0 ||
	    (k = parse_string(r, at, b, F_PREFIX, "prefix", false, h->prefix)) < 0 ||
	    (k = parse_string(r, at, b, F_UNAME, "uname", true, NULL)) < 0 ||
	    (k = parse_string(r, at, b, F_GNAME, "gname", true, NULL)) < 0)
		return k;
	if ((k = parse_octal(r, at, b, F_MODE, "mode", false, &h->mode)) < 0 ||
	    (k = parse_octal(r, at, b, F_UID, "uid", true, &h->uid)) < 0 ||
	    (k = parse_octal(r, at, b, F_GID, "gid", true, &h->gid)) < 0 ||
	    (k = parse_octal(r, at, b, F_SIZE, "size", false, &h->size)) < 0 ||
	    (k = parse_octal(r, at, b, F_MTIME, "mtime", false, &h->mtime)) < 0 ||
	    (k = parse_octal(r, at, b, F_DEVMAJOR, "devmajor", true, &dev)) < 0 ||
	    (k = parse_octal(r, at, b, F_DEVMINOR, "devminor", true, &dev)) < 0)
		return k;
	if (!all_zero(b + 500, 12))
		return fail_at(r, -EBADMSG, at, "header: bytes 500-511 are not zero");
	if (h->name[0] == '\0')
		return fail_at(r, -EBADMSG, at, "name: empty");
	return 0;
}

/* Skip what is left of the current entry's data and padding. */
static int skip_rest(struct tar_reader *r)
{
	int k;

	if (r->data_left + r->pad_left == 0)
		return 0;
	k = skip_bytes(r, r->data_left + r->pad_left, r->offset);
	if (k < 0)
		return k;
	r->data_left = 0;
	r->pad_left = 0;
	return 0;
}

static uint32_t padding(uint64_t size)
{
	return (uint32_t)((TAR_BLOCK_SIZE - size % TAR_BLOCK_SIZE) % TAR_BLOCK_SIZE);
}

static int read_pax(struct tar_reader *r, uint64_t at, const struct header *h, bool global,
		    struct pax_state *st)
{
	_cleanup_free_ char *buf = NULL;
	int k;

	if (h->size > TAR_PAX_MAX)
		return fail_at(r, -EBADMSG, at,
			       "size: pax header of %" PRIu64 " bytes is over the %u byte limit",
			       h->size, TAR_PAX_MAX);
	buf = malloc(h->size ? (size_t)h->size : 1);
	if (!buf)
		return fail_at(r, -ENOMEM, at, "out of memory");
	if ((k = read_exact(r, buf, (size_t)h->size, at)) < 0 ||
	    (k = skip_bytes(r, padding(h->size), at)) < 0)
		return k;
	return pax_parse(r, at, buf, (size_t)h->size, global, st);
}

int tar_reader_next(struct tar_reader *r, struct tar_entry *ret)
{
	struct pax_state *st = NULL;
	_cleanup_free_ struct pax_state *st_owned = NULL;
	uint8_t b[TAR_BLOCK_SIZE];
	struct header h;
	int k;

	if (r->failed)
		return r->error_code;
	if (r->end)
		return 0;
	if ((k = skip_rest(r)) < 0)
		return k;

	for (;;) {
		uint64_t at = r->offset;

		if ((k = read_exact(r, b, sizeof(b), at)) < 0)
			return k;
		if (all_zero(b, sizeof(b))) {
			if ((k = read_exact(r, b, sizeof(b), at)) < 0)
				return k;
			if (!all_zero(b, sizeof(b)))
				return fail_at(
					r, -EBADMSG, at,
					"end of archive: a zero block followed by a non-zero block");
			if (st)
				return fail_at(r, -EBADMSG, at,
					       "pax: extended header not followed by an entry");
			r->end = true;
			return 0;
		}
		if ((k = parse_header(r, at, b, &h)) < 0)
			return k;

		if (h.typeflag == 'x' || h.typeflag == 'g') {
			bool global = h.typeflag == 'g';
			struct pax_state ignored = {};

			if (st)
				return fail_at(
					r, -EBADMSG, at,
					"typeflag: pax header follows a pax extended header");
			if (!global) {
				st_owned = calloc(1, sizeof(*st_owned));
				if (!st_owned)
					return fail_at(r, -ENOMEM, at, "out of memory");
			}
			if ((k = read_pax(r, at, &h, global, global ? &ignored : st_owned)) < 0)
				return k;
			if (!global)
				st = st_owned;
			continue;
		}

		switch (h.typeflag) {
		case '0':
			ret->type = TAR_REGULAR;
			break;
		case '5':
			ret->type = TAR_DIRECTORY;
			break;
		case '2':
			ret->type = TAR_SYMLINK;
			break;
		case '1':
		case '3':
		case '4':
		case '6':
		case '7':
			ret->type = TAR_UNSUPPORTED;
			break;
		default:
			if (h.typeflag >= 'A' && h.typeflag <= 'Z')
				return fail_at(r, -EBADMSG, at,
					       "typeflag: vendor extension '%c' is not supported",
					       h.typeflag);
			return fail_at(r, -EBADMSG, at, "typeflag: unknown type 0x%02x",
				       (unsigned)(uint8_t)h.typeflag);
		}
		ret->typeflag = h.typeflag;

		if (st && st->has_path) {
			memcpy(ret->path, st->path, strlen(st->path) + 1);
		} else if (h.prefix[0]) {
			(void)snprintf(ret->path, sizeof(ret->path), "%s/%s", h.prefix, h.name);
		} else {
			memcpy(ret->path, h.name, strlen(h.name) + 1);
		}
		if (st && st->has_link)
			memcpy(ret->link, st->link, strlen(st->link) + 1);
		else
			memcpy(ret->link, h.link, strlen(h.link) + 1);
		ret->mode = (uint32_t)(h.mode & 07777);
		ret->uid = st && st->has_uid ? st->uid : h.uid;
		ret->gid = st && st->has_gid ? st->gid : h.gid;
		ret->size = st && st->has_size ? st->size : h.size;
		if (st && st->has_mtime) {
			ret->mtime = st->mtime;
			ret->mtime_nsec = st->mtime_nsec;
		} else {
			ret->mtime = (int64_t)h.mtime;
			ret->mtime_nsec = 0;
		}

		if (ret->size != 0 && h.typeflag != '0' && h.typeflag != '7')
			return fail_at(r, -EBADMSG, at, "size: must be 0 for a %s",
				       tar_typeflag_name(h.typeflag));
		if ((h.typeflag == '1' || h.typeflag == '2') && ret->link[0] == '\0')
			return fail_at(r, -EBADMSG, at, "linkname: empty for a %s",
				       tar_typeflag_name(h.typeflag));
		if (h.typeflag != '1' && h.typeflag != '2' && ret->link[0] != '\0')
			return fail_at(r, -EBADMSG, at, "linkname: set for a %s",
				       tar_typeflag_name(h.typeflag));

		r->data_left = ret->size;
		r->pad_left = padding(ret->size);
		return 1;
	}
}

ssize_t tar_reader_read(struct tar_reader *r, void *buf, size_t len)
{
	int k;

	if (r->failed)
		return r->error_code;
	if (r->data_left == 0) {
		if (r->pad_left > 0) {
			k = skip_bytes(r, r->pad_left, r->offset);
			if (k < 0)
				return k;
			r->pad_left = 0;
		}
		return 0;
	}
	if (len > r->data_left)
		len = (size_t)r->data_left;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	k = read_exact(r, buf, len, r->offset);
	if (k < 0)
		return k;
	r->data_left -= len;
	return (ssize_t)len;
}

int tar_reader_finish(struct tar_reader *r, uint64_t max_trailing)
{
	uint8_t buf[4096];
	uint64_t at = r->offset, seen = 0;

	if (r->failed)
		return r->error_code;
	if (!r->end)
		return -EINVAL;
	for (;;) {
		ssize_t n = r->read(r->userdata, buf, sizeof(buf));

		if (n < 0)
			return fail_at(r, (int)n, at, "read error: %s", strerror((int)-n));
		if (n == 0)
			return 0;
		if ((size_t)n > sizeof(buf))
			return fail_at(r, -EIO, at, "read error: reader returned too much");
		r->offset += (uint64_t)n;
		seen += (uint64_t)n;
		if (!all_zero(buf, (size_t)n))
			return fail_at(r, -EBADMSG, at,
				       "end of archive: data after the end marker");
		if (seen > max_trailing)
			return fail_at(r, -EBADMSG, at,
				       "end of archive: more than %" PRIu64 " bytes of padding",
				       max_trailing);
	}
}
