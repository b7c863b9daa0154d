/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-launcherd: the confinement engine.
 *
 *   privileged mode  a system service running as root with a bounded capability set, listening
 *                    on /run/cordon/launcherd.sock for every local user;
 *   user mode        an ordinary user's process (no privileges at all), usually started by the
 *                    controller with one end of a socketpair (--socket-fd), applying the same
 *                    plans inside unprivileged user namespaces.
 *
 * Exit codes: 0 stopped cleanly; 1 cannot start (message on stderr); 2 usage.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <sys/capability.h>

#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "launcherd/launcherd-apply.h"
#include "launcherd/launcherd-audit.h"
#include "launcherd/launcherd-landlock.h"
#include "launcherd/launcherd-mount.h"
#include "launcherd/launcherd-mountinfo.h"
#include "launcherd/launcherd-trace.h"
#include "launcherd/launcherd.h"

/* What privileged mode needs, and nothing more: mounts and pivot_root (SYS_ADMIN), the identity
 * switch (SETUID, SETGID), emptying the child's bounding set (SETPCAP), lo up in the child's
 * netns (NET_ADMIN), signals to other users' sandboxes it created (KILL), and, used only when
 * held, plan rlimits above launcherd's own hard limits (SYS_RESOURCE), entering a mount
 * namespace prepared ahead of time or the requester's (SYS_CHROOT, which setns(CLONE_NEWNS)
 * requires), and giving the requester the plan's directories launcherd made in the sandbox's
 * root tmpfs ($HOME: CHOWN, launcherd-mount.c). */
static const cap_value_t needed_caps[] = {
	CAP_SYS_ADMIN, CAP_SETUID, CAP_SETGID, CAP_SETPCAP, CAP_NET_ADMIN, CAP_KILL,
};
static const cap_value_t optional_caps[] = { CAP_SYS_RESOURCE, CAP_SYS_CHROOT, CAP_CHOWN,
					     CAP_AUDIT_READ };

static struct launcherd daemon_state;

void launcherd_maybe_exit(struct launcherd *d)
{
	if (d->sandboxes)
		return;
	if (d->stopping || (d->single && !d->conns))
		event_loop_exit(d->loop, 0);
}

_noreturn_ static void die(const char *fmt, ...) _printf_(1, 2);
static void die(const char *fmt, ...)
{
	va_list ap;

	(void)fputs("cordon-launcherd: ", stderr);
	va_start(ap, fmt);
	(void)vfprintf(stderr, fmt, ap);
	va_end(ap);
	(void)fputc('\n', stderr);
	exit(1);
}

static void refuse_setuid(void)
{
	uid_t ruid, euid, suid;
	gid_t rgid, egid, sgid;

	if (getresuid(&ruid, &euid, &suid) < 0 || getresgid(&rgid, &egid, &sgid) < 0)
		die("cannot read own credentials: %s", strerror(errno));
	if (ruid != euid || ruid != suid || rgid != egid || rgid != sgid)
		die("refusing to run setuid or setgid (real uid %u, effective uid %u). "
		    "cordon-launcherd is never installed setuid: run it as a system service "
		    "(privileged mode) or as an ordinary user (user mode). "
		    "Hint: chmod u-s,g-s on the binary.",
		    (unsigned)ruid, (unsigned)euid);
}

/*
 * fs.suid_dumpable = 1 (the kernel's "debug" setting, documented as insecure) leaves every
 * process that switches its uid ptrace-able by the uid it switched to. A sandbox's set-up
 * switches to the requester's uid while it still holds capabilities (they go at the next step),
 * and in a light spawn while it shares our memory: a requester who attached then would have
 * root. Privileged mode refuses to run so; with 0 or 2 only the ptrace capability reaches it.
 */
bool launcherd_suid_dumpable_debug(struct launcherd *d)
{
	char v = 0;

	/* Checked again before each privileged spawn: the setting can change while we run. One
	 * pread() of a file we keep open. */
	return d->suid_dumpable_fd >= 0 && pread(d->suid_dumpable_fd, &v, 1, 0) == 1 && v == '1';
}

static void refuse_suid_dumpable_debug(struct launcherd *d)
{
	d->suid_dumpable_fd = open("/proc/sys/fs/suid_dumpable", O_RDONLY | O_CLOEXEC);
	if (launcherd_suid_dumpable_debug(d))
		die("refusing to start in privileged mode: fs.suid_dumpable is 1, so a requester "
		    "could ptrace its sandbox's set-up while it switches to the requester's uid "
		    "and still holds capabilities. Hint: sysctl fs.suid_dumpable=0 (or 2)");
}

