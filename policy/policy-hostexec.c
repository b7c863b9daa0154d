/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/system.h"
#include "common/util.h"
#include "policy/policy-hostexec.h"

#define GIT_DEPTH_MAX 8	    /* git directories reached through another (submodules in submodules) */
#define MODULES_DEPTH_MAX 8 /* directories of a submodule name with slashes ("lib/a/b") */
#define MODULES_ENTRIES_MAX 1024 /* entries read from one .git/modules directory */
#define INCLUDE_DEPTH_MAX 10	 /* git's own limit on nested includes */
#define CONFIG_MAX (1024U * 1024U)
#define POINTER_MAX 4096U /* a .git file or a commondir file */
#define CWD_DEPTH_MAX 64

/*
 * The list (docs/POLICY.md, HOST-EXECUTED PATHS, says why each is here and why others are not).
 * Entries with in_dir are looked for in every scanned directory; the others are git's, found in
 * each git directory or named by a configuration.
 */
const struct policy_host_exec_entry policy_host_exec_entries[] = {
	{ ".git", false,
	  "git finds a repository through a .git file (a linked worktree's or a submodule's "
	  "checkout) and a git directory's commondir file",
	  "a sandbox could point git at a repository it wrote, whose configuration and hooks git "
	  "then uses" },
	{ ".git/config", false,
	  "git runs the commands a repository's config and config.worktree name (core.fsmonitor, "
	  "core.pager, core.editor, core.sshCommand, filter and diff drivers, aliases) and reads "
	  "the files they include",
	  "a sandbox could make your next git status run its command" },
	{ ".git/hooks", false, "git runs a repository's hooks on commit, checkout, merge and push",
	  "a sandbox could plant a hook that your next git commit runs" },
	{ ".git/info", false,
	  "git reads info/attributes (which drivers apply to which files) and info/exclude "
	  "(which files git status does not show)",
	  "a sandbox could hide the files it made from git status, or choose which of your "
	  "drivers run on which files" },
	{ ".git/modules", false,
	  "git status in a repository runs git in each submodule, whose git directory (config, "
	  "hooks, info) is in .git/modules",
	  "the risks of .git/config, .git/hooks and .git/info, for every submodule" },
	{ ".git/worktrees", false,
	  "git in a linked worktree elsewhere reads its commondir and config.worktree from "
	  ".git/worktrees",
	  "a sandbox could point git in your other worktrees at a configuration it wrote" },
	{ "include.path", false,
	  "git reads the files that include.path and includeIf.*.path name (in the repository's "
	  "configuration and in your global one) as configuration",
	  "the risks of .git/config" },
	{ "core.hooksPath", false,
	  "git runs hooks from the directory core.hooksPath names instead of .git/hooks",
	  "the risks of .git/hooks" },
	{ ".envrc", true,
	  "direnv runs it in your shell when you enter the directory (once allowed; a changed "
	  "file needs direnv allow again)",
	  "a sandbox could run commands in your shell the next time you enter the directory and "
	  "allow it" },
	{ ".env", true,
	  "direnv (dotenv, load_dotenv) exports it into your shell; autoenv and zsh's dotenv "
	  "plugin source it as a script when you enter the directory",
	  "a sandbox could set PATH, LD_PRELOAD or PROMPT_COMMAND, or run commands, in your next "
	  "shell in the directory" },
	{ ".vscode", true,
	  "VS Code, in a trusted folder, runs the programs its settings name (interpreters, "
	  "formatters, language servers, terminal profiles) and tasks set to run on folder open",
	  "a sandbox could run a program the next time you open the folder" },
	{ ".idea", true,
	  "JetBrains IDEs run the SDKs, interpreters and startup tasks a project's settings name "
	  "when it opens",
	  "a sandbox could run a program the next time you open the project" },
	{ ".devcontainer", true,
	  "the Dev Containers tools run its initializeCommand on the host when you open the "
	  "folder in a container",
	  "a sandbox could run a command on the host, outside any container" },
	{ ".devcontainer.json", true, "as .devcontainer", "as .devcontainer" },
	{ ".husky", true,
	  "husky's hooks (core.hooksPath .husky/_) run the scripts in .husky on commit and push",
	  "the risks of .git/hooks" },
	{ ".pre-commit-config.yaml", true,
	  "pre-commit's hook runs the hooks this file lists (a local hook: any command) on commit",
	  "the risks of .git/hooks" },
	{ "mise.toml", true,
	  "mise, activated in your shell, runs the hooks and env scripts a trusted configuration "
	  "names when you enter the directory",
	  "a sandbox could run commands in your shell the next time you enter the directory" },
	{ ".mise.toml", true, "as mise.toml", "as mise.toml" },
	{ "mise.local.toml", true, "as mise.toml", "as mise.toml" },
	{ ".mise.local.toml", true, "as mise.toml", "as mise.toml" },
	{ ".mise", true, "as mise.toml (.mise/config.toml)", "as mise.toml" },
	{ ".config/mise.toml", true, "as mise.toml", "as mise.toml" },
	{ ".config/mise", true, "as mise.toml (.config/mise/config.toml, conf.d)", "as mise.toml" },
};
const size_t policy_host_exec_entries_count = ELEMENTSOF(policy_host_exec_entries);

const struct policy_host_exec_entry *policy_host_exec_entry_find(const char *id)
{
	for (size_t i = 0; i < ELEMENTSOF(policy_host_exec_entries); i++)
		if (streq(policy_host_exec_entries[i].id, id))
			return &policy_host_exec_entries[i];
	return NULL;
}

bool policy_host_exec_allowed(const struct policy *p, const char *id)
{
	return strv_contains(p->fs.host_exec_allow, POLICY_HOST_EXEC_ALL) ||
	       strv_contains(p->fs.host_exec_allow, id);
}

const char *policy_host_exec_how_to_string(enum policy_host_exec_how h)
{
	return h == POLICY_HOST_EXEC_HIDE  ? "hide"
	       : h == POLICY_HOST_EXEC_PIN ? "pin"
					   : "read-only";
}

const char *policy_host_exec_state_to_string(enum policy_host_exec_state s)
{
	switch (s) {
	case POLICY_HOST_EXEC_PRESENT:
		return "present";
	case POLICY_HOST_EXEC_CREATED:
		return "created";
	case POLICY_HOST_EXEC_ABSENT:
		return "absent";
	case POLICY_HOST_EXEC_SYMLINK:
		return "symlink";
	}
	return "?";
}

