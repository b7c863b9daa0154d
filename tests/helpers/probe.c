/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * probe: one escape attempt per invocation, run INSIDE a sandbox by the launcherd integration
 * tests. Each subcommand tries something a confinement rule must stop and exits
 *   0  the attempt SUCCEEDED (the rule is missing: the test fails),
 *   1  the attempt was refused (errno printed),
 *   2  usage or a set-up problem of the probe itself.
 * A few subcommands are helpers rather than attempts (sleep-tree, fds, env, alloc, forkloop,
 * netns, ns, ns-owner, securebits, abstract-listen, tcp-listen, lo-gso),
 * documented with each.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/nsfs.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>

static int refused(const char *what)
{
	printf("refused: %s: %s\n", what, strerror(errno));
	return 1;
}

static int succeeded(const char *what)
{
	printf("SUCCEEDED: %s\n", what);
	return 0;
}

static int try_write(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return refused(path);
	if (write(fd, "x", 1) != 1) {
		close(fd);
		return refused(path);
	}
	close(fd);
	return succeeded(path);
}

static int try_read(const char *path)
{
	char buf[16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return refused(path);
	if (read(fd, buf, sizeof(buf)) < 0) {
		close(fd);
		return refused(path);
	}
	close(fd);
	return succeeded(path);
}

/* Write outside the writable set through a symlink made in the writable dir. */
static int try_symlink_write(const char *writable, const char *target)
{
	char link[4096];

	snprintf(link, sizeof(link), "%s/probe-link", writable);
	unlink(link);
	if (symlink(target, link) < 0)
		return refused("symlink");
	return try_write(link);
}

/* Hard-link a file from outside into the writable dir, then write it. */
static int try_hardlink(const char *outside, const char *writable)
{
	char dst[4096];

	snprintf(dst, sizeof(dst), "%s/probe-hardlink", writable);
	unlink(dst);
	if (link(outside, dst) < 0)
		return refused("link");
	return try_write(dst);
}

/* Rename a file from outside into the writable dir (or the reverse). */
static int try_rename(const char *from, const char *to)
{
	if (rename(from, to) < 0)
		return refused("rename");
	return succeeded("rename");
}

static int try_kill(pid_t pid)
{
	if (kill(pid, 0) < 0)
		return refused("kill");
	return succeeded("kill");
}

static int try_ptrace(pid_t pid)
{
	if (ptrace(PTRACE_ATTACH, pid, NULL, NULL) < 0)
		return refused("ptrace attach");
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	return succeeded("ptrace attach");
}

/* Does any process outside our own pid namespace show in /proc? (host pids) */
static int try_see_pid(pid_t pid)
{
	char p[64];
	struct stat st;

	snprintf(p, sizeof(p), "/proc/%d", (int)pid);
	if (stat(p, &st) < 0)
		return refused(p);
	return succeeded(p);
}

static int try_userns(void)
{
	if (unshare(CLONE_NEWUSER) < 0)
		return refused("unshare(CLONE_NEWUSER)");
	return succeeded("unshare(CLONE_NEWUSER)");
}

static int try_clone_userns(void)
{
	pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0);

	if (pid < 0)
		return refused("clone(CLONE_NEWUSER)");
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return succeeded("clone(CLONE_NEWUSER)");
}

static int try_mount(void)
{
	if (mount("none", "/tmp", "tmpfs", 0, NULL) < 0)
		return refused("mount tmpfs");
	return succeeded("mount tmpfs");
}

static int try_bpf(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	attr.insns = (uint64_t)(uintptr_t)insns;
	attr.insn_cnt = 2;
	attr.license = (uint64_t)(uintptr_t) "GPL";
	if (syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr)) < 0)
		return refused("bpf(BPF_PROG_LOAD)");
	return succeeded("bpf(BPF_PROG_LOAD)");
}

static int try_io_uring(void)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	if (syscall(SYS_io_uring_setup, 4, &p) < 0)
		return refused("io_uring_setup");
	return succeeded("io_uring_setup");
}

static int try_tiocsti(void)
{
	char c = 'x';

	if (ioctl(0, TIOCSTI, &c) < 0)
		return refused("TIOCSTI");
	return succeeded("TIOCSTI");
}

static int try_tcp(const char *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return refused("socket");
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return refused("connect 127.0.0.1");
	return succeeded("connect 127.0.0.1");
}

