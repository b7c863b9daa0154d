/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * policy_suggest() (policy-suggest.h). Per refusal:
 *   - a file (Landlock "fs"): policy.explain's rule for the path says what to widen: a write
 *     refused under a read-only filesystem.read entry gets a filesystem.write entry for the
 *     path's nearest existing directory, under the read-only workspace the workspace's access,
 *     on a host-executed path its filesystem.hostExecuted.allow entry; a read refused gets a
 *     filesystem.read entry for the path. The sandbox's own /proc, /dev, /tmp, home: nothing.
 *   - TCP (Landlock "net"): "host" gets the port in network.allowPorts; a narrower mode, which
 *     never reaches a port directly, network.mode "host" with that port.
 *   - a system call (seccomp): in the profile, syscalls.allow; in syscalls.deny, its removal (a
 *     patch cannot remove: said in words); refused by launcherd's floor: nothing.
 *   - Landlock scoping: nothing (no policy rule lifts it).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "policy/policy-model.h"
#include "policy/policy-suggest.h"
#include "policy/policy-syscalls.h"

/* What launcherd's floor refuses whatever the policy (docs/PROTOCOL.md 1.5): outright, and
 * those it refuses for some arguments the record does not carry (a namespace flag, a socket
 * family, a terminal ioctl), which no policy lifts either. */
static const char *const floor_outright[] = { "setns",
					      "mount",
					      "umount2",
					      "pivot_root",
					      "chroot",
					      "open_tree",
					      "move_mount",
					      "fsopen",
					      "fsconfig",
					      "fsmount",
					      "fspick",
					      "mount_setattr",
					      "kexec_load",
					      "kexec_file_load",
					      "init_module",
					      "finit_module",
					      "delete_module",
					      "bpf",
					      "perf_event_open",
					      "userfaultfd",
					      "keyctl",
					      "add_key",
					      "request_key",
					      "io_uring_setup",
					      "io_uring_enter",
					      "io_uring_register",
					      "acct",
					      "swapon",
					      "swapoff",
					      "reboot",
					      "modify_ldt",
					      NULL };
static const char *const floor_by_argument[] = { "clone", "clone3",	"unshare",
						 "ioctl", "socketpair", NULL };

static bool in_list(const char *const *l, const char *s)
{
	for (; *l; l++)
		if (streq(*l, s))
			return true;
	return false;
}

static bool json_strv_has(json_t *arr, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach(arr, i, v)
		if (streq_ptr(json_string_value(v), s))
			return true;
	return false;
}

/* patch.obj.key gets value (an object member set, or with append an array entry added once). */
static int patch_put(json_t *patch, const char *obj, const char *key, json_t *value, bool append)
{
	_cleanup_json_ json_t *v = value;
	json_t *o = json_object_get(patch, obj), *a;

	if (!v)
		return -ENOMEM;
	if (!o && json_object_set_new(patch, obj, o = json_object()) < 0)
		return -ENOMEM;
	if (!append)
		return json_object_set(o, key, v) < 0 ? -ENOMEM : 0;
	a = json_object_get(o, key);
	if (!a && json_object_set_new(o, key, a = json_array()) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < json_array_size(a); i++)
		if (json_equal(json_array_get(a, i), v))
			return 0;
	return json_array_append(a, v) < 0 ? -ENOMEM : 0;
}

static bool access_writes(json_t *access)
{
	static const char *const w[] = { "write-file", "truncate",    "make-reg",   "make-dir",
					 "make-sym",   "make-fifo",   "make-sock",  "make-char",
					 "make-block", "remove-file", "remove-dir", "refer",
					 NULL };
	size_t i;
	json_t *v;

	json_array_foreach(access, i, v)
		if (json_string_value(v) && in_list(w, json_string_value(v)))
			return true;
	return false;
}

struct item {
	char *change, *none;
};

