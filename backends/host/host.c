/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * builtin:host — unconfined execution: the command runs as the user, on the host, with only the
 * environment, working directory and stdio of the plan. It exists for policies that say
 * "hostExecution": true on hosts whose admin floor allows host mode; it is only ever selected by
 * an explicit activation (never by auto, never as a fallback). While it is active, a request is
 * refused, the field named, if its policy does not allow host execution ("hostExecution"), if
 * the admin floor of the launcher it replaced forbids host mode, or if its workspace is
 * read-only ("filesystem.workspace.access": nothing here can keep the command from writing).
 * The policy's wall timeout holds: the command's process group (setsid made it the leader) is
 * killed when it expires, and whatever is left of the group when the leader ends.
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
#include "backends/backend.h"
#include "common/event.h"
#include "policy/policy-model.h"

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
	struct event_source *timer; /* the plan's timeoutMs, or NULL */
	unsigned long long start_usec;
	bool killed;
	bool timed_out;
};

struct host_data {
	struct host_child *children;
	unsigned long long next;
	/* The admin floor of the launcher that served when this instance was prepared (the one
	 * the activation checked), if there was one. */
	bool floor_known;
	bool floor_host_mode;
};

static json_t *host_descriptor(const struct backend_ops *ops)
{
	return json_pack(
		"{s:s,s:s,s:s,s:{s:[]},s:{s:[s],s:s,s:[],s:b,s:s}}", "kind", "host", "name",
		"Host (unconfined)", "description",
		"Runs commands directly on the host, without any sandbox. Only for policies "
		"with hostExecution and hosts whose admin floor allows host mode.",
		"settings", "fields", "claims", "platforms", "linux", "isolation", "none",
		"enforces", "readOnlyWorkspace", false, "workspace", "direct");
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
	struct host_data *d = calloc(1, sizeof(struct host_data));
	json_t *floor;

	if (!d) {
		done(bi, -ENOMEM, "out of memory", ud);
		return;
	}
	/* Prepared while the previous instance still serves: its launcher's floor is the one the
	 * activation was allowed by. */
	floor = json_object_get(bi->host->launcher_hello(bi->host), "floor");
	d->floor_known = json_is_object(floor);
	d->floor_host_mode = json_is_true(json_object_get(floor, "hostMode"));
	bi->data = d;
	done_ok(bi, done, ud);
}

static void host_probe(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	done_ok(bi, done, ud);
}

/* Only what this backend can honour runs here (see the top of this file). */
static int host_admit(struct backend_instance *bi, const struct policy *p, struct field_error *fe)
{
	struct host_data *d = bi->data;

	if (!p->host_execution)
		return field_error_set(
			fe, -EPERM, "hostExecution", NULL,
			"the active backend (%s) runs commands unconfined, on the host: "
			"only a policy with \"hostExecution\": true may run there",
			bi->ref);
	if (d && d->floor_known && !d->floor_host_mode)
		return field_error_set(fe, -EPERM, "hostExecution", NULL,
				       "the admin floor forbids host mode");
	/* A read-only workspace is refused by the core: this descriptor does not claim
	 * readOnlyWorkspace. */
	return 0;
}

