/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Backend references and descriptors (docs/ARCHITECTURE.md, "Backends"). Pure: jansson only, no I/O but the parse of a
 * caller-supplied buffer.
 *
 * A reference names a backend by source: "builtin:<kind>" or "pack:<packId>:<kind>" (the text
 * form, also the storage key of settings and secrets), or as JSON
 * {"source":"builtin","kind":"auto"} / {"source":"pack","packId":"org.example.cloud","kind":"cloud"}.
 *   kind    [a-z][a-z0-9-]*, at most 64 bytes
 *   packId  [a-z0-9][a-z0-9.-]*, at most 128 bytes, dot-separated labels that are not empty
 *
 * A descriptor is data only, as a pack's pack.json or a built-in carries it:
 *   {"kind", "name", "description",
 *    "settings": {"fields": [{"id", "type", "label", "description"?, "required"?,
 *                             "defaultValue"?, "options"? (select only)}]},
 *    "claims": {"platforms", "enforces", "isolation", "networkModes"?, "readOnlyWorkspace"?,
 *               "workspace"?}}
 * Unknown keys anywhere are refused by name. Every string of a descriptor is display text for
 * some client and obeys one rule (backend_text_is_safe()): at most 1 KiB, no control characters
 * (C0 including tab and newline, DEL, C1, U+2028/U+2029), no '<' or '>', no Unicode
 * bidirectional marks, overrides or isolates, no "javascript:" / "vbscript:" and no
 * "on<letters>=" at the start of a word (ASCII case-insensitive) — so nothing in a descriptor
 * can be markup, an event handler, a script URL or a disguised string, however a client shows it. Field ids match [a-zA-Z][a-zA-Z0-9_.-]{0,63}; at most 64
 * fields, 64 options per select field. See backend-descriptor.c for the full list of rules.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/cleanup.h"
#include "ipc/ipc-json.h"

#define BACKEND_KIND_MAX 64
#define BACKEND_PACK_ID_MAX 128
/* "pack:" packId ":" kind NUL */
#define BACKEND_REF_TEXT_MAX (5 + BACKEND_PACK_ID_MAX + 1 + BACKEND_KIND_MAX + 1)

#define BACKEND_FIELD_ID_MAX 64
#define BACKEND_FIELDS_MAX 64
#define BACKEND_OPTIONS_MAX 64
#define BACKEND_TEXT_MAX 1024
/* A whole descriptor document handed to backend_descriptor_parse(). */
#define BACKEND_DESCRIPTOR_MAX_BYTES ((size_t)256 * 1024)

enum backend_source {
	BACKEND_SOURCE_BUILTIN,
	BACKEND_SOURCE_PACK,
};

struct backend_ref {
	enum backend_source source;
	char pack_id[BACKEND_PACK_ID_MAX + 1]; /* "" for a built-in */
	char kind[BACKEND_KIND_MAX + 1];
};

/* Syntax checks of the parts. */
bool backend_kind_is_valid(const char *kind);
bool backend_pack_id_is_valid(const char *pack_id);
bool backend_field_id_is_valid(const char *id);
/* The descriptor text rule above (len bytes of s; jansson strings are valid UTF-8 already, but
 * this checks UTF-8 too). */
bool backend_text_is_safe(const char *s, size_t len);

/* Build a reference from its parts; -EINVAL on bad syntax. pack_id is NULL for a built-in. */
int backend_ref_init(struct backend_ref *ret, enum backend_source source, const char *pack_id,
		     const char *kind);
/* The text form. -EINVAL when it is not exactly "builtin:<kind>" or "pack:<packId>:<kind>". */
int backend_ref_parse(const char *text, struct backend_ref *ret);
/* Write the text form into buf (BACKEND_REF_TEXT_MAX always suffices); -ENOBUFS if too small. */
int backend_ref_format(const struct backend_ref *ref, char *buf, size_t size);
/*
 * From JSON: the object form (keys source, kind, packId — packId exactly when source is "pack")
 * or a string in the text form. Errors name path (e.g. "backend.packId"). -EINVAL.
 */
int backend_ref_from_json(json_t *j, const char *path, struct backend_ref *ret,
			  struct field_error *err);
/* The object form; -ENOMEM. */
int backend_ref_to_json(const struct backend_ref *ref, json_t **ret);
bool backend_ref_equal(const struct backend_ref *a, const struct backend_ref *b);
/* builtin:host, the one unconfined launcher: never a default, never a fallback. */
bool backend_ref_is_unconfined(const struct backend_ref *ref);
/* builtin:auto, the safe default. */
void backend_ref_auto(struct backend_ref *ret);

enum backend_field_type {
	BACKEND_FIELD_STRING,
	BACKEND_FIELD_NUMBER,
	BACKEND_FIELD_BOOLEAN,
	BACKEND_FIELD_SELECT,
	BACKEND_FIELD_SECRET,
	_BACKEND_FIELD_TYPE_MAX,
};
const char *backend_field_type_to_string(enum backend_field_type t);

