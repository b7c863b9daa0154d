/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Policy parsing: every valid fixture parses; every invalid fixture is refused with the field
 * path and the reason its .expect sidecar names (line 1: field, line 2: reason); defaults fill
 * what a document leaves out; paths are canonicalized; policy_to_json() round-trips.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "policy/policy-default.h"
#include "policy/policy-parse.h"
#include "tests/tap.h"

static void test_invalid(void)
{
	_cleanup_free_ char *dir = strdup_printf("%s/tests/fixtures/invalid", tap_srcdir());
	_cleanup_strv_free_ char **names = tap_list_files(dir, ".json");

	ok(strv_length(names) >= 40, "at least 40 invalid fixtures (%zu)", strv_length(names));
	for (char **n = names; *n; n++) {
		_cleanup_free_ char *path = strdup_printf("%s/%s", dir, *n), *expect = NULL;
		_cleanup_policy_ struct policy *p = NULL;
		struct field_error err = { "", "" };
		const char *field, *reason;
		int r;

		expect = tap_read_expect(path, &field, &reason);

		r = policy_parse_file(path, &p, &err);
		ok(r < 0 && !p, "%s is refused (%d)", *n, r);
		is_str(field, err.field, "%s: field", *n);
		is_str(reason, err.reason, "%s: reason", *n);
	}
}

static void test_valid(void)
{
	_cleanup_free_ char *dir = strdup_printf("%s/tests/fixtures/valid", tap_srcdir());
	_cleanup_strv_free_ char **names = tap_list_files(dir, ".json");

	ok(strv_length(names) >= 4, "valid fixtures present");
	for (char **n = names; *n; n++) {
		_cleanup_free_ char *path = strdup_printf("%s/%s", dir, *n);
		_cleanup_policy_ struct policy *p = NULL, *q = NULL;
		_cleanup_json_ json_t *j1 = NULL, *j2 = NULL;
		struct field_error err = { "", "" };
		int r = policy_parse_file(path, &p, &err);

		if (!ok(r == 0, "%s parses", *n))
			diag("%s: %s", err.field, err.reason);
		if (r < 0)
			continue;
		/* Effective policy → JSON → policy → JSON is a fixed point. */
		ok(policy_to_json(p, &j1) == 0 && policy_parse_json(j1, &q, &err) == 0 &&
			   policy_to_json(q, &j2) == 0 && json_equal(j1, j2),
		   "%s round-trips through policy_to_json", *n);
	}
}

static void test_defaults(void)
{
	_cleanup_policy_ struct policy *p = NULL, *d = NULL;
	struct field_error err = { "", "" };
	const char doc[] = "{\"version\": 1, \"limits\": {\"pids\": 10}, "
			   "\"filesystem\": {\"workspace\": {\"access\": \"read-only\"}}}";

	is_int(0, policy_default_new(&d), "the embedded default policy parses");
	is_int(0, policy_parse_string(doc, strlen(doc), &p, &err), "a partial document parses");
	if (!p || !d)
		bail("no policy");
	is_int(10, (long long)p->limits.pids, "limits.pids overridden");
	is_int(1024, (long long)p->limits.files, "limits.files keeps its default");
	is_int(4194304, (long long)p->limits.max_output_bytes, "maxOutputBytes defaults to 4 MiB");
	is_int(0, (long long)p->limits.memory_bytes, "memoryBytes defaults to 0 (share of RAM)");
	ok(p->fs.read_is_default, "filesystem.read comes from the default");
	{
		size_t n = strv_length(d->fs.read);
		bool all = n == 8;

		for (size_t i = 0; i < n; i++)
			all = all && policy_default_is_system_dir(d->fs.read[i]);
		ok(all, "policy_default_is_system_dir() knows exactly the default's read list");
		ok(!policy_default_is_system_dir("/opt"), "and nothing else");
	}
	ok(strv_contains(p->fs.read, "/usr") && strv_contains(p->fs.read, "/etc") &&
		   strv_contains(p->fs.read, "/lib64") && strv_contains(p->fs.read, "/bin"),
	   "system directories are readable by default");
	is_int(0, (long long)strv_length(p->fs.write), "nothing else is writable by default");
	ok(strv_contains(p->fs.deny, "/etc/shadow") && strv_contains(p->fs.deny, "~/.ssh") &&
		   strv_contains(p->fs.deny, "~/.config/cordon"),
	   "secrets are denied by default");
	ok(p->fs.workspace.present && streq(p->fs.workspace.path, "."), "workspace is the cwd");
	ok(!p->fs.workspace.allow_home, "the home directory is not a workspace by default");
	ok(strv_length(d->fs.host_exec_allow) == 0, "every host-executed path is protected");
	ok(!strv_contains(d->fs.deny, "./.git/hooks"),
	   "git's hooks are a host-executed path, not a deny entry");
	is_int(POLICY_ACCESS_READ_ONLY, p->fs.workspace.access, "workspace access overridden");
	is_int(POLICY_TMP_PRIVATE, p->fs.tmp, "private /tmp");
	is_int(POLICY_HOME_EMPTY, p->fs.home, "empty $HOME");
	is_int(POLICY_NETWORK_NONE, p->net.mode, "no network");
	ok(!p->host_execution, "no host execution");
	ok(strv_contains(p->env.pass, "PATH") && !strv_contains(p->env.pass, "HOME") &&
		   strv_length(p->env.pass) == 5,
	   "minimal environment passed");
	is_int(POLICY_SYSCALLS_DEFAULT, p->syscalls.profile, "default syscall profile");
	ok(strv_contains(d->optional, "landlock.net") &&
		   strv_contains(d->optional, "landlock.scope") &&
		   strv_contains(d->optional, "limits.memoryBytes") &&
		   strv_length(d->optional) == 3,
	   "the default marks only Landlock net and scope and the memory limit optional");
	{
		const char doc2[] = "{\"version\": 1, \"filesystem\": {\"read\": [\"/usr\"], "
				    "\"workspace\": null}}";
		_cleanup_policy_ struct policy *q = NULL;

		is_int(0, policy_parse_string(doc2, strlen(doc2), &q, &err), "workspace null");
		ok(q && !q->fs.workspace.present, "workspace: null removes the workspace");
		ok(q && !q->fs.read_is_default, "an explicit read list is not the default");
	}
}

