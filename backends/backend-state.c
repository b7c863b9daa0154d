/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/backend-descriptor.h"
#include "backends/backend-state.h"

static int check_owner_only(const struct stat *st, const char *path, const char *what,
			    struct field_error *err)
{
	if (st->st_uid != geteuid())
		return field_error_set(err, -EPERM, "", NULL,
				       "%s \"%s\" is owned by uid %u, not us", what, path,
				       (unsigned)st->st_uid);
	if (st->st_mode & 077)
		return field_error_set(err, -EPERM, "", NULL,
				       "%s \"%s\" is accessible by group or others (mode %04o)",
				       what, path, (unsigned)(st->st_mode & 07777));
	return 0;
}

int backend_state_dir_check(const char *dir, bool create, struct field_error *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	if (isempty(dir))
		return field_error_set(err, -EINVAL, "", NULL, "no state directory");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		r = mkdir_p(dir, 0700);
		if (r < 0)
			return field_error_set(err, r, "", NULL, "cannot create \"%s\": %s", dir,
					       strerror(-r));
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0) {
		r = -errno;
		return field_error_set(err, r, "", NULL, "cannot open \"%s\": %s", dir,
				       strerror(-r));
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		return field_error_set(err, r, "", NULL, "cannot stat \"%s\": %s", dir,
				       strerror(-r));
	}
	return check_owner_only(&st, dir, "state directory", err);
}

int backend_state_remove_stale(const char *dir)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int n = 0;

	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		const char *tmp = strstr(de->d_name, ".tmp.");

		/* Exactly the mkostemp() suffix, and nothing but a regular file. */
		if (!tmp || tmp == de->d_name || strlen(tmp) != strlen(".tmp.XXXXXX") ||
		    de->d_type != DT_REG)
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			n++;
	}
	return n;
}

int backend_state_file_open(const char *dir, const char *name, const char *what, int *ret_fd,
			    struct field_error *err)
{
	_cleanup_free_ char *path = strdup_printf("%s/%s", dir, name);
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	if (!path)
		return -ENOMEM;
	/* O_NONBLOCK: a FIFO planted in place of the file must not hang us. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		if (r == -ENOENT)
			return r;
		if (r == -ELOOP)
			return field_error_set(err, -EPERM, "", NULL, "\"%s\" is a symlink", path);
		return field_error_set(err, r, "", NULL, "cannot open \"%s\": %s", path,
				       strerror(-r));
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		return field_error_set(err, r, "", NULL, "cannot stat \"%s\": %s", path,
				       strerror(-r));
	}
	if (!S_ISREG(st.st_mode))
		return field_error_set(err, -EPERM, "", NULL, "\"%s\" is not a regular file", path);
	r = check_owner_only(&st, path, what, err);
	if (r < 0)
		return r;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int backend_state_file_read(const char *dir, const char *name, size_t max, char **ret,
			    size_t *ret_len, struct field_error *err)
{
	_cleanup_close_ int fd = -1;
	int r;

	r = backend_state_file_open(dir, name, "file", &fd, err);
	if (r < 0)
		return r;
	r = read_full_fd(fd, max, ret, ret_len);
	if (r < 0)
		return field_error_set(err, r, "", NULL, "cannot read \"%s/%s\": %s", dir, name,
				       r == -EFBIG ? "file too large" : strerror(-r));
	return 0;
}

int backend_state_parse_doc(const char *buf, size_t len, const char *const *keys, uint64_t version,
			    json_t **ret, struct field_error *err)
{
	_cleanup_json_ json_t *doc = NULL;
	uint64_t v;
	int r;

	r = ipc_json_parse_object(buf, len, &doc, err);
	if (r < 0)
		return r;
	r = ipc_json_check_keys(doc, keys, "", err);
	if (r < 0)
		return r;
	r = ipc_json_get_uint64(doc, "version", true, version, version, "", &v, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(doc);
	return 0;
}

int backend_state_check_ref_key(const char *key, const char *path, struct field_error *err)
{
	char text[BACKEND_REF_TEXT_MAX];
	struct backend_ref ref;

	if (backend_ref_parse(key, &ref) < 0 || backend_ref_format(&ref, text, sizeof(text)) < 0 ||
	    !streq(text, key))
		return field_error_set(err, -EINVAL, path, NULL, "not a backend reference");
	return 0;
}

int backend_state_load(const char *dir, const char *name, backend_state_parse_fn parse,
		       json_t **ret, char **ret_aside, struct field_error *err)
{
	_cleanup_free_ char *buf = NULL, *aside = NULL;
	json_t *doc = NULL;
	size_t len = 0;
	int r, q;

	r = backend_state_dir_check(dir, true, err);
	if (r < 0)
		return r;
	r = backend_state_file_read(dir, name, BACKEND_STATE_FILE_MAX, &buf, &len, err);
	if (r >= 0 && parse(buf, len, &doc, err) >= 0) {
		*ret = doc;
		return 0;
	}
	if (r < 0 && r != -ENOENT && r != -EFBIG)
		return r;
	if (r == -ENOENT)
		r = 0;
	else {
		/* Corrupt: keep it aside for the person to look at, start empty, say so. */
		q = backend_state_file_move_aside(dir, name, &aside);
		if (q < 0)
			return field_error_set(err, q, "", NULL,
					       "%s/%s is corrupt and cannot be moved aside: %s",
					       dir, name, strerror(-q));
		r = 1;
	}
	*ret = json_object();
	if (!*ret)
		return -ENOMEM;
	if (ret_aside)
		*ret_aside = TAKE_PTR(aside);
	return r;
}

int backend_state_file_write(const char *dir, const char *name, const void *data, size_t len)
{
	_cleanup_free_ char *path = strdup_printf("%s/%s", dir, name);

	if (!path)
		return -ENOMEM;
	return write_file_atomic(path, data, len, 0600);
}

int backend_state_json_text(json_t *doc, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *text = NULL;
	char *line;
	size_t len;

	text = json_dumps(doc, JSON_SORT_KEYS | JSON_INDENT(2));
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	line = realloc(text, len + 2);
	if (!line)
		return -ENOMEM;
	text = line;
	text[len] = '\n';
	text[len + 1] = '\0';
	*ret = TAKE_PTR(text);
	*ret_len = len + 1;
	return 0;
}

int backend_state_json_write(const char *dir, const char *name, json_t *doc)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	r = backend_state_json_text(doc, &text, &len);
	if (r < 0)
		return r;
	return backend_state_file_write(dir, name, text, len);
}

int backend_state_file_move_aside(const char *dir, const char *name, char **ret_path)
{
	_cleanup_free_ char *path = strdup_printf("%s/%s", dir, name);
	_cleanup_free_ char *aside = strdup_printf("%s/%s.corrupt-XXXXXX", dir, name);
	_cleanup_close_ int fd = -1, dfd = -1;
	int r;

	if (!path || !aside)
		return -ENOMEM;
	/* A unique name created 0600 with O_EXCL; the rename then replaces that empty file. */
	fd = mkostemp(aside, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (rename(path, aside) < 0) {
		r = -errno;
		(void)unlink(aside);
		return r;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		(void)fsync(dfd);
	*ret_path = TAKE_PTR(aside);
	return 0;
}
