/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Side-effecting OS helpers: fds, files, processes. All return >= 0 on success, -errno on failure.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/cleanup.h"

int fd_set_nonblock(int fd, bool nonblock);
int fd_set_cloexec(int fd, bool cloexec);
/* Duplicate to the lowest free fd >= min, close-on-exec. */
int fd_dup_cloexec(int fd, int min);
/* Whether fd is a mount namespace (an nsfs file, as from open("/proc/self/ns/mnt")). Asks no
 * file system and no driver: the fd's name must read "mnt:[…]" before the nsfs ioctl is used. */
bool fd_is_mount_ns(int fd);
/* openat2(2) of path relative to dirfd with flags | O_CLOEXEC and these RESOLVE_* flags: the fd,
 * or -errno. Raw system call, nothing allocated (a set-up child that shares launcherd's memory
 * may call it). */
int fd_openat2(int dirfd, const char *path, int flags, uint64_t resolve);
/* Where fd leads, every symlink resolved (its /proc/self/fd link): a new string in *ret, or
 * -errno (-EINVAL for an fd that names no place in the tree: deleted, detached, a socket). */
int fd_get_path(int fd, char **ret);
/* Close every fd above 2 but the n in keep (sorted here; negative entries ignored). */
void close_all_but(int *keep, size_t n);

/* Write all of buf, retrying on EINTR and short writes. A non-blocking fd may return -EAGAIN. */
int loop_write(int fd, const void *buf, size_t len);
/* Read up to len bytes, retrying EINTR and short reads until len or EOF. Returns bytes read. */
ssize_t loop_read(int fd, void *buf, size_t len);
/* Read exactly len bytes: 0, or -errno, or -EIO at an EOF before len. */
int loop_read_all(int fd, void *buf, size_t len);

/*
 * Read a whole file (or fd) into a NUL-terminated buffer, refusing more than max bytes with
 * -EFBIG before allocating past the limit.
 */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len);
int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len);

/*
 * Replace path atomically with data: write a temp file in the same directory with mode, fsync it,
 * rename over path, fsync the directory. On failure path is untouched and the temp file removed.
 */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* Create a directory and its parents; existing directories are fine, anything else existing in
 * their place is -ENOTDIR. */
int mkdir_p(const char *path, mode_t mode);

/* Number of open fds of this process (entries of /proc/self/fd, minus the one used to list). */
int count_open_fds(void);

/* Mark every fd >= from close-on-exec (close_range with a fallback for old kernels). */
int fds_cloexec_from(int from);

/*
 * fork(), with the child's pidfd (close-on-exec, as CLONE_PIDFD makes it) in *ret_pidfd in the
 * parent: 0 in the child, the child's pid in the parent, -errno when it cannot (clone3).
 */
pid_t fork_pidfd(int *ret_pidfd);

/* Thread-safe monotonic clock in nanoseconds / microseconds. */
unsigned long long now_nsec(void);
static inline unsigned long long now_usec(void)
{
	return now_nsec() / 1000ULL;
}
