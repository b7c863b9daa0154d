/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Docker pack (backends/docker/pack.json): runs each command in a container of a
 * Docker-API engine reached over its Unix socket, speaking the pack protocol of
 * docs/PROTOCOL.md §6 on stdin/stdout (one JSON-RPC 2.0 object per line, fds by SCM_RIGHTS).
 *
 *   one-shot spawn   a container of its own: created, attached, started; the answer is
 *                    {sandbox}; a thread streams stdio, waits, removes it and sends `exited`
 *   lease            acquire records it; the lease's first spawn creates one container kept
 *                    running (a long sleep from the image) with the workspace bound, and every
 *                    spawn in it is an `exec`; release removes the container
 *
 * Every container: the workspace at its mount point (`:ro` when read-only), the plan's
 * environment, User = our uid:gid, CapDrop ALL, no-new-privileges, NetworkMode none, the
 * plan's pids/memory limits and rlimits (the settings' defaults where it has no pids or memory
 * limit; defaultCpus as NanoCpus), and the label org.cordon.pack=docker (prepare removes such
 * containers left by an earlier process of this pack on the same engine).
 *
 * The engine's socket: the socket setting, else DOCKER_HOST's unix:// path (the manifest asks
 * for the controller's DOCKER_HOST), else /var/run/docker.sock; always one of the manifest's
 * hostSockets. With the trace setting, each command's steps are timed on the controller's log.
 *
 * Requests use libcurl over the Unix socket; attach and exec-start are hijacked connections we
 * speak HTTP/1.1 on ourselves (Upgrade: tcp), multiplexed 8-byte frames (never a TTY).
 */
#include "config.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "backends/packlib/packlib.h"
#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-jsonrpc.h"

#define LABEL "org.cordon.pack"
#define LABEL_VALUE "docker"
#define LEASE_LABEL "org.cordon.lease"
#define OWNER_LABEL "org.cordon.owner"
#define OWNERS_DIR "owners"
#define MARK_VAR "CORDON_PACK_SANDBOX"
#define MAX_SANDBOXES 256

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static char instance[256] = "unconfigured";
static char image[512];
static char sock_path[108] = "/var/run/docker.sock";
static char api[32] = "";
static unsigned long long serial;
/* Podman (its compat API): an rlimit a container's Ulimits leave out gets podman's own default
 * (1048576 for nofile and nproc when it runs as root), and one above what the service itself may
 * raise to fails the container's start; the defaults its containers get (read at prepare from a
 * container created and removed unstarted) are what it can grant. 0: not known. */
static bool podman;
static json_int_t podman_nofile, podman_nproc;
/* This process's token: its containers carry it, and OWNERS_DIR/<token> in the state directory
 * stays locked while it lives. */
static char owner[33];
static int owner_fd = -1;
/* The settings' defaults for the limits a plan leaves open (0: none), and the trace setting. */
static json_int_t default_memory, default_pids;
static double default_cpus;
static bool trace;

/* With the trace setting: how long each step of a command took, logged when it ends. */
struct trace {
	unsigned long long t0, last;
	struct timespec at; /* t0 on the wall clock: where the request arrived */
	char buf[512];
	size_t n;
};

static void trace_start(struct trace *t)
{
	t->t0 = t->last = now_usec();
	(void)clock_gettime(CLOCK_REALTIME, &t->at);
	t->n = 0;
	t->buf[0] = '\0';
}

/* Record the time since the previous mark as STAGE's (ms). */
static void trace_mark(struct trace *t, const char *stage)
{
	unsigned long long now;
	int k;

	if (!trace)
		return;
	now = now_usec();
	k = snprintf(t->buf + t->n, sizeof(t->buf) - t->n, " %s=%.2f", stage,
		     (double)(now - t->last) / 1000.0);
	if (k > 0 && (size_t)k < sizeof(t->buf) - t->n)
		t->n += (size_t)k;
	t->last = now;
}

static void trace_log(struct trace *t, const char *what, const char *name)
{
	if (trace)
		fprintf(stderr,
			"cordon-docker-pack: trace %s %s at=%lld.%06ld:%s total=%.2f (ms)\n", what,
			name, (long long)t->at.tv_sec, t->at.tv_nsec / 1000, t->buf,
			(double)(now_usec() - t->t0) / 1000.0);
}

/* A command we started: a container (one-shot) or an exec in a lease's container. */
struct sandbox {
	bool used;
	char name[65];	    /* what the controller calls it */
	char container[80]; /* the container it runs in */
	char exec_id[80];   /* set for an exec */
	int killed_signal;  /* kill asked for (0: none) */
	bool timed_out;
	struct trace tr;
};

struct lease {
	bool used;
	char id[65];
	char container[80];
	bool read_only;
};

static struct sandbox sandboxes[MAX_SANDBOXES];
static struct lease leases[64];

static void reply_error(json_t *id, const char *message, json_t *data)
{
	packlib_send(jsonrpc_error_new(id, -32007, message, data));
}

/* ------------------------------------------------------------------- engine requests */

struct buf {
	char *data;
	size_t len;
};

static size_t buf_write(char *p, size_t size, size_t n, void *ud)
{
	struct buf *b = ud;
	size_t k = size * n;
	char *d;

	if (b->len + k > 16u << 20)
		return 0;
	d = realloc(b->data, b->len + k + 1);
	if (!d)
		return 0;
	memcpy(d + b->len, p, k);
	b->data = d;
	b->len += k;
	d[b->len] = '\0';
	return k;
}

/*
 * One request to the engine: METHOD PATH (the API version is prefixed when known) with an
 * optional JSON body. Returns the HTTP status (>= 100) with *out the parsed JSON answer (or
 * NULL), or a negative errno with err saying why. A 4xx/5xx answer's message goes into err.
 */
static long engine(const char *method, const char *path, json_t *body, long timeout_ms,
		   json_t **out, char *err, size_t err_size)
{
	_cleanup_free_ char *url = NULL, *text = NULL;
	struct buf b = { 0 };
	struct curl_slist *hdr = NULL;
	CURL *c = curl_easy_init();
	CURLcode cr;
	long status = 0;

	if (out)
		*out = NULL;
	if (!c)
		return -ENOMEM;
	url = *api ? strdup_printf("http://docker/v%s%s", api, path)
		   : strdup_printf("http://docker%s", path);
	if (!url) {
		curl_easy_cleanup(c);
		return -ENOMEM;
	}
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, sock_path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, buf_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	if (timeout_ms > 0)
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text ? text : "{}");
	} else if (streq(method, "POST"))
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
	cr = curl_easy_perform(c);
	if (cr == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdr);
	if (cr != CURLE_OK) {
		(void)snprintf(err, err_size, "the engine at %s does not answer: %s", sock_path,
			       curl_easy_strerror(cr));
		free(b.data);
		return cr == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
	}
	{
		_cleanup_json_ json_t *j = b.data ? json_loads(b.data, JSON_DECODE_ANY, NULL)
						  : NULL;

		if (status >= 400) {
			const char *m = json_string_value(json_object_get(j, "message"));

			(void)snprintf(err, err_size, "%s", m ? m : (b.data ? b.data : "error"));
		}
		if (out)
			*out = json_incref(j);
	}
	free(b.data);
	return status;
}

