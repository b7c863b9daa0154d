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
 * The policy's guard of a command (limits and syscall filter, applied in the guest):
 *   host -> guest: GUARD (id, u64 memory.max bytes, u64 pids.max, u64 RLIMIT_CPU seconds,
 *                  u64 RLIMIT_NOFILE, u32 program bytes, the seccomp program: struct sock_filter
 *                  as the host built it; 0 for what is not limited), just before the command's
 *                  EXEC: the agent runs it in a cgroup of its own with those limits and loads
 *                  the program (SECCOMP_FILTER_FLAG_LOG) just before the exec.
 *   guest -> host: LIMIT (id, u8 VM_LIMIT_* hit; before the EXIT),
 *                  DENIAL (id, u64 record time ms, u32 arch, u32 syscall, u32 action
 *                  (SECCOMP_RET_*), u32 pid, comm\0 exe\0): a refusal of the command's filter,
 *                  from the guest kernel's audit record.
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

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
	VM_GUARD = 'G',
	VM_LIMIT = 'l',
	VM_DENIAL = 'd',
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

enum {
	VM_LIMIT_PIDS = 1,
	VM_LIMIT_MEMORY = 2,
};

/* GUARD's fixed part, before the program; DENIAL's, before comm and exe. */
#define VM_GUARD_FIXED 40
#define VM_DENIAL_FIXED 28
/* The largest seccomp program (BPF_MAXINSNS instructions of 8 bytes). */
#define VM_GUARD_PROGRAM_MAX (4096 * 8)

static inline void vm_put64(uint8_t *p, uint64_t v)
{
	vm_put32(p, (uint32_t)(v >> 32));
	vm_put32(p + 4, (uint32_t)v);
}

static inline uint64_t vm_get64(const uint8_t *p)
{
	return (uint64_t)vm_get32(p) << 32 | vm_get32(p + 4);
}

/* A GUARD's payload, checked: the program lies within it (prog_len bytes, whole instructions,
 * at most VM_GUARD_PROGRAM_MAX). */
struct vm_guard {
	uint32_t id;
	uint64_t memory, pids, cpu, nofile;
	const uint8_t *prog;
	uint32_t prog_len;
};

/* 0, or -1 for a malformed GUARD. */
static inline int vm_guard_parse(const uint8_t *b, uint32_t len, struct vm_guard *g)
{
	uint32_t n;

	if (len < VM_GUARD_FIXED)
		return -1;
	n = vm_get32(b + 36);
	if (n > VM_GUARD_PROGRAM_MAX || n % 8 != 0 || len - VM_GUARD_FIXED != n)
		return -1;
	g->id = vm_get32(b);
	g->memory = vm_get64(b + 4);
	g->pids = vm_get64(b + 12);
	g->cpu = vm_get64(b + 20);
	g->nofile = vm_get64(b + 28);
	g->prog = b + VM_GUARD_FIXED;
	g->prog_len = n;
	return 0;
}

/* A DENIAL's payload, checked: comm and exe are NUL-terminated strings within it. */
struct vm_denial {
	uint32_t id;
	uint64_t msec;
	uint32_t arch, syscall, action, pid;
	const char *comm, *exe;
};

/* 0, or -1 for a malformed DENIAL. */
static inline int vm_denial_parse(const uint8_t *b, uint32_t len, struct vm_denial *d)
{
	const uint8_t *comm, *exe, *end = b + len;

	if (len < VM_DENIAL_FIXED + 2)
		return -1;
	comm = b + VM_DENIAL_FIXED;
	exe = memchr(comm, 0, (size_t)(end - comm));
	if (!exe || ++exe >= end || !memchr(exe, 0, (size_t)(end - exe)) || end[-1] != 0)
		return -1;
	d->id = vm_get32(b);
	d->msec = vm_get64(b + 4);
	d->arch = vm_get32(b + 12);
	d->syscall = vm_get32(b + 16);
	d->action = vm_get32(b + 20);
	d->pid = vm_get32(b + 24);
	d->comm = (const char *)comm;
	d->exe = (const char *)exe;
	return 0;
}
