/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Narrowing: each kind of widening is refused with the child's field named (and the reason
 * checked); each kind of narrowing is accepted. Documents are written with ' for " to keep them
 * readable.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "policy/policy-narrow.h"
#include "policy/policy-parse.h"
#include "tests/tap.h"

static struct policy *parse(const char *doc)
{
	_cleanup_free_ char *d = strdup(doc);
	struct policy *p = NULL;
	struct field_error err = { "", "" };

	if (!d)
		bail("oom");
	for (char *c = d; *c; c++)
		if (*c == '\'')
			*c = '"';
	if (policy_parse_string(d, strlen(d), &p, &err) < 0)
		bail("fixture does not parse: %s: %s: %s", doc, err.field, err.reason);
	return p;
}

static void widening(const char *what, const char *parent, const char *child, const char *field,
		     const char *reason)
{
	_cleanup_policy_ struct policy *p = parse(parent), *c = parse(child);
	struct field_error err = { "", "" };

	is_int(-EPERM, policy_narrow(p, c, &err), "widening refused: %s", what);
	is_str(field, err.field, "%s: field", what);
	if (reason)
		is_str(reason, err.reason, "%s: reason", what);
}

static void narrowing(const char *what, const char *parent, const char *child)
{
	_cleanup_policy_ struct policy *p = parse(parent), *c = parse(child);
	struct field_error err = { "", "" };
	int r = policy_narrow(p, c, &err);

	if (!is_int(0, r, "narrowing accepted: %s", what))
		diag("%s: %s", err.field, err.reason);
}

#define V "{'version': 1, "
#define FS_PROXY "'network': {'mode': 'proxy', "

