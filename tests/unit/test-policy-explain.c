/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Explanations for hosts with and without Landlock net and scope, without cgroups, without
 * seccomp or Landlock at all; the text rendering; the caveats (read-only below writable, deny
 * below a grant); the host-executed paths of a real workspace (how each is kept, which are
 * absent, what an opted-out one risks, a symlink that fails the spawn), without a change to it;
 * the home directory as the workspace.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "policy/policy-explain.h"
#include "policy/policy-parse.h"
#include "tests/tap.h"

static struct compile_ctx host(unsigned abi, enum policy_cgroup cg, bool seccomp)
{
	return (struct compile_ctx){
		.cwd = "/home/u/proj",
		.home = "/home/u",
		.caps = { .mode = POLICY_LAUNCHER_PRIVILEGED,
			  .landlock_abi = abi,
			  .seccomp = seccomp,
			  .cgroup = cg,
			  .floor_max_network = POLICY_NETWORK_HOST },
		.mem_total = 8ULL << 30,
	};
}

static json_t *explain(const char *doc, const struct compile_ctx *ctx)
{
	_cleanup_policy_ struct policy *p = NULL;
	_cleanup_free_ char *d = strdup(doc);
	struct field_error err = { "", "" };
	json_t *x = NULL;

	if (!d)
		bail("oom");
	for (char *c = d; *c; c++)
		if (*c == '\'')
			*c = '"';
	if (policy_parse_string(d, strlen(d), &p, &err) < 0)
		bail("%s: %s: %s", doc, err.field, err.reason);
	if (policy_explain(p, ctx, &x) < 0)
		bail("explain failed");
	return x;
}

static json_t *rule(json_t *x, const char *id)
{
	size_t i;
	json_t *v;

	json_array_foreach(json_object_get(x, "rules"), i, v)
		if (streq(json_string_value(json_object_get(v, "rule")), id))
			return v;
	return NULL;
}

static const char *status(json_t *x, const char *id)
{
	return json_string_value(json_object_get(rule(x, id), "status"));
}

static bool has_text(json_t *x, const char *id, const char *list, const char *needle)
{
	size_t i;
	json_t *v;

	json_array_foreach(json_object_get(rule(x, id), list), i, v)
		if (strstr(json_string_value(v), needle))
			return true;
	return false;
}

static json_t *unenforced(json_t *x, const char *id)
{
	size_t i;
	json_t *v;

	json_array_foreach(json_object_get(x, "unenforced"), i, v)
		if (streq(json_string_value(json_object_get(v, "rule")), id))
			return v;
	return NULL;
}

static const char *spawn(json_t *x)
{
	return json_string_value(json_object_get(x, "spawn"));
}

static bool has_status(json_t *x, const char *id, const char *st)
{
	size_t i;
	json_t *v;

	json_array_foreach(json_object_get(x, "rules"), i, v)
		if (streq(json_string_value(json_object_get(v, "rule")), id) &&
		    streq_ptr(json_string_value(json_object_get(v, "status")), st))
			return true;
	return false;
}

static bool any_text(json_t *x, const char *id, const char *list, const char *needle)
{
	size_t i, k;
	json_t *v, *s;

	json_array_foreach(json_object_get(x, "rules"), i, v) {
		if (!streq(json_string_value(json_object_get(v, "rule")), id))
			continue;
		json_array_foreach(json_object_get(v, list), k, s)
			if (strstr(json_string_value(s), needle))
				return true;
		if (strstr(json_string_value(json_object_get(v, "what")), needle))
			return true;
	}
	return false;
}

static void touch(const char *dir, const char *rel, bool is_dir)
{
	_cleanup_free_ char *p = strdup_printf("%s/%s", dir, rel);
	int fd;

	if (!p)
		bail("oom");
	if (is_dir) {
		if (mkdir(p, 0755) < 0)
			bail("mkdir %s", p);
		return;
	}
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		bail("create %s", p);
	close(fd);
}

