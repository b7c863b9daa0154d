/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The builtin:vm guest agent: PID 1 of the micro-VM's initramfs (built -static). It mounts
 * /proc, /sys and /dev, loads the modules listed in /etc/agent-modules (finit_module), brings
 * up lo, opens the virtio-serial port named "agent" and speaks the frames of backends/vm/vm-proto.h
 * with the host: READY; INIT (wall clock, entropy, workspace mount); then any number of EXECs,
 * running at once, each with its own id: its stdout and stderr streamed apart, its stdin fed
 * until STDIN_EOF (one STDIN frame at a time, each acknowledged once written), signals
 * forwarded to its session; EXIT (code or signal) once it ended, after which the command's
 * whole session is killed. A command with network "proxy" (VM_EXEC_PROXY) first gets the
 * forwarder started (guest/forward.c). The VM powers off when the host closes the port.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../vm-proto.h"

static int port = -1;
/* The workspace's mount point (INIT), for a command that sees it read-only. */
static char ws_mount[4096];

static void die_poweroff(void)
{
	sync();
	(void)reboot(RB_POWER_OFF);
	_exit(1);
}

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t n)
{
	char *p = buf;

	while (n > 0) {
		ssize_t k = read(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static void send_frame(uint8_t type, const void *data, uint32_t len)
{
	uint8_t h[VM_FRAME_HEADER];

	vm_frame_header(h, type, len);
	if (write_all(port, h, sizeof(h)) < 0 || (len && write_all(port, data, len) < 0))
		die_poweroff();
}

static void send_error(uint32_t id, const char *fmt, const char *arg)
{
	char msg[516];
	int n = snprintf(msg + 4, sizeof(msg) - 4, fmt, arg, strerror(errno));

	vm_put32((uint8_t *)msg, id);
	if (n < 0)
		n = 0;
	else if (n > (int)sizeof(msg) - 5)
		n = (int)sizeof(msg) - 5;
	send_frame(VM_ERROR, msg, 4 + (uint32_t)n);
}

/* Each module of /etc/agent-modules; a pass over the ones that failed (an unknown symbol: a
 * dependency listed later) is repeated while a pass loads something. */
static void load_modules(void)
{
	FILE *f = fopen("/etc/agent-modules", "re");
	char names[32][128];
	bool done[32] = { false };
	int n = 0;
	bool progress = true;

	if (!f)
		return;
	while (n < 32 && fgets(names[n], sizeof(names[n]), f)) {
		names[n][strcspn(names[n], "\n")] = 0;
		if (names[n][0])
			n++;
	}
	fclose(f);
	while (progress) {
		progress = false;
		for (int i = 0; i < n; i++) {
			char path[4200];
			int fd, r;

			if (done[i])
				continue;
			(void)snprintf(path, sizeof(path), "/lib/modules/%s", names[i]);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				done[i] = true;
				continue;
			}
			r = (int)syscall(SYS_finit_module, fd, "", 0);
			if (r == 0 || errno == EEXIST)
				done[i] = progress = true;
			close(fd);
		}
	}
}

static int open_port(const char *want)
{
	for (int i = 0; i < 4000; i++) {
		DIR *d = opendir("/sys/class/virtio-ports");
		struct dirent *e;

		while (d && (e = readdir(d))) {
			char p[300], name[64] = "";
			FILE *f;

			if (e->d_name[0] == '.')
				continue;
			(void)snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/name", e->d_name);
			f = fopen(p, "re");
			if (!f)
				continue;
			if (fgets(name, sizeof(name), f))
				name[strcspn(name, "\n")] = 0;
			fclose(f);
			if (strcmp(name, want) == 0) {
				closedir(d);
				(void)snprintf(p, sizeof(p), "/dev/%s", e->d_name);
				return open(p, O_RDWR | O_CLOEXEC);
			}
		}
		if (d)
			closedir(d);
		usleep(500);
	}
	return -1;
}

static void lo_up(void)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return;
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		(void)ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
}

static void mkdir_p(const char *path)
{
	char p[4096];

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return;
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			(void)mkdir(p, 0755);
			*s = '/';
		}
	(void)mkdir(p, 0755);
}

