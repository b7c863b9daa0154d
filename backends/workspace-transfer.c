/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Workspace snapshot (ws_archive_write) and reconciliation (ws_archive_apply) over common/tar;
 * see workspace-transfer.h for the rules.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/workspace-transfer.h"
#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/tar.h"
#include "common/util.h"

#define HASH_LEN 32
#define COPY_BUF (64U * 1024U)
#define TRAILING_MAX (1024U * 1024U)
#define RESOLVE_IN (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* ---------------------------------------------------------------------------------------------
 * Report
 */

static const char *const action_names[_WS_ACTION_MAX] = {
	[WS_ADDED] = "added",	    [WS_CHANGED] = "changed", [WS_DELETED] = "deleted",
	[WS_CONFLICT] = "conflict", [WS_REFUSED] = "refused", [WS_SKIPPED] = "skipped",
};

const char *ws_action_to_string(enum ws_action a)
{
	return a >= 0 && a < _WS_ACTION_MAX ? action_names[a] : NULL;
}

int ws_report_init(struct ws_report *r)
{
	*r = (struct ws_report){ .items = json_array() };
	return r->items ? 0 : -ENOMEM;
}

void ws_report_done(struct ws_report *r)
{
	json_decref(r->items);
	r->items = NULL;
}

static void report_reset(struct ws_report *r)
{
	if (r->items)
		(void)json_array_clear(r->items);
	memset(r->counts, 0, sizeof(r->counts));
	r->unchanged = 0;
	r->truncated = false;
}

_printf_(2, 3) static void report_error(struct ws_report *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
}

/* A path for the report: JSON strings are UTF-8, so other bytes become '?'. */
static json_t *path_string(const char *path)
{
	_cleanup_free_ char *copy = NULL;

	if (utf8_is_valid(path, strlen(path)))
		return json_string(path);
	copy = strdup(path);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80 || (unsigned char)*p < 0x20)
			*p = '?';
	return json_string(copy);
}

static int report_add(struct ws_report *r, const char *path, enum ws_action action,
		      const char *reason)
{
	_cleanup_json_ json_t *item = NULL, *jpath = NULL;

	r->counts[action]++;
	if (!r->items)
		return 0;
	if (json_array_size(r->items) >= WS_REPORT_ITEMS_MAX) {
		r->truncated = true;
		return 0;
	}
	jpath = path_string(path);
	if (!jpath)
		return -ENOMEM;
	item = json_pack("{s:O, s:s}", "path", jpath, "action", ws_action_to_string(action));
	if (!item)
		return -ENOMEM;
	if (reason && json_object_set_new(item, "reason", json_string(reason)) < 0)
		return -ENOMEM;
	return json_array_append(r->items, item) < 0 ? -ENOMEM : 0;
}

