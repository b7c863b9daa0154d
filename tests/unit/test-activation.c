/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The controller core against a fake backend: the activation transaction (controller-backend.c)
 * and, with CORE_FIXTURE_ONLY defined, the fixture test-process-table.c builds on.
 *
 * The fixture: a provider of its own answering "builtin:fake" and "builtin:auto" (the fallback,
 * so no launcher is needed: the registry asks only the providers registered here), a struct
 * controller set up as controller-main.c does it (event loop, a state directory under a
 * temporary XDG_STATE_HOME, the writer thread, the event log, the start-up activation).
 *
 * The fake's settings: tag (a string, to tell activations apart on disk), delayMs (every step
 * completes that long after it was asked, from a timer on the loop), failAt (none, configure,
 * prepare, probe: that step fails; dispose: the first disposal of the instance fails). Every
 * call is recorded ({"step", "name", "active"}: the instance, and which one was active then).
 *
 * Its spawns, chosen by argv[0] of the plan:
 *   fake-exit CODE    answered after a timer, the exit (CODE) reported from a later one;
 *   fake-early CODE   the exit report comes before the spawn answer;
 *   fake-hang         runs until killed (the kill's report comes from a timer);
 *   fake-fail         the launcher answers with an error;
 *   fake-refuse       spawn() refuses at once (-EIO);
 *   real TEXT CODE    a real child writes TEXT to the plan's stdout and exits with CODE ("hang":
 *                     waits for a signal); its end is watched through its pidfd.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/event.h"
#include "common/json-cleanup.h"
#include "common/paths.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/backend.h"
#include "controller/controller-interaction.h"
#include "controller/controller.h"
#include "tests/tap.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* ------------------------------------------------------------------------- the fake backend */

static struct controller ctl = { .listen_fd = -1, .events_log_fd = -1 };
/* Every call of the fake, in order: {"step", "name", "active"}. */
static json_t *fake_calls;

struct fake_proc {
	struct fake_proc *next;
	struct fake_inst *inst;
	struct backend_instance *bi;
	char sandbox[32];
	pid_t pid;
	int pidfd;
	struct event_source *src;
	backend_spawn_cb cb;
	void *ud;
	int code;
	int signal; /* fake-hang: the signal asked for */
	bool early; /* fake-early */
	bool fail;  /* fake-fail */
	bool hang;  /* fake-hang */
	bool answered;
};

struct fake_inst {
	struct backend_instance *bi;
	char fail_at[16];
	unsigned delay_ms;
	unsigned dispose_calls;
	json_t *hello;
	struct fake_proc *procs;
};

static void fake_record(const char *step, struct backend_instance *bi)
{
	(void)json_array_append_new(fake_calls,
				    json_pack("{s:s,s:s,s:s}", "step", step, "name", bi->name,
					      "active", ctl.active ? ctl.active->name : ""));
}

/* The index of the first call of step on the instance called name, or -1. */
static _unused_ int fake_call_index(const char *step, const char *name)
{
	json_t *v;
	size_t i;

	json_array_foreach(fake_calls, i, v)
		if (streq(json_string_value(json_object_get(v, "step")), step) &&
		    streq(json_string_value(json_object_get(v, "name")), name))
			return (int)i;
	return -1;
}

/* How many times step was called since the mark-th call. */
static _unused_ unsigned fake_call_count(const char *step, size_t mark)
{
	unsigned n = 0;

	for (size_t i = mark; i < json_array_size(fake_calls); i++)
		n += streq(
			json_string_value(json_object_get(json_array_get(fake_calls, i), "step")),
			step);
	return n;
}

/* The steps called on name, space-separated ("configure prepare probe"). */
static _unused_ void fake_steps_of(const char *name, char *buf, size_t size)
{
	size_t n = 0;
	json_t *v;
	size_t i;

	buf[0] = '\0';
	json_array_foreach(fake_calls, i, v) {
		if (!streq(json_string_value(json_object_get(v, "name")), name))
			continue;
		n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s", n ? " " : "",
				      json_string_value(json_object_get(v, "step")));
		if (n >= size)
			return;
	}
}

static json_t *fake_descriptor(const struct backend_ops *ops)
{
	return json_pack("{s:s,s:s,s:s,s:{s:[{s:s,s:s,s:s},{s:s,s:s,s:s,s:i},"
			 "{s:s,s:s,s:s,s:s,s:[s,s,s,s,s]}]},"
			 "s:{s:[s],s:s,s:[],s:b}}",
			 "kind", ops->kind, "name", "Fake backend", "description",
			 "A backend that runs nothing, for the core's unit tests.", "settings",
			 "fields", "id", "tag", "type", "string", "label", "Tag", "id", "delayMs",
			 "type", "number", "label", "Delay of every step (ms)", "defaultValue", 1,
			 "id", "failAt", "type", "select", "label", "Fail at", "defaultValue",
			 "none", "options", "none", "configure", "prepare", "probe", "dispose",
			 "claims", "platforms", "linux", "isolation", "namespace", "enforces",
			 "readOnlyWorkspace", true);
}

struct fake_step {
	struct backend_instance *bi;
	backend_done_cb done;
	void *ud;
	int r;
	char message[128];
};

static int on_step(struct event_source *s, void *userdata)
{
	struct fake_step *st = userdata;

	event_source_free(s);
	st->done(st->bi, st->r, st->r < 0 ? st->message : NULL, st->ud);
	free(st);
	return 0;
}

