/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * common/tar.c: writer/reader round trips (ustar and pax: long paths and link targets, sizes over
 * 8 GiB - 1, negative mtimes), every header field corrupted in turn, pax record syntax, the end
 * marker and trailing padding, unsupported types, limits, writer misuse and EPIPE.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/system.h"
#include "common/tar.h"
#include "common/util.h"
#include "tests/tap.h"

/* An archive in memory: built through a memfd, read through a callback with short reads. */
struct buf {
	uint8_t *data;
	size_t len, pos;
	size_t chunk; /* most bytes per read call (0: any) */
};

static void buf_free(struct buf *b)
{
	free(b->data);
	*b = (struct buf){};
}

static void buf_append(struct buf *b, const void *p, size_t n)
{
	b->data = realloc(b->data, b->len + n + 1);
	if (!b->data)
		bail("out of memory");
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void buf_zero_blocks(struct buf *b, unsigned n)
{
	static const uint8_t z[TAR_BLOCK_SIZE];

	for (unsigned i = 0; i < n; i++)
		buf_append(b, z, sizeof(z));
}

static ssize_t buf_read(void *userdata, void *out, size_t len)
{
	struct buf *b = userdata;
	size_t n = b->len - b->pos;

	if (n > len)
		n = len;
	if (n == 0)
		return 0;
	if (b->chunk && n > b->chunk)
		n = b->chunk;
	memcpy(out, b->data + b->pos, n);
	b->pos += n;
	return (ssize_t)n;
}

static int memfd(void)
{
	int fd = memfd_create("test-tar", MFD_CLOEXEC);

	if (fd < 0)
		bail("memfd_create: %m");
	return fd;
}

/* The whole content of fd into b. */
static void slurp(int fd, struct buf *b)
{
	_cleanup_free_ char *data = NULL;
	size_t len = 0;

	if (lseek(fd, 0, SEEK_SET) != 0 || read_full_fd(fd, 64U * 1024U * 1024U, &data, &len) < 0)
		bail("reading back the archive: %m");
	buf_free(b);
	buf_append(b, data, len);
}

static struct tar_entry *entry_new(enum tar_type type, const char *path, const char *link,
				   uint32_t mode, uint64_t size, int64_t mtime)
{
	struct tar_entry *e = calloc(1, sizeof(*e));

	if (!e)
		bail("out of memory");
	e->type = type;
	(void)snprintf(e->path, sizeof(e->path), "%s", path);
	(void)snprintf(e->link, sizeof(e->link), "%s", link ? link : "");
	e->mode = mode;
	e->size = size;
	e->mtime = mtime;
	return e;
}

static struct tar_reader reader_on(struct buf *b, size_t chunk)
{
	struct tar_reader r;

	b->pos = 0;
	b->chunk = chunk;
	tar_reader_init(&r, buf_read, b);
	return r;
}

/* Read b expecting failure: the code, and the error message must contain want. */
static void expect_bad(struct buf *b, const char *want, const char *what)
{
	_cleanup_free_ struct tar_entry *e = calloc(1, sizeof(*e));
	struct tar_reader r = reader_on(b, 0);
	uint8_t data[512];
	int k;

	if (!e)
		bail("out of memory");
	while ((k = tar_reader_next(&r, e)) == 1)
		while ((k = (int)tar_reader_read(&r, data, sizeof(data))) > 0)
			;
	if (k == 0)
		k = tar_reader_finish(&r, 1024 * 1024);
	if (!is_int(-EBADMSG, k, "%s: -EBADMSG", what) ||
	    !ok(strstr(tar_reader_error(&r), want) != NULL, "%s: message \"%s\" names \"%s\"", what,
		tar_reader_error(&r), want))
		diag("error: %s", tar_reader_error(&r));
}

static void test_round_trip(void)
{
	_cleanup_close_ int fd = memfd();
	_cleanup_free_ struct tar_entry *got = calloc(1, sizeof(*got));
	_cleanup_free_ char *long_path = malloc(TAR_PATH_MAX + 1);
	_cleanup_free_ char *long_link = malloc(301);
	struct tar_entry *want[7];
	const char *content = "hello, world\n";
	struct buf b = {};
	struct tar_writer w;
	struct tar_reader r;
	char data[64];

	if (!got || !long_path || !long_link)
		bail("out of memory");
	/* A path of exactly TAR_PATH_MAX bytes (components of 99 'a's), through pax. */
	for (size_t i = 0; i < TAR_PATH_MAX; i++)
		long_path[i] = (i % 100 == 99) ? '/' : 'a';
	long_path[TAR_PATH_MAX - 1] = 'z';
	long_path[TAR_PATH_MAX] = '\0';
	memset(long_link, 'l', 300);
	long_link[300] = '\0';

	want[0] = entry_new(TAR_DIRECTORY, "dir", NULL, 0755, 0, 1700000000);
	want[1] = entry_new(TAR_REGULAR, "dir/file.txt", NULL, 0640, strlen(content), 1700000001);
	want[2] = entry_new(TAR_REGULAR, "empty", NULL, 04755, 0, 0);
	want[3] = entry_new(TAR_SYMLINK, "link", "dir/file.txt", 0777, 0, 5);
	want[4] = entry_new(TAR_REGULAR, long_path, NULL, 0600, 3, 7);
	want[5] = entry_new(TAR_SYMLINK, "longlink", long_link, 0777, 0, -12345);
	want[6] = entry_new(TAR_REGULAR, "future", NULL, 0644, 0, 0x7fffffffffffLL);
	want[6]->uid = 1ULL << 40;
	want[6]->gid = 4242;

	tar_writer_init(&w, fd);
	for (size_t i = 0; i < ELEMENTSOF(want); i++) {
		const char *d = i == 1 ? content : "abc";

		if (tar_writer_header(&w, want[i]) < 0 ||
		    tar_writer_data(&w, d, (size_t)want[i]->size) < 0 ||
		    tar_writer_end_entry(&w) < 0)
			bail("writing entry %zu: %m", i);
	}
	is_int(0, tar_writer_finish(&w), "writer finishes");
	slurp(fd, &b);
	is_int(0, (long long)(b.len % TAR_BLOCK_SIZE), "archive is whole blocks (%zu bytes)",
	       b.len);
	ok(b.len >= 2 * TAR_BLOCK_SIZE &&
		   memcmp(b.data + b.len - 1024, (uint8_t[1024]){}, 1024) == 0,
	   "archive ends with two zero blocks");

	for (size_t chunk = 0; chunk <= 3; chunk += 3) {
		r = reader_on(&b, chunk);
		for (size_t i = 0; i < ELEMENTSOF(want); i++) {
			ssize_t n;

			if (!is_int(1, tar_reader_next(&r, got), "chunk %zu: entry %zu read", chunk,
				    i)) {
				diag("error: %s", tar_reader_error(&r));
				break;
			}
			ok(got->type == want[i]->type && streq(got->path, want[i]->path) &&
				   streq(got->link, want[i]->link) && got->mode == want[i]->mode &&
				   got->size == want[i]->size && got->mtime == want[i]->mtime &&
				   got->uid == want[i]->uid && got->gid == want[i]->gid,
			   "chunk %zu: entry %zu (%.20s) round-trips", chunk, i, want[i]->path);
			if (i == 1) {
				n = tar_reader_read(&r, data, sizeof(data));
				ok(n == (ssize_t)strlen(content) &&
					   memcmp(data, content, (size_t)n) == 0,
				   "chunk %zu: file data round-trips", chunk);
				is_int(0, tar_reader_read(&r, data, sizeof(data)),
				       "chunk %zu: data ends at the declared size", chunk);
			}
			/* Entry 4's data is left unread: next() skips it. */
		}
		is_int(0, tar_reader_next(&r, got), "chunk %zu: end of archive", chunk);
		is_int(0, tar_reader_next(&r, got), "chunk %zu: end of archive again", chunk);
		is_int(0, tar_reader_finish(&r, 0), "chunk %zu: nothing after the end", chunk);
	}

	for (size_t i = 0; i < ELEMENTSOF(want); i++)
		free(want[i]);
	buf_free(&b);
}

static void test_big_size(void)
{
	_cleanup_close_ int fd = memfd();
	_cleanup_free_ struct tar_entry *e =
		entry_new(TAR_REGULAR, "big", NULL, 0644, 9ULL * 1024 * 1024 * 1024, 1);
	_cleanup_free_ struct tar_entry *got = calloc(1, sizeof(*got));
	struct buf b = {};
	struct tar_writer w;
	struct tar_reader r;
	char data[16];

	tar_writer_init(&w, fd);
	is_int(0, tar_writer_header(&w, e), "a 9 GiB header is written (through pax size)");
	is_int(0, tar_writer_data(&w, "0123456789", 10), "some of its data");
	slurp(fd, &b);
	ok(b.len > 0 && memmem(b.data, b.len, " size=9663676416\n", 17) != NULL,
	   "pax size record present");
	r = reader_on(&b, 0);
	is_int(1, tar_reader_next(&r, got), "reader returns the entry");
	ok(got->size == 9ULL * 1024 * 1024 * 1024, "size is 9 GiB");
	is_int(10, tar_reader_read(&r, data, 10), "the data present is read");
	is_int(-EBADMSG, tar_reader_read(&r, data, sizeof(data)),
	       "then the truncated data is -EBADMSG");
	ok(strstr(tar_reader_error(&r), "truncated") != NULL, "message says truncated: %s",
	   tar_reader_error(&r));
	is_int(-EBADMSG, tar_reader_next(&r, got), "the reader stays failed");
	buf_free(&b);
}

/* A valid one-entry archive: header of "file" with 5 bytes, data, end marker. */
static void good_header(uint8_t block[TAR_BLOCK_SIZE])
{
	_cleanup_free_ struct tar_entry *e = entry_new(TAR_REGULAR, "file", NULL, 0644, 5, 100);

	if (tar_format_header(e, block) < 0)
		bail("tar_format_header failed");
}

static void archive_with(struct buf *b, const uint8_t block[TAR_BLOCK_SIZE])
{
	uint8_t data[TAR_BLOCK_SIZE] = "hello";

	buf_free(b);
	buf_append(b, block, TAR_BLOCK_SIZE);
	buf_append(b, data, sizeof(data));
	buf_zero_blocks(b, 2);
}

struct corruption {
	size_t off;
	const char *bytes; /* written at off (its length) */
	size_t len;
	bool fix_sum;
	const char *field;
};

#define C(o, s, fix, f)                     \
	{                                   \
		o, s, sizeof(s) - 1, fix, f \
	}

static void test_header_fields(void)
{
	static const struct corruption table[] = {
		C(0, "\0\0\0\0", true, "name: empty"),
		C(5, "x", true, "name: bytes after the terminating NUL"),
		C(100, "0000z44", true, "mode: junk after"),
		C(100, "z", true, "mode: not an octal"),
		C(100, "77777777", true, "mode: no NUL or space terminator"),
		C(108, "x", true, "uid: not an octal"),
		C(116, "9", true, "gid: not an octal"),
		C(124, "\x80", true, "size: base-256"),
		C(124, "0000000000x", true, "size: junk after"),
		C(124, "777777777777", true, "size: no NUL"),
		C(136, "-", true, "mtime: not an octal"),
		C(148, "x", false, "chksum: not an octal"),
		C(148, "000001\0 ", false, "chksum: 1 does not match"),
		C(156, "L", true, "typeflag: vendor extension 'L'"),
		C(156, "S", true, "typeflag: vendor extension 'S'"),
		C(156, "z", true, "typeflag: unknown type"),
		C(156, "5", true, "size: must be 0 for a directory"),
		C(156, "2", true, "size: must be 0 for a symlink"),
		C(157, "target", true, "linkname: set for a regular file"),
		C(160, "\0x", true, "linkname: bytes after the terminating NUL"),
		C(257, "ustaX", true, "magic: not \"ustar\""),
		C(257, "ustar  \0", true, "magic: GNU tar format"),
		C(263, "01", true, "version: not \"00\""),
		C(265, "uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu", true, "uname: not NUL-terminated"),
		C(297, "gggggggggggggggggggggggggggggggg", true, "gname: not NUL-terminated"),
		C(300, "\0x", true, "gname: bytes after"),
		C(329, "x", true, "devmajor: not an octal"),
		C(337, "0000008", true, "devminor: junk after"),
		C(346, "x", true, "prefix: bytes after the terminating NUL"),
		C(500, "x", true, "header: bytes 500-511"),
		C(511, "\1", true, "header: bytes 500-511"),
	};
	uint8_t block[TAR_BLOCK_SIZE];
	struct buf b = {};
	_cleanup_free_ struct tar_entry *e = calloc(1, sizeof(*e));
	struct tar_reader r;
	char data[8];

	good_header(block);
	archive_with(&b, block);
	r = reader_on(&b, 0);
	is_int(1, tar_reader_next(&r, e), "control: the uncorrupted header reads");
	is_int(5, tar_reader_read(&r, data, sizeof(data)), "control: its data");
	is_int(0, tar_reader_next(&r, e), "control: end");
	is_str("", tar_reader_error(&r), "control: no error message");

	for (size_t i = 0; i < ELEMENTSOF(table); i++) {
		char what[96];

		good_header(block);
		memcpy(block + table[i].off, table[i].bytes, table[i].len);
		if (table[i].fix_sum)
			tar_header_fix_checksum(block);
		archive_with(&b, block);
		(void)snprintf(what, sizeof(what), "corrupt byte %zu", table[i].off);
		expect_bad(&b, table[i].field, what);
	}

	/* Unterminated fields that may fill their width: a 100-byte name reads. */
	good_header(block);
	memset(block, 'n', 100);
	tar_header_fix_checksum(block);
	archive_with(&b, block);
	r = reader_on(&b, 0);
	is_int(1, tar_reader_next(&r, e), "a 100-byte name without NUL is accepted");
	is_int(100, (long long)strlen(e->path), "its path has 100 bytes");

	/* prefix + name */
	good_header(block);
	memcpy(block + 345, "some/prefix", 11);
	tar_header_fix_checksum(block);
	archive_with(&b, block);
	r = reader_on(&b, 0);
	is_int(1, tar_reader_next(&r, e), "a prefix field reads");
	is_str("some/prefix/file", e->path, "path is prefix/name");

	/* A hard link, a FIFO, a contiguous file: unsupported entries, the archive goes on. */
	good_header(block);
	block[156] = '1';
	memcpy(block + 124, "00000000000", 11);
	memcpy(block + 157, "file", 4);
	tar_header_fix_checksum(block);
	buf_free(&b);
	buf_append(&b, block, TAR_BLOCK_SIZE);
	block[156] = '6';
	memset(block + 157, 0, 100);
	tar_header_fix_checksum(block);
	buf_append(&b, block, TAR_BLOCK_SIZE);
	block[156] = '7';
	memcpy(block + 124, "00000000003", 11);
	tar_header_fix_checksum(block);
	buf_append(&b, block, TAR_BLOCK_SIZE);
	buf_zero_blocks(&b, 3); /* 3 bytes of data + padding, then the end */
	r = reader_on(&b, 0);
	ok(tar_reader_next(&r, e) == 1 && e->type == TAR_UNSUPPORTED && e->typeflag == '1' &&
		   streq(e->link, "file"),
	   "hard link: unsupported entry with its target");
	is_str("hard link", tar_typeflag_name(e->typeflag), "named hard link");
	ok(tar_reader_next(&r, e) == 1 && e->type == TAR_UNSUPPORTED && e->typeflag == '6',
	   "FIFO: unsupported entry");
	ok(tar_reader_next(&r, e) == 1 && e->type == TAR_UNSUPPORTED && e->size == 3,
	   "contiguous file: unsupported entry, data skipped");
	is_int(0, tar_reader_next(&r, e), "then the end");
	buf_free(&b);
}

/* An archive of a pax header with records, the "file" entry and the end. type 'x' or 'g'. */
static void pax_archive(struct buf *b, char type, const char *records, size_t len)
{
	uint8_t block[TAR_BLOCK_SIZE], pad[TAR_BLOCK_SIZE] = {};
	_cleanup_free_ struct tar_entry *e =
		entry_new(TAR_REGULAR, "PaxHeaders/1", NULL, 0644, len, 0);

	buf_free(b);
	if (tar_format_header(e, block) < 0)
		bail("formatting a pax header");
	block[156] = (uint8_t)type;
	tar_header_fix_checksum(block);
	buf_append(b, block, sizeof(block));
	buf_append(b, records, len);
	if (len % TAR_BLOCK_SIZE)
		buf_append(b, pad, TAR_BLOCK_SIZE - len % TAR_BLOCK_SIZE);
	good_header(block);
	buf_append(b, block, sizeof(block));
	buf_append(b, "hello", 5);
	buf_append(b, pad, TAR_BLOCK_SIZE - 5);
	buf_zero_blocks(b, 2);
}

static void test_pax(void)
{
	static const struct {
		const char *records, *field;
	} bad[] = {
		{ "7 a=b\n", "length beyond the header" },
		{ "6 a=b\n7 a=bcd\n", "length does not end at a newline" },
		{ "06 a=b\n", "length is not a decimal number" },
		{ "x", "length is not a decimal number" },
		{ "6a a=b\n", "no space after the length" },
		{ "6 abc\n", "no 'key=value'" },
		{ "6 =bc\n", "no 'key=value'" },
		{ "4 ab\n", "length does not end at a newline" },
		{ "12 size=12x\n", "pax size: not a decimal number" },
		{ "29 size=99999999999999999999\n", "pax size: not a decimal number" },
		{ "13 mtime=1.x\n", "pax mtime: not a time" },
		{ "12 mtime=1.\n", "pax mtime: not a time" },
		{ "22 GNU.sparse.size=10\n", "GNU sparse files are not supported" },
		{ "12 uid=-100\n", "pax uid: not a decimal number" },
	};
	_cleanup_free_ struct tar_entry *e = calloc(1, sizeof(*e));
	_cleanup_free_ char *big = NULL;
	struct buf b = {};
	struct tar_reader r;
	uint8_t block[TAR_BLOCK_SIZE];
	char rec[64];

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		char what[64];

		pax_archive(&b, 'x', bad[i].records, strlen(bad[i].records));
		(void)snprintf(what, sizeof(what), "pax record \"%.12s\"", bad[i].records);
		for (char *c = what; *c; c++)
			if (*c == '\n')
				*c = '|';
		expect_bad(&b, bad[i].field, what);
	}

	/* A NUL in a path value. */
	pax_archive(&b, 'x', "12 path=a\0b\n", 12);
	expect_bad(&b, "pax path: contains a NUL byte", "NUL in a pax path");

	/* Good records: path, linkpath unset (empty value), mtime with a fraction, unknown keys. */
	(void)snprintf(rec, sizeof(rec), "%s", "18 path=long/name\n13 linkpath=\n15 mtime=-1.25\n");
	pax_archive(&b, 'x', rec, strlen(rec));
	r = reader_on(&b, 0);
	if (!is_int(1, tar_reader_next(&r, e), "pax header with path, empty linkpath, mtime reads"))
		diag("error: %s", tar_reader_error(&r));
	is_str("long/name", e->path, "pax path overrides the header name");
	ok(e->mtime == -2 && e->mtime_nsec == 750000000, "mtime -1.25 is -2 s + 0.75 s (%lld %u)",
	   (long long)e->mtime, e->mtime_nsec);
	pax_archive(&b, 'x', "30 SCHILY.xattr.user.a=value\n", 29);
	expect_bad(&b, "length beyond the header", "record length one too long");
	pax_archive(&b, 'x', "29 SCHILY.xattr.user.a=value\n", 29);
	r = reader_on(&b, 0);
	is_int(1, tar_reader_next(&r, e), "unknown pax keys are ignored");
	is_str("file", e->path, "and the header name applies");

	/* Global headers: ignored, unless they set what they cannot. */
	pax_archive(&b, 'g', "16 comment=abcd\n", 16);
	r = reader_on(&b, 0);
	is_int(1, tar_reader_next(&r, e), "a pax global header with a comment is skipped");
	pax_archive(&b, 'g', "11 path=ab\n", 11);
	expect_bad(&b, "pax global path: not supported in a global header", "global path");

	/* Path limits. */
	big = malloc(TAR_PAX_MAX + 64);
	if (!big)
		bail("out of memory");
	{
		size_t vlen = TAR_PATH_MAX + 1, len = vlen + 11; /* "NNNN path=…\n" */

		(void)snprintf(big, TAR_PAX_MAX, "%zu path=", len);
		memset(big + strlen(big), 'p', vlen);
		big[len - 1] = '\n';
		pax_archive(&b, 'x', big, len);
		expect_bad(&b, "pax path: longer than 4096 bytes", "pax path over TAR_PATH_MAX");
	}
	/* The pax header size cap. */
	memset(big, 'c', TAR_PAX_MAX + 1);
	pax_archive(&b, 'x', big, TAR_PAX_MAX + 1);
	expect_bad(&b, "over the 262144 byte limit", "pax header over TAR_PAX_MAX");

	/* Two extended headers in a row; an extended header then the end. */
	pax_archive(&b, 'x', "6 a=b\n", 6);
	memcpy(block, b.data, TAR_BLOCK_SIZE);
	{
		struct buf two = {};

		buf_append(&two, b.data, 2 * TAR_BLOCK_SIZE);
		buf_append(&two, b.data, b.len);
		expect_bad(&two, "typeflag: pax header follows a pax extended header",
			   "two pax headers in a row");
		buf_free(&two);
		buf_append(&two, b.data, 2 * TAR_BLOCK_SIZE);
		buf_zero_blocks(&two, 2);
		expect_bad(&two, "extended header not followed by an entry",
			   "pax header at the end");
		buf_free(&two);
	}
	buf_free(&b);
}