/* Remove a container whatever its state. */
static void remove_container(const char *id)
{
	_cleanup_free_ char *path = strdup_printf("/containers/%s?force=1&v=1", id);
	char err[256];

	if (path)
		(void)engine("DELETE", path, NULL, 30000, NULL, err, sizeof(err));
}

/* Choose the API version from GET /version: the engine's own (every version it names is one it
 * accepts), capped at the newest we were written against. */
static int negotiate(char *err, size_t err_size)
{
	_cleanup_json_ json_t *v = NULL;
	long s;
	const char *ver;
	unsigned maj = 0, min = 0;

	*api = '\0';
	s = engine("GET", "/version", NULL, 10000, &v, err, err_size);
	if (s < 0)
		return (int)s;
	ver = json_string_value(json_object_get(v, "ApiVersion"));
	{
		size_t i;
		json_t *c;

		podman = false;
		json_array_foreach(json_object_get(v, "Components"), i, c)
			if (streq_ptr(json_string_value(json_object_get(c, "Name")),
				      "Podman Engine"))
				podman = true;
	}
	if (s != 200 || !ver || sscanf(ver, "%u.%u", &maj, &min) != 2) {
		(void)snprintf(err, err_size, "the engine at %s answers no API version", sock_path);
		return -EPROTO;
	}
	if (maj != 1 || min < 41) {
		(void)snprintf(err, err_size, "the engine's API %s is older than 1.41", ver);
		return -EPROTO;
	}
	if (min > 47)
		min = 47;
	(void)snprintf(api, sizeof(api), "1.%u", min);
	return 0;
}

/* ------------------------------------------------------------------- hijacked streams */

/* POST PATH with BODY on a connection of our own, upgraded to a raw stream. Returns the fd. */
static int hijack(const char *path, const char *body, char *err, size_t err_size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	_cleanup_free_ char *req = NULL;
	char head[4096];
	size_t n = 0;
	int status = 0;

	if (fd < 0)
		return -errno;
	(void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		(void)snprintf(err, err_size, "cannot connect to the engine at %s: %s", sock_path,
			       strerror(e));
		return -e;
	}
	req = strdup_printf("POST /v%s%s HTTP/1.1\r\nHost: docker\r\nConnection: Upgrade\r\n"
			    "Upgrade: tcp\r\nContent-Type: application/json\r\n"
			    "Content-Length: %zu\r\n\r\n%s",
			    api, path, strlen(body), body);
	if (!req)
		return -ENOMEM;
	if (loop_write(fd, req, strlen(req)) < 0) {
		(void)snprintf(err, err_size, "the engine closed the connection");
		return -EPIPE;
	}
	/* The answer's head, a byte at a time: what follows it is the stream. */
	while (n < sizeof(head) - 1) {
		ssize_t k = read(fd, head + n, 1);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			(void)snprintf(err, err_size, "the engine closed the connection");
			return -EPIPE;
		}
		n++;
		if (n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	head[n] = '\0';
	if (sscanf(head, "HTTP/1.%*d %d", &status) != 1 || (status != 101 && status != 200)) {
		/* The refusal's reason: its JSON body's message (Content-Length bytes, at most what
		 * head still holds). */
		const char *cl = strcasestr(head, "\r\nContent-Length:");
		size_t want = cl ? strtoul(cl + 17, NULL, 10) : 0, m = 0;
		_cleanup_json_ json_t *j = NULL;
		const char *msg;

		if (want > sizeof(head) - 1)
			want = sizeof(head) - 1;
		while (m < want) {
			ssize_t k = read(fd, head + m, want - m);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			m += (size_t)k;
		}
		j = json_loadb(head, m, 0, NULL);
		msg = json_string_value(json_object_get(j, "message"));
		if (msg)
			(void)snprintf(err, err_size, "the engine refused the stream (HTTP %d): %s",
				       status, msg);
		else
			(void)snprintf(err, err_size, "the engine refused the stream (HTTP %d)",
				       status);
		return -EPROTO;
	}
	return TAKE_FD(fd);
}

/*
 * Copy in_fd to the stream and the stream's frames to out_fd/err_fd until the stream ends.
 * deadline (monotonic usec, 0: none) reached: returns -ETIMEDOUT.
 */
static int pump(int s, int in_fd, int out_fd, int err_fd, uint64_t deadline)
{
	unsigned char hdr[8];
	size_t hdr_n = 0, left = 0;
	int target = -1;
	char buf[65536];

	if (in_fd < 0)
		(void)shutdown(s, SHUT_WR);
	for (;;) {
		struct pollfd p[2] = { { .fd = s, .events = POLLIN },
				       { .fd = in_fd, .events = POLLIN } };
		int timeout = -1, k;

		if (deadline) {
			uint64_t now = now_usec();

			if (now >= deadline)
				return -ETIMEDOUT;
			timeout = (int)((deadline - now) / 1000) + 1;
		}
		k = poll(p, in_fd >= 0 ? 2 : 1, timeout);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (in_fd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t m = read(in_fd, buf, sizeof(buf));

			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0 || loop_write(s, buf, (size_t)m) < 0) {
				(void)shutdown(s, SHUT_WR);
				in_fd = -1;
			}
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t m;

			if (hdr_n < 8)
				m = read(s, hdr + hdr_n, 8 - hdr_n);
			else
				m = read(s, buf, left < sizeof(buf) ? left : sizeof(buf));
			if (m < 0 && errno == EINTR)
				continue;
			if (m < 0)
				return -errno;
			if (m == 0)
				return 0;
			if (hdr_n < 8) {
				hdr_n += (size_t)m;
				if (hdr_n == 8) {
					left = (size_t)hdr[4] << 24 | (size_t)hdr[5] << 16 |
					       (size_t)hdr[6] << 8 | hdr[7];
					target = hdr[0] == 2 ? err_fd : out_fd;
					if (left == 0)
						hdr_n = 0;
				}
				continue;
			}
			if (target >= 0 && loop_write(target, buf, (size_t)m) < 0)
				target = -1; /* the reader went: keep draining */
			left -= (size_t)m;
			if (left == 0)
				hdr_n = 0;
		}
	}
}

/* ------------------------------------------------------------------- the table */

static struct sandbox *sandbox_find(const char *name)
{
	for (size_t i = 0; i < MAX_SANDBOXES; i++)
		if (sandboxes[i].used && streq(sandboxes[i].name, name))
			return &sandboxes[i];
	return NULL;
}

static struct lease *lease_find(const char *id)
{
	for (size_t i = 0; i < ELEMENTSOF(leases); i++)
		if (leases[i].used && streq(leases[i].id, id))
			return &leases[i];
	return NULL;
}

/* ------------------------------------------------------------------- containers */

