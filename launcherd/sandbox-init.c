/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-sandbox-init: pid 1 of a sandbox made by the light spawn (sandbox-init.h). Runs in the
 * sandbox, as the requester, with no capabilities and no_new_privs set; the child that exec'd
 * it has built everything else. Freestanding: no libc (glibc's start-up alone would cost more
 * than the whole of this), raw system calls, static, no relocations; built with its own flags
 * (launcherd/local.mk) and embedded in cordon-launcherd, which execs it from a sealed memfd.
 *
 * In order: read the config (the seccomp filters) from fd 5; restrict to the Landlock ruleset
 * at fd 6 if there is one; load launcherd's floor filter, then the plan's (or the two as one
 * program, the plan's in front); run the command as our child (vfork, then execve along the
 * plan's PATH; a failure goes to the status pipe as STEP_EXEC); then be its init: forward every
 * signal, reap everything, and when the command ends report its wait status on fd 4 and exit.
 * When launcherd asks for it (a notifying floor, launcherd-seccomp.h), hold the floor's
 * listener meanwhile: answer each refusal (EPERM, or the plan's errno when the plan's filter is
 * in front and refused) and report it, with its arguments, on fd 4 too (docs/DENIALS.md). Any
 * failure before the command runs is reported on the status pipe as (step, errno, index) and
 * ends us with APPLY_EXIT_SETUP_FAILED, as in the child before us.
 */
#include <stddef.h>
#include <stdint.h>

#include <asm/unistd.h>
#include <linux/fcntl.h> /* the architecture's O_* */
#include <linux/filter.h>
#include <linux/ioctl.h>
#include <linux/poll.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <linux/signal.h>

#include "launcherd/sandbox-init.h"
#include "launcherd/seccomp-bpf.h"

#define INIT_MAX_INSNS (2 * BPF_MAXINSNS)
#define INIT_PATH_MAX 4096

#define F_GETFD 1
#define F_SETFD 2
#define FD_CLOEXEC 1
#define WNOHANG 1
#define EINTR 4
#define ENOENT 2
#define ENOTDIR 20
#define EACCES 13
#define ECHILD 10
#define EIO 5
#define EBADF 9
#define CLOCK_MONOTONIC 1
#define EAGAIN 11
#define EPERM 1
#define MAX_ERRNO 4095
#define FIONREAD 0x541B
#define PROC_SUPER_MAGIC 0x9fa0
#define SFD_CLOEXEC O_CLOEXEC
#define SFD_NONBLOCK O_NONBLOCK

#define _noreturn_ __attribute__((noreturn))

/* ---- system calls ---------------------------------------------------------------------- */

#if defined(__x86_64__)
static inline long sc6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The entry point: the initial stack is argc, argv[], NULL, envp[], NULL, auxv. */
__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	xor %ebp, %ebp\n"
	"	mov %rsp, %rdi\n"
	"	and $-16, %rsp\n"
	"	call init_main\n"
	"	hlt\n");

/* vfork(2) as glibc does it: the child must not return into our frame, so the return address
 * is popped off before the call and pushed back by each of parent and child after it. */
__asm__(".text\n"
	".global init_vfork\n"
	"init_vfork:\n"
	"	pop %rdx\n"
	"	mov $58, %eax\n"
	"	syscall\n"
	"	push %rdx\n"
	"	ret\n");
#elif defined(__aarch64__)
static inline long sc6(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}

__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	mov x29, #0\n"
	"	mov x30, #0\n"
	"	mov x0, sp\n"
	"	and x1, x0, #-16\n"
	"	mov sp, x1\n"
	"	bl init_main\n"
	"	brk #0\n");

/* The return address is in x30, not on the stack: a plain clone(CLONE_VM | CLONE_VFORK). */
__asm__(".text\n"
	".global init_vfork\n"
	"init_vfork:\n"
	"	mov x0, #0x4111\n" /* CLONE_VM | CLONE_VFORK | SIGCHLD */
	"	mov x1, #0\n"
	"	mov x2, #0\n"
	"	mov x3, #0\n"
	"	mov x4, #0\n"
	"	mov x8, #220\n" /* clone */
	"	svc 0\n"
	"	ret\n");
