/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * launcherd/launcherd-mountinfo.c, as root in a private mount namespace: a mount on or beneath
 * a directory is seen (and its removal) through the kernel's change notification alone, with
 * no new table; names with escaped characters; a sibling whose name extends the directory's is
 * not beneath it; a table larger than the first buffer; deleted, pathless, detached and lazily
 * unmounted objects are refused, and so is a forked child; no allocation and no read while the
 * table is unchanged.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcherd/launcherd-mountinfo.h"
#include "tests/tap.h"

#define N_MANY 300
/* Names the kernel escapes in mountinfo: space, tab, newline, backslash. */
#define ODD_NAME "t\tn\nb\\s \\040"

/*
 * Linked with -Wl,--wrap= for malloc, calloc, realloc, reallocarray and pread (tests/local.mk):
 * counts allocations, and the reads of the mount table (the test itself calls no pread()).
 */
void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__real_reallocarray(void *p, size_t n, size_t size);
void *__wrap_reallocarray(void *p, size_t n, size_t size);
ssize_t __real_pread(int fd, void *buf, size_t len, off_t off);
ssize_t __wrap_pread(int fd, void *buf, size_t len, off_t off);
static unsigned allocations, preads;

void *__wrap_malloc(size_t size)
{
	allocations++;
	return __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	allocations++;
	return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	allocations++;
	return __real_realloc(p, size);
}

void *__wrap_reallocarray(void *p, size_t n, size_t size)
{
	allocations++;
	return __real_reallocarray(p, n, size);
}

ssize_t __wrap_pread(int fd, void *buf, size_t len, off_t off)
{
	preads++;
	return __real_pread(fd, buf, len, off);
}

static int open_path(const char *dir, const char *name)
{
	_cleanup_free_ char *p = tap_path_in(dir, name);
	int fd = open(p, O_PATH | O_CLOEXEC);

	if (fd < 0)
		bail("open %s: %m", p);
	return fd;
}

static void make_dir(const char *dir, const char *name)
{
	_cleanup_free_ char *p = tap_path_in(dir, name);

	if (mkdir(p, 0755) < 0)
		bail("mkdir %s: %m", p);
}

static void mount_tmpfs(const char *dir, const char *name)
{
	_cleanup_free_ char *p = tap_path_in(dir, name);

	if (mount("test-mountinfo", p, "tmpfs", 0, "size=64k") < 0)
		bail("mount tmpfs on %s: %m", p);
}

static void umount_at(const char *dir, const char *name)
{
	_cleanup_free_ char *p = tap_path_in(dir, name);

	if (umount2(p, 0) < 0)
		bail("umount %s: %m", p);
}

/* The fd this process holds on /proc/<pid>/mountinfo, or -1. */
static int find_mountinfo_fd(void)
{
	_cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	if (!d)
		bail("opendir /proc/self/fd: %m");
	while ((de = readdir(d))) {
		char target[PATH_MAX];
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (n > 10 && strcmp(target + n - 10, "/mountinfo") == 0)
			return atoi(de->d_name);
	}
	return -1;
}

/* mount_table_query() in a forked child, its result passed back as the exit status. */
static int in_child(struct mount_table *t, int fd)
{
	int status;
	pid_t pid;

	(void)fflush(stdout);
	pid = fork();
	if (pid < 0)
		bail("fork: %m");
	if (pid == 0)
		_exit(-mount_table_query(t, fd, NULL) & 0xff);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		bail("the child did not exit");
	return -WEXITSTATUS(status);
}

