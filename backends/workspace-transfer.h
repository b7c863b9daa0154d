/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Workspace transfer for backends that cannot see the host's workspace (claims.workspace
 * "transfer"): at lease acquisition the controller streams a tar of the workspace tree to the
 * backend (ws_archive_write(), which records a snapshot); at release it reads the backend's tar
 * of the lease's whole workspace tree and reconciles the host workspace with it
 * (ws_archive_apply()).
 *
 * Reconciliation, per path (S = the snapshot, H = the host now, A = the archive):
 *   in A, not in S                 added: created (kept as a conflict when H has something else)
 *   in A and S, A differs from S   changed: replaced atomically (temporary file in the same
 *                                   directory, renameat) when H is unchanged since S; when H
 *                                   changed too: conflict, the host version kept
 *   in S, not in A                 deleted: removed when H is unchanged (a directory only when
 *                                   empty); when H changed: conflict, kept
 *   A equal to S                   nothing
 * Refused (never written, reported): absolute paths, paths with "..", paths below a symlink
 * (in the archive or on the host), hard links, devices, FIFOs, entries beyond the limits, and
 * paths the caller's may_write() refuses (also for deletions). Only the 0777 mode bits are
 * applied. The archive is validated and its file contents spooled to an unnamed temporary file
 * before anything is written: a truncated or malformed archive changes nothing.
 *
 * "A differs from S" compares type, the 0777 mode bits and the content (a BLAKE2b hash of what
 * was sent, or the symlink target); "H unchanged" compares type, inode, device, mode, and for
 * non-directories size, mtime and ctime in nanoseconds. A file that changed while it was being
 * sent is recorded as changed, so a sandbox edit of it is a conflict.
 *
 * Both calls block (file system and pipe I/O): run them on a worker thread. Neither follows a
 * symlink: every path is opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) below dirfd.
 * ws_archive_write() blocks SIGPIPE on the calling thread while it writes, so a pipe whose reader
 * went away is -EPIPE, and the signal that write raised is consumed.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/cleanup.h"

struct ws_limits {
	uint64_t max_bytes;   /* total bytes of regular file content */
	uint64_t max_entries; /* entries (files, directories, symlinks) */
	size_t max_path;      /* bytes of a path relative to the workspace, at most TAR_PATH_MAX */
	/* apply: total bytes of the paths and symlink targets held while the archive is read;
	 * with max_entries this bounds ws_archive_apply()'s memory. */
	uint64_t max_names;
};

#define WS_LIMITS_DEFAULT                                            \
	((struct ws_limits){ .max_bytes = 8ULL * 1024 * 1024 * 1024, \
			     .max_entries = 1000000,                 \
			     .max_path = 4096,                       \
			     .max_names = 64ULL * 1024 * 1024 })

enum ws_action {
	WS_ADDED,
	WS_CHANGED,
	WS_DELETED,
	WS_CONFLICT,
	WS_REFUSED,
	WS_SKIPPED,
	_WS_ACTION_MAX,
};

const char *ws_action_to_string(enum ws_action a);

/* At most this many items are listed; the counts keep counting past it. */
#define WS_REPORT_ITEMS_MAX 1000

struct ws_report {
	json_t *items; /* array of {"path", "action", "reason"?} */
	uint64_t counts[_WS_ACTION_MAX];
	uint64_t unchanged; /* apply: archive entries that needed nothing */
	bool truncated;	    /* items stopped at WS_REPORT_ITEMS_MAX */
	char error[256];    /* why a call failed (a malformed archive: the field), or "" */
};

/* -ENOMEM or 0. */
int ws_report_init(struct ws_report *r);
void ws_report_done(struct ws_report *r);
/* {"items": [...], "counts": {"added": n, …, "unchanged": n}, "truncated": bool,
 *  "error"?: "…"}: a new reference, NULL on out-of-memory. */
json_t *ws_report_to_json(const struct ws_report *r);

/* What was sent: per path its type, size, mode, times, inode and content hash. Opaque. */
struct ws_snapshot;
void ws_snapshot_free(struct ws_snapshot *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct ws_snapshot *, ws_snapshot_free)
#define _cleanup_ws_snapshot_ _cleanup_(ws_snapshot_freep)
/* Number of paths recorded. */
size_t ws_snapshot_size(const struct ws_snapshot *s);

/*
 * Write a tar of the tree below dirfd (not dirfd itself) to out_fd: regular files, directories
 * and symlinks (as symlinks); sockets, FIFOs and devices are skipped and reported ("skipped"),
 * as are paths longer than limits->max_path and entries that vanish while the tree is read.
 * More than limits->max_entries entries or limits->max_bytes bytes fails with -E2BIG / -EFBIG
 * (a partial workspace is not sent: on any failure out_fd carries no end-of-archive marker, so
 * the reader must fail). On success *ret_snapshot holds what was sent.
 * Returns 0, -EPIPE when the reader went away, or another -errno (report->error says where).
 */
int ws_archive_write(int dirfd, int out_fd, const struct ws_limits *limits,
		     struct ws_snapshot **ret_snapshot, struct ws_report *report);

struct ws_rules {
	/* May the backend's version of relpath (normalized, relative, no "./") be written or
	 * deleted? false refuses it, with *reason (a static string) if set. NULL: all may. */
	bool (*may_write)(const char *relpath, const char **reason, void *userdata);
	void *userdata;
};

/*
 * Read a tar of the backend's whole workspace tree from in_fd (to its end: at most 1 MiB of
 * zero record padding may follow the end marker) and reconcile the tree below dirfd with it,
 * against snapshot (from ws_archive_write() of that tree; an empty snapshot — NULL — makes
 * every entry an addition and deletes nothing). rules may be NULL. Entries past
 * limits->max_entries or limits->max_names are refused, and then nothing is deleted (the
 * archive was not seen whole). File contents are spooled to an O_TMPFILE file in dirfd (a memfd
 * where that is not possible): up to limits->max_bytes of space.
 * Returns 0 when the archive was valid (whatever was refused, kept or failed per path is in the
 * report), -EBADMSG for a malformed or truncated archive (nothing changed; report->error names
 * the field), or another -errno (a read error, -ENOMEM: nothing changed).
 */
int ws_archive_apply(int dirfd, int in_fd, const struct ws_snapshot *snapshot,
		     const struct ws_limits *limits, const struct ws_rules *rules,
		     struct ws_report *report);
