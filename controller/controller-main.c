/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-controller: set-up and the main loop. Runs as the user (never with privileges): a
 * systemd user unit, `cordon controller` in the foreground, or started on demand by the CLI
 * (--daemon --ready-fd N). One per user, held by a lock in the runtime directory.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/backend-state.h"
#include "controller/controller-interaction.h"
#include "controller/controller.h"

/* An on-demand controller with no clients and no processes exits after this long. */
#define IDLE_EXIT_USEC (10ULL * 60ULL * 1000000ULL)

static void usage(void)
{
	printf("Usage: cordon-controller [OPTIONS]\n\n"
	       "The per-user cordon controller (see cordon-controller(8)).\n\n"
	       "  --socket PATH     listen here (default: $XDG_RUNTIME_DIR/cordon/controller.sock)\n"
	       "  --daemon          started on demand: exit after 10 idle minutes\n"
	       "  --idle-exit SEC   with --daemon: after SEC idle seconds instead\n"
	       "  --ready-fd N      write one byte to fd N once listening, then close it\n"
	       "  -h, --help        show this help\n");
}

static int on_signal(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct controller *c = userdata;
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return 0;
	log_info("signal %u: stopping", si.ssi_signo);
	c->host.exiting = true;
	event_loop_exit(c->host.loop, 0);
	return 0;
}

/*
 * Idle: no client, no process. Exit only with the CLIs' connect lock held exclusively (so no
 * CLI is between its connect and our accept) and no connection pending; the socket goes first,
 * so a CLI that comes after finds none and starts the next controller (which waits for our
 * lock). Otherwise stay: the pending connection is accepted as usual.
 */
static int on_idle_check(struct event_source *s, void *userdata)
{
	struct controller *c = userdata;
	_cleanup_free_ char *lock_path = NULL;
	_cleanup_close_ int lock_fd = -1;
	struct pollfd pending = { .fd = c->listen_fd, .events = POLLIN };

	if (c->clients || !controller_processes_idle(c))
		return 0;
	lock_path = strdup_printf("%s.connect", c->socket_path);
	lock_fd = lock_path ? open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) < 0)
		return 0; /* a CLI is connecting: not now */
	if (poll(&pending, 1, 0) > 0)
		return 0;
	log_info("idle: exiting");
	(void)unlink(c->socket_path);
	event_source_free(TAKE_PTR(c->listen_src));
	c->listen_fd = safe_close(c->listen_fd);
	event_loop_exit(c->host.loop, 0);
	return 0;
}

static unsigned long long read_mem_total(void)
{
	_cleanup_free_ char *buf = NULL;
	unsigned long long kb = 0;
	const char *p;

	if (read_full_file("/proc/meminfo", 1U << 20, &buf, NULL) < 0)
		return 0;
	p = strstr(buf, "MemTotal:");
	if (!p || sscanf(p, "MemTotal: %llu kB", &kb) != 1)
		return 0;
	return kb * 1024ULL;
}

