/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>

#include "ipc/ipc-peer.h"

int ipc_peer_cred(int sock, struct ucred *ret)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
		return -errno;
	if (len != sizeof(uc))
		return -EIO;
	/* An unconnected socket reports pid 0 and the overflow ids: no peer. */
	if (uc.pid <= 0)
		return -ENOTCONN;
	*ret = uc;
	return 0;
}

int ipc_peer_require_uid(int sock, uid_t uid, struct ucred *ret)
{
	struct ucred uc;
	int r = ipc_peer_cred(sock, &uc);

	if (r < 0)
		return r;
	if (uc.uid != uid)
		return -EPERM;
	if (ret)
		*ret = uc;
	return 0;
}
