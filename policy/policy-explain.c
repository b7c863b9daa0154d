/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "policy/policy-default.h"
#include "policy/policy-explain.h"
#include "policy/policy-hostexec.h"
#include "policy/policy-parse.h"
#include "policy/policy-syscalls.h"

struct explainer {
	const struct policy *p; /* resolved */
	const struct compile_ctx *ctx;
	json_t *rules;
	json_t *unenforced;
	bool fails;
	int error;
};

static const char *cgroup_name(enum policy_cgroup c)
{
	return c == POLICY_CGROUP_V2 ? "v2" : c == POLICY_CGROUP_V1 ? "v1" : "none";
}

static void push_str(struct explainer *e, json_t *a, const char *fmt, va_list ap)
{
	char *s = NULL;

	if (vasprintf(&s, fmt, ap) < 0) {
		e->error = -ENOMEM;
		return;
	}
	if (json_array_append_new(a, json_string(s)) < 0)
		e->error = -ENOMEM;
	free(s);
}

static json_t *rule_new(struct explainer *e, const char *rule, const char *fmt, ...) _printf_(3, 4);
static json_t *rule_new(struct explainer *e, const char *rule, const char *fmt, ...)
{
	_cleanup_free_ char *what = NULL;
	va_list ap;
	json_t *r;

	va_start(ap, fmt);
	if (vasprintf(&what, fmt, ap) < 0)
		what = NULL;
	va_end(ap);
	r = json_pack("{s:s, s:s?, s:[], s:[], s:s}", "rule", rule, "what", what, "layers", "notes",
		      "status", "enforced");
	if (!r || json_array_append_new(e->rules, r) < 0) {
		e->error = -ENOMEM;
		return NULL;
	}
	return r;
}

static void layer(struct explainer *e, json_t *r, const char *fmt, ...) _printf_(3, 4);
static void layer(struct explainer *e, json_t *r, const char *fmt, ...)
{
	va_list ap;

	if (!r)
		return;
	va_start(ap, fmt);
	push_str(e, json_object_get(r, "layers"), fmt, ap);
	va_end(ap);
}

static void note(struct explainer *e, json_t *r, const char *fmt, ...) _printf_(3, 4);
static void note(struct explainer *e, json_t *r, const char *fmt, ...)
{
	va_list ap;

	if (!r)
		return;
	va_start(ap, fmt);
	push_str(e, json_object_get(r, "notes"), fmt, ap);
	va_end(ap);
}

/*
 * A rule id the host cannot enforce: recorded once in "unenforced"; r's status becomes
 * "skipped" (optional) or "fails". Returns true when enforceable.
 */
static bool require(struct explainer *e, json_t *r, bool available, const char *id, const char *fmt,
		    ...) _printf_(5, 6);
static bool require(struct explainer *e, json_t *r, bool available, const char *id, const char *fmt,
		    ...)
{
	bool optional = policy_is_optional(e->p, id), seen = false;
	_cleanup_free_ char *reason = NULL;
	size_t i;
	json_t *v;
	va_list ap;

	if (available)
		return true;
	va_start(ap, fmt);
	if (vasprintf(&reason, fmt, ap) < 0)
		reason = NULL;
	va_end(ap);
	if (!reason) {
		e->error = -ENOMEM;
		return false;
	}
	if (!optional)
		e->fails = true;
	json_array_foreach(e->unenforced, i, v)
		if (streq(json_string_value(json_object_get(v, "rule")), id))
			seen = true;
	if (!seen &&
	    json_array_append_new(e->unenforced, json_pack("{s:s, s:s, s:b}", "rule", id, "reason",
							   reason, "optional", optional)) < 0)
		e->error = -ENOMEM;
	if (r) {
		const char *st = json_string_value(json_object_get(r, "status"));

		if (!optional || !streq_ptr(st, "fails"))
			(void)json_object_set_new(r, "status",
						  json_string(optional ? "skipped" : "fails"));
		note(e, r, "%s: %s (%s)", id, reason,
		     optional ? "optional: left out" : "required: the spawn fails");
	}
	return false;
}

