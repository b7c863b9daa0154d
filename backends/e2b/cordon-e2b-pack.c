/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The E2B pack (backends/e2b/pack.json): the pack protocol of docs/PROTOCOL.md §6 over
 * stdin/stdout, backed by E2B cloud sandboxes.
 *
 *   acquire   creates a sandbox from the template setting (control plane, X-API-Key), uploads
 *             the workspace tar it is given (envd files API, streamed) and untars it at
 *             WS_DIR by a process; answers mountPoint WS_DIR
 *   spawn     starts the command as an envd process (Connect protocol, server stream of
 *             5-byte envelopes with JSON payloads) on a thread of its own: stdout and stderr
 *             decoded to the fds it got, stdin forwarded (SendInput, then CloseStdin at EOF);
 *             answers {sandbox} at once and notifies `exited` at the end
 *   kill      SendSignal (SIGKILL for 9, SIGTERM otherwise)
 *   release   tars WS_DIR remotely, streams the tar to the release fd, kills the sandbox
 *   prepare   kills the sandboxes an earlier instance on this host left behind: each sandbox
 *             carries metadata naming this host and its owning instance, and an instance holds
 *             a lock on <state>/owners/<token> while it lives
 * A keepalive thread renews each leased sandbox's lifetime (POST …/timeout) every third of it.
 * The API key lives in one header of the HTTP clients; it is never logged.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/remote/remote-http.h"
#include "backends/remote/remote-owner.h"
#include "backends/packlib/packlib.h"
#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-jsonrpc.h"

#define PACK_ID "org.cordon.e2b"
#define WS_DIR "/home/user/workspace"
#define TAR_IN "/home/user/.cordon-in.tar"
#define TAR_OUT "/home/user/.cordon-out.tar"
#define ENVD_PORT "49983"
#define STDIN_CHUNK (48 * 1024)

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static char instance[256] = "unconfigured";
static char *auth_header; /* "X-API-Key: …" */
static char base_url[1024], sandbox_url[1024], template_id[256] = "base";
static long sandbox_ttl = 300;
static char owner[33], host_id[33];
static int owner_lock_fd = -1;
static unsigned next_proc;

struct lease {
	char id[65];
	char sandbox[64];
	char token[256];
	struct lease *next;
};
static struct lease *leases;

struct proc {
	char name[32];
	char tag[64]; /* envd's tag of the process: Connect finds it by this before its pid */
	char sandbox[64], token[256];
	int in_fd, out_fd, err_fd;
	atomic_long pid; /* the remote pid, 0 until the start event */
	atomic_bool done, killed, timed_out;
	long long deadline_usec; /* CLOCK_MONOTONIC, 0: none (the plan's timeoutMs) */
	pthread_t stdin_thread;
	bool stdin_started;
	json_t *argv, *envs;
	char cwd[4200];
	struct timespec t0;
	struct proc *next;
};
static struct proc *procs;

static int client_new(long total_ms, struct rhttp_client **ret)
{
	struct rhttp_opts o = { .auth_header = auth_header,
				.user_agent = "cordon-e2b-pack/" PACKAGE_VERSION,
				.connect_timeout_ms = 10000,
				.total_timeout_ms = total_ms,
				.max_retries = 4,
				.backoff_ms = 250,
				.cancel = &packlib_stopping };

	return rhttp_client_new(&o, ret);
}

/* ------------------------------------------------------------------ control plane */

/* A control-plane call; 0 with resp (the caller judges the status) or -errno with msg. */
static int api(struct rhttp_client *c, const char *method, const char *path, json_t *body,
	       bool retry, struct rhttp_response *resp, char *msg, size_t msg_size)
{
	_cleanup_free_ char *url = strdup_printf("%s%s", base_url, path);
	_cleanup_free_ char *text = body ? rhttp_json_dump(body) : NULL;
	struct rhttp_request req = { .method = method,
				     .url = url,
				     .body = text,
				     .body_len = text ? strlen(text) : 0,
				     .body_fd = -1,
				     .content_type = body ? "application/json" : NULL,
				     .retry = retry,
				     .retry_throttled = true };

	if (!url || (body && !text))
		return -ENOMEM;
	return rhttp_do(c, &req, resp, msg, msg_size);
}

static int kill_sandbox(struct rhttp_client *c, const char *sandbox, char *msg, size_t msg_size)
{
	_cleanup_free_ char *path = strdup_printf("/sandboxes/%s", sandbox);
	struct rhttp_response resp;
	int r;

	if (!path)
		return -ENOMEM;
	r = api(c, "DELETE", path, NULL, true, &resp, msg, msg_size);
	if (r == 0 && resp.status != 204 && resp.status != 404 && resp.status != 200) {
		rhttp_error_message(&resp, msg, msg_size);
		r = -EIO;
	}
	rhttp_response_done(&resp);
	return r;
}

static bool sandbox_id_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n >= 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

static int create_sandbox(struct rhttp_client *c, struct lease *l, char *msg, size_t msg_size)
{
	_cleanup_json_ json_t *body =
		json_pack("{s:s,s:i,s:b,s:b,s:{s:s,s:s,s:s,s:s}}", "templateID", template_id,
			  "timeout", (int)sandbox_ttl, "secure", true, "allow_internet_access",
			  false, "metadata", "cordonPack", PACK_ID, "cordonHost", host_id,
			  "cordonOwner", owner, "cordonLease", l->id);
	_cleanup_json_ json_t *ans = NULL;
	struct rhttp_response resp;
	const char *sid, *tok;
	int r;

	if (!body)
		return -ENOMEM;
	/* Never retried blindly (no idempotency key): an ambiguous failure leaves at most an
	 * orphan the next prepare removes. */
	r = api(c, "POST", "/sandboxes", body, false, &resp, msg, msg_size);
	if (r < 0)
		return r;
	if (resp.status != 201 && resp.status != 200) {
		rhttp_error_message(&resp, msg, msg_size);
		rhttp_response_done(&resp);
		return -EIO;
	}
	ans = rhttp_json_body(&resp);
	rhttp_response_done(&resp);
	sid = json_string_value(json_object_get(ans, "sandboxID"));
	tok = json_string_value(json_object_get(ans, "envdAccessToken"));
	if (!sandbox_id_ok(sid)) {
		(void)snprintf(msg, msg_size, "the service's answer has no valid sandboxID");
		return -EBADMSG;
	}
	(void)snprintf(l->sandbox, sizeof(l->sandbox), "%s", sid);
	(void)snprintf(l->token, sizeof(l->token), "%s", tok ? tok : "");
	return 0;
}

