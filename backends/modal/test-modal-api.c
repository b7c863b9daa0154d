/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Modal client (grpc-curl.c, modal-api.c) against the loopback fake (tests/fakes/modal_fake.py,
 * started by tests/fakes/test-modal-fake.sh with a short auth token lifetime; its URL in
 * MODAL_FAKE_URL, the credentials it accepts in MODAL_FAKE_TOKEN_ID and MODAL_FAKE_TOKEN_SECRET):
 * a wrong secret refused with the service's message; each transient status (DEADLINE_EXCEEDED,
 * UNAVAILABLE, INTERNAL, UNKNOWN, CANCELLED) retried with one idempotency key and numbered
 * attempts, fatal ones (FAILED_PRECONDITION, RESOURCE_EXHAUSTED, INVALID_ARGUMENT) not, with
 * their messages; a create whose answer was lost makes one sandbox; the router's start, stdin
 * write and wait retried; deadlines sent; create, task id, router, exec with stdout and stderr
 * apart, stdin with EOF, exit codes and signals; a cut output stream resumed; the auth token
 * refreshed across its expiry; list by tag; images built from a registry reference with their
 * log, found built again, failing with the build's message, a cut log stream resumed; a sandbox
 * past its timeout; terminate; TLS against a second fake (MODAL_FAKE_TLS_URL, its CA in
 * MODAL_FAKE_CA, another in MODAL_FAKE_WRONG_CA): trusted through a CA file, refused at once
 * otherwise; the secret seen nowhere but its header; and the client's own time per exec (printed
 * as a diagnostic, held to a generous bound).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "backends/modal/grpc-curl.h"
#include "backends/modal/modal-api.h"
#include "common/cleanup.h"
#include "tests/tap.h"

static const char *url, *tid, *secret, *ca;

struct buf {
	char *d;
	size_t n;
};

static bool sink(const void *d, size_t n, void *ud)
{
	struct buf *b = ud;
	char *p = realloc(b->d, b->n + n + 1);

	if (!p)
		return false;
	memcpy(p + b->n, d, n);
	b->n += n;
	p[b->n] = '\0';
	b->d = p;
	return true;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static json_t *hook(const char *name, const char *body)
{
	struct grpc_conn *c = NULL;
	char path[64];
	uint8_t *ans = NULL;
	size_t n = 0;
	struct grpc_result res;
	struct grpc_call call = { .path = path,
				  .req = (const uint8_t *)body,
				  .req_len = strlen(body),
				  .timeout_ms = 10000 };
	json_t *j = NULL;

	snprintf(path, sizeof(path), "/fake.Hooks/%s", name);
	if (grpc_conn_new(url, ca, &c) == 0 && grpc_unary(c, &call, &ans, &n, &res) == 0 &&
	    res.status == GRPC_OK)
		j = json_loadb((const char *)ans, n, 0, NULL);
	free(ans);
	grpc_conn_free(c);
	return j;
}

/* How many calls of an RPC the fake saw, and whether all carried one idempotency key. */
static int calls_of(const char *rpc, bool *same_key, bool *deadline)
{
	json_t *st = hook("State", "{}"), *e;
	const char *key = NULL;
	size_t i;
	int n = 0;

	*same_key = true;
	*deadline = true;
	json_array_foreach(json_object_get(st, "log"), i, e) {
		const char *k = json_string_value(json_object_get(e, "idem"));

		if (strcmp(json_string_value(json_object_get(e, "rpc")), rpc) != 0)
			continue;
		n++;
		if (!k || (key && strcmp(k, key) != 0))
			*same_key = false;
		key = k;
		if (!json_is_true(json_object_get(e, "timeout")))
			*deadline = false;
	}
	json_decref(st);
	return n;
}

/* Whether the last `n` calls of an RPC were attempts 0..n-1 with one idempotency key. */
static bool last_attempts_ok(const char *rpc, int n)
{
	json_t *st = hook("State", "{}"), *e;
	const char *seen[64];
	const char *keys[64];
	size_t i, k = 0;
	bool good = true;

	json_array_foreach(json_object_get(st, "log"), i, e) {
		if (strcmp(json_string_value(json_object_get(e, "rpc")), rpc) != 0 || k >= 64)
			continue;
		seen[k] = json_string_value(json_object_get(e, "attempt"));
		keys[k++] = json_string_value(json_object_get(e, "idem"));
	}
	if ((int)k < n)
		good = false;
	for (int j = 0; good && j < n; j++) {
		char want[12];
		size_t at = k - (size_t)n + (size_t)j;

		snprintf(want, sizeof(want), "%d", j);
		if (!seen[at] || strcmp(seen[at], want) != 0 || !keys[at] ||
		    strcmp(keys[at], keys[k - (size_t)n]) != 0)
			good = false;
	}
	json_decref(st);
	return good;
}

static size_t count_sandboxes(void)
{
	json_t *st = hook("State", "{}");
	size_t n = json_object_size(json_object_get(st, "sandboxes"));

	json_decref(st);
	return n;
}

struct lines {
	char *text;
	size_t len, n;
};

static void on_line(const char *line, void *ud)
{
	struct lines *l = ud;
	size_t k = strlen(line);
	char *p = realloc(l->text, l->len + k + 2);

	if (!p)
		return;
	memcpy(p + l->len, line, k);
	p[l->len + k] = '\n';
	p[l->len + k + 1] = '\0';
	l->len += k + 1;
	l->text = p;
	l->n++;
}

static void lines_free(struct lines *l)
{
	free(l->text);
	memset(l, 0, sizeof(*l));
}

static void lines_reset(struct lines *l)
{
	lines_free(l);
}

static int count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay ? strstr(hay, needle) : NULL; p; p = strstr(p + 1, needle))
		n++;
	return n;
}