static const char *landlock_rights(unsigned abi, bool write)
{
	if (!write)
		return "execute, read-file, read-dir";
	if (abi >= 5)
		return "every filesystem right";
	if (abi >= 3)
		return "every filesystem right this ABI knows (ioctl-dev not handled before ABI 5)";
	if (abi >= 2)
		return "every filesystem right this ABI knows (truncate not handled before ABI 3)";
	return "every filesystem right this ABI knows (no refer before ABI 2: cross-directory "
	       "renames and links are refused)";
}

/* The innermost writable area (for Landlock) that contains path, other than path itself. */
static const char *writable_parent(const struct explainer *e, const char *path)
{
	const struct policy *p = e->p;
	const char *best = NULL;

	for (char **w = p->fs.write; w && *w; w++)
		if (!streq(*w, path) && policy_path_under(path, *w) &&
		    (!best || strlen(*w) > strlen(best)))
			best = *w;
	if (p->fs.workspace.present && p->fs.workspace.access == POLICY_ACCESS_READ_WRITE) {
		const char *t = p->fs.workspace.mount_at ? p->fs.workspace.mount_at
							 : p->fs.workspace.path;

		if (!streq(t, path) && policy_path_under(path, t) &&
		    (!best || strlen(t) > strlen(best)))
			best = t;
	}
	if (p->fs.tmp == POLICY_TMP_PRIVATE && policy_path_under(path, "/tmp") &&
	    !streq(path, "/tmp") && !best)
		best = "/tmp";
	if (p->fs.home == POLICY_HOME_TMPFS && policy_path_under(path, e->ctx->home) &&
	    !streq(path, e->ctx->home) && !best)
		best = e->ctx->home;
	return best;
}

static const char *granted_parent(const struct explainer *e, const char *path)
{
	const struct policy *p = e->p;
	const char *best = writable_parent(e, path);

	for (char **rd = p->fs.read; rd && *rd; rd++)
		if (policy_path_under(path, *rd) && (!best || strlen(*rd) > strlen(best)))
			best = *rd;
	return best;
}

static void explain_landlock_path(struct explainer *e, json_t *r, const char *path, bool write)
{
	const unsigned abi = e->ctx->caps.landlock_abi;
	const char *wp;

	if (!require(e, NULL, abi >= 1, "landlock", "the launcher has no Landlock (ABI 0)")) {
		note(e, r, "no Landlock on this host: only the mount namespace enforces this");
		return;
	}
	layer(e, r, "Landlock ABI %u: %s", abi, landlock_rights(abi, write));
	wp = write ? NULL : writable_parent(e, path);
	if (wp)
		note(e, r,
		     "Landlock grants write below \"%s\", so only the read-only mount keeps \"%s\" "
		     "read-only",
		     wp, path);
}

/* path on the host (inside a test root if it has one), following symlinks, O_PATH. */
static int open_host(int root_fd, bool in_root, const char *path)
{
	return policy_host_open(root_fd, in_root, path, O_PATH);
}

/* The policy's binds opened as the compiler opens them (following a final symlink), for a
 * read-only scan of their host-executed paths. */
static void open_binds(const struct explainer *e, int root_fd, bool in_root,
		       struct policy_host_exec_bind *b, size_t *n)
{
	const struct policy *p = e->p;
	const char *const *lists[] = { (const char *const *)p->fs.read,
				       (const char *const *)p->fs.write };

	for (size_t k = 0; k < ELEMENTSOF(lists); k++)
		for (size_t i = 0; lists[k] && lists[k][i]; i++) {
			const char *path = lists[k][i];
			int fd = open_host(root_fd, in_root, path);

			if (fd >= 0)
				b[(*n)++] = (struct policy_host_exec_bind){
					.fd = fd, .host = path, .target = path, .rw = k == 1
				};
		}
	if (p->fs.workspace.present) {
		const struct policy_workspace *w = &p->fs.workspace;
		int fd = open_host(root_fd, in_root, w->path);

		if (fd >= 0)
			b[(*n)++] = (struct policy_host_exec_bind){
				.fd = fd,
				.host = w->path,
				.target = w->mount_at ? w->mount_at : w->path,
				.rw = w->access == POLICY_ACCESS_READ_WRITE,
			};
	}
}

