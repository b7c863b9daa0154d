/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A minimal gRPC client over libcurl (HTTP/2; cleartext with prior knowledge for an http://
 * base, TLS for https://): application/grpc requests with `te: trailers`, 5-byte length-prefixed
 * messages, the status from the trailers (or from the headers of a trailers-only answer), a
 * deadline sent as grpc-timeout and enforced locally, server streams delivered message by
 * message as they arrive, and retries with exponential backoff of the transient statuses
 * (DEADLINE_EXCEEDED, UNAVAILABLE, INTERNAL, UNKNOWN, and a CANCELLED the server sent) for a call
 * the caller marks retryable: it then carries one x-idempotency-key across its attempts and
 * x-retry-attempt. A TLS failure (an untrusted certificate, an unreadable CA file) is never
 * retried. Metadata values are never logged; a connection belongs to one thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	GRPC_OK = 0,
	GRPC_CANCELLED = 1,
	GRPC_UNKNOWN = 2,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5,
	GRPC_PERMISSION_DENIED = 7,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
	GRPC_UNAUTHENTICATED = 16,
};

struct grpc_conn;

/* One message of the answer; returns false to stop the call (status GRPC_CANCELLED). */
typedef bool (*grpc_msg_fn)(const uint8_t *msg, size_t len, void *userdata);

struct grpc_call {
	const char *path;   /* "/pkg.Service/Method" */
	const uint8_t *req; /* the encoded request message */
	size_t req_len;
	const char *const *metadata; /* "name: value" lines, NULL-terminated, or NULL */
	long timeout_ms;	     /* deadline of one attempt; 0: none */
	bool retryable;		     /* safe to retry: transient statuses are retried */
	int retries;		     /* retries after the first attempt; 0: 3 */
	long backoff_ms;	     /* the first retry's delay, doubled each time; 0: 100 ms */
	long backoff_cap_ms;	     /* the longest delay; 0: 1 s */
	grpc_msg_fn on_msg;
	void *userdata;
};

struct grpc_result {
	int status;	   /* a gRPC status code */
	char message[256]; /* grpc-message, decoded, or the transport error */
	int attempts;
	size_t messages; /* answer messages delivered */
};

/* ca_file: a PEM bundle trusted for an https:// base instead of the system's, or NULL. */
int grpc_conn_new(const char *base_url, const char *ca_file, struct grpc_conn **ret);
struct grpc_conn *grpc_conn_free(struct grpc_conn *c);

/* Whether a status is one a retryable call retries (CANCELLED: when the server sent it). */
bool grpc_status_is_transient(int status);

/* 0 with res->status set (GRPC_UNAVAILABLE for a transport failure), or a negative errno. A
 * stream is retried only while no message was delivered. */
int grpc_invoke(struct grpc_conn *c, const struct grpc_call *call, struct grpc_result *res);

/* A unary call: its one answer message copied into *ret (free()). */
int grpc_unary(struct grpc_conn *c, const struct grpc_call *call, uint8_t **ret, size_t *ret_len,
	       struct grpc_result *res);

/* A fresh random UUID (v4) in out[37]. */
int grpc_uuid(char out[37]);
