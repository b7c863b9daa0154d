/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "policy/policy-default.h"
#include "policy/policy-parse.h"

/*
 * The workspace (the caller's cwd, unless that is the home directory or contains it) read-write,
 * but for its host-executed paths (git's configuration and hooks, .envrc, ...: see
 * policy-hostexec.c); system directories read-only, minus the secrets in /etc and the caller's
 * credentials; a private /tmp; an empty $HOME; no network; a minimal environment; finite limits
 * (1024 pids, half the RAM, 1024 fds, 4 MiB of output per stream), the memory limit where the
 * launcher has a cgroup for it (an ordinary user without a delegated cgroup has none: the
 * default must still run there).
 * Absent system directories (e.g. /lib64 on some hosts) are skipped because they come from here.
 */
const char policy_default_json[] =
	"{\n"
	"  \"version\": 1,\n"
	"  \"filesystem\": {\n"
	"    \"read\": [\"/usr\", \"/etc\", \"/lib\", \"/lib32\", \"/lib64\", \"/libx32\", \"/bin\",\n"
	"             \"/sbin\"],\n"
	"    \"write\": [],\n"
	"    \"deny\": [\"/etc/shadow\", \"/etc/gshadow\", \"/etc/shadow-\", \"/etc/gshadow-\",\n"
	"             \"~/.ssh\", \"~/.gnupg\", \"~/.aws\", \"~/.netrc\", \"~/.config/cordon\",\n"
	"             \"~/.local/share/cordon\"],\n"
	"    \"tmp\": \"private\",\n"
	"    \"home\": \"empty\",\n"
	"    \"workspace\": {\"path\": \".\", \"access\": \"read-write\", \"mountAt\": null,\n"
	"                  \"allowHome\": false},\n"
	"    \"hostExecuted\": {\"allow\": []}\n"
	"  },\n"
	"  \"network\": {\"mode\": \"none\", \"allowDomains\": [], \"denyDomains\": [],\n"
	"              \"allowPorts\": [80, 443], \"resolve\": []},\n"
	"  \"hostExecution\": false,\n"
	"  \"limits\": {\"pids\": 1024, \"memoryBytes\": 0, \"cpuSeconds\": 0, \"wallSeconds\": 0,\n"
	"             \"maxOutputBytes\": 4194304, \"files\": 1024},\n"
	"  \"env\": {\"pass\": [\"PATH\", \"LANG\", \"LC_ALL\", \"TERM\", \"TZ\"], \"set\": {}},\n"
	"  \"syscalls\": {\"profile\": \"default\", \"deny\": [], \"allow\": []},\n"
	"  \"optional\": [\"landlock.net\", \"landlock.scope\", \"limits.memoryBytes\"]\n"
	"}\n";

/* The same list as the default's filesystem.read (test-policy-parse checks they agree). */
static const char *const system_dirs[] = {
	"/usr", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin",
};

bool policy_default_is_system_dir(const char *path)
{
	for (size_t i = 0; i < ELEMENTSOF(system_dirs); i++)
		if (streq(path, system_dirs[i]))
			return true;
	return false;
}

int policy_default_new(struct policy **ret)
{
	_cleanup_policy_ struct policy *p = policy_new();
	_cleanup_json_ json_t *doc = NULL;
	struct field_error err;
	int r;

	if (!p)
		return -ENOMEM;
	r = ipc_json_parse_object(policy_default_json, strlen(policy_default_json), &doc, &err);
	if (r < 0)
		return r;
	r = policy_parse_overlay(p, doc, &err);
	if (r < 0)
		return r;
	p->fs.read_is_default = true;
	*ret = TAKE_PTR(p);
	return 0;
}
