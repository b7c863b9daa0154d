/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A cached mount table: the mount points of /proc/self/mountinfo, unescaped and sorted.
 *
 * Change detection: the kernel reports POLLERR|POLLPRI on an open mountinfo file when its mount
 * namespace's event counter differs from the one the file last saw; that poll() itself records
 * the new value (opening records the current one). So: poll before answering, and re-read when
 * it reports. A read that races a mount change may be torn (seq_file reads mount by mount), so
 * after each read we poll again and read anew until one read saw no change.
 *
 * The answer is a path comparison: the fd's path (readlink of /proc/self/fd/N) against the
 * mount points, with one guard: the fd's own mount (statx STATX_MNT_ID) must be in the table,
 * with its mount point at or above that path. That refuses fds from another mount namespace
 * and from detached or lazily unmounted trees, whose paths are not paths in ours.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "launcherd/launcherd-mountinfo.h"

#define MOUNTINFO_PATH "/proc/self/mountinfo"
#define MOUNTINFO_BUF_INITIAL ((size_t)16 * 1024)
#define MOUNTINFO_BUF_MAX ((size_t)64 * 1024 * 1024)
/* Reads of a table that keeps changing under us before we give up with -EAGAIN. */
#define MOUNTINFO_READ_TRIES 8
#define DELETED_SUFFIX " (deleted)"

struct mount_point {
	const char *path; /* unescaped, NUL-terminated, inside mount_table.buf */
	size_t len;
	unsigned long long id; /* mountinfo field 1, as statx(STATX_MNT_ID) reports it */
	const char *fstype;    /* the field after " - ", inside mount_table.buf */
};

struct mount_table {
	int fd;
	/* /proc/self/fd of the process that opened the table (readlinkat() there skips resolving
	 * "/proc/self" on every call), and that process: no other may use the table. */
	int proc_fd_dir;
	pid_t pid;
	/* Set while buf and points disagree (a read in progress, or one that failed). */
	bool stale;
	char *buf;
	size_t buf_size;
	struct mount_point *points; /* sorted by path (strcmp) */
	size_t n_points, n_alloc;
};

/* 1 when the kernel reports a change since the last poll (or the open), 0 when not. */
static int table_changed(struct mount_table *t)
{
	struct pollfd p = { .fd = t->fd, .events = POLLPRI };

	while (poll(&p, 1, 0) < 0)
		if (errno != EINTR)
			return negative_errno();
	if (p.revents & POLLNVAL)
		return -EBADF;
	return (p.revents & (POLLPRI | POLLERR)) ? 1 : 0;
}

/* The whole file from offset 0 into t->buf, NUL-terminated; the buffer only grows. */
static int table_read(struct mount_table *t, size_t *ret_len)
{
	size_t len = 0;

	for (;;) {
		ssize_t n;

		if (t->buf_size - len < 2) {
			size_t size = t->buf_size ? t->buf_size * 2 : MOUNTINFO_BUF_INITIAL;
			char *buf;

			if (size > MOUNTINFO_BUF_MAX)
				return -EFBIG;
			buf = realloc(t->buf, size);
			if (!buf)
				return -ENOMEM;
			t->buf = buf;
			t->buf_size = size;
		}
		n = pread(t->fd, t->buf + len, t->buf_size - 1 - len, (off_t)len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	t->buf[len] = '\0';
	*ret_len = len;
	return 0;
}

static bool is_octal(char c)
{
	return c >= '0' && c <= '7';
}

/* Undo the kernel's mangle_path() in place: "\ooo" is one byte (space, tab, newline, '\'). */
static int unescape(char *s, size_t *ret_len)
{
	char *w = s;

	for (const char *r = s; *r; w++) {
		if (*r != '\\') {
			*w = *r++;
			continue;
		}
		if (!is_octal(r[1]) || !is_octal(r[2]) || !is_octal(r[3]) || r[1] > '3')
			return -EBADMSG;
		*w = (char)((r[1] - '0') << 6 | (r[2] - '0') << 3 | (r[3] - '0'));
		if (*w == '\0')
			return -EBADMSG;
		r += 4;
	}
	*w = '\0';
	*ret_len = (size_t)(w - s);
	return 0;
}

/*
 * One line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ..." (proc_pid_mountinfo(5)). Fields are
 * separated by single spaces; escaped fields hold none.
 */
static int parse_line(char *line, struct mount_point *ret)
{
	unsigned long long id = 0;
	char *p = line, *end;
	int r;

	if (!(*p >= '0' && *p <= '9'))
		return -EBADMSG;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (id > (ULLONG_MAX - 9) / 10)
			return -EBADMSG;
		id = id * 10 + (unsigned long long)(*p - '0');
	}
	if (*p != ' ')
		return -EBADMSG;
	for (int field = 1; field < 5; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EBADMSG;
		p++;
	}
	end = strchr(p, ' ');
	if (!end || end == p)
		return -EBADMSG;
	*end = '\0';
	r = unescape(p, &ret->len);
	if (r < 0)
		return r;
	if (p[0] != '/')
		return -EBADMSG;
	ret->path = p;
	ret->id = id;
	/* The optional fields end at " - "; the file system type follows. */
	p = strstr(end + 1, " - ");
	if (!p)
		return -EBADMSG;
	p += 3;
	end = strchr(p, ' ');
	if (!end || end == p)
		return -EBADMSG;
	*end = '\0';
	ret->fstype = p;
	return 0;
}

static int point_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mount_point *)a)->path, ((const struct mount_point *)b)->path);
}

