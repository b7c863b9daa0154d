/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * builtin:vm — every spawn boots a QEMU micro-VM (-M microvm, no NIC, -sandbox on) whose PID 1
 * is the guest agent (guest/agent.c) and runs the command there. Only ever selected by an
 * explicit activation (never by auto, never as a fallback).
 *
 * Each spawn forks a relay process (the sandbox's pid as the core sees it) that starts QEMU
 * with one end of a socketpair as the virtio-serial port "agent", waits for READY within the
 * boot deadline, sends INIT (wall clock, entropy, workspace) and EXEC, then moves the command's
 * stdin, stdout and stderr between the plan's fds and the agent's frames (vm-proto.h), forwards
 * signals it receives, enforces the plan's timeoutMs, and on EXIT kills QEMU by pid (it also
 * dies with the relay: PR_SET_PDEATHSIG) and reports on a status pipe: "ready" once the command
 * runs, then "exit CODE SIGNAL", "timeout" or "error MESSAGE". The relay runs between fork and
 * exit in a possibly threaded process, so it only makes system calls on buffers built before
 * the fork.
 *
 * The workspace is shared over virtio-9p at its host path ("direct": the plan's cwd holds
 * unchanged), exported read-only when the policy says so. QEMU runs as the controller's user.
 * The accelerator is TCG (tsc_early_khz from the host, since PIT calibration hangs under TCG),
 * or KVM where kvm_intel or kvm_amd is loaded and /dev/kvm opens.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/vm/vm-proto.h"
#include "backends/vm/vm.h"
#include "common/event.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-json.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define VM_BOOT_TIMEOUT_MS 60000

struct vm_child {
	struct vm_child *next;
	struct backend_instance *bi;
	char sandbox[32];
	pid_t pid;
	int pidfd;
	int status_fd;
	struct event_source *src;
	struct event_source *status_src;
	backend_spawn_cb cb; /* until "ready" or the relay's end */
	void *ud;
	char status[1024];
	size_t status_len;
	unsigned long long start_usec;
	bool killed;
};

struct vm_data {
	struct vm_child *children;
	unsigned long long next;
	char *qemu;
	char *kernel;
	char *initrd;
	unsigned memory_mib;
	unsigned cpus;
	bool kvm;
	unsigned long tsc_khz;
	/* The OS launcher's hello when this instance was prepared: the capabilities the policy
	 * compiler holds a plan against (as for a pack). */
	json_t *hello;
};

static json_t *vm_descriptor(const struct backend_ops *ops)
{
	return json_pack(
		"{s:s,s:s,s:s,"
		"s:{s:[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i}]},"
		"s:{s:[s],s:s,s:[s,s],s:b,s:s,s:[s]}}",
		"kind", "vm", "name", "QEMU micro-VM", "description",
		"Boots a QEMU micro-VM for every command: its own kernel, no network device, the "
		"workspace shared over virtio-9p (read-only when the policy says so).",
		"settings", "fields", "id", "kernel", "type", "string", "label", "Guest kernel",
		"description",
		"An uncompressed PVH vmlinux (backends/vm/fetch-kernel.sh); initramfs.cpio.gz "
		"beside it. Default: the state directory's cordon/vm/vmlinux.",
		"id", "initrd", "type", "string", "label", "Initramfs", "description",
		"The guest agent's initramfs (backends/vm/mkinitramfs.sh). Default: "
		"initramfs.cpio.gz beside the kernel.",
		"id", "memoryMiB", "type", "number", "label", "Memory (MiB)", "defaultValue", 256,
		"id", "cpus", "type", "number", "label", "vCPUs", "defaultValue", 1, "claims",
		"platforms", "linux", "isolation", "vm", "enforces", "filesystem", "network",
		"readOnlyWorkspace", true, "workspace", "direct", "networkModes", "none");
}

static void vm_data_free(struct vm_data *d)
{
	if (!d)
		return;
	free(d->qemu);
	free(d->kernel);
	free(d->initrd);
	json_decref(d->hello);
	free(d);
}

static char *find_in_path(const char *name)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, name) < (int)sizeof(buf) &&
		    access(buf, X_OK) == 0)
			return strdup(buf);
		path += n;
		if (*path == ':')
			path++;
	}
	return NULL;
}

