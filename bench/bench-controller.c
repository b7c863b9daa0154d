/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "bench/bench-controller.h"
#include "ipc/ipc-jsonrpc.h"

struct jsonrpc_conn *bench_controller_connect(const char *prog, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct jsonrpc_conn *conn;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "%s: cannot connect to %s: %m (start it: cordon ps)\n", prog, path);
		exit(1);
	}
	if (jsonrpc_conn_new(fd, &conn) < 0)
		exit(1);
	return conn;
}
