/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The launcher channel's frame decoder and JSON parse, on arbitrary bytes; then the same bytes
 * through a real SOCK_SEQPACKET pair so the receive path (peek, size check, allocation) runs too.
 */
#include "config.h"

#include <sys/socket.h>

#include "common/json-cleanup.h"
#include "ipc/ipc-frame.h"
#include "ipc/ipc-json.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *payload;
	size_t plen, n_fds;
	int sv[2], fds[IPC_MAX_FDS];

	if (ipc_frame_decode(data, size, &payload, &plen) >= 0) {
		_cleanup_json_ json_t *j = NULL;
		struct field_error e;

		(void)ipc_json_parse_object(payload, plen, &j, &e);
	}

	if (size == 0 || size > IPC_FRAME_HEADER_SIZE + IPC_FRAME_MAX + 16)
		return 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &(int){ 4 * 1024 * 1024 }, sizeof(int));
	if (send(sv[0], data, size, MSG_NOSIGNAL) == (ssize_t)size) {
		_cleanup_json_ json_t *j = NULL;

		if (ipc_frame_recv_json(sv[1], &j, fds, IPC_MAX_FDS, &n_fds, MSG_DONTWAIT) > 0)
			close_many(fds, n_fds);
	}
	safe_close(sv[0]);
	safe_close(sv[1]);
	return 0;
}