static void test_filesystem(void)
{
	widening("a new read path", V "'filesystem': {'read': ['/usr']}}",
		 V "'filesystem': {'read': ['/usr', '/opt']}}", "filesystem.read[1]",
		 "\"/opt\" is not visible in the parent");
	widening("read-only made writable", V "'filesystem': {'read': ['/srv']}}",
		 V "'filesystem': {'read': [], 'write': ['/srv']}}", "filesystem.write[0]",
		 "\"/srv\" is not writable in the parent");
	widening("a read-only subtree made writable",
		 V "'filesystem': {'read': ['/srv/ro'], 'write': ['/srv']}}",
		 V "'filesystem': {'read': [], 'write': ['/srv']}}", "filesystem.write[0]",
		 "\"/srv/ro\" (below \"/srv\") is read-only in the parent, writable here");
	widening("a parent deny dropped",
		 V "'filesystem': {'read': ['/etc'], 'deny': ['/etc/shadow']}}",
		 V "'filesystem': {'read': ['/etc'], 'deny': []}}", "filesystem.read[0]",
		 "\"/etc/shadow\" (below \"/etc\") is not visible in the parent, read-only here");
	widening("a read path below a parent deny",
		 V "'filesystem': {'read': ['/etc'], 'deny': ['/etc/ssl']}}",
		 V "'filesystem': {'read': ['/etc/ssl/certs'], 'deny': []}}", "filesystem.read[0]",
		 "\"/etc/ssl/certs\" is not visible in the parent");
	widening("workspace read-only made read-write",
		 V "'filesystem': {'workspace': {'access': 'read-only'}}}",
		 V "'filesystem': {'workspace': {'access': 'read-write'}}}",
		 "filesystem.workspace.access", NULL);
	widening("workspace moved outside", V "'filesystem': {'workspace': {'path': '/w'}}}",
		 V "'filesystem': {'workspace': {'path': '/x'}}}", "filesystem.workspace.path",
		 "\"/x\" is not visible in the parent");
	widening("a workspace where the parent has none", V "'filesystem': {'workspace': null}}",
		 V "'filesystem': {}}", "filesystem.workspace.path", NULL);
	widening("private /tmp under no /tmp", V "'filesystem': {'tmp': 'none'}}",
		 V "'filesystem': {'tmp': 'private'}}", "filesystem.tmp", "the parent has no /tmp");
	widening("writable home under an empty one", V "'filesystem': {'home': 'empty'}}",
		 V "'filesystem': {'home': 'tmpfs'}}", "filesystem.home", NULL);
	widening("~ against an absolute parent path (unresolved)",
		 V "'filesystem': {'write': ['/home/u/proj'], 'workspace': null}}",
		 V "'filesystem': {'write': ['~/proj'], 'workspace': null}}", "filesystem.write[0]",
		 "\"~/proj\" is not visible in the parent");

	narrowing("the same policy", "{'version': 1}", "{'version': 1}");
	narrowing("fewer read paths", V "'filesystem': {'read': ['/usr', '/etc']}}",
		  V "'filesystem': {'read': ['/usr']}}");
	narrowing("a read path below a parent read path", V "'filesystem': {'read': ['/usr']}}",
		  V "'filesystem': {'read': ['/usr/lib']}}");
	narrowing("write made read-only", V "'filesystem': {'write': ['/srv']}}",
		  V "'filesystem': {'write': [], 'read': ['/srv']}}");
	narrowing("a read-only subtree of a writable one", V "'filesystem': {'write': ['/srv']}}",
		  V "'filesystem': {'write': ['/srv'], 'read': ['/srv/conf']}}");
	narrowing("more denied", V "'filesystem': {'read': ['/etc'], 'deny': []}}",
		  V "'filesystem': {'read': ['/etc'], 'deny': ['/etc/ssl', '/etc/shadow']}}");
	narrowing("a parent deny kept by not exposing it",
		  V "'filesystem': {'read': ['/etc', '/usr'], 'deny': ['/etc/shadow']}}",
		  V "'filesystem': {'read': ['/usr'], 'deny': []}}");
	narrowing("workspace read-write to read-only",
		  V "'filesystem': {'workspace': {'access': 'read-write'}}}",
		  V "'filesystem': {'workspace': {'access': 'read-only', 'mountAt': '/work'}}}");
	narrowing("workspace dropped", "{'version': 1}", V "'filesystem': {'workspace': null}}");
	narrowing("/tmp dropped, home made read-only",
		  V "'filesystem': {'tmp': 'private', 'home': 'tmpfs'}}",
		  V "'filesystem': {'tmp': 'none', 'home': 'empty'}}");

	/* Host-executed paths: opting out widens; protecting more narrows. */
	widening("a host-executed path opted out", V "'filesystem': {}}",
		 V "'filesystem': {'hostExecuted': {'allow': ['.envrc']}}}",
		 "filesystem.hostExecuted.allow[0]", "\".envrc\" is protected by the parent");
	widening("every host-executed path opted out",
		 V "'filesystem': {'hostExecuted': {'allow': ['.envrc', '.env']}}}",
		 V "'filesystem': {'hostExecuted': {'allow': ['*']}}}",
		 "filesystem.hostExecuted.allow[0]", "\"*\" is protected by the parent");
	widening("the home allowed as the workspace", V "'filesystem': {}}",
		 V "'filesystem': {'workspace': {'allowHome': true}}}",
		 "filesystem.workspace.allowHome",
		 "the parent does not allow the home directory as a workspace");
	narrowing("a host-executed path protected again",
		  V "'filesystem': {'hostExecuted': {'allow': ['.envrc', '.env']}}}",
		  V "'filesystem': {'hostExecuted': {'allow': ['.env']}}}");
	narrowing("one opted out under all opted out",
		  V "'filesystem': {'hostExecuted': {'allow': ['*']}}}",
		  V "'filesystem': {'hostExecuted': {'allow': ['.vscode']}}}");
	narrowing("the home no longer allowed",
		  V "'filesystem': {'workspace': {'allowHome': true}}}", V "'filesystem': {}}");
}