/* ---- matching a relative path (for a backend that brings changes back) ---- */

/* Does the component list c[0..n) begin with the components of prefix ("a/b")? */
static bool components_begin(char *const *c, size_t n, const char *prefix)
{
	size_t i = 0;

	for (const char *s = prefix; *s; i++) {
		size_t k = strcspn(s, "/");

		if (i >= n || strlen(c[i]) != k || strncmp(c[i], s, k) != 0)
			return false;
		s += k;
		if (*s == '/')
			s++;
	}
	return true;
}

static const char *effective(const struct policy *p, const char *id)
{
	return policy_host_exec_allowed(p, id) ? NULL : id;
}

/* c[0..n): what follows a ".git" component. */
static const char *match_in_gitdir(const struct policy *p, char *const *c, size_t n)
{
	if (n == 0 || streq(c[0], "commondir"))
		return effective(p, ".git");
	if (streq(c[0], "config") || streq(c[0], "config.worktree"))
		return n == 1 ? effective(p, ".git/config") : NULL;
	if (streq(c[0], "hooks"))
		return effective(p, ".git/hooks");
	if (streq(c[0], "info"))
		return effective(p, ".git/info");
	if (streq(c[0], "worktrees") && n == 3 &&
	    (streq(c[2], "commondir") || streq(c[2], "config.worktree")))
		return effective(p, ".git/worktrees");
	if (streq(c[0], "modules") && n >= 3 && !policy_host_exec_allowed(p, ".git/modules")) {
		/* A submodule's name may have slashes: any deeper component of a git directory's
		 * own (conservatively, even one that is part of a name). */
		for (size_t i = 2; i < n; i++) {
			const char *id = NULL;

			if (i == n - 1 && (streq(c[i], "config") || streq(c[i], "config.worktree")))
				id = ".git/config";
			else if (i == n - 1 && streq(c[i], "commondir"))
				id = ".git";
			else if (streq(c[i], "hooks"))
				id = ".git/hooks";
			else if (streq(c[i], "info"))
				id = ".git/info";
			if (id && effective(p, id))
				return id;
		}
	}
	return NULL;
}

const char *policy_host_exec_match(const struct policy *p, const char *rel)
{
	_cleanup_strv_free_ char **c = NULL;
	size_t n = 0;

	c = calloc(strlen(rel) / 2 + 2, sizeof(char *));
	if (!c)
		return NULL;
	for (const char *s = rel; *s;) {
		size_t k = strcspn(s, "/");

		if (k > 0 && !(k == 1 && s[0] == '.')) {
			c[n] = strndup(s, k);
			if (!c[n])
				return NULL;
			n++;
		}
		s += k;
		while (*s == '/')
			s++;
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t e = 0; e < ELEMENTSOF(policy_host_exec_entries); e++) {
			const struct policy_host_exec_entry *en = &policy_host_exec_entries[e];

			if (en->in_dir && components_begin(c + i, n - i, en->id) &&
			    effective(p, en->id))
				return en->id;
		}
		if (streq(c[i], ".git"))
			return match_in_gitdir(p, c + i + 1, n - i - 1);
	}
	return NULL;
}

/* ---- the scan ---- */

struct root {
	const struct policy_host_exec_bind *b;
	char *canon; /* where its fd leads, every symlink resolved; NULL: not a place */
	bool dir;
};

struct scan {
	const struct policy_host_exec_ctx *ctx;
	struct root *roots;
	size_t n_roots;
	struct policy_host_exec_list *out;
	char **seen;	     /* "bind:canonical path" of the git directories scanned */
	char **global_hooks; /* relative core.hooksPath values of the global configuration */
	struct field_error *err;
};

enum create {
	CREATE_NONE,
	CREATE_FILE,
	CREATE_DIR,
};

static void item_done(struct policy_host_exec_item *it)
{
	free(it->host);
	free(it->target);
	free(it->why);
	safe_close(it->fd);
}

