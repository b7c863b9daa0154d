/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Policy compilation, golden: every fixture in tests/fixtures/valid is compiled for a fixed caller
 * (a fake launcher, a fake host tree under a temp dir, fixed cwd, home and MemTotal) and the
 * dump, seccomp pfc included, must equal tests/fixtures/golden/<name>.plan. Run with
 * CORDON_UPDATE_GOLDEN=1 to rewrite the golden files after an intended change.
 *
 * Also: missing paths name their field, secrets in the caller's environment never reach the
 * plan, fds are O_PATH / sealed, the seccomp cache works, host gaps fail unless optional; the
 * host-executed paths of the workspace are bound read-only (their directories pinned), a git
 * directory's missing hooks, info and config are made, a symlink among them or a workspace that
 * is the home directory is refused, and a cached plan is compiled again when they change.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "policy/policy-compile.h"
#include "policy/policy-dump.h"
#include "policy/policy-explain.h"
#include "policy/policy-parse.h"
#include "policy/policy-seccomp.h"
#include "tests/tap.h"

#define SECRET "hunter2-do-not-leak"

static char tmpdir[] = "/tmp/cordon-policy-compile-XXXXXX";
static char root[256];

static char *const test_argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)"echo hi", NULL };
static char *const test_envp[] = {
	(char *)"PATH=/usr/bin:/bin",
	(char *)"LANG=en_US.UTF-8",
	(char *)"TERM=xterm-256color",
	(char *)"HOME=/root",
	(char *)"SSH_AUTH_SOCK=/run/user/1000/ssh-agent",
	(char *)"AWS_SECRET_ACCESS_KEY=" SECRET,
	(char *)"LD_PRELOAD=/tmp/evil.so",
	NULL,
};

static struct compile_ctx base_ctx(void)
{
	return (struct compile_ctx){
		.argv = test_argv,
		.envp = test_envp,
		.cwd = "/home/user/project",
		.home = "/home/user",
		.uid = 1000,
		.gid = 1000,
		.caps = {
			.mode = POLICY_LAUNCHER_PRIVILEGED,
			.landlock_abi = 7,
			.seccomp = true,
			.cgroup = POLICY_CGROUP_V2,
			.userns = false,
			.floor_require_landlock = true,
			.floor_require_seccomp = true,
			.floor_max_network = POLICY_NETWORK_HOST,
		},
		.mem_total = 8ULL * 1024 * 1024 * 1024,
		.host_root = root,
	};
}

static void mk(const char *rel, bool dir)
{
	_cleanup_free_ char *p = strdup_printf("%s/%s", root, rel);

	if (!p)
		bail("oom");
	if (dir) {
		if (mkdir_p(p, 0755) < 0)
			bail("mkdir %s", p);
	} else {
		_cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

		if (fd < 0)
			bail("create %s", p);
	}
}

static void ln(const char *target, const char *rel)
{
	_cleanup_free_ char *p = strdup_printf("%s/%s", root, rel);

	if (!p || symlink(target, p) < 0)
		bail("symlink %s", rel);
}

static bool exists_in_root(const char *rel)
{
	_cleanup_free_ char *p = strdup_printf("%s/%s", root, rel);
	struct stat st;

	return p && lstat(p, &st) == 0;
}

/* A repository with the host-executed paths a project often has: direnv's .envrc, VS Code's
 * settings, a submodule (whose git directory lacks info: the compiler makes it). */
static void make_project(const char *dir)
{
	static const struct {
		const char *rel;
		bool dir;
	} tree[] = {
		{ "src", true },
		{ ".git/hooks", true },
		{ ".git/info", true },
		{ ".git/config", false },
		{ ".envrc", false },
		{ ".vscode", true },
		{ ".vscode/settings.json", false },
		{ ".git/modules/lib/hooks", true },
		{ ".git/modules/lib/HEAD", false },
		{ ".git/modules/lib/config", false },
	};

	for (size_t i = 0; i < ELEMENTSOF(tree); i++) {
		_cleanup_free_ char *p = strdup_printf("%s/%s", dir, tree[i].rel);

		if (!p)
			bail("oom");
		mk(p, tree[i].dir);
	}
}

/* A merged-/usr host without /lib64, with a user, a project and some secrets. */
static void make_host(void)
{
	if (!mkdtemp(tmpdir))
		bail("mkdtemp");
	(void)snprintf(root, sizeof(root), "%s/root", tmpdir);
	mk("usr/bin", true);
	mk("usr/lib", true);
	mk("usr/sbin", true);
	mk("etc", true);
	mk("etc/shadow", false);
	mk("etc/hosts", false);
	mk("opt/tool", true);
	mk("srv/data/private", true);
	mk("home/user/.ssh", true);
	mk("home/user/.cache", true);
	make_project("home/user/project");
	ln("usr/bin", "bin");
	ln("usr/lib", "lib");
	ln("usr/sbin", "sbin");
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p) < 0 ? -1 : 0;
}

static int compile_doc(const char *doc, const struct compile_ctx *ctx, struct compiled_plan **ret,
		       struct field_error *err)
{
	_cleanup_policy_ struct policy *p = NULL;
	int r = policy_parse_string(doc, strlen(doc), &p, err);

	if (r < 0)
		return r;
	return policy_compile(p, ctx, ret, err);
}

static void first_difference(const char *want, const char *got)
{
	unsigned line = 1;

	for (; *want && *want == *got; want++, got++)
		if (*want == '\n')
			line++;
	diag("first difference at line %u:", line);
	diag("  want: %.*s", (int)strcspn(want, "\n"), want);
	diag("  got:  %.*s", (int)strcspn(got, "\n"), got);
}

