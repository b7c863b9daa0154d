/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One cgroup per sandbox that has cgroup limits: cgroup v2 where launcherd was given a delegated
 * subtree with the pids and memory controllers enabled, else the v1 pids and memory hierarchies
 * (v1/v2 hybrid hosts). Created by the parent right after clone, while the child builds its
 * mount tree, which moves the child in and then lets it go on (the child waits for that before
 * it unshares its cgroup namespace, long before anything in it can fork) — or, for the light
 * spawn, before the clone, the child moving itself in; removed after the sandbox's init is
 * reaped.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum cgroup_kind {
	CGROUP_NONE, /* nothing writable: cgroup limits cannot be enforced */
	CGROUP_V1,
	CGROUP_V2,
};

struct cgroup_setup {
	enum cgroup_kind kind;
	char *v2_base;	   /* v2: <delegated cgroup>/cordon */
	char *pids_base;   /* v1: /sys/fs/cgroup/pids/<ours>/cordon */
	char *memory_base; /* v1: /sys/fs/cgroup/memory/<ours>/cordon */
	bool memsw;	   /* v1: memory.memsw.* exists (swap accounting) */
};

struct sandbox_cgroup {
	char *paths[2]; /* v2: [0] only; v1: [0] pids, [1] memory (NULL when not needed) */
	/* What the exit report reads, opened at creation: pids.events, then memory.oom_control
	 * (v1) or memory.events (v2); -1 when absent. */
	int events_fds[2];
};

/* Find a usable hierarchy and create launcherd's own "cordon" directories. Never fails: a host
 * without one yields CGROUP_NONE. */
void cgroup_setup_probe(struct cgroup_setup *ret);
void cgroup_setup_done(struct cgroup_setup *s);
const char *cgroup_kind_to_string(enum cgroup_kind k);

void sandbox_cgroup_init(struct sandbox_cgroup *cg);
/* Create the sandbox's cgroup(s) named id with the limits (0 = none) and move pid into them;
 * pid 0 (the light spawn, before the clone): instead open each one's cgroup.procs for writing,
 * into ret_procs ({ -1, -1 } else), for the child to move itself in by writing "0". */
int sandbox_cgroup_create(const struct cgroup_setup *s, const char *id, uint64_t pids_max,
			  uint64_t memory_max, pid_t pid, struct sandbox_cgroup *cg,
			  int ret_procs[2]);
/* Which limits were hit during the run. */
void sandbox_cgroup_limits_hit(const struct sandbox_cgroup *cg, bool *ret_pids, bool *ret_oom);
/* Kill every process in the cgroup (v2 cgroup.kill; v1 relies on the pid namespace). */
int sandbox_cgroup_kill(const struct sandbox_cgroup *cg);
/* Close the fds and remove the directories. -EBUSY while a dying task still holds them. */
int sandbox_cgroup_remove(struct sandbox_cgroup *cg);
void sandbox_cgroup_done(struct sandbox_cgroup *cg);
