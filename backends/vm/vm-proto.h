/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The builtin:vm host <-> guest agent frames over the virtio-serial port "agent":
 * u8 type | u32 big-endian length | payload. Shared by vm.c and guest/agent.c.
 *   guest -> host: READY (empty), STDOUT/STDERR (bytes), EXIT (u32 code, u32 signal),
 *                  ERROR (text; the EXIT follows)
 *   host -> guest: INIT (u64 realtime ns, u8 flags, u8 n, n entropy bytes, mount point\0),
 *                  EXEC (u32 argc, u32 envc, cwd\0 argv\0... env\0...), STDIN (bytes),
 *                  STDIN_EOF (empty), SIGNAL (u32 signal number)
 */
#pragma once

#include <stdint.h>

enum {
	VM_READY = 'R',
	VM_STDOUT = 'o',
	VM_STDERR = 'e',
	VM_EXIT = 'x',
	VM_ERROR = 'E',
	VM_INIT = 'I',
	VM_EXEC = 'X',
	VM_STDIN = 'i',
	VM_STDIN_EOF = 'z',
	VM_SIGNAL = 's',
};

enum {
	VM_INIT_WORKSPACE = 1,
	VM_INIT_READ_ONLY = 2,
};

#define VM_FRAME_HEADER 5
#define VM_FRAME_MAX (1U << 24)

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
