/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/policy-syscalls.h"

/*
 * Every syscall name libseccomp 2.5 resolves on x86_64, aarch64, x86, arm, riscv64, ppc64le or
 * s390x, sorted (strcmp) for bsearch. A name unknown to the native architecture is accepted by
 * libseccomp and simply never matches.
 */
static const char *const syscall_names[] = {
	"_llseek",
	"_newselect",
	"_sysctl",
	"accept",
	"accept4",
	"access",
	"acct",
	"add_key",
	"adjtimex",
	"afs_syscall",
	"alarm",
	"arch_prctl",
	"arm_fadvise64_64",
	"arm_sync_file_range",
	"bdflush",
	"bind",
	"bpf",
	"break",
	"brk",
	"cachestat",
	"capget",
	"capset",
	"chdir",
	"chmod",
	"chown",
	"chown32",
	"chroot",
	"clock_adjtime",
	"clock_adjtime64",
	"clock_getres",
	"clock_getres_time64",
	"clock_gettime",
	"clock_gettime64",
	"clock_nanosleep",
	"clock_nanosleep_time64",
	"clock_settime",
	"clock_settime64",
	"clone",
	"clone3",
	"close",
	"close_range",
	"connect",
	"copy_file_range",
	"creat",
	"create_module",
	"delete_module",
	"dup",
	"dup2",
	"dup3",
	"epoll_create",
	"epoll_create1",
	"epoll_ctl",
	"epoll_ctl_old",
	"epoll_pwait",
	"epoll_pwait2",
	"epoll_wait",
	"epoll_wait_old",
	"eventfd",
	"eventfd2",
	"execve",
	"execveat",
	"exit",
	"exit_group",
	"faccessat",
	"faccessat2",
	"fadvise64",
	"fadvise64_64",
	"fallocate",
	"fanotify_init",
	"fanotify_mark",
	"fchdir",
	"fchmod",
	"fchmodat",
	"fchmodat2",
	"fchown",
	"fchown32",
	"fchownat",
	"fcntl",
	"fcntl64",
	"fdatasync",
	"fgetxattr",
	"finit_module",
	"flistxattr",
	"flock",
	"fork",
	"fremovexattr",
	"fsconfig",
	"fsetxattr",
	"fsmount",
	"fsopen",
	"fspick",
	"fstat",
	"fstat64",
	"fstatat64",
	"fstatfs",
	"fstatfs64",
	"fsync",
	"ftime",
	"ftruncate",
	"ftruncate64",
	"futex",
	"futex_requeue",
	"futex_time64",
	"futex_wait",
	"futex_waitv",
	"futex_wake",
	"futimesat",
	"get_kernel_syms",
	"get_mempolicy",
	"get_robust_list",
	"get_thread_area",
	"getcpu",
	"getcwd",
	"getdents",
	"getdents64",
	"getegid",
	"getegid32",
	"geteuid",
	"geteuid32",
	"getgid",
	"getgid32",
	"getgroups",
	"getgroups32",
	"getitimer",
	"getpeername",
	"getpgid",
	"getpgrp",
	"getpid",
	"getpmsg",
	"getppid",
	"getpriority",
	"getrandom",
	"getresgid",
	"getresgid32",
	"getresuid",
	"getresuid32",
	"getrlimit",
	"getrusage",
	"getsid",
	"getsockname",
	"getsockopt",
	"gettid",
	"gettimeofday",
	"getuid",
	"getuid32",
	"getxattr",
	"gtty",
	"idle",
	"init_module",
	"inotify_add_watch",
	"inotify_init",
	"inotify_init1",
	"inotify_rm_watch",
	"io_cancel",
	"io_destroy",
	"io_getevents",
	"io_pgetevents",
	"io_pgetevents_time64",
	"io_setup",
	"io_submit",
	"io_uring_enter",
	"io_uring_register",
	"io_uring_setup",
	"ioctl",
	"ioperm",
	"iopl",
	"ioprio_get",
	"ioprio_set",
	"ipc",
	"kcmp",
	"kexec_file_load",
	"kexec_load",
	"keyctl",
	"kill",
	"landlock_add_rule",
	"landlock_create_ruleset",
	"landlock_restrict_self",
	"lchown",
	"lchown32",
	"lgetxattr",
	"link",
	"linkat",
	"listen",
	"listxattr",
	"llistxattr",
	"lock",
	"lookup_dcookie",
	"lremovexattr",
	"lseek",
	"lsetxattr",
	"lstat",
	"lstat64",
	"madvise",
	"map_shadow_stack",
	"mbind",
	"membarrier",
	"memfd_create",
	"memfd_secret",
	"migrate_pages",
	"mincore",
	"mkdir",
	"mkdirat",
	"mknod",
	"mknodat",
	"mlock",
	"mlock2",
	"mlockall",
	"mmap",
	"mmap2",
	"modify_ldt",
	"mount",
	"mount_setattr",
	"move_mount",
	"move_pages",
	"mprotect",
	"mpx",
	"mq_getsetattr",
	"mq_notify",
	"mq_open",
	"mq_timedreceive",
	"mq_timedreceive_time64",
	"mq_timedsend",
	"mq_timedsend_time64",
	"mq_unlink",
	"mremap",
	"msgctl",
	"msgget",
	"msgrcv",
	"msgsnd",
	"msync",
	"multiplexer",
	"munlock",
	"munlockall",
	"munmap",
	"name_to_handle_at",
	"nanosleep",
	"newfstatat",
	"nfsservctl",
	"nice",
	"oldfstat",
	"oldlstat",
	"oldolduname",
	"oldstat",
	"olduname",
	"open",
	"open_by_handle_at",
	"open_tree",
	"openat",
	"openat2",
	"pause",
	"pciconfig_iobase",
	"pciconfig_read",
	"pciconfig_write",
	"perf_event_open",
	"personality",
	"pidfd_getfd",
	"pidfd_open",
	"pidfd_send_signal",
	"pipe",
	"pipe2",
	"pivot_root",
	"pkey_alloc",
	"pkey_free",
	"pkey_mprotect",
	"poll",
	"ppoll",
	"ppoll_time64",
	"prctl",
	"pread64",
	"preadv",
	"preadv2",
	"prlimit64",
	"process_madvise",
	"process_mrelease",
	"process_vm_readv",
	"process_vm_writev",
	"prof",
	"profil",
	"pselect6",
	"pselect6_time64",
	"ptrace",
	"putpmsg",
	"pwrite64",
	"pwritev",
	"pwritev2",
	"query_module",
	"quotactl",
	"quotactl_fd",
	"read",
	"readahead",
	"readdir",
	"readlink",
	"readlinkat",
	"readv",
	"reboot",
	"recv",
	"recvfrom",
	"recvmmsg",
	"recvmmsg_time64",
	"recvmsg",
	"remap_file_pages",
	"removexattr",
	"rename",
	"renameat",
	"renameat2",
	"request_key",
	"restart_syscall",
	"riscv_flush_icache",
	"rmdir",
	"rseq",
	"rt_sigaction",
	"rt_sigpending",
	"rt_sigprocmask",
	"rt_sigqueueinfo",
	"rt_sigreturn",
	"rt_sigsuspend",
	"rt_sigtimedwait",
	"rt_sigtimedwait_time64",
	"rt_tgsigqueueinfo",
	"rtas",
	"s390_guarded_storage",
	"s390_pci_mmio_read",
	"s390_pci_mmio_write",
	"s390_runtime_instr",
	"s390_sthyi",
	"sched_get_priority_max",
	"sched_get_priority_min",
	"sched_getaffinity",
	"sched_getattr",
	"sched_getparam",
	"sched_getscheduler",
	"sched_rr_get_interval",
	"sched_rr_get_interval_time64",
	"sched_setaffinity",
	"sched_setattr",
	"sched_setparam",
	"sched_setscheduler",
	"sched_yield",
	"seccomp",
	"security",
	"select",
	"semctl",
	"semget",
	"semop",
	"semtimedop",
	"semtimedop_time64",
	"send",
	"sendfile",
	"sendfile64",
	"sendmmsg",
	"sendmsg",
	"sendto",
	"set_mempolicy",
	"set_mempolicy_home_node",
	"set_robust_list",
	"set_thread_area",
	"set_tid_address",
	"setdomainname",
	"setfsgid",
	"setfsgid32",
	"setfsuid",
	"setfsuid32",
	"setgid",
	"setgid32",
	"setgroups",
	"setgroups32",
	"sethostname",
	"setitimer",
	"setns",
	"setpgid",
	"setpriority",
	"setregid",
	"setregid32",
	"setresgid",
	"setresgid32",
	"setresuid",
	"setresuid32",
	"setreuid",
	"setreuid32",
	"setrlimit",
	"setsid",
	"setsockopt",
	"settimeofday",
	"setuid",
	"setuid32",
	"setxattr",
	"sgetmask",
	"shmat",
	"shmctl",
	"shmdt",
	"shmget",
	"shutdown",
	"sigaction",
	"sigaltstack",
	"signal",
	"signalfd",
	"signalfd4",
	"sigpending",
	"sigprocmask",
	"sigreturn",
	"sigsuspend",
	"socket",
	"socketcall",
	"socketpair",
	"splice",
	"spu_create",
	"spu_run",
	"ssetmask",
	"stat",
	"stat64",
	"statfs",
	"statfs64",
	"statx",
	"stime",
	"stty",
	"subpage_prot",
	"swapcontext",
	"swapoff",
	"swapon",
	"switch_endian",
	"symlink",
	"symlinkat",
	"sync",
	"sync_file_range",
	"sync_file_range2",
	"syncfs",
	"sys_debug_setcontext",
	"sysfs",
	"sysinfo",
	"syslog",
	"tee",
	"tgkill",
	"time",
	"timer_create",
	"timer_delete",
	"timer_getoverrun",
	"timer_gettime",
	"timer_gettime64",
	"timer_settime",
	"timer_settime64",
	"timerfd",
	"timerfd_create",
	"timerfd_gettime",
	"timerfd_gettime64",
	"timerfd_settime",
	"timerfd_settime64",
	"times",
	"tkill",
	"truncate",
	"truncate64",
	"tuxcall",
	"ugetrlimit",
	"ulimit",
	"umask",
	"umount",
	"umount2",
	"uname",
	"unlink",
	"unlinkat",
	"unshare",
	"uselib",
	"userfaultfd",
	"ustat",
	"utime",
	"utimensat",
	"utimensat_time64",
	"utimes",
	"vfork",
	"vhangup",
	"vm86",
	"vm86old",
	"vmsplice",
	"vserver",
	"wait4",
	"waitid",
	"waitpid",
	"write",
	"writev",
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp((const char *)a, *(const char *const *)b);
}

