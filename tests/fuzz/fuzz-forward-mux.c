/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * builtin:vm's network "proxy" multiplexer (backends/vm/forward-mux.c) on arbitrary bytes from
 * the guest, as the host runs it: the first input byte picks the size of the pieces the rest is
 * fed in (a port delivers frames in any split), each opened connection is a socketpair whose far
 * end also stays open (it says "hello", and half of them shut their side), and after every piece
 * every connection's fd is served. Checked, aborting
 * when broken:
 *   - fwd_frame_parse(): a frame used at most the bytes given, is a known type with its length;
 *     a frame minus its last byte is "incomplete"; DATA carries 1..FWD_CHUNK bytes;
 *   - the multiplexer keeps its bounds: at most FWD_MAX_CONNS connections, no connection holds
 *     more than FWD_WINDOW bytes for its fd or has more than FWD_WINDOW unacknowledged, and the
 *     output is whole, parseable frames;
 *   - once a bad frame came, the port is broken and has no connection left.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backends/vm/forward-mux.h"
#include "tests/fuzz/fuzz.h"

static int far[1024];
static size_t n_far;

static int open_conn(struct fwd_mux *m, uint32_t id, void *ud)
{
	int sv[2];

	(void)m;
	(void)ud;
	if (n_far >= sizeof(far) / sizeof(far[0]))
		return -EMFILE;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return -errno;
	/* The upstream answers, and half of them end their side at once (the read and EOF
	 * paths: DATA and SHUT to the guest). */
	check(write(sv[1], "hello", 5) == 5);
	if (id & 1)
		(void)shutdown(sv[1], SHUT_WR);
	far[n_far++] = sv[1];
	return sv[0];
}

static const struct fwd_ops ops = { .open = open_conn };

static void check_parse(const uint8_t *b, size_t len)
{
	struct fwd_frame f;
	int k = fwd_frame_parse(b, len, &f);

	check(k == 0 || k == -EBADMSG || (k > 0 && (size_t)k <= len));
	if (k <= 0)
		return;
	check((size_t)k >= FWD_HEADER + 4);
	check(f.type == FWD_OPEN || f.type == FWD_DATA || f.type == FWD_ACK || f.type == FWD_SHUT ||
	      f.type == FWD_CLOSE);
	if (f.type == FWD_DATA)
		check(f.len >= 1 && f.len <= FWD_CHUNK && f.data == b + FWD_HEADER + 4 &&
		      (size_t)k == FWD_HEADER + 4 + f.len);
	check(fwd_frame_parse(b, (size_t)k - 1, &f) == 0);
}

/* The output: whole frames, each parseable. */
static void check_output(const struct fwd_mux *m)
{
	size_t off = m->out_off;

	while (off < m->out_len) {
		struct fwd_frame f;
		int k = fwd_frame_parse(m->out + off, m->out_len - off, &f);

		check(k > 0);
		off += (size_t)k;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fwd_mux m;
	size_t piece;

	check_parse(data, size);
	if (size < 1)
		return 0;
	piece = (size_t)data[0] * 7 + 1;
	data++;
	size--;
	n_far = 0;
	fwd_mux_init(&m, &ops, NULL);
	for (size_t off = 0; off < size; off += piece) {
		size_t n = size - off < piece ? size - off : piece;
		int r = fwd_mux_input(&m, data + off, n);

		check(r == 0 || r == -EBADMSG || r == -ENOMEM);
		if (r == -EBADMSG) {
			check(m.broken && !m.conns && !m.n_conns);
			check(fwd_mux_input(&m, data, 0) == -EBADMSG);
			break;
		}
		check(m.n_conns <= FWD_MAX_CONNS);
		check_output(&m);
		for (struct fwd_conn *c = m.conns, *next; c; c = next) {
			next = c->next;
			check(c->wlen <= FWD_WINDOW && c->unacked <= FWD_WINDOW);
			/* (a hang-up now and then: the ones that shut their side) */
			fwd_conn_io(&m, c, true, true, (c->id & 3) == 3);
		}
		check_output(&m);
		m.out_off = m.out_len = 0; /* (written to the port) */
	}
	fwd_mux_done(&m);
	for (size_t i = 0; i < n_far; i++)
		close(far[i]);
	return 0;
}
