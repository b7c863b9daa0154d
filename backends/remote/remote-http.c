/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The HTTP client remote packs share: see remote-http.h. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "backends/remote/remote-http.h"
#include "common/cleanup.h"
#include "common/util.h"

#define BODY_MAX (16u * 1024 * 1024)
#define BACKOFF_CAP_MS 10000L
#define RETRY_AFTER_CAP_S 60L

struct rhttp_client {
	CURL *curl;
	char *auth_header;
	char *user_agent;
	long connect_ms, total_ms, backoff_ms;
	int max_retries;
	const atomic_bool *cancel;
};

static void global_init(void)
{
	(void)curl_global_init(CURL_GLOBAL_DEFAULT);
}

int rhttp_client_new(const struct rhttp_opts *o, struct rhttp_client **ret)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct rhttp_client *c;

	(void)pthread_once(&once, global_init);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->curl = curl_easy_init();
	c->auth_header = o->auth_header ? strdup(o->auth_header) : NULL;
	c->user_agent = strdup(o->user_agent ? o->user_agent : "cordon-remote/1");
	if (!c->curl || (o->auth_header && !c->auth_header) || !c->user_agent) {
		rhttp_client_free(c);
		return -ENOMEM;
	}
	c->connect_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 10000;
	c->total_ms = o->total_timeout_ms;
	c->max_retries = o->max_retries;
	c->backoff_ms = o->backoff_ms > 0 ? o->backoff_ms : 200;
	c->cancel = o->cancel;
	*ret = c;
	return 0;
}

struct rhttp_client *rhttp_client_free(struct rhttp_client *c)
{
	if (!c)
		return NULL;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	if (c->auth_header) {
		explicit_bzero(c->auth_header, strlen(c->auth_header));
		free(c->auth_header);
	}
	free(c->user_agent);
	free(c);
	return NULL;
}

void rhttp_response_done(struct rhttp_response *resp)
{
	free(resp->body);
	resp->body = NULL;
	resp->len = 0;
	free(resp->header);
	resp->header = NULL;
}

struct xfer {
	struct rhttp_client *c;
	const struct rhttp_request *req;
	struct rhttp_response *resp;
	long retry_after_s;
	size_t body_read; /* from body_fd */
	bool sink_stopped, too_big;
};

static bool cancelled(const struct rhttp_client *c)
{
	return c->cancel && atomic_load(c->cancel);
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * n, k = x->req->want_header ? strlen(x->req->want_header) : 0;

	/* A new response (a 100 Continue's, a redirect's): forget the last one's headers. */
	if (len > 5 && strncmp(buf, "HTTP/", 5) == 0) {
		x->retry_after_s = -1;
		free(x->resp->header);
		x->resp->header = NULL;
	}
	if (len > 12 && strncasecmp(buf, "Retry-After:", 12) == 0) {
		char tmp[32] = "";

		(void)snprintf(tmp, sizeof(tmp), "%.*s", (int)(len - 12), buf + 12);
		x->retry_after_s = strtol(tmp, NULL, 10);
	}
	if (k && len > k + 1 && len < k + 4096 && strncasecmp(buf, x->req->want_header, k) == 0 &&
	    buf[k] == ':') {
		const char *v = buf + k + 1, *e = buf + len;

		while (v < e && (*v == ' ' || *v == '\t'))
			v++;
		while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' '))
			e--;
		free(x->resp->header);
		x->resp->header = strndup(v, (size_t)(e - v));
	}
	return len;
}

static bool append(struct rhttp_response *resp, const void *data, size_t len)
{
	char *b;

	if (resp->len + len > BODY_MAX)
		return false;
	b = realloc(resp->body, resp->len + len + 1);
	if (!b)
		return false;
	memcpy(b + resp->len, data, len);
	resp->len += len;
	b[resp->len] = '\0';
	resp->body = b;
	return true;
}

