/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The builtin:vm guest agent: PID 1 of the micro-VM's initramfs (built -static). It mounts
 * /proc, /sys and /dev, loads the modules listed in /etc/agent-modules (finit_module), brings
 * up lo, opens the virtio-serial port named "agent" and speaks the frames of backends/vm/vm-proto.h
 * with the host: READY; INIT (wall clock, entropy, workspace mount); one EXEC whose stdout and
 * stderr are streamed apart, its stdin fed until STDIN_EOF, signals forwarded; EXIT (code or
 * signal), after which the command's whole session is killed and the VM powers off.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <net/if.h>
#include <poll.h>
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

static void send_error(const char *fmt, const char *arg)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg), fmt, arg, strerror(errno));

	send_frame(VM_ERROR, msg, n > 0 ? (uint32_t)n : 0);
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

static int open_port(void)
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
			if (strcmp(name, "agent") == 0) {
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
			send_error("mount %s: %s", mp);
	}
}

/* Strings: NUL-separated cwd, argv, env; counts first (u32 argc, u32 envc). */
static int parse_exec(uint8_t *b, uint32_t len, char ***argv, char ***envp, char **cwd)
{
	uint32_t argc, envc;
	char *p, *end = (char *)b + len;

	if (len < 8 || b[len - 1] != 0)
		return -1;
	argc = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	envc = (uint32_t)b[4] << 24 | (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];
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
	len = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
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

int main(void)
{
	char **argv = NULL, **envp = NULL, *cwd = NULL;
	int out[2], err[2], in[2], pidfd;
	struct buf fb = { 0 }, inbuf = { 0 };
	bool in_eof = false, child_done = false;
	int status = 0;
	pid_t pid;
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
	load_modules();
	lo_up();
	port = open_port();
	if (port < 0)
		die_poweroff();
	send_frame(VM_READY, NULL, 0);

	/* INIT, then EXEC. */
	for (;;) {
		if (read_frame(&type, &fb) < 0)
			die_poweroff();
		if (type == VM_INIT)
			do_init(fb.d, (uint32_t)fb.len);
		else if (type == VM_EXEC)
			break;
	}
	if (parse_exec(fb.d, (uint32_t)fb.len, &argv, &envp, &cwd) < 0) {
		send_frame(VM_ERROR, "bad exec frame", 14);
		die_poweroff();
	}
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(in, O_CLOEXEC) < 0)
		die_poweroff();
	pid = fork();
	if (pid < 0)
		die_poweroff();
	if (pid == 0) {
		(void)setsid();
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		signal(SIGPIPE, SIG_DFL);
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
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);

	for (;;) {
		struct pollfd p[5] = {
			{ .fd = out[0], .events = POLLIN },
			{ .fd = err[0], .events = POLLIN },
			{ .fd = inbuf.len ? -1 : port, .events = POLLIN },
			{ .fd = in[1] >= 0 && inbuf.len ? in[1] : -1, .events = POLLOUT },
			{ .fd = child_done ? -1 : pidfd, .events = POLLIN },
		};

		if (out[0] < 0 && err[0] < 0 && child_done)
			break;
		if (poll(p, 5, -1) < 0) {
			if (errno == EINTR)
				continue;
			die_poweroff();
		}
		for (int i = 0; i < 2; i++) {
			int *fd = i == 0 ? &out[0] : &err[0];
			uint8_t data[65536];
			ssize_t k;

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			k = read(*fd, data, sizeof(data));
			if (k > 0)
				send_frame(i == 0 ? VM_STDOUT : VM_STDERR, data, (uint32_t)k);
			else if (k == 0 || errno != EINTR) {
				close(*fd);
				*fd = -1;
			}
		}
		if (p[2].fd >= 0 && p[2].revents) {
			if (read_frame(&type, &fb) < 0)
				die_poweroff();
			if (type == VM_STDIN && fb.len && in[1] >= 0) {
				struct buf t = inbuf;

				inbuf = fb;
				fb = t;
			} else if (type == VM_STDIN_EOF) {
				in_eof = true;
			} else if (type == VM_SIGNAL && fb.len == 4) {
				int sig = (int)((uint32_t)fb.d[0] << 24 | (uint32_t)fb.d[1] << 16 |
						(uint32_t)fb.d[2] << 8 | fb.d[3]);

				if (kill(-pid, sig) < 0)
					(void)kill(pid, sig);
			}
		}
		if (p[3].fd >= 0 && p[3].revents) {
			ssize_t k = write(in[1], inbuf.d, inbuf.len);

			if (k > 0) {
				memmove(inbuf.d, inbuf.d + k, inbuf.len - (size_t)k);
				inbuf.len -= (size_t)k;
			} else if (k < 0 && errno != EAGAIN && errno != EINTR) {
				inbuf.len = 0;
				close(in[1]);
				in[1] = -1;
			}
		}
		if (in_eof && !inbuf.len && in[1] >= 0) {
			close(in[1]);
			in[1] = -1;
		}
		if (p[4].fd >= 0 && p[4].revents)
			/* The command ended: nothing of its session outlives it, so its pipes
			 * reach EOF. */
			(void)kill(-pid, SIGKILL);
		/* Reap the command and whatever was orphaned to PID 1. */
		for (;;) {
			int st;
			pid_t w = waitpid(-1, &st, WNOHANG);

			if (w <= 0)
				break;
			if (w == pid) {
				status = st;
				child_done = true;
				(void)kill(-pid, SIGKILL);
			}
		}
	}
	{
		uint8_t x[8];
		uint32_t code = WIFEXITED(status) ? (uint32_t)WEXITSTATUS(status) : 0;
		uint32_t sig = WIFSIGNALED(status) ? (uint32_t)WTERMSIG(status) : 0;

		vm_put32(x, code);
		vm_put32(x + 4, sig);
		send_frame(VM_EXIT, x, 8);
	}
	/* Wait for the host to close the port (it has the exit), then power off. */
	(void)read_frame(&type, &fb);
	die_poweroff();
	return 0;
}