static void explain_host_exec_item(struct explainer *e, const struct policy_host_exec_item *it)
{
	const char *id = it->entry->id;
	_cleanup_free_ char *rule = strdup_printf("filesystem.hostExecuted \"%s\"", id);
	json_t *r;

	if (!rule) {
		e->error = -ENOMEM;
		return;
	}
	switch (it->state) {
	case POLICY_HOST_EXEC_PRESENT:
	case POLICY_HOST_EXEC_CREATED:
		r = rule_new(e, rule, "\"%s\" %s", it->host,
			     it->how == POLICY_HOST_EXEC_HIDE ? "hidden" : "kept read-only");
		layer(e, r,
		      "mount namespace: %s; each directory between it and its bind is "
		      "bound over itself, so that it cannot be renamed away",
		      it->how == POLICY_HOST_EXEC_HIDE ? "an empty read-only mount over it"
						       : "a read-only bind mount over itself");
		break;
	case POLICY_HOST_EXEC_ABSENT:
		if (it->creatable) {
			r = rule_new(e, rule, "\"%s\" %s", it->host,
				     it->how == POLICY_HOST_EXEC_HIDE ? "hidden"
								      : "kept read-only");
			layer(e, r,
			      "the controller: it does not exist; the spawn makes it, empty (as "
			      "git init does), then mounts over it");
			break;
		}
		return; /* listed together, by explain_host_exec_absent() */
	case POLICY_HOST_EXEC_SYMLINK:
	default:
		r = rule_new(e, rule, "\"%s\" is a symbolic link or lies below one", it->host);
		(void)json_object_set_new(r, "status", json_string("fails"));
		note(e, r,
		     "cordon cannot keep a symbolic link read-only: the spawn is refused; list "
		     "\"%s\" in filesystem.hostExecuted.allow to run anyway",
		     id);
		e->fails = true;
		break;
	}
	if (it->why)
		note(e, r, "%s", it->why);
	note(e, r, "%s", it->entry->runs);
}

/* The absent ones, which the sandbox can create, in one rule: per writable bind, the names below
 * it. */
static void explain_host_exec_absent(struct explainer *e, const struct policy_host_exec_list *l,
				     const struct policy_host_exec_bind *b)
{
	json_t *r = NULL;

	for (size_t i = 0; i < l->n; i++) {
		const struct policy_host_exec_item *it = &l->items[i];
		const char *dir = b[it->bind].host;
		_cleanup_free_ char *buf = NULL;
		bool first = true;
		size_t size = 0;
		FILE *f;

		if (it->state != POLICY_HOST_EXEC_ABSENT || it->creatable)
			continue;
		for (size_t k = 0; k < i && first; k++)
			first = !(l->items[k].bind == it->bind &&
				  l->items[k].state == POLICY_HOST_EXEC_ABSENT &&
				  !l->items[k].creatable);
		if (!first)
			continue;
		if (!r) {
			r = rule_new(e, "filesystem.hostExecuted",
				     "host-executed paths that do not exist now");
			(void)json_object_set_new(r, "status", json_string("unprotected"));
			note(e, r,
			     "the sandbox can create them: a mount needs something to mount over, "
			     "and Landlock cannot refuse one name in a directory the sandbox may "
			     "write");
		}
		f = open_memstream(&buf, &size);
		if (!f) {
			e->error = -ENOMEM;
			return;
		}
		for (size_t k = i; k < l->n; k++) {
			const struct policy_host_exec_item *o = &l->items[k];

			if (o->bind == it->bind && o->state == POLICY_HOST_EXEC_ABSENT &&
			    !o->creatable)
				fprintf(f, "%s%s", k == i ? "" : " ",
					policy_path_under(o->host, dir) && !streq(o->host, dir)
						? o->host + strlen(dir) + !streq(dir, "/")
						: o->host);
		}
		if (fclose(f) != 0) {
			e->error = -ENOMEM;
			return;
		}
		note(e, r, "in \"%s\": %s", dir, buf);
	}
}

