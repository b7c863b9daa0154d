/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * launcherd_apply(): the one function that turns a validated plan into a confined process.
 * It runs in the child, between clone3() and execve(), in both modes.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/securebits.h>
#include <sys/capability.h>
#include <sys/ioctl.h>

#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-fdpass.h"
#include "launcherd/launcherd-apply.h"
#include "launcherd/launcherd-audit.h"
#include "launcherd/launcherd-landlock.h"
#include "launcherd/launcherd-mount.h"
#include "launcherd/launcherd-net.h"
#include "launcherd/launcherd-trace.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static const char *const step_names[_STEP_MAX] = {
	[STEP_CLONE] = "clone",
	[STEP_USERNS_MAP] = "userns-map",
	[STEP_MOUNT_PRIVATE] = "mount-private",
	[STEP_ROOT] = "root",
	[STEP_MOUNT] = "mount",
	[STEP_PIVOT_ROOT] = "pivot-root",
	[STEP_NETWORK] = "network",
	[STEP_CGROUP] = "cgroup",
	[STEP_HOSTNAME] = "hostname",
	[STEP_SESSION] = "session",
	[STEP_RLIMIT] = "rlimit",
	[STEP_IDENTITY] = "identity",
	[STEP_CAPABILITIES] = "capabilities",
	[STEP_NO_NEW_PRIVS] = "no-new-privs",
	[STEP_LANDLOCK] = "landlock",
	[STEP_SECCOMP] = "seccomp",
	[STEP_FDS] = "fds",
	[STEP_CWD] = "cwd",
	[STEP_EXEC] = "exec",
};

const char *apply_step_to_string(enum apply_step s)
{
	return (unsigned)s < _STEP_MAX ? step_names[s] : "unknown";
}

unsigned long long apply_clone_flags(const struct apply_context *ctx)
{
	/* IPC: a new namespace costs ≈ 25–30 µs here (an mqueue superblock, two sysctl tables);
	 * one made ahead by the pool's helper saved that latency but cost the machine more in all
	 * (its open, two messages, the setns: ≈ 7 % of a sandbox's CPU time; docs/ARCHITECTURE.md). */
	unsigned long long f = CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC;

	/* A prepared mount namespace is entered at the root step instead. In user mode a copy of
	 * launcherd's (the host's, as it is now) is made all the same: the bind sources are found
	 * again and proc is made there, which only a namespace of launcherd's own user namespace
	 * allows. */
	if (ctx->mntns_fd < 0 || ctx->userns_late)
		f |= CLONE_NEWNS;
	/* No cgroup of its own to be moved into first: the cgroup namespace right away, rooted
	 * where it stays (launcherd's cgroup), instead of an unshare() at the cgroup step. */
	if (ctx->cgroup_go_fd < 0 && ctx->cgroup_procs[0] < 0 && ctx->cgroup_procs[1] < 0)
		f |= CLONE_NEWCGROUP;
	if (ctx->plan->network != PLAN_NETWORK_HOST && ctx->netns_fd < 0)
		f |= CLONE_NEWNET;
	/* THE mode difference: in user mode the sandbox runs in a new user namespace in which the
	 * user is mapped to itself (see STEP_USERNS_MAP and STEP_IDENTITY); made here unless
	 * launcherd has a user namespace of its own, which then owns the others, and the child
	 * unshares its own late. */
	if (ctx->userns && !ctx->userns_late)
		f |= CLONE_NEWUSER;
	return f;
}

/* Report (step, errno, index) on the status pipe at fd and exit. */
_noreturn_ static void fail_at(int fd, enum apply_step step, int error, int index)
{
	struct apply_status st = {
		.step = (int32_t)step,
		.error = error < 0 ? -error : (error ? error : EIO),
		.index = index,
	};

	(void)!write(fd, &st, sizeof(st));
	_exit(APPLY_EXIT_SETUP_FAILED);
}