static void test_end(void)
{
	uint8_t block[TAR_BLOCK_SIZE];
	_cleanup_free_ struct tar_entry *e = calloc(1, sizeof(*e));
	struct buf b = {};
	struct tar_reader r;

	buf_free(&b);
	expect_bad(&b, "truncated archive", "empty input");
	buf_zero_blocks(&b, 1);
	expect_bad(&b, "truncated archive", "one zero block");

	good_header(block);
	archive_with(&b, block);
	b.len -= 2 * TAR_BLOCK_SIZE;
	expect_bad(&b, "truncated archive", "no end marker");
	b.len -= 300;
	expect_bad(&b, "truncated archive", "truncated data");
	b.len = 100;
	expect_bad(&b, "truncated archive", "truncated header");

	archive_with(&b, block);
	memcpy(b.data + b.len - TAR_BLOCK_SIZE, block, TAR_BLOCK_SIZE);
	expect_bad(&b, "a zero block followed by a non-zero block", "zero block, then a header");

	archive_with(&b, block);
	buf_zero_blocks(&b, 16);
	r = reader_on(&b, 0);
	ok(tar_reader_next(&r, e) == 1 && tar_reader_next(&r, e) == 0 &&
		   tar_reader_finish(&r, 1024 * 1024) == 0,
	   "record padding after the end marker is accepted");
	r = reader_on(&b, 0);
	ok(tar_reader_next(&r, e) == 1 && tar_reader_next(&r, e) == 0 &&
		   tar_reader_finish(&r, 1024) == -EBADMSG,
	   "but not more than max_trailing bytes of it");
	buf_append(&b, "x", 1);
	expect_bad(&b, "data after the end marker", "junk after the end marker");
	buf_free(&b);
}