static void test_network(void)
{
	widening("network none to proxy", "{'version': 1}", V "'network': {'mode': 'proxy'}}",
		 "network.mode", "\"proxy\" is wider than the parent's \"none\"");
	widening("proxy to host", V FS_PROXY "'allowDomains': ['a.com']}}",
		 V "'network': {'mode': 'host'}}", "network.mode", NULL);
	widening("a domain outside the parent's", V FS_PROXY "'allowDomains': ['*.example.com']}}",
		 V FS_PROXY "'allowDomains': ['api.example.com', 'evil.com']}}",
		 "network.allowDomains[1]", "\"evil.com\" is not allowed by the parent");
	widening("the apex under a wildcard", V FS_PROXY "'allowDomains': ['*.example.com']}}",
		 V FS_PROXY "'allowDomains': ['example.com']}}", "network.allowDomains[0]", NULL);
	widening("an exact name made a wildcard",
		 V FS_PROXY "'allowDomains': ['api.example.com']}}",
		 V FS_PROXY "'allowDomains': ['*.example.com']}}", "network.allowDomains[0]", NULL);
	widening("another port for a port-pinned domain",
		 V FS_PROXY "'allowDomains': ['example.com:443']}}",
		 V FS_PROXY "'allowDomains': ['example.com:8443']}}", "network.allowDomains[0]",
		 NULL);
	widening("a port-pinned domain outside allowPorts",
		 V FS_PROXY "'allowDomains': ['example.com'], 'allowPorts': [443]}}",
		 V FS_PROXY "'allowDomains': ['example.com:22'], 'allowPorts': [443]}}",
		 "network.allowDomains[0]", NULL);
	widening("a parent denyDomains dropped",
		 V FS_PROXY "'allowDomains': ['*.example.com'], 'denyDomains': ['x.example.com']}}",
		 V FS_PROXY "'allowDomains': ['*.example.com']}}", "network.denyDomains",
		 "the parent denies \"x.example.com\"; keep it denied");
	widening("another port", V FS_PROXY "'allowPorts': [443]}}",
		 V FS_PROXY "'allowPorts': [443, 80]}}", "network.allowPorts[1]",
		 "port 80 is not allowed by the parent");
	widening("a new address pin", V FS_PROXY "'allowDomains': ['a.com']}}",
		 V FS_PROXY "'allowDomains': ['a.com'], 'resolve': ['a.com=10.0.0.1']}}",
		 "network.resolve[0]", NULL);
	widening("host execution", V "'hostExecution': false}", V "'hostExecution': true}",
		 "hostExecution", "the parent does not allow host execution");

	narrowing("proxy to none", V FS_PROXY "'allowDomains': ['a.com']}}", "{'version': 1}");
	narrowing("loopback to none", V "'network': {'mode': 'loopback'}}", "{'version': 1}");
	narrowing("a subset of domains",
		  V FS_PROXY
		  "'allowDomains': ['*.example.com', 'pypi.org'], 'allowPorts': [80, 443]}}",
		  V FS_PROXY "'allowDomains': ['api.example.com', '*.cdn.example.com', "
			     "'pypi.org:443'], 'allowPorts': [443]}}");
	narrowing("more denied domains", V FS_PROXY "'allowDomains': ['*.example.com']}}",
		  V FS_PROXY
		  "'allowDomains': ['*.example.com'], 'denyDomains': ['x.example.com']}}");
	narrowing("host execution given up", V "'hostExecution': true}", "{'version': 1}");
}

