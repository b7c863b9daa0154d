/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who owns a remote sandbox, for orphan cleanup at prepare: this host's id (kept in the pack's
 * state directory, the pack's cwd) and each instance's owner token, a file owners/<token> it
 * holds locked while it lives. A sandbox whose owner's lock is free was left by a crash.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define REMOTE_ID_HEX 32 /* 16 random bytes as hex */

/* bytes random bytes as lower-case hex into out (2 * bytes + 1, at most 32 bytes). */
int remote_random_hex(char *out, size_t bytes);
/* s is n lower-case hex digits. */
bool remote_hex_ok(const char *s, size_t n);
/* This host's id (REMOTE_ID_HEX + 1 bytes), made once and kept in "host-id". */
int remote_host_id(char *ret);
/* A new owner token for this instance (REMOTE_ID_HEX + 1 bytes), its lock held in *lock_fd
 * for the process's life; nothing when *lock_fd is already open. */
int remote_owner_take(char *owner, int *lock_fd);
/* Does the instance that owns token own still live (hold its lock)? */
bool remote_owner_live(const char *own);
/* Remove the owner files of dead instances but own's. */
void remote_owners_prune(const char *own);