/* Complete step of bi through a timer: it fails when it is the instance's failAt. */
static void fake_step(struct backend_instance *bi, const char *step, backend_done_cb done, void *ud)
{
	struct fake_inst *fi = bi->data;
	struct fake_step *st = calloc(1, sizeof(*st));

	fake_record(step, bi);
	if (!st)
		bail("out of memory");
	st->bi = bi;
	st->done = done;
	st->ud = ud;
	if (streq(fi->fail_at, step)) {
		st->r = -EIO;
		(void)snprintf(st->message, sizeof(st->message), "the fake fails at %s", step);
	}
	if (event_add_timer(bi->host->loop, fi->delay_ms ? fi->delay_ms * 1000ULL : 1, false,
			    on_step, st, NULL) < 0)
		bail("cannot add a timer");
}

static void fake_configure(struct backend_instance *bi, json_t *settings, json_t *secrets,
			   backend_done_cb done, void *ud)
{
	struct fake_inst *fi = calloc(1, sizeof(*fi));
	json_t *delay = json_object_get(settings, "delayMs");
	const char *fail = json_string_value(json_object_get(settings, "failAt"));

	if (!fi)
		bail("out of memory");
	fi->bi = bi;
	fi->delay_ms = json_is_number(delay) ? (unsigned)json_number_value(delay) : 1;
	(void)snprintf(fi->fail_at, sizeof(fi->fail_at), "%s", fail ? fail : "none");
	fi->hello = json_pack("{s:s,s:i,s:b,s:b,s:s}", "mode", "user", "landlockAbi", 3, "seccomp",
			      true, "userns", true, "pidsLimit", "rlimit-nproc");
	bi->data = fi;
	fake_step(bi, "configure", done, ud);
}

static void fake_prepare(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	fake_step(bi, "prepare", done, ud);
}

static void fake_probe(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	fake_step(bi, "probe", done, ud);
}

static json_t *fake_hello(struct backend_instance *bi)
{
	struct fake_inst *fi = bi->data;

	return fi ? fi->hello : NULL;
}

static void fake_proc_free(struct fake_proc *fp)
{
	for (struct fake_proc **pp = &fp->inst->procs; *pp; pp = &(*pp)->next)
		if (*pp == fp) {
			*pp = fp->next;
			break;
		}
	event_source_free(fp->src);
	if (fp->pidfd >= 0) {
		siginfo_t si;

		/* The instance goes with its children. */
		(void)syscall(SYS_pidfd_send_signal, fp->pidfd, SIGKILL, NULL, 0);
		(void)waitid((idtype_t)P_PIDFD, (id_t)fp->pidfd, &si, WEXITED);
		safe_close(fp->pidfd);
	}
	free(fp);
}

/* The end of a sandbox: the report to the core, then the sandbox is forgotten. */
static void fake_report_exit(struct fake_proc *fp, int code, int sig)
{
	_cleanup_json_ json_t *exit = json_pack("{s:i,s:i,s:s}", "exitCode", code, "signal", sig,
						"reason", sig ? "signaled" : "exited");
	struct backend_instance *bi = fp->bi;
	char sandbox[32];

	fake_record("exited", bi);
	(void)snprintf(sandbox, sizeof(sandbox), "%s", fp->sandbox);
	if (fp->pidfd < 0 || fp->pid == 0)
		fake_proc_free(fp);
	bi->host->exited(bi->host, bi, sandbox, exit);
}

static int on_child(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct fake_proc *fp = userdata;
	siginfo_t si = { 0 };

	if (waitid((idtype_t)P_PIDFD, (id_t)fp->pidfd, &si, WEXITED | WNOHANG) < 0 ||
	    si.si_pid == 0)
		return 0;
	/* The source first: the core holds a copy of the pidfd, so closing ours would not take
	 * it out of the epoll set. */
	event_source_free(TAKE_PTR(fp->src));
	fp->pidfd = safe_close(fp->pidfd);
	fp->pid = 0;
	fake_report_exit(fp, si.si_code == CLD_EXITED ? si.si_status : 0,
			 si.si_code == CLD_EXITED ? 0 : si.si_status);
	return 0;
}

static int on_proc_timer(struct event_source *s, void *userdata)
{
	struct fake_proc *fp = userdata;
	struct backend_instance *bi = fp->bi;

	event_source_free(TAKE_PTR(fp->src));
	if (!fp->answered) {
		fp->answered = true;
		if (fp->fail) {
			_cleanup_json_ json_t *err = json_pack("{s:s,s:s}", "code", "setup-failed",
							       "message", "the fake fails");
			backend_spawn_cb cb = fp->cb;
			void *ud = fp->ud;

			fake_proc_free(fp);
			fake_record("spawn-failed", bi);
			cb(bi, NULL, -1, -1, 0, err, ud);
			return 0;
		}
		if (fp->early) {
			/* The exit report overtakes the spawn answer. */
			_cleanup_json_ json_t *exit = json_pack("{s:i,s:i,s:s}", "exitCode",
								fp->code, "signal", 0, "reason",
								"exited");
			backend_spawn_cb cb = fp->cb;
			void *ud = fp->ud;
			char sandbox[32];

			(void)snprintf(sandbox, sizeof(sandbox), "%s", fp->sandbox);
			fake_proc_free(fp);
			bi->host->exited(bi->host, bi, sandbox, exit);
			cb(bi, sandbox, -1, -1, 4242, NULL, ud);
			return 0;
		}
		fp->cb(bi, fp->sandbox, fp->pidfd >= 0 ? fd_dup_cloexec(fp->pidfd, 3) : -1, -1,
		       fp->pid ? fp->pid : 4242, NULL, fp->ud);
		fake_record("answered", bi);
		if (fp->pid) /* real: its end comes through the pidfd */
			return event_add_io(bi->host->loop, fp->pidfd, EPOLLIN, on_child, fp,
					    &fp->src);
		if (fp->hang && !fp->signal)
			return 0; /* until fake_kill() */
		return event_add_timer(bi->host->loop, 1000, false, on_proc_timer, fp, &fp->src);
	}
	fake_report_exit(fp, fp->hang ? 0 : fp->code, fp->hang ? fp->signal : 0);
	return 0;
}

