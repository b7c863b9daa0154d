/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * builtin:auto — the best lightweight OS sandbox on this host: the system cordon-launcherd when
 * its socket exists (privileged mode), else a launcherd of our own over a socketpair: privileged
 * when we run as root with its capabilities, else in user mode (unprivileged user namespaces). It never selects an unconfined launcher: when no launcher
 * answers, the backend is unavailable.
 *
 * Instances share a launcher channel (struct auto_link): activating builtin:auto again greets the
 * launcher the active instance uses instead of starting another launcherd, as long as it is the
 * same launcher (same mode; in user mode the same binary and floor file, unchanged on disk), so
 * an activation of a ready backend costs no launcher start and no round trip. The link says
 * hello once (launcherd takes one hello per connection); instances that join before the reply
 * wait for it. Each sandbox is routed to the instance that spawned it; the channel closes when
 * the last instance using it is disposed.
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
#include "common/reaper.h"
#include "common/system.h"
#include "common/util.h"
#include "backends/backend.h"
#include "common/event.h"
#include "backends/ctl-launcher.h"

#ifndef CORDON_LIBEXECDIR
#define CORDON_LIBEXECDIR "/usr/local/libexec"
#endif

struct auto_owner {
	struct auto_owner *next;
	char sandbox[32];
	struct backend_instance *bi;
};

struct auto_link {
	struct backend_host *host;
	struct ctl_launcher *l;
	struct event_source *src;
	struct event_source *pid_src; /* the launcherd process's end */
	char key[512];		      /* which launcher this is (launcher_key()) */
	json_t *hello;		      /* the launcher's hello reply, once it came */
	unsigned users;		      /* instances holding it, plus a walk in progress */
	struct auto_data *members;    /* the instances using it */
	struct auto_owner *owners;    /* live sandboxes and the instance that spawned each */
};

struct auto_data {
	struct backend_instance *bi;
	struct auto_link *link;
	struct auto_data *next_member;
	json_t *hello;
	backend_done_cb prepare_done; /* set while the hello reply is awaited (or a reconnection) */
	void *prepare_ud;
	struct event_source *retry;	/* reconnecting to the system socket */
	unsigned long long retry_until; /* …until then */
};

/* The link new instances join; NULL when there is none or it broke. One controller per process,
 * single-threaded. */
static struct auto_link *current_link;
/* A system launcher was lost: the system socket is the only launcher from now on. */
static bool system_lost;

/* How long a re-established link tries the system socket while it refuses or is absent (its
 * launcherd being restarted), and how often. */
#define RECONNECT_USEC (2ULL * 1000 * 1000)
#define RECONNECT_STEP_USEC (50ULL * 1000)

static json_t *auto_descriptor(const struct backend_ops *ops)
{
	return json_pack(
		"{s:s,s:s,s:s,s:{s:[]},s:{s:[s],s:s,s:[s,s,s,s],s:b,s:s}}", "kind", "auto", "name",
		"Automatic OS sandbox", "description",
		"The best lightweight sandbox this host offers: namespaces, Landlock, seccomp "
		"and cgroups through cordon-launcherd (privileged or user mode).",
		"settings", "fields", "claims", "platforms", "linux", "isolation", "namespace",
		"enforces", "filesystem", "network", "limits", "syscalls", "readOnlyWorkspace",
		true, "workspace", "direct");
}

static struct backend_instance *owner_take(struct auto_link *k, const char *sandbox)
{
	for (struct auto_owner **pp = &k->owners; *pp; pp = &(*pp)->next) {
		struct auto_owner *o = *pp;
		struct backend_instance *bi = o->bi;

		if (!streq(o->sandbox, sandbox))
			continue;
		*pp = o->next;
		free(o);
		return bi;
	}
	return NULL;
}

