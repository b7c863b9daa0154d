/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Daytona pack (backends/daytona/pack.json): the pack protocol of docs/PROTOCOL.md §6 over
 * stdin/stdout, backed by Daytona sandboxes (REST only: a Bearer key on the API and on the
 * toolbox proxy the sandbox's toolboxProxyUrl names).
 *
 *   acquire   creates a sandbox (POST /sandbox, labelled with this host and this instance's
 *             owner token), polls it until "started", uploads the workspace tar (multipart
 *             /files/upload) and untars it at WS_DIR (/process/execute); answers mountPoint
 *   spawn     one toolbox session per command (sessions run their commands one after another);
 *             the command goes in as shell text (the toolbox has no argv form) wrapped so that
 *             its stdout and stderr are base64 lines (the toolbox's log is line-based, with NULs
 *             lost and a newline added to a last line), and its stdin, sent as base64 lines on
 *             the session's input (which has no EOF), is decoded into a FIFO the wrapper closes
 *             at a "." line; the output is polled (GET …/logs with X-Daytona-Split-Output:
 *             per-line \x01\x01\x01 / \x02\x02\x02 markers, parsed here) with the command's
 *             status until its exitCode appears
 *   kill      DELETE of the command's session: SIGTERM then SIGKILL to its process group (the
 *             toolbox has no per-command signal)
 *   release   tars WS_DIR remotely, streams the tar to the release fd, deletes the sandbox
 *   prepare   deletes the sandboxes an earlier instance on this host left behind: each carries
 *             labels naming this host and its owning instance, and an instance holds a lock on
 *             <state>/owners/<token> while it lives
 * A sandbox Daytona stopped for idleness is started again before the next use of its lease (its
 * files stay); a command running when it stopped is lost and fails with a message saying so.
 * A keepalive thread posts last-activity for each leased sandbox and enforces the plans'
 * timeouts. The API key lives in one header of the HTTP clients; it is never logged.
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

#define PACK_ID "org.cordon.daytona"
#define HOME_DIR "/home/daytona"
#define WS_DIR HOME_DIR "/workspace"
#define TAR_IN HOME_DIR "/.cordon-in.tar"
#define TAR_OUT HOME_DIR "/.cordon-out.tar"
#define STDIN_CHUNK (3 * 1024)
#define UPLOAD_MAX (1024L * 1024 * 1024)
#define BOUNDARY "cordon-daytona-7c1e0f5b9a"

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static char instance[256] = "unconfigured";
static char *auth_header; /* "Authorization: Bearer …" */
static char base_url[1024], snapshot[256], target[64];
static long auto_stop_min = 15;
static char owner[33], host_id[33];
static int owner_lock_fd = -1;
static atomic_int auth_gen; /* bumped when configure sets the key */
static unsigned next_proc;

struct lease {
	char id[65];
	char sandbox[64];
	char toolbox[1024]; /* toolboxProxyUrl/sandbox */
	struct lease *next;
};
static struct lease *leases;

struct proc {
	char name[32];
	char session[64];
	char toolbox[1024];
	char sandbox[64];
	char cmd_id[64];
	int in_fd, out_fd, err_fd;
	atomic_bool started, done, killed, timed_out;
	atomic_int kill_signal;
	long long deadline_usec; /* CLOCK_MONOTONIC, 0: none (the plan's timeoutMs) */
	pthread_t stdin_thread;
	bool stdin_started;
	char *command; /* the wrapped shell text */
	struct timespec t0;
	struct proc *next;
};
static struct proc *procs;

static int client_new(long total_ms, struct rhttp_client **ret)
{
	struct rhttp_opts o = { .auth_header = auth_header,
				.user_agent = "cordon-daytona-pack/" PACKAGE_VERSION,
				.connect_timeout_ms = 10000,
				.total_timeout_ms = total_ms,
				.max_retries = 4,
				.backoff_ms = 250,
				.cancel = &packlib_stopping };

	return rhttp_client_new(&o, ret);
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	(void)nanosleep(&t, NULL);
}

/* ------------------------------------------------------------------ HTTP */

/* A call to URL; 0 with resp (the caller judges the status) or -errno with msg. */
static int call_url(struct rhttp_client *c, const char *method, const char *url, json_t *body,
		    bool retry, struct rhttp_response *resp, char *msg, size_t msg_size)
{
	static const char *const split[] = { "X-Daytona-Split-Output: true", NULL };
	_cleanup_free_ char *text = body ? rhttp_json_dump(body) : NULL;
	struct rhttp_request req = { .method = method,
				     .url = url,
				     .headers = split,
				     .body = text,
				     .body_len = text ? strlen(text) : 0,
				     .body_fd = -1,
				     .content_type = body ? "application/json" : NULL,
				     .retry = retry,
				     .retry_throttled = true };

	if (body && !text)
		return -ENOMEM;
	return rhttp_do(c, &req, resp, msg, msg_size);
}

static int api(struct rhttp_client *c, const char *method, const char *path, json_t *body,
	       bool retry, struct rhttp_response *resp, char *msg, size_t msg_size)
{
	_cleanup_free_ char *url = strdup_printf("%s%s", base_url, path);

	if (!url)
		return -ENOMEM;
	return call_url(c, method, url, body, retry, resp, msg, msg_size);
}

static int toolbox(struct rhttp_client *c, const char *tb, const char *method, const char *path,
		   json_t *body, bool retry, struct rhttp_response *resp, char *msg,
		   size_t msg_size)
{
	_cleanup_free_ char *url = strdup_printf("%s%s", tb, path);

	if (!url)
		return -ENOMEM;
	return call_url(c, method, url, body, retry, resp, msg, msg_size);
}

/* ------------------------------------------------------------------ control plane */

static bool sandbox_id_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n >= 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}