json_t *ws_report_to_json(const struct ws_report *r)
{
	_cleanup_json_ json_t *counts = json_object(), *o = NULL;

	if (!counts)
		return NULL;
	for (int a = 0; a < _WS_ACTION_MAX; a++)
		if (json_object_set_new(counts, action_names[a],
					json_integer((json_int_t)r->counts[a])) < 0)
			return NULL;
	if (json_object_set_new(counts, "unchanged", json_integer((json_int_t)r->unchanged)) < 0)
		return NULL;
	o = json_pack("{s:O, s:O, s:b}", "items", r->items ? r->items : json_null(), "counts",
		      counts, "truncated", r->truncated);
	if (!o)
		return NULL;
	if (r->error[0] && json_object_set_new(o, "error", json_string(r->error)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

/* ---------------------------------------------------------------------------------------------
 * Snapshot
 */

struct snap_entry {
	char *path;
	enum tar_type type;
	uint32_t mode; /* st_mode & 07777 */
	uint64_t size, ino, dev;
	int64_t mtime_ns, ctime_ns;
	uint8_t hash[HASH_LEN]; /* regular: content; symlink: target */
	bool unstable;		/* changed while it was read: never "unchanged" */
};

struct ws_snapshot {
	struct snap_entry *e;
	size_t n, cap;
};

void ws_snapshot_free(struct ws_snapshot *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->e[i].path);
	free(s->e);
	free(s);
}

size_t ws_snapshot_size(const struct ws_snapshot *s)
{
	return s ? s->n : 0;
}

static int snap_cmp(const void *a, const void *b)
{
	return strcmp(((const struct snap_entry *)a)->path, ((const struct snap_entry *)b)->path);
}

static const struct snap_entry *snap_find(const struct ws_snapshot *s, const char *path)
{
	struct snap_entry key = { .path = (char *)path };

	if (!s || s->n == 0)
		return NULL;
	return bsearch(&key, s->e, s->n, sizeof(*s->e), snap_cmp);
}

static int64_t ts_ns(struct timespec t)
{
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static enum tar_type type_of(mode_t m)
{
	return S_ISREG(m)   ? TAR_REGULAR
	       : S_ISDIR(m) ? TAR_DIRECTORY
	       : S_ISLNK(m) ? TAR_SYMLINK
			    : TAR_UNSUPPORTED;
}

static void snap_fill(struct snap_entry *e, const struct stat *st)
{
	e->type = type_of(st->st_mode);
	e->mode = st->st_mode & 07777;
	e->size = e->type == TAR_DIRECTORY ? 0 : (uint64_t)st->st_size;
	e->ino = st->st_ino;
	e->dev = st->st_dev;
	e->mtime_ns = ts_ns(st->st_mtim);
	e->ctime_ns = ts_ns(st->st_ctim);
}

static struct snap_entry *snap_add(struct ws_snapshot *s, const char *path)
{
	struct snap_entry *e;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct snap_entry *n = reallocarray(s->e, cap, sizeof(*n));

		if (!n)
			return NULL;
		s->e = n;
		s->cap = cap;
	}
	e = &s->e[s->n];
	*e = (struct snap_entry){ .path = strdup(path) };
	if (!e->path)
		return NULL;
	s->n++;
	return e;
}

/* The host file now equals what the snapshot recorded. */
static bool host_unchanged(const struct snap_entry *s, const struct stat *st)
{
	if (s->unstable || type_of(st->st_mode) != s->type || st->st_ino != s->ino ||
	    st->st_dev != s->dev || (st->st_mode & 07777) != s->mode)
		return false;
	if (s->type == TAR_DIRECTORY)
		return true; /* its times change with its entries, which are checked themselves */
	return (uint64_t)st->st_size == s->size && ts_ns(st->st_mtim) == s->mtime_ns &&
	       ts_ns(st->st_ctim) == s->ctime_ns;
}

/* ---------------------------------------------------------------------------------------------
 * Writer
 */

struct wctx {
	int root;
	struct tar_writer tw;
	const struct ws_limits *lim;
	struct ws_snapshot *snap;
	struct ws_report *rep;
	uint64_t bytes, entries;
	struct tar_entry te;
	uint8_t buf[COPY_BUF];
};

static const char *special_name(mode_t m)
{
	return S_ISSOCK(m)   ? "socket"
	       : S_ISFIFO(m) ? "FIFO"
	       : S_ISCHR(m)  ? "character device"
	       : S_ISBLK(m)  ? "block device"
			     : "unsupported file type";
}

static int count_entry(struct wctx *c, uint64_t size, const char *path)
{
	if (c->entries >= c->lim->max_entries) {
		report_error(c->rep, "more than %" PRIu64 " entries (at \"%s\")",
			     c->lim->max_entries, path);
		return -E2BIG;
	}
	if (size > c->lim->max_bytes - c->bytes) {
		report_error(c->rep, "more than %" PRIu64 " bytes (at \"%s\")", c->lim->max_bytes,
			     path);
		return -EFBIG;
	}
	c->entries++;
	c->bytes += size;
	return 0;
}

static int set_entry(struct wctx *c, enum tar_type type, const char *path, const struct stat *st)
{
	struct tar_entry *te = &c->te;

	te->type = type;
	(void)snprintf(te->path, sizeof(te->path), "%s", path);
	te->link[0] = '\0';
	te->mode = st->st_mode & 0777;
	te->uid = 0;
	te->gid = 0;
	te->size = type == TAR_REGULAR ? (uint64_t)st->st_size : 0;
	te->mtime = st->st_mtim.tv_sec;
	te->mtime_nsec = 0;
	return 0;
}

static int write_failed(struct wctx *c, int r, const char *path)
{
	report_error(c->rep, "writing \"%s\": %s", path, strerror(-r));
	return r;
}

static int emit_file(struct wctx *c, int dfd, const char *name, const char *path)
{
	_cleanup_close_ int fd = -1;
	crypto_generichash_state h;
	struct snap_entry *e;
	struct stat st, st2;
	uint64_t left;
	bool unstable = false;
	int r;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ELOOP)
			return report_add(c->rep, path, WS_SKIPPED, "vanished while it was read");
		report_error(c->rep, "opening \"%s\": %m", path);
		return -errno;
	}
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return report_add(c->rep, path, WS_SKIPPED, "replaced while it was read");
	if ((r = count_entry(c, (uint64_t)st.st_size, path)) < 0)
		return r;

	set_entry(c, TAR_REGULAR, path, &st);
	if ((r = tar_writer_header(&c->tw, &c->te)) < 0)
		return write_failed(c, r, path);

	(void)crypto_generichash_init(&h, NULL, 0, HASH_LEN);
	left = (uint64_t)st.st_size;
	while (left > 0) {
		size_t want = left < sizeof(c->buf) ? (size_t)left : sizeof(c->buf);
		ssize_t n = read(fd, c->buf, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			report_error(c->rep, "reading \"%s\": %m", path);
			return -errno;
		}
		if (n == 0) {
			/* Shrank while read: the declared size is sent, zero-filled. */
			memset(c->buf, 0, want);
			n = (ssize_t)want;
			unstable = true;
		}
		(void)crypto_generichash_update(&h, c->buf, (size_t)n);
		if ((r = tar_writer_data(&c->tw, c->buf, (size_t)n)) < 0)
			return write_failed(c, r, path);
		left -= (uint64_t)n;
	}
	if ((r = tar_writer_end_entry(&c->tw)) < 0)
		return write_failed(c, r, path);
	if (fstat(fd, &st2) < 0 || st2.st_size != st.st_size ||
	    ts_ns(st2.st_mtim) != ts_ns(st.st_mtim) || ts_ns(st2.st_ctim) != ts_ns(st.st_ctim))
		unstable = true;

	e = snap_add(c->snap, path);
	if (!e)
		return -ENOMEM;
	snap_fill(e, &st);
	e->unstable = unstable;
	(void)crypto_generichash_final(&h, e->hash, HASH_LEN);
	return 0;
}

