/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Modal pack (backends/modal/pack.json): the pack protocol of docs/PROTOCOL.md §6 over
 * stdin/stdout, backed by Modal sandboxes reached over gRPC (modal-api.h).
 *
 *   configure  token id and secret (secrets), image, app, environment, server URL, CA file,
 *              resources
 *   isAvailable  an auth token from the token id and secret (the service's refusal as reason)
 *   prepare    the app (get or create); an image setting that is a registry reference is built
 *              (or found built) by Modal's image calls, its build log sent as progress
 *              notifications, a failed build failing prepare with the build's message; the
 *              sandboxes an earlier instance on this host left behind are terminated: each
 *              sandbox carries a tag naming its owning instance, and an instance holds a lock on
 *              <state>/owners/<owner> while it lives
 *   acquire    creates a sandbox (no network access, workdir WS_DIR), gets its task and the
 *              command router's access, and hydrates WS_DIR by an exec of tar reading the
 *              workspace tar on its stdin; answers mountPoint WS_DIR
 *   spawn      an exec (wrapped so that its pid is kept for kill) on a thread of its own:
 *              stdout and stderr streamed apart to the fds it got, stdin forwarded with its EOF,
 *              then the exit code or signal; answers {sandbox} at once, notifies `exited`
 *   kill       an exec of kill(1) on the kept pid
 *   release    an exec of tar writing the tree to its stdout, streamed to the release fd; then
 *              the sandbox is terminated
 * The token secret lives in one header of the control-plane client; it is never logged.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/modal/modal-api.h"
#include "backends/remote/remote-owner.h"
#include "backends/packlib/packlib.h"
#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-jsonrpc.h"

#define WS_DIR "/root/workspace"
#define STDIN_CHUNK (256 * 1024)
#define OWNER_TAG "cordon-owner"
/* How long prepare (bounded at 120 s by the controller) waits for an image build. */
#define BUILD_WAIT_S 100
#define IMAGE_COMMANDS_MAX 32
/* Runs "$@" in "$1" after keeping its pid under $HOME/.cordon (for kill). */
#define WRAPPER                                                                                \
	"mkdir -p \"$HOME/.cordon\" && echo $$ >\"$HOME/.cordon/$1\" && cd \"$2\" && shift 2 " \
	"&& exec \"$@\""

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static char instance[256] = "unconfigured";
static char server_url[1024] = "https://api.modal.com", image[256], app_name[128] = "cordon",
	    environment[128], ca_file[1024], image_commands[4096];
static char image_id[256]; /* the image setting's id, or the one built from its reference */
static unsigned milli_cpu, memory_mb, sandbox_ttl = 3600;
static struct modal_client *mc; /* the main thread's */
static char *app_id;
static char owner[33];
static int owner_lock_fd = -1;
static unsigned next_proc;

struct lease {
	char id[65];
	char *sandbox, *task;
	struct modal_router *router; /* the main thread's; threads use copies */
	struct lease *next;
};
static struct lease *leases;

struct proc {
	char name[32];
	const struct lease *lease;
	struct modal_router *router;
	char exec_id[37];
	int in_fd, out_fd, err_fd;
	atomic_bool started, done, killed, timed_out;
	long long deadline_usec; /* CLOCK_MONOTONIC, 0: none (the plan's timeoutMs) */
	json_t *argv, *env;
	char cwd[4200];
	struct timespec t0;
	struct proc *next;
};
static struct proc *procs;

static bool to_fd(const void *d, size_t n, void *ud)
{
	int fd = *(int *)ud;

	return fd < 0 || loop_write(fd, d, n) >= 0;
}

struct capture {
	char buf[1024];
	size_t n;
};

static bool to_capture(const void *d, size_t n, void *ud)
{
	struct capture *c = ud;
	size_t room = sizeof(c->buf) - 1 - c->n;

	n = n < room ? n : room;
	memcpy(c->buf + c->n, d, n);
	c->n += n;
	c->buf[c->n] = '\0';
	return true;
}

/* Stream fd into the exec's stdin, then its EOF. */
static int feed(struct modal_router *rt, const char *exec_id, int fd, const atomic_bool *stop,
		char *msg, size_t msg_size)
{
	_cleanup_free_ char *buf = malloc(STDIN_CHUNK);
	uint64_t off = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t k;

		if (stop) {
			struct pollfd pfd = { fd, POLLIN, 0 };

			if (atomic_load(stop))
				return 0;
			if (poll(&pfd, 1, 200) == 0)
				continue;
		}
		k = read(fd, buf, STDIN_CHUNK);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return modal_exec_write(rt, exec_id, off, "", 0, true, msg, msg_size);
		if (modal_exec_write(rt, exec_id, off, buf, (size_t)k, false, msg, msg_size) < 0)
			return -EIO;
		off += (uint64_t)k;
	}
}

