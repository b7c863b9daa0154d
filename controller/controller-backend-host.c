/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * builtin:host — unconfined execution: the command runs as the user, on the host, with only the
 * environment, working directory and stdio of the plan. It exists for policies that say
 * "hostExecution": true on hosts whose admin floor allows host mode; it is only ever selected by
 * an explicit activation (never by auto, never as a fallback), and a process whose policy does
 * not allow host execution is refused while it is active.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/system.h"
#include "common/util.h"
#include "controller/controller-backend.h"
#include "controller/controller.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

struct host_child {
	struct host_child *next;
	struct backend_instance *bi;
	char sandbox[32];
	pid_t pid;
	int pidfd;
	struct event_source *src;
	unsigned long long start_usec;
	bool killed;
};

struct host_data {
	struct host_child *children;
	unsigned long long next;
};

static json_t *host_descriptor(const struct backend_ops *ops)
{
	return json_pack(
		"{s:s,s:s,s:s,s:{s:[]},s:{s:[s],s:s,s:[]}}", "kind", "host", "name",
		"Host (unconfined)", "description",
		"Runs commands directly on the host, without any sandbox. Only for policies "
		"with hostExecution and hosts whose admin floor allows host mode.",
		"settings", "fields", "claims", "platforms", "linux", "isolation", "none",
		"enforces");
}

static void done_ok(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	done(bi, 0, NULL, ud);
}

static void host_configure(struct backend_instance *bi, json_t *settings, json_t *secrets,
			   backend_done_cb done, void *ud)
{
	done_ok(bi, done, ud);
}

static void host_prepare(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	bi->data = calloc(1, sizeof(struct host_data));
	if (!bi->data)
		done(bi, -ENOMEM, "out of memory", ud);
	else
		done_ok(bi, done, ud);
}

static void host_probe(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	done_ok(bi, done, ud);
}

static void child_free(struct host_data *d, struct host_child *ch)
{
	for (struct host_child **pp = &d->children; *pp; pp = &(*pp)->next)
		if (*pp == ch) {
			*pp = ch->next;
			break;
		}
	event_source_free(ch->src);
	safe_close(ch->pidfd);
	free(ch);
}

static int on_child(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct host_child *ch = userdata;
	struct backend_instance *bi = ch->bi;
	siginfo_t si = { 0 };
	_cleanup_json_ json_t *exit = NULL;
	bool sig;

	if (waitid((idtype_t)P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
		return 0;
	sig = si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED;
	exit = json_pack("{s:s,s:i,s:i,s:i,s:s,s:I,s:{s:b,s:b}}", "sandbox", ch->sandbox, "pid",
			 (int)ch->pid, "exitCode", sig ? 0 : si.si_status, "signal",
			 sig ? si.si_status : 0, "reason",
			 ch->killed ? "killed"
			 : sig	    ? "signaled"
				    : "exited",
			 "durationUsec", (json_int_t)(now_usec() - ch->start_usec), "limits",
			 "pids", false, "memory", false);
	{
		char sandbox[32];

		memcpy(sandbox, ch->sandbox, sizeof(sandbox));
		child_free(bi->data, ch);
		if (exit)
			controller_process_exited_on(bi->ctl, bi, sandbox, exit);
	}
	return 0;
}

/* fd index named by plan.stdio.<name>, or -1. */
static int stdio_fd(json_t *plan, const char *name, const int *fds, size_t n_fds)
{
	json_t *v = json_object_get(json_object_get(plan, "stdio"), name);
	json_int_t k = json_is_integer(v) ? json_integer_value(v) : -1;

	return k >= 0 && (size_t)k < n_fds ? fds[k] : -1;
}

static int host_spawn(struct backend_instance *bi, json_t *plan, const int *fds, size_t n_fds,
		      backend_spawn_cb cb, void *ud)
{
	struct host_data *d = bi->data;
	_cleanup_strv_free_ char **argv = NULL, **envp = NULL;
	struct field_error fe;
	const char *cwd = NULL;
	struct host_child *ch;
	int io[3], pidfd = -1, r;
	pid_t pid;

	if (!d)
		return -ENODEV;
	r = ipc_json_get_strv(plan, "argv", true, 4096, 128 * 1024, "plan", &argv, &fe);
	if (r >= 0)
		r = ipc_json_get_strv(plan, "envp", false, 4096, 128 * 1024, "plan", &envp, &fe);
	if (r >= 0)
		r = ipc_json_get_string(plan, "cwd", false, "plan", &cwd, &fe);
	if (r < 0)
		return r;
	io[0] = stdio_fd(plan, "stdin", fds, n_fds);
	io[1] = stdio_fd(plan, "stdout", fds, n_fds);
	io[2] = stdio_fd(plan, "stderr", fds, n_fds);

	{
		struct clone_args {
			unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack,
				stack_size, tls;
		} ca = { .flags = 0x00001000ULL /* CLONE_PIDFD */,
			 .pidfd = (unsigned long long)(uintptr_t)&pidfd,
			 .exit_signal = SIGCHLD };

		pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	}
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		/* Child: stdio in place, everything else closed on exec, then the command. */
		for (int i = 0; i < 3; i++)
			if (dup2(io[i] >= 0 ? io[i] : null, i) < 0)
				_exit(126);
		(void)setsid();
		(void)fds_cloexec_from(3);
		if (cwd && chdir(cwd) < 0)
			_exit(126);
		execvpe(argv[0], argv, envp ? envp : (char *[]){ NULL });
		_exit(errno == ENOENT ? 127 : 126);
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		(void)kill(pid, SIGKILL);
		safe_close(pidfd);
		return -ENOMEM;
	}
	ch->bi = bi;
	ch->pid = pid;
	ch->pidfd = pidfd;
	ch->start_usec = now_usec();
	(void)snprintf(ch->sandbox, sizeof(ch->sandbox), "host-%llu", ++d->next);
	r = event_add_io(bi->ctl->loop, pidfd, EPOLLIN, on_child, ch, &ch->src);
	if (r < 0) {
		(void)kill(pid, SIGKILL);
		safe_close(pidfd);
		free(ch);
		return r;
	}
	ch->next = d->children;
	d->children = ch;
	cb(bi, ch->sandbox, fd_dup_cloexec(pidfd, 3), -1, pid, NULL, ud);
	return 0;
}

static int host_kill(struct backend_instance *bi, const char *sandbox, int sig)
{
	struct host_data *d = bi->data;

	for (struct host_child *ch = d ? d->children : NULL; ch; ch = ch->next)
		if (streq(ch->sandbox, sandbox)) {
			/* The command's own process group: setsid made it the leader. */
			if (sig == SIGKILL)
				ch->killed = true;
			if (kill(-ch->pid, sig) < 0 && kill(ch->pid, sig) < 0)
				return -errno;
			return 0;
		}
	return -ESRCH;
}

static int host_dispose(struct backend_instance *bi)
{
	struct host_data *d = bi->data;

	while (d && d->children) {
		(void)kill(-d->children->pid, SIGKILL);
		child_free(d, d->children);
	}
	return 0;
}

static void host_free(struct backend_instance *bi)
{
	(void)host_dispose(bi);
	free(bi->data);
	bi->data = NULL;
}

const struct backend_ops backend_host_ops = {
	.source = "builtin",
	.kind = "host",
	.confined = false,
	.descriptor = host_descriptor,
	.configure = host_configure,
	.prepare = host_prepare,
	.probe = host_probe,
	.hello = NULL,
	.spawn = host_spawn,
	.kill = host_kill,
	.dispose = host_dispose,
	.free = host_free,
};
