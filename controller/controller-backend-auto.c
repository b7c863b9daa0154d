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
		/* The launcher is gone, and every sandbox it ran died with the channel. */
		log_error_errno(r, "lost the launcher of %s: %m", bi->name);
		event_source_free(d->src);
		d->src = NULL;
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

static void auto_prepare(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	const char *sock = cordon_launcherd_socket_path();
	struct ctl_launcher_error e = { 0 };
	struct auto_data *d;
	char msg[1200];
	struct stat st;
	int r;

	d = calloc(1, sizeof(*d));
	if (!d) {
		done(bi, -ENOMEM, "out of memory", ud);
		return;
	}
	bi->data = d;
	if (stat(sock, &st) == 0 && S_ISSOCK(st.st_mode)) {
		r = ctl_launcher_connect(sock, &d->l);
		if (r < 0)
			log_warning_errno(r,
					  "cannot connect to the system launcher \"%s\": %m; "
					  "trying user mode",
					  sock);
	}
	if (!d->l) {
		const char *bin = getenv("CORDON_LAUNCHERD");
		_cleanup_free_ char *dflt = NULL;

		if (isempty(bin)) {
			dflt = strdup_printf("%s/cordon-launcherd", CORDON_LIBEXECDIR);
			if (!dflt) {
				done(bi, -ENOMEM, "out of memory", ud);
				return;
			}
			bin = dflt;
		}
		r = ctl_launcher_start_user_mode(bin, getenv("CORDON_LAUNCHERD_FLOOR"), &d->l);
		if (r < 0) {
			(void)snprintf(msg, sizeof(msg),
				       "cannot start a user-mode launcher \"%s\": %s", bin,
				       strerror(-r));
			done(bi, r, msg, ud);
			return;
		}
	}
	r = ctl_launcher_hello(d->l, &d->hello, &e);
	if (r < 0) {
		(void)snprintf(msg, sizeof(msg), "the launcher refused hello: %s", e.message);
		done(bi, r, msg, ud);
		return;
	}
	ctl_launcher_set_exit_handler(d->l, on_exit_report, bi);
	r = event_add_io(bi->ctl->loop, ctl_launcher_fd(d->l), EPOLLIN, on_launcher, bi, &d->src);
	if (r < 0) {
		done(bi, r, "cannot watch the launcher", ud);
		return;
	}
	log_info("%s: launcherd in %s mode, Landlock ABI %lld", bi->name,
		 json_string_value(json_object_get(d->hello, "mode")),
		 (long long)json_integer_value(json_object_get(d->hello, "landlockAbi")));
	done(bi, 0, NULL, ud);
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
	 * nothing is left: this instance has no live process, or it would not be disposed. */
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
