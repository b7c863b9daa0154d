/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * builtin:vm — commands run in QEMU micro-VMs (-M microvm, no NIC, -sandbox on) whose PID 1 is
 * the guest agent (guest/agent.c). A lease (acquire) boots one VM that runs all of the lease's
 * processes, at once, until release; a one-shot spawn boots a VM of its own, gone before its
 * exit is reported. Only ever selected by an explicit activation (never by auto, never as a
 * fallback).
 *
 * Each VM has a keeper: a process forked from the controller that starts QEMU with one end of a
 * socketpair as the virtio-serial port "agent", waits for READY within the boot deadline, sends
 * INIT (wall clock, entropy, workspace), and then multiplexes the VM's commands over the port
 * (vm-proto.h): each EXEC comes from the controller over the keeper's control socket with the
 * command's stdin, stdout and stderr attached (SCM_RIGHTS); the keeper moves their bytes to and
 * from the agent's frames and forwards signals and exits. The keeper runs between fork and exit
 * in a possibly threaded process, so it only makes system calls, on static buffers or ones built
 * before the fork. QEMU dies with it (PR_SET_PDEATHSIG); on release the keeper kills QEMU by pid
 * and reaps it before it exits. A VM that dies on its own ends its commands (reason
 * launcher-lost), and a lease whose VM died is lost: a backend-lease-lost event, and its later
 * spawns fail saying why.
 *
 * Network "proxy" (the guest still has no NIC): every VM has a second port, "net", whose host end
 * the controller serves here (forward-mux.h): a command with network "proxy" gets a Unix listener
 * that the core serves with the allowed-domains proxy, and the guest's forwarder (the helper
 * `forward`, fetched on the first such spawn) carries each connection to 127.0.0.1:3128 in the
 * guest over the port; each becomes one connection to that listener (backends/vm/README.md).
 *
 * Timeouts and kills are the controller's: a SIGNAL to the guest (SIGKILL for a timeout), the
 * reason from what was asked.
 *
 * The plan's limits and seccomp program go with each command (VK_GUARD, the agent's GUARD): the
 * agent runs it in a cgroup of its own and loads the program before the exec, reports a limit
 * hit (LIMIT, in the exit's limits) and the refusals its filter logged (DENIAL: a "denial"
 * event, rate-limited per command as launcherd's). See README.md, "The guard".
 *
 * The workspace is shared over virtio-9p at its host path ("direct": the plan's cwd holds
 * unchanged), exported read-only when the policy says so; a lease's access is fixed at acquire,
 * and a read-only command in a read-write lease gets a read-only bind of its own in the guest.
 * QEMU runs as the controller's user. The accelerator is TCG (tsc_early_khz from the host,
 * since PIT calibration hangs under TCG), or KVM where kvm_intel or kvm_amd is loaded and
 * /dev/kvm opens.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/vm/vm-paths.h"
#include "backends/vm/vm-baseline.h"
#include "backends/vm/forward-mux.h"
#include "backends/vm/vm-proto.h"
#include "backends/vm/vm.h"
#include "common/event.h"
#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/seccomp-action.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-json.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define VM_BOOT_TIMEOUT_MS 60000

/* The keeper's control frames (u8 type | u32 length | payload, as vm-proto.h's). */
enum {
	/* controller -> keeper */
	VK_EXEC = 'X',	 /* u8 fd mask (stdin 1, stdout 2, stderr 4; the fds attached in that
			  * order), the agent's EXEC payload */
	VK_SIGNAL = 's', /* the agent's SIGNAL payload */
	VK_QUIT = 'q',	 /* kill QEMU, reap it, exit */
	/* keeper -> controller */
	VK_READY = 'R', /* u32 ms from QEMU's start, u32 guest boot ms at READY */
	VK_EXIT = 'x',	/* the agent's EXIT payload */
	VK_ERROR = 'E', /* text about the VM (not a command's) */
	VK_LOST = 'L',	/* text: why the VM is gone; the keeper exits */
	/* u8 what ('s' saved, 'f' not saved, 'r' restored, 'i' invalid: booting cold), u32 ms,
	 * u32 KiB, text (the key, or why) */
	VK_BASELINE = 'B',
	/* controller -> keeper: the agent's GUARD payload, just before the command's VK_EXEC */
	VK_GUARD = 'G',
	/* keeper -> controller: the agent's LIMIT and DENIAL payloads */
	VK_LIMIT = 'l',
	VK_DENIAL = 'd',
};

/* Denials reported per command and second (as launcherd's, docs/DENIALS.md); the rest counted
 * and reported as {"suppressed": K}. */
#define VM_DENIALS_PER_SEC 10

/* The commands one VM runs at once (the keeper's static table). */
#define VM_MAX_PROCS 64

struct vm_keeper;

/* A command in a VM. */
struct vm_proc {
	struct vm_proc *next;
	struct vm_keeper *k;
	uint32_t id;
	char sandbox[32];
	backend_spawn_cb cb; /* a one-shot's, until its VM is ready */
	void *ud;
	uint8_t *msg; /* a one-shot's VK_EXEC frame, until its VM is ready */
	size_t msg_len;
	int fds[3];
	uint8_t fd_mask;
	uint64_t timeout_ms;
	struct event_source *timer;
	/* The agent's GUARD payload (the plan's limits and seccomp program), or NULL. */
	uint8_t *guard;
	size_t guard_len;
	uint8_t limits_hit; /* VM_LIMIT_* */
	unsigned long long denial_window_usec;
	unsigned denials_in_window;
	unsigned long denials_suppressed;
	struct event_source *denial_timer; /* reports the suppressed count when the second ends */
	unsigned long long start_usec, sent_usec;
	bool sent, killed, timed_out;
	/* Network "proxy": the listener the controller serves for this command (handed over with
	 * the spawn's answer) and its socket's directory (0700, the controller's user's): the
	 * guest's connections are connected to it. NULL: network "none". */
	int proxy_fd;
	char *net_dir;
	/* A one-shot waiting for the forwarder's fetch (vm_data.net_wait): its workspace. */
	char *wait_path, *wait_mount;
	bool wait_ws, wait_ro;
};

/* A VM: a lease's, or a one-shot's. */
struct vm_keeper {
	struct vm_keeper *next;
	struct backend_instance *bi;
	char lease[128]; /* "" for a one-shot */
	pid_t pid;
	int pidfd, ctl, status_fd;
	struct event_source *pid_src, *ctl_src, *status_src, *release_timer;
	uint8_t *rbuf; /* control frames read, not yet handled */
	size_t rlen, rcap;
	char status[1024]; /* the tail of QEMU's stderr */
	size_t status_len;
	char reason[512]; /* why the VM is gone */
	bool has_ws, read_only;
	bool has_forward; /* booted with the forwarder in its initramfs (network "proxy") */
	bool ready, ended, quitting;
	uint32_t next_id;
	unsigned long long t_start;
	backend_acquire_cb acquired;
	backend_done_cb released;
	void *cb_ud;
	/* A one-shot's command, and its exit once the VM is gone. */
	struct vm_proc *oneshot;
	json_t *oneshot_exit;
	/* The port "net" (network "proxy", forward-mux.h): the guest's connections. */
	int net_fd;
	struct event_source *net_src;
	uint32_t net_events;
	struct fwd_mux mux;
};

struct vm_data {
	struct vm_keeper *keepers;
	struct vm_proc *procs;
	unsigned long long next;
	char *qemu;
	char *kernel;
	char *initrd;
	bool initrd_default;	/* initramfs.cpio.gz beside the kernel: built here from the agent */
	char *helpers_dir;	/* <vmDir>/bin: the guest helpers, fetched and verified */
	char *helpers_base_url; /* NULL: cordon-vm-helpers' built-in release mirror */
	struct vm_prep *prep;	/* prepare's child under way, or the forwarder's fetch */
	struct vm_proc *net_wait; /* one-shots with network "proxy" waiting for that fetch */
	unsigned memory_mib;
	unsigned cpus;
	bool kvm;
	unsigned long tsc_khz;
	/* The OS launcher's hello when this instance was prepared: the capabilities the policy
	 * compiler holds a plan against (as for a pack). */
	json_t *hello;
	struct vmb_config *bl; /* snapshot baselines (vm-baseline.c), or NULL: off */
};

static json_t *vm_descriptor(const struct backend_ops *ops)
{
	json_t *desc = json_pack(
		"{s:s,s:s,s:s,"
		"s:{s:[{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i},"
		"{s:s,s:s,s:s,s:s}]},"
		"s:{s:[s],s:s,s:[s,s,s,s],s:b,s:s,s:[s,s]}}",
		"kind", "vm", "name", "QEMU micro-VM", "description",
		"Runs commands in QEMU micro-VMs: one VM for a sandbox lease and all its "
		"processes, a fresh one for every one-shot command; its own kernel, no network "
		"device (network proxy: the guest's connections to its proxy port are carried to "
		"the allowed-domains proxy over a virtio-serial port), the workspace shared over "
		"virtio-9p (read-only when the policy says so).",
		"settings", "fields", "id", "kernel", "type", "string", "label", "Guest kernel",
		"description",
		"An uncompressed PVH vmlinux (cordon vm setup); initramfs.cpio.gz "
		"beside it. Default: the state directory's cordon/vm/vmlinux.",
		"id", "initrd", "type", "string", "label", "Initramfs", "description",
		"The guest agent's initramfs (backends/vm/mkinitramfs.sh). Default: "
		"initramfs.cpio.gz beside the kernel, built from the fetched agent.",
		"id", "memoryMiB", "type", "number", "label", "Memory (MiB)", "defaultValue", 256,
		"id", "cpus", "type", "number", "label", "vCPUs", "defaultValue", 1, "id",
		"helpersBaseUrl", "type", "string", "label", "Guest helpers' base URL",
		"description",
		"Where the guest helpers are fetched from on first use (https:, http:, file:) into "
		"bin/ beside the kernel; each is verified against the sha256 this cordon was built "
		"with. Default: the release mirror cordon was built with.",
		/* limits and syscalls: the guard (GUARD, guest/agent.c) applies the plan's limits
		 * (a cgroup of the command's own) and its syscall filter in the guest. */
		"claims", "platforms", "linux", "isolation", "vm", "enforces", "filesystem",
		"network", "limits", "syscalls", "readOnlyWorkspace", true, "workspace", "direct",
		"networkModes", "none", "proxy");

	vmb_descriptor_fields(desc);
	return desc;
}

static void vm_data_free(struct vm_data *d)
{
	if (!d)
		return;
	free(d->qemu);
	free(d->kernel);
	free(d->initrd);
	free(d->helpers_dir);
	free(d->helpers_base_url);
	json_decref(d->hello);
	vmb_config_free(d->bl);
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

/* The host TSC frequency in kHz from a source that gives the same value every time, or 0: the
 * kernel's (sysfs, on kernels that export it), the CPU's (CPUID leaf 0x15: crystal clock and
 * ratio; else 0x16: base MHz), a hypervisor's (leaf 0x40000010, VMware's and KVM's timing
 * leaf), or /proc/cpuinfo's "cpu MHz" where no cpufreq driver makes it the current frequency
 * (then it is the kernel's calibrated cpu_khz). */
static unsigned long stable_tsc_khz(void)
{
	unsigned a, b, c, d, max;
	unsigned long khz = 0;
	char line[256];
	FILE *f;

	f = fopen("/sys/devices/system/cpu/cpu0/tsc_freq_khz", "re");
	if (f) {
		if (fscanf(f, "%lu", &khz) != 1)
			khz = 0;
		fclose(f);
		if (khz)
			return khz;
	}
	__asm__ volatile("cpuid" : "=a"(max), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
	if (max >= 0x15) {
		__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x15), "c"(0));
		if (a && b && c)
			return (unsigned long)((unsigned long long)c * b / a / 1000);
	}
	if (max >= 0x16) {
		__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x16), "c"(0));
		if (a & 0xffff)
			return (unsigned long)(a & 0xffff) * 1000;
	}
	__asm__ volatile("cpuid" : "=a"(max), "=b"(b), "=c"(c), "=d"(d) : "a"(0x40000000), "c"(0));
	if (max >= 0x40000010 && max < 0x40000100) {
		__asm__ volatile("cpuid"
				 : "=a"(a), "=b"(b), "=c"(c), "=d"(d)
				 : "a"(0x40000010), "c"(0));
		if (a)
			return a;
	}
	if (access("/sys/devices/system/cpu/cpu0/cpufreq", F_OK) == 0)
		return 0;
	f = fopen("/proc/cpuinfo", "re");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long mhz, frac = 0;

		if (sscanf(line, "cpu MHz : %lu.%3lu", &mhz, &frac) >= 1) {
			khz = mhz * 1000 + frac;
			break;
		}
	}
	if (f)
		fclose(f);
	return khz;
}

