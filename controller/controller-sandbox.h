/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Acquired sandboxes, the table (controller-sandbox.c) and the leases (controller-lease.c): a
 * policy resolved once for a workspace, an optional trusted setup hook that must succeed, then
 * any number of processes under that policy or a narrowing of it, until release.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

struct controller;
struct policy;

struct sandbox {
	struct sandbox *next;
	struct controller *ctl;
	char id[32];
	char *parent;
	json_t *doc;	       /* the effective policy, normalized */
	struct policy *policy; /* the same, parsed and resolved */
	uint64_t owner;	   /* struct client.id of the acquirer; 0 once gone */
	bool detached;
	bool ready;		 /* setup (if any) succeeded */
	char *setup_process;	 /* the setup hook while it runs */
	uint64_t acquirer; /* struct client.id waiting for the acquire reply, or 0 */
	json_t *acquire_id;
};

/* The sandbox with this id, ready or not, or NULL. */
struct sandbox *sandbox_find(struct controller *c, const char *id);
