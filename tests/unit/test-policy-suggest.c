/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* policy_suggest() (policy/policy-suggest.h): the patch and notes for each kind of refusal. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "policy/policy-suggest.h"
#include "tests/tap.h"

static json_t *load(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);

	if (!j)
		bail("bad fixture: %s: %s", text, je.text);
	return j;
}

/* The patch policy_suggest() gives for denials (a JSON array) under policy, compact and
 * sorted; note gets the first item's "change" or "none". */
static char *suggest(const char *policy, const char *denials, char **note)
{
	_cleanup_json_ json_t *p = load(policy), *d = load(denials), *out = NULL;
	json_t *first;
	char *s;

	if (policy_suggest(p, d, &out) < 0)
		bail("policy_suggest failed");
	first = json_array_get(json_object_get(out, "items"), 0);
	if (note) {
		const char *c = json_string_value(json_object_get(first, "change"));
		const char *n = json_string_value(json_object_get(first, "none"));

		*note = strdup(c ? c : n ? n : "");
	}
	s = json_dumps(json_object_get(out, "patch"), JSON_COMPACT | JSON_SORT_KEYS);
	if (!s)
		bail("out of memory");
	return s;
}

#define POL_DEFAULT                                                                     \
	"{\"network\": {\"mode\": \"none\"}, \"syscalls\": {\"profile\": \"default\", " \
	"\"deny\": [\"ptrace\"], \"allow\": []}}"

static void check(const char *what, const char *policy, const char *denials, const char *patch,
		  const char *note_part)
{
	char *note = NULL, *got = suggest(policy, denials, &note);

	is_str(patch, got, "%s: the patch", what);
	ok(note && strstr(note, note_part), "%s: the note says \"%s\" (%s)", what, note_part,
	   note ? note : "(null)");
	free(got);
	free(note);
}