static unsigned sandbox_counter;

static int fake_spawn(struct backend_instance *bi, const struct backend_spawn *req,
		      backend_spawn_cb cb, void *ud)
{
	struct fake_inst *fi = bi->data;
	json_t *argv = json_object_get(req->plan, "argv");
	const char *cmd = json_string_value(json_array_get(argv, 0));
	const char *arg1 = json_string_value(json_array_get(argv, 1));
	const char *arg2 = json_string_value(json_array_get(argv, 2));
	struct fake_proc *fp;

	fake_record("spawn", bi);
	if (!cmd || streq(cmd, "fake-refuse"))
		return -EIO;
	fp = calloc(1, sizeof(*fp));
	if (!fp)
		return -ENOMEM;
	fp->inst = fi;
	fp->bi = bi;
	fp->cb = cb;
	fp->ud = ud;
	fp->pidfd = -1;
	(void)snprintf(fp->sandbox, sizeof(fp->sandbox), "sb-%u", ++sandbox_counter);
	fp->code = arg1 ? atoi(arg1) : 0;
	fp->early = streq(cmd, "fake-early");
	fp->fail = streq(cmd, "fake-fail");
	fp->hang = streq(cmd, "fake-hang");
	if (streq(cmd, "real")) {
		json_t *out = json_object_get(json_object_get(req->plan, "stdio"), "stdout");
		int out_fd = json_is_integer(out) && (size_t)json_integer_value(out) < req->n_fds
				     ? req->fds[json_integer_value(out)]
				     : -1;
		pid_t pid = fork();

		if (pid < 0) {
			free(fp);
			return -errno;
		}
		if (pid == 0) {
			/* Only its stdout: no copy of another process's pipe stays open here. */
			if (out_fd >= 0 && dup2(out_fd, STDOUT_FILENO) < 0)
				_exit(120);
			(void)syscall(SYS_close_range, 3U, ~0U, 0U);
			if (arg1)
				(void)!write(STDOUT_FILENO, arg1, strlen(arg1));
			if (arg2 && streq(arg2, "hang"))
				for (;;)
					pause();
			_exit(arg2 ? atoi(arg2) : 0);
		}
		fp->pid = pid;
		fp->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (fp->pidfd < 0)
			bail("pidfd_open: %m");
		(void)fd_set_cloexec(fp->pidfd, true);
	}
	fp->next = fi->procs;
	fi->procs = fp;
	if (event_add_timer(bi->host->loop, 1000, false, on_proc_timer, fp, &fp->src) < 0)
		bail("cannot add a timer");
	return 0;
}

static int fake_kill(struct backend_instance *bi, const char *sandbox, int sig)
{
	struct fake_inst *fi = bi->data;

	fake_record("kill", bi);
	for (struct fake_proc *fp = fi ? fi->procs : NULL; fp; fp = fp->next) {
		if (!streq(fp->sandbox, sandbox))
			continue;
		if (fp->pidfd >= 0)
			return syscall(SYS_pidfd_send_signal, fp->pidfd, sig, NULL, 0) < 0 ? -errno
											   : 0;
		if (!fp->signal) {
			fp->signal = sig;
			if (fp->answered && !fp->src &&
			    event_add_timer(bi->host->loop, 1000, false, on_proc_timer, fp,
					    &fp->src) < 0)
				return -ENOMEM;
		}
		return 0;
	}
	return -ESRCH;
}

static int fake_dispose(struct backend_instance *bi)
{
	struct fake_inst *fi = bi->data;

	fake_record("dispose", bi);
	if (fi && streq(fi->fail_at, "dispose") && fi->dispose_calls++ == 0)
		return -EBUSY;
	while (fi && fi->procs)
		fake_proc_free(fi->procs);
	return 0;
}

static void fake_free(struct backend_instance *bi)
{
	struct fake_inst *fi = bi->data;

	if (!fi)
		return;
	while (fi->procs)
		fake_proc_free(fi->procs);
	json_decref(fi->hello);
	free(fi);
	bi->data = NULL;
}

/*
 * The instance's launcher is gone: as a real backend does (auto.c, pack.c), the spawns it has
 * not answered are forgotten before the loss is reported, since the core ends the processes
 * still starting itself (controller_processes_instance_lost()) and an answer coming after that
 * would reach a process that is no more.
 */
static _unused_ void fake_lose(struct backend_instance *bi)
{
	struct fake_inst *fi = bi->data;

	for (struct fake_proc *fp = fi ? fi->procs : NULL, *next; fp; fp = next) {
		next = fp->next;
		if (!fp->answered)
			fake_proc_free(fp);
	}
	fake_record("lost", bi);
	bi->host->lost(bi->host, bi);
}

#define FAKE_OPS(k)                                                                              \
	{                                                                                        \
		.source = "builtin", .kind = k, .confined = true, .descriptor = fake_descriptor, \
		.configure = fake_configure, .prepare = fake_prepare, .probe = fake_probe,       \
		.hello = fake_hello, .spawn = fake_spawn, .kill = fake_kill,                     \
		.dispose = fake_dispose, .free = fake_free,                                      \
	}

static const struct backend_ops fake_ops = FAKE_OPS("fake");
/* The fallback, so that neither start-up nor a lost instance needs a launcher. */
static const struct backend_ops fake_auto_ops = FAKE_OPS("auto");

static const struct backend_ops *fake_find(const struct backend_provider *p,
					   const struct backend_ref *ref)
{
	if (ref->source != BACKEND_SOURCE_BUILTIN)
		return NULL;
	return streq(ref->kind, "fake")	  ? &fake_ops
	       : streq(ref->kind, "auto") ? &fake_auto_ops
					  : NULL;
}