/* The Docker container config of a plan: Env, WorkingDir, User, limits and labels. */
static json_t *container_config(json_t *plan, json_t *ws, bool read_only, const char *lease,
				bool one_shot, bool stdin_open)
{
	json_t *cfg, *host, *binds = json_array(), *env = json_array();
	json_t *cg = json_object_get(plan, "cgroup");
	const char *host_path = json_string_value(json_object_get(ws, "hostPath"));
	const char *mount = json_string_value(json_object_get(ws, "mountPoint"));
	char user[64];
	size_t i;
	json_t *v;

	(void)snprintf(user, sizeof(user), "%u:%u", (unsigned)getuid(), (unsigned)getgid());
	/* Mounts, not Binds: a path is never parsed (a ':' in it is a name), and a missing source
	 * is an error rather than a directory the engine creates. */
	if (host_path && mount)
		json_array_append_new(binds,
				      json_pack("{s:s,s:s,s:s,s:b}", "Type", "bind", "Source",
						host_path, "Target", mount, "ReadOnly", read_only));
	if (one_shot)
		json_array_foreach(json_object_get(plan, "envp"), i, v)
			json_array_append(env, v);
	/* Init: the engine's init is PID 1 (a command's own signals reach it; orphans are
	 * reaped). */
	host = json_pack("{s:o,s:s,s:[s],s:[s],s:b}", "Mounts", binds, "NetworkMode", "none",
			 "CapDrop", "ALL", "SecurityOpt", "no-new-privileges", "Init", true);
	if (json_is_integer(json_object_get(cg, "pidsMax")))
		json_object_set(host, "PidsLimit", json_object_get(cg, "pidsMax"));
	if (json_is_integer(json_object_get(cg, "memoryMaxBytes"))) {
		json_object_set(host, "Memory", json_object_get(cg, "memoryMaxBytes"));
		json_object_set(host, "MemorySwap", json_object_get(cg, "memoryMaxBytes"));
	}
	/* The settings' defaults, only where the plan has no limit of its own: a plan's limit
	 * always wins, so a default never loosens one. The plan has no CPU bandwidth at all
	 * (docs/PROTOCOL.md §1.3): defaultCpus is the only NanoCpus. */
	if (!json_is_integer(json_object_get(cg, "pidsMax")) && default_pids > 0)
		json_object_set_new(host, "PidsLimit", json_integer(default_pids));
	if (!json_is_integer(json_object_get(cg, "memoryMaxBytes")) && default_memory > 0) {
		json_object_set_new(host, "Memory", json_integer(default_memory));
		json_object_set_new(host, "MemorySwap", json_integer(default_memory));
	}
	if (default_cpus > 0)
		json_object_set_new(host, "NanoCpus",
				    json_integer((json_int_t)(default_cpus * 1e9 + 0.5)));
	/* The plan's rlimits (soft = hard) under the same names; the engine knows no "as". */
	{
		json_t *ul = json_array(), *lim;
		const char *key;

		json_t *rl = json_object_get(plan, "rlimits");
		json_int_t n;

		json_object_foreach(rl, key, lim) {
			if (!json_is_integer(lim) || streq(key, "as"))
				continue;
			n = json_integer_value(lim);
			/* Podman: never above what it can grant (a stricter limit, not a wider). */
			if (streq(key, "nofile") && podman_nofile > 0 && n > podman_nofile)
				n = podman_nofile;
			if (streq(key, "nproc") && podman_nproc > 0 && n > podman_nproc)
				n = podman_nproc;
			json_array_append_new(ul, json_pack("{s:s,s:I,s:I}", "Name", key, "Soft", n,
							    "Hard", n));
		}
		/* Podman: nofile and nproc always named, else its own defaults are asked for. */
		if (podman && podman_nofile > 0 && !json_is_integer(json_object_get(rl, "nofile")))
			json_array_append_new(ul,
					      json_pack("{s:s,s:I,s:I}", "Name", "nofile", "Soft",
							podman_nofile, "Hard", podman_nofile));
		if (podman && podman_nproc > 0 && !json_is_integer(json_object_get(rl, "nproc")))
			json_array_append_new(ul,
					      json_pack("{s:s,s:I,s:I}", "Name", "nproc", "Soft",
							podman_nproc, "Hard", podman_nproc));
		json_object_set_new(host, "Ulimits", ul);
	}
	cfg = json_pack("{s:s,s:s,s:o,s:o,s:b,s:b,s:b,s:b,s:b,s:b,s:{s:s}}", "Image", image, "User",
			user, "Env", env, "HostConfig", host, "Tty", false, "OpenStdin", stdin_open,
			"StdinOnce", stdin_open, "AttachStdin", stdin_open, "AttachStdout", true,
			"AttachStderr", true, "Labels", LABEL, LABEL_VALUE);
	json_object_set_new(json_object_get(cfg, "Labels"), OWNER_LABEL, json_string(owner));
	if (lease)
		json_object_set_new(json_object_get(cfg, "Labels"), LEASE_LABEL,
				    json_string(lease));
	return cfg;
}

/* The working directory inside the container: the workspace's cwd under its mount point, or
 * the plan's. */
static char *working_dir(json_t *plan, json_t *ws)
{
	const char *mount = json_string_value(json_object_get(ws, "mountPoint"));
	const char *cwd = json_string_value(json_object_get(ws, "cwd"));

	if (mount && cwd)
		return streq(cwd, ".") ? strdup(mount) : strdup_printf("%s/%s", mount, cwd);
	if (json_string_value(json_object_get(plan, "cwd")))
		return strdup(json_string_value(json_object_get(plan, "cwd")));
	return strdup("/");
}

/* An engine error at start as the controller's spawn error: a missing executable is
 * exec-failed errno 2 (exit 127). */
static json_t *start_error_data(const char *msg)
{
	if (strstr(msg, "executable file not found") || strstr(msg, "no such file or directory"))
		return json_pack("{s:s,s:i,s:s}", "code", "exec-failed", "errno", ENOENT, "step",
				 "start");
	if (strstr(msg, "permission denied"))
		return json_pack("{s:s,s:i,s:s}", "code", "exec-failed", "errno", EACCES, "step",
				 "start");
	return json_pack("{s:s,s:s}", "code", "setup-failed", "step", "engine");
}

/*
 * Signal a command running as an exec in a lease's container: the engine has no kill for an
 * exec, so a detached exec of the image's shell signals every process whose environment carries
 * the command's mark (the command and what it started).
 */
static int kill_exec(const char *container, const char *name, int sig, char *err, size_t err_size)
{
	_cleanup_json_ json_t *cfg = NULL, *out = NULL;
	_cleanup_free_ char *script = NULL, *path = NULL;
	const char *eid;
	char user[64];
	long s;

	(void)snprintf(user, sizeof(user), "%u:%u", (unsigned)getuid(), (unsigned)getgid());
	script = strdup_printf("for p in /proc/[0-9]*; do tr '\\0' '\\n' <$p/environ 2>/dev/null | "
			       "grep -qx '%s=%s' && kill -%d ${p#/proc/}; done; exit 0",
			       MARK_VAR, name, sig);
	if (!script)
		return -ENOMEM;
	cfg = json_pack("{s:[s,s,s],s:s,s:b,s:b}", "Cmd", "/bin/sh", "-c", script, "User", user,
			"AttachStdout", false, "AttachStderr", false);
	path = strdup_printf("/containers/%s/exec", container);
	s = path ? engine("POST", path, cfg, 10000, &out, err, err_size) : -ENOMEM;
	eid = json_string_value(json_object_get(out, "Id"));
	if (s != 201 || !eid)
		return s < 0 ? (int)s : -EIO;
	free(path);
	path = strdup_printf("/exec/%s/start", eid);
	json_decref(cfg);
	cfg = json_pack("{s:b,s:b}", "Detach", true, "Tty", false);
	s = path ? engine("POST", path, cfg, 10000, NULL, err, err_size) : -ENOMEM;
	return s == 200 ? 0 : s < 0 ? (int)s : -EIO;
}