/* Report (step, errno, index) to the parent and exit. The only way out of a failed set-up. */
_noreturn_ static void fail(const struct apply_context *ctx, enum apply_step step, int error,
			    int index)
{
	fail_at(ctx->status_fd, step, error, index);
}

/* Write text to file in the /proc/self/ that self_dir is (an O_PATH fd). */
static int write_proc_self(int self_dir, const char *file, const char *text)
{
	int fd, r = 0;

	fd = openat(self_dir, file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		r = -errno;
	safe_close(fd);
	return r;
}

/* launcherd-apply.h */
int apply_map_self(int self_dir, uid_t uid, gid_t gid)
{
	char line[64];
	int r;

	(void)snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	r = write_proc_self(self_dir, "uid_map", line);
	if (r < 0)
		return r;
	/* An unprivileged gid_map needs setgroups(2) disabled first. */
	r = write_proc_self(self_dir, "setgroups", "deny");
	if (r < 0)
		return r;
	(void)snprintf(line, sizeof(line), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	return write_proc_self(self_dir, "gid_map", line);
}

/* userns-map: the user namespace we are in, new, mapped through self_dir (closed), or fail. */
static void userns_map(const struct apply_context *ctx, int *self_dir)
{
	int r = apply_map_self(*self_dir, ctx->uid, ctx->gid);

	if (r < 0)
		fail(ctx, STEP_USERNS_MAP, r, -1);
	*self_dir = safe_close(*self_dir);
	launcherd_trace(ctx->id, "userns-map");
}

/* The securebits every sandbox runs with: uid 0 gains nothing by exec (noroot), a uid switch
 * leaves the capability sets alone (no-setuid-fixup: set before the identity step's switch, so
 * that the capabilities step still holds CAP_SETPCAP without PR_SET_KEEPCAPS), keep-caps stays
 * off, and no ambient capability can be raised; each locked. */
#define SANDBOX_SECUREBITS                                                                       \
	(SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |                         \
	 SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | \
	 SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

/* Empty the bounding set (unless bset_empty: nothing there to drop, see apply_context), then
 * the permitted, effective and inheritable sets in one capset(); the ambient set goes with them
 * (the kernel keeps it within permitted and inheritable). */
static int drop_capabilities(bool bset_empty)
{
	struct __user_cap_header_struct head = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};

	/* Reading is cheap, dropping allocates new credentials: drop only what is there. CAP_SETPCAP
	 * is still effective: the uid switch changed no capability set (no-setuid-fixup). */
	for (cap_value_t c = 0; !bset_empty && c < cap_max_bits(); c++)
		if (cap_get_bound(c) > 0 && cap_drop_bound(c) < 0)
			return negative_errno();
	/* The raw call: libcap's cap_init() + cap_set_proc() cost a malloc and a capget() more. */
	if (syscall(SYS_capset, &head, none) < 0)
		return -errno;
	return 0;
}

static int place_stdio(const struct apply_context *ctx)
{
	int src[3];

	/* Move the sources above 2 first so that placing one cannot clobber another. */
	for (int i = 0; i < 3; i++) {
		int from = ctx->plan->stdio[i] >= 0 ? ctx->fds[ctx->plan->stdio[i]]
						    : ctx->devnull_fd;

		src[i] = fcntl(from, F_DUPFD_CLOEXEC, 3);
		if (src[i] < 0)
			return -errno;
	}
	for (int i = 0; i < 3; i++)
		if (dup2(src[i], i) < 0) /* the copy at i is not close-on-exec */
			return -errno;
	/* Everything else, ours included, closes at exec; the status pipe stays open until then
	 * so that its EOF means "exec succeeded". */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return -errno;
	return 0;
}

/*
 * The light spawn: the fds the init expects (sandbox-init.h), not close-on-exec; everything
 * else at 3 and above is (place_stdio()). ruleset may be -1 (none), as may the trace. Returns
 * the init's memfd at its new number (the old one may be a target); a failure is reported and
 * ends us, to the status pipe wherever it is at that moment.
 */
static int place_init_fds(const struct apply_context *ctx, int ruleset)
{
	const int from[] = { ctx->status_fd, ctx->report_fd, ctx->config_fd, ruleset,
			     launcherd_trace_fd };
	const int above = SANDBOX_INIT_FD_STATUS + (int)ELEMENTSOF(from);
	int src[ELEMENTSOF(from)], init_fd;

	/* Copies above the targets first, so that placing one cannot clobber another. */
	init_fd = fcntl(ctx->init_fd, F_DUPFD_CLOEXEC, above);
	if (init_fd < 0)
		fail(ctx, STEP_FDS, errno, -1);
	for (size_t i = 0; i < ELEMENTSOF(from); i++) {
		src[i] = from[i] < 0 ? -1 : fcntl(from[i], F_DUPFD_CLOEXEC, above);
		if (from[i] >= 0 && src[i] < 0)
			fail(ctx, STEP_FDS, errno, -1);
	}
	/* The status pipe first: from here on it is at SANDBOX_INIT_FD_STATUS. */
	for (size_t i = 0; i < ELEMENTSOF(from); i++) {
		int to = SANDBOX_INIT_FD_STATUS + (int)i;

		if (src[i] < 0)
			(void)close(to); /* absent: the init finds nothing there */
		else if (dup2(src[i], to) < 0)
			fail_at(i == 0 ? src[0] : SANDBOX_INIT_FD_STATUS, STEP_FDS, errno, -1);
	}
	return init_fd;
}

/*
 * We were cloned with every fd launcherd had open: its sockets, other sandboxes' pidfds and
 * pipes, the namespaces of its pool. Close-on-exec would shed them at the command's execve,
 * but the init never execs, and a namespace whose last reference went with one of our copies
 * would be torn down in our time. Keep only what the set-up uses.
 */
static void close_launcherd_fds(const struct apply_context *ctx)
{
	int keep[IPC_MAX_FDS + PLAN_MOUNTS_MAX + 16];
	size_t n = 0;

	for (size_t i = 0; i < ctx->n_fds && i < IPC_MAX_FDS; i++)
		keep[n++] = ctx->fds[i];
	for (size_t i = 0; i < ctx->plan->n_mounts && i < PLAN_MOUNTS_MAX; i++)
		keep[n++] = ctx->tree_fds[i];
	keep[n++] = ctx->devnull_fd;
	keep[n++] = ctx->netns_fd;
	keep[n++] = ctx->mntns_fd;
	keep[n++] = ctx->status_fd;
	keep[n++] = ctx->report_fd;
	keep[n++] = ctx->proxy_sock;
	keep[n++] = ctx->cgroup_go_fd;
	keep[n++] = ctx->cgroup_procs[0];
	keep[n++] = ctx->cgroup_procs[1];
	keep[n++] = ctx->init_fd;
	keep[n++] = ctx->config_fd;
	keep[n++] = launcherd_trace_fd;
	close_all_but(keep, n);
}

/* execve argv[0], searching the plan's PATH when it has no slash. Returns an errno. */
static int exec_plan(const struct plan *plan)
{
	const char *path = "/usr/local/bin:/usr/bin:/bin";
	bool eacces = false;

	if (strchr(plan->argv[0], '/')) {
		execve(plan->argv[0], plan->argv, plan->envp);
		return errno;
	}
	for (char **e = plan->envp; *e; e++)
		if (startswith(*e, "PATH=")) {
			path = *e + 5;
			break;
		}
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		char full[4096];

		if (n > 0 && (size_t)snprintf(full, sizeof(full), "%.*s/%s", (int)n, p,
					      plan->argv[0]) < sizeof(full)) {
			execve(full, plan->argv, plan->envp);
			if (errno == EACCES)
				eacces = true;
			else if (errno != ENOENT && errno != ENOTDIR)
				return errno;
		}
		if (!colon)
			break;
		p = colon + 1;
	}
	return eacces ? EACCES : ENOENT;
}

/*
 * The sandbox's init (pid 1 of its pid namespace), once the command runs as its child: forward
 * every signal a supervisor sends (launcherd's kill requests, SIGKILL aside, reach pid 1), reap
 * every process that ends up ours, and when the command ends write a struct apply_report to
 * report_fd, so that launcherd reports the command's own exit code or signal, then exit: the
 * kernel kills whatever is left in the namespace.
 *
 * Every process of the namespace descends from us (nothing can enter it), and an orphan is
 * reparented to us: so when, the command reaped, we have no child left at all, the sandbox is
 * over but for ourselves, and the report says so ("alone"). launcherd then answers "exit" at
 * once instead of after our own exit and the namespaces' teardown.
 */
_noreturn_ static void run_init(const char *id, pid_t child, int report_fd)
{
	sigset_t set;

	sigfillset(&set);
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);

		if (sig < 0)
			continue;
		if (sig != SIGCHLD) {
			(void)kill(child, sig);
			continue;
		}
		for (;;) {
			int status;
			pid_t p = waitpid(-1, &status, WNOHANG);

			if (p <= 0)
				break;
			if (p == child) {
				struct apply_report rep = { .status = status };

				launcherd_trace(id, "command-reaped");
				do
					p = waitpid(-1, &(int){ 0 }, WNOHANG);
				while (p > 0);
				rep.alone = p < 0 && errno == ECHILD;
				(void)!write(report_fd, &rep, sizeof(rep));
				_exit(WIFEXITED(status) ? WEXITSTATUS(status)
							: 128 + WTERMSIG(status));
			}
		}
	}
}