static int table_parse(struct mount_table *t, size_t len)
{
	char *p = t->buf, *end = t->buf + len;

	t->n_points = 0;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		int r;

		if (!nl)
			return -EBADMSG; /* the kernel ends every line */
		*nl = '\0';
		if (t->n_points == t->n_alloc) {
			size_t n = t->n_alloc ? t->n_alloc * 2 : 64;
			struct mount_point *points = reallocarray(t->points, n, sizeof(*points));

			if (!points)
				return -ENOMEM;
			t->points = points;
			t->n_alloc = n;
		}
		r = parse_line(p, &t->points[t->n_points]);
		if (r < 0)
			return r;
		t->n_points++;
		p = nl + 1;
	}
	qsort(t->points, t->n_points, sizeof(*t->points), point_cmp);
	return 0;
}

/* Read and parse until a read saw no change (see the top of the file). */
static int table_refresh(struct mount_table *t)
{
	for (int i = 0; i < MOUNTINFO_READ_TRIES; i++) {
		size_t len = 0;
		int r;

		t->stale = true;
		r = table_read(t, &len);
		if (r < 0)
			return r;
		r = table_parse(t, len);
		if (r < 0)
			return r;
		r = table_changed(t);
		if (r < 0)
			return r;
		t->stale = false;
		if (r == 0)
			return 0;
	}
	t->stale = true;
	return -EAGAIN;
}

int mount_table_open(struct mount_table **ret)
{
	struct mount_table *t;
	int r;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->pid = getpid();
	t->proc_fd_dir = -1;
	t->fd = open(MOUNTINFO_PATH, O_RDONLY | O_CLOEXEC);
	if (t->fd >= 0)
		t->proc_fd_dir = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->fd < 0 || t->proc_fd_dir < 0) {
		r = negative_errno();
		mount_table_free(t);
		return r;
	}
	r = table_refresh(t);
	if (r < 0) {
		mount_table_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

void mount_table_free(struct mount_table *t)
{
	if (!t)
		return;
	safe_close(t->fd);
	safe_close(t->proc_fd_dir);
	free(t->points);
	free(t->buf);
	free(t);
}

/* Index of the first mount point not less than key (strcmp order). */
static size_t lower_bound(const struct mount_table *t, size_t lo, const char *key)
{
	size_t hi = t->n_points;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(t->points[mid].path, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* path equals dir, or lies beneath it. */
static bool path_at_or_beneath(const char *path, size_t len, const char *dir, size_t dir_len)
{
	if (dir_len == 1)
		return true; /* "/" */
	return len >= dir_len && memcmp(path, dir, dir_len) == 0 &&
	       (path[dir_len] == '\0' || path[dir_len] == '/');
}

/* The fd's own mount, if it is in the table with its mount point at or above path. */
static const struct mount_point *own_mount(const struct mount_table *t, unsigned long long id,
					   const char *path, size_t len)
{
	for (size_t i = 0; i < t->n_points; i++)
		if (t->points[i].id == id &&
		    path_at_or_beneath(path, len, t->points[i].path, t->points[i].len))
			return &t->points[i];
	return NULL;
}

int mount_table_query(struct mount_table *t, int fd, const char **ret_fstype)
{
	const struct mount_point *own;
	char name[3 * sizeof(int) + 1];
	char path[PATH_MAX + 2]; /* room to append '/' */
	const size_t suffix_len = strlen(DELETED_SUFFIX);
	struct statx stx;
	size_t len, i;
	ssize_t n;
	int r;

	if (!t)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	/* A child would read its parent's fds, and its poll() take its parent's notification. */
	if (getpid() != t->pid)
		return -ECHILD;

	r = t->stale ? 1 : table_changed(t);
	if (r > 0)
		r = table_refresh(t);
	if (r < 0)
		return r;

	/* Cached attributes only: never a request to the file system (a stalled FUSE server). */
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) < 0)
		return negative_errno();
	if (!(stx.stx_mask & STATX_MNT_ID))
		return -EOPNOTSUPP; /* before Linux 5.8 */

	(void)snprintf(name, sizeof(name), "%d", fd);
	n = readlinkat(t->proc_fd_dir, name, path, PATH_MAX);
	if (n < 0)
		return negative_errno();
	if (n >= PATH_MAX)
		return -ENAMETOOLONG; /* possibly truncated */
	len = (size_t)n;
	path[len] = '\0';
	if (path[0] != '/')
		return -EINVAL; /* "pipe:[123]", "anon_inode:...", "socket:[...]" */
	if (len >= suffix_len && memcmp(path + len - suffix_len, DELETED_SUFFIX, suffix_len) == 0)
		return -ENOENT; /* or a name that ends so: either way not a path we can trust */

	own = own_mount(t, stx.stx_mnt_id, path, len);
	if (!own) {
		/* A rename above a mount point does not notify: read once more before refusing. */
		r = table_refresh(t);
		if (r < 0)
			return r;
		own = own_mount(t, stx.stx_mnt_id, path, len);
		if (!own)
			return -EXDEV;
	}
	if (ret_fstype)
		*ret_fstype = own->fstype;

	if (len == 1)
		return 1; /* "/" is a mount point, and every other one lies beneath it */

	/* A mount on the object itself: one on top of it, not the fd's own (the fd may be the root
	 * of its mount: a partition, a tmpfs). */
	for (i = lower_bound(t, 0, path); i < t->n_points && strcmp(t->points[i].path, path) == 0;
	     i++)
		if (t->points[i].id != own->id)
			return 1;
	/* A mount beneath it: the paths starting with path + "/" sort together, from here. */
	path[len] = '/';
	path[len + 1] = '\0';
	i = lower_bound(t, i, path);
	return i < t->n_points && strncmp(t->points[i].path, path, len + 1) == 0;
}
