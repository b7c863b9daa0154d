/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Landlock for launcherd: probe the ABI once at start, then (in the child, after pivot_root and
 * the identity switch) build one ruleset from the plan and restrict the process.
 *
 * The build host's <linux/landlock.h> may predate the running kernel (Debian 12 ships ABI 2
 * headers while the kernel speaks ABI 7), so the later constants and structures are defined
 * here under their upstream values.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/landlock.h>

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13) /* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#endif
#define CORDON_LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)	       /* ABI 4 */
#define CORDON_LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)     /* ABI 4 */
#define CORDON_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define CORDON_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)	       /* ABI 6 */
#define CORDON_LANDLOCK_RULE_NET_PORT 2

/* Rights that make sense on a file (not a directory); the kernel refuses the others there. */
#define LANDLOCK_FILE_RIGHTS                                          \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | \
	 LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* The highest ABI this code knows; newer kernels are used at this level. */
#define LANDLOCK_ABI_KNOWN 7

/* landlock_restrict_self() flags for every sandbox, set once at start (launcherd-audit.c: log
 * denials after exec while its reader runs), else 0. */
extern unsigned landlock_restrict_flags;

/* Map an access name from the plan ("read-file") to its bit; 0 for an unknown name. */
uint64_t landlock_access_from_name(const char *name);
/* Lowest ABI that knows a filesystem right (1 for the original thirteen). */
int landlock_fs_right_abi(uint64_t right);

/* The kernel's Landlock ABI (0: Landlock disabled or absent), capped at LANDLOCK_ABI_KNOWN. */
int landlock_probe_abi(void);
/* Filesystem rights handled at a given ABI. */
uint64_t landlock_fs_rights_for_abi(int abi);

struct plan;
#include <jansson.h>
/*
 * What of plan->landlock this ABI cannot enforce, as plan field names ("landlock.net",
 * "landlock.fs[2]" for a right it lacks), appended to arr. Only meaningful when the plan's
 * Landlock is optional: a required one fails instead.
 */
int landlock_unenforced(const struct plan *plan, int abi, json_t *arr);
/*
 * Child side: restrict the calling process as plan->landlock says, at ABI abi. Returns 0, or
 * -errno with *ret_index set to the fs rule that failed (-1 when not about one rule).
 * -EOPNOTSUPP when a required right or scope is beyond the kernel's ABI.
 */
int landlock_apply(const struct plan *plan, int abi, int *ret_index);
/* landlock_apply() but the restriction: the ruleset, in *ret_ruleset (close-on-exec), to
 * restrict to later; -1 when there is nothing to restrict. */
int landlock_prepare(const struct plan *plan, int abi, int *ret_index, int *ret_ruleset);