/* ------------------------------------------------------------------ envd processes */

struct stream {
	struct proc *p;
	char *buf;
	size_t len, cap;
	bool got_start, got_end, got_eos, exited;
	long exit_code;
	char status[128];
	char error[512];
	char captured[2048]; /* stderr of an internal command (out_fd/err_fd < 0) */
	size_t captured_len;
};

static void envd_headers(const char *sandbox, const char *token, char h[4][320])
{
	(void)snprintf(h[0], 320, "E2b-Sandbox-Id: %s", sandbox);
	(void)snprintf(h[1], 320, "E2b-Sandbox-Port: " ENVD_PORT);
	(void)snprintf(h[2], 320, "X-Access-Token: %s", token);
	(void)snprintf(h[3], 320, "Connect-Protocol-Version: 1");
}

static const char *envd_base(void)
{
	return sandbox_url[0] ? sandbox_url : base_url;
}

static void *stdin_main(void *ud);

static void write_out(struct stream *s, int fd, const void *d, size_t n)
{
	if (fd >= 0) {
		(void)loop_write(fd, d, n);
		return;
	}
	if (fd == -2) { /* captured */
		size_t room = sizeof(s->captured) - 1 - s->captured_len;

		n = n < room ? n : room;
		memcpy(s->captured + s->captured_len, d, n);
		s->captured_len += n;
		s->captured[s->captured_len] = '\0';
	}
}

static void on_event(struct stream *s, json_t *ev)
{
	json_t *x;

	if ((x = json_object_get(ev, "start"))) {
		s->got_start = true;
		atomic_store(&s->p->pid, (long)json_integer_value(json_object_get(x, "pid")));
		if (s->p->in_fd >= 0 && !s->p->stdin_started &&
		    pthread_create(&s->p->stdin_thread, NULL, stdin_main, s->p) == 0)
			s->p->stdin_started = true;
	} else if ((x = json_object_get(ev, "data"))) {
		static const char *const keys[] = { "stdout", "stderr", "pty" };

		for (size_t k = 0; k < 3; k++) {
			const char *b64 = json_string_value(json_object_get(x, keys[k]));
			_cleanup_free_ void *d = NULL;
			size_t n = 0;

			if (!b64 || base64_decode(b64, strlen(b64), &d, &n) < 0)
				continue;
			write_out(s, k == 1 ? s->p->err_fd : s->p->out_fd, d, n);
		}
	} else if ((x = json_object_get(ev, "end"))) {
		/* Default-valued fields are omitted: a zero exit code has no exitCode. */
		s->got_end = true;
		s->exit_code = (long)json_integer_value(json_object_get(x, "exitCode"));
		s->exited = json_is_true(json_object_get(x, "exited"));
		(void)snprintf(s->status, sizeof(s->status), "%s",
			       json_string_value(json_object_get(x, "status")) ?: "");
	}
}

/* The Connect envelope parser: frames split or merged anywhere across calls. */
static bool on_stream_data(const void *data, size_t len, void *ud)
{
	struct stream *s = ud;

	if (s->len + len > s->cap) {
		size_t cap = (s->len + len) * 2;
		char *b = realloc(s->buf, cap);

		if (!b)
			return false;
		s->buf = b, s->cap = cap;
	}
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	for (;;) {
		uint32_t n;
		uint8_t flags;
		_cleanup_json_ json_t *j = NULL;

		if (s->len < 5)
			return true;
		flags = (uint8_t)s->buf[0];
		n = ((uint32_t)(uint8_t)s->buf[1] << 24) | ((uint32_t)(uint8_t)s->buf[2] << 16) |
		    ((uint32_t)(uint8_t)s->buf[3] << 8) | (uint32_t)(uint8_t)s->buf[4];
		if (n > 16u * 1024 * 1024 || (flags & 1)) {
			(void)snprintf(s->error, sizeof(s->error),
				       "envd sent an envelope we cannot read");
			return false;
		}
		if (s->len < 5 + (size_t)n)
			return true;
		j = json_loadb(s->buf + 5, n, 0, NULL);
		if (flags & 2) {
			json_t *e = json_object_get(j, "error");

			s->got_eos = true;
			if (e)
				(void)snprintf(
					s->error, sizeof(s->error), "%s: %s",
					json_string_value(json_object_get(e, "code")) ?: "unknown",
					json_string_value(json_object_get(e, "message")) ?: "");
		} else if (j)
			on_event(s, json_object_get(j, "event"));
		memmove(s->buf, s->buf + 5 + n, s->len - 5 - n);
		s->len -= 5 + n;
	}
}

/* One server-streaming call (Start or Connect) with body as its single envelope, its events
 * into s; 0 or -errno (a transport failure, s->error saying why), *status the HTTP status. */