/*
 * Every host-executed path the writable binds hold now (the compiler scans again at each spawn),
 * how each is kept read-only, and what each opted-out entry risks.
 */
static void explain_host_exec(struct explainer *e)
{
	const struct policy *p = e->p;
	const char *root = e->ctx->host_root ? e->ctx->host_root : "/";
	size_t nb = strv_length(p->fs.read) + strv_length(p->fs.write) + 1, n = 0;
	_cleanup_free_ struct policy_host_exec_bind *b = calloc(nb + 1, sizeof(*b));
	_cleanup_host_exec_list_ struct policy_host_exec_list *l = NULL;
	_cleanup_close_ int root_fd = -1;
	struct field_error err = { "", "" };
	char field[256];
	json_t *r;
	int k;

	if (!b) {
		e->error = -ENOMEM;
		return;
	}
	root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd >= 0) {
		const struct policy_host_exec_ctx hctx = {
			.p = p,
			.cwd = e->ctx->cwd,
			.home = e->ctx->home,
			.envp = e->ctx->envp,
			.host_root_fd = root_fd,
			.in_root = !streq(root, "/"),
		};

		open_binds(e, root_fd, hctx.in_root, b, &n);
		k = policy_host_exec_scan(&hctx, b, n, &l, &err);
		if (k == -ENOMEM)
			e->error = k;
		else if (k < 0) {
			r = rule_new(e, "filesystem.hostExecuted", "the host-executed paths");
			(void)json_object_set_new(r, "status", json_string("fails"));
			note(e, r, "%s", err.reason);
			e->fails = true;
		}
	}
	for (size_t i = 0; i < n; i++)
		safe_close(b[i].fd);

	r = rule_new(e, "filesystem.hostExecuted",
		     "files the host runs later (git's configuration and hooks, .envrc, ...) are "
		     "kept read-only in the writable directories");
	layer(e, r, "mount namespace: read-only bind mounts over each one that exists");
	note(e, r, "Landlock cannot take away what a writable directory grants below it");
	for (size_t i = 0; l && i < l->n; i++)
		if (l->items[i].how != POLICY_HOST_EXEC_PIN)
			explain_host_exec_item(e, &l->items[i]);
	if (l)
		explain_host_exec_absent(e, l, b);

	for (size_t i = 0; p->fs.host_exec_allow && p->fs.host_exec_allow[i]; i++) {
		const char *id = p->fs.host_exec_allow[i];

		json_path_index(field, sizeof(field), "filesystem.hostExecuted.allow", i);
		for (size_t m = 0; m < policy_host_exec_entries_count; m++) {
			const struct policy_host_exec_entry *en = &policy_host_exec_entries[m];

			if (!streq(id, POLICY_HOST_EXEC_ALL) && !streq(id, en->id))
				continue;
			r = rule_new(e, field, "\"%s\" is writable (opted out)", en->id);
			(void)json_object_set_new(r, "status", json_string("unprotected"));
			note(e, r, "risk: %s", en->risk);
			note(e, r, "%s", en->runs);
		}
	}
}

