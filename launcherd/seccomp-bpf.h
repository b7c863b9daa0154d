/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An interpreter of seccomp's classic-BPF programs with the kernel's semantics: what it refuses
 * to load (net/core/filter.c bpf_check_classic() and check_load_and_stores(), then
 * kernel/seccomp.c seccomp_check_filter()) and what the loaded program computes (the classic to
 * eBPF conversion). Header only and freestanding: the sandbox's init includes it, so no libc
 * call and no global.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <linux/bpf_common.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

/*
 * Whether the kernel would load instruction pc of a program of len: an opcode seccomp allows,
 * and its operand in range. seccomp has no BPF_MOD, no BPF_RET | BPF_X, no byte or half-word
 * load, no indirect load; both jumps are forward and must land within the program.
 */
static inline int seccomp_bpf_insn_ok(const struct sock_filter *f, uint32_t pc, uint32_t len)
{
	uint32_t room = len - pc - 1; /* instructions after this one */

	switch (f->code) {
	case BPF_LD | BPF_W | BPF_ABS:
		return f->k < sizeof(struct seccomp_data) && (f->k & 3) == 0;
	case BPF_LD | BPF_MEM:
	case BPF_LDX | BPF_MEM:
	case BPF_ST:
	case BPF_STX:
		return f->k < BPF_MEMWORDS;
	case BPF_ALU | BPF_DIV | BPF_K:
		return f->k != 0;
	case BPF_ALU | BPF_LSH | BPF_K:
	case BPF_ALU | BPF_RSH | BPF_K:
		return f->k < 32;
	case BPF_JMP | BPF_JA:
		return f->k < room;
	case BPF_JMP | BPF_JEQ | BPF_K:
	case BPF_JMP | BPF_JEQ | BPF_X:
	case BPF_JMP | BPF_JGT | BPF_K:
	case BPF_JMP | BPF_JGT | BPF_X:
	case BPF_JMP | BPF_JGE | BPF_K:
	case BPF_JMP | BPF_JGE | BPF_X:
	case BPF_JMP | BPF_JSET | BPF_K:
	case BPF_JMP | BPF_JSET | BPF_X:
		return f->jt < room && f->jf < room;
	case BPF_LD | BPF_W | BPF_LEN:
	case BPF_LDX | BPF_W | BPF_LEN:
	case BPF_LD | BPF_IMM:
	case BPF_LDX | BPF_IMM:
	case BPF_ALU | BPF_ADD | BPF_K:
	case BPF_ALU | BPF_ADD | BPF_X:
	case BPF_ALU | BPF_SUB | BPF_K:
	case BPF_ALU | BPF_SUB | BPF_X:
	case BPF_ALU | BPF_MUL | BPF_K:
	case BPF_ALU | BPF_MUL | BPF_X:
	case BPF_ALU | BPF_DIV | BPF_X:
	case BPF_ALU | BPF_AND | BPF_K:
	case BPF_ALU | BPF_AND | BPF_X:
	case BPF_ALU | BPF_OR | BPF_K:
	case BPF_ALU | BPF_OR | BPF_X:
	case BPF_ALU | BPF_XOR | BPF_K:
	case BPF_ALU | BPF_XOR | BPF_X:
	case BPF_ALU | BPF_LSH | BPF_X:
	case BPF_ALU | BPF_RSH | BPF_X:
	case BPF_ALU | BPF_NEG:
	case BPF_MISC | BPF_TAX:
	case BPF_MISC | BPF_TXA:
	case BPF_RET | BPF_K:
	case BPF_RET | BPF_A:
		return 1;
	default:
		return 0;
	}
}

/* Whether the kernel would load the program: seccomp_bpf_insn_ok() for each instruction, the
 * last a RET, and no scratch word read where some path to it has not written it
 * (check_load_and_stores(), and like it not forgetting what was unwritten before a RET). Its
 * masks take 8 KiB of stack, where the kernel allocates them. */
static inline int seccomp_bpf_check(const struct sock_filter *prog, uint32_t len)
{
	uint16_t masks[BPF_MAXINSNS]; /* the words written on every jump to each instruction */
	uint16_t valid = 0;	      /* the words written on the way here */
	uint32_t pc;

	if (len == 0 || len > BPF_MAXINSNS)
		return 0;
	if (prog[len - 1].code != (BPF_RET | BPF_K) && prog[len - 1].code != (BPF_RET | BPF_A))
		return 0;
	for (pc = 0; pc < len; pc++)
		masks[pc] = 0xffff;
	for (pc = 0; pc < len; pc++) {
		const struct sock_filter *f = &prog[pc];

		if (!seccomp_bpf_insn_ok(f, pc, len))
			return 0;
		valid &= masks[pc];
		switch (f->code) {
		case BPF_ST:
		case BPF_STX:
			valid |= (uint16_t)(1U << f->k);
			break;
		case BPF_LD | BPF_MEM:
		case BPF_LDX | BPF_MEM:
			if (!(valid & (1U << f->k)))
				return 0;
			break;
		case BPF_JMP | BPF_JA:
			masks[pc + 1 + f->k] &= valid;
			valid = 0xffff;
			break;
		default:
			if (BPF_CLASS(f->code) != BPF_JMP)
				break;
			/* a conditional jump (seccomp_bpf_insn_ok() let no other through) */
			masks[pc + 1 + f->jt] &= valid;
			masks[pc + 1 + f->jf] &= valid;
			valid = 0xffff;
			break;
		}
	}
	return 1;
}