struct run {
	struct sandbox *sb;
	int sock;
	int fds[3];
	uint64_t started, deadline;
};

static void *run_thread(void *ud)
{
	struct run *run = ud;
	struct sandbox *sb = run->sb;
	_cleanup_json_ json_t *w = NULL, *ins = NULL;
	_cleanup_free_ char *path = NULL;
	char err[512] = "";
	int r, code = 0, sig = 0;
	const char *reason = "exited";
	bool gone = false;
	int polls = 0;

	r = pump(run->sock, run->fds[0], run->fds[1], run->fds[2], run->deadline);
	trace_mark(&sb->tr, "stream");
	if (r == -ETIMEDOUT) {
		sb->timed_out = true;
		if (*sb->exec_id)
			r = kill_exec(sb->container, sb->name, SIGKILL, err, sizeof(err));
		else {
			path = strdup_printf("/containers/%s/kill?signal=KILL", sb->container);
			if (path)
				(void)engine("POST", path, NULL, 10000, NULL, err, sizeof(err));
			free(path);
			path = NULL;
		}
		r = pump(run->sock, -1, -1, -1, now_usec() + 10000000);
		/* An exec that would not die: its lease's container goes with it. */
		if (r == -ETIMEDOUT && *sb->exec_id)
			remove_container(sb->container);
	}
	safe_close(run->sock);
	if (*sb->exec_id) {
		/* The stream can end a moment before the engine has the exec's exit code. */
		path = strdup_printf("/exec/%s/json", sb->exec_id);
		for (int i = 0; i < 500; i++) {
			json_decref(ins);
			ins = NULL;
			if (!path ||
			    engine("GET", path, NULL, 10000, &ins, err, sizeof(err)) != 200) {
				gone = true;
				break;
			}
			if (!json_is_true(json_object_get(ins, "Running")))
				break;
			polls++;
			(void)usleep(10000);
		}
		if (!gone)
			code = (int)json_integer_value(json_object_get(ins, "ExitCode"));
		trace_mark(&sb->tr, "exec-inspect");
		if (trace && polls) {
			int k = snprintf(sb->tr.buf + sb->tr.n, sizeof(sb->tr.buf) - sb->tr.n,
					 " polls=%d", polls);

			if (k > 0 && (size_t)k < sizeof(sb->tr.buf) - sb->tr.n)
				sb->tr.n += (size_t)k;
		}
	} else {
		/* Podman's compat wait polls the container's state at a long interval (≈ 0.3 s
		 * median added here): its own API's wait takes the interval, and answers the exit
		 * status as a bare integer. The stream has ended, so the polling is the tail's. */
		path = podman ? strdup_printf("/libpod/containers/%s/wait?condition=exited&"
					      "condition=stopped&interval=10ms",
					      sb->container)
			      : strdup_printf("/containers/%s/wait", sb->container);
		if (!path || engine("POST", path, NULL, 30000, &w, err, sizeof(err)) != 200 ||
		    (podman && !json_is_integer(w)))
			gone = true;
		else
			code = (int)json_integer_value(podman ? w
							      : json_object_get(w, "StatusCode"));
		trace_mark(&sb->tr, "wait");
		free(path);
		path = strdup_printf("/containers/%s/json", sb->container);
		/* Only a SIGKILL (status 137) can be the OOM killer's: no inspect otherwise. */
		if (!gone && code == 128 + SIGKILL && path &&
		    engine("GET", path, NULL, 10000, &ins, err, sizeof(err)) == 200 &&
		    json_is_true(json_object_get(json_object_get(ins, "State"), "OOMKilled")))
			reason = "memory";
		if (code == 128 + SIGKILL)
			trace_mark(&sb->tr, "inspect");
		remove_container(sb->container);
		trace_mark(&sb->tr, "remove");
	}
	if (gone) {
		/* The engine went away mid-run: the command's end is unknown. */
		fprintf(stderr, "cordon-docker-pack: %s: %s\n", sb->name, err);
		code = 255;
		sig = 9;
		reason = "killed";
	} else if (code > 128 && code <= 128 + 64) {
		sig = code - 128;
		code = 0;
		if (!streq(reason, "memory"))
			reason = "signaled";
	}
	if (sb->timed_out)
		reason = "timeout", sig = 9, code = 0;
	else if (sb->killed_signal == SIGKILL && !streq(reason, "memory"))
		reason = "killed";
	packlib_send(jsonrpc_notification_new(
		"exited", json_pack("{s:s,s:i,s:i,s:s,s:I}", "sandbox", sb->name, "exitCode", code,
				    "signal", sig, "reason", reason, "durationUsec",
				    (json_int_t)(now_usec() - run->started))));
	trace_mark(&sb->tr, "exited");
	trace_log(&sb->tr, *sb->exec_id ? "exec" : "one-shot", sb->name);
	for (int i = 0; i < 3; i++)
		safe_close(run->fds[i]);
	pthread_mutex_lock(&table_lock);
	sb->used = false;
	pthread_mutex_unlock(&table_lock);
	free(run);
	return NULL;
}

/* The lease's container, created at its first spawn (acquire does not name the host path). */
static int lease_container(struct lease *l, json_t *plan, json_t *ws, char *err, size_t err_size)
{
	_cleanup_json_ json_t *cfg = NULL, *out = NULL;
	_cleanup_free_ char *path = NULL;
	const char *id;
	long s;

	if (*l->container)
		return 0;
	cfg = container_config(plan, ws, l->read_only, l->id, false, false);
	json_object_set_new(cfg, "Cmd", json_pack("[s,s]", "sleep", "2147483647"));
	json_object_set_new(cfg, "Entrypoint", json_pack("[]"));
	json_object_set_new(cfg, "WorkingDir", json_string("/"));
	json_object_set_new(cfg, "AttachStdout", json_false());
	json_object_set_new(cfg, "AttachStderr", json_false());
	s = engine("POST", "/containers/create", cfg, 30000, &out, err, err_size);
	if (s != 201)
		return s < 0 ? (int)s : -EIO;
	id = json_string_value(json_object_get(out, "Id"));
	if (!id)
		return -EPROTO;
	(void)snprintf(l->container, sizeof(l->container), "%s", id);
	path = strdup_printf("/containers/%s/start", l->container);
	s = engine("POST", path, NULL, 30000, NULL, err, err_size);
	if (s != 204 && s != 304) {
		remove_container(l->container);
		*l->container = '\0';
		return s < 0 ? (int)s : -EIO;
	}
	return 0;
}

