/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Modal's sandbox API over gRPC (grpc-curl.h, messages from modal-subset.proto): the control
 * plane (token id and secret as metadata on every call, an auth token from AuthTokenGet refreshed
 * before it expires and once more when the service says it expired; app, sandbox create, task id,
 * terminate, list by tag) and the task command router (its JWT as a bearer token; exec start,
 * stdio read resumed at its offset after a cut, stdin write with EOF, wait). The secret goes
 * into the x-modal-token-secret header only; the client wipes its copies when freed. Each
 * struct belongs to one thread: a router per thread (modal_router_dup).
 * Returns: negative errno (-EACCES unauthenticated or denied, -ENOENT not found, -ETIMEDOUT,
 * -EAGAIN unavailable after the retries, -EPROTO anything else) with msg set to the service's
 * message.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct modal_client;
struct modal_router;

struct modal_sandbox_spec {
	const char *app_id;
	const char *image_id;
	const char *workdir;		  /* or NULL */
	const char *const *env;		  /* "NAME=value", NULL-terminated, or NULL */
	const char *tag_name, *tag_value; /* or NULL */
	uint32_t milli_cpu, memory_mb;	  /* 0: the service's default */
	uint32_t timeout_secs;
	bool network_access;
};

/* ca_file: a PEM bundle trusted for the API and the command router instead of the system's CAs,
 * or NULL. */
int modal_client_new(const char *server_url, const char *ca_file, const char *token_id,
		     const char *token_secret, struct modal_client **ret);
struct modal_client *modal_client_free(struct modal_client *c);

/* A fresh auth token unless the one held is good for a while yet. */
int modal_auth(struct modal_client *c, char *msg, size_t msg_size);
/* How many AuthTokenGet calls succeeded so far. */
unsigned modal_auth_count(const struct modal_client *c);

int modal_app_get_or_create(struct modal_client *c, const char *app, const char *environment,
			    char **app_id, char *msg, size_t msg_size);
int modal_sandbox_create(struct modal_client *c, const struct modal_sandbox_spec *s,
			 char **sandbox_id, char *msg, size_t msg_size);
/* Waits until the sandbox's task runs: its id, or -ENOENT with msg when it ended. */
int modal_sandbox_task_id(struct modal_client *c, const char *sandbox_id, char **task_id, char *msg,
			  size_t msg_size);
int modal_sandbox_terminate(struct modal_client *c, const char *sandbox_id, char *msg,
			    size_t msg_size);
/* The running sandboxes of an app carrying a tag: a NULL-terminated array (free each, then it). */
int modal_sandbox_list(struct modal_client *c, const char *app_id, const char *tag_name,
		       const char *tag_value, char ***ids, char *msg, size_t msg_size);

/* Builds an image from a registry reference (`FROM ref`, then the Dockerfile commands, a
 * NULL-terminated array or NULL) with the environment's image builder version, waiting up to
 * wait_secs for its build while its log goes to progress line by line (control characters
 * flattened). An image built before answers at once. Returns its id; -EIO with the service's
 * account of a failed build; -EAGAIN when it still builds at wait_secs (the build goes on). */
typedef void (*modal_progress_fn)(const char *line, void *userdata);
int modal_image_build(struct modal_client *c, const char *app_id, const char *environment,
		      const char *ref, const char *const *commands, unsigned wait_secs,
		      modal_progress_fn progress, void *userdata, char **image_id, char *msg,
		      size_t msg_size);

int modal_router_open(struct modal_client *c, const char *task_id, struct modal_router **ret,
		      char *msg, size_t msg_size);
int modal_router_dup(const struct modal_router *r, struct modal_router **ret);
struct modal_router *modal_router_free(struct modal_router *r);

/* exec_id: the client's UUID, which makes a retried start idempotent. */
int modal_exec_start(struct modal_router *r, const char *const *argv, const char *workdir,
		     const char *const *env, uint32_t timeout_secs, char exec_id[37], char *msg,
		     size_t msg_size);
/* The command's fd (0 stdout, 1 stderr) streamed into sink until its end; a cut stream is
 * resumed at the offset reached. The sink returns false to stop (-ECANCELED). */
typedef bool (*modal_sink_fn)(const void *data, size_t len, void *userdata);
int modal_exec_read(struct modal_router *r, const char *exec_id, unsigned fd, modal_sink_fn sink,
		    void *userdata, char *msg, size_t msg_size);
int modal_exec_write(struct modal_router *r, const char *exec_id, uint64_t offset, const void *data,
		     size_t len, bool eof, char *msg, size_t msg_size);
/* *code >= 0: the exit code; else *signal is the signal that ended the command. */
int modal_exec_wait(struct modal_router *r, const char *exec_id, int *code, int *signal, char *msg,
		    size_t msg_size);