/* The host TSC frequency in kHz, for the guest's tsc_early_khz: the kernel's own measurement
 * when it exports one, else a short calibration of the TSC against CLOCK_MONOTONIC. */
static unsigned long host_tsc_khz(void)
{
	struct timespec a, b;
	unsigned long long t0, t1, ns;
	unsigned lo, hi;

	clock_gettime(CLOCK_MONOTONIC, &a);
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	t0 = (unsigned long long)hi << 32 | lo;
	(void)nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	t1 = (unsigned long long)hi << 32 | lo;
	ns = (unsigned long long)(b.tv_sec - a.tv_sec) * 1000000000ULL +
	     (unsigned long long)(b.tv_nsec - a.tv_nsec);
	return ns ? (unsigned long)((t1 - t0) * 1000000ULL / ns) : 0;
}

/* Hardware KVM only: a /dev/kvm of another kind (PVM) takes stock kernels and hangs them. */
static bool kvm_usable(void)
{
	int fd;

	if (access("/sys/module/kvm_intel", F_OK) < 0 && access("/sys/module/kvm_amd", F_OK) < 0)
		return false;
	fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static void vm_configure(struct backend_instance *bi, json_t *settings, json_t *secrets,
			 backend_done_cb done, void *ud)
{
	struct vm_data *d = calloc(1, sizeof(*d));
	const char *kernel = json_string_value(json_object_get(settings, "kernel"));
	const char *initrd = json_string_value(json_object_get(settings, "initrd"));
	json_t *mem = json_object_get(settings, "memoryMiB");
	json_t *cpus = json_object_get(settings, "cpus");
	char buf[4096];

	if (!d) {
		done(bi, -ENOMEM, "out of memory", ud);
		return;
	}
	d->memory_mib = json_is_number(mem) ? (unsigned)json_number_value(mem) : 256;
	d->cpus = json_is_number(cpus) ? (unsigned)json_number_value(cpus) : 1;
	if (d->memory_mib < 64 || d->memory_mib > 65536 || d->cpus < 1 || d->cpus > 64) {
		vm_data_free(d);
		done(bi, -EINVAL, "memoryMiB must be 64..65536 and cpus 1..64", ud);
		return;
	}
	if (kernel && *kernel)
		d->kernel = strdup(kernel);
	else {
		const char *state = getenv("XDG_STATE_HOME");

		if (state && *state)
			(void)snprintf(buf, sizeof(buf), "%s/cordon/vm/vmlinux", state);
		else
			(void)snprintf(buf, sizeof(buf), "%s/.local/state/cordon/vm/vmlinux",
				       bi->host->home ? bi->host->home : "/");
		d->kernel = strdup(buf);
	}
	if (initrd && *initrd)
		d->initrd = strdup(initrd);
	else if (d->kernel) {
		const char *slash = strrchr(d->kernel, '/');

		(void)snprintf(buf, sizeof(buf), "%.*s/initramfs.cpio.gz",
			       slash ? (int)(slash - d->kernel) : 1, slash ? d->kernel : ".");
		d->initrd = strdup(buf);
	}
	if (!d->kernel || !d->initrd) {
		vm_data_free(d);
		done(bi, -ENOMEM, "out of memory", ud);
		return;
	}
	bi->data = d;
	done(bi, 0, NULL, ud);
}

static void vm_prepare(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	struct vm_data *d = bi->data;
	char msg[4200];

	if (!d) {
		done(bi, -EINVAL, "not configured", ud);
		return;
	}
	free(d->qemu);
	d->qemu = find_in_path("qemu-system-x86_64");
	if (!d->qemu) {
		done(bi, -ENOENT, "qemu-system-x86_64 not found (package qemu-system-x86)", ud);
		return;
	}
	if (access(d->kernel, R_OK) < 0) {
		(void)snprintf(msg, sizeof(msg),
			       "no guest kernel at %s (backends/vm/fetch-kernel.sh fetches one)",
			       d->kernel);
		done(bi, -ENOENT, msg, ud);
		return;
	}
	if (access(d->initrd, R_OK) < 0) {
		(void)snprintf(msg, sizeof(msg),
			       "no initramfs at %s (backends/vm/mkinitramfs.sh builds it)",
			       d->initrd);
		done(bi, -ENOENT, msg, ud);
		return;
	}
	json_decref(d->hello);
	d->hello = json_incref(bi->host->launcher_hello(bi->host));
	d->kvm = kvm_usable();
	d->tsc_khz = host_tsc_khz();
	log_info("%s: %s, kernel %s, %s", bi->name, d->qemu, d->kernel, d->kvm ? "KVM" : "TCG");
	done(bi, 0, NULL, ud);
}

static json_t *vm_hello(struct backend_instance *bi)
{
	struct vm_data *d = bi->data;

	return d ? d->hello : NULL;
}

static void vm_probe(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	done(bi, 0, NULL, ud);
}

/* --- the relay (runs in the forked child: system calls only) --- */

struct relay {
	char *const *qemu_argv;
	char *const *qemu_envp;
	int io[3];    /* the command's stdin, stdout, stderr (-1: none) */
	int agent;    /* our end of the agent's socketpair */
	int qemu_end; /* QEMU's end: its fd 3 */
	int status;   /* the status pipe */
	int null_fd;
	uint8_t *init; /* the INIT frame; its first 8 payload bytes get the time */
	size_t init_len;
	uint8_t *exec; /* the EXEC frame */
	size_t exec_len;
	uint64_t timeout_ms;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int r_write(int fd, const void *buf, size_t n)
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

static int r_read(int fd, void *buf, size_t n)
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

static void r_frame(int fd, uint8_t type, const void *data, uint32_t len)
{
	uint8_t h[VM_FRAME_HEADER];

	vm_frame_header(h, type, len);
	(void)r_write(fd, h, sizeof(h));
	if (len)
		(void)r_write(fd, data, len);
}

static void r_utoa(char *p, unsigned long v)
{
	char t[24];
	int n = 0;

	do
		t[n++] = (char)('0' + v % 10);
	while (v /= 10);
	while (n)
		*p++ = t[--n];
	*p = 0;
}

_noreturn_ static void relay_end(struct relay *r, pid_t qemu, const char *what, unsigned long a,
				 unsigned long b, bool numbers)
{
	char line[1200], n1[24], n2[24];
	size_t k = 0;

	if (qemu > 0) {
		(void)kill(qemu, SIGKILL);
		(void)waitpid(qemu, NULL, 0);
	}
	for (const char *s = what; *s && k < 1000; s++)
		line[k++] = *s;
	if (numbers) {
		r_utoa(n1, a);
		r_utoa(n2, b);
		line[k++] = ' ';
		for (const char *s = n1; *s; s++)
			line[k++] = *s;
		line[k++] = ' ';
		for (const char *s = n2; *s; s++)
			line[k++] = *s;
	}
	line[k++] = '\n';
	(void)r_write(r->status, line, k);
	_exit(0);
}

_noreturn_ static void relay_run(struct relay *r)
{
	static uint8_t buf[VM_FRAME_MAX > (1 << 17) ? (1 << 17) : VM_FRAME_MAX];
	static const int fwd[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	sigset_t mask;
	int sfd;
	pid_t qemu;
	bool ready = false, in_open = r->io[0] >= 0;
	uint64_t deadline = mono_ms() + VM_BOOT_TIMEOUT_MS;

	/* Nothing of the controller's but what the relay needs (it does not exec). */
	{
		int keep[8] = { r->io[0],    r->io[1],	r->io[2],   r->agent,
				r->qemu_end, r->status, r->null_fd, 2 };
		int from = 3;

		for (size_t i = 0; i < ELEMENTSOF(keep); i++)
			for (size_t j = i + 1; j < ELEMENTSOF(keep); j++)
				if (keep[j] < keep[i]) {
					int t = keep[i];

					keep[i] = keep[j];
					keep[j] = t;
				}
		for (size_t i = 0; i < ELEMENTSOF(keep); i++) {
			if (keep[i] < from)
				continue;
			if (keep[i] > from)
				(void)syscall(SYS_close_range, (unsigned)from,
					      (unsigned)keep[i] - 1, 0U);
			from = keep[i] + 1;
		}
		(void)syscall(SYS_close_range, (unsigned)from, ~0U, 0U);
		if (r->io[0] != 0 && r->io[1] != 0 && r->io[2] != 0)
			(void)dup2(r->null_fd, 0);
		if (r->io[0] != 1 && r->io[1] != 1 && r->io[2] != 1)
			(void)dup2(r->null_fd, 1);
	}
	sigemptyset(&mask);
	for (size_t i = 0; i < ELEMENTSOF(fwd); i++)
		sigaddset(&mask, fwd[i]);
	sigaddset(&mask, SIGCHLD);
	(void)sigprocmask(SIG_SETMASK, &mask, NULL);
	for (int s = 1; s < _NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			(void)signal(s, s == SIGPIPE ? SIG_IGN : SIG_DFL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);

	qemu = fork();
	if (qemu < 0)
		relay_end(r, -1, "error cannot fork QEMU", 0, 0, false);
	if (qemu == 0) {
		sigset_t none;

		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);
		sigemptyset(&none);
		(void)sigprocmask(SIG_SETMASK, &none, NULL);
		(void)setsid();
		if (dup2(r->qemu_end, 3) < 0 || dup2(r->null_fd, 0) < 0 ||
		    dup2(r->null_fd, 1) < 0 || dup2(r->status, 2) < 0)
			_exit(1);
		(void)syscall(SYS_close_range, 4U, ~0U, 0U);
		execve(r->qemu_argv[0], r->qemu_argv, r->qemu_envp);
		_exit(127);
	}
	close(r->qemu_end);

	for (;;) {
		struct pollfd p[3] = {
			{ .fd = r->agent, .events = POLLIN },
			{ .fd = sfd, .events = POLLIN },
			{ .fd = ready && in_open ? r->io[0] : -1, .events = POLLIN },
		};
		uint64_t now = mono_ms();
		int k;

		if (now >= deadline)
			relay_end(r, qemu, ready ? "timeout" : "error the VM did not boot in time",
				  0, 0, false);
		k = poll(p, 3, (int)(deadline - now));
		if (k < 0 && errno != EINTR)
			relay_end(r, qemu, "error poll failed", 0, 0, false);
		if (k <= 0)
			continue;
		if (p[1].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGCHLD) {
				uint8_t s[4];

				if (!ready)
					relay_end(r, qemu, "exit 0", 0, si.ssi_signo, false);
				vm_put32(s, si.ssi_signo);
				r_frame(r->agent, VM_SIGNAL, s, 4);
			} else if (waitpid(qemu, NULL, WNOHANG) == qemu)
				relay_end(r, -1, "error QEMU exited", 0, 0, false);
		}
		if (p[2].fd >= 0 && p[2].revents) {
			ssize_t n = read(r->io[0], buf, 65536);

			if (n > 0)
				r_frame(r->agent, VM_STDIN, buf, (uint32_t)n);
			else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
				r_frame(r->agent, VM_STDIN_EOF, NULL, 0);
				in_open = false;
			}
		}
		if (p[0].revents) {
			uint8_t h[VM_FRAME_HEADER];
			uint32_t len;

			if (r_read(r->agent, h, sizeof(h)) < 0)
				relay_end(r, qemu, "error the VM went away", 0, 0, false);
			len = vm_get32(h + 1);
			if (len > sizeof(buf) || (len && r_read(r->agent, buf, len) < 0))
				relay_end(r, qemu, "error bad frame from the guest", 0, 0, false);
			switch (h[0]) {
			case VM_READY: {
				struct timespec ts;
				uint64_t ns;

				clock_gettime(CLOCK_REALTIME, &ts);
				ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
				vm_put32(r->init + VM_FRAME_HEADER, (uint32_t)(ns >> 32));
				vm_put32(r->init + VM_FRAME_HEADER + 4, (uint32_t)ns);
				(void)r_write(r->agent, r->init, r->init_len);
				(void)r_write(r->agent, r->exec, r->exec_len);
				if (!in_open)
					r_frame(r->agent, VM_STDIN_EOF, NULL, 0);
				(void)r_write(r->status, "ready\n", 6);
				ready = true;
				deadline = r->timeout_ms ? mono_ms() + r->timeout_ms
							 : UINT64_MAX / 2;
				break;
			}
			case VM_STDOUT:
			case VM_STDERR: {
				int fd = r->io[h[0] == VM_STDOUT ? 1 : 2];

				if (fd >= 0)
					(void)r_write(fd, buf, len);
				break;
			}
			case VM_ERROR:
				if (r->io[2] >= 0) {
					(void)r_write(r->io[2], "cordon-vm: ", 11);
					(void)r_write(r->io[2], buf, len);
					(void)r_write(r->io[2], "\n", 1);
				}
				break;
			case VM_EXIT:
				if (len == 8)
					relay_end(r, qemu, "exit", vm_get32(buf), vm_get32(buf + 4),
						  true);
				relay_end(r, qemu, "error bad exit frame", 0, 0, false);
			default:
				break;
			}
		}
	}
}

/* --- the controller's side --- */

static void child_free(struct vm_data *d, struct vm_child *ch)
{
	for (struct vm_child **pp = &d->children; *pp; pp = &(*pp)->next)
		if (*pp == ch) {
			*pp = ch->next;
			break;
		}
	event_source_free(ch->src);
	event_source_free(ch->status_src);
	safe_close(ch->pidfd);
	safe_close(ch->status_fd);
	free(ch);
}

static void status_drain(struct vm_child *ch)
{
	for (;;) {
		ssize_t k;

		if (ch->status_len + 1 >= sizeof(ch->status))
			/* Keep the tail: the relay's own line comes last. */
			memmove(ch->status, ch->status + sizeof(ch->status) / 2,
				ch->status_len -= sizeof(ch->status) / 2);
		k = read(ch->status_fd, ch->status + ch->status_len,
			 sizeof(ch->status) - 1 - ch->status_len);
		if (k <= 0)
			break;
		ch->status_len += (size_t)k;
	}
	ch->status[ch->status_len] = 0;
}

static void spawn_answer(struct vm_child *ch, const char *error)
{
	struct backend_instance *bi = ch->bi;
	backend_spawn_cb cb = TAKE_PTR(ch->cb);

	if (!cb)
		return;
	if (error) {
		_cleanup_json_ json_t *e = json_pack("{s:s,s:i,s:s,s:s,s:s}", "code",
						     "setup-failed", "errno", EIO, "field", "",
						     "step", "vm", "message", error);

		cb(bi, NULL, -1, -1, 0, e, ch->ud);
	} else
		cb(bi, ch->sandbox, fd_dup_cloexec(ch->pidfd, 3), -1, ch->pid, NULL, ch->ud);
}

static int on_status(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct vm_child *ch = userdata;

	status_drain(ch);
	if (ch->cb && strstr(ch->status, "ready\n"))
		spawn_answer(ch, NULL);
	if (revents & (EPOLLHUP | EPOLLERR))
		event_source_free(TAKE_PTR(ch->status_src));
	return 0;
}

static int on_child(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct vm_child *ch = userdata;
	struct backend_instance *bi = ch->bi;
	_cleanup_json_ json_t *exit = NULL;
	siginfo_t si = { 0 };
	char sandbox[32], *line, *end;
	unsigned code = 0, sig = 0;
	const char *reason = "exited";

	if (waitid((idtype_t)P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
		return 0;
	status_drain(ch);
	/* The relay's own line is the last one (QEMU's messages may come before it). */
	end = ch->status + ch->status_len;
	while (end > ch->status && end[-1] == '\n')
		*--end = 0;
	line = strrchr(ch->status, '\n');
	line = line ? line + 1 : ch->status;
	if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED) {
		sig = (unsigned)si.si_status;
		reason = ch->killed ? "killed" : "signaled";
	} else if (sscanf(line, "exit %u %u", &code, &sig) == 2) {
		reason = sig ? "signaled" : "exited";
		if (sig)
			code = 0;
	} else if (streq(line, "timeout")) {
		reason = "timeout";
		sig = SIGKILL;
	} else if (strncmp(line, "error ", 6) == 0) {
		if (ch->cb) {
			log_warning("%s: %s: %s", bi->name, ch->sandbox, ch->status);
			spawn_answer(ch, line + 6);
			child_free(bi->data, ch);
			return 0;
		}
		log_warning("%s: %s: %s", bi->name, ch->sandbox, line + 6);
		reason = "launcher-lost";
		sig = SIGKILL;
	}
	if (ch->cb) {
		/* Ended before the command ran (a signal before the boot finished). */
		spawn_answer(ch, "the VM ended before the command started");
		child_free(bi->data, ch);
		return 0;
	}
	exit = json_pack("{s:s,s:i,s:i,s:i,s:s,s:I,s:{s:b,s:b}}", "sandbox", ch->sandbox, "pid",
			 (int)ch->pid, "exitCode", (int)code, "signal", (int)sig, "reason", reason,
			 "durationUsec", (json_int_t)(now_usec() - ch->start_usec), "limits",
			 "pids", false, "memory", false);
	memcpy(sandbox, ch->sandbox, sizeof(sandbox));
	child_free(bi->data, ch);
	if (exit)
		bi->host->exited(bi->host, bi, sandbox, exit);
	return 0;
}

/* fd index named by plan.stdio.<name>, or -1. */
static int stdio_fd(json_t *plan, const char *name, const int *fds, size_t n_fds)
{
	json_t *v = json_object_get(json_object_get(plan, "stdio"), name);
	json_int_t k = json_is_integer(v) ? json_integer_value(v) : -1;

	return k >= 0 && (size_t)k < n_fds ? fds[k] : -1;
}

/* A growing byte buffer for the frames. */
struct bytes {
	uint8_t *d;
	size_t len, cap;
	bool oom;
};

static void bytes_add(struct bytes *b, const void *p, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = (b->len + n) * 2;
		uint8_t *d = realloc(b->d, cap);

		if (!d) {
			b->oom = true;
			return;
		}
		b->d = d;
		b->cap = cap;
	}
	memcpy(b->d + b->len, p, n);
	b->len += n;
}

static void bytes_str(struct bytes *b, const char *s)
{
	bytes_add(b, s, strlen(s) + 1);
}

/* A path as a QEMU option value: commas doubled. */
static char *qemu_escape(const char *s)
{
	size_t n = 0;
	char *r, *p;

	for (const char *t = s; *t; t++)
		n += *t == ',' ? 2 : 1;
	r = p = malloc(n + 1);
	if (!r)
		return NULL;
	for (const char *t = s; *t; t++) {
		*p++ = *t;
		if (*t == ',')
			*p++ = ',';
	}
	*p = 0;
	return r;
}

static int vm_spawn(struct backend_instance *bi, const struct backend_spawn *req,
		    backend_spawn_cb cb, void *ud)
{
	struct vm_data *d = bi->data;
	const struct backend_workspace *ws = req->workspace;
	_cleanup_strv_free_ char **argv = NULL, **envp = NULL, **qargv = NULL;
	_cleanup_free_ char *append = NULL, *fsdev = NULL, *wpath = NULL;
	struct bytes init = { 0 }, exec = { 0 };
	struct field_error fe;
	const char *cwd = NULL;
	uint64_t timeout_ms = 0;
	struct relay rl = { 0 };
	struct vm_child *ch = NULL;
	int sv[2] = { -1, -1 }, st[2] = { -1, -1 }, null_fd = -1, pidfd = -1, r;
	bool has_ws = ws && ws->host_path && ws->mount_point;
	size_t argc = 0, envc = 0, nq = 0;
	uint8_t hdr[VM_FRAME_HEADER] = { 0 }, ent[32];
	pid_t parent = getpid();
	static char qpath[] = "PATH=/usr/bin:/bin";
	char *qenvp[] = { qpath, NULL };
	pid_t pid;

	if (!d || !d->qemu)
		return -ENODEV;
	r = ipc_json_get_strv(req->plan, "argv", true, 4096, 128 * 1024, "plan", &argv, &fe);
	if (r >= 0)
		r = ipc_json_get_strv(req->plan, "envp", false, 4096, 128 * 1024, "plan", &envp,
				      &fe);
	if (r >= 0)
		r = ipc_json_get_string(req->plan, "cwd", false, "plan", &cwd, &fe);
	if (r >= 0)
		r = ipc_json_get_uint64(req->plan, "timeoutMs", false, 0, UINT64_C(1) << 40, "plan",
					&timeout_ms, &fe);
	if (r < 0)
		return r;
	if (getrandom(ent, sizeof(ent), 0) != (ssize_t)sizeof(ent))
		return -errno;

	/* INIT: time (filled by the relay), flags, entropy, mount point. */
	{
		uint8_t fixed[10] = { 0 };

		fixed[8] = has_ws ? (uint8_t)(VM_INIT_WORKSPACE |
					      (ws->read_only ? VM_INIT_READ_ONLY : 0))
				  : 0;
		fixed[9] = sizeof(ent);
		bytes_add(&init, hdr, sizeof(hdr));
		bytes_add(&init, fixed, sizeof(fixed));
		bytes_add(&init, ent, sizeof(ent));
		bytes_str(&init, has_ws ? ws->mount_point : "");
		explicit_bzero(ent, sizeof(ent));
	}
	/* EXEC: counts, cwd, argv, env. */
	for (; argv[argc]; argc++)
		;
	for (; envp && envp[envc]; envc++)
		;
	{
		uint8_t counts[8];

		vm_put32(counts, (uint32_t)argc);
		vm_put32(counts + 4, (uint32_t)envc);
		bytes_add(&exec, hdr, sizeof(hdr));
		bytes_add(&exec, counts, sizeof(counts));
		bytes_str(&exec, cwd ? cwd : "/");
		for (size_t i = 0; i < argc; i++)
			bytes_str(&exec, argv[i]);
		for (size_t i = 0; i < envc; i++)
			bytes_str(&exec, envp[i]);
	}
	r = -ENOMEM;
	if (init.oom || exec.oom || init.len - VM_FRAME_HEADER > VM_FRAME_MAX ||
	    exec.len - VM_FRAME_HEADER > VM_FRAME_MAX)
		goto fail;
	vm_frame_header(init.d, VM_INIT, (uint32_t)(init.len - VM_FRAME_HEADER));
	vm_frame_header(exec.d, VM_EXEC, (uint32_t)(exec.len - VM_FRAME_HEADER));

	/* QEMU's command line. */
	if (asprintf(&append,
		     "console=ttyS0 quiet panic=-1 tsc_early_khz=%lu tsc=reliable "
		     "cryptomgr.notests initcall_blacklist=crypto_kdf108_init,init_kprobe_trace",
		     d->tsc_khz) < 0) {
		append = NULL;
		goto fail;
	}
	qargv = calloc(48, sizeof(char *));
	if (!qargv)
		goto fail;
#define Q(s)                                    \
	do {                                    \
		if (!(qargv[nq++] = strdup(s))) \
			goto fail;              \
	} while (0)
#define QF(...)                                                \
	do {                                                   \
		if (asprintf(&qargv[nq++], __VA_ARGS__) < 0) { \
			qargv[--nq] = NULL;                    \
			goto fail;                             \
		}                                              \
	} while (0)
	Q(d->qemu);
	Q("-M");
	Q("microvm");
	Q("-accel");
	Q(d->kvm ? "kvm" : "tcg");
	Q("-cpu");
	Q(d->kvm ? "host" : "max");
	Q("-m");
	QF("%u", d->memory_mib);
	Q("-smp");
	QF("%u", d->cpus);
	Q("-nodefaults");
	Q("-no-user-config");
	Q("-display");
	Q("none");
	Q("-no-reboot");
	Q("-serial");
	Q("none");
	Q("-kernel");
	Q(d->kernel);
	Q("-initrd");
	Q(d->initrd);
	Q("-append");
	Q(append);
	Q("-device");
	Q("virtio-serial-device");
	Q("-device");
	Q("virtserialport,chardev=agent,name=agent");
	Q("-chardev");
	Q("socket,id=agent,fd=3");
	if (has_ws) {
		wpath = qemu_escape(ws->host_path);
		if (!wpath)
			goto fail;
		Q("-fsdev");
		QF("local,id=ws,path=%s,security_model=none%s", wpath,
		   ws->read_only ? ",readonly=on" : "");
		Q("-device");
		Q("virtio-9p-device,fsdev=ws,mount_tag=ws");
	}
	Q("-sandbox");
	Q("on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
#undef Q
#undef QF

	r = -errno;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(st, O_CLOEXEC) < 0)
		goto fail;
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0)
		goto fail;
	ch = calloc(1, sizeof(*ch));
	r = -ENOMEM;
	if (!ch)
		goto fail;
	rl = (struct relay){
		.qemu_argv = qargv,
		.qemu_envp = qenvp,
		.io = { stdio_fd(req->plan, "stdin", req->fds, req->n_fds),
			stdio_fd(req->plan, "stdout", req->fds, req->n_fds),
			stdio_fd(req->plan, "stderr", req->fds, req->n_fds) },
		.agent = sv[0],
		.qemu_end = sv[1],
		.status = st[1],
		.null_fd = null_fd,
		.init = init.d,
		.init_len = init.len,
		.exec = exec.d,
		.exec_len = exec.len,
		.timeout_ms = timeout_ms,
	};
	{
		struct clone_args {
			unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack,
				stack_size, tls;
		} ca = { .flags = 0x00001000ULL /* CLONE_PIDFD */,
			 .pidfd = (unsigned long long)(uintptr_t)&pidfd,
			 .exit_signal = SIGCHLD };

		pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	}
	if (pid < 0) {
		r = -errno;
		goto fail;
	}
	if (pid == 0) {
		/* Its own process group, so that a terminal's signals reach it only through
		 * the core; and it ends with the controller (QEMU with it). */
		(void)setpgid(0, 0);
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		relay_run(&rl);
	}
	safe_close(sv[0]);
	safe_close(sv[1]);
	safe_close(st[1]);
	safe_close(null_fd);
	free(init.d);
	free(exec.d);
	ch->bi = bi;
	ch->pid = pid;
	ch->pidfd = pidfd;
	ch->status_fd = st[0];
	ch->cb = cb;
	ch->ud = ud;
	ch->start_usec = now_usec();
	(void)fcntl(st[0], F_SETFL, O_NONBLOCK);
	(void)snprintf(ch->sandbox, sizeof(ch->sandbox), "vm-%llu", ++d->next);
	r = event_add_io(bi->host->loop, pidfd, EPOLLIN, on_child, ch, &ch->src);
	if (r >= 0)
		r = event_add_io(bi->host->loop, st[0], EPOLLIN, on_status, ch, &ch->status_src);
	if (r < 0) {
		(void)kill(pid, SIGKILL);
		(void)waitid((idtype_t)P_PIDFD, (id_t)pidfd, &(siginfo_t){ 0 }, WEXITED);
		event_source_free(ch->src);
		event_source_free(ch->status_src);
		safe_close(pidfd);
		safe_close(st[0]);
		free(ch);
		return r;
	}
	ch->next = d->children;
	d->children = ch;
	return 0;

fail:
	free(init.d);
	free(exec.d);
	free(ch);
	safe_close(sv[0]);
	safe_close(sv[1]);
	safe_close(st[0]);
	safe_close(st[1]);
	safe_close(null_fd);
	return r;
}