static void do_spawn(json_t *id, json_t *params, int *fds, size_t n_fds)
{
	json_t *plan = json_object_get(params, "plan"), *ws = json_object_get(params, "workspace");
	json_t *stdio = json_object_get(params, "stdio");
	const char *lease_id = json_string_value(json_object_get(params, "lease"));
	const char *access = json_string_value(json_object_get(ws, "access"));
	_cleanup_json_ json_t *cfg = NULL, *out = NULL;
	_cleanup_free_ char *path = NULL, *wd = NULL;
	struct sandbox *sb = NULL;
	struct lease *l = NULL;
	struct run *run;
	pthread_t t;
	char err[1024] = "";
	int which[3];
	long s;
	const char *cid;

	if (!*image) {
		reply_error(id, "no image configured",
			    json_pack("{s:s,s:s}", "code", "setup-failed", "step", "configure"));
		return;
	}
	for (int i = 0; i < 3; i++) {
		static const char *const names[] = { "stdin", "stdout", "stderr" };
		json_t *v = json_object_get(stdio, names[i]);

		which[i] = json_is_integer(v) && json_integer_value(v) >= 0 &&
					   (size_t)json_integer_value(v) < n_fds
				   ? (int)json_integer_value(v)
				   : -1;
	}
	if (lease_id && !(l = lease_find(lease_id))) {
		reply_error(id, "no such lease",
			    json_pack("{s:s,s:s}", "code", "setup-failed", "step", "lease"));
		return;
	}
	pthread_mutex_lock(&table_lock);
	for (size_t i = 0; i < MAX_SANDBOXES && !sb; i++)
		if (!sandboxes[i].used) {
			sb = &sandboxes[i];
			*sb = (struct sandbox){ .used = true };
			(void)snprintf(sb->name, sizeof(sb->name), "d%.12s-%llu", owner, ++serial);
			trace_start(&sb->tr);
		}
	pthread_mutex_unlock(&table_lock);
	if (!sb) {
		reply_error(id, "too many commands running",
			    json_pack("{s:s,s:s}", "code", "limit", "step", "spawn"));
		return;
	}
	wd = working_dir(plan, ws);
	if (l && !l->read_only && streq_ptr(access, "read-only")) {
		/* The lease's container has the workspace bound read-write, and an exec cannot
		 * remount it: refused rather than run with more than it asked for. */
		reply_error(id,
			    "this backend cannot run a read-only command in a read-write lease: "
			    "acquire a read-only lease for it",
			    json_pack("{s:s,s:s,s:s}", "code", "setup-failed", "step", "lease",
				      "field", "filesystem.workspace.access"));
		goto free_sb;
	}
	if (l) {
		json_t *env = json_array(), *v;
		size_t i;

		if (!*l->container) {
			if (lease_container(l, plan, ws, err, sizeof(err)) < 0)
				goto engine_failed;
			trace_mark(&sb->tr, "lease-container");
		}
		json_array_foreach(json_object_get(plan, "envp"), i, v)
			json_array_append(env, v);
		/* The mark kill() finds the command's processes by (an exec has no kill of its
		 * own). */
		{
			_cleanup_free_ char *mark = strdup_printf("%s=%s", MARK_VAR, sb->name);

			json_array_append_new(env, json_string(mark ? mark : ""));
		}
		cfg = json_pack("{s:O,s:o,s:s,s:s,s:b,s:b,s:b,s:b}", "Cmd",
				json_object_get(plan, "argv"), "Env", env, "WorkingDir",
				wd ? wd : "/", "User", "", "AttachStdin", which[0] >= 0,
				"AttachStdout", true, "AttachStderr", true, "Tty", false);
		{
			char user[64];

			(void)snprintf(user, sizeof(user), "%u:%u", (unsigned)getuid(),
				       (unsigned)getgid());
			json_object_set_new(cfg, "User", json_string(user));
		}
		path = strdup_printf("/containers/%s/exec", l->container);
		trace_mark(&sb->tr, "config");
		s = engine("POST", path, cfg, 30000, &out, err, sizeof(err));
		if (s != 201)
			goto engine_failed;
		trace_mark(&sb->tr, "exec-create");
		cid = json_string_value(json_object_get(out, "Id"));
		(void)snprintf(sb->container, sizeof(sb->container), "%s", l->container);
		(void)snprintf(sb->exec_id, sizeof(sb->exec_id), "%s", cid ? cid : "");
		free(path);
		path = strdup_printf("/exec/%s/start", sb->exec_id);
		run = calloc(1, sizeof(*run));
		if (!run)
			goto engine_failed;
		run->sock = hijack(path, "{\"Detach\":false,\"Tty\":false}", err, sizeof(err));
		if (run->sock < 0) {
			free(run);
			goto engine_failed;
		}
		trace_mark(&sb->tr, "exec-start");
	} else {
		cfg = container_config(plan, ws, streq_ptr(access, "read-only"), NULL, true,
				       which[0] >= 0);
		json_object_set(cfg, "Cmd", json_object_get(plan, "argv"));
		json_object_set_new(cfg, "Entrypoint", json_pack("[]"));
		json_object_set_new(cfg, "WorkingDir", json_string(wd ? wd : "/"));
		trace_mark(&sb->tr, "config");
		s = engine("POST", "/containers/create", cfg, 30000, &out, err, sizeof(err));
		if (s != 201)
			goto engine_failed;
		trace_mark(&sb->tr, "create");
		cid = json_string_value(json_object_get(out, "Id"));
		(void)snprintf(sb->container, sizeof(sb->container), "%s", cid ? cid : "");
		path = strdup_printf("/containers/%s/attach?stream=1&stdin=%d&stdout=1&stderr=1",
				     sb->container, which[0] >= 0);
		run = calloc(1, sizeof(*run));
		if (!run) {
			remove_container(sb->container);
			goto engine_failed;
		}
		run->sock = hijack(path, "", err, sizeof(err));
		trace_mark(&sb->tr, "attach");
		free(path);
		path = strdup_printf("/containers/%s/start", sb->container);
		if (run->sock < 0 ||
		    (s = engine("POST", path, NULL, 30000, NULL, err, sizeof(err))) != 204) {
			safe_close(run->sock);
			free(run);
			remove_container(sb->container);
			reply_error(id, err, start_error_data(err));
			goto free_sb;
		}
		trace_mark(&sb->tr, "start");
	}
	run->sb = sb;
	run->started = now_usec();
	if (json_integer_value(json_object_get(plan, "timeoutMs")) > 0)
		run->deadline =
			run->started +
			(uint64_t)json_integer_value(json_object_get(plan, "timeoutMs")) * 1000;
	for (int i = 0; i < 3; i++) {
		run->fds[i] = which[i] >= 0 ? fcntl(fds[which[i]], F_DUPFD_CLOEXEC, 3) : -1;
	}
	packlib_reply(id, json_pack("{s:s}", "sandbox", sb->name));
	trace_mark(&sb->tr, "reply");
	if (pthread_create(&t, NULL, run_thread, run) != 0) {
		run_thread(run);
		return;
	}
	pthread_detach(t);
	return;

engine_failed:
	reply_error(id, *err ? err : "the engine failed",
		    json_pack("{s:s,s:s}", "code", "setup-failed", "step", "engine"));
free_sb:
	pthread_mutex_lock(&table_lock);
	sb->used = false;
	pthread_mutex_unlock(&table_lock);
}

