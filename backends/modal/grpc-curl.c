/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A minimal gRPC client over libcurl: see grpc-curl.h. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include <curl/curl.h>

#include "backends/modal/grpc-curl.h"
#include "common/cleanup.h"

#define MSG_MAX (64u * 1024 * 1024)
#define DEFAULT_RETRIES 3
#define BACKOFF_FIRST_MS 100L
#define BACKOFF_CAP_MS 1000L

struct grpc_conn {
	CURL *curl;
	char *base;
	char *ca_file;
	bool h2c;
};

static void global_init(void)
{
	(void)curl_global_init(CURL_GLOBAL_DEFAULT);
}

int grpc_conn_new(const char *base_url, const char *ca_file, struct grpc_conn **ret)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct grpc_conn *c;
	size_t n;

	if (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8) != 0)
		return -EINVAL;
	(void)pthread_once(&once, global_init);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->curl = curl_easy_init();
	c->base = strdup(base_url);
	c->ca_file = ca_file && *ca_file ? strdup(ca_file) : NULL;
	if (!c->curl || !c->base || (ca_file && *ca_file && !c->ca_file)) {
		grpc_conn_free(c);
		return -ENOMEM;
	}
	n = strlen(c->base);
	while (n > 0 && c->base[n - 1] == '/')
		c->base[--n] = '\0';
	c->h2c = strncmp(base_url, "http://", 7) == 0;
	*ret = c;
	return 0;
}

struct grpc_conn *grpc_conn_free(struct grpc_conn *c)
{
	if (!c)
		return NULL;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free(c->base);
	free(c->ca_file);
	free(c);
	return NULL;
}

bool grpc_status_is_transient(int status)
{
	return status == GRPC_DEADLINE_EXCEEDED || status == GRPC_UNAVAILABLE ||
	       status == GRPC_INTERNAL || status == GRPC_UNKNOWN || status == GRPC_CANCELLED;
}

int grpc_uuid(char out[37])
{
	uint8_t b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -EIO;
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
	return 0;
}

struct attempt {
	const struct grpc_call *call;
	/* request upload */
	uint8_t *out;
	size_t out_len, out_pos;
	/* answer framing */
	uint8_t hdr[5];
	size_t hdr_got;
	uint8_t *msg;
	size_t msg_len, msg_got;
	bool in_msg;
	size_t delivered;
	bool stopped, bad;
	bool fatal; /* a failure no retry mends (TLS) */
	char errbuf[CURL_ERROR_SIZE];
	/* status */
	bool have_status;
	int status;
	char message[256];
	bool grpc_ct;
};