static void child_free(struct host_data *d, struct host_child *ch)
{
	for (struct host_child **pp = &d->children; *pp; pp = &(*pp)->next)
		if (*pp == ch) {
			*pp = ch->next;
			break;
		}
	event_source_free(ch->timer);
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

	if (waitid((idtype_t)P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
	    si.si_pid == 0)
		return 0;
	/* The leader has ended but is not reaped yet, so its pid still names its group: nothing
	 * it started in the group outlives it (as nothing outlives a sandbox's init). */
	(void)kill(-ch->pid, SIGKILL);
	si = (siginfo_t){ 0 };
	if (waitid((idtype_t)P_PIDFD, (id_t)fd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
		return 0;
	sig = si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED;
	exit = json_pack("{s:s,s:i,s:i,s:i,s:s,s:I,s:{s:b,s:b}}", "sandbox", ch->sandbox, "pid",
			 (int)ch->pid, "exitCode", sig ? 0 : si.si_status, "signal",
			 sig ? si.si_status : 0, "reason",
			 ch->timed_out ? "timeout"
			 : ch->killed  ? "killed"
			 : sig	       ? "signaled"
				       : "exited",
			 "durationUsec", (json_int_t)(now_usec() - ch->start_usec), "limits",
			 "pids", false, "memory", false);
	{
		char sandbox[32];

		memcpy(sandbox, ch->sandbox, sizeof(sandbox));
		child_free(bi->data, ch);
		if (exit)
			bi->host->exited(bi->host, bi, sandbox, exit);
	}
	return 0;
}

/* The plan's wall timeout expired: the whole group goes, the leader through its pidfd. */
static int on_timeout(struct event_source *s, void *userdata)
{
	struct host_child *ch = userdata;
	siginfo_t si = { 0 };

	event_source_free(TAKE_PTR(ch->timer));
	/* Ended already (on_child() reports it next): not a timeout. */
	if (waitid((idtype_t)P_PIDFD, (id_t)ch->pidfd, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	    si.si_pid != 0)
		return 0;
	ch->timed_out = true;
	(void)kill(-ch->pid, SIGKILL);
	(void)syscall(SYS_pidfd_send_signal, ch->pidfd, SIGKILL, NULL, 0);
	return 0;
}

/* fd index named by plan.stdio.<name>, or -1. */
static int stdio_fd(json_t *plan, const char *name, const int *fds, size_t n_fds)
{
	json_t *v = json_object_get(json_object_get(plan, "stdio"), name);
	json_int_t k = json_is_integer(v) ? json_integer_value(v) : -1;

	return k >= 0 && (size_t)k < n_fds ? fds[k] : -1;
}

static int host_spawn(struct backend_instance *bi, const struct backend_spawn *req,
		      backend_spawn_cb cb, void *ud)
{
	json_t *plan = req->plan;
	const int *fds = req->fds;
	size_t n_fds = req->n_fds;
	struct host_data *d = bi->data;
	_cleanup_strv_free_ char **argv = NULL, **envp = NULL;
	struct field_error fe;
	const char *cwd = NULL;
	uint64_t timeout_ms = 0;
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
	if (r >= 0)
		r = ipc_json_get_uint64(plan, "timeoutMs", false, 0, UINT64_C(1) << 40, "plan",
					&timeout_ms, &fe);
	if (r < 0)
		return r;
	io[0] = stdio_fd(plan, "stdin", fds, n_fds);
	io[1] = stdio_fd(plan, "stdout", fds, n_fds);
	io[2] = stdio_fd(plan, "stderr", fds, n_fds);

	pid = fork_pidfd(&pidfd);
	if (pid < 0)
		return (int)pid;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		/* Child: stdio in place, everything else closed on exec, then the command. */
		for (int i = 0; i < 3; i++)
			if (dup2(io[i] >= 0 ? io[i] : null, i) < 0)
				_exit(126);
		(void)setsid();
		(void)fds_cloexec_from(3);
		/* The command starts as from a shell: no signal of the controller's blocked
		 * (its signalfd's) or ignored (SIGPIPE). */
		for (int sig = 1; sig < _NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				(void)signal(sig, SIG_DFL);
		{
			sigset_t none;

			sigemptyset(&none);
			(void)sigprocmask(SIG_SETMASK, &none, NULL);
		}
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
	r = event_add_io(bi->host->loop, pidfd, EPOLLIN, on_child, ch, &ch->src);
	if (r >= 0 && timeout_ms > 0)
		r = event_add_timer(bi->host->loop, timeout_ms * 1000, false, on_timeout, ch,
				    &ch->timer);
	if (r < 0) {
		(void)kill(-pid, SIGKILL);
		(void)kill(pid, SIGKILL);
		event_source_free(ch->src);
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
	.admit = host_admit,
	.spawn = host_spawn,
	.kill = host_kill,
	.dispose = host_dispose,
	.free = host_free,
};