static void explain_filesystem(struct explainer *e)
{
	const struct policy *p = e->p;
	char field[256];
	json_t *r;

	r = rule_new(e, "filesystem", "a fresh root: anything not listed does not exist");
	layer(e, r, "mount namespace: a new tmpfs root, pivot_root, then remounted read-only");
	if (e->ctx->caps.landlock_abi >= 1)
		layer(e, r, "Landlock ABI %u: only the listed paths are granted",
		      e->ctx->caps.landlock_abi);
	else
		require(e, r, false, "landlock", "the launcher has no Landlock (ABI 0)");

	for (size_t i = 0; p->fs.read && p->fs.read[i]; i++) {
		json_path_index(field, sizeof(field), "filesystem.read", i);
		r = rule_new(e, field, "\"%s\" readable and executable", p->fs.read[i]);
		layer(e, r, "mount namespace: read-only bind mount (nosuid, nodev)");
		explain_landlock_path(e, r, p->fs.read[i], false);
		if (p->fs.read_is_default || policy_default_is_system_dir(p->fs.read[i]))
			note(e, r, "a default system directory: left out if absent on this host");
	}
	for (size_t i = 0; p->fs.write && p->fs.write[i]; i++) {
		json_path_index(field, sizeof(field), "filesystem.write", i);
		r = rule_new(e, field, "\"%s\" readable and writable", p->fs.write[i]);
		layer(e, r, "mount namespace: read-write bind mount (nosuid, nodev)");
		explain_landlock_path(e, r, p->fs.write[i], true);
	}
	if (p->fs.workspace.present) {
		const struct policy_workspace *w = &p->fs.workspace;
		bool rw = w->access == POLICY_ACCESS_READ_WRITE;
		const char *t = w->mount_at ? w->mount_at : w->path;

		r = rule_new(e, "filesystem.workspace", "the workspace \"%s\" %s at \"%s\"",
			     w->path, rw ? "read-write" : "read-only", t);
		layer(e, r, "mount namespace: %s bind mount (nosuid, nodev)",
		      rw ? "read-write" : "read-only");
		explain_landlock_path(e, r, t, rw);
		if (policy_path_under(e->ctx->home, w->path) && !streq(w->path, "/")) {
			if (!w->allow_home) {
				(void)json_object_set_new(r, "status", json_string("fails"));
				note(e, r,
				     "it is your home directory or contains it: refused (cd to a "
				     "project directory, or set filesystem.workspace.allowHome)");
				e->fails = true;
			} else {
				note(e, r,
				     "allowHome: everything your session runs from your home "
				     "(~/.bashrc, ~/.profile, ~/.config/autostart, ...) is the "
				     "sandbox's to change; only the host-executed paths are kept "
				     "read-only");
			}
		}
	}
	explain_host_exec(e);
	for (size_t i = 0; p->fs.deny && p->fs.deny[i]; i++) {
		const char *gp = granted_parent(e, p->fs.deny[i]);

		json_path_index(field, sizeof(field), "filesystem.deny", i);
		r = rule_new(e, field, "\"%s\" hidden", p->fs.deny[i]);
		if (!gp) {
			layer(e, r, "mount namespace: not mounted at all (nothing exposes it)");
			if (e->ctx->caps.landlock_abi >= 1)
				layer(e, r, "Landlock ABI %u: not granted",
				      e->ctx->caps.landlock_abi);
			continue;
		}
		layer(e, r, "mount namespace: an empty read-only mount over it");
		note(e, r,
		     "Landlock cannot take away what \"%s\" grants; only the overmount hides it",
		     gp);
		if (writable_parent(e, p->fs.deny[i]))
			note(e, r,
			     "if it does not exist, the sandbox can create it below the writable "
			     "\"%s\"",
			     gp);
	}
	if (p->fs.tmp == POLICY_TMP_PRIVATE) {
		r = rule_new(e, "filesystem.tmp", "a private /tmp");
		layer(e, r, "mount namespace: a fresh tmpfs (%s), discarded at exit", "256 MiB");
	} else {
		r = rule_new(e, "filesystem.tmp", "no /tmp");
		layer(e, r, "mount namespace: not mounted");
	}
	r = rule_new(e, "filesystem.home", "$HOME (\"%s\") %s", e->ctx->home,
		     p->fs.home == POLICY_HOME_TMPFS ? "a private writable tmpfs"
						     : "an empty read-only directory");
	layer(e, r, "mount namespace: %s",
	      p->fs.home == POLICY_HOME_TMPFS ? "a fresh tmpfs, mode 0700" : "an empty directory");
	r = rule_new(e, "/proc, /dev", "the sandbox's own /proc and a minimal /dev");
	layer(e, r, "pid namespace: procfs shows only the sandbox's processes (hidepid)");
	layer(e, r, "mount namespace: /dev holds null zero full random urandom tty, pts, shm");
}