static void on_exit_report(struct ctl_launcher *l, const struct ctl_launcher_exit *e, void *ud)
{
	struct auto_link *k = ud;
	struct backend_instance *bi = owner_take(k, e->sandbox);
	_cleanup_json_ json_t *j = NULL;

	if (!bi)
		return; /* a sandbox whose spawn reply nobody took */
	j = json_pack("{s:s,s:i,s:i,s:i,s:s,s:I,s:{s:b,s:b}}", "sandbox", e->sandbox, "pid",
		      (int)e->pid, "exitCode", e->exit_code, "signal", e->signal, "reason",
		      e->reason, "durationUsec", (json_int_t)e->duration_usec, "limits", "pids",
		      e->limit_pids, "memory", e->limit_memory);
	if (j)
		bi->host->exited(bi->host, bi, e->sandbox, j);
}

/* A refusal in one of our sandboxes (docs/DENIALS.md): an event of the user's stream, naming
 * the sandbox as the spawn event did ("instance"). launcherd sends a sandbox's denials to its
 * requester alone; they may trail its exit report. */
static void on_denial(struct ctl_launcher *l, json_t *denial, void *ud)
{
	struct auto_link *k = ud;

	(void)l;
	k->host->event(k->host, "denial", denial);
}

static void link_unref(struct auto_link *k)
{
	if (!k || --k->users > 0)
		return;
	if (current_link == k)
		current_link = NULL;
	event_source_free(k->src);
	event_source_free(k->pid_src);
	ctl_launcher_cancel_hello(k->l, k);
	/* Closing the channel ends a user-mode launcherd and everything that asked to die with us;
	 * nothing is left: no instance uses it. It is reaped once it has exited, not waited for. */
	backend_launcher_reap_later(k->host, k->l);
	ctl_launcher_free(k->l);
	json_decref(k->hello);
	while (k->owners) {
		struct auto_owner *o = k->owners;

		k->owners = o->next;
		free(o);
	}
	free(k);
}

static void link_leave(struct auto_data *d)
{
	struct auto_link *k = d->link;

	if (!k)
		return;
	d->prepare_done = NULL;
	for (struct auto_data **pp = &k->members; *pp; pp = &(*pp)->next_member)
		if (*pp == d) {
			*pp = d->next_member;
			break;
		}
	for (struct auto_owner **pp = &k->owners; *pp;) {
		struct auto_owner *o = *pp;

		if (o->bi == d->bi) {
			*pp = o->next;
			free(o);
		} else
			pp = &o->next;
	}
	d->link = NULL;
	link_unref(k);
}

/*
 * Settle every instance on k: those still preparing complete with r (and message when r < 0);
 * when lost is set, the others are reported lost. The walk holds a reference on each instance
 * and on k, since completing one may dispose any of them.
 */
static void link_settle(struct auto_link *k, int r, const char *message, bool lost)
{
	size_t n = 0, i = 0;
	struct backend_instance **bis;

	for (struct auto_data *d = k->members; d; d = d->next_member)
		n++;
	bis = calloc(n ? n : 1, sizeof(*bis));
	if (!bis)
		return;
	for (struct auto_data *d = k->members; d; d = d->next_member)
		bis[i++] = backend_instance_ref(d->bi);
	k->users++;
	for (i = 0; i < n; i++) {
		struct auto_data *d = bis[i]->data;

		if (d && d->link == k && d->prepare_done) {
			backend_done_cb done = TAKE_PTR(d->prepare_done);

			if (r >= 0)
				d->hello = json_incref(k->hello);
			done(bis[i], r, r < 0 ? message : NULL, d->prepare_ud);
		} else if (lost && d && d->link == k) {
			log_error("lost the launcher of %s: %s", bis[i]->name, message);
			bis[i]->host->lost(bis[i]->host, bis[i]);
		}
		backend_instance_unref(bis[i]);
	}
	free(bis);
	link_unref(k);
}

/*
 * The launcher is gone: every instance on k is lost (or, still preparing, fails), each spawn in
 * flight fails, and a launcherd of our own is reaped once it has exited (now, as a rule).
 */