static size_t on_write(char *buf, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * n;
	long status = 0;

	(void)curl_easy_getinfo(x->c->curl, CURLINFO_RESPONSE_CODE, &status);
	if (x->req->sink && status >= 200 && status < 300) {
		if (!x->req->sink(buf, len, x->req->sink_userdata)) {
			x->sink_stopped = true;
			return 0;
		}
		x->resp->sink_bytes += len;
		return len;
	}
	if (!append(x->resp, buf, len)) {
		x->too_big = true;
		return 0;
	}
	return len;
}

static size_t on_read(char *buf, size_t size, size_t n, void *ud)
{
	struct xfer *x = ud;
	ssize_t k;

	do
		k = read(x->req->body_fd, buf, size * n);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return CURL_READFUNC_ABORT;
	x->body_read += (size_t)k;
	return (size_t)k;
}

/* A body from an fd can be "rewound" only before anything of it was read. */
static int on_seek(void *ud, curl_off_t offset, int origin)
{
	struct xfer *x = ud;

	return offset == 0 && origin == SEEK_SET && x->body_read == 0 ? CURL_SEEKFUNC_OK
								      : CURL_SEEKFUNC_CANTSEEK;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct xfer *x = ud;

	(void)dt, (void)dn, (void)ut, (void)un;
	return cancelled(x->c) ? 1 : 0;
}

static bool retryable_status(long s)
{
	return s == 429 || (s >= 500 && s <= 599 && s != 501);
}

static int sleep_ms(const struct rhttp_client *c, long ms)
{
	while (ms > 0) {
		long step = ms < 50 ? ms : 50;
		struct timespec ts = { 0, step * 1000000L };

		if (cancelled(c))
			return -ECANCELED;
		(void)nanosleep(&ts, NULL);
		ms -= step;
	}
	return cancelled(c) ? -ECANCELED : 0;
}

static int attempt(struct rhttp_client *c, const struct rhttp_request *req,
		   struct rhttp_response *resp, struct xfer *x, char *err, size_t err_size)
{
	CURL *h = c->curl;
	struct curl_slist *hl = NULL, *t;
	char ebuf[CURL_ERROR_SIZE] = "";
	long total = req->total_timeout_ms > 0	 ? req->total_timeout_ms
		     : req->total_timeout_ms < 0 ? 0
						 : c->total_ms;
	CURLcode cc;
	int r = 0;

	curl_easy_reset(h);
	(void)curl_easy_setopt(h, CURLOPT_URL, req->url);
	(void)curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	(void)curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	(void)curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_ms);
	(void)curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, total);
	(void)curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
	(void)curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
	(void)curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	(void)curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	(void)curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	(void)curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	(void)curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	(void)curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
	(void)curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	(void)curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	(void)curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	/* A pack's sandbox has no network but its proxy (HTTP(S)_PROXY from the environment):
	 * every host goes through it, loopback too (the sandbox's no_proxy names its own). */
	(void)curl_easy_setopt(h, CURLOPT_NOPROXY, "");

#define ADD(s)                                \
	do {                                  \
		t = curl_slist_append(hl, s); \
		if (!t) {                     \
			r = -ENOMEM;          \
			goto out;             \
		}                             \
		hl = t;                       \
	} while (0)
	ADD("Expect:");
	if (c->auth_header)
		ADD(c->auth_header);
	for (const char *const *p = req->headers; p && *p; p++)
		ADD(*p);
	if (req->content_type) {
		_cleanup_free_ char *ct = strdup_printf("Content-Type: %s", req->content_type);

		if (!ct) {
			r = -ENOMEM;
			goto out;
		}
		ADD(ct);
	}
	if (req->body_fd >= 0)
		ADD("Transfer-Encoding: chunked");
