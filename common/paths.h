/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where the per-user controller socket and state live. Shared by the CLI (to connect) and the
 * controller (to listen), so both always agree.
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/*
 * The user's runtime directory for cordon: $XDG_RUNTIME_DIR/cordon when XDG_RUNTIME_DIR is set,
 * owned by the user and not group/world-writable; else /run/user/UID/cordon under the same checks;
 * else /tmp/cordon-UID. With create, the directory is made 0700 and its ownership and mode checked
 * (a directory of someone else's, or a symlink, is refused with -EPERM).
 */
int cordon_runtime_dir(char **ret, int create);

/* The controller socket: $CORDON_CONTROLLER_SOCKET, else <runtime dir>/controller.sock. */
int cordon_controller_socket_path(char **ret, int create_dir);

/* The user's state directory: $XDG_STATE_HOME/cordon or ~/.local/state/cordon (made 0700).
 * In common/paths-state.c. */
int cordon_state_dir(char **ret, int create);

/* mkdir path 0700 unless it exists, then check it is a private directory of ours. */
int cordon_make_private_dir(const char *path);

/* The system launcher socket: $CORDON_LAUNCHERD_SOCKET, else RUNSTATEDIR/cordon/launcherd.sock. */
const char *cordon_launcherd_socket_path(void);
