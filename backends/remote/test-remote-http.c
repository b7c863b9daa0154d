/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libremote.a against the loopback E2B fake (tests/fakes/e2b_fake.py, started by
 * tests/fakes/test-remote-http.sh, which passes its URL in E2B_FAKE_URL and the key it accepts
 * in E2B_FAKE_KEY): a 401's message, 429 retried after its Retry-After, 5xx retried with
 * backoff, a request that may not be retried is not, a transport failure, cancellation stopping
 * a backoff, a body streamed from an fd and an answer streamed to a sink, a kept-alive handle,
 * a header of the answer kept, a streamed answer retried after a 503 before its first byte and
 * not after a cut past it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/remote/remote-http.h"
#include "common/util.h"
#include "tests/tap.h"

static const char *url_base, *key;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static struct rhttp_client *client(const char *k, const atomic_bool *cancel)
{
	_cleanup_free_ char *h = k ? strdup_printf("X-API-Key: %s", k) : NULL;
	struct rhttp_opts o = { .auth_header = h,
				.total_timeout_ms = 10000,
				.max_retries = 3,
				.backoff_ms = 100,
				.cancel = cancel };
	struct rhttp_client *c = NULL;

	if (rhttp_client_new(&o, &c) < 0)
		bail("cannot make a client");
	return c;
}

static int call(struct rhttp_client *c, const char *method, const char *path, const char *body,
		bool retry, struct rhttp_response *resp, char *err, size_t err_size)
{
	_cleanup_free_ char *url = strdup_printf("%s%s", url_base, path);
	struct rhttp_request req = { .method = method,
				     .url = url,
				     .body = body,
				     .body_len = body ? strlen(body) : 0,
				     .body_fd = -1,
				     .content_type = body ? "application/json" : NULL,
				     .retry = retry };

	return rhttp_do(c, &req, resp, err, err_size);
}

static void fault(const char *json)
{
	struct rhttp_client *c = client(NULL, NULL);
	struct rhttp_response resp;
	char err[256];

	if (call(c, "POST", "/__fake/fault", json, false, &resp, err, sizeof(err)) < 0 ||
	    resp.status != 200)
		bail("cannot set a fault: %s", err);
	rhttp_response_done(&resp);
	rhttp_client_free(c);
}

static bool collect(const void *d, size_t n, void *ud)
{
	size_t *total = ud;

	(void)d;
	*total += n;
	return true;
}