/* The golden pfc text is x86_64's; elsewhere compare everything before it. */
static void strip_foreign_pfc(char *s)
{
#if !defined(__x86_64__)
	char *p = s ? strstr(s, "seccomp pfc:\n") : NULL;

	if (p)
		*p = '\0';
#else
	(void)s;
#endif
}

static void test_golden(void)
{
	const char *src = getenv("top_srcdir") ? getenv("top_srcdir") : ".";
	_cleanup_free_ char *vdir = strdup_printf("%s/tests/fixtures/valid", src);
	bool update = getenv("CORDON_UPDATE_GOLDEN") != NULL;
	struct compile_ctx ctx = base_ctx();
	struct dirent **names = NULL;
	int n = scandir(vdir, &names, NULL, alphasort);
	unsigned count = 0;

	if (n < 0)
		bail("cannot list %s", vdir);
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *path = NULL, *gpath = NULL, *dump = NULL, *want = NULL;
		_cleanup_compiled_plan_ struct compiled_plan *plan = NULL;
		_cleanup_policy_ struct policy *p = NULL;
		_cleanup_free_ char *planjson = NULL;
		struct field_error err = { "", "" };
		const char *name = names[i]->d_name;
		int r;

		if (!endswith(name, ".json")) {
			free(names[i]);
			continue;
		}
		count++;
		path = strdup_printf("%s/%s", vdir, name);
		gpath = strdup_printf("%s/tests/fixtures/golden/%.*s.plan", src,
				      (int)(strlen(name) - 5), name);
		r = policy_parse_file(path, &p, &err);
		if (r >= 0)
			r = policy_compile(p, &ctx, &plan, &err);
		if (!ok(r == 0, "%s compiles", name))
			diag("%s: %s", err.field, err.reason);
		if (r < 0) {
			free(names[i]);
			continue;
		}
		is_int(0, policy_dump(plan, POLICY_DUMP_PFC, &dump), "%s dumps", name);
		planjson = json_dumps(plan->plan, JSON_COMPACT);
		ok(dump && planjson && !strstr(dump, SECRET) && !strstr(planjson, SECRET) &&
			   !strstr(planjson, "LD_PRELOAD") && !strstr(planjson, "SSH_AUTH_SOCK"),
		   "%s: the caller's secrets stay out of the plan", name);
		ok(planjson && !strstr(planjson, tmpdir),
		   "%s: no host-root path leaks into the plan", name);
		if (update && dump) {
			ok(write_file_atomic(gpath, dump, strlen(dump), 0644) == 0,
			   "%s: golden file rewritten", name);
		} else if (read_full_file(gpath, 1 << 20, &want, NULL) < 0) {
			ok(false, "%s: golden file %s readable", name, gpath);
		} else if (strip_foreign_pfc(want), strip_foreign_pfc(dump),
			   !is_str(want, dump, "%s matches its golden plan", name)) {
			first_difference(want, dump ? dump : "");
		}
		free(names[i]);
	}
	free(names);
	ok(count >= 4, "golden fixtures compiled (%u)", count);
}

static bool dump_has(const struct compiled_plan *plan, const char *needle)
{
	_cleanup_free_ char *d = NULL;

	return policy_dump(plan, 0, &d) == 0 && strstr(d, needle);
}

static void test_missing_paths(void)
{
	struct compile_ctx ctx = base_ctx();
	struct field_error err = { "", "" };
	_cleanup_compiled_plan_ struct compiled_plan *plan = NULL, *plan2 = NULL, *plan3 = NULL;

	is_int(-ENOENT,
	       compile_doc(
		       "{\"version\": 1, \"filesystem\": {\"read\": [\"/usr\", \"/opt/missing\"]}}",
		       &ctx, &plan, &err),
	       "a missing read path fails");
	is_str("filesystem.read[1]", err.field, "the missing path's field is named");
	is_str("\"/opt/missing\" does not exist", err.reason, "and why");

	is_int(-ENOENT,
	       compile_doc("{\"version\": 1, \"filesystem\": {\"write\": [\"~/nothing\"]}}", &ctx,
			   &plan, &err),
	       "a missing write path below ~ fails");
	is_str("filesystem.write[0]", err.field, "write path field named");

	is_int(0,
	       compile_doc(
		       "{\"version\": 1, \"filesystem\": {\"read\": [\"/usr\", \"/opt/missing\"]},"
		       " \"optional\": [\"path:/opt/missing\"]}",
		       &ctx, &plan2, &err),
	       "an optional missing path is skipped");
	ok(plan2 && strv_contains(plan2->skipped, "/opt/missing"), "and listed as skipped");

	is_int(0, compile_doc("{\"version\": 1}", &ctx, &plan3, &err),
	       "the default policy compiles although /lib64 is absent");
	ok(plan3 && strv_contains(plan3->skipped, "/lib64"), "absent default dirs are skipped");
	{
		_cleanup_compiled_plan_ struct compiled_plan *p5 = NULL;

		is_int(0,
		       compile_doc("{\"version\": 1, \"filesystem\": {\"read\": [\"/usr\", "
				   "\"/lib64\"]}}",
				   &ctx, &p5, &err),
		       "an explicitly listed default system dir may be absent too");
		ok(p5 && strv_contains(p5->skipped, "/lib64"), "and is skipped");
	}
	ok(plan3 && dump_has(plan3, "symlink /bin -> usr/bin"), "merged /usr: /bin is a symlink");
	ok(plan3 && dump_has(plan3, "deny /etc/shadow") && !dump_has(plan3, "deny /home/user/.ssh"),
	   "deny only where a bind exposes it");

	{
		_cleanup_compiled_plan_ struct compiled_plan *p4 = NULL;

		ctx.cwd = "/home/user/project/src";
		is_int(-EINVAL,
		       compile_doc("{\"version\": 1, \"filesystem\": {\"workspace\": {\"path\": "
				   "\"..\"}}}",
				   &ctx, &p4, &err),
		       "a workspace path with .. is refused at parse time");
		is_str("filesystem.workspace.path", err.field, "workspace path named");
	}
	ctx.cwd = "/";
	is_int(-EINVAL, compile_doc("{\"version\": 1}", &ctx, &plan, &err),
	       "a workspace resolving to / is refused");
	is_str("filesystem.workspace.path", err.field, "workspace field named");

	ctx = base_ctx();
	is_int(-EINVAL,
	       compile_doc("{\"version\": 1, \"filesystem\": {\"write\": [\"~/.ssh/x\"]}}", &ctx,
			   &plan, &err),
	       "a granted path below a denied one is refused");
	is_str("filesystem.write[0]", err.field, "its field is named");
}