static void do_kill(json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "sandbox"));
	int sig = (int)json_integer_value(json_object_get(params, "signal"));
	_cleanup_free_ char *path = NULL;
	char container[80] = "", exec_id[80] = "", err[512] = "";
	struct sandbox *sb;
	long s;
	int r;

	pthread_mutex_lock(&table_lock);
	sb = name ? sandbox_find(name) : NULL;
	if (sb) {
		sb->killed_signal = sig ? sig : SIGKILL;
		(void)snprintf(container, sizeof(container), "%s", sb->container);
		(void)snprintf(exec_id, sizeof(exec_id), "%s", sb->exec_id);
	}
	pthread_mutex_unlock(&table_lock);
	if (!sb) {
		packlib_send(jsonrpc_error_new(id, -32003, "no such sandbox", NULL));
		return;
	}
	if (*exec_id) {
		r = kill_exec(container, name, sig ? sig : SIGKILL, err, sizeof(err));
		if (r < 0)
			reply_error(id, *err ? err : "kill failed", NULL);
		else
			packlib_reply(id, json_object());
		return;
	}
	path = strdup_printf("/containers/%s/kill?signal=%d", container, sig ? sig : SIGKILL);
	s = path ? engine("POST", path, NULL, 10000, NULL, err, sizeof(err)) : -ENOMEM;
	if (s == 204 || s == 409) /* 409: not running any more */
		packlib_reply(id, json_object());
	else
		reply_error(id, *err ? err : "kill failed", NULL);
}

static void do_acquire(json_t *id, json_t *params, int *fds, size_t n_fds)
{
	const char *lease = json_string_value(json_object_get(params, "lease"));
	json_t *ws = json_object_get(params, "workspace");
	struct lease *l = NULL;

	if (!lease || strlen(lease) >= sizeof(l->id)) {
		reply_error(id, "acquire needs a lease id", NULL);
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(leases) && !l; i++)
		if (!leases[i].used)
			l = &leases[i];
	if (!l) {
		reply_error(id, "too many leases", NULL);
		return;
	}
	*l = (struct lease){ .used = true };
	(void)snprintf(l->id, sizeof(l->id), "%s", lease);
	l->read_only = streq_ptr(json_string_value(json_object_get(ws, "access")), "read-only");
	packlib_reply(id, json_object());
}

static void do_release(json_t *id, json_t *params, int *fds, size_t n_fds)
{
	struct lease *l = lease_find(json_string_value(json_object_get(params, "lease")) ?: "");

	if (l) {
		if (*l->container)
			remove_container(l->container);
		l->used = false;
	}
	packlib_reply(id, json_object());
}

static bool token_ok(const char *t)
{
	size_t n = t ? strlen(t) : 0;

	if (n == 0 || n >= sizeof(owner))
		return false;
	for (; *t; t++)
		if (!((*t >= '0' && *t <= '9') || (*t >= 'a' && *t <= 'f')))
			return false;
	return true;
}

/* Whether the process of this token has ended: its file in OWNERS_DIR (of this state
 * directory: another user's or another controller's containers are never ours to judge) is
 * not locked. */