struct policy_host_exec_list *policy_host_exec_list_free(struct policy_host_exec_list *l)
{
	if (!l)
		return NULL;
	for (size_t i = 0; i < l->n; i++)
		item_done(&l->items[i]);
	free(l->items);
	free(l);
	return NULL;
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *join(const char *a, const char *b)
{
	if (isempty(b))
		return strdup(a);
	if (isempty(a))
		return strdup(b);
	return strdup_printf("%s%s%s", a, streq(a, "/") ? "" : "/", b);
}

/* The part of path below dir ("" for dir itself); path must lie under dir. */
static const char *below(const char *path, const char *dir)
{
	if (streq(dir, "/"))
		return path + 1;
	return path[strlen(dir)] ? path + strlen(dir) + 1 : "";
}

static int strv_add(char ***l, const char *s)
{
	size_t n = strv_length(*l);
	char **nl;

	if (strv_contains(*l, s))
		return 0;
	nl = reallocarray(*l, n + 2, sizeof(char *));
	if (!nl)
		return -ENOMEM;
	*l = nl;
	nl[n] = strdup(s);
	nl[n + 1] = NULL;
	return nl[n] ? 0 : -ENOMEM;
}

static int open_beneath(int dirfd, const char *rel, int flags)
{
	return fd_openat2(dirfd, isempty(rel) ? "." : rel, flags,
			  RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

/* An absolute host path, as the compiler looks paths up (inside a test root if it has one). */
static int open_host(const struct policy_host_exec_ctx *ctx, const char *path, int flags)
{
	return policy_host_open(ctx->host_root_fd, ctx->in_root, path, flags);
}

/*
 * A regular file's contents, at most max bytes. Never blocks on what a sandbox may have left in
 * place of a file (a fifo, a device): anything but a regular file reads as absent.
 */
static int read_regular(int fd, size_t max, char **ret, size_t *ret_len)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -ENOENT;
	return read_full_fd(fd, max, ret, ret_len);
}

static int read_beneath(int dirfd, const char *rel, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd =
		open_beneath(dirfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return fd;
	return read_regular(fd, max, ret, ret_len);
}

static int read_host(const struct policy_host_exec_ctx *ctx, const char *path, size_t max,
		     char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = open_host(ctx, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return fd;
	return read_regular(fd, max, ret, ret_len);
}

/* A pointer file's one line (a .git file, a commondir file), without its line end. */
static int read_pointer(int dirfd, const char *rel, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t n = 0;
	int r = read_beneath(dirfd, rel, POINTER_MAX, &buf, &n);

	if (r < 0)
		return r;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	if (n == 0 || memchr(buf, '\0', n) || strchr(buf, '\n'))
		return -EINVAL;
	*ret = TAKE_PTR(buf);
	return 0;
}

static bool opted_out(const struct scan *s, const struct policy_host_exec_entry *e)
{
	return policy_host_exec_allowed(s->ctx->p, e->id);
}

static bool denied(const struct scan *s, const char *host)
{
	for (char **d = s->ctx->p->fs.deny; d && *d; d++)
		if (policy_path_under(host, *d))
			return true;
	return false;
}

/*
 * Is target, in root's view, covered by another bind mounted deeper (a read-only bind there
 * keeps it read-only; a writable one is a root of its own and is scanned as such)?
 */
static bool shadowed(const struct scan *s, size_t root, const char *target)
{
	const char *rt = s->roots[root].b->target;

	for (size_t i = 0; i < s->n_roots; i++) {
		const char *t = s->roots[i].b->target;

		if (i != root && s->roots[i].b->fd >= 0 && !streq(t, rt) &&
		    policy_path_under(t, rt) && policy_path_under(target, t))
			return true;
	}
	return false;
}

static const struct policy_host_exec_item *find_item(const struct scan *s, const char *target)
{
	for (size_t i = 0; i < s->out->n; i++)
		if (streq(s->out->items[i].target, target))
			return &s->out->items[i];
	return NULL;
}

/* Is target below a read-only or hidden item (so already out of the sandbox's reach)? */
static bool covered(const struct scan *s, const char *target)
{
	for (size_t i = 0; i < s->out->n; i++) {
		const struct policy_host_exec_item *it = &s->out->items[i];

		if (it->how != POLICY_HOST_EXEC_PIN &&
		    (it->state == POLICY_HOST_EXEC_PRESENT ||
		     it->state == POLICY_HOST_EXEC_CREATED) &&
		    policy_path_under(target, it->target))
			return true;
	}
	return false;
}

static int too_many(const struct scan *s)
{
	return field_error_set(s->err, -E2BIG, "filesystem.hostExecuted", NULL,
			       "more than %d host-executed paths in the writable directories; "
			       "opt some out with filesystem.hostExecuted.allow",
			       POLICY_HOST_EXEC_ITEMS_MAX);
}

static int push(struct scan *s, struct policy_host_exec_item *it)
{
	struct policy_host_exec_list *l = s->out;
	struct policy_host_exec_item *n;

	if (l->n >= POLICY_HOST_EXEC_ITEMS_MAX) {
		item_done(it);
		return too_many(s);
	}
	n = reallocarray(l->items, l->n + 1, sizeof(*n));
	if (!n) {
		item_done(it);
		return -ENOMEM;
	}
	l->items = n;
	l->items[l->n++] = *it;
	return 0;
}

/* Make rel (absent) in root empty: a file or a directory, as the user. */
static int make_empty(const struct root *r, const char *rel, enum create kind)
{
	_cleanup_free_ char *parent = strdup(rel);
	_cleanup_close_ int dfd = -1;
	const char *name = rel;
	char *slash;
	int fd;

	if (!parent)
		return -ENOMEM;
	slash = strrchr(parent, '/');
	if (slash) {
		*slash = '\0';
		name = slash + 1;
	} else {
		parent[0] = '\0';
	}
	dfd = open_beneath(r->b->fd, parent, O_PATH | O_DIRECTORY | O_NOFOLLOW);
	if (dfd < 0)
		return dfd;
	if (kind == CREATE_DIR)
		return mkdirat(dfd, name, 0777) < 0 ? negative_errno() : 0;
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		return negative_errno();
	safe_close(fd);
	return 0;
}

/*
 * rel in root: listed as what it is now (made empty first when create asks and the context
 * allows it), unless the entry is opted out, the path is denied, the root's view of it is
 * another bind's, or it is listed or covered already.
 */
static int add(struct scan *s, size_t root, const char *rel, const struct policy_host_exec_entry *e,
	       enum policy_host_exec_how how, enum create create, const char *why)
{
	const struct root *r = &s->roots[root];
	struct policy_host_exec_item it = {
		.entry = e, .how = how, .bind = root, .fd = -1, .creatable = create != CREATE_NONE
	};
	struct stat st;
	int fd;

	if (isempty(rel) || opted_out(s, e))
		return 0;
	it.host = join(r->b->host, rel);
	it.target = join(r->b->target, rel);
	if (why)
		it.why = strdup(why);
	if (!it.host || !it.target || (why && !it.why)) {
		item_done(&it);
		return -ENOMEM;
	}
	if (denied(s, it.host) || shadowed(s, root, it.target) || find_item(s, it.target) ||
	    covered(s, it.target)) {
		item_done(&it);
		return 0;
	}
	fd = open_beneath(r->b->fd, rel, O_PATH | O_NOFOLLOW);
	if ((fd == -ENOENT || fd == -ENOTDIR) && create != CREATE_NONE && s->ctx->create &&
	    make_empty(r, rel, create) >= 0) {
		fd = open_beneath(r->b->fd, rel, O_PATH | O_NOFOLLOW);
		it.state = POLICY_HOST_EXEC_CREATED;
	}
	if (fd == -ENOENT || fd == -ENOTDIR) {
		it.state = POLICY_HOST_EXEC_ABSENT;
	} else if (fd == -ELOOP) {
		it.state = POLICY_HOST_EXEC_SYMLINK;
	} else if (fd < 0) {
		int r2 = field_error_set(s->err, fd, "filesystem.hostExecuted", NULL,
					 "cannot open \"%s\": %s", it.host, strerror(-fd));

		item_done(&it);
		return r2;
	} else if (fstat(fd, &st) < 0) {
		int r2 = negative_errno();

		safe_close(fd);
		item_done(&it);
		return r2;
	} else if (S_ISLNK(st.st_mode)) {
		safe_close(fd);
		it.state = POLICY_HOST_EXEC_SYMLINK;
	} else if (how == POLICY_HOST_EXEC_HIDE) {
		safe_close(fd); /* an empty mount goes over it: nothing of it is bound */
	} else {
		it.fd = fd;
	}
	return push(s, &it);
}

/* canon (a canonical host path) in each writable bind that shows it, as e. */
static int add_canonical(struct scan *s, const char *canon, const struct policy_host_exec_entry *e,
			 enum policy_host_exec_how how, enum create create, const char *why)
{
	for (size_t i = 0; i < s->n_roots; i++) {
		const struct root *r = &s->roots[i];
		int k;

		if (r->b->rw && r->dir && r->canon && policy_path_under(canon, r->canon) &&
		    (k = add(s, i, below(canon, r->canon), e, how, create, why)) < 0)
			return k;
	}
	return 0;
}

/*
 * Where a path that git's files name leads (an absolute host path; "." and ".." resolved as the
 * kernel does). A symlink on its way that lies in a writable bind could be turned elsewhere by
 * the sandbox: it is listed (as e, refused unless opted out) and 0 returned. Otherwise 1 with
 * *ret_canon: the canonical path of the nearest existing ancestor with the missing rest appended
 * (the whole path when it exists); 0 when it cannot be told.
 */
static int resolve_named(struct scan *s, const char *path, const struct policy_host_exec_entry *e,
			 const char *why, char **ret_canon)
{
	_cleanup_free_ char *prefix = NULL, *canon = NULL;
	const char *rest = NULL;
	size_t plen = 0;
	int r;

	if (!path_is_absolute(path) || strlen(path) >= PATH_MAX)
		return 0;
	prefix = malloc(strlen(path) + 2);
	if (!prefix)
		return -ENOMEM;
	strcpy(prefix, "/");
	plen = 1;
	for (const char *c = path;;) {
		_cleanup_close_ int fd = -1;
		struct stat st;
		size_t k;

		while (*c == '/')
			c++;
		if (!*c)
			break;
		k = strcspn(c, "/");
		if (k == 1 && c[0] == '.') {
			c += k;
			continue;
		}
		if (plen > 1)
			prefix[plen++] = '/';
		memcpy(prefix + plen, c, k);
		plen += k;
		prefix[plen] = '\0';
		fd = open_host(s->ctx, prefix, O_PATH | O_NOFOLLOW);
		if (fd < 0) {
			rest = c; /* absent from here on */
			break;
		}
		if (fstat(fd, &st) < 0)
			return negative_errno();
		if (S_ISLNK(st.st_mode)) {
			_cleanup_free_ char *parent = strndup(prefix, plen - k - (plen - k > 1)),
					    *pcanon = NULL, *lcanon = NULL;
			_cleanup_close_ int pfd = -1;

			if (!parent)
				return -ENOMEM;
			pfd = open_host(s->ctx, isempty(parent) ? "/" : parent,
					O_PATH | O_DIRECTORY);
			if (pfd >= 0 && fd_get_path(pfd, &pcanon) >= 0) {
				bool writable = false;

				for (size_t i = 0; i < s->n_roots; i++)
					writable = writable ||
						   (s->roots[i].b->rw && s->roots[i].canon &&
						    policy_path_under(pcanon, s->roots[i].canon));
				if (writable) {
					_cleanup_free_ char *name = strndup(c, k);

					lcanon = name ? join(pcanon, name) : NULL;
					if (!lcanon)
						return -ENOMEM;
					r = add_canonical(s, lcanon, e, POLICY_HOST_EXEC_READ_ONLY,
							  CREATE_NONE, why);
					return r < 0 ? r : 0;
				}
			}
		}
		c += k;
	}
	if (rest) {
		_cleanup_close_ int fd = -1;

		for (const char *c = rest; *c; c += strcspn(c, "/"), c += strspn(c, "/"))
			if (c[0] == '.' &&
			    (c[1] == '/' || !c[1] || (c[1] == '.' && (c[2] == '/' || !c[2]))))
				return 0; /* "." or ".." below something absent: leave it */
		plen -= strcspn(rest, "/");
		if (plen > 1)
			plen--;
		prefix[plen] = '\0';
		fd = open_host(s->ctx, prefix, O_PATH | O_DIRECTORY);
		if (fd < 0 || fd_get_path(fd, &canon) < 0)
			return 0;
		*ret_canon = join(canon, rest);
	} else {
		_cleanup_close_ int fd = open_host(s->ctx, path, O_PATH);

		if (fd < 0 || fd_get_path(fd, &canon) < 0)
			return 0;
		*ret_canon = TAKE_PTR(canon);
	}
	if (!*ret_canon)
		return -ENOMEM;
	/* What git named may end in '/' or double one: keep the path normalized. */
	{
		char *w = *ret_canon;

		for (const char *p = *ret_canon; *p; p++)
			if (!(p[0] == '/' && (p[1] == '/' || (!p[1] && w != *ret_canon))))
				*w++ = *p;
		*w = '\0';
	}
	return 1;
}

/* A path that git's files name, protected as e wherever a writable bind shows it. */
static int add_named(struct scan *s, const char *path, const struct policy_host_exec_entry *e,
		     enum policy_host_exec_how how, enum create create, const char *why)
{
	_cleanup_free_ char *canon = NULL;
	int r;

	if (opted_out(s, e))
		return 0;
	r = resolve_named(s, path, e, why, &canon);
	if (r <= 0)
		return r;
	return add_canonical(s, canon, e, how, create, why);
}

/* ---- git's configuration files ---- */

struct gitcfg {
	char **includes;    /* include.path, includeIf.*.path, as written */
	char **hooks_paths; /* core.hooksPath, as written */
	char *worktree;	    /* core.worktree (the last) */
	bool worktree_config;
	char **read; /* the included files read for it (each once, whatever includes it) */
};

static void gitcfg_done(struct gitcfg *g)
{
	strv_free(g->includes);
	strv_free(g->hooks_paths);
	free(g->worktree);
	strv_free(g->read);
	*g = (struct gitcfg){ 0 };
}

static bool is_key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-';
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool config_bool(const char *v)
{
	return !v || ascii_strcaseeq(v, "true") || ascii_strcaseeq(v, "yes") ||
	       ascii_strcaseeq(v, "on") || streq(v, "1");
}

static int gitcfg_value(struct gitcfg *g, const char *section, bool sub, const char *key,
			const char *value)
{
	if (((streq(section, "include") && !sub) || (streq(section, "includeif") && sub)) &&
	    streq(key, "path") && !isempty(value))
		return strv_add(&g->includes, value);
	if (streq(section, "core") && !sub && streq(key, "hookspath") && !isempty(value))
		return strv_add(&g->hooks_paths, value);
	if (streq(section, "core") && !sub && streq(key, "worktree") && !isempty(value)) {
		free(g->worktree);
		g->worktree = strdup(value);
		return g->worktree ? 0 : -ENOMEM;
	}
	if (streq(section, "extensions") && !sub && streq(key, "worktreeconfig"))
		g->worktree_config = config_bool(value);
	return 0;
}

/* A value after '=': quotes, escapes, continuations, a trailing comment; *i ends at the line's
 * end. -EINVAL where git would refuse the file. */
static int gitcfg_parse_value(const char *buf, size_t len, size_t *i, char *value)
{
	size_t n = 0, keep = 0;
	bool quoted = false;

	for (; *i < len && (buf[*i] == ' ' || buf[*i] == '\t'); (*i)++)
		;
	for (; *i < len; (*i)++) {
		char c = buf[*i];

		if (c == '\n' && !quoted)
			break;
		if (c == '\n' || c == '\0')
			return -EINVAL;
		if (c == '\\') {
			if (++*i >= len)
				return -EINVAL;
			c = buf[*i];
			if (c == '\n')
				continue;
			if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'b')
				c = '\b';
			else if (c != '"' && c != '\\')
				return -EINVAL;
			value[n++] = c;
			keep = n;
			continue;
		}
		if (c == '"') {
			quoted = !quoted;
			keep = n;
			continue;
		}
		if (!quoted && (c == '#' || c == ';')) {
			while (*i < len && buf[*i] != '\n')
				(*i)++;
			break;
		}
		value[n++] = c;
		if (quoted || (c != ' ' && c != '\t' && c != '\r'))
			keep = n;
	}
	value[keep] = '\0';
	return 0;
}

/*
 * The parts of git's config syntax that matter here: [section], [section "sub"], the old
 * [section.sub], "key = value" and a bare "key", quotes, the escapes \" \\ \n \t \b, a
 * backslash-newline continuation, # and ; comments. Where git would refuse the file, this stops
 * reading it (git then runs nothing from it either).
 */
static int gitcfg_parse(const char *buf, size_t len, struct gitcfg *g)
{
	_cleanup_free_ char *value = malloc(len + 1);
	char section[64] = "", key[64];
	bool sub = false;
	size_t i = 0, n;
	int r;

	if (!value)
		return -ENOMEM;
	while (i < len) {
		bool has_value = false;

		while (i < len &&
		       (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
			i++;
		if (i >= len)
			break;
		if (buf[i] == '#' || buf[i] == ';') {
			while (i < len && buf[i] != '\n')
				i++;
			continue;
		}
		if (buf[i] == '[') {
			n = 0;
			sub = false;
			for (i++; i < len && (is_key_char(buf[i]) || buf[i] == '.'); i++) {
				if (buf[i] == '.') {
					sub = true; /* [section.sub] */
					while (i < len && buf[i] != ']')
						i++;
					break;
				}
				if (n + 1 >= sizeof(section))
					return 0;
				section[n++] = lower(buf[i]);
			}
			section[n] = '\0';
			if (!sub && i < len && (buf[i] == ' ' || buf[i] == '\t')) {
				while (i < len && (buf[i] == ' ' || buf[i] == '\t'))
					i++;
				if (i >= len || buf[i] != '"')
					return 0;
				for (i++; i < len && buf[i] != '"'; i++) {
					if (buf[i] == '\n')
						return 0;
					if (buf[i] == '\\')
						i++;
				}
				if (i >= len)
					return 0;
				i++;
				sub = true;
			}
			if (i >= len || buf[i] != ']' || n == 0)
				return 0;
			i++;
			continue;
		}
		if (!*section || !is_key_char(buf[i]) || buf[i] == '-' ||
		    (buf[i] >= '0' && buf[i] <= '9'))
			return 0;
		for (n = 0; i < len && is_key_char(buf[i]); i++) {
			if (n + 1 >= sizeof(key))
				return 0;
			key[n++] = lower(buf[i]);
		}
		key[n] = '\0';
		while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r'))
			i++;
		if (i < len && buf[i] == '=') {
			i++;
			has_value = true;
			if (gitcfg_parse_value(buf, len, &i, value) < 0)
				return 0;
		} else if (i < len && buf[i] != '\n' && buf[i] != '#' && buf[i] != ';') {
			return 0;
		}
		r = gitcfg_value(g, section, sub, key, has_value ? value : NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

/* "~" and "~/x" (the caller's home), an absolute path, or one relative to base. NULL for the
 * forms git resolves in ways not followed here ("~user/x", "%(prefix)/x"). */
static char *git_path(const struct scan *s, const char *base, const char *v)
{
	if (streq(v, "~"))
		return strdup(s->ctx->home);
	if (startswith(v, "~/"))
		return join(s->ctx->home, v + 2);
	if (v[0] == '~' || startswith(v, "%(prefix)/"))
		return NULL;
	if (v[0] == '/')
		return strdup(v);
	return base ? join(base, v) : NULL;
}

static char *dirname_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return NULL;
	return slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
}

static int config_file(struct scan *s, const char *path, struct gitcfg *g, int depth);

/* The files a configuration includes (relative ones: to base, the including file's directory),
 * each protected where writable and read for its own includes and hooks paths. */
static int config_includes(struct scan *s, const char *base, char **includes, struct gitcfg *g,
			   int depth)
{
	const struct policy_host_exec_entry *e = policy_host_exec_entry_find("include.path");
	int r;

	for (size_t i = 0; includes && includes[i]; i++) {
		_cleanup_free_ char *path = git_path(s, base, includes[i]);

		if (!path)
			continue;
		r = add_named(s, path, e, POLICY_HOST_EXEC_READ_ONLY, CREATE_NONE,
			      "named by include.path or includeIf.*.path");
		if (r >= 0 && depth < INCLUDE_DEPTH_MAX)
			r = config_file(s, path, g, depth + 1);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A configuration file at a host path: its hooks paths join g, its includes are followed. */
static int config_file(struct scan *s, const char *path, struct gitcfg *g, int depth)
{
	_cleanup_free_ char *buf = NULL, *base = NULL;
	struct gitcfg own = { 0 };
	size_t len = 0;
	int r;

	if (strv_contains(g->read, path))
		return 0;
	r = strv_add(&g->read, path);
	if (r < 0)
		return r;
	r = read_host(s->ctx, path, CONFIG_MAX, &buf, &len);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	base = dirname_of(path);
	if (!base)
		return -ENOMEM;
	r = gitcfg_parse(buf, len, &own);
	if (r >= 0)
		r = config_includes(s, base, own.includes, g, depth);
	for (size_t i = 0; r >= 0 && own.hooks_paths && own.hooks_paths[i]; i++)
		r = strv_add(&g->hooks_paths, own.hooks_paths[i]);
	gitcfg_done(&own);
	return r;
}

/* core.hooksPath values: each directory protected where writable, made empty if missing (git
 * ignores an empty hooks directory as it does a missing one). */
static int hooks_paths(struct scan *s, char **values, const char *worktree)
{
	const struct policy_host_exec_entry *e = policy_host_exec_entry_find("core.hooksPath");
	int r;

	for (size_t i = 0; values && values[i]; i++) {
		_cleanup_free_ char *path = git_path(s, worktree, values[i]);

		if (!path)
			continue;
		r = add_named(s, path, e, POLICY_HOST_EXEC_READ_ONLY, CREATE_DIR,
			      "named by core.hooksPath");
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- git directories ---- */

static int gitdir(struct scan *s, size_t root, const char *rel, const char *worktree, int depth);

/* A git directory named by a .git file or a commondir file (an absolute host path). */
static int gitdir_named(struct scan *s, const char *path, const char *worktree, int depth)
{
	_cleanup_free_ char *canon = NULL;
	int r;

	r = resolve_named(s, path, policy_host_exec_entry_find(".git"),
			  "named by a .git file or a commondir file", &canon);
	if (r <= 0)
		return r;
	for (size_t i = 0; i < s->n_roots; i++) {
		const struct root *rt = &s->roots[i];

		if (rt->b->rw && rt->dir && rt->canon && policy_path_under(canon, rt->canon) &&
		    (r = gitdir(s, i, below(canon, rt->canon), worktree, depth)) < 0)
			return r;
	}
	return 0;
}

/* The sorted names in directory rel of root (at most MODULES_ENTRIES_MAX). */
static int list_dir(struct scan *s, size_t root, const char *rel, char ***ret)
{
	_cleanup_strv_free_ char **names = NULL;
	struct dirent *de;
	size_t count = 0;
	int fd, r = 0;
	DIR *d;

	fd = open_beneath(s->roots[root].b->fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (fd < 0)
		return fd == -ENOENT || fd == -ENOTDIR || fd == -ELOOP ? 0 : fd;
	d = fdopendir(fd);
	if (!d) {
		safe_close(fd);
		return negative_errno();
	}
	while ((de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (++count > MODULES_ENTRIES_MAX) {
			r = too_many(s);
			break;
		}
		r = strv_add(&names, de->d_name);
		if (r < 0)
			break;
	}
	closedir(d);
	if (r < 0)
		return r;
	/* In name order: a second scan must list the same paths in the same order. */
	if (names)
		qsort(names, strv_length(names), sizeof(char *), cmp_strp);
	*ret = TAKE_PTR(names);
	return 0;
}

/* .git/modules and the name directories below it (a submodule's name may have slashes). */
static int modules(struct scan *s, size_t root, const char *rel, int depth)
{
	_cleanup_strv_free_ char **names = NULL;
	int r;

	if (depth > MODULES_DEPTH_MAX)
		return 0;
	r = list_dir(s, root, rel, &names);
	for (size_t i = 0; r >= 0 && names && names[i]; i++) {
		_cleanup_free_ char *sub = join(rel, names[i]);
		_cleanup_close_ int fd = -1;
		struct stat st;

		if (!sub)
			return -ENOMEM;
		fd = open_beneath(s->roots[root].b->fd, sub, O_PATH | O_DIRECTORY | O_NOFOLLOW);
		if (fd < 0)
			continue; /* not a directory (a symlink is not followed by git either) */
		/* A git directory holds HEAD; a directory of a name with slashes does not. */
		if (fstatat(fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0)
			r = gitdir(s, root, sub, NULL, depth + 1);
		else
			r = modules(s, root, sub, depth + 1);
	}
	return r;
}

/* .git/worktrees/<name>: what git in a linked worktree elsewhere reads here. */
static int worktrees(struct scan *s, size_t root, const char *rel)
{
	const struct policy_host_exec_entry *e = policy_host_exec_entry_find(".git/worktrees");
	_cleanup_strv_free_ char **names = NULL;
	int r;

	if (opted_out(s, e))
		return 0;
	r = list_dir(s, root, rel, &names);
	for (size_t i = 0; r >= 0 && names && names[i]; i++) {
		static const char *const files[] = { "commondir", "config.worktree" };

		for (size_t k = 0; r >= 0 && k < ELEMENTSOF(files); k++) {
			_cleanup_free_ char *p = strdup_printf("%s/%s/%s", rel, names[i], files[k]);
			_cleanup_close_ int fd = -1;

			if (!p)
				return -ENOMEM;
			fd = open_beneath(s->roots[root].b->fd, p, O_PATH | O_NOFOLLOW);
			if (fd != -ENOENT && fd != -ENOTDIR) /* nothing reads what is not there */
				r = add(s, root, p, e, POLICY_HOST_EXEC_READ_ONLY, CREATE_NONE,
					NULL);
		}
	}
	return r;
}

static int gitdir_files(struct scan *s, size_t root, const char *rel)
{
	static const struct {
		const char *name, *id;
		enum policy_host_exec_how how;
		enum create create;
	} files[] = {
		{ "config", ".git/config", POLICY_HOST_EXEC_READ_ONLY, CREATE_FILE },
		{ "hooks", ".git/hooks", POLICY_HOST_EXEC_HIDE, CREATE_DIR },
		{ "info", ".git/info", POLICY_HOST_EXEC_READ_ONLY, CREATE_DIR },
		{ "commondir", ".git", POLICY_HOST_EXEC_READ_ONLY, CREATE_NONE },
	};
	int r;

	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		_cleanup_free_ char *p = join(rel, files[i].name);

		if (!p)
			return -ENOMEM;
		r = add(s, root, p, policy_host_exec_entry_find(files[i].id), files[i].how,
			files[i].create, NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * A git directory at rel in a writable root: its config (and config.worktree), hooks, info and
 * commondir; the files its configuration includes and its hooks directory; the common
 * directory it names; its submodules' git directories and its linked worktrees'. worktree: the
 * host path of the checkout it belongs to, for a relative core.hooksPath (NULL: not known yet).
 */
static int gitdir(struct scan *s, size_t root, const char *rel, const char *worktree, int depth)
{
	const struct root *rt = &s->roots[root];
	_cleanup_free_ char *canon = NULL, *key = NULL, *host = join(rt->b->host, rel),
			    *cfg = join(rel, "config"), *wt = join(rel, "config.worktree"),
			    *common = join(rel, "commondir"), *pointer = NULL, *own_worktree = NULL,
			    *m = join(rel, "modules"), *w = join(rel, "worktrees");
	_cleanup_close_ int fd = -1;
	struct gitcfg g = { 0 };
	struct stat st;
	int r;

	if (!host || !cfg || !wt || !common || !m || !w)
		return -ENOMEM;
	if (depth > GIT_DEPTH_MAX)
		return 0;
	fd = open_beneath(rt->b->fd, rel, O_PATH | O_DIRECTORY | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	r = fd_get_path(fd, &canon);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	key = strdup_printf("%zu:%s", root, canon);
	if (!key)
		return -ENOMEM;
	if (strv_contains(s->seen, key))
		return 0;
	r = strv_add(&s->seen, key);
	if (r >= 0)
		r = gitdir_files(s, root, rel);
	if (r < 0)
		return r;

	/* Its configuration: what it includes, where its hooks are, whether config.worktree
	 * counts, where its checkout is. */
	{
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;

		r = read_beneath(rt->b->fd, cfg, CONFIG_MAX, &buf, &len);
		r = r >= 0 ? gitcfg_parse(buf, len, &g) : r == -ENOMEM ? r : 0;
	}
	if (r >= 0 &&
	    (g.worktree_config || fstatat(fd, "config.worktree", &st, AT_SYMLINK_NOFOLLOW) == 0)) {
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;

		r = add(s, root, wt, policy_host_exec_entry_find(".git/config"),
			POLICY_HOST_EXEC_READ_ONLY, g.worktree_config ? CREATE_FILE : CREATE_NONE,
			NULL);
		if (r >= 0 && read_beneath(rt->b->fd, wt, CONFIG_MAX, &buf, &len) >= 0)
			r = gitcfg_parse(buf, len, &g);
	}
	if (r >= 0 && !worktree && g.worktree) {
		own_worktree = git_path(s, host, g.worktree);
		worktree = own_worktree;
	}
	if (r >= 0)
		r = config_includes(s, host, g.includes, &g, 1);
	if (r >= 0)
		r = hooks_paths(s, g.hooks_paths, worktree);
	if (r >= 0 && worktree)
		r = hooks_paths(s, s->global_hooks, worktree);

	/* commondir: where this git directory's shared part (config, hooks, refs) is. */
	if (r >= 0 && read_pointer(rt->b->fd, common, &pointer) >= 0) {
		_cleanup_free_ char *path = pointer[0] == '/' ? strdup(pointer)
							      : join(host, pointer);

		r = path ? gitdir_named(s, path, worktree, depth + 1) : -ENOMEM;
	}
	if (r >= 0 && !opted_out(s, policy_host_exec_entry_find(".git/modules")))
		r = modules(s, root, m, depth);
	if (r >= 0)
		r = worktrees(s, root, w);
	gitcfg_done(&g);
	return r;
}

/* ---- directories ---- */

/* The host-executed paths of one directory (rel in root): its own entries and its .git. */
static int scan_dir(struct scan *s, size_t root, const char *rel)
{
	const struct root *rt = &s->roots[root];
	_cleanup_free_ char *dot_git = join(rel, ".git"), *host = join(rt->b->host, rel),
			    *pointer = NULL, *path = NULL;
	_cleanup_close_ int fd = -1;
	const char *v;
	struct stat st;
	int r;

	if (!dot_git || !host)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(policy_host_exec_entries); i++) {
		const struct policy_host_exec_entry *e = &policy_host_exec_entries[i];
		_cleanup_free_ char *p = NULL;

		if (!e->in_dir)
			continue;
		p = join(rel, e->id);
		if (!p)
			return -ENOMEM;
		r = add(s, root, p, e, POLICY_HOST_EXEC_READ_ONLY, CREATE_NONE, NULL);
		if (r < 0)
			return r;
	}

	fd = open_beneath(rt->b->fd, dot_git, O_PATH | O_NOFOLLOW);
	if (fd >= 0 && fstat(fd, &st) < 0)
		return negative_errno();
	if (fd >= 0 && S_ISDIR(st.st_mode))
		return gitdir(s, root, dot_git, host, 0);
	/* None (listed absent: `git init` would make a repository here), a symlink (listed, and
	 * refused), anything else: listed, and read if it is a .git file. */
	if (fd < 0 && fd != -ENOENT && fd != -ENOTDIR && fd != -ELOOP)
		return 0;
	r = add(s, root, dot_git, policy_host_exec_entry_find(".git"), POLICY_HOST_EXEC_READ_ONLY,
		CREATE_NONE, NULL);
	if (r < 0 || fd < 0 || !S_ISREG(st.st_mode) ||
	    read_pointer(rt->b->fd, dot_git, &pointer) < 0)
		return r;
	v = startswith(pointer, "gitdir: ");
	if (!v || !*v)
		return 0;
	path = v[0] == '/' ? strdup(v) : join(host, v);
	if (!path)
		return -ENOMEM;
	return gitdir_named(s, path, host, 0);
}

/* Every directory between a bound item and its writable bind, bound over itself: pins. */
static int pins(struct scan *s)
{
	const size_t n = s->out->n;
	int r;

	for (size_t i = 0; i < n; i++) {
		const struct policy_host_exec_item *it = &s->out->items[i];
		const struct root *rt = &s->roots[it->bind];
		const struct policy_host_exec_entry *e = it->entry;
		const size_t bind = it->bind;
		_cleanup_free_ char *rel = NULL;

		if ((it->state != POLICY_HOST_EXEC_PRESENT &&
		     it->state != POLICY_HOST_EXEC_CREATED) ||
		    it->how == POLICY_HOST_EXEC_PIN)
			continue;
		rel = strdup(below(it->host, rt->b->host));
		if (!rel)
			return -ENOMEM;
		for (char *slash = strchr(rel, '/'); slash; slash = strchr(slash + 1, '/')) {
			struct policy_host_exec_item pin = {
				.entry = e, .how = POLICY_HOST_EXEC_PIN, .bind = bind, .fd = -1
			};

			*slash = '\0';
			pin.host = join(rt->b->host, rel);
			pin.target = join(rt->b->target, rel);
			if (!pin.host || !pin.target) {
				item_done(&pin);
				return -ENOMEM;
			}
			if (find_item(s, pin.target) || covered(s, pin.target)) {
				item_done(&pin);
				*slash = '/';
				continue;
			}
			pin.fd = open_beneath(rt->b->fd, rel, O_PATH | O_DIRECTORY | O_NOFOLLOW);
			*slash = '/';
			if (pin.fd < 0) {
				r = field_error_set(s->err, pin.fd, "filesystem.hostExecuted", NULL,
						    "cannot open \"%s\": %s", pin.host,
						    strerror(-pin.fd));
				pin.fd = -1;
				item_done(&pin);
				return r;
			}
			r = push(s, &pin);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* The global configuration, as git finds it for the caller: the files it includes and an
 * absolute core.hooksPath are paths like any other; a relative one applies in each checkout. */
static int global_config(struct scan *s)
{
	_cleanup_free_ char *xdg = NULL, *dot = NULL;
	const char *files[2] = { NULL, NULL }, *v;
	struct gitcfg g = { 0 };
	int r = 0;

	for (char *const *e = s->ctx->envp; e && *e; e++) {
		if ((v = startswith(*e, "GIT_CONFIG_GLOBAL=")) && *v)
			files[0] = v;
		else if ((v = startswith(*e, "XDG_CONFIG_HOME=")) && v[0] == '/' && !xdg &&
			 !(xdg = join(v, "git/config")))
			return -ENOMEM;
	}
	if (!files[0]) {
		if (!xdg)
			xdg = join(s->ctx->home, ".config/git/config");
		dot = join(s->ctx->home, ".gitconfig");
		if (!xdg || !dot)
			return -ENOMEM;
		files[0] = xdg;
		files[1] = dot;
	}
	for (size_t i = 0; i < ELEMENTSOF(files) && r >= 0; i++)
		if (files[i] && path_is_absolute(files[i]))
			r = config_file(s, files[i], &g, 1);
	for (size_t i = 0; r >= 0 && g.hooks_paths && g.hooks_paths[i]; i++) {
		char *one[] = { g.hooks_paths[i], NULL };

		if (one[0][0] == '/' || one[0][0] == '~')
			r = hooks_paths(s, one, NULL);
		else
			r = strv_add(&s->global_hooks, one[0]);
	}
	gitcfg_done(&g);
	return r;
}

/* root's directories from its top down to the caller's cwd, when the cwd lies in it. */
static int scan_root(struct scan *s, size_t root)
{
	const struct root *rt = &s->roots[root];
	const char *cwd = s->ctx->cwd, *start;
	struct stat st;
	int r;

	/* A writable git directory of its own ("write": ["./.git"]): what it holds. */
	if (endswith(rt->b->host, "/.git") ||
	    (fstatat(rt->b->fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	     fstatat(rt->b->fd, "objects", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))) {
		_cleanup_free_ char *worktree = dirname_of(rt->b->host);

		if (!worktree)
			return -ENOMEM;
		return gitdir(s, root, "", endswith(rt->b->host, "/.git") ? worktree : NULL, 0);
	}
	r = scan_dir(s, root, "");
	if (r < 0 || !policy_path_under(cwd, rt->b->host) || streq(cwd, rt->b->host))
		return r;
	start = below(cwd, rt->b->host);
	for (const char *end = start; r >= 0 && (size_t)(end - start) < PATH_MAX;) {
		_cleanup_free_ char *rel = NULL;
		_cleanup_close_ int fd = -1;

		end += strcspn(end, "/");
		rel = strndup(start, (size_t)(end - start));
		if (!rel)
			return -ENOMEM;
		fd = open_beneath(rt->b->fd, rel, O_PATH | O_DIRECTORY | O_NOFOLLOW);
		if (fd < 0)
			break; /* not there, or through a symlink: the sandbox's cwd is not below */
		r = scan_dir(s, root, rel);
		if (!*end)
			break;
		end++;
	}
	return r;
}

int policy_host_exec_scan(const struct policy_host_exec_ctx *ctx,
			  const struct policy_host_exec_bind *binds, size_t n_binds,
			  struct policy_host_exec_list **ret, struct field_error *err)
{
	_cleanup_host_exec_list_ struct policy_host_exec_list *out = calloc(1, sizeof(*out));
	struct scan s = { .ctx = ctx, .out = out, .err = err };
	int r = 0;

	if (!out)
		return -ENOMEM;
	s.roots = calloc(n_binds + 1, sizeof(*s.roots));
	if (!s.roots)
		return -ENOMEM;
	s.n_roots = n_binds;
	for (size_t i = 0; i < n_binds && r >= 0; i++) {
		struct stat st;

		s.roots[i].b = &binds[i];
		if (binds[i].fd < 0 || fstat(binds[i].fd, &st) < 0)
			continue;
		s.roots[i].dir = S_ISDIR(st.st_mode);
		r = fd_get_path(binds[i].fd, &s.roots[i].canon);
		if (r != -ENOMEM)
			r = 0;
	}
	if (r >= 0)
		r = global_config(&s);
	for (size_t i = 0; i < n_binds && r >= 0; i++)
		if (s.roots[i].b->rw && s.roots[i].dir && s.roots[i].canon)
			r = scan_root(&s, i);
	if (r >= 0)
		r = pins(&s);
	for (size_t i = 0; i < s.n_roots; i++)
		free(s.roots[i].canon);
	free(s.roots);
	strv_free(s.seen);
	strv_free(s.global_hooks);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(out);
	return 0;
}

char *policy_host_exec_key(const struct policy_host_exec_list *l)
{
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f)
		return NULL;
	for (size_t i = 0; l && i < l->n; i++) {
		enum policy_host_exec_state st = l->items[i].state;

		fprintf(f, "%s %s %s\n", policy_host_exec_how_to_string(l->items[i].how),
			policy_host_exec_state_to_string(
				st == POLICY_HOST_EXEC_CREATED ? POLICY_HOST_EXEC_PRESENT : st),
			l->items[i].target);
	}
	if (fclose(f) != 0)
		return NULL;
	return TAKE_PTR(buf);
}

int policy_host_exec_created(char *const *absent, char ***ret)
{
	_cleanup_strv_free_ char **l = NULL;
	struct stat st;
	int r;

	for (char *const *a = absent; a && *a; a++)
		if (lstat(*a, &st) == 0 && (r = strv_add(&l, *a)) < 0)
			return r;
	*ret = TAKE_PTR(l);
	return 0;
}
