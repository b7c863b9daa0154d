/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The installed packs: copy, validate, rename into place; the enabled/disabled record. See
 * pack-store.h for the layout and the atomicity rules.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/backend-state.h"
#include "backends/pack/pack-store.h"

#define PACKS_FILE "packs.json"

struct pack_store {
	char *state_dir;
	char *packs_dir;
	int packs_fd;
	struct pack_entry *entries;
	unsigned long long generation;
};

struct copy_counts {
	unsigned files;
	unsigned long long bytes;
};

static void entry_free(struct pack_entry *e)
{
	if (!e)
		return;
	free(e->dir);
	pack_manifest_free(e->manifest);
	free(e);
}

void pack_store_free(struct pack_store *s)
{
	if (!s)
		return;
	while (s->entries) {
		struct pack_entry *e = s->entries;

		s->entries = e->next;
		entry_free(e);
	}
	safe_close(s->packs_fd);
	free(s->state_dir);
	free(s->packs_dir);
	free(s);
}

struct pack_entry *pack_store_find(struct pack_store *s, const char *id)
{
	for (struct pack_entry *e = s ? s->entries : NULL; e; e = e->next)
		if (streq(e->manifest->id, id))
			return e;
	return NULL;
}

struct pack_entry *pack_store_first(struct pack_store *s)
{
	return s ? s->entries : NULL;
}

int pack_store_state_dir(struct pack_store *s, const char *id, bool create, char **ret)
{
	_cleanup_free_ char *p = strdup_printf("%s/pack-state/%s", s->state_dir, id);
	int r;

	if (!p)
		return -ENOMEM;
	if (create) {
		r = mkdir_p(p, 0700);
		if (r < 0)
			return r;
		r = backend_state_dir_check(p, false, NULL);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(p);
	return 0;
}

/* ------------------------------------------------------------------------- files */

/* Delete name under dirfd, recursively, never following a symlink. */
static int rm_rf_at(int parent_fd, const char *name, unsigned depth)
{
	_cleanup_close_ int fd = -1;
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth > PACK_COPY_MAX_DEPTH + 1)
		return -ELOOP;
	fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -1; /* the DIR owns it now */
	while ((de = readdir(d)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, "..")) {
			int k = rm_rf_at(dirfd(d), de->d_name, depth + 1);

			if (k < 0 && r == 0)
				r = k;
		}
	closedir(d);
	if (unlinkat(parent_fd, name, AT_REMOVEDIR) < 0 && r == 0)
		r = -errno;
	return r;
}

static int copy_file_at(int src_dirfd, int dst_dirfd, const char *name, const char *rel,
			struct copy_counts *n, struct field_error *err)
{
	_cleanup_close_ int in = -1, out = -1;
	struct stat st;
	char buf[65536];