static bool owner_dead(int dir, const char *token)
{
	_cleanup_close_ int fd = -1;

	if (!token_ok(token) || streq(token, owner))
		return false;
	fd = openat(dir, token, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
}

/* Containers left by an earlier process of this pack (of this state directory) that has
 * ended: removed, with its token's file. Those of a live process (another instance still
 * serving its commands or leases) stay. */
static int remove_leftovers(char *err, size_t err_size)
{
	_cleanup_json_ json_t *list = NULL;
	_cleanup_close_ int dir = open(OWNERS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	long s = engine("GET",
			"/containers/json?all=1&filters=%7B%22label%22%3A%5B%22" LABEL
			"%3D" LABEL_VALUE "%22%5D%7D",
			NULL, 30000, &list, err, err_size);
	size_t i;
	json_t *c;
	DIR *d;
	struct dirent *de;

	if (s != 200)
		return s < 0 ? (int)s : -EIO;
	if (dir < 0)
		return 0;
	json_array_foreach(list, i, c) {
		const char *cid = json_string_value(json_object_get(c, "Id"));
		const char *tok = json_string_value(
			json_object_get(json_object_get(c, "Labels"), OWNER_LABEL));

		if (cid && owner_dead(dir, tok)) {
			fprintf(stderr,
				"cordon-docker-pack: removing container %.12s left behind\n", cid);
			remove_container(cid);
		}
	}
	d = fdopendir(fcntl(dir, F_DUPFD_CLOEXEC, 3));
	while (d && (de = readdir(d)))
		if (owner_dead(dir, de->d_name))
			(void)unlinkat(dir, de->d_name, 0);
	if (d)
		closedir(d);
	return 0;
}

/* Our token, and its file locked for as long as we live. */
static int owner_init(void)
{
	unsigned char rnd[16];
	_cleanup_close_ int dir = -1;

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -EIO;
	for (size_t i = 0; i < sizeof(rnd); i++)
		(void)snprintf(owner + 2 * i, 3, "%02x", rnd[i]);
	if (mkdir(OWNERS_DIR, 0700) < 0 && errno != EEXIST)
		return -errno;
	dir = open(OWNERS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	owner_fd = openat(dir, owner, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (owner_fd < 0)
		return -errno;
	return flock(owner_fd, LOCK_EX | LOCK_NB) < 0 ? -errno : 0;
}

/* Whether the engine answers and has the image; why not in err. */
static int check_engine(char *err, size_t err_size)
{
	_cleanup_json_ json_t *img = NULL;
	_cleanup_free_ char *path = NULL;
	long s;
	int r;

	if (!*image) {
		(void)snprintf(err, err_size, "no image configured (setting \"image\")");
		return -EINVAL;
	}
	r = negotiate(err, err_size);
	if (r < 0)
		return r;
	path = strdup_printf("/images/%s/json", image);
	s = path ? engine("GET", path, NULL, 10000, &img, err, err_size) : -ENOMEM;
	if (s == 404) {
		(void)snprintf(err, err_size, "the engine has no image \"%s\" (prepare pulls it)",
			       image);
		return -ENOENT;
	}
	if (s != 200)
		return s < 0 ? (int)s : -EIO;
	return 0;
}

/* A pull's answer: JSON objects one after another (progress, then an error or the end). */
struct pull {
	char line[8192];
	size_t len;
	char last[512];
	char error[512];
};

static void pull_line(struct pull *p)
{
	_cleanup_json_ json_t *j = json_loads(p->line, 0, NULL);
	const char *st = json_string_value(json_object_get(j, "status"));
	const char *e = json_string_value(json_object_get(j, "error"));
	/* A refused request's answer is one object with "message". */
	const char *m = json_string_value(json_object_get(j, "message"));
	const char *lid = json_string_value(json_object_get(j, "id"));
	char msg[512];

	if (e || m) {
		(void)snprintf(p->error, sizeof(p->error), "%s", e ? e : m);
		return;
	}
	if (!st)
		return;
	/* A layer's byte counts change many times a second: one line per status of a layer. */
	(void)snprintf(msg, sizeof(msg), "%s%s%s", lid ? lid : "", lid ? ": " : "", st);
	if (streq(msg, p->last))
		return;
	(void)snprintf(p->last, sizeof(p->last), "%s", msg);
	fprintf(stderr, "cordon-docker-pack: pulling %s: %s\n", image, msg);
	/* And to the user's event stream (backend-progress). */
	{
		char line[600];

		(void)snprintf(line, sizeof(line), "pulling %s: %s", image, msg);
		packlib_send(
			jsonrpc_notification_new("progress", json_pack("{s:s}", "message", line)));
	}
}

static size_t pull_write(char *d, size_t size, size_t n, void *ud)
{
	struct pull *p = ud;
	size_t k = size * n;

	for (size_t i = 0; i < k; i++) {
		if (d[i] == '\n' || d[i] == '\r') {
			p->line[p->len] = '\0';
			if (p->len)
				pull_line(p);
			p->len = 0;
		} else if (p->len + 1 < sizeof(p->line))
			p->line[p->len++] = d[i];
	}
	return k;
}

/*
 * Pull the configured image (POST /images/create), its progress logged line by line on stderr
 * (the controller's log) and sent as progress notifications (the user's events). Bounded by prepare's
 * own timeout; any failure names the image.
 */
static int pull_image(char *err, size_t err_size)
{
	_cleanup_free_ char *url = NULL;
	struct pull *p = calloc(1, sizeof(*p));
	CURL *c = curl_easy_init();
	char *q = NULL;
	CURLcode cr = CURLE_OUT_OF_MEMORY;
	long status = 0;

	if (c && p)
		q = curl_easy_escape(c, image, 0);
	if (q)
		url = strdup_printf("http://docker/v%s/images/create?fromImage=%s", api, q);
	if (url) {
		fprintf(stderr, "cordon-docker-pack: pulling %s\n", image);
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, sock_path);
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, pull_write);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, p);
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 110000L);
		cr = curl_easy_perform(c);
		if (cr == CURLE_OK)
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		if (p->len) {
			p->line[p->len] = '\0';
			pull_line(p);
		}
	}
	if (cr != CURLE_OK)
		(void)snprintf(err, err_size, "the image \"%s\" could not be pulled: %s", image,
			       cr == CURLE_OPERATION_TIMEDOUT
				       ? "not done within the preparation's time (pull it on the "
					 "engine first)"
				       : curl_easy_strerror(cr));
	else if (status != 200 || *p->error)
		(void)snprintf(err, err_size, "the image \"%s\" could not be pulled: %s", image,
			       *p->error ? p->error : "the engine refused the pull");
	if (cr == CURLE_OK && status == 200 && !*p->error)
		fprintf(stderr, "cordon-docker-pack: pulled %s\n", image);
	else
		fprintf(stderr, "cordon-docker-pack: %s\n", err);
	curl_free(q);
	if (c)
		curl_easy_cleanup(c);
	status = cr == CURLE_OK && status == 200 && !*p->error ? 0 : -ENOENT;
	free(p);
	return (int)status;
}

/*
 * A number setting: absent or null is 0 (none); otherwise 0, or within [min, max] (an integer
 * when integral is set). Why not in err, naming the setting.
 */
static int number_setting(json_t *settings, const char *key, double min, double max, bool integral,
			  double *ret, char *err, size_t err_size)
{
	json_t *v = json_object_get(settings, key);
	double d;

	*ret = 0;
	if (!v || json_is_null(v))
		return 0;
	d = json_number_value(v);
	if (!json_is_number(v) || (d != 0 && (d < min || d > max)) ||
	    (integral && d != (double)(json_int_t)d)) {
		(void)snprintf(err, err_size,
			       "settings.%s: expected 0 (none) or %s from %.16g to %.16g", key,
			       integral ? "an integer" : "a number", min, max);
		return -EINVAL;
	}
	*ret = d;
	return 0;
}

/*
 * Whether PATH is a host socket this pack's manifest (pack.json beside our executable) asks
 * for: the only sockets its process can reach (each bound in only when the admin floor's
 * packSockets lists it too). Returns 1 (listed), 0 (not: the list in `listed`), or a negative
 * errno when the manifest cannot be read.
 */
static int manifest_lists(const char *path, char *listed, size_t listed_size)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	_cleanup_free_ char *manifest = NULL;
	_cleanup_json_ json_t *m = NULL;
	size_t i, len = 0;
	json_t *v;
	char *slash;

	if (n <= 0)
		return -errno;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	manifest = strdup_printf("%s/pack.json", exe);
	m = manifest ? json_load_file(manifest, 0, NULL) : NULL;
	if (!m)
		return -ENOENT;
	*listed = '\0';
	json_array_foreach(json_object_get(m, "hostSockets"), i, v) {
		const char *p = json_string_value(json_object_get(v, "path"));

		if (streq_ptr(p, path))
			return 1;
		if (p && len < listed_size) {
			int k = snprintf(listed + len, listed_size - len, "%s%s", len ? ", " : "",
					 p);

			if (k > 0)
				len += (size_t)k;
		}
	}
	return 0;
}

/*
 * The engine's socket: the socket setting, else the path of DOCKER_HOST (passed from the
 * controller's environment: the manifest's "env"), else /var/run/docker.sock. A unix:// URL is
 * its path; any other scheme is refused, and so is a socket the manifest does not ask for.
 */
static int resolve_socket(const char *setting, char *err, size_t err_size)
{
	const char *host = getenv("DOCKER_HOST");
	const char *v = setting, *from = "settings.socket";
	char listed[1024] = "";
	int r;

	if (!v || !*v) {
		v = host && *host ? host : "/var/run/docker.sock";
		from = host && *host ? "DOCKER_HOST" : "the default";
	}
	if (startswith(v, "unix://"))
		v += strlen("unix://");
	else if (strstr(v, "://") || (v == host && *v != '/')) {
		(void)snprintf(
			err, err_size,
			"%s: \"%s\" is not a Unix socket: this pack reaches its engine only "
			"through a Unix socket (one its manifest's hostSockets asks for and the "
			"admin floor's packSockets lists); set the socket setting",
			from, v);
		return -EINVAL;
	}
	if (*v != '/' || strlen(v) >= sizeof(sock_path)) {
		(void)snprintf(err, err_size,
			       "%s: \"%s\" is not an absolute socket path of at most %zu bytes",
			       from, v, sizeof(sock_path) - 1);
		return -EINVAL;
	}
	r = manifest_lists(v, listed, sizeof(listed));
	if (r == 0) {
		(void)snprintf(
			err, err_size,
			"%s: the engine socket %s is not one this pack's manifest asks for "
			"(hostSockets: %s): install a copy of the pack whose pack.json names "
			"it, and list it in the admin floor's packSockets",
			from, v, *listed ? listed : "none");
		return -EPERM;
	}
	if (r < 0)
		fprintf(stderr,
			"cordon-docker-pack: cannot read the pack's manifest (%s): the "
			"engine socket is not checked against its hostSockets\n",
			strerror(-r));
	(void)snprintf(sock_path, sizeof(sock_path), "%s", v);
	fprintf(stderr, "cordon-docker-pack: engine socket %s (from %s)\n", sock_path, from);
	return 0;
}