struct run {
	struct buf out, err;
	int code, sig, r;
	char msg[256];
};

static void run(struct modal_router *rt, const char *const *argv, const char *in, struct run *x)
{
	char exec_id[37];

	memset(x, 0, sizeof(*x));
	x->r = modal_exec_start(rt, argv, NULL, NULL, 0, exec_id, x->msg, sizeof(x->msg));
	if (x->r < 0)
		return;
	x->r = modal_exec_write(rt, exec_id, 0, in ? in : "", in ? strlen(in) : 0, true, x->msg,
				sizeof(x->msg));
	if (x->r >= 0)
		x->r = modal_exec_read(rt, exec_id, 0, sink, &x->out, x->msg, sizeof(x->msg));
	if (x->r >= 0)
		x->r = modal_exec_read(rt, exec_id, 1, sink, &x->err, x->msg, sizeof(x->msg));
	if (x->r >= 0)
		x->r = modal_exec_wait(rt, exec_id, &x->code, &x->sig, x->msg, sizeof(x->msg));
}

static void run_done(struct run *x)
{
	free(x->out.d);
	free(x->err.d);
}

static bool has(char **ids, const char *id)
{
	for (char **p = ids; p && *p; p++)
		if (strcmp(*p, id) == 0)
			return true;
	return false;
}

static void ids_free(char **ids)
{
	for (char **p = ids; p && *p; p++)
		free(*p);
	free(ids);
}