static void test_host_exec(void)
{
	char tmp[] = "/tmp/cordon-policy-explain-XXXXXX";
	_cleanup_free_ char *proj = NULL, *info = NULL, *link = NULL;
	struct compile_ctx c = host(7, POLICY_CGROUP_V2, true);

	if (!mkdtemp(tmp))
		bail("mkdtemp");
	proj = strdup_printf("%s/proj", tmp);
	info = strdup_printf("%s/proj/.git/info", tmp);
	link = strdup_printf("%s/proj/.env", tmp);
	if (!proj || !info || !link)
		bail("oom");
	touch(tmp, "proj", true);
	touch(tmp, "proj/.git", true);
	touch(tmp, "proj/.git/hooks", true);
	touch(tmp, "proj/.git/config", false);
	touch(tmp, "proj/.envrc", false);
	c.cwd = proj;
	c.home = tmp;
	{
		_cleanup_json_ json_t *x = explain("{'version': 1, 'filesystem': {'hostExecuted': "
						   "{'allow': ['.vscode']}}}",
						   &c);
		_cleanup_free_ char *text = NULL;

		is_str("ok", spawn(x), "a repository workspace: the spawn proceeds");
		ok(has_status(x, "filesystem.hostExecuted \".git/config\"", "enforced") &&
			   any_text(x, "filesystem.hostExecuted \".git/config\"", "layers",
				    "a read-only bind mount over itself") &&
			   any_text(x, "filesystem.hostExecuted \".git/config\"", "notes",
				    "core.fsmonitor"),
		   ".git/config: how it is kept read-only, and why");
		ok(any_text(x, "filesystem.hostExecuted \".git/hooks\"", "layers",
			    "an empty read-only mount over it"),
		   ".git/hooks: hidden");
		ok(any_text(x, "filesystem.hostExecuted \".envrc\"", "notes", "direnv"),
		   ".envrc: read-only, direnv named");
		ok(any_text(x, "filesystem.hostExecuted \".git/info\"", "layers",
			    "the spawn makes it, empty"),
		   "a missing .git/info: made at the spawn, then mounted over");
		ok(has_status(x, "filesystem.hostExecuted", "unprotected") &&
			   any_text(x, "filesystem.hostExecuted", "notes", ".env .idea") &&
			   any_text(x, "filesystem.hostExecuted", "notes", ".git/commondir") &&
			   any_text(x, "filesystem.hostExecuted", "notes",
				    "the sandbox can create them"),
		   "absent ones are listed as unprotected, and why");
		ok(has_status(x, "filesystem.hostExecuted.allow[0]", "unprotected") &&
			   any_text(x, "filesystem.hostExecuted.allow[0]", "notes",
				    "risk: a sandbox could run a program the next time you open"),
		   "an opted-out entry: what it risks");
		ok(access(info, F_OK) < 0, "explaining made nothing");
		ok(policy_explain_format_text(x, &text) == 0 && text &&
			   strstr(text, "[unprotected]"),
		   "text: unprotected entries are marked");
	}
	if (symlink(".envrc", link) < 0)
		bail("symlink");
	{
		_cleanup_json_ json_t *x = explain("{'version': 1}", &c);

		is_str("fails", spawn(x), "a symlinked host-executed path fails the spawn");
		ok(has_status(x, "filesystem.hostExecuted \".env\"", "fails") &&
			   any_text(x, "filesystem.hostExecuted \".env\"", "notes",
				    "list \".env\" in filesystem.hostExecuted.allow"),
		   "naming the entry to opt out of");
	}
	c.cwd = tmp;
	{
		_cleanup_json_ json_t *x = explain("{'version': 1}", &c),
				      *y = explain("{'version': 1, 'filesystem': {'workspace': "
						   "{'allowHome': true}}}",
						   &c);

		is_str("fails", spawn(x), "the home as the workspace fails");
		ok(has_status(x, "filesystem.workspace", "fails") &&
			   any_text(x, "filesystem.workspace", "notes",
				    "filesystem.workspace.allowHome"),
		   "with the way out named");
		is_str("ok", spawn(y), "allowHome: it proceeds");
		ok(any_text(y, "filesystem.workspace", "notes", "~/.bashrc"),
		   "saying what that exposes");
	}
	(void)tap_rm_rf(tmp);
}