/* The host TSC frequency in kHz, for the guest's tsc_early_khz: from a stable source (above),
 * else a short calibration of the TSC against CLOCK_MONOTONIC (a little different each time;
 * the baseline manifest leaves the value out, vm-baseline.c). */
static unsigned long host_tsc_khz(void)
{
	struct timespec a, b;
	unsigned long long t0, t1, ns;
	unsigned long khz = stable_tsc_khz();
	unsigned lo, hi;

	if (khz)
		return khz;
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
	const char *base_url = json_string_value(json_object_get(settings, "helpersBaseUrl"));
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
		d->initrd_default = true;
	}
	/* <vmDir>: the kernel's directory; the helpers go to its bin/. */
	if (d->kernel) {
		const char *slash = strrchr(d->kernel, '/');

		(void)snprintf(buf, sizeof(buf), "%.*s/bin", slash ? (int)(slash - d->kernel) : 1,
			       slash ? d->kernel : ".");
		d->helpers_dir = strdup(buf);
	}
	if (!isempty(base_url))
		d->helpers_base_url = strdup(base_url);
	if (!d->kernel || !d->initrd || !d->helpers_dir ||
	    (!isempty(base_url) && !d->helpers_base_url)) {
		vm_data_free(d);
		done(bi, -ENOMEM, "out of memory", ud);
		return;
	}
	{
		const char *err = "out of memory";
		int r = vmb_configure(settings, bi->host->home, geteuid(), &d->bl, &err);

		if (r < 0) {
			vm_data_free(d);
			done(bi, r, err, ud);
			return;
		}
	}
	bi->data = d;
	done(bi, 0, NULL, ud);
}

/*
 * prepare: the guest helpers are fetched (or found) and verified by cordon-vm-helpers, then the
 * default initramfs is built from the agent when it is missing or older (mkinitramfs.sh). Each
 * is a child of ours, watched from the loop (its exit by pidfd, the tail of its stderr by a
 * pipe): nothing blocks. The instance freed meanwhile kills the child.
 */
struct vm_prep {
	struct backend_instance *bi;
	backend_done_cb done;
	void *ud;
	bool initramfs; /* the second step: mkinitramfs.sh */
	bool net;	/* not prepare's: the forwarder's fetch for a spawn with network "proxy" */
	pid_t pid;
	int pidfd, err_fd;
	struct event_source *pid_src, *err_src;
	char err[1024]; /* the tail of its stderr */
	size_t err_len;
};

static void prep_drain(struct vm_prep *p)
{
	for (;;) {
		ssize_t n;

		if (p->err_fd < 0)
			return;
		if (p->err_len + 1 >= sizeof(p->err))
			/* Keep the tail. */
			memmove(p->err, p->err + sizeof(p->err) / 2,
				p->err_len -= sizeof(p->err) / 2);
		n = read(p->err_fd, p->err + p->err_len, sizeof(p->err) - 1 - p->err_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0) { /* EOF */
				event_source_free(TAKE_PTR(p->err_src));
				p->err_fd = safe_close(p->err_fd);
			}
			break;
		}
		p->err_len += (size_t)n;
	}
	p->err[p->err_len] = 0;
}

/* Kill the child if it still runs (its process group: mkinitramfs.sh's pipeline too), reap it,
 * and free p. */
static void prep_free(struct vm_prep *p)
{
	if (!p)
		return;
	event_source_free(p->pid_src);
	event_source_free(p->err_src);
	if (p->pidfd >= 0) {
		(void)syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
		(void)kill(-p->pid, SIGKILL);
		(void)waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &(siginfo_t){ 0 }, WEXITED);
		safe_close(p->pidfd);
	}
	safe_close(p->err_fd);
	free(p);
}

static int on_prep_exit(struct event_source *s, int fd, uint32_t revents, void *userdata);
static int on_prep_err(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	prep_drain(userdata);
	return 0;
}

/* Start argv[0] with stdin and stdout on /dev/null and stderr into p->err. */
static int prep_spawn(struct vm_prep *p, char *const *argv)
{
	struct backend_instance *bi = p->bi;
	int st[2] = { -1, -1 }, null_fd, pidfd = -1, r;
	pid_t parent = getpid(), pid;

	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0)
		return -errno;
	if (pipe2(st, O_CLOEXEC) < 0) {
		r = -errno;
		safe_close(null_fd);
		return r;
	}
	pid = fork_pidfd(&pidfd);
	if (pid == 0) {
		/* (system calls only: the controller may be threaded) */
		(void)setpgid(0, 0);
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent || dup2(null_fd, STDIN_FILENO) < 0 ||
		    dup2(null_fd, STDOUT_FILENO) < 0 || dup2(st[1], STDERR_FILENO) < 0)
			_exit(127);
		execv(argv[0], argv);
		/* (the reason prepare reports) */
		(void)!write(STDERR_FILENO, "cannot run ", 11);
		(void)!write(STDERR_FILENO, argv[0], strlen(argv[0]));
		(void)!write(STDERR_FILENO, "\n", 1);
		_exit(127);
	}
	r = pid < 0 ? (int)pid : 0;
	safe_close(null_fd);
	safe_close(st[1]);
	if (r < 0) {
		safe_close(st[0]);
		return r;
	}
	p->pid = pid;
	p->pidfd = pidfd;
	p->err_fd = st[0];
	p->err_len = 0;
	p->err[0] = 0;
	(void)fcntl(st[0], F_SETFL, O_NONBLOCK);
	r = event_add_io(bi->host->loop, pidfd, EPOLLIN, on_prep_exit, p, &p->pid_src);
	if (r >= 0)
		r = event_add_io(bi->host->loop, st[0], EPOLLIN, on_prep_err, p, &p->err_src);
	return r;
}

/* The last line of the child's stderr, without the program's prefix. */
static const char *prep_reason(struct vm_prep *p)
{
	char *line = p->err;
	size_t n = p->err_len;

	while (n > 0 && (p->err[n - 1] == '\n' || p->err[n - 1] == '\r'))
		p->err[--n] = 0;
	for (size_t i = n; i > 0; i--)
		if (p->err[i - 1] == '\n') {
			line = p->err + i;
			break;
		}
	if (strncmp(line, "cordon-vm-helpers: ", 19) == 0)
		line += 19;
	return line;
}

/* The end of prepare: p goes, then done (which may free the instance). */
/* The capabilities a plan for the guest is compiled against: the OS launcher's (its admin
 * floor, what it can check), with what the guest's agent provides whatever the host's launcher
 * has: a cgroup v2 per command and seccomp (the guard). NULL without a launcher. */
static json_t *vm_guest_hello(json_t *host)
{
	json_t *h = host ? json_deep_copy(host) : NULL;

	if (h && (json_object_set_new(h, "cgroup", json_string("v2")) < 0 ||
		  json_object_set_new(h, "seccomp", json_true()) < 0)) {
		json_decref(h);
		return NULL;
	}
	return h;
}

static void prep_finish(struct vm_prep *p, int r, const char *message)
{
	struct backend_instance *bi = p->bi;
	struct vm_data *d = bi->data;
	backend_done_cb done = p->done;
	void *ud = p->ud;

	d->prep = NULL;
	if (p->net) {
		prep_free(p);
		done(bi, r, message, ud);
		return;
	}
	prep_free(p);
	if (r >= 0) {
		json_decref(d->hello);
		d->hello = vm_guest_hello(bi->host->launcher_hello(bi->host));
		d->kvm = kvm_usable();
		d->tsc_khz = host_tsc_khz();
		if (d->bl)
			vmb_evict(d->bl); /* what a save killed with a previous controller left */
		log_info("%s: %s, kernel %s, helpers in %s, %s", bi->name, d->qemu, d->kernel,
			 d->helpers_dir, d->kvm ? "KVM" : "TCG");
	}
	done(bi, r, message, ud);
}

/* Whether the default initramfs must be (re)built: missing, or older than the agent or the
 * forwarder (when there is one). */
static bool initramfs_stale(struct vm_data *d, const char *agent, const char *forward)
{
	struct stat a, i;

	if (stat(d->initrd, &i) < 0 || stat(agent, &a) < 0)
		return true;
	if (i.st_mtim.tv_sec < a.st_mtim.tv_sec ||
	    (i.st_mtim.tv_sec == a.st_mtim.tv_sec && i.st_mtim.tv_nsec < a.st_mtim.tv_nsec))
		return true;
	return forward && initramfs_stale(d, forward, NULL);
}

/* <vmDir>/bin/forward, when it was fetched (malloc'd), or NULL. */
static char *forward_path(struct vm_data *d)
{
	char *f;

	if (asprintf(&f, "%s/forward", d->helpers_dir) < 0)
		return NULL;
	if (access(f, F_OK) < 0) {
		free(f);
		return NULL;
	}
	return f;
}

static int on_prep_exit(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct vm_prep *p = userdata;
	struct vm_data *d = p->bi->data;
	siginfo_t si = { 0 };
	char msg[2048];
	bool ok;
	int r;

	if (waitid((idtype_t)P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
		return 0;
	/* Reaped: what it wrote last is in the pipe (a grandchild may still hold it: not waited
	 * for). */
	event_source_free(TAKE_PTR(p->pid_src));
	p->pidfd = safe_close(p->pidfd);
	prep_drain(p);
	event_source_free(TAKE_PTR(p->err_src));
	p->err_fd = safe_close(p->err_fd);
	ok = si.si_code == CLD_EXITED && si.si_status == 0;
	if (!p->initramfs) {
		_cleanup_free_ char *agent = NULL, *vmdir = NULL, *forward = NULL;
		const char *slash = strrchr(d->kernel, '/');

		if (!ok) {
			const char *why = prep_reason(p);

			if (*why)
				(void)snprintf(msg, sizeof(msg), "%s", why);
			else
				(void)snprintf(msg, sizeof(msg),
					       "cordon-vm-helpers failed (status %d) fetching the "
					       "guest %s into %s",
					       si.si_status, p->net ? "forwarder" : "agent",
					       d->helpers_dir);
			prep_finish(p, strstr(msg, "pin") ? -EBADMSG : -EIO, msg);
			return 0;
		}
		if (asprintf(&agent, "%s/agent", d->helpers_dir) < 0)
			agent = NULL;
		if (asprintf(&vmdir, "%.*s", slash ? (int)(slash - d->kernel) : 1,
			     slash ? d->kernel : ".") < 0)
			vmdir = NULL;
		if (!agent || !vmdir) {
			prep_finish(p, -ENOMEM, "out of memory");
			return 0;
		}
		forward = forward_path(d);
		if (!d->initrd_default || !initramfs_stale(d, agent, forward)) {
			prep_finish(p, 0, NULL);
			return 0;
		}
		{
			const char *script = getenv("CORDON_VM_MKINITRAMFS");
			char *argv[7] = { (char *)"/bin/sh" };

			argv[1] = (char *)(!isempty(script) ? script
							    : VM_SCRIPTS_DIR "/mkinitramfs.sh");
			argv[2] = agent;
			argv[3] = vmdir;
			argv[4] = d->initrd;
			argv[5] = forward;
			log_info("%s: building %s from %s%s%s", p->bi->name, d->initrd, agent,
				 forward ? " and " : "", forward ? forward : "");
			p->initramfs = true;
			r = prep_spawn(p, argv);
		}
		if (r < 0) {
			(void)snprintf(msg, sizeof(msg), "cannot run mkinitramfs.sh: %s",
				       strerror(-r));
			prep_finish(p, r, msg);
		}
		return 0;
	}
	if (!ok) {
		(void)snprintf(msg, sizeof(msg), "the initramfs %s could not be built: %s",
			       d->initrd,
			       *prep_reason(p) ? prep_reason(p) : "mkinitramfs.sh failed");
		prep_finish(p, -EIO, msg);
		return 0;
	}
	prep_finish(p, 0, NULL);
	return 0;
}

static void vm_prepare(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	struct vm_data *d = bi->data;
	struct vm_prep *p;
	const char *tool = getenv("CORDON_VM_HELPERS");
	char msg[4200];
	char *argv[9];
	size_t n = 0;
	int r;

	if (!d) {
		done(bi, -EINVAL, "not configured", ud);
		return;
	}
	if (d->prep) {
		done(bi, -EBUSY, "already being prepared", ud);
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
			       "no guest kernel at %s (cordon vm setup fetches one)", d->kernel);
		done(bi, -ENOENT, msg, ud);
		return;
	}
	/* An initramfs of one's own carries its own agent: nothing to fetch for it. */
	if (!d->initrd_default) {
		if (access(d->initrd, R_OK) < 0) {
			(void)snprintf(msg, sizeof(msg),
				       "no initramfs at %s (backends/vm/mkinitramfs.sh builds it)",
				       d->initrd);
			done(bi, -ENOENT, msg, ud);
			return;
		}
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		done(bi, -ENOMEM, "out of memory", ud);
		return;
	}
	*p = (struct vm_prep){ .bi = bi, .done = done, .ud = ud, .pidfd = -1, .err_fd = -1 };
	d->prep = p;
	argv[n++] = (char *)(!isempty(tool) ? tool : CORDON_LIBEXECDIR "/cordon-vm-helpers");
	argv[n++] = (char *)"fetch";
	argv[n++] = (char *)"--dir";
	argv[n++] = d->helpers_dir;
	if (d->helpers_base_url) {
		argv[n++] = (char *)"--base-url";
		argv[n++] = d->helpers_base_url;
	}
	argv[n++] = (char *)"agent";
	{
		/* A forwarder fetched before (network "proxy" was used): verified again, and
		 * in the initramfs. */
		_cleanup_free_ char *f = forward_path(d);

		if (f)
			argv[n++] = (char *)"forward";
	}
	argv[n] = NULL;
	r = prep_spawn(p, argv);
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg), "cannot run %s: %s", argv[0], strerror(-r));
		prep_finish(p, r, msg);
	}
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