static int try_abstract(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return refused("socket");
	memcpy(sa.sun_path + 1, name, strlen(name));
	if (connect(fd, (struct sockaddr *)&sa, len) < 0)
		return refused("connect @abstract");
	return succeeded("connect @abstract");
}

static int try_raw_socket(void)
{
	if (socket(AF_PACKET, SOCK_RAW, 0) >= 0)
		return succeeded("AF_PACKET");
	if (socket(AF_INET, SOCK_RAW, IPPROTO_ICMP) >= 0)
		return succeeded("SOCK_RAW");
	return refused("raw sockets");
}

struct sock_try {
	int family, type, protocol;
	const char *name;
};

/* Try each socket (and a TIPC socketpair): exits 0 when any could be made. A family the kernel
 * lacks counts as refused. */
static int try_socket_list(const struct sock_try *socks, size_t n_socks)
{
	int sv[2], n = 0;

	for (size_t i = 0; i < n_socks; i++) {
		int fd = socket(socks[i].family, socks[i].type | SOCK_CLOEXEC, socks[i].protocol);

		if (fd >= 0) {
			printf("SUCCEEDED: socket %s\n", socks[i].name);
			close(fd);
			n++;
		} else
			printf("refused: socket %s: %s\n", socks[i].name, strerror(errno));
	}
	if (socketpair(AF_TIPC, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0) {
		printf("SUCCEEDED: socketpair AF_TIPC\n");
		n++;
	}
	return n ? 0 : 1;
}

/* Every socket family but AF_UNIX ("sockets"); AF_INET and AF_INET6 are always there. */
static int try_sockets(void)
{
	static const struct sock_try socks[] = {
		{ AF_INET, SOCK_STREAM, 0, "AF_INET TCP" },
		{ AF_INET, SOCK_DGRAM, 0, "AF_INET UDP" },
		{ AF_INET, SOCK_DGRAM, IPPROTO_ICMP, "AF_INET ICMP (ping)" },
		{ AF_INET6, SOCK_STREAM, 0, "AF_INET6 TCP" },
		{ AF_INET6, SOCK_DGRAM, 0, "AF_INET6 UDP" },
		{ AF_NETLINK, SOCK_RAW, NETLINK_ROUTE, "AF_NETLINK route" },
		{ AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT, "AF_NETLINK uevent" },
		{ AF_PACKET, SOCK_DGRAM, 0, "AF_PACKET" },
		{ AF_VSOCK, SOCK_STREAM, 0, "AF_VSOCK" },
		{ AF_TIPC, SOCK_RDM, 0, "AF_TIPC" },
	};

	return try_socket_list(socks, sizeof(socks) / sizeof(socks[0]));
}

/* Families the network namespace does not scope, or little-used ones ("sockets-exotic"). */
static int try_sockets_exotic(void)
{
	static const struct sock_try socks[] = {
		{ AF_VSOCK, SOCK_STREAM, 0, "AF_VSOCK" }, { AF_TIPC, SOCK_RDM, 0, "AF_TIPC" },
		{ AF_ALG, SOCK_SEQPACKET, 0, "AF_ALG" },  { AF_CAN, SOCK_DGRAM, 0, "AF_CAN" },
		{ AF_KEY, SOCK_RAW, 2, "AF_KEY" },	  { AF_RDS, SOCK_SEQPACKET, 0, "AF_RDS" },
	};

	return try_socket_list(socks, sizeof(socks) / sizeof(socks[0]));
}

/* Helper ("securebits"): print our securebits, in hex. */
static int show_securebits(void)
{
	int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);

	if (bits < 0)
		return refused("prctl(PR_GET_SECUREBITS)");
	printf("%#x\n", (unsigned)bits);
	return 0;
}

/* Helpers ("netns", "ns KIND..."): print our namespaces of each kind ("net:[N]"), one a line. */
static int show_ns(int n_kinds, char *const *kinds)
{
	for (int i = 0; i < n_kinds; i++) {
		char path[64], buf[64];
		ssize_t n;

		(void)snprintf(path, sizeof(path), "/proc/self/ns/%s", kinds[i]);
		n = readlink(path, buf, sizeof(buf) - 1);
		if (n < 0)
			return refused(path);
		buf[n] = '\0';
		printf("%s\n", buf);
	}
	return 0;
}

/*
 * ns-owner PID KIND...: for each, the user namespace that owns /proc/PID/ns/KIND ("user:[N]";
 * for KIND user, its parent), from the NS_GET_USERNS / NS_GET_PARENT ioctls. A helper run from
 * outside (the kernel answers only for namespaces within the caller's own user namespace).
 */