static int stream_rpc(struct rhttp_client *c, struct proc *p, struct stream *s, const char *rpc,
		      json_t *body, long *status)
{
	char h[4][320];
	const char *hdrs[] = { h[0], h[1], h[2], h[3], "Keepalive-Ping-Interval: 30", NULL };
	_cleanup_free_ char *text = rhttp_json_dump(body), *env = NULL;
	_cleanup_free_ char *url = strdup_printf("%s/process.Process/%s", envd_base(), rpc);
	struct rhttp_request req = { .method = "POST",
				     .body_fd = -1,
				     .content_type = "application/connect+json",
				     .total_timeout_ms = -1,
				     .sink = on_stream_data,
				     .sink_userdata = s };
	struct rhttp_response resp;
	size_t n;
	int r;

	*status = 0;
	if (!text || !url)
		return -ENOMEM;
	n = strlen(text);
	env = malloc(5 + n);
	if (!env)
		return -ENOMEM;
	env[0] = 0, env[1] = (char)(n >> 24), env[2] = (char)(n >> 16), env[3] = (char)(n >> 8),
	env[4] = (char)n;
	memcpy(env + 5, text, n);
	envd_headers(p->sandbox, p->token, h);
	req.url = url, req.headers = hdrs, req.body = env, req.body_len = 5 + n;
	r = rhttp_do(c, &req, &resp, s->error, sizeof(s->error));
	*status = resp.status;
	if (r == 0 && resp.status != 200)
		rhttp_error_message(&resp, s->error, sizeof(s->error));
	rhttp_response_done(&resp);
	return r;
}

/*
 * Run p's command to its end; 0 with s filled (s->error: an RPC or transport failure). A
 * stream cut before the process's end (a dropped connection, a proxy's timeout) is followed
 * again with Connect, by pid (by tag when the start event did not come), up to RECONNECT_MAX
 * times with a growing pause: the output and the exit code come on that stream (what the
 * process wrote while no stream followed it is not replayed by envd).
 */
#define RECONNECT_MAX 5
static int run_stream(struct rhttp_client *c, struct proc *p, struct stream *s)
{
	_cleanup_json_ json_t *body = NULL;
	char first_cut[512] = "";
	long status, pause_ms = 100;
	int r;

	body = json_pack("{s:{s:O,s:O,s:O,s:s},s:b,s:s}", "process", "cmd",
			 json_array_get(p->argv, 0), "args", json_array(), "envs", p->envs, "cwd",
			 p->cwd, "stdin", p->in_fd >= 0, "tag", p->tag);
	if (!body)
		return -ENOMEM;
	{
		json_t *args = json_object_get(json_object_get(body, "process"), "args");

		for (size_t i = 1; i < json_array_size(p->argv); i++)
			json_array_append(args, json_array_get(p->argv, i));
	}
	r = stream_rpc(c, p, s, "Start", body, &status);
	for (int n = 0; r != -ENOMEM && !s->got_end && !s->got_eos; n++) {
		_cleanup_json_ json_t *sel = NULL;
		long pid = atomic_load(&p->pid);
		struct timespec ts;

		/* A refusal (an HTTP error, not a cut): its message stands. */
		if (status != 200 && !(status == 0 && r < 0 && n > 0))
			break;
		if (r == 0 && !s->error[0])
			(void)snprintf(s->error, sizeof(s->error),
				       "the process stream ended without its end");
		if (!first_cut[0])
			(void)snprintf(first_cut, sizeof(first_cut), "%s", s->error);
		if (n >= RECONNECT_MAX || atomic_load(&packlib_stopping))
			break;
		fprintf(stderr,
			"cordon-e2b-pack: %s in %s: the process stream was cut (%s): "
			"reconnecting\n",
			p->tag, p->sandbox, s->error);
		ts = (struct timespec){ pause_ms / 1000, (pause_ms % 1000) * 1000000L };
		(void)nanosleep(&ts, NULL);
		pause_ms *= 2;
		/* A partial envelope of the cut stream is gone with it. */
		s->len = 0;
		s->error[0] = '\0';
		sel = pid > 0 ? json_pack("{s:{s:I}}", "process", "pid", (json_int_t)pid)
			      : json_pack("{s:{s:s}}", "process", "tag", p->tag);
		if (!sel) {
			r = -ENOMEM;
			break;
		}
		r = stream_rpc(c, p, s, "Connect", sel, &status);
	}
	if (!s->got_end && first_cut[0]) {
		char e[512];

		(void)snprintf(e, sizeof(e), "%s", s->error);
		(void)snprintf(
			s->error, sizeof(s->error),
			"the process stream was cut (%.200s) and could not be followed again: "
			"%.250s",
			first_cut, e[0] ? e : "no more attempts");
	} else if (s->got_end && first_cut[0])
		fprintf(stderr, "cordon-e2b-pack: %s in %s: followed again to its end\n", p->tag,
			p->sandbox);
	free(s->buf);
	s->buf = NULL;
	return r == -ENOMEM ? r : 0;
}

static int unary(struct rhttp_client *c, const char *sandbox, const char *token, const char *rpc,
		 json_t *body, char *msg, size_t msg_size)
{
	char h[4][320];
	const char *hdrs[] = { h[0], h[1], h[2], h[3], NULL };
	_cleanup_free_ char *text = rhttp_json_dump(body);
	_cleanup_free_ char *url = strdup_printf("%s/process.Process/%s", envd_base(), rpc);
	struct rhttp_request req = { .method = "POST",
				     .url = url,
				     .headers = hdrs,
				     .body = text,
				     .body_len = text ? strlen(text) : 0,
				     .body_fd = -1,
				     .content_type = "application/json",
				     .retry = true };
	struct rhttp_response resp;
	int r;

	if (!text || !url)
		return -ENOMEM;
	envd_headers(sandbox, token, h);
	r = rhttp_do(c, &req, &resp, msg, msg_size);
	if (r == 0 && resp.status != 200) {
		rhttp_error_message(&resp, msg, msg_size);
		r = resp.status == 404 ? -ESRCH : -EIO;
	}
	rhttp_response_done(&resp);
	return r;
}