static size_t fake_list(const struct backend_provider *p, const struct backend_ops **out,
			size_t max)
{
	size_t n = 0;

	if (n < max)
		out[n++] = &fake_auto_ops;
	if (n < max)
		out[n++] = &fake_ops;
	return n;
}

static const struct backend_provider fake_provider = {
	.source = "builtin",
	.find = fake_find,
	.list = fake_list,
};

/* What a program linking the core must define (controller-providers.c has the daemon's). */
const struct backend_provider *const controller_extra_providers[] = { &fake_provider, NULL };
const struct controller_method controller_extra_methods[] = { {} };

/* ------------------------------------------------------------------------- the controller */

static char test_dir[] = "/tmp/cordon-core-XXXXXX";
static char *ws_dir;

/* Run the loop until cond(ud) holds, for at most timeout_ms; whether it held. */
static bool core_run_until(bool (*cond)(void *ud), void *ud, unsigned timeout_ms)
{
	unsigned long long deadline = now_usec() + timeout_ms * 1000ULL;

	while (!cond(ud)) {
		if (now_usec() >= deadline)
			return false;
		if (event_loop_run_once(ctl.host.loop, 20) < 0)
			return false;
	}
	return true;
}

static _unused_ bool cond_active(void *ud)
{
	return ctl.active != NULL;
}

struct call_wait {
	const char *step, *name;
};

static bool cond_call(void *ud)
{
	struct call_wait *w = ud;

	return fake_call_index(w->step, w->name) >= 0;
}

/* Run the loop until the fake was called for step on the instance called name. */
static _unused_ bool run_until_call(const char *step, const char *name)
{
	struct call_wait w = { step, name };

	return core_run_until(cond_call, &w, 5000);
}

/* The newest event of type whose field key is value (NULL: any), borrowed, or NULL. */
static _unused_ json_t *core_event(const char *type, const char *key, const char *value)
{
	for (size_t i = json_array_size(ctl.events_ring); i-- > 0;) {
		json_t *ev = json_array_get(ctl.events_ring, i);

		if (streq_ptr(json_string_value(json_object_get(ev, "type")), type) &&
		    (!key || streq_ptr(json_string_value(json_object_get(ev, key)), value)))
			return ev;
	}
	return NULL;
}

/* A file of the state directory, or NULL when it cannot be read. */
static _unused_ char *core_state_file(const char *name)
{
	_cleanup_free_ char *path = strdup_printf("%s/%s", ctl.state_dir, name);
	char *buf = NULL;

	if (!path || read_full_file(path, 1U << 20, &buf, NULL) < 0)
		return NULL;
	return buf;
}

/* As controller-main.c sets it up, in a temporary state directory; the start-up activation
 * makes the fake builtin:auto active. */
static void core_setup(void)
{
	_cleanup_free_ char *state = NULL, *home = NULL;
	int r;

	if (!mkdtemp(test_dir))
		bail("mkdtemp: %m");
	state = strdup_printf("%s/state", test_dir);
	home = strdup_printf("%s/home", test_dir);
	ws_dir = strdup_printf("%s/ws", test_dir);
	if (!state || !home || !ws_dir)
		bail("out of memory");
	if (mkdir(home, 0700) < 0 || mkdir(ws_dir, 0700) < 0)
		bail("mkdir: %m");
	if (setenv("XDG_STATE_HOME", state, 1) < 0)
		bail("setenv: %m");
	fake_calls = json_array();
	if (!fake_calls)
		bail("out of memory");

	controller_host_init(&ctl);
	ctl.host.uid = geteuid();
	ctl.host.gid = getegid();
	ctl.host.home = TAKE_PTR(home);
	ctl.host.mem_total = 1ULL << 30;
	r = cordon_state_dir(&ctl.state_dir, 1);
	if (r < 0)
		bail("cordon_state_dir: %s", strerror(-r));
	r = event_loop_new(&ctl.host.loop);
	if (r < 0)
		bail("event_loop_new: %s", strerror(-r));
	r = controller_persist_start(&ctl);
	if (r < 0)
		bail("controller_persist_start: %s", strerror(-r));
	r = controller_events_open(&ctl);
	if (r < 0)
		bail("controller_events_open: %s", strerror(-r));
	/* Only the fake's provider: builtin:auto is the fake's too. */
	r = controller_provider_add(&ctl, &fake_provider);
	if (r < 0)
		bail("controller_provider_add: %s", strerror(-r));
	r = controller_backends_start(&ctl);
	if (r < 0)
		bail("controller_backends_start: %s", strerror(-r));
}

/* Our open fds whose link contains what ("pidfd", "pipe:", NULL for any). */
static _unused_ int count_fds(const char *what)
{
	_cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		bail("opendir /proc/self/fd: %m");
	while ((de = readdir(d))) {
		char link[256];
		ssize_t k;

		if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(d))
			continue;
		k = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		if (k < 0)
			continue;
		link[k] = '\0';
		n += !what || strstr(link, what);
	}
	return n;
}

/* As controller-main.c takes it down; every instance is disposed of. */
static void core_teardown(void)
{
	ctl.host.exiting = true;
	controller_processes_kill_all(&ctl);
	controller_backends_stop(&ctl);
	controller_interactions_free(&ctl);
	controller_secrets_close(&ctl);
	controller_processes_free(&ctl);
	controller_sandboxes_free(&ctl);
	ok(!backend_disposals_pending(), "teardown: every instance was disposed of");
	is_int(0, count_fds("pidfd"), "teardown: no pidfd left open");
	safe_close(ctl.events_log_fd);
	json_decref(ctl.events_ring);
	json_decref(ctl.early_exits);
	event_loop_free(ctl.host.loop);
	free(ctl.state_dir);
	free((char *)ctl.host.home);
	free(ws_dir);
	json_decref(fake_calls);
	if (tap_rm_rf(test_dir) < 0)
		diag("cannot remove %s", test_dir);
}