static int show_ns_owner(int n_args, char *const *args)
{
	for (int i = 1; i < n_args; i++) {
		char path[64];
		struct stat st;
		int fd, owner;

		(void)snprintf(path, sizeof(path), "/proc/%s/ns/%s", args[0], args[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return refused(path);
		owner = ioctl(fd, strcmp(args[i], "user") ? NS_GET_USERNS : NS_GET_PARENT);
		close(fd);
		if (owner < 0 || fstat(owner, &st) < 0)
			return refused("NS_GET_USERNS");
		close(owner);
		printf("%s owner user:[%llu]\n", args[i], (unsigned long long)st.st_ino);
	}
	return 0;
}

/* Helper ("lo-gso"): lo's gso sizes, "gso N ipv4 M" (0: not reported), from RTM_GETLINK. */
static int show_lo_gso(void)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = { .h = { .nlmsg_len = sizeof(req),
			 .nlmsg_type = RTM_GETLINK,
			 .nlmsg_flags = NLM_F_REQUEST },
		  .i = { .ifi_family = AF_UNSPEC, .ifi_index = 1 } };
	union {
		struct nlmsghdr h;
		char buf[16384];
	} resp;
	unsigned gso = 0, gso4 = 0;
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_ROUTE);
	ssize_t n;

	if (fd < 0 || send(fd, &req, sizeof(req), 0) < 0 ||
	    (n = recv(fd, &resp, sizeof(resp), 0)) < (ssize_t)NLMSG_LENGTH(sizeof(req.i)) ||
	    resp.h.nlmsg_type != RTM_NEWLINK) {
		perror("probe: lo-gso");
		return 2;
	}
	int len = (int)resp.h.nlmsg_len - (int)NLMSG_LENGTH(sizeof(req.i));

	for (struct rtattr *a = (struct rtattr *)((char *)NLMSG_DATA(&resp.h) + sizeof(req.i));
	     RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == IFLA_GSO_MAX_SIZE)
			memcpy(&gso, RTA_DATA(a), sizeof(gso));
		if (a->rta_type == 63 /* IFLA_GSO_IPV4_MAX_SIZE, 6.3 */)
			memcpy(&gso4, RTA_DATA(a), sizeof(gso4));
	}
	printf("gso %u ipv4 %u\n", gso, gso4);
	return 0;
}

static int try_personality(void)
{
	if (syscall(SYS_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */) < 0)
		return refused("personality(ADDR_NO_RANDOMIZE)");
	return succeeded("personality(ADDR_NO_RANDOMIZE)");
}

static int try_keyctl(void)
{
	if (syscall(SYS_add_key, "user", "probe", "x", 1, -3 /* KEY_SPEC_SESSION_KEYRING */) < 0)
		return refused("add_key");
	return succeeded("add_key");
}

static int try_x32(void)
{
	/* getpid through the x32 ABI's numbering. */
	if (syscall(0x40000000 | SYS_getpid) < 0)
		return refused("x32 getpid");
	return succeeded("x32 getpid");
}

/* Host-side helper: listen on 127.0.0.1:PORT ("tcp-listen PORT") or on the abstract Unix
 * socket @NAME ("abstract-listen NAME") and accept forever; prints "listening" when ready. */
__attribute__((noreturn)) static void listen_forever(bool tcp, const char *arg)
{
	int fd;

	if (tcp) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)atoi(arg)) };
		int one = 1;

		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			_exit(2);
	} else {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		socklen_t len =
			(socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(arg));

		memcpy(sa.sun_path + 1, arg, strlen(arg));
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) < 0)
			_exit(2);
	}
	if (listen(fd, 16) < 0)
		_exit(2);
	printf("listening\n");
	for (;;) {
		int c = accept(fd, NULL, NULL);

		if (c >= 0)
			close(c);
	}
}

/* Helper: list our open fds above 2 ("fds"); exits 0 when there are any (a stray fd). */
static int list_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int stray = 0;

	if (!d)
		return refused("/proc/self/fd");
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);

		if (de->d_name[0] == '.' || fd <= 2 || fd == dirfd(d))
			continue;
		printf("stray fd %d\n", fd);
		stray++;
	}
	closedir(d);
	return stray ? 0 : 1;
}