static void *stdin_main(void *ud)
{
	struct proc *p = ud;
	_cleanup_free_ char *buf = malloc(STDIN_CHUNK);
	struct rhttp_client *c = NULL;
	char msg[256];
	long pid = atomic_load(&p->pid);

	if (!buf || client_new(60000, &c) < 0)
		goto out;
	while (!atomic_load(&p->done)) {
		struct pollfd pfd = { p->in_fd, POLLIN, 0 };
		ssize_t k;
		_cleanup_free_ char *b64 = NULL;
		_cleanup_json_ json_t *body = NULL;

		if (poll(&pfd, 1, 200) <= 0)
			continue;
		k = read(p->in_fd, buf, STDIN_CHUNK);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			body = json_pack("{s:{s:I}}", "process", "pid", (json_int_t)pid);
			(void)unary(c, p->sandbox, p->token, "CloseStdin", body, msg, sizeof(msg));
			break;
		}
		b64 = base64_encode(buf, (size_t)k);
		body = json_pack("{s:{s:I},s:{s:s}}", "process", "pid", (json_int_t)pid, "input",
				 "stdin", b64 ? b64 : "");
		if (unary(c, p->sandbox, p->token, "SendInput", body, msg, sizeof(msg)) < 0)
			break;
	}
out:
	rhttp_client_free(c);
	return NULL;
}

static int signal_from_status(const char *status)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = { { "killed", SIGKILL },
		      { "terminated", SIGTERM },
		      { "interrupt", SIGINT },
		      { "hangup", SIGHUP },
		      { "aborted", SIGABRT },
		      { "segmentation fault", SIGSEGV },
		      { "broken pipe", SIGPIPE },
		      { "quit", SIGQUIT },
		      { "user defined signal 1", SIGUSR1 },
		      { "user defined signal 2", SIGUSR2 },
		      { "alarm clock", SIGALRM },
		      { "bus error", SIGBUS },
		      { "floating point exception", SIGFPE } };
	const char *n;

	if (!startswith(status, "signal: "))
		return 0;
	n = status + 8;
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (streq(n, names[i].name))
			return names[i].sig;
	if (startswith(n, "signal "))
		return atoi(n + 7);
	return SIGKILL;
}

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
	json_decref(p->envs);
	free(p);
}

static void *proc_main(void *ud)
{
	struct proc *p = ud;
	struct stream s = { .p = p };
	struct rhttp_client *c = NULL;
	int code = 255, sig = 0;
	const char *reason = "exited";

	if (client_new(0, &c) < 0 || run_stream(c, p, &s) < 0)
		(void)snprintf(s.error, sizeof(s.error), "out of memory");
	atomic_store(&p->done, true);
	if (p->stdin_started)
		pthread_join(p->stdin_thread, NULL);
	if (s.got_end && s.exited) {
		code = (int)(s.exit_code & 0xff);
	} else if (s.got_end) {
		sig = signal_from_status(s.status);
		code = 128 + sig;
		reason = atomic_load(&p->timed_out) ? "timeout"
			 : atomic_load(&p->killed)  ? "killed"
						    : "signaled";
	} else {
		_cleanup_free_ char *line = strdup_printf("cordon-e2b: %s\n", s.error);

		if (line && p->err_fd >= 0)
			(void)loop_write(p->err_fd, line, strlen(line));
		fprintf(stderr, "cordon-e2b-pack: %s in %s: %s\n", p->name, p->sandbox, s.error);
		/* A command that could not be started is exit 127 (like exec-failed). */
		code = s.got_start ? 255 : 127;
	}
	rhttp_client_free(c);
	proc_unlink(p);
	/* The output fds close before the exit is told: the controller has all the output. */
	p->out_fd = safe_close(p->out_fd);
	p->err_fd = safe_close(p->err_fd);
	packlib_send(json_pack("{s:s,s:s,s:{s:s,s:i,s:i,s:s,s:I}}", "jsonrpc", "2.0", "method",
			       "exited", "params", "sandbox", p->name, "exitCode", code, "signal",
			       sig, "reason", reason, "durationUsec",
			       (json_int_t)packlib_usec_since(&p->t0)));
	proc_free(p);
	return NULL;
}

/* Run an internal command in a sandbox to its end; 0 on exit 0, else -EIO with msg. */
static int run_internal(struct lease *l, json_t *argv, char *msg, size_t msg_size)
{
	static atomic_uint next_internal;
	struct proc p = { .in_fd = -1, .out_fd = -1, .err_fd = -2, .argv = argv };
	struct stream s = { .p = &p };
	struct rhttp_client *c = NULL;
	int r;

	(void)snprintf(p.sandbox, sizeof(p.sandbox), "%s", l->sandbox);
	(void)snprintf(p.token, sizeof(p.token), "%s", l->token);
	(void)snprintf(p.cwd, sizeof(p.cwd), "/home/user");
	(void)snprintf(p.tag, sizeof(p.tag), "cordon-%.12s-i%u", owner,
		       atomic_fetch_add(&next_internal, 1) + 1);
	p.envs = json_object();
	r = client_new(0, &c);
	if (r == 0)
		r = run_stream(c, &p, &s);
	rhttp_client_free(c);
	json_decref(p.envs);
	if (r < 0)
		return r;
	if (s.error[0] && !s.got_end) {
		(void)snprintf(msg, msg_size, "%s", s.error);
		return -EIO;
	}
	if (!s.exited || s.exit_code != 0) {
		(void)snprintf(msg, msg_size, "%s failed (%s): %.300s",
			       json_string_value(json_array_get(argv, 0)), s.status, s.captured);
		return -EIO;
	}
	return 0;
}

