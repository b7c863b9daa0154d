/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Peer identity of a Unix socket, as the kernel reports it (SO_PEERCRED). A request never names
 * its own identity: every decision about who is asking uses this.
 */
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

int ipc_peer_cred(int sock, struct ucred *ret);

/* Fail with -EPERM unless the peer's uid is uid. */
int ipc_peer_require_uid(int sock, uid_t uid, struct ucred *ret);