int main(void)
{
	plan_lazy();
	{
		struct compile_ctx c = host(7, POLICY_CGROUP_V2, true);
		_cleanup_json_ json_t *x = explain("{'version': 1}", &c);
		_cleanup_free_ char *text = NULL;

		is_str("ok", spawn(x), "full host: the default policy is enforced");
		is_int(0, (long long)json_array_size(json_object_get(x, "unenforced")),
		       "full host: nothing unenforced");
		ok(has_text(x, "filesystem.read[0]", "layers", "read-only bind mount") &&
			   has_text(x, "filesystem.read[0]", "layers", "Landlock ABI 7"),
		   "read paths: mount namespace and Landlock");
		ok(has_text(x, "network.mode", "layers", "one of the sandbox's own") &&
			   !has_text(x, "network.mode", "layers", "TCP bind and connect denied"),
		   "network none: a netns of its own, TCP on its loopback allowed");
		ok(has_text(x, "landlock.scope", "layers", "scoped abstract unix sockets"),
		   "scope enforced by Landlock ABI 7");
		ok(has_text(x, "limits.pids", "layers", "cgroup v2: pids.max"),
		   "pids by cgroup v2");
		ok(has_text(x, "limits.memoryBytes", "layers", "memory.max"),
		   "memory by cgroup v2");
		is_str("at most 4294967296 bytes of memory",
		       json_string_value(json_object_get(rule(x, "limits.memoryBytes"), "what")),
		       "memory default resolved to half of MemTotal");
		ok(has_text(x, "syscalls", "layers", "seccomp"), "syscalls by seccomp");
		ok(has_text(x, "filesystem.deny[0]", "notes", "only the overmount hides it"),
		   "deny below /etc: Landlock cannot hide it, the overmount does");
		is_int(0, policy_explain_format_text(x, &text), "text rendering");
		ok(text && strstr(text, "Host: launcherd privileged mode, Landlock ABI 7") &&
			   strstr(text, "Result: every required rule is enforced"),
		   "text has the host line and the result");
		ok(text && !strstr(text, "Cannot be enforced"), "text: no unenforceable section");
	}
	{
		struct compile_ctx c = host(5, POLICY_CGROUP_V2, true);
		_cleanup_json_ json_t *x = explain("{'version': 1}", &c);
		json_t *u = unenforced(x, "landlock.scope");

		is_str("ok", spawn(x), "ABI 5: the default still spawns (scope is optional)");
		ok(u && json_is_true(json_object_get(u, "optional")),
		   "ABI 5: scope unenforced, optional");
		is_str("skipped", status(x, "landlock.scope"), "ABI 5: scope rule skipped");
		ok(!unenforced(x, "landlock.net"), "ABI 5: Landlock net is enforced");
	}
	{
		struct compile_ctx c = host(3, POLICY_CGROUP_V1, true);
		_cleanup_json_ json_t *x =
			explain("{'version': 1, 'optional': [], 'network': {'mode': 'unix'}}", &c);
		json_t *u = unenforced(x, "landlock.net");
		_cleanup_free_ char *text = NULL;

		is_str("fails", spawn(x), "ABI 3, nothing optional: the spawn fails");
		ok(u && json_is_false(json_object_get(u, "optional")), "landlock.net required");
		is_str("fails", status(x, "network.mode"), "network.mode rule fails");
		ok(unenforced(x, "landlock.scope") != NULL, "scope unenforced too");
		ok(has_text(x, "limits.pids", "layers", "cgroup v1"), "pids by cgroup v1");
		ok(rule(x, "filesystem.workspace") != NULL, "workspace rule present");
		ok(has_text(x, "filesystem.workspace", "layers", "truncate not handled") == false &&
			   has_text(x, "filesystem.workspace", "layers", "ioctl-dev not handled"),
		   "ABI 3: ioctl-dev gap named for writable paths");
		is_int(0, policy_explain_format_text(x, &text), "text rendering");
		ok(text && strstr(text, "Cannot be enforced on this host:") &&
			   strstr(text, "landlock.net: TCP rules need Landlock ABI 4, the launcher "
					"reports 3 (required: the spawn fails)") &&
			   strstr(text, "Result: the spawn fails on this host"),
		   "text names the failing rule and the result");
	}
	{
		struct compile_ctx c = host(7, POLICY_CGROUP_NONE, true);
		_cleanup_json_ json_t *x = explain("{'version': 1}", &c);
		_cleanup_json_ json_t *y = explain(
			"{'version': 1, 'optional': ['limits.pids', 'limits.memoryBytes']}", &c);

		is_str("fails", spawn(x), "no cgroups: the default fails");
		is_str("fails", status(x, "limits.pids"), "limits.pids fails");
		is_str("skipped", status(x, "limits.memoryBytes"),
		       "limits.memoryBytes skipped (optional in the default)");
		is_str("ok", spawn(y), "no cgroups, limits optional: ok");
		is_str("skipped", status(y, "limits.pids"), "limits.pids skipped");
		ok(has_text(y, "limits.files", "layers", "RLIMIT_NOFILE"), "files still by rlimit");
	}
	{
		/* User mode without a cgroup: pids by RLIMIT_NPROC in the sandbox's user namespace. */
		struct compile_ctx c = host(7, POLICY_CGROUP_NONE, true);
		_cleanup_json_ json_t *x = NULL;

		c.caps.mode = POLICY_LAUNCHER_USER;
		c.caps.userns = c.caps.pids_nproc = true;
		x = explain("{'version': 1}", &c);
		is_str("ok", spawn(x), "user mode, no cgroup, RLIMIT_NPROC: the default runs");
		is_str("enforced", status(x, "limits.pids"), "limits.pids enforced");
		ok(has_text(x, "limits.pids", "layers", "RLIMIT_NPROC"), "by RLIMIT_NPROC");
		is_str("skipped", status(x, "limits.memoryBytes"), "limits.memoryBytes skipped");
	}
	{
		struct compile_ctx c = host(0, POLICY_CGROUP_V2, false);
		_cleanup_json_ json_t *x = explain("{'version': 1}", &c);
		_cleanup_json_ json_t *y =
			explain("{'version': 1, 'optional': ['landlock', 'seccomp']}", &c);

		is_str("fails", spawn(x), "no Landlock, no seccomp: fails");
		ok(unenforced(x, "landlock") && unenforced(x, "seccomp"), "both named");
		ok(!unenforced(x, "landlock.net"), "no separate net entry without Landlock");
		is_str("ok", spawn(y), "both optional: ok");
		ok(has_text(y, "filesystem.read[0]", "notes", "only the mount namespace"),
		   "read paths then rest on the mount namespace alone");
		c.caps.floor_require_seccomp = true;
		{
			_cleanup_json_ json_t *z =
				explain("{'version': 1, 'optional': ['landlock', 'seccomp']}", &c);

			is_str("fails", spawn(z),
			       "optional seccomp under a floor requiring it fails");
		}
	}
	{
		struct compile_ctx c = host(7, POLICY_CGROUP_V2, true);
		_cleanup_json_ json_t *x = explain(
			"{'version': 1, 'filesystem': {'read': ['/usr', '~/proj/vendor']}}", &c);
		_cleanup_json_ json_t *y =
			explain("{'version': 1, 'network': {'mode': 'host'}}", &c);

		ok(has_text(x, "filesystem.read[1]", "notes", "only the read-only mount keeps"),
		   "read-only below the writable workspace is flagged");
		ok(has_text(y, "network.mode", "notes", "UDP"), "host mode: UDP caveat");
		ok(has_text(y, "network.mode", "layers", "TCP connect only to allowPorts (2)"),
		   "host mode: TCP connect limited to allowPorts");
		c.caps.floor_max_network = POLICY_NETWORK_PROXY;
		{
			_cleanup_json_ json_t *z =
				explain("{'version': 1, 'network': {'mode': 'host'}}", &c);

			is_str("fails", spawn(z), "host network above the floor fails");
			ok(has_text(z, "network.mode", "notes",
				    "admin floor allows at most \"proxy\""),
			   "the floor is named");
		}
	}
	test_host_exec();
	return tap_exit_status();
}
