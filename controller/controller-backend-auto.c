/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * builtin:auto — the best lightweight OS sandbox on this host: the system cordon-launcherd when
 * its socket exists (privileged mode), else a user-mode launcherd of our own over a socketpair
 * (unprivileged user namespaces). It never selects an unconfined launcher: when no launcher
 * answers, the backend is unavailable.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/system.h"
#include "common/util.h"
#include "controller/controller-backend.h"
#include "controller/controller.h"
#include "controller/ctl-launcher.h"

#ifndef CORDON_LIBEXECDIR
#define CORDON_LIBEXECDIR "/usr/local/libexec"
#endif

struct auto_data {
	struct ctl_launcher *l;
	struct event_source *src;
	json_t *hello;
	backend_done_cb prepare_done; /* set while the hello reply is awaited */
	void *prepare_ud;
};

static json_t *auto_descriptor(const struct backend_ops *ops)
{
	return json_pack(
		"{s:s,s:s,s:s,s:{s:[]},s:{s:[s],s:s,s:[s,s,s,s]}}", "kind", "auto", "name",
		"Automatic OS sandbox", "description",
		"The best lightweight sandbox this host offers: namespaces, Landlock, seccomp "
		"and cgroups through cordon-launcherd (privileged or user mode).",
		"settings", "fields", "claims", "platforms", "linux", "isolation", "namespace",
		"enforces", "filesystem", "network", "limits", "syscalls");
}

static void on_exit_report(struct ctl_launcher *l, const struct ctl_launcher_exit *e, void *ud)
{
	struct backend_instance *bi = ud;
	_cleanup_json_ json_t *j = json_pack("{s:s,s:i,s:i,s:i,s:s,s:I,s:{s:b,s:b}}", "sandbox",
					     e->sandbox, "pid", (int)e->pid, "exitCode",
					     e->exit_code, "signal", e->signal, "reason", e->reason,
					     "durationUsec", (json_int_t)e->duration_usec, "limits",
					     "pids", e->limit_pids, "memory", e->limit_memory);

	if (j)
		controller_process_exited_on(bi->ctl, bi, e->sandbox, j);
}

static int on_launcher(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct backend_instance *bi = userdata;
	struct auto_data *d = bi->data;
	int r = ctl_launcher_process(d->l);

	if (r < 0) {
		event_source_free(d->src);
		d->src = NULL;
		if (d->prepare_done) {
			/* It died before answering hello: prepare fails, nothing was active. */
			backend_done_cb done = TAKE_PTR(d->prepare_done);

			done(bi, r, "the launcher exited during start-up", d->prepare_ud);
			return 0;
		}
		/* The launcher is gone, and every sandbox it ran died with the channel. */
		log_error_errno(r, "lost the launcher of %s: %m", bi->name);
		controller_backend_lost(bi->ctl, bi);
	}
	return 0;
}

static void auto_configure(struct backend_instance *bi, json_t *settings, json_t *secrets,
			   backend_done_cb done, void *ud)
{
	/* No settings: what auto uses is what the host offers. */
	done(bi, 0, NULL, ud);
}

int backend_launcher_open(struct backend_instance *bi, struct ctl_launcher **ret, char *msg,
			  size_t msg_size)
{
	const char *sock = cordon_launcherd_socket_path();
	struct ctl_launcher *l = NULL;
	struct stat st;
	int r;

	if (stat(sock, &st) == 0 && S_ISSOCK(st.st_mode)) {
		r = ctl_launcher_connect(sock, &l);
		if (r < 0)
			log_warning_errno(r,
					  "cannot connect to the system launcher \"%s\": %m; "
					  "trying user mode",
					  sock);
	}
	if (!l) {
		const char *bin = getenv("CORDON_LAUNCHERD");
		_cleanup_free_ char *dflt = NULL;

		if (isempty(bin)) {
			dflt = strdup_printf("%s/cordon-launcherd", CORDON_LIBEXECDIR);
			if (!dflt) {
				(void)snprintf(msg, msg_size, "out of memory");
				return -ENOMEM;
			}
			bin = dflt;
		}
		r = ctl_launcher_start_user_mode(bin, getenv("CORDON_LAUNCHERD_FLOOR"), &l);
		if (r < 0) {
			(void)snprintf(msg, msg_size,
				       "cannot start a user-mode launcher \"%s\": %s", bin,
				       strerror(-r));
			return r;
		}
	}
	*ret = l;
	return 0;
}

int backend_launcher_hello_check(struct backend_instance *bi, json_t *info,
				 const struct ctl_launcher_error *err, char *msg, size_t msg_size)
{
	if (err) {
		(void)snprintf(msg, msg_size, "the launcher refused hello: %s", err->message);
		return ctl_launcher_error_to_errno(err->code);
	}
	log_info("%s: launcherd in %s mode, Landlock ABI %lld", bi->name,
		 json_string_value(json_object_get(info, "mode")),
		 (long long)json_integer_value(json_object_get(info, "landlockAbi")));
	return 0;
}

struct reaper {
	pid_t pid;
	int pidfd;
};

static int on_reap(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct reaper *rp = userdata;

	(void)waitpid(rp->pid, NULL, WNOHANG);
	event_source_free(s);
	safe_close(rp->pidfd);
	free(rp);
	return 0;
}