bool policy_syscall_name_known(const char *name)
{
	return bsearch(name, syscall_names, ELEMENTSOF(syscall_names), sizeof(syscall_names[0]),
		       cmp_name) != NULL;
}

/*
 * cordon's "default" profile, on top of launcherd's floor filter: what an unprivileged build or
 * agent never needs and what widens the kernel attack surface or escapes the sandbox's view
 * (namespaces, mounts, clocks, kernel modules and keys, file handles, raw I/O, tty injection).
 */
static const struct policy_syscall_rule profile_default[] = {
	{ "_sysctl", POLICY_SYSCALL_DENY },
	{ "acct", POLICY_SYSCALL_DENY },
	{ "add_key", POLICY_SYSCALL_DENY },
	{ "bpf", POLICY_SYSCALL_DENY },
	{ "chroot", POLICY_SYSCALL_DENY },
	{ "clock_adjtime", POLICY_SYSCALL_DENY },
	{ "clock_settime", POLICY_SYSCALL_DENY },
	{ "clone", POLICY_SYSCALL_CLONE_NS },
	{ "clone3", POLICY_SYSCALL_ENOSYS },
	{ "create_module", POLICY_SYSCALL_DENY },
	{ "delete_module", POLICY_SYSCALL_DENY },
	{ "fanotify_init", POLICY_SYSCALL_DENY },
	{ "finit_module", POLICY_SYSCALL_DENY },
	{ "fsconfig", POLICY_SYSCALL_DENY },
	{ "fsmount", POLICY_SYSCALL_DENY },
	{ "fsopen", POLICY_SYSCALL_DENY },
	{ "fspick", POLICY_SYSCALL_DENY },
	{ "get_kernel_syms", POLICY_SYSCALL_DENY },
	{ "init_module", POLICY_SYSCALL_DENY },
	{ "ioctl", POLICY_SYSCALL_IOCTL_TTY },
	{ "ioperm", POLICY_SYSCALL_DENY },
	{ "iopl", POLICY_SYSCALL_DENY },
	{ "kexec_file_load", POLICY_SYSCALL_DENY },
	{ "kexec_load", POLICY_SYSCALL_DENY },
	{ "keyctl", POLICY_SYSCALL_DENY },
	{ "lookup_dcookie", POLICY_SYSCALL_DENY },
	{ "mount", POLICY_SYSCALL_DENY },
	{ "mount_setattr", POLICY_SYSCALL_DENY },
	{ "move_mount", POLICY_SYSCALL_DENY },
	{ "name_to_handle_at", POLICY_SYSCALL_DENY },
	{ "nfsservctl", POLICY_SYSCALL_DENY },
	{ "open_by_handle_at", POLICY_SYSCALL_DENY },
	{ "open_tree", POLICY_SYSCALL_DENY },
	{ "perf_event_open", POLICY_SYSCALL_DENY },
	{ "pivot_root", POLICY_SYSCALL_DENY },
	{ "process_vm_writev", POLICY_SYSCALL_DENY },
	{ "query_module", POLICY_SYSCALL_DENY },
	{ "quotactl", POLICY_SYSCALL_DENY },
	{ "quotactl_fd", POLICY_SYSCALL_DENY },
	{ "reboot", POLICY_SYSCALL_DENY },
	{ "request_key", POLICY_SYSCALL_DENY },
	{ "setns", POLICY_SYSCALL_DENY },
	{ "settimeofday", POLICY_SYSCALL_DENY },
	{ "stime", POLICY_SYSCALL_DENY },
	{ "swapoff", POLICY_SYSCALL_DENY },
	{ "swapon", POLICY_SYSCALL_DENY },
	{ "syslog", POLICY_SYSCALL_DENY },
	{ "umount", POLICY_SYSCALL_DENY },
	{ "umount2", POLICY_SYSCALL_DENY },
	{ "unshare", POLICY_SYSCALL_DENY },
	{ "uselib", POLICY_SYSCALL_DENY },
	{ "userfaultfd", POLICY_SYSCALL_DENY },
	{ "ustat", POLICY_SYSCALL_DENY },
	{ "vhangup", POLICY_SYSCALL_DENY },
	{ "vm86", POLICY_SYSCALL_DENY },
	{ "vm86old", POLICY_SYSCALL_DENY },
};