struct backend_option {
	char *value;
	char *label; /* the value when the descriptor gave a bare string */
};

struct backend_field {
	char *id;
	enum backend_field_type type;
	char *label;
	char *description; /* NULL when absent */
	bool required;
	/* A string (string, select), a number (integer or real) or a boolean; NULL when absent
	 * (never for a secret). */
	json_t *default_value;
	struct backend_option *options; /* select only */
	size_t n_options;
};

enum backend_isolation {
	BACKEND_ISOLATION_NONE, /* unconfined: built-ins only (BACKEND_DESCRIPTOR_BUILTIN) */
	BACKEND_ISOLATION_NAMESPACE,
	BACKEND_ISOLATION_VM,
	BACKEND_ISOLATION_CONTAINER,
	BACKEND_ISOLATION_REMOTE,
	_BACKEND_ISOLATION_MAX,
};
const char *backend_isolation_to_string(enum backend_isolation i);

/* Claims: closed vocabularies, so a client can render and compare them without guessing. */
enum {
	BACKEND_PLATFORM_LINUX = 1U << 0,
	BACKEND_PLATFORM_MACOS = 1U << 1,
	BACKEND_PLATFORM_WINDOWS = 1U << 2,
};
enum {
	/* policy sections a backend can enforce (docs/POLICY.md) */
	BACKEND_ENFORCES_FILESYSTEM = 1U << 0,
	BACKEND_ENFORCES_NETWORK = 1U << 1,
	BACKEND_ENFORCES_LIMITS = 1U << 2,
	BACKEND_ENFORCES_SYSCALLS = 1U << 3,
	BACKEND_ENFORCES_ENV = 1U << 4,
};
enum {
	BACKEND_NETWORK_NONE = 1U << 0,
	BACKEND_NETWORK_LOOPBACK = 1U << 1,
	BACKEND_NETWORK_PROXY = 1U << 2,
	BACKEND_NETWORK_HOST = 1U << 3,
	BACKEND_NETWORK_UNIX = 1U << 4,
};

/* How a backend attaches a workspace (claims.workspace; default direct). */
enum backend_attach {
	BACKEND_ATTACH_DIRECT,	 /* the command sees the host path itself (auto, host) */
	BACKEND_ATTACH_BIND,	 /* an engine binds the host path at a mount point */
	BACKEND_ATTACH_TRANSFER, /* a tar of the tree in at acquire, a tar of it back at release */
	BACKEND_ATTACH_NONE,	 /* no workspace: a request with one is refused */
	_BACKEND_ATTACH_MAX,
};
const char *backend_attach_to_string(enum backend_attach a);

struct backend_claims {
	unsigned platforms;	/* BACKEND_PLATFORM_*, at least one */
	unsigned enforces;	/* BACKEND_ENFORCES_*, may be 0 */
	unsigned network_modes; /* BACKEND_NETWORK_*, 0 when not claimed */
	enum backend_isolation isolation;
	bool read_only_workspace; /* can enforce a read-only workspace */
	enum backend_attach workspace;
};

struct backend_descriptor {
	char *kind;
	char *name;
	char *description;
	struct backend_field *fields;
	size_t n_fields;
	struct backend_claims claims;
};

/* Flags of backend_descriptor_from_json(). */
enum {
	/* The descriptor of a built-in: may claim isolation "none" (builtin:host). A pack never
	 * can. */
	BACKEND_DESCRIPTOR_BUILTIN = 1U << 0,
};

/*
 * Validate j (borrowed) as a descriptor. path prefixes every error's field ("" for a document of
 * its own, "backends[0]" inside a pack manifest). -EINVAL (bad value, unknown key), -E2BIG (too
 * many items, text too long), -ENOMEM; err names the field and says why.
 */
int backend_descriptor_from_json(json_t *j, unsigned flags, const char *path,
				 struct backend_descriptor **ret, struct field_error *err);
/* Parse len bytes (at most BACKEND_DESCRIPTOR_MAX_BYTES, else -EFBIG), duplicate keys refused. */
int backend_descriptor_parse(const char *buf, size_t len, unsigned flags,
			     struct backend_descriptor **ret, struct field_error *err);
/* The normalized document: every optional member explicit (required, options as
 * {"value","label"}); parsing it again gives an equal descriptor. */
int backend_descriptor_to_json(const struct backend_descriptor *d, json_t **ret);
const struct backend_field *backend_descriptor_field(const struct backend_descriptor *d,
						     const char *id);
void backend_descriptor_free(struct backend_descriptor *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct backend_descriptor *, backend_descriptor_free)
#define _cleanup_backend_descriptor_ _cleanup_(backend_descriptor_freep)
