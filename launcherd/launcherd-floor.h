/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The admin floor, /etc/cordon/launcherd.json: what no request can weaken. Read once at start;
 * launcherd refuses to start when the file is not a root-owned regular file, or is group- or
 * world-writable, or does not parse. A missing file means the built-in defaults below.
 *
 *   {
 *     "require": ["landlock", "seccomp", "netns"],   plan layers that must be present
 *     "maxNetwork": "proxy",                          none < loopback < proxy < host
 *     "hostMode": false,                              unconfined "host" launchers allowed
 *     "allowUsers": ["alice"], "allowGroups": ["cordon"],   absent: every local user
 *     "perUser": {"maxSandboxes": 64, "pidsMax": 4096, "memoryMaxBytes": 8589934592},
 *     "packSockets": ["/var/run/docker.sock"]        host sockets a pack may be given
 *   }
 *
 * Defaults: nothing required beyond launcherd's own layers, maxNetwork "proxy", hostMode false,
 * every user, 256 live sandboxes per user, no pids or memory ceiling, no socket for packs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "ipc/ipc-json.h"
#include "launcherd/launcherd-plan.h"

struct floor {
	bool require_landlock;
	bool require_seccomp; /* the plan must carry its own filter (the floor filter always runs) */
	bool require_netns;   /* network "host" refused */
	enum plan_network max_network;
	bool host_mode;
	char **allow_users;  /* NULL: everyone */
	char **allow_groups; /* NULL: no group-based allowance beyond allow_users */
	uint64_t max_sandboxes;
	/* Per-user ceiling over live sandboxes' plan.cgroup.pidsMax; 0: none. Built in: 65536
	 * (a plan without a pids limit is bounded by its requester's own RLIMIT_NPROC, which every
	 * sandbox starts from); set by the admin (pids_max_required), a plan must carry one. */
	uint64_t pids_max;
	bool pids_max_required;
	uint64_t memory_max; /* idem, bytes; a plan must carry one when set */
	/* Host sockets (absolute paths) the controller may hand a pack process that asks for
	 * them in its manifest (reported in hello; launcherd itself serves no pack). */
	char **pack_sockets;
};

#define FLOOR_FILE_MAX (64U * 1024U)

/* The text of a floor file (at most FLOOR_FILE_MAX bytes) over the built-in defaults: 0, or
 * -EINVAL (or -EFBIG) with err naming the field. What floor_load() does once the file passed its
 * checks; "{}" gives the built-in defaults. */
int floor_parse(const char *text, size_t len, struct floor *ret, struct field_error *err);

/* Load path (missing: defaults). Errors: -EPERM (ownership/mode), -EINVAL (content, with
 * err naming the field), or the open/read error. */
int floor_load(const char *path, struct floor *ret, struct field_error *err);
void floor_done(struct floor *f);

/* Is this user allowed at all? groups: the user's groups (primary included). */
bool floor_user_allowed(const struct floor *f, uid_t uid, const gid_t *groups, size_t n_groups);

/* Does the plan meet the floor? -EPERM with err naming the plan field. */
int floor_check_plan(const struct floor *f, const struct plan *p, struct field_error *err);
/* The same; *ret_rule (when not NULL) names the rule that refused, one word for the admin's
 * trail: require-landlock, require-seccomp, require-netns, max-network, pids-max-required,
 * memory-max-required; NULL when none did. */
int floor_check_plan_rule(const struct floor *f, const struct plan *p, const char **ret_rule,
			  struct field_error *err);
/* The floor's rules every plan is held to, as the admin's trail says them: comma-separated
 * words (allow-list, require-landlock, require-seccomp, require-netns, max-network-NET,
 * pids-max-required, memory-max-required); max-network is always there. */
void floor_rules(const struct floor *f, char *buf, size_t size);

/* The floor as reported in hello. */
json_t *floor_to_json(const struct floor *f);