/* --- the keeper (runs in the forked child: system calls only) --- */

struct keeper_args {
	char *const *qemu_argv;
	char *const *qemu_envp;
	int ctl;      /* its end of the control socketpair */
	int agent;    /* its end of the agent's socketpair */
	int qemu_end; /* QEMU's end: its fd 3 */
	int status;   /* QEMU's stderr */
	int null_fd;
	uint8_t *init; /* the INIT frame; its first 8 payload bytes get the time */
	size_t init_len;
	int net_end;	    /* QEMU's end of the port "net"'s socketpair: its fd 6 */
	int qmp, qmp_end;   /* QMP's socketpair (QEMU's end: its fd 4), or -1 */
	struct vmb_job *bl; /* the baseline to restore or save, or NULL */
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int r_frame(int fd, uint8_t type, const void *data, uint32_t len)
{
	uint8_t h[VM_FRAME_HEADER];

	vm_frame_header(h, type, len);
	if (loop_write(fd, h, sizeof(h)) < 0)
		return -1;
	return len ? loop_write(fd, data, len) : 0;
}

/* The keeper's commands: slot by id. */
static struct kproc {
	uint32_t id;
	int io[3]; /* stdin, stdout, stderr (-1: none) */
	bool used, in_open, in_wait;
	/* The STDOUT and STDERR frame being written out (acknowledged once written). */
	uint8_t *out[2];
	size_t out_len[2], out_off[2];
} kp[VM_MAX_PROCS];

/* Written to a command's stdout or stderr per POLLOUT: what a pipe that polls writable takes
 * without blocking (PIPE_BUF). */
#define KEEPER_WRITE_CHUNK 4096

static struct kproc *kproc_find(uint32_t id)
{
	for (size_t i = 0; i < ELEMENTSOF(kp); i++)
		if (kp[i].used && kp[i].id == id)
			return &kp[i];
	return NULL;
}

static void kproc_close(struct kproc *p)
{
	for (int i = 0; i < 3; i++)
		if (p->io[i] >= 0)
			close(p->io[i]);
	p->out_len[0] = p->out_len[1] = 0;
	p->used = false;
}

/* The frame of stream s (0 stdout, 1 stderr) is out (or dropped): the agent may send the next. */
static int kproc_ack(int agent, struct kproc *c, int s)
{
	uint8_t b[5];

	c->out_len[s] = c->out_off[s] = 0;
	vm_put32(b, c->id);
	b[4] = (uint8_t)(s + 1);
	return r_frame(agent, VM_OUTPUT_ACK, b, sizeof(b));
}

_noreturn_ static void keeper_end(struct keeper_args *a, pid_t qemu, const char *lost)
{
	if (qemu > 0) {
		(void)kill(qemu, SIGKILL);
		(void)waitpid(qemu, NULL, 0);
	}
	if (lost)
		(void)r_frame(a->ctl, VK_LOST, lost, (uint32_t)strlen(lost));
	_exit(0);
}

/* A control frame: header by recvmsg (the fds come with its first byte), payload after. */
static int ctl_read(int fd, uint8_t *type, uint8_t *buf, size_t size, uint32_t *len, int fds[3],
		    size_t *n_fds)
{
	uint8_t h[VM_FRAME_HEADER];
	union {
		struct cmsghdr c;
		char b[CMSG_SPACE(3 * sizeof(int))];
	} cm;
	struct iovec iov = { .iov_base = h, .iov_len = sizeof(h) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = &cm, .msg_controllen = sizeof(cm)
	};
	ssize_t k;

	*n_fds = 0;
	do
		k = recvmsg(fd, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC);
	while (k < 0 && errno == EINTR);
	if (k != (ssize_t)sizeof(h))
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < n; i++) {
				int f;

				memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				if (*n_fds < 3)
					fds[(*n_fds)++] = f;
				else
					close(f);
			}
		}
	*type = h[0];
	*len = vm_get32(h + 1);
	if (*len > size)
		return -1;
	return *len ? loop_read_all(fd, buf, *len) : 0;
}

/* Report a baseline's fate to the controller (VK_BASELINE). */
static void keeper_baseline(struct keeper_args *a, uint8_t what, uint64_t ms, uint64_t bytes,
			    const char *text)
{
	static uint8_t b[9 + 512];
	size_t n = 0;

	b[0] = what;
	vm_put32(b + 1, (uint32_t)ms);
	vm_put32(b + 5, (uint32_t)(bytes >> 10));
	for (; text && text[n] && n < 512; n++)
		b[9 + n] = (uint8_t)text[n];
	(void)r_frame(a->ctl, VK_BASELINE, b, (uint32_t)(9 + n));
}

/* Start QEMU with argv: the agent's port on its fd 3, QMP on 4 (if any), incoming on 5 (if
 * >= 0). */
static pid_t keeper_fork_qemu(struct keeper_args *a, char *const *argv, int incoming)
{
	pid_t keeper = getpid(), qemu = fork();

	if (qemu < 0)
		keeper_end(a, -1, "cannot fork QEMU");
	if (qemu == 0) {
		int src[4] = { a->qemu_end, a->qmp_end, incoming, a->net_end };
		sigset_t none;

		/* The keeper may have died before the prctl: then the parent is init or a
		 * subreaper (not necessarily pid 1), and QEMU must not start. */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != keeper)
			_exit(1);
		sigemptyset(&none);
		(void)sigprocmask(SIG_SETMASK, &none, NULL);
		(void)setsid();
		/* (moved above the targets first, so that no dup2() overwrites a source) */
		for (int i = 0; i < 4; i++)
			if (src[i] >= 0 && (src[i] = fcntl(src[i], F_DUPFD, 10)) < 0)
				_exit(1);
		if (dup2(a->null_fd, 0) < 0 || dup2(a->null_fd, 1) < 0 || dup2(a->status, 2) < 0)
			_exit(1);
		for (int i = 0; i < 4; i++)
			if (src[i] >= 0 && dup2(src[i], 3 + i) < 0)
				_exit(1);
		(void)syscall(SYS_close_range, 7U, ~0U, 0U);
		execve(argv[0], argv, a->qemu_envp);
		_exit(127);
	}
	return qemu;
}

/* Start the VM: from its baseline if it has one (cold, once, when that fails: the guest never
 * ran from it), else cold. *restored: the guest runs from the baseline, its agent's hello
 * already given before the save. */
static pid_t keeper_boot(struct keeper_args *a, uint64_t deadline, bool *restored)
{
	struct vmb_job *j = a->bl;
	uint64_t t = mono_ms();
	char why[512];
	int pp[2], s1[2], s2[2];
	pid_t qemu;

	*restored = false;
	if (!j || !j->restore)
		return keeper_fork_qemu(a, a->qemu_argv, -1);
	if (pipe2(pp, O_CLOEXEC) < 0)
		keeper_end(a, -1, "cannot make a pipe");
	(void)fcntl(pp[1], F_SETPIPE_SZ, 1 << 20);
	(void)fcntl(pp[1], F_SETFL, O_NONBLOCK);
	qemu = keeper_fork_qemu(a, j->restore_argv, pp[0]);
	close(pp[0]);
	if (vmb_keeper_restore(j, a->qmp, pp[1], deadline, why, sizeof(why)) == 0) {
		close(j->artifact_fd); /* (its shared lock with it) */
		j->artifact_fd = -1;
		*restored = true;
		keeper_baseline(a, 'r', mono_ms() - t, j->want_bytes, j->key);
		return qemu;
	}
	(void)kill(qemu, SIGKILL);
	(void)waitpid(qemu, NULL, 0);
	close(j->artifact_fd);
	j->artifact_fd = -1;
	keeper_baseline(a, 'i', mono_ms() - t, 0, why);
	vmb_keeper_discard(j);
	j->restore = false; /* a fresh one is saved at the agent's hello */
	/* New channels: the old ones may hold what the first QEMU left. */
	close(a->agent);
	close(a->qemu_end);
	close(a->qmp);
	close(a->qmp_end);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s1) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s2) < 0)
		keeper_end(a, -1, "cannot make a socketpair");
	a->agent = s1[0];
	a->qemu_end = s1[1];
	a->qmp = s2[0];
	a->qmp_end = s2[1];
	return keeper_fork_qemu(a, a->qemu_argv, -1);
}

/* The agent said hello (now, or before the baseline's save): its INIT (wall clock, entropy,
 * workspace), and VK_READY. */
static void keeper_hello(struct keeper_args *a, pid_t qemu, uint64_t t0, uint64_t boot_ms)
{
	struct timespec ts;
	uint64_t ns;
	uint8_t x[8];

	clock_gettime(CLOCK_REALTIME, &ts);
	ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	vm_put32(a->init + VM_FRAME_HEADER, (uint32_t)(ns >> 32));
	vm_put32(a->init + VM_FRAME_HEADER + 4, (uint32_t)ns);
	if (loop_write(a->agent, a->init, a->init_len) < 0)
		keeper_end(a, qemu, "the VM went away");
	vm_put32(x, (uint32_t)(mono_ms() - t0));
	vm_put32(x + 4, (uint32_t)boot_ms);
	if (r_frame(a->ctl, VK_READY, x, sizeof(x)) < 0)
		keeper_end(a, qemu, NULL);
}

