/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host-executed paths of writable binds (policy-hostexec.c), on fake trees under a temp
 * root: a linked worktree whose repository lies in another writable bind (its .git file, the
 * worktree's commondir, the common directory's config, hooks and info), submodules in
 * submodules and with slashes in their names, a global configuration that includes a file of
 * the workspace, git's config syntax (quotes, escapes, continuations, comments, old-style
 * sections), read-only and denied paths left out, the pins, nothing made unless asked, a fifo
 * in place of a config read without blocking; and policy_host_exec_match() for a backend that
 * brings changes back.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "policy/policy-hostexec.h"
#include "policy/policy-parse.h"
#include "tests/tap.h"

static char tmpdir[] = "/tmp/cordon-policy-hostexec-XXXXXX";
static int root_fd = -1;

static char *at(const char *rel)
{
	char *p = strdup_printf("%s/%s", tmpdir, rel);

	if (!p)
		bail("oom");
	return p;
}

static void mkd(const char *rel)
{
	_cleanup_free_ char *p = at(rel);
	char *s = p + strlen(tmpdir) + 1;

	for (;;) {
		s = strchr(s, '/');
		if (s)
			*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			bail("mkdir %s", p);
		if (!s)
			break;
		*s++ = '/';
	}
}

static void put(const char *rel, const char *text)
{
	_cleanup_free_ char *p = at(rel);
	FILE *f = fopen(p, "we");

	if (!f)
		bail("write %s", p);
	fputs(text, f);
	fclose(f);
}

static bool there(const char *rel)
{
	_cleanup_free_ char *p = at(rel);
	struct stat st;

	return lstat(p, &st) == 0;
}

static struct policy *parse(const char *doc)
{
	struct field_error err = { "", "" };
	struct policy *p = NULL;

	if (policy_parse_string(doc, strlen(doc), &p, &err) < 0)
		bail("%s: %s: %s", doc, err.field, err.reason);
	return p;
}

struct fixture {
	struct policy_host_exec_bind binds[8];
	size_t n;
};

/* A bind of host path (in the fake root) shown at target. */
static void bind(struct fixture *f, const char *host, const char *target, bool rw)
{
	int fd = openat(root_fd, host + 1, O_PATH | O_CLOEXEC);

	if (fd < 0)
		bail("open %s", host);
	f->binds[f->n++] = (struct policy_host_exec_bind){
		.fd = fd, .host = host, .target = target, .rw = rw
	};
}

static void fixture_done(struct fixture *f)
{
	for (size_t i = 0; i < f->n; i++)
		close(f->binds[i].fd);
	f->n = 0;
}

static struct policy_host_exec_list *scan(const struct policy *p, struct fixture *f,
					  const char *cwd, bool create, int *ret)
{
	static char *const envp[] = { (char *)"HOME=/home/u", NULL };
	const struct policy_host_exec_ctx ctx = {
		.p = p,
		.cwd = cwd,
		.home = "/home/u",
		.envp = envp,
		.host_root_fd = root_fd,
		.in_root = true,
		.create = create,
	};
	struct policy_host_exec_list *l = NULL;
	struct field_error err = { "", "" };

	*ret = policy_host_exec_scan(&ctx, f->binds, f->n, &l, &err);
	if (*ret < 0)
		diag("scan: %s: %s", err.field, err.reason);
	return l;
}

static const struct policy_host_exec_item *item(const struct policy_host_exec_list *l,
						const char *target)
{
	for (size_t i = 0; l && i < l->n; i++)
		if (streq(l->items[i].target, target))
			return &l->items[i];
	return NULL;
}

/* Is target listed, as how, in state st, for entry id? */
static bool has(const struct policy_host_exec_list *l, const char *target,
		enum policy_host_exec_how how, enum policy_host_exec_state st, const char *id)
{
	const struct policy_host_exec_item *it = item(l, target);

	if (!it) {
		diag("%s: not listed", target);
		return false;
	}
	if (it->how != how || it->state != st || !streq(it->entry->id, id)) {
		diag("%s: %s %s %s", target, policy_host_exec_how_to_string(it->how),
		     policy_host_exec_state_to_string(it->state), it->entry->id);
		return false;
	}
	return true;
}

