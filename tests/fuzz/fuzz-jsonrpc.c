/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The client channel's line splitter, JSON parse and JSON-RPC envelope check on arbitrary bytes
 * streamed through a real socketpair, as the controller reads them.
 */
#include "config.h"

#include <sys/socket.h>

#include "common/json-cleanup.h"
#include "ipc/ipc-jsonrpc.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonrpc_conn *c = NULL;
	int sv[2], fds[IPC_MAX_FDS];
	size_t off = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	if (jsonrpc_conn_new(sv[1], &c) < 0) {
		safe_close(sv[0]);
		return 0;
	}
	for (;;) {
		json_t *msg = NULL;
		struct field_error e;
		size_t n_fds;
		int r;

		/* Feed in chunks so lines split across reads. */
		if (off < size) {
			size_t chunk = size - off < 4096 ? size - off : 4096;
			ssize_t n = send(sv[0], data + off, chunk, MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n > 0)
				off += (size_t)n;
			if (off == size)
				(void)shutdown(sv[0], SHUT_WR);
		}
		if (jsonrpc_conn_fill(c) <= 0 && off == size)
			break;
		while ((r = jsonrpc_conn_next(c, &msg, fds, &n_fds, &e)) != 0) {
			if (r == -EMSGSIZE)
				goto out;
			if (r > 0) {
				enum jsonrpc_kind kind;
				const char *method;
				json_t *id, *body;

				(void)jsonrpc_classify(msg, &kind, &method, &id, &body, &e);
				close_many(fds, n_fds);
				json_decref(msg);
			}
		}
	}
out:
	jsonrpc_conn_free(c);
	safe_close(sv[0]);
	return 0;
}
