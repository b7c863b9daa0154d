/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `cordon doctor`: what this host supports, each missing piece with a one-line hint naming the
 * kernel option, sysctl or package that would provide it. A backend's own host requirements
 * are checked here when that backend is part of the tree.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "controller/controller.h"

static void check(json_t *list, const char *name, bool ok, const char *detail, const char *hint)
{
	json_t *c = json_pack("{s:s,s:b,s:s}", "name", name, "ok", ok, "detail", detail);

	if (c && !ok && hint)
		json_object_set_new(c, "hint", json_string(hint));
	json_array_append_new(list, c);
}

/* Can this user create a user namespace? Tried in a throwaway child. */
static bool userns_allowed(void)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return false;
	if (pid == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
	if (waitpid(pid, &status, 0) < 0)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	return abi < 0 ? -errno : (int)abi;
}

int method_host_doctor(struct client *cl, json_t *id, json_t *params, int *fds, size_t n)
{
	struct controller *c = cl->ctl;
	json_t *checks = json_array(), *hello = controller_launcher_hello(c);
	_cleanup_free_ char *seccomp = NULL;
	char detail[256];
	struct stat st;
	int abi;
	bool ok;

	ok = userns_allowed();
	check(checks, "user namespaces", ok,
	      ok ? "unprivileged user namespaces are allowed" : "denied for this user",
	      "allow them (sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces>0), "
	      "or install cordon-launcherd as a system service");

	if (hello) {
		const char *mode = json_string_value(json_object_get(hello, "mode"));

		(void)snprintf(detail, sizeof(detail), "%s, %s mode", controller_launcher_name(c),
			       mode ? mode : "?");
		check(checks, "launcher", true, detail, NULL);
	} else
		check(checks, "launcher", false, "not reachable",
		      "start it: systemctl start cordon-launcherd.socket");

	abi = landlock_abi();
	if (abi > 0)
		(void)snprintf(detail, sizeof(detail), "ABI %d", abi);
	else
		(void)snprintf(detail, sizeof(detail), "not available (%s)", strerror(-abi));
	check(checks, "landlock", abi > 0, detail,
	      abi == -EOPNOTSUPP ? "boot with lsm=…,landlock (CONFIG_SECURITY_LANDLOCK=y)"
				 : "needs Linux >= 5.13 with CONFIG_SECURITY_LANDLOCK=y");
	if (abi > 0 && abi < 4)
		check(checks, "landlock network rules", false, "needs ABI 4",
		      "upgrade to Linux >= 6.7 for TCP bind/connect rules");
	if (abi > 0 && abi < 6)
		check(checks, "landlock scoping", false, "needs ABI 6",
		      "upgrade to Linux >= 6.12 for abstract-socket and signal scoping");

	ok = read_full_file("/proc/sys/kernel/seccomp/actions_avail", 4096, &seccomp, NULL) >= 0;
	if (seccomp)
		seccomp[strcspn(seccomp, "\n")] = '\0';
	check(checks, "seccomp", ok, ok ? seccomp : "not available",
	      "needs CONFIG_SECCOMP_FILTER=y");

	{
		bool v2 = stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0;
		bool hybrid = !v2 && stat("/sys/fs/cgroup/unified/cgroup.controllers", &st) == 0;
		bool v1 = stat("/sys/fs/cgroup/pids/cgroup.procs", &st) == 0 &&
			  stat("/sys/fs/cgroup/memory/cgroup.procs", &st) == 0;
		const char *cg = json_string_value(json_object_get(hello, "cgroup"));

		(void)snprintf(detail, sizeof(detail), "%s%s; launcher uses: %s",
			       v2	? "v2 unified"
			       : hybrid ? "v1+v2 hybrid"
			       : v1	? "v1"
					: "none",
			       v1 && !v2 ? " (pids, memory)" : "", cg ? cg : "?");
		check(checks, "cgroups", (v2 || v1) && cg && !streq(cg, "none"), detail,
		      "limits need the launcher in privileged mode or a delegated cgroup v2 subtree "
		      "(systemd: Delegate=yes)");
	}

	/* Denials (docs/DENIALS.md): the launcher reads the kernel's audit records, which the
	 * kernel emits only while its audit is on. */
	{
		json_t *dn = json_object_get(hello, "denials");
		const char *audit = json_string_value(json_object_get(dn, "audit"));
		const char *why = json_string_value(json_object_get(dn, "reason"));
		bool reader = json_is_true(json_object_get(dn, "reader"));

		if (reader)
			(void)snprintf(detail, sizeof(detail),
				       "the launcher reads the audit records; kernel audit %s%s",
				       audit ? audit : "?",
				       json_is_true(json_object_get(dn, "landlock"))
					       ? ""
					       : " (Landlock ABI < 7: seccomp refusals only)");
		else
			(void)snprintf(detail, sizeof(detail), "not reported: %s",
				       why ? why : "the launcher does not read the audit records");
		check(checks, "denials", reader && streq_ptr(audit, "on"), detail,
		      !reader ? "use the system launcher (privileged, CAP_AUDIT_READ in its unit)"
		      : streq_ptr(audit, "unknown")
			      ? "the launcher learns the audit state from the first record it sees; "
				"if audit is off: auditctl -e 1 -b 8192 -a task,never (docs/DENIALS.md)"
			      : "turn the kernel's audit on: auditctl -e 1 -b 8192 -a task,never (with "
				"the task,never rule system calls keep their speed): docs/DENIALS.md");
	}

	return client_reply(cl, id, json_pack("{s:o,s:O?}", "checks", checks, "launcher", hello));
}