static int suggest_fs(json_t *patch, json_t *d, struct item *it)
{
	json_t *ex = json_object_get(d, "explain"), *access = json_object_get(d, "access");
	const char *path = json_string_value(json_object_get(d, "path"));
	const char *dir = json_string_value(json_object_get(d, "dir"));
	const char *rule = json_string_value(json_object_get(ex, "rule"));
	const char *why = json_string_value(json_object_get(ex, "why"));
	bool writes = access_writes(access);
	int r;

	if (!path || !ex) {
		it->none = strdup("the path's rule could not be told");
		return it->none ? 0 : -ENOMEM;
	}
	if (json_strv_has(access, "ioctl-dev")) {
		it->none = strdup("device ioctls are never granted by a policy rule");
		return it->none ? 0 : -ENOMEM;
	}
	if (rule && startswith(rule, "filesystem.hostExecuted (") && writes) {
		const char *s = rule + strlen("filesystem.hostExecuted (");
		_cleanup_free_ char *entry = strndup(s, strcspn(s, ")"));

		if (!entry)
			return -ENOMEM;
		r = patch_put(patch, "filesystem", "hostExecuted",
			      json_pack("{s:[s]}", "allow", entry), false);
		it->change = strdup_printf(
			"filesystem.hostExecuted.allow += \"%s\" (the host may then run what the "
			"sandbox writes there)",
			entry);
	} else if (rule && startswith(rule, "filesystem.workspace") && writes) {
		r = patch_put(patch, "filesystem", "workspace",
			      json_pack("{s:s}", "access", "read-write"), false);
		it->change = strdup("filesystem.workspace.access \"read-write\"");
	} else if (rule && startswith(rule, "filesystem.read[") && writes) {
		const char *w = dir ? dir : path;

		r = patch_put(patch, "filesystem", "write", json_string(w), true);
		it->change = strdup_printf("filesystem.write += \"%s\" (%s is read-only)", w, rule);
	} else if (!writes && (!rule || startswith(rule, "filesystem."))) {
		r = patch_put(patch, "filesystem", "read", json_string(path), true);
		it->change = strdup_printf("filesystem.read += \"%s\"", path);
	} else {
		r = 0;
		it->none = strdup_printf("no policy rule widens it: %s", why	? why
									 : rule ? rule
										: "?");
	}
	if (r < 0)
		return r;
	return it->change || it->none ? 0 : -ENOMEM;
}

static int suggest_net(json_t *patch, json_t *policy, json_t *d, struct item *it)
{
	const char *mode =
		json_string_value(json_object_get(json_object_get(policy, "network"), "mode"));
	json_int_t port = json_integer_value(json_object_get(d, "port"));
	int r;

	if (!json_strv_has(json_object_get(d, "access"), "connect-tcp") || port <= 0 ||
	    port > 65535) {
		it->none = strdup("no policy rule grants binding a TCP port");
		return it->none ? 0 : -ENOMEM;
	}
	r = patch_put(patch, "network", "allowPorts", json_integer(port), true);
	if (r >= 0 && !streq_ptr(mode, "host"))
		r = patch_put(patch, "network", "mode", json_string("host"), false);
	if (r < 0)
		return r;
	if (streq_ptr(mode, "host"))
		it->change = strdup_printf("network.allowPorts += %lld", (long long)port);
	else
		it->change = strdup_printf(
			"network.mode \"host\" (from \"%s\": the host's network, TCP connect "
			"limited to allowPorts) with network.allowPorts += %lld",
			mode ? mode : "?", (long long)port);
	return it->change ? 0 : -ENOMEM;
}

