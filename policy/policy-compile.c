/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-fdpass.h"
#include "policy/policy-compile.h"
#include "policy/policy-default.h"
#include "policy/policy-hostexec.h"
#include "policy/policy-parse.h"
#include "policy/policy-seccomp.h"
#include "policy/policy-syscalls.h"

#define PATHBUF 256
#define ARG_MAX_BYTES (CORDON_ARG_STRLEN_MAX - 1U)
#define DEFAULT_PATH "PATH=/usr/local/bin:/usr/bin:/bin"

struct compiled_plan *compiled_plan_free(struct compiled_plan *p)
{
	if (!p)
		return NULL;
	json_decref(p->plan);
	close_many(p->fds, p->n_fds);
	free(p->fds);
	for (size_t i = 0; i < p->n_fds; i++)
		free(p->fd_what[i]);
	free(p->fd_what);
	free(p->seccomp_key);
	strv_free(p->unenforced);
	strv_free(p->skipped);
	for (size_t i = 0; i < p->n_sources; i++) {
		free(p->sources[i].host);
		free(p->sources[i].target);
		free(p->sources[i].link);
	}
	free(p->sources);
	free(p->host_exec_key);
	free(p->host_exec_fds);
	strv_free(p->host_exec_absent);
	free(p);
	return NULL;
}

int compiled_plan_add_fd(struct compiled_plan *p, int fd, const char *what)
{
	char *w;

	if (fd < 0)
		return -EBADF;
	if (p->n_fds == p->n_alloc) {
		size_t n = p->n_alloc ? p->n_alloc * 2 : 8;
		int *fds = reallocarray(p->fds, n, sizeof(int));
		char **whats;

		if (!fds) {
			safe_close(fd);
			return -ENOMEM;
		}
		p->fds = fds;
		whats = reallocarray(p->fd_what, n, sizeof(char *));
		if (!whats) {
			safe_close(fd);
			return -ENOMEM;
		}
		p->fd_what = whats;
		p->n_alloc = n;
	}
	w = strdup(what ? what : "");
	if (!w) {
		safe_close(fd);
		return -ENOMEM;
	}
	p->fds[p->n_fds] = fd;
	p->fd_what[p->n_fds] = w;
	return (int)p->n_fds++;
}

static int strv_push(char ***l, const char *s)
{
	size_t n = strv_length(*l);
	char **nl = reallocarray(*l, n + 2, sizeof(char *));

	if (!nl)
		return -ENOMEM;
	*l = nl;
	nl[n] = strdup(s);
	nl[n + 1] = NULL;
	return nl[n] ? 0 : -ENOMEM;
}

/* ---- host paths ---- */

struct host {
	int root_fd;
	bool in_root; /* resolve inside a test root (RESOLVE_IN_ROOT) */
};

static int host_open(const struct host *h, const char *path, int flags, int *ret_fd)
{
	int fd = policy_host_open(h->root_fd, h->in_root, path, flags);

	if (fd < 0)
		return fd;
	*ret_fd = fd;
	return 0;
}

