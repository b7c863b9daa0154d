/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The light spawn (sandbox-init.h): the set-up child shares launcherd's memory (CLONE_VM), so
 * nothing of launcherd's address space is copied for it, nor torn down again at the end of the
 * sandbox's init (≈ a sixth of the machine's time per sandbox, docs/ARCHITECTURE.md); it builds
 * the sandbox as the other path does, then execs the sandbox's init from the sealed memfd made
 * here, which leaves launcherd's memory. launcherd does not wait for it: each child runs in a
 * slot of its own, with
 *  - the thread-local storage (errno, above all) of a thread of launcherd's that does nothing
 *    else, ever (a "dormant" thread, blocked with every signal blocked), so that nothing the
 *    child's libc calls write there can reach launcherd's own thread; and the lower part of
 *    that thread's stack, so that the child is that thread to whatever keeps per-thread
 *    accounts (AddressSanitizer);
 *  - its own copy of everything it reads (the context, the plan, the fd and group arrays),
 *    kept until the kernel says the child has left our memory (CLONE_CHILD_CLEARTID clears a
 *    word of the slot at its exec or exit): launcherd goes on meanwhile and frees what it likes.
 * What the child must never do, then: allocate, or take a lock launcherd's thread could hold or
 * that would stay held if the child were killed (it can be, once it runs as the requester).
 * launcherd-apply.c keeps to that on the light path: system calls, and formatting into buffers
 * on its stack.
 *
 * Also, nothing the child looks up may stall (a slot held for ever, and the child with it):
 * launcherd-sandbox.c sends a plan this way, in privileged mode, only when every path the
 * set-up looks up lies on a local file system (SECURITY.md, "What the privileged daemon
 * trusts"); user mode serves its own user alone. With no slot free, a spawn takes the other
 * path.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "launcherd/launcherd-apply.h"

#define LIGHT_SLOTS 4

struct light_slot {
	void *stack_lo, *stack_top; /* the child's stack: the dormant thread's, below its frames */
	void *tls;		    /* the dormant thread's thread pointer (CLONE_SETTLS) */
	uint32_t in_use;	    /* nonzero from the clone until the kernel clears it */
	bool owned;		    /* what follows is the child's (in use, or not reclaimed yet) */
	struct apply_context ctx;   /* the child's, pointing into the copies below */
	struct plan *plan;
	int *fds, *tree_fds;
	gid_t *groups;
	char **init_argv; /* "cordon-init", then the plan's argv (its strings are the plan's) */
	char id[32];
};

struct light {
	int init_fd;	 /* the sealed memfd holding cordon-sandbox-init, or -1: off */
	const char *off; /* why it is off, for the log (NULL when on) */
	size_t n_slots;
	struct light_slot slots[LIGHT_SLOTS];
};

/* Make the memfd, the slots and their dormant threads, and check that the kernel execs the
 * init. Never fails: a light spawn that cannot be had is off, and sandboxes are spawned as
 * before. Call it once launcherd's credentials are final (its threads share them). */
void light_setup(struct light *l);
void light_done(struct light *l);

/* A slot whose child (if any) has left our memory, its copies freed; NULL when all are busy. */
struct light_slot *light_slot_get(struct light *l);

/*
 * Clone launcherd_apply() for ctx in slot s, with CLONE_VM | CLONE_SETTLS | CLONE_PIDFD |
 * CLONE_CHILD_CLEARTID added to flags. Copies what ctx points to into the slot and takes plan
 * (freed when the slot is reclaimed), on success only. Returns the pid (the pidfd in
 * *ret_pidfd) or -errno.
 */
pid_t light_clone(struct light_slot *s, unsigned long long flags, const struct apply_context *ctx,
		  struct plan *plan, int *ret_pidfd);
