/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host interactions (docs/ARCHITECTURE.md, "Host interactions"): a launcher needs an answer from the person now — a confirmation,
 * a line of input, a secret, a choice. The controller sends a JSON-RPC *request* to the client
 * that started the operation (method "host.interaction", docs/PROTOCOL.md §5) and waits for its
 * response without blocking anything else.
 *
 * Wire params: {"kind": "confirm"|"input"|"secret-input"|"choice", "prompt": text,
 *               "options": [{"value", "label"}…] (choice), "field": id (secret-input),
 *               "backend": ref text (secret-input)}
 * Answers (the response's result): {"value": true|false} (confirm), {"value": "text"} (input,
 * secret-input, choice: one of the option values), or {"unavailable": true} when the client
 * cannot present it. An error response counts as unavailable.
 */
#pragma once

#include <stdint.h>

#include <jansson.h>

struct controller;
struct client;

/* The default wait for an answer when the caller passes 0. */
#define INTERACTION_TIMEOUT_DEFAULT_MS (5U * 60U * 1000U)
/* Outstanding interactions per client; more are refused with -EBUSY. */
#define INTERACTION_PER_CLIENT_MAX 16

typedef void (*interaction_cb)(int r, json_t *answer, void *ud);

/*
 * Ask the client with id origin_client_id. params (borrowed) holds "prompt" (required text),
 * "options" (choice: 1–64 strings or {"value","label"} objects), and for secret-input "backend"
 * (reference text) and "field" (the secret field to fill). Unknown members are -EINVAL.
 *
 * Returns 0 and then calls cb exactly once, never from inside this call, with:
 *   r = 0, answer {"value": …}            the client answered (for choice: a listed value);
 *   r = -ENOTTY                           the client answered unavailable (or with an error);
 *   r = -ETIMEDOUT                        no answer within timeout_ms (0: the default);
 *   r = -ECONNRESET                       the client went away;
 *   r = -EBADMSG                          the answer did not fit the kind;
 *   r = other -errno                      secret-input: the secret store refused the value.
 * answer is borrowed for the duration of cb and NULL when r < 0.
 *
 * secret-input: the value goes straight into the secret store for (backend, field) before cb
 * runs; an empty answer means "no change", as for every secret input. cb's answer is
 * {"configured": bool, "changed": bool, "value": "…"}: "value" is the plaintext (absent when
 * unchanged) and its bytes are overwritten with zeros as soon as cb returns — cb must copy what
 * it needs into wipeable memory (backend_secret_strndup()) and must not keep a reference.
 * Nothing here logs or emits the value.
 *
 * Returns < 0 without calling cb: -ESRCH no such client, -EINVAL bad kind or params, -EBUSY too
 * many outstanding for that client, -ENOMEM.
 */
int controller_interaction_ask(struct controller *c, uint64_t origin_client_id, const char *kind,
			       json_t *params, unsigned timeout_ms,
			       void (*cb)(int r, json_t *answer, void *ud), void *ud);

/* controller-server.c hands every response (result or error) a client sends here. */
void controller_interaction_response(struct client *cl, json_t *id, json_t *result, json_t *error);
/* A client is going away: its outstanding interactions fail with -ECONNRESET (asynchronously). */
void controller_interactions_client_gone(struct controller *c, struct client *cl);
/* Shutdown: drop every outstanding interaction without calling back. */
void controller_interactions_free(struct controller *c);
