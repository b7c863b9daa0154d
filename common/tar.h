/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A strict ustar + pax (POSIX.1-2001) codec: pure format code, no policy.
 *
 * Writer: one header per regular file, directory or symlink (a pax 'x' header first when the
 * path or link target does not fit the ustar fields, or the size or mtime does not fit its octal
 * field), the data, padding to the block, and the end-of-archive marker (two zero blocks).
 *
 * Reader: streaming, one entry at a time. Every header is validated (checksum, magic and
 * version, octal fields and their terminators, NUL padding of the string fields, pax record
 * syntax "%d key=value\n" with exact lengths) before anything of it is returned; a bad archive is
 * -EBADMSG with a message naming the field (tar_reader_error()). Memory is fixed but for one pax
 * extended header, held whole and capped at TAR_PAX_MAX bytes.
 *
 * Types: regular ('0', NUL), directory ('5'), symlink ('2'). Hard links ('1'), character and
 * block devices ('3', '4'), FIFOs ('6') and contiguous files ('7') are returned as
 * TAR_UNSUPPORTED entries (their data skipped). Pax global headers ('g') are read and ignored
 * unless they set path, linkpath or size (-EBADMSG). GNU extensions (the "ustar  " magic, 'L',
 * 'K', 'S', 'D', 'M', 'N', 'V', base-256 numbers, GNU.sparse pax keys) and any other typeflag are
 * -EBADMSG: their entries cannot be skipped safely.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TAR_BLOCK_SIZE 512U
/* Longest path or link target, in bytes without the NUL. */
#define TAR_PATH_MAX 4096U
/* Largest pax extended header (its data, whole) the reader accepts. */
#define TAR_PAX_MAX (256U * 1024U)
/* Largest size an ustar header's own 11-digit octal size field carries: 8 GiB - 1. */
#define TAR_USTAR_SIZE_MAX 077777777777ULL

enum tar_type {
	TAR_REGULAR,
	TAR_DIRECTORY,
	TAR_SYMLINK,
	TAR_UNSUPPORTED, /* a hard link, device, FIFO or contiguous file; see typeflag */
};

struct tar_entry {
	enum tar_type type;
	char typeflag;		     /* the header's typeflag byte, as read ('0' for a NUL) */
	char path[TAR_PATH_MAX + 1]; /* as in the archive (no normalization) */
	char link[TAR_PATH_MAX + 1]; /* symlink or hard link target, else "" */
	uint32_t mode;		     /* the mode field's 07777 bits */
	uint64_t uid, gid;
	uint64_t size;	     /* bytes of data that follow (0 but for regular files) */
	int64_t mtime;	     /* seconds */
	uint32_t mtime_nsec; /* from a pax mtime, else 0 */
};

/* Name of a type for messages: "regular file", "directory", "symlink", "hard link", … */
const char *tar_typeflag_name(char typeflag);

/*
 * Writer. Usage: tar_writer_init(), then per entry tar_writer_header(), tar_writer_data() until
 * exactly entry->size bytes were given, tar_writer_end_entry(); finally tar_writer_finish().
 * Write errors are -errno as write(2) gave them (-EPIPE when the reader of a pipe went away: the
 * caller decides about SIGPIPE). Misuse (more or less data than declared) is -EINVAL.
 */
struct tar_writer {
	int fd;
	uint64_t remaining; /* data bytes still due for the current entry */
	uint64_t size;	    /* the current entry's size */
	bool in_entry;
	unsigned long pax_serial;
};

void tar_writer_init(struct tar_writer *w, int fd);
/* entry->type must be TAR_REGULAR, TAR_DIRECTORY or TAR_SYMLINK; path non-empty; size 0 but for
 * regular files; link non-empty for symlinks. typeflag is ignored. -EINVAL otherwise. */
int tar_writer_header(struct tar_writer *w, const struct tar_entry *entry);
int tar_writer_data(struct tar_writer *w, const void *buf, size_t len);
int tar_writer_end_entry(struct tar_writer *w);
int tar_writer_finish(struct tar_writer *w);

/*
 * Format the ustar header block of entry (no pax): -ENAMETOOLONG when the path or link does not
 * fit the ustar fields, -ERANGE when size, mtime, uid or gid does not fit; used by the writer and
 * by tests that corrupt single fields. The checksum is computed.
 */
int tar_format_header(const struct tar_entry *entry, uint8_t block[TAR_BLOCK_SIZE]);
/* Recompute the checksum field of a header block (tests corrupt a field, then fix the sum). */
void tar_header_fix_checksum(uint8_t block[TAR_BLOCK_SIZE]);

/*
 * Reader. read_fn reads up to len bytes: returns the count (0 only at end of input) or -errno.
 */
typedef ssize_t (*tar_read_fn)(void *userdata, void *buf, size_t len);

struct tar_reader {
	tar_read_fn read;
	void *userdata;
	int fd;		    /* for tar_reader_init_fd() */
	uint64_t offset;    /* bytes consumed so far */
	uint64_t data_left; /* data bytes of the current entry not yet read */
	uint32_t pad_left;  /* padding bytes after them */
	bool end;	    /* the end-of-archive marker was read */
	bool failed;	    /* an error was returned; every later call repeats it */
	int error_code;
	char error[256];
};

void tar_reader_init(struct tar_reader *r, tar_read_fn read_fn, void *userdata);
/* Read from a file descriptor (EINTR retried). The reader refers to itself: r must not move. */
void tar_reader_init_fd(struct tar_reader *r, int fd);
/*
 * The next entry into *ret (skipping what is left of the previous entry's data): 1 an entry,
 * 0 the end-of-archive marker, -EBADMSG malformed or truncated input, other -errno a read error.
 */
int tar_reader_next(struct tar_reader *r, struct tar_entry *ret);
/* Up to len bytes of the current entry's data: the count, 0 at its end, or -errno as above. */
ssize_t tar_reader_read(struct tar_reader *r, void *buf, size_t len);
/*
 * After tar_reader_next() returned 0: read to the end of input, accepting only zero bytes
 * (record padding), at most max_trailing of them: 0, -EBADMSG, or -errno.
 */
int tar_reader_finish(struct tar_reader *r, uint64_t max_trailing);
/* What went wrong, naming the field and the header's offset; "" when nothing did. */
const char *tar_reader_error(const struct tar_reader *r);