	in = openat(src_dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (in < 0 || fstat(in, &st) < 0)
		return field_error_set(err, -errno, "", NULL, "file: %s: cannot read it: %s", rel,
				       strerror(errno));
	if (!S_ISREG(st.st_mode))
		return field_error_set(err, -EINVAL, "", NULL, "file: %s: not a regular file", rel);
	/* Owner-only; the owner's execute bit is kept, set-id and sticky bits never. */
	out = openat(dst_dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     (st.st_mode & S_IXUSR) ? 0700 : 0600);
	if (out < 0)
		return field_error_set(err, -errno, "", NULL, "file: %s: cannot copy it: %s", rel,
				       strerror(errno));
	for (;;) {
		ssize_t k = read(in, buf, sizeof(buf));
		int r;

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return field_error_set(err, -errno, "", NULL, "file: %s: read failed: %s",
					       rel, strerror(errno));
		if (k == 0)
			break;
		n->bytes += (unsigned long long)k;
		if (n->bytes > PACK_COPY_MAX_BYTES)
			return field_error_set(err, -EFBIG, "", NULL,
					       "the pack is larger than %llu bytes",
					       PACK_COPY_MAX_BYTES);
		r = loop_write(out, buf, (size_t)k);
		if (r < 0)
			return field_error_set(err, r, "", NULL, "file: %s: write failed: %s", rel,
					       strerror(-r));
	}
	if (fsync(out) < 0)
		return field_error_set(err, -errno, "", NULL, "file: %s: fsync failed: %s", rel,
				       strerror(errno));
	return 0;
}

/* Copy the directory src_fd into dst_fd (both open): regular files and directories only. */
static int copy_tree(int src_fd, int dst_fd, const char *rel, unsigned depth, struct copy_counts *n,
		     struct field_error *err)
{
	_cleanup_close_ int dup_fd = fd_dup_cloexec(src_fd, 3);
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (dup_fd < 0)
		return dup_fd;
	if (depth > PACK_COPY_MAX_DEPTH)
		return field_error_set(err, -ELOOP, "", NULL,
				       "file: %s: directories nested deeper than %d", rel,
				       PACK_COPY_MAX_DEPTH);
	d = fdopendir(dup_fd);
	if (!d)
		return -errno;
	dup_fd = -1;
	while (r >= 0 && (de = readdir(d))) {
		char sub[1024];
		struct stat st;

		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		(void)snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		if (++n->files > PACK_COPY_MAX_FILES) {
			r = field_error_set(err, -E2BIG, "", NULL,
					    "the pack has more than %d files", PACK_COPY_MAX_FILES);
			break;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = field_error_set(err, -errno, "", NULL, "file: %s: %s", sub,
					    strerror(errno));
			break;
		}
		if (S_ISREG(st.st_mode))
			r = copy_file_at(dirfd(d), dst_fd, de->d_name, sub, n, err);
		else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int s2 = -1, d2 = -1;

			if (mkdirat(dst_fd, de->d_name, 0700) < 0) {
				r = field_error_set(err, -errno, "", NULL, "file: %s: %s", sub,
						    strerror(errno));
				break;
			}
			s2 = openat(dirfd(d), de->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			d2 = openat(dst_fd, de->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s2 < 0 || d2 < 0)
				r = field_error_set(err, -errno, "", NULL, "file: %s: %s", sub,
						    strerror(errno));
			else
				r = copy_tree(s2, d2, sub, depth + 1, n, err);
		} else
			r = field_error_set(err, -EINVAL, "", NULL,
					    "file: %s: symlinks, devices, fifos and sockets are "
					    "not allowed in a pack",
					    sub);
	}
	closedir(d);
	if (r >= 0 && fsync(dst_fd) < 0)
		r = -errno;
	return r;
}

/* Read and validate the manifest of the pack directory dir_fd; check its executable. */
static int load_manifest_at(int dir_fd, struct pack_manifest **ret, struct field_error *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	_cleanup_(pack_manifest_freep) struct pack_manifest *m = NULL;
	struct stat st;
	size_t len = 0;
	int r;

	fd = openat(dir_fd, PACK_MANIFEST_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return field_error_set(err, -errno, "", NULL, "file: %s: %s", PACK_MANIFEST_NAME,
				       errno == ENOENT ? "missing (a pack needs a manifest)"
						       : strerror(errno));
	r = read_full_fd(fd, PACK_MANIFEST_MAX_BYTES, &buf, &len);
	if (r < 0)
		return field_error_set(err, r, "", NULL, "file: %s: %s", PACK_MANIFEST_NAME,
				       r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
	r = pack_manifest_parse(buf, len, &m, err);
	if (r < 0)
		return r;
	if (fstatat(dir_fd, m->executable, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return field_error_set(err, -errno, "executable", NULL, "\"%s\": %s", m->executable,
				       strerror(errno));
	if (!S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR))
		return field_error_set(err, -EINVAL, "executable", NULL,
				       "\"%s\" is not an executable regular file", m->executable);
	*ret = TAKE_PTR(m);
	return 0;
}

/* ------------------------------------------------------------------------- the record */

static int save_record(struct pack_store *s)
{
	_cleanup_json_ json_t *doc = json_pack("{s:i,s:{}}", "version", 1, "packs");
	json_t *packs;

	if (!doc)
		return -ENOMEM;
	packs = json_object_get(doc, "packs");
	for (struct pack_entry *e = s->entries; e; e = e->next)
		if (json_object_set_new(packs, e->manifest->id,
					json_pack("{s:b}", "enabled", e->enabled)) < 0)
			return -ENOMEM;
	return backend_state_json_write(s->state_dir, PACKS_FILE, doc);
}

/* The enabled flags on disk: id → bool. A missing or unreadable record enables nothing. */
static json_t *load_record(struct pack_store *s)
{
	static const char *const keys[] = { "version", "packs", NULL };
	_cleanup_free_ char *buf = NULL;
	_cleanup_json_ json_t *doc = NULL;
	struct field_error fe = { 0 };
	json_t *packs = NULL, *out = json_object(), *v;
	const char *id;
	size_t len = 0;
	int r;

	if (!out)
		return NULL;
	r = backend_state_file_read(s->state_dir, PACKS_FILE, BACKEND_STATE_FILE_MAX, &buf, &len,
				    &fe);
	if (r == -ENOENT)
		return out;
	if (r >= 0)
		r = ipc_json_parse_object(buf, len, &doc, &fe);
	if (r >= 0)
		r = ipc_json_check_keys(doc, keys, "", &fe);
	if (r >= 0)
		r = ipc_json_get_object(doc, "packs", true, "", &packs, &fe);
	if (r < 0) {
		log_warning("the pack record \"%s/%s\" is unusable (%s%s%s); every pack starts "
			    "disabled",
			    s->state_dir, PACKS_FILE, fe.field, *fe.field ? ": " : "", fe.reason);
		return out;
	}
	json_object_foreach(packs, id, v)
		json_object_set_new(out, id,
				    json_boolean(json_is_true(json_object_get(v, "enabled"))));
	return out;
}

int pack_store_open(const char *state_dir, struct pack_store **ret, struct field_error *err)
{
	_cleanup_(pack_store_freep) struct pack_store *s = NULL;
	_cleanup_json_ json_t *record = NULL;
	DIR *d;
	struct dirent *de;
	int r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->packs_fd = -1;
	s->state_dir = strdup(state_dir);
	s->packs_dir = strdup_printf("%s/packs", state_dir);
	if (!s->state_dir || !s->packs_dir)
		return -ENOMEM;
	r = backend_state_dir_check(s->packs_dir, true, err);
	if (r < 0)
		return r;
	s->packs_fd = open(s->packs_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->packs_fd < 0)
		return -errno;
	record = load_record(s);
	if (!record)
		return -ENOMEM;
	d = fdopendir(fd_dup_cloexec(s->packs_fd, 3));
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		_cleanup_close_ int fd = -1;
		struct pack_manifest *m = NULL;
		struct field_error fe = { 0 };
		struct pack_entry *e;

		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (de->d_name[0] == '.') {
			/* An install or removal that did not finish. */
			(void)rm_rf_at(s->packs_fd, de->d_name, 0);
			continue;
		}
		fd = openat(s->packs_fd, de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || load_manifest_at(fd, &m, &fe) < 0 || !streq(m->id, de->d_name)) {
			log_warning("skipping the installed pack \"%s/%s\": %s%s%s", s->packs_dir,
				    de->d_name, fe.field, *fe.field ? ": " : "",
				    m ? "its id differs from its directory" : fe.reason);
			pack_manifest_free(m);
			continue;
		}
		e = calloc(1, sizeof(*e));
		if (!e || !(e->dir = strdup_printf("%s/%s", s->packs_dir, m->id))) {
			free(e);
			pack_manifest_free(m);
			closedir(d);
			return -ENOMEM;
		}
		e->manifest = m;
		e->enabled = json_is_true(json_object_get(record, m->id));
		e->generation = ++s->generation;
		e->next = s->entries;
		s->entries = e;
	}
	closedir(d);
	*ret = TAKE_PTR(s);
	return 0;
}

/* ------------------------------------------------------------------------- operations */

static bool asks_anything(const struct pack_manifest *m);
static bool asks_same(const struct pack_manifest *a, const struct pack_manifest *b);

int pack_store_install(struct pack_store *s, const char *src_dir, bool replace,
		       struct pack_entry **ret_entry, bool *ret_replaced, struct field_error *err)
{
	_cleanup_close_ int src = -1, tmp = -1;
	_cleanup_(pack_manifest_freep) struct pack_manifest *m = NULL;
	struct copy_counts counts = { 0 };
	struct pack_entry *old, *e;
	char tmpname[64];
	bool exists;
	int r;

	src = open(src_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src < 0)
		return field_error_set(err, -errno, "", NULL, "\"%s\": %s", src_dir,
				       strerror(errno));
	/* A fresh name of ours under packs/: mkdtemp needs a path, so try a few names. */
	for (unsigned attempt = 0;; attempt++) {
		(void)snprintf(tmpname, sizeof(tmpname), ".new-%08x%08x", (unsigned)random(),
			       (unsigned)now_nsec());
		if (mkdirat(s->packs_fd, tmpname, 0700) == 0)
			break;
		if (errno != EEXIST || attempt > 16)
			return -errno;
	}
	tmp = openat(s->packs_fd, tmpname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tmp < 0) {
		r = -errno;
		goto fail;
	}
	r = copy_tree(src, tmp, "", 0, &counts, err);
	if (r < 0)
		goto fail;
	/* Validate the copy: what was checked is what will run. */
	r = load_manifest_at(tmp, &m, err);
	if (r < 0)
		goto fail;
	old = pack_store_find(s, m->id);
	exists = old || faccessat(s->packs_fd, m->id, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	if (exists && !replace) {
		r = field_error_set(err, -EEXIST, "id", NULL,
				    "pack \"%s\" is installed already (reinstall to replace it)",
				    m->id);
		goto fail;
	}
	if (exists) {
		/* One step: the new copy takes the id's place, the old one gets the temp name. */
		if (renameat2(s->packs_fd, tmpname, s->packs_fd, m->id, RENAME_EXCHANGE) < 0) {
			r = -errno;
			goto fail;
		}
	} else if (renameat2(s->packs_fd, tmpname, s->packs_fd, m->id, RENAME_NOREPLACE) < 0) {
		r = -errno;
		goto fail;
	}
	(void)fsync(s->packs_fd);
	if (exists)
		(void)rm_rf_at(s->packs_fd, tmpname, 0);

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->dir = strdup_printf("%s/%s", s->packs_dir, m->id);
	if (!e->dir) {
		free(e);
		return -ENOMEM;
	}
	e->manifest = TAKE_PTR(m);
	/* A pack that asks for more than a sandbox of its own (a network beyond loopback, a host
	 * socket) is enabled only by a person who saw what it asks; a reinstall that asks for
	 * the same keeps its state. */
	e->enabled = old ? old->enabled && asks_same(old->manifest, e->manifest)
			 : !asks_anything(e->manifest);
	e->generation = ++s->generation;
	if (old) {
		for (struct pack_entry **p = &s->entries; *p; p = &(*p)->next)
			if (*p == old) {
				*p = old->next;
				break;
			}
		entry_free(old);
	}
	e->next = s->entries;
	s->entries = e;
	r = save_record(s);
	if (r < 0)
		log_warning_errno(r, "cannot save the pack record: %m");
	*ret_entry = e;
	*ret_replaced = exists;
	return 0;
fail:
	(void)rm_rf_at(s->packs_fd, tmpname, 0);
	return r;
}

int pack_store_set_enabled(struct pack_store *s, const char *id, bool enabled)
{
	struct pack_entry *e = pack_store_find(s, id);
	int r;

	if (!e)
		return -ENOENT;
	if (e->enabled == enabled)
		return 0;
	e->enabled = enabled;
	r = save_record(s);
	if (r < 0)
		e->enabled = !enabled;
	return r;
}

int pack_store_remove(struct pack_store *s, const char *id)
{
	struct pack_entry *e = pack_store_find(s, id);
	char aside[64];
	int r;

	if (!e)
		return -ENOENT;
	/* Out of the way in one rename, then deleted: the id is never half there. */
	(void)snprintf(aside, sizeof(aside), ".old-%08x%08x", (unsigned)random(),
		       (unsigned)now_nsec());
	if (renameat2(s->packs_fd, id, s->packs_fd, aside, RENAME_NOREPLACE) < 0)
		return -errno;
	(void)fsync(s->packs_fd);
	for (struct pack_entry **p = &s->entries; *p; p = &(*p)->next)
		if (*p == e) {
			*p = e->next;
			break;
		}
	entry_free(e);
	r = save_record(s);
	if (r < 0)
		log_warning_errno(r, "cannot save the pack record: %m");
	r = rm_rf_at(s->packs_fd, aside, 0);
	if (r < 0)
		log_warning_errno(r, "cannot delete \"%s/%s\": %m", s->packs_dir, aside);
	return 0;
}

static bool asks_anything(const struct pack_manifest *m)
{
	return m->network == PACK_NETWORK_PROXY || m->network == PACK_NETWORK_HOST ||
	       m->n_sockets > 0 || (m->env && m->env[0]);
}

static bool asks_same(const struct pack_manifest *a, const struct pack_manifest *b)
{
	_cleanup_json_ json_t *ja = pack_manifest_asks_to_json(a),
			      *jb = pack_manifest_asks_to_json(b);

	return ja && jb && json_equal(ja, jb);
}

json_t *pack_entry_to_json(const struct pack_entry *e)
{
	const struct pack_manifest *m = e->manifest;
	json_t *backends = json_array();

	for (size_t i = 0; backends && i < m->n_backends; i++) {
		char ref[BACKEND_REF_TEXT_MAX];

		(void)snprintf(ref, sizeof(ref), "pack:%s:%s", m->id, m->backends[i].kind);
		json_array_append_new(backends, json_string(ref));
	}
	return json_pack("{s:s,s:s,s:s,s:b,s:s,s:s,s:o*,s:o*}", "id", m->id, "version", m->version,
			 "description", m->description, "enabled", e->enabled, "directory", e->dir,
			 "network", pack_network_to_string(m->network), "backends", backends,
			 "asks", pack_manifest_asks_to_json(m));
}
