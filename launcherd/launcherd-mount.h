/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox's filesystem: a fresh tmpfs root built from the plan's mount list, then
 * pivot_root. Bind sources arrive as O_PATH fds opened by the requester; launcherd mounts from
 * those fds and never resolves a path on a user's behalf.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "launcherd/launcherd-plan.h"

/*
 * Parent side, before clone: clone each bind source's mount tree into a detached tree
 * (open_tree(OPEN_TREE_CLONE|AT_RECURSIVE)) and set its flags (read-only, nosuid, nodev).
 * tree_fds[i] is -1 for non-bind entries and where this is not possible (no CAP_SYS_ADMIN over
 * our mount namespace — user mode — or a source outside our mount namespace, with the plan's
 * mountNamespace to clone it in); the child then clones it (see mount_build_root()). Every
 * clone is private: nothing mounted in it propagates anywhere. shallow: each clone is of the
 * source's mount alone, not what is mounted beneath it (the light spawn, when the caller found
 * nothing there). Returns -errno and *ret_index for hard errors: -EXDEV for a source in another
 * mount namespace when the plan names none.
 */
int mount_prepare_binds(const struct plan *plan, const int *fds, int dev_template, bool shallow,
			int *tree_fds, int *ret_index);

/* The fixed part of a "dev" mount as a detached, read-only tree (see launcherd-mount.c). With
 * CAP_SYS_ADMIN, launcherd makes it once at start: mount_prepare_binds() then puts a clone of it
 * in tree_fds[i] for each "dev" entry (dev_template -1: the child builds its own). */
int mount_dev_template(int *ret_fd);
/* A clone of that template, detached (the caller owns it), or -errno. */
int mount_dev_clone(int dev_template);

/*
 * Child side, in its new mount namespace: make the tree private (STEP_MOUNT_PRIVATE), mount the
 * root tmpfs (STEP_ROOT), apply the plan's mounts in order (STEP_MOUNT, *ret_index = entry) and
 * remount the root read-only. On failure *ret_step says which step. tree_fds may be changed
 * (the child's clones are stored there: in user mode by path, checked to be the same inode; in
 * privileged mode by fd, in the plan's mountNamespace). uid/gid: the requester's; the plan's
 * directories are its own, and as uid 0, whose DAC checks pass on /proc's root-owned control
 * files, those get read-only binds.
 */
int mount_build_root(const struct plan *plan, const int *fds, int *tree_fds, uid_t uid, gid_t gid,
		     bool user_mode, int mntns_fd, int *ret_step, int *ret_index, int *ret_root_fd);

/*
 * The namespace pool's helper (launcherd-net.c), in a mount namespace it just unshared.
 * seed (once, in a copy of launcherd's namespace): make the tree private, put a fresh tmpfs in
 * its place with pivot_root, detach the rest and make that tmpfs read-only: the namespace
 * holds one empty, read-only mount. Else (in a copy of the seed's): mount a fresh tmpfs over
 * its root, which setns() into the namespace makes a process's root. With mntns_fd (such a
 * namespace), the child's mount_build_root() does the bind fallbacks in launcherd's namespace,
 * which it still shares (clone without CLONE_NEWNS), then setns()es into it and builds on that
 * root: no pivot_root. (Mounting over the seed's copy instead of pivoting away from it and
 * detaching it saves each pooled namespace an unmount and the expedited RCU grace period that
 * comes with it. The empty read-only mount under the sandbox's root is outside that root: the
 * sandbox can neither reach nor unmount it, and its mountinfo does not list it.)
 */
int mount_make_empty_root(bool seed);

/* Child side: pivot_root into root_fd and detach the old root. */
int mount_pivot_root(int root_fd);