static void test_limits_env_syscalls(void)
{
	widening("more pids", "{'version': 1}", V "'limits': {'pids': 2048}}", "limits.pids",
		 "2048 is above the parent's 1024");
	widening("no wall limit under one", V "'limits': {'wallSeconds': 60}}", "{'version': 1}",
		 "limits.wallSeconds", "0 (none) is above the parent's 60");
	widening("more cpu", V "'limits': {'cpuSeconds': 60}}", V "'limits': {'cpuSeconds': 61}}",
		 "limits.cpuSeconds", NULL);
	widening("more output", "{'version': 1}", V "'limits': {'maxOutputBytes': 4194305}}",
		 "limits.maxOutputBytes", NULL);
	widening("more files", "{'version': 1}", V "'limits': {'files': 4096}}", "limits.files",
		 NULL);
	widening("more memory", V "'limits': {'memoryBytes': 1073741824}}",
		 V "'limits': {'memoryBytes': 2147483648}}", "limits.memoryBytes",
		 "2147483648 is above the parent's 1073741824");
	widening("the default share under an explicit memory limit",
		 V "'limits': {'memoryBytes': 1073741824}}", "{'version': 1}", "limits.memoryBytes",
		 NULL);
	widening("another variable passed", "{'version': 1}",
		 V "'env': {'pass': ['PATH', 'AWS_SECRET_KEY']}}", "env.pass[1]",
		 "the parent does not pass \"AWS_SECRET_KEY\"");
	widening("strict to default", V "'syscalls': {'profile': 'strict'}}", "{'version': 1}",
		 "syscalls.profile", "\"default\" is wider than the parent's \"strict\"");
	widening("a profile syscall allowed", "{'version': 1}",
		 V "'syscalls': {'allow': ['chroot']}}", "syscalls.allow[0]",
		 "\"chroot\" is denied by the parent");
	widening("a parent deny dropped", V "'syscalls': {'deny': ['mknod']}}", "{'version': 1}",
		 "syscalls.deny", "\"mknod\" is denied by the parent; add it");
	widening("something made optional", V "'optional': []}", V "'optional': ['seccomp']}",
		 "optional[0]", "\"seccomp\" is required by the parent");

	narrowing("lower limits everywhere",
		  V "'limits': {'wallSeconds': 60, 'cpuSeconds': 30, 'memoryBytes': 1073741824}}",
		  V "'limits': {'pids': 10, 'wallSeconds': 5, 'cpuSeconds': 1, "
		    "'memoryBytes': 104857600, 'maxOutputBytes': 1024, 'files': 64}}");
	narrowing("a wall limit where the parent has none", "{'version': 1}",
		  V "'limits': {'wallSeconds': 1}}");
	narrowing("fewer variables, any set", "{'version': 1}",
		  V "'env': {'pass': ['PATH'], 'set': {'CI': '1'}}}");
	narrowing("default to strict", "{'version': 1}", V "'syscalls': {'profile': 'strict'}}");
	narrowing("more syscalls denied", V "'syscalls': {'allow': ['ioctl']}}",
		  V "'syscalls': {'deny': ['ioctl', 'mknod']}}");
	narrowing("an outright deny for a conditional one", "{'version': 1}",
		  V "'syscalls': {'deny': ['clone3']}}");
	narrowing("fewer optional rules", "{'version': 1}", V "'optional': ['landlock.scope']}");
}

static void test_resolved(void)
{
	_cleanup_policy_ struct policy *p =
		parse(V "'filesystem': {'write': ['/home/u/proj'], 'workspace': null}}");
	_cleanup_policy_ struct policy *c =
		parse(V "'filesystem': {'write': ['~/proj/src'], 'workspace': null}}");
	struct compile_ctx ctx = { .cwd = "/home/u", .home = "/home/u", .mem_total = 1ULL << 33 };
	struct field_error err = { "", "" };

	is_int(-EPERM, policy_narrow(p, c, &err), "unresolved anchors do not compare");
	is_int(0, policy_resolve(p, &ctx, &err), "resolve parent");
	is_int(0, policy_resolve(c, &ctx, &err), "resolve child");
	is_int(0, policy_narrow(p, c, &err), "resolved, ~/proj/src is below /home/u/proj");

	{
		_cleanup_policy_ struct policy *pm = parse("{'version': 1}");
		_cleanup_policy_ struct policy *cm =
			parse(V "'limits': {'memoryBytes': 1073741824}}");

		is_int(-EPERM, policy_narrow(pm, cm, &err),
		       "explicit memory vs an unresolved share");
		is_int(0, policy_resolve(pm, &ctx, &err), "resolve memory");
		is_int(0, policy_resolve(cm, &ctx, &err), "resolve the child too");
		is_int(0, policy_narrow(pm, cm, &err), "1 GiB is below half of 8 GiB");
	}
}

int main(void)
{
	plan_lazy();
	test_filesystem();
	test_network();
	test_limits_env_syscalls();
	test_resolved();
	return tap_exit_status();
}