static int vm_kill(struct backend_instance *bi, const char *sandbox, int sig)
{
	struct vm_data *d = bi->data;

	for (struct vm_child *ch = d ? d->children : NULL; ch; ch = ch->next)
		if (streq(ch->sandbox, sandbox)) {
			/* SIGKILL ends the relay, and QEMU with it (its parent-death signal);
			 * other signals the relay forwards to the command. */
			if (sig == SIGKILL)
				ch->killed = true;
			if (syscall(SYS_pidfd_send_signal, ch->pidfd, sig, NULL, 0) < 0)
				return -errno;
			return 0;
		}
	return -ESRCH;
}

static int vm_dispose(struct backend_instance *bi)
{
	struct vm_data *d = bi->data;

	while (d && d->children) {
		struct vm_child *ch = d->children;

		(void)syscall(SYS_pidfd_send_signal, ch->pidfd, SIGKILL, NULL, 0);
		(void)waitid((idtype_t)P_PIDFD, (id_t)ch->pidfd, &(siginfo_t){ 0 }, WEXITED);
		if (ch->cb)
			spawn_answer(ch, "the backend was disposed");
		child_free(d, ch);
	}
	return 0;
}

static void vm_free(struct backend_instance *bi)
{
	(void)vm_dispose(bi);
	vm_data_free(bi->data);
	bi->data = NULL;
}

const struct backend_ops backend_vm_ops = {
	.source = "builtin",
	.kind = "vm",
	.confined = true,
	.descriptor = vm_descriptor,
	.configure = vm_configure,
	.prepare = vm_prepare,
	.probe = vm_probe,
	.hello = vm_hello,
	.spawn = vm_spawn,
	.kill = vm_kill,
	.dispose = vm_dispose,
	.free = vm_free,
};