/* "strict" adds: debugging other processes, io_uring, NUMA placement, exotic socket families. */
static const struct policy_syscall_rule profile_strict_extra[] = {
	{ "io_uring_enter", POLICY_SYSCALL_DENY },
	{ "io_uring_register", POLICY_SYSCALL_DENY },
	{ "io_uring_setup", POLICY_SYSCALL_DENY },
	{ "kcmp", POLICY_SYSCALL_DENY },
	{ "mbind", POLICY_SYSCALL_DENY },
	{ "migrate_pages", POLICY_SYSCALL_DENY },
	{ "move_pages", POLICY_SYSCALL_DENY },
	{ "personality", POLICY_SYSCALL_DENY },
	{ "process_vm_readv", POLICY_SYSCALL_DENY },
	{ "ptrace", POLICY_SYSCALL_DENY },
	{ "set_mempolicy", POLICY_SYSCALL_DENY },
	{ "socket", POLICY_SYSCALL_SOCKET_FAMILY },
};

static struct policy_syscall_rule
	profile_strict[ELEMENTSOF(profile_default) + ELEMENTSOF(profile_strict_extra)];
static size_t n_profile_strict;

static int cmp_rule(const void *a, const void *b)
{
	return strcmp(((const struct policy_syscall_rule *)a)->name,
		      ((const struct policy_syscall_rule *)b)->name);
}