static void test_repository(void)
{
	_cleanup_policy_ struct policy *p = parse("{\"version\": 1}");
	_cleanup_host_exec_list_ struct policy_host_exec_list *l = NULL, *m = NULL;
	_cleanup_free_ char *k1 = NULL, *k2 = NULL;
	struct fixture f = { 0 };
	int r;

	mkd("usr");
	mkd("home/u/proj/.git/hooks");
	mkd("home/u/proj/.git/info");
	mkd("home/u/proj/src/deep");
	mkd("home/u/proj/vendor/.git");
	mkd("home/u/proj/.husky/_");
	mkd("home/u/proj/.config/mise");
	put("home/u/proj/.git/HEAD", "ref: refs/heads/main\n");
	/* Quotes, an escaped quote, a continuation, comments, an old-style section, case. */
	put("home/u/proj/.git/config",
	    "; a comment\n"
	    "[Core]\n"
	    "\tbare = false # trailing\n"
	    "\tHooksPath = \".hu\\\n"
	    "sky/_\"\n"
	    "[include]\n"
	    "\tpath = ../team.gitconfig\n"
	    "[includeIf \"gitdir:/home/u/\"]\n"
	    "\tpath = \"/home/u/proj/local \\\"x\\\".gitconfig\" ; comment\n"
	    "[extensions]\n"
	    "\tworktreeConfig\n"
	    "[remote.origin]\n"
	    "\turl = x\n");
	put("home/u/proj/team.gitconfig", "[include]\n\tpath = nested.gitconfig\n");
	put("home/u/proj/nested.gitconfig", "");
	put("home/u/proj/local \"x\".gitconfig", "");
	put("home/u/proj/.envrc", "use flake\n");
	put("home/u/proj/src/.envrc", "");
	put("home/u/proj/vendor/.git/config", "");
	put("home/u/proj/.pre-commit-config.yaml", "repos: []\n");
	put("home/u/proj/.husky/pre-commit", "npm test\n");
	/* Submodules: one with a slash in its name, one inside another. */
	mkd("home/u/proj/.git/modules/lib/a/hooks");
	put("home/u/proj/.git/modules/lib/a/HEAD", "x\n");
	put("home/u/proj/.git/modules/lib/a/config", "[core]\n\tworktree = ../../../../lib/a\n");
	mkd("home/u/proj/.git/modules/top/modules/inner");
	put("home/u/proj/.git/modules/top/HEAD", "x\n");
	put("home/u/proj/.git/modules/top/modules/inner/HEAD", "x\n");
	/* The global configuration includes a file of the workspace. */
	mkd("home/u/.config/git");
	put("home/u/.gitconfig", "[include]\n\tpath = ~/proj/.shared.gitconfig\n");
	put("home/u/proj/.shared.gitconfig", "");

	bind(&f, "/usr", "/usr", false);
	bind(&f, "/home/u/proj", "/w", true);
	bind(&f, "/home/u/proj/vendor", "/w/vendor", false);
	l = scan(p, &f, "/home/u/proj/src/deep", false, &r);
	is_int(0, r, "a repository is scanned");
	ok(has(l, "/w/.git/config", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_PRESENT,
	       ".git/config") &&
		   has(l, "/w/.git/hooks", POLICY_HOST_EXEC_HIDE, POLICY_HOST_EXEC_PRESENT,
		       ".git/hooks") &&
		   has(l, "/w/.git/info", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_PRESENT,
		       ".git/info"),
	   "config read-only, hooks hidden, info read-only");
	ok(has(l, "/w/.git", POLICY_HOST_EXEC_PIN, POLICY_HOST_EXEC_PRESENT, ".git/config"),
	   "the git directory is pinned");
	ok(has(l, "/w/.git/commondir", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_ABSENT, ".git"),
	   "its commondir is absent: listed (it could be created)");
	ok(has(l, "/w/.git/config.worktree", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_ABSENT,
	       ".git/config") &&
		   item(l, "/w/.git/config.worktree")->creatable,
	   "extensions.worktreeConfig (a bare key is true): config.worktree counts");
	ok(has(l, "/w/team.gitconfig", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_PRESENT,
	       "include.path") &&
		   has(l, "/w/nested.gitconfig", POLICY_HOST_EXEC_READ_ONLY,
		       POLICY_HOST_EXEC_PRESENT, "include.path") &&
		   has(l, "/w/local \"x\".gitconfig", POLICY_HOST_EXEC_READ_ONLY,
		       POLICY_HOST_EXEC_PRESENT, "include.path"),
	   "included files (relative to .git, nested, quoted with escapes) are read-only");
	ok(has(l, "/w/.shared.gitconfig", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_PRESENT,
	       "include.path"),
	   "a file the global configuration includes, in the workspace, is read-only");
	ok(has(l, "/w/.husky", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_PRESENT, ".husky") &&
		   !item(l, "/w/.husky/_"),
	   "core.hooksPath (continued over two lines) lies in .husky, read-only as a whole");
	ok(has(l, "/w/.envrc", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_PRESENT, ".envrc") &&
		   has(l, "/w/src/.envrc", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_PRESENT,
		       ".envrc") &&
		   has(l, "/w/src", POLICY_HOST_EXEC_PIN, POLICY_HOST_EXEC_PRESENT, ".envrc") &&
		   has(l, "/w/src/deep/.envrc", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_ABSENT,
		       ".envrc"),
	   "each directory down to the cwd is looked at; src is pinned for its .envrc");
	ok(has(l, "/w/.config/mise", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_PRESENT,
	       ".config/mise") &&
		   has(l, "/w/.config", POLICY_HOST_EXEC_PIN, POLICY_HOST_EXEC_PRESENT,
		       ".config/mise") &&
		   has(l, "/w/.pre-commit-config.yaml", POLICY_HOST_EXEC_READ_ONLY,
		       POLICY_HOST_EXEC_PRESENT, ".pre-commit-config.yaml"),
	   "mise's and pre-commit's configuration");
	ok(has(l, "/w/.git/modules/lib/a/config", POLICY_HOST_EXEC_READ_ONLY,
	       POLICY_HOST_EXEC_PRESENT, ".git/config") &&
		   has(l, "/w/.git/modules/lib/a/hooks", POLICY_HOST_EXEC_HIDE,
		       POLICY_HOST_EXEC_PRESENT, ".git/hooks") &&
		   has(l, "/w/.git/modules/lib/a/info", POLICY_HOST_EXEC_READ_ONLY,
		       POLICY_HOST_EXEC_ABSENT, ".git/info") &&
		   has(l, "/w/.git/modules/lib", POLICY_HOST_EXEC_PIN, POLICY_HOST_EXEC_PRESENT,
		       ".git/config") &&
		   has(l, "/w/.git/modules/lib/a", POLICY_HOST_EXEC_PIN, POLICY_HOST_EXEC_PRESENT,
		       ".git/config"),
	   "a submodule named lib/a: its git directory and the name directory pinned");
	ok(has(l, "/w/.git/modules/top/modules/inner/config", POLICY_HOST_EXEC_READ_ONLY,
	       POLICY_HOST_EXEC_ABSENT, ".git/config") &&
		   has(l, "/w/.git/modules/top/config", POLICY_HOST_EXEC_READ_ONLY,
		       POLICY_HOST_EXEC_ABSENT, ".git/config"),
	   "a submodule inside a submodule");
	ok(!item(l, "/w/vendor/.git/config") && !item(l, "/usr/.envrc"),
	   "nothing below a read-only bind");
	ok(!there("home/u/proj/.git/modules/lib/a/info") && !there("home/u/proj/src/deep/.envrc"),
	   "a scan that is not asked to makes nothing");
	{
		_cleanup_policy_ struct policy *h =
			parse("{\"version\": 1, \"filesystem\": {\"hostExecuted\": {\"allow\": "
			      "[\".husky\"]}}}");
		_cleanup_host_exec_list_ struct policy_host_exec_list *hl =
			scan(h, &f, "/home/u/proj", false, &r);

		ok(has(hl, "/w/.husky/_", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_PRESENT,
		       "core.hooksPath") &&
			   has(hl, "/w/.husky", POLICY_HOST_EXEC_PIN, POLICY_HOST_EXEC_PRESENT,
			       "core.hooksPath"),
		   "with .husky opted out, the core.hooksPath directory itself is read-only");
	}
	k1 = policy_host_exec_key(l);
	m = scan(p, &f, "/home/u/proj/src/deep", false, &r);
	k2 = policy_host_exec_key(m);
	ok(k1 && k2 && streq(k1, k2), "a second scan finds the same, in the same order");

	/* Asked to make them: a git directory's missing parts are made. */
	policy_host_exec_list_free(TAKE_PTR(m));
	m = scan(p, &f, "/home/u/proj", true, &r);
	ok(r == 0 && there("home/u/proj/.git/modules/lib/a/info") &&
		   there("home/u/proj/.git/config.worktree") &&
		   there("home/u/proj/.git/modules/top/modules/inner/hooks") &&
		   !there("home/u/proj/.git/commondir") && !there("home/u/proj/.env"),
	   "a compiling scan makes hooks, info, config and config.worktree, nothing else");
	ok(has(m, "/w/.git/modules/lib/a/info", POLICY_HOST_EXEC_READ_ONLY,
	       POLICY_HOST_EXEC_CREATED, ".git/info") &&
		   item(m, "/w/.git/modules/lib/a/info")->fd >= 0,
	   "…and lists them as made, with an fd to bind");
	fixture_done(&f);
}

