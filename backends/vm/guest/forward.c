/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The builtin:vm guest helper `forward` (network mode "proxy"; built -static, in the initramfs as
 * /sbin/cordon-forward). The agent starts it, in a session of its own, the first time a command
 * needs the proxy, with fd 3 a listening TCP socket on 127.0.0.1:PORT (the agent made it, so it
 * listens before the command runs) and fd 4 the virtio-serial port "net". Every connection
 * accepted is carried to the host over the port (../forward-mux.h), where the host hands it to
 * the allowed-domains proxy. The guest has no NIC: this is its only way out. It exits when the
 * host lets go of the port.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../forward-mux.h"

#define LISTEN_FD 3
#define PORT_FD 4

int main(void)
{
	static uint8_t buf[65536];
	struct fwd_mux m;
	struct pollfd *p = NULL;
	struct fwd_conn **pc = NULL;
	size_t cap = 0;

	signal(SIGPIPE, SIG_IGN);
	(void)fcntl(LISTEN_FD, F_SETFL, O_NONBLOCK);
	(void)fcntl(PORT_FD, F_SETFL, O_NONBLOCK);
	fwd_mux_init(&m, NULL, NULL);
	{
		/* Ids from the boot clock's microseconds: one started again after one that died
		 * does not reuse the ids the host may still hold from it. */
		struct timespec ts;

		clock_gettime(CLOCK_BOOTTIME, &ts);
		m.next_id = (uint32_t)((uint64_t)ts.tv_sec * 1000000ULL +
				       (uint64_t)ts.tv_nsec / 1000ULL) |
			    1U;
	}
	for (;;) {
		size_t n = 0, want = 2 + m.n_conns;

		if (want > cap) {
			struct pollfd *np = realloc(p, want * sizeof(*p));
			struct fwd_conn **nc = realloc(pc, want * sizeof(*pc));

			if (np)
				p = np;
			if (nc)
				pc = nc;
			if (!np || !nc)
				return 1;
			cap = want;
		}
		p[n] = (struct pollfd){ .fd = PORT_FD,
					.events = (short)(POLLIN |
							  (fwd_mux_pending(&m) ? POLLOUT : 0)) };
		pc[n++] = NULL;
		p[n] = (struct pollfd){ .fd = m.n_conns < FWD_MAX_CONNS ? LISTEN_FD : -1,
					.events = POLLIN };
		pc[n++] = NULL;
		for (struct fwd_conn *c = m.conns; c; c = c->next) {
			p[n] = (struct pollfd){ .fd = c->hup ? -1 : c->fd,
						.events = fwd_conn_events(c) };
			pc[n++] = c;
		}
		if (poll(p, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t k = read(PORT_FD, buf, sizeof(buf));

			if (k < 0 && errno != EAGAIN && errno != EINTR)
				return 1;
			if (k == 0)
				return 0; /* the host let go of the port */
			if (k > 0 && fwd_mux_input(&m, buf, (size_t)k) < 0)
				return 1;
			/* pc[] entries may be freed now: poll again */
			if (k > 0)
				goto flush;
		}
		if (p[1].revents & POLLIN)
			for (;;) {
				int fd = accept4(LISTEN_FD, NULL, NULL,
						 SOCK_NONBLOCK | SOCK_CLOEXEC);

				if (fd < 0)
					break;
				if (fwd_mux_accept(&m, fd) < 0 || m.n_conns >= FWD_MAX_CONNS)
					break;
			}
		/* Each entry is looked up again: handling one may free another (never here, but
		 * cheap to be sure). */
		for (size_t i = 2; i < n; i++) {
			if (!p[i].revents)
				continue;
			for (struct fwd_conn *c = m.conns; c; c = c->next)
				if (c == pc[i]) {
					fwd_conn_io(&m, c, p[i].revents & POLLIN,
						    p[i].revents & POLLOUT,
						    p[i].revents & (POLLHUP | POLLERR));
					break;
				}
		}
flush:
		if (fwd_mux_pending(&m) && fwd_mux_flush(&m, PORT_FD) < 0)
			return 1;
	}
}