static void explain_network(struct explainer *e)
{
	const struct policy *p = e->p;
	const unsigned abi = e->ctx->caps.landlock_abi;
	json_t *r;

	r = rule_new(e, "network.mode", "\"%s\"", policy_network_to_string(p->net.mode));
	if (policy_network_rank(p->net.mode) >
	    policy_network_rank(e->ctx->caps.floor_max_network)) {
		(void)json_object_set_new(r, "status", json_string("fails"));
		note(e, r, "the launcher's admin floor allows at most \"%s\"",
		     policy_network_to_string(e->ctx->caps.floor_max_network));
		e->fails = true;
	}
	switch (p->net.mode) {
	case POLICY_NETWORK_UNIX:
		layer(e, r,
		      "network namespace: not the host's, only loopback (in privileged mode one "
		      "user's \"unix\" sandboxes may share an empty one)");
		layer(e, r, "seccomp (launcherd's floor): no socket of any family but AF_UNIX");
		if (abi >= 1 &&
		    require(e, r, abi >= 4, "landlock.net",
			    "TCP rules need Landlock ABI 4, the launcher reports %u", abi))
			layer(e, r,
			      "Landlock ABI %u: TCP bind and connect denied, even on loopback",
			      abi);
		break;
	case POLICY_NETWORK_NONE:
	case POLICY_NETWORK_LOOPBACK:
		layer(e, r,
		      "network namespace: one of the sandbox's own, only loopback (TCP and UDP on "
		      "it allowed; nothing reaches the host or beyond)");
		break;
	case POLICY_NETWORK_PROXY:
		layer(e, r, "network namespace: a new one with only loopback");
		layer(e, r,
		      "proxy: the controller's filtering proxy listens on 127.0.0.1:3128 "
		      "inside it (HTTP CONNECT, HTTP, SOCKS5); *_PROXY variables set");
		if (abi >= 1 &&
		    require(e, r, abi >= 4, "landlock.net",
			    "TCP rules need Landlock ABI 4, the launcher reports %u", abi))
			layer(e, r,
			      "Landlock ABI %u: TCP connect only to the proxy port, bind denied",
			      abi);
		r = rule_new(e, "network.allowDomains",
			     "%zu domain patterns, %zu denied, %zu ports",
			     strv_length(p->net.allow_domains), strv_length(p->net.deny_domains),
			     p->net.n_allow_ports);
		layer(e, r, "proxy: each connection is checked and audited by the controller");
		break;
	case POLICY_NETWORK_HOST:
		layer(e, r, "none: the host's network namespace is shared");
		if (abi >= 1 &&
		    require(e, r, abi >= 4, "landlock.net",
			    "TCP rules need Landlock ABI 4, the launcher reports %u", abi))
			layer(e, r,
			      "Landlock ABI %u: TCP connect only to allowPorts (%zu), bind "
			      "denied",
			      abi, p->net.n_allow_ports);
		note(e, r, "UDP, ICMP and other protocols are not restricted in host mode");
		break;
	}
	if (abi >= 1) {
		r = rule_new(e, "landlock.scope", "no abstract unix sockets or signals outside");
		if (require(e, r, abi >= 6, "landlock.scope",
			    "abstract unix socket and signal scoping need Landlock ABI 6, the "
			    "launcher reports %u",
			    abi))
			layer(e, r, "Landlock ABI %u: scoped abstract unix sockets and signals",
			      abi);
		layer(e, r, "pid and ipc namespaces: other processes are not visible");
	}
}