static int delete_sandbox(struct rhttp_client *c, const char *sandbox, char *msg, size_t msg_size)
{
	_cleanup_free_ char *path = strdup_printf("/sandbox/%s", sandbox);
	struct rhttp_response resp;
	int r;

	if (!path)
		return -ENOMEM;
	r = api(c, "DELETE", path, NULL, true, &resp, msg, msg_size);
	/* A second DELETE is a 404: gone is what we want. */
	if (r == 0 && resp.status != 200 && resp.status != 204 && resp.status != 404) {
		rhttp_error_message(&resp, msg, msg_size);
		r = -EIO;
	}
	rhttp_response_done(&resp);
	return r;
}

/* GET the sandbox: its state into state (and its toolbox URL into tb when tb is non-NULL). */
static int sandbox_get(struct rhttp_client *c, const char *sandbox, char *state, size_t state_size,
		       char *tb, size_t tb_size, char *msg, size_t msg_size)
{
	_cleanup_free_ char *path = strdup_printf("/sandbox/%s", sandbox);
	_cleanup_json_ json_t *ans = NULL;
	struct rhttp_response resp;
	const char *s, *u;
	int r;

	if (!path)
		return -ENOMEM;
	r = api(c, "GET", path, NULL, true, &resp, msg, msg_size);
	if (r < 0)
		return r;
	if (resp.status != 200) {
		rhttp_error_message(&resp, msg, msg_size);
		r = resp.status == 404 ? -ENOENT : -EIO;
		rhttp_response_done(&resp);
		return r;
	}
	ans = rhttp_json_body(&resp);
	rhttp_response_done(&resp);
	s = json_string_value(json_object_get(ans, "state"));
	u = json_string_value(json_object_get(ans, "toolboxProxyUrl"));
	if (!s) {
		(void)snprintf(msg, msg_size, "the service's answer has no state");
		return -EBADMSG;
	}
	(void)snprintf(state, state_size, "%s", s);
	if (tb && u && (startswith(u, "https://") || startswith(u, "http://"))) {
		size_t n;

		(void)snprintf(tb, tb_size, "%s", u);
		n = strlen(tb);
		while (n > 0 && tb[n - 1] == '/')
			tb[--n] = '\0';
		(void)snprintf(tb + n, tb_size - n, "/%s", sandbox);
	}
	return 0;
}

/* Polls the sandbox until "started" (starting it when it is stopped). */
static int wait_started(struct rhttp_client *c, const char *sandbox, char *tb, size_t tb_size,
			char *msg, size_t msg_size)
{
	struct timespec t0;
	long delay = 100;
	bool started_it = false;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		char state[64] = "";
		int r = sandbox_get(c, sandbox, state, sizeof(state), tb, tb_size, msg, msg_size);

		if (r < 0)
			return r;
		if (streq(state, "started"))
			return 0;
		if (streq(state, "error") || streq(state, "build_failed") ||
		    streq(state, "destroyed") || streq(state, "destroying")) {
			(void)snprintf(msg, msg_size, "the sandbox is in state %s", state);
			return -EIO;
		}
		if ((streq(state, "stopped") || streq(state, "archived")) && !started_it) {
			_cleanup_free_ char *path = strdup_printf("/sandbox/%s/start", sandbox);
			struct rhttp_response resp;

			if (!path)
				return -ENOMEM;
			fprintf(stderr,
				"cordon-daytona-pack: sandbox %s is %s: starting it again\n",
				sandbox, state);
			r = api(c, "POST", path, NULL, true, &resp, msg, msg_size);
			if (r == 0 && resp.status != 200 && resp.status != 201) {
				rhttp_error_message(&resp, msg, msg_size);
				r = -EIO;
			}
			rhttp_response_done(&resp);
			if (r < 0)
				return r;
			started_it = true;
			continue;
		}
		if (packlib_usec_since(&t0) > 180L * 1000000) {
			(void)snprintf(msg, msg_size,
				       "the sandbox did not start in 180 s (state %s)", state);
			return -ETIMEDOUT;
		}
		if (atomic_load(&packlib_stopping))
			return -ECANCELED;
		sleep_ms(delay);
		delay = delay < 1000 ? delay * 2 : 1000;
	}
}

static int create_sandbox(struct rhttp_client *c, struct lease *l, char *msg, size_t msg_size)
{
	_cleanup_free_ char *name = strdup_printf("cordon-%.12s-%s", owner, l->id);
	_cleanup_json_ json_t *body = NULL, *ans = NULL;
	struct rhttp_response resp;
	const char *sid;
	int r;

	if (!name)
		return -ENOMEM;
	/* autoDeleteInterval: a sandbox stopped for idleness is kept a day (its lease may start
	 * it again), then goes; orphans go at the next prepare. */
	body = json_pack("{s:s,s:{s:s,s:s,s:s,s:s},s:I,s:i,s:b,s:{},s:b}", "name", name, "labels",
			 "cordonPack", PACK_ID, "cordonHost", host_id, "cordonOwner", owner,
			 "cordonLease", l->id, "autoStopInterval", (json_int_t)auto_stop_min,
			 "autoDeleteInterval", 1440, "public", false, "env", "networkBlockAll",
			 true);
	if (!body)
		return -ENOMEM;
	if (snapshot[0])
		json_object_set_new(body, "snapshot", json_string(snapshot));
	if (target[0])
		json_object_set_new(body, "target", json_string(target));
	/* The name makes it idempotent: a retry that finds it created gets 409, then GET by name. */
	r = api(c, "POST", "/sandbox", body, false, &resp, msg, msg_size);
	if (r < 0)
		return r;
	if (resp.status == 409) {
		_cleanup_free_ char *path = strdup_printf("/sandbox/%s", name);

		rhttp_response_done(&resp);
		if (!path)
			return -ENOMEM;
		r = api(c, "GET", path, NULL, true, &resp, msg, msg_size);
		if (r < 0)
			return r;
	}
	if (resp.status != 200 && resp.status != 201) {
		rhttp_error_message(&resp, msg, msg_size);
		rhttp_response_done(&resp);
		return -EIO;
	}
	ans = rhttp_json_body(&resp);
	rhttp_response_done(&resp);
	sid = json_string_value(json_object_get(ans, "id"));
	if (!sandbox_id_ok(sid)) {
		(void)snprintf(msg, msg_size, "the service's answer has no valid sandbox id");
		return -EBADMSG;
	}
	(void)snprintf(l->sandbox, sizeof(l->sandbox), "%s", sid);
	return wait_started(c, l->sandbox, l->toolbox, sizeof(l->toolbox), msg, msg_size);
}

