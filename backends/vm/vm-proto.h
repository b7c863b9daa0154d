/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The builtin:vm host <-> guest agent frames over the virtio-serial port "agent":
 * u8 type | u32 big-endian length | payload. Shared by vm.c and guest/agent.c. One VM runs any
 * number of commands at once: every frame about a command starts with its u32 id (chosen by
 * the host, unique in the VM).
 *   guest -> host: READY (u64 guest CLOCK_BOOTTIME ns), STDOUT/STDERR (id, bytes),
 *                  EXIT (id, u32 code, u32 signal), ERROR (id, text; the EXIT follows),
 *                  STDIN_ACK (id: the last STDIN frame was written to the command's stdin;
 *                  the host sends the next one only then)
 * Flow control both ways, so that a command whose reader stalls holds up no other: one STDIN
 * frame per command in flight, and one STDOUT and one STDERR frame, each acknowledged with an
 * OUTPUT_ACK once the host wrote it out (or dropped it: nobody reads). The agent reports a
 * command's EXIT only once its output is acknowledged, so the exit follows all of its output.
 *   host -> guest: INIT (u64 realtime ns, u8 flags, u8 n, n entropy bytes, mount point\0),
 *                  EXEC (id, u8 flags, u32 argc, u32 envc, cwd\0 argv\0... env\0...),
 *                  STDIN (id, bytes), STDIN_EOF (id), SIGNAL (id, u32 signal number),
 *                  OUTPUT_ACK (id, u8 stream: 1 stdout, 2 stderr)
 * The port "net" carries network mode "proxy"'s connections: forward-mux.h.
 */
#pragma once

#include <stdint.h>

enum {
	VM_READY = 'R',
	VM_STDOUT = 'o',
	VM_STDERR = 'e',
	VM_EXIT = 'x',
	VM_ERROR = 'E',
	VM_STDIN_ACK = 'a',
	VM_INIT = 'I',
	VM_EXEC = 'X',
	VM_STDIN = 'i',
	VM_STDIN_EOF = 'z',
	VM_SIGNAL = 's',
	VM_OUTPUT_ACK = 'A',
};

enum {
	VM_INIT_WORKSPACE = 1,
	VM_INIT_READ_ONLY = 2,
};

enum {
	/* This command sees the workspace read-only (in a read-write VM). */
	VM_EXEC_READ_ONLY = 1,
	/* Network "proxy": before the command runs, the agent makes sure the forwarder (the guest
	 * helper `forward`, /sbin/cordon-forward) listens on 127.0.0.1:VM_PROXY_PORT and carries
	 * its connections over the port "net" (forward-mux.h); without it the command fails. */
	VM_EXEC_PROXY = 2,
};

/* The proxy's port in the guest (the plan's proxyPort, which the policy compiler fixes). */
#define VM_PROXY_PORT 3128

#define VM_FRAME_HEADER 5
#define VM_FRAME_MAX (1U << 24)
/* What the agent reads from a command's stdout or stderr per frame. */
#define VM_OUTPUT_CHUNK 65536

static inline void vm_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t vm_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void vm_frame_header(uint8_t *h, uint8_t type, uint32_t len)
{
	h[0] = type;
	vm_put32(h + 1, len);
}
