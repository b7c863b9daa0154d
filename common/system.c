/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/nsfs.h>
#include <linux/sched.h>
#include <linux/openat2.h>

#include "common/system.h"
#include "common/util.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

void close_many(int *fds, size_t n)
{
	if (!fds)
		return;
	for (size_t i = 0; i < n; i++)
		fds[i] = safe_close(fds[i]);
}

int fd_set_nonblock(int fd, bool nonblock)
{
	int flags = fcntl(fd, F_GETFL);
	int nflags;

	if (flags < 0)
		return -errno;
	nflags = nonblock ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
	if (nflags != flags && fcntl(fd, F_SETFL, nflags) < 0)
		return -errno;
	return 0;
}

int fd_set_cloexec(int fd, bool cloexec)
{
	int flags = fcntl(fd, F_GETFD);
	int nflags;

	if (flags < 0)
		return -errno;
	nflags = cloexec ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC;
	if (nflags != flags && fcntl(fd, F_SETFD, nflags) < 0)
		return -errno;
	return 0;
}

int fd_dup_cloexec(int fd, int min)
{
	int r = fcntl(fd, F_DUPFD_CLOEXEC, min);

	return r < 0 ? -errno : r;
}

int fd_get_path(int fd, char **ret)
{
	char proc[64], buf[PATH_MAX];
	ssize_t n;

	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if (buf[0] != '/')
		return -EINVAL;
	*ret = strdup(buf);
	return *ret ? 0 : -ENOMEM;
}

int fd_openat2(int dirfd, const char *path, int flags, uint64_t resolve)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = resolve,
	};
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

bool fd_is_mount_ns(int fd)
{
	char proc[64], name[32];
	ssize_t n;

	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, name, sizeof(name) - 1);
	if (n < 5 || memcmp(name, "mnt:[", 5) != 0)
		return false;
	return ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNS;
}

int loop_write(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t loop_read(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return got > 0 ? (ssize_t)got : -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int loop_read_all(int fd, void *buf, size_t len)
{
	ssize_t n = loop_read(fd, buf, len);

	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EIO;
}

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *nb;

			if (max < SIZE_MAX && ncap > max + 1)
				ncap = max + 1;
			if (ncap <= len)
				return -EFBIG;
			nb = realloc(buf, ncap + 1);
			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max)
			return -EFBIG;
	}
	if (!buf) {
		buf = malloc(1);
		if (!buf)
			return -ENOMEM;
	}
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}

int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	return read_full_fd(fd, max, ret, ret_len);
}

static int fsync_parent_dir(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	_cleanup_close_ int fd = -1;
	char *slash;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash)
		fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else {
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	return fsync(fd) < 0 ? -errno : 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	_cleanup_free_ char *tmp = NULL;
	_cleanup_close_ int fd = -1;
	int r;

	tmp = strdup_printf("%s.tmp.XXXXXX", path);
	if (!tmp)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) < 0) {
		r = -errno;
		goto fail;
	}
	r = loop_write(fd, data, len);
	if (r < 0)
		goto fail;
	if (fsync(fd) < 0) {
		r = -errno;
		goto fail;
	}
	if (rename(tmp, path) < 0) {
		r = -errno;
		goto fail;
	}
	return fsync_parent_dir(path);
fail:
	(void)unlink(tmp);
	return r;
}

int mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = NULL;

	if (isempty(path))
		return -EINVAL;
	p = strdup(path);
	if (!p)
		return -ENOMEM;
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;

			*s = '\0';
			if (mkdir(p, mode) < 0) {
				struct stat st;

				if (errno != EEXIST)
					return -errno;
				/* What exists must be a directory (or a symlink to one). */
				if (stat(p, &st) < 0)
					return -errno;
				if (!S_ISDIR(st.st_mode))
					return -ENOTDIR;
			}
			*s = c;
			if (c == '\0')
				break;
		}
	}
	return 0;
}

int count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	(void)closedir(d);
	return n - 1; /* the directory stream's own fd */
}

int fds_cloexec_from(int from)
{
	if (syscall(SYS_close_range, (unsigned)from, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return 0;
	/* Fallback: walk /proc/self/fd. */
	{
		DIR *d = opendir("/proc/self/fd");
		struct dirent *de;

		if (!d)
			return -errno;
		while ((de = readdir(d))) {
			int fd;

			if (safe_atoi(de->d_name, &fd) < 0 || fd < from || fd == dirfd(d))
				continue;
			(void)fd_set_cloexec(fd, true);
		}
		(void)closedir(d);
	}
	return 0;
}

unsigned long long now_nsec(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

void close_all_but(int *keep, size_t n)
{
	unsigned from = 3;

	qsort(keep, n, sizeof(int), cmp_int);
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < (int)from)
			continue;
		if ((unsigned)keep[i] > from)
			(void)syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0U);
		from = (unsigned)keep[i] + 1;
	}
	(void)syscall(SYS_close_range, from, ~0U, 0U);
}

pid_t fork_pidfd(int *ret_pidfd)
{
	struct clone_args ca = {
		.flags = CLONE_PIDFD,
		.pidfd = (uint64_t)(uintptr_t)ret_pidfd,
		.exit_signal = SIGCHLD,
	};
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));

	return pid < 0 ? -errno : (pid_t)pid;
}