static size_t read_cb(char *buf, size_t size, size_t nitems, void *ud)
{
	struct attempt *a = ud;
	size_t n = a->out_len - a->out_pos;

	if (n > size * nitems)
		n = size * nitems;
	memcpy(buf, a->out + a->out_pos, n);
	a->out_pos += n;
	return n;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* grpc-message is percent-encoded. */
static void pct_decode(const char *s, size_t n, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < size; i++) {
		if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			out[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
}

static bool header_is(const char *line, size_t n, const char *name, const char **val,
		      size_t *val_len)
{
	size_t k = strlen(name);

	if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
		return false;
	line += k + 1;
	n -= k + 1;
	while (n > 0 && (*line == ' ' || *line == '\t')) {
		line++;
		n--;
	}
	while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n' || line[n - 1] == ' '))
		n--;
	*val = line;
	*val_len = n;
	return true;
}

/* Headers and trailers alike (libcurl hands HTTP/2 trailers to the header callback): the
 * status of a trailers-only answer is in its headers. */
static size_t header_cb(char *line, size_t size, size_t nitems, void *ud)
{
	struct attempt *a = ud;
	size_t n = size * nitems;
	const char *v;
	size_t vl;

	if (header_is(line, n, "grpc-status", &v, &vl)) {
		char num[12];

		if (vl >= sizeof(num))
			vl = sizeof(num) - 1;
		memcpy(num, v, vl);
		num[vl] = '\0';
		a->status = atoi(num);
		a->have_status = true;
	} else if (header_is(line, n, "grpc-message", &v, &vl)) {
		pct_decode(v, vl, a->message, sizeof(a->message));
	} else if (header_is(line, n, "content-type", &v, &vl)) {
		a->grpc_ct = vl >= 16 && strncasecmp(v, "application/grpc", 16) == 0;
	}
	return n;
}

static bool deliver(struct attempt *a)
{
	a->delivered++;
	if (!a->call->on_msg)
		return true;
	return a->call->on_msg(a->msg ? a->msg : (const uint8_t *)"", a->msg_len,
			       a->call->userdata);
}

static size_t write_cb(char *data, size_t size, size_t nmemb, void *ud)
{
	struct attempt *a = ud;
	size_t n = size * nmemb, i = 0;

	while (i < n) {
		if (!a->in_msg) {
			size_t k = 5 - a->hdr_got;

			if (k > n - i)
				k = n - i;
			memcpy(a->hdr + a->hdr_got, data + i, k);
			a->hdr_got += k;
			i += k;
			if (a->hdr_got < 5)
				break;
			if (a->hdr[0] != 0) { /* compressed: never asked for */
				a->bad = true;
				return 0;
			}
			a->msg_len = (size_t)a->hdr[1] << 24 | (size_t)a->hdr[2] << 16 |
				     (size_t)a->hdr[3] << 8 | a->hdr[4];
			if (a->msg_len > MSG_MAX) {
				a->bad = true;
				return 0;
			}
			free(a->msg);
			a->msg = a->msg_len ? malloc(a->msg_len) : NULL;
			if (a->msg_len && !a->msg) {
				a->bad = true;
				return 0;
			}
			a->msg_got = 0;
			a->in_msg = true;
		}
		if (a->in_msg) {
			size_t k = a->msg_len - a->msg_got;

			if (k > n - i)
				k = n - i;
			if (k)
				memcpy(a->msg + a->msg_got, data + i, k);
			a->msg_got += k;
			i += k;
			if (a->msg_got == a->msg_len) {
				a->in_msg = false;
				a->hdr_got = 0;
				if (!deliver(a)) {
					a->stopped = true;
					return 0;
				}
			}
		}
	}
	return n;
}

static int attempt_run(struct grpc_conn *c, const struct grpc_call *call, int attempt_no,
		       const char *idem, struct attempt *a)
{
	_cleanup_free_ char *url = NULL;
	struct curl_slist *h = NULL, *t;
	char line[96];
	CURLcode rc;
	long code = 0;
	bool oom = false;

	if (asprintf(&url, "%s%s", c->base, call->path) < 0)
		return -ENOMEM;
	a->out_len = 5 + call->req_len;
	a->out = malloc(a->out_len);
	if (!a->out)
		return -ENOMEM;
	a->out[0] = 0;
	a->out[1] = (uint8_t)(call->req_len >> 24);
	a->out[2] = (uint8_t)(call->req_len >> 16);
	a->out[3] = (uint8_t)(call->req_len >> 8);
	a->out[4] = (uint8_t)call->req_len;
	if (call->req_len)
		memcpy(a->out + 5, call->req, call->req_len);

#define ADD(s)                                 \
	do {                                   \
		t = curl_slist_append(h, (s)); \
		if (!t)                        \
			oom = true;            \
		else                           \
			h = t;                 \
	} while (0)
	ADD("content-type: application/grpc+proto");
	ADD("te: trailers");
	ADD("grpc-accept-encoding: identity");
	ADD("Expect:");
	ADD("Accept:");
	if (call->timeout_ms > 0) {
		snprintf(line, sizeof(line), "grpc-timeout: %ldm", call->timeout_ms);
		ADD(line);
	}
	if (idem) {
		snprintf(line, sizeof(line), "x-idempotency-key: %s", idem);
		ADD(line);
		snprintf(line, sizeof(line), "x-retry-attempt: %d", attempt_no);
		ADD(line);
	}
	for (const char *const *m = call->metadata; m && *m; m++)
		ADD(*m);
#undef ADD
	if (oom) {
		curl_slist_free_all(h);
		return -ENOMEM;
	}

	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_HTTP_VERSION,
			 c->h2c ? (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
				: (long)CURL_HTTP_VERSION_2TLS);
	/* libcurl before 8.0 fails ("Error in the HTTP2 framing layer") on reusing a cleartext
	 * prior-knowledge connection: one connection per call there (the loopback fake's case) */
	if (c->h2c && curl_version_info(CURLVERSION_NOW)->version_num < 0x080000)
		curl_easy_setopt(c->curl, CURLOPT_FRESH_CONNECT, 1L);
	/* A pack's sandbox has no network but its proxy (HTTP(S)_PROXY from the environment):
	 * every host goes through it, loopback too, by a CONNECT tunnel (HTTP/2 end to end). */
	curl_easy_setopt(c->curl, CURLOPT_NOPROXY, "");
	curl_easy_setopt(c->curl, CURLOPT_HTTPPROXYTUNNEL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)a->out_len);
	curl_easy_setopt(c->curl, CURLOPT_READFUNCTION, read_cb);
	curl_easy_setopt(c->curl, CURLOPT_READDATA, a);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "cordon-modal/0.1 grpc-c");
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, a->errbuf);
	if (c->ca_file)
		curl_easy_setopt(c->curl, CURLOPT_CAINFO, c->ca_file);
	if (call->timeout_ms > 0)
		curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, call->timeout_ms + 200);
	rc = curl_easy_perform(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(h);
	(void)curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);

	if (a->stopped) {
		a->status = GRPC_CANCELLED;
		snprintf(a->message, sizeof(a->message), "stopped by the caller");
	} else if (a->bad) {
		a->status = GRPC_INTERNAL;
		snprintf(a->message, sizeof(a->message), "malformed gRPC answer");
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		a->status = GRPC_DEADLINE_EXCEEDED;
		snprintf(a->message, sizeof(a->message), "deadline exceeded");
	} else if (a->have_status) {
		/* a stream cut mid-message is not an OK */
		if (a->status == GRPC_OK && (a->in_msg || a->hdr_got)) {
			a->status = GRPC_INTERNAL;
			snprintf(a->message, sizeof(a->message), "answer ends mid-message");
		}
	} else if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
		   rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_ISSUER_ERROR) {
		/* not transient: the certificate stays untrusted on every attempt */
		a->status = GRPC_UNAVAILABLE;
		a->fatal = true;
		snprintf(a->message, sizeof(a->message), "TLS: %s server's certificate (%s%s): %s",
			 rc == CURLE_SSL_CACERT_BADFILE ? "cannot verify the" : "untrusted",
			 c->ca_file ? "CA file " : "the system's CAs", c->ca_file ? c->ca_file : "",
			 a->errbuf[0] ? a->errbuf : curl_easy_strerror(rc));
	} else if (rc != CURLE_OK) {
		a->status = GRPC_UNAVAILABLE;
		snprintf(a->message, sizeof(a->message), "transport: %s",
			 a->errbuf[0] ? a->errbuf : curl_easy_strerror(rc));
	} else if (code != 200 || !a->grpc_ct) {
		/* not gRPC: the HTTP status maps as gRPC's HTTP mapping says */
		a->status = code == 429 || code == 502 || code == 503 || code == 504
				    ? GRPC_UNAVAILABLE
			    : code == 401 ? GRPC_UNAUTHENTICATED
			    : code == 403 ? GRPC_PERMISSION_DENIED
			    : code == 404 ? GRPC_UNKNOWN
					  : GRPC_INTERNAL;
		snprintf(a->message, sizeof(a->message), "HTTP %ld", code);
	} else {
		a->status = GRPC_INTERNAL;
		snprintf(a->message, sizeof(a->message), "answer without grpc-status");
	}
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int grpc_invoke(struct grpc_conn *c, const struct grpc_call *call, struct grpc_result *res)
{
	char idem[37];
	long backoff = call->backoff_ms > 0 ? call->backoff_ms : BACKOFF_FIRST_MS;
	long cap = call->backoff_cap_ms > 0 ? call->backoff_cap_ms : BACKOFF_CAP_MS;
	int retries = call->retries > 0 ? call->retries : DEFAULT_RETRIES;
	int r;

	if (call->retryable) {
		r = grpc_uuid(idem);
		if (r < 0)
			return r;
	}
	memset(res, 0, sizeof(*res));
	for (int n = 0;; n++) {
		struct attempt a = { .call = call };

		r = attempt_run(c, call, n, call->retryable ? idem : NULL, &a);
		free(a.out);
		free(a.msg);
		if (r < 0)
			return r;
		res->attempts = n + 1;
		res->messages += a.delivered;
		res->status = a.status;
		snprintf(res->message, sizeof(res->message), "%s", a.message);
		/* a CANCELLED of our own (the caller stopped the call) is final */
		if (!grpc_status_is_transient(a.status) || a.stopped || a.fatal)
			return 0;
		if (!call->retryable || a.delivered > 0 || n >= retries)
			return 0;
		sleep_ms(backoff);
		backoff = backoff * 2 > cap ? cap : backoff * 2;
	}
}

struct one {
	uint8_t *buf;
	size_t len;
	size_t n;
};

static bool keep_one(const uint8_t *msg, size_t len, void *ud)
{
	struct one *o = ud;

	if (o->n++ > 0)
		return false;
	o->buf = malloc(len ? len : 1);
	if (!o->buf)
		return false;
	memcpy(o->buf, msg, len);
	o->len = len;
	return true;
}

int grpc_unary(struct grpc_conn *c, const struct grpc_call *call, uint8_t **ret, size_t *ret_len,
	       struct grpc_result *res)
{
	struct grpc_call u = *call;
	struct one o = {};
	int r;

	u.on_msg = keep_one;
	u.userdata = &o;
	r = grpc_invoke(c, &u, res);
	if (r < 0 || res->status != GRPC_OK) {
		free(o.buf);
		return r;
	}
	if (o.n != 1) {
		free(o.buf);
		res->status = GRPC_INTERNAL;
		snprintf(res->message, sizeof(res->message), "unary answer with %zu messages", o.n);
		return 0;
	}
	*ret = o.buf;
	*ret_len = o.len;
	return 0;
}