static int suggest_syscall(json_t *patch, json_t *policy, json_t *d, struct item *it)
{
	json_t *sc = json_object_get(policy, "syscalls");
	const char *name = json_string_value(json_object_get(d, "syscall"));
	const char *pname = json_string_value(json_object_get(sc, "profile"));
	const char *filter = json_string_value(json_object_get(d, "filter"));
	enum policy_syscall_profile profile = streq_ptr(pname, "strict") ? POLICY_SYSCALLS_STRICT
									 : POLICY_SYSCALLS_DEFAULT;
	/* The denial says which filter refused (docs/DENIALS.md) when launcherd could tell. */
	bool by_floor = streq_ptr(filter, "floor"), by_policy = streq_ptr(filter, "policy");
	int r;

	if (!name)
		it->none = strdup("the system call is not named");
	else if (by_floor && !(streq(name, "socket") &&
			       streq_ptr(json_string_value(json_object_get(
						 json_object_get(policy, "network"), "mode")),
					 "unix"))) {
		_cleanup_free_ char *what = policy_denial_syscall_what(d);

		it->none = strdup_printf("launcherd's floor refused %s: no policy lifts it",
					 what ?: name);
	} else if (by_policy && !json_strv_has(json_object_get(sc, "deny"), name) &&
		   !in_list(floor_outright, name) && policy_syscall_profile_has(profile, name)) {
		/* The policy's filter refused it, whatever the floor would have said: lifting
		 * the profile's refusal is the change; the floor still refuses what it
		 * refuses. */
		r = patch_put(patch, "syscalls", "allow", json_string(name), true);
		if (r < 0)
			return r;
		it->change = strdup_printf(
			"syscalls.allow += \"%s\" (the \"%s\" profile refuses it%s)", name,
			profile == POLICY_SYSCALLS_STRICT ? "strict" : "default",
			in_list(floor_by_argument, name) || streq(name, "socket") ||
					streq(name, "personality")
				? "; launcherd's floor still refuses it with the arguments it "
				  "restricts (a namespace flag, a socket family, a terminal ioctl)"
				: "");
	} else if (json_strv_has(json_object_get(sc, "deny"), name))
		it->change = strdup_printf("remove \"%s\" from syscalls.deny (a patch only adds: "
					   "edit the policy)",
					   name);
	else if (in_list(floor_outright, name))
		it->none = strdup_printf("launcherd's floor refuses %s whatever the policy", name);
	else if (streq(name, "socket") &&
		 streq_ptr(json_string_value(
				   json_object_get(json_object_get(policy, "network"), "mode")),
			   "unix")) {
		r = patch_put(patch, "network", "mode", json_string("loopback"), false);
		if (r < 0)
			return r;
		it->change = strdup("network.mode \"loopback\" (from \"unix\": no socket but "
				    "AF_UNIX)");
	} else if (in_list(floor_by_argument, name))
		it->none = strdup_printf(
			"launcherd's floor refuses %s with the arguments it restricts (a namespace "
			"flag, a socket family, a terminal ioctl) whatever the policy%s",
			name,
			streq(name, "unshare")
				? "; the profile refuses it entirely: syscalls.allow "
				  "[\"unshare\"] lifts that only, for a call "
				  "without a namespace flag"
				: "");
	else if (policy_syscall_profile_has(profile, name)) {
		r = patch_put(patch, "syscalls", "allow", json_string(name), true);
		if (r < 0)
			return r;
		it->change = strdup_printf(
			"syscalls.allow += \"%s\" (the \"%s\" profile refuses it%s)", name,
			profile == POLICY_SYSCALLS_STRICT ? "strict" : "default",
			streq(name, "socket") || streq(name, "personality")
				? "; the floor still refuses some of its arguments"
				: "");
	} else
		it->none = strdup_printf("%s is in neither the policy's profile nor its deny list: "
					 "launcherd's floor refused it",
					 name);
	return it->change || it->none ? 0 : -ENOMEM;
}

const char *policy_syscall_decider(json_t *policy, const char *name)
{
	json_t *sc = json_object_get(policy, "syscalls");
	bool strict = streq_ptr(json_string_value(json_object_get(sc, "profile")), "strict");
	bool in_profile = name && policy_syscall_profile_has(strict ? POLICY_SYSCALLS_STRICT
								    : POLICY_SYSCALLS_DEFAULT,
							     name);

	if (!name)
		return "seccomp";
	if (json_strv_has(json_object_get(sc, "deny"), name))
		return "syscalls.deny";
	if (in_list(floor_outright, name))
		return "launcherd's floor";
	if (in_list(floor_by_argument, name) || streq(name, "socket") ||
	    streq(name, "personality")) {
		if (!in_profile)
			return "launcherd's floor";
		return strict ? "launcherd's floor or syscalls.profile strict"
			      : "launcherd's floor or syscalls.profile default";
	}
	if (in_profile)
		return strict ? "syscalls.profile strict" : "syscalls.profile default";
	return "launcherd's floor";
}

char *policy_denial_syscall_what(json_t *d)
{
	const char *name = json_string_value(json_object_get(d, "syscall"));
	const char *family = json_string_value(json_object_get(d, "family"));
	const char *request = json_string_value(json_object_get(d, "request"));
	const char *persona = json_string_value(json_object_get(d, "persona"));
	json_t *flags = json_object_get(d, "flags"), *proto = json_object_get(d, "protocol"), *v;
	_cleanup_free_ char *f = NULL;
	size_t i;

	if (!name)
		return strdup("a system call");
	if (family && streq(family, "AF_NETLINK") && json_is_integer(proto))
		return strdup_printf("%s AF_NETLINK protocol %lld", name,
				     (long long)json_integer_value(proto));
	if (family)
		return strdup_printf("%s %s", name, family);
	if (request)
		return strdup_printf("%s %s", name, request);
	if (persona)
		return strdup_printf("%s %s", name, persona);
	json_array_foreach(flags, i, v) {
		char *n =
			strdup_printf("%s%s%s", f ?: "", f ? "|" : "", json_string_value(v) ?: "?");

		if (!n)
			return NULL;
		free(f);
		f = n;
	}
	return f ? strdup_printf("%s %s", name, f) : strdup(name);
}