struct reader_arg {
	struct modal_router *rt;
	const char *exec_id;
	unsigned fd_no;
	int fd;
	int r;
	char msg[256];
};

static void *reader_main(void *ud)
{
	struct reader_arg *a = ud;

	a->r = modal_exec_read(a->rt, a->exec_id, a->fd_no, to_fd, &a->fd, a->msg, sizeof(a->msg));
	return NULL;
}

/* An internal command in WS_DIR: in_fd to its stdin (or none), stdout to out_fd; 0 on exit 0,
 * else -EIO with msg (its stderr). */
static int run_internal(struct lease *l, const char *const *argv, int in_fd, int out_fd, char *msg,
			size_t msg_size)
{
	struct modal_router *rt = NULL;
	struct reader_arg out = { .fd_no = 0, .fd = out_fd };
	struct capture err = {};
	char exec_id[37];
	pthread_t t;
	bool reading = false;
	int r, code = -1, sig = 0;

	r = modal_router_dup(l->router, &rt);
	if (r < 0)
		return r;
	r = modal_exec_start(l->router, argv, WS_DIR, NULL, 0, exec_id, msg, msg_size);
	if (r < 0)
		goto out;
	out.rt = rt;
	out.exec_id = exec_id;
	if (pthread_create(&t, NULL, reader_main, &out) == 0)
		reading = true;
	if (in_fd >= 0)
		r = feed(l->router, exec_id, in_fd, NULL, msg, msg_size);
	else
		r = modal_exec_write(l->router, exec_id, 0, "", 0, true, msg, msg_size);
	if (r >= 0)
		r = modal_exec_read(l->router, exec_id, 1, to_capture, &err, msg, msg_size);
	if (reading)
		pthread_join(t, NULL);
	if (r >= 0 && out.r < 0) {
		r = out.r;
		snprintf(msg, msg_size, "%s", out.msg);
	}
	if (r >= 0)
		r = modal_exec_wait(l->router, exec_id, &code, &sig, msg, msg_size);
	if (r >= 0 && code != 0) {
		snprintf(msg, msg_size, "%s failed (%s %d): %.300s", argv[0],
			 code >= 0 ? "exit" : "signal", code >= 0 ? code : sig, err.buf);
		r = -EIO;
	}
out:
	modal_router_free(rt);
	return r;
}

/* ------------------------------------------------------------------ processes */

