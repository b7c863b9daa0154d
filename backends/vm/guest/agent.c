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
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/random.h>
#include <linux/seccomp.h>
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
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../../launcherd/launcherd-audit-record.h"
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
	int cg;		  /* its cgroup's directory (GUARD with limits), or -1 */
	uint32_t session; /* its audit session (GUARD with a program), or 0 */
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

/* --- the guard: the policy's limits and syscall filter (GUARD), and the seccomp observer --- */

/*
 * A command's GUARD (the policy's limits and syscall filter) comes just before its EXEC: the
 * command then runs in a cgroup v2 of its own (memory.max, memory.oom.group, pids.max; cgroup2
 * is mounted at boot), with RLIMIT_CPU and RLIMIT_NOFILE, and loads the seccomp program
 * (no_new_privs, SECCOMP_FILTER_FLAG_LOG) just before its exec. The agent is also the guest's
 * seccomp observer: it reads the kernel's SECCOMP audit records (AUDIT_NLGRP_READLOG), parsed
 * by launcherd's parser, ties each to a command by its audit session (the agent takes a fresh
 * session, writing /proc/self/loginuid, before each guarded command's fork) and sends a DENIAL;
 * a command's EXIT follows a LIMIT when a limit was hit, and comes only once the records of
 * its refusals are in (a barrier: a refusal of the agent's own, whose record follows theirs).
 */

#define CGROUP_ROOT "/sys/fs/cgroup"

static int cg_root = -1; /* CGROUP_ROOT with memory and pids for its children, or -1 */
static int audit_fd = -1;

/* The last GUARD, for the EXEC of its id, which the host sends next (one whose EXEC the keeper
 * could not take is replaced by the next GUARD, or ignored by an EXEC of another id). A
 * malformed one makes the EXEC of its id, or the next EXEC when it has none, fail: a command
 * never runs with less than its policy. */
static struct guard {
	bool set, bad, id_known;
	uint32_t id;
	uint64_t memory, pids, cpu, nofile;
	uint32_t n_insns;
	struct sock_filter prog[VM_GUARD_PROGRAM_MAX / sizeof(struct sock_filter)];
} guard;

