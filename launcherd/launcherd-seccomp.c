/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The seccomp floor: what no sandbox may do, whatever its plan says. Default action ALLOW (the
 * plan's own filter, stacked on top, is the allow-list); every rule below is a denial.
 *
 * Why each rule exists:
 *   - namespaces: unshare/clone with CLONE_NEW*, setns, clone3 (its flags sit in memory that
 *     seccomp cannot read, so it gets ENOSYS and libc falls back to clone, which we can check).
 *     A new user namespace would hand the sandbox a full capability set over new namespaces,
 *     the largest kernel attack surface an unprivileged process can reach.
 *   - the mount family: the sandbox's mount table is final once launcherd built it.
 *   - kexec, modules, bpf, perf_event_open, userfaultfd, keyctl/add_key/request_key,
 *     io_uring_*: kernel surface with a history of exploits and no use in a sandbox (io_uring also
 *     bypasses seccomp for the operations it performs).
 *   - personality(): only PER_LINUX (ADDR_NO_RANDOMIZE and friends weaken ASLR; other
 *     personalities reach little-used compat code).
 *   - ioctl TIOCSTI / TIOCLINUX: typing into a terminal the sandbox shares with its caller.
 *   - socket(): every family but AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK — vsock, TIPC, CAN,
 *     Bluetooth, AF_ALG, AF_PACKET and the rest are not scoped by the network namespace (vsock
 *     reaches the host's agents from any netns) or reach little-used kernel code; SOCK_RAW (but
 *     for NETLINK_ROUTE) / SOCK_PACKET; netlink other than NETLINK_ROUTE (which libc's getaddrinfo uses to list
 *     local addresses; in the sandbox's own netns it only sees loopback). A plan can deny
 *     NETLINK_ROUTE too. socketpair() of any family but AF_UNIX.
 *   - network "none" (the UNIX-ONLY variant): socket() and socketpair() of every family but
 *     AF_UNIX. Such a sandbox has no use for an IP, netlink, packet, vsock or any other socket,
 *     and without them nothing of the network namespace it sits in is reachable: what lets
 *     "none" sandboxes of one user share one empty namespace (launcherd-net.c, SECURITY.md).
 *   - other architectures: x32 and i386 system calls are denied like the rest.
 * ptrace, process_vm_* and pidfd_* are not listed: they name processes by pid, and the pid
 * namespace leaves nothing outside the sandbox to name.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <seccomp.h>

#include "common/cleanup.h"
#include "common/system.h"
#include "launcherd/launcherd-seccomp.h"
#include "launcherd/sandbox-init.h"
#include "launcherd/seccomp-bpf.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef TIOCSTI
#define TIOCSTI 0x5412
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

DEFINE_TRIVIAL_CLEANUP_FUNC(scmp_filter_ctx, seccomp_release);

/* Namespace flags that clone() and unshare() must not carry. CLONE_NEWTIME (0x80) overlaps the
 * exit-signal byte of clone(), so it is checked for unshare() only. */
static const unsigned long ns_flags[] = {
	CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID,	CLONE_NEWNET,
};

/* Denied outright. Raw numbers so that a libseccomp older than the kernel still compiles. */
static const int denied_syscalls[] = {
	SYS_setns,
	SYS_mount,
	SYS_umount2,
	SYS_pivot_root,
	SYS_chroot,
	SYS_open_tree,
	SYS_move_mount,
	SYS_fsopen,
	SYS_fsconfig,
	SYS_fsmount,
	SYS_fspick,
	442, /* mount_setattr */
	SYS_kexec_load,
	SYS_kexec_file_load,
	SYS_init_module,
	SYS_finit_module,
	SYS_delete_module,
	SYS_bpf,
	SYS_perf_event_open,
	SYS_userfaultfd,
	SYS_keyctl,
	SYS_add_key,
	SYS_request_key,
	SYS_io_uring_setup,
	SYS_io_uring_enter,
	SYS_io_uring_register,
	SYS_acct,
	SYS_swapon,
	SYS_swapoff,
	SYS_reboot,
#ifdef SYS_modify_ldt
	SYS_modify_ldt, /* x86: 16-bit segments, a kernel attack surface no payload needs */
#endif
};

static int add_rules(scmp_filter_ctx ctx, uint32_t deny, bool unix_only)
{
	int r;

	r = seccomp_rule_add(ctx, deny, SCMP_SYS(socketpair), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
	if (r < 0)
		return r;
	if (unix_only) {
		r = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
		if (r < 0)
			return r;
	} else {
		/* AF_UNIX 1, AF_INET 2, AF_INET6 10, AF_NETLINK 16 stay; the numbers between are
		 * listed (libseccomp takes one comparison per argument), everything from AF_PACKET
		 * (17) up is one rule. */
		for (int family = AF_UNSPEC; family < AF_PACKET; family++) {
			if (family == AF_UNIX || family == AF_INET || family == AF_INET6 ||
			    family == AF_NETLINK)
				continue;
			r = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 1,
					     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)family));
			if (r < 0)
				return r;
		}
		r = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_GE, AF_PACKET));
		if (r < 0)
			return r;
	}

	for (size_t i = 0; i < ELEMENTSOF(denied_syscalls); i++) {
		r = seccomp_rule_add(ctx, deny, denied_syscalls[i], 0);
		if (r < 0)
			return r;
	}

	for (size_t i = 0; i < ELEMENTSOF(ns_flags); i++) {
		r = seccomp_rule_add(ctx, deny, SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
		if (r < 0)
			return r;
		r = seccomp_rule_add(ctx, deny, SCMP_SYS(unshare), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
		if (r < 0)
			return r;
	}
	r = seccomp_rule_add(ctx, deny, SCMP_SYS(unshare), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWTIME, CLONE_NEWTIME));
	if (r < 0)
		return r;
	/* Not a denial: "use clone()". Same answer in kill mode, or libc could not fork at all. */
	r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r < 0)
		return r;

	/* personality(): PER_LINUX only. libseccomp cannot test one argument twice in a rule, so
	 * "neither 0 nor the 0xffffffff query" is not expressible: the query is refused too. */
	r = seccomp_rule_add(ctx, deny, SCMP_SYS(personality), 1, SCMP_A0(SCMP_CMP_NE, 0));
	if (r < 0)
		return r;

	/* ioctl's request is an unsigned int: compare the low 32 bits only. */
	r = seccomp_rule_add(ctx, deny, SCMP_SYS(ioctl), 1,
			     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, TIOCSTI));
	if (r < 0)
		return r;
	r = seccomp_rule_add(ctx, deny, SCMP_SYS(ioctl), 1,
			     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, TIOCLINUX));
	if (r < 0)
		return r;

	r = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
			     SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE));
	if (r < 0)
		return r;
	/* The socket type's low 4 bits (SOCK_TYPE_MASK) carry the type; the rest are flags.
	 * SOCK_RAW is refused but for netlink, whose sockets are raw by nature (NETLINK_ROUTE
	 * only, above): listing the interfaces and addresses of the sandbox's own namespace
	 * (if_nameindex(), getifaddrs(), `ip addr`) needs one, and changing them needs
	 * CAP_NET_ADMIN over that namespace, which a sandbox never has. */
	r = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_NE, AF_NETLINK),
			     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_RAW));
	if (r < 0)
		return r;
	r = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 1,
			     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_PACKET));
	if (r < 0)
		return r;
	return 0;
}