/* ------------------------------------------------------------------ files */

static int files_url(const char *path, char **ret)
{
	_cleanup_free_ char *e = rhttp_escape(path);

	*ret = e ? strdup_printf("%s/files?path=%s", envd_base(), e) : NULL;
	return *ret ? 0 : -ENOMEM;
}

static bool to_fd(const void *d, size_t n, void *ud)
{
	return loop_write(*(int *)ud, d, n) >= 0;
}

static int upload_fd(struct rhttp_client *c, struct lease *l, int fd, char *msg, size_t msg_size)
{
	char h[4][320];
	const char *hdrs[] = { h[0], h[1], h[2], NULL };
	_cleanup_free_ char *url = NULL;
	struct rhttp_request req = { .method = "POST",
				     .headers = hdrs,
				     .body_fd = fd,
				     .content_type = "application/octet-stream",
				     .total_timeout_ms = -1 };
	struct rhttp_response resp;
	int r = files_url(TAR_IN, &url);

	if (r < 0)
		return r;
	envd_headers(l->sandbox, l->token, h);
	req.url = url;
	r = rhttp_do(c, &req, &resp, msg, msg_size);
	if (r == 0 && resp.status != 200) {
		rhttp_error_message(&resp, msg, msg_size);
		r = -EIO;
	}
	rhttp_response_done(&resp);
	return r;
}

static int download_fd(struct rhttp_client *c, struct lease *l, int fd, char *msg, size_t msg_size)
{
	char h[4][320];
	const char *hdrs[] = { h[0], h[1], h[2], NULL };
	_cleanup_free_ char *url = NULL;
	/* A 5xx or 429 before any byte of the archive is retried (Retry-After honoured); a
	 * stream cut after some is an error naming the cause. */
	struct rhttp_request req = { .method = "GET",
				     .headers = hdrs,
				     .body_fd = -1,
				     .retry = true,
				     .total_timeout_ms = -1,
				     .sink = to_fd,
				     .sink_userdata = &fd };
	struct rhttp_response resp;
	int r = files_url(TAR_OUT, &url);

	if (r < 0)
		return r;
	envd_headers(l->sandbox, l->token, h);
	req.url = url;
	r = rhttp_do(c, &req, &resp, msg, msg_size);
	if (r == 0 && resp.status != 200) {
		rhttp_error_message(&resp, msg, msg_size);
		r = -EIO;
	}
	rhttp_response_done(&resp);
	return r;
}

/* ------------------------------------------------------------------ calls */

/* This host's id (kept in the state directory) and this instance's owner lock. */
static int setup_identity(void)
{
	int r = remote_host_id(host_id);

	return r < 0 ? r : remote_owner_take(owner, &owner_lock_fd);
}

static void do_configure(json_t *id, json_t *params)
{
	json_t *settings = json_object_get(params, "settings");
	json_t *key = json_object_get(json_object_get(params, "secrets"), "apiKey");
	json_t *ttl = json_object_get(settings, "sandboxTimeoutSeconds");

	packlib_copy_setting(params, "instance", instance, sizeof(instance));
	(void)snprintf(base_url, sizeof(base_url), "https://api.e2b.app");
	packlib_copy_setting(settings, "baseUrl", base_url, sizeof(base_url));
	packlib_copy_setting(settings, "sandboxUrl", sandbox_url, sizeof(sandbox_url));
	packlib_copy_setting(settings, "template", template_id, sizeof(template_id));
	packlib_strip_slash(base_url);
	packlib_strip_slash(sandbox_url);
	/* The real service: the API at api.<domain>, envd through sandbox.<domain> with header
	 * routing. Any other URL (a test's loopback fake) serves both. */
	if (!sandbox_url[0] && startswith(base_url, "https://api."))
		(void)snprintf(sandbox_url, sizeof(sandbox_url), "https://sandbox.%s",
			       base_url + strlen("https://api."));
	if (json_is_number(ttl) && json_number_value(ttl) >= 30 && json_number_value(ttl) <= 86400)
		sandbox_ttl = (long)json_number_value(ttl);
	if (auth_header) {
		explicit_bzero(auth_header, strlen(auth_header));
		free(auth_header);
		auth_header = NULL;
	}
	if (json_is_string(key) && json_string_length(key) > 0) {
		auth_header = strdup_printf("X-API-Key: %s", json_string_value(key));
		explicit_bzero((char *)json_string_value(key), json_string_length(key));
	}
	fprintf(stderr, "cordon-e2b-pack: configured %s (API %s, template %s, key %s)\n", instance,
		base_url, template_id, auth_header ? "configured" : "absent");
	if (!auth_header) {
		packlib_reply_error(id, "no API key: set the apiKey secret (cordon secret set)",
				    "configure");
		return;
	}
	if (!startswith(base_url, "https://") && !startswith(base_url, "http://")) {
		packlib_reply_error(id, "baseUrl must be an http or https URL", "configure");
		return;
	}
	if (setup_identity() < 0) {
		packlib_reply_error(id, "cannot set up the pack's state", "configure");
		return;
	}
	packlib_reply(id, json_object());
}

#define LIST_PAGES_MAX 100

/* One page of the sandboxes this host's instances made: 0 with *ret (the page's array) and
 * *next (the next page's token, NULL on the last page), else -errno with msg. */