/*
 * Apply the plan, in this order, and exec. Why this order:
 *
 *  clone          (parent) new mount, pid, ipc, uts and — unless network is "host" — net
 *                 namespaces (or, in privileged mode, a fresh one from the pool, entered at
 *                 the network step; and an empty mount namespace from the pool, entered at
 *                 the root step: until then we share launcherd's and change nothing in it),
 *                 plus a user namespace in user mode. We are pid 1 of the new pid
 *                 namespace: when we die, the kernel kills every process left in it, which is
 *                 how a cancel takes the whole tree down.
 *  (fds)          first, close every fd of launcherd's that the set-up does not use.
 *  userns-map     (user mode) map the user to itself, so that files keep their owners; when
 *                 launcherd has a user namespace of its own, which then owns every namespace
 *                 above, the sandbox's is made and mapped after session instead (see there).
 *  mount-private, root, mount
 *                 a fresh tmpfs root built from the plan while we still hold CAP_SYS_ADMIN over
 *                 our mount namespace; bind sources are the requester's fds.
 *  pivot-root     into the new root; the host's tree is detached, not merely hidden. (In a
 *                 prepared namespace the helper did that ahead of time: the host's tree was
 *                 detached from it before we got it, and its root is ours already.)
 *  network        bring lo up in the new netns, or enter the pooled one (CAP_NET_ADMIN /
 *                 CAP_SYS_ADMIN: before the drop); for "proxy", listen on 127.0.0.1:port in
 *                 it and hand the socket to launcherd (before Landlock forbids binding).
 *  cgroup         launcherd makes the sandbox's cgroup while we build the mount tree, sets its
 *                 limits and moves us in, then sends a byte: we wait for it (nothing here has
 *                 forked yet, nor will before the init step), then unshare the cgroup
 *                 namespace so that the sandbox sees its own cgroup as "/" (without a cgroup
 *                 of its own, the clone made that namespace already).
 *  hostname       in the new uts namespace.
 *  session        no controlling terminal, so no TIOCSTI into the caller's tty and no signal
 *                 from it: launcherd detached itself from any terminal at start (its session
 *                 has none, so ours has none either); here a process group of our own, so that
 *                 kill(0, …) reaches nothing but the sandbox. Not setsid(): with autogroup
 *                 scheduling every new session allocates a task group (≈0.1 ms, multi-ms
 *                 tails). Unless the plan asks for a controlling terminal (controllingTty):
 *                 then setsid() and TIOCSCTTY on its stdio terminal, the requester's own (see
 *                 there). Also restore the signal mask launcherd blocks for its signalfd (not
 *                 in a light spawn: there every signal stays blocked until exec).
 *  rlimit         while we may still raise hard limits: the requester's own (privileged
 *                 mode; launcherd's may be higher, and an admin's per-user limits must hold
 *                 in the sandbox too), then the plan's, never above the requester's hard ones.
 *  identity       the requester's supplementary groups, then locked securebits
 *                 (SANDBOX_SECUREBITS: even uid 0 can regain nothing, and the uid switch
 *                 leaves the capability sets to the next step), then its gid and uid
 *                 (SO_PEERCRED, never a request field).
 *  capabilities   empty bounding set, then permitted, effective, inheritable and ambient sets
 *                 emptied in one capset.
 *  no-new-privs   required for unprivileged seccomp, and makes setuid/file caps inert.
 *  landlock       after the identity switch: its rules name paths inside the new root, opened
 *                 as the user. Before seccomp, which would otherwise have to allow its calls.
 *  seccomp        floor filter first, then the plan's: the plan can only add denials. Last
 *                 but for fd placement, chdir and execve, which both filters must allow.
 *  fds            stdio placed, every other fd close-on-exec.
 *  cwd            as the user, inside the finished sandbox.
 *  init           we stay pid 1 and the command runs as our child (see run_init()): a pid 1
 *                 ignores every signal it has no handler for, so a command that is pid 1 could
 *                 not be stopped with SIGTERM (not even by itself) and would leave orphans
 *                 unreaped. Forked last (vfork: nothing of launcherd's memory is copied), so
 *                 the command and we share every restriction above.
 *  exec           the status pipe closes (EOF = success); a failure reports errno.
 *
 * The light spawn (launcherd-light.h: we share launcherd's memory, and must leave it) differs
 * from landlock on: the ruleset is built here, as the user, but the restriction and both
 * seccomp filters are the first things cordon-sandbox-init does (sandbox-init.c), which we exec
 * from launcherd's memfd right after cwd, its fds placed as sandbox-init.h says. It is then the
 * init above, and the same order holds for the command: every restriction before its exec.
 * (Why not restrict first and exec the init after: a plan's filter may deny execveat.) Nothing
 * here allocates or takes a lock: the child could be killed, as the requester, at any point
 * after its identity step.
 */