static int emit_symlink(struct wctx *c, int dfd, const char *name, const char *path,
			const struct stat *st)
{
	struct snap_entry *e;
	ssize_t n;
	int r;

	set_entry(c, TAR_SYMLINK, path, st);
	n = readlinkat(dfd, name, c->te.link, sizeof(c->te.link));
	if (n < 0) {
		if (errno == ENOENT || errno == EINVAL)
			return report_add(c->rep, path, WS_SKIPPED, "vanished while it was read");
		report_error(c->rep, "reading the symlink \"%s\": %m", path);
		return -errno;
	}
	if ((size_t)n >= sizeof(c->te.link) || n == 0)
		return report_add(c->rep, path, WS_SKIPPED, "symlink target too long");
	if ((r = count_entry(c, 0, path)) < 0)
		return r;
	c->te.link[n] = '\0';
	if ((r = tar_writer_header(&c->tw, &c->te)) < 0 || (r = tar_writer_end_entry(&c->tw)) < 0)
		return write_failed(c, r, path);

	e = snap_add(c->snap, path);
	if (!e)
		return -ENOMEM;
	snap_fill(e, st);
	crypto_generichash(e->hash, HASH_LEN, (const unsigned char *)c->te.link, (size_t)n, NULL,
			   0);
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in directory fd, sorted (a NULL-terminated strv). */
static int list_dir(int fd, char ***ret)
{
	_cleanup_strv_free_ char **names = NULL;
	_cleanup_closedir_ DIR *d = NULL;
	size_t n = 0, cap = 0;
	int dfd;

	dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		safe_close(dfd);
		return -errno;
	}
	for (;;) {
		struct dirent *de;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				return -errno;
			break;
		}
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (n + 1 >= cap) {
			size_t nc = cap ? cap * 2 : 16;
			char **nn = reallocarray(names, nc, sizeof(*nn));

			if (!nn)
				return -ENOMEM;
			names = nn;
			cap = nc;
		}
		names[n] = strdup(de->d_name);
		if (!names[n])
			return -ENOMEM;
		names[++n] = NULL;
	}
	if (n > 0)
		qsort(names, n, sizeof(*names), name_cmp);
	else if (!names && !(names = calloc(1, sizeof(*names))))
		return -ENOMEM;
	*ret = TAKE_PTR(names);
	return 0;
}

/* Archive the directory rel ("" the root) and everything below it. Only one directory fd is
 * open at a time: a subdirectory is opened again from the root after its parent was closed. */
static int walk_dir(struct wctx *c, const char *rel)
{
	_cleanup_strv_free_ char **names = NULL;
	_cleanup_free_ bool *is_dir = NULL;
	_cleanup_close_ int dfd = -1;
	size_t n;
	int r;

	dfd = fd_openat2(c->root, rel[0] ? rel : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
			 RESOLVE_IN);
	if (dfd < 0) {
		if (rel[0] && (dfd == -ENOENT || dfd == -ELOOP || dfd == -ENOTDIR))
			return report_add(c->rep, rel, WS_SKIPPED, "vanished while it was read");
		report_error(c->rep, "opening \"%s\": %s", rel[0] ? rel : ".", strerror(-dfd));
		return dfd;
	}
	if (rel[0]) {
		struct snap_entry *e;
		struct stat st;

		if (fstat(dfd, &st) < 0)
			return negative_errno();
		if ((r = count_entry(c, 0, rel)) < 0)
			return r;
		set_entry(c, TAR_DIRECTORY, rel, &st);
		if ((r = tar_writer_header(&c->tw, &c->te)) < 0 ||
		    (r = tar_writer_end_entry(&c->tw)) < 0)
			return write_failed(c, r, rel);
		e = snap_add(c->snap, rel);
		if (!e)
			return -ENOMEM;
		snap_fill(e, &st);
	}

	r = list_dir(dfd, &names);
	if (r < 0) {
		report_error(c->rep, "listing \"%s\": %s", rel[0] ? rel : ".", strerror(-r));
		return r;
	}
	n = strv_length(names);
	is_dir = calloc(n + 1, sizeof(*is_dir));
	if (!is_dir)
		return -ENOMEM;

	/* Files and symlinks first, then each subdirectory with its parent closed. */
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *path = rel[0] ? strdup_printf("%s/%s", rel, names[i])
						   : strdup(names[i]);
		struct stat st;

		if (!path)
			return -ENOMEM;
		if (strlen(path) > c->lim->max_path || strlen(path) > TAR_PATH_MAX) {
			if ((r = report_add(c->rep, path, WS_SKIPPED, "path too long")) < 0)
				return r;
			continue;
		}
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT) {
				r = report_add(c->rep, path, WS_SKIPPED,
					       "vanished while it was read");
				if (r < 0)
					return r;
				continue;
			}
			report_error(c->rep, "stat \"%s\": %m", path);
			return -errno;
		}
		if (S_ISDIR(st.st_mode))
			is_dir[i] = true;
		else if (S_ISREG(st.st_mode))
			r = emit_file(c, dfd, names[i], path);
		else if (S_ISLNK(st.st_mode))
			r = emit_symlink(c, dfd, names[i], path, &st);
		else
			r = report_add(c->rep, path, WS_SKIPPED, special_name(st.st_mode));
		if (r < 0)
			return r;
	}
	dfd = safe_close(dfd);

	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *path = NULL;

		if (!is_dir[i])
			continue;
		path = rel[0] ? strdup_printf("%s/%s", rel, names[i]) : strdup(names[i]);
		if (!path)
			return -ENOMEM;
		if ((r = walk_dir(c, path)) < 0)
			return r;
	}
	return 0;
}

