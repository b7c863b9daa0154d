/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A minimal gRPC client over libcurl (HTTP/2; cleartext with prior knowledge for an http://
 * base, TLS for https://): application/grpc requests with `te: trailers`, 5-byte length-prefixed
 * messages, the status from the trailers (or from the headers of a trailers-only answer), a
 * deadline sent as grpc-timeout and enforced locally, server streams delivered message by
 * message as they arrive, and retries of UNAVAILABLE and RESOURCE_EXHAUSTED with backoff for a
 * call the caller marks retryable (it then carries x-idempotency-key and x-retry-attempt).
 * Metadata values are never logged; a connection belongs to one thread.
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
	bool retryable;		     /* idempotent: retried on UNAVAILABLE/RESOURCE_EXHAUSTED */
	grpc_msg_fn on_msg;
	void *userdata;
};

struct grpc_result {
	int status;	   /* a gRPC status code */
	char message[256]; /* grpc-message, decoded, or the transport error */
	int attempts;
	size_t messages; /* answer messages delivered */
};

int grpc_conn_new(const char *base_url, struct grpc_conn **ret);
struct grpc_conn *grpc_conn_free(struct grpc_conn *c);

/* 0 with res->status set (GRPC_UNAVAILABLE for a transport failure), or a negative errno. A
 * stream is retried only while no message was delivered. */
int grpc_invoke(struct grpc_conn *c, const struct grpc_call *call, struct grpc_result *res);

/* A unary call: its one answer message copied into *ret (free()). */
int grpc_unary(struct grpc_conn *c, const struct grpc_call *call, uint8_t **ret, size_t *ret_len,
	       struct grpc_result *res);

/* A fresh random UUID (v4) in out[37]. */
int grpc_uuid(char out[37]);
