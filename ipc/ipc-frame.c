/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/cleanup.h"
#include "common/json-cleanup.h"
#include "common/system.h"
#include "ipc/ipc-frame.h"
#include "ipc/ipc-json.h"

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int ipc_frame_encode(const void *payload, size_t len, void **ret, size_t *ret_len)
{
	unsigned char *f;

	if (len > IPC_FRAME_MAX)
		return -EMSGSIZE;
	f = malloc(IPC_FRAME_HEADER_SIZE + len);
	if (!f)
		return -ENOMEM;
	put_le32(f, IPC_FRAME_MAGIC);
	put_le32(f + 4, (uint32_t)len);
	if (len)
		memcpy(f + IPC_FRAME_HEADER_SIZE, payload, len);
	*ret = f;
	*ret_len = IPC_FRAME_HEADER_SIZE + len;
	return 0;
}

int ipc_frame_decode(const void *frame, size_t len, const char **ret_payload, size_t *ret_len)
{
	const unsigned char *f = frame;
	uint32_t plen;

	if (len < IPC_FRAME_HEADER_SIZE)
		return -EBADMSG;
	if (get_le32(f) != IPC_FRAME_MAGIC)
		return -EBADMSG;
	plen = get_le32(f + 4);
	if (plen > IPC_FRAME_MAX)
		return -EMSGSIZE;
	if ((size_t)plen != len - IPC_FRAME_HEADER_SIZE)
		return -EBADMSG;
	*ret_payload = (const char *)f + IPC_FRAME_HEADER_SIZE;
	*ret_len = plen;
	return 0;
}

int ipc_frame_send_json(int sock, json_t *obj, const int *fds, size_t n_fds, int flags)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ void *frame = NULL;
	size_t frame_len;
	ssize_t n;
	int r;

	text = json_dumps(obj, JSON_COMPACT);
	if (!text)
		return -ENOMEM;
	r = ipc_frame_encode(text, strlen(text), &frame, &frame_len);
	if (r < 0)
		return r;
	n = ipc_send_with_fds(sock, frame, frame_len, fds, n_fds, flags);
	if (n < 0)
		return (int)n;
	if ((size_t)n != frame_len)
		return -EIO; /* a seqpacket send is all or nothing; anything else is a bug */
	return 0;
}

int ipc_frame_recv_json(int sock, json_t **ret, int *fds, size_t max_fds, size_t *ret_n_fds,
			int flags)
{
	unsigned char hdr[IPC_FRAME_HEADER_SIZE];
	_cleanup_free_ unsigned char *buf = NULL;
	size_t n_fds = 0;
	ssize_t n;
	int r;

	*ret_n_fds = 0;
	/* Learn the record's full length without consuming it (MSG_TRUNC returns the real size). */
	do
		n = recv(sock, hdr, sizeof(hdr), MSG_PEEK | MSG_TRUNC | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;
	if ((size_t)n > IPC_FRAME_HEADER_SIZE + IPC_FRAME_MAX ||
	    (size_t)n < IPC_FRAME_HEADER_SIZE) {
		/* Consume and drop the record; fds that came with it are closed either way. */
		int err = (size_t)n < IPC_FRAME_HEADER_SIZE ? -EBADMSG : -EMSGSIZE;
		char c;

		n = ipc_recv_with_fds(sock, &c, sizeof(c), fds, max_fds, &n_fds, flags);
		if (n >= 0)
			close_many(fds, n_fds);
		return err;
	}

	buf = malloc((size_t)n);
	if (!buf)
		return -ENOMEM;
	n = ipc_recv_with_fds(sock, buf, (size_t)n, fds, max_fds, &n_fds, flags);
	if (n < 0)
		return (int)n;
	if (n == 0)
		return 0;

	r = ipc_frame_parse_json(buf, (size_t)n, ret);
	if (r < 0) {
		close_many(fds, n_fds);
		return r;
	}
	*ret_n_fds = n_fds;
	return 1;
}

int ipc_frame_parse_json(const void *frame, size_t len, json_t **ret)
{
	const char *payload;
	size_t payload_len;
	int r = ipc_frame_decode(frame, len, &payload, &payload_len);

	return r < 0 ? r : ipc_json_parse_object(payload, payload_len, ret, NULL);
}