static int floor_ctx(enum floor_action action, bool unix_only, scmp_filter_ctx *ret)
{
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
	uint32_t deny = action == FLOOR_ACTION_KILL	? SCMP_ACT_KILL_PROCESS
			: action == FLOOR_ACTION_NOTIFY ? SCMP_ACT_NOTIFY
							: SCMP_ACT_ERRNO(EPERM);
	int r;

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	/* Only the native architecture: i386 and x32 system calls get the same denial. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, deny);
	if (r < 0)
		return r;
	/* launcherd sets no-new-privs itself, at its place in the apply order. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r < 0)
		return r;
	/* Binary tree over syscall numbers: a short path for the common (allowed) case. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r < 0)
		return r;
	r = add_rules(ctx, deny, unix_only);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(ctx);
	return 0;
}

int seccomp_floor_compile(enum floor_action action, bool unix_only, struct seccomp_program *ret)
{
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
	_cleanup_close_ int fd = -1;
	int r;

	r = floor_ctx(action, unix_only, &ctx);
	if (r < 0)
		return r;
	/* libseccomp 2.5 exports to an fd only: go through a memfd and keep the bytes. */
	fd = memfd_create("cordon-floor", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return r;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	return seccomp_program_read(fd, ret);
}

int seccomp_floor_export_pfc(enum floor_action action, bool unix_only, int fd)
{
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
	int r;

	r = floor_ctx(action, unix_only, &ctx);
	if (r < 0)
		return r;
	return seccomp_export_pfc(ctx, fd);
}

int seccomp_program_read(int fd, struct seccomp_program *ret)
{
	_cleanup_free_ struct sock_filter *insns = NULL;
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_size <= 0 || st.st_size % (off_t)sizeof(struct sock_filter) != 0 ||
	    st.st_size > (off_t)(SECCOMP_PROGRAM_MAX_INSNS * sizeof(struct sock_filter)))
		return -EINVAL;
	insns = malloc((size_t)st.st_size);
	if (!insns)
		return -ENOMEM;
	/* pread: the requester's file offset is not ours to move. */
	n = pread(fd, insns, (size_t)st.st_size, 0);
	if (n < 0)
		return -errno;
	if (n != st.st_size)
		return -EINVAL;
	ret->insns = TAKE_PTR(insns);
	ret->len = (size_t)st.st_size / sizeof(struct sock_filter);
	return 0;
}

unsigned seccomp_load_flags;

int seccomp_program_load(const struct seccomp_program *p)
{
	struct sock_fprog prog = { .len = (unsigned short)p->len, .filter = p->insns };

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, seccomp_load_flags, &prog) < 0)
		return -errno;
	return 0;
}