const struct policy_syscall_rule *policy_syscall_profile_rules(enum policy_syscall_profile profile,
							       size_t *ret_n)
{
	if (profile == POLICY_SYSCALLS_DEFAULT) {
		*ret_n = ELEMENTSOF(profile_default);
		return profile_default;
	}
	/* Built once from constant tables; racing builders write identical bytes. */
	if (n_profile_strict == 0) {
		memcpy(profile_strict, profile_default, sizeof(profile_default));
		memcpy(profile_strict + ELEMENTSOF(profile_default), profile_strict_extra,
		       sizeof(profile_strict_extra));
		qsort(profile_strict, ELEMENTSOF(profile_strict), sizeof(profile_strict[0]),
		      cmp_rule);
		n_profile_strict = ELEMENTSOF(profile_strict);
	}
	*ret_n = n_profile_strict;
	return profile_strict;
}

bool policy_syscall_profile_has(enum policy_syscall_profile profile, const char *name)
{
	size_t n;
	const struct policy_syscall_rule *r = policy_syscall_profile_rules(profile, &n);

	for (size_t i = 0; i < n; i++)
		if (streq(r[i].name, name))
			return true;
	return false;
}

const char *policy_syscall_cond_to_string(enum policy_syscall_cond cond)
{
	switch (cond) {
	case POLICY_SYSCALL_DENY:
		return "";
	case POLICY_SYSCALL_ENOSYS:
		return "enosys";
	case POLICY_SYSCALL_CLONE_NS:
		return "clone-ns";
	case POLICY_SYSCALL_IOCTL_TTY:
		return "ioctl-tty";
	case POLICY_SYSCALL_SOCKET_FAMILY:
		return "socket-family";
	}
	return "";
}