static void test_paths(void)
{
	const struct {
		const char *in, *out;
	} cases[] = {
		{ "/usr", "/usr" },
		{ "//usr///lib/", "/usr/lib" },
		{ "/./a/./b/.", "/a/b" },
		{ "/", "/" },
		{ "~", "~" },
		{ "~/", "~" },
		{ "~/.ssh", "~/.ssh" },
		{ "~//a/./b", "~/a/b" },
		{ ".", "." },
		{ "./", "." },
		{ "src", "./src" },
		{ "./src//x/", "./src/x" },
		{ ".git/hooks", "./.git/hooks" },
	};
	const char *bad[] = { "", "..", "/a/..", "a/../b", "~root", "~/..", "/a\nb" };

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *c = NULL;
		const char *reason = NULL;

		is_int(0, policy_path_canonicalize(cases[i].in, &c, &reason), "canonicalize %s",
		       cases[i].in);
		is_str(cases[i].out, c, "\"%s\" -> \"%s\"", cases[i].in, cases[i].out);
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		_cleanup_free_ char *c = NULL;
		const char *reason = NULL;

		is_int(-EINVAL, policy_path_canonicalize(bad[i], &c, &reason),
		       "refuse bad path %zu", i);
	}
	ok(policy_path_under("~/a/b", "~"), "~/a/b is under ~");
	ok(!policy_path_under("/home/u/a", "~"), "anchors never cover each other");
	ok(!policy_path_under("/usrx", "/usr"), "components, not prefixes");
	{
		_cleanup_free_ char *a = policy_path_resolve("~/.ssh", "/home/u", "/w");
		_cleanup_free_ char *b = policy_path_resolve("./src", "/home/u", "/w");
		_cleanup_free_ char *c = policy_path_resolve(".", "/home/u", "/");
		_cleanup_free_ char *d = policy_path_resolve("./x", "/home/u", "/");

		is_str("/home/u/.ssh", a, "~ resolves to home");
		is_str("/w/src", b, ". resolves to cwd");
		is_str("/", c, ". in / is /");
		is_str("/x", d, "./x in / is /x");
	}
}

static void test_resolve(void)
{
	_cleanup_policy_ struct policy *p = NULL;
	struct compile_ctx ctx = { .cwd = "/home/u/proj",
				   .home = "/home/u",
				   .mem_total = 8ULL << 30 };
	struct field_error err = { "", "" };
	const char doc[] = "{\"version\": 1, \"optional\": [\"path:~/.cache\"], "
			   "\"filesystem\": {\"write\": [\"~/.cache\"], "
			   "\"deny\": [\"~/.ssh\", \"build/secret\"]}}";

	is_int(0, policy_parse_string(doc, strlen(doc), &p, &err), "parse for resolve");
	if (!p)
		bail("no policy");
	is_int(0, policy_resolve(p, &ctx, &err), "resolve");
	is_str("/home/u/.cache", p->fs.write[0], "write path resolved");
	is_str("/home/u/proj", p->fs.workspace.path, "workspace resolved");
	ok(strv_contains(p->fs.deny, "/home/u/.ssh"), "deny resolved");
	ok(strv_contains(p->fs.deny, "/home/u/proj/build/secret"), "relative deny resolved");
	is_str("path:/home/u/.cache", p->optional[0], "optional path id resolved");
	is_int(4ULL << 30, (long long)p->limits.memory_bytes, "memory: half of MemTotal");
	is_int(2ULL << 30, (long long)policy_default_memory_bytes(0), "unknown MemTotal: 2 GiB");
	is_int(0, policy_validate(p, &err), "a resolved policy still validates");
}