static void link_broken(struct auto_link *k, int r, const char *why)
{
	if (current_link == k)
		current_link = NULL;
	if (startswith(k->key, "system "))
		system_lost = true;
	event_source_free(k->src);
	k->src = NULL;
	event_source_free(k->pid_src);
	k->pid_src = NULL;
	k->users++;
	backend_launcher_reap_later(k->host, k->l);
	/* The hello is settled below, with the members still preparing. */
	ctl_launcher_cancel_hello(k->l, k);
	ctl_launcher_abort(k->l, why);
	link_settle(k, r, k->hello ? why : "the launcher exited during start-up", true);
	link_unref(k);
}

static int on_launcher(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct auto_link *k = userdata;
	int r = ctl_launcher_process(k->l);

	if (r < 0) {
		char why[128];

		(void)snprintf(why, sizeof(why), "the launcher closed the connection (%s)",
			       strerror(-r));
		link_broken(k, r, why);
	}
	return 0;
}

/* The launcherd process ended. What it sent before is read first: replies, exit reports. */
static int on_launcher_exited(struct event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct auto_link *k = userdata;
	char why[128];
	pid_t pid = 0;
	int status = 0;

	k->users++;
	(void)ctl_launcher_process(k->l);
	(void)ctl_launcher_pidfd(k->l, &pid);
	if (ctl_launcher_reap_child(k->l, &status) > 0 && WIFSIGNALED(status))
		(void)snprintf(why, sizeof(why),
			       "cordon-launcherd (pid %d) was killed by signal %d", (int)pid,
			       WTERMSIG(status));
	else if (WIFEXITED(status) && status != 0)
		(void)snprintf(why, sizeof(why), "cordon-launcherd (pid %d) exited with status %d",
			       (int)pid, WEXITSTATUS(status));
	else
		(void)snprintf(why, sizeof(why), "cordon-launcherd (pid %d) exited", (int)pid);
	/* The connection may have ended while its messages were read. */
	if (k->src || k->pid_src)
		link_broken(k, -ECONNRESET, why);
	link_unref(k);
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

	if (system_lost || (stat(sock, &st) == 0 && S_ISSOCK(st.st_mode))) {
		r = ctl_launcher_connect(sock, &l);
		if (r < 0 && system_lost) {
			/* No launcher of our own stands in for the administrator's. */
			(void)snprintf(msg, msg_size,
				       "cannot connect to the system launcher \"%s\": %s", sock,
				       strerror(-r));
			return r;
		}
		if (r < 0)
			log_warning_errno(r,
					  "cannot connect to the system launcher \"%s\": %m; "
					  "starting one of our own",
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
		r = ctl_launcher_start_own(bin, getenv("CORDON_LAUNCHERD_FLOOR"), false, &l);
		if (r < 0) {
			(void)snprintf(msg, msg_size,
				       "cannot start a launcher of our own \"%s\": %s", bin,
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

/* Launchers that were let go of and have not exited yet: reaped when they do. */
static struct reaper *reapers;

void backend_launcher_reap_later(struct backend_host *h, struct ctl_launcher *l)
{
	pid_t pid = l ? ctl_launcher_take_child(l) : 0;
	int pidfd;

	/* Shutting down: whoever inherits it reaps it (it ends once its channel closes). */
	if (pid <= 0 || waitpid(pid, NULL, WNOHANG) != 0 || h->exiting)
		return;
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd >= 0 && reap_later(h->loop, &reapers, pidfd) >= 0)
		return;
	/* No way to be told: wait now. */
	safe_close(pidfd);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

void backend_launcher_reapers_free(void)
{
	/* At exit: those still running are reparented (and end with their channels). */
	reapers_release(&reapers, 0);
}

/*
 * Which launcher backend_launcher_open() would give now: the system one, or a user-mode one of
 * this binary and floor as they are on disk (a replaced binary or an edited floor makes a new
 * launcher, so activating builtin:auto again picks them up).
 */
static void launcher_key(char *buf, size_t size)
{
	const char *sock = cordon_launcherd_socket_path(), *bin = getenv("CORDON_LAUNCHERD");
	const char *floor = getenv("CORDON_LAUNCHERD_FLOOR");
	_cleanup_free_ char *dflt = NULL;
	struct stat st, sb = { 0 }, sf = { 0 };

	if (system_lost || (stat(sock, &st) == 0 && S_ISSOCK(st.st_mode))) {
		(void)snprintf(buf, size, "system %s", sock);
		return;
	}
	if (isempty(bin))
		bin = dflt = strdup_printf("%s/cordon-launcherd", CORDON_LIBEXECDIR);
	(void)stat(bin ?: "", &sb);
	(void)stat(floor ?: "", &sf);
	(void)snprintf(buf, size, "user %s %llu:%llu %lld.%09ld %s %lld.%09ld", bin ?: "",
		       (unsigned long long)sb.st_dev, (unsigned long long)sb.st_ino,
		       (long long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec, floor ?: "",
		       (long long)sf.st_mtim.tv_sec, sf.st_mtim.tv_nsec);
}

static void link_hello_done(struct ctl_launcher *l, json_t *info,
			    const struct ctl_launcher_error *err, void *userdata);

/* The link to join: the current one when it is still the launcher we would open, else a new
 * one (the old one lives on for the instances that use it). */
static int link_get(struct backend_instance *bi, struct auto_link **ret, char *msg, size_t size)
{
	char key[sizeof(current_link->key)];
	struct auto_link *k;
	int r;

	launcher_key(key, sizeof(key));
	if (current_link && streq(current_link->key, key)) {
		*ret = current_link;
		return 0;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		(void)snprintf(msg, size, "out of memory");
		return -ENOMEM;
	}
	k->host = bi->host;
	(void)snprintf(k->key, sizeof(k->key), "%s", key);
	r = backend_launcher_open(bi, &k->l, msg, size);
	if (r < 0) {
		free(k);
		return r;
	}
	ctl_launcher_set_exit_handler(k->l, on_exit_report, k);
	ctl_launcher_set_denial_handler(k->l, on_denial, k);
	r = event_add_io(bi->host->loop, ctl_launcher_fd(k->l), EPOLLIN, on_launcher, k, &k->src);
	if (r >= 0 && ctl_launcher_pidfd(k->l, NULL) >= 0)
		r = event_add_io(bi->host->loop, ctl_launcher_pidfd(k->l, NULL), EPOLLIN,
				 on_launcher_exited, k, &k->pid_src);
	if (r < 0) {
		(void)snprintf(msg, size, "cannot watch the launcher");
		event_source_free(k->src);
		backend_launcher_reap_later(bi->host, k->l);
		ctl_launcher_free(k->l);
		free(k);
		return r;
	}
	r = ctl_launcher_hello_async(k->l, link_hello_done, k);
	if (r < 0) {
		(void)snprintf(msg, size, "cannot talk to the launcher");
		event_source_free(k->src);
		event_source_free(k->pid_src);
		backend_launcher_reap_later(bi->host, k->l);
		ctl_launcher_free(k->l);
		free(k);
		return r;
	}
	current_link = k;
	*ret = k;
	return 0;
}

/* The launcher's hello reply completes the prepare of every instance waiting on the link. */
static void link_hello_done(struct ctl_launcher *l, json_t *info,
			    const struct ctl_launcher_error *err, void *userdata)
{
	struct auto_link *k = userdata;
	char msg[1200];
	int r;

	/* Someone waits (a link nobody uses is closed, its hello forgotten): the log names them. */
	r = backend_launcher_hello_check(k->members->bi, info, err, msg, sizeof(msg));
	if (r >= 0)
		k->hello = json_incref(info);
	else if (current_link == k)
		current_link = NULL; /* refused: the next activation tries afresh */
	link_settle(k, r, msg, false);
}

static void prepare_link(struct backend_instance *bi);

static int on_reconnect(struct event_source *s, void *userdata)
{
	prepare_link(userdata);
	return 0;
}

/* Join the link (d->prepare_done waits for it); a lost system launcher is tried again for a
 * while when its socket refuses or is absent. */
static void prepare_link(struct backend_instance *bi)
{
	struct auto_data *d = bi->data;
	struct auto_link *k = NULL;
	char msg[1200];
	int r;

	r = link_get(bi, &k, msg, sizeof(msg));
	if (r < 0) {
		backend_done_cb done;

		if (system_lost && (r == -ECONNREFUSED || r == -ENOENT || r == -EAGAIN) &&
		    now_usec() < d->retry_until &&
		    (d->retry ? event_timer_set(d->retry, RECONNECT_STEP_USEC, false)
			      : event_add_timer(bi->host->loop, RECONNECT_STEP_USEC, false,
						on_reconnect, bi, &d->retry)) >= 0)
			return;
		done = TAKE_PTR(d->prepare_done);
		done(bi, r, msg, d->prepare_ud);
		return;
	}
	k->users++;
	d->link = k;
	d->next_member = k->members;
	k->members = d;
	if (k->hello) {
		/* A launcher that answered and is still connected: ready now. */
		backend_done_cb done = TAKE_PTR(d->prepare_done);

		d->hello = json_incref(k->hello);
		done(bi, 0, NULL, d->prepare_ud);
	}
	/* Else link_hello_done() (or the link's loss) completes it. */
}

static void auto_prepare(struct backend_instance *bi, backend_done_cb done, void *ud)
{
	struct auto_data *d;

	d = calloc(1, sizeof(*d));
	if (!d) {
		done(bi, -ENOMEM, "out of memory", ud);
		return;
	}
	d->bi = bi;
	d->prepare_done = done;
	d->prepare_ud = ud;
	d->retry_until = now_usec() + RECONNECT_USEC;
	bi->data = d;
	prepare_link(bi);
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
	struct auto_data *d = as->bi->data;
	_cleanup_json_ json_t *e = NULL;

	if (err)
		e = json_pack("{s:s,s:i,s:s,s:s,s:s}", "code", err->code, "errno", err->error,
			      "field", err->field, "step", err->step, "message", err->message);
	else if (d && d->link) {
		/* Its exit report goes to this instance. */
		struct auto_owner *o = calloc(1, sizeof(*o));

		if (o) {
			(void)snprintf(o->sandbox, sizeof(o->sandbox), "%s", sandbox);
			o->bi = as->bi;
			o->next = d->link->owners;
			d->link->owners = o;
		}
	}
	as->cb(as->bi, sandbox, pidfd, proxy_fd, pid, e, as->ud);
	free(as);
}

static int auto_spawn(struct backend_instance *bi, const struct backend_spawn *req,
		      backend_spawn_cb cb, void *ud)
{
	json_t *plan = req->plan;
	const int *fds = req->fds;
	size_t n_fds = req->n_fds;
	struct auto_data *d = bi->data;
	struct auto_spawn *as;
	int r;

	if (!d || !d->link || !d->link->src)
		return -ENODEV;
	as = calloc(1, sizeof(*as));
	if (!as)
		return -ENOMEM;
	*as = (struct auto_spawn){ bi, cb, ud };
	r = ctl_launcher_spawn_async(d->link->l, plan, fds, n_fds, auto_spawned, as);
	if (r < 0)
		free(as);
	return r;
}

static int auto_kill(struct backend_instance *bi, const char *sandbox, int sig)
{
	struct auto_data *d = bi->data;

	if (!d || !d->link || !d->link->src)
		return -ENODEV;
	/* Never waits for the launcher: the event loop serves every client. */
	return ctl_launcher_kill_async(d->link->l, sandbox, sig);
}

static int auto_dispose(struct backend_instance *bi)
{
	struct auto_data *d = bi->data;

	/* This instance has no live process, or it would not be disposed; the channel closes
	 * with the last instance on it. */
	if (d)
		link_leave(d);
	return 0;
}

static void auto_free(struct backend_instance *bi)
{
	struct auto_data *d = bi->data;

	if (!d)
		return;
	link_leave(d);
	event_source_free(d->retry);
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