static void proc_unlink(struct proc *p)
{
	pthread_mutex_lock(&table_lock);
	for (struct proc **pp = &procs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	pthread_mutex_unlock(&table_lock);
}

static void proc_free(struct proc *p)
{
	safe_close(p->in_fd);
	safe_close(p->out_fd);
	safe_close(p->err_fd);
	json_decref(p->argv);
	json_decref(p->env);
	modal_router_free(p->router);
	free(p);
}

struct feeder_arg {
	struct proc *p;
	struct modal_router *rt;
};

static void *stdin_main(void *ud)
{
	struct feeder_arg *a = ud;
	char msg[256];

	(void)feed(a->rt, a->p->exec_id, a->p->in_fd, &a->p->done, msg, sizeof(msg));
	return NULL;
}

static void *proc_main(void *ud)
{
	struct proc *p = ud;
	size_t n = json_array_size(p->argv), ne = json_array_size(p->env);
	_cleanup_free_ const char **argv = calloc(n + 7, sizeof(*argv));
	_cleanup_free_ const char **env = calloc(ne + 1, sizeof(*env));
	struct modal_router *rt_out = NULL, *rt_in = NULL;
	struct reader_arg out = { .fd_no = 0 };
	struct feeder_arg fa = { .p = p };
	pthread_t tout, tin;
	bool reading = false, feeding = false;
	char msg[256] = "";
	int r = -ENOMEM, code = -1, sig = 0, ec;
	const char *reason = "exited";

	if (argv && env && modal_router_dup(p->router, &rt_out) == 0 &&
	    modal_router_dup(p->router, &rt_in) == 0) {
		argv[0] = "/bin/sh";
		argv[1] = "-c";
		argv[2] = WRAPPER;
		argv[3] = "sh";
		argv[4] = p->name;
		/* $1 the pid file's name, $2 the cwd, then the command */
		{
			argv[5] = p->cwd;
			for (size_t i = 0; i < n; i++)
				argv[6 + i] = json_string_value(json_array_get(p->argv, i));
			argv[6 + n] = NULL;
			for (size_t i = 0; i < ne; i++)
				env[i] = json_string_value(json_array_get(p->env, i));
			r = modal_exec_start(p->router, argv, WS_DIR, env, 0, p->exec_id, msg,
					     sizeof(msg));
		}
	}
	if (r >= 0) {
		atomic_store(&p->started, true);
		out.rt = rt_out;
		out.exec_id = p->exec_id;
		out.fd = p->out_fd;
		reading = pthread_create(&tout, NULL, reader_main, &out) == 0;
		if (p->in_fd >= 0) {
			fa.rt = rt_in;
			feeding = pthread_create(&tin, NULL, stdin_main, &fa) == 0;
		} else {
			(void)modal_exec_write(p->router, p->exec_id, 0, "", 0, true, msg,
					       sizeof(msg));
		}
		r = modal_exec_read(p->router, p->exec_id, 1, to_fd, &p->err_fd, msg, sizeof(msg));
		if (reading)
			pthread_join(tout, NULL);
		if (r >= 0)
			r = modal_exec_wait(p->router, p->exec_id, &code, &sig, msg, sizeof(msg));
	}
	atomic_store(&p->done, true);
	if (feeding)
		pthread_join(tin, NULL);
	if (r >= 0 && code >= 0) {
		ec = code & 0xff;
	} else if (r >= 0) {
		ec = 128 + sig;
		reason = atomic_load(&p->timed_out) ? "timeout"
			 : atomic_load(&p->killed)  ? "killed"
						    : "signaled";
	} else if (atomic_load(&p->killed)) {
		/* its lease's sandbox was terminated under it (release, or a kill) */
		ec = 128 + SIGKILL;
		sig = SIGKILL;
		code = -1;
		r = 0;
		reason = "killed";
	} else {
		_cleanup_free_ char *line = strdup_printf("cordon-modal: %s\n", msg);

		if (line && p->err_fd >= 0)
			(void)loop_write(p->err_fd, line, strlen(line));
		fprintf(stderr, "cordon-modal-pack: %s: %s\n", p->name, msg);
		ec = atomic_load(&p->started) ? 255 : 127;
	}
	modal_router_free(rt_out);
	modal_router_free(rt_in);
	proc_unlink(p);
	/* The output fds close before the exit is told: the controller has all the output. */
	p->out_fd = safe_close(p->out_fd);
	p->err_fd = safe_close(p->err_fd);
	packlib_send(json_pack("{s:s,s:s,s:{s:s,s:i,s:i,s:s,s:I}}", "jsonrpc", "2.0", "method",
			       "exited", "params", "sandbox", p->name, "exitCode", ec, "signal",
			       r >= 0 && code < 0 ? sig : 0, "reason", reason, "durationUsec",
			       (json_int_t)packlib_usec_since(&p->t0)));
	proc_free(p);
	return NULL;
}

/* ------------------------------------------------------------------ calls */

static unsigned num_setting(json_t *settings, const char *key, unsigned dflt, unsigned max)
{
	json_t *v = json_object_get(settings, key);

	if (json_is_number(v) && json_number_value(v) >= 0 && json_number_value(v) <= max)
		return (unsigned)json_number_value(v);
	return dflt;
}

static void wipe_json_string(json_t *s)
{
	if (json_is_string(s))
		explicit_bzero((char *)json_string_value(s), json_string_length(s));
}

static void do_configure(json_t *id, json_t *params)
{
	json_t *settings = json_object_get(params, "settings");
	json_t *secrets = json_object_get(params, "secrets");
	json_t *tid = json_object_get(secrets, "tokenId"),
	       *tsec = json_object_get(secrets, "tokenSecret");
	int r;

	packlib_copy_setting(params, "instance", instance, sizeof(instance));
	packlib_copy_setting(settings, "serverUrl", server_url, sizeof(server_url));
	packlib_copy_setting(settings, "image", image, sizeof(image));
	packlib_copy_setting(settings, "imageCommands", image_commands, sizeof(image_commands));
	packlib_copy_setting(settings, "caFile", ca_file, sizeof(ca_file));
	packlib_copy_setting(settings, "app", app_name, sizeof(app_name));
	packlib_copy_setting(settings, "environment", environment, sizeof(environment));
	milli_cpu = num_setting(settings, "milliCpu", 0, 64000);
	memory_mb = num_setting(settings, "memoryMb", 0, 1024 * 1024);
	sandbox_ttl = num_setting(settings, "sandboxTimeoutSeconds", 3600, 86400);
	if (sandbox_ttl < 60)
		sandbox_ttl = 60;
	mc = modal_client_free(mc);
	free(app_id);
	app_id = NULL;
	image_id[0] = '\0';
	fprintf(stderr, "cordon-modal-pack: configured %s (API %s%s%s, image %s, token %s)\n",
		instance, server_url, ca_file[0] ? ", CA file " : "", ca_file,
		image[0] ? image : "unset", json_string_length(tsec) > 0 ? "configured" : "absent");
	if (!json_is_string(tid) || !json_is_string(tsec) || json_string_length(tid) == 0 ||
	    json_string_length(tsec) == 0) {
		packlib_reply_error(
			id, "no token: set the tokenId and tokenSecret secrets (cordon secret set)",
			"configure");
		return;
	}
	r = modal_client_new(server_url, ca_file[0] ? ca_file : NULL, json_string_value(tid),
			     json_string_value(tsec), &mc);
	wipe_json_string(tsec);
	if (r < 0) {
		packlib_reply_error(id, "serverUrl must be an http or https URL", "configure");
		return;
	}
	if (!image[0]) {
		packlib_reply_error(
			id,
			"no image: set the image setting to an image id (im-…) or a registry "
			"image (python:3.12-slim)",
			"configure");
		return;
	}
	for (const char *p = image; *p; p++)
		if (*p <= ' ' || *p == 0x7f || *p == '"' || *p == '\\' || *p == '<' || *p == '>') {
			packlib_reply_error(
				id, "the image setting holds a space or a control character",
				"configure");
			return;
		}
	if (startswith(image, "im-"))
		(void)snprintf(image_id, sizeof(image_id), "%s", image);
	if (remote_owner_take(owner, &owner_lock_fd) < 0) {
		packlib_reply_error(id, "cannot set up the pack's state", "configure");
		return;
	}
	packlib_reply(id, json_object());
}

static int ensure_app(char *msg, size_t msg_size)
{
	if (app_id)
		return 0;
	return modal_app_get_or_create(mc, app_name, environment, &app_id, msg, msg_size);
}

/* A progress notification (display text: printable ASCII, no markup) and a log line. */
static void progress(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (unsigned char *p = (unsigned char *)line; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			*p = '?';
		else if (*p == '<' || *p == '>')
			*p = '\'';
	fprintf(stderr, "cordon-modal-pack: %s\n", line);
	packlib_send(jsonrpc_notification_new("progress", json_pack("{s:s}", "message", line)));
}

static void on_build_log(const char *line, void *ud)
{
	(void)ud;
	progress("building image %s: %s", image, line);
}

/* The image setting's registry reference built (or found built) at Modal, with the
 * imageCommands setting's lines as Dockerfile commands after its FROM. */
static int build_image(char *msg, size_t msg_size)
{
	_cleanup_free_ char *cmds = strdup(image_commands), *built = NULL;
	const char *argv[IMAGE_COMMANDS_MAX + 1];
	size_t n = 0;
	char *save = NULL;
	int r;

	if (!cmds)
		return -ENOMEM;
	for (char *l = strtok_r(cmds, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		while (*l == ' ' || *l == '\t' || *l == '\r')
			l++;
		if (!*l)
			continue;
		if (n == IMAGE_COMMANDS_MAX) {
			snprintf(msg, msg_size, "imageCommands holds more than %d lines",
				 IMAGE_COMMANDS_MAX);
			return -E2BIG;
		}
		argv[n++] = l;
	}
	argv[n] = NULL;
	progress("building image %s at Modal", image);
	r = modal_image_build(mc, app_id, environment, image, argv, BUILD_WAIT_S, on_build_log,
			      NULL, &built, msg, msg_size);
	if (r < 0)
		return r;
	(void)snprintf(image_id, sizeof(image_id), "%s", built);
	progress("image %s built: %s", image, image_id);
	return 0;
}

/* Terminate the sandboxes of earlier instances on this host whose owner lock is free. */
static void do_prepare(json_t *id)
{
	char msg[512] = "";
	size_t killed = 0;
	DIR *d;
	struct dirent *de;

	if (!mc || ensure_app(msg, sizeof(msg)) < 0) {
		/* Not fatal: isAvailable tells what is wrong. */
		fprintf(stderr, "cordon-modal-pack: cannot look for orphans: %s\n", msg);
		packlib_reply(id, json_object());
		return;
	}
	if (!image_id[0] && build_image(msg, sizeof(msg)) < 0) {
		fprintf(stderr, "cordon-modal-pack: image %s: %s\n", image, msg);
		packlib_reply_error(id, msg, "prepare");
		return;
	}
	d = opendir("owners");
	while (d && (de = readdir(d))) {
		_cleanup_close_ int fd = -1;
		char **ids = NULL;

		if (!remote_hex_ok(de->d_name, REMOTE_ID_HEX) || streq(de->d_name, owner))
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		/* Its owner still lives (holds the lock): an instance still serving its leases. */
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			continue;
		if (modal_sandbox_list(mc, app_id, OWNER_TAG, de->d_name, &ids, msg, sizeof(msg)) <
		    0) {
			fprintf(stderr, "cordon-modal-pack: cannot list orphans: %s\n", msg);
			continue;
		}
		bool all = true;

		for (char **p = ids; *p; p++) {
			if (modal_sandbox_terminate(mc, *p, msg, sizeof(msg)) == 0) {
				killed++;
				fprintf(stderr, "cordon-modal-pack: removed orphan sandbox %s\n",
					*p);
			} else {
				all = false;
				fprintf(stderr, "cordon-modal-pack: cannot remove orphan %s: %s\n",
					*p, msg);
			}
			free(*p);
		}
		free(ids);
		if (all)
			(void)unlinkat(dirfd(d), de->d_name, 0);
	}
	if (d)
		closedir(d);
	fprintf(stderr, "cordon-modal-pack: prepared (%zu orphans removed)\n", killed);
	packlib_reply(id, json_object());
}

static void do_probe(json_t *id)
{
	char msg[512] = "";

	if (!mc) {
		packlib_reply(id, json_pack("{s:b,s:s}", "available", false, "reason",
					    "not configured"));
		return;
	}
	if (modal_auth(mc, msg, sizeof(msg)) < 0 || ensure_app(msg, sizeof(msg)) < 0)
		packlib_reply(id, json_pack("{s:b,s:s+}", "available", false, "reason",
					    "Modal: ", msg));
	else if (!image_id[0]) /* prepare could not reach the service to build it */
		packlib_reply(id, json_pack("{s:b,s:s+}", "available", false, "reason",
					    "Modal: the image was not built: ", image));
	else
		packlib_reply(id, json_pack("{s:b}", "available", true));
}

static struct lease *lease_find(const char *id)
{
	for (struct lease *l = leases; l; l = l->next)
		if (streq(l->id, id))
			return l;
	return NULL;
}

static void lease_free(struct lease *l)
{
	free(l->sandbox);
	free(l->task);
	modal_router_free(l->router);
	free(l);
}

static void lease_drop(struct lease *l)
{
	pthread_mutex_lock(&table_lock);
	for (struct lease **pp = &leases; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	pthread_mutex_unlock(&table_lock);
	lease_free(l);
}

static void do_acquire(json_t *id, json_t *params, int *fds, size_t n_fds)
{
	const char *lease = json_string_value(json_object_get(params, "lease"));
	static const char *const untar[] = { "tar", "-xf", "-", NULL };
	struct modal_sandbox_spec s = { .image_id = image_id,
					.workdir = WS_DIR,
					.tag_name = OWNER_TAG,
					.tag_value = owner,
					.milli_cpu = milli_cpu,
					.memory_mb = memory_mb,
					.timeout_secs = sandbox_ttl,
					.network_access = false };
	struct lease *l;
	char msg[512] = "", m2[256];
	int r;

	if (!packlib_lease_ok(lease) || n_fds != 1) {
		packlib_reply_error(id, "acquire needs a lease id and the workspace archive",
				    "acquire");
		return;
	}
	if (!mc) {
		packlib_reply_error(id, "not configured", "acquire");
		return;
	}
	if (!image_id[0]) {
		packlib_reply_error(id, "the image is not built: activate the backend again",
				    "acquire");
		return;
	}
	if (lease_find(lease)) {
		packlib_reply_error(id, "the lease exists already", "acquire");
		return;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		packlib_reply_error(id, "out of memory", "acquire");
		return;
	}
	(void)snprintf(l->id, sizeof(l->id), "%s", lease);
	r = ensure_app(msg, sizeof(msg));
	s.app_id = app_id;
	if (r == 0)
		r = modal_sandbox_create(mc, &s, &l->sandbox, msg, sizeof(msg));
	if (r == 0)
		r = modal_sandbox_task_id(mc, l->sandbox, &l->task, msg, sizeof(msg));
	if (r == 0)
		r = modal_router_open(mc, l->task, &l->router, msg, sizeof(msg));
	if (r == 0)
		r = run_internal(l, untar, fds[0], -1, msg, sizeof(msg));
	fds[0] = safe_close(fds[0]);
	if (r < 0) {
		fprintf(stderr, "cordon-modal-pack: lease %s: cannot set up a sandbox: %s\n", lease,
			msg);
		if (l->sandbox)
			(void)modal_sandbox_terminate(mc, l->sandbox, m2, sizeof(m2));
		lease_free(l);
		packlib_reply_error(id, msg[0] ? msg : "cannot set up the sandbox", "acquire");
		return;
	}
	pthread_mutex_lock(&table_lock);
	l->next = leases;
	leases = l;
	pthread_mutex_unlock(&table_lock);
	fprintf(stderr, "cordon-modal-pack: lease %s: sandbox %s ready\n", lease, l->sandbox);
	packlib_reply(id, json_pack("{s:s}", "mountPoint", WS_DIR));
}

static void do_release(json_t *id, json_t *params, int *fds, size_t n_fds)
{
	const char *lease = json_string_value(json_object_get(params, "lease"));
	static const char *const mktar[] = { "tar", "--format=pax", "-cf", "-", ".", NULL };
	struct lease *l = lease ? lease_find(lease) : NULL;
	char msg[512] = "", m2[256] = "";
	int r;

	if (!l || n_fds != 1) {
		packlib_reply_error(id, "release needs a known lease and the archive's pipe",
				    "release");
		return;
	}
	r = run_internal(l, mktar, -1, fds[0], msg, sizeof(msg));
	/* the lease's commands still running end with its sandbox: killed */
	pthread_mutex_lock(&table_lock);
	for (struct proc *p = procs; p; p = p->next)
		if (p->lease == l)
			atomic_store(&p->killed, true);
	pthread_mutex_unlock(&table_lock);
	/* Our copy of the pipe goes now: the controller's reader sees the archive's end. */
	fds[0] = safe_close(fds[0]);
	if (modal_sandbox_terminate(mc, l->sandbox, m2, sizeof(m2)) < 0)
		fprintf(stderr, "cordon-modal-pack: cannot terminate sandbox %s: %s\n", l->sandbox,
			m2);
	fprintf(stderr, "cordon-modal-pack: lease %s: sandbox %s released (%s)\n", l->id,
		l->sandbox, r < 0 ? msg : "ok");
	lease_drop(l);
	if (r < 0)
		packlib_reply_error(id, msg, "release");
	else
		packlib_reply(id, json_object());
}

static void do_spawn(json_t *id, json_t *params, int *fds, size_t n_fds)
{
	json_t *plan = json_object_get(params, "plan");
	json_t *ws = json_object_get(params, "workspace");
	json_t *stdio = json_object_get(params, "stdio");
	const char *lease = json_string_value(json_object_get(params, "lease"));
	const char *wcwd = json_string_value(json_object_get(ws, "cwd"));
	json_t *argv = json_object_get(plan, "argv"), *envp = json_object_get(plan, "envp"), *e;
	struct lease *l = lease ? lease_find(lease) : NULL;
	struct proc *p;
	pthread_t t;
	size_t i;

	if (!l) {
		packlib_send(jsonrpc_error_new(
			id, -32007,
			lease ? "no such lease"
			      : "Modal runs commands in leases: acquire a sandbox first",
			json_pack("{s:s,s:s}", "code", "setup-failed", "step", "lease")));
		return;
	}
	if (!json_is_array(argv) || json_array_size(argv) == 0) {
		packlib_reply_error(id, "the plan has no argv", "spawn");
		return;
	}
	json_array_foreach(argv, i, e)
		if (!json_is_string(e)) {
			packlib_reply_error(id, "the plan's argv holds a non-string", "spawn");
			return;
		}
	p = calloc(1, sizeof(*p));
	if (!p || modal_router_dup(l->router, &p->router) < 0) {
		free(p);
		packlib_reply_error(id, "out of memory", "spawn");
		return;
	}
	p->in_fd = packlib_fd_at(stdio, "stdin", fds, n_fds);
	p->out_fd = packlib_fd_at(stdio, "stdout", fds, n_fds);
	p->err_fd = packlib_fd_at(stdio, "stderr", fds, n_fds);
	p->lease = l;
	p->argv = json_incref(argv);
	p->env = json_array();
	json_array_foreach(envp, i, e) {
		const char *kv = json_string_value(e);

		/* The sandbox's own HOME and PATH, not the host's. */
		if (kv && strchr(kv, '=') && !startswith(kv, "HOME=") && !startswith(kv, "PATH="))
			json_array_append(p->env, e);
	}
	if (wcwd && !streq(wcwd, "."))
		(void)snprintf(p->cwd, sizeof(p->cwd), "%s", wcwd);
	else
		(void)snprintf(p->cwd, sizeof(p->cwd), ".");
	clock_gettime(CLOCK_MONOTONIC, &p->t0);
	{
		json_t *tmo = json_object_get(plan, "timeoutMs");

		if (json_is_integer(tmo) && json_integer_value(tmo) > 0)
			p->deadline_usec = (long long)p->t0.tv_sec * 1000000LL +
					   p->t0.tv_nsec / 1000 + json_integer_value(tmo) * 1000LL;
	}
	pthread_mutex_lock(&table_lock);
	(void)snprintf(p->name, sizeof(p->name), "p%u", ++next_proc);
	p->next = procs;
	procs = p;
	pthread_mutex_unlock(&table_lock);
	/* The answer goes first: the thread's exited notification must follow it. */
	packlib_reply(id, json_pack("{s:s}", "sandbox", p->name));
	if (pthread_create(&t, NULL, proc_main, p) != 0) {
		proc_unlink(p);
		packlib_send(json_pack("{s:s,s:s,s:{s:s,s:i,s:i,s:s}}", "jsonrpc", "2.0", "method",
				       "exited", "params", "sandbox", p->name, "exitCode", 127,
				       "signal", 0, "reason", "exited"));
		proc_free(p);
		return;
	}
	pthread_detach(t);
}

/* Signal a command by an exec of kill(1) on its kept pid: its process group when it leads
 * one, else the command. */
static int remote_kill(struct modal_router *rt, const char *name, int sig, char *msg,
		       size_t msg_size)
{
	char signum[16], exec_id[37];
	const char *argv[] = { "/bin/sh",
			       "-c",
			       "p=$(cat \"$HOME/.cordon/$2\") && "
			       "{ kill -\"$1\" \"-$p\" 2>/dev/null || kill -\"$1\" \"$p\"; }",
			       "sh",
			       signum,
			       name,
			       NULL };
	int r, code = -1, s2 = 0;

	(void)snprintf(signum, sizeof(signum), "%d", sig > 0 && sig < 65 ? sig : SIGKILL);
	r = modal_exec_start(rt, argv, WS_DIR, NULL, 30, exec_id, msg, msg_size);
	if (r == 0)
		r = modal_exec_write(rt, exec_id, 0, "", 0, true, msg, msg_size);
	if (r == 0)
		r = modal_exec_wait(rt, exec_id, &code, &s2, msg, msg_size);
	return r;
}

static void do_kill(json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "sandbox"));
	int sig = (int)json_integer_value(json_object_get(params, "signal"));
	struct modal_router *rt = NULL;
	char msg[256] = "";
	bool found = false, started = false;
	int r = 0;

	pthread_mutex_lock(&table_lock);
	for (struct proc *p = procs; p; p = p->next)
		if (name && streq(p->name, name)) {
			found = true;
			started = atomic_load(&p->started);
			atomic_store(&p->killed, true);
			if (started)
				r = modal_router_dup(p->router, &rt);
		}
	pthread_mutex_unlock(&table_lock);
	if (!found) {
		packlib_send(jsonrpc_error_new(id, -32003, "no such sandbox", NULL));
		return;
	}
	if (!started || r < 0) { /* not started yet: its start fails or it runs to its end */
		packlib_reply(id, json_object());
		return;
	}
	r = remote_kill(rt, name, sig, msg, sizeof(msg));
	modal_router_free(rt);
	/* a failed kill(1): the command is gone already */
	if (r < 0)
		packlib_reply_error(id, msg, "kill");
	else
		packlib_reply(id, json_object());
}

/* Kills (SIGKILL) the commands whose plan's timeout passed. */
static void *watchdog_main(void *ud)
{
	(void)ud;
	for (;;) {
		struct {
			struct modal_router *rt;
			char name[32];
		} due[16];
		size_t n = 0;
		struct timespec now, tick = { 0, 100 * 1000000L };
		long long t;

		(void)nanosleep(&tick, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		t = (long long)now.tv_sec * 1000000LL + now.tv_nsec / 1000;
		pthread_mutex_lock(&table_lock);
		for (struct proc *p = procs; p && n < ELEMENTSOF(due); p = p->next)
			if (p->deadline_usec && t >= p->deadline_usec && atomic_load(&p->started) &&
			    !atomic_load(&p->timed_out) &&
			    modal_router_dup(p->router, &due[n].rt) == 0) {
				atomic_store(&p->timed_out, true);
				atomic_store(&p->killed, true);
				memcpy(due[n++].name, p->name, sizeof(p->name));
			}
		pthread_mutex_unlock(&table_lock);
		for (size_t i = 0; i < n; i++) {
			char msg[256];

			(void)remote_kill(due[i].rt, due[i].name, SIGKILL, msg, sizeof(msg));
			modal_router_free(due[i].rt);
		}
	}
	return NULL;
}

static void do_dispose(json_t *id)
{
	char msg[256];
	int failed = 0;

	pthread_mutex_lock(&table_lock);
	for (struct lease *l = leases; l; l = l->next)
		if (mc && modal_sandbox_terminate(mc, l->sandbox, msg, sizeof(msg)) < 0)
			failed++;
	pthread_mutex_unlock(&table_lock);
	if (failed)
		packlib_reply_error(id, "cannot terminate every sandbox", "dispose");
	else
		packlib_reply(id, json_object());
}

int main(void)
{
	static const struct packlib_ops ops = {
		.program = "cordon-modal-pack",
		.configure = do_configure,
		.prepare = do_prepare,
		.probe = do_probe,
		.spawn = do_spawn,
		.acquire = do_acquire,
		.release = do_release,
		.kill = do_kill,
		.dispose = do_dispose,
		.background = watchdog_main,
	};

	return packlib_main(&ops);
}
