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
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/backend-settings.h"
#include "backends/vm/vm-kernel.h"
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

/* builtin:vm's guest helpers in bin, verified offline by cordon-vm-helpers (doctor never fetches):
 * 0, or -EBADMSG with err saying why (its last line of stderr). */
static int vm_helpers_verify(const char *bin, char *err, size_t size)
{
	const char *tool = getenv("CORDON_VM_HELPERS");
	size_t len = 0;
	int p[2], status;
	ssize_t k;
	pid_t pid;
	char *line;

	if (isempty(tool))
		tool = CORDON_LIBEXECDIR "/cordon-vm-helpers";
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		safe_close(p[0]);
		safe_close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 ||
		    dup2(null_fd, STDOUT_FILENO) < 0 || dup2(p[1], STDERR_FILENO) < 0)
			_exit(127);
		execl(tool, tool, "fetch", "--offline", "--dir", bin, "agent", (char *)NULL);
		_exit(127);
	}
	safe_close(p[1]);
	while (len + 1 < size &&
	       ((k = read(p[0], err + len, size - 1 - len)) > 0 || (k < 0 && errno == EINTR)))
		len += k > 0 ? (size_t)k : 0;
	safe_close(p[0]);
	err[len] = '\0';
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	while (len > 0 && err[len - 1] == '\n')
		err[--len] = '\0';
	line = strrchr(err, '\n');
	line = line ? line + 1 : err;
	if (startswith(line, "cordon-vm-helpers: "))
		line += strlen("cordon-vm-helpers: ");
	memmove(err, line, strlen(line) + 1);
	if (!*err)
		(void)snprintf(err, size, "%s failed", tool);
	return -EBADMSG;
}

/* builtin:vm (backends/vm/README.md): the accelerator, the guest kernel (its stored setting or
 * the default: its path, version and whether it is PVH-bootable), and whether its guest helpers
 * are fetched and verified. */
static void vm_check(struct controller *c, json_t *checks)
{
	_cleanup_json_ json_t *stored = NULL;
	_cleanup_free_ char *qemu = NULL, *kernel = NULL, *bin = NULL;
	const char *k = NULL, *state = getenv("XDG_STATE_HOME"), *slash, *hint = NULL;
	char detail[1536], helpers[1024] = "", kinfo[160] = "";
	struct vm_kernel_info ki;
	struct backend_ref ref;
	struct stat st;
	bool kvm, have_kernel, pvh = false, bad = false;
	int fd;

	if (backend_ref_parse("builtin:vm", &ref) >= 0 && c->settings &&
	    backend_settings_store_get(c->settings, &ref, &stored) >= 0)
		k = json_string_value(json_object_get(stored, "kernel"));
	if (!isempty(k))
		kernel = strdup(k);
	else if (!isempty(state))
		kernel = strdup_printf("%s/cordon/vm/vmlinux", state);
	else
		kernel = strdup_printf("%s/.local/state/cordon/vm/vmlinux",
				       c->host.home ? c->host.home : "");
	if (!kernel)
		return;
	slash = strrchr(kernel, '/');
	bin = strdup_printf("%.*s/bin", slash ? (int)(slash - kernel) : 1, slash ? kernel : ".");
	if (!bin)
		return;
	/* Hardware KVM only (as the backend decides): kvm_intel or kvm_amd, and /dev/kvm opens. */
	kvm = (access("/sys/module/kvm_intel", F_OK) == 0 ||
	       access("/sys/module/kvm_amd", F_OK) == 0) &&
	      (fd = open("/dev/kvm", O_RDWR | O_CLOEXEC)) >= 0;
	if (kvm)
		safe_close(fd);
	have_kernel = access(kernel, R_OK) == 0;
	if (have_kernel) {
		int r = vm_kernel_inspect(kernel, &ki);

		pvh = r >= 0 && ki.pvh;
		if (r < 0)
			(void)snprintf(kinfo, sizeof(kinfo), " (unreadable: %s)", strerror(-r));
		else
			(void)snprintf(
				kinfo, sizeof(kinfo), " (version %s, %s)",
				*ki.version ? ki.version : "unknown",
				pvh	 ? "PVH-bootable"
				: ki.elf ? "not PVH-bootable: an ELF without a PVH entry note"
					 : "not PVH-bootable: not an uncompressed ELF vmlinux");
	}
	(void)snprintf(detail, sizeof(detail), "%s/agent", bin);
	if (stat(detail, &st) < 0)
		(void)snprintf(helpers, sizeof(helpers),
			       "helpers not fetched yet (the first activation fetches them)");
	else if (vm_helpers_verify(bin, helpers, sizeof(helpers)) == 0)
		(void)snprintf(helpers, sizeof(helpers), "helpers in %s verified", bin);
	else
		bad = true;
	{
		const char *path = getenv("PATH");

		for (path = isempty(path) ? "/usr/local/bin:/usr/bin:/bin" : path;
		     *path && !qemu;) {
			size_t len = strcspn(path, ":");

			qemu = strdup_printf("%.*s/qemu-system-x86_64", (int)len, path);
			if (qemu && access(qemu, X_OK) < 0) {
				free(qemu);
				qemu = NULL;
			}
			path += len + (path[len] == ':');
		}
	}
	(void)snprintf(detail, sizeof(detail), "%s; accelerator %s; kernel %s%s%s; %s",
		       qemu ? "QEMU found" : "no qemu-system-x86_64",
		       kvm ? "KVM" : "TCG (no usable /dev/kvm: slower)",
		       have_kernel ? "" : "missing: ", kernel, kinfo, helpers);
	if (!qemu)
		hint = "install qemu-system-x86 (builtin:vm needs qemu-system-x86_64)";
	else if (!have_kernel)
		hint = "cordon vm setup fetches a guest kernel (the distribution's, not installed)";
	else if (!pvh)
		hint = "the guest kernel must be an uncompressed PVH vmlinux: cordon vm setup "
		       "fetches one";
	else if (bad)
		hint = "cordon vm fetch-helpers fetches a verified copy";
	check(checks, "vm", qemu && have_kernel && pvh && !bad, detail, hint);
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
		const char *hint = json_string_value(json_object_get(dn, "hint"));
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
		      !reader ? hint ?: "use the system launcher (privileged, CAP_AUDIT_READ in its unit)"
		      : streq_ptr(audit, "unknown")
			      ? "the launcher learns the audit state from the first record it sees; "
				"if audit is off: auditctl -e 1 -b 8192 -a task,never (docs/DENIALS.md)"
			      : "turn the kernel's audit on: auditctl -e 1 -b 8192 -a task,never (with "
				"the task,never rule system calls keep their speed): docs/DENIALS.md");
	}

	vm_check(c, checks);

	return client_reply(cl, id, json_pack("{s:o,s:O?}", "checks", checks, "launcher", hello));
}