static void test_cwd(void)
{
	struct compile_ctx ctx = base_ctx();
	struct field_error err = { "", "" };
	_cleanup_compiled_plan_ struct compiled_plan *a = NULL, *b = NULL, *c = NULL;
	const char *mapped = "{\"version\": 1, \"filesystem\": {\"workspace\": {\"path\": "
			     "\"~/project\", \"mountAt\": \"/work\"}}}";

	ctx.cwd = "/home/user/project/src";
	is_int(0, compile_doc(mapped, &ctx, &a, &err), "workspace with mountAt");
	is_str("/work/src", a ? json_string_value(json_object_get(a->plan, "cwd")) : NULL,
	       "the caller's cwd is mapped through mountAt");
	ctx.cwd = "/etc";
	is_int(0, compile_doc(mapped, &ctx, &b, &err), "cwd outside the workspace");
	is_str("/etc", b ? json_string_value(json_object_get(b->plan, "cwd")) : NULL,
	       "a cwd the sandbox shows at its own path stays");
	ctx.cwd = "/srv/data";
	is_int(0, compile_doc(mapped, &ctx, &c, &err), "cwd nowhere in the sandbox");
	is_str("/work", c ? json_string_value(json_object_get(c->plan, "cwd")) : NULL,
	       "else the workspace");
}

static void test_env(void)
{
	struct compile_ctx ctx = base_ctx();
	struct field_error err = { "", "" };
	_cleanup_compiled_plan_ struct compiled_plan *plan = NULL;
	json_t *envp;
	size_t i;
	json_t *v;
	bool home = false, path = false, lang = false, other = false;

	is_int(0,
	       compile_doc("{\"version\": 1, \"env\": {\"pass\": [\"PATH\", \"LANG\", \"NOPE\"], "
			   "\"set\": {\"LANG\": \"C.UTF-8\", \"X\": \"1\"}}}",
			   &ctx, &plan, &err),
	       "env policy compiles");
	envp = plan ? json_object_get(plan->plan, "envp") : NULL;
	json_array_foreach(envp, i, v) {
		const char *s = json_string_value(v);

		if (streq(s, "HOME=/home/user"))
			home = true;
		else if (streq(s, "PATH=/usr/bin:/bin"))
			path = true;
		else if (streq(s, "LANG=C.UTF-8"))
			lang = true;
		else if (!streq(s, "X=1"))
			other = true;
	}
	ok(home, "HOME is the sandbox's home");
	ok(path, "PATH passes from the caller");
	ok(lang, "env.set overrides a passed variable");
	ok(!other && json_array_size(envp) == 4, "nothing else crosses (%zu)",
	   json_array_size(envp));
}

static void test_fds_and_cache(void)
{
	struct compile_ctx ctx = base_ctx();
	struct field_error err = { "", "" };
	_cleanup_compiled_plan_ struct compiled_plan *a = NULL, *b = NULL;
	unsigned before, after;
	json_t *prog;
	struct stat st;
	int fd, idx;

	policy_seccomp_cache_clear();
	before = policy_seccomp_cache_misses();
	is_int(0, compile_doc("{\"version\": 1}", &ctx, &a, &err), "compile once");
	is_int(0, compile_doc("{\"version\": 1}", &ctx, &b, &err), "compile twice");
	after = policy_seccomp_cache_misses();
	is_int(1, (long long)(after - before), "libseccomp ran once for two equal specs");
	if (!a || !b)
		bail("no plans");

	prog = json_object_get(json_object_get(a->plan, "seccomp"), "program");
	ok(json_is_integer(prog), "plan.seccomp.program is an fd index");
	fd = a->fds[json_integer_value(prog)];
	ok(fcntl(fd, F_GET_SEALS) & F_SEAL_WRITE, "the program memfd is sealed");
	ok(fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size % sizeof(struct sock_filter) == 0,
	   "the program is whole sock_filter instructions (%lld bytes)", (long long)st.st_size);
	ok(fcntl(fd, F_GETFD) & FD_CLOEXEC, "the memfd is close-on-exec");
	ok((fcntl(a->fds[0], F_GETFL) & O_PATH) && (fcntl(a->fds[0], F_GETFD) & FD_CLOEXEC),
	   "bind sources are O_PATH and close-on-exec");

	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	idx = compiled_plan_add_fd(a, fd, "stdin");
	is_int((long long)a->n_fds - 1, idx, "compiled_plan_add_fd returns the next index");
	is_str("stdin", a->fd_what[idx], "and records what it is");
}

