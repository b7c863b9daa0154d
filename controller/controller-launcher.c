/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The controller's launcher: the system cordon-launcherd when its socket exists (privileged
 * mode), else a user-mode launcherd of our own over a socketpair. Exit reports arrive through
 * the event loop; a report for a sandbox whose spawn reply we have not processed yet is kept
 * until the process is registered, so no exit is ever lost.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
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
#include "controller/controller.h"
#include "controller/ctl-launcher.h"

#ifndef CORDON_LIBEXECDIR
#define CORDON_LIBEXECDIR "/usr/local/libexec"
#endif

#define ORPHAN_EXITS_MAX 64

struct ctl_launcher_ref {
	struct ctl_launcher *l;
	struct event_source *src;
	json_t *hello;
	char name[64];
	json_t *orphans; /* exit reports for sandboxes not (yet) in the process table */
};

static unsigned launcher_generation;

static json_t *exit_to_json(const struct ctl_launcher_exit *e)
{
	return json_pack("{s:s,s:i,s:i,s:i,s:s,s:I,s:{s:b,s:b}}", "sandbox", e->sandbox, "pid",
			 (int)e->pid, "exitCode", e->exit_code, "signal", e->signal, "reason",
			 e->reason, "durationUsec", (json_int_t)e->duration_usec, "limits", "pids",
			 e->limit_pids, "memory", e->limit_memory);
}

static void on_exit_report(struct ctl_launcher *l, const struct ctl_launcher_exit *e,
			   void *userdata)
{
	struct controller *c = userdata;
	_cleanup_json_ json_t *j = exit_to_json(e);

	if (!j)
		return;
	if (!controller_process_known(c, e->sandbox)) {
		json_array_append(c->launcher->orphans, j);
		while (json_array_size(c->launcher->orphans) > ORPHAN_EXITS_MAX)
			json_array_remove(c->launcher->orphans, 0);
		return;
	}
	controller_process_exited(c, e->sandbox, j);
}

static int on_launcher(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct controller *c = userdata;
	int r = ctl_launcher_process(c->launcher->l);

	if (r < 0) {
		/* The launcher is gone: every sandbox it ran died with the channel. */
		log_error_errno(r, "lost the launcher: %m; exiting");
		event_source_free(c->launcher->src);
		c->launcher->src = NULL;
		event_loop_exit(c->loop, 1);
	}
	return 0;
}

int controller_launcher_start(struct controller *c)
{
	const char *sock = cordon_launcherd_socket_path();
	struct ctl_launcher_ref *ref;
	struct ctl_launcher_error e = { 0 };
	const char *mode;
	struct stat st;
	int r;

	ref = calloc(1, sizeof(*ref));
	if (!ref)
		return -ENOMEM;
	ref->orphans = json_array();
	c->launcher = ref;

	if (stat(sock, &st) == 0 && S_ISSOCK(st.st_mode)) {
		r = ctl_launcher_connect(sock, &ref->l);
		if (r < 0)
			log_warning_errno(r, "cannot connect to the system launcher \"%s\": %m; "
					     "trying user mode", sock);
	}
	if (!ref->l) {
		const char *bin = getenv("CORDON_LAUNCHERD");
		_cleanup_free_ char *dflt = NULL;

		if (isempty(bin)) {
			dflt = strdup_printf("%s/cordon-launcherd", CORDON_LIBEXECDIR);
			if (!dflt)
				return -ENOMEM;
			bin = dflt;
		}
		r = ctl_launcher_start_user_mode(bin, getenv("CORDON_LAUNCHERD_FLOOR"), &ref->l);
		if (r < 0)
			return log_error_errno(r, "cannot start a user-mode launcher \"%s\": %m", bin);
	}
	r = ctl_launcher_hello(ref->l, &ref->hello, &e);
	if (r < 0)
		return log_error_errno(r, "the launcher refused hello: %s", e.message);
	mode = json_string_value(json_object_get(ref->hello, "mode"));
	(void)snprintf(ref->name, sizeof(ref->name), "builtin:auto#%u", ++launcher_generation);
	log_info("launcher %s: %s mode, Landlock ABI %lld", ref->name, mode ? mode : "?",
		 (long long)json_integer_value(json_object_get(ref->hello, "landlockAbi")));

	ctl_launcher_set_exit_handler(ref->l, on_exit_report, c);
	return event_add_io(c->loop, ctl_launcher_fd(ref->l), EPOLLIN, on_launcher, c, &ref->src);
}

void controller_launcher_stop(struct controller *c)
{
	struct ctl_launcher_ref *ref = c->launcher;

	if (!ref)
		return;
	event_source_free(ref->src);
	ctl_launcher_free(ref->l);
	json_decref(ref->hello);
	json_decref(ref->orphans);
	free(ref);
	c->launcher = NULL;
}

json_t *controller_launcher_hello(struct controller *c)
{
	return c->launcher ? c->launcher->hello : NULL;
}

const char *controller_launcher_name(struct controller *c)
{
	return c->launcher ? c->launcher->name : "none";
}

int controller_launcher_spawn(struct controller *c, json_t *plan, const int *fds, size_t n_fds,
			      char **ret_sandbox, int *ret_pidfd, pid_t *ret_pid, json_t **ret_error)
{
	struct ctl_launcher_error e = { 0 };
	int r;

	if (!c->launcher || !c->launcher->l)
		return -ENODEV;
	r = ctl_launcher_spawn(c->launcher->l, plan, fds, n_fds, ret_sandbox, ret_pidfd, &e);
	if (r < 0) {
		if (*e.code)
			*ret_error = json_pack("{s:s,s:i,s:s,s:s,s:s}", "code", e.code, "errno",
					       e.error, "field", e.field, "step", e.step, "message",
					       e.message);
		return r;
	}
	*ret_pid = 0;
	{
		/* The init's pid, for display: from the pidfd's fdinfo. */
		_cleanup_free_ char *path = strdup_printf("/proc/self/fdinfo/%d", *ret_pidfd);
		_cleanup_free_ char *info = NULL;
		const char *p;

		if (path && read_full_file(path, 4096, &info, NULL) >= 0 &&
		    (p = strstr(info, "Pid:\t")))
			*ret_pid = (pid_t)atoi(p + 5);
	}
	return 0;
}

int controller_launcher_kill(struct controller *c, const char *sandbox, int sig)
{
	struct ctl_launcher_error e = { 0 };

	if (!c->launcher || !c->launcher->l)
		return -ENODEV;
	return ctl_launcher_kill(c->launcher->l, sandbox, sig, &e);
}

/* Deliver an exit report that arrived before the process was registered. */
void controller_launcher_claim_orphan(struct controller *c, const char *sandbox)
{
	json_t *orphans = c->launcher ? c->launcher->orphans : NULL;
	json_t *v;
	size_t i;

	json_array_foreach (orphans, i, v)
		if (streq_ptr(json_string_value(json_object_get(v, "sandbox")), sandbox)) {
			json_incref(v);
			json_array_remove(orphans, i);
			controller_process_exited(c, sandbox, v);
			json_decref(v);
			return;
		}
}