const char *policy_denial_decider(json_t *policy, json_t *d)
{
	const char *name = json_string_value(json_object_get(d, "syscall"));
	const char *filter = json_string_value(json_object_get(d, "filter"));
	const char *family = json_string_value(json_object_get(d, "family"));
	const char *mode =
		json_string_value(json_object_get(json_object_get(policy, "network"), "mode"));
	json_t *sc = json_object_get(policy, "syscalls");
	bool strict = streq_ptr(json_string_value(json_object_get(sc, "profile")), "strict");

	if (streq_ptr(filter, "floor")) {
		/* Network "unix": the floor's variant that allows no socket but AF_UNIX. */
		if (name && (streq(name, "socket") || streq(name, "socketpair")) &&
		    streq_ptr(mode, "unix") && !streq_ptr(family, "AF_UNIX"))
			return "network.mode unix";
		return "launcherd's floor";
	}
	if (streq_ptr(filter, "policy") && name) {
		if (json_strv_has(json_object_get(sc, "deny"), name))
			return "syscalls.deny";
		if (policy_syscall_profile_has(
			    strict ? POLICY_SYSCALLS_STRICT : POLICY_SYSCALLS_DEFAULT, name)) {
			/* The kernel answers with the policy's errno before the floor's
			 * notification, but lifting the profile's refusal would not do. */
			if (in_list(floor_outright, name))
				return strict ? "syscalls.profile strict and launcherd's floor"
					      : "syscalls.profile default and launcherd's floor";
			return strict ? "syscalls.profile strict" : "syscalls.profile default";
		}
	}
	return policy_syscall_decider(policy, name);
}

/* The refusal in a few words: "write-file /usr/x", "connect-tcp 127.0.0.1:9", "unshare",
 * "socket AF_PACKET". */
static char *what_of(json_t *d)
{
	const char *kind = json_string_value(json_object_get(d, "kind"));
	json_t *acc = json_object_get(d, "access");
	const char *a = json_string_value(json_array_get(acc, 0));

	if (streq_ptr(kind, "syscall"))
		return policy_denial_syscall_what(d);
	if (streq_ptr(kind, "fs"))
		return strdup_printf("%s%s %s", a ?: "?", json_array_size(acc) > 1 ? ",…" : "",
				     json_string_value(json_object_get(d, "path")) ?: "?");
	if (streq_ptr(kind, "net"))
		return strdup_printf("%s %s:%lld", a ?: "?",
				     json_string_value(json_object_get(d, "address")) ?: "?",
				     (long long)json_integer_value(json_object_get(d, "port")));
	return strdup_printf("%s %s", kind ?: "?", a ?: "");
}

int policy_suggest(json_t *policy, json_t *denials, json_t **ret)
{
	_cleanup_json_ json_t *patch = json_object(), *items = json_array();
	size_t i;
	json_t *d;

	if (!patch || !items)
		return -ENOMEM;
	json_array_foreach(denials, i, d) {
		const char *kind = json_string_value(json_object_get(d, "kind")), *rule;
		_cleanup_free_ char *what = what_of(d);
		struct item it = { 0 };
		bool dup = false;
		json_t *o;
		size_t k;
		int r = 0;

		if (!what)
			return -ENOMEM;
		json_array_foreach(items, k, o)
			if (streq_ptr(json_string_value(json_object_get(o, "what")), what))
				dup = true;
		if (dup || json_object_get(d, "suppressed"))
			continue;
		if (streq_ptr(kind, "fs"))
			r = suggest_fs(patch, d, &it);
		else if (streq_ptr(kind, "net"))
			r = suggest_net(patch, policy, d, &it);
		else if (streq_ptr(kind, "syscall"))
			r = suggest_syscall(patch, policy, d, &it);
		else
			it.none = strdup("Landlock scoping (signals, abstract sockets across the "
					 "sandbox's edge): no policy rule lifts it");
		if (r >= 0 && !it.change && !it.none)
			r = -ENOMEM;
		o = r >= 0 ? json_pack("{s:s}", "what", what) : NULL;
		rule = json_string_value(json_object_get(json_object_get(d, "explain"), "rule"));
		if (o && rule)
			json_object_set_new(o, "rule", json_string(rule));
		if (o && it.change)
			json_object_set_new(o, "change", json_string(it.change));
		if (o && it.none)
			json_object_set_new(o, "none", json_string(it.none));
		free(it.change);
		free(it.none);
		if (r < 0)
			return r;
		if (!o || json_array_append_new(items, o) < 0)
			return -ENOMEM;
	}
	*ret = json_pack("{s:O,s:O}", "patch", patch, "items", items);
	return *ret ? 0 : -ENOMEM;
}