static int list_page(struct rhttp_client *c, const char *token, json_t **ret, char **next,
		     char *msg, size_t msg_size)
{
	_cleanup_free_ char *q = strdup_printf("cordonPack=" PACK_ID "&cordonHost=%s", host_id);
	_cleanup_free_ char *eq = q ? rhttp_escape(q) : NULL;
	_cleanup_free_ char *et = token ? rhttp_escape(token) : NULL;
	_cleanup_free_ char *url = NULL;
	struct rhttp_request req = {
		.method = "GET", .body_fd = -1, .retry = true, .want_header = "X-Next-Token"
	};
	struct rhttp_response resp;
	int r;

	*ret = NULL;
	*next = NULL;
	if (!eq || (token && !et))
		return -ENOMEM;
	url = strdup_printf("%s/v2/sandboxes?metadata=%s&state=running,paused&limit=100%s%s",
			    base_url, eq, et ? "&nextToken=" : "", et ?: "");
	if (!url)
		return -ENOMEM;
	req.url = url;
	r = rhttp_do(c, &req, &resp, msg, msg_size);
	if (r == 0 && resp.status != 200) {
		rhttp_error_message(&resp, msg, msg_size);
		r = -EIO;
	}
	if (r == 0) {
		*ret = rhttp_json_body(&resp);
		if (!json_is_array(*ret)) {
			(void)snprintf(msg, msg_size, "the service's list is not an array");
			json_decref(*ret);
			*ret = NULL;
			r = -EBADMSG;
		} else if (resp.header && *resp.header) {
			*next = resp.header;
			resp.header = NULL;
		}
	}
	rhttp_response_done(&resp);
	return r;
}

/* Kill the sandboxes of earlier instances on this host whose owner lock is free. The list is
 * paged (X-Next-Token): every page is read before anything is killed. */
static void do_prepare(json_t *id)
{
	struct rhttp_client *c = NULL;
	_cleanup_json_ json_t *orphans = json_array();
	_cleanup_free_ char *token = NULL;
	char msg[512] = "";
	size_t i, killed = 0, pages = 0;
	json_t *e;
	int r = 0;

	if (!orphans || client_new(60000, &c) < 0) {
		packlib_reply_error(id, "out of memory", "prepare");
		return;
	}
	do {
		_cleanup_json_ json_t *list = NULL;
		char *next = NULL;

		r = list_page(c, token, &list, &next, msg, sizeof(msg));
		free(token);
		token = next;
		json_array_foreach(list, i, e) {
			json_t *md = json_object_get(e, "metadata");
			const char *sid = json_string_value(json_object_get(e, "sandboxID"));
			const char *own = json_string_value(json_object_get(md, "cordonOwner"));

			if (!sandbox_id_ok(sid) || !remote_hex_ok(own, REMOTE_ID_HEX) ||
			    streq(own, owner) ||
			    !streq(json_string_value(json_object_get(md, "cordonHost")) ?: "",
				   host_id))
				continue;
			/* Its owner still lives (holds the lock): an instance still serving. */
			if (!remote_owner_live(own))
				json_array_append_new(orphans, json_string(sid));
		}
	} while (r == 0 && token && ++pages < LIST_PAGES_MAX);
	if (r < 0)
		/* Not fatal: isAvailable tells what is wrong (a bad key, the service down); the
		 * pages read so far are cleaned. */
		fprintf(stderr, "cordon-e2b-pack: cannot list orphans: %s\n", msg);
	json_array_foreach(orphans, i, e) {
		const char *sid = json_string_value(e);

		if (kill_sandbox(c, sid, msg, sizeof(msg)) == 0) {
			killed++;
			fprintf(stderr, "cordon-e2b-pack: removed orphan sandbox %s\n", sid);
		} else
			fprintf(stderr, "cordon-e2b-pack: cannot remove orphan %s: %s\n", sid, msg);
	}
	/* Owner files whose lock is free and that own nothing any more. */
	if (r == 0)
		remote_owners_prune(owner);
	rhttp_client_free(c);
	fprintf(stderr, "cordon-e2b-pack: prepared (%zu orphans removed)\n", killed);
	packlib_reply(id, json_object());
}

static void do_probe(json_t *id)
{
	struct rhttp_client *c = NULL;
	struct rhttp_response resp;
	char msg[512] = "";
	int r;

	if (client_new(20000, &c) < 0) {
		packlib_reply_error(id, "out of memory", NULL);
		return;
	}
	r = api(c, "GET", "/v2/sandboxes?limit=1", NULL, true, &resp, msg, sizeof(msg));
	if (r == 0 && resp.status != 200)
		rhttp_error_message(&resp, msg, sizeof(msg));
	if (r == 0 && resp.status == 200)
		packlib_reply(id, json_pack("{s:b}", "available", true));
	else
		packlib_reply(id,
			      json_pack("{s:b,s:s+}", "available", false, "reason", "E2B: ", msg));
	rhttp_response_done(&resp);
	rhttp_client_free(c);
}

static struct lease *lease_find(const char *id)
{
	for (struct lease *l = leases; l; l = l->next)
		if (streq(l->id, id))
			return l;
	return NULL;
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
	explicit_bzero(l->token, sizeof(l->token));
	free(l);
}

