/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The backends of installed packs (controller-backend-pack.c) and their registry
 * (controller-packs.c). One pack_backend per (pack install, kind): a reinstall makes new ones,
 * and the old ones live on (unlisted) for as long as the controller runs, so an instance
 * started from the previous version keeps valid ops until it is disposed.
 */
#pragma once

#include <jansson.h>

#include "controller/backend-descriptor.h"
#include "controller/controller-backend.h"
#include "controller/pack-store.h"

/* Timeouts of the pack protocol's calls (docs/PROTOCOL.md "Pack protocol"). */
#define PACK_START_TIMEOUT_MS 10000U
#define PACK_CONFIGURE_TIMEOUT_MS 10000U
#define PACK_PREPARE_TIMEOUT_MS 120000U
#define PACK_PROBE_TIMEOUT_MS 10000U
#define PACK_SPAWN_TIMEOUT_MS 30000U
#define PACK_KILL_TIMEOUT_MS 5000U
#define PACK_DISPOSE_TIMEOUT_MS 10000U
#define PACK_INTERACTION_TIMEOUT_MS (5U * 60U * 1000U)

struct pack_backend {
	struct backend_ops ops; /* first: a backend_ops pointer of ours is a pack_backend pointer */
	struct pack_backend *next;
	struct controller *ctl;
	unsigned long long generation; /* of the pack entry it was made from */
	char pack_id[BACKEND_PACK_ID_MAX + 1];
	char kind[BACKEND_KIND_MAX + 1];
	char *dir;	  /* the installed pack directory */
	char *executable; /* absolute, inside dir */
	enum pack_network network;
	json_t *descriptor; /* normalized */
};

int pack_backend_new(struct controller *c, const struct pack_entry *e,
		     const struct pack_backend_entry *be, struct pack_backend **ret);
void pack_backend_free(struct pack_backend *pb);
