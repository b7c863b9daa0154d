/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The backends of installed packs (pack.c) and their provider (pack-provider.c): the pack store
 * and one pack_backend per (pack install, kind). A reinstall makes new ones, and the old ones
 * live on (unlisted) for as long as the provider does, so an instance started from the previous
 * version keeps valid ops until it is disposed.
 */
#pragma once

#include <jansson.h>

#include "backends/backend-descriptor.h"
#include "backends/backend.h"
#include "backends/backend-state.h"
#include "backends/pack/pack-store.h"

/* Timeouts of the pack protocol's calls (docs/PROTOCOL.md "Pack protocol"). */
#define PACK_START_TIMEOUT_MS 10000U
#define PACK_CONFIGURE_TIMEOUT_MS 10000U
#define PACK_PREPARE_TIMEOUT_MS 120000U
#define PACK_PROBE_TIMEOUT_MS 10000U
#define PACK_SPAWN_TIMEOUT_MS 30000U
#define PACK_KILL_TIMEOUT_MS 5000U
#define PACK_ACQUIRE_TIMEOUT_MS 300000U
#define PACK_RELEASE_TIMEOUT_MS 300000U
#define PACK_DISPOSE_TIMEOUT_MS 10000U
#define PACK_INTERACTION_TIMEOUT_MS (5U * 60U * 1000U)

struct pack_backend {
	struct backend_ops ops; /* first: a backend_ops pointer of ours is a pack_backend pointer */
	struct pack_backend *next;
	struct pack_provider *provider;
	unsigned long long generation; /* of the pack entry it was made from */
	char pack_id[BACKEND_PACK_ID_MAX + 1];
	char kind[BACKEND_KIND_MAX + 1];
	char *dir;	  /* the installed pack directory */
	char *executable; /* absolute, inside dir */
	enum pack_network network;
	char **domains;	    /* network "proxy": what the pack's own API needs */
	char **sockets;	    /* host sockets it asked for (absolute paths) */
	char **env;	    /* variables of our environment it asked for (names) */
	json_t *descriptor; /* normalized */
};

int pack_backend_new(struct pack_provider *pp, const struct pack_entry *e,
		     const struct pack_backend_entry *be, struct pack_backend **ret);
void pack_backend_free(struct pack_backend *pb);

/* The provider of source "pack": the enabled packs' backends. */
struct pack_provider {
	struct backend_provider provider; /* first: a provider pointer of ours is one of these */
	struct pack_store *store;
	struct pack_backend *backends;
};
/* Open the store in <state_dir>/packs; -errno with fe saying why. */
int pack_provider_open(const char *state_dir, struct pack_provider **ret, struct field_error *fe);
void pack_provider_free(struct pack_provider *pp);