/* Helper: exit 0 when NAME is in the environment ("env NAME"). */
static int has_env(const char *name)
{
	if (getenv(name))
		return succeeded(name);
	errno = ENOENT;
	return refused(name);
}

/* Helper: fork up to n children that sleep; exit 0 if all forks worked (no pids limit). */
static int fork_loop(int n)
{
	for (int i = 0; i < n; i++) {
		pid_t p = fork();

		if (p < 0) {
			printf("fork %d failed\n", i);
			return refused("fork");
		}
		if (p == 0) {
			pause();
			_exit(0);
		}
	}
	return succeeded("all forks");
}

/* Helper: allocate and touch n MiB; exit 0 if it all worked (no memory limit). */
static int alloc(long mib)
{
	for (long i = 0; i < mib; i++) {
		char *p = malloc(1 << 20);

		if (!p)
			return refused("malloc");
		memset(p, 1, 1 << 20);
	}
	return succeeded("alloc");
}

/* Helper: a process tree (child and grandchild) that writes its host-visible marker and
 * sleeps; "sleep-tree FILE" writes "ready" to FILE once the grandchild runs. */
__attribute__((noreturn)) static void sleep_tree(const char *file)
{
	pid_t c = fork();

	if (c == 0) {
		pid_t g = fork();

		if (g == 0) {
			int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

			if (fd >= 0) {
				(void)!write(fd, "ready\n", 6);
				close(fd);
			}
			for (;;)
				pause();
		}
		for (;;)
			pause();
	}
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	const char *a = argc > 2 ? argv[2] : "";
	const char *b = argc > 3 ? argv[3] : "";

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(cmd, "write"))
		return try_write(a);
	if (!strcmp(cmd, "read"))
		return try_read(a);
	if (!strcmp(cmd, "symlink-write"))
		return try_symlink_write(a, b);
	if (!strcmp(cmd, "hardlink"))
		return try_hardlink(a, b);
	if (!strcmp(cmd, "rename"))
		return try_rename(a, b);
	if (!strcmp(cmd, "kill"))
		return try_kill(atoi(a));
	if (!strcmp(cmd, "see-pid"))
		return try_see_pid(atoi(a));
	if (!strcmp(cmd, "ptrace"))
		return try_ptrace(atoi(a));
	if (!strcmp(cmd, "userns"))
		return try_userns();
	if (!strcmp(cmd, "clone-userns"))
		return try_clone_userns();
	if (!strcmp(cmd, "mount"))
		return try_mount();
	if (!strcmp(cmd, "bpf"))
		return try_bpf();
	if (!strcmp(cmd, "io-uring"))
		return try_io_uring();
	if (!strcmp(cmd, "tiocsti"))
		return try_tiocsti();
	if (!strcmp(cmd, "tcp"))
		return try_tcp(a);
	if (!strcmp(cmd, "abstract"))
		return try_abstract(a);
	if (!strcmp(cmd, "raw-socket"))
		return try_raw_socket();
	if (!strcmp(cmd, "sockets-exotic"))
		return try_sockets_exotic();
	if (!strcmp(cmd, "sockets"))
		return try_sockets();
	if (!strcmp(cmd, "netns"))
		return show_ns(1, (char *const[]){ (char *)"net" });
	if (!strcmp(cmd, "ns"))
		return show_ns(argc - 2, argv + 2);
	if (!strcmp(cmd, "ns-owner") && argc > 2)
		return show_ns_owner(argc - 2, argv + 2);
	if (!strcmp(cmd, "lo-gso"))
		return show_lo_gso();
	if (!strcmp(cmd, "securebits"))
		return show_securebits();
	if (!strcmp(cmd, "personality"))
		return try_personality();
	if (!strcmp(cmd, "keyctl"))
		return try_keyctl();
	if (!strcmp(cmd, "x32"))
		return try_x32();
	if (!strcmp(cmd, "tcp-listen"))
		listen_forever(true, a);
	if (!strcmp(cmd, "abstract-listen"))
		listen_forever(false, a);
	if (!strcmp(cmd, "fds"))
		return list_fds();
	if (!strcmp(cmd, "env"))
		return has_env(a);
	if (!strcmp(cmd, "forkloop"))
		return fork_loop(atoi(a));
	if (!strcmp(cmd, "alloc"))
		return alloc(atol(a));
	if (!strcmp(cmd, "sleep-tree"))
		sleep_tree(a);
	fprintf(stderr, "probe: unknown subcommand \"%s\"\n", cmd);
	return 2;
}