/* An internal process (controller_process_start_internal()) and what its end reported. */
struct proc {
	char *id;
	bool done;
	json_t *result;
};

static void proc_done(struct controller *c, const char *process_id, json_t *result, void *ud)
{
	struct proc *p = ud;

	if (p->done)
		diag("%s: a second result", process_id);
	p->done = true;
	json_decref(p->result);
	p->result = json_incref(result);
}

static _unused_ bool cond_proc_done(void *ud)
{
	return ((struct proc *)ud)->done;
}

/* Start argv (a JSON array text) as an internal process; 0 or the start's -errno. */
static _unused_ int proc_start(const char *argv, struct proc *p)
{
	_cleanup_json_ json_t *params =
		json_pack("{s:o,s:s}", "argv", json_loads(argv, 0, NULL), "callerCwd", ws_dir);
	_cleanup_json_ json_t *err = NULL;
	int r;

	*p = (struct proc){ 0 };
	if (!params)
		bail("out of memory");
	r = controller_process_start_internal(&ctl, NULL, params, proc_done, p, &p->id, &err);
	if (r < 0 && err)
		diag("start %s: %s", argv, json_string_value(json_object_get(err, "message")));
	return r;
}

static _unused_ void proc_done_free(struct proc *p)
{
	free(p->id);
	json_decref(p->result);
	*p = (struct proc){ 0 };
}

static _unused_ const char *proc_str(const struct proc *p, const char *key)
{
	return json_string_value(json_object_get(p->result, key));
}

static _unused_ long long proc_int(const struct proc *p, const char *key)
{
	json_t *v = json_object_get(p->result, key);

	return json_is_integer(v) ? json_integer_value(v) : -1;
}

#ifndef CORE_FIXTURE_ONLY

/* ------------------------------------------------------------------------- activation tests */

struct act {
	bool done;
	int r;
	char step[32];
	char message[256];
	char launcher[192];
	int order; /* when it completed, counting from 1 */
};

static int act_completed;

static void act_done(struct controller *c, int r, const char *step, const char *message,
		     const char *launcher, void *ud)
{
	struct act *a = ud;

	a->done = true;
	a->r = r;
	a->order = ++act_completed;
	(void)snprintf(a->step, sizeof(a->step), "%s", step ? step : "");
	(void)snprintf(a->message, sizeof(a->message), "%s", message ? message : "");
	(void)snprintf(a->launcher, sizeof(a->launcher), "%s", launcher ? launcher : "");
}

static bool cond_act_done(void *ud)
{
	return ((struct act *)ud)->done;
}

/* Activate ref with settings (a JSON text) and wait for it. */
static int activate_wait(const char *ref, const char *settings, struct act *a)
{
	_cleanup_json_ json_t *s = json_loads(settings, 0, NULL);
	int r;

	*a = (struct act){ 0 };
	r = controller_backend_activate(&ctl, ref, s, ACTIVATE_EXPLICIT, act_done, a);
	if (r < 0)
		return r;
	if (!core_run_until(cond_act_done, a, 5000))
		return -ETIMEDOUT;
	return a->r;
}

/* active.json's backend and settings.tag ("" for none), or false when unreadable. */
static bool read_active(char *backend, size_t bsize, char *tag, size_t tsize)
{
	_cleanup_free_ char *text = core_state_file("active.json");
	_cleanup_json_ json_t *j = text ? json_loads(text, 0, NULL) : NULL;
	const char *b = json_string_value(json_object_get(j, "backend"));
	const char *t = json_string_value(json_object_get(json_object_get(j, "settings"), "tag"));

	if (!b)
		return false;
	(void)snprintf(backend, bsize, "%s", b);
	(void)snprintf(tag, tsize, "%s", t ? t : "");
	return true;
}

static void test_startup(void)
{
	_cleanup_free_ char *text = core_state_file("active.json");
	char steps[256];

	ok(ctl.active && streq(ctl.active->ref, "builtin:auto"),
	   "start-up: the fallback builtin:auto (the fake's) is active");
	fake_steps_of(ctl.active ? ctl.active->name : "", steps, sizeof(steps));
	is_str("configure prepare probe", steps, "start-up: its steps ran in order");
	ok(!text, "start-up: restoring the fallback saves nothing (no active.json)");
	ok(core_event("activation", "backend", "builtin:auto") != NULL,
	   "start-up: an activation event");
}