static void test_policy(void)
{
	_cleanup_policy_ struct policy *p = parse(
		"{\"version\": 1, \"filesystem\": {\"deny\": [\"/home/u/proj/.husky\"], "
		"\"hostExecuted\": {\"allow\": [\".git/modules\", \"include.path\", \".envrc\"]}}}");
	_cleanup_policy_ struct policy *all =
		parse("{\"version\": 1, \"filesystem\": {\"hostExecuted\": {\"allow\": [\"*\"]}}}");
	_cleanup_host_exec_list_ struct policy_host_exec_list *l = NULL, *m = NULL;
	struct fixture f = { 0 };
	int r;

	bind(&f, "/home/u/proj", "/home/u/proj", true);
	l = scan(p, &f, "/home/u/proj", false, &r);
	is_int(0, r, "scan with opt-outs");
	ok(item(l, "/home/u/proj/.git/config") &&
		   !item(l, "/home/u/proj/.git/modules/lib/a/config") &&
		   !item(l, "/home/u/proj/team.gitconfig") && !item(l, "/home/u/proj/.envrc"),
	   "opted-out entries are left out, the rest kept");
	ok(!item(l, "/home/u/proj/.husky"), "a denied path is left out (the deny hides it)");
	m = scan(all, &f, "/home/u/proj", false, &r);
	is_int(0, (long long)(m ? m->n : 99), "\"*\": nothing at all");
	fixture_done(&f);
}