void seccomp_program_done(struct seccomp_program *p)
{
	free(p->insns);
	p->insns = NULL;
	p->len = 0;
}

bool seccomp_floor_combinable(const struct seccomp_program *floor)
{
	if (floor->len == 0 || BPF_CLASS(floor->insns[0].code) != BPF_LD)
		return false;
	for (size_t i = 0; i < floor->len; i++) {
		uint16_t c = floor->insns[i].code;

		switch (BPF_CLASS(c)) {
		case BPF_LD:
			if (c != (BPF_LD | BPF_W | BPF_ABS) && c != (BPF_LD | BPF_IMM))
				return false;
			break;
		case BPF_ALU:
		case BPF_JMP:
			if (BPF_SRC(c) != BPF_K)
				return false;
			break;
		case BPF_RET:
			if (BPF_RVAL(c) != BPF_K)
				return false;
			break;
		default: /* LDX, ST, STX, MISC: X or scratch memory */
			return false;
		}
	}
	return true;
}

#ifdef __x86_64__
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* Whether the plan (which seccomp_bpf_check() passed) allows every call the init makes once the
 * filters are loaded. */
static bool allows_init_calls(const struct seccomp_program *plan)
{
#ifdef NATIVE_AUDIT_ARCH
#define CHECK_CALL(sysno, a0, a1, a2)                                                            \
	{                                                                                        \
		struct seccomp_data d = { .nr = (sysno),                                         \
					  .arch = NATIVE_AUDIT_ARCH,                             \
					  .args = { (uint64_t)(a0), (uint64_t)(a1),              \
						    (uint64_t)(a2) } };                          \
		if (seccomp_bpf_exec(plan->insns, (uint32_t)plan->len, &d) != SECCOMP_RET_ALLOW) \
			return false;                                                            \
	}
	SANDBOX_INIT_CALLS(CHECK_CALL)
#undef CHECK_CALL
	return true;
#else
	(void)plan;
	return false;
#endif
}

int seccomp_combine(const struct seccomp_program *plan, const struct seccomp_program *floor,
		    struct seccomp_program *ret)
{
	_cleanup_free_ struct sock_filter *out = NULL;
	size_t n = plan->len;

	/* A program the kernel would load: every jump inside it, a RET last (and checked once
	 * here, not again for each of the init's calls run on it). */
	if (n == 0 || floor->len == 0 || n + floor->len > SECCOMP_PROGRAM_MAX_INSNS ||
	    !seccomp_bpf_check(plan->insns, (uint32_t)n) || !allows_init_calls(plan))
		return -EOPNOTSUPP;
	out = malloc((n + floor->len) * sizeof(*out));
	if (!out)
		return -ENOMEM;
	/*
	 * Why this is safe: the floor still decides every call the plan lets through, and nothing
	 * in the plan can skip it or reach into it. Every jump of the plan's lands inside the
	 * plan itself, and the plan's last instruction is a RET (seccomp_bpf_check()): it leaves
	 * only through its RETs. Of those, ALLOW becomes a jump to the floor's first instruction (the
	 * floor reads nothing the plan could have left in a register or scratch memory:
	 * seccomp_floor_combinable()), and an errno becomes a notification, answered by the init
	 * with that very errno and never let through (SECCOMP_USER_NOTIF_FLAG_CONTINUE is never
	 * used); kill, trap and an ENOSYS stay as they are, and outrank whatever the floor would
	 * have said when stacked (ENOSYS is how a profile sends libc from clone3 back to clone,
	 * at every thread's start: no refusal, and no round trip through the init for it). Any
	 * other action of the plan's (log, trace, a notification of its own) could mean "less
	 * than refused" and is not taken: the filters are stacked as before. The kernel checks
	 * the whole program again at load.
	 */
	for (size_t i = 0; i < n; i++) {
		struct sock_filter f = plan->insns[i];
		uint32_t action = f.k & SECCOMP_RET_ACTION_FULL;

		if (BPF_CLASS(f.code) == BPF_RET) {
			if (BPF_RVAL(f.code) != BPF_K)
				return -EOPNOTSUPP;
			if (action == SECCOMP_RET_ALLOW)
				f = (struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA,
								 (uint32_t)(n - i - 1));
			else if (action == SECCOMP_RET_ERRNO && (f.k & SECCOMP_RET_DATA) != ENOSYS)
				f = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
								 SECCOMP_RET_USER_NOTIF);
			else if (action == SECCOMP_RET_ERRNO)
				; /* ENOSYS: "use the older call" (clone3), no refusal */
			else if (action != SECCOMP_RET_KILL_PROCESS &&
				 action != SECCOMP_RET_KILL_THREAD && action != SECCOMP_RET_TRAP)
				return -EOPNOTSUPP;
		}
		out[i] = f;
	}
	memcpy(out + n, floor->insns, floor->len * sizeof(*out));
	ret->insns = TAKE_PTR(out);
	ret->len = n + floor->len;
	return 0;
}
