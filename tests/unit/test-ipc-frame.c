/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ipc/ipc-frame.c: encode/decode, then real records on a SOCK_SEQPACKET pair: every malformed
 * record is consumed and refused with its fds closed and the next frame still reads; an oversize
 * record (> IPC_FRAME_MAX) is refused; a payload over IPC_FRAME_INLINE_MAX travels in a sealed
 * memfd ("CRDM") up to IPC_FRAME_MEMFD_MAX, and every malformed memfd frame is refused with its
 * fds closed; 10,000 frames with two fds each leak nothing.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json-cleanup.h"
#include "common/system.h"
#include "ipc/ipc-frame.h"
#include "tests/tap.h"

#define N_FRAMES 10000

/*
 * Linked with -Wl,--wrap=malloc (tests/local.mk): records the largest allocation made while
 * watching, to show that an oversize record is refused before a buffer is allocated for it.
 */
void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);
static bool watching_malloc;
static size_t largest_malloc;

void *__wrap_malloc(size_t size)
{
	if (watching_malloc && size > largest_malloc)
		largest_malloc = size;
	return __real_malloc(size);
}

static bool fd_has_cloexec(int fd)
{
	int f = fcntl(fd, F_GETFD);

	return f >= 0 && (f & FD_CLOEXEC);
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* A raw record: header with the given magic and length field, then payload. */
static size_t make_record(unsigned char *buf, uint32_t magic, uint32_t len_field,
			  const char *payload)
{
	size_t n = strlen(payload);

	put_le32(buf, magic);
	put_le32(buf + 4, len_field);
	memcpy(buf + 8, payload, n);
	return 8 + n;
}

/*
 * Send raw bytes with the write end of a fresh pipe attached, keeping only the (non-blocking)
 * read end: once the receiver closes its copy, that read end sees EOF.
 */
static int send_with_witness(int sock, const void *buf, size_t len)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		bail("pipe2: %m");
	if (ipc_send_with_fds(sock, buf, len, &p[1], 1, 0) != (ssize_t)len)
		bail("send of a %zu-byte record failed: %m", len);
	safe_close(p[1]);
	return p[0];
}

static bool witness_closed(int rfd)
{
	char c;
	bool closed = read(rfd, &c, 1) == 0;

	safe_close(rfd);
	return closed;
}

/* The channel is still in step: a good frame sent now is the next one received. */
static bool next_frame_ok(int sv[2], int seq)
{
	_cleanup_json_ json_t *out = json_pack("{s:s,s:i}", "type", "ping", "seq", seq);
	_cleanup_json_ json_t *in = NULL;
	int fds[IPC_MAX_FDS];
	size_t n_fds = 0;

	if (ipc_frame_send_json(sv[0], out, NULL, 0, 0) < 0)
		return false;
	if (ipc_frame_recv_json(sv[1], &in, fds, IPC_MAX_FDS, &n_fds, MSG_DONTWAIT) != 1)
		return false;
	return json_equal(in, out) && n_fds == 0;
}

