/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Network mode "proxy" in builtin:vm: the guest has no NIC; its TCP connections to the proxy
 * port (127.0.0.1:3128) are accepted by the guest helper `forward` (guest/forward.c) and carried
 * over the virtio-serial port "net" to the host, where vm.c hands each to the controller's
 * allowed-domains proxy (proxy/proxy-engine.c) of the command. Both ends use this multiplexer
 * (forward-mux.c: libc only, so the static guest helper links it too).
 *
 * Frames on the port: u8 type | u32 big-endian length | payload; the payload starts with the
 * u32 connection id, chosen by the guest (increasing, never reused within a VM):
 *   OPEN  'O' (id)                 guest -> host: a connection was accepted
 *   DATA  'D' (id, 1..FWD_CHUNK bytes)    both ways
 *   ACK   'A' (id, u32 n)          both ways: the receiver wrote n more bytes of DATA out
 *   SHUT  'S' (id)                 both ways: no more DATA this way (its reader saw EOF)
 *   CLOSE 'C' (id)                 both ways: the connection is gone (ended, failed or refused);
 *                                  the receiver closes its end and forgets the id
 * Flow control: a side has at most FWD_WINDOW bytes of DATA per connection not yet acknowledged,
 * so one connection whose reader stalls holds up no other and the receiver's buffer per
 * connection is bounded. Frames for an unknown id are dropped (it was closed meanwhile). A
 * connection ends with one CLOSE when both directions are shut and drained, or at once on an
 * error, on DATA beyond the window or on an ACK of more than was sent. A frame that is not one of
 * these (unknown type, wrong length) breaks the port: every connection is closed and nothing
 * more is read from it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	FWD_OPEN = 'O',
	FWD_DATA = 'D',
	FWD_ACK = 'A',
	FWD_SHUT = 'S',
	FWD_CLOSE = 'C',
};

#define FWD_HEADER 5
#define FWD_CHUNK (32U * 1024U)
#define FWD_WINDOW (256U * 1024U)
/* Connections per VM at once: the guest stops accepting at this, the host refuses more. */
#define FWD_MAX_CONNS 128U
/* The host stops reading the port while this much waits to be written to it. */
#define FWD_OUT_HIGH (1024U * 1024U)

struct fwd_frame {
	uint8_t type;
	uint32_t id;
	const uint8_t *data; /* DATA: the bytes */
	size_t len;
	uint32_t ack; /* ACK: the count */
};

/*
 * One frame from the start of b (len bytes): the frame's size (> 0) and *ret filled (data
 * points into b); 0: not complete yet; -EBADMSG: not a frame of this protocol.
 */
int fwd_frame_parse(const uint8_t *b, size_t len, struct fwd_frame *ret);

struct fwd_mux;

struct fwd_conn {
	struct fwd_conn *next;
	uint32_t id;
	int fd;
	uint8_t *wbuf; /* DATA received, not yet written to fd */
	size_t wlen, wcap;
	size_t unacked; /* DATA sent, not yet acknowledged */
	bool rd_eof;	/* fd read EOF; SHUT sent */
	bool peer_shut; /* SHUT received */
	bool wr_shut;	/* shutdown(fd, SHUT_WR) done */
	/* The fd hung up (a poller reports that whatever it waits for): not watched any more;
	 * what is left to read is read when an ACK opens the window. */
	bool hup;
	void *data; /* the driver's */
};

struct fwd_ops {
	/* Host: a connected, non-blocking, CLOEXEC socket for the guest's connection id, or
	 * -errno (the guest gets CLOSE). NULL (guest): OPEN is not accepted. */
	int (*open)(struct fwd_mux *m, uint32_t id, void *ud);
	/* A connection appeared (watch c->fd) or is about to go (its fd is closed after). */
	void (*attach)(struct fwd_mux *m, struct fwd_conn *c, void *ud);
	void (*detach)(struct fwd_mux *m, struct fwd_conn *c, void *ud);
};

struct fwd_mux {
	const struct fwd_ops *ops;
	void *ud;
	struct fwd_conn *conns;
	unsigned n_conns;
	uint8_t *in; /* bytes read from the port, not yet a whole frame */
	size_t in_len, in_cap;
	uint8_t *out; /* frames for the port, from out_off */
	size_t out_off, out_len, out_cap;
	uint32_t next_id;
	bool broken; /* a bad frame came: nothing more is read */
	bool oom;
};

void fwd_mux_init(struct fwd_mux *m, const struct fwd_ops *ops, void *ud);
/* Close every connection (no frames) and free the buffers. */
void fwd_mux_done(struct fwd_mux *m);
/* Bytes read from the port: whole frames are handled. -EBADMSG: the port is broken (every
 * connection closed); -ENOMEM. */
int fwd_mux_input(struct fwd_mux *m, const uint8_t *data, size_t len);
/* Guest: a connection accepted on fd (non-blocking; owned from now on): OPEN. */
int fwd_mux_accept(struct fwd_mux *m, int fd);
/* c's fd is readable and/or writable, or hung up: move bytes; c may be freed. */
void fwd_conn_io(struct fwd_mux *m, struct fwd_conn *c, bool readable, bool writable, bool hangup);
/* What to wait for on c's fd: POLLIN while its window has room, POLLOUT while bytes wait;
 * nothing once it hung up (c->hup: the driver stops watching the fd). */
short fwd_conn_events(const struct fwd_conn *c);
/* Bytes waiting for the port. */
static inline size_t fwd_mux_pending(const struct fwd_mux *m)
{
	return m->out_len - m->out_off;
}
/* Write what waits to the (non-blocking) port fd: 0 (all written or it would block), -errno. */
int fwd_mux_flush(struct fwd_mux *m, int port_fd);