static int write_at(int dir, const char *name, const char *value)
{
	int fd = openat(dir, name, O_WRONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -1;
	r = write_all(fd, value, strlen(value));
	close(fd);
	return r;
}

static int write_u64_at(int dir, const char *name, uint64_t v)
{
	char b[32];

	(void)snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
	return write_at(dir, name, b);
}

/* "KEY N" of a flat-keyed file (memory.events, pids.events); 0 when absent. */
static uint64_t keyed_at(int dir, const char *name, const char *key)
{
	char b[1024], *l, *save = NULL;
	size_t klen = strlen(key);
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	b[n] = 0;
	for (l = strtok_r(b, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (strncmp(l, key, klen) == 0 && l[klen] == ' ')
			return strtoull(l + klen + 1, NULL, 10);
	return 0;
}

/* At boot: cgroup2, with memory and pids (and cpu where the kernel has it) for the commands'
 * cgroups; the audit records' read-only multicast group. */
static void guard_init(void)
{
	struct sockaddr_nl a = { .nl_family = AF_NETLINK,
				 .nl_groups = 1U << (AUDIT_NLGRP_READLOG - 1) };
	int fd, sz = 1 << 20;

	(void)mkdir(CGROUP_ROOT, 0755);
	if (mount("cgroup2", CGROUP_ROOT, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0 &&
	    (fd = open(CGROUP_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		(void)write_at(fd, "cgroup.subtree_control", "+cpu");
		if (write_at(fd, "cgroup.subtree_control", "+memory +pids") == 0)
			cg_root = fd;
		else
			close(fd);
	}
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_AUDIT);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		fd = -1;
	}
	/* (a burst of records waits here while a command's output is being sent) */
	if (fd >= 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
	audit_fd = fd;
}

/* GUARD (vm_guard_parse()). */
static void do_guard(const uint8_t *b, uint32_t len)
{
	struct vm_guard g;

	guard.set = true;
	guard.bad = vm_guard_parse(b, len, &g) < 0;
	guard.id_known = len >= 4;
	guard.id = len >= 4 ? vm_get32(b) : 0;
	if (guard.bad)
		return;
	guard.memory = g.memory;
	guard.pids = g.pids;
	guard.cpu = g.cpu;
	guard.nofile = g.nofile;
	guard.n_insns = g.prog_len / (uint32_t)sizeof(struct sock_filter);
	memcpy(guard.prog, g.prog, g.prog_len);
}

/* The command's cgroup, with the guard's limits; *procs: its cgroup.procs, for the child to
 * join. The directory's fd, or -1 (errno). */
static int cgroup_make(uint32_t id, const struct guard *g, int *procs)
{
	char name[32];
	int dir;

	*procs = -1;
	if (cg_root < 0) {
		errno = EOPNOTSUPP;
		return -1;
	}
	(void)snprintf(name, sizeof(name), "cmd-%u", id);
	if (mkdirat(cg_root, name, 0755) < 0 && errno != EEXIST)
		return -1;
	dir = openat(cg_root, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -1;
	/* (no swap in the guest; a kernel without swap accounting has no memory.swap.max) */
	if (g->memory && (write_u64_at(dir, "memory.max", g->memory) < 0 ||
			  write_at(dir, "memory.oom.group", "1") < 0))
		goto fail;
	(void)write_at(dir, "memory.swap.max", "0");
	if (g->pids && write_u64_at(dir, "pids.max", g->pids) < 0)
		goto fail;
	*procs = openat(dir, "cgroup.procs", O_WRONLY | O_CLOEXEC);
	if (*procs < 0)
		goto fail;
	return dir;
fail:
	close(dir);
	(void)unlinkat(cg_root, name, AT_REMOVEDIR);
	return -1;
}

/* Cgroups whose last processes were still dying when their command ended: removed later. */
static uint32_t cg_graves[64];
static unsigned n_graves;

static void cgroup_reap(void)
{
	for (unsigned i = 0; i < n_graves;) {
		char name[32];

		(void)snprintf(name, sizeof(name), "cmd-%u", cg_graves[i]);
		if (unlinkat(cg_root, name, AT_REMOVEDIR) == 0 || errno == ENOENT) {
			cg_graves[i] = cg_graves[--n_graves];
			continue;
		}
		i++;
	}
}

/* The command ended: which limits it hit (LIMIT), everything left in its cgroup killed, the
 * cgroup removed (now or once empty). */
static void cgroup_end(struct cmd *c)
{
	uint8_t b[5];
	char name[32];

	if (c->cg < 0)
		return;
	b[4] = 0;
	if (keyed_at(c->cg, "pids.events", "max") > 0)
		b[4] |= VM_LIMIT_PIDS;
	if (keyed_at(c->cg, "memory.events", "oom_kill") > 0 ||
	    keyed_at(c->cg, "memory.events", "oom_group_kill") > 0)
		b[4] |= VM_LIMIT_MEMORY;
	if (b[4]) {
		vm_put32(b, c->id);
		send_frame(VM_LIMIT, b, sizeof(b));
	}
	(void)write_at(c->cg, "cgroup.kill", "1");
	close(c->cg);
	c->cg = -1;
	(void)snprintf(name, sizeof(name), "cmd-%u", c->id);
	if (unlinkat(cg_root, name, AT_REMOVEDIR) < 0 && errno != ENOENT &&
	    n_graves < sizeof(cg_graves) / sizeof(cg_graves[0]))
		cg_graves[n_graves++] = c->id;
}

/* In the child, last before the exec: the limits and the filter. */
static void guard_apply_child(const struct guard *g, int procs)
{
	if (procs >= 0 && write(procs, "0", 1) != 1) {
		dprintf(2, "cordon-vm-agent: cannot join the command's cgroup: %s\n",
			strerror(errno));
		_exit(126);
	}
	if (g->cpu)
		(void)setrlimit(RLIMIT_CPU, &(struct rlimit){ g->cpu, g->cpu });
	if (g->nofile)
		(void)setrlimit(RLIMIT_NOFILE, &(struct rlimit){ g->nofile, g->nofile });
	(void)setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
	if (g->n_insns) {
		struct sock_fprog fp = { .len = (unsigned short)g->n_insns,
					 .filter = (struct sock_filter *)g->prog };

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_LOG, &fp) <
			    0) {
			dprintf(2, "cordon-vm-agent: cannot load the syscall filter: %s\n",
				strerror(errno));
			_exit(126);
		}
	}
}

/* A fresh audit session for the agent (so for the command it forks next): its refusals'
 * records name it. 0 when the kernel has none. */
static uint32_t session_new(void)
{
	char b[32] = "";
	int fd = open("/proc/self/loginuid", O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = write(fd, "0", 1);
	close(fd);
	if (n != 1)
		return 0;
	fd = open("/proc/self/sessionid", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	b[n] = 0;
	n = (ssize_t)strtoul(b, NULL, 10);
	return n > 0 && (uint32_t)n != UINT32_MAX ? (uint32_t)n : 0;
}

/* A refusal of one of our commands (by its session) as a DENIAL. */
static void audit_deliver(const struct audit_record *r)
{
	uint8_t b[VM_DENIAL_FIXED + sizeof(r->comm) + 1024];
	size_t n = VM_DENIAL_FIXED, k;
	struct cmd *c;

	for (c = cmds; c; c = c->next)
		if (c->session && c->session == r->session)
			break;
	if (!c)
		return;
	vm_put32(b, c->id);
	vm_put64(b + 4, r->msec);
	vm_put32(b + 12, r->arch);
	vm_put32(b + 16, (uint32_t)r->syscall);
	vm_put32(b + 20, r->code);
	vm_put32(b + 24, (uint32_t)r->pid);
	k = strnlen(r->comm, sizeof(r->comm) - 1);
	memcpy(b + n, r->comm, k);
	n += k;
	b[n++] = 0;
	k = strnlen(r->exe, 1023);
	memcpy(b + n, r->exe, k);
	n += k;
	b[n++] = 0;
	send_frame(VM_DENIAL, b, (uint32_t)n);
}

/* What the audit socket holds. Returns true when it held the record of pid barrier's
 * refusal. */
static bool audit_read(pid_t barrier)
{
	static char buf[16384];
	static struct audit_record r;
	bool seen = false;

	for (;;) {
		ssize_t n = recv(audit_fd, buf, sizeof(buf), MSG_DONTWAIT);
		int len = (int)n;

		if (n < 0 && (errno == EINTR || errno == ENOBUFS))
			continue;
		if (n <= 0)
			break;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type != AUDIT_SECCOMP ||
			    audit_record_parse(h->nlmsg_type, NLMSG_DATA(h),
					       h->nlmsg_len - NLMSG_HDRLEN, &r) < 0)
				continue;
			if (barrier > 0 && r.pid == barrier)
				seen = true;
			else
				audit_deliver(&r);
		}
	}
	return seen;
}

/* Every refusal of the command so far is read and sent: a child of ours, in an audit session
 * of its own, is refused getppid() (logged, as the commands' filters are), and the kernel
 * queues its record after theirs. At most 2 s. */
static void audit_barrier(void)
{
	static const struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct timespec t0, t;
	pid_t pid;

	if (audit_fd < 0)
		return;
	pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		struct sock_fprog fp = { .len = sizeof(f) / sizeof(f[0]),
					 .filter = (struct sock_filter *)f };

		(void)session_new();
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_LOG, &fp) ==
			    0)
			(void)syscall(SYS_getppid);
		_exit(0);
	}
	(void)waitpid(pid, NULL, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		long ms;

		if (audit_read(pid))
			return;
		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (ms >= 2000 || poll(&(struct pollfd){ .fd = audit_fd, .events = POLLIN }, 1,
				       (int)(2000 - ms)) <= 0)
			break;
	}
	/* No record: this kernel logs none (audit=0), and none will come. The observer stops
	 * rather than hold every exit 2 s. */
	close(audit_fd);
	audit_fd = -1;
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
	bool guarded, refuse;
	int cg = -1, procs = -1;
	uint32_t session = 0;

	if (len < 5)
		return;
	id = vm_get32(b);
	flags = b[4];
	guarded = guard.set && guard.id_known && guard.id == id;
	refuse = guard.set && guard.bad && (guarded || !guard.id_known);
	guard.set = false;
	if (cmd_find(id) || parse_exec(b + 5, len - 5, &argv, &envp, &cwd) < 0 || refuse) {
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
	if (guarded && (guard.memory || guard.pids) && (cg = cgroup_make(id, &guard, &procs)) < 0) {
		send_error(id, "a cgroup for %s's limits: %s", argv[0]);
		send_exit(id, 126, 0);
		goto fail;
	}
	if (guarded && guard.n_insns && audit_fd >= 0)
		session = session_new();
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
		if (guarded)
			guard_apply_child(&guard, procs);
		execvpe(argv[0], argv, envp);
		dprintf(2, "cordon-vm-agent: exec %s: %s\n", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	if (procs >= 0)
		close(procs);
	fcntl(in[1], F_SETFL, O_NONBLOCK);
	c->id = id;
	c->pid = pid;
	c->cg = cg;
	c->session = session;
	c->out = out[0];
	c->err = err[0];
	c->in = in[1];
	c->next = cmds;
	cmds = c;
	goto out;
fail:
	free(c);
	if (procs >= 0)
		close(procs);
	if (cg >= 0) {
		char name[32];

		close(cg);
		(void)snprintf(name, sizeof(name), "cmd-%u", id);
		(void)unlinkat(cg_root, name, AT_REMOVEDIR);
	}
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
	if (type == VM_GUARD) {
		do_guard(fb->d, (uint32_t)fb->len);
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
	guard_init();
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
		size_t n = 0, want = 3;
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
		p[n] = (struct pollfd){ .fd = audit_fd, .events = POLLIN };
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
		if (k > 0 && p[1].revents)
			(void)audit_read(0);
		for (size_t i = 2; k > 0 && i < n; i++) {
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
		if (n_graves)
			cgroup_reap();
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
					if (c->cg >= 0)
						(void)write_at(c->cg, "cgroup.kill", "1");
				}
		}
		/* Stdin's EOF once what came before it is written; a command that ended and whose
		 * output is all sent is reported. */
		for (struct cmd **cc = &cmds; *cc;) {
			struct cmd *c = *cc;

			if (c->in_eof && !c->inbuf.len && c->in >= 0)
				cmd_close_in(c);
			if (c->done && c->out < 0 && c->err < 0) {
				if (c->session)
					audit_barrier();
				cgroup_end(c);
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