/* INIT: u64 realtime ns, u8 flags, u8 entropy length, entropy, mount point (NUL-ended). */
static void do_init(const uint8_t *b, uint32_t len)
{
	uint64_t ns = 0;
	unsigned n;

	if (len < 10)
		return;
	for (int i = 0; i < 8; i++)
		ns = ns << 8 | b[i];
	{
		struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000),
				       .tv_nsec = (long)(ns % 1000000000) };

		(void)clock_settime(CLOCK_REALTIME, &ts);
	}
	n = b[9];
	if (10 + n > len)
		return;
	{
		struct {
			struct rand_pool_info info;
			uint8_t buf[256];
		} rp = { .info = { .entropy_count = (int)n * 8, .buf_size = (int)n } };
		int fd = open("/dev/urandom", O_RDWR | O_CLOEXEC);

		memcpy(rp.info.buf, b + 10, n);
		if (fd >= 0) {
			(void)ioctl(fd, RNDADDENTROPY, &rp.info);
			(void)ioctl(fd, RNDRESEEDCRNG);
			close(fd);
		}
	}
	if (b[8] & VM_INIT_WORKSPACE) {
		const char *mp = (const char *)b + 10 + n;

		if (memchr(mp, 0, len - 10 - n) == NULL)
			return;
		mkdir_p(mp);
		if (mount("ws", mp, "9p", (b[8] & VM_INIT_READ_ONLY) ? MS_RDONLY : 0,
			  "trans=virtio,version=9p2000.L,msize=524288,cache=none") < 0)
			send_error(0, "mount %s: %s", mp);
		else
			(void)snprintf(ws_mount, sizeof(ws_mount), "%s", mp);
	}
}

/* Strings: NUL-separated cwd, argv, env; counts first (u32 argc, u32 envc). */
static int parse_exec(uint8_t *b, uint32_t len, char ***argv, char ***envp, char **cwd)
{
	uint32_t argc, envc;
	char *p, *end = (char *)b + len;

	if (len < 8 || b[len - 1] != 0)
		return -1;
	argc = vm_get32(b);
	envc = vm_get32(b + 4);
	if (argc == 0 || argc > 65536 || envc > 65536)
		return -1;
	*argv = calloc(argc + 1, sizeof(char *));
	*envp = calloc(envc + 1, sizeof(char *));
	if (!*argv || !*envp)
		return -1;
	p = (char *)b + 8;
	*cwd = p;
	p += strlen(p) + 1;
	for (uint32_t i = 0; i < argc + envc; i++) {
		if (p >= end)
			return -1;
		if (i < argc)
			(*argv)[i] = p;
		else
			(*envp)[i - argc] = p;
		p += strlen(p) + 1;
	}
	return 0;
}

struct buf {
	uint8_t *d;
	size_t len, cap;
};

static int read_frame(uint8_t *type, struct buf *b)
{
	uint8_t h[VM_FRAME_HEADER];
	uint32_t len;

	if (read_all(port, h, sizeof(h)) < 0)
		return -1;
	*type = h[0];
	len = vm_get32(h + 1);
	if (len > VM_FRAME_MAX)
		return -1;
	if (len + 1 > b->cap) {
		uint8_t *n = realloc(b->d, len + 1);

		if (!n)
			return -1;
		b->d = n;
		b->cap = len + 1;
	}
	b->len = len;
	return len ? read_all(port, b->d, len) : 0;
}

/* A command the host started. */
struct cmd {
	struct cmd *next;
	uint32_t id;
	pid_t pid;
	int out, err, in; /* our pipe ends; -1 once closed */
	struct buf inbuf; /* the STDIN frame being written */
	bool in_eof, done;
	bool out_wait, err_wait; /* a STDOUT/STDERR frame not acknowledged yet */
	int status;
};

static struct cmd *cmds;