static void explain_limits(struct explainer *e)
{
	const struct policy_limits *l = &e->p->limits;
	const enum policy_cgroup cg = e->ctx->caps.cgroup;
	json_t *r;

	r = rule_new(e, "limits.pids", "at most %llu processes", (unsigned long long)l->pids);
	if (require(e, r, cg != POLICY_CGROUP_NONE || e->ctx->caps.pids_nproc, "limits.pids",
		    "the launcher has no cgroup to count processes in")) {
		if (cg != POLICY_CGROUP_NONE)
			layer(e, r, "cgroup %s: pids.max", cgroup_name(cg));
		else
			layer(e, r,
			      "rlimit: RLIMIT_NPROC in the sandbox's own user namespace (its "
			      "processes only)");
	}
	r = rule_new(e, "limits.memoryBytes", "at most %llu bytes of memory",
		     (unsigned long long)l->memory_bytes);
	if (require(e, r, cg != POLICY_CGROUP_NONE, "limits.memoryBytes",
		    "the launcher has no cgroup to limit memory in"))
		layer(e, r, "cgroup %s: %s", cgroup_name(cg),
		      cg == POLICY_CGROUP_V2 ? "memory.max" : "memory.limit_in_bytes");
	if (l->cpu_seconds) {
		r = rule_new(e, "limits.cpuSeconds", "%llu CPU seconds per process",
			     (unsigned long long)l->cpu_seconds);
		layer(e, r, "rlimit: RLIMIT_CPU (each process; children start their own count)");
	} else {
		r = rule_new(e, "limits.cpuSeconds", "no CPU time limit (0)");
	}
	if (l->wall_seconds) {
		r = rule_new(e, "limits.wallSeconds", "killed after %llu seconds",
			     (unsigned long long)l->wall_seconds);
		layer(e, r, "launcherd: a timer kills the whole tree (pid namespace and cgroup)");
	} else {
		r = rule_new(e, "limits.wallSeconds", "no wall-clock limit (0)");
	}
	r = rule_new(e, "limits.maxOutputBytes", "%llu bytes captured per stream",
		     (unsigned long long)l->max_output_bytes);
	layer(e, r, "controller: output past the cap is drained and reported as truncated");
	r = rule_new(e, "limits.files", "at most %llu open files per process",
		     (unsigned long long)l->files);
	layer(e, r, "rlimit: RLIMIT_NOFILE; core dumps off (RLIMIT_CORE 0)");
}

static void explain_rest(struct explainer *e)
{
	const struct policy *p = e->p;
	_cleanup_free_ struct policy_syscall_rule *rules = NULL;
	size_t n = 0;
	json_t *r;

	r = rule_new(e, "syscalls", "profile \"%s\"",
		     policy_syscall_profile_to_string(p->syscalls.profile));
	if (policy_syscall_spec(p, &rules, &n) < 0)
		e->error = -ENOMEM;
	if (require(e, r, e->ctx->caps.seccomp, "seccomp", "the launcher has no seccomp"))
		layer(e, r,
		      "seccomp: %zu syscalls denied or restricted, stacked on launcherd's "
		      "floor filter",
		      n);
	if (!e->ctx->caps.seccomp && e->ctx->caps.floor_require_seccomp) {
		(void)json_object_set_new(r, "status", json_string("fails"));
		e->fails = true;
	}
	r = rule_new(e, "env", "%zu variables passed, %zu set, HOME rewritten",
		     strv_length(p->env.pass), strv_length(p->env.set));
	layer(e, r, "controller: the environment is built from the policy only");
	r = rule_new(e, "hostExecution", p->host_execution ? "allowed" : "not allowed");
	layer(e, r, "controller: the unconfined host launcher is %s",
	      p->host_execution ? "usable if the admin floor allows it" : "never used");
	r = rule_new(e, "identity", "the caller's uid and gid, no capabilities, no_new_privs");
	if (e->ctx->caps.mode == POLICY_LAUNCHER_PRIVILEGED)
		layer(e, r,
		      "launcherd (privileged): namespaces built as root, then the caller's "
		      "uid/gid/groups with an empty capability set");
	else
		layer(e, r, "launcherd (user mode): a user namespace mapping only the caller");
	if (e->ctx->caps.floor_require_landlock && e->ctx->caps.landlock_abi == 0) {
		(void)json_object_set_new(r, "status", json_string("fails"));
		note(e, r, "the launcher's admin floor requires Landlock, which this host lacks");
		e->fails = true;
	}
}

