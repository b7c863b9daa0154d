/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Cleanup attributes (systemd style). Each destructor accepts NULL / -1, so a variable may be
 * declared with its attribute before it is assigned. Ownership leaves a scope only through
 * TAKE_PTR() / TAKE_FD().
 */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _noreturn_ __attribute__((noreturn))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)
#define _warn_unused_result_ __attribute__((warn_unused_result))

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/* Hand ownership of a pointer out of a cleanup scope. */
#define TAKE_PTR(p)                       \
	({                                \
		__typeof__(p) _tp_ = (p); \
		(p) = NULL;               \
		_tp_;                     \
	})

/* Hand ownership of an fd out of a cleanup scope. */
#define TAKE_FD(fd)              \
	({                       \
		int _tf_ = (fd); \
		(fd) = -1;       \
		_tf_;            \
	})

/* Close an fd, keeping errno; never retried on EINTR (Linux always releases the fd). */
static inline int safe_close(int fd)
{
	if (fd >= 0) {
		int saved = errno;
		(void)close(fd);
		errno = saved;
	}
	return -1;
}

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	safe_close(*fd);
}

/* Wipe then free a NUL-terminated secret. */
static inline void erase_and_freep(char **p)
{
	if (*p) {
		explicit_bzero(*p, strlen(*p));
		free(*p);
	}
}

/* Kill (SIGKILL) and reap a child; for children that must not outlive a failing scope. */
static inline void kill_and_reapp(pid_t *pid)
{
	if (*pid > 0) {
		int saved = errno;
		(void)kill(*pid, SIGKILL);
		while (waitpid(*pid, NULL, __WALL) < 0 && errno == EINTR)
			;
		errno = saved;
		*pid = 0;
	}
}

/* Close an array of fds of known length (the array itself is not freed). */
void close_many(int *fds, size_t n);

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_erase_ _cleanup_(erase_and_freep)
#define _cleanup_pid_ _cleanup_(kill_and_reapp)

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
	static inline void func##p(type *p)     \
	{                                       \
		if (*p)                         \
			func(*p);               \
	}

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Return -errno from a libc call that sets errno, never 0 by accident. */
static inline int negative_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}