int policy_syscall_spec(const struct policy *p, struct policy_syscall_rule **ret, size_t *ret_n)
{
	size_t n_prof, n = 0, n_deny = strv_length(p->syscalls.deny);
	const struct policy_syscall_rule *prof =
		policy_syscall_profile_rules(p->syscalls.profile, &n_prof);
	_cleanup_free_ struct policy_syscall_rule *rules =
		calloc(n_prof + n_deny + 1, sizeof(*rules));

	if (!rules)
		return -ENOMEM;
	for (size_t i = 0; i < n_prof; i++)
		if (!strv_contains(p->syscalls.allow, prof[i].name) &&
		    !strv_contains(p->syscalls.deny, prof[i].name))
			rules[n++] = prof[i];
	for (size_t i = 0; i < n_deny; i++) {
		bool dup = false;

		for (size_t k = 0; k < i; k++)
			if (streq(p->syscalls.deny[k], p->syscalls.deny[i]))
				dup = true;
		if (!dup)
			rules[n++] = (struct policy_syscall_rule){ p->syscalls.deny[i],
								   POLICY_SYSCALL_DENY };
	}
	qsort(rules, n, sizeof(*rules), cmp_rule);
	*ret = TAKE_PTR(rules);
	*ret_n = n;
	return 0;
}

char *policy_syscall_spec_key(const struct policy_syscall_rule *rules, size_t n)
{
	size_t len = 1;
	char *key, *q;

	for (size_t i = 0; i < n; i++)
		len += strlen(rules[i].name) +
		       strlen(policy_syscall_cond_to_string(rules[i].cond)) + 2;
	key = malloc(len);
	if (!key)
		return NULL;
	q = key;
	*q = '\0';
	for (size_t i = 0; i < n; i++) {
		const char *c = policy_syscall_cond_to_string(rules[i].cond);

		if (i > 0)
			*q++ = ',';
		q = stpcpy(q, rules[i].name);
		if (*c) {
			*q++ = ':';
			q = stpcpy(q, c);
		}
	}
	*q = '\0';
	return key;
}