static void test_success(void)
{
	struct backend_instance *old = ctl.active;
	char old_name[192], name[192], steps[256], backend[64], tag[64];
	_cleanup_json_ json_t *s = json_pack("{s:s,s:i}", "tag", "one", "delayMs", 5);
	struct act a = { 0 };
	json_t *ev, *call;
	int r, i;

	(void)snprintf(old_name, sizeof(old_name), "%s", old->name);
	r = controller_backend_activate(&ctl, "builtin:fake", s, ACTIVATE_EXPLICIT, act_done, &a);
	is_int(0, r, "activate builtin:fake: queued");
	ok(!a.done && ctl.active == old,
	   "activate: nothing completes inside the call (the fake's steps are timers)");
	ok(core_run_until(cond_act_done, &a, 5000), "activate: completes");
	is_int(0, a.r, "activate: succeeds");
	is_str("dispose", a.step, "activate: the last step run is dispose");
	ok(ctl.active && ctl.active != old && streq(ctl.active->ref, "builtin:fake"),
	   "activate: c->active is the new builtin:fake instance");
	is_str(ctl.active ? ctl.active->name : "", a.launcher, "activate: done names it");
	(void)snprintf(name, sizeof(name), "%s", ctl.active ? ctl.active->name : "");
	fake_steps_of(name, steps, sizeof(steps));
	is_str("configure prepare probe", steps, "activate: configure, prepare, probe in order");
	/* Until the swap the old instance serves: every step saw it active. */
	for (i = fake_call_index("configure", name); i >= 0 && i < (int)json_array_size(fake_calls);
	     i++) {
		call = json_array_get(fake_calls, (size_t)i);
		if (streq(json_string_value(json_object_get(call, "name")), name) &&
		    !streq(json_string_value(json_object_get(call, "active")), old_name))
			break;
	}
	is_int((int)json_array_size(fake_calls), i,
	       "activate: the old instance stayed active through configure, prepare and probe");
	ev = core_event("activation", "backend", "builtin:fake");
	ok(ev && json_is_true(json_object_get(ev, "ok")) &&
		   streq_ptr(json_string_value(json_object_get(ev, "launcher")), name),
	   "activate: an activation event, ok, naming the instance");
	/* Step 8: the old instance (no processes) is disposed of, from a timer. */
	ok(run_until_call("dispose", old_name) &&
		   fake_call_index("dispose", old_name) > fake_call_index("probe", name),
	   "activate: the old instance is disposed of after the new one's probe");
	ok(read_active(backend, sizeof(backend), tag, sizeof(tag)) &&
		   streq(backend, "builtin:fake") && streq(tag, "one"),
	   "activate: active.json holds builtin:fake with its settings (%s, tag \"%s\")", backend,
	   tag);
	{
		_cleanup_free_ char *text = core_state_file("settings.json");
		_cleanup_json_ json_t *j = text ? json_loads(text, 0, NULL) : NULL;
		json_t *saved = json_object_get(json_object_get(j, "backends"), "builtin:fake");

		ok(streq_ptr(json_string_value(json_object_get(saved, "tag")), "one"),
		   "activate: settings.json has the settings under builtin:fake");
	}
}

/* A failure in configure, prepare or probe leaves the running and the persisted selection as
 * they were, and names the failed step. */
static void test_failures(void)
{
	static const char *const steps[] = { "configure", "prepare", "probe" };
	static const char *const want[] = { "configure", "configure prepare",
					    "configure prepare probe" };

	for (size_t k = 0; k < ELEMENTSOF(steps); k++) {
		struct backend_instance *old = ctl.active;
		_cleanup_free_ char *before = core_state_file("active.json");
		_cleanup_free_ char *settings = strdup_printf(
			"{\"tag\": \"bad\", \"failAt\": \"%s\", \"delayMs\": 2}", steps[k]);
		_cleanup_free_ char *after = NULL;
		char cand[192] = "", got[256];
		struct act a;
		json_t *ev;
		int r;

		r = activate_wait("builtin:fake", settings, &a);
		ok(r < 0 && a.done, "failAt %s: the activation fails (%d)", steps[k], r);
		is_str(steps[k], a.step, "failAt %s: the failed step is named", steps[k]);
		ok(strstr(a.message, "the fake fails at") != NULL,
		   "failAt %s: with the backend's message (\"%s\")", steps[k], a.message);
		ok(ctl.active == old, "failAt %s: c->active is unchanged", steps[k]);
		after = core_state_file("active.json");
		ok(before && after && streq(before, after), "failAt %s: active.json is unchanged",
		   steps[k]);
		ev = core_event("activation", "step", steps[k]);
		ok(ev && json_is_false(json_object_get(ev, "ok")) &&
			   !json_is_string(json_object_get(ev, "launcher")),
		   "failAt %s: an activation event, not ok, at that step", steps[k]);
		/* The candidate: the last instance configured. */
		for (size_t i = json_array_size(fake_calls); i-- > 0;) {
			json_t *c = json_array_get(fake_calls, i);

			if (streq(json_string_value(json_object_get(c, "step")), "configure")) {
				(void)snprintf(cand, sizeof(cand), "%s",
					       json_string_value(json_object_get(c, "name")));
				break;
			}
		}
		ok(run_until_call("dispose", cand), "failAt %s: the candidate %s is disposed of",
		   steps[k], cand);
		fake_steps_of(cand, got, sizeof(got));
		ok(strncmp(got, want[k], strlen(want[k])) == 0 &&
			   streq(got + strlen(want[k]), " dispose"),
		   "failAt %s: no step ran after the failed one (%s)", steps[k], got);
	}
}

/* Step 7 fails (active.json cannot be replaced: a directory is in its way): swapped back. */
static void test_persist_failure(void)
{
	_cleanup_free_ char *path = strdup_printf("%s/active.json", ctl.state_dir);
	_cleanup_free_ char *moved = strdup_printf("%s/active.json.keep", ctl.state_dir);
	struct backend_instance *old = ctl.active;
	char backend[64], tag[64];
	struct act a;
	int r;

	if (!path || !moved)
		bail("out of memory");
	if (rename(path, moved) < 0 || mkdir(path, 0700) < 0)
		bail("cannot put a directory in the place of active.json: %m");
	r = activate_wait("builtin:fake", "{\"tag\": \"unsaved\"}", &a);
	ok(r < 0, "persist fails: the activation fails (%d)", r);
	is_str("persist", a.step, "persist fails: the failed step is persist");
	ok(ctl.active == old, "persist fails: swapped back to the previous instance");
	if (rmdir(path) < 0 || rename(moved, path) < 0)
		bail("cannot restore active.json: %m");
	ok(read_active(backend, sizeof(backend), tag, sizeof(tag)) && streq(tag, "one"),
	   "persist fails: the saved selection is the previous one (tag \"%s\")", tag);
}

static bool cond_disposed_ok(void *ud)
{
	json_t *ev = core_event("backend-disposed", "launcher", ud);

	return ev && json_is_true(json_object_get(ev, "ok"));
}