int launcherd_apply_light(void *ctx)
{
	launcherd_apply(ctx);
}

_noreturn_ void launcherd_apply(const struct apply_context *ctx)
{
	const struct plan *plan = ctx->plan;
	int root_fd = -1, self_dir = -1, ruleset = -1, step = STEP_MOUNT_PRIVATE, index = -1, r;
	sigset_t none;

	launcherd_trace(ctx->id, "child");
	close_launcherd_fds(ctx);
	umask(022);
	/* The sandbox's own audit session, for its denials (launcherd-audit.h); while launcherd
	 * reads them only. Before anything changes our view of /proc. It goes to launcherd as
	 * the report pipe's first record, written before the init exists: launcherd need not
	 * look the init up in /proc for it. */
	if (ctx->audit_session) {
		struct apply_report rep = { .type = APPLY_REPORT_SESSION,
					    .session = audit_child_session(ctx->uid) };

		(void)!write(ctx->report_fd, &rep, sizeof(rep));
		launcherd_trace(ctx->id, "audit-session");
	}

	/* userns-map: made by the clone, mapped now; or (userns_late) made and mapped after
	 * session, through this /proc/self/ of the host's proc. */
	if (ctx->userns) {
		self_dir = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (self_dir < 0)
			fail(ctx, STEP_USERNS_MAP, errno, -1);
	}
	if (ctx->userns && !ctx->userns_late)
		userns_map(ctx, &self_dir);

	/* mount-private, root, mount */
	r = mount_build_root(plan, ctx->fds, ctx->tree_fds, ctx->uid, ctx->gid, ctx->userns,
			     ctx->mntns_fd, &step, &index, &root_fd);
	if (r < 0)
		fail(ctx, (enum apply_step)step, r, index);

	launcherd_trace(ctx->id, "mounts");

	/* pivot-root */
	if (ctx->mntns_fd < 0) {
		r = mount_pivot_root(root_fd);
		if (r < 0)
			fail(ctx, STEP_PIVOT_ROOT, r, -1);
	} else if (chdir("/") < 0) /* the root already: the namespace never held anything else */
		fail(ctx, STEP_PIVOT_ROOT, errno, -1);

	launcherd_trace(ctx->id, "pivot-root");

	/* network */
	if (ctx->netns_fd >= 0) {
		/* A fresh namespace from the pool, lo already up, never entered by anyone else. */
		if (setns(ctx->netns_fd, CLONE_NEWNET) < 0)
			fail(ctx, STEP_NETWORK, errno, -1);
	} else if (plan->network != PLAN_NETWORK_HOST) {
		r = net_loopback_up();
		if (r < 0)
			fail(ctx, STEP_NETWORK, r, -1);
	}

	/* network "proxy": the listener the controller serves, made here so that it lives in the
	 * sandbox's namespace; we only pass it on (nothing in the sandbox ever holds it). */
	if (plan->network == PLAN_NETWORK_PROXY) {
		int lfd = -1;

		r = net_proxy_listener(plan->proxy_port, &lfd);
		if (r < 0)
			fail(ctx, STEP_NETWORK, r, -1);
		r = (int)ipc_send_with_fds(ctx->proxy_sock, "P", 1, &lfd, 1, 0);
		(void)close(lfd);
		if (r < 0)
			fail(ctx, STEP_NETWORK, r, -1);
	}

	launcherd_trace(ctx->id, "network");

	/* cgroup: launcherd made it and moved us in meanwhile; wait for its word, then the cgroup
	 * namespace, rooted there. */
	if (ctx->cgroup_go_fd >= 0) {
		char c;
		ssize_t n;

		do
			n = read(ctx->cgroup_go_fd, &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			fail(ctx, STEP_CGROUP, n < 0 ? errno : EIO, -1);
		(void)close(ctx->cgroup_go_fd);
	}
	/* light: launcherd made it before the clone; we move ourselves in ("0" is the writer) */
	for (size_t i = 0; i < ELEMENTSOF(ctx->cgroup_procs); i++)
		if (ctx->cgroup_procs[i] >= 0) {
			if (write(ctx->cgroup_procs[i], "0", 1) != 1)
				fail(ctx, STEP_CGROUP, errno, -1);
			(void)close(ctx->cgroup_procs[i]);
		}
	if (!(apply_clone_flags(ctx) & CLONE_NEWCGROUP) && unshare(CLONE_NEWCGROUP) < 0)
		fail(ctx, STEP_CGROUP, errno, -1);

	launcherd_trace(ctx->id, "cgroup");

	/* hostname */
	if (sethostname(plan->hostname, strlen(plan->hostname)) < 0)
		fail(ctx, STEP_HOSTNAME, errno, -1);

	/* session. Light: every signal stays blocked (launcherd cloned us so) until our exec:
	 * a handler of launcherd's must never run here, in launcherd's memory; the init keeps
	 * them blocked and its command unblocks them. */
	if (!plan->controlling_tty && setpgid(0, 0) < 0)
		fail(ctx, STEP_SESSION, errno, -1);
	/* controllingTty: a session of our own (we lead it and its process group), and the
	 * plan's stdio terminal as its controlling terminal, so that the command inside gets job
	 * control, /dev/tty and the signals of its line discipline. Why this is safe: the
	 * terminal is an fd the requester sent us (its own, in practice the slave of a pty its
	 * controller made); we are pid 1 of a pid namespace of our own, so the session's signals
	 * (^C, ^Z, a hangup) reach nothing but the sandbox; TIOCSCTTY's argument 0 steals no
	 * terminal that is another session's already (the kernel refuses, even to root); and the
	 * floor filter still denies TIOCSTI/TIOCLINUX, so the sandbox cannot type into it. Here,
	 * before identity: the session outlives the uid switch, the light init's exec and the
	 * command's fork alike, and the sandbox can neither steal nor give it away. */
	if (plan->controlling_tty) {
		int tty = ctx->fds[plan->stdio[0]];

		if (!isatty(tty))
			fail(ctx, STEP_SESSION, ENOTTY, -1);
		if (setsid() < 0 || ioctl(tty, TIOCSCTTY, 0) < 0)
			fail(ctx, STEP_SESSION, errno, -1);
	}
	/* A signal launcherd ignores (SIGPIPE: its unit, or the controller that started it in
	 * user mode) would stay ignored through execve into the command, which then never dies
	 * of a broken pipe. Every disposition goes back to the default. Safe: it changes only
	 * this child's dispositions, and every signal is still blocked here, so no handler of
	 * launcherd's can run in this memory. */
	for (int sig = 1; sig < _NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)signal(sig, SIG_DFL);
	sigemptyset(&none);
	if (ctx->init_fd < 0 && sigprocmask(SIG_SETMASK, &none, NULL) < 0)
		fail(ctx, STEP_SESSION, errno, -1);

	/* userns, late: everything above needed launcherd's own user namespace, which owns our
	 * mount, pid, network, IPC, UTS and cgroup namespaces; from here on we hold capabilities
	 * only in this new one, which owns none of them (so nothing in the sandbox can ever
	 * change them), and RLIMIT_NPROC counts this sandbox's processes only. Before rlimit:
	 * the kernel also holds all of the user's processes in the parent to the RLIMIT_NPROC we
	 * have when we make it, which must stay launcherd's, not the sandbox's. */
	if (self_dir >= 0) {
		if (unshare(CLONE_NEWUSER) < 0)
			fail(ctx, STEP_USERNS_MAP, errno, -1);
		userns_map(ctx, &self_dir);
	}

	/* rlimit: the requester's own first, then the plan's */
	for (int res = 0; res < RLIM_NLIMITS; res++)
		if ((ctx->limits_differ & (1U << res)) && setrlimit(res, &ctx->limits[res]) < 0)
			fail(ctx, STEP_RLIMIT, errno, -1);
	for (size_t i = 0; i < plan->n_rlimits; i++) {
		struct rlimit rl = { .rlim_cur = plan->rlimits[i].value,
				     .rlim_max = plan->rlimits[i].value };

		if (plan->rlimits[i].value >= (uint64_t)INT64_MAX)
			rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
		if (setrlimit(plan->rlimits[i].resource, &rl) < 0)
			fail(ctx, STEP_RLIMIT, errno, (int)i);
	}
	if (ctx->nproc_limit) {
		/* Counted per user namespace: this caps the processes of this sandbox only. */
		struct rlimit rl = { .rlim_cur = ctx->nproc_limit, .rlim_max = ctx->nproc_limit };

		if (setrlimit(RLIMIT_NPROC, &rl) < 0)
			fail(ctx, STEP_RLIMIT, errno, -1);
	}

	launcherd_trace(ctx->id, "session-rlimit");

	/* identity */
	/* The raw calls: glibc's wrappers would, in a process it believes threaded, have every
	 * thread switch too — launcherd's own, with the light spawn's shared memory. */
	if (!ctx->userns && syscall(SYS_setgroups, ctx->n_groups, ctx->groups) < 0)
		fail(ctx, STEP_IDENTITY, errno, -1);
	if (prctl(PR_SET_SECUREBITS, SANDBOX_SECUREBITS, 0, 0, 0) < 0)
		fail(ctx, STEP_IDENTITY, errno, -1);
	if (syscall(SYS_setresgid, ctx->gid, ctx->gid, ctx->gid) < 0)
		fail(ctx, STEP_IDENTITY, errno, -1);
	if (syscall(SYS_setresuid, ctx->uid, ctx->uid, ctx->uid) < 0)
		fail(ctx, STEP_IDENTITY, errno, -1);
	/* The uid switch cleared any parent-death signal; set it now. If launcherd dies, its
	 * sandboxes die with it rather than run unsupervised. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		fail(ctx, STEP_IDENTITY, errno, -1);

	launcherd_trace(ctx->id, "identity");

	/* capabilities */
	r = drop_capabilities(ctx->bset_empty);
	if (r < 0)
		fail(ctx, STEP_CAPABILITIES, r, -1);

	launcherd_trace(ctx->id, "capabilities");

	/* no-new-privs */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(ctx, STEP_NO_NEW_PRIVS, errno, -1);

	launcherd_trace(ctx->id, "no-new-privs");

	/* landlock; light: the ruleset is built here, the init restricts itself to it */
	if (ctx->init_fd >= 0)
		r = landlock_prepare(plan, ctx->landlock_abi, &index, &ruleset);
	else
		r = landlock_apply(plan, ctx->landlock_abi, &index);
	if (r < 0)
		fail(ctx, STEP_LANDLOCK, r, index);

	/* seccomp; light: loaded by the init, from the config pipe */
	if (ctx->init_fd < 0) {
		launcherd_trace(ctx->id, "landlock");
		r = seccomp_program_load(ctx->floor);
		if (r < 0)
			fail(ctx, STEP_SECCOMP, r, -1);
		if (ctx->plan_filter) {
			r = seccomp_program_load(ctx->plan_filter);
			if (r < 0)
				fail(ctx, STEP_SECCOMP, r, 0);
		}
		launcherd_trace(ctx->id, "seccomp");
	}

	/* fds */
	r = place_stdio(ctx);
	if (r < 0)
		fail(ctx, STEP_FDS, r, -1);

	/* cwd */
	if (chdir(plan->cwd) < 0)
		fail(ctx, STEP_CWD, errno, -1);

	launcherd_trace(ctx->id, "fds-cwd");

	/* light: the init's fds (ours may be renumbered: from here on, failures go to the status
	 * pipe's new number), then the init, which leaves launcherd's memory and lets it go on */
	if (ctx->init_fd >= 0) {
		r = place_init_fds(ctx, ruleset);
		(void)syscall(SYS_execveat, r, "", ctx->init_argv, plan->envp, AT_EMPTY_PATH);
		fail_at(SANDBOX_INIT_FD_STATUS, STEP_EXEC, errno, -1);
	}

	/* init, exec */
	{
		sigset_t all;
		pid_t child;

		/* Blocked before the fork so that no signal slips past between it and run_init();
		 * the command unblocks them again before exec. */
		sigfillset(&all);
		if (sigprocmask(SIG_BLOCK, &all, NULL) < 0)
			fail(ctx, STEP_EXEC, errno, -1);
		/* vfork: the command borrows our memory (and we wait) until its execve, instead of
		 * a copy of launcherd's address space made here and torn down again at exec. The
		 * child only resets its signal mask, execs, or reports and _exit()s. */
		child = vfork();
		if (child == 0) {
			if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
				fail(ctx, STEP_EXEC, errno, -1);
			launcherd_trace(ctx->id, "init-forked");
			fail(ctx, STEP_EXEC, exec_plan(plan), -1);
		}
		if (child < 0)
			fail(ctx, STEP_EXEC, errno, -1);
		/* Our copy of the status pipe goes (its EOF is now the command's exec), and with
		 * it every fd of the set-up, stdio too: the output's EOF is the command's (and its
		 * descendants') alone. The report stays. */
		{
			int keep[] = { ctx->report_fd, launcherd_trace_fd };

			close_all_but(keep, ELEMENTSOF(keep));
			(void)syscall(SYS_close_range, 0U, 2U, 0U);
		}
		/* Nor can the command (ptrace, /proc/1/fd) reach what we keep, even as uid 0. */
		(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		run_init(ctx->id, child, ctx->report_fd);
	}
}