static void test_writer_misuse(void)
{
	_cleanup_close_ int fd = memfd();
	_cleanup_free_ struct tar_entry *e = entry_new(TAR_REGULAR, "f", NULL, 0644, 4, 0);
	_cleanup_free_ struct tar_entry *d = entry_new(TAR_DIRECTORY, "d", NULL, 0755, 1, 0);
	_cleanup_free_ struct tar_entry *s = entry_new(TAR_SYMLINK, "s", NULL, 0777, 0, 0);
	_cleanup_free_ struct tar_entry *u = entry_new(TAR_UNSUPPORTED, "u", NULL, 0, 0, 0);
	struct tar_writer w;
	int p[2];
	struct sigaction sa = { .sa_handler = SIG_IGN }, old;

	tar_writer_init(&w, fd);
	is_int(-EINVAL, tar_writer_header(&w, d), "a directory with a size is refused");
	is_int(-EINVAL, tar_writer_header(&w, s), "a symlink without a target is refused");
	is_int(-EINVAL, tar_writer_header(&w, u), "an unsupported type is refused");
	is_int(-EINVAL, tar_writer_data(&w, "x", 1), "data outside an entry is refused");
	is_int(0, tar_writer_header(&w, e), "header");
	is_int(-EINVAL, tar_writer_header(&w, e), "a header inside an entry is refused");
	is_int(-EINVAL, tar_writer_data(&w, "12345", 5), "more data than declared is refused");
	is_int(0, tar_writer_data(&w, "123", 3), "some data");
	is_int(-EINVAL, tar_writer_end_entry(&w), "ending with data still due is refused");
	is_int(-EINVAL, tar_writer_finish(&w), "finishing inside an entry is refused");

	if (pipe2(p, O_CLOEXEC) < 0)
		bail("pipe2: %m");
	safe_close(p[0]);
	(void)sigaction(SIGPIPE, &sa, &old);
	tar_writer_init(&w, p[1]);
	is_int(-EPIPE, tar_writer_header(&w, e), "a pipe without a reader is -EPIPE");
	(void)sigaction(SIGPIPE, &old, NULL);
	safe_close(p[1]);
}

int main(void)
{
	plan_lazy();
	test_round_trip();
	test_big_size();
	test_header_fields();
	test_pax();
	test_end();
	test_writer_misuse();
	return tap_exit_status();
}
