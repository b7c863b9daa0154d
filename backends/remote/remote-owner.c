/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/remote/remote-owner.h"
#include "common/cleanup.h"
#include "common/system.h"
#include "common/util.h"

int remote_random_hex(char *out, size_t bytes)
{
	uint8_t b[32];

	if (bytes > sizeof(b) || getrandom(b, bytes, 0) != (ssize_t)bytes)
		return -EIO;
	for (size_t i = 0; i < bytes; i++)
		(void)sprintf(out + 2 * i, "%02x", b[i]);
	return 0;
}

bool remote_hex_ok(const char *s, size_t n)
{
	if (!s || strlen(s) != n)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

int remote_host_id(char *ret)
{
	_cleanup_close_ int fd = open("host-id", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char buf[REMOTE_ID_HEX + 1] = "";

	if (fd >= 0 && read(fd, buf, REMOTE_ID_HEX) == REMOTE_ID_HEX &&
	    remote_hex_ok(buf, REMOTE_ID_HEX)) {
		memcpy(ret, buf, sizeof(buf));
		return 0;
	}
	fd = safe_close(fd);
	if (remote_random_hex(ret, REMOTE_ID_HEX / 2) < 0)
		return -EIO;
	fd = open("host-id.new", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || loop_write(fd, ret, REMOTE_ID_HEX) < 0 ||
	    rename("host-id.new", "host-id") < 0)
		return -errno;
	return 0;
}

int remote_owner_take(char *owner, int *lock_fd)
{
	_cleanup_free_ char *path = NULL;

	if (*lock_fd >= 0)
		return 0;
	if (mkdir("owners", 0700) < 0 && errno != EEXIST)
		return -errno;
	if (remote_random_hex(owner, REMOTE_ID_HEX / 2) < 0)
		return -EIO;
	path = strdup_printf("owners/%s", owner);
	if (!path)
		return -ENOMEM;
	*lock_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (*lock_fd < 0 || flock(*lock_fd, LOCK_EX | LOCK_NB) < 0)
		return -errno;
	return 0;
}

bool remote_owner_live(const char *own)
{
	_cleanup_free_ char *lock = strdup_printf("owners/%s", own);
	_cleanup_close_ int fd = lock ? open(lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC) : -1;

	return fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0;
}

void remote_owners_prune(const char *own)
{
	DIR *d = opendir("owners");
	struct dirent *de;

	while (d && (de = readdir(d))) {
		_cleanup_close_ int fd = -1;

		if (!remote_hex_ok(de->d_name, REMOTE_ID_HEX) || streq(de->d_name, own))
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
			(void)unlinkat(dirfd(d), de->d_name, 0);
	}
	if (d)
		closedir(d);
}