_noreturn_ static void keeper_run(struct keeper_args *a)
{
	static uint8_t buf[1 << 19], sbuf[4 + VM_OUTPUT_CHUNK];
	struct pollfd p[3 + 3 * VM_MAX_PROCS];
	struct kproc *pp[3 + 3 * VM_MAX_PROCS];
	int ps[3 + 3 * VM_MAX_PROCS]; /* the output stream polled for (0, 1), or -1: stdin */
	uint8_t *obufs;
	sigset_t mask;
	int sfd;
	pid_t qemu;
	bool ready = false, restored;
	uint64_t t0 = mono_ms(), deadline = t0 + VM_BOOT_TIMEOUT_MS;

	/* Nothing of the controller's but what the keeper needs (it does not exec). */
	{
		int bl_dir = a->bl ? a->bl->dir_fd : -1, bl_art = a->bl ? a->bl->artifact_fd : -1;
		int keep[12] = { a->ctl, a->agent,   a->qemu_end, a->status, a->null_fd, 2,
				 a->qmp, a->qmp_end, bl_dir,	  bl_art,    a->net_end, -1 };
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
		(void)dup2(a->null_fd, 0);
		(void)dup2(a->null_fd, 1);
	}
	sigfillset(&mask);
	(void)sigprocmask(SIG_SETMASK, &mask, NULL);
	for (int s = 1; s < _NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			(void)signal(s, s == SIGPIPE ? SIG_IGN : SIG_DFL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);

	qemu = keeper_boot(a, deadline, &restored);
	close(a->qemu_end);
	close(a->net_end);
	close(a->status);
	if (a->qmp_end >= 0)
		close(a->qmp_end);
	/* (mmap, not malloc: this process was forked from a threaded one) */
	obufs = mmap(NULL, ELEMENTSOF(kp) * 2 * VM_OUTPUT_CHUNK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (obufs == MAP_FAILED)
		keeper_end(a, qemu, "out of memory");
	for (size_t i = 0; i < ELEMENTSOF(kp); i++) {
		kp[i].used = false;
		for (int s = 0; s < 2; s++) {
			kp[i].out[s] = obufs + (i * 2 + (size_t)s) * VM_OUTPUT_CHUNK;
			kp[i].out_len[s] = kp[i].out_off[s] = 0;
		}
	}
	if (restored) {
		ready = true;
		keeper_hello(a, qemu, t0, 0);
	}

	for (;;) {
		size_t n = 0;
		uint64_t now = mono_ms();
		int k;

		p[n] = (struct pollfd){ .fd = a->agent, .events = POLLIN };
		pp[n++] = NULL;
		p[n] = (struct pollfd){ .fd = a->ctl, .events = POLLIN };
		pp[n++] = NULL;
		p[n] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		pp[n++] = NULL;
		for (size_t i = 0; i < ELEMENTSOF(kp); i++) {
			if (!kp[i].used)
				continue;
			if (kp[i].in_open && !kp[i].in_wait) {
				p[n] = (struct pollfd){ .fd = kp[i].io[0], .events = POLLIN };
				ps[n] = -1;
				pp[n++] = &kp[i];
			}
			for (int s = 0; s < 2; s++)
				if (kp[i].out_len[s]) {
					p[n] = (struct pollfd){ .fd = kp[i].io[1 + s],
								.events = POLLOUT };
					ps[n] = s;
					pp[n++] = &kp[i];
				}
		}
		if (!ready && now >= deadline)
			keeper_end(a, qemu, "the VM did not boot in time");
		k = poll(p, n, ready ? -1 : (int)(deadline - now));
		if (k < 0 && errno != EINTR)
			keeper_end(a, qemu, "poll failed");
		if (k <= 0)
			continue;
		if (p[2].revents) {
			struct signalfd_siginfo si;
			int st;

			if (read(sfd, &si, sizeof(si)) < 0)
				si.ssi_signo = 0;
			if (waitpid(qemu, &st, WNOHANG) == qemu)
				keeper_end(a, -1,
					   WIFSIGNALED(st) ? "QEMU was killed by a signal"
							   : "QEMU exited");
		}
		for (size_t i = 3; i < n; i++) {
			struct kproc *c = pp[i];
			ssize_t r;

			if (!p[i].revents || !c->used)
				continue;
			if (ps[i] >= 0) {
				/* Output: a chunk now, the rest when it polls writable again. */
				int s = ps[i];
				size_t left = c->out_len[s] - c->out_off[s];

				if (!left)
					continue;
				r = -1;
				if (p[i].revents & POLLOUT)
					r = write(p[i].fd, c->out[s] + c->out_off[s],
						  left < KEEPER_WRITE_CHUNK ? left
									    : KEEPER_WRITE_CHUNK);
				if (r > 0)
					c->out_off[s] += (size_t)r;
				else if (r < 0 && (errno == EINTR || errno == EAGAIN))
					continue;
				/* All of it written, or nobody reads: dropped. */
				if ((r <= 0 || c->out_off[s] == c->out_len[s]) &&
				    kproc_ack(a->agent, c, s) < 0)
					keeper_end(a, qemu, "the VM went away");
				continue;
			}
			r = read(c->io[0], sbuf + 4, VM_OUTPUT_CHUNK);
			vm_put32(sbuf, c->id);
			if (r > 0) {
				if (r_frame(a->agent, VM_STDIN, sbuf, 4 + (uint32_t)r) < 0)
					keeper_end(a, qemu, "the VM went away");
				c->in_wait = true;
			} else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
				if (r_frame(a->agent, VM_STDIN_EOF, sbuf, 4) < 0)
					keeper_end(a, qemu, "the VM went away");
				c->in_open = false;
				close(c->io[0]);
				c->io[0] = -1;
			}
		}
		if (p[1].revents) {
			uint8_t type;
			uint32_t len;
			int fds[3];
			size_t n_fds;

			if (ctl_read(a->ctl, &type, buf, sizeof(buf), &len, fds, &n_fds) < 0)
				keeper_end(a, qemu, NULL); /* the controller let go */
			if (type == VK_QUIT)
				keeper_end(a, qemu, NULL);
			if (type == VK_SIGNAL && ready) {
				if (r_frame(a->agent, VM_SIGNAL, buf, len) < 0)
					keeper_end(a, qemu, "the VM went away");
			} else if (type == VK_GUARD && ready) {
				if (r_frame(a->agent, VM_GUARD, buf, len) < 0)
					keeper_end(a, qemu, "the VM went away");
			} else if (type == VK_EXEC && ready && len > 5) {
				struct kproc *c = NULL;
				size_t f = 0;

				for (size_t i = 0; i < ELEMENTSOF(kp) && !c; i++)
					if (!kp[i].used)
						c = &kp[i];
				if (c) {
					c->used = true;
					c->id = vm_get32(buf + 1);
					for (int s = 0; s < 3; s++)
						c->io[s] = (buf[0] & (1 << s)) && f < n_fds
								   ? fds[f++]
								   : -1;
					c->in_open = c->io[0] >= 0;
					c->in_wait = false;
					if (r_frame(a->agent, VM_EXEC, buf + 1, len - 1) < 0)
						keeper_end(a, qemu, "the VM went away");
					if (!c->in_open &&
					    r_frame(a->agent, VM_STDIN_EOF, buf + 1, 4) < 0)
						keeper_end(a, qemu, "the VM went away");
				} else {
					/* Full: exit 126 at once. */
					uint8_t x[12] = { 0 };

					memcpy(x, buf + 1, 4);
					vm_put32(x + 4, 126);
					(void)r_frame(a->ctl, VK_EXIT, x, sizeof(x));
				}
				for (; f < n_fds; f++)
					close(fds[f]);
			} else
				for (size_t f = 0; f < n_fds; f++)
					close(fds[f]);
		}
		if (p[0].revents) {
			uint8_t h[VM_FRAME_HEADER];
			uint32_t len;
			struct kproc *c;

			if (loop_read_all(a->agent, h, sizeof(h)) < 0)
				keeper_end(a, qemu, "the VM's agent went away");
			len = vm_get32(h + 1);
			if (len > sizeof(buf) || (len && loop_read_all(a->agent, buf, len) < 0))
				keeper_end(a, qemu, "a bad frame from the guest");
			c = len >= 4 && h[0] != VM_READY ? kproc_find(vm_get32(buf)) : NULL;
			switch (h[0]) {
			case VM_READY: {
				uint64_t boot = 0;

				if (ready)
					break;
				if (a->bl && !a->bl->restore) {
					/* Before INIT: no clock, entropy or workspace in it. */
					uint64_t bytes = 0, ts = mono_ms();
					char why[512];
					int r = vmb_keeper_save(a->bl, a->qmp, ts + 30000, &bytes,
								why, sizeof(why));

					if (r == -2)
						keeper_end(a, qemu, why);
					keeper_baseline(a, r == 0 ? 's' : 'f', mono_ms() - ts,
							bytes, r == 0 ? a->bl->key : why);
				}
				if (len == 8)
					boot = ((uint64_t)vm_get32(buf) << 32 | vm_get32(buf + 4)) /
					       1000000;
				ready = true;
				keeper_hello(a, qemu, t0, boot);
				break;
			}
			case VM_STDOUT:
			case VM_STDERR: {
				int s = h[0] == VM_STDOUT ? 0 : 1;

				if (!c)
					break;
				if (c->out_len[s] || len - 4 > VM_OUTPUT_CHUNK)
					keeper_end(a, qemu, "the guest overran a command's output");
				memcpy(c->out[s], buf + 4, len - 4);
				c->out_len[s] = len - 4;
				c->out_off[s] = 0;
				/* Nobody reads it: acknowledged at once. */
				if ((c->io[1 + s] < 0 || len == 4) && kproc_ack(a->agent, c, s) < 0)
					keeper_end(a, qemu, "the VM went away");
				break;
			}
			case VM_STDIN_ACK:
				if (c)
					c->in_wait = false;
				break;
			case VM_ERROR:
				if (c && c->io[2] >= 0) {
					(void)loop_write(c->io[2], "cordon-vm: ", 11);
					(void)loop_write(c->io[2], buf + 4, len - 4);
					(void)loop_write(c->io[2], "\n", 1);
				} else if (!c && len > 4)
					(void)r_frame(a->ctl, VK_ERROR, buf + 4, len - 4);
				break;
			case VM_LIMIT:
			case VM_DENIAL:
				if (c && r_frame(a->ctl, h[0] == VM_LIMIT ? VK_LIMIT : VK_DENIAL,
						 buf, len) < 0)
					keeper_end(a, qemu, NULL);
				break;
			case VM_EXIT:
				if (len != 12)
					keeper_end(a, qemu, "a bad exit frame from the guest");
				if (c)
					kproc_close(c);
				if (r_frame(a->ctl, VK_EXIT, buf, len) < 0)
					keeper_end(a, qemu, NULL);
				break;
			default:
				break;
			}
		}
	}
}

/* --- the controller's side --- */

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

static json_t *setup_error(const char *message)
{
	return json_pack("{s:s,s:i,s:s,s:s,s:s}", "code", "setup-failed", "errno", EIO, "field", "",
			 "step", "vm", "message", message);
}

/* --- network "proxy": the port "net" (forward-mux.h), served on the controller's loop --- */

static bool net_needs_fetch(struct vm_data *d);
static int net_fetch(struct backend_instance *bi);

#define NET_SOCKET "proxy"

/* Remove a command's listener socket and its directory; free dir. */
static void net_dir_remove(char *dir)
{
	char path[PATH_MAX];

	if (!dir)
		return;
	if (snprintf(path, sizeof(path), "%s/" NET_SOCKET, dir) < (int)sizeof(path))
		(void)unlink(path);
	(void)rmdir(dir);
	free(dir);
}

static int net_sockaddr(const char *dir, struct sockaddr_un *sa)
{
	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	if (snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/" NET_SOCKET, dir) >=
	    (int)sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

/*
 * A command's proxy listener: a Unix socket in a fresh 0700 directory (the user's runtime
 * directory, else /tmp), which the controller serves with the allowed-domains proxy as it
 * serves launcherd's in-netns listener; the guest's connections are connected to it.
 */
static int net_listener(struct vm_proc *p)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	char dir[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
	struct sockaddr_un sa;
	_cleanup_close_ int fd = -1;
	int r;

	if (isempty(rt) || strlen(rt) + sizeof("/cordon-vm-net-XXXXXX/" NET_SOCKET) > sizeof(dir))
		rt = "/tmp";
	(void)snprintf(dir, sizeof(dir), "%s/cordon-vm-net-XXXXXX", rt);
	if (!mkdtemp(dir))
		return -errno;
	p->net_dir = strdup(dir);
	if (!p->net_dir) {
		(void)rmdir(dir);
		return -ENOMEM;
	}
	r = net_sockaddr(p->net_dir, &sa);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, (int)FWD_MAX_CONNS) < 0)
		return -errno;
	p->proxy_fd = TAKE_FD(fd);
	return 0;
}

struct vm_net_conn {
	struct vm_keeper *k;
	struct fwd_conn *c;
	struct event_source *src;
	uint32_t events;
};

static uint32_t net_epoll(short poll_events)
{
	return (poll_events & POLLIN ? EPOLLIN : 0) | (poll_events & POLLOUT ? EPOLLOUT : 0);
}

static void net_stop(struct vm_keeper *k)
{
	fwd_mux_done(&k->mux);
	event_source_free(TAKE_PTR(k->net_src));
	k->net_fd = safe_close(k->net_fd);
}

/* After any change: write what waits for the guest, and wait for what can move now. */
static void net_update(struct vm_keeper *k)
{
	uint32_t ev;

	if (k->net_fd < 0)
		return;
	if (fwd_mux_pending(&k->mux) && fwd_mux_flush(&k->mux, k->net_fd) < 0) {
		net_stop(k); /* (QEMU is gone: the keeper's end follows) */
		return;
	}
	ev = (!k->mux.broken && fwd_mux_pending(&k->mux) < FWD_OUT_HIGH ? EPOLLIN : 0) |
	     (fwd_mux_pending(&k->mux) ? EPOLLOUT : 0);
	if (ev != k->net_events && event_source_set_events(k->net_src, ev) >= 0)
		k->net_events = ev;
	for (struct fwd_conn *c = k->mux.conns; c; c = c->next) {
		struct vm_net_conn *nc = c->data;

		if (nc && nc->src && c->hup) {
			/* (epoll reports a hang-up whatever it waits for) */
			event_source_free(TAKE_PTR(nc->src));
			continue;
		}
		ev = net_epoll(fwd_conn_events(c));
		if (nc && nc->src && ev != nc->events && event_source_set_events(nc->src, ev) >= 0)
			nc->events = ev;
	}
}

static int on_net_conn(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct vm_net_conn *nc = userdata;
	struct vm_keeper *k = nc->k;

	fwd_conn_io(&k->mux, nc->c, revents & EPOLLIN, revents & EPOLLOUT,
		    revents & (EPOLLHUP | EPOLLERR));
	net_update(k);
	return 0;
}

/* The guest opened connection id: connect it to the proxy of the newest running command of
 * this VM that has network "proxy" (commands of one lease share the guest's loopback). */
static int net_open(struct fwd_mux *m, uint32_t id, void *ud)
{
	struct vm_keeper *k = ud;
	struct vm_data *d = k->bi->data;
	struct vm_proc *best = NULL;
	struct sockaddr_un sa;
	_cleanup_close_ int fd = -1;

	for (struct vm_proc *p = d->procs; p; p = p->next)
		if (p->k == k && p->net_dir && p->sent && (!best || p->id > best->id))
			best = p;
	if (!best)
		return -ECONNREFUSED;
	if (net_sockaddr(best->net_dir, &sa) < 0)
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return TAKE_FD(fd);
}

static void net_attach(struct fwd_mux *m, struct fwd_conn *c, void *ud)
{
	struct vm_keeper *k = ud;
	struct vm_net_conn *nc = calloc(1, sizeof(*nc));

	if (!nc)
		return; /* (never watched: the guest's side times out) */
	nc->k = k;
	nc->c = c;
	nc->events = EPOLLIN;
	if (event_add_io(k->bi->host->loop, c->fd, EPOLLIN, on_net_conn, nc, &nc->src) < 0) {
		free(nc);
		return;
	}
	c->data = nc;
}

static void net_detach(struct fwd_mux *m, struct fwd_conn *c, void *ud)
{
	struct vm_net_conn *nc = c->data;

	if (!nc)
		return;
	event_source_free(nc->src);
	free(nc);
	c->data = NULL;
}

static const struct fwd_ops net_ops = {
	.open = net_open,
	.attach = net_attach,
	.detach = net_detach,
};

static int on_net(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	static uint8_t buf[65536];
	struct vm_keeper *k = userdata;

	if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))
		for (int i = 0; i < 16 && !k->mux.broken && fwd_mux_pending(&k->mux) < FWD_OUT_HIGH;
		     i++) {
			ssize_t n = read(fd, buf, sizeof(buf));

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				break;
			if (n <= 0) {
				net_stop(k);
				return 0;
			}
			if (fwd_mux_input(&k->mux, buf, (size_t)n) == -EBADMSG)
				log_warning("%s: %s: the guest's forwarder sent a bad frame: its "
					    "connections are closed",
					    k->bi->name, k->lease[0] ? k->lease : "one-shot");
		}
	net_update(k);
	return 0;
}

