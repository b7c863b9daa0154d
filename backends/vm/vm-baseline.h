/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * builtin:vm baselines: a VM's state saved right after its agent's hello (before any workload,
 * clock, entropy or workspace), restored instead of a cold boot by later VMs of the same
 * configuration. See vm-baseline.c.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A file's sha256, kept while the file's identity (device, inode, size, mtime) holds. */
struct vmb_digest {
	dev_t dev;
	ino_t ino;
	off_t size;
	long long mtime_ns;
	char hex[65];
};

/* The backend's baseline settings and what it learnt about its binaries. */
struct vmb_config {
	char *dir; /* the cache directory (0700) */
	unsigned max_count;
	uint64_t max_bytes;
	uint64_t epoch;
	uid_t owner;
	struct vmb_digest qemu, firmware, kernel, initrd;
	char qemu_version[128];
};

/* What one keeper does with a baseline: built by the controller before the fork, used by the
 * keeper (system calls only), freed by the controller after the fork. */
struct vmb_job {
	int dir_fd;
	int artifact_fd;     /* restore: the artifact, flock()ed shared; else -1 */
	bool restore;	     /* else: save one at the agent's hello */
	uint8_t want[32];    /* restore: the manifest's digest of the artifact */
	uint64_t want_bytes; /* and its size */
	char key[65];	     /* the file names: KEY.vmstate, KEY.json */
	char *identity;	     /* the manifest's "identity" (compact JSON) */
	char **restore_argv; /* the cold argv + -S -incoming fd:5 */
};

/* The baseline settings of settings (NULL, no error: baselines are off). */
int vmb_configure(json_t *settings, const char *home, uid_t owner, struct vmb_config **ret,
		  const char **error);
void vmb_config_free(struct vmb_config *c);
/* The baseline settings, appended to the descriptor's settings.fields. */
void vmb_descriptor_fields(json_t *desc);

/*
 * The job for a VM started with argv (QMP on fd 4 already in it). *reason is set (and an event
 * is due) when a baseline existed but was refused; the job then saves a fresh one, or is NULL
 * when baselines cannot be used now.
 */
int vmb_plan(struct vmb_config *c, const char *qemu, const char *kernel, const char *initrd,
	     char *const *argv, const char *accel, unsigned memory_mib, struct vmb_job **ret,
	     char *reason, size_t reason_size);
void vmb_job_free(struct vmb_job *j);
/* Evict the least recently used baselines beyond the count and byte limits (not in use), and,
 * when no save is under way, the temporary files of saves killed midway. */
void vmb_evict(struct vmb_config *c);

/* --- in the keeper (system calls only) --- */

/* Save a baseline of the guest (QMP on qmp): stop, migrate to a file, hash it, rename it into
 * place, the manifest last, cont. 0, or -1 with why (the guest is resumed either way if it
 * can be). *bytes: the artifact's size. */
int vmb_keeper_save(const struct vmb_job *j, int qmp, uint64_t deadline_ms, uint64_t *bytes,
		    char *why, size_t why_size);
/* Stream the artifact into QEMU's -incoming pipe (closed after) while hashing it; on a match,
 * wait for the loaded state and cont. 0, or -1 with why (the guest never ran). */
int vmb_keeper_restore(const struct vmb_job *j, int qmp, int pipe_w, uint64_t deadline_ms,
		       char *why, size_t why_size);
/* Delete the job's baseline (the manifest first). */
void vmb_keeper_discard(const struct vmb_job *j);
uint64_t vmb_mono_ms(void);