static void do_configure(json_t *id, json_t *params)
{
	json_t *settings = json_object_get(params, "settings");
	const char *v;
	char err[1536];
	double mem, pids, cpus;

	if ((v = json_string_value(json_object_get(params, "instance"))))
		(void)snprintf(instance, sizeof(instance), "%s", v);
	if ((v = json_string_value(json_object_get(settings, "image"))))
		(void)snprintf(image, sizeof(image), "%s", v);
	if (resolve_socket(json_string_value(json_object_get(settings, "socket")), err,
			   sizeof(err)) < 0) {
		reply_error(id, err, NULL);
		return;
	}
	/* Docker's own floors: 6 MiB of memory, a hundredth of a CPU (and at most the engine's
	 * CPUs, checked at prepare). */
	if (number_setting(settings, "defaultMemoryBytes", 6 << 20, (double)(1ULL << 52), true,
			   &mem, err, sizeof(err)) < 0 ||
	    number_setting(settings, "defaultPids", 1, 4194304, true, &pids, err, sizeof(err)) <
		    0 ||
	    number_setting(settings, "defaultCpus", 0.01, 1024, false, &cpus, err, sizeof(err)) <
		    0) {
		reply_error(id, err, NULL);
		return;
	}
	default_memory = (json_int_t)mem;
	default_pids = (json_int_t)pids;
	default_cpus = cpus;
	trace = json_is_true(json_object_get(settings, "trace"));
	fprintf(stderr,
		"cordon-docker-pack: configured %s (image %s, engine %s, defaults: memory %lld, "
		"pids %lld, cpus %g%s)\n",
		instance, image, sock_path, (long long)default_memory, (long long)default_pids,
		default_cpus, trace ? "; tracing" : "");
	packlib_reply(id, json_object());
}

/* Podman: the nofile and nproc its containers get by default (container_config's caps), read
 * from a container created and removed without being started. */
static int podman_limits(char *err, size_t err_size)
{
	_cleanup_json_ json_t *cfg = NULL, *out = NULL, *ins = NULL;
	_cleanup_free_ char *path = NULL;
	const char *cid;
	size_t i;
	json_t *u;
	long s;

	podman_nofile = podman_nproc = 0;
	if (!podman)
		return 0;
	cfg = json_pack("{s:s,s:[s],s:[],s:{s:s},s:{s:s,s:s}}", "Image", image, "Cmd", "true",
			"Entrypoint", "HostConfig", "NetworkMode", "none", "Labels", LABEL,
			LABEL_VALUE, OWNER_LABEL, owner);
	if (!cfg)
		return -ENOMEM;
	s = engine("POST", "/containers/create", cfg, 30000, &out, err, err_size);
	cid = json_string_value(json_object_get(out, "Id"));
	if (s != 201 || !cid)
		return s < 0 ? (int)s : -EIO;
	path = strdup_printf("/containers/%s/json", cid);
	s = path ? engine("GET", path, NULL, 10000, &ins, err, err_size) : -ENOMEM;
	remove_container(cid);
	if (s != 200)
		return s < 0 ? (int)s : -EIO;
	json_array_foreach(json_object_get(json_object_get(ins, "HostConfig"), "Ulimits"), i, u) {
		const char *name = json_string_value(json_object_get(u, "Name"));
		json_int_t hard = json_integer_value(json_object_get(u, "Hard"));

		if (!name || hard <= 0)
			continue;
		if (strncasecmp(name, "RLIMIT_", 7) == 0)
			name += 7;
		if (strcasecmp(name, "nofile") == 0)
			podman_nofile = hard;
		else if (strcasecmp(name, "nproc") == 0)
			podman_nproc = hard;
	}
	return 0;
}

/* defaultCpus at most the engine's CPUs (the engine refuses every container above). */
static int check_cpus(char *err, size_t err_size)
{
	_cleanup_json_ json_t *info = NULL;
	json_int_t n;
	long s;

	if (default_cpus <= 0)
		return 0;
	s = engine("GET", "/info", NULL, 10000, &info, err, err_size);
	if (s != 200)
		return s < 0 ? (int)s : -EIO;
	n = json_integer_value(json_object_get(info, "NCPU"));
	if (n > 0 && default_cpus > (double)n) {
		(void)snprintf(err, err_size,
			       "settings.defaultCpus: %g is more than the engine's %lld CPUs",
			       default_cpus, (long long)n);
		return -EINVAL;
	}
	return 0;
}

static void do_prepare(json_t *id)
{
	char err[1024] = "";
	int r = check_engine(err, sizeof(err));

	/* A missing image is pulled (isAvailable only reports it). */
	if (r == -ENOENT && *image) {
		r = pull_image(err, sizeof(err));
		if (r >= 0)
			r = check_engine(err, sizeof(err));
	}
	if (r >= 0)
		r = check_cpus(err, sizeof(err));
	if (r >= 0)
		r = remove_leftovers(err, sizeof(err));
	if (r >= 0)
		r = podman_limits(err, sizeof(err));
	if (r < 0)
		reply_error(id, err, NULL);
	else
		packlib_reply(id, json_object());
}

static void do_probe(json_t *id)
{
	char err[1024] = "";

	if (check_engine(err, sizeof(err)) < 0)
		packlib_reply(id, json_pack("{s:b,s:s}", "available", false, "reason", err));
	else
		packlib_reply(id, json_pack("{s:b}", "available", true));
}

static void do_dispose(json_t *id)
{
	for (size_t i = 0; i < ELEMENTSOF(leases); i++)
		if (leases[i].used && *leases[i].container)
			remove_container(leases[i].container), leases[i].used = false;
	packlib_reply(id, json_object());
}

int main(void)
{
	static const struct packlib_ops ops = {
		.program = "cordon-docker-pack",
		.configure = do_configure,
		.prepare = do_prepare,
		.probe = do_probe,
		.spawn = do_spawn,
		.acquire = do_acquire, /* a bind workspace: no archive fd */
		.release = do_release,
		.kill = do_kill,
		.dispose = do_dispose,
	};
	int r = owner_init();

	if (r < 0)
		fprintf(stderr,
			"cordon-docker-pack: no owner token in the state directory (%s): "
			"containers left by a crash are not removed\n",
			strerror(-r));
	if (curl_global_init(CURL_GLOBAL_NOTHING) != 0)
		return 1;
	return packlib_main(&ops);
}