static void test_detached(struct mount_table *t, const char *d)
{
	_cleanup_close_ int tree = -1, sub = -1, lazy = -1;
	_cleanup_free_ char *b = tap_path_in(d, "b");
	long fd;

	/* A detached copy of d: readlink says "/" and "/a", which are no paths of ours. */
	fd = syscall(SYS_open_tree, AT_FDCWD, d, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (fd < 0) {
		skip(2, "open_tree: %m");
	} else {
		tree = (int)fd;
		sub = openat(tree, "a", O_PATH | O_CLOEXEC);
		if (sub < 0)
			bail("openat a in a detached tree: %m");
		is_int(-EXDEV, mount_table_query(t, tree, NULL),
		       "the root of a detached tree is refused (-EXDEV)");
		is_int(-EXDEV, mount_table_query(t, sub, NULL),
		       "a directory in a detached tree is refused (-EXDEV)");
	}

	/* A lazily unmounted tmpfs that an fd still holds. */
	mount_tmpfs(d, "b");
	make_dir(b, "inner");
	lazy = open_path(b, "inner");
	is_int(0, mount_table_query(t, lazy, NULL), "a directory in a mounted tmpfs: 0");
	if (umount2(b, MNT_DETACH) < 0)
		bail("umount2 %s MNT_DETACH: %m", b);
	is_int(-EXDEV, mount_table_query(t, lazy, NULL),
	       "a directory in a lazily unmounted tmpfs is refused (-EXDEV)");
}

static void test_many(struct mount_table *t, const char *d)
{
	_cleanup_free_ char *many = tap_path_in(d, "many");
	_cleanup_close_ int fd_many = -1, fd_last = -1;
	char name[32];
	int got_first = -2, got_last = -2;

	make_dir(d, "many");
	fd_many = open_path(d, "many");
	for (int i = 0; i < N_MANY; i++) {
		(void)snprintf(name, sizeof(name), "m%03d", i);
		make_dir(many, name);
	}
	fd_last = open_path(many, name);
	for (int i = 0; i < N_MANY; i++) {
		(void)snprintf(name, sizeof(name), "m%03d", i);
		mount_tmpfs(many, name);
		if (i == 0)
			got_first = mount_table_query(t, fd_many, NULL);
	}
	is_int(1, got_first, "one mount below many/: 1");
	is_int(1, mount_table_query(t, fd_many, NULL),
	       "all %d mounts (a table larger than the first buffer): 1", N_MANY);
	is_int(1, mount_table_query(t, fd_last, NULL), "the last of them is seen: 1");
	for (int i = 0; i < N_MANY; i++) {
		(void)snprintf(name, sizeof(name), "m%03d", i);
		umount_at(many, name);
		if (i == N_MANY - 2)
			got_last = mount_table_query(t, fd_many, NULL);
	}
	is_int(1, got_last, "with one of them left: 1");
	is_int(0, mount_table_query(t, fd_many, NULL), "all unmounted: 0");
}

int main(void)
{
	_cleanup_mount_table_ struct mount_table *t = NULL;
	_cleanup_close_ int fd_base = -1, fd_d = -1, fd_a = -1, fd_b = -1, fd_bx = -1, fd_sp = -1,
			    fd_odd = -1, fd_gone = -1, fd_root = -1;
	_cleanup_free_ char *d = NULL, *gone = NULL;
	char base[] = "/tmp/test-mountinfo-XXXXXX";
	int p[2], mi, r;
	unsigned before, reads;

	if (geteuid() != 0)
		skip_all("needs root (mounts in a private mount namespace)");
	if (unshare(CLONE_NEWNS) < 0)
		skip_all("unshare(CLONE_NEWNS): %m");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		skip_all("making / private: %m");
	plan(41);

	/* Opened in the new namespace (a table describes the namespace it was opened in). */
	r = mount_table_open(&t);
	if (!is_int(0, r, "mount_table_open"))
		bail("mount_table_open: %s", strerror(-r));
	mi = find_mountinfo_fd();
	ok(mi >= 0 && (fcntl(mi, F_GETFD) & FD_CLOEXEC), "the mountinfo fd is close-on-exec");

	if (!mkdtemp(base))
		bail("mkdtemp: %m");
	fd_base = open_path(base, ".");
	is_int(0, mount_table_query(t, fd_base, NULL), "a new directory: 0");
	/* Nothing but mount_table_query() is called from here on: changes come from POLLPRI. */
	if (mount("test-mountinfo", base, "tmpfs", 0, "size=64k") < 0)
		bail("mount tmpfs on %s: %m", base);
	is_int(1, mount_table_query(t, fd_base, NULL),
	       "a mount on it, made after the fd was opened: 1");

	d = tap_path_in(base, "d");
	make_dir(base, "d");
	make_dir(d, "a");
	make_dir(d, "b");
	make_dir(d, "b-x");
	make_dir(d, "b0");
	make_dir(d, "with space");
	make_dir(d, ODD_NAME);
	make_dir(d, "gone");
	fd_d = open_path(d, ".");
	fd_a = open_path(d, "a");
	fd_b = open_path(d, "b");
	fd_bx = open_path(d, "b-x");
	fd_sp = open_path(d, "with space");
	fd_odd = open_path(d, ODD_NAME);
	fd_gone = open_path(d, "gone");
	is_int(0, mount_table_query(t, fd_d, NULL), "D in a tmpfs with nothing below: 0");
	is_int(0, mount_table_query(t, fd_a, NULL), "D/a: 0");

	mount_tmpfs(d, "a");
	reads = preads;
	is_int(1, mount_table_query(t, fd_d, NULL), "tmpfs on D/a: D is 1");
	ok(preads > reads, "the table was read anew once the kernel reported the change");
	is_int(1, mount_table_query(t, fd_a, NULL), "tmpfs on D/a: D/a (a mount on it) is 1");
	is_int(0, mount_table_query(t, fd_b, NULL), "tmpfs on D/a: D/b is 0");

	/* Unchanged table: no allocation, and no re-read needed for the same answers. */
	before = allocations;
	reads = preads;
	r = 0;
	for (int i = 0; i < 1000; i++)
		r += mount_table_query(t, fd_d, NULL) + mount_table_query(t, fd_b, NULL);
	is_int(1000, r, "2000 answers on an unchanged table are the same");
	is_int(0, allocations - before, "and make no allocation");
	is_int(0, preads - reads, "and read nothing");

	umount_at(d, "a");
	is_int(0, mount_table_query(t, fd_d, NULL), "D/a unmounted: D is 0");
	is_int(0, mount_table_query(t, fd_a, NULL), "D/a unmounted: D/a is 0");

	/* "b-x" sorts between "b" and "b/...", "b0" after them: no false hit, no missed one. */
	mount_tmpfs(d, "b-x");
	mount_tmpfs(d, "b0");
	is_int(0, mount_table_query(t, fd_b, NULL), "tmpfs on D/b-x and D/b0: D/b is 0");
	is_int(1, mount_table_query(t, fd_bx, NULL), "tmpfs on D/b-x: D/b-x is 1");
	{
		_cleanup_free_ char *b = tap_path_in(d, "b");

		make_dir(b, "c");
		mount_tmpfs(b, "c");
		is_int(1, mount_table_query(t, fd_b, NULL),
		       "tmpfs on D/b/c as well: D/b is 1 (past D/b-x)");
		umount_at(b, "c");
	}
	umount_at(d, "b-x");
	umount_at(d, "b0");
	is_int(0, mount_table_query(t, fd_b, NULL), "both unmounted: D/b is 0");

	/* Names the kernel escapes in mountinfo. A child is refused before it polls, so the change
	 * notification is still there for us. */
	mount_tmpfs(d, "with space");
	is_int(-ECHILD, in_child(t, fd_sp), "in a forked child: -ECHILD");
	is_int(1, mount_table_query(t, fd_sp, NULL), "tmpfs on \"D/with space\": it is 1");
	is_int(1, mount_table_query(t, fd_d, NULL), "and D is 1");
	umount_at(d, "with space");
	is_int(0, mount_table_query(t, fd_sp, NULL), "unmounted: \"D/with space\" is 0");
	mount_tmpfs(d, ODD_NAME);
	is_int(1, mount_table_query(t, fd_odd, NULL),
	       "tmpfs on a name with a tab, a newline, backslashes and \"\\040\": it is 1");
	is_int(0, mount_table_query(t, fd_sp, NULL), "\"D/with space\" is still 0");
	umount_at(d, ODD_NAME);
	is_int(0, mount_table_query(t, fd_d, NULL), "unmounted: D is 0");

	test_many(t, d);

	/* Objects with no usable path. */
	gone = tap_path_in(d, "gone");
	if (rmdir(gone) < 0)
		bail("rmdir %s: %m", gone);
	is_int(-ENOENT, mount_table_query(t, fd_gone, NULL), "a deleted directory: -ENOENT");
	is_int(-EBADF, mount_table_query(t, -1, NULL), "fd -1: -EBADF");
	if (pipe2(p, O_CLOEXEC) < 0)
		bail("pipe2: %m");
	is_int(-EINVAL, mount_table_query(t, p[0], NULL), "a pipe: -EINVAL");
	safe_close(p[0]);
	safe_close(p[1]);
	test_detached(t, d);

	fd_root = open("/", O_PATH | O_CLOEXEC);
	if (fd_root < 0)
		bail("open /: %m");
	is_int(1, mount_table_query(t, fd_root, NULL), "\"/\": 1");
	is_int(1, mount_table_query(t, fd_base, NULL), "the base tmpfs: still 1");

	if (umount2(base, MNT_DETACH) < 0)
		bail("umount %s: %m", base);
	is_int(0, mount_table_query(t, fd_base, NULL), "the base tmpfs unmounted: 0");
	if (rmdir(base) < 0)
		diag("rmdir %s: %m", base);
	return tap_exit_status();
}
