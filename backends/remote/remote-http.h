/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The HTTP client remote packs share (libcurl): one keep-alive handle per client (a client
 * belongs to one thread), connect and total timeouts, retries with backoff on 429 and 5xx and on
 * connection failures honouring Retry-After, cancellation, bodies from memory or streamed from
 * an fd, answers into memory or streamed to a sink (retried only before the sink took a byte; a
 * stream cut after that fails, its error saying how many bytes came), one header of an answer
 * kept on request. The service's credential goes into one header only (the auth header) and
 * is never logged; the client wipes its copy when freed.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

struct rhttp_client;

struct rhttp_opts {
	const char *auth_header;   /* "X-API-Key: …" or NULL; copied, wiped at free */
	const char *user_agent;	   /* or NULL */
	long connect_timeout_ms;   /* 0: 10 s */
	long total_timeout_ms;	   /* per attempt, 0: none (streams) */
	int max_retries;	   /* of a retryable request */
	long backoff_ms;	   /* first backoff; doubles, capped at 10 s */
	const atomic_bool *cancel; /* set: the transfer and any backoff stop (-ECANCELED) */
};

/* The sink of a streamed answer: returns false to stop the transfer (-ECANCELED). */
typedef bool (*rhttp_sink_fn)(const void *data, size_t len, void *userdata);

struct rhttp_request {
	const char *method; /* "GET", "POST", "DELETE" */
	const char *url;
	const char *const *headers; /* extra "Name: value" lines, NULL-terminated, or NULL */
	const void *body;	    /* POST body, or NULL */
	size_t body_len;
	int body_fd; /* >= 0: the body is read from this fd (chunked), never retried */
	const char *content_type;
	bool retry;	       /* idempotent: may be retried */
	bool retry_throttled;  /* not idempotent: retried only on 429 or a refused connection */
	long total_timeout_ms; /* overrides the client's when > 0; < 0: none */
	rhttp_sink_fn sink;    /* 2xx body streamed here instead of into the response */
	void *sink_userdata;
	const char *want_header; /* "Name": its value is kept in resp->header */
};

struct rhttp_response {
	long status;
	char *body; /* NUL-terminated (an error's body even with a sink), or NULL */
	size_t len;
	int attempts;
	char *header;	   /* the value of req->want_header, or NULL */
	size_t sink_bytes; /* body bytes the sink took (a stream cut after some is not retried) */
};

int rhttp_client_new(const struct rhttp_opts *opts, struct rhttp_client **ret);
struct rhttp_client *rhttp_client_free(struct rhttp_client *c);

/* 0 with resp->status set (any status: the caller judges it), or a negative errno for a
 * transport failure after the retries (err: why, never a header's value). */
int rhttp_do(struct rhttp_client *c, const struct rhttp_request *req, struct rhttp_response *resp,
	     char *err, size_t err_size);
void rhttp_response_done(struct rhttp_response *resp);

/* The "message" of a service's JSON error body, else the body's start, else "HTTP <status>". */
void rhttp_error_message(const struct rhttp_response *resp, char *buf, size_t size);

/* jansson helpers: a compact dump (free()), and an answer's body parsed (NULL if not JSON). */
char *rhttp_json_dump(const json_t *j);
json_t *rhttp_json_body(const struct rhttp_response *resp);

/* A query component escaped (free()). */
char *rhttp_escape(const char *s);