static void do_acquire(json_t *id, json_t *params, int *fds, size_t n_fds)
{
	const char *lease = json_string_value(json_object_get(params, "lease"));
	struct rhttp_client *c = NULL;
	struct lease *l;
	char msg[512] = "";
	_cleanup_json_ json_t *untar = NULL;
	int r;

	if (!packlib_lease_ok(lease) || n_fds != 1) {
		packlib_reply_error(id, "acquire needs a lease id and the workspace archive",
				    "acquire");
		return;
	}
	if (lease_find(lease)) {
		packlib_reply_error(id, "the lease exists already", "acquire");
		return;
	}
	l = calloc(1, sizeof(*l));
	if (!l || client_new(120000, &c) < 0) {
		free(l);
		packlib_reply_error(id, "out of memory", "acquire");
		return;
	}
	(void)snprintf(l->id, sizeof(l->id), "%s", lease);
	r = create_sandbox(c, l, msg, sizeof(msg));
	if (r < 0) {
		fprintf(stderr, "cordon-e2b-pack: lease %s: cannot create a sandbox: %s\n", lease,
			msg);
		free(l);
		rhttp_client_free(c);
		packlib_reply_error(id, msg, "acquire");
		return;
	}
	r = upload_fd(c, l, fds[0], msg, sizeof(msg));
	fds[0] = safe_close(fds[0]);
	untar = json_pack("[s,s,s,s,s,s]", "/bin/sh", "-c",
			  "mkdir -p \"$1\" && tar -xf \"$2\" -C \"$1\" && rm -f \"$2\"", "sh",
			  WS_DIR, TAR_IN);
	if (r == 0)
		r = untar ? run_internal(l, untar, msg, sizeof(msg)) : -ENOMEM;
	if (r < 0) {
		char m2[256];

		fprintf(stderr, "cordon-e2b-pack: lease %s: cannot hydrate %s: %s\n", lease,
			l->sandbox, msg);
		(void)kill_sandbox(c, l->sandbox, m2, sizeof(m2));
		free(l);
		rhttp_client_free(c);
		packlib_reply_error(id, msg[0] ? msg : "cannot upload the workspace", "acquire");
		return;
	}
	rhttp_client_free(c);
	pthread_mutex_lock(&table_lock);
	l->next = leases;
	leases = l;
	pthread_mutex_unlock(&table_lock);
	fprintf(stderr, "cordon-e2b-pack: lease %s: sandbox %s ready\n", lease, l->sandbox);
	packlib_reply(id, json_pack("{s:s}", "mountPoint", WS_DIR));
}

static void do_release(json_t *id, json_t *params, int *fds, size_t n_fds)
{
	const char *lease = json_string_value(json_object_get(params, "lease"));
	struct rhttp_client *c = NULL;
	struct lease *l = lease ? lease_find(lease) : NULL;
	char msg[512] = "", m2[256] = "";
	_cleanup_json_ json_t *mk = NULL;
	int r;

	if (!l || n_fds != 1) {
		packlib_reply_error(id, "release needs a known lease and the archive's pipe",
				    "release");
		return;
	}
	if (client_new(0, &c) < 0) {
		packlib_reply_error(id, "out of memory", "release");
		return;
	}
	mk = json_pack("[s,s,s,s,s,s]", "/bin/sh", "-c", "tar --format=pax -cf \"$2\" -C \"$1\" .",
		       "sh", WS_DIR, TAR_OUT);
	r = mk ? run_internal(l, mk, msg, sizeof(msg)) : -ENOMEM;
	if (r == 0)
		r = download_fd(c, l, fds[0], msg, sizeof(msg));
	/* Our copy of the pipe goes now: the controller's reader sees the archive's end. */
	fds[0] = safe_close(fds[0]);
	if (kill_sandbox(c, l->sandbox, m2, sizeof(m2)) < 0)
		fprintf(stderr, "cordon-e2b-pack: cannot kill sandbox %s: %s\n", l->sandbox, m2);
	fprintf(stderr, "cordon-e2b-pack: lease %s: sandbox %s released (%s)\n", l->id, l->sandbox,
		r < 0 ? msg : "ok");
	lease_drop(l);
	rhttp_client_free(c);
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
			      : "E2B runs commands in leases: acquire a sandbox first",
			json_pack("{s:s,s:s}", "code", "setup-failed", "step", "lease")));
		return;
	}
	if (!json_is_array(argv) || json_array_size(argv) == 0 ||
	    !json_is_string(json_array_get(argv, 0))) {
		packlib_reply_error(id, "the plan has no argv", "spawn");
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		packlib_reply_error(id, "out of memory", "spawn");
		return;
	}
	p->in_fd = packlib_fd_at(stdio, "stdin", fds, n_fds);
	p->out_fd = packlib_fd_at(stdio, "stdout", fds, n_fds);
	p->err_fd = packlib_fd_at(stdio, "stderr", fds, n_fds);
	p->argv = json_incref(argv);
	p->envs = json_object();
	json_array_foreach(envp, i, e) {
		const char *kv = json_string_value(e), *eq = kv ? strchr(kv, '=') : NULL;
		_cleanup_free_ char *k = eq ? strndup(kv, (size_t)(eq - kv)) : NULL;

		/* The sandbox's own HOME and PATH, not the host's. */
		if (k && !streq(k, "HOME") && !streq(k, "PATH"))
			json_object_set_new(p->envs, k, json_string(eq + 1));
	}
	if (wcwd && !streq(wcwd, "."))
		(void)snprintf(p->cwd, sizeof(p->cwd), WS_DIR "/%s", wcwd);
	else
		(void)snprintf(p->cwd, sizeof(p->cwd), WS_DIR);
	(void)snprintf(p->sandbox, sizeof(p->sandbox), "%s", l->sandbox);
	(void)snprintf(p->token, sizeof(p->token), "%s", l->token);
	clock_gettime(CLOCK_MONOTONIC, &p->t0);
	{
		json_t *tmo = json_object_get(plan, "timeoutMs");

		if (json_is_integer(tmo) && json_integer_value(tmo) > 0)
			p->deadline_usec = (long long)p->t0.tv_sec * 1000000LL +
					   p->t0.tv_nsec / 1000 + json_integer_value(tmo) * 1000LL;
	}
	pthread_mutex_lock(&table_lock);
	(void)snprintf(p->name, sizeof(p->name), "p%u", ++next_proc);
	(void)snprintf(p->tag, sizeof(p->tag), "cordon-%.12s-%s", owner, p->name);
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