/*
 * Every sandbox holds a few of our fds (its pidfd, status and report pipes, a pooled namespace)
 * and every connection two, across all users: the soft limit of 1024 a shell or a unit starts
 * us with would let one user's sandboxes make another user's spawn fail with EMFILE. Take the
 * hard limit (the unit sets it with LimitNOFILE=); sandboxes do not inherit it (each starts
 * from its requester's own limits). Per-user ceilings (the floor's maxSandboxes, connections
 * per user) bound what one user can hold of it.
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static bool cap_held(cap_t caps, cap_value_t c)
{
	cap_flag_value_t v = CAP_CLEAR;

	return cap_get_flag(caps, c, CAP_PERMITTED, &v) == 0 && v == CAP_SET;
}

static bool holds_capability(cap_value_t c)
{
	cap_t caps = cap_get_proc();
	bool held = caps && cap_held(caps, c);

	(void)cap_free(caps);
	return held;
}

/* auto: privileged mode when it can be had (root is not enough in a container without them). */
static bool holds_needed_capabilities(void)
{
	cap_t caps = cap_get_proc();
	bool all = caps != NULL;

	for (size_t i = 0; all && i < ELEMENTSOF(needed_caps); i++)
		all = cap_held(caps, needed_caps[i]);
	(void)cap_free(caps);
	return all;
}

/* Privileged mode: keep exactly needed_caps (+ optional ones held) as permitted and effective,
 * so a bug in launcherd cannot use what it was never meant to have, and empty the bounding set
 * altogether: launcherd never execs, so it needs none, and every sandbox then starts with an
 * empty one instead of dropping them one by one (each a new set of credentials). */
static void restrict_own_capabilities(void)
{
	cap_value_t keep[ELEMENTSOF(needed_caps) + ELEMENTSOF(optional_caps)];
	size_t n = 0;
	cap_t caps = cap_get_proc();

	if (!caps)
		die("cannot read capabilities: %s", strerror(errno));
	for (size_t i = 0; i < ELEMENTSOF(needed_caps); i++) {
		char *name;

		if (cap_held(caps, needed_caps[i])) {
			keep[n++] = needed_caps[i];
			continue;
		}
		name = cap_to_name(needed_caps[i]);
		die("privileged mode needs %s, which this process does not hold. "
		    "Hint: start it from the systemd unit (AmbientCapabilities=) or run it as "
		    "the user for user mode (--mode=user).",
		    name ? name : "a capability");
	}
	for (size_t i = 0; i < ELEMENTSOF(optional_caps); i++)
		if (cap_held(caps, optional_caps[i]))
			keep[n++] = optional_caps[i];

	if (cap_clear(caps) < 0 || cap_set_flag(caps, CAP_PERMITTED, (int)n, keep, CAP_SET) < 0 ||
	    cap_set_flag(caps, CAP_EFFECTIVE, (int)n, keep, CAP_SET) < 0 || cap_set_proc(caps) < 0)
		die("cannot restrict capabilities: %s", strerror(errno));
	/* After the sets above: dropping CAP_SETPCAP from the bounding set leaves it permitted. */
	for (cap_value_t c = 0; c < cap_max_bits(); c++)
		if (cap_drop_bound(c) < 0 && errno != EINVAL)
			die("cannot drop capability %d from the bounding set: %s", (int)c,
			    strerror(errno));
	(void)cap_reset_ambient();
	(void)cap_free(caps);
}

/* Our bounding set holds nothing (checked, not assumed: each sandbox relies on it). */
static bool bounding_set_empty(void)
{
	for (cap_value_t c = 0; c < cap_max_bits(); c++)
		if (cap_get_bound(c) != 0)
			return false;
	return true;
}

/*
 * User mode: a user namespace of our own, the user (and its primary group) mapped to itself.
 * It owns every namespace made from then on (the pool's, each sandbox's), so that launcherd can
 * make them ahead and a sandbox can enter them; the sandbox then unshares a user namespace
 * nested in this one, in which it holds no capability over any of them (launcherd-apply.c).
 * Files see no difference: every id that was ours is ours here. -errno when the kernel refuses
 * (unprivileged user namespaces denied: sandboxes will fail just the same, and say why); once
 * in, a mapping that fails leaves nothing to go on with.
 */