static void test_worktree(void)
{
	_cleanup_policy_ struct policy *p = parse("{\"version\": 1}");
	_cleanup_host_exec_list_ struct policy_host_exec_list *l = NULL, *m = NULL;
	struct fixture f = { 0 };
	int r;

	mkd("srv/main/.git/hooks");
	mkd("srv/main/.git/info");
	mkd("srv/main/.git/worktrees/wt");
	put("srv/main/.git/HEAD", "x\n");
	put("srv/main/.git/config", "");
	put("srv/main/.git/worktrees/wt/HEAD", "x\n");
	put("srv/main/.git/worktrees/wt/commondir", "../..\n");
	put("srv/main/.git/worktrees/wt/gitdir", "/srv/wt/.git\n");
	mkd("srv/wt");
	put("srv/wt/.git", "gitdir: /srv/main/.git/worktrees/wt\n");

	/* Only the worktree writable: its .git file; the repository is out of reach. */
	bind(&f, "/srv/wt", "/srv/wt", true);
	l = scan(p, &f, "/srv/wt", false, &r);
	is_int(0, r, "a linked worktree");
	ok(has(l, "/srv/wt/.git", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_PRESENT, ".git"),
	   "its .git file is read-only");
	ok(!item(l, "/srv/main/.git/config"), "a repository that is not writable is left alone");
	fixture_done(&f);

	/* A git directory writable on its own (a read-only checkout, its .git writable). */
	{
		_cleanup_host_exec_list_ struct policy_host_exec_list *g = NULL;

		bind(&f, "/srv/main/.git", "/srv/main/.git", true);
		g = scan(p, &f, "/srv/main", false, &r);
		ok(r == 0 &&
			   has(g, "/srv/main/.git/config", POLICY_HOST_EXEC_READ_ONLY,
			       POLICY_HOST_EXEC_PRESENT, ".git/config") &&
			   has(g, "/srv/main/.git/hooks", POLICY_HOST_EXEC_HIDE,
			       POLICY_HOST_EXEC_PRESENT, ".git/hooks") &&
			   has(g, "/srv/main/.git/worktrees/wt/commondir",
			       POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_PRESENT,
			       ".git/worktrees"),
		   "a writable bind that is a git directory: its config, hooks, worktrees");
		fixture_done(&f);
	}

	/* The repository writable too: the worktree's git directory and the common one. */
	bind(&f, "/srv/wt", "/srv/wt", true);
	bind(&f, "/srv/main", "/srv/main", true);
	m = scan(p, &f, "/srv/wt", false, &r);
	ok(has(m, "/srv/main/.git/worktrees/wt/commondir", POLICY_HOST_EXEC_READ_ONLY,
	       POLICY_HOST_EXEC_PRESENT, ".git") &&
		   has(m, "/srv/main/.git/config", POLICY_HOST_EXEC_READ_ONLY,
		       POLICY_HOST_EXEC_PRESENT, ".git/config") &&
		   has(m, "/srv/main/.git/hooks", POLICY_HOST_EXEC_HIDE, POLICY_HOST_EXEC_PRESENT,
		       ".git/hooks") &&
		   has(m, "/srv/main/.git/worktrees", POLICY_HOST_EXEC_PIN,
		       POLICY_HOST_EXEC_PRESENT, ".git") &&
		   has(m, "/srv/main/.git/worktrees/wt", POLICY_HOST_EXEC_PIN,
		       POLICY_HOST_EXEC_PRESENT, ".git"),
	   "through the .git file and commondir: the common directory's config, hooks, info");
	fixture_done(&f);
}