/* A failing dispose keeps the new activation; it is retried in the background. */
static void test_dispose_failure(void)
{
	char first[192], backend[64], tag[64], steps[256];
	struct act a;
	json_t *ev;
	int r;

	r = activate_wait("builtin:fake", "{\"tag\": \"df\", \"failAt\": \"dispose\"}", &a);
	is_int(0, r, "failAt dispose: its own activation succeeds");
	(void)snprintf(first, sizeof(first), "%s", ctl.active ? ctl.active->name : "");
	r = activate_wait("builtin:fake", "{\"tag\": \"after-df\"}", &a);
	is_int(0, r, "replacing it: the activation succeeds");
	ok(ctl.active && !streq(ctl.active->name, first) && streq(a.step, "dispose"),
	   "replacing it: the new instance is active");
	ok(run_until_call("dispose", first), "replacing it: the old one's dispose is called");
	ev = core_event("backend-cleanup-failed", "launcher", first);
	ok(ev != NULL, "the failed dispose is a backend-cleanup-failed event");
	ok(ctl.active && !streq(ctl.active->name, first),
	   "a failed dispose keeps the new activation");
	ok(read_active(backend, sizeof(backend), tag, sizeof(tag)) && streq(tag, "after-df"),
	   "a failed dispose keeps the saved selection (tag \"%s\")", tag);
	ok(backend_disposals_pending(), "the disposal is still pending (retried later)");
	/* The retry is 5 s away; bring it forward. */
	backend_disposals_retry_now();
	ok(core_run_until(cond_disposed_ok, first, 5000),
	   "the retry disposes of it (backend-disposed, ok)");
	fake_steps_of(first, steps, sizeof(steps));
	is_str("configure prepare probe dispose dispose", steps,
	       "the fake's dispose was called twice: the failure, the retry");
	ev = core_event("backend-disposed", "launcher", first);
	is_int(2, json_integer_value(json_object_get(ev, "attempts")),
	       "backend-disposed says 2 attempts");
}

/* Two activations asked one right after the other run one after the other. */
static void test_serialized(void)
{
	_cleanup_json_ json_t *s1 = json_pack("{s:s,s:i}", "tag", "q1", "delayMs", 20);
	_cleanup_json_ json_t *s2 = json_pack("{s:s,s:i}", "tag", "q2", "delayMs", 1);
	size_t mark = json_array_size(fake_calls);
	struct act a1 = { 0 }, a2 = { 0 };
	char n1[192] = "", n2[192] = "", backend[64], tag[64];
	size_t i;
	json_t *c;
	int r1, r2;

	act_completed = 0;
	r1 = controller_backend_activate(&ctl, "builtin:fake", s1, ACTIVATE_EXPLICIT, act_done,
					 &a1);
	r2 = controller_backend_activate(&ctl, "builtin:fake", s2, ACTIVATE_EXPLICIT, act_done,
					 &a2);
	ok(r1 == 0 && r2 == 0, "queued: both accepted");
	ok(core_run_until(cond_act_done, &a2, 5000) && a1.done, "queued: both complete");
	ok(a1.r == 0 && a2.r == 0, "queued: both succeed");
	ok(a1.order == 1 && a2.order == 2, "queued: in the order asked");
	(void)snprintf(n1, sizeof(n1), "%s", a1.launcher);
	(void)snprintf(n2, sizeof(n2), "%s", a2.launcher);
	/* Serialized: the second instance is configured only after the first one's probe. */
	json_array_foreach(fake_calls, i, c)
		if (i >= mark && streq(json_string_value(json_object_get(c, "name")), n2))
			break;
	ok(fake_call_index("probe", n1) >= 0 && (int)i > fake_call_index("probe", n1),
	   "queued: the second starts after the first's last step");
	is_str(n2, ctl.active ? ctl.active->name : "", "queued: the second is active");
	ok(read_active(backend, sizeof(backend), tag, sizeof(tag)) && streq(tag, "q2"),
	   "queued: the second is saved (tag \"%s\")", tag);
}

/* An activation asked while one is in its prepare step waits for it. */
static void test_while_running(void)
{
	_cleanup_json_ json_t *s1 = json_pack("{s:s,s:i}", "tag", "r1", "delayMs", 30);
	_cleanup_json_ json_t *s2 = json_pack("{s:s,s:i}", "tag", "r2", "delayMs", 1);
	struct act a1 = { 0 }, a2 = { 0 };
	struct call_wait w = { "prepare", NULL };
	char n1[192] = "", backend[64], tag[64];
	size_t mark = json_array_size(fake_calls);
	int r;

	act_completed = 0;
	r = controller_backend_activate(&ctl, "builtin:fake", s1, ACTIVATE_EXPLICIT, act_done, &a1);
	is_int(0, r, "while running: the first is accepted");
	/* Its instance is the one configured last. */
	(void)snprintf(
		n1, sizeof(n1), "%s",
		json_string_value(json_object_get(json_array_get(fake_calls, mark), "name")));
	w.name = n1;
	ok(core_run_until(cond_call, &w, 5000) && !a1.done,
	   "while running: the first is in its prepare step");
	r = controller_backend_activate(&ctl, "builtin:fake", s2, ACTIVATE_EXPLICIT, act_done, &a2);
	is_int(0, r, "while running: the second is accepted");
	ok(fake_call_count("configure", mark) == 1, "while running: the second starts nothing yet");
	ok(core_run_until(cond_act_done, &a2, 5000) && a1.r == 0 && a2.r == 0 && a1.order == 1 &&
		   a2.order == 2,
	   "while running: the first completes, then the second");
	ok(read_active(backend, sizeof(backend), tag, sizeof(tag)) && streq(tag, "r2"),
	   "while running: the second is saved (tag \"%s\")", tag);
}

/* A spawn during an activation is served by the instance active then, which is disposed of
 * only once that process ended. */
