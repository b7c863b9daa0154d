/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * common/system.c: fd flags, loop_write/loop_read over a pipe (with a reader thread for a write
 * larger than the pipe buffer), read_full_*, write_file_atomic, mkdir_p, count_open_fds,
 * fds_cloexec_from.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/system.h"
#include "common/util.h"
#include "tests/tap.h"

#define BIG_LEN (4U * 1024U * 1024U)

static bool fd_has_cloexec(int fd)
{
	int f = fcntl(fd, F_GETFD);

	return f >= 0 && (f & FD_CLOEXEC);
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

struct reader {
	int fd;
	char *buf;
	size_t len;
	ssize_t got;
};

static void *reader_thread(void *p)
{
	struct reader *r = p;

	r->got = loop_read(r->fd, r->buf, r->len);
	return NULL;
}

static void test_fd_flags(void)
{
	_cleanup_close_ int a = -1, b = -1, d = -1;
	int p[2];

	if (pipe(p) < 0) /* deliberately without O_CLOEXEC */
		bail("pipe: %m");
	a = p[0];
	b = p[1];

	is_int(0, fd_set_nonblock(a, true), "fd_set_nonblock(true) succeeds");
	ok(fcntl(a, F_GETFL) & O_NONBLOCK, "O_NONBLOCK is set");
	is_int(0, fd_set_nonblock(a, false), "fd_set_nonblock(false) succeeds");
	ok(!(fcntl(a, F_GETFL) & O_NONBLOCK), "O_NONBLOCK is cleared");
	is_int(-EBADF, fd_set_nonblock(-1, true), "fd_set_nonblock on a bad fd is -EBADF");

	is_int(0, fd_set_cloexec(b, true), "fd_set_cloexec(true) succeeds");
	ok(fd_has_cloexec(b), "FD_CLOEXEC is set");
	is_int(0, fd_set_cloexec(b, false), "fd_set_cloexec(false) succeeds");
	ok(!fd_has_cloexec(b), "FD_CLOEXEC is cleared");
	is_int(-EBADF, fd_set_cloexec(-1, true), "fd_set_cloexec on a bad fd is -EBADF");

	d = fd_dup_cloexec(b, 100);
	ok(d >= 100, "fd_dup_cloexec honours the minimum (got %d)", d);
	ok(fd_has_cloexec(d), "the duplicate is close-on-exec although the original is not");
	ok(same_file(b, d), "the duplicate refers to the same pipe");
	is_int(-EBADF, fd_dup_cloexec(-1, 3), "fd_dup_cloexec on a bad fd is -EBADF");
}

static void test_loop_io(void)
{
	_cleanup_free_ char *out = malloc(BIG_LEN), *in = calloc(1, BIG_LEN);
	struct reader r;
	pthread_t t;
	int p[2], pipe_size, w;
	char buf[100];

	if (!out || !in)
		bail("out of memory");
	for (size_t i = 0; i < BIG_LEN; i++)
		out[i] = (char)(i * 7 + i / 4096);

	if (pipe2(p, O_CLOEXEC) < 0)
		bail("pipe2: %m");
	pipe_size = fcntl(p[1], F_GETPIPE_SZ);
	if (pipe_size <= 0 || (size_t)pipe_size >= BIG_LEN)
		bail("pipe buffer (%d) is not smaller than the test write", pipe_size);
	r = (struct reader){ .fd = p[0], .buf = in, .len = BIG_LEN };
	if (pthread_create(&t, NULL, reader_thread, &r) != 0)
		bail("pthread_create failed");
	w = loop_write(p[1], out, BIG_LEN);
	(void)pthread_join(t, NULL);
	is_int(0, w, "loop_write of 4 MiB into a pipe succeeds");
	is_int(BIG_LEN, r.got, "loop_read collects all 4 MiB across many short reads");
	ok(memcmp(in, out, BIG_LEN) == 0, "the bytes arrive intact and in order");

	/* Short read at EOF, then 0. */
	is_int(0, loop_write(p[1], "hello", 5), "loop_write of 5 bytes");
	p[1] = safe_close(p[1]);
	is_int(5, loop_read(p[0], buf, sizeof(buf)), "loop_read stops at EOF with what it got");
	ok(memcmp(buf, "hello", 5) == 0, "and the bytes are right");
	is_int(0, loop_read(p[0], buf, sizeof(buf)), "loop_read at EOF returns 0");
	safe_close(p[0]);

	/* loop_read_all: all of it, or -EIO at an EOF before. */
	if (pipe2(p, O_CLOEXEC) < 0)
		bail("pipe2: %m");
	is_int(0, loop_write(p[1], "hello", 5), "loop_write of 5 bytes again");
	p[1] = safe_close(p[1]);
	is_int(0, loop_read_all(p[0], buf, 3), "loop_read_all of 3 of them");
	is_int(-EIO, loop_read_all(p[0], buf, 3), "loop_read_all of 3 more, with 2 left: -EIO");
	safe_close(p[0]);

	/* Non-blocking: an empty pipe reads -EAGAIN, a full one writes -EAGAIN. */
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		bail("pipe2: %m");
	is_int(-EAGAIN, loop_read(p[0], buf, sizeof(buf)),
	       "loop_read on an empty non-blocking pipe is -EAGAIN");
	is_int(-EAGAIN, loop_write(p[1], out, BIG_LEN),
	       "loop_write into a full non-blocking pipe is -EAGAIN");
	p[0] = safe_close(p[0]);
	is_int(-EPIPE, loop_write(p[1], "x", 1), "loop_write with no reader is -EPIPE");
	safe_close(p[1]);
}

static void test_read_full(const char *dir)
{
	_cleanup_free_ char *path = strdup_printf("%s/data", dir),
			    *empty = strdup_printf("%s/empty", dir);
	_cleanup_free_ char *data = malloc(10000);
	char *got = NULL;
	size_t len = 0;
	int r, p[2];

	if (!path || !empty || !data)
		bail("out of memory");
	for (size_t i = 0; i < 10000; i++)
		data[i] = (char)('a' + i % 26);
	if (write_file_atomic(path, data, 10000, 0644) < 0 ||
	    write_file_atomic(empty, "", 0, 0644) < 0)
		bail("cannot write fixtures in %s", dir);

	r = read_full_file(path, 10000, &got, &len);
	is_int(0, r, "read_full_file with max equal to the size succeeds");
	ok(r == 0 && len == 10000 && memcmp(got, data, 10000) == 0 && got[10000] == '\0',
	   "content, length and NUL terminator are right");
	free(got);
	got = NULL;
	is_int(-EFBIG, read_full_file(path, 9999, &got, &len), "one byte over max is -EFBIG");
	ok(!got, "nothing is returned on -EFBIG");
	r = read_full_file(path, SIZE_MAX, &got, &len);
	is_int(0, r, "max SIZE_MAX means no limit");
	ok(r == 0 && len == 10000, "and reads the whole file");
	free(got);
	got = NULL;

	r = read_full_file(empty, 0, &got, &len);
	is_int(0, r, "an empty file fits max 0");
	ok(r == 0 && len == 0 && got && got[0] == '\0', "and gives an empty string");
	free(got);
	got = NULL;
	is_int(-ENOENT, read_full_file("/nonexistent/cordon-test", 10, &got, &len),
	       "a missing file is -ENOENT");

	/* A pipe has no size to trust: the limit must hold while streaming. */
	if (pipe2(p, O_CLOEXEC) < 0)
		bail("pipe2: %m");
	(void)loop_write(p[1], data, 5000);
	p[1] = safe_close(p[1]);
	is_int(-EFBIG, read_full_fd(p[0], 4999, &got, &len), "read_full_fd on a pipe enforces max");
	safe_close(p[0]);
}

static void test_write_file_atomic(const char *dir)
{
	_cleanup_free_ char *path = strdup_printf("%s/atomic", dir);
	_cleanup_free_ char *sub = strdup_printf("%s/sub", dir);
	_cleanup_free_ char *missing = strdup_printf("%s/no-such-dir/file", dir);
	_cleanup_free_ char *got = NULL;
	struct stat st;
	mode_t old_umask;
	int before;

	if (!path || !sub || !missing)
		bail("out of memory");
	if (mkdir(sub, 0755) < 0)
		bail("mkdir %s: %m", sub);
	before = tap_dir_entries(dir);

	old_umask = umask(077);
	is_int(0, write_file_atomic(path, "old content, longer", 19, 0600),
	       "write_file_atomic creates");
	is_int(0, write_file_atomic(path, "new", 3, 0644), "write_file_atomic replaces");
	umask(old_umask);
	ok(read_full_file(path, 100, &got, NULL) == 0 && streq(got, "new"),
	   "the old content is fully replaced, not overwritten in place");
	if (stat(path, &st) < 0)
		bail("stat %s: %m", path);
	is_int(0644, st.st_mode & 07777, "the mode is applied exactly, umask notwithstanding");
	is_int(before + 1, tap_dir_entries(dir), "no temporary file is left behind");

	ok(write_file_atomic(missing, "x", 1, 0644) == -ENOENT,
	   "a path in a missing directory fails with -ENOENT");
	is_int(before + 1, tap_dir_entries(dir), "and leaves nothing behind");
	ok(write_file_atomic(sub, "x", 1, 0644) < 0, "replacing a directory fails");
	ok(stat(sub, &st) == 0 && S_ISDIR(st.st_mode), "the directory is untouched");
	is_int(before + 1, tap_dir_entries(dir), "and the temporary file is removed");
}

static void test_mkdir_p(const char *dir)
{
	_cleanup_free_ char *deep = strdup_printf("%s/m/a/b/c", dir);
	_cleanup_free_ char *slash = strdup_printf("%s/m/x/y/", dir);
	_cleanup_free_ char *file = strdup_printf("%s/m/file", dir);
	_cleanup_free_ char *below = strdup_printf("%s/m/file/sub", dir);
	_cleanup_close_ int fd = -1;
	struct stat st;
	mode_t old_umask;

	if (!deep || !slash || !file || !below)
		bail("out of memory");
	old_umask = umask(0);
	is_int(0, mkdir_p(deep, 0710), "mkdir_p creates a directory and its parents");
	umask(old_umask);
	ok(stat(deep, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0710,
	   "the leaf is a directory with the mode asked for");
	is_int(0, mkdir_p(deep, 0755), "mkdir_p on an existing tree is fine");
	is_int(0, mkdir_p(slash, 0755), "a trailing slash is fine");
	ok(stat(slash, &st) == 0 && S_ISDIR(st.st_mode), "and creates the directory");
	fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		bail("open %s: %m", file);
	is_int(-ENOTDIR, mkdir_p(file, 0755),
	       "a regular file where the leaf should be is -ENOTDIR");
	is_int(-ENOTDIR, mkdir_p(below, 0755), "a regular file in the middle is -ENOTDIR");
	is_int(-EINVAL, mkdir_p("", 0755), "the empty path is -EINVAL");
}

static void test_fd_counting(void)
{
	struct rlimit rl;
	int n0, manual = 0, p[2], q[2];

	n0 = count_open_fds();
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		bail("getrlimit: %m");
	for (int fd = 0; fd < (int)(rl.rlim_cur < 65536 ? rl.rlim_cur : 65536); fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			manual++;
	is_int(manual, n0, "count_open_fds matches a probe of every fd number");
	if (pipe(p) < 0)
		bail("pipe: %m");
	is_int(n0 + 2, count_open_fds(), "a pipe adds two");

	if (pipe(q) < 0) /* q[] > p[], all four without FD_CLOEXEC */
		bail("pipe: %m");
	is_int(0, fds_cloexec_from(q[0]), "fds_cloexec_from succeeds");
	ok(fd_has_cloexec(q[0]) && fd_has_cloexec(q[1]), "fds from the bound up are close-on-exec");
	ok(!fd_has_cloexec(p[0]) && !fd_has_cloexec(p[1]), "fds below the bound are untouched");
	safe_close(p[0]);
	safe_close(p[1]);
	safe_close(q[0]);
	safe_close(q[1]);
	is_int(n0, count_open_fds(), "closing them brings the count back");
}

int main(void)
{
	char dir[] = "/tmp/cordon-test-system.XXXXXX";

	plan(61);
	(void)signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir))
		bail("mkdtemp: %m");

	test_fd_flags();
	test_loop_io();
	test_read_full(dir);
	test_write_file_atomic(dir);
	test_mkdir_p(dir);
	test_fd_counting();

	if (tap_rm_rf(dir) < 0)
		diag("could not remove %s", dir);
	return tap_exit_status();
}