static void test_oddities(void)
{
	_cleanup_policy_ struct policy *p = parse("{\"version\": 1}");
	_cleanup_host_exec_list_ struct policy_host_exec_list *l = NULL;
	struct fixture f = { 0 };
	_cleanup_free_ char *fifo = at("srv/odd/.git/config");
	int r;

	mkd("srv/odd/.git/hooks");
	mkd("srv/elsewhere");
	if (mkfifo(fifo, 0600) < 0)
		bail("mkfifo");
	if (symlinkat("../elsewhere", root_fd, "srv/odd/.vscode") < 0)
		bail("symlink");
	bind(&f, "/srv/odd", "/srv/odd", true);
	l = scan(p, &f, "/srv/odd", false, &r);
	is_int(0, r, "a fifo in place of a config is not read (the scan did not block)");
	ok(has(l, "/srv/odd/.vscode", POLICY_HOST_EXEC_READ_ONLY, POLICY_HOST_EXEC_SYMLINK,
	       ".vscode"),
	   "a symlink is listed as one (the compiler refuses it)");
	fixture_done(&f);
}

static void test_match(void)
{
	_cleanup_policy_ struct policy *p = parse("{\"version\": 1}");
	_cleanup_policy_ struct policy *q = parse(
		"{\"version\": 1, \"filesystem\": {\"hostExecuted\": {\"allow\": [\".envrc\", "
		"\".git/modules\"]}}}");
	static const struct {
		const char *rel, *id;
	} cases[] = {
		{ ".git/config", ".git/config" },
		{ "./.git/config.worktree", ".git/config" },
		{ ".git/hooks/pre-commit", ".git/hooks" },
		{ ".git/info/exclude", ".git/info" },
		{ ".git/commondir", ".git" },
		{ ".git", ".git" },
		{ "sub/.git", ".git" },
		{ ".git/modules/lib/a/config", ".git/config" },
		{ ".git/modules/x/hooks/post-checkout", ".git/hooks" },
		{ ".git/worktrees/wt/commondir", ".git/worktrees" },
		{ ".envrc", ".envrc" },
		{ "src/.envrc", ".envrc" },
		{ ".vscode/tasks.json", ".vscode" },
		{ ".config/mise/config.toml", ".config/mise" },
		{ ".git/objects/ab/cdef", NULL },
		{ ".git/refs/heads/main", NULL },
		{ ".git/index", NULL },
		{ ".git/worktrees/wt/HEAD", NULL },
		{ "src/main.c", NULL },
		{ "docs/.envrc.example", NULL },
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		is_str(cases[i].id, policy_host_exec_match(p, cases[i].rel), "match %s",
		       cases[i].rel);
	ok(!policy_host_exec_match(q, "src/.envrc") &&
		   !policy_host_exec_match(q, ".git/modules/lib/a/config") &&
		   streq_ptr(policy_host_exec_match(q, ".git/config"), ".git/config"),
	   "opted-out entries do not match");
	for (size_t i = 0; i < policy_host_exec_entries_count; i++)
		ok(policy_host_exec_entry_find(policy_host_exec_entries[i].id) ==
				   &policy_host_exec_entries[i] &&
			   policy_host_exec_entries[i].runs && policy_host_exec_entries[i].risk,
		   "entry %s: found by its id, says who runs it and what it risks",
		   policy_host_exec_entries[i].id);
}

static void test_created(void)
{
	_cleanup_free_ char *a = at("srv/created-a"), *b = at("srv/created-b");
	char *absent[] = { a, b, NULL };
	_cleanup_strv_free_ char **now = NULL;

	is_int(0, policy_host_exec_created(absent, &now), "check the absent ones");
	ok(!now, "none created");
	put("srv/created-b", "");
	is_int(0, policy_host_exec_created(absent, &now), "check again");
	ok(now && strv_length(now) == 1 && streq(now[0], b), "the one created is reported");
}

int main(void)
{
	plan_lazy();
	if (!mkdtemp(tmpdir))
		bail("mkdtemp");
	root_fd = open(tmpdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		bail("open root");
	test_repository();
	test_policy();
	test_worktree();
	test_oddities();
	test_match();
	test_created();
	close(root_fd);
	(void)tap_rm_rf(tmpdir);
	return tap_exit_status();
}