/* One controller per user: an exclusive lock next to the socket. */
static int take_lock(const char *socket_path, int *ret_fd)
{
	_cleanup_free_ char *lock = strdup_printf("%s.lock", socket_path);
	int fd;

	if (!lock)
		return -ENOMEM;
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int r = -errno;

		safe_close(fd);
		return r == -EWOULDBLOCK ? -EBUSY : r;
	}
	/* Record our pid in the lock file, for `cordon doctor` and for tests. */
	if (ftruncate(fd, 0) == 0) {
		char pid[32];
		int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());

		(void)!pwrite(fd, pid, (size_t)n, 0);
	}
	*ret_fd = fd;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "socket", required_argument, NULL, 's' },
					      { "daemon", no_argument, NULL, 'd' },
					      { "ready-fd", required_argument, NULL, 'r' },
					      { "idle-exit", required_argument, NULL, 'i' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	struct controller ctl = { .listen_fd = -1, .events_log_fd = -1 };
	_cleanup_free_ char *socket_path = NULL;
	_cleanup_close_ int lock_fd = -1, sfd = -1;
	const char *socket_opt = NULL;
	struct event_source *sig_src = NULL, *idle_src = NULL;
	bool daemon_mode = false;
	unsigned idle_sec = IDLE_EXIT_USEC / 1000000ULL;
	int ready_fd = -1, c, r;
	struct passwd *pw;
	sigset_t mask;

	controller_host_init(&ctl);
	log_set_ident("cordon-controller");
	log_parse_environment();
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		switch (c) {
		case 's':
			socket_opt = optarg;
			break;
		case 'd':
			daemon_mode = true;
			break;
		case 'r':
			if (safe_atoi(optarg, &ready_fd) < 0 || ready_fd < 3) {
				log_error("--ready-fd needs an fd number >= 3: \"%s\"", optarg);
				return 2;
			}
			(void)fd_set_cloexec(ready_fd, true);
			break;
		case 'i':
			if (safe_atou(optarg, &idle_sec) < 0 || idle_sec == 0) {
				log_error("--idle-exit needs a number of seconds > 0: \"%s\"",
					  optarg);
				return 2;
			}
			break;
		case 'h':
			usage();
			return 0;
		default:
			return 2;
		}
	}

	/* The controller holds the user's secrets: no core dumps, no ptrace by other processes. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	umask(0077);
	ctl.host.uid = geteuid();
	ctl.host.gid = getegid();
	if (getuid() != geteuid()) {
		log_error("refusing to run setuid (real uid %u, effective uid %u)",
			  (unsigned)getuid(), (unsigned)geteuid());
		return 1;
	}
	pw = getpwuid(ctl.host.uid);
	ctl.host.home = strdup(pw && path_is_absolute(pw->pw_dir) ? pw->pw_dir : "/");
	ctl.host.mem_total = read_mem_total();

	if (socket_opt) {
		socket_path = strdup(socket_opt);
	} else {
		r = cordon_controller_socket_path(&socket_path, 1);
		if (r < 0)
			return log_error_errno(r, "cannot prepare the runtime directory: %m"), 1;
	}
	if (!socket_path)
		return 1;
	r = cordon_state_dir(&ctl.state_dir, 1);
	if (r < 0)
		return log_error_errno(r, "cannot prepare the state directory: %m"), 1;

	r = take_lock(socket_path, &lock_fd);
	if (r == -EBUSY) {
		/* Another controller serves this user: as good as us for whoever started us. */
		if (ready_fd >= 0)
			(void)!write(ready_fd, "E", 1);
		log_info("another controller is already running for \"%s\"", socket_path);
		return 0;
	}
	if (r < 0)
		return log_error_errno(r, "cannot lock \"%s.lock\": %m", socket_path), 1;

	if (daemon_mode) {
		/* Log to a file in the state dir: nobody reads our stderr. */
		_cleanup_free_ char *logp = strdup_printf("%s/controller.log", ctl.state_dir);
		int lfd = logp ? open(logp, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;

		if (lfd >= 0) {
			(void)dup2(lfd, STDERR_FILENO);
			safe_close(lfd);
		}
	}

	r = event_loop_new(&ctl.host.loop);
	if (r < 0)
		return 1;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	(void)sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || event_add_io(ctl.host.loop, sfd, EPOLLIN, on_signal, &ctl, &sig_src) < 0)
		return log_error_errno(errno, "signalfd: %m"), 1;

	/* What a write interrupted by a crash left behind; before the writer thread runs. */
	(void)backend_state_remove_stale(ctl.state_dir);
	/* After the signal mask: the writer thread inherits it, signals stay with the signalfd. */
	r = controller_persist_start(&ctl);
	if (r < 0)
		return log_error_errno(r, "cannot start the writer thread: %m"), 1;
	r = controller_events_open(&ctl);
	if (r < 0 && r != -EACCES && r != -EROFS)
		return 1;
	r = controller_providers_open(&ctl);
	if (r < 0)
		return log_error_errno(r, "cannot register the backend providers: %m"), 1;
	r = controller_backends_start(&ctl);
	if (r < 0)
		return log_error_errno(r, "no confining launcher is available: %m"), 1;
	r = controller_listen(&ctl, socket_path);
	if (r < 0)
		return log_error_errno(r, "cannot listen on \"%s\": %m", socket_path), 1;
	ctl.socket_path = TAKE_PTR(socket_path);
	if (daemon_mode && event_add_timer(ctl.host.loop, idle_sec * 1000000ULL, true,
					   on_idle_check, &ctl, &idle_src) < 0)
		return 1;

	log_info("listening on \"%s\" (launcher %s)", ctl.socket_path,
		 controller_launcher_name(&ctl));
	if (ready_fd >= 0) {
		(void)!write(ready_fd, "1", 1);
		ready_fd = safe_close(ready_fd);
	}

	r = event_loop_run(ctl.host.loop);
	ctl.host.exiting = true; /* whichever way the loop ended */

	/* Leave nothing running: processes of ours die with us (detached ones too: there is no
	 * one left to report their end to). */
	controller_processes_kill_all(&ctl);
	(void)unlink(ctl.socket_path);
	while (ctl.clients)
		controller_client_free(ctl.clients);
	controller_backends_stop(&ctl);
	controller_packs_close(&ctl);
	controller_interactions_free(&ctl);
	controller_secrets_close(&ctl);
	controller_processes_free(&ctl);
	controller_sandboxes_free(&ctl);
	event_source_free(idle_src);
	event_source_free(sig_src);
	event_source_free(ctl.listen_src);
	safe_close(ctl.listen_fd);
	safe_close(ctl.events_log_fd);
	json_decref(ctl.events_ring);
	json_decref(ctl.early_exits);
	event_loop_free(ctl.host.loop);
	free(ctl.socket_path);
	free(ctl.etc_hosts);
	free(ctl.state_dir);
	free((char *)ctl.host.home);
	return r < 0 ? 1 : 0;
}