static void test_encode_decode(void)
{
	_cleanup_free_ void *f = NULL, *big = NULL;
	_cleanup_free_ char *payload = malloc(IPC_FRAME_MAX + 1);
	unsigned char rec[64];
	const char *p = NULL;
	size_t len = 0, plen = 0;

	if (!payload)
		bail("out of memory");
	is_int(0, ipc_frame_encode("{}", 2, &f, &len), "encode a 2-byte payload");
	ok(len == 10 && memcmp(f, "CRD1\x02\x00\x00\x00{}", 10) == 0,
	   "header is magic \"CRD1\" and length 2, little-endian, then the payload");
	is_int(0, ipc_frame_decode(f, len, &p, &plen), "decode it back");
	ok(p == (const char *)f + 8 && plen == 2, "the payload is found after the header");
	free(f);
	f = NULL;
	is_int(0, ipc_frame_encode(NULL, 0, &f, &len), "encode an empty payload");
	ok(ipc_frame_decode(f, len, &p, &plen) == 0 && len == 8 && plen == 0,
	   "an empty frame decodes to an empty payload");

	memset(payload, ' ', IPC_FRAME_MAX + 1);
	is_int(-EMSGSIZE, ipc_frame_encode(payload, IPC_FRAME_MAX + 1, &big, &len),
	       "encoding more than IPC_FRAME_MAX is refused");
	is_int(0, ipc_frame_encode(payload, IPC_FRAME_MAX, &big, &len),
	       "exactly IPC_FRAME_MAX is fine");

	len = make_record(rec, IPC_FRAME_MAGIC, 2, "{}");
	is_int(-EBADMSG, ipc_frame_decode(rec, 7, &p, &plen), "a short header is -EBADMSG");
	is_int(-EBADMSG, ipc_frame_decode(rec, len - 1, &p, &plen),
	       "a truncated payload is -EBADMSG");
	rec[len] = ' ';
	is_int(-EBADMSG, ipc_frame_decode(rec, len + 1, &p, &plen), "a padded record is -EBADMSG");
	len = make_record(rec, 0x32445243U, 2, "{}");
	is_int(-EBADMSG, ipc_frame_decode(rec, len, &p, &plen), "a bad magic is -EBADMSG");
	len = make_record(rec, IPC_FRAME_MAGIC, IPC_FRAME_MAX + 1, "");
	is_int(-EMSGSIZE, ipc_frame_decode(rec, len, &p, &plen),
	       "a length field over IPC_FRAME_MAX is -EMSGSIZE");
}

static void test_bad_records(int sv[2])
{
	static const struct {
		const char *what;
		uint32_t magic, len; /* len (uint32_t)-1: the payload's own length */
		const char *payload;
		int err;
	} bad[] = {
		{ "bad magic", 0x44434241U, (uint32_t)-1, "{}", -EBADMSG },
		{ "length field too large", IPC_FRAME_MAGIC, 3, "{}", -EBADMSG },
		{ "length field too small", IPC_FRAME_MAGIC, 1, "{}", -EBADMSG },
		{ "a JSON array", IPC_FRAME_MAGIC, (uint32_t)-1, "[1,2]", -EBADMSG },
		{ "a JSON string", IPC_FRAME_MAGIC, (uint32_t)-1, "\"x\"", -EBADMSG },
		{ "duplicate keys", IPC_FRAME_MAGIC, (uint32_t)-1, "{\"a\":1,\"a\":2}", -EBADMSG },
		{ "an escaped NUL", IPC_FRAME_MAGIC, (uint32_t)-1, "{\"a\":\"x\\u0000y\"}",
		  -EBADMSG },
		{ "trailing garbage", IPC_FRAME_MAGIC, (uint32_t)-1, "{}x", -EBADMSG },
		{ "not JSON", IPC_FRAME_MAGIC, (uint32_t)-1, "hello", -EBADMSG },
	};
	unsigned char rec[64];
	int fds[IPC_MAX_FDS], w, seq = 100;
	size_t n_fds;

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		_cleanup_json_ json_t *j = NULL;
		uint32_t lf = bad[i].len == (uint32_t)-1 ? (uint32_t)strlen(bad[i].payload)
							 : bad[i].len;
		size_t len = make_record(rec, bad[i].magic, lf, bad[i].payload);
		int r;

		w = send_with_witness(sv[0], rec, len);
		r = ipc_frame_recv_json(sv[1], &j, fds, IPC_MAX_FDS, &n_fds, 0);
		ok(r == bad[i].err && !j && n_fds == 0, "%s: refused (%d)", bad[i].what, r);
		ok(witness_closed(w) && next_frame_ok(sv, seq++),
		   "%s: its fd is closed and the next frame reads", bad[i].what);
	}

	/* Shorter than a header. */
	{
		_cleanup_json_ json_t *j = NULL;

		w = send_with_witness(sv[0], "CRD", 3);
		is_int(-EBADMSG, ipc_frame_recv_json(sv[1], &j, fds, IPC_MAX_FDS, &n_fds, 0),
		       "a 3-byte record is -EBADMSG");
		ok(witness_closed(w) && next_frame_ok(sv, seq++),
		   "its fd is closed and the next frame reads");
	}

	/* More fds than the receiver takes. */
	{
		_cleanup_json_ json_t *out = json_pack("{s:s}", "type", "x"), *j = NULL;
		int p[2], before = count_open_fds();

		if (pipe2(p, O_CLOEXEC) < 0)
			bail("pipe2: %m");
		is_int(0, ipc_frame_send_json(sv[0], out, p, 2, 0), "send a frame with 2 fds");
		is_int(-EXFULL, ipc_frame_recv_json(sv[1], &j, fds, 1, &n_fds, 0),
		       "a receiver taking 1 fd refuses it with -EXFULL");
		safe_close(p[0]);
		safe_close(p[1]);
		is_int(before, count_open_fds(), "no fd is left open");
		ok(next_frame_ok(sv, seq++), "and the next frame reads");
	}
}