int main(void)
{
	plan(61);

	check("a write under a read-only filesystem.read entry", POL_DEFAULT,
	      "[{\"kind\": \"fs\", \"access\": [\"write-file\"], \"path\": \"/usr/x\", \"dir\": "
	      "\"/usr\", \"explain\": {\"rule\": \"filesystem.read[0] /usr\"}}]",
	      "{\"filesystem\":{\"write\":[\"/usr\"]}}", "filesystem.write += \"/usr\"");
	check("a creation without a known directory: the path itself", POL_DEFAULT,
	      "[{\"kind\": \"fs\", \"access\": [\"make-reg\"], \"path\": \"/opt/d\", \"explain\": "
	      "{\"rule\": \"filesystem.read[2] /opt\"}}]",
	      "{\"filesystem\":{\"write\":[\"/opt/d\"]}}", "/opt/d");
	check("a write in a read-only workspace", POL_DEFAULT,
	      "[{\"kind\": \"fs\", \"access\": [\"write-file\"], \"path\": \"/w/f\", \"dir\": \"/w\", "
	      "\"explain\": {\"rule\": \"filesystem.workspace (/w, read-only)\"}}]",
	      "{\"filesystem\":{\"workspace\":{\"access\":\"read-write\"}}}",
	      "filesystem.workspace.access");
	check("a host-executed path", POL_DEFAULT,
	      "[{\"kind\": \"fs\", \"access\": [\"write-file\"], \"path\": \"/w/.envrc\", "
	      "\"explain\": {\"rule\": \"filesystem.hostExecuted (.envrc)\"}}]",
	      "{\"filesystem\":{\"hostExecuted\":{\"allow\":[\".envrc\"]}}}", "\".envrc\"");
	check("a read refused", POL_DEFAULT,
	      "[{\"kind\": \"fs\", \"access\": [\"read-file\"], \"path\": \"/probe/p\", "
	      "\"explain\": {\"rule\": \"filesystem.read[1] /probe\"}}]",
	      "{\"filesystem\":{\"read\":[\"/probe/p\"]}}", "filesystem.read += \"/probe/p\"");
	check("the sandbox's own /proc: nothing", POL_DEFAULT,
	      "[{\"kind\": \"fs\", \"access\": [\"make-reg\"], \"path\": \"/proc\", \"explain\": "
	      "{\"why\": \"the sandbox's own /proc\"}}]",
	      "{}", "the sandbox's own /proc");
	check("a TCP connect under proxy: host with the port",
	      "{\"network\": {\"mode\": \"proxy\"}}",
	      "[{\"kind\": \"net\", \"access\": [\"connect-tcp\"], \"port\": 9, \"address\": "
	      "\"127.0.0.1\"}]",
	      "{\"network\":{\"allowPorts\":[9],\"mode\":\"host\"}}", "network.mode \"host\"");
	check("a TCP connect under host: the port only", "{\"network\": {\"mode\": \"host\"}}",
	      "[{\"kind\": \"net\", \"access\": [\"connect-tcp\"], \"port\": 5432}]",
	      "{\"network\":{\"allowPorts\":[5432]}}", "network.allowPorts += 5432");
	check("a floor system call: nothing", POL_DEFAULT,
	      "[{\"kind\": \"syscall\", \"syscall\": \"bpf\"}]", "{}", "floor refuses bpf");
	check("unshare: the floor's, and what syscalls.allow would lift", POL_DEFAULT,
	      "[{\"kind\": \"syscall\", \"syscall\": \"unshare\"}]", "{}",
	      "syscalls.allow [\"unshare\"] lifts that only");
	check("a floor system call in the profile too: nothing", POL_DEFAULT,
	      "[{\"kind\": \"syscall\", \"syscall\": \"swapon\"}, {\"kind\": \"syscall\", "
	      "\"syscall\": \"swapon\"}]",
	      "{}", "floor refuses swapon");
	check("a profile's system call: syscalls.allow", POL_DEFAULT,
	      "[{\"kind\": \"syscall\", \"syscall\": \"syslog\"}, {\"kind\": \"syscall\", "
	      "\"syscall\": \"syslog\"}]",
	      "{\"syscalls\":{\"allow\":[\"syslog\"]}}", "syscalls.allow += \"syslog\"");
	check("strict's ptrace: syscalls.allow",
	      "{\"syscalls\": {\"profile\": \"strict\", \"deny\": [], \"allow\": []}}",
	      "[{\"kind\": \"syscall\", \"syscall\": \"ptrace\"}]",
	      "{\"syscalls\":{\"allow\":[\"ptrace\"]}}", "the \"strict\" profile refuses it");
	check("a name in syscalls.deny: said in words, no patch", POL_DEFAULT,
	      "[{\"kind\": \"syscall\", \"syscall\": \"ptrace\"}]", "{}",
	      "remove \"ptrace\" from syscalls.deny");
	check("socket under network unix: one step wider",
	      "{\"network\": {\"mode\": \"unix\"}, \"syscalls\": {\"profile\": \"default\"}}",
	      "[{\"kind\": \"syscall\", \"syscall\": \"socket\"}]",
	      "{\"network\":{\"mode\":\"loopback\"}}", "network.mode \"loopback\"");
	check("Landlock scoping: nothing", POL_DEFAULT,
	      "[{\"kind\": \"scope\", \"access\": [\"signal\"]}]", "{}", "no policy rule lifts it");

	{
		_cleanup_json_ json_t *def = load(POL_DEFAULT),
				      *strict = load("{\"syscalls\": {\"profile\": \"strict\"}}");

		is_str("syscalls.deny", policy_syscall_decider(def, "ptrace"),
		       "decider: a name in syscalls.deny");
		is_str("launcherd's floor", policy_syscall_decider(def, "bpf"),
		       "decider: the floor outright, whatever the profile");
		is_str("launcherd's floor or syscalls.profile default",
		       policy_syscall_decider(def, "unshare"),
		       "decider: unshare, refused by argument by the floor and by the profile");
		is_str("syscalls.profile default", policy_syscall_decider(def, "syslog"),
		       "decider: the profile only");
		is_str("syscalls.profile strict", policy_syscall_decider(strict, "ptrace"),
		       "decider: strict's own");
		is_str("launcherd's floor", policy_syscall_decider(def, "socket"),
		       "decider: socket under the default profile: the floor's families");
	}

	/* With the filter and the arguments the denial names (docs/DENIALS.md). */
	check("unshare refused by the floor, CLONE_NEWUSER named: nothing",
	      "{\"syscalls\": {\"profile\": \"default\", \"allow\": [\"unshare\"]}}",
	      "[{\"kind\": \"syscall\", \"syscall\": \"unshare\", \"filter\": \"floor\", "
	      "\"flags\": [\"CLONE_NEWUSER\"]}]",
	      "{}", "launcherd's floor refused unshare CLONE_NEWUSER");
	check("unshare refused by the policy's profile: syscalls.allow, the floor's part said",
	      POL_DEFAULT,
	      "[{\"kind\": \"syscall\", \"syscall\": \"unshare\", \"filter\": \"policy\"}]",
	      "{\"syscalls\":{\"allow\":[\"unshare\"]}}", "floor still refuses it");
	check("a socket family refused by the floor under network none: nothing", POL_DEFAULT,
	      "[{\"kind\": \"syscall\", \"syscall\": \"socket\", \"filter\": \"floor\", "
	      "\"family\": \"AF_NETLINK\", \"protocol\": 9}]",
	      "{}", "refused socket AF_NETLINK protocol 9");
	check("a socket family refused by the floor under network unix: loopback",
	      "{\"network\": {\"mode\": \"unix\"}, \"syscalls\": {\"profile\": \"default\"}}",
	      "[{\"kind\": \"syscall\", \"syscall\": \"socket\", \"filter\": \"floor\", "
	      "\"family\": \"AF_NETLINK\"}]",
	      "{\"network\":{\"mode\":\"loopback\"}}", "network.mode \"loopback\"");
	check("mount refused by the profile, which answers before the floor: nothing (the "
	      "floor refuses it whatever the policy)",
	      POL_DEFAULT,
	      "[{\"kind\": \"syscall\", \"syscall\": \"mount\", \"filter\": \"policy\"}]", "{}",
	      "launcherd's floor refuses mount whatever the policy");
	check("a name in syscalls.deny refused by the policy: said in words", POL_DEFAULT,
	      "[{\"kind\": \"syscall\", \"syscall\": \"ptrace\", \"filter\": \"policy\"}]", "{}",
	      "remove \"ptrace\" from syscalls.deny");
	{
		_cleanup_json_ json_t *def = load(POL_DEFAULT),
				      *unix_ = load("{\"network\": {\"mode\": \"unix\"}}"),
				      *d_floor = load("{\"syscall\": \"unshare\", \"filter\": "
						      "\"floor\", \"flags\": [\"CLONE_NEWUSER\", "
						      "\"CLONE_NEWNS\"]}"),
				      *d_policy = load("{\"syscall\": \"unshare\", \"filter\": "
						       "\"policy\"}"),
				      *d_mount = load("{\"syscall\": \"mount\", \"filter\": "
						      "\"policy\"}"),
				      *d_deny = load("{\"syscall\": \"ptrace\", \"filter\": "
						     "\"policy\"}"),
				      *d_sock = load("{\"syscall\": \"socket\", \"filter\": "
						     "\"floor\", \"family\": \"AF_INET\"}"),
				      *d_ioctl = load("{\"syscall\": \"ioctl\", \"filter\": "
						      "\"floor\", \"request\": \"TIOCSTI\"}"),
				      *d_old = load("{\"syscall\": \"unshare\"}");
		char *w;

		is_str("launcherd's floor", policy_denial_decider(def, d_floor),
		       "denial decider: filter floor");
		is_str("syscalls.profile default", policy_denial_decider(def, d_policy),
		       "denial decider: filter policy, the profile");
		is_str("syscalls.profile default and launcherd's floor",
		       policy_denial_decider(def, d_mount), "denial decider: filter policy, mount");
		is_str("syscalls.deny", policy_denial_decider(def, d_deny),
		       "denial decider: filter policy, the deny list");
		is_str("network.mode unix", policy_denial_decider(unix_, d_sock),
		       "denial decider: a family network unix alone refuses");
		is_str("launcherd's floor", policy_denial_decider(def, d_sock),
		       "denial decider: the same family elsewhere: the floor");
		is_str("launcherd's floor or syscalls.profile default",
		       policy_denial_decider(def, d_old),
		       "denial decider: without a filter, as before");
		w = policy_denial_syscall_what(d_floor);
		is_str("unshare CLONE_NEWUSER|CLONE_NEWNS", w, "what: the flags");
		free(w);
		w = policy_denial_syscall_what(d_sock);
		is_str("socket AF_INET", w, "what: the family");
		free(w);
		w = policy_denial_syscall_what(d_ioctl);
		is_str("ioctl TIOCSTI", w, "what: the request");
		free(w);
		w = policy_denial_syscall_what(d_old);
		is_str("unshare", w, "what: no argument named");
		free(w);
	}
	return 0;
}
