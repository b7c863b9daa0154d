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

struct backend_instance;
struct event_source;
struct controller;
struct policy;
struct ws_snapshot;

struct sandbox {
	struct sandbox *next;
	struct controller *ctl;
	char id[32];
	char *parent;
	json_t *doc;	       /* the effective policy, normalized */
	struct policy *policy; /* the same, parsed and resolved */
	uint64_t owner;	       /* struct client.id of the acquirer; 0 once gone */
	bool detached;
	bool ready;	     /* setup (if any) succeeded */
	char *setup_process; /* the setup hook while it runs */
	uint64_t acquirer;   /* struct client.id waiting for the acquire reply, or 0 */
	json_t *acquire_id;
	json_t *setup; /* the acquire's setup hook request, until it starts */
	/* The lease: the instance it is pinned to (a reference), whether that instance's acquire
	 * succeeded (so release is owed), where it presents the workspace, and for a transfer
	 * backend what was sent. */
	struct backend_instance *bi;
	bool backend_acquired;
	char *mount_point;
	struct ws_snapshot *snapshot;
	bool acquiring;	      /* the backend's acquire (or the workspace's sending) is under way */
	bool release_pending; /* released meanwhile: the release follows the acquire */
	bool releasing;	      /* the release is under way: the sandbox takes no processes */
	struct event_source *release_timer; /* waiting for the killed processes' ends */
	unsigned long long release_deadline;
	uint64_t releaser; /* struct client.id waiting for the release reply, or 0 */
	json_t *release_id;
	json_t *transfer_report; /* the last reconcile's report */
};

/* The sandbox with this id, ready or not, or NULL. */
struct sandbox *sandbox_find(struct controller *c, const char *id);