static void test_oversize(int sv[2])
{
	size_t len = IPC_FRAME_HEADER_SIZE + IPC_FRAME_MAX + 1;
	_cleanup_free_ unsigned char *rec = malloc(len);
	_cleanup_json_ json_t *j = NULL, *big = NULL;
	_cleanup_free_ char *s = malloc(IPC_FRAME_MAX + 1);
	int size = 8 * 1024 * 1024, fds[IPC_MAX_FDS], w;
	size_t n_fds;

	if (!rec || !s)
		bail("out of memory");
	/* Large enough for a whole oversize record (SO_SNDBUFFORCE: we are root in CI). */
	if (setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0)
		(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));

	put_le32(rec, IPC_FRAME_MAGIC);
	put_le32(rec + 4, IPC_FRAME_MAX + 1);
	memset(rec + 8, ' ', IPC_FRAME_MAX + 1);
	rec[8] = '{';
	rec[len - 1] = '}';
	{
		int p[2];

		if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
			bail("pipe2: %m");
		if (ipc_send_with_fds(sv[0], rec, len, &p[1], 1, 0) != (ssize_t)len) {
			skip(7, "cannot send a %zu-byte record (SO_SNDBUF too small): %m", len);
			safe_close(p[0]);
			safe_close(p[1]);
			return;
		}
		safe_close(p[1]);
		w = p[0];
	}
	largest_malloc = 0;
	watching_malloc = true;
	is_int(-EMSGSIZE, ipc_frame_recv_json(sv[1], &j, fds, IPC_MAX_FDS, &n_fds, 0),
	       "a record of IPC_FRAME_MAX + 9 bytes is -EMSGSIZE");
	watching_malloc = false;
	ok(largest_malloc < 4096, "refused before allocating for it (largest malloc: %zu bytes)",
	   largest_malloc);
	ok(witness_closed(w), "its fd is closed");
	ok(next_frame_ok(sv, 1), "it was consumed: the next frame reads");

	/* A payload of IPC_FRAME_MAX goes through (in a memfd, being over the inline limit). */
	memset(s, 'x', IPC_FRAME_MAX - 8);
	s[IPC_FRAME_MAX - 8] = '\0';
	big = json_pack("{s:s}", "a", s);
	is_int(0, ipc_frame_send_json(sv[0], big, NULL, 0, 0),
	       "a frame of exactly IPC_FRAME_MAX payload bytes is sent");
	ok(ipc_frame_recv_json(sv[1], &j, fds, IPC_MAX_FDS, &n_fds, 0) == 1 && json_equal(j, big),
	   "and received whole");
}

