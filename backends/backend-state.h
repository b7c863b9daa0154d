/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Owner-only state files of the backend stores (settings, active selection, secrets): one
 * directory, mode 0700 and owned by us; files regular, owned by us, no group or other
 * permission bits, replaced atomically (write_file_atomic(): temp file in the same directory,
 * fsync, rename, fsync the directory). Errors that are about a file name it in err->reason
 * (err->field is "").
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ipc/ipc-json.h"

/* Largest state file read back. */
#define BACKEND_STATE_FILE_MAX ((size_t)4 * 1024 * 1024)

/*
 * Check dir: a directory owned by the effective uid with no group/other permission bits
 * (-EPERM, -ENOTDIR). When it is missing and create is set, make it (and missing parents)
 * with mode 0700.
 */
int backend_state_dir_check(const char *dir, bool create, struct field_error *err);

/*
 * Remove what an interrupted atomic write left in dir: regular files named "*.tmp.XXXXXX"
 * (write_file_atomic()'s temporary names). Call only while nothing writes there: the controller
 * does it once at start-up, under its single-instance lock and before its writer thread runs (a
 * store opened later, the secret store, must not sweep: a write may be under way). Returns how
 * many were removed, or -errno.
 */
int backend_state_remove_stale(const char *dir);

/*
 * The frame of every versioned state file: a JSON object with exactly the keys of keys[] (NULL
 * terminated) and "version" equal to version. *ret gets the document.
 */
int backend_state_parse_doc(const char *buf, size_t len, const char *const *keys, uint64_t version,
			    json_t **ret, struct field_error *err);
/* A key of a state file that names a backend must be its canonical text form (err names path). */
int backend_state_check_ref_key(const char *key, const char *path, struct field_error *err);

/* Parse a state file's text into the object a store keeps (err names what is wrong). */
typedef int (*backend_state_parse_fn)(const char *buf, size_t len, json_t **ret,
				      struct field_error *err);

/*
 * What every store does at open: check (or create) dir, read dir/name
 * and parse it. A missing file gives an empty object. A corrupt one (unparseable, too large) is
 * moved aside to *ret_aside (may be NULL) and also gives an empty object: returns 1 then, else 0;
 * -errno (err filled) for what must stop the store from opening (permissions, I/O).
 */
int backend_state_load(const char *dir, const char *name, backend_state_parse_fn parse,
		       json_t **ret, char **ret_aside, struct field_error *err);

/*
 * Open dir/name read-only after the checks every state file gets: -ENOENT when missing (err
 * untouched); -EPERM for a symlink, a non-regular file, another owner or group/other permission
 * bits (err says so, calling the file what: "file", "key file").
 */
int backend_state_file_open(const char *dir, const char *name, const char *what, int *ret_fd,
			    struct field_error *err);

/*
 * Read dir/name into a NUL-terminated buffer. -ENOENT when missing (err untouched); -EPERM for
 * a symlink, a non-regular file, another owner or group/other permission bits; -EFBIG over
 * max.
 */
int backend_state_file_read(const char *dir, const char *name, size_t max, char **ret,
			    size_t *ret_len, struct field_error *err);

/* Replace dir/name atomically with mode 0600. On failure the previous file is untouched. */
int backend_state_file_write(const char *dir, const char *name, const void *data, size_t len);

/* Serialize doc (sorted keys, indented, trailing newline) and write it as above. */
int backend_state_json_write(const char *dir, const char *name, json_t *doc);
/* The text backend_state_json_write() writes for doc (malloc'd, NUL-terminated). */
int backend_state_json_text(json_t *doc, char **ret, size_t *ret_len);

/*
 * Rename dir/name to a fresh dir/name.corrupt-XXXXXX (never replacing an earlier copy) and
 * return that path in *ret_path.
 */
int backend_state_file_move_aside(const char *dir, const char *name, char **ret_path);