/* ------------------------------------------------------------------ shell text */

/* s single-quoted for sh, appended to *buf. */
static int sq_append(char **buf, size_t *len, const char *s)
{
	size_t n = strlen(s), need = *len + 4 * n + 4;
	char *b = realloc(*buf, need), *p;

	if (!b)
		return -ENOMEM;
	*buf = b;
	p = b + *len;
	*p++ = ' ';
	*p++ = '\'';
	for (; *s; s++) {
		if (*s == '\'') {
			memcpy(p, "'\\''", 4);
			p += 4;
		} else
			*p++ = *s;
	}
	*p++ = '\'';
	*p = '\0';
	*len = (size_t)(p - b);
	return 0;
}

static int str_append(char **buf, size_t *len, const char *s)
{
	size_t n = strlen(s);
	char *b = realloc(*buf, *len + n + 1);

	if (!b)
		return -ENOMEM;
	memcpy(b + *len, s, n + 1);
	*buf = b;
	*len += n;
	return 0;
}

static bool env_name_ok(const char *k, size_t n)
{
	if (n == 0 || (k[0] >= '0' && k[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
		      (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
			return false;
	return true;
}

/*
 * The command as session shell text. All of it is in a ( ) subshell: the toolbox sources a
 * session's commands in one shell, where a top-level exit would leave no exit code. Its stdout
 * and stderr go through FIFOs to encoders writing ":<base64>" lines, one per read, so the
 * line-based log carries any bytes; with stdin, a decoder turns the session's input lines into
 * bytes on a FIFO and ends it at a "." line (the toolbox's input has no EOF). The encoders are
 * waited for before the status is the subshell's.
 */
static char *wrap_command(json_t *argv, json_t *envp, const char *cwd, bool with_stdin)
{
	char *b = NULL;
	size_t n = 0;
	size_t i;
	json_t *e;
	int r = 0;

	r |= str_append(&b, &n,
			"(exec 3<&0; d=$(mktemp -d) || exit 125; trap 'rm -rf \"$d\"' EXIT; "
			"mkfifo \"$d/o\" \"$d/e\" \"$d/i\" || exit 125; "
			"enc() { while c=$(dd bs=65536 count=1 2>/dev/null | base64 -w0) && "
			"[ -n \"$c\" ]; do printf ':%s\\n' \"$c\"; done; }; "
			"enc <\"$d/o\" & o=$!; enc <\"$d/e\" >&2 & x=$!; w=; ");
	if (with_stdin)
		r |= str_append(&b, &n,
				"(while IFS= read -r l <&3 && [ \"$l\" != . ]; do printf %s \"$l\" "
				"| base64 -d; done >\"$d/i\") & w=$!; ");
	else
		r |= str_append(&b, &n, "(: >\"$d/i\") & ");
	r |= str_append(&b, &n, "(cd --");
	r |= sq_append(&b, &n, cwd);
	r |= str_append(&b, &n, " || exit 127; exec env --");
	json_array_foreach(envp, i, e) {
		const char *kv = json_string_value(e), *eq = kv ? strchr(kv, '=') : NULL;

		/* The sandbox's own HOME and PATH, not the host's. */
		if (!eq || !env_name_ok(kv, (size_t)(eq - kv)) || startswith(kv, "HOME=") ||
		    startswith(kv, "PATH="))
			continue;
		r |= sq_append(&b, &n, kv);
	}
	json_array_foreach(argv, i, e) {
		r |= sq_append(&b, &n, json_string_value(e) ?: "");
	}
	r |= str_append(&b, &n,
			") <\"$d/i\" >\"$d/o\" 2>\"$d/e\" 3<&-; r=$?; "
			"[ -n \"$w\" ] && kill $w 2>/dev/null; wait $o $x; exit $r)");
	if (r < 0) {
		free(b);
		return NULL;
	}
	return b;
}

/* ------------------------------------------------------------------ processes */

/* The log's parser: complete lines from *off on, each "\x01\x01\x01" (stdout) or
 * "\x02\x02\x02" (stderr) then ":<base64>" (the wrapper's) or raw text, to the fds. */
static void parse_log(struct proc *p, const char *log, size_t len, size_t *off)
{
	while (*off < len) {
		const char *line = log + *off, *nl = memchr(line, '\n', len - *off);
		size_t n;
		int fd = p->out_fd;

		if (!nl)
			return;
		n = (size_t)(nl - line);
		*off += n + 1;
		if (n >= 3 && memcmp(line, "\x02\x02\x02", 3) == 0)
			fd = p->err_fd, line += 3, n -= 3;
		else if (n >= 3 && memcmp(line, "\x01\x01\x01", 3) == 0)
			line += 3, n -= 3;
		if (fd < 0)
			continue;
		if (n > 0 && line[0] == ':') {
			_cleanup_free_ void *d = NULL;
			size_t dn = 0;

			if (base64_decode(line + 1, n - 1, &d, &dn) == 0) {
				(void)loop_write(fd, d, dn);
				continue;
			}
		}
		(void)loop_write(fd, line, n);
		(void)loop_write(fd, "\n", 1);
	}
}

static int post_input(struct rhttp_client *c, struct proc *p, const char *data, char *msg,
		      size_t msg_size)
{
	_cleanup_free_ char *path =
		strdup_printf("/process/session/%s/command/%s/input", p->session, p->cmd_id);
	_cleanup_json_ json_t *body = json_pack("{s:s}", "data", data);
	struct rhttp_response resp;
	int r;

	if (!path || !body)
		return -ENOMEM;
	r = toolbox(c, p->toolbox, "POST", path, body, false, &resp, msg, msg_size);
	if (r == 0 && resp.status >= 300) {
		rhttp_error_message(&resp, msg, msg_size);
		r = resp.status == 410 ? -ESRCH : -EIO;
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

	if (!buf || client_new(60000, &c) < 0)
		goto out;
	while (!atomic_load(&p->done)) {
		struct pollfd pfd = { p->in_fd, POLLIN, 0 };
		ssize_t k;
		_cleanup_free_ char *b64 = NULL;

		if (poll(&pfd, 1, 200) <= 0)
			continue;
		k = read(p->in_fd, buf, STDIN_CHUNK);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			(void)post_input(c, p, ".", msg, sizeof(msg));
			break;
		}
		b64 = base64_encode(buf, (size_t)k);
		if (!b64 || post_input(c, p, b64, msg, sizeof(msg)) < 0)
			break;
	}
out:
	rhttp_client_free(c);
	return NULL;
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
	free(p->command);
	free(p);
}

static int delete_session(struct rhttp_client *c, const char *tb, const char *session, char *msg,
			  size_t msg_size)
{
	_cleanup_free_ char *path = strdup_printf("/process/session/%s", session);
	struct rhttp_response resp;
	int r;

	if (!path)
		return -ENOMEM;
	r = toolbox(c, tb, "DELETE", path, NULL, true, &resp, msg, msg_size);
	if (r == 0 && resp.status >= 300 && resp.status != 404) {
		rhttp_error_message(&resp, msg, msg_size);
		r = -EIO;
	}
	rhttp_response_done(&resp);
	return r;
}

/* Creates p's session and starts its command; 0 with p->cmd_id, or -errno with msg. */
static int start_command(struct rhttp_client *c, struct proc *p, char *msg, size_t msg_size)
{
	_cleanup_json_ json_t *sb = json_pack("{s:s}", "sessionId", p->session);
	_cleanup_json_ json_t *ex = json_pack("{s:s,s:b,s:b}", "command", p->command, "runAsync",
					      true, "suppressInputEcho", true);
	_cleanup_json_ json_t *ans = NULL;
	_cleanup_free_ char *path = strdup_printf("/process/session/%s/exec", p->session);
	struct rhttp_response resp;
	const char *cid;
	int r;

	if (!sb || !ex || !path)
		return -ENOMEM;
	r = toolbox(c, p->toolbox, "POST", "/process/session", sb, false, &resp, msg, msg_size);
	if (r == 0 && resp.status != 201 && resp.status != 200) {
		rhttp_error_message(&resp, msg, msg_size);
		r = -EIO;
	}
	rhttp_response_done(&resp);
	if (r < 0)
		return r;
	r = toolbox(c, p->toolbox, "POST", path, ex, false, &resp, msg, msg_size);
	if (r == 0 && resp.status != 202 && resp.status != 200) {
		rhttp_error_message(&resp, msg, msg_size);
		r = -EIO;
	}
	if (r == 0) {
		ans = rhttp_json_body(&resp);
		cid = json_string_value(json_object_get(ans, "cmdId"));
		if (!cid || strlen(cid) >= sizeof(p->cmd_id) || strchr(cid, '/')) {
			(void)snprintf(msg, msg_size, "the toolbox's answer has no command id");
			r = -EBADMSG;
		} else
			(void)snprintf(p->cmd_id, sizeof(p->cmd_id), "%s", cid);
	}
	rhttp_response_done(&resp);
	return r;
}

/* Why a toolbox call failed: the sandbox stopped (Daytona's idle auto-stop) or else. */
static void explain_failure(struct rhttp_client *c, struct proc *p, char *msg, size_t msg_size)
{
	char state[64] = "", m2[256];

	if (sandbox_get(c, p->sandbox, state, sizeof(state), NULL, 0, m2, sizeof(m2)) == 0 &&
	    !streq(state, "started"))
		(void)snprintf(msg, msg_size,
			       "the Daytona sandbox is %s (stopped while the command ran, e.g. by "
			       "its idle auto-stop): the command is lost",
			       state);
}

/* Polls p's command to its end; 0 with *exit_code, or -errno with msg. */
static int poll_command(struct rhttp_client *c, struct proc *p, int *exit_code, char *msg,
			size_t msg_size)
{
	_cleanup_free_ char *spath =
		strdup_printf("/process/session/%s/command/%s", p->session, p->cmd_id);
	_cleanup_free_ char *lpath =
		strdup_printf("/process/session/%s/command/%s/logs", p->session, p->cmd_id);
	size_t off = 0;
	long delay = 5;
	struct timespec t0;

	if (!spath || !lpath)
		return -ENOMEM;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct rhttp_response resp;
		_cleanup_json_ json_t *st = NULL;
		json_t *code;
		size_t before = off;
		int r;

		r = toolbox(c, p->toolbox, "GET", spath, NULL, true, &resp, msg, msg_size);
		if (r == 0 && resp.status != 200) {
			rhttp_error_message(&resp, msg, msg_size);
			r = resp.status == 404 ? -ESRCH : -EIO;
		}
		if (r == 0)
			st = rhttp_json_body(&resp);
		rhttp_response_done(&resp);
		if (r < 0)
			return r;
		code = json_object_get(st, "exitCode");
		r = toolbox(c, p->toolbox, "GET", lpath, NULL, true, &resp, msg, msg_size);
		if (r == 0 && resp.status != 200) {
			rhttp_error_message(&resp, msg, msg_size);
			r = resp.status == 404 ? -ESRCH : -EIO;
		}
		if (r == 0 && resp.body)
			parse_log(p, resp.body, resp.len, &off);
		rhttp_response_done(&resp);
		if (r < 0)
			return r;
		/* The status said exited before these logs were read: they are complete. */
		if (json_is_integer(code)) {
			*exit_code = (int)json_integer_value(code);
			return 0;
		}
		if (atomic_load(&packlib_stopping))
			return -ECANCELED;
		/* Every 5 ms for the first 200 ms and while output flows (a short command is
		 * seen to end soon after it does; the polls are sequential, so a distant service's
		 * round trips space them anyway), then growing by half up to 250 ms. */
		delay = off != before || packlib_usec_since(&t0) < 200000 ? 5
			: delay < 167					  ? delay + delay / 2
									  : 250;
		sleep_ms(delay);
	}
}

static void *proc_main(void *ud)
{
	struct proc *p = ud;
	struct rhttp_client *c = NULL;
	char msg[512] = "", m2[256];
	int code = 255, sig = 0, exit_code = 0, r;
	const char *reason = "exited";
	bool started = false;

	r = client_new(60000, &c);
	if (r == 0)
		r = wait_started(c, p->sandbox, p->toolbox, sizeof(p->toolbox), msg, sizeof(msg));
	if (r == 0)
		r = start_command(c, p, msg, sizeof(msg));
	if (r == 0) {
		started = true;
		atomic_store(&p->started, true);
		if (p->in_fd >= 0 && pthread_create(&p->stdin_thread, NULL, stdin_main, p) == 0)
			p->stdin_started = true;
		/* A kill that came before the session existed. */
		if (atomic_load(&p->killed) || atomic_load(&p->timed_out))
			(void)delete_session(c, p->toolbox, p->session, m2, sizeof(m2));
		r = poll_command(c, p, &exit_code, msg, sizeof(msg));
	}
	atomic_store(&p->done, true);
	if (p->stdin_started)
		pthread_join(p->stdin_thread, NULL);
	if (atomic_load(&p->timed_out) || atomic_load(&p->killed)) {
		sig = atomic_load(&p->timed_out) ? SIGKILL : atomic_load(&p->kill_signal);
		if (sig <= 0)
			sig = SIGKILL;
		code = 128 + sig;
		reason = atomic_load(&p->timed_out) ? "timeout" : "killed";
	} else if (r == 0 && exit_code > 128 && exit_code < 128 + 65) {
		/* The shell's status of a command a signal ended (it cannot tell an exit(128+n)). */
		sig = exit_code - 128;
		code = exit_code;
		reason = "signaled";
	} else if (r == 0) {
		code = exit_code & 0xff;
	} else {
		_cleanup_free_ char *line = NULL;

		if (c && r != -ENOMEM)
			explain_failure(c, p, msg, sizeof(msg));
		line = strdup_printf("cordon-daytona: %s\n", msg[0] ? msg : strerror(-r));
		if (line && p->err_fd >= 0)
			(void)loop_write(p->err_fd, line, strlen(line));
		fprintf(stderr, "cordon-daytona-pack: %s in %s: %s\n", p->name, p->sandbox, msg);
		/* A command that could not be started is exit 127 (like exec-failed). */
		code = started ? 255 : 127;
	}
	if (c && started)
		(void)delete_session(c, p->toolbox, p->session, m2, sizeof(m2));
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

/* Runs shell text in the lease's sandbox to its end (/process/execute); 0 on exit 0. */
static int run_internal(struct rhttp_client *c, struct lease *l, const char *command, char *msg,
			size_t msg_size)
{
	_cleanup_json_ json_t *body =
		json_pack("{s:s,s:s,s:i}", "command", command, "cwd", HOME_DIR, "timeout", 600);
	_cleanup_json_ json_t *ans = NULL;
	struct rhttp_response resp;
	int r;

	if (!body)
		return -ENOMEM;
	r = toolbox(c, l->toolbox, "POST", "/process/execute", body, false, &resp, msg, msg_size);
	if (r < 0)
		return r;
	if (resp.status != 200) {
		rhttp_error_message(&resp, msg, msg_size);
		rhttp_response_done(&resp);
		return -EIO;
	}
	ans = rhttp_json_body(&resp);
	rhttp_response_done(&resp);
	if (json_integer_value(json_object_get(ans, "exitCode")) != 0 ||
	    !json_is_integer(json_object_get(ans, "exitCode"))) {
		(void)snprintf(msg, msg_size, "%s failed: %.300s", command,
			       json_string_value(json_object_get(ans, "result")) ?: "");
		return -EIO;
	}
	return 0;
}

/* ------------------------------------------------------------------ files */

static bool to_fd(const void *d, size_t n, void *ud)
{
	return loop_write(*(int *)ud, d, n) >= 0;
}

/* The archive from fd as the multipart body the upload takes (part "file"). */
static int read_multipart(int fd, char **ret, size_t *ret_len, char *msg, size_t msg_size)
{
	static const char head[] = "--" BOUNDARY
				   "\r\nContent-Disposition: form-data; name=\"file\"; "
				   "filename=\"cordon.tar\"\r\nContent-Type: "
				   "application/octet-stream\r\n\r\n";
	static const char tail[] = "\r\n--" BOUNDARY "--\r\n";
	size_t cap = 1 << 20, len = sizeof(head) - 1;
	char *b = malloc(cap);

	if (!b)
		return -ENOMEM;
	memcpy(b, head, len);
	for (;;) {
		ssize_t k;

		if (cap - len < 65536 + sizeof(tail)) {
			char *nb;

			if (cap > UPLOAD_MAX) {
				free(b);
				(void)snprintf(msg, msg_size,
					       "the workspace archive is over %ld bytes",
					       UPLOAD_MAX);
				return -EFBIG;
			}
			nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb, cap *= 2;
		}
		k = read(fd, b + len, 65536);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			free(b);
			return -errno;
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	memcpy(b + len, tail, sizeof(tail) - 1);
	*ret = b;
	*ret_len = len + sizeof(tail) - 1;
	return 0;
}

static int upload_fd(struct rhttp_client *c, struct lease *l, int fd, char *msg, size_t msg_size)
{
	_cleanup_free_ char *e = rhttp_escape(TAR_IN);
	_cleanup_free_ char *url = e ? strdup_printf("%s/files/upload?path=%s", l->toolbox, e)
				     : NULL;
	_cleanup_free_ char *body = NULL;
	size_t len = 0;
	struct rhttp_request req = { .method = "POST",
				     .url = url,
				     .body_fd = -1,
				     .content_type = "multipart/form-data; boundary=" BOUNDARY,
				     .total_timeout_ms = -1,
				     .retry = true };
	struct rhttp_response resp;
	int r;

	if (!url)
		return -ENOMEM;
	r = read_multipart(fd, &body, &len, msg, msg_size);
	if (r < 0)
		return r;
	req.body = body, req.body_len = len;
	r = rhttp_do(c, &req, &resp, msg, msg_size);
	if (r == 0 && resp.status != 200 && resp.status != 201) {
		rhttp_error_message(&resp, msg, msg_size);
		r = -EIO;
	}
	rhttp_response_done(&resp);
	return r;
}

static int download_fd(struct rhttp_client *c, struct lease *l, int fd, char *msg, size_t msg_size)
{
	_cleanup_free_ char *e = rhttp_escape(TAR_OUT);
	_cleanup_free_ char *url = e ? strdup_printf("%s/files/download?path=%s", l->toolbox, e)
				     : NULL;
	struct rhttp_request req = {
		.method = "GET",
		.url = url,
		.body_fd = -1,
		.total_timeout_ms = -1,
		/* A 5xx or 429 before any byte of the archive is retried (Retry-After
		 * honoured); a stream cut after some is an error naming the cause. */
		.retry = true,
		.sink = to_fd,
		.sink_userdata = &fd
	};
	struct rhttp_response resp;
	int r;

	if (!url)
		return -ENOMEM;
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
	json_t *stop = json_object_get(settings, "autoStopMinutes");

	packlib_copy_setting(params, "instance", instance, sizeof(instance));
	(void)snprintf(base_url, sizeof(base_url), "https://app.daytona.io/api");
	packlib_copy_setting(settings, "baseUrl", base_url, sizeof(base_url));
	packlib_copy_setting(settings, "snapshot", snapshot, sizeof(snapshot));
	packlib_copy_setting(settings, "target", target, sizeof(target));
	packlib_strip_slash(base_url);
	if (json_is_number(stop) && json_number_value(stop) >= 0 && json_number_value(stop) <= 1440)
		auto_stop_min = (long)json_number_value(stop);
	if (auth_header) {
		explicit_bzero(auth_header, strlen(auth_header));
		free(auth_header);
		auth_header = NULL;
	}
	if (json_is_string(key) && json_string_length(key) > 0) {
		auth_header = strdup_printf("Authorization: Bearer %s", json_string_value(key));
		explicit_bzero((char *)json_string_value(key), json_string_length(key));
	}
	atomic_fetch_add(&auth_gen, 1);
	fprintf(stderr, "cordon-daytona-pack: configured %s (API %s, snapshot %s, key %s)\n",
		instance, base_url, snapshot[0] ? snapshot : "(default)",
		auth_header ? "configured" : "absent");
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

/* Deletes the sandboxes of earlier instances on this host whose owner lock is free. The list is
 * paged (cursor, nextCursor): every page is read before anything is deleted. */
static void do_prepare(json_t *id)
{
	struct rhttp_client *c = NULL;
	_cleanup_free_ char *labels = NULL, *el = NULL, *cursor = NULL;
	_cleanup_json_ json_t *orphans = json_array();
	char msg[512] = "";
	size_t i, removed = 0, pages = 0;
	json_t *e;
	int r = 0;

	labels = strdup_printf("{\"cordonPack\":\"" PACK_ID "\",\"cordonHost\":\"%s\"}", host_id);
	el = labels ? rhttp_escape(labels) : NULL;
	if (!el || !orphans || client_new(60000, &c) < 0) {
		packlib_reply_error(id, "out of memory", "prepare");
		return;
	}
	do {
		_cleanup_free_ char *ec = cursor ? rhttp_escape(cursor) : NULL;
		_cleanup_free_ char *path = strdup_printf("/sandbox?limit=200&labels=%s%s%s", el,
							  ec ? "&cursor=" : "", ec ?: "");
		_cleanup_json_ json_t *list = NULL;
		struct rhttp_response resp;
		const char *next;

		if (!path || (cursor && !ec)) {
			r = -ENOMEM;
			break;
		}
		r = api(c, "GET", path, NULL, true, &resp, msg, sizeof(msg));
		if (r == 0 && resp.status != 200) {
			rhttp_error_message(&resp, msg, sizeof(msg));
			r = -EIO;
		}
		list = r == 0 ? rhttp_json_body(&resp) : NULL;
		rhttp_response_done(&resp);
		if (r < 0)
			break;
		json_array_foreach(json_object_get(list, "items"), i, e) {
			json_t *lb = json_object_get(e, "labels");
			const char *sid = json_string_value(json_object_get(e, "id"));
			const char *own = json_string_value(json_object_get(lb, "cordonOwner"));

			if (!sandbox_id_ok(sid) || !remote_hex_ok(own, REMOTE_ID_HEX) ||
			    streq(own, owner) ||
			    !streq(json_string_value(json_object_get(lb, "cordonHost")) ?: "",
				   host_id) ||
			    !streq(json_string_value(json_object_get(lb, "cordonPack")) ?: "",
				   PACK_ID))
				continue;
			/* Its owner still lives (holds the lock): an instance still serving. */
			if (!remote_owner_live(own))
				json_array_append_new(orphans, json_string(sid));
		}
		next = json_string_value(json_object_get(list, "nextCursor"));
		free(cursor);
		cursor = next && *next ? strdup(next) : NULL;
		if (next && *next && !cursor)
			r = -ENOMEM;
	} while (r == 0 && cursor && ++pages < LIST_PAGES_MAX);
	if (r < 0)
		/* Not fatal: isAvailable tells what is wrong (a bad key, the service down); the
		 * pages read so far are cleaned. */
		fprintf(stderr, "cordon-daytona-pack: cannot list orphans: %s\n",
			r == -ENOMEM ? "out of memory" : msg);
	json_array_foreach(orphans, i, e) {
		const char *sid = json_string_value(e);

		if (delete_sandbox(c, sid, msg, sizeof(msg)) == 0) {
			removed++;
			fprintf(stderr, "cordon-daytona-pack: removed orphan sandbox %s\n", sid);
		} else
			fprintf(stderr, "cordon-daytona-pack: cannot remove orphan %s: %s\n", sid,
				msg);
	}
	/* Owner files whose lock is free and that own nothing any more. */
	if (r == 0)
		remote_owners_prune(owner);
	rhttp_client_free(c);
	fprintf(stderr, "cordon-daytona-pack: prepared (%zu orphans removed)\n", removed);
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
	r = api(c, "GET", "/sandbox?limit=1", NULL, true, &resp, msg, sizeof(msg));
	if (r == 0 && resp.status != 200)
		rhttp_error_message(&resp, msg, sizeof(msg));
	if (r == 0 && resp.status == 200)
		packlib_reply(id, json_pack("{s:b}", "available", true));
	else
		packlib_reply(id, json_pack("{s:b,s:s+}", "available", false, "reason",
					    "Daytona: ", msg));
	rhttp_response_done(&resp);
	rhttp_client_free(c);
}

static struct lease *lease_find(const char *id)
{
	struct lease *found = NULL;

	pthread_mutex_lock(&table_lock);
	for (struct lease *l = leases; l; l = l->next)
		if (streq(l->id, id))
			found = l;
	pthread_mutex_unlock(&table_lock);
	return found;
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
	free(l);
}

static void do_acquire(json_t *id, json_t *params, int *fds, size_t n_fds)
{
	const char *lease = json_string_value(json_object_get(params, "lease"));
	struct rhttp_client *c = NULL;
	struct lease *l;
	char msg[512] = "";
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
		char m2[256];

		fprintf(stderr, "cordon-daytona-pack: lease %s: cannot create a sandbox: %s\n",
			lease, msg);
		if (l->sandbox[0])
			(void)delete_sandbox(c, l->sandbox, m2, sizeof(m2));
		free(l);
		rhttp_client_free(c);
		packlib_reply_error(id, msg, "acquire");
		return;
	}
	if (!l->toolbox[0]) {
		(void)snprintf(msg, sizeof(msg), "the sandbox has no toolboxProxyUrl");
		r = -EBADMSG;
	}
	if (r == 0)
		r = upload_fd(c, l, fds[0], msg, sizeof(msg));
	fds[0] = safe_close(fds[0]);
	if (r == 0)
		r = run_internal(c, l,
				 "mkdir -p '" WS_DIR "' && tar -xf '" TAR_IN "' -C '" WS_DIR
				 "' && rm -f '" TAR_IN "'",
				 msg, sizeof(msg));
	if (r < 0) {
		char m2[256];

		fprintf(stderr, "cordon-daytona-pack: lease %s: cannot hydrate %s: %s\n", lease,
			l->sandbox, msg);
		(void)delete_sandbox(c, l->sandbox, m2, sizeof(m2));
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
	fprintf(stderr, "cordon-daytona-pack: lease %s: sandbox %s ready\n", lease, l->sandbox);
	packlib_reply(id, json_pack("{s:s}", "mountPoint", WS_DIR));
}

static void do_release(json_t *id, json_t *params, int *fds, size_t n_fds)
{
	const char *lease = json_string_value(json_object_get(params, "lease"));
	struct rhttp_client *c = NULL;
	struct lease *l = lease ? lease_find(lease) : NULL;
	char msg[512] = "", m2[256] = "";
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
	r = wait_started(c, l->sandbox, l->toolbox, sizeof(l->toolbox), msg, sizeof(msg));
	if (r == 0)
		r = run_internal(c, l, "tar --format=pax -cf '" TAR_OUT "' -C '" WS_DIR "' .", msg,
				 sizeof(msg));
	if (r == 0)
		r = download_fd(c, l, fds[0], msg, sizeof(msg));
	/* Our copy of the pipe goes now: the controller's reader sees the archive's end. */
	fds[0] = safe_close(fds[0]);
	if (delete_sandbox(c, l->sandbox, m2, sizeof(m2)) < 0)
		fprintf(stderr, "cordon-daytona-pack: cannot delete sandbox %s: %s\n", l->sandbox,
			m2);
	fprintf(stderr, "cordon-daytona-pack: lease %s: sandbox %s released (%s)\n", l->id,
		l->sandbox, r < 0 ? msg : "ok");
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
	json_t *argv = json_object_get(plan, "argv");
	struct lease *l = lease ? lease_find(lease) : NULL;
	char cwd[4200], hex[17];
	struct proc *p;
	pthread_t t;

	if (!l) {
		packlib_send(jsonrpc_error_new(
			id, -32007,
			lease ? "no such lease"
			      : "Daytona runs commands in leases: acquire a sandbox first",
			json_pack("{s:s,s:s}", "code", "setup-failed", "step", "lease")));
		return;
	}
	if (!json_is_array(argv) || json_array_size(argv) == 0 ||
	    !json_is_string(json_array_get(argv, 0))) {
		packlib_reply_error(id, "the plan has no argv", "spawn");
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p || remote_random_hex(hex, 8) < 0) {
		free(p);
		packlib_reply_error(id, "out of memory", "spawn");
		return;
	}
	p->in_fd = packlib_fd_at(stdio, "stdin", fds, n_fds);
	p->out_fd = packlib_fd_at(stdio, "stdout", fds, n_fds);
	p->err_fd = packlib_fd_at(stdio, "stderr", fds, n_fds);
	if (wcwd && !streq(wcwd, "."))
		(void)snprintf(cwd, sizeof(cwd), WS_DIR "/%s", wcwd);
	else
		(void)snprintf(cwd, sizeof(cwd), WS_DIR);
	p->command = wrap_command(argv, json_object_get(plan, "envp"), cwd, p->in_fd >= 0);
	if (!p->command) {
		proc_free(p);
		packlib_reply_error(id, "out of memory", "spawn");
		return;
	}
	pthread_mutex_lock(&table_lock);
	memcpy(p->sandbox, l->sandbox, sizeof(p->sandbox));
	memcpy(p->toolbox, l->toolbox, sizeof(p->toolbox));
	(void)snprintf(p->name, sizeof(p->name), "p%u", ++next_proc);
	(void)snprintf(p->session, sizeof(p->session), "cordon-%s-%s", p->name, hex);
	clock_gettime(CLOCK_MONOTONIC, &p->t0);
	{
		json_t *tmo = json_object_get(plan, "timeoutMs");

		if (json_is_integer(tmo) && json_integer_value(tmo) > 0)
			p->deadline_usec = (long long)p->t0.tv_sec * 1000000LL +
					   p->t0.tv_nsec / 1000 + json_integer_value(tmo) * 1000LL;
	}
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
	char session[64] = "", tb[1024] = "", msg[256];
	bool started = false;
	struct rhttp_client *c = NULL;
	int r;

	pthread_mutex_lock(&table_lock);
	for (struct proc *p = procs; p; p = p->next)
		if (name && streq(p->name, name)) {
			atomic_store(&p->kill_signal, sig > 0 ? sig : SIGKILL);
			atomic_store(&p->killed, true);
			started = atomic_load(&p->started);
			memcpy(session, p->session, sizeof(session));
			memcpy(tb, p->toolbox, sizeof(tb));
		}
	pthread_mutex_unlock(&table_lock);
	if (!session[0]) {
		packlib_send(jsonrpc_error_new(id, -32003, "no such sandbox", NULL));
		return;
	}
	if (!started) { /* its thread deletes the session as soon as it exists */
		packlib_reply(id, json_object());
		return;
	}
	/* No per-command signal in the toolbox: the session's group gets SIGTERM, then SIGKILL. */
	r = client_new(10000, &c);
	if (r == 0)
		r = delete_session(c, tb, session, msg, sizeof(msg));
	rhttp_client_free(c);
	if (r < 0)
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
			if (delete_sandbox(c, l->sandbox, msg, sizeof(msg)) < 0)
				failed++;
		pthread_mutex_unlock(&table_lock);
		rhttp_client_free(c);
	}
	if (failed)
		packlib_reply_error(id, "cannot delete every sandbox", "dispose");
	else
		packlib_reply(id, json_object());
}

/* Ends (session DELETE) the processes whose plan's timeout passed. */
static void enforce_timeouts(struct rhttp_client *c)
{
	struct {
		char session[64], tb[1024];
	} due[16];
	size_t n = 0;
	struct timespec now;
	long long t;

	clock_gettime(CLOCK_MONOTONIC, &now);
	t = (long long)now.tv_sec * 1000000LL + now.tv_nsec / 1000;
	pthread_mutex_lock(&table_lock);
	for (struct proc *p = procs; p && n < ELEMENTSOF(due); p = p->next)
		if (p->deadline_usec && t >= p->deadline_usec && !atomic_load(&p->timed_out)) {
			atomic_store(&p->timed_out, true);
			if (!atomic_load(&p->started))
				continue;
			memcpy(due[n].session, p->session, sizeof(due[n].session));
			memcpy(due[n].tb, p->toolbox, sizeof(due[n].tb));
			n++;
		}
	pthread_mutex_unlock(&table_lock);
	for (size_t i = 0; i < n; i++) {
		char msg[256];

		(void)delete_session(c, due[i].tb, due[i].session, msg, sizeof(msg));
	}
}

/* Posts last-activity for each leased sandbox every third of its auto-stop interval (at
 * most every minute); enforces the plans' timeouts. */
static void *keepalive_main(void *ud)
{
	struct rhttp_client *c = NULL;
	time_t last = time(NULL);
	int gen = 0;

	(void)ud;
	while (!atomic_load(&packlib_stopping)) {
		char ids[64][64];
		size_t n = 0;
		long every = auto_stop_min > 0 ? auto_stop_min * 20 : 60;

		sleep_ms(100);
		/* A client with the key configure set (none before it). */
		if (gen != atomic_load(&auth_gen)) {
			gen = atomic_load(&auth_gen);
			c = rhttp_client_free(c);
			if (client_new(20000, &c) < 0)
				c = NULL;
		}
		if (!c)
			continue;
		enforce_timeouts(c);
		if (time(NULL) - last < (every < 60 ? every : 60))
			continue;
		last = time(NULL);
		pthread_mutex_lock(&table_lock);
		for (struct lease *l = leases; l && n < ELEMENTSOF(ids); l = l->next)
			memcpy(ids[n++], l->sandbox, 64);
		pthread_mutex_unlock(&table_lock);
		for (size_t i = 0; i < n; i++) {
			_cleanup_free_ char *path =
				strdup_printf("/sandbox/%s/last-activity", ids[i]);
			struct rhttp_response resp;
			char msg[256];

			if (path && api(c, "POST", path, NULL, true, &resp, msg, sizeof(msg)) == 0)
				rhttp_response_done(&resp);
		}
	}
	rhttp_client_free(c);
	return NULL;
}

int main(void)
{
	static const struct packlib_ops ops = {
		.program = "cordon-daytona-pack",
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
