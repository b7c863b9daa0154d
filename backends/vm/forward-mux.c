/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The connection multiplexer of builtin:vm's network mode "proxy" (forward-mux.h): the framing,
 * flow control and connection states, shared by the host (vm.c) and the guest helper
 * (guest/forward.c). libc only; the caller polls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "forward-mux.h"

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int fwd_frame_parse(const uint8_t *b, size_t len, struct fwd_frame *ret)
{
	uint32_t plen;

	if (len < 1)
		return 0;
	switch (b[0]) {
	case FWD_OPEN:
	case FWD_DATA:
	case FWD_ACK:
	case FWD_SHUT:
	case FWD_CLOSE:
		break;
	default:
		return -EBADMSG;
	}
	if (len < FWD_HEADER)
		return 0;
	plen = get32(b + 1);
	if (plen < 4 || plen > 4 + FWD_CHUNK)
		return -EBADMSG;
	if (b[0] == FWD_DATA ? plen == 4 : plen != (b[0] == FWD_ACK ? 8U : 4U))
		return -EBADMSG;
	if (len < FWD_HEADER + (size_t)plen)
		return 0;
	*ret = (struct fwd_frame){ .type = b[0], .id = get32(b + FWD_HEADER) };
	if (b[0] == FWD_DATA) {
		ret->data = b + FWD_HEADER + 4;
		ret->len = plen - 4;
	} else if (b[0] == FWD_ACK)
		ret->ack = get32(b + FWD_HEADER + 4);
	return (int)(FWD_HEADER + plen);
}

void fwd_mux_init(struct fwd_mux *m, const struct fwd_ops *ops, void *ud)
{
	*m = (struct fwd_mux){ .ops = ops, .ud = ud, .next_id = 1 };
}

static int reserve(uint8_t **buf, size_t *cap, size_t need)
{
	uint8_t *n;
	size_t c = *cap ? *cap : 4096;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	n = realloc(*buf, c);
	if (!n)
		return -ENOMEM;
	*buf = n;
	*cap = c;
	return 0;
}

/* Room for a frame of plen payload bytes at the end of the output queue: its header written,
 * the payload's place returned (NULL: out of memory). */
static uint8_t *out_frame(struct fwd_mux *m, uint8_t type, uint32_t id, uint32_t plen)
{
	uint8_t *p;

	if (m->out_off && m->out_off == m->out_len)
		m->out_off = m->out_len = 0;
	if (m->out_off > 65536 && m->out_off * 2 > m->out_len) {
		memmove(m->out, m->out + m->out_off, m->out_len - m->out_off);
		m->out_len -= m->out_off;
		m->out_off = 0;
	}
	if (reserve(&m->out, &m->out_cap, m->out_len + FWD_HEADER + plen) < 0) {
		m->oom = true;
		return NULL;
	}
	p = m->out + m->out_len;
	p[0] = type;
	put32(p + 1, plen);
	put32(p + FWD_HEADER, id);
	m->out_len += FWD_HEADER + plen;
	return p + FWD_HEADER + 4;
}

static void send_id(struct fwd_mux *m, uint8_t type, uint32_t id)
{
	(void)out_frame(m, type, id, 4);
}

static void conn_free(struct fwd_mux *m, struct fwd_conn *c)
{
	for (struct fwd_conn **cc = &m->conns; *cc; cc = &(*cc)->next)
		if (*cc == c) {
			*cc = c->next;
			break;
		}
	m->n_conns--;
	if (m->ops && m->ops->detach)
		m->ops->detach(m, c, m->ud);
	if (c->fd >= 0)
		close(c->fd);
	free(c->wbuf);
	free(c);
}

/* The connection is gone on this side: tell the peer, forget it. */
static void conn_abort(struct fwd_mux *m, struct fwd_conn *c)
{
	send_id(m, FWD_CLOSE, c->id);
	conn_free(m, c);
}

/* Both directions shut and drained: the connection ends. */
static bool conn_check_done(struct fwd_mux *m, struct fwd_conn *c)
{
	if (!c->rd_eof || !c->wr_shut)
		return false;
	conn_abort(m, c);
	return true;
}