/*
 * A path listed twice is one grant: a duplicate in one list is dropped, a path in both read and
 * write (or also the workspace) parses, and the compiler merges it (test-policy-compile.c).
 */
static void test_duplicates(void)
{
	static const char *const same[] = {
		"{\"version\": 1, \"filesystem\": {\"read\": [\"/usr\", \"/usr/\"]}}",
		"{\"version\": 1, \"filesystem\": {\"read\": [\"/srv\"], \"write\": [\"/srv\"]}}",
		"{\"version\": 1, \"filesystem\": {\"write\": [\".\"]}}",
		"{\"version\": 1, \"filesystem\": {\"read\": [\".\"], "
		"\"workspace\": {\"access\": \"read-only\"}}}",
	};
	static const char dups[] = "{\"version\": 1, \"filesystem\": {\"deny\": [\"/srv\", "
				   "\"/opt\", \"/srv/\"], \"write\": [\"/a\", \"/a\"]}}";
	static const char domains[] = "{\"version\": 1, \"network\": {\"mode\": \"proxy\", "
				      "\"allowDomains\": [\"a.org\", \"a.org\"]}}";
	_cleanup_policy_ struct policy *p = NULL;
	struct field_error err = { "", "" };

	for (size_t i = 0; i < ELEMENTSOF(same); i++) {
		_cleanup_policy_ struct policy *q = NULL;
		int r = policy_parse_string(same[i], strlen(same[i]), &q, &err);

		if (!is_int(0, r, "a path listed again parses: %s", same[i]))
			diag("%s: %s", err.field, err.reason);
	}
	is_int(0, policy_parse_string(dups, strlen(dups), &p, &err),
	       "duplicates in deny and write parse");
	is_int(2, p ? (int)strv_length(p->fs.deny) : -1, "deny keeps one of each");
	ok(p && streq(p->fs.deny[0], "/srv") && streq(p->fs.deny[1], "/opt"), "in their order");
	is_int(1, p ? (int)strv_length(p->fs.write) : -1, "write keeps one");
	p = policy_free(p);
	is_int(-EINVAL, policy_parse_string(domains, strlen(domains), &p, &err),
	       "lists that are not grants of paths still refuse duplicates");
	is_str("network.allowDomains[1]", err.field, "naming the entry");
}

static void test_file_limit(void)
{
	char path[] = "/tmp/cordon-policy-big-XXXXXX";
	_cleanup_close_ int fd = mkstemp(path);
	_cleanup_policy_ struct policy *p = NULL;
	struct field_error err = { "", "" };
	_cleanup_free_ char *big = malloc(POLICY_FILE_MAX + 2);

	if (fd < 0 || !big)
		bail("mkstemp");
	memset(big, ' ', POLICY_FILE_MAX + 1);
	big[0] = '{';
	big[POLICY_FILE_MAX] = '}';
	if (loop_write(fd, big, POLICY_FILE_MAX + 1) < 0)
		bail("write");
	is_int(-EFBIG, policy_parse_file(path, &p, &err), "a file over the limit is refused");
	is_str("larger than 1048576 bytes", err.reason, "size reason");
	(void)unlink(path);
	is_int(-ENOENT, policy_parse_file("/nonexistent/policy.json", &p, &err),
	       "a missing file is -ENOENT");
}

/* Every JSON example of docs/POLICY.md parses, and the default shown is the embedded one. */
static void test_docs(void)
{
	_cleanup_free_ char *path = strdup_printf("%s/docs/POLICY.md", tap_srcdir()), *doc = NULL;
	unsigned n = 0;
	bool default_shown = false;
	char *c;

	if (!path || read_full_file(path, 1 << 20, &doc, NULL) < 0)
		bail("cannot read docs/POLICY.md");
	for (c = doc; (c = strstr(c, "```json\n"));) {
		_cleanup_policy_ struct policy *p = NULL;
		struct field_error err = { "", "" };
		char *end;

		c += 8;
		end = strstr(c, "```");
		if (!end)
			break;
		*end = '\0';
		n++;
		if (!ok(policy_parse_string(c, strlen(c), &p, &err) == 0, "docs example %u parses",
			n))
			diag("%s: %s", err.field, err.reason);
		if (streq(c, policy_default_json))
			default_shown = true;
		c = end + 3;
	}
	ok(n >= 3, "docs/POLICY.md has JSON examples (%u)", n);
	ok(default_shown, "docs/POLICY.md shows the embedded default policy verbatim");
}

int main(void)
{
	plan_lazy();
	test_invalid();
	test_valid();
	test_defaults();
	test_paths();
	test_resolve();
	test_duplicates();
	test_file_limit();
	test_docs();
	return tap_exit_status();
}