int ws_archive_write(int dirfd, int out_fd, const struct ws_limits *limits,
		     struct ws_snapshot **ret_snapshot, struct ws_report *report)
{
	_cleanup_ws_snapshot_ struct ws_snapshot *snap = NULL;
	_cleanup_free_ struct wctx *c = NULL;
	sigset_t pipe_set, old, pending;
	bool was_pending;
	int r;

	report->error[0] = '\0';
	if (sodium_init() < 0)
		return -EIO;
	snap = calloc(1, sizeof(*snap));
	c = calloc(1, sizeof(*c));
	if (!snap || !c)
		return -ENOMEM;
	c->root = dirfd;
	c->lim = limits;
	c->snap = snap;
	c->rep = report;
	tar_writer_init(&c->tw, out_fd);

	/* A closed pipe must be -EPIPE here, not a signal for the whole daemon: block SIGPIPE on
	 * this thread and take back the one our write raised. */
	(void)sigemptyset(&pipe_set);
	(void)sigaddset(&pipe_set, SIGPIPE);
	(void)pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;

	r = walk_dir(c, "");
	if (r >= 0 && (r = tar_writer_finish(&c->tw)) < 0)
		(void)write_failed(c, r, "end of archive");

	if (r == -EPIPE && !was_pending) {
		const struct timespec zero = { 0, 0 };

		(void)sigtimedwait(&pipe_set, NULL, &zero);
	}
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0)
		return r;

	if (snap->n > 0)
		qsort(snap->e, snap->n, sizeof(*snap->e), snap_cmp);
	*ret_snapshot = TAKE_PTR(snap);
	return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Apply
 */

struct item {
	char *path;
	char *link;
	enum tar_type type;
	uint32_t mode; /* 0777 bits */
	uint64_t size, spool_off, seq;
	int64_t mtime;
	uint32_t mtime_nsec;
	uint8_t hash[HASH_LEN];
	bool refused;
};

struct dir_mode {
	char *path;
	uint32_t mode;
};

struct actx {
	int root;
	int spool;
	const struct ws_snapshot *snap;
	const struct ws_limits *lim;
	const struct ws_rules *rules;
	struct ws_report *rep;
	struct item *items;
	size_t n, cap;
	struct dir_mode *modes;
	size_t n_modes, cap_modes;
	uint64_t bytes, spool_end;
	unsigned serial;
	bool over_entry_limit;
	uint8_t buf[COPY_BUF];
	uint8_t buf2[COPY_BUF];
};

static void actx_free(struct actx *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->items[i].path);
		free(c->items[i].link);
	}
	free(c->items);
	for (size_t i = 0; i < c->n_modes; i++)
		free(c->modes[i].path);
	free(c->modes);
	safe_close(c->spool);
	free(c);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct actx *, actx_free)

/* "a/./b//c" → "a/b/c"; "" for the root. Absolute paths and ".." are refused. */
static int normalize_path(const char *in, char **ret, const char **reason)
{
	_cleanup_free_ char *out = NULL;
	size_t o = 0, len = strlen(in);
	const char *p = in;

	if (in[0] == '/') {
		*reason = "absolute path";
		return -EINVAL;
	}
	out = malloc(len + 1);
	if (!out)
		return -ENOMEM;
	while (*p) {
		const char *s = strchrnul(p, '/');
		size_t l = (size_t)(s - p);

		if (l == 2 && p[0] == '.' && p[1] == '.') {
			*reason = "path with a \"..\" component";
			return -EINVAL;
		}
		if (l > 0 && !(l == 1 && p[0] == '.')) {
			if (o > 0)
				out[o++] = '/';
			memcpy(out + o, p, l);
			o += l;
		}
		p = *s ? s + 1 : s;
	}
	out[o] = '\0';
	*ret = TAKE_PTR(out);
	return 0;
}