static struct fwd_conn *conn_find(struct fwd_mux *m, uint32_t id)
{
	for (struct fwd_conn *c = m->conns; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static struct fwd_conn *conn_new(struct fwd_mux *m, uint32_t id, int fd)
{
	struct fwd_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->id = id;
	c->fd = fd;
	c->next = m->conns;
	m->conns = c;
	m->n_conns++;
	if (m->ops && m->ops->attach)
		m->ops->attach(m, c, m->ud);
	return c;
}

/* Write what waits for c's fd; ACK it. false: c was freed. */
static bool conn_write(struct fwd_mux *m, struct fwd_conn *c)
{
	size_t done = 0;

	while (done < c->wlen) {
		ssize_t k =
			send(c->fd, c->wbuf + done, c->wlen - done, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			break;
		if (k <= 0) {
			conn_abort(m, c);
			return false;
		}
		done += (size_t)k;
	}
	if (done) {
		uint8_t *p = out_frame(m, FWD_ACK, c->id, 8);

		if (p)
			put32(p, (uint32_t)done);
		memmove(c->wbuf, c->wbuf + done, c->wlen - done);
		c->wlen -= done;
	}
	if (!c->wlen && c->peer_shut && !c->wr_shut) {
		(void)shutdown(c->fd, SHUT_WR);
		c->wr_shut = true;
		if (conn_check_done(m, c))
			return false;
	}
	return true;
}

/* Read from c's fd while its window has room. false: c was freed. */
static bool conn_read(struct fwd_mux *m, struct fwd_conn *c)
{
	while (!c->rd_eof && c->unacked < FWD_WINDOW) {
		size_t room = FWD_WINDOW - c->unacked;
		uint8_t *p;
		ssize_t k;

		if (room > FWD_CHUNK)
			room = FWD_CHUNK;
		p = out_frame(m, FWD_DATA, c->id, 4 + (uint32_t)room);
		if (!p) {
			conn_abort(m, c);
			return false;
		}
		k = recv(c->fd, p, room, MSG_DONTWAIT);
		/* Give back what the read did not fill. */
		m->out_len -= room - (k > 0 ? (size_t)k : 0);
		if (k > 0) {
			put32(p - 8, 4 + (uint32_t)k);
			c->unacked += (size_t)k;
			continue;
		}
		m->out_len -= FWD_HEADER + 4; /* no frame after all */
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			break;
		if (k < 0) {
			conn_abort(m, c);
			return false;
		}
		c->rd_eof = true;
		send_id(m, FWD_SHUT, c->id);
		if (conn_check_done(m, c))
			return false;
	}
	return true;
}

void fwd_conn_io(struct fwd_mux *m, struct fwd_conn *c, bool readable, bool writable, bool hangup)
{
	if ((writable || hangup) && c->wlen && !conn_write(m, c))
		return;
	if ((readable || hangup) && !conn_read(m, c))
		return;
	/* A poller reports a hang-up whatever it waits for: watching it would spin. */
	if (hangup)
		c->hup = true;
}

short fwd_conn_events(const struct fwd_conn *c)
{
	short e = 0;

	if (c->hup)
		return 0;
	if (!c->rd_eof && c->unacked < FWD_WINDOW)
		e |= POLLIN;
	if (c->wlen)
		e |= POLLOUT;
	return e;
}

int fwd_mux_accept(struct fwd_mux *m, int fd)
{
	struct fwd_conn *c = conn_new(m, m->next_id, fd);

	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	m->next_id++;
	send_id(m, FWD_OPEN, c->id);
	return 0;
}

static void handle(struct fwd_mux *m, const struct fwd_frame *f)
{
	struct fwd_conn *c = conn_find(m, f->id);

	switch (f->type) {
	case FWD_OPEN: {
		int fd;

		if (c)
			return; /* (the peer's mistake: the live one goes on) */
		if (!m->ops || !m->ops->open || m->n_conns >= FWD_MAX_CONNS) {
			send_id(m, FWD_CLOSE, f->id);
			return;
		}
		fd = m->ops->open(m, f->id, m->ud);
		if (fd < 0 || !conn_new(m, f->id, fd)) {
			if (fd >= 0)
				close(fd);
			send_id(m, FWD_CLOSE, f->id);
		}
		return;
	}
	case FWD_DATA:
		if (!c)
			return;
		if (c->peer_shut || f->len > FWD_WINDOW - c->wlen ||
		    reserve(&c->wbuf, &c->wcap, c->wlen + f->len) < 0) {
			conn_abort(m, c);
			return;
		}
		memcpy(c->wbuf + c->wlen, f->data, f->len);
		c->wlen += f->len;
		(void)conn_write(m, c);
		return;
	case FWD_ACK:
		if (!c)
			return;
		if (f->ack > c->unacked) {
			conn_abort(m, c);
			return;
		}
		c->unacked -= f->ack;
		if (c->hup)
			(void)conn_read(m, c); /* (not watched: what is left, now) */
		return;
	case FWD_SHUT:
		if (!c || c->peer_shut)
			return;
		c->peer_shut = true;
		(void)conn_write(m, c);
		return;
	case FWD_CLOSE:
		if (c)
			conn_free(m, c);
		return;
	}
}

int fwd_mux_input(struct fwd_mux *m, const uint8_t *data, size_t len)
{
	size_t off = 0;

	if (m->broken)
		return -EBADMSG;
	if (reserve(&m->in, &m->in_cap, m->in_len + len) < 0)
		return -ENOMEM;
	if (len)
		memcpy(m->in + m->in_len, data, len);
	m->in_len += len;
	for (;;) {
		struct fwd_frame f;
		int k = fwd_frame_parse(m->in + off, m->in_len - off, &f);

		if (k < 0) {
			m->broken = true;
			while (m->conns)
				conn_free(m, m->conns);
			m->in_len = 0;
			return k;
		}
		if (k == 0)
			break;
		handle(m, &f);
		off += (size_t)k;
	}
	memmove(m->in, m->in + off, m->in_len - off);
	m->in_len -= off;
	return m->oom ? -ENOMEM : 0;
}

int fwd_mux_flush(struct fwd_mux *m, int port_fd)
{
	while (m->out_off < m->out_len) {
		ssize_t k = write(port_fd, m->out + m->out_off, m->out_len - m->out_off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return 0;
		if (k <= 0)
			return k < 0 ? -errno : -EPIPE;
		m->out_off += (size_t)k;
	}
	m->out_off = m->out_len = 0;
	return 0;
}

void fwd_mux_done(struct fwd_mux *m)
{
	while (m->conns)
		conn_free(m, m->conns);
	free(m->in);
	free(m->out);
	m->in = m->out = NULL;
	m->in_len = m->in_cap = m->out_off = m->out_len = m->out_cap = 0;
}