static void proc_free(struct vm_data *d, struct vm_proc *p)
{
	for (struct vm_proc **pp = &d->procs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	if (p->k && p->k->oneshot == p)
		p->k->oneshot = NULL;
	event_source_free(p->timer);
	event_source_free(p->denial_timer);
	free(p->msg);
	free(p->guard);
	for (int i = 0; i < 3; i++)
		safe_close(p->fds[i]);
	safe_close(p->proxy_fd);
	net_dir_remove(p->net_dir);
	free(p->wait_path);
	free(p->wait_mount);
	free(p);
}

static struct vm_proc *proc_find(struct vm_data *d, const char *sandbox)
{
	for (struct vm_proc *p = d->procs; p; p = p->next)
		if (streq(p->sandbox, sandbox))
			return p;
	return NULL;
}

static struct vm_keeper *keeper_find(struct vm_data *d, const char *lease)
{
	for (struct vm_keeper *k = d->keepers; k; k = k->next)
		if (k->lease[0] && streq(k->lease, lease))
			return k;
	return NULL;
}

static void keeper_free(struct vm_data *d, struct vm_keeper *k)
{
	for (struct vm_keeper **pp = &d->keepers; *pp; pp = &(*pp)->next)
		if (*pp == k) {
			*pp = k->next;
			break;
		}
	event_source_free(k->pid_src);
	event_source_free(k->ctl_src);
	event_source_free(k->status_src);
	event_source_free(k->release_timer);
	fwd_mux_done(&k->mux);
	event_source_free(k->net_src);
	safe_close(k->net_fd);
	safe_close(k->pidfd);
	safe_close(k->ctl);
	safe_close(k->status_fd);
	free(k->rbuf);
	json_decref(k->oneshot_exit);
	free(k);
}

/* Send a control frame (with fds); the keeper reads its control socket whenever it is not
 * writing a command's output. */
static int keeper_send(struct vm_keeper *k, uint8_t type, const void *payload, size_t len,
		       const int *fds, size_t n_fds)
{
	uint8_t h[VM_FRAME_HEADER];
	union {
		struct cmsghdr c;
		char b[CMSG_SPACE(3 * sizeof(int))];
	} cm = { 0 };
	struct iovec iov[2] = { { .iov_base = h, .iov_len = sizeof(h) },
				{ .iov_base = (void *)payload, .iov_len = len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	size_t total = sizeof(h) + len, done = 0;

	if (k->ctl < 0 || k->ended)
		return -EPIPE;
	vm_frame_header(h, type, (uint32_t)len);
	if (n_fds) {
		mh.msg_control = &cm;
		mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
		cm.c.cmsg_level = SOL_SOCKET;
		cm.c.cmsg_type = SCM_RIGHTS;
		cm.c.cmsg_len = CMSG_LEN(n_fds * sizeof(int));
		memcpy(CMSG_DATA(&cm.c), fds, n_fds * sizeof(int));
	}
	while (done < total) {
		ssize_t n = sendmsg(k->ctl, &mh, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN &&
		    poll(&(struct pollfd){ .fd = k->ctl, .events = POLLOUT }, 1, 1000) > 0)
			continue; /* (the keeper reads as soon as no output holds it) */
		if (n < 0) {
			int r = -errno;

			/* Half a frame would leave the keeper waiting for the rest: it goes (the
			 * VM is lost). */
			if (done)
				(void)syscall(SYS_pidfd_send_signal, k->pidfd, SIGKILL, NULL, 0);
			return r;
		}
		done += (size_t)n;
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
		/* The rest, after a partial send. */
		while (n > 0 && mh.msg_iovlen) {
			size_t t = (size_t)n < mh.msg_iov[0].iov_len ? (size_t)n
								     : mh.msg_iov[0].iov_len;

			mh.msg_iov[0].iov_base = (char *)mh.msg_iov[0].iov_base + t;
			mh.msg_iov[0].iov_len -= t;
			n -= (ssize_t)t;
			if (!mh.msg_iov[0].iov_len) {
				mh.msg_iov++;
				mh.msg_iovlen--;
			}
		}
	}
	return 0;
}

static int on_proc_timeout(struct event_source *s, void *userdata)
{
	struct vm_proc *p = userdata;
	uint8_t b[8];

	p->timed_out = true;
	vm_put32(b, p->id);
	vm_put32(b + 4, SIGKILL);
	(void)keeper_send(p->k, VK_SIGNAL, b, sizeof(b), NULL, 0);
	return 0;
}

/* Hand a command to its VM (ready). */
static int proc_send(struct vm_proc *p)
{
	struct backend_instance *bi = p->k->bi;
	int fds[3];
	size_t n = 0;
	int r;

	for (int i = 0; i < 3; i++)
		if (p->fds[i] >= 0)
			fds[n++] = p->fds[i];
	if (p->guard) {
		vm_put32(p->guard, p->id);
		r = keeper_send(p->k, VK_GUARD, p->guard, p->guard_len, NULL, 0);
		if (r < 0)
			return r;
		free(TAKE_PTR(p->guard));
	}
	r = keeper_send(p->k, VK_EXEC, p->msg, p->msg_len, fds, n);
	if (r < 0)
		return r;
	for (int i = 0; i < 3; i++)
		p->fds[i] = safe_close(p->fds[i]);
	free(TAKE_PTR(p->msg));
	p->sent = true;
	/* Its duration counts from here: a one-shot's boot is its set-up, not its run time. */
	p->start_usec = p->sent_usec = now_usec();
	if (p->timeout_ms && event_add_timer(bi->host->loop, p->timeout_ms * 1000, false,
					     on_proc_timeout, p, &p->timer) < 0)
		log_warning("%s: %s: cannot arm its timeout", bi->name, p->sandbox);
	return 0;
}

static void proc_answer(struct vm_proc *p, const char *error)
{
	struct backend_instance *bi = p->k->bi;
	backend_spawn_cb cb = TAKE_PTR(p->cb);

	if (!cb)
		return;
	if (error) {
		_cleanup_json_ json_t *e = setup_error(error);

		cb(bi, NULL, -1, -1, 0, e, p->ud);
	} else
		cb(bi, p->sandbox, fd_dup_cloexec(p->k->pidfd, 3), TAKE_FD(p->proxy_fd), p->k->pid,
		   NULL, p->ud);
}

static json_t *exit_json(struct vm_proc *p, unsigned code, unsigned sig, const char *reason)
{
	return json_pack("{s:s,s:i,s:i,s:s,s:I,s:{s:b,s:b}}", "sandbox", p->sandbox, "exitCode",
			 (int)code, "signal", (int)sig, "reason", reason, "durationUsec",
			 (json_int_t)(now_usec() - p->start_usec), "limits", "pids",
			 (p->limits_hit & VM_LIMIT_PIDS) != 0, "memory",
			 (p->limits_hit & VM_LIMIT_MEMORY) != 0);
}

/* --- the guard's reports: limits hit, the seccomp observer's denials --- */

/* The command of id in k's VM, once handed to it. */
static struct vm_proc *proc_by_id(struct vm_keeper *k, uint32_t id)
{
	struct vm_data *d = k->bi->data;

	for (struct vm_proc *q = d ? d->procs : NULL; q; q = q->next)
		if (q->k == k && q->id == id && q->sent)
			return q;
	return NULL;
}

static void proc_denials_suppressed(struct vm_proc *p)
{
	struct backend_instance *bi = p->k->bi;

	if (!p->denials_suppressed)
		return;
	bi->host->event(bi->host, "denial",
			json_pack("{s:s,s:I}", "instance", p->sandbox, "suppressed",
				  (json_int_t)p->denials_suppressed));
	p->denials_suppressed = 0;
}

static int on_denial_window(struct event_source *s, void *userdata)
{
	struct vm_proc *p = userdata;

	proc_denials_suppressed(p);
	p->denial_window_usec = now_usec();
	p->denials_in_window = 0;
	p->denial_timer = NULL;
	event_source_free(s);
	return 0;
}

/* DENIAL: u32 id, u64 ms, u32 arch, u32 syscall, u32 action, u32 pid, comm\0 exe\0. As
 * launcherd's (docs/DENIALS.md), rate-limited per command (a command is a sandbox here);
 * the pid is the guest's. */
static void proc_denial(struct vm_keeper *k, const uint8_t *b, uint32_t len)
{
	struct backend_instance *bi = k->bi;
	struct vm_proc *p;
	struct vm_denial dn;
	_cleanup_free_ char *name = NULL;
	unsigned long long now = now_usec();
	json_t *m;

	if (vm_denial_parse(b, len, &dn) < 0 || !(p = proc_by_id(k, dn.id)))
		return;
	if (now - p->denial_window_usec >= 1000000ULL) {
		proc_denials_suppressed(p);
		p->denial_window_usec = now;
		p->denials_in_window = 0;
	}
	if (p->denials_in_window >= VM_DENIALS_PER_SEC) {
		if (p->denials_suppressed++ == 0 && !p->denial_timer &&
		    event_add_timer(bi->host->loop, p->denial_window_usec + 1000000ULL - now, false,
				    on_denial_window, p, &p->denial_timer) < 0)
			log_debug("%s: %s: cannot arm the denials' timer", bi->name, p->sandbox);
		return;
	}
	p->denials_in_window++;
	name = seccomp_syscall_resolve_num_arch(dn.arch, (int)dn.syscall);
	m = json_pack("{s:s,s:I,s:s,s:s,s:I,s:s,s:I}", "instance", p->sandbox, "timeMs",
		      (json_int_t)dn.msec, "layer", "seccomp", "kind", "syscall", "syscallNr",
		      (json_int_t)dn.syscall, "action", seccomp_action_name(dn.action), "pid",
		      (json_int_t)dn.pid);
	if (!m)
		return;
	/* (jansson refuses what is not UTF-8: such a name is left out) */
	if (name)
		(void)json_object_set_new(m, "syscall", json_string(name));
	if (dn.comm[0])
		(void)json_object_set_new(m, "comm", json_string(dn.comm));
	if (dn.exe[0])
		(void)json_object_set_new(m, "exe", json_string(dn.exe));
	bi->host->event(bi->host, "denial", m);
}

static void proc_limit(struct vm_keeper *k, const uint8_t *b, uint32_t len)
{
	struct vm_proc *p = len == 5 ? proc_by_id(k, vm_get32(b)) : NULL;

	if (p)
		p->limits_hit |= b[4] & (VM_LIMIT_PIDS | VM_LIMIT_MEMORY);
}

/* The agent's GUARD for a spawn's plan: its cgroup limits, rlimits and seccomp program; NULL
 * (and 0) when the plan has none of them. */
static int guard_build(const struct backend_spawn *req, uint8_t **ret, size_t *ret_len)
{
	json_t *cg = json_object_get(req->plan, "cgroup"),
	       *rl = json_object_get(req->plan, "rlimits");
	json_t *sc = json_object_get(json_object_get(req->plan, "seccomp"), "program");
	uint64_t vals[4] = { 0 };
	json_t *v[4] = { json_object_get(cg, "memoryMaxBytes"), json_object_get(cg, "pidsMax"),
			 json_object_get(rl, "cpu"), json_object_get(rl, "nofile") };
	_cleanup_free_ uint8_t *g = NULL;
	size_t prog = 0;
	bool any = false;

	*ret = NULL;
	*ret_len = 0;
	for (size_t i = 0; i < ELEMENTSOF(v); i++) {
		if (!v[i])
			continue;
		if (!json_is_integer(v[i]) || json_integer_value(v[i]) < 0)
			return -EINVAL;
		vals[i] = (uint64_t)json_integer_value(v[i]);
		any = any || vals[i];
	}
	g = malloc(VM_GUARD_FIXED + VM_GUARD_PROGRAM_MAX + 1);
	if (!g)
		return -ENOMEM;
	if (sc) {
		json_int_t idx = json_is_integer(sc) ? json_integer_value(sc) : -1;
		ssize_t n;

		if (idx < 0 || (size_t)idx >= req->n_fds)
			return -EINVAL;
		n = pread(req->fds[idx], g + VM_GUARD_FIXED, VM_GUARD_PROGRAM_MAX + 1, 0);
		if (n < 0)
			return -errno;
		if (n == 0 || n > VM_GUARD_PROGRAM_MAX || n % 8 != 0)
			return -EINVAL;
		prog = (size_t)n;
		any = true;
	}
	if (!any)
		return 0;
	/* id at 0, filled once the command has one */
	for (size_t i = 0; i < ELEMENTSOF(vals); i++)
		vm_put64(g + 4 + i * 8, vals[i]);
	vm_put32(g + 36, (uint32_t)prog);
	*ret_len = VM_GUARD_FIXED + prog;
	*ret = TAKE_PTR(g);
	return 0;
}

static void keeper_quit(struct vm_keeper *k);

/* An EXIT from the guest. */
static void proc_exited(struct vm_keeper *k, const uint8_t *b)
{
	struct backend_instance *bi = k->bi;
	struct vm_data *d = bi->data;
	uint32_t id = vm_get32(b), code = vm_get32(b + 4), sig = vm_get32(b + 8);
	struct vm_proc *p = NULL;
	const char *reason;
	json_t *exit;
	char sandbox[32];

	for (struct vm_proc *q = d->procs; q && !p; q = q->next)
		if (q->k == k && q->id == id && q->sent)
			p = q;
	if (!p)
		return;
	log_info("%s: %s: exec round trip in the VM (%s) %llu us", bi->name, p->sandbox,
		 k->lease[0] ? "lease" : "one-shot", now_usec() - p->sent_usec);
	if (p->timed_out) {
		reason = "timeout";
		code = 0;
		sig = SIGKILL;
	} else if (sig) {
		reason = p->killed && sig == SIGKILL			       ? "killed"
			 : sig == SIGKILL && (p->limits_hit & VM_LIMIT_MEMORY) ? "memory"
									       : "signaled";
		code = 0;
	} else
		reason = "exited";
	proc_denials_suppressed(p);
	exit = exit_json(p, code, sig, reason);
	if (k->oneshot == p) {
		/* Reported once the VM is gone (keeper_ended()). */
		k->oneshot_exit = exit;
		k->oneshot = NULL;
		proc_free(d, p);
		keeper_quit(k);
		return;
	}
	memcpy(sandbox, p->sandbox, sizeof(sandbox));
	proc_free(d, p);
	if (exit)
		bi->host->exited(bi->host, bi, sandbox, exit);
	json_decref(exit);
}

static void keeper_ready(struct vm_keeper *k, const uint8_t *b)
{
	struct backend_instance *bi = k->bi;
	backend_acquire_cb acquired = TAKE_PTR(k->acquired);

	k->ready = true;
	log_info("%s: %s: VM ready %u ms after QEMU's start (guest kernel boot to the agent's "
		 "hello %u ms; QEMU's start and firmware the rest)",
		 bi->name, k->lease[0] ? k->lease : "one-shot", vm_get32(b), vm_get32(b + 4));
	if (acquired)
		acquired(bi, 0, NULL, NULL, k->cb_ud);
	if (k->oneshot) {
		struct vm_proc *p = k->oneshot;

		if (proc_send(p) < 0) {
			proc_answer(p, "cannot hand the command to its VM");
			proc_free(bi->data, p);
			keeper_quit(k);
			return;
		}
		proc_answer(p, NULL);
	}
}

/* What the keeper did with the VM's baseline. */
static void keeper_baseline_note(struct vm_keeper *k, const uint8_t *b, uint32_t len)
{
	struct backend_instance *bi = k->bi;
	struct vm_data *d = bi->data;
	const char *what = k->lease[0] ? k->lease : "one-shot";
	char text[520];
	unsigned ms, kib;

	if (len < 9)
		return;
	ms = vm_get32(b + 1);
	kib = vm_get32(b + 5);
	(void)snprintf(text, sizeof(text), "%.*s", (int)(len - 9), (const char *)b + 9);
	switch (b[0]) {
	case 'r':
		log_info("%s: %s: VM restored from baseline %s (%u KiB streamed and verified in "
			 "%u ms)",
			 bi->name, what, text, kib, ms);
		break;
	case 's':
		log_info("%s: %s: baseline %s saved (%u KiB in %u ms)", bi->name, what, text, kib,
			 ms);
		if (d->bl)
			vmb_evict(d->bl);
		break;
	case 'i':
		log_warning("%s: %s: baseline invalid: %s (booting cold)", bi->name, what, text);
		bi->host->event(bi->host, "backend-baseline-invalid",
				json_pack("{s:s,s:s}", "launcher", bi->name, "reason", text));
		break;
	default:
		log_warning("%s: %s: baseline not saved: %s", bi->name, what, text);
		break;
	}
}

static void keeper_handle(struct vm_keeper *k, uint8_t type, const uint8_t *b, uint32_t len)
{
	struct backend_instance *bi = k->bi;

	switch (type) {
	case VK_READY:
		if (len == 8 && !k->ready)
			keeper_ready(k, b);
		break;
	case VK_EXIT:
		if (len == 12)
			proc_exited(k, b);
		break;
	case VK_ERROR:
		log_warning("%s: %s: the VM says: %.*s", bi->name,
			    k->lease[0] ? k->lease : "one-shot", (int)len, (const char *)b);
		break;
	case VK_LOST:
		(void)snprintf(k->reason, sizeof(k->reason), "%.*s", (int)len, (const char *)b);
		break;
	case VK_BASELINE:
		keeper_baseline_note(k, b, len);
		break;
	case VK_LIMIT:
		proc_limit(k, b, len);
		break;
	case VK_DENIAL:
		proc_denial(k, b, len);
		break;
	default:
		break;
	}
}

/* Read what the keeper sent so far into rbuf. */
static void keeper_drain(struct vm_keeper *k)
{
	for (;;) {
		ssize_t n;

		if (k->rcap - k->rlen < 65536) {
			uint8_t *nb = realloc(k->rbuf, k->rcap + 65536);

			if (!nb)
				break;
			k->rbuf = nb;
			k->rcap += 65536;
		}
		n = read(k->ctl, k->rbuf + k->rlen, k->rcap - k->rlen);
		if (n <= 0)
			break;
		k->rlen += (size_t)n;
	}
}

static void status_drain(struct vm_keeper *k)
{
	for (;;) {
		ssize_t n;

		if (k->status_len + 1 >= sizeof(k->status))
			/* Keep the tail. */
			memmove(k->status, k->status + sizeof(k->status) / 2,
				k->status_len -= sizeof(k->status) / 2);
		n = read(k->status_fd, k->status + k->status_len,
			 sizeof(k->status) - 1 - k->status_len);
		if (n <= 0)
			break;
		k->status_len += (size_t)n;
	}
	k->status[k->status_len] = 0;
}

/* The frames in rbuf, one at a time: each may end the keeper's commands (and callbacks). */
static void keeper_dispatch(struct vm_keeper *k)
{
	size_t off = 0;

	while (k->rlen - off >= VM_FRAME_HEADER) {
		uint32_t len = vm_get32(k->rbuf + off + 1);
		uint8_t type = k->rbuf[off];

		if (k->rlen - off - VM_FRAME_HEADER < len)
			break;
		off += VM_FRAME_HEADER + len;
		keeper_handle(k, type, k->rbuf + off - len, len);
	}
	memmove(k->rbuf, k->rbuf + off, k->rlen - off);
	k->rlen -= off;
}

static int on_ctl(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct vm_keeper *k = userdata;

	keeper_drain(k);
	keeper_dispatch(k);
	if (revents & (EPOLLHUP | EPOLLERR))
		event_source_free(TAKE_PTR(k->ctl_src));
	return 0;
}

static int on_status(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct vm_keeper *k = userdata;

	status_drain(k);
	if (revents & (EPOLLHUP | EPOLLERR))
		event_source_free(TAKE_PTR(k->status_src));
	return 0;
}

/* The keeper exited: the VM is gone. */
static void keeper_ended(struct vm_keeper *k)
{
	struct backend_instance *bi = k->bi;
	struct vm_data *d = bi->data;
	backend_acquire_cb acquired = TAKE_PTR(k->acquired);
	backend_done_cb released = TAKE_PTR(k->released);
	_cleanup_json_ json_t *lost_exit = NULL;
	const char *what = k->lease[0] ? k->lease : "one-shot";
	char *nl;

	keeper_drain(k);
	keeper_dispatch(k);
	status_drain(k);
	k->ended = true;
	net_stop(k);
	event_source_free(TAKE_PTR(k->pid_src));
	event_source_free(TAKE_PTR(k->ctl_src));
	event_source_free(TAKE_PTR(k->status_src));
	event_source_free(TAKE_PTR(k->release_timer));
	k->ctl = safe_close(k->ctl);
	if (!k->quitting && !k->reason[0])
		(void)snprintf(k->reason, sizeof(k->reason), "the VM's keeper ended");
	while ((nl = strrchr(k->status, '\n')) && !nl[1])
		*nl = 0;
	if (!k->quitting)
		log_warning("%s: %s: the VM is gone: %s%s%s", bi->name, what, k->reason,
			    k->status[0] ? "; QEMU said: " : "", k->status);

	if (acquired) {
		/* The lease never had its VM: nothing to keep for its release. */
		char msg[700];
		void *ud = k->cb_ud;

		(void)snprintf(msg, sizeof(msg), "the VM did not start: %s", k->reason);
		keeper_free(d, k);
		acquired(bi, -EIO, msg, NULL, ud);
		return;
	}
	if (k->oneshot) {
		struct vm_proc *p = k->oneshot;

		if (p->cb) {
			char msg[700];

			(void)snprintf(msg, sizeof(msg),
				       "the VM ended before the command started: %s",
				       k->quitting ? "killed" : k->reason);
			proc_answer(p, msg);
			proc_free(d, p);
		}
	}
	if (k->oneshot_exit) {
		_cleanup_json_ json_t *exit = TAKE_PTR(k->oneshot_exit);
		char sandbox[32];

		(void)snprintf(sandbox, sizeof(sandbox), "%s",
			       json_string_value(json_object_get(exit, "sandbox")));
		keeper_free(d, k);
		bi->host->exited(bi->host, bi, sandbox, exit);
		return;
	}
	/* Its commands still running end now. */
	for (;;) {
		struct vm_proc *p = NULL;
		char sandbox[32];
		json_t *exit;

		for (struct vm_proc *q = d->procs; q && !p; q = q->next)
			if (q->k == k)
				p = q;
		if (!p)
			break;
		exit = exit_json(p, 0, SIGKILL, "launcher-lost");
		memcpy(sandbox, p->sandbox, sizeof(sandbox));
		if (p->cb) {
			proc_answer(p, "the VM is gone");
			json_decref(exit);
			exit = NULL;
		}
		proc_free(d, p);
		if (exit)
			bi->host->exited(bi->host, bi, sandbox, exit);
		json_decref(exit);
	}
	if (released) {
		void *ud = k->cb_ud;

		keeper_free(d, k);
		released(bi, 0, NULL, ud);
		return;
	}
	if (k->lease[0]) {
		/* Kept until the release, so that its later spawns say why they fail. */
		if (!k->quitting)
			bi->host->event(bi->host, "backend-lease-lost",
					json_pack("{s:s,s:s,s:s}", "launcher", bi->name,
						  "sandboxId", k->lease, "reason", k->reason));
		return;
	}
	keeper_free(d, k);
}

static int on_keeper(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct vm_keeper *k = userdata;
	siginfo_t si = { 0 };

	if (waitid((idtype_t)P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
		return 0;
	keeper_ended(k);
	return 0;
}

static int on_release_timeout(struct event_source *s, void *userdata)
{
	struct vm_keeper *k = userdata;

	log_warning("%s: %s: the VM's keeper did not end: killed", k->bi->name, k->lease);
	(void)syscall(SYS_pidfd_send_signal, k->pidfd, SIGKILL, NULL, 0);
	return 0;
}

/* Let the VM go: the keeper kills QEMU, reaps it and exits (keeper_ended() follows). */
static void keeper_quit(struct vm_keeper *k)
{
	if (k->ended || k->quitting)
		return;
	k->quitting = true;
	if (keeper_send(k, VK_QUIT, NULL, 0, NULL, 0) < 0)
		(void)syscall(SYS_pidfd_send_signal, k->pidfd, SIGKILL, NULL, 0);
	if (!k->release_timer)
		(void)event_add_timer(k->bi->host->loop, 5 * 1000 * 1000, false, on_release_timeout,
				      k, &k->release_timer);
}

/* Boot a VM (for a lease, or lease NULL for a one-shot) with the workspace ws. */
static int keeper_start(struct backend_instance *bi, const char *lease,
			const struct backend_workspace *ws, struct vm_keeper **ret)
{
	struct vm_data *d = bi->data;
	_cleanup_strv_free_ char **qargv = NULL;
	_cleanup_free_ char *append = NULL, *wpath = NULL;
	struct bytes init = { 0 };
	struct keeper_args ka = { 0 };
	struct vm_keeper *k = NULL;
	int sv[2] = { -1, -1 }, cs[2] = { -1, -1 }, st[2] = { -1, -1 }, null_fd = -1, pidfd = -1;
	int qm[2] = { -1, -1 }, ns[2] = { -1, -1 };
	struct vmb_job *job = NULL;
	int r;
	bool has_ws = ws && ws->host_path && ws->mount_point;
	size_t nq = 0;
	uint8_t hdr[VM_FRAME_HEADER] = { 0 }, ent[64];
	pid_t parent = getpid();
	static char qpath[] = "PATH=/usr/bin:/bin";
	char *qenvp[] = { qpath, NULL };
	pid_t pid;

	if (!d || !d->qemu)
		return -ENODEV;
	if (getrandom(ent, sizeof(ent), 0) != (ssize_t)sizeof(ent))
		return -errno;

	/* INIT: time (filled by the keeper), flags, entropy, mount point. */
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
	r = -ENOMEM;
	if (init.oom)
		goto fail;
	vm_frame_header(init.d, VM_INIT, (uint32_t)(init.len - VM_FRAME_HEADER));

	/* QEMU's command line. */
	if (asprintf(&append,
		     "console=ttyS0 quiet panic=-1 tsc_early_khz=%lu tsc=reliable "
		     "cryptomgr.notests initcall_blacklist=crypto_kdf108_init,init_kprobe_trace",
		     d->tsc_khz) < 0) {
		append = NULL;
		goto fail;
	}
	qargv = calloc(56, sizeof(char *));
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
	/* Network "proxy"'s connections (forward-mux.h); the guest's forwarder opens it only when a
	 * command needs the proxy. */
	Q("-device");
	Q("virtserialport,chardev=net,name=net");
	Q("-chardev");
	Q("socket,id=net,fd=6");
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
	if (d->bl) {
		/* QMP for the baseline's save or restore (vm-baseline.c). */
		Q("-chardev");
		Q("socket,id=qmp,fd=4");
		Q("-mon");
		Q("chardev=qmp,mode=control");
	}
	Q("-sandbox");
	Q("on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
#undef Q
#undef QF

	if (d->bl) {
		char reason[512];

		(void)vmb_plan(d->bl, d->qemu, d->kernel, d->initrd, qargv, d->kvm ? "kvm" : "tcg",
			       d->memory_mib, &job, reason, sizeof(reason));
		if (reason[0]) {
			log_warning("%s: baseline refused: %s (booting cold)", bi->name, reason);
			bi->host->event(bi->host, "backend-baseline-invalid",
					json_pack("{s:s,s:s}", "launcher", bi->name, "reason",
						  reason));
		}
	}
	r = -errno;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cs) < 0 ||
	    pipe2(st, O_CLOEXEC) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ns) < 0)
		goto fail;
	if (d->bl && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qm) < 0)
		goto fail;
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0)
		goto fail;
	k = calloc(1, sizeof(*k));
	r = -ENOMEM;
	if (!k)
		goto fail;
	ka = (struct keeper_args){
		.qemu_argv = qargv,
		.qemu_envp = qenvp,
		.ctl = cs[1],
		.agent = sv[0],
		.qemu_end = sv[1],
		.status = st[1],
		.null_fd = null_fd,
		.init = init.d,
		.init_len = init.len,
		.qmp = qm[0],
		.qmp_end = qm[1],
		.bl = job,
		.net_end = ns[1],
	};
	pid = fork_pidfd(&pidfd);
	if (pid < 0) {
		r = (int)pid;
		goto fail;
	}
	if (pid == 0) {
		/* Its own process group, so that a terminal's signals never reach it; and it
		 * ends with the controller (QEMU with it). */
		(void)setpgid(0, 0);
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		keeper_run(&ka);
	}
	safe_close(sv[0]);
	safe_close(sv[1]);
	safe_close(cs[1]);
	safe_close(st[1]);
	safe_close(null_fd);
	safe_close(qm[0]);
	safe_close(qm[1]);
	safe_close(ns[1]);
	vmb_job_free(job);
	free(init.d);
	k->bi = bi;
	k->has_forward = !net_needs_fetch(d);
	k->net_fd = ns[0];
	fwd_mux_init(&k->mux, &net_ops, k);
	k->pid = pid;
	k->pidfd = pidfd;
	k->ctl = cs[0];
	k->status_fd = st[0];
	k->has_ws = has_ws;
	k->read_only = has_ws && ws->read_only;
	k->next_id = 1;
	k->t_start = now_usec();
	if (lease)
		(void)snprintf(k->lease, sizeof(k->lease), "%s", lease);
	(void)fcntl(cs[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(st[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(ns[0], F_SETFL, O_NONBLOCK);
	k->net_events = EPOLLIN;
	r = event_add_io(bi->host->loop, pidfd, EPOLLIN, on_keeper, k, &k->pid_src);
	if (r >= 0)
		r = event_add_io(bi->host->loop, ns[0], EPOLLIN, on_net, k, &k->net_src);
	if (r >= 0)
		r = event_add_io(bi->host->loop, cs[0], EPOLLIN, on_ctl, k, &k->ctl_src);
	if (r >= 0)
		r = event_add_io(bi->host->loop, st[0], EPOLLIN, on_status, k, &k->status_src);
	if (r < 0) {
		(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		(void)waitid((idtype_t)P_PIDFD, (id_t)pidfd, &(siginfo_t){ 0 }, WEXITED);
		k->next = NULL;
		d->keepers = k; /* (keeper_free() unlinks what it finds) */
		keeper_free(d, k);
		return r;
	}
	k->next = d->keepers;
	d->keepers = k;
	*ret = k;
	return 0;

fail:
	free(init.d);
	free(k);
	safe_close(sv[0]);
	safe_close(sv[1]);
	safe_close(cs[0]);
	safe_close(cs[1]);
	safe_close(st[0]);
	safe_close(st[1]);
	safe_close(null_fd);
	safe_close(qm[0]);
	safe_close(qm[1]);
	safe_close(ns[0]);
	safe_close(ns[1]);
	vmb_job_free(job);
	return r;
}

/* fd index named by plan.stdio.<name>, or -1. */
static int stdio_fd(json_t *plan, const char *name, const int *fds, size_t n_fds)
{
	json_t *v = json_object_get(json_object_get(plan, "stdio"), name);
	json_int_t k = json_is_integer(v) ? json_integer_value(v) : -1;

	return k >= 0 && (size_t)k < n_fds ? fds[k] : -1;
}

/* A one-shot's VM: started; the command handed over once it is ready. */
static int oneshot_boot(struct backend_instance *bi, struct vm_proc *p,
			const struct backend_workspace *ws)
{
	struct vm_data *d = bi->data;
	struct vm_keeper *k;
	int r = keeper_start(bi, NULL, ws, &k);

	if (r < 0)
		return r;
	p->k = k;
	p->id = k->next_id++;
	vm_put32(p->msg + 1, p->id);
	k->oneshot = p;
	p->next = d->procs;
	d->procs = p;
	return 0;
}

/* Network "proxy" needs the forwarder in the default initramfs: fetched, and the initramfs
 * rebuilt with it, on first use (an initramfs of one's own carries its own). */
static bool net_needs_fetch(struct vm_data *d)
{
	_cleanup_free_ char *forward = NULL, *agent = NULL;

	if (!d->initrd_default)
		return false;
	forward = forward_path(d);
	if (!forward || asprintf(&agent, "%s/agent", d->helpers_dir) < 0)
		return true;
	return initramfs_stale(d, agent, forward);
}

/* The forwarder's fetch ended: the one-shots that waited for it boot, or fail saying why. */
static void on_net_fetched(struct backend_instance *bi, int r, const char *message, void *ud)
{
	struct vm_data *d = bi->data;
	struct vm_proc *waiting = TAKE_PTR(d->net_wait);

	if (r < 0)
		log_warning("%s: cannot fetch the guest's forwarder (network proxy): %s", bi->name,
			    message ? message : strerror(-r));
	while (waiting) {
		struct vm_proc *p = waiting;
		backend_spawn_cb cb = TAKE_PTR(p->cb);
		struct backend_workspace ws = { .host_path = p->wait_path,
						.dir_fd = -1,
						.read_only = p->wait_ro,
						.mount_point = p->wait_mount };
		char msg[1200];
		int k = r;

		waiting = p->next;
		p->next = NULL;
		if (k >= 0)
			k = oneshot_boot(bi, p, p->wait_ws ? &ws : NULL);
		if (k >= 0) {
			p->cb = cb;
			continue;
		}
		if (r < 0)
			(void)snprintf(msg, sizeof(msg), "network proxy: the guest's forwarder: %s",
				       message ? message : strerror(-r));
		else
			(void)snprintf(msg, sizeof(msg), "cannot start the VM: %s", strerror(-k));
		{
			_cleanup_json_ json_t *e = setup_error(msg);
			void *pud = p->ud;

			proc_free(d, p);
			cb(bi, NULL, -1, -1, 0, e, pud);
		}
	}
}

static int net_fetch(struct backend_instance *bi)
{
	struct vm_data *d = bi->data;
	const char *tool = getenv("CORDON_VM_HELPERS");
	struct vm_prep *p = calloc(1, sizeof(*p));
	char *argv[8];
	size_t n = 0;
	int r;

	if (!p)
		return -ENOMEM;
	*p = (struct vm_prep){
		.bi = bi, .done = on_net_fetched, .net = true, .pidfd = -1, .err_fd = -1
	};
	argv[n++] = (char *)(!isempty(tool) ? tool : CORDON_LIBEXECDIR "/cordon-vm-helpers");
	argv[n++] = (char *)"fetch";
	argv[n++] = (char *)"--dir";
	argv[n++] = d->helpers_dir;
	if (d->helpers_base_url) {
		argv[n++] = (char *)"--base-url";
		argv[n++] = d->helpers_base_url;
	}
	argv[n++] = (char *)"forward";
	argv[n] = NULL;
	log_info("%s: fetching the guest's forwarder (network proxy) into %s", bi->name,
		 d->helpers_dir);
	r = prep_spawn(p, argv);
	if (r < 0) {
		prep_free(p);
		return r;
	}
	d->prep = p;
	return 0;
}

static int vm_spawn(struct backend_instance *bi, const struct backend_spawn *req,
		    backend_spawn_cb cb, void *ud)
{
	struct vm_data *d = bi->data;
	const struct backend_workspace *ws = req->workspace;
	_cleanup_strv_free_ char **argv = NULL, **envp = NULL;
	struct bytes msg = { 0 };
	struct field_error fe;
	const char *cwd = NULL, *net = NULL;
	uint64_t timeout_ms = 0, proxy_port = VM_PROXY_PORT;
	struct vm_keeper *k = NULL;
	struct vm_proc *p;
	size_t argc = 0, envc = 0;
	bool ro = ws && ws->host_path && ws->read_only;
	int r;

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
	if (r >= 0)
		r = ipc_json_get_string(req->plan, "network", false, "plan", &net, &fe);
	if (r >= 0)
		r = ipc_json_get_uint64(req->plan, "proxyPort", false, 1, 65535, "plan",
					&proxy_port, &fe);
	if (r < 0)
		return r;
	/* (the descriptor claims these two; the core refuses other modes before this) */
	if (net && !streq(net, "none") && !streq(net, "proxy"))
		return -EOPNOTSUPP;
	if (net && streq(net, "proxy") && proxy_port != VM_PROXY_PORT)
		return -EOPNOTSUPP;
	if (req->lease) {
		const char *why = NULL;
		char buf[700];

		k = keeper_find(d, req->lease);
		if (!k)
			why = "this lease has no VM";
		else if (k->ended) {
			(void)snprintf(buf, sizeof(buf), "the lease's VM is gone: %s", k->reason);
			why = buf;
		} else if (!k->ready || k->quitting)
			why = "the lease's VM is not running";
		else if (k->read_only && !ro && ws && ws->host_path)
			why = "the lease's workspace is read-only";
		else if (net && streq(net, "proxy") && !k->has_forward) {
			/* Booted before the forwarder was fetched: fetched now, for the next VM. */
			if (!d->prep && net_needs_fetch(d))
				(void)net_fetch(bi);
			why = "network proxy: the lease's VM was booted without the guest's "
			      "forwarder, which is fetched on first use: acquire the lease again";
		}
		if (why) {
			_cleanup_json_ json_t *e = setup_error(why);

			cb(bi, NULL, -1, -1, 0, e, ud);
			return 0;
		}
	}

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->fds[0] = p->fds[1] = p->fds[2] = p->proxy_fd = -1;
	if (net && streq(net, "proxy")) {
		r = net_listener(p);
		if (r < 0) {
			log_warning_errno(r, "%s: cannot make the proxy's listener: %m", bi->name);
			goto fail;
		}
	}
	/* VK_EXEC: fd mask, then the agent's EXEC: id, flags, counts, cwd, argv, env. */
	{
		static const char *const names[] = { "stdin", "stdout", "stderr" };
		uint8_t fixed[1 + 4 + 1 + 8] = { 0 };

		for (; argv[argc]; argc++)
			;
		for (; envp && envp[envc]; envc++)
			;
		for (int i = 0; i < 3; i++) {
			int fd = stdio_fd(req->plan, names[i], req->fds, req->n_fds);

			if (fd < 0)
				continue;
			p->fds[i] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
			if (p->fds[i] < 0) {
				r = -errno;
				goto fail;
			}
			fixed[0] |= (uint8_t)(1 << i);
		}
		p->fd_mask = fixed[0];
		/* id at fixed + 1, filled below */
		fixed[5] = (uint8_t)((k && ro && !k->read_only ? VM_EXEC_READ_ONLY : 0) |
				     (p->net_dir ? VM_EXEC_PROXY : 0));
		vm_put32(fixed + 6, (uint32_t)argc);
		vm_put32(fixed + 10, (uint32_t)envc);
		bytes_add(&msg, fixed, sizeof(fixed));
		bytes_str(&msg, cwd ? cwd : "/");
		for (size_t i = 0; i < argc; i++)
			bytes_str(&msg, argv[i]);
		for (size_t i = 0; i < envc; i++)
			bytes_str(&msg, envp[i]);
	}
	r = guard_build(req, &p->guard, &p->guard_len);
	if (r < 0)
		goto fail;
	r = -ENOMEM;
	if (msg.oom || msg.len > (1 << 19))
		goto fail;
	p->msg = TAKE_PTR(msg.d);
	p->msg_len = msg.len;
	p->timeout_ms = timeout_ms;
	p->start_usec = now_usec();
	(void)snprintf(p->sandbox, sizeof(p->sandbox), "vm-%llu", ++d->next);

	if (!k && p->net_dir && net_needs_fetch(d)) {
		/* Network "proxy" and no forwarder in the initramfs yet: fetched (and the
		 * initramfs rebuilt) first; the VM boots once that is done. */
		p->cb = cb;
		p->ud = ud;
		r = -ENOMEM;
		p->wait_ws = ws && ws->host_path && ws->mount_point;
		if (p->wait_ws) {
			p->wait_ro = ws->read_only;
			p->wait_path = strdup(ws->host_path);
			p->wait_mount = strdup(ws->mount_point);
			if (!p->wait_path || !p->wait_mount)
				goto fail;
		}
		if (!d->prep) {
			r = net_fetch(bi);
			if (r < 0)
				goto fail;
		}
		p->next = d->net_wait;
		d->net_wait = p;
		return 0;
	}
	if (!k) {
		/* A one-shot: a VM of its own, the command handed over once it is ready. */
		r = oneshot_boot(bi, p, ws);
		if (r < 0)
			goto fail;
		p->cb = cb;
		p->ud = ud;
		return 0;
	}
	p->k = k;
	p->id = k->next_id++;
	vm_put32(p->msg + 1, p->id);
	p->next = d->procs;
	d->procs = p;
	r = proc_send(p);
	if (r < 0) {
		_cleanup_json_ json_t *e = setup_error("cannot hand the command to the lease's VM");

		proc_free(d, p);
		cb(bi, NULL, -1, -1, 0, e, ud);
		return 0;
	}
	cb(bi, p->sandbox, fd_dup_cloexec(k->pidfd, 3), TAKE_FD(p->proxy_fd), k->pid, NULL, ud);
	return 0;

fail:
	free(msg.d);
	for (int i = 0; i < 3; i++)
		safe_close(p->fds[i]);
	safe_close(p->proxy_fd);
	net_dir_remove(p->net_dir);
	free(p->wait_path);
	free(p->wait_mount);
	free(p->msg);
	free(p->guard);
	free(p);
	return r;
}

static void vm_acquire(struct backend_instance *bi, const char *lease,
		       const struct backend_workspace *ws, int archive_fd, backend_acquire_cb done,
		       void *ud)
{
	struct vm_data *d = bi->data;
	struct vm_keeper *k;
	char msg[200];
	int r;

	safe_close(archive_fd); /* (a direct backend gets none) */
	if (!d || keeper_find(d, lease)) {
		done(bi, -EEXIST, "this lease has a VM already", NULL, ud);
		return;
	}
	r = keeper_start(bi, lease, ws, &k);
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg), "cannot start the VM: %s", strerror(-r));
		done(bi, r, msg, NULL, ud);
		return;
	}
	/* Answered once the guest's agent is ready (keeper_ready()), or the VM is gone. */
	k->acquired = done;
	k->cb_ud = ud;
}

static void vm_release(struct backend_instance *bi, const char *lease, int archive_fd,
		       backend_done_cb done, void *ud)
{
	struct vm_data *d = bi->data;
	struct vm_keeper *k = d ? keeper_find(d, lease) : NULL;

	safe_close(archive_fd);
	if (!k) {
		done(bi, 0, NULL, ud);
		return;
	}
	if (k->ended) {
		keeper_free(d, k);
		done(bi, 0, NULL, ud);
		return;
	}
	k->released = done;
	k->cb_ud = ud;
	keeper_quit(k);
}

static int vm_kill(struct backend_instance *bi, const char *sandbox, int sig)
{
	struct vm_data *d = bi->data;
	struct vm_proc *p = d ? proc_find(d, sandbox) : NULL;
	uint8_t b[8];

	if (!p)
		return -ESRCH;
	if (!p->sent) {
		/* A one-shot whose VM is still booting: the VM goes. */
		keeper_quit(p->k);
		return 0;
	}
	if (sig == SIGKILL)
		p->killed = true;
	vm_put32(b, p->id);
	vm_put32(b + 4, (uint32_t)sig);
	return keeper_send(p->k, VK_SIGNAL, b, sizeof(b), NULL, 0);
}

static int vm_dispose(struct backend_instance *bi)
{
	struct vm_data *d = bi->data;

	/* One-shots waiting for the forwarder's fetch: answered. */
	if (d && d->net_wait)
		on_net_fetched(bi, -ECANCELED, "the backend was disposed", NULL);
	while (d && d->procs) {
		struct vm_proc *p = d->procs;

		if (p->cb)
			proc_answer(p, "the backend was disposed");
		proc_free(d, p);
	}
	while (d && d->keepers) {
		struct vm_keeper *k = d->keepers;
		backend_acquire_cb acquired = TAKE_PTR(k->acquired);
		backend_done_cb released = TAKE_PTR(k->released);
		void *ud = k->cb_ud;

		if (!k->ended) {
			(void)syscall(SYS_pidfd_send_signal, k->pidfd, SIGKILL, NULL, 0);
			(void)waitid((idtype_t)P_PIDFD, (id_t)k->pidfd, &(siginfo_t){ 0 }, WEXITED);
		}
		keeper_free(d, k);
		if (acquired)
			acquired(bi, -ECANCELED, "the backend was disposed", NULL, ud);
		if (released)
			released(bi, 0, NULL, ud);
	}
	return 0;
}

static void vm_free(struct backend_instance *bi)
{
	struct vm_data *d = bi->data;

	/* Freed mid-prepare: its child is killed; nobody waits for its done any more. */
	if (d)
		prep_free(TAKE_PTR(d->prep));
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
	.acquire = vm_acquire,
	.release = vm_release,
	.kill = vm_kill,
	.dispose = vm_dispose,
	.free = vm_free,
};
