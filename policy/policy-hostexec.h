/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host-executed paths: files in a writable directory that programs on the host later run or
 * load without the user asking for it (git's configuration and hooks, direnv's .envrc, an
 * editor's workspace settings). A sandbox that may write them would get out through them, so the
 * default policy keeps every such path that exists read-only (docs/POLICY.md, HOST-EXECUTED
 * PATHS). This is the one list: the compiler binds what policy_host_exec_scan() finds, `cordon
 * policy explain` describes it, and a backend that brings a sandbox's changes back to the host
 * (none in this tree yet) must refuse a change to any path policy_host_exec_match() names and to
 * any path a scan of the workspace lists.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "ipc/ipc-json.h"
#include "policy/policy-model.h"

/* A policy's filesystem.hostExecuted.allow entry that opts out of every entry. */
#define POLICY_HOST_EXEC_ALL "*"
/* Paths one scan may list (each present one is a mount, most of them an fd: the launcher's
 * message carries 64 fds, which bounds a plan long before this does). */
#define POLICY_HOST_EXEC_ITEMS_MAX 256

struct policy_host_exec_entry {
	const char *id;	  /* what filesystem.hostExecuted.allow names */
	bool in_dir;	  /* a path looked for in each scanned directory (else: git's) */
	const char *runs; /* who runs or reads it on the host, and when */
	const char *risk; /* what a sandbox could do with it, were it writable */
};

/* The list, in the order docs/POLICY.md gives it. */
extern const struct policy_host_exec_entry policy_host_exec_entries[];
extern const size_t policy_host_exec_entries_count;

const struct policy_host_exec_entry *policy_host_exec_entry_find(const char *id);
/* Is the entry opted out by the policy (by id or "*")? */
bool policy_host_exec_allowed(const struct policy *p, const char *id);

/*
 * For a path relative to a directory a sandbox could write (as a transfer backend reports what
 * changed), the id of the host-executed entry that covers it and that p does not opt out of, or
 * NULL. Matches at any depth: a new ".envrc" in a subdirectory runs when the user enters that
 * directory, and a new ".git" anywhere is a repository whose configuration git would use there.
 * The paths a repository's configuration names (include.path, core.hooksPath) need a scan.
 */
const char *policy_host_exec_match(const struct policy *p, const char *rel);

enum policy_host_exec_how {
	POLICY_HOST_EXEC_READ_ONLY, /* bound read-only over itself */
	POLICY_HOST_EXEC_HIDE,	    /* an empty read-only mount over it (git's hooks) */
	POLICY_HOST_EXEC_PIN,	    /* a directory above one: bound read-write over itself, so
				     * that it cannot be renamed or removed and made again */
};

enum policy_host_exec_state {
	POLICY_HOST_EXEC_PRESENT,
	POLICY_HOST_EXEC_CREATED, /* was absent; the scan made it empty (a git directory's
				   * hooks, info, config; a core.hooksPath directory) */
	POLICY_HOST_EXEC_ABSENT,  /* absent: a sandbox that can write its parent can create it */
	POLICY_HOST_EXEC_SYMLINK, /* a symbolic link (or below one): it cannot be kept read-only */
};

const char *policy_host_exec_how_to_string(enum policy_host_exec_how h);
const char *policy_host_exec_state_to_string(enum policy_host_exec_state s);

/* One bind of the plan, as the compiler opened it. */
struct policy_host_exec_bind {
	int fd;		    /* O_PATH, borrowed */
	const char *host;   /* the host path the policy lists */
	const char *target; /* where the sandbox sees it */
	bool rw;
};

struct policy_host_exec_item {
	const struct policy_host_exec_entry *entry; /* for a pin: the first entry it holds */
	enum policy_host_exec_how how;
	enum policy_host_exec_state state;
	size_t bind;	/* the writable bind it lies in, an index into binds[] */
	char *host;	/* its bind's host path and the path below it */
	char *target;	/* where the sandbox sees it */
	char *why;	/* NULL, or how the scan came to it ("named by core.hooksPath") */
	bool creatable; /* when absent, a compiling scan makes it empty */
	int fd; /* O_PATH when it is to be bound (present or created, not hidden), else -1 */
};

struct policy_host_exec_list {
	struct policy_host_exec_item *items;
	size_t n;
};

struct policy_host_exec_list *policy_host_exec_list_free(struct policy_host_exec_list *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct policy_host_exec_list *, policy_host_exec_list_free);
#define _cleanup_host_exec_list_ _cleanup_(policy_host_exec_list_freep)

struct policy_host_exec_ctx {
	const struct policy *p; /* resolved: its deny list and filesystem.hostExecuted.allow */
	const char *cwd;	/* the caller's */
	const char *home;
	char *const *envp; /* the caller's: GIT_CONFIG_GLOBAL, XDG_CONFIG_HOME */
	/* Where absolute paths named in git's files are looked up (the compiler's host root). */
	int host_root_fd;
	bool in_root;
	/* Make a git directory's missing hooks, info and config (and a missing core.hooksPath
	 * directory) empty, so that they can be bound: only the compiler, never explain. */
	bool create;
};

/*
 * Every host-executed path in the writable binds among binds[]: at the top of each writable
 * directory, in each directory from there down to the caller's cwd, and in every git directory
 * found (the repository's, its submodules', a linked worktree's and its common directory, when
 * writable), with the pins that hold each present one in place. A path below a read-only bind
 * or a denied path is left out (it cannot be written). Deterministic for the same tree, so a
 * second scan can be compared with policy_host_exec_key(). Errors name
 * "filesystem.hostExecuted".
 */
int policy_host_exec_scan(const struct policy_host_exec_ctx *ctx,
			  const struct policy_host_exec_bind *binds, size_t n_binds,
			  struct policy_host_exec_list **ret, struct field_error *err);

/* What a scan found, as one string: "how state target" lines (created counts as present). */
char *policy_host_exec_key(const struct policy_host_exec_list *l);

/*
 * Of the host-executed paths that were absent when a sandbox started (compiled_plan's
 * host_exec_absent), those that exist now: what the sandbox may have created, for the
 * controller to report when it ends. *ret is NULL when there are none.
 */
int policy_host_exec_created(char *const *absent, char ***ret);