static struct cmd *cmd_find(uint32_t id)
{
	for (struct cmd *c = cmds; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static void send_id(uint8_t type, uint32_t id)
{
	uint8_t b[4];

	vm_put32(b, id);
	send_frame(type, b, 4);
}

static void send_exit(uint32_t id, uint32_t code, uint32_t sig)
{
	uint8_t x[12];

	vm_put32(x, id);
	vm_put32(x + 4, code);
	vm_put32(x + 8, sig);
	send_frame(VM_EXIT, x, 12);
}

static void cmd_close_in(struct cmd *c)
{
	if (c->in >= 0)
		close(c->in);
	c->in = -1;
	c->inbuf.len = 0;
}

/* In the child: the workspace read-only for this command alone (its own mount namespace). */
static int workspace_read_only(void)
{
	if (!ws_mount[0])
		return 0;
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(ws_mount, ws_mount, NULL, MS_BIND | MS_REC, NULL) < 0 ||
	    mount(NULL, ws_mount, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
		return -1;
	return 0;
}

/*
 * Network "proxy": the forwarder (/sbin/cordon-forward, guest/forward.c), started once, in a
 * session of its own, the first time a command needs it. The listener is made here, so that it
 * listens before the command runs; the forwarder gets it as fd 3 and the port "net" as fd 4.
 */
#define FORWARDER "/sbin/cordon-forward"
static pid_t forward_pid = -1;

static const char *forward_start(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(VM_PROXY_PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, s, net;
	pid_t pid;

	if (forward_pid > 0)
		return NULL;
	if (access(FORWARDER, X_OK) < 0)
		return "network proxy: this VM has no forwarder (" FORWARDER ")";
	net = open_port("net");
	if (net < 0)
		return "network proxy: this VM has no port \"net\"";
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(s, 128) < 0) {
		if (s >= 0)
			close(s);
		close(net);
		return "network proxy: cannot listen on the proxy port";
	}
	pid = fork();
	if (pid == 0) {
		sigset_t none;
		int a = fcntl(s, F_DUPFD, 10), b = fcntl(net, F_DUPFD, 10);

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		(void)setsid();
		if (a < 0 || b < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0)
			_exit(127);
		execl(FORWARDER, FORWARDER, (char *)NULL);
		_exit(127);
	}
	close(s);
	close(net);
	if (pid < 0)
		return "network proxy: cannot start the forwarder";
	forward_pid = pid;
	return NULL;
}

/* EXEC: u32 id, u8 flags, then what parse_exec() reads. */
static void do_exec(uint8_t *b, uint32_t len)
{
	char **argv = NULL, **envp = NULL, *cwd = NULL;
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, in[2] = { -1, -1 };
	struct cmd *c;
	uint32_t id;
	uint8_t flags;
	pid_t pid;

	if (len < 5)
		return;
	id = vm_get32(b);
	flags = b[4];
	if (cmd_find(id) || parse_exec(b + 5, len - 5, &argv, &envp, &cwd) < 0) {
		send_frame(VM_ERROR, b, 4); /* (the id, no text: a bad frame) */
		send_exit(id, 126, 0);
		goto out;
	}
	if (flags & VM_EXEC_PROXY) {
		const char *why = forward_start();

		if (why) {
			send_error(id, "%s (%s)", why);
			send_exit(id, 126, 0);
			goto out;
		}
	}
	c = calloc(1, sizeof(*c));
	if (!c || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	    pipe2(in, O_CLOEXEC) < 0) {
		send_error(id, "exec %s: %s", argv[0]);
		send_exit(id, 126, 0);
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		send_error(id, "fork for %s: %s", argv[0]);
		send_exit(id, 126, 0);
		goto fail;
	}
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		(void)setsid();
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		signal(SIGPIPE, SIG_DFL);
		if ((flags & VM_EXEC_READ_ONLY) && workspace_read_only() < 0) {
			dprintf(2, "cordon-vm-agent: a read-only workspace: %s\n", strerror(errno));
			_exit(126);
		}
		if (cwd[0] && chdir(cwd) < 0) {
			dprintf(2, "cordon-vm-agent: chdir %s: %s\n", cwd, strerror(errno));
			_exit(126);
		}
		execvpe(argv[0], argv, envp);
		dprintf(2, "cordon-vm-agent: exec %s: %s\n", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	c->id = id;
	c->pid = pid;
	c->out = out[0];
	c->err = err[0];
	c->in = in[1];
	c->next = cmds;
	cmds = c;
	goto out;
fail:
	free(c);
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
		if (in[i] >= 0)
			close(in[i]);
	}
out:
	free(argv);
	free(envp);
}

static void do_frame(uint8_t type, struct buf *fb)
{
	struct cmd *c;

	if (type == VM_INIT) {
		do_init(fb->d, (uint32_t)fb->len);
		return;
	}
	if (type == VM_EXEC) {
		do_exec(fb->d, (uint32_t)fb->len);
		return;
	}
	if (fb->len < 4 || !(c = cmd_find(vm_get32(fb->d))))
		return; /* (a command that ended meanwhile) */
	if (type == VM_STDIN) {
		if (c->in < 0 || fb->len == 4) {
			send_id(VM_STDIN_ACK, c->id);
			return;
		}
		if (c->inbuf.len + fb->len - 4 > c->inbuf.cap) {
			uint8_t *n = realloc(c->inbuf.d, c->inbuf.len + fb->len - 4);

			if (!n) {
				cmd_close_in(c);
				return;
			}
			c->inbuf.d = n;
			c->inbuf.cap = c->inbuf.len + fb->len - 4;
		}
		memcpy(c->inbuf.d + c->inbuf.len, fb->d + 4, fb->len - 4);
		c->inbuf.len += fb->len - 4;
	} else if (type == VM_STDIN_EOF) {
		c->in_eof = true;
	} else if (type == VM_OUTPUT_ACK && fb->len == 5) {
		if (fb->d[4] == 1)
			c->out_wait = false;
		else if (fb->d[4] == 2)
			c->err_wait = false;
	} else if (type == VM_SIGNAL && fb->len == 8) {
		int sig = (int)vm_get32(fb->d + 4);

		if (!c->done && kill(-c->pid, sig) < 0)
			(void)kill(c->pid, sig);
	}
}

static void on_sigchld(int sig)
{
	(void)sig;
}

int main(void)
{
	struct buf fb = { 0 };
	struct pollfd *p = NULL;
	struct cmd **pc = NULL;
	size_t cap = 0;
	uint8_t type;

	(void)mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	(void)mount("proc", "/proc", "proc", 0, NULL);
	(void)mount("sysfs", "/sys", "sysfs", 0, NULL);
	(void)mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777");
	{
		int c = open("/dev/console", O_RDWR);

		if (c >= 0) {
			dup2(c, 0);
			dup2(c, 1);
			dup2(c, 2);
			if (c > 2)
				close(c);
		}
	}
	signal(SIGPIPE, SIG_IGN);
	/* SIGCHLD wakes poll (EINTR) when a command or an orphan ends. */
	{
		sigset_t chld;

		signal(SIGCHLD, on_sigchld);
		sigemptyset(&chld);
		sigaddset(&chld, SIGCHLD);
		sigprocmask(SIG_BLOCK, &chld, NULL);
	}
	load_modules();
	lo_up();
	port = open_port("agent");
	if (port < 0)
		die_poweroff();
	{
		struct timespec ts;
		uint8_t b[8];
		uint64_t ns;

		clock_gettime(CLOCK_BOOTTIME, &ts);
		ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		vm_put32(b, (uint32_t)(ns >> 32));
		vm_put32(b + 4, (uint32_t)ns);
		send_frame(VM_READY, b, 8);
	}

	for (;;) {
		size_t n = 0, want = 2;
		sigset_t none;
		int k;

		for (struct cmd *c = cmds; c; c = c->next)
			want += 3;
		if (want > cap) {
			struct pollfd *np = realloc(p, want * sizeof(*p));
			struct cmd **nc = realloc(pc, want * sizeof(*pc));

			if (np)
				p = np;
			if (nc)
				pc = nc;
			if (!np || !nc)
				die_poweroff();
			cap = want;
		}
		p[n] = (struct pollfd){ .fd = port, .events = POLLIN };
		pc[n++] = NULL;
		for (struct cmd *c = cmds; c; c = c->next) {
			if (c->out >= 0 && !c->out_wait) {
				p[n] = (struct pollfd){ .fd = c->out, .events = POLLIN };
				pc[n++] = c;
			}
			if (c->err >= 0 && !c->err_wait) {
				p[n] = (struct pollfd){ .fd = c->err, .events = POLLIN };
				pc[n++] = c;
			}
			if (c->in >= 0 && c->inbuf.len) {
				p[n] = (struct pollfd){ .fd = c->in, .events = POLLOUT };
				pc[n++] = c;
			}
		}
		sigemptyset(&none);
		k = ppoll(p, n, NULL, &none);
		if (k < 0 && errno != EINTR)
			die_poweroff();
		for (size_t i = 1; k > 0 && i < n; i++) {
			struct cmd *c = pc[i];

			if (!p[i].revents)
				continue;
			if (p[i].fd == c->out || p[i].fd == c->err) {
				static uint8_t data[4 + VM_OUTPUT_CHUNK];
				bool is_out = p[i].fd == c->out;
				ssize_t r = read(p[i].fd, data + 4, VM_OUTPUT_CHUNK);

				if (r > 0) {
					vm_put32(data, c->id);
					send_frame(is_out ? VM_STDOUT : VM_STDERR, data,
						   4 + (uint32_t)r);
					*(is_out ? &c->out_wait : &c->err_wait) = true;
				} else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
					close(p[i].fd);
					*(is_out ? &c->out : &c->err) = -1;
				}
			} else if (p[i].fd == c->in) {
				ssize_t r = write(c->in, c->inbuf.d, c->inbuf.len);

				if (r > 0) {
					memmove(c->inbuf.d, c->inbuf.d + r,
						c->inbuf.len - (size_t)r);
					c->inbuf.len -= (size_t)r;
					if (!c->inbuf.len)
						send_id(VM_STDIN_ACK, c->id);
				} else if (r < 0 && errno != EAGAIN && errno != EINTR) {
					cmd_close_in(c);
					send_id(VM_STDIN_ACK, c->id);
				}
			}
		}
		if (k > 0 && p[0].revents) {
			if (read_frame(&type, &fb) < 0)
				die_poweroff(); /* the host let go of the VM */
			do_frame(type, &fb);
		}
		/* Reap the commands and whatever was orphaned to PID 1. */
		for (;;) {
			int st;
			pid_t w = waitpid(-1, &st, WNOHANG);

			if (w <= 0)
				break;
			if (w == forward_pid)
				forward_pid =
					-1; /* (the next command that needs it starts it anew) */
			for (struct cmd *c = cmds; c; c = c->next)
				if (c->pid == w && !c->done) {
					c->status = st;
					c->done = true;
					/* Nothing of its session outlives it, so its pipes reach
					 * EOF. */
					(void)kill(-c->pid, SIGKILL);
				}
		}
		/* Stdin's EOF once what came before it is written; a command that ended and whose
		 * output is all sent is reported. */
		for (struct cmd **cc = &cmds; *cc;) {
			struct cmd *c = *cc;

			if (c->in_eof && !c->inbuf.len && c->in >= 0)
				cmd_close_in(c);
			if (c->done && c->out < 0 && c->err < 0) {
				send_exit(
					c->id,
					WIFEXITED(c->status) ? (uint32_t)WEXITSTATUS(c->status) : 0,
					WIFSIGNALED(c->status) ? (uint32_t)WTERMSIG(c->status) : 0);
				cmd_close_in(c);
				*cc = c->next;
				free(c->inbuf.d);
				free(c);
				continue;
			}
			cc = &c->next;
		}
	}
	return 0;
}
