/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libpacklib.a: what the pack programs cordon ships share (cordon-docker-pack, -e2b-pack,
 * -daytona-pack, -modal-pack; each runs as its own process, as the user, started by the
 * controller): the JSON-RPC connection to the controller on the pack's stdin, the method table
 * it serves, and the small checks every pack makes the same way. docs/PROTOCOL.md §6 (packs)
 * is the protocol; each pack's README says what its methods do.
 *
 * One thread reads requests and calls the method's handler; handlers reply with
 * packlib_reply()/packlib_reply_error() from any thread (a process's exit, say, is sent from the
 * thread that follows it): sending is serialized.
 */
#pragma once

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct packlib_ops {
	const char *program; /* "cordon-e2b-pack": names the pack in its messages */
	void (*configure)(json_t *id, json_t *params);
	void (*prepare)(json_t *id);
	void (*probe)(json_t *id); /* isAvailable */
	void (*spawn)(json_t *id, json_t *params, int *fds, size_t n_fds);
	void (*acquire)(json_t *id, json_t *params, int *fds, size_t n_fds);
	void (*release)(json_t *id, json_t *params, int *fds, size_t n_fds);
	void (*kill)(json_t *id, json_t *params);
	void (*dispose)(json_t *id);
	/* Started in a thread of its own before the first request (a keepalive, a watchdog); it
	 * should return once packlib_stopping is set. NULL: none. */
	void *(*background)(void *);
};

/* Set when the controller closed the connection: long-running work (retries, polls,
 * background threads) stops. Also the cancel flag of the packs' HTTP clients. */
extern atomic_bool packlib_stopping;

/* Serves the controller on stdin until it closes the connection; returns main()'s exit
 * status. Stdin becomes /dev/null and stdout a copy of stderr, so that nothing a library
 * prints can corrupt the protocol. The fds a request carries are closed after its handler
 * returns: a handler keeps one by duplicating it (packlib_fd_at). */
int packlib_main(const struct packlib_ops *ops);

/* Sends m (a reply or a notification) and drops the reference; NULL is ignored. */
void packlib_send(json_t *m);
void packlib_reply(json_t *id, json_t *result);
/* The packs' one error code (-32007, backend failure) with the step that failed, if any. */
void packlib_reply_error(json_t *id, const char *message, const char *step);

/* Copies settings[key] into buf when it is a string (truncated to size); else leaves buf. */
void packlib_copy_setting(json_t *settings, const char *key, char *buf, size_t size);
/* Removes trailing slashes (a base URL). */
void packlib_strip_slash(char *s);
/* A lease id as the controller makes them: 1..64 of [A-Za-z0-9_-]. */
bool packlib_lease_ok(const char *lease);
/* A CLOEXEC duplicate of the request's fd named by stdio[name] (an index into fds), or -1. */
int packlib_fd_at(json_t *stdio, const char *name, int *fds, size_t n_fds);
/* Microseconds since t0 (CLOCK_MONOTONIC). */
long packlib_usec_since(const struct timespec *t0);