#else
#error "cordon-sandbox-init: no system call stubs for this architecture"
#endif

#define sc0(n) sc6(n, 0, 0, 0, 0, 0, 0)
#define sc1(n, a) sc6(n, (long)(a), 0, 0, 0, 0, 0)
#define sc2(n, a, b) sc6(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define sc3(n, a, b, c) sc6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define sc4(n, a, b, c, d) sc6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define sc5(n, a, b, c, d, e) sc6(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

long init_vfork(void) __attribute__((returns_twice));

/* The compiler may emit calls to these even in freestanding code. */
void *memset(void *s, int c, size_t n)
{
	unsigned char *p = s;

	while (n--)
		*p++ = (unsigned char)c;
	return s;
}

void *memcpy(void *restrict d, const void *restrict s, size_t n)
{
	unsigned char *dp = d;
	const unsigned char *sp = s;

	while (n--)
		*dp++ = *sp++;
	return d;
}

struct timespec_k {
	long tv_sec;
	long tv_nsec;
};

struct siginfo_k {
	int si_signo;
	int si_errno;
	int si_code;
	int pad[29];
};

struct signalfd_siginfo_k {
	uint32_t ssi_signo;
	uint8_t pad[124];
};

/* ---- helpers ---------------------------------------------------------------------------- */

static char id[sizeof(((struct sandbox_init_config *)0)->id)];
static int tracing;

static size_t slen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

