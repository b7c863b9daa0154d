/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the benchmarks that talk to a running controller share (bench-exec, bench-activation). */
#pragma once

struct jsonrpc_conn;

/* A JSON-RPC connection to the controller's socket at path; on failure says so (as prog, with
 * how to start the controller) and exits 1. */
struct jsonrpc_conn *bench_controller_connect(const char *prog, const char *path);