/* fd refers to what root/rel names now. */
static bool same_file(int fd, const char *rel)
{
	_cleanup_free_ char *p = strdup_printf("%s/%s", root, rel);
	struct stat a, b;

	return p && fd >= 0 && fstat(fd, &a) == 0 && stat(p, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static void rename_in_root(const char *from, const char *to)
{
	_cleanup_free_ char *a = strdup_printf("%s/%s", root, from),
			    *b = strdup_printf("%s/%s", root, to);

	if (!a || !b || rename(a, b) < 0)
		bail("rename %s %s", from, to);
}

static void rm_in_root(const char *rel)
{
	_cleanup_free_ char *p = strdup_printf("%s/%s", root, rel);

	if (!p || tap_rm_rf(p) < 0)
		bail("remove %s", rel);
}

/* The plan without argv, as text: what two requests of one policy share. */
static char *shared_part(json_t *plan)
{
	_cleanup_json_ json_t *c = json_deep_copy(plan);

	if (!c)
		return NULL;
	(void)json_object_del(c, "argv");
	return json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
}

static void test_recompile(void)
{
	struct compile_ctx ctx = base_ctx();
	struct field_error err = { "", "" };
	_cleanup_policy_ struct policy *p = NULL;
	_cleanup_compiled_plan_ struct compiled_plan *cached = NULL, *again = NULL, *moved = NULL,
						     *stale = NULL;
	static char *const argv2[] = { (char *)"/bin/echo", (char *)"two", NULL };
	_cleanup_free_ char *want = NULL, *got = NULL;
	int ws = -1;

	static const char doc[] = "{\"version\": 1}";

	if (policy_parse_string(doc, strlen(doc), &p, &err) < 0 ||
	    policy_resolve(p, &ctx, &err) < 0)
		bail("default policy: %s", err.reason);
	is_int(0, policy_compile(p, &ctx, &cached, &err), "compile the plan to keep");
	if (!cached)
		bail("no plan");
	for (size_t i = 0; i < cached->n_sources; i++)
		if (streq(cached->sources[i].host, "/home/user/project"))
			ws = cached->sources[i].fd_index;
	ok(ws >= 0 && (size_t)ws < cached->n_fds, "the workspace is a bind source (fd %d)", ws);
	if (ws < 0)
		return;
	compiled_plan_close_sources(cached);
	ok(cached->fds[ws] < 0, "a kept plan holds no bind-source fd");

	ctx.argv = argv2;
	is_int(0, policy_recompile(p, cached, &ctx, &again, &err), "recompile for another argv");
	want = shared_part(cached->plan);
	got = again ? shared_part(again->plan) : NULL;
	ok(want && got && streq(want, got), "the same plan apart from argv");
	is_str("/bin/echo",
	       again ? json_string_value(json_array_get(json_object_get(again->plan, "argv"), 0))
		     : NULL,
	       "with the new argv");
	is_str("/bin/sh",
	       json_string_value(json_array_get(json_object_get(cached->plan, "argv"), 0)),
	       "the kept plan keeps its own");
	is_int((long long)cached->n_fds, again ? (long long)again->n_fds : -1, "as many fds");
	ok(again && same_file(again->fds[ws], "home/user/project"),
	   "the bind source is opened again");

	rename_in_root("home/user/project", "home/user/project.old");
	make_project("home/user/project");
	mk("home/user/project/.git/modules/lib/info", true); /* as the first compile made it */
	is_int(0, policy_recompile(p, cached, &ctx, &moved, &err), "recompile after a replace");
	ok(moved && same_file(moved->fds[ws], "home/user/project") &&
		   !same_file(moved->fds[ws], "home/user/project.old"),
	   "a replaced directory is exposed as it is now, never as it was");
	rm_in_root("home/user/project");
	rename_in_root("home/user/project.old", "home/user/project");

	mk("lib64", true);
	is_int(-ESTALE, policy_recompile(p, cached, &ctx, &stale, &err),
	       "a default path that appeared: compile again");
	rm_in_root("lib64");
	rm_in_root("bin");
	ln("usr/sbin", "bin");
	is_int(-ESTALE, policy_recompile(p, cached, &ctx, &stale, &err),
	       "a symlink that points elsewhere: compile again");
	rm_in_root("bin");
	ln("usr/bin", "bin");
	rename_in_root("etc", "etc.x");
	is_int(-ESTALE, policy_recompile(p, cached, &ctx, &stale, &err),
	       "a bound path that vanished: compile again");
	rename_in_root("etc.x", "etc");
	is_int(0, policy_recompile(p, cached, &ctx, &stale, &err), "and all is well once restored");
	compiled_plan_free(TAKE_PTR(stale));
	ok(!stale, "(plan released)");

	/* The host-executed paths are scanned again: one that appears, or a new submodule. */
	mk("home/user/project/.env", false);
	is_int(-ESTALE, policy_recompile(p, cached, &ctx, &stale, &err),
	       "a host-executed path that appeared: compile again");
	rm_in_root("home/user/project/.env");
	mk("home/user/project/.git/modules/other", true);
	mk("home/user/project/.git/modules/other/HEAD", false);
	is_int(-ESTALE, policy_recompile(p, cached, &ctx, &stale, &err),
	       "a submodule that appeared: compile again");
	rm_in_root("home/user/project/.git/modules/other/HEAD");
	rm_in_root("home/user/project/.git/modules/other");
	is_int(0, policy_recompile(p, cached, &ctx, &stale, &err), "and all is well once gone");
	{
		int k = -1;

		for (size_t i = 0; i < cached->n_host_exec; i++)
			if (cached->host_exec_fds[i] >= 0)
				k = cached->host_exec_fds[i];
		ok(k >= 0 && cached->fds[k] < 0 && stale && stale->fds[k] >= 0,
		   "a kept plan holds no host-executed fd; a recompiled one opens them again");
	}
}

/* Compile doc with the caller in cwd; the dump, or NULL with err set. */
static struct compiled_plan *compile_in(const char *doc, const char *cwd, int *ret,
					struct field_error *err)
{
	struct compile_ctx ctx = base_ctx();
	struct compiled_plan *plan = NULL;

	ctx.cwd = cwd;
	*ret = compile_doc(doc, &ctx, &plan, err);
	return plan;
}

static void test_host_exec(void)
{
	struct field_error err = { "", "" };
	_cleanup_compiled_plan_ struct compiled_plan *a = NULL, *b = NULL, *c = NULL, *d = NULL,
						     *e = NULL, *f = NULL, *g = NULL;
	int r;

	/* The default: the workspace's host-executed paths are read-only binds over themselves;
	 * git's hooks hidden; the directories above them pinned by a read-write bind. */
	a = compile_in("{\"version\": 1}", "/home/user/project", &r, &err);
	is_int(0, r, "the default compiles in a repository");
	ok(a && dump_has(a, "bind /home/user/project/.git <- ") &&
		   dump_has(a, "-> /home/user/project/.git rw"),
	   "the git directory is pinned (bound read-write over itself)");
	ok(a && dump_has(a, "-> /home/user/project/.git/config ro") &&
		   dump_has(a, "-> /home/user/project/.git/info ro") &&
		   dump_has(a, "deny /home/user/project/.git/hooks"),
	   "its config and info are read-only, its hooks hidden");
	ok(a && dump_has(a, "-> /home/user/project/.envrc ro") &&
		   dump_has(a, "-> /home/user/project/.vscode ro"),
	   ".envrc and .vscode are read-only");
	ok(a && dump_has(a, "-> /home/user/project/.git/modules rw") &&
		   dump_has(a, "-> /home/user/project/.git/modules/lib rw") &&
		   dump_has(a, "-> /home/user/project/.git/modules/lib/config ro") &&
		   dump_has(a, "deny /home/user/project/.git/modules/lib/hooks") &&
		   dump_has(a, "-> /home/user/project/.git/modules/lib/info ro"),
	   "and so are a submodule's");
	ok(exists_in_root("home/user/project/.git/modules/lib/info"),
	   "a git directory's missing info is made, to be bound");
	ok(a && strv_contains(a->host_exec_absent, "/home/user/project/.env") &&
		   strv_contains(a->host_exec_absent, "/home/user/project/.git/commondir"),
	   "absent ones are listed (the sandbox could create them)");

	/* Opting out by name. */
	b = compile_in("{\"version\": 1, \"filesystem\": {\"hostExecuted\": "
		       "{\"allow\": [\".envrc\", \".git/modules\"]}}}",
		       "/home/user/project", &r, &err);
	is_int(0, r, "a policy opting out of .envrc and .git/modules compiles");
	ok(b && !dump_has(b, "/home/user/project/.envrc") &&
		   !dump_has(b, "/home/user/project/.git/modules") &&
		   dump_has(b, "-> /home/user/project/.git/config ro"),
	   "those are writable, the rest still read-only");
	c = compile_in("{\"version\": 1, \"filesystem\": {\"hostExecuted\": "
		       "{\"allow\": [\"*\"]}}}",
		       "/home/user/project", &r, &err);
	ok(r == 0 && c && !dump_has(c, "/home/user/project/.") && !c->host_exec_absent,
	   "\"*\" opts out of every one");

	/* A git directory's missing hooks, info and config are made, empty. */
	mk("home/user/fresh/.git/objects", true);
	mk("home/user/fresh/.git/HEAD", false);
	d = compile_in("{\"version\": 1}", "/home/user/fresh", &r, &err);
	ok(r == 0 && exists_in_root("home/user/fresh/.git/hooks") &&
		   exists_in_root("home/user/fresh/.git/info") &&
		   exists_in_root("home/user/fresh/.git/config"),
	   "a repository without hooks, info or config gets them, empty");
	ok(d && dump_has(d, "deny /home/user/fresh/.git/hooks") &&
		   dump_has(d, "-> /home/user/fresh/.git/config ro"),
	   "and they are protected like any other");

	/* A symlink among them cannot be kept read-only: refused unless opted out. */
	mk("home/user/linked/.git/hooks", true);
	mk("home/user/outside.envrc", false);
	ln("../outside.envrc", "home/user/linked/.envrc");
	e = compile_in("{\"version\": 1}", "/home/user/linked", &r, &err);
	is_int(-EPERM, r, "a symlinked .envrc is refused");
	is_str("filesystem.hostExecuted", err.field, "naming the field");
	ok(strstr(err.reason, "\".envrc\" in filesystem.hostExecuted.allow") != NULL,
	   "and the entry to opt out of: %s", err.reason);
	f = compile_in("{\"version\": 1, \"filesystem\": {\"hostExecuted\": "
		       "{\"allow\": [\".envrc\"]}}}",
		       "/home/user/linked", &r, &err);
	is_int(0, r, "…which makes it run");

	/* A repository whose configuration includes a file in the workspace, and puts its hooks
	 * there (husky-like): both read-only; the missing hooks directory is made. */
	mk("home/user/inc/.git/hooks", true);
	{
		_cleanup_free_ char *cfg = strdup_printf("%s/home/user/inc/.git/config", root);
		FILE *fp = cfg ? fopen(cfg, "we") : NULL;

		if (!fp)
			bail("write config");
		fputs("[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../project.gitconfig\n"
		      "[includeIf \"gitdir:~/\"]\n\tpath = \"/home/user/inc/local.gitconfig\" "
		      "# comment\n",
		      fp);
		fclose(fp);
	}
	mk("home/user/inc/project.gitconfig", false);
	mk("home/user/inc/local.gitconfig", false);
	g = compile_in("{\"version\": 1}", "/home/user/inc", &r, &err);
	ok(r == 0 && g && dump_has(g, "-> /home/user/inc/project.gitconfig ro") &&
		   dump_has(g, "-> /home/user/inc/local.gitconfig ro"),
	   "files the repository's configuration includes are read-only");
	ok(g && dump_has(g, "-> /home/user/inc/.githooks ro") &&
		   exists_in_root("home/user/inc/.githooks"),
	   "its core.hooksPath directory is made and read-only");

	/* Each kept path is a bind: too many submodules for one launcher message. */
	for (int i = 0; i < 24; i++) {
		_cleanup_free_ char *sub = strdup_printf("home/user/many/.git/modules/m%02d", i),
				    *head = strdup_printf("%s/HEAD", sub ? sub : "");

		if (!sub || !head)
			bail("oom");
		mk(sub, true);
		mk(head, false);
	}
	{
		_cleanup_compiled_plan_ struct compiled_plan *x = NULL, *y = NULL;

		x = compile_in("{\"version\": 1}", "/home/user/many", &r, &err);
		is_int(-E2BIG, r, "24 submodules: more binds than one launcher message carries");
		ok(streq(err.field, "filesystem.hostExecuted") &&
			   strstr(err.reason, ".git/modules"),
		   "the field is named, and what to opt out of: %s", err.reason);
		y = compile_in("{\"version\": 1, \"filesystem\": {\"hostExecuted\": "
			       "{\"allow\": [\".git/modules\"]}}}",
			       "/home/user/many", &r, &err);
		is_int(0, r, "…which compiles once .git/modules is opted out");
	}
}

static void test_home(void)
{
	struct field_error err = { "", "" };
	_cleanup_compiled_plan_ struct compiled_plan *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	int r;

	a = compile_in("{\"version\": 1}", "/home/user", &r, &err);
	is_int(-EPERM, r, "the home directory as the workspace is refused");
	is_str("filesystem.workspace.path", err.field, "naming the workspace");
	ok(strstr(err.reason, "filesystem.workspace.allowHome") != NULL, "with a hint: %s",
	   err.reason);
	b = compile_in("{\"version\": 1}", "/home", &r, &err);
	is_int(-EPERM, r, "so is a directory that contains it");
	c = compile_in("{\"version\": 1, \"filesystem\": {\"workspace\": "
		       "{\"path\": \"~\", \"allowHome\": true}}}",
		       "/home/user/project", &r, &err);
	is_int(0, r, "unless the policy allows it");
	ln("/home/user", "srv/home-link");
	d = compile_in("{\"version\": 1, \"filesystem\": {\"workspace\": "
		       "{\"path\": \"/srv/home-link\"}}}",
		       "/home/user/project", &r, &err);
	is_int(-EPERM, r, "a workspace that is the home through a symlink is refused too");
	rm_in_root("srv/home-link");
}

/* Occurrences of needle in the plan's dump. */
static int dump_count(const struct compiled_plan *plan, const char *needle)
{
	_cleanup_free_ char *d = NULL;
	int n = 0;

	if (policy_dump(plan, 0, &d) < 0)
		return -1;
	for (const char *s = d; (s = strstr(s, needle)); s += strlen(needle))
		n++;
	return n;
}

/*
 * A path listed again is the same grant, with the broadest access listed: the workspace given
 * again as an absolute write path (`cordon run --rw "$PWD"`) is one read-write bind. A listing
 * that conflicts (a granted path that is also denied) is still refused with its field named,
 * and a merged workspace keeps the workspace's own checks.
 */
static void test_duplicates(void)
{
	struct field_error err = { "", "" };
	_cleanup_compiled_plan_ struct compiled_plan *a = NULL, *b = NULL, *c = NULL, *d = NULL,
						     *e = NULL, *f = NULL;
	int r;

	a = compile_in("{\"version\": 1, \"filesystem\": {\"write\": [\"/home/user/project\"]}}",
		       "/home/user/project", &r, &err);
	if (!is_int(0, r, "the workspace listed again in write compiles"))
		diag("%s: %s", err.field, err.reason);
	is_int(1, a ? dump_count(a, "-> /home/user/project rw\n") : -1,
	       "as one read-write bind of the workspace");
	is_str("/home/user/project", a ? json_string_value(json_object_get(a->plan, "cwd")) : NULL,
	       "the command still starts in the workspace");

	b = compile_in("{\"version\": 1, \"filesystem\": {\"read\": [\"/home/user/project\"]}}",
		       "/home/user/project", &r, &err);
	is_int(0, r, "the read-write workspace listed again in read compiles");
	is_int(1, b ? dump_count(b, "-> /home/user/project rw\n") : -1,
	       "the broader grant is kept: one read-write bind");
	is_int(0, b ? dump_count(b, "-> /home/user/project ro\n") : -1, "and no read-only one");

	c = compile_in("{\"version\": 1, \"filesystem\": {\"read\": [\"/usr\", \"/opt/tool\"], "
		       "\"write\": [\"/opt/tool\"]}}",
		       "/home/user/project", &r, &err);
	is_int(0, r, "a path in read and write compiles");
	is_int(1, c ? dump_count(c, "-> /opt/tool rw\n") : -1, "as one read-write bind");

	d = compile_in("{\"version\": 1, \"filesystem\": {\"write\": [\"/srv/data\"], "
		       "\"deny\": [\"/srv/data\"]}}",
		       "/home/user/project", &r, &err);
	is_int(-EINVAL, r, "a path both written and denied is refused");
	is_str("filesystem.write[0]", err.field, "naming the granted path");

	e = compile_in("{\"version\": 1, \"filesystem\": {\"write\": [\"~\"]}}", "/home/user", &r,
		       &err);
	is_int(-EPERM, r, "the home as the workspace is refused though write lists it too");
	is_str("filesystem.workspace.path", err.field, "naming the workspace");
	ln("/home/user", "srv/home-link2");
	f = compile_in("{\"version\": 1, \"filesystem\": {\"write\": [\"/srv/home-link2\"]}}",
		       "/srv/home-link2", &r, &err);
	is_int(-EPERM, r, "…also when the workspace reaches it through a symlink");
	rm_in_root("srv/home-link2");
}

static void test_host_gaps(void)
{
	struct field_error err = { "", "" };
	struct compile_ctx ctx = base_ctx();
	_cleanup_compiled_plan_ struct compiled_plan *plan = NULL, *p2 = NULL, *p3 = NULL;

	ctx.caps.landlock_abi = 3;
	is_int(-EOPNOTSUPP,
	       compile_doc("{\"version\": 1, \"optional\": [], \"network\": {\"mode\": \"unix\"}}",
			   &ctx, &plan, &err),
	       "Landlock net on ABI 3 fails when required (network unix)");
	is_str("landlock.net", err.field, "the rule is named");
	is_int(0,
	       compile_doc("{\"version\": 1, \"network\": {\"mode\": \"unix\"}}", &ctx, &p2, &err),
	       "the default marks Landlock net and scope optional");
	ok(p2 && strv_contains(p2->unenforced, "landlock.net") &&
		   strv_contains(p2->unenforced, "landlock.scope"),
	   "and lists them as unenforced");
	ok(p2 && !dump_has(p2, "ioctl-dev") && dump_has(p2, "truncate"),
	   "rights are masked to the ABI");
	{
		_cleanup_compiled_plan_ struct compiled_plan *pn = NULL;

		is_int(0,
		       compile_doc("{\"version\": 1, \"optional\": [\"landlock.scope\"]}", &ctx,
				   &pn, &err),
		       "network none needs no Landlock TCP rules (ABI 3, net not optional)");
		ok(pn &&
			   streq_ptr(json_string_value(json_object_get(pn->plan, "network")),
				     "none") &&
			   !json_object_get(json_object_get(pn->plan, "landlock"), "net"),
		   "none: a loopback of its own, TCP on it not denied");
	}

	ctx = base_ctx();
	ctx.caps.cgroup = POLICY_CGROUP_NONE;
	is_int(-EOPNOTSUPP, compile_doc("{\"version\": 1}", &ctx, &plan, &err),
	       "no cgroup: the pids limit cannot be enforced");
	is_str("limits.pids", err.field, "limits.pids named");
	is_int(0,
	       compile_doc(
		       "{\"version\": 1, \"optional\": [\"limits.pids\", \"limits.memoryBytes\"]}",
		       &ctx, &p3, &err),
	       "optional limits are left out");
	ok(p3 && !json_object_get(p3->plan, "cgroup"), "no cgroup object then");
	{
		_cleanup_compiled_plan_ struct compiled_plan *p4 = NULL;
		_cleanup_json_ json_t *hello = json_loads(
			"{\"mode\": \"user\", \"landlockAbi\": 7, \"seccomp\": true, "
			"\"userns\": true, \"cgroup\": \"none\", \"pidsLimit\": \"rlimit-nproc\"}",
			0, NULL);
		json_t *cg;

		ok(hello && policy_host_caps_from_hello(hello, &ctx.caps, &err) >= 0 &&
			   ctx.caps.pids_nproc && ctx.caps.cgroup == POLICY_CGROUP_NONE,
		   "hello: pidsLimit rlimit-nproc in user mode");
		is_int(0, compile_doc("{\"version\": 1}", &ctx, &p4, &err),
		       "then the default compiles without a cgroup");
		cg = p4 ? json_object_get(p4->plan, "cgroup") : NULL;
		ok(json_integer_value(json_object_get(cg, "pidsMax")) == 1024 &&
			   !json_object_get(cg, "memoryMaxBytes") &&
			   strv_contains(p4->unenforced, "limits.memoryBytes"),
		   "pidsMax in the plan (RLIMIT_NPROC), the default's optional memory limit not");
	}

	ctx = base_ctx();
	ctx.caps.floor_max_network = POLICY_NETWORK_LOOPBACK;
	is_int(-EPERM,
	       compile_doc("{\"version\": 1, \"network\": {\"mode\": \"proxy\"}}", &ctx, &plan,
			   &err),
	       "the admin floor caps the network");
	is_str("network.mode", err.field, "network.mode named");

	ctx = base_ctx();
	ctx.caps.seccomp = false;
	is_int(-EOPNOTSUPP, compile_doc("{\"version\": 1}", &ctx, &plan, &err), "no seccomp fails");
	is_str("seccomp", err.field, "seccomp named");
	is_int(-EPERM,
	       compile_doc("{\"version\": 1, \"optional\": [\"seccomp\"]}", &ctx, &plan, &err),
	       "optional seccomp still fails under a floor that requires it");
}

/*
 * The compiled program loads into the kernel and does what the pfc says, in a forked child
 * (seccomp is irreversible): profile syscalls fail with their errno, others still work.
 */
static void test_seccomp_runs(void)
{
	struct compile_ctx ctx = base_ctx();
	struct field_error err = { "", "" };
	_cleanup_compiled_plan_ struct compiled_plan *plan = NULL;
	_cleanup_free_ struct sock_filter *insns = NULL;
	size_t len = 0;
	json_t *prog;
	int status = 0;
	pid_t pid;

	if (compile_doc("{\"version\": 1, \"syscalls\": {\"deny\": [\"mknodat\"]}}", &ctx, &plan,
			&err) < 0)
		bail("compile: %s: %s", err.field, err.reason);
	prog = json_object_get(json_object_get(plan->plan, "seccomp"), "program");
	if (read_full_fd(plan->fds[json_integer_value(prog)], 1 << 20, (char **)&insns, &len) < 0)
		bail("read program");
	pid = fork();
	if (pid < 0)
		bail("fork");
	if (pid == 0) {
		struct sock_fprog fp = { .len = (unsigned short)(len / sizeof(struct sock_filter)),
					 .filter = insns };
		char c = 'x';

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) < 0)
			_exit(10);
		if (chroot("/") == 0 || errno != EPERM)
			_exit(11);
		if (unshare(CLONE_NEWUTS) == 0 || errno != EPERM)
			_exit(12);
		if (syscall(SYS_clone3, NULL, 0) == 0 || errno != ENOSYS)
			_exit(13);
		if (ioctl(-1, TIOCSTI, &c) == 0 || errno != EPERM)
			_exit(14);
		if (mknodat(AT_FDCWD, "/nonexistent/x", S_IFIFO | 0600, 0) == 0 || errno != EPERM)
			_exit(15);
		if (getppid() <= 0 || ioctl(-1, FIONREAD, &status) == 0 || errno != EBADF)
			_exit(16);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		bail("waitpid");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 10) {
		skip(1, "seccomp filters cannot be loaded here");
		return;
	}
	is_int(0, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
	       "the program loads and denies chroot, unshare, clone3, TIOCSTI, mknodat (exit code "
	       "names the first failing check)");
}