static int enter_own_userns(void)
{
	uid_t uid = geteuid(); /* before: unmapped, they read as the overflow ids */
	gid_t gid = getegid();
	int self_dir, r;

	if (unshare(CLONE_NEWUSER) < 0)
		return -errno;
	self_dir = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
	r = self_dir < 0 ? -errno : apply_map_self(self_dir, uid, gid);
	safe_close(self_dir);
	if (r < 0)
		die("cannot map the user into launcherd's user namespace: %s", strerror(-r));
	return 0;
}

/*
 * No controlling terminal: the sandboxes are our children and inherit our session, so a
 * terminal we hold could be reached from them (TIOCSTI, or its signals). A session leader of
 * its own has none; a process group leader (started from a shell) cannot setsid() and drops
 * the terminal instead.
 */
static void detach_terminal(void)
{
	int fd;

	if (setsid() >= 0)
		return;
	fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return; /* no controlling terminal */
	if (ioctl(fd, TIOCNOTTY) < 0)
		die("cannot detach from the controlling terminal: %s", strerror(errno));
	safe_close(fd);
}

static int listen_on(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_free_ char *dir = NULL;
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		die("socket path \"%s\" is too long", path);
	memcpy(sa.sun_path, path, strlen(path));
	dir = strdup(path);
	if (!dir)
		die("out of memory");
	if (strrchr(dir, '/') && strrchr(dir, '/') != dir) {
		*strrchr(dir, '/') = '\0';
		(void)mkdir_p(dir, 0755);
	}
	/* A stale socket from a previous run is replaced; anything else at the path is not. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			die("\"%s\" exists and is not a socket", path);
		if (unlink(path) < 0)
			die("cannot remove stale socket \"%s\": %s", path, strerror(errno));
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("cannot bind \"%s\": %s", path, strerror(errno));
	/* Every local user may connect; the admin floor decides who is served. */
	if (daemon_state.mode == LAUNCHERD_PRIVILEGED && chmod(path, 0666) < 0)
		die("cannot chmod \"%s\": %s", path, strerror(errno));
	if (listen(fd, 128) < 0)
		die("listen: %s", strerror(errno));
	return fd;
}

/*
 * systemd socket activation (sd_listen_fds(3) protocol, written out: no libsystemd): one
 * listening SOCK_SEQPACKET socket at fd 3, meant for us. The unit owns its path, owner, group
 * and mode (root:cordon 0660): we neither create, chmod nor unlink it. Returns the fd or -1.
 */
static int activated_socket(void)
{
	const char *e_pid = getenv("LISTEN_PID"), *e_fds = getenv("LISTEN_FDS");
	int type = 0, listening = 0;
	socklen_t len = sizeof(int);
	unsigned pid, n;

	if (!e_pid || !e_fds)
		return -1;
	(void)unsetenv("LISTEN_PID");
	(void)unsetenv("LISTEN_FDS");
	(void)unsetenv("LISTEN_FDNAMES");
	if (safe_atou(e_pid, &pid) < 0 || (pid_t)pid != getpid())
		return -1;
	if (safe_atou(e_fds, &n) < 0 || n != 1)
		die("socket activation: expected exactly one socket, got LISTEN_FDS=%s", e_fds);
	if (getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET)
		die("socket activation: fd 3 is not a SOCK_SEQPACKET socket "
		    "(the unit needs ListenSequentialPacket=)");
	len = sizeof(int);
	if (getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening)
		die("socket activation: fd 3 is not listening");
	if (fd_set_cloexec(3, true) < 0 || fd_set_nonblock(3, true) < 0)
		die("socket activation: fd 3: %s", strerror(errno));
	return 3;
}

static int on_accept(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct launcherd *d = userdata;

	for (;;) {
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		int r;

		if (c < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			/* EMFILE and friends: log and keep serving the connections we have. */
			log_warning_errno(errno, "accept: %m");
			return 0;
		}
		if (d->stopping) {
			safe_close(c);
			continue;
		}
		r = conn_new(d, c);
		if (r < 0)
			log_debug_errno(r, "rejected a connection: %m");
	}
}

static int on_signal(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct launcherd *d = userdata;
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return 0;
	log_info("signal %u: stopping", si.ssi_signo);
	d->stopping = true;
	sandbox_kill_all(d);
	while (d->conns)
		conn_close(d->conns);
	launcherd_maybe_exit(d);
	return 0;
}

