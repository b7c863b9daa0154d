/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tar reader on arbitrary bytes, as a backend's release archive would deliver them: read
 * every entry and its data to the end marker and the trailing padding. What the reader accepted
 * (the first entries, up to a small total of data), the writer must write again, and the reader
 * must read back to the same entries and data.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/tar.h"
#include "tests/fuzz/fuzz.h"

#define KEEP_ENTRIES 8
#define KEEP_DATA 4096

struct mem {
	const uint8_t *data;
	size_t size, pos;
};

static ssize_t mem_read(void *userdata, void *buf, size_t len)
{
	struct mem *m = userdata;
	size_t n = m->size - m->pos;

	if (n > len)
		n = len;
	/* Short reads, to exercise the reader's loops. */
	if (n > 7 && (m->pos & 1))
		n = 7;
	memcpy(buf, m->data + m->pos, n);
	m->pos += n;
	return (ssize_t)n;
}

struct kept {
	struct tar_entry e;
	uint8_t data[KEEP_DATA];
};

static bool same_entry(const struct tar_entry *a, const struct tar_entry *b)
{
	return a->type == b->type && strcmp(a->path, b->path) == 0 &&
	       strcmp(a->link, b->link) == 0 && a->mode == b->mode && a->size == b->size &&
	       a->mtime == b->mtime && a->uid == b->uid && a->gid == b->gid;
}

static void round_trip(struct kept *k, size_t n)
{
	_cleanup_close_ int fd = memfd_create("fuzz-tar", MFD_CLOEXEC);
	_cleanup_free_ struct tar_entry *e = malloc(sizeof(*e));
	struct tar_writer w;
	struct tar_reader r;
	uint8_t buf[KEEP_DATA];

	if (fd < 0 || !e)
		return;
	tar_writer_init(&w, fd);
	for (size_t i = 0; i < n; i++) {
		k[i].e.mtime_nsec = 0;
		if (tar_writer_header(&w, &k[i].e) < 0 ||
		    tar_writer_data(&w, k[i].data, (size_t)k[i].e.size) < 0 ||
		    tar_writer_end_entry(&w) < 0)
			abort();
	}
	if (tar_writer_finish(&w) < 0 || lseek(fd, 0, SEEK_SET) != 0)
		abort();

	tar_reader_init_fd(&r, fd);
	for (size_t i = 0; i < n; i++) {
		if (tar_reader_next(&r, e) != 1 || !same_entry(e, &k[i].e))
			abort();
		if (tar_reader_read(&r, buf, sizeof(buf)) != (ssize_t)e->size ||
		    memcmp(buf, k[i].data, (size_t)e->size) != 0)
			abort();
	}
	if (tar_reader_next(&r, e) != 0 || tar_reader_finish(&r, 0) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ struct kept *k = calloc(KEEP_ENTRIES + 1, sizeof(*k));
	struct mem m = { .data = data, .size = size };
	struct tar_reader r;
	size_t n = 0;
	bool keep = true;
	int ret;

	if (!k)
		return 0;
	tar_reader_init(&r, mem_read, &m);
	while ((ret = tar_reader_next(&r, &k[n < KEEP_ENTRIES ? n : KEEP_ENTRIES].e)) == 1) {
		struct kept *cur = &k[n < KEEP_ENTRIES ? n : KEEP_ENTRIES];
		uint8_t buf[512];
		uint64_t got = 0;
		ssize_t c;

		while ((c = tar_reader_read(&r, buf, sizeof(buf))) > 0) {
			if (keep && n < KEEP_ENTRIES && got + (uint64_t)c <= KEEP_DATA)
				memcpy(cur->data + got, buf, (size_t)c);
			got += (uint64_t)c;
		}
		if (c < 0)
			break;
		if (got != cur->e.size)
			abort(); /* the reader returns exactly the declared size */
		if (n < KEEP_ENTRIES && (cur->e.type == TAR_UNSUPPORTED || got > KEEP_DATA))
			keep = false;
		n++;
	}
	if (ret < 0 && tar_reader_error(&r)[0] == '\0')
		abort(); /* every failure says why */
	if (ret == 0 && tar_reader_finish(&r, 1024 * 1024) == 0 && keep)
		round_trip(k, n < KEEP_ENTRIES ? n : KEEP_ENTRIES);
	return 0;
}