static void test_spawn_during_activation(void)
{
	_cleanup_json_ json_t *s = json_pack("{s:s,s:i}", "tag", "sp", "delayMs", 30);
	struct backend_instance *old = ctl.active;
	char old_name[192];
	struct act a = { 0 };
	struct proc p;
	int r;

	(void)snprintf(old_name, sizeof(old_name), "%s", old->name);
	r = controller_backend_activate(&ctl, "builtin:fake", s, ACTIVATE_EXPLICIT, act_done, &a);
	is_int(0, r, "spawn during activation: the activation is accepted");
	r = proc_start("[\"fake-hang\"]", &p);
	is_int(0, r, "spawn during activation: the spawn is accepted");
	ok(fake_call_index("spawn", old_name) >= 0 && !a.done,
	   "spawn during activation: served at once by the active instance %s", old_name);
	ok(core_run_until(cond_act_done, &a, 5000) && a.r == 0,
	   "spawn during activation: the activation completes");
	ok(ctl.active != old, "spawn during activation: the new instance is active");
	/* The old instance keeps its process: not disposed of until it ends. */
	for (int k = 0; k < 10; k++)
		(void)event_loop_run_once(ctl.host.loop, 5);
	ok(fake_call_index("dispose", old_name) < 0 && !p.done,
	   "spawn during activation: the old instance lives on with its process");
	controller_processes_kill_all(&ctl);
	ok(core_run_until(cond_proc_done, &p, 5000), "spawn during activation: the process ends");
	is_str(old_name, proc_str(&p, "launcher"), "spawn during activation: its launcher");
	ok(run_until_call("dispose", old_name),
	   "spawn during activation: then the old instance is disposed of");
	proc_done_free(&p);
}

/* An instance is active and its activation is over (its activation event came). */
static bool cond_activated(void *ud)
{
	json_t *ev = ctl.active ? core_event("activation", "launcher", ctl.active->name) : NULL;

	return ev && json_is_true(json_object_get(ev, "ok"));
}

static bool cond_swapped(void *ud)
{
	return ctl.active != ud;
}

/*
 * The instance being activated is lost between its swap and the end of its activation (step 7:
 * the selection is being written): as after any loss, an instance must be active again soon,
 * and the activation must not report a success without an active instance.
 */
static void test_lost_while_saving(void)
{
	_cleanup_json_ json_t *s = json_pack("{s:s}", "tag", "lost-in-persist");
	struct backend_instance *old = ctl.active;
	struct act a = { 0 };
	char name[192];
	int r;

	r = controller_backend_activate(&ctl, "builtin:fake", s, ACTIVATE_EXPLICIT, act_done, &a);
	is_int(0, r, "lost while saved: the activation is accepted");
	/* The swap and the persist request happen in one round; the write's completion comes in
	 * a later one. */
	ok(core_run_until(cond_swapped, old, 5000) && ctl.active && !a.done,
	   "lost while saved: swapped, the selection not yet saved");
	(void)snprintf(name, sizeof(name), "%s", ctl.active ? ctl.active->name : "");
	if (ctl.active)
		fake_lose(ctl.active);
	ok(core_run_until(cond_act_done, &a, 5000), "lost while saved: the activation completes");
	ok(a.r < 0 || ctl.active, "lost while saved: no success without an active instance");
	ok(core_run_until(cond_active, NULL, 5000),
	   "lost while saved: an instance is active again (%s)",
	   ctl.active ? ctl.active->name : "none");
	ok(run_until_call("dispose", name), "lost while saved: the lost instance is disposed of");
	(void)core_run_until(cond_activated, NULL, 5000);
}

/* A lost active instance: builtin:auto is activated again at once (and saved, when what was
 * lost was not builtin:auto). */
static void test_lost(void)
{
	struct backend_instance *bi = ctl.active;
	_cleanup_free_ char *before = NULL, *after = NULL;
	char name[192], backend[64], tag[64];

	(void)snprintf(name, sizeof(name), "%s", bi->name);
	fake_lose(bi);
	ok(ctl.active != bi, "lost: the lost instance is no longer active");
	ok(core_event("backend-lost", "launcher", name) != NULL, "lost: a backend-lost event");
	ok(core_run_until(cond_activated, NULL, 5000) && streq(ctl.active->ref, "builtin:auto"),
	   "lost: builtin:auto is active again");
	ok(run_until_call("dispose", name), "lost: the lost instance is disposed of");
	ok(read_active(backend, sizeof(backend), tag, sizeof(tag)) &&
		   streq(backend, "builtin:auto"),
	   "lost: builtin:auto is saved as the selection (%s)", backend);

	/* builtin:auto lost: it comes back as itself, the saved selection untouched. */
	if (!read_active(backend, sizeof(backend), tag, sizeof(tag)))
		bail("no active.json");
	before = core_state_file("active.json");
	bi = ctl.active;
	(void)snprintf(name, sizeof(name), "%s", bi->name);
	fake_lose(bi);
	ok(core_run_until(cond_activated, NULL, 5000) && streq(ctl.active->ref, "builtin:auto") &&
		   !streq(ctl.active->name, name),
	   "lost builtin:auto: a new builtin:auto instance is active");
	ok(run_until_call("dispose", name), "lost builtin:auto: the lost one is disposed of");
	after = core_state_file("active.json");
	ok(before && after && streq(before, after),
	   "lost builtin:auto: the saved selection is not rewritten");
}

int main(void)
{
	plan_lazy();
	core_setup();
	test_startup();
	test_success();
	test_failures();
	test_persist_failure();
	test_dispose_failure();
	test_serialized();
	test_while_running();
	test_spawn_during_activation();
	test_lost();
	test_lost_while_saving();
	core_teardown();
	return tap_exit_status();
}
#endif /* CORE_FIXTURE_ONLY */