int policy_explain(const struct policy *policy, const struct compile_ctx *ctx, json_t **ret)
{
	_cleanup_policy_ struct policy *p = NULL;
	_cleanup_json_ json_t *out = NULL, *rules = json_array(), *unenf = json_array();
	struct field_error err;
	struct explainer e;
	int r;

	if (!rules || !unenf)
		return -ENOMEM;
	r = policy_copy(policy, &p);
	if (r < 0)
		return r;
	r = policy_resolve(p, ctx, &err);
	if (r < 0)
		return r;
	e = (struct explainer){ .p = p, .ctx = ctx, .rules = rules, .unenforced = unenf };
	explain_filesystem(&e);
	explain_network(&e);
	explain_limits(&e);
	explain_rest(&e);
	if (e.error < 0)
		return e.error;
	out = json_pack("{s:{s:s, s:i, s:b, s:s, s:b}, s:O, s:O, s:s}", "host", "launcher",
			ctx->caps.mode == POLICY_LAUNCHER_PRIVILEGED ? "privileged" : "user",
			"landlockAbi", (int)ctx->caps.landlock_abi, "seccomp", ctx->caps.seccomp,
			"cgroup", cgroup_name(ctx->caps.cgroup), "userns", ctx->caps.userns,
			"rules", rules, "unenforced", unenf, "spawn", e.fails ? "fails" : "ok");
	if (!out)
		return -ENOMEM;
	*ret = TAKE_PTR(out);
	return 0;
}

int policy_explain_format_text(json_t *x, char **ret)
{
	json_t *host = json_object_get(x, "host"), *v, *s;
	_cleanup_free_ char *buf = NULL;
	size_t size = 0, i, k;
	FILE *f = open_memstream(&buf, &size);

	if (!f)
		return -ENOMEM;
	fprintf(f,
		"Host: launcherd %s mode, Landlock ABI %lld, seccomp %s, cgroup %s, user "
		"namespaces %s\n",
		json_string_value(json_object_get(host, "launcher")),
		(long long)json_integer_value(json_object_get(host, "landlockAbi")),
		json_is_true(json_object_get(host, "seccomp")) ? "yes" : "no",
		json_string_value(json_object_get(host, "cgroup")),
		json_is_true(json_object_get(host, "userns")) ? "yes" : "no");
	json_array_foreach(json_object_get(x, "rules"), i, v) {
		const char *st = json_string_value(json_object_get(v, "status"));

		if (streq_ptr(st, "enforced"))
			fprintf(f, "\n%s: %s\n", json_string_value(json_object_get(v, "rule")),
				json_string_value(json_object_get(v, "what")));
		else
			fprintf(f, "\n%s: %s  [%s]\n",
				json_string_value(json_object_get(v, "rule")),
				json_string_value(json_object_get(v, "what")), st);
		json_array_foreach(json_object_get(v, "layers"), k, s)
			fprintf(f, "    enforced by %s\n", json_string_value(s));
		json_array_foreach(json_object_get(v, "notes"), k, s)
			fprintf(f, "    note: %s\n", json_string_value(s));
	}
	if (json_array_size(json_object_get(x, "unenforced")) > 0) {
		fputs("\nCannot be enforced on this host:\n", f);
		json_array_foreach(json_object_get(x, "unenforced"), i, v)
			fprintf(f, "  %s: %s (%s)\n", json_string_value(json_object_get(v, "rule")),
				json_string_value(json_object_get(v, "reason")),
				json_is_true(json_object_get(v, "optional"))
					? "optional: left out"
					: "required: the spawn fails");
	}
	fprintf(f, "\nResult: %s\n",
		streq_ptr(json_string_value(json_object_get(x, "spawn")), "ok")
			? "every required rule is enforced; the spawn can proceed"
			: "the spawn fails on this host");
	if (fclose(f) != 0)
		return -ENOMEM;
	*ret = TAKE_PTR(buf);
	return 0;
}