/* A sealed (or not) memfd holding data. */
static int data_memfd(const char *data, size_t len, bool seal)
{
	int fd = memfd_create("test-frame", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || loop_write(fd, data, len) < 0)
		bail("memfd: %m");
	if (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
		bail("F_ADD_SEALS: %m");
	return fd;
}

static void test_memfd(int sv[2])
{
	_cleanup_free_ char *s = malloc(IPC_FRAME_MEMFD_MAX + 1);
	_cleanup_json_ json_t *out = NULL, *in = NULL;
	int fds[IPC_MAX_FDS], p[2], seq = 200, before;
	unsigned char rec[16];
	size_t n_fds = 0;

	before = count_open_fds();
	if (!s || pipe2(p, O_CLOEXEC) < 0)
		bail("malloc/pipe2: %m");

	/* Just over the inline limit, with 2 fds of the message's own: indexes as sent. */
	memset(s, 'y', IPC_FRAME_INLINE_MAX);
	s[IPC_FRAME_INLINE_MAX] = '\0';
	out = json_pack("{s:s,s:s}", "type", "spawn", "a", s);
	is_int(0, ipc_frame_send_json(sv[0], out, p, 2, 0),
	       "a payload over IPC_FRAME_INLINE_MAX is sent with 2 fds");
	is_int(1, ipc_frame_recv_json(sv[1], &in, fds, IPC_MAX_FDS, &n_fds, 0), "received");
	ok(in && json_equal(in, out), "the object is intact");
	ok(n_fds == 2 && same_file(fds[0], p[0]) && same_file(fds[1], p[1]),
	   "with the message's 2 fds as sent, the memfd taken off (%zu fds)", n_fds);
	close_many(fds, n_fds);
	n_fds = 0;
	json_decref(TAKE_PTR(in));
	json_decref(TAKE_PTR(out));
	safe_close(p[0]);
	safe_close(p[1]);
	is_int(before, count_open_fds(), "the memfd is closed on both sides");

	/* The largest: a payload of exactly IPC_FRAME_MEMFD_MAX; one byte more is refused. */
	memset(s, 'z', IPC_FRAME_MEMFD_MAX - 8);
	s[IPC_FRAME_MEMFD_MAX - 8] = '\0';
	out = json_pack("{s:s}", "a", s);
	is_int(0, ipc_frame_send_json(sv[0], out, NULL, 0, 0),
	       "a payload of exactly IPC_FRAME_MEMFD_MAX is sent");
	ok(ipc_frame_recv_json(sv[1], &in, fds, IPC_MAX_FDS, &n_fds, 0) == 1 &&
		   json_equal(in, out) && n_fds == 0,
	   "and received whole");
	json_decref(TAKE_PTR(in));
	json_decref(TAKE_PTR(out));
	s[IPC_FRAME_MEMFD_MAX - 8] = 'z';
	s[IPC_FRAME_MEMFD_MAX - 7] = '\0';
	out = json_pack("{s:s}", "a", s);
	is_int(-EMSGSIZE, ipc_frame_send_json(sv[0], out, NULL, 0, 0),
	       "one byte more is refused by the sender");
	json_decref(TAKE_PTR(out));

	/* Too many values for its size: refused before it is parsed; exactly the limit reads. */
	for (int extra = 0; extra <= 1; extra++) {
		/* {"a":[0,0,…,0]} of n zeros: 1 + '{' + ':' + '[' + n-1 commas = n + 3 counted */
		size_t n = IPC_FRAME_MEMFD_VALUES_MAX - 3 + (size_t)extra, len;
		char *d = s;

		d += sprintf(d, "{\"a\":[");
		for (size_t i = 0; i < n; i++) {
			*d++ = '0';
			*d++ = ',';
		}
		d[-1] = ']';
		*d++ = '}';
		len = (size_t)(d - s);
		{
			_cleanup_json_ json_t *j = NULL;
			int mfd = data_memfd(s, len, true), r;

			put_le32(rec, IPC_FRAME_MAGIC_MEMFD);
			put_le32(rec + 4, (uint32_t)len);
			if (ipc_send_with_fds(sv[0], rec, 8, &mfd, 1, 0) < 0)
				bail("send: %m");
			safe_close(mfd);
			r = ipc_frame_recv_json(sv[1], &j, fds, IPC_MAX_FDS, &n_fds, 0);
			if (extra)
				ok(r == -EMSGSIZE && !j,
				   "IPC_FRAME_MEMFD_VALUES_MAX + 1 values in %zu bytes: refused (%d)",
				   len, r);
			else
				ok(r == 1 && json_array_size(json_object_get(j, "a")) == n,
				   "exactly IPC_FRAME_MEMFD_VALUES_MAX values: parsed (%d)", r);
			close_many(fds, n_fds);
			n_fds = 0;
		}
	}

	/* A large payload needs a fd of its own: with IPC_MAX_FDS already, refused. */
	{
		int many[IPC_MAX_FDS];

		for (size_t i = 0; i < IPC_MAX_FDS; i++)
			many[i] = STDERR_FILENO;
		s[IPC_FRAME_INLINE_MAX] = '\0';
		out = json_pack("{s:s}", "a", s);
		is_int(-EMSGSIZE, ipc_frame_send_json(sv[0], out, many, IPC_MAX_FDS, 0),
		       "a memfd frame with IPC_MAX_FDS fds of its own is refused by the sender");
		json_decref(TAKE_PTR(out));
		ok(next_frame_ok(sv, seq++), "nothing was sent: the next frame reads");
	}

	/* Malformed "CRDM" records: refused, every fd closed, the channel still in step. */
	{
		static const char doc[] = "{\"type\":\"x\"}";
		const size_t dlen = sizeof(doc) - 1;
		struct {
			const char *what;
			uint32_t len;
			size_t extra; /* payload bytes after the header */
			int memfd;    /* 0 none, 1 sealed, 2 unsealed, 3 a pipe */
			const char *data;
			int err;
		} bad[] = {
			{ "no fd", (uint32_t)dlen, 0, 0, doc, -EBADMSG },
			{ "payload bytes after the header", (uint32_t)dlen, 2, 1, doc, -EBADMSG },
			{ "an unsealed memfd", (uint32_t)dlen, 0, 2, doc, -EBADMSG },
			{ "a pipe for a memfd", (uint32_t)dlen, 0, 3, doc, -EBADMSG },
			{ "a length field longer than the memfd", (uint32_t)dlen + 1, 0, 1, doc,
			  -EBADMSG },
			{ "a length field shorter than the memfd", (uint32_t)dlen - 1, 0, 1, doc,
			  -EBADMSG },
			{ "a length field over IPC_FRAME_MEMFD_MAX", IPC_FRAME_MEMFD_MAX + 1, 0, 1,
			  doc, -EMSGSIZE },
			{ "a JSON array", 5, 0, 1, "[1,2]", -EBADMSG },
		};

		for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
			_cleanup_json_ json_t *j = NULL;
			int w[2], send_fds[2], n = 0, r;

			if (pipe2(w, O_CLOEXEC | O_NONBLOCK) < 0)
				bail("pipe2: %m");
			send_fds[n++] = w[1]; /* a witness of the message's own */
			if (bad[i].memfd == 1 || bad[i].memfd == 2)
				send_fds[n++] = data_memfd(bad[i].data, strlen(bad[i].data),
							   bad[i].memfd == 1);
			else if (bad[i].memfd == 3)
				send_fds[n++] = dup(w[1]);
			put_le32(rec, IPC_FRAME_MAGIC_MEMFD);
			put_le32(rec + 4, bad[i].len);
			memset(rec + 8, ' ', bad[i].extra);
			if (ipc_send_with_fds(sv[0], rec, 8 + bad[i].extra, send_fds, (size_t)n,
					      0) < 0)
				bail("send: %m");
			close_many(send_fds, (size_t)n);
			r = ipc_frame_recv_json(sv[1], &j, fds, IPC_MAX_FDS, &n_fds, 0);
			ok(r == bad[i].err && !j && n_fds == 0, "CRDM, %s: refused (%d)",
			   bad[i].what, r);
			ok(witness_closed(w[0]) && next_frame_ok(sv, seq++),
			   "CRDM, %s: its fds are closed and the next frame reads", bad[i].what);
		}
	}
	is_int(before, count_open_fds(), "no fd leaked");
}