static void do_kill(json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "sandbox"));
	int sig = (int)json_integer_value(json_object_get(params, "signal"));
	char sandbox[64] = "", token[256] = "", msg[256];
	long pid = 0;
	struct rhttp_client *c = NULL;
	_cleanup_json_ json_t *body = NULL;
	int r;

	pthread_mutex_lock(&table_lock);
	for (struct proc *p = procs; p; p = p->next)
		if (name && streq(p->name, name)) {
			pid = atomic_load(&p->pid);
			atomic_store(&p->killed, true);
			memcpy(sandbox, p->sandbox, sizeof(sandbox));
			memcpy(token, p->token, sizeof(token));
		}
	pthread_mutex_unlock(&table_lock);
	if (!sandbox[0]) {
		packlib_send(jsonrpc_error_new(id, -32003, "no such sandbox", NULL));
		return;
	}
	if (pid == 0) { /* not started yet: nothing to signal; its stream ends it */
		packlib_reply(id, json_object());
		return;
	}
	body = json_pack("{s:{s:I},s:s}", "process", "pid", (json_int_t)pid, "signal",
			 sig == SIGKILL ? "SIGNAL_SIGKILL" : "SIGNAL_SIGTERM");
	r = client_new(10000, &c);
	if (r == 0)
		r = unary(c, sandbox, token, "SendSignal", body, msg, sizeof(msg));
	rhttp_client_free(c);
	explicit_bzero(token, sizeof(token));
	/* not_found: it is gone already. */
	if (r < 0 && r != -ESRCH)
		packlib_reply_error(id, msg, "kill");
	else
		packlib_reply(id, json_object());
}

static void do_dispose(json_t *id)
{
	struct rhttp_client *c = NULL;
	char msg[256];
	int failed = 0;

	if (client_new(30000, &c) == 0) {
		pthread_mutex_lock(&table_lock);
		for (struct lease *l = leases; l; l = l->next)
			if (kill_sandbox(c, l->sandbox, msg, sizeof(msg)) < 0)
				failed++;
		pthread_mutex_unlock(&table_lock);
		rhttp_client_free(c);
	}
	if (failed)
		packlib_reply_error(id, "cannot kill every sandbox", "dispose");
	else
		packlib_reply(id, json_object());
}

/* Kills (SIGKILL) the processes whose plan's timeout passed. */
static void enforce_timeouts(struct rhttp_client *c)
{
	struct {
		char sandbox[64], token[256];
		long pid;
	} due[16];
	size_t n = 0;
	struct timespec now;
	long long t;

	clock_gettime(CLOCK_MONOTONIC, &now);
	t = (long long)now.tv_sec * 1000000LL + now.tv_nsec / 1000;
	pthread_mutex_lock(&table_lock);
	for (struct proc *p = procs; p && n < ELEMENTSOF(due); p = p->next)
		if (p->deadline_usec && t >= p->deadline_usec && atomic_load(&p->pid) &&
		    !atomic_load(&p->timed_out)) {
			atomic_store(&p->timed_out, true);
			memcpy(due[n].sandbox, p->sandbox, sizeof(due[n].sandbox));
			memcpy(due[n].token, p->token, sizeof(due[n].token));
			due[n++].pid = atomic_load(&p->pid);
		}
	pthread_mutex_unlock(&table_lock);
	for (size_t i = 0; i < n; i++) {
		_cleanup_json_ json_t *b = json_pack("{s:{s:I},s:s}", "process", "pid",
						     (json_int_t)due[i].pid, "signal",
						     "SIGNAL_SIGKILL");
		char msg[256];

		if (b)
			(void)unary(c, due[i].sandbox, due[i].token, "SendSignal", b, msg,
				    sizeof(msg));
		explicit_bzero(due[i].token, sizeof(due[i].token));
	}
}

/* Renews each leased sandbox's lifetime every third of it; enforces the plans' timeouts. */
static void *keepalive_main(void *ud)
{
	struct rhttp_client *c = NULL;
	time_t last = time(NULL);

	(void)ud;
	if (client_new(20000, &c) < 0)
		return NULL;
	while (!atomic_load(&packlib_stopping)) {
		char ids[64][64];
		size_t n = 0;
		struct timespec tick = { 0, 100 * 1000000L };

		(void)nanosleep(&tick, NULL);
		enforce_timeouts(c);
		if (time(NULL) - last < sandbox_ttl / 3)
			continue;
		last = time(NULL);
		pthread_mutex_lock(&table_lock);
		for (struct lease *l = leases; l && n < ELEMENTSOF(ids); l = l->next)
			memcpy(ids[n++], l->sandbox, 64);
		pthread_mutex_unlock(&table_lock);
		/* A client of its own for the renewals, made now: the one made at the thread's
		 * start predates configure, and so the API key. */
		struct rhttp_client *rc = NULL;

		if (n > 0 && client_new(20000, &rc) < 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			_cleanup_free_ char *path = strdup_printf("/sandboxes/%s/timeout", ids[i]);
			_cleanup_json_ json_t *b = json_pack("{s:i}", "timeout", (int)sandbox_ttl);
			struct rhttp_response resp;
			char msg[256];

			if (path && b &&
			    api(rc, "POST", path, b, true, &resp, msg, sizeof(msg)) == 0)
				rhttp_response_done(&resp);
		}
		(void)rhttp_client_free(rc);
	}
	rhttp_client_free(c);
	return NULL;
}

int main(void)
{
	static const struct packlib_ops ops = {
		.program = "cordon-e2b-pack",
		.configure = do_configure,
		.prepare = do_prepare,
		.probe = do_probe,
		.spawn = do_spawn,
		.acquire = do_acquire,
		.release = do_release,
		.kill = do_kill,
		.dispose = do_dispose,
		.background = keepalive_main,
	};

	return packlib_main(&ops);
}