/* Lexically normalize an absolute path, resolving "." and ".." (clamped at /). */
static char *path_normalize_lexical(const char *in)
{
	_cleanup_free_ char *out = malloc(strlen(in) + 2);
	size_t n = 0;

	if (!out)
		return NULL;
	for (const char *c = in;;) {
		const char *e;
		size_t k;

		while (*c == '/')
			c++;
		if (!*c)
			break;
		e = strchr(c, '/');
		k = e ? (size_t)(e - c) : strlen(c);
		if (k == 2 && c[0] == '.' && c[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
		} else if (!(k == 1 && c[0] == '.')) {
			out[n++] = '/';
			memcpy(out + n, c, k);
			n += k;
		}
		c += k;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return TAKE_PTR(out);
}

/* ---- the layout ---- */

struct bind {
	char *host;
	char *target;
	bool rw;
	bool skippable; /* absent is fine: a default system directory or an optional path */
	char field[PATHBUF];
	int fd;		 /* O_PATH source, -1 until opened */
	char *link;	 /* a symlink that stays a symlink inside the sandbox */
	char *resolved;	 /* where that symlink points, lexically */
	char *seen_link; /* the source was a symlink with this text (kept or followed) */
	bool followed;	 /* … and it was followed to its destination */
	bool absent;
	int fd_index; /* in the plan's fd list, -1 if none */
};

struct mount {
	char *target;
	int rank; /* 0 everything, 1 deny: a deny follows what it hides */
	size_t seq;
	json_t *j;
};

struct compiler {
	const struct compile_ctx *ctx;
	const struct policy *p; /* resolved: the caller's, or owned */
	struct policy *owned;	/* a resolved copy, when the caller's was not */
	struct host host;
	struct bind *binds;
	size_t n_binds;
	struct policy_host_exec_list *hx; /* the writable binds' host-executed paths */
	struct mount *mounts;
	size_t n_mounts;
	struct compiled_plan *out;
	struct field_error *err;
};

static void compiler_done(struct compiler *c)
{
	for (size_t i = 0; i < c->n_binds; i++) {
		free(c->binds[i].host);
		free(c->binds[i].target);
		free(c->binds[i].link);
		free(c->binds[i].resolved);
		free(c->binds[i].seen_link);
		safe_close(c->binds[i].fd);
	}
	free(c->binds);
	for (size_t i = 0; i < c->n_mounts; i++) {
		free(c->mounts[i].target);
		json_decref(c->mounts[i].j);
	}
	free(c->mounts);
	policy_host_exec_list_free(c->hx);
	safe_close(c->host.root_fd);
	policy_free(c->owned);
}

static bool reserved_target(const char *t)
{
	return streq(t, "/") || policy_path_under(t, "/proc") || policy_path_under(t, "/dev");
}

static int add_bind(struct compiler *c, const char *host, const char *target, bool rw,
		    bool skippable, const char *list, size_t index)
{
	struct bind *b;

	if (!path_is_normalized(host) || !path_is_normalized(target))
		return -EINVAL;
	/*
	 * The same path listed again at the same place (in read and write, or as the workspace
	 * too) is one grant: the broadest access listed, required unless every listing is
	 * skippable. The workspace keeps its name, which its own checks look for.
	 */
	for (size_t i = 0; i < c->n_binds; i++) {
		b = &c->binds[i];
		if (!streq(b->host, host) || !streq(b->target, target))
			continue;
		b->rw = b->rw || rw;
		b->skippable = b->skippable && skippable;
		if (startswith(list, "filesystem.workspace"))
			(void)snprintf(b->field, sizeof(b->field), "%s", list);
		return 0;
	}
	b = &c->binds[c->n_binds];
	*b = (struct bind){ .rw = rw, .skippable = skippable, .fd = -1, .fd_index = -1 };
	if (index == SIZE_MAX)
		(void)snprintf(b->field, sizeof(b->field), "%s", list);
	else
		json_path_index(b->field, sizeof(b->field), list, index);
	b->host = strdup(host);
	b->target = strdup(target);
	c->n_binds++;
	if (!b->host || !b->target)
		return -ENOMEM;
	if (reserved_target(host) || reserved_target(target))
		return field_error_set(
			c->err, -EINVAL, b->field, NULL,
			"\"%s\" cannot be exposed: cordon provides /, /proc and /dev",
			reserved_target(host) ? host : target);
	for (size_t i = 0; i + 1 < c->n_binds; i++) {
		if (streq(c->binds[i].host, host))
			return field_error_set(c->err, -EINVAL, b->field, NULL,
					       "\"%s\" is also listed in %s", host,
					       c->binds[i].field);
		if (streq(c->binds[i].target, target))
			return field_error_set(c->err, -EINVAL, b->field, NULL,
					       "\"%s\" is also the target of %s", target,
					       c->binds[i].field);
	}
	return 0;
}

/* The workspace is the caller's home or contains it: every file the user's session runs
 * would be the sandbox's to change (~/.bashrc, ~/.profile, ~/.config/autostart). */
static int home_refused(struct compiler *c, const char *path)
{
	return field_error_set(c->err, -EPERM, "filesystem.workspace.path", NULL,
			       "\"%s\" is your home directory or contains it; run in a project "
			       "directory, or set filesystem.workspace.allowHome",
			       path);
}

static int collect_binds(struct compiler *c)
{
	const struct policy *p = c->p;
	size_t n = strv_length(p->fs.read) + strv_length(p->fs.write) + 1;
	int r;

	c->binds = calloc(n, sizeof(struct bind));
	if (!c->binds)
		return -ENOMEM;
	for (size_t i = 0; p->fs.read && p->fs.read[i]; i++) {
		_cleanup_free_ char *id = strdup_printf("path:%s", p->fs.read[i]);

		if (!id)
			return -ENOMEM;
		r = add_bind(c, p->fs.read[i], p->fs.read[i], false,
			     p->fs.read_is_default || policy_default_is_system_dir(p->fs.read[i]) ||
				     policy_is_optional(p, id),
			     "filesystem.read", i);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; p->fs.write && p->fs.write[i]; i++) {
		_cleanup_free_ char *id = strdup_printf("path:%s", p->fs.write[i]);

		if (!id)
			return -ENOMEM;
		r = add_bind(c, p->fs.write[i], p->fs.write[i], true, policy_is_optional(p, id),
			     "filesystem.write", i);
		if (r < 0)
			return r;
	}
	if (p->fs.workspace.present) {
		const struct policy_workspace *w = &p->fs.workspace;
		_cleanup_free_ char *id = strdup_printf("path:%s", w->path);

		if (!id)
			return -ENOMEM;
		if (streq(w->path, "/"))
			return field_error_set(c->err, -EINVAL, "filesystem.workspace.path", NULL,
					       "resolves to \"/\"; run from a project directory or "
					       "set the workspace path");
		if (!w->allow_home && policy_path_under(c->ctx->home, w->path))
			return home_refused(c, w->path);
		r = add_bind(c, w->path, w->mount_at ? w->mount_at : w->path,
			     w->access == POLICY_ACCESS_READ_WRITE, policy_is_optional(p, id),
			     w->mount_at ? "filesystem.workspace.mountAt"
					 : "filesystem.workspace.path",
			     SIZE_MAX);
		if (r < 0)
			return r;
	}
	/* A granted path below a denied one could not even get its mountpoint. */
	for (size_t i = 0; i < c->n_binds; i++)
		for (size_t k = 0; p->fs.deny && p->fs.deny[k]; k++)
			if (policy_path_under(c->binds[i].host, p->fs.deny[k]))
				return field_error_set(c->err, -EINVAL, c->binds[i].field, NULL,
						       "\"%s\" is hidden by filesystem.deny[%zu] "
						       "\"%s\"",
						       c->binds[i].host, k, p->fs.deny[k]);
	return 0;
}

/*
 * Open b's source with flags. A path that is not there (or, followed, leads nowhere: ELOOP) marks
 * a skippable bind absent and is an error naming the field for any other.
 */
static int open_source(struct compiler *c, struct bind *b, int flags)
{
	int r = host_open(&c->host, b->host, flags, &b->fd);

	if (r == -ENOENT || r == -ENOTDIR || (r == -ELOOP && !(flags & O_NOFOLLOW))) {
		if (!b->skippable)
			return field_error_set(c->err, -ENOENT, b->field, NULL,
					       "\"%s\" does not exist", b->host);
		b->absent = true;
		return 0;
	}
	if (r < 0)
		return field_error_set(c->err, r, b->field, NULL, "cannot open \"%s\": %s", b->host,
				       strerror(-r));
	return 0;
}

static int open_binds(struct compiler *c)
{
	int r;

	/* First pass: open every source without following a final symlink. */
	for (size_t i = 0; i < c->n_binds; i++) {
		struct bind *b = &c->binds[i];
		char buf[PATH_MAX];
		struct stat st;
		ssize_t n;

		r = open_source(c, b, O_PATH | O_NOFOLLOW);
		if (r < 0)
			return r;
		if (b->absent)
			continue;
		if (fstat(b->fd, &st) < 0)
			return negative_errno();
		if (!S_ISLNK(st.st_mode))
			continue;
		n = readlinkat(b->fd, "", buf, sizeof(buf) - 1);
		if (n < 0)
			return field_error_set(c->err, negative_errno(), b->field, NULL,
					       "cannot read the symlink \"%s\"", b->host);
		buf[n] = '\0';
		b->link = strdup(buf);
		b->seen_link = strdup(buf);
		if (!b->link || !b->seen_link)
			return -ENOMEM;
		if (buf[0] == '/') {
			b->resolved = path_normalize_lexical(buf);
		} else {
			_cleanup_free_ char *j = strdup_printf("%s/../%s", b->host, buf);

			b->resolved = j ? path_normalize_lexical(j) : NULL;
		}
		if (!b->resolved)
			return -ENOMEM;
		b->fd = safe_close(b->fd);
	}

	/*
	 * Second pass: a symlink whose destination another bind exposes at its own location (the
	 * merged-/usr /bin -> usr/bin) stays a symlink; any other is followed and bound.
	 */
	for (size_t i = 0; i < c->n_binds; i++) {
		struct bind *b = &c->binds[i];
		bool keep = false;

		if (!b->link || b->absent)
			continue;
		for (size_t k = 0; k < c->n_binds; k++) {
			const struct bind *o = &c->binds[k];

			if (k != i && !o->link && !o->absent && streq(o->host, o->target) &&
			    policy_path_under(b->resolved, o->host))
				keep = true;
		}
		if (keep && streq(b->host, b->target))
			continue;
		free(b->link);
		b->link = NULL;
		b->followed = true;
		r = open_source(c, b, O_PATH);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The same refusal for a workspace that reaches the home (or above it) through a symlink. */
static int check_home(struct compiler *c)
{
	const struct policy_workspace *w = &c->p->fs.workspace;
	_cleanup_free_ char *ws = NULL, *home = NULL;
	_cleanup_close_ int hfd = -1;

	if (!w->present || w->allow_home)
		return 0;
	for (size_t i = 0; i < c->n_binds; i++) {
		const struct bind *b = &c->binds[i];
		int r;

		if (!startswith(b->field, "filesystem.workspace") || b->absent || b->fd < 0)
			continue;
		if (host_open(&c->host, c->ctx->home, O_PATH | O_DIRECTORY, &hfd) < 0)
			return 0; /* no home on this host: nothing of it to expose */
		r = fd_get_path(b->fd, &ws);
		if (r >= 0)
			r = fd_get_path(hfd, &home);
		if (r < 0)
			return r == -ENOMEM ? r : 0;
		if (policy_path_under(home, ws))
			return home_refused(c, w->path);
	}
	return 0;
}

/*
 * The host-executed paths of the writable binds (policy-hostexec.h), made bindable: a git
 * directory's missing hooks, info and config are made (empty) here. A symlink among them cannot
 * be kept read-only: the spawn is refused, naming the entry to opt out of.
 */
static int scan_host_exec(struct compiler *c)
{
	_cleanup_free_ struct policy_host_exec_bind *hb = calloc(c->n_binds + 1, sizeof(*hb));
	const struct policy_host_exec_ctx hctx = {
		.p = c->p,
		.cwd = c->ctx->cwd,
		.home = c->ctx->home,
		.envp = c->ctx->envp,
		.host_root_fd = c->host.root_fd,
		.in_root = c->host.in_root,
		.create = true,
	};
	size_t n = 0;
	int r;

	if (!hb)
		return -ENOMEM;
	for (size_t i = 0; i < c->n_binds; i++)
		if (!c->binds[i].absent && !c->binds[i].link && c->binds[i].fd >= 0)
			hb[n++] = (struct policy_host_exec_bind){ .fd = c->binds[i].fd,
								  .host = c->binds[i].host,
								  .target = c->binds[i].target,
								  .rw = c->binds[i].rw };
	r = policy_host_exec_scan(&hctx, hb, n, &c->hx, c->err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->hx->n; i++) {
		const struct policy_host_exec_item *it = &c->hx->items[i];

		if (it->state == POLICY_HOST_EXEC_SYMLINK)
			return field_error_set(c->err, -EPERM, "filesystem.hostExecuted", NULL,
					       "\"%s\" is a symbolic link or lies below one, which "
					       "cordon cannot keep read-only; list \"%s\" in "
					       "filesystem.hostExecuted.allow to run anyway",
					       it->host, it->entry->id);
		if (it->state == POLICY_HOST_EXEC_ABSENT &&
		    (r = strv_push(&c->out->host_exec_absent, it->host)) < 0)
			return r;
	}
	c->out->host_exec_key = policy_host_exec_key(c->hx);
	c->out->host_exec_fds = calloc(c->hx->n + 1, sizeof(int));
	if (!c->out->host_exec_key || !c->out->host_exec_fds)
		return -ENOMEM;
	c->out->n_host_exec = c->hx->n;
	for (size_t i = 0; i < c->hx->n; i++)
		c->out->host_exec_fds[i] = -1;
	return 0;
}

static int add_mount(struct compiler *c, const char *target, int rank, json_t *j)
{
	struct mount *m;

	if (!j)
		return -ENOMEM;
	if (c->n_mounts >= PLAN_MOUNTS_MAX) {
		json_decref(j);
		return field_error_set(c->err, -E2BIG, "filesystem", NULL, "more than %d mounts",
				       PLAN_MOUNTS_MAX);
	}
	m = reallocarray(c->mounts, c->n_mounts + 1, sizeof(*m));
	if (!m) {
		json_decref(j);
		return -ENOMEM;
	}
	c->mounts = m;
	m = &c->mounts[c->n_mounts];
	*m = (struct mount){ .target = strdup(target), .rank = rank, .seq = c->n_mounts, .j = j };
	c->n_mounts++;
	return m->target ? 0 : -ENOMEM;
}

static bool target_visible(const struct compiler *c, const char *path)
{
	for (size_t i = 0; i < c->n_binds; i++)
		if (!c->binds[i].absent && !c->binds[i].link &&
		    policy_path_under(path, c->binds[i].target))
			return true;
	return false;
}

static bool target_bound(const struct compiler *c, const char *path)
{
	for (size_t i = 0; i < c->n_binds; i++)
		if (!c->binds[i].absent && streq(c->binds[i].target, path))
			return true;
	return false;
}

static int cmp_mount(const void *a, const void *b)
{
	const struct mount *x = a, *y = b;
	int r = strcmp(x->target, y->target);

	if (r != 0)
		return r;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The fds of a plan besides its bind sources, all in one launcher message: the seccomp
 * program, the mount namespace, and stdin, stdout and stderr. */
#define PLAN_FDS_OTHER 5

static bool fd_room(const struct compiler *c)
{
	return c->out->n_fds + 1 + PLAN_FDS_OTHER <= IPC_MAX_FDS;
}

static int build_mounts(struct compiler *c)
{
	const struct policy *p = c->p;
	const char *home = c->ctx->home;
	_cleanup_json_ json_t *list = json_array();
	int r;

	if (!list)
		return -ENOMEM;
	for (size_t i = 0; i < c->n_binds; i++) {
		struct bind *b = &c->binds[i];
		int idx;

		if (b->absent) {
			r = strv_push(&c->out->skipped, b->host);
			if (r < 0)
				return r;
			continue;
		}
		if (b->link) {
			r = add_mount(c, b->target, 0,
				      json_pack("{s:s, s:s, s:s}", "type", "symlink", "target",
						b->target, "link", b->link));
			if (r < 0)
				return r;
			continue;
		}
		if (!fd_room(c))
			return field_error_set(c->err, -E2BIG, b->field, NULL,
					       "more than %d paths to bind (the launcher channel "
					       "carries at most %d fds)",
					       IPC_MAX_FDS - PLAN_FDS_OTHER, IPC_MAX_FDS);
		idx = compiled_plan_add_fd(c->out, TAKE_FD(b->fd), b->host);
		if (idx < 0)
			return idx;
		b->fd_index = idx;
		r = add_mount(c, b->target, 0,
			      json_pack("{s:s, s:i, s:s, s:b}", "type", "bind", "source", idx,
					"target", b->target, "readOnly", !b->rw));
		if (r < 0)
			return r;
	}

	/* Host-executed paths: read-only over themselves (hooks hidden), their directories
	 * pinned by a read-write bind over themselves. */
	for (size_t i = 0; c->hx && i < c->hx->n; i++) {
		struct policy_host_exec_item *it = &c->hx->items[i];
		int idx;

		if (it->state != POLICY_HOST_EXEC_PRESENT && it->state != POLICY_HOST_EXEC_CREATED)
			continue;
		if (it->how == POLICY_HOST_EXEC_HIDE) {
			r = add_mount(c, it->target, 1,
				      json_pack("{s:s, s:s}", "type", "deny", "target",
						it->target));
			if (r < 0)
				return r;
			continue;
		}
		if (!fd_room(c))
			return field_error_set(c->err, -E2BIG, "filesystem.hostExecuted", NULL,
					       "keeping \"%s\" and the other host-executed paths "
					       "read-only takes more binds than one launcher "
					       "message carries (%d fds); opt some out with "
					       "filesystem.hostExecuted.allow (\".git/modules\": "
					       "a repository's submodules)",
					       it->host, IPC_MAX_FDS);
		idx = compiled_plan_add_fd(c->out, TAKE_FD(it->fd), it->host);
		if (idx < 0)
			return idx;
		c->out->host_exec_fds[i] = idx;
		r = add_mount(c, it->target, 0,
			      json_pack("{s:s, s:i, s:s, s:b}", "type", "bind", "source", idx,
					"target", it->target, "readOnly",
					it->how != POLICY_HOST_EXEC_PIN));
		if (r < 0)
			return r;
	}

	/* The sandbox's hostname resolves (getaddrinfo(gethostname()), hostname -f, a JVM's
	 * getLocalHost): the host's /etc/hosts, one line added, over the host's own. */
	if (c->ctx->etc_hosts && target_visible(c, "/etc/hosts") &&
	    !target_bound(c, "/etc/hosts") && fd_room(c)) {
		struct stat st;
		int fd, idx;

		if (fstatat(c->host.root_fd, "etc/hosts", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) &&
		    (fd = open(c->ctx->etc_hosts, O_PATH | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
			idx = compiled_plan_add_fd(c->out, fd, c->ctx->etc_hosts);
			if (idx < 0)
				return idx;
			r = add_mount(c, "/etc/hosts", 0,
				      json_pack("{s:s, s:i, s:s, s:b}", "type", "bind", "source",
						idx, "target", "/etc/hosts", "readOnly", true));
			if (r < 0)
				return r;
		}
	}
	if (p->fs.tmp == POLICY_TMP_PRIVATE && !target_bound(c, "/tmp")) {
		r = add_mount(c, "/tmp", 0,
			      json_pack("{s:s, s:s, s:i, s:I}", "type", "tmpfs", "target", "/tmp",
					"mode", 01777, "sizeBytes",
					(json_int_t)PLAN_TMP_SIZE_BYTES));
		if (r < 0)
			return r;
	}
	if (!target_visible(c, home)) {
		if (p->fs.home == POLICY_HOME_TMPFS)
			r = add_mount(c, home, 0,
				      json_pack("{s:s, s:s, s:i, s:I}", "type", "tmpfs", "target",
						home, "mode", 0700, "sizeBytes",
						(json_int_t)PLAN_HOME_SIZE_BYTES));
		else
			r = add_mount(c, home, 0,
				      json_pack("{s:s, s:s, s:i}", "type", "dir", "target", home,
						"mode", 0700));
		if (r < 0)
			return r;
	}
	r = add_mount(c, "/proc", 0, json_pack("{s:s, s:s}", "type", "proc", "target", "/proc"));
	if (r < 0)
		return r;
	r = add_mount(c, "/dev", 0, json_pack("{s:s, s:s}", "type", "dev", "target", "/dev"));
	if (r < 0)
		return r;

	/* Every place a denied path would show up: below each bind that exposes it. */
	for (size_t k = 0; p->fs.deny && p->fs.deny[k]; k++)
		for (size_t i = 0; i < c->n_binds; i++) {
			const struct bind *b = &c->binds[i];
			_cleanup_free_ char *t = NULL;
			bool dup = false;

			if (b->absent || b->link || !policy_path_under(p->fs.deny[k], b->host))
				continue;
			t = strdup_printf("%s%s", b->target, p->fs.deny[k] + strlen(b->host));
			if (!t)
				return -ENOMEM;
			for (size_t m = 0; m < c->n_mounts; m++)
				if (c->mounts[m].rank == 1 && streq(c->mounts[m].target, t))
					dup = true;
			if (dup)
				continue;
			r = add_mount(c, t, 1,
				      json_pack("{s:s, s:s}", "type", "deny", "target", t));
			if (r < 0)
				return r;
		}

	/* Parents before children, a deny after what it hides. */
	qsort(c->mounts, c->n_mounts, sizeof(*c->mounts), cmp_mount);
	for (size_t i = 0; i < c->n_mounts; i++)
		if (json_array_append(list, c->mounts[i].j) < 0)
			return -ENOMEM;
	return json_object_set(c->out->plan, "mounts", list) < 0 ? -ENOMEM : 0;
}

/* ---- Landlock ---- */

enum rights {
	RIGHTS_READ,
	RIGHTS_WRITE,
	RIGHTS_DEV,
	RIGHTS_PROC,
	RIGHTS_LIST,
};

static bool right_in(enum rights set, const char *name)
{
	static const char *const read[] = { "execute", "read-file", "read-dir", NULL };
	static const char *const dev[] = { "read-file", "write-file", "read-dir",
					   "truncate",	"ioctl-dev",  NULL };
	static const char *const proc[] = { "read-file", "write-file", "read-dir", NULL };
	static const char *const list[] = { "read-dir", NULL };
	const char *const *l = NULL;

	switch (set) {
	case RIGHTS_WRITE:
		return true;
	case RIGHTS_READ:
		l = read;
		break;
	case RIGHTS_DEV:
		l = dev;
		break;
	case RIGHTS_PROC:
		l = proc;
		break;
	case RIGHTS_LIST:
		l = list;
		break;
	}
	for (; *l; l++)
		if (streq(*l, name))
			return true;
	return false;
}

struct ll_rule {
	const char *path;
	enum rights rights;
};

static int cmp_ll_rule(const void *a, const void *b)
{
	return strcmp(((const struct ll_rule *)a)->path, ((const struct ll_rule *)b)->path);
}

static int unenforced(struct compiler *c, const char *id)
{
	return strv_push(&c->out->unenforced, id);
}

/*
 * Checks a host capability for a rule: 1 when it can be enforced, 0 when it cannot but the rule
 * is optional (recorded), -EOPNOTSUPP (naming the rule) otherwise.
 */
static int need(struct compiler *c, bool available, const char *id, const char *fmt, ...)
	_printf_(4, 5);
static int need(struct compiler *c, bool available, const char *id, const char *fmt, ...)
{
	char reason[200];
	va_list ap;
	int r;

	if (available)
		return 1;
	if (policy_is_optional(c->p, id)) {
		r = unenforced(c, id);
		return r < 0 ? r : 0;
	}
	va_start(ap, fmt);
	(void)vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	return field_error_set(c->err, -EOPNOTSUPP, id, NULL,
			       "%s; list \"%s\" in \"optional\" to run without it", reason, id);
}

static int build_landlock(struct compiler *c)
{
	const struct policy *p = c->p;
	const unsigned abi = c->ctx->caps.landlock_abi;
	_cleanup_json_ json_t *ll = NULL, *fs = json_array();
	_cleanup_free_ struct ll_rule *rules = NULL;
	size_t n = 0;
	int r;

	r = need(c, abi >= 1, "landlock", "the launcher has no Landlock (ABI 0)");
	if (r < 0)
		return r;
	if (r == 0) {
		if (c->ctx->caps.floor_require_landlock)
			return field_error_set(c->err, -EPERM, "landlock", NULL,
					       "the launcher's admin floor requires Landlock, "
					       "which this host lacks");
		return 0;
	}
	if (!fs)
		return -ENOMEM;
	rules = calloc(c->n_binds + 8, sizeof(*rules));
	if (!rules)
		return -ENOMEM;
	rules[n++] = (struct ll_rule){ "/", RIGHTS_LIST };
	for (size_t i = 0; i < c->n_binds; i++)
		if (!c->binds[i].absent && !c->binds[i].link)
			rules[n++] = (struct ll_rule){ c->binds[i].target, c->binds[i].rw
										   ? RIGHTS_WRITE
										   : RIGHTS_READ };
	if (p->fs.tmp == POLICY_TMP_PRIVATE && !target_bound(c, "/tmp"))
		rules[n++] = (struct ll_rule){ "/tmp", RIGHTS_WRITE };
	if (p->fs.home == POLICY_HOME_TMPFS && !target_visible(c, c->ctx->home))
		rules[n++] = (struct ll_rule){ c->ctx->home, RIGHTS_WRITE };
	rules[n++] = (struct ll_rule){ "/dev", RIGHTS_DEV };
	rules[n++] = (struct ll_rule){ "/dev/shm", RIGHTS_WRITE };
	rules[n++] = (struct ll_rule){ "/proc", RIGHTS_PROC };
	qsort(rules, n, sizeof(*rules), cmp_ll_rule);

	for (size_t i = 0; i < n; i++) {
		_cleanup_json_ json_t *acc = json_array();

		if (!acc)
			return -ENOMEM;
		for (size_t k = 0; k < policy_landlock_fs_access_count; k++)
			if (policy_landlock_fs_access_abi[k] <= abi &&
			    right_in(rules[i].rights, policy_landlock_fs_access[k]) &&
			    json_array_append_new(acc, json_string(policy_landlock_fs_access[k])) <
				    0)
				return -ENOMEM;
		if (json_array_append_new(fs, json_pack("{s:s, s:O}", "path", rules[i].path,
							"access", acc)) < 0)
			return -ENOMEM;
	}
	ll = json_pack("{s:b, s:O}", "required", true, "fs", fs);
	if (!ll)
		return -ENOMEM;

	/*
	 * TCP: "unix" denies bind and connect outright (its seccomp floor already refuses the
	 * socket); "none" and "loopback" leave the sandbox's own loopback usable; "proxy" may only
	 * connect to the proxy; "host" may connect to allowPorts and bind nothing.
	 */
	if (p->net.mode != POLICY_NETWORK_NONE && p->net.mode != POLICY_NETWORK_LOOPBACK) {
		r = need(c, abi >= 4, "landlock.net",
			 "TCP rules need Landlock ABI 4, the launcher "
			 "reports %u",
			 abi);
		if (r < 0)
			return r;
		if (r > 0) {
			_cleanup_json_ json_t *connect = json_array();

			if (!connect)
				return -ENOMEM;
			if (p->net.mode == POLICY_NETWORK_PROXY &&
			    json_array_append_new(connect, json_integer(PLAN_PROXY_PORT)) < 0)
				return -ENOMEM;
			if (p->net.mode == POLICY_NETWORK_HOST)
				for (size_t i = 0; i < p->net.n_allow_ports; i++)
					if (json_array_append_new(
						    connect, json_integer(p->net.allow_ports[i])) <
					    0)
						return -ENOMEM;
			if (json_object_set_new(ll, "net",
						json_pack("{s:[], s:O}", "bindTcp", "connectTcp",
							  connect)) < 0)
				return -ENOMEM;
		}
	}

	r = need(c, abi >= 6, "landlock.scope",
		 "abstract unix socket and signal scoping need Landlock ABI 6, the launcher "
		 "reports %u",
		 abi);
	if (r < 0)
		return r;
	if (r > 0 && json_object_set_new(ll, "scope",
					 json_pack("[s, s]", "abstract-unix-socket", "signal")) < 0)
		return -ENOMEM;
	return json_object_set(c->out->plan, "landlock", ll) < 0 ? -ENOMEM : 0;
}

static int build_seccomp(struct compiler *c)
{
	_cleanup_free_ struct policy_syscall_rule *rules = NULL;
	size_t n = 0;
	int r, fd = -1, idx;

	r = need(c, c->ctx->caps.seccomp, "seccomp", "the launcher has no seccomp");
	if (r < 0)
		return r;
	if (r == 0) {
		if (c->ctx->caps.floor_require_seccomp)
			return field_error_set(c->err, -EPERM, "seccomp", NULL,
					       "the launcher's admin floor requires seccomp, which "
					       "this host lacks");
		return 0;
	}
	r = policy_syscall_spec(c->p, &rules, &n);
	if (r < 0)
		return r;
	c->out->seccomp_key = policy_syscall_spec_key(rules, n);
	if (!c->out->seccomp_key)
		return -ENOMEM;
	r = policy_seccomp_program(rules, n, &fd);
	if (r < 0)
		return field_error_set(c->err, r, "syscalls", NULL,
				       "cannot build the seccomp program: %s", strerror(-r));
	idx = compiled_plan_add_fd(c->out, fd, "seccomp");
	if (idx < 0)
		return idx;
	return json_object_set_new(c->out->plan, "seccomp", json_pack("{s:i}", "program", idx)) < 0
		       ? -ENOMEM
		       : 0;
}

/*
 * Our mount namespace, which the bind sources' fds lie in: a launcher in another one (a system
 * launcherd under its unit) clones them in this one, so that the sandbox sees exactly our view
 * of them (PROTOCOL.md §1.3, mountNamespace). Not for a fake host root (golden tests).
 */
static int build_mount_ns(struct compiler *c)
{
	int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC), idx;

	if (fd < 0)
		return field_error_set(c->err, -errno, "filesystem", NULL,
				       "cannot open our mount namespace: %s", strerror(errno));
	idx = compiled_plan_add_fd(c->out, fd, "mount namespace");
	if (idx < 0)
		return idx;
	return json_object_set_new(c->out->plan, "mountNamespace", json_integer(idx)) < 0 ? -ENOMEM
											  : 0;
}

static int build_limits(struct compiler *c)
{
	const struct policy_limits *l = &c->p->limits;
	const bool cg = c->ctx->caps.cgroup != POLICY_CGROUP_NONE;
	_cleanup_json_ json_t *rl = NULL, *cgroup = json_object();
	uint64_t files = l->files;
	struct rlimit own;
	int r;

	if (!cgroup)
		return -ENOMEM;
	/* A limit, so at most what we may have ourselves: a launcher refuses a plan above its
	 * requester's hard limit (an admin's per-user limit), and lowering one narrows. */
	if (getrlimit(RLIMIT_NOFILE, &own) == 0 && own.rlim_max != RLIM_INFINITY &&
	    files > own.rlim_max)
		files = own.rlim_max;
	rl = json_pack("{s:I, s:i}", "nofile", (json_int_t)files, "core", 0);
	if (!rl)
		return -ENOMEM;
	if (l->cpu_seconds > 0 &&
	    json_object_set_new(rl, "cpu", json_integer((json_int_t)l->cpu_seconds)) < 0)
		return -ENOMEM;
	if (json_object_set_new(c->out->plan, "rlimits", TAKE_PTR(rl)) < 0)
		return -ENOMEM;

	r = need(c, cg || c->ctx->caps.pids_nproc, "limits.pids",
		 "the launcher has no cgroup to count processes in");
	if (r < 0)
		return r;
	if (r > 0 && json_object_set_new(cgroup, "pidsMax", json_integer((json_int_t)l->pids)) < 0)
		return -ENOMEM;
	r = need(c, cg, "limits.memoryBytes", "the launcher has no cgroup to limit memory in");
	if (r < 0)
		return r;
	if (r > 0 && json_object_set_new(cgroup, "memoryMaxBytes",
					 json_integer((json_int_t)l->memory_bytes)) < 0)
		return -ENOMEM;
	if (json_object_size(cgroup) > 0 && json_object_set(c->out->plan, "cgroup", cgroup) < 0)
		return -ENOMEM;
	return json_object_set_new(c->out->plan, "timeoutMs",
				   json_integer((json_int_t)(l->wall_seconds * 1000))) < 0
		       ? -ENOMEM
		       : 0;
}

/* ---- the process ---- */

static int cmp_env(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t nx = strcspn(x, "="), ny = strcspn(y, "=");
	int r = strncmp(x, y, nx < ny ? nx : ny);

	return r != 0 ? r : (nx > ny) - (nx < ny);
}

/* Set NAME=VALUE in l, replacing an earlier NAME. */
static int env_put(char ***l, const char *entry)
{
	size_t n = strcspn(entry, "=");

	for (char **e = *l; e && *e; e++)
		if (strncmp(*e, entry, n) == 0 && (*e)[n] == '=') {
			char *d = strdup(entry);

			if (!d)
				return -ENOMEM;
			free(*e);
			*e = d;
			return 0;
		}
	return strv_push(l, entry);
}

/*
 * Only env.pass names from the caller, env.set, and what cordon sets (HOME, a PATH when none
 * passed, the proxy variables): nothing else of the caller's environment crosses.
 */
static int build_env(const struct policy *p, const struct compile_ctx *ctx, json_t *plan,
		     struct field_error *err)
{
	_cleanup_strv_free_ char **env = NULL;
	_cleanup_json_ json_t *a = json_array();
	_cleanup_free_ char *home = NULL;
	int r;

	if (!a)
		return -ENOMEM;
	for (char **name = p->env.pass; name && *name; name++) {
		size_t n = strlen(*name);

		for (char *const *e = ctx->envp; e && *e; e++)
			if (strncmp(*e, *name, n) == 0 && (*e)[n] == '=') {
				r = env_put(&env, *e);
				if (r < 0)
					return r;
				break;
			}
	}
	for (char **s = p->env.set; s && *s; s++) {
		r = env_put(&env, *s);
		if (r < 0)
			return r;
	}
	if (!strv_contains(env, "PATH")) {
		bool has = false;

		for (char **e = env; e && *e; e++)
			if (startswith(*e, "PATH="))
				has = true;
		if (!has) {
			r = env_put(&env, DEFAULT_PATH);
			if (r < 0)
				return r;
		}
	}
	home = strdup_printf("HOME=%s", ctx->home);
	if (!home)
		return -ENOMEM;
	r = env_put(&env, home);
	if (r < 0)
		return r;
	if (p->net.mode == POLICY_NETWORK_PROXY) {
		static const char *const vars[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
						    "https_proxy" };

		for (size_t i = 0; i < ELEMENTSOF(vars); i++) {
			_cleanup_free_ char *v =
				strdup_printf("%s=http://127.0.0.1:%d", vars[i], PLAN_PROXY_PORT);

			if (!v)
				return -ENOMEM;
			r = env_put(&env, v);
			if (r < 0)
				return r;
		}
		r = env_put(&env, "ALL_PROXY=socks5h://127.0.0.1:3128");
		if (r >= 0)
			r = env_put(&env, "all_proxy=socks5h://127.0.0.1:3128");
		/* The proxy's own address is reached directly, never through itself. */
		if (r >= 0)
			r = env_put(&env, "NO_PROXY=localhost,127.0.0.1");
		if (r >= 0)
			r = env_put(&env, "no_proxy=localhost,127.0.0.1");
		if (r < 0)
			return r;
	}
	qsort(env, strv_length(env), sizeof(char *), cmp_env);
	for (char **e = env; e && *e; e++)
		if (json_array_append_new(a, json_string(*e)) < 0)
			return -ENOMEM;
	return json_object_set(plan, "envp", a) < 0 ? -ENOMEM : 0;
}

static int build_argv(const struct compile_ctx *ctx, json_t *plan, struct field_error *err)
{
	_cleanup_json_ json_t *a = json_array();
	size_t n = strv_length(ctx->argv);

	if (!a)
		return -ENOMEM;
	if (n == 0)
		return field_error_set(err, -EINVAL, "argv", NULL, "the command is empty");
	for (size_t i = 0; i < n; i++) {
		if (strlen(ctx->argv[i]) > ARG_MAX_BYTES)
			return field_error_set(err, -E2BIG, "argv", NULL,
					       "argument %zu is longer than %u bytes", i,
					       ARG_MAX_BYTES);
		if (json_array_append_new(a, json_string(ctx->argv[i])) < 0)
			return -ENOMEM;
	}
	return json_object_set(plan, "argv", a) < 0 ? -ENOMEM : 0;
}

/* argv and envp: what differs between requests that share everything else. */
static int build_process(const struct policy *p, const struct compile_ctx *ctx, json_t *plan,
			 struct field_error *err)
{
	int r = build_argv(ctx, plan, err);

	return r < 0 ? r : build_env(p, ctx, plan, err);
}

static int build_cwd(struct compiler *c)
{
	_cleanup_free_ char *cwd = NULL;
	const char *ccwd = c->ctx->cwd;

	/*
	 * The caller's cwd where the sandbox shows it (through the innermost bind containing it,
	 * unless denied); else the workspace; else $HOME.
	 */
	{
		const struct bind *best = NULL;
		bool denied = false;

		for (size_t i = 0; i < c->n_binds; i++) {
			const struct bind *b = &c->binds[i];

			if (!b->absent && !b->link && policy_path_under(ccwd, b->host) &&
			    (!best || strlen(b->host) > strlen(best->host)))
				best = b;
		}
		for (char **d = c->p->fs.deny; d && *d; d++)
			if (policy_path_under(ccwd, *d))
				denied = true;
		if (best && !denied) {
			cwd = strdup_printf("%s%s", best->target,
					    streq(best->host, ccwd) ? ""
								    : ccwd + strlen(best->host));
			if (!cwd)
				return -ENOMEM;
		}
	}
	for (size_t i = 0; i < c->n_binds && !cwd; i++)
		if (c->p->fs.workspace.present &&
		    streq(c->binds[i].host, c->p->fs.workspace.path) && !c->binds[i].absent) {
			cwd = strdup(c->binds[i].target);
			if (!cwd)
				return -ENOMEM;
		}
	if (!cwd)
		cwd = strdup(c->ctx->home);
	if (!cwd)
		return -ENOMEM;
	return json_object_set_new(c->out->plan, "cwd", json_string(cwd)) < 0 ? -ENOMEM : 0;
}

/* What policy_recompile() needs to find every bind source again: what each path was. */
static int record_sources(struct compiler *c)
{
	struct compiled_plan *out = c->out;

	out->sources = calloc(c->n_binds, sizeof(*out->sources));
	if (c->n_binds > 0 && !out->sources)
		return -ENOMEM;
	for (size_t i = 0; i < c->n_binds; i++) {
		const struct bind *b = &c->binds[i];
		struct plan_source *s = &out->sources[out->n_sources++];

		*s = (struct plan_source){ .absent = b->absent,
					   .follow = b->followed,
					   .rw = b->rw,
					   .fd_index = b->fd_index };
		s->host = strdup(b->host);
		s->target = strdup(b->target);
		if (!s->host || !s->target)
			return -ENOMEM;
		if (b->seen_link) {
			s->link = strdup(b->seen_link);
			if (!s->link)
				return -ENOMEM;
		}
	}
	return 0;
}

int policy_compile(const struct policy *policy, const struct compile_ctx *ctx,
		   struct compiled_plan **ret, struct field_error *err)
{
	_cleanup_compiled_plan_ struct compiled_plan *out = calloc(1, sizeof(*out));
	struct compiler c = { .ctx = ctx, .err = err, .host.root_fd = -1 };
	const char *root = ctx->host_root ? ctx->host_root : "/";
	int r;

	if (!out)
		return -ENOMEM;
	out->plan = json_object();
	if (!out->plan)
		return -ENOMEM;
	c.out = out;

	r = policy_validate(policy, err);
	if (r < 0)
		return r;
	c.p = policy;
	if (!policy->resolved) {
		/* Resolve a copy; a policy the caller resolved already is used as it is. */
		r = policy_copy(policy, &c.owned);
		if (r < 0)
			goto finish;
		r = policy_resolve(c.owned, ctx, err);
		if (r < 0)
			goto finish;
		c.p = c.owned;
	}
	out->max_output_bytes = c.p->limits.max_output_bytes;

	if (policy_network_rank(c.p->net.mode) > policy_network_rank(ctx->caps.floor_max_network)) {
		r = field_error_set(err, -EPERM, "network.mode", NULL,
				    "the launcher's admin floor allows at most \"%s\"",
				    policy_network_to_string(ctx->caps.floor_max_network));
		goto finish;
	}
	c.host.root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (c.host.root_fd < 0) {
		r = field_error_set(err, negative_errno(), "context.hostRoot", NULL,
				    "cannot open \"%s\"", root);
		goto finish;
	}
	c.host.in_root = !streq(root, "/");

	r = collect_binds(&c);
	if (r >= 0)
		r = open_binds(&c);
	if (r >= 0)
		r = check_home(&c);
	if (r >= 0)
		r = scan_host_exec(&c);
	if (r >= 0)
		r = build_argv(ctx, out->plan, err);
	if (r >= 0)
		r = build_cwd(&c);
	if (r >= 0)
		r = build_env(c.p, ctx, out->plan, err);
	if (r >= 0)
		r = json_object_set_new(out->plan, "hostname", json_string(POLICY_HOSTNAME)) < 0
			    ? -ENOMEM
			    : 0;
	if (r >= 0)
		r = build_mounts(&c);
	if (r >= 0 && !c.host.in_root)
		r = build_mount_ns(&c);
	if (r >= 0)
		r = build_landlock(&c);
	if (r >= 0)
		r = build_seccomp(&c);
	if (r >= 0)
		r = build_limits(&c);
	if (r >= 0)
		r = json_object_set_new(out->plan, "network",
					json_string(policy_network_to_string(c.p->net.mode))) < 0
			    ? -ENOMEM
			    : 0;
	if (r >= 0 && c.p->net.mode == POLICY_NETWORK_PROXY)
		r = json_object_set_new(out->plan, "proxyPort", json_integer(PLAN_PROXY_PORT)) < 0
			    ? -ENOMEM
			    : 0;
	if (r >= 0)
		r = json_object_set_new(out->plan, "dieWithRequester", json_true()) < 0 ? -ENOMEM
											: 0;
	if (r >= 0)
		r = record_sources(&c);
finish:
	compiler_done(&c);
	if (r == -ENOMEM)
		return field_error_set(err, r, "", NULL, "out of memory");
	if (r < 0)
		return r;
	*ret = TAKE_PTR(out);
	return 0;
}

void compiled_plan_close_sources(struct compiled_plan *p)
{
	for (size_t i = 0; i < p->n_sources; i++) {
		int k = p->sources[i].fd_index;

		if (k >= 0 && (size_t)k < p->n_fds)
			p->fds[k] = safe_close(p->fds[k]);
	}
	for (size_t i = 0; i < p->n_host_exec; i++) {
		int k = p->host_exec_fds[i];

		if (k >= 0 && (size_t)k < p->n_fds)
			p->fds[k] = safe_close(p->fds[k]);
	}
}

/*
 * Find source s again as open_binds() found it. Returns 1 and *ret_fd (-1 when s has no fd)
 * when the path is what it was, 0 when it changed in a way that shapes the plan (appeared,
 * vanished, another symlink), < 0 on other errors.
 */
static int reopen_source(const struct host *h, const struct plan_source *s, int *ret_fd)
{
	_cleanup_close_ int fd = -1;
	char buf[PATH_MAX];
	struct stat st;
	ssize_t n;
	int r;

	*ret_fd = -1;
	r = host_open(h, s->host, O_PATH | O_NOFOLLOW, &fd);
	if (r == -ENOENT || r == -ENOTDIR)
		return s->absent && !s->link;
	if (r < 0)
		return r;
	if (s->absent && !s->link)
		return 0;
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISLNK(st.st_mode)) {
		if (s->link)
			return 0;
		*ret_fd = TAKE_FD(fd);
		return 1;
	}
	if (!s->link)
		return 0;
	n = readlinkat(fd, "", buf, sizeof(buf) - 1);
	if (n < 0)
		return negative_errno();
	buf[n] = '\0';
	if (!streq(buf, s->link))
		return 0;
	if (!s->follow)
		return 1; /* a symlink that stays a symlink: no fd */
	fd = safe_close(fd);
	r = host_open(h, s->host, O_PATH, &fd);
	if (r == -ENOENT || r == -ENOTDIR || r == -ELOOP)
		return s->absent;
	if (r < 0)
		return r;
	if (s->absent)
		return 0;
	*ret_fd = TAKE_FD(fd);
	return 1;
}

/*
 * The host-executed paths, scanned again in the binds as reopened (nothing is made now): the same
 * list as the cached plan's or -ESTALE (a path appeared, vanished, or a submodule came). Each
 * bound one's fd goes to its slot in reopened.
 */
static int rescan_host_exec(const struct policy *policy, const struct compiled_plan *cached,
			    const struct compile_ctx *ctx, const struct host *h, int *reopened,
			    struct field_error *err)
{
	_cleanup_free_ struct policy_host_exec_bind *hb =
		calloc(cached->n_sources + 1, sizeof(*hb));
	_cleanup_host_exec_list_ struct policy_host_exec_list *l = NULL;
	_cleanup_free_ char *key = NULL;
	const struct policy_host_exec_ctx hctx = {
		.p = policy,
		.cwd = ctx->cwd,
		.home = ctx->home,
		.envp = ctx->envp,
		.host_root_fd = h->root_fd,
		.in_root = h->in_root,
	};
	size_t n = 0;
	int r;

	if (!hb)
		return -ENOMEM;
	for (size_t i = 0; i < cached->n_sources; i++) {
		const struct plan_source *s = &cached->sources[i];

		if (s->fd_index >= 0 && (size_t)s->fd_index < cached->n_fds &&
		    reopened[s->fd_index] >= 0)
			hb[n++] = (struct policy_host_exec_bind){ .fd = reopened[s->fd_index],
								  .host = s->host,
								  .target = s->target,
								  .rw = s->rw };
	}
	r = policy_host_exec_scan(&hctx, hb, n, &l, err);
	if (r < 0)
		return r == -ENOMEM ? r : -ESTALE; /* let a full compile report it */
	key = policy_host_exec_key(l);
	if (!key)
		return -ENOMEM;
	if (!streq_ptr(key, cached->host_exec_key) || l->n != cached->n_host_exec)
		return -ESTALE;
	for (size_t i = 0; i < l->n; i++) {
		int k = cached->host_exec_fds[i];

		if (k < 0)
			continue;
		if ((size_t)k >= cached->n_fds || l->items[i].fd < 0 || reopened[k] >= 0)
			return -ESTALE;
		reopened[k] = TAKE_FD(l->items[i].fd);
	}
	return 0;
}

int policy_recompile(const struct policy *policy, const struct compiled_plan *cached,
		     const struct compile_ctx *ctx, struct compiled_plan **ret,
		     struct field_error *err)
{
	_cleanup_compiled_plan_ struct compiled_plan *out = calloc(1, sizeof(*out));
	_cleanup_free_ int *reopened = NULL;
	struct host h = { .root_fd = -1 };
	const char *root = ctx->host_root ? ctx->host_root : "/";
	int r = 0;

	if (!out)
		return -ENOMEM;
	if (!policy->resolved)
		return -EINVAL;
	reopened = malloc((cached->n_fds ? cached->n_fds : 1) * sizeof(int));
	if (!reopened)
		return -ENOMEM;
	for (size_t i = 0; i < cached->n_fds; i++)
		reopened[i] = -1;

	h.root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (h.root_fd < 0)
		return -ESTALE; /* let a full compile report it */
	h.in_root = !streq(root, "/");
	for (size_t i = 0; i < cached->n_sources && r >= 0; i++) {
		const struct plan_source *s = &cached->sources[i];
		int fd = -1;

		r = reopen_source(&h, s, &fd);
		if (r == 0)
			r = -ESTALE;
		if (r < 0)
			break;
		if ((s->fd_index >= 0) != (fd >= 0) ||
		    (s->fd_index >= 0 && (size_t)s->fd_index >= cached->n_fds)) {
			safe_close(fd);
			r = -ESTALE;
			break;
		}
		if (fd >= 0)
			reopened[s->fd_index] = fd;
	}
	if (r >= 0)
		r = rescan_host_exec(policy, cached, ctx, &h, reopened, err);
	safe_close(h.root_fd);

	/* The fds in the cached order: bind sources opened now, the rest (the seccomp program, a
	 * sealed memfd the launcher reads with pread) shared. */
	for (size_t i = 0; i < cached->n_fds && r >= 0; i++) {
		int fd = reopened[i];

		reopened[i] = -1;
		if (fd < 0 && cached->fds[i] >= 0)
			fd = fd_dup_cloexec(cached->fds[i], 3);
		if (fd < 0) {
			r = fd == -1 ? -ESTALE : fd;
			break;
		}
		r = compiled_plan_add_fd(out, fd, cached->fd_what[i]);
	}
	for (size_t i = 0; i < cached->n_fds; i++)
		safe_close(reopened[i]);
	if (r < 0)
		return r == -ESTALE
			       ? r
			       : field_error_set(err, r, "filesystem", NULL, "%s", strerror(-r));

	/* A shallow copy: the caller sets top-level members (stdio, cwd) on it, never deeper. */
	out->plan = json_copy(cached->plan);
	if (!out->plan)
		return -ENOMEM;
	r = build_process(policy, ctx, out->plan, err);
	if (r < 0)
		return r;
	out->max_output_bytes = cached->max_output_bytes;
	if (cached->seccomp_key) {
		out->seccomp_key = strdup(cached->seccomp_key);
		if (!out->seccomp_key)
			return -ENOMEM;
	}
	if ((cached->unenforced && !(out->unenforced = strv_copy(cached->unenforced))) ||
	    (cached->skipped && !(out->skipped = strv_copy(cached->skipped))) ||
	    (cached->host_exec_absent &&
	     !(out->host_exec_absent = strv_copy(cached->host_exec_absent))))
		return -ENOMEM;
	*ret = TAKE_PTR(out);
	return 0;
}
