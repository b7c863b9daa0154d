/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * "Does any mount lie at or beneath the object this fd refers to?", answered from a cached copy
 * of /proc/self/mountinfo: when none does, a bind source can be cloned without AT_RECURSIVE
 * and nothing is lost.
 *
 * The table keeps /proc/self/mountinfo open and re-reads it only when the kernel reports that
 * the mount table changed (POLLPRI on that fd), so an answer costs a getpid(), a poll(), a
 * statx() and a readlinkat() in /proc/self/fd, with no allocation (about 3 us).
 *
 * Limits, all of which the caller must accept (on any error: clone recursively):
 *  - The table describes the mount namespace this process was in when mount_table_open() ran,
 *    seen from its root directory at that time: open it after any unshare(), setns() or chroot().
 *  - The change notification belongs to the open file description, which a child shares: the
 *    table serves only the process that opened it (another gets -ECHILD), one thread at a time.
 *  - Mount points are compared as paths. A rename of a directory above a mount point does not
 *    notify, so until the next mount change its cached path is the old one and a mount below
 *    the renamed directory is missed. An overmounted path may give a needless 1.
 *  - A mount made after the answer is, of course, not in it.
 */
#pragma once

#include "common/cleanup.h"

struct mount_table;

/* Open /proc/self/mountinfo and read it. -errno on failure. */
int mount_table_open(struct mount_table **ret);
/* Accepts NULL. */
void mount_table_free(struct mount_table *t);

/*
 * 1 when some mount other than the fd's own has its mount point at the fd's path or beneath it
 * ("/" always), so that a clone of the fd's mount alone would lack it,
 * 0 when none is, -errno when that cannot be said: -EBADF (not an open fd), -ENOENT (its
 * object was deleted), -EINVAL (no absolute path: a pipe, a socket, ...), -ENAMETOOLONG, -EXDEV
 * (the fd's mount is not in the table: another mount namespace, or detached), -ECHILD (called
 * in a process other than the one that opened the table), or an error of re-reading the
 * table. Re-reads the table first when the kernel reports that it changed. With ret_fstype
 * (when the answer is not an error): the type of the fd's own mount's file system, valid
 * until the next call.
 */
int mount_table_query(struct mount_table *t, int fd, const char **ret_fstype);

DEFINE_TRIVIAL_CLEANUP_FUNC(struct mount_table *, mount_table_free);
#define _cleanup_mount_table_ _cleanup_(mount_table_freep)