static void test_round_trip(int sv[2])
{
	_cleanup_json_ json_t *out =
		json_pack("{s:s,s:i,s:i}", "type", "hello", "seq", 1, "version", 1);
	_cleanup_json_ json_t *in = NULL;
	_cleanup_close_ int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int p[2], fds[IPC_MAX_FDS];
	size_t n_fds = 0;

	if (devnull < 0 || pipe2(p, O_CLOEXEC) < 0)
		bail("open/pipe2: %m");
	is_int(0, ipc_frame_send_json(sv[0], out, (int[]){ p[1], devnull }, 2, 0),
	       "send a hello frame with 2 fds");
	is_int(1, ipc_frame_recv_json(sv[1], &in, fds, IPC_MAX_FDS, &n_fds, 0), "receive it");
	ok(in && json_equal(in, out), "the object is intact");
	is_int(2, n_fds, "with both fds");
	ok(n_fds == 2 && same_file(fds[0], p[1]) && same_file(fds[1], devnull) &&
		   fd_has_cloexec(fds[0]) && fd_has_cloexec(fds[1]),
	   "in order, the same files, close-on-exec");
	close_many(fds, n_fds);
	safe_close(p[0]);
	safe_close(p[1]);
}

static void test_many(int sv[2])
{
	int before, p[2], bad = 0;

	if (pipe2(p, O_CLOEXEC) < 0)
		bail("pipe2: %m");
	before = count_open_fds();
	for (int i = 1; i <= N_FRAMES; i++) {
		_cleanup_json_ json_t *out = json_pack("{s:s,s:i}", "type", "spawn", "seq", i);
		_cleanup_json_ json_t *in = NULL;
		int fds[IPC_MAX_FDS];
		size_t n_fds = 0;

		if (ipc_frame_send_json(sv[0], out, p, 2, 0) < 0 ||
		    ipc_frame_recv_json(sv[1], &in, fds, IPC_MAX_FDS, &n_fds, 0) != 1) {
			bad++;
			continue;
		}
		if (!json_equal(in, out) || n_fds != 2 || !same_file(fds[0], p[0]) ||
		    !same_file(fds[1], p[1]))
			bad++;
		close_many(fds, n_fds);
	}
	is_int(0, bad, "%d frames with 2 fds each all arrive intact", N_FRAMES);
	is_int(before, count_open_fds(), "and no fd leaked");
	safe_close(p[0]);
	safe_close(p[1]);
}

int main(void)
{
	_cleanup_json_ json_t *j = NULL;
	int sv[2], fds[IPC_MAX_FDS];
	size_t n_fds;

	plan(81);
	test_encode_decode();

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		bail("socketpair: %m");
	test_round_trip(sv);
	test_bad_records(sv);
	test_oversize(sv);
	test_memfd(sv);
	test_many(sv);

	is_int(-EAGAIN, ipc_frame_recv_json(sv[1], &j, fds, IPC_MAX_FDS, &n_fds, MSG_DONTWAIT),
	       "non-blocking with nothing queued is -EAGAIN");
	safe_close(sv[0]);
	is_int(0, ipc_frame_recv_json(sv[1], &j, fds, IPC_MAX_FDS, &n_fds, 0),
	       "orderly EOF returns 0");
	safe_close(sv[1]);
	return tap_exit_status();
}