static void usage(FILE *f)
{
	(void)fprintf(
		f,
		"Usage: cordon-launcherd [OPTIONS]\n"
		"  --socket PATH     listen on PATH (default %s)\n"
		"  --socket-fd N     serve the one connection on fd N (user mode, socketpair)\n"
		"  --floor PATH      admin floor file (default %s)\n"
		"  --mode MODE       auto (default), privileged or user\n"
		"  --dump-floor      print the seccomp floor filter (libseccomp PFC) and exit\n"
		"  --help, --version\n",
		LAUNCHERD_DEFAULT_SOCKET, LAUNCHERD_DEFAULT_FLOOR);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "socket-fd", required_argument, NULL, 'f' },
		{ "floor", required_argument, NULL, 'F' },
		{ "mode", required_argument, NULL, 'm' },
		{ "dump-floor", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	struct launcherd *d = &daemon_state;
	const char *socket_path = LAUNCHERD_DEFAULT_SOCKET, *floor_path = LAUNCHERD_DEFAULT_FLOOR;
	const char *mode = "auto";
	struct field_error fe = { 0 };
	struct event_source *sig_src = NULL, *listen_src = NULL;
	int socket_fd = -1, activated_fd = -1, sfd, c, r;
	bool activated = false;
	sigset_t mask;

	log_set_ident("cordon-launcherd");
	log_parse_environment();
	/* First, before any option is even looked at. */
	refuse_setuid();
	/* After it: the environment names a file that we create. */
	launcherd_trace_open();

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0)
		switch (c) {
		case 's':
			socket_path = optarg;
			break;
		case 'f':
			if (safe_atoi(optarg, &socket_fd) < 0 || socket_fd < 3)
				die("--socket-fd: expected a number >= 3");
			break;
		case 'F':
			floor_path = optarg;
			break;
		case 'm':
			mode = optarg;
			break;
		case 'D':
			return seccomp_floor_export_pfc(FLOOR_ACTION_ERRNO, false, STDOUT_FILENO) <
					       0
				       ? 1
				       : 0;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			(void)printf("cordon-launcherd %s\n", PACKAGE_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}

	/* Before anything opens an fd: the activated socket is fd 3. */
	activated_fd = socket_fd < 0 ? activated_socket() : -1;

	if (streq(mode, "auto"))
		d->mode = geteuid() == 0 && holds_needed_capabilities() ? LAUNCHERD_PRIVILEGED
									: LAUNCHERD_USER;
	else if (streq(mode, "privileged"))
		d->mode = LAUNCHERD_PRIVILEGED;
	else if (streq(mode, "user"))
		d->mode = LAUNCHERD_USER;
	else
		die("--mode: expected auto, privileged or user");
	raise_nofile();
	r = floor_load(floor_path, &d->floor, &fe);
	if (r < 0)
		die("refusing to start: admin floor \"%s\"%s%s: %s", floor_path,
		    *fe.field ? " field " : "", fe.field, fe.reason);

	d->landlock_abi = landlock_probe_abi();
	/* Creates our base cgroup directories: may need more than what we keep afterwards (the v1
	 * hierarchy roots are 0555), so it runs before the capability set is narrowed. */
	cgroup_setup_probe(&d->cgroup);
	d->suid_dumpable_fd = -1;
	if (d->mode == LAUNCHERD_PRIVILEGED) {
		refuse_suid_dumpable_debug(d);
		/* Denials (launcherd-audit.h): CAP_AUDIT_READ joins the audit group. */
		r = audit_open();
		if (r < 0)
			log_info("denials off: cannot read the kernel's audit records (%s)",
				 strerror(-r));
		restrict_own_capabilities();
		d->bset_empty = bounding_set_empty();
	} else {
		r = enter_own_userns();
		if (r < 0)
			log_warning_errno(r,
					  "no user namespace of our own (%m): each sandbox makes "
					  "every namespace it needs, no namespace pool");
		d->own_userns = r >= 0;
	}
	r = 0;
	for (int action = 0; action < _FLOOR_ACTION_MAX && r >= 0; action++)
		for (int unix_only = 0; unix_only < 2 && r >= 0; unix_only++) {
			r = seccomp_floor_compile(action, unix_only, &d->floors[action][unix_only]);
			/* No user notification in this kernel (or libseccomp): the floor's
			 * refusals are reported without their arguments, as before. */
			if (r < 0 && action == FLOOR_ACTION_NOTIFY) {
				log_info("seccomp floor: no user notification (%s): its refusals "
					 "are reported without their arguments",
					 strerror(-r));
				seccomp_program_done(&d->floors[action][0]);
				r = 0;
				break;
			}
		}
	if (r < 0)
		die("cannot compile the seccomp floor: %s", strerror(-r));
	/* Whether a plan's filter can go in front of the notifying floor, in one program. */
	d->floor_combinable = d->floors[FLOOR_ACTION_NOTIFY][0].len > 0 &&
			      seccomp_floor_combinable(&d->floors[FLOOR_ACTION_NOTIFY][0]) &&
			      seccomp_floor_combinable(&d->floors[FLOOR_ACTION_NOTIFY][1]);
	if (d->floors[FLOOR_ACTION_NOTIFY][0].len > 0 && !d->floor_combinable)
		log_info("seccomp floor: not one a plan's filter can precede; the plan's refusals "
			 "are reported without their arguments");
	log_debug("seccomp floor: %zu instructions (%zu for network \"none\")", d->floors[0][0].len,
		  d->floors[0][1].len);
	d->devnull_fd = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (d->devnull_fd < 0)
		die("cannot open /dev/null: %s", strerror(errno));
	d->dev_template = -1;
	/* (User mode: the pool's helper builds it, in a mount namespace of its own.) */
	if (d->mode == LAUNCHERD_PRIVILEGED) {
		r = mount_dev_template(&d->dev_template);
		if (r < 0)
			log_warning_errno(r, "no /dev template (%m): each sandbox builds its own");
	}
	light_setup(&d->light);
	if (d->light.off)
		log_info("light spawn off: %s; each sandbox's init is a copy of launcherd",
			 d->light.off);
	if (d->mode == LAUNCHERD_PRIVILEGED && d->light.init_fd >= 0) {
		r = mount_table_open(&d->mounts);
		if (r < 0)
			log_warning_errno(r, "cannot read our mount table (%m): no light spawn");
	}
	if (d->landlock_abi < 1)
		log_warning("this kernel has no Landlock: plans that require it will fail. "
			    "Hint: CONFIG_SECURITY_LANDLOCK=y and lsm=...,landlock");

	detach_terminal();
	r = event_loop_new(&d->loop);
	if (r < 0)
		die("cannot create the event loop: %s", strerror(-r));
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		die("sigprocmask: %s", strerror(errno));
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || event_add_io(d->loop, sfd, EPOLLIN, on_signal, d, &sig_src) < 0)
		die("signalfd: %s", strerror(errno));

	d->netns_pool.sock = -1;
	if (d->mode == LAUNCHERD_PRIVILEGED || d->own_userns) {
		/* Entering a prepared mount namespace needs CAP_SYS_CHROOT too (in user mode, in
		 * our own user namespace, we have it). */
		r = netns_pool_start(
			&d->netns_pool, d->loop,
			d->mode == LAUNCHERD_PRIVILEGED ? holds_capability(CAP_SYS_CHROOT) : true,
			d->mode == LAUNCHERD_USER);
		if (r < 0)
			log_warning_errno(
				r, "no network namespace pool (%m): sandboxes create their own");
	}

	if (socket_fd >= 0) {
		d->single = true;
		d->listen_fd = -1;
		if (fd_set_cloexec(socket_fd, true) < 0)
			die("--socket-fd %d: not an open fd", socket_fd);
		r = conn_new(d, socket_fd);
		if (r < 0)
			die("--socket-fd %d: %s", socket_fd, strerror(-r));
	} else {
		activated = activated_fd >= 0;
		d->listen_fd = activated ? activated_fd : listen_on(socket_path);
		r = event_add_io(d->loop, d->listen_fd, EPOLLIN, on_accept, d, &listen_src);
		if (r < 0)
			die("cannot watch the socket: %s", strerror(-r));
	}
	if (d->mode == LAUNCHERD_PRIVILEGED && audit_start(d) < 0)
		audit_stop();
	log_info("%s mode, Landlock ABI %d, cgroup %s, %s%s",
		 d->mode == LAUNCHERD_PRIVILEGED ? "privileged" : "user", d->landlock_abi,
		 cgroup_kind_to_string(d->cgroup.kind), d->single ? "fd " : "",
		 d->single   ? "(single connection)"
		 : activated ? "(socket-activated)"
			     : socket_path);

	r = event_loop_run(d->loop);
	audit_stop();
	conn_receivers_release(d);
	netns_pool_stop(&d->netns_pool);
	mount_table_free(d->mounts);
	light_done(&d->light);
	event_source_free(listen_src);
	event_source_free(sig_src);
	safe_close(sfd);
	if (d->listen_fd >= 0) {
		if (!activated)
			(void)unlink(socket_path);
		safe_close(d->listen_fd);
	}
	event_loop_free(d->loop);
	return r < 0 ? 1 : 0;
}