/* explain says "ok" exactly when compile succeeds, over hosts and policies. */
static void test_explain_agrees(void)
{
	const char *docs[] = {
		"{\"version\": 1}",
		"{\"version\": 1, \"optional\": []}",
		"{\"version\": 1, \"optional\": [\"landlock\", \"seccomp\", \"limits.pids\"]}",
		"{\"version\": 1, \"network\": {\"mode\": \"loopback\"}, \"optional\": "
		"[\"limits.pids\", \"limits.memoryBytes\", \"landlock.scope\"]}",
		"{\"version\": 1, \"network\": {\"mode\": \"host\"}}",
	};
	unsigned checked = 0, disagree = 0;

	for (size_t d = 0; d < ELEMENTSOF(docs); d++)
		for (unsigned abi = 0; abi <= 7; abi++)
			for (int cg = 0; cg < 3; cg++) /* none, none + RLIMIT_NPROC, v2 */
				for (int sc = 0; sc < 2; sc++)
					for (int fl = 0; fl < 2; fl++) {
						struct compile_ctx ctx = base_ctx();
						_cleanup_policy_ struct policy *p = NULL;
						_cleanup_compiled_plan_ struct compiled_plan *plan =
							NULL;
						_cleanup_json_ json_t *x = NULL;
						struct field_error err = { "", "" };
						int r;

						ctx.caps.landlock_abi = abi;
						ctx.caps.cgroup = cg == 2 ? POLICY_CGROUP_V2
									  : POLICY_CGROUP_NONE;
						ctx.caps.pids_nproc = cg == 1;
						ctx.caps.seccomp = sc;
						ctx.caps.floor_require_landlock = fl;
						ctx.caps.floor_require_seccomp = fl;
						ctx.caps.floor_max_network =
							fl ? POLICY_NETWORK_PROXY
							   : POLICY_NETWORK_HOST;
						if (policy_parse_string(docs[d], strlen(docs[d]),
									&p, &err) < 0 ||
						    policy_explain(p, &ctx, &x) < 0)
							bail("explain %s", docs[d]);
						r = policy_compile(p, &ctx, &plan, &err);
						checked++;
						if ((r == 0) !=
						    streq(json_string_value(
								  json_object_get(x, "spawn")),
							  "ok")) {
							disagree++;
							diag("%s abi=%u cgroup=%d seccomp=%d floor=%d: "
							     "compile %d (%s: %s), explain %s",
							     docs[d], abi, cg, sc, fl, r, err.field,
							     err.reason,
							     json_string_value(
								     json_object_get(x, "spawn")));
						}
					}
	is_int(0, disagree, "explain and compile agree on %u host/policy pairs", checked);
}

int main(void)
{
	plan_lazy();
	make_host();
	test_golden();
	test_missing_paths();
	test_cwd();
	test_env();
	test_fds_and_cache();
	test_recompile();
	test_host_exec();
	test_home();
	test_duplicates();
	test_host_gaps();
	test_explain_agrees();
	test_seccomp_runs();
	policy_seccomp_cache_clear();
	(void)nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return tap_exit_status();
}