int main(void)
{
	struct rhttp_client *c;
	struct rhttp_response resp;
	char err[256], msg[512];
	double t0;
	int r;

	url_base = getenv("E2B_FAKE_URL");
	key = getenv("E2B_FAKE_KEY");
	if (!url_base || !key)
		skip_all("run by tests/fakes/test-remote-http.sh");
	plan_lazy();

	c = client("e2b_wrong", NULL);
	r = call(c, "GET", "/v2/sandboxes", NULL, true, &resp, err, sizeof(err));
	rhttp_error_message(&resp, msg, sizeof(msg));
	ok(r == 0 && resp.status == 401 && resp.attempts == 1 &&
		   startswith(msg, "Invalid API key, please visit"),
	   "a wrong key: 401, not retried, the service's message (%s)", msg);
	rhttp_response_done(&resp);
	c = rhttp_client_free(c);

	c = client(key, NULL);
	fault("{\"route\":\"list\",\"status\":429,\"retryAfter\":1}");
	t0 = now();
	r = call(c, "GET", "/v2/sandboxes", NULL, true, &resp, err, sizeof(err));
	ok(r == 0 && resp.status == 200 && resp.attempts == 2 && now() - t0 >= 0.95,
	   "429 with Retry-After: 1 is retried after a second (%d attempts, %.2f s)", resp.attempts,
	   now() - t0);
	rhttp_response_done(&resp);

	fault("{\"route\":\"list\",\"status\":503,\"count\":2}");
	r = call(c, "GET", "/v2/sandboxes", NULL, true, &resp, err, sizeof(err));
	ok(r == 0 && resp.status == 200 && resp.attempts == 3,
	   "503 twice: retried, 3 attempts (%d)", resp.attempts);
	rhttp_response_done(&resp);

	fault("{\"route\":\"list\",\"status\":500,\"count\":9}");
	r = call(c, "GET", "/v2/sandboxes", NULL, true, &resp, err, sizeof(err));
	ok(r == 0 && resp.status == 500 && resp.attempts == 4,
	   "500 every time: given up after 1 + 3 retries, the last answer returned (%d)",
	   resp.attempts);
	rhttp_response_done(&resp);
	/* what is left of that fault */
	for (int i = 0; i < 5; i++) {
		(void)call(c, "GET", "/v2/sandboxes", NULL, false, &resp, err, sizeof(err));
		rhttp_response_done(&resp);
	}

	fault("{\"route\":\"create\",\"status\":500}");
	r = call(c, "POST", "/sandboxes", "{\"templateID\":\"base\"}", false, &resp, err,
		 sizeof(err));
	ok(r == 0 && resp.status == 500 && resp.attempts == 1,
	   "a create (not idempotent) is not retried on 500");
	rhttp_response_done(&resp);

	r = call(c, "POST", "/sandboxes", "{\"templateID\":\"base\",\"timeout\":60}", false, &resp,
		 err, sizeof(err));
	ok(r == 0 && resp.status == 201, "a create: 201");
	{
		json_t *j = rhttp_json_body(&resp);
		const char *sid = json_string_value(json_object_get(j, "sandboxID"));
		_cleanup_free_ char *path = strdup_printf("/sandboxes/%s", sid ? sid : "x");

		rhttp_response_done(&resp);
		r = call(c, "DELETE", path, NULL, true, &resp, err, sizeof(err));
		ok(r == 0 && resp.status == 204, "DELETE: 204");
		rhttp_response_done(&resp);
		r = call(c, "DELETE", path, NULL, true, &resp, err, sizeof(err));
		ok(r == 0 && resp.status == 404 && resp.attempts == 1,
		   "DELETE again: 404, not retried");
		rhttp_response_done(&resp);
		json_decref(j);
	}
	c = rhttp_client_free(c);

	/* A header of the answer kept (a list's X-Next-Token), per answer. */
	{
		_cleanup_free_ char *url = NULL;
		struct rhttp_request req = {
			.method = "GET", .body_fd = -1, .retry = true, .want_header = "x-next-token"
		};
		json_t *j;
		bool ids_ok = true;

		c = client(key, NULL);
		for (int i = 0; i < 3; i++) {
			r = call(c, "POST", "/sandboxes",
				 "{\"templateID\":\"base\",\"metadata\":{\"pg\":\"1\"}}", false,
				 &resp, err, sizeof(err));
			ids_ok = ids_ok && r == 0 && resp.status == 201;
			rhttp_response_done(&resp);
		}
		fault("{\"route\":\"list\",\"status\":503}");
		url = strdup_printf("%s/v2/sandboxes?metadata=pg%%3D1&limit=2", url_base);
		req.url = url;
		r = rhttp_do(c, &req, &resp, err, sizeof(err));
		j = rhttp_json_body(&resp);
		ok(ids_ok && r == 0 && resp.status == 200 && resp.attempts == 2 &&
			   json_array_size(j) == 2 && resp.header && *resp.header,
		   "the header asked for is kept from the answer that counts (X-Next-Token: %s)",
		   resp.header ?: "none");
		json_decref(j);
		rhttp_response_done(&resp);
		free(url);
		url = strdup_printf("%s/v2/sandboxes?metadata=pg%%3D1&limit=3", url_base);
		req.url = url;
		r = rhttp_do(c, &req, &resp, err, sizeof(err));
		ok(r == 0 && resp.status == 200 && !resp.header,
		   "…and none when the answer has none (the last page)");
		rhttp_response_done(&resp);
		c = rhttp_client_free(c);
	}

	{
		atomic_bool cancel = false;

		c = client(key, &cancel);
		fault("{\"route\":\"list\",\"status\":429,\"retryAfter\":30}");
		t0 = now();
		/* cancelled from here: the backoff's first check stops it */
		atomic_store(&cancel, true);
		r = call(c, "GET", "/v2/sandboxes", NULL, true, &resp, err, sizeof(err));
		ok(r == -ECANCELED && now() - t0 < 5,
		   "a cancelled client stops at once, no 30 s Retry-After waited (%.2f s)",
		   now() - t0);
		rhttp_response_done(&resp);
		c = rhttp_client_free(c);
	}

	{
		struct rhttp_client *k = client(key, NULL);
		_cleanup_free_ char *url = strdup_printf("http://127.0.0.1:1/v2/sandboxes");
		struct rhttp_request req = {
			.method = "GET", .url = url, .body_fd = -1, .retry = true
		};

		r = rhttp_do(k, &req, &resp, err, sizeof(err));
		ok(r == -ECONNREFUSED && resp.attempts == 4 && !strstr(err, key),
		   "a refused connection: retried, then -ECONNREFUSED, the error names no key (%s)",
		   err);
		rhttp_response_done(&resp);
		rhttp_client_free(k);
	}

	/* A body from a pipe and an answer into a sink (the files API of a sandbox). */
	{
		struct rhttp_client *k = client(key, NULL);
		json_t *j;
		const char *sid, *tok;
		_cleanup_free_ char *h1 = NULL, *h3 = NULL, *url = NULL;
		int p[2];
		size_t got = 0;
		static char blob[300000];

		r = call(k, "POST", "/sandboxes", "{\"templateID\":\"base\",\"secure\":true}",
			 false, &resp, err, sizeof(err));
		j = rhttp_json_body(&resp);
		rhttp_response_done(&resp);
		sid = json_string_value(json_object_get(j, "sandboxID"));
		tok = json_string_value(json_object_get(j, "envdAccessToken"));
		h1 = strdup_printf("E2b-Sandbox-Id: %s", sid ? sid : "");
		h3 = strdup_printf("X-Access-Token: %s", tok ? tok : "");
		url = strdup_printf("%s/files?path=/home/user/blob", url_base);
		{
			const char *hdrs[] = { h1, "E2b-Sandbox-Port: 49983", h3, NULL };
			struct rhttp_request up = { .method = "POST",
						    .url = url,
						    .headers = hdrs,
						    .body_fd = -1,
						    .content_type = "application/octet-stream" };
			struct rhttp_request down = { .method = "GET",
						      .url = url,
						      .headers = hdrs,
						      .body_fd = -1,
						      .sink = collect,
						      .sink_userdata = &got };

			memset(blob, 'x', sizeof(blob));
			if (pipe2(p, O_CLOEXEC) < 0)
				bail("pipe");
			if (fork() == 0) {
				close(p[0]);
				(void)!write(p[1], blob, sizeof(blob));
				_exit(0);
			}
			close(p[1]);
			up.body_fd = p[0];
			r = rhttp_do(k, &up, &resp, err, sizeof(err));
			ok(r == 0 && resp.status == 200,
			   "a body streamed from a pipe is uploaded (%ld)", resp.status);
			rhttp_response_done(&resp);
			close(p[0]);
			(void)wait(NULL);
			r = rhttp_do(k, &down, &resp, err, sizeof(err));
			ok(r == 0 && resp.status == 200 && got == sizeof(blob) && !resp.body,
			   "the answer is streamed to the sink (%zu bytes)", got);
			rhttp_response_done(&resp);

			/* A 503 before any byte: retried like any idempotent request, the error's
			 * body kept apart from the sink. */
			got = 0;
			down.retry = true;
			fault("{\"route\":\"files-get\",\"status\":503,\"retryAfter\":1,"
			      "\"count\":2}");
			t0 = now();
			r = rhttp_do(k, &down, &resp, err, sizeof(err));
			ok(r == 0 && resp.status == 200 && resp.attempts == 3 &&
				   got == sizeof(blob) && resp.sink_bytes == sizeof(blob) &&
				   now() - t0 >= 1.9,
			   "a streamed download answered 503 twice: retried after Retry-After, whole "
			   "(%d attempts, %zu bytes, %.2f s)",
			   resp.attempts, got, now() - t0);
			rhttp_response_done(&resp);

			/* Cut after some bytes: not retried (the sink has them), an error saying so. */
			got = 0;
			fault("{\"route\":\"files-get\",\"kind\":\"cut-body\"}");
			r = rhttp_do(k, &down, &resp, err, sizeof(err));
			ok(r == -EIO && resp.attempts == 1 && got == sizeof(blob) / 2 &&
				   startswith(err, "the stream was cut after 150000 bytes: "),
			   "a download cut after half: one attempt, -EIO naming the cause (%s)",
			   err);
			rhttp_response_done(&resp);
		}
		json_decref(j);
		rhttp_client_free(k);
	}
	return 0;
}
