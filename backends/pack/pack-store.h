/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The installed packs, in the controller's state directory (0700, ours):
 *
 *   packs/<id>/          a copy of the pack directory as installed: regular files and
 *                        directories only (symlinks, devices, fifos and sockets are refused at
 *                        install), owner-only modes (0700 directories, 0600 or 0700 files),
 *                        at most PACK_COPY_MAX_FILES entries and PACK_COPY_MAX_BYTES bytes
 *   packs/.new-<id>-XXXXXX, packs/.old-<id>-XXXXXX
 *                        an install or a removal in progress (swept at open)
 *   packs.json           {"version": 1, "packs": {"<id>": {"enabled": true}}}, replaced
 *                        atomically (backend-state.h)
 *   pack-state/<id>/     the pack process's private, writable state (0700); kept on disable and
 *                        remove, like the pack's settings and secrets
 *
 * Install copies into a fresh temporary directory, validates the manifest *of the copy* (what
 * was checked is what runs), then renames it into place: a pack appears whole or not at all.
 * An id that is installed already is replaced only when asked (reinstall/upgrade): the new copy
 * and the old directory are swapped with one renameat2(RENAME_EXCHANGE), then the old one is
 * deleted. Its enabled state is kept; a new pack is enabled.
 */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "common/cleanup.h"
#include "backends/pack/pack-manifest.h"
#include "ipc/ipc-json.h"

#define PACK_COPY_MAX_FILES 4096
#define PACK_COPY_MAX_BYTES ((unsigned long long)256 * 1024 * 1024)
#define PACK_COPY_MAX_DEPTH 16

struct pack_entry {
	struct pack_entry *next;
	char *dir; /* packs/<id>, absolute */
	struct pack_manifest *manifest;
	bool enabled;
	unsigned long long generation; /* bumped by every (re)install in this process */
};

struct pack_store;

/* Open (creating packs/ 0700 when missing) and load every installed pack. A pack whose manifest
 * no longer validates is skipped with a warning (it cannot be enabled until reinstalled). */
int pack_store_open(const char *state_dir, struct pack_store **ret, struct field_error *err);
void pack_store_free(struct pack_store *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct pack_store *, pack_store_free)

struct pack_entry *pack_store_find(struct pack_store *s, const char *id);
struct pack_entry *pack_store_first(struct pack_store *s);
/* packs/../pack-state/<id>, created 0700 when create; *ret malloc'd. */
int pack_store_state_dir(struct pack_store *s, const char *id, bool create, char **ret);

/*
 * Install the pack in src_dir (absolute). -EEXIST when its id is installed and !replace. err
 * names the manifest field ("backends[0].descriptor.name") or the file ("file: bin/x") that
 * was refused. *ret_entry is the new entry (borrowed from the store); *ret_replaced says
 * whether an installed pack was replaced.
 */
int pack_store_install(struct pack_store *s, const char *src_dir, bool replace,
		       struct pack_entry **ret_entry, bool *ret_replaced, struct field_error *err);
int pack_store_set_enabled(struct pack_store *s, const char *id, bool enabled);
/* Delete the pack's files and its record. -ENOENT when not installed. */
int pack_store_remove(struct pack_store *s, const char *id);

/* {"id", "version", "description", "enabled", "directory", "backends": [ref…]} */
json_t *pack_entry_to_json(const struct pack_entry *e);
