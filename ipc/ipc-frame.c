/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-frame.h"
#include "ipc/ipc-json.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

#define MEMFD_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)
#define MEMFD_SEALS_NEEDED (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

/* A spawn plan with a maximal command line, escaped, and 1 MiB for the rest of the plan (at
 * most 256 mounts and 256 Landlock rules of PATH_MAX each, escaped: well under). */
_Static_assert(6ULL * CORDON_ARG_MAX + 1024 * 1024 <= IPC_FRAME_MEMFD_MAX,
	       "IPC_FRAME_MEMFD_MAX holds a maximal spawn plan");
_Static_assert(IPC_FRAME_INLINE_MAX <= IPC_FRAME_MAX, "an inline frame is a valid record");

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

/* A sealed memfd holding payload[0..len). */
static int payload_memfd(const char *payload, size_t len)
{
	_cleanup_close_ int fd =
		memfd_create("cordon-frame", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
	int r;

	if (fd < 0 && errno == EINVAL) /* before Linux 6.3: no MFD_NOEXEC_SEAL */
		fd = memfd_create("cordon-frame", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	r = loop_write(fd, payload, len);
	if (r < 0)
		return r;
	if (fcntl(fd, F_ADD_SEALS, MEMFD_SEALS) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* Send the header alone, the payload in a sealed memfd after the caller's fds. */
static int send_memfd_frame(int sock, const char *payload, size_t len, const int *fds, size_t n_fds,
			    int flags)
{
	unsigned char hdr[IPC_FRAME_HEADER_SIZE];
	int all[IPC_MAX_FDS];
	_cleanup_close_ int mfd = -EBADF;
	ssize_t n;

	if (len > IPC_FRAME_MEMFD_MAX || n_fds >= IPC_MAX_FDS)
		return -EMSGSIZE;
	mfd = payload_memfd(payload, len);
	if (mfd < 0)
		return mfd;
	put_le32(hdr, IPC_FRAME_MAGIC_MEMFD);
	put_le32(hdr + 4, (uint32_t)len);
	if (n_fds)
		memcpy(all, fds, n_fds * sizeof(int));
	all[n_fds] = mfd;
	n = ipc_send_with_fds(sock, hdr, sizeof(hdr), all, n_fds + 1, flags);
	if (n < 0)
		return (int)n;
	return (size_t)n == sizeof(hdr) ? 0 : -EIO;
}

int ipc_frame_send_json(int sock, json_t *obj, const int *fds, size_t n_fds, int flags)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ void *frame = NULL;
	size_t frame_len, len;
	ssize_t n;
	int r;

	text = json_dumps(obj, JSON_COMPACT);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	if (len > IPC_FRAME_INLINE_MAX)
		return send_memfd_frame(sock, text, len, fds, n_fds, flags);
	r = ipc_frame_encode(text, len, &frame, &frame_len);
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

	r = ipc_frame_parse_json_fds(buf, (size_t)n, fds, &n_fds, ret);
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

/* A "CRDM" frame's payload out of its memfd: a private copy, so nothing the sender does to the
 * memfd later (it is sealed anyway) changes what is parsed. At most IPC_FRAME_MEMFD_MAX. */
static int read_memfd_payload(int fd, size_t len, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t off = 0;
	int seals;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size != len)
		return -EBADMSG;
	/* Only a memfd (shmem) has seals: no file whose read could wait on anybody. */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & MEMFD_SEALS_NEEDED) != MEMFD_SEALS_NEEDED)
		return -EBADMSG;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	while (off < len) {
		ssize_t n = pread(fd, buf + off, len - off, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EBADMSG;
		off += (size_t)n;
	}
	*ret = TAKE_PTR(buf);
	return 0;
}

/* An upper bound of the JSON values in s[0..n): one, plus one per ',' '[' '{' ':' outside a
 * string (so a key counts as a value of its own). Linear, no allocation. */
static size_t json_value_count(const char *s, size_t n)
{
	size_t values = 1;
	bool in_string = false;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
		} else if (c == '"')
			in_string = true;
		else if (c == ',' || c == '[' || c == '{' || c == ':')
			values++;
	}
	return values;
}

int ipc_frame_parse_json_fds(const void *frame, size_t len, int *fds, size_t *n_fds, json_t **ret)
{
	const unsigned char *f = frame;
	_cleanup_free_ char *payload = NULL;
	uint32_t plen;
	int r;

	if (len < IPC_FRAME_HEADER_SIZE || get_le32(f) != IPC_FRAME_MAGIC_MEMFD)
		return ipc_frame_parse_json(frame, len, ret);
	plen = get_le32(f + 4);
	if (len != IPC_FRAME_HEADER_SIZE || *n_fds == 0)
		return -EBADMSG;
	if (plen > IPC_FRAME_MEMFD_MAX)
		return -EMSGSIZE;
	r = read_memfd_payload(fds[*n_fds - 1], plen, &payload);
	if (r < 0)
		return r;
	if (json_value_count(payload, plen) > IPC_FRAME_MEMFD_VALUES_MAX)
		return -EMSGSIZE;
	r = ipc_json_parse_object(payload, plen, ret, NULL);
	if (r < 0)
		return r;
	safe_close(fds[--*n_fds]);
	return 0;
}
