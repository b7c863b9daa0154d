/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Backend settings: validation of candidate settings against a descriptor, the
 * settings store and the active-selection record.
 *
 * Files, in one state directory (0700, ours; see backend-state.h), each replaced atomically
 * with mode 0600:
 *   settings.json  {"version": 1,
 *                   "backends": {"<ref text>": {"<field id>": <string|number|boolean>, …}, …}}
 *                  Secret fields never appear here (backend-secrets.h keeps them).
 *   active.json    {"backend": "<ref text>", "generation": <integer ≥ 0>,
 *                   "settings": {"<field id>": <string|number|boolean>, …}}
 *                  The selection and the selected backend's settings, committed together by
 *                  one atomic replace: an activation writes this file only, then copies the
 *                  settings into settings.json (backend_settings_store_commit()); at start-up
 *                  the settings here win over settings.json's for that backend, so a crash
 *                  or a failed write between the two never splits them ("settings" absent:
 *                  a file from before, settings.json alone holds them).
 *
 * Settings are keyed by the source-qualified reference and are never removed because a pack is
 * disabled or removed: only backend_settings_store_purge() deletes them.
 *
 * Not thread-safe; one store per process (the controller is single-threaded).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "common/cleanup.h"
#include "backends/backend-descriptor.h"
#include "ipc/ipc-json.h"

/* The longest string, select or secret value a setting may hold. */
#define BACKEND_SETTING_VALUE_MAX 4096

/* A secret the candidate asked to set. */
struct backend_secret_input {
	const struct backend_field *field; /* borrowed from the descriptor */
	char *value; /* not empty; backend_secret_alloc()ed, wiped by ..._update_done() */
};

struct backend_settings_update {
	json_t *settings; /* the non-secret fields given: id → value (owned) */
	struct backend_secret_input *secrets;
	size_t n_secrets;
};
void backend_settings_update_done(struct backend_settings_update *u);

/* Is the secret field_id of the backend being validated configured already? */
typedef bool (*backend_secret_configured_fn)(void *userdata, const char *field_id);

/*
 * Validate candidate (borrowed; an object id → value, null meaning "not given") against d:
 *   - every id must be a field of d ("<path>.<id>": "unknown setting");
 *   - string: a string of at most BACKEND_SETTING_VALUE_MAX bytes; number: a finite number;
 *     boolean: true/false; select: one of the option values; secret: a string;
 *   - a secret with a non-empty value is split out into ret->secrets (to be set); an empty
 *     string means "no change" and is dropped;
 *   - a required field must be given or have a default; a required secret must be set by this
 *     candidate or configured (configured() may be NULL: then nothing is configured).
 * path names the candidate in errors ("settings" when NULL). On failure *ret is untouched and
 * err names the field. -EINVAL, -E2BIG, -ENOMEM.
 */
int backend_settings_validate(const struct backend_descriptor *d, json_t *candidate,
			      const char *path, backend_secret_configured_fn configured,
			      void *userdata, struct backend_settings_update *ret,
			      struct field_error *err);

/*
 * Best effort: overwrite the bytes of every secret value in candidate (jansson's own string
 * storage) with zeros once validated, so the request object does not keep the plaintext.
 */
void backend_settings_scrub_secrets(const struct backend_descriptor *d, json_t *candidate);

/* The effective non-secret settings for configure(): stored values over the descriptor's
 * defaults, fields of d only (values stored for ids d no longer has are left out). */
int backend_settings_effective(const struct backend_descriptor *d, json_t *stored, json_t **ret);

struct backend_settings_store;

/*
 * Open the store in dir (created 0700 when missing; refused with -EPERM when it is not ours or
 * is accessible by others). Returns 0, or 1 when settings.json was corrupt: it was moved to
 * *ret_aside (a fresh path the caller frees and should report, as err says why) and the store
 * starts empty. A file with the wrong owner or mode is -EPERM, not corruption.
 */
int backend_settings_store_open(const char *dir, struct backend_settings_store **ret,
				char **ret_aside, struct field_error *err);
void backend_settings_store_free(struct backend_settings_store *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct backend_settings_store *, backend_settings_store_free)
#define _cleanup_backend_settings_store_ _cleanup_(backend_settings_store_freep)

/* A copy of the settings stored for ref: 1, or 0 with an empty object when none are. */
int backend_settings_store_get(struct backend_settings_store *s, const struct backend_ref *ref,
			       json_t **ret);
/*
 * Store settings (borrowed; copied) for ref, replacing what was stored. They must be an object
 * of field id → string/number/boolean (validate them with backend_settings_validate() first;
 * this only re-checks the shape, naming "settings.<id>"). The file is replaced atomically; on
 * any failure the file and the in-memory state stay as they were.
 */
int backend_settings_store_put(struct backend_settings_store *s, const struct backend_ref *ref,
			       json_t *settings, struct field_error *err);
/*
 * The settings of ref were committed elsewhere (with the selection, in active.json): take them
 * (borrowed; copied) and replace settings.json. Unlike _put(), the store keeps them in memory
 * even when the file cannot be written (returned -errno, err says why): active.json holds them
 * until the next write of settings.json carries them. 0 written, 1 unchanged (nothing written).
 */
int backend_settings_store_commit(struct backend_settings_store *s, const struct backend_ref *ref,
				  json_t *settings, struct field_error *err);
/* Explicitly forget ref's settings (never called on disable). 1 removed, 0 nothing stored. */
int backend_settings_store_purge(struct backend_settings_store *s, const struct backend_ref *ref);

/* The active selection. */
struct backend_active {
	struct backend_ref ref;
	uint64_t generation;
	/* The selected backend's settings committed with it: borrowed when saving (NULL: none);
	 * owned by the caller after a load (NULL when the file has none). */
	json_t *settings;
};

enum {
	BACKEND_ACTIVE_LOADED = 0,   /* read from active.json */
	BACKEND_ACTIVE_DEFAULT = 1,  /* no active.json: builtin:auto, generation 0 */
	BACKEND_ACTIVE_FALLBACK = 2, /* active.json unusable (torn, invalid, wrong owner or mode,
				      * unconfined and not allowed): builtin:auto, generation 0,
				      * err says why */
};

/*
 * Read active.json. Never yields an unconfined backend (builtin:host) unless allow_unconfined.
 * Returns one of BACKEND_ACTIVE_*, or -ENOMEM; ret->settings (json_decref() it) only with
 * BACKEND_ACTIVE_LOADED.
 */
int backend_active_load(struct backend_settings_store *s, bool allow_unconfined,
			struct backend_active *ret, struct field_error *err);
/* Replace active.json atomically. -EPERM (nothing written) for an unconfined backend unless
 * allow_unconfined. */
int backend_active_save(struct backend_settings_store *s, const struct backend_active *a,
			bool allow_unconfined);
/* What backend_active_save() would write: the path of active.json and its text (both malloc'd),
 * for a caller that writes it elsewhere (a thread). Same refusals. */
int backend_active_text(struct backend_settings_store *s, const struct backend_active *a,
			bool allow_unconfined, char **ret_path, char **ret_text, size_t *ret_len);