static int item_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	if (c != 0)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const struct item *item_find(const struct actx *c, const char *path)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int k = strcmp(c->items[mid].path, path);

		if (k == 0) {
			/* the first of duplicates */
			while (mid > 0 && streq(c->items[mid - 1].path, path))
				mid--;
			return &c->items[mid];
		}
		if (k < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Whether some archive path lies below dir. */
static bool items_below(const struct actx *c, const char *dir)
{
	size_t dl = strlen(dir), lo = 0, hi = c->n;

	/* The first item > dir: entries below dir ("dir/…") sort right after dir and before
	 * anything else starting with dir followed by a byte above '/'. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(c->items[mid].path, dir) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < c->n; i++) {
		const char *p = c->items[i].path;

		if (strncmp(p, dir, dl) != 0)
			return false;
		if (p[dl] == '/')
			return true;
		if ((unsigned char)p[dl] > '/')
			return false;
	}
	return false;
}

static bool may_write(const struct actx *c, const char *path, const char **reason)
{
	*reason = NULL;
	if (!c->rules || !c->rules->may_write)
		return true;
	if (c->rules->may_write(path, reason, c->rules->userdata))
		return true;
	if (!*reason)
		*reason = "refused by the caller's rules";
	return false;
}

static struct item *item_add(struct actx *c)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct item *n = reallocarray(c->items, cap, sizeof(*n));

		if (!n)
			return NULL;
		c->items = n;
		c->cap = cap;
	}
	c->items[c->n] = (struct item){ .seq = c->n };
	return &c->items[c->n++];
}

static int open_spool(int dirfd)
{
	int fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0)
		return fd;
	/* No O_TMPFILE there (or a read-only tree): memory, bounded by max_bytes. */
	fd = memfd_create("cordon-ws-spool", MFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Copy the entry's data to the end of the spool, hashing it. */
static int spool_data(struct actx *c, struct tar_reader *tr, struct item *it)
{
	crypto_generichash_state h;

	it->spool_off = c->spool_end;
	(void)crypto_generichash_init(&h, NULL, 0, HASH_LEN);
	for (;;) {
		ssize_t n = tar_reader_read(tr, c->buf, sizeof(c->buf));
		int r;

		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		(void)crypto_generichash_update(&h, c->buf, (size_t)n);
		r = loop_write(c->spool, c->buf, (size_t)n);
		if (r < 0) {
			report_error(c->rep, "spooling the archive: %s", strerror(-r));
			return r;
		}
		c->spool_end += (uint64_t)n;
	}
	(void)crypto_generichash_final(&h, it->hash, HASH_LEN);
	return 0;
}

/* Read and validate the whole archive, spooling file contents; nothing is written to the tree. */
static int read_archive(struct actx *c, int in_fd)
{
	_cleanup_free_ struct tar_entry *te = malloc(sizeof(*te));
	struct tar_reader tr;
	uint64_t seen = 0, names = 0;
	int r;

	if (!te)
		return -ENOMEM;
	tar_reader_init_fd(&tr, in_fd);
	for (;;) {
		_cleanup_free_ char *path = NULL;
		const char *reason = NULL;
		struct item *it;

		r = tar_reader_next(&tr, te);
		if (r < 0) {
			report_error(c->rep, "%s", tar_reader_error(&tr));
			return r;
		}
		if (r == 0)
			break;

		names += strlen(te->path) + strlen(te->link) + 2;
		if (++seen > c->lim->max_entries || names > c->lim->max_names) {
			/* Not even its path is kept: memory stays bounded by the limits. */
			c->over_entry_limit = true;
			if ((r = report_add(c->rep, te->path, WS_REFUSED,
					    "beyond the entry limit")) < 0)
				return r;
			continue;
		}
		r = normalize_path(te->path, &path, &reason);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			if ((r = report_add(c->rep, te->path, WS_REFUSED, reason)) < 0)
				return r;
			continue;
		}
		if (path[0] == '\0') {
			if (te->type == TAR_DIRECTORY)
				continue; /* the workspace itself */
			if ((r = report_add(c->rep, te->path, WS_REFUSED,
					    "not a directory at the workspace root")) < 0)
				return r;
			continue;
		}

		it = item_add(c);
		if (!it)
			return -ENOMEM;
		it->path = TAKE_PTR(path);
		it->type = te->type;
		it->mode = te->mode & 0777;
		it->mtime = te->mtime;
		it->mtime_nsec = te->mtime_nsec;

		if (strlen(it->path) > c->lim->max_path)
			reason = "path longer than the limit";
		else if (te->type == TAR_UNSUPPORTED)
			reason = tar_typeflag_name(te->typeflag);
		else if (!may_write(c, it->path, &reason))
			;
		else if (te->type == TAR_REGULAR && te->size > c->lim->max_bytes - c->bytes)
			reason = "beyond the size limit";
		if (reason) {
			it->refused = true;
			if ((r = report_add(c->rep, it->path, WS_REFUSED, reason)) < 0)
				return r;
			continue;
		}
		if (te->type == TAR_SYMLINK) {
			it->link = strdup(te->link);
			if (!it->link)
				return -ENOMEM;
			crypto_generichash(it->hash, HASH_LEN, (const unsigned char *)te->link,
					   strlen(te->link), NULL, 0);
		} else if (te->type == TAR_REGULAR) {
			it->size = te->size;
			c->bytes += te->size;
			r = spool_data(c, &tr, it);
			if (r < 0) {
				if (!c->rep->error[0])
					report_error(c->rep, "%s", tar_reader_error(&tr));
				return r;
			}
		}
	}
	r = tar_reader_finish(&tr, TRAILING_MAX);
	if (r < 0) {
		report_error(c->rep, "%s", tar_reader_error(&tr));
		return r;
	}
	return 0;
}

/* The items sorted; later duplicates and entries below an archive symlink or file refused. */
static int check_items(struct actx *c)
{
	int r;

	if (c->n > 0)
		qsort(c->items, c->n, sizeof(*c->items), item_cmp);
	for (size_t i = 0; i < c->n; i++) {
		struct item *it = &c->items[i];
		const char *reason = NULL;

		if (it->refused)
			continue;
		if (i > 0 && streq(c->items[i - 1].path, it->path)) {
			reason = "duplicate entry";
		} else {
			_cleanup_free_ char *prefix = strdup(it->path);

			if (!prefix)
				return -ENOMEM;
			for (char *s = strchr(prefix, '/'); s && !reason; s = strchr(s + 1, '/')) {
				const struct item *parent;

				*s = '\0';
				parent = item_find(c, prefix);
				if (parent && parent->type == TAR_SYMLINK)
					reason = "below a symlink in the archive";
				else if (parent && parent->type != TAR_DIRECTORY)
					reason = "below a non-directory in the archive";
				*s = '/';
			}
		}
		if (reason) {
			it->refused = true;
			if ((r = report_add(c->rep, it->path, WS_REFUSED, reason)) < 0)
				return r;
		}
	}
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static const char *open_error_reason(int r)
{
	switch (r) {
	case -ELOOP:
		return "below a symlink on the host";
	case -ENOTDIR:
		return "below a non-directory on the host";
	case -EXDEV:
		return "outside the workspace";
	default:
		return strerror(-r);
	}
}

/* The directory holding path, opened without following any symlink; -ENOENT if missing. */
static int open_parent(struct actx *c, const char *path)
{
	const char *s = strrchr(path, '/');
	_cleanup_free_ char *dir = NULL;

	if (!s)
		return fd_openat2(c->root, ".", O_RDONLY | O_DIRECTORY, RESOLVE_IN);
	dir = strndup(path, (size_t)(s - path));
	if (!dir)
		return -ENOMEM;
	return fd_openat2(c->root, dir, O_RDONLY | O_DIRECTORY, RESOLVE_IN);
}

static int queue_mode(struct actx *c, const char *path, uint32_t mode)
{
	if (c->n_modes == c->cap_modes) {
		size_t cap = c->cap_modes ? c->cap_modes * 2 : 16;
		struct dir_mode *n = reallocarray(c->modes, cap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->modes = n;
		c->cap_modes = cap;
	}
	c->modes[c->n_modes].path = strdup(path);
	if (!c->modes[c->n_modes].path)
		return -ENOMEM;
	c->modes[c->n_modes++].mode = mode;
	return 0;
}

/*
 * The parent directory of path, creating missing directories one component at a time, each
 * opened with O_NOFOLLOW: created 0700, given 0755 at the end, reported as added.
 */
static int open_parent_create(struct actx *c, const char *path)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *copy = NULL;
	char *p, *s;
	int r;

	r = open_parent(c, path);
	if (r != -ENOENT)
		return r;
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	fd = fd_openat2(c->root, ".", O_RDONLY | O_DIRECTORY, RESOLVE_IN);
	if (fd < 0)
		return fd;
	for (p = copy; (s = strchr(p, '/')); p = s + 1) {
		int nfd;

		*s = '\0';
		if (mkdirat(fd, p, 0700) == 0) {
			if ((r = report_add(c->rep, copy, WS_ADDED, NULL)) < 0 ||
			    (r = queue_mode(c, copy, 0755)) < 0)
				return r;
		} else if (errno != EEXIST) {
			return -errno;
		}
		nfd = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0)
			return errno == ENOTDIR ? -ENOTDIR : -errno;
		safe_close(fd);
		fd = nfd;
		*s = '/';
	}
	return TAKE_FD(fd);
}

static int copy_range(struct actx *c, int out, uint64_t off, uint64_t len)
{
	loff_t in_off = (loff_t)off;

	while (len > 0) {
		size_t want = len < (1U << 30) ? (size_t)len : (1U << 30);
		ssize_t n = copy_file_range(c->spool, &in_off, out, NULL, want, 0);

		if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
			      errno == EOPNOTSUPP || errno == EBADF))
			break;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		len -= (uint64_t)n;
	}
	while (len > 0) {
		size_t want = len < sizeof(c->buf) ? (size_t)len : sizeof(c->buf);
		ssize_t n = pread(c->spool, c->buf, want, in_off);
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		if ((r = loop_write(out, c->buf, (size_t)n)) < 0)
			return r;
		in_off += n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* Whether the host's regular file base (in pfd) holds exactly the item's content. */
static bool same_content(struct actx *c, int pfd, const char *base, const struct item *it)
{
	_cleanup_close_ int fd = -1;
	uint64_t off = 0;

	fd = openat(pfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (off < it->size) {
		size_t want = it->size - off < sizeof(c->buf) ? (size_t)(it->size - off)
							      : sizeof(c->buf);
		ssize_t a = pread(c->spool, c->buf, want, (off_t)(it->spool_off + off));
		ssize_t b = loop_read(fd, c->buf2, want);

		if (a != (ssize_t)want || b != (ssize_t)want || memcmp(c->buf, c->buf2, want) != 0)
			return false;
		off += want;
	}
	return loop_read(fd, c->buf2, 1) == 0;
}

/*
 * Write the item as base in pfd through a temporary in the same directory, then rename it
 * into place (RENAME_NOREPLACE when nothing may be there).
 */
static int install(struct actx *c, int pfd, const char *base, const struct item *it, bool noreplace)
{
	char tmp[64];
	int r;

	for (;;) {
		(void)snprintf(tmp, sizeof(tmp), ".#cordon-ws.%d.%u", (int)getpid(), ++c->serial);
		if (it->type == TAR_SYMLINK) {
			if (symlinkat(it->link, pfd, tmp) == 0)
				break;
			if (errno != EEXIST)
				return -errno;
		} else {
			_cleanup_close_ int fd = -1;
			struct timespec ts[2];

			fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				    0600);
			if (fd < 0 && errno == EEXIST)
				continue;
			if (fd < 0)
				return -errno;
			ts[0].tv_sec = 0;
			ts[0].tv_nsec = UTIME_OMIT;
			ts[1].tv_sec = (time_t)it->mtime;
			ts[1].tv_nsec = it->mtime_nsec;
			if ((r = copy_range(c, fd, it->spool_off, it->size)) < 0 ||
			    (fchmod(fd, it->mode & 0777) < 0 && (r = -errno) < 0) ||
			    (futimens(fd, ts) < 0 && (r = -errno) < 0)) {
				(void)unlinkat(pfd, tmp, 0);
				return r;
			}
			break;
		}
	}
	if (renameat2(pfd, tmp, pfd, base, noreplace ? RENAME_NOREPLACE : 0) < 0) {
		r = -errno;
		(void)unlinkat(pfd, tmp, 0);
		return r;
	}
	return 0;
}

static int apply_item(struct actx *c, const struct item *it)
{
	const struct snap_entry *s = snap_find(c->snap, it->path);
	const char *base = base_name(it->path);
	_cleanup_close_ int pfd = -1;
	bool host_exists, sandbox_changed, unchanged_host;
	struct stat st;
	int r;

	pfd = open_parent_create(c, it->path);
	if (pfd == -ENOMEM)
		return pfd;
	if (pfd < 0)
		return report_add(c->rep, it->path, WS_REFUSED, open_error_reason(pfd));
	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0)
		host_exists = true;
	else if (errno == ENOENT)
		host_exists = false;
	else
		return report_add(c->rep, it->path, WS_SKIPPED, strerror(errno));

	if (!s) {
		/* Not sent: the sandbox created it. */
		if (!host_exists) {
			if (it->type == TAR_DIRECTORY) {
				if (mkdirat(pfd, base, 0700) < 0)
					return report_add(c->rep, it->path, WS_SKIPPED,
							  strerror(errno));
				if ((r = queue_mode(c, it->path, it->mode)) < 0)
					return r;
			} else if ((r = install(c, pfd, base, it, true)) < 0) {
				return report_add(c->rep, it->path,
						  r == -EEXIST ? WS_CONFLICT : WS_SKIPPED,
						  r == -EEXIST ? "created on the host meanwhile"
							       : strerror(-r));
			}
			return report_add(c->rep, it->path, WS_ADDED, NULL);
		}
		/* Created on both sides: nothing to do when they agree. */
		if (type_of(st.st_mode) == it->type &&
		    (it->type == TAR_DIRECTORY ||
		     ((st.st_mode & 0777) == it->mode && it->type == TAR_REGULAR &&
		      (uint64_t)st.st_size == it->size && same_content(c, pfd, base, it)))) {
			c->rep->unchanged++;
			return 0;
		}
		if (it->type == TAR_SYMLINK && S_ISLNK(st.st_mode)) {
			ssize_t n = readlinkat(pfd, base, (char *)c->buf2, sizeof(c->buf2) - 1);

			if (n >= 0 && (size_t)n == strlen(it->link) &&
			    memcmp(c->buf2, it->link, (size_t)n) == 0) {
				c->rep->unchanged++;
				return 0;
			}
		}
		return report_add(c->rep, it->path, WS_CONFLICT,
				  "created on the host and in the sandbox; host version kept");
	}

	sandbox_changed = s->type != it->type ||
			  (it->type != TAR_SYMLINK && (s->mode & 0777) != it->mode) ||
			  (it->type == TAR_REGULAR && s->size != it->size) ||
			  (it->type != TAR_DIRECTORY && memcmp(s->hash, it->hash, HASH_LEN) != 0);
	if (!sandbox_changed) {
		c->rep->unchanged++;
		return 0;
	}
	unchanged_host = host_exists && host_unchanged(s, &st);
	if (!unchanged_host)
		return report_add(
			c->rep, it->path, WS_CONFLICT,
			host_exists ? "changed on the host and in the sandbox; host version kept"
				    : "deleted on the host, changed in the sandbox; kept deleted");

	if (it->type == TAR_DIRECTORY) {
		if (s->type == TAR_DIRECTORY) /* the mode only, once the entries are in */
			r = queue_mode(c, it->path, it->mode);
		else if (unlinkat(pfd, base, 0) < 0 || mkdirat(pfd, base, 0700) < 0)
			return report_add(c->rep, it->path, WS_SKIPPED, strerror(errno));
		else
			r = queue_mode(c, it->path, it->mode);
		if (r < 0)
			return r;
		return report_add(c->rep, it->path, WS_CHANGED, NULL);
	}
	if (s->type == TAR_DIRECTORY) {
		/* A directory became a file: its entries were deleted first, when they could be. */
		if (unlinkat(pfd, base, AT_REMOVEDIR) < 0)
			return report_add(c->rep, it->path,
					  errno == ENOTEMPTY || errno == EEXIST ? WS_CONFLICT
										: WS_SKIPPED,
					  errno == ENOTEMPTY || errno == EEXIST
						  ? "directory not empty on the host; kept"
						  : strerror(errno));
		r = install(c, pfd, base, it, true);
	} else {
		r = install(c, pfd, base, it, false);
	}
	if (r < 0)
		return report_add(c->rep, it->path, WS_SKIPPED, strerror(-r));
	return report_add(c->rep, it->path, WS_CHANGED, NULL);
}

/* Remove what the sandbox deleted: files first (dirs == false), then directories deepest first. */
static int apply_deletions(struct actx *c, bool dirs)
{
	const struct ws_snapshot *sn = c->snap;
	int r;

	if (!sn)
		return 0;
	for (size_t k = 0; k < sn->n; k++) {
		const struct snap_entry *s = &sn->e[dirs ? sn->n - 1 - k : k];
		const char *reason = NULL;
		_cleanup_close_ int pfd = -1;
		struct stat st;

		if ((s->type == TAR_DIRECTORY) != dirs)
			continue;
		if (item_find(c, s->path) || items_below(c, s->path))
			continue;
		if (!may_write(c, s->path, &reason)) {
			if ((r = report_add(c->rep, s->path, WS_REFUSED, reason)) < 0)
				return r;
			continue;
		}
		pfd = open_parent(c, s->path);
		if (pfd == -ENOENT)
			continue; /* gone on both sides */
		if (pfd < 0) {
			r = report_add(c->rep, s->path, pfd == -ENOMEM ? WS_SKIPPED : WS_CONFLICT,
				       open_error_reason(pfd));
			if (r < 0 || pfd == -ENOMEM)
				return r < 0 ? r : pfd;
			continue;
		}
		if (fstatat(pfd, base_name(s->path), &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue;
			r = report_add(c->rep, s->path, WS_SKIPPED, strerror(errno));
		} else if (!host_unchanged(s, &st)) {
			r = report_add(
				c->rep, s->path, WS_CONFLICT,
				"changed on the host, deleted in the sandbox; host version kept");
		} else if (unlinkat(pfd, base_name(s->path), dirs ? AT_REMOVEDIR : 0) < 0) {
			bool full = errno == ENOTEMPTY || errno == EEXIST;

			r = report_add(c->rep, s->path, full ? WS_CONFLICT : WS_SKIPPED,
				       full ? "directory not empty on the host; kept"
					    : strerror(errno));
		} else {
			r = report_add(c->rep, s->path, WS_DELETED, NULL);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* Directory modes last (deepest first), so a read-only directory does not block its entries. */
static int apply_modes(struct actx *c)
{
	for (size_t k = c->n_modes; k > 0; k--) {
		const struct dir_mode *m = &c->modes[k - 1];
		_cleanup_close_ int fd = -1;

		fd = fd_openat2(c->root, m->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, RESOLVE_IN);
		if (fd < 0 || fchmod(fd, m->mode & 0777) < 0) {
			int r = report_add(c->rep, m->path, WS_SKIPPED, "cannot set its mode");

			if (r < 0)
				return r;
		}
	}
	return 0;
}

int ws_archive_apply(int dirfd, int in_fd, const struct ws_snapshot *snapshot,
		     const struct ws_limits *limits, const struct ws_rules *rules,
		     struct ws_report *report)
{
	_cleanup_(actx_freep) struct actx *c = NULL;
	int r;

	report->error[0] = '\0';
	if (sodium_init() < 0)
		return -EIO;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->root = dirfd;
	c->spool = -1;
	c->snap = snapshot;
	c->lim = limits;
	c->rules = rules;
	c->rep = report;

	c->spool = open_spool(dirfd);
	if (c->spool < 0) {
		report_error(report, "creating the spool file: %s", strerror(-c->spool));
		return c->spool;
	}
	r = read_archive(c, in_fd);
	if (r >= 0)
		r = check_items(c);
	if (r < 0) {
		/* Nothing was written: whatever was listed so far did not happen. */
		report_reset(report);
		if (!report->error[0])
			report_error(report, "%s", strerror(-r));
		return r;
	}

	/* From here on the tree changes; a failure of one path is reported and the rest goes on. */
	if (c->over_entry_limit) {
		r = report_add(
			report, "", WS_SKIPPED,
			"deletions not applied: the archive has more entries than the limit");
	} else {
		r = apply_deletions(c, false);
		if (r >= 0)
			r = apply_deletions(c, true);
	}
	for (size_t i = 0; r >= 0 && i < c->n; i++)
		if (!c->items[i].refused)
			r = apply_item(c, &c->items[i]);
	if (r >= 0)
		r = apply_modes(c);
	if (r < 0)
		report_error(report, "applying the archive: %s", strerror(-r));
	return r;
}