/* The 32-bit word at byte k of d, in the machine's byte order (k checked: aligned, within). */
static inline uint32_t seccomp_bpf_word(const struct seccomp_data *d, uint32_t k)
{
	const uint8_t *b = (const uint8_t *)d + k;

#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
#else
	return (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
#endif
}

/*
 * What a program the kernel loaded returns on this data (seccomp_bpf_run() without the check of
 * the whole program first): each instruction is checked as it runs (seccomp_bpf_insn_ok(), so
 * any input is safe to run), but a scratch word read before any write reads 0 where the kernel
 * would have refused the program. For the sandbox's init, which re-runs the plan's filter on a
 * notification's data to learn which errno the plan gives: the kernel loaded those very
 * instructions (but for their RETs) in front of the floor, and the init's stack may be small
 * (the plan's RLIMIT_STACK), too small for the check's 8 KiB. Only forward jumps: at most len
 * instructions run.
 */
static inline uint32_t seccomp_bpf_exec(const struct sock_filter *prog, uint32_t len,
					const struct seccomp_data *d)
{
	uint32_t mem[BPF_MEMWORDS];
	uint32_t a = 0, x = 0, pc = 0, i;

	if (len == 0 || len > BPF_MAXINSNS)
		return 0;
	for (i = 0; i < BPF_MEMWORDS; i++)
		mem[i] = 0;
	while (pc < len) {
		const struct sock_filter *f = &prog[pc];
		uint32_t src = BPF_SRC(f->code) == BPF_X ? x : f->k;
		uint32_t v;

		if (!seccomp_bpf_insn_ok(f, pc, len))
			return 0;
		pc++;

		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
		case BPF_LDX:
			switch (BPF_MODE(f->code)) {
			case BPF_ABS:
				v = seccomp_bpf_word(d, f->k);
				break;
			case BPF_LEN:
				v = sizeof(struct seccomp_data);
				break;
			case BPF_MEM:
				v = mem[f->k];
				break;
			default: /* BPF_IMM */
				v = f->k;
				break;
			}
			if (BPF_CLASS(f->code) == BPF_LD)
				a = v;
			else
				x = v;
			break;
		case BPF_ST:
			mem[f->k] = a;
			break;
		case BPF_STX:
			mem[f->k] = x;
			break;
		case BPF_ALU:
			switch (BPF_OP(f->code)) {
			case BPF_ADD:
				a += src;
				break;
			case BPF_SUB:
				a -= src;
				break;
			case BPF_MUL:
				a *= src;
				break;
			case BPF_DIV:
				if (src == 0)
					return 0;
				a /= src;
				break;
			case BPF_AND:
				a &= src;
				break;
			case BPF_OR:
				a |= src;
				break;
			case BPF_XOR:
				a ^= src;
				break;
			case BPF_LSH: /* eBPF's 32-bit shift by a register: the low 5 bits */
				a <<= src & 31;
				break;
			case BPF_RSH:
				a >>= src & 31;
				break;
			default: /* BPF_NEG */
				a = 0U - a;
				break;
			}
			break;
		case BPF_JMP:
			switch (BPF_OP(f->code)) {
			case BPF_JA:
				pc += f->k;
				break;
			case BPF_JEQ:
				pc += a == src ? f->jt : f->jf;
				break;
			case BPF_JGT:
				pc += a > src ? f->jt : f->jf;
				break;
			case BPF_JGE:
				pc += a >= src ? f->jt : f->jf;
				break;
			default: /* BPF_JSET */
				pc += (a & src) ? f->jt : f->jf;
				break;
			}
			break;
		case BPF_RET:
			return BPF_RVAL(f->code) == BPF_A ? a : f->k;
		default: /* BPF_MISC */
			if (BPF_MISCOP(f->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		}
	}
	return 0;
}

/*
 * What the kernel's seccomp would return for this program on this data: the program's RET value.
 * A program the kernel would refuse to load, a jump out of range, a fall off the end, a division
 * by zero at run time: 0 (SECCOMP_RET_KILL_THREAD), as the kernel's conversion returns 0 on a
 * division by zero. launcherd runs a plan's program before the kernel has seen it (which of the
 * init's own calls it allows); the tests compare it with the kernel.
 */
static inline uint32_t seccomp_bpf_run(const struct sock_filter *prog, uint32_t len,
				       const struct seccomp_data *d)
{
	return seccomp_bpf_check(prog, len) ? seccomp_bpf_exec(prog, len, d) : 0;
}