/* launcherd-trace.h's line, "ID STEP NANOSECONDS\n", in one write. */
static void trace(const char *step)
{
	char line[128], digits[24];
	struct timespec_k ts;
	unsigned long long ns;
	size_t n = 0, d = 0;

	if (!tracing)
		return;
	(void)sc2(__NR_clock_gettime, CLOCK_MONOTONIC, &ts);
	ns = (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
	do
		digits[d++] = (char)('0' + ns % 10);
	while ((ns /= 10) && d < sizeof(digits));
	for (const char *s = id; *s && n < 60; s++)
		line[n++] = *s;
	line[n++] = ' ';
	for (const char *s = step; *s && n < 100; s++)
		line[n++] = *s;
	line[n++] = ' ';
	while (d)
		line[n++] = digits[--d];
	line[n++] = '\n';
	(void)sc3(__NR_write, SANDBOX_INIT_FD_TRACE, line, n);
}

_noreturn_ static void exit_now(int code)
{
	for (;;)
		(void)sc1(__NR_exit_group, code);
}

/* Report (step, errno, index) on the status pipe and exit, as launcherd-apply.c's fail(). */
_noreturn_ static void fail(enum apply_step step, long error, int index)
{
	struct apply_status st = {
		.step = (int32_t)step,
		.error = (int32_t)(error < 0 ? -error : (error ? error : EIO)),
		.index = index,
	};

	(void)sc3(__NR_write, SANDBOX_INIT_FD_STATUS, &st, sizeof(st));
	exit_now(APPLY_EXIT_SETUP_FAILED);
}

/* Read exactly n bytes (less only at EOF or on error). */
static long read_full(int fd, void *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		long r = sc3(__NR_read, fd, (char *)buf + done, n - done);

		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (long)done;
}

static int startswith_path(const char *s)
{
	return s[0] == 'P' && s[1] == 'A' && s[2] == 'T' && s[3] == 'H' && s[4] == '=';
}

static int has_slash(const char *s)
{
	for (; *s; s++)
		if (*s == '/')
			return 1;
	return 0;
}

static char full[INIT_PATH_MAX];

/* execve argv[0], searching the plan's PATH when it has no slash (launcherd-apply.c did this
 * before the light spawn; the same rules). Returns a positive errno. */
static long exec_command(char **argv, char **envp)
{
	const char *path = "/usr/local/bin:/usr/bin:/bin";
	size_t alen = slen(argv[0]);
	int eacces = 0;
	long r;

	if (has_slash(argv[0]))
		return -sc3(__NR_execve, argv[0], argv, envp);
	for (char **e = envp; *e; e++)
		if (startswith_path(*e)) {
			path = *e + 5;
			break;
		}
	for (const char *p = path;;) {
		const char *colon = p;
		size_t n;

		while (*colon && *colon != ':')
			colon++;
		n = (size_t)(colon - p);
		if (n > 0 && n + 1 + alen < sizeof(full)) {
			memcpy(full, p, n);
			full[n] = '/';
			memcpy(full + n + 1, argv[0], alen + 1);
			r = -sc3(__NR_execve, full, argv, envp);
			if (r == EACCES)
				eacces = 1;
			else if (r != ENOENT && r != ENOTDIR)
				return r;
		}
		if (!*colon)
			break;
		p = colon + 1;
	}
	return eacces ? EACCES : ENOENT;
}

static struct sock_filter insns[INIT_MAX_INSNS];

/* ---- the init's work --------------------------------------------------------------------- */

/* One signal: forward it to the command, or (SIGCHLD) reap every process that ended; when the
 * command did, report its wait status and whether we were then alone (launcherd-apply.h), and
 * exit. */
static void on_signal(long sig, long child, void (*before_exit)(void))
{
	if (sig != SIGCHLD) {
		(void)sc2(__NR_kill, child, sig);
		return;
	}
	for (;;) {
		int status = 0;
		long p = sc4(__NR_wait4, -1, &status, WNOHANG, 0);

		if (p <= 0)
			break;
		if (p == child) {
			struct apply_report rep = { .type = APPLY_REPORT_EXIT, .status = status };

			trace("command-reaped");
			do
				p = sc4(__NR_wait4, -1, &(int){ 0 }, WNOHANG, 0);
			while (p > 0);
			rep.alone = p == -ECHILD;
			if (before_exit)
				before_exit();
			(void)sc3(__NR_write, SANDBOX_INIT_FD_REPORT, &rep, sizeof(rep));
			exit_now((status & 0x7f) == 0 ? (status >> 8) & 0xff
						      : 128 + (status & 0x7f));
		}
	}
}

/*
 * The floor's listener (sandbox-init.h, docs/DENIALS.md). The floor returns
 * SECCOMP_RET_USER_NOTIF for what it refuses, and nothing else: an allowed call never comes
 * here. Each notification is answered with EPERM, the errno the floor's rule gives without a
 * listener (or, with the plan's filter in front, n_answer, the errno the plan's own program
 * gives for the call when it refused it), as soon as the caller's name is read (while it
 * waits; it may be gone after);
 * never with SECCOMP_USER_NOTIF_FLAG_CONTINUE, so the call is refused whatever we read, and
 * nothing the caller changes in its memory meanwhile matters (we read only the registers the
 * kernel copied). Then it is reported on the report pipe, within our rate limit. We are under
 * the floor ourselves: every call made here is one it allows (SANDBOX_INIT_CALLS), or we would
 * wait on ourselves; a plan in front of it must allow them too (launcherd checks, else stacks
 * the two filters). Should a stacked plan's own filter refuse one of them, the listener is
 * closed: the floor's refusals are then ENOSYS (still refused, the kernel's answer without a
 * listener) and reported by the audit record alone.
 */
static struct {
	long fd, sfd;
	long window_ns;
	unsigned in_window;
	uint32_t dropped;
	/* The plan's own filter when the floor we hold came with it in front (n_answer) */
	const struct sock_filter *answer;
	uint32_t n_answer;
} notif = { .fd = -1, .sfd = -1 };

static long now_ns(void)
{
	struct timespec_k ts;

	if (sc2(__NR_clock_gettime, CLOCK_MONOTONIC, &ts) < 0)
		return 0; /* one window for ever: at most the window's count, then counted */
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Write a record without ever blocking (the pipe is non-blocking), and only while the pipe
 * keeps room for the EXIT record: launcherd may be slow, never we. */
static int report_put(const struct apply_report *rep)
{
	int queued = 0;

	if (sc3(__NR_ioctl, SANDBOX_INIT_FD_REPORT, FIONREAD, &queued) < 0 ||
	    queued > SANDBOX_INIT_REPORT_BACKLOG)
		return -EAGAIN;
	return sc3(__NR_write, SANDBOX_INIT_FD_REPORT, rep, sizeof(*rep)) == (long)sizeof(*rep)
		       ? 0
		       : -EAGAIN;
}

static void notif_flush_dropped(void)
{
	struct apply_report rep = { .type = APPLY_REPORT_DROPPED };

	if (!notif.dropped)
		return;
	rep.dropped = notif.dropped;
	if (report_put(&rep) == 0)
		notif.dropped = 0;
}

static void notif_close(void)
{
	(void)sc1(__NR_close, notif.fd);
	notif.fd = -1;
}

/* The caller's command name from the sandbox's own /proc (its pid namespace is ours), for the
 * report; nothing when there is no /proc, or the plan's Landlock does not let us read it. */
static void read_comm(uint32_t pid, char *buf, size_t size)
{
	char path[32] = "/proc/", digits[12];
	long fd, r, fs[16]; /* struct statfs: f_type first */
	size_t n = 6, d = 0;

	do
		digits[d++] = (char)('0' + pid % 10);
	while ((pid /= 10) && d < sizeof(digits));
	while (d)
		path[n++] = digits[--d];
	memcpy(path + n, "/comm", 6);
	/* Never blocking (the sandbox could have put a FIFO where no /proc is mounted), and read
	 * only from procfs: whatever else is there is not the name. */
	fd = sc4(__NR_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd < 0)
		return;
	r = sc2(__NR_fstatfs, fd, fs);
	if (r >= 0 && fs[0] == PROC_SUPER_MAGIC)
		r = sc3(__NR_read, fd, buf, size - 1);
	else
		r = -1;
	(void)sc1(__NR_close, fd);
	if (r <= 0)
		return;
	if (buf[r - 1] == '\n')
		r--;
	memset(buf + r, 0, size - (size_t)r);
}

static void notif_handle(void)
{
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	struct apply_report rep = { .type = APPLY_REPORT_DENIAL };
	long r, now, error = -EPERM;
	uint32_t ret;
	int report;

	memset(&req, 0, sizeof(req)); /* the kernel wants it zeroed */
	r = sc3(__NR_ioctl, notif.fd, SECCOMP_IOCTL_NOTIF_RECV, &req);
	if (r == -EINTR || r == -ENOENT)
		return; /* the caller went away (a fatal signal) before we read it */
	if (r < 0) {
		notif_close();
		return;
	}
	now = now_ns();
	if (now - notif.window_ns >= 1000000000L || notif.window_ns == 0) {
		notif.window_ns = now ? now : 1;
		notif.in_window = 0;
	}
	report = notif.in_window < SANDBOX_INIT_DENIALS_PER_SEC;
	/* The caller's name while it still waits in the refused call: once answered it may be
	 * gone (`unshare -U true` exits at once), and its /proc entry with it. */
	if (report)
		read_comm(req.pid, rep.comm, sizeof(rep.comm));
	/* With the plan's filter in front of the floor, a refusal is the plan's when its own
	 * program gives an errno for these data, and answered with that errno (capped like the
	 * kernel's); else the floor's. */
	ret = notif.n_answer ? seccomp_bpf_exec(notif.answer, notif.n_answer, &req.data)
			     : SECCOMP_RET_ALLOW;
	if ((ret & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO) {
		rep.by_plan = 1;
		error = (ret & SECCOMP_RET_DATA) > MAX_ERRNO ? -MAX_ERRNO
							     : -(long)(ret & SECCOMP_RET_DATA);
	}
	resp = (struct seccomp_notif_resp){ .id = req.id, .error = (int32_t)error };
	r = sc3(__NR_ioctl, notif.fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	if (r < 0 && r != -ENOENT) {
		notif_close();
		return;
	}
	if (!report) {
		notif.dropped++;
		return;
	}
	notif.in_window++;
	rep.dropped = notif.dropped;
	rep.nr = req.data.nr;
	rep.arch = req.data.arch;
	rep.pid = req.pid;
	for (int i = 0; i < 6; i++)
		rep.args[i] = req.data.args[i];
	if (report_put(&rep) == 0)
		notif.dropped = 0;
	else
		notif.dropped++;
}

/* The init's loop with a listener: signals through a signalfd, notifications, and the end of a
 * rate window with refusals left to count. Returns when the listener had to be closed. */
static void notif_loop(long child)
{
	long sfd = notif.sfd;

	for (;;) {
		struct pollfd pfd[2] = { { .fd = (int)sfd, .events = POLLIN },
					 { .fd = (int)notif.fd, .events = POLLIN } };
		struct timespec_k left, *timeout = 0;
		long r;

		if (notif.dropped) {
			long end = notif.window_ns + 1000000000L - now_ns();

			left.tv_sec = end > 0 ? end / 1000000000L : 0;
			left.tv_nsec = end > 0 ? end % 1000000000L : 0;
			timeout = &left;
		}
		r = sc5(__NR_ppoll, pfd, 2, timeout, 0, 8);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return;
		if (r == 0) {
			notif_flush_dropped();
			continue;
		}
		if (pfd[1].revents & POLLIN)
			notif_handle();
		else if (pfd[1].revents)
			notif_close(); /* POLLHUP, POLLERR: nothing more will come */
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo_k si;

			while (sc3(__NR_read, sfd, &si, sizeof(si)) == (long)sizeof(si))
				on_signal(si.ssi_signo, child, notif_flush_dropped);
		}
		if (notif.fd < 0)
			return;
	}
}

/* ---- main ------------------------------------------------------------------------------- */

_noreturn_ void init_main(long *sp);

_noreturn_ void init_main(long *sp)
{
	/* argv: "cordon-init", then the command's (sandbox-init.h) */
	char **argv = (char **)(sp + 1), **envp = argv + sp[0] + 1;
	struct sandbox_init_config cfg;
	uint64_t all = ~0ULL, none = 0;
	long r, child;

	/* Non-dumpable from exec already (our memfd is execute-only): said again, first thing. */
	(void)sc5(__NR_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0);
	(void)sc5(__NR_prctl, PR_SET_NAME, "cordon-init", 0, 0, 0);
	tracing = sc2(__NR_fcntl, SANDBOX_INIT_FD_TRACE, F_GETFD) >= 0;

	/* The config: the filters, which only launcherd's memory held. */
	r = read_full(SANDBOX_INIT_FD_CONFIG, &cfg, sizeof(cfg));
	if (sp[0] < 2)
		fail(STEP_EXEC, EIO, -1);
	if (r != (long)sizeof(cfg) || cfg.magic != SANDBOX_INIT_MAGIC || cfg.n_floor == 0 ||
	    cfg.n_floor > BPF_MAXINSNS || cfg.n_plan > BPF_MAXINSNS ||
	    cfg.n_answer > BPF_MAXINSNS || (cfg.n_plan && cfg.n_answer) ||
	    (cfg.n_answer && !(cfg.floor_flags & SECCOMP_FILTER_FLAG_NEW_LISTENER)))
		fail(STEP_SECCOMP, r < 0 ? r : EIO, -1);
	memcpy(id, cfg.id, sizeof(id));
	id[sizeof(id) - 1] = 0;
	r = read_full(SANDBOX_INIT_FD_CONFIG, insns,
		      (size_t)(cfg.n_floor + cfg.n_plan + cfg.n_answer) * sizeof(insns[0]));
	if (r != (long)((cfg.n_floor + cfg.n_plan + cfg.n_answer) * sizeof(insns[0])))
		fail(STEP_SECCOMP, r < 0 ? r : EIO, -1);
	notif.answer = insns + cfg.n_floor;
	notif.n_answer = cfg.n_answer;
	(void)sc1(__NR_close, SANDBOX_INIT_FD_CONFIG);
	trace("init");

	/* landlock: the ruleset the child built (it opened the rule paths, as the user). */
	if (sc2(__NR_fcntl, SANDBOX_INIT_FD_RULESET, F_GETFD) >= 0) {
		r = sc2(__NR_landlock_restrict_self, SANDBOX_INIT_FD_RULESET, cfg.landlock_flags);
		if (r < 0)
			fail(STEP_LANDLOCK, r, -1);
		(void)sc1(__NR_close, SANDBOX_INIT_FD_RULESET);
	}
	trace("landlock");

	/* The floor's listener, when launcherd asks for it: the signalfd our loop waits on too,
	 * made before the filters (close-on-exec; the command never holds it). */
	if (cfg.floor_flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) {
		notif.sfd = sc4(__NR_signalfd4, -1, &all, sizeof(all), SFD_CLOEXEC | SFD_NONBLOCK);
		if (notif.sfd < 0)
			fail(STEP_SECCOMP, notif.sfd,
			     -1); /* never the floor without its listener */
	}

	/* seccomp: the floor, then the plan's filter, which can only add denials (or, n_answer,
	 * one program with the plan's filter in front: seccomp_combine() says why). Why the
	 * floor's listener (a notifying floor, launcherd-seccomp.h) is safe with us: it is ours
	 * alone, close-on-exec from the kernel, and neither ptrace, pidfd_getfd() nor /proc/1/fd
	 * reach it (we are never dumpable), for whoever held it could let refused calls through;
	 * and we only ever answer EPERM (notif_handle()). A notifying floor without its listener
	 * would answer ENOSYS: the set-up fails rather. */
	{
		struct sock_fprog floor = { .len = (unsigned short)cfg.n_floor, .filter = insns };
		struct sock_fprog plan = { .len = (unsigned short)cfg.n_plan,
					   .filter = insns + cfg.n_floor };

		r = sc3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, cfg.floor_flags, &floor);
		if (r < 0) /* the plan's part, when it leads (the floor alone always loads) */
			fail(STEP_SECCOMP, r, cfg.n_answer ? 0 : -1);
		if (cfg.floor_flags & SECCOMP_FILTER_FLAG_NEW_LISTENER)
			notif.fd = r;
		if (cfg.n_plan &&
		    (r = sc3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, cfg.seccomp_flags, &plan)) < 0)
			fail(STEP_SECCOMP, r, 0);
	}
	trace("seccomp");

	/* exec: the status pipe closes at the command's execve (EOF = success); the report pipe
	 * and the trace never reach the command. Every signal is blocked from here on, until the
	 * command unblocks them. */
	for (int fd = SANDBOX_INIT_FD_STATUS; fd <= SANDBOX_INIT_FD_TRACE; fd++) {
		r = sc3(__NR_fcntl, fd, F_SETFD, FD_CLOEXEC);
		if (r < 0 && r != -EBADF)
			fail(STEP_EXEC, r, -1);
	}
	(void)sc4(__NR_rt_sigprocmask, SIG_BLOCK, &all, 0, sizeof(all));
	child = init_vfork();
	if (child == 0) {
		trace("init-forked");
		if (sc4(__NR_rt_sigprocmask, SIG_SETMASK, &none, 0, sizeof(none)) < 0)
			fail(STEP_EXEC, EIO, -1);
		fail(STEP_EXEC, exec_command(argv + 1, envp), -1);
	}
	if (child < 0)
		fail(STEP_EXEC, child, -1);

	/* Our stdio and status pipe go: the output's EOF is the command's (and its descendants')
	 * alone. The report and the trace stay. Nor can the command (ptrace, /proc/1/fd) reach
	 * what we keep, even as uid 0. */
	(void)sc3(__NR_close_range, 0, SANDBOX_INIT_FD_STATUS, 0);

	/* The init: forward every signal a supervisor sends (launcherd's kill requests, SIGKILL
	 * aside, reach pid 1), reap every process that ends up ours, and when the command ends,
	 * report its wait status and whether we were then alone (launcherd-apply.h). With the
	 * floor's listener, answer its notifications too, until it has to be closed. */
	if (notif.fd >= 0)
		notif_loop(child);
	if (notif.fd >= 0)
		notif_close();
	for (;;) {
		struct siginfo_k si;
		long sig = sc4(__NR_rt_sigtimedwait, &all, &si, 0, sizeof(all));

		if (sig >= 0)
			on_signal(sig, child, notif_flush_dropped);
	}
}
