/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The secret store: values of secret setting fields, encrypted at rest.
 *
 * Files, in one state directory (0700, ours; see backend-state.h):
 *   secrets.key   32 random bytes, mode 0600, created on first set() (written to a temp file
 *                 made with O_EXCL, then link()ed into place so it appears whole or not at all).
 *                 Refused (-EPERM) when it is a symlink, not a regular file, not ours, or has
 *                 any group/other permission bit; -EBADMSG when it is not exactly 32 bytes.
 *   secrets.json  {"version": 1, "cipher": "xsalsa20poly1305",
 *                  "values": {"<ref text>": {"<field id>": "<base64(nonce ‖ ciphertext)>"}}}
 *                 mode 0600, replaced atomically.
 *
 * Each value is sealed with crypto_secretbox_easy() (XSalsa20-Poly1305) under a random 24-byte
 * nonce and a per-value key BLAKE2b-256(key = secrets.key, "cordon-secret-v1\0<ref>\0<field>"),
 * so a ciphertext moved to another backend or field fails authentication like a tampered one
 * or a wrong key: -EBADMSG, never garbage.
 *
 * Nothing here logs; errors name the reference and field only, never a value. Clients only ever
 * learn backend_secrets_configured(); backend_secrets_resolve() is for the controller's
 * activation path and returns wipeable memory.
 *
 * Not thread-safe; one store per process.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "common/cleanup.h"
#include "backends/backend-descriptor.h"
#include "ipc/ipc-json.h"

struct backend_secrets;

/*
 * Open the store in dir (created 0700 when missing; -EPERM when not ours or accessible by
 * others). Returns 0, or 1 when secrets.json was corrupt: it was moved to *ret_aside (the caller
 * frees and reports it; err says why) and the store starts empty. The key is not read until it
 * is needed.
 */
int backend_secrets_open(const char *dir, struct backend_secrets **ret, char **ret_aside,
			 struct field_error *err);
/* Wipes the key from memory. */
void backend_secrets_free(struct backend_secrets *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct backend_secrets *, backend_secrets_free)
#define _cleanup_backend_secrets_ _cleanup_(backend_secrets_freep)

/*
 * Encrypt and store value (a non-empty C string of at most BACKEND_SETTING_VALUE_MAX bytes;
 * "" is -EINVAL: "no change" is the settings layer's business) for ref's field, replacing any
 * previous value. Creates secrets.key when missing (-ENOKEY if values exist without it). The
 * file is replaced atomically; on failure nothing changes.
 */
int backend_secrets_set(struct backend_secrets *s, const struct backend_ref *ref, const char *field,
			const char *value, struct field_error *err);
/* Remove a value: 1 removed, 0 was not set. */
int backend_secrets_clear(struct backend_secrets *s, const struct backend_ref *ref,
			  const char *field, struct field_error *err);
/* Remove every value of ref (explicit purge; never on disable): 1 removed some, 0 none. */
int backend_secrets_purge(struct backend_secrets *s, const struct backend_ref *ref,
			  struct field_error *err);
/* The only read a client gets: whether a value is stored. */
bool backend_secrets_configured(struct backend_secrets *s, const struct backend_ref *ref,
				const char *field);
/*
 * Decrypt ref's field into *ret: backend_secret_alloc()ed memory, free it with
 * backend_secret_free() (or declare it _cleanup_secret_). -ENOENT not configured, -ENOKEY
 * secrets.key missing, -EPERM key file refused, -EBADMSG authentication failed (tampered file,
 * moved value or wrong key).
 */
int backend_secrets_resolve(struct backend_secrets *s, const struct backend_ref *ref,
			    const char *field, char **ret, struct field_error *err);

/*
 * Wipeable memory for plaintext secrets: zeroed, whole pages of its own (so locking one never
 * unlocks another), locked with sodium_mlock() where RLIMIT_MEMLOCK allows (failure ignored)
 * and excluded from core dumps. Holds len bytes plus a NUL. Released with
 * backend_secret_free(): sodium_memzero() over the whole allocation (even if the string was
 * shortened), unlock, free(). Plain free() and _cleanup_erase_ are safe too, but wipe less.
 */
char *backend_secret_alloc(size_t len);
char *backend_secret_strndup(const char *s, size_t len);
void backend_secret_free(char *p);
static inline void backend_secret_freep(char **p)
{
	backend_secret_free(*p);
}
#define _cleanup_secret_ _cleanup_(backend_secret_freep)