void backend_launcher_reap_later(struct controller *c, struct ctl_launcher *l)
{
	pid_t pid = l ? ctl_launcher_take_child(l) : 0;
	struct reaper *rp;

	if (pid <= 0 || waitpid(pid, NULL, WNOHANG) != 0)
		return;
	rp = calloc(1, sizeof(*rp));
	if (rp) {
		rp->pid = pid;
		rp->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	}
	if (!rp || rp->pidfd < 0 ||
	    event_add_io(c->loop, rp->pidfd, EPOLLIN, on_reap, rp, NULL) < 0) {
		/* No way to be told: wait now. */
		if (rp)
			safe_close(rp->pidfd);
		free(rp);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
}

/* The launcher's hello reply completes prepare. */
static void auto_hello_done(struct ctl_launcher *l, json_t *info,
			    const struct ctl_launcher_error *err, void *userdata)
{
	struct backend_instance *bi = userdata;
	struct auto_data *d = bi->data;
	backend_done_cb done = TAKE_PTR(d->prepare_done);
	char msg[1200];
	int r;

	r = backend_launcher_hello_check(bi, info, err, msg, sizeof(msg));
	if (r >= 0)
		d->hello = json_incref(info);
	done(bi, r, r < 0 ? msg : NULL, d->prepare_ud);
}

static void auto_prepare(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	struct auto_data *d;
	char msg[1200];
	int r;

	d = calloc(1, sizeof(*d));
	if (!d) {
		done(bi, -ENOMEM, "out of memory", ud);
		return;
	}
	bi->data = d;
	r = backend_launcher_open(bi, &d->l, msg, sizeof(msg));
	if (r < 0) {
		done(bi, r, msg, ud);
		return;
	}
	ctl_launcher_set_exit_handler(d->l, on_exit_report, bi);
	r = event_add_io(bi->ctl->loop, ctl_launcher_fd(d->l), EPOLLIN, on_launcher, bi, &d->src);
	if (r >= 0) {
		d->prepare_done = done;
		d->prepare_ud = ud;
		r = ctl_launcher_hello_async(d->l, auto_hello_done, bi);
		if (r < 0)
			d->prepare_done = NULL;
	}
	if (r < 0)
		done(bi, r, "cannot talk to the launcher", ud);
}

static void auto_probe(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	struct auto_data *d = bi->data;
	const char *mode = d ? json_string_value(json_object_get(d->hello, "mode")) : NULL;

	/* Confining or nothing: a launcher that answered in either mode builds namespaces. */
	if (!mode || (!streq(mode, "privileged") && !streq(mode, "user")))
		done(bi, -ENODEV, "no confining launcher is available", ud);
	else
		done(bi, 0, NULL, ud);
}

static json_t *auto_hello(struct backend_instance *bi)
{
	struct auto_data *d = bi->data;

	return d ? d->hello : NULL;
}

struct auto_spawn {
	struct backend_instance *bi;
	backend_spawn_cb cb;
	void *ud;
};

static void auto_spawned(struct ctl_launcher *l, const char *sandbox, int pidfd, pid_t pid,
			 int proxy_fd, const struct ctl_launcher_error *err, void *userdata)
{
	struct auto_spawn *as = userdata;
	_cleanup_json_ json_t *e = NULL;

	if (err)
		e = json_pack("{s:s,s:i,s:s,s:s,s:s}", "code", err->code, "errno", err->error,
			      "field", err->field, "step", err->step, "message", err->message);
	as->cb(as->bi, sandbox, pidfd, proxy_fd, pid, e, as->ud);
	free(as);
}

static int auto_spawn(struct backend_instance *bi, json_t *plan, const int *fds, size_t n_fds,
		      backend_spawn_cb cb, void *ud)
{
	struct auto_data *d = bi->data;
	struct auto_spawn *as;
	int r;

	if (!d || !d->l || !d->src)
		return -ENODEV;
	as = calloc(1, sizeof(*as));
	if (!as)
		return -ENOMEM;
	*as = (struct auto_spawn){ bi, cb, ud };
	r = ctl_launcher_spawn_async(d->l, plan, fds, n_fds, auto_spawned, as);
	if (r < 0)
		free(as);
	return r;
}

static int auto_kill(struct backend_instance *bi, const char *sandbox, int sig)
{
	struct auto_data *d = bi->data;
	struct ctl_launcher_error e = { 0 };

	if (!d || !d->l)
		return -ENODEV;
	return ctl_launcher_kill(d->l, sandbox, sig, &e);
}

static int auto_dispose(struct backend_instance *bi)
{
	struct auto_data *d = bi->data;

	if (!d)
		return 0;
	event_source_free(d->src);
	d->src = NULL;
	/* Closing the channel ends a user-mode launcherd and everything that asked to die with us;
	 * nothing is left: this instance has no live process, or it would not be disposed. It is
	 * reaped once it has exited, not waited for here. */
	backend_launcher_reap_later(bi->ctl, d->l);
	ctl_launcher_free(d->l);
	d->l = NULL;
	return 0;
}

static void auto_free(struct backend_instance *bi)
{
	struct auto_data *d = bi->data;

	if (!d)
		return;
	(void)auto_dispose(bi);
	json_decref(d->hello);
	free(d);
	bi->data = NULL;
}

const struct backend_ops backend_auto_ops = {
	.source = "builtin",
	.kind = "auto",
	.confined = true,
	.descriptor = auto_descriptor,
	.configure = auto_configure,
	.prepare = auto_prepare,
	.probe = auto_probe,
	.hello = auto_hello,
	.spawn = auto_spawn,
	.kill = auto_kill,
	.dispose = auto_dispose,
	.free = auto_free,
};