int main(void)
{
	struct modal_client *c = NULL, *bad = NULL;
	struct modal_router *rt = NULL, *rt2 = NULL;
	_cleanup_free_ char *app = NULL, *sb = NULL, *task = NULL, *sb2 = NULL, *task2 = NULL,
			    *none = NULL;
	char msg[256] = "", **ids = NULL;
	bool same, dl;
	struct run x;
	int r, n;
	unsigned auths;
	json_t *st;

	url = getenv("MODAL_FAKE_URL");
	tid = getenv("MODAL_FAKE_TOKEN_ID");
	secret = getenv("MODAL_FAKE_TOKEN_SECRET");
	if (!url || !tid || !secret) {
		printf("1..0 # SKIP MODAL_FAKE_URL/_TOKEN_ID/_TOKEN_SECRET unset\n");
		return 0;
	}
	plan_lazy();

	/* wrong credentials: the service's own message */
	ok(modal_client_new(url, NULL, tid, "as-wrong", &bad) == 0, "client with a wrong secret");
	r = modal_auth(bad, msg, sizeof(msg));
	is_int(-EACCES, r, "a wrong secret is refused");
	ok(strstr(msg, "token secret is invalid") != NULL, "with the service's message (%s)", msg);
	modal_client_free(bad);

	ok(modal_client_new(url, NULL, tid, secret, &c) == 0, "client");
	is_int(0, modal_auth(c, msg, sizeof(msg)), "auth token (%s)", msg);
	is_int(0, modal_app_get_or_create(c, "cordon", "main", &app, msg, sizeof(msg)),
	       "app get-or-create (%s)", msg);

	/* retryable, then fatal statuses */
	json_decref(hook("Fault", "{\"rpc\":\"SandboxCreate\",\"code\":14,\"count\":2}"));
	{
		const char *env[] = { "GREETING=hi", NULL };
		struct modal_sandbox_spec s = { .app_id = app,
						.image_id = "im-test",
						.workdir = "/root/workspace",
						.env = env,
						.tag_name = "cordon-lease",
						.tag_value = "L1",
						.milli_cpu = 1000,
						.memory_mb = 512,
						.timeout_secs = 600 };

		r = modal_sandbox_create(c, &s, &sb, msg, sizeof(msg));
		is_int(0, r, "create succeeds after two UNAVAILABLE (%s)", msg);
		n = calls_of("SandboxCreate", &same, &dl);
		is_int(3, n, "three attempts");
		ok(same, "one idempotency key across the attempts");
		ok(dl, "each with a deadline (grpc-timeout)");

		json_decref(
			hook("Fault",
			     "{\"rpc\":\"SandboxCreate\",\"code\":9,\"message\":\"quota: no\"}"));
		r = modal_sandbox_create(c, &s, &none, msg, sizeof(msg));
		is_int(-EPROTO, r, "FAILED_PRECONDITION fails");
		is_str("quota: no", msg, "with its message");
		n = calls_of("SandboxCreate", &same, &dl);
		is_int(4, n, "not retried");

		/* as the SDKs: RESOURCE_EXHAUSTED (a quota) is not transient */
		json_decref(hook("Fault", "{\"rpc\":\"SandboxCreate\",\"code\":8,"
					  "\"message\":\"sandbox limit reached\"}"));
		r = modal_sandbox_create(c, &s, &none, msg, sizeof(msg));
		is_int(-EAGAIN, r, "RESOURCE_EXHAUSTED fails");
		is_str("sandbox limit reached", msg, "with its message");
		n = calls_of("SandboxCreate", &same, &dl);
		is_int(5, n, "not retried");

		/* each transient status retried, with the attempt number and one key */
		{
			static const struct {
				int code;
				const char *name;
			} transient[] = { { 4, "DEADLINE_EXCEEDED" },
					  { 14, "UNAVAILABLE" },
					  { 13, "INTERNAL" },
					  { 2, "UNKNOWN" },
					  { 1, "CANCELLED (by the server)" } };

			for (size_t i = 0; i < ELEMENTSOF(transient); i++) {
				char body[128];
				int before = calls_of("AppGetOrCreate", &same, &dl);

				snprintf(body, sizeof(body),
					 "{\"rpc\":\"AppGetOrCreate\",\"code\":%d,\"count\":2}",
					 transient[i].code);
				json_decref(hook("Fault", body));
				free(none);
				none = NULL;
				r = modal_app_get_or_create(c, "cordon", "main", &none, msg,
							    sizeof(msg));
				ok(r == 0 && none && strcmp(none, app) == 0,
				   "%s twice, then the answer (%s)", transient[i].name, msg);
				is_int(before + 3, calls_of("AppGetOrCreate", &same, &dl),
				       "…in three attempts");
				ok(last_attempts_ok("AppGetOrCreate", 3),
				   "…numbered 0 to 2, one key");
			}
		}
		json_decref(hook("Fault", "{\"rpc\":\"AppGetOrCreate\",\"code\":14,\"count\":4,"
					  "\"message\":\"the API is down\"}"));
		n = calls_of("AppGetOrCreate", &same, &dl);
		r = modal_app_get_or_create(c, "cordon", "main", &none, msg, sizeof(msg));
		is_int(-EAGAIN, r, "UNAVAILABLE past the retries fails");
		is_str("the API is down", msg, "with the status message");
		is_int(n + 4, calls_of("AppGetOrCreate", &same, &dl), "after 1 + 3 retries");

		/* a create whose answer was lost: its retry (the same key) gets the same sandbox */
		{
			size_t sbs0 = count_sandboxes();
			_cleanup_free_ char *again = NULL;

			json_decref(
				hook("Fault",
				     "{\"rpc\":\"SandboxCreate\",\"code\":14,\"kind\":\"after\"}"));
			r = modal_sandbox_create(c, &s, &again, msg, sizeof(msg));
			is_int(0, r, "a create answered UNAVAILABLE after it made the sandbox (%s)",
			       msg);
			is_int((long long)sbs0 + 1, (long long)count_sandboxes(),
			       "…made one sandbox: the retry's key got the first answer");
			if (again)
				(void)modal_sandbox_terminate(c, again, msg, sizeof(msg));
		}

		s.image_id = "nope";
		r = modal_sandbox_create(c, &s, &none, msg, sizeof(msg));
		is_int(-ENOENT, r, "an unknown image is NOT_FOUND");
		ok(strstr(msg, "Image 'nope' not found") != NULL, "with the service's message");
	}

	is_int(0, modal_sandbox_task_id(c, sb, &task, msg, sizeof(msg)), "task id (%s)", msg);
	is_int(0, modal_router_open(c, task, &rt, msg, sizeof(msg)), "router access (%s)", msg);

	/* exec: stdout and stderr apart, stdin with EOF, exit code */
	{
		const char *argv[] = {
			"sh", "-c", "cat; echo \"$GREETING err\" >&2; pwd | sed 's,.*/,,'; exit 3",
			NULL
		};

		run(rt, argv, "hello\n", &x);
		is_int(0, x.r, "exec (%s)", x.msg);
		is_str("hello\nworkspace\n", x.out.d, "stdout: stdin to EOF, then the workdir");
		is_str("hi err\n", x.err.d, "stderr apart, with the sandbox's environment");
		is_int(3, x.code, "exit code 3");
		run_done(&x);
	}
	{
		const char *argv[] = { "sh", "-c", "kill -TERM $$", NULL };

		run(rt, argv, NULL, &x);
		is_int(0, x.r, "exec of a signalled command (%s)", x.msg);
		ok(x.code < 0 && x.sig == 15, "ended by signal 15 (code %d signal %d)", x.code,
		   x.sig);
		run_done(&x);
	}
	/* the router's calls retried: a start and a stdin write whose answers were lost, a wait
	 * answered INTERNAL */
	{
		const char *argv[] = { "sh", "-c", "cat; exit 5", NULL };
		int starts = calls_of("TaskExecStart", &same, &dl);
		int waits = calls_of("TaskExecWait", &same, &dl);

		json_decref(hook("Fault",
				 "{\"rpc\":\"TaskExecStart\",\"code\":14,\"kind\":\"after\"}"));
		json_decref(hook("Fault",
				 "{\"rpc\":\"TaskExecStdinWrite\",\"code\":4,\"kind\":\"after\"}"));
		json_decref(hook("Fault", "{\"rpc\":\"TaskExecWait\",\"code\":13}"));
		run(rt, argv, "once\n", &x);
		is_int(0, x.r, "an exec through lost answers and an INTERNAL (%s)", x.msg);
		is_str("once\n", x.out.d, "its stdin written once");
		is_int(5, x.code, "its exit code");
		is_int(starts + 2, calls_of("TaskExecStart", &same, &dl), "the start retried once");
		ok(last_attempts_ok("TaskExecStart", 2), "…with its key");
		is_int(waits + 2, calls_of("TaskExecWait", &same, &dl), "the wait retried once");
		run_done(&x);
	}
	{
		const char *argv[] = { "true", NULL };

		json_decref(hook("Fault", "{\"rpc\":\"TaskExecStart\",\"code\":3,"
					  "\"message\":\"bad command\"}"));
		run(rt, argv, NULL, &x);
		ok(x.r == -EINVAL && strcmp(x.msg, "bad command") == 0,
		   "INVALID_ARGUMENT is not retried: its message (%d %s)", x.r, x.msg);
		run_done(&x);
	}
	{
		const char *argv[] = { "seq", "1", "30000", NULL };
		size_t want = 0;

		for (int i = 1; i <= 30000; i++)
			want += (size_t)snprintf(NULL, 0, "%d\n", i);
		json_decref(hook("Fault", "{\"rpc\":\"TaskExecStdioRead\",\"kind\":\"cut\"}"));
		run(rt, argv, NULL, &x);
		is_int(0, x.r, "exec with its output stream cut (%s)", x.msg);
		is_int((long long)want, (long long)x.out.n,
		       "the whole output, resumed at its offset");
		ok(x.out.d && strncmp(x.out.d, "1\n2\n", 4) == 0 &&
			   strcmp(x.out.d + x.out.n - 6, "30000\n") == 0,
		   "in order");
		run_done(&x);
	}

	/* the auth token expires mid-lease: refreshed (the fake's tokens live 15 s:
	 * test-modal-fake.sh; long enough that none expires in the retry counts above, even
	 * under a sanitizer's slowness) */
	auths = modal_auth_count(c);
	sleep(16);
	r = modal_sandbox_list(c, app, "cordon-lease", "L1", &ids, msg, sizeof(msg));
	is_int(0, r, "list by tag after the auth token expired (%s)", msg);
	ok(modal_auth_count(c) > auths, "a new auth token was fetched");
	ok(has(ids, sb) && ids[1] == NULL, "the list holds the tagged sandbox only");
	ids_free(ids);
	ids = NULL;

	/* images: a registry reference built with progress, found built again, failed builds */
	{
		struct lines lg = {};
		_cleanup_free_ char *im = NULL, *im2 = NULL, *im3 = NULL;
		const char *cmds[] = { "RUN echo hi", NULL };
		const char *failing[] = { "RUN true", "RUN exit 3", NULL };
		int joins;

		r = modal_image_build(c, app, "main", "python:3.12-slim", cmds, 60, on_line, &lg,
				      &im, msg, sizeof(msg));
		is_int(0, r, "a registry image builds (%s)", msg);
		ok(im && strncmp(im, "im-", 3) == 0, "…into an image id (%s)", im ? im : "none");
		ok(lg.n >= 3 && strstr(lg.text, "FROM python:3.12-slim") &&
			   strstr(lg.text, "RUN echo hi") && strstr(lg.text, "snapshot"),
		   "its build log came line by line (%zu lines)", lg.n);
		lines_reset(&lg);
		joins = calls_of("ImageJoinStreaming", &same, &dl);
		r = modal_image_build(c, app, "main", "python:3.12-slim", cmds, 60, on_line, &lg,
				      &im2, msg, sizeof(msg));
		ok(r == 0 && im && im2 && strcmp(im, im2) == 0 &&
			   calls_of("ImageJoinStreaming", &same, &dl) == joins,
		   "built once: the same recipe answers at once with the same id");
		{
			struct modal_sandbox_spec s = { .app_id = app,
							.image_id = im,
							.timeout_secs = 60 };
			_cleanup_free_ char *sbi = NULL;

			r = modal_sandbox_create(c, &s, &sbi, msg, sizeof(msg));
			is_int(0, r, "a sandbox from the built image (%s)", msg);
			if (sbi)
				(void)modal_sandbox_terminate(c, sbi, msg, sizeof(msg));
		}
		lines_reset(&lg);
		json_decref(hook("Fault", "{\"rpc\":\"ImageJoinStreaming\",\"kind\":\"cut\"}"));
		r = modal_image_build(c, app, "main", "debian:12", failing, 60, on_line, &lg, &im3,
				      msg, sizeof(msg));
		is_int(-EIO, r, "a failing RUN fails the build");
		ok(strstr(msg,
			  "failed: The command '/bin/sh -c exit 3' returned a non-zero code: 3") !=
			   NULL,
		   "with the build's message (%s)", msg);
		ok(lg.n >= 3 && strstr(lg.text, "RUN true") && strstr(lg.text, "exit status 3"),
		   "its log up to the failure, the cut stream resumed after its last entry");
		ok(count_of(lg.text, "Step 0: FROM") == 1, "…each line once");
		lines_reset(&lg);
		r = modal_image_build(c, app, "main", "missing/nothing:1", NULL, 60, on_line, &lg,
				      &im3, msg, sizeof(msg));
		ok(r == -EIO && strstr(msg, "pull access denied for missing/nothing"),
		   "an image that cannot be pulled fails with the service's message (%s)", msg);
		lines_reset(&lg);
		r = modal_image_build(c, app, "main", "ubuntu:24.04", NULL, 0, on_line, &lg, &im3,
				      msg, sizeof(msg));
		ok(r == -EAGAIN && strstr(msg, "still building"),
		   "a build not done in the time given says so (%s)", msg);
		lines_free(&lg);
	}

	/* a sandbox that times out */
	{
		struct modal_sandbox_spec s = { .app_id = app,
						.image_id = "im-test",
						.timeout_secs = 1 };
		const char *argv[] = { "sleep", "30", NULL };

		is_int(0, modal_sandbox_create(c, &s, &sb2, msg, sizeof(msg)), "short sandbox");
		is_int(0, modal_sandbox_task_id(c, sb2, &task2, msg, sizeof(msg)), "its task");
		is_int(0, modal_router_open(c, task2, &rt2, msg, sizeof(msg)), "its router");
		run(rt2, argv, NULL, &x);
		ok(x.r == -ENOENT, "a command outlived by its sandbox fails (%d, %s)", x.r, x.msg);
		run_done(&x);
		free(task2);
		task2 = NULL;
		r = modal_sandbox_task_id(c, sb2, &task2, msg, sizeof(msg));
		ok(r == -ENOENT && strstr(msg, "timed out"), "its task: timed out (%s)", msg);
	}

	/* terminate */
	is_int(0, modal_sandbox_terminate(c, sb, msg, sizeof(msg)), "terminate (%s)", msg);
	r = modal_sandbox_list(c, app, "cordon-lease", "L1", &ids, msg, sizeof(msg));
	ok(r == 0 && !has(ids, sb), "gone from the list");
	ids_free(ids);
	{
		const char *argv[] = { "true", NULL };

		run(rt, argv, NULL, &x);
		is_int(-ENOENT, x.r, "exec in a terminated sandbox fails (%s)", x.msg);
		run_done(&x);
	}

	/* the client's own time per exec over the fake's */
	{
		struct modal_sandbox_spec s = { .app_id = app,
						.image_id = "im-test",
						.timeout_secs = 600 };
		const char *argv[] = { "true", NULL };
		double t0, wall, h0, h1;
		int calls0, calls1, N = 40;

		free(sb2);
		free(task2);
		sb2 = task2 = NULL;
		rt2 = modal_router_free(rt2);
		r = modal_sandbox_create(c, &s, &sb2, msg, sizeof(msg));
		if (r == 0)
			r = modal_sandbox_task_id(c, sb2, &task2, msg, sizeof(msg));
		if (r == 0)
			r = modal_router_open(c, task2, &rt2, msg, sizeof(msg));
		is_int(0, r, "bench sandbox (%s)", msg);
		st = hook("State", "{}");
		h0 = json_number_value(json_object_get(st, "handlerSeconds"));
		calls0 = (int)json_integer_value(json_object_get(st, "handlerCalls"));
		json_decref(st);
		t0 = now();
		for (int i = 0; i < N; i++) {
			run(rt2, argv, NULL, &x);
			if (x.r < 0 || x.code != 0)
				break;
			run_done(&x);
		}
		wall = now() - t0;
		st = hook("State", "{}");
		h1 = json_number_value(json_object_get(st, "handlerSeconds"));
		calls1 = (int)json_integer_value(json_object_get(st, "handlerCalls"));
		json_decref(st);
		diag("per exec (start, stdin EOF, stdout, stderr, wait): %.2f ms wall, %.2f ms in the "
		     "fake's handlers, %.2f ms added by the client and the transport (%d calls)",
		     wall * 1000 / N, (h1 - h0) * 1000 / N, (wall - (h1 - h0)) * 1000 / N,
		     calls1 - calls0);
		ok((wall - (h1 - h0)) * 1000 / N < 200, "client overhead per exec is bounded");
		modal_sandbox_terminate(c, sb2, msg, sizeof(msg));
	}

	/* TLS: the fake's certificate trusted through a CA file; another CA's refused at once */
	if (getenv("MODAL_FAKE_TLS_URL") && getenv("MODAL_FAKE_CA") &&
	    getenv("MODAL_FAKE_WRONG_CA")) {
		const char *turl = getenv("MODAL_FAKE_TLS_URL"), *tca = getenv("MODAL_FAKE_CA"),
			   *wrong = getenv("MODAL_FAKE_WRONG_CA");
		struct modal_client *tc = NULL;
		struct modal_router *trt = NULL;
		_cleanup_free_ char *tapp = NULL, *tsb = NULL, *ttask = NULL;
		const char *argv[] = { "sh", "-c", "cat; echo over tls", NULL };
		struct modal_sandbox_spec s = { .image_id = "im-test", .timeout_secs = 60 };
		struct grpc_conn *g = NULL;
		struct grpc_result res;
		uint8_t *ans = NULL;
		size_t alen = 0;
		struct grpc_call call = { .path = "/fake.Hooks/State",
					  .req = (const uint8_t *)"{}",
					  .req_len = 2,
					  .timeout_ms = 10000,
					  .retryable = true };

		ok(modal_client_new(turl, tca, tid, secret, &tc) == 0, "a client over TLS");
		r = modal_app_get_or_create(tc, "cordon", "main", &tapp, msg, sizeof(msg));
		is_int(0, r, "its calls reach the fake through TLS with the CA file (%s)", msg);
		s.app_id = tapp;
		if (r == 0)
			r = modal_sandbox_create(tc, &s, &tsb, msg, sizeof(msg));
		if (r == 0)
			r = modal_sandbox_task_id(tc, tsb, &ttask, msg, sizeof(msg));
		if (r == 0)
			r = modal_router_open(tc, ttask, &trt, msg, sizeof(msg));
		is_int(0, r, "a sandbox and its router (https) (%s)", msg);
		if (trt) {
			run(trt, argv, "in\n", &x);
			ok(x.r == 0 && x.out.d && strcmp(x.out.d, "in\nover tls\n") == 0,
			   "an exec through the router over TLS (%s)", x.msg);
			run_done(&x);
			(void)modal_sandbox_terminate(tc, tsb, msg, sizeof(msg));
		}
		modal_router_free(trt);
		modal_client_free(tc);

		ok(modal_client_new(turl, wrong, tid, secret, &tc) == 0,
		   "a client with another CA");
		r = modal_auth(tc, msg, sizeof(msg));
		ok(r == -EAGAIN && strstr(msg, "TLS: untrusted server's certificate") &&
			   strstr(msg, wrong),
		   "is refused, the CA file named (%s)", msg);
		modal_client_free(tc);
		ok(grpc_conn_new(turl, wrong, &g) == 0, "a retryable call with another CA");
		r = grpc_unary(g, &call, &ans, &alen, &res);
		ok(r == 0 && res.status == GRPC_UNAVAILABLE && res.attempts == 1,
		   "…fails in one attempt: an untrusted certificate is not transient (%d %d)",
		   res.status, res.attempts);
		free(ans);
		g = grpc_conn_free(g);
		ok(modal_client_new(turl, NULL, tid, secret, &tc) == 0,
		   "a client with the system's CAs");
		r = modal_auth(tc, msg, sizeof(msg));
		ok(r == -EAGAIN && strstr(msg, "the system's CAs"), "is refused too (%s)", msg);
		modal_client_free(tc);
		ok(modal_client_new(turl, "/nonexistent/ca.pem", tid, secret, &tc) == 0,
		   "a client with a CA file that is not there");
		r = modal_auth(tc, msg, sizeof(msg));
		ok(r == -EAGAIN && strstr(msg, "TLS: cannot verify") &&
			   strstr(msg, "/nonexistent/ca.pem"),
		   "says so (%s)", msg);
		modal_client_free(tc);
	} else {
		skip(14, "no TLS fake (MODAL_FAKE_TLS_URL, MODAL_FAKE_CA, MODAL_FAKE_WRONG_CA)");
	}

	/* the secret: nowhere but its own header */
	st = hook("State", "{}");
	ok(st != NULL, "fake state");
	is_int(0, (long long)json_array_size(json_object_get(st, "leaks")),
	       "the secret was sent nowhere but x-modal-token-secret");
	json_decref(st);

	modal_router_free(rt);
	modal_router_free(rt2);
	modal_client_free(c);
	return tap_exit_status();
}