#undef ADD
	(void)curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);

	if (strcmp(req->method, "GET") == 0)
		(void)curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	else {
		if (req->body_fd >= 0) {
			(void)curl_easy_setopt(h, CURLOPT_POST, 1L);
			(void)curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
			(void)curl_easy_setopt(h, CURLOPT_READDATA, x);
			(void)curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
			(void)curl_easy_setopt(h, CURLOPT_SEEKDATA, x);
			/* Never on a kept-alive connection that may be gone: no second try. */
			(void)curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
		} else {
			(void)curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
					       (curl_off_t)req->body_len);
			(void)curl_easy_setopt(h, CURLOPT_COPYPOSTFIELDS,
					       req->body ? (const char *)req->body : "");
		}
		if (strcmp(req->method, "POST") != 0)
			(void)curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
	}

	cc = curl_easy_perform(h);
	(void)curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
	if (cc == CURLE_OK)
		goto out;
	if (cancelled(c) || x->sink_stopped)
		r = -ECANCELED;
	else if (x->too_big)
		r = -EFBIG;
	else if (cc == CURLE_OPERATION_TIMEDOUT)
		r = -ETIMEDOUT;
	else if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
		 cc == CURLE_COULDNT_RESOLVE_PROXY)
		r = -ECONNREFUSED;
	else
		r = -EIO;
	/* libcurl's error text names hosts and errors, never a header's value. */
	if (resp->sink_bytes > 0)
		(void)snprintf(err, err_size, "the stream was cut after %zu bytes: %s",
			       resp->sink_bytes, ebuf[0] ? ebuf : curl_easy_strerror(cc));
	else
		(void)snprintf(err, err_size, "%s", ebuf[0] ? ebuf : curl_easy_strerror(cc));
out:
	curl_slist_free_all(hl);
	return r;
}

int rhttp_do(struct rhttp_client *c, const struct rhttp_request *req, struct rhttp_response *resp,
	     char *err, size_t err_size)
{
	long backoff = c->backoff_ms;
	int r;

	memset(resp, 0, sizeof(*resp));
	if (err_size)
		err[0] = '\0';
	for (int n = 0;; n++) {
		struct xfer x = { .c = c, .req = req, .resp = resp, .retry_after_s = -1 };
		bool again;
		long wait;

		rhttp_response_done(resp);
		resp->status = 0;
		resp->sink_bytes = 0;
		resp->attempts = n + 1;
		r = attempt(c, req, resp, &x, err, err_size);
		if (r == -ECANCELED || r == -ENOMEM || r == -EFBIG)
			return r;
		if (req->retry)
			again = r < 0 || retryable_status(resp->status);
		else if (req->retry_throttled)
			again = r < 0 ? r == -ECONNREFUSED : resp->status == 429;
		else
			again = false;
		/* Neither a body read from an fd nor an answer a sink already took part of can be
		 * sent or taken again. */
		again = again && req->body_fd < 0 && resp->sink_bytes == 0 && n < c->max_retries;
		if (!again)
			return r;
		wait = backoff;
		if (x.retry_after_s >= 0)
			wait = (x.retry_after_s > RETRY_AFTER_CAP_S ? RETRY_AFTER_CAP_S
								    : x.retry_after_s) *
			       1000;
		backoff = backoff * 2 > BACKOFF_CAP_MS ? BACKOFF_CAP_MS : backoff * 2;
		r = sleep_ms(c, wait);
		if (r < 0)
			return r;
	}
}

void rhttp_error_message(const struct rhttp_response *resp, char *buf, size_t size)
{
	json_t *j = rhttp_json_body(resp);
	const char *m = json_string_value(json_object_get(j, "message"));

	if (m && *m)
		(void)snprintf(buf, size, "%s", m);
	else if (resp->body && resp->len)
		(void)snprintf(buf, size, "HTTP %ld: %.200s", resp->status, resp->body);
	else
		(void)snprintf(buf, size, "HTTP %ld", resp->status);
	json_decref(j);
}

char *rhttp_json_dump(const json_t *j)
{
	return json_dumps(j, JSON_COMPACT);
}

json_t *rhttp_json_body(const struct rhttp_response *resp)
{
	if (!resp->body || !resp->len)
		return NULL;
	return json_loadb(resp->body, resp->len, 0, NULL);
}

char *rhttp_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0), *out;

	if (!e)
		return NULL;
	out = strdup(e);
	curl_free(e);
	return out;
}
