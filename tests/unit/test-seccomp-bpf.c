/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The seccomp classic-BPF interpreter (launcherd/seccomp-bpf.h): a table of each opcode class and
 * of what the kernel refuses (each refusal also shown refused by the kernel); the same answer
 * as the kernel's seccomp for a few thousand pseudo-random programs on random arguments (each
 * loaded in a child that then calls getppid(), whose errno the program computes); and a
 * program libseccomp produces, on matching and non-matching calls.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <seccomp.h>

#include "launcherd/seccomp-bpf.h"
#include "tests/tap.h"

#define STMT(code, k) ((struct sock_filter){ (uint16_t)(code), 0, 0, (uint32_t)(k) })
#define JUMP(code, k, jt, jf) ((struct sock_filter){ (uint16_t)(code), (jt), (jf), (uint32_t)(k) })
#define PROG(...)                                                                \
	((const struct sock_filter[]){ __VA_ARGS__ }),                           \
		(uint32_t)(sizeof((const struct sock_filter[]){ __VA_ARGS__ }) / \
			   sizeof(struct sock_filter))
#define RET_A STMT(BPF_RET | BPF_A, 0)
#define LD_ABS(off) STMT(BPF_LD | BPF_W | BPF_ABS, off)
#define OFF_ARG(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define ERRNO(e) (SECCOMP_RET_ERRNO | (e))

static struct seccomp_data test_data(void)
{
	return (struct seccomp_data){ .nr = 39,
				      .arch = 0xc000003e,
				      .instruction_pointer = 0x1122334455667788ULL,
				      .args = { 0x0000000100000002ULL, 7, 0xffffffffffffffffULL, 0,
						40, 0x80000000ULL } };
}

/* The word at offset off of d as the machine stores it, read another way than the header does. */
static uint32_t word_at(const struct seccomp_data *d, size_t off)
{
	uint32_t w;

	memcpy(&w, (const char *)d + off, sizeof(w));
	return w;
}

static void test_opcodes(void)
{
	struct seccomp_data d = test_data();
	const struct seccomp_data *p = &d;

	is_int(39, seccomp_bpf_run(PROG(LD_ABS(0), RET_A), p), "LD ABS: nr");
	is_int(0xc000003e, seccomp_bpf_run(PROG(LD_ABS(4), RET_A), p), "LD ABS: arch");
	is_int(word_at(p, 8), seccomp_bpf_run(PROG(LD_ABS(8), RET_A), p),
	       "LD ABS: the instruction pointer's first word");
	is_int(word_at(p, OFF_ARG(0)), seccomp_bpf_run(PROG(LD_ABS(OFF_ARG(0)), RET_A), p),
	       "LD ABS: args[0]'s first word");
	is_int(word_at(p, OFF_ARG(0) + 4), seccomp_bpf_run(PROG(LD_ABS(OFF_ARG(0) + 4), RET_A), p),
	       "LD ABS: args[0]'s second word");
	is_int(0x80000000,
	       seccomp_bpf_run(PROG(LD_ABS(OFF_ARG(5)), RET_A), p) |
		       seccomp_bpf_run(PROG(LD_ABS(OFF_ARG(5) + 4), RET_A), p),
	       "LD ABS: args[5], the last word");
	is_int(64, seccomp_bpf_run(PROG(STMT(BPF_LD | BPF_W | BPF_LEN, 0), RET_A), p), "LD LEN");
	is_int(64,
	       seccomp_bpf_run(PROG(STMT(BPF_LDX | BPF_W | BPF_LEN, 0), STMT(BPF_MISC | BPF_TXA, 0),
				    RET_A),
			       p),
	       "LDX LEN, TXA");
	is_int(0, seccomp_bpf_run(PROG(RET_A), p), "A starts at 0");
	is_int(0, seccomp_bpf_run(PROG(STMT(BPF_MISC | BPF_TXA, 0), RET_A), p), "X starts at 0");
	is_int(5, seccomp_bpf_run(PROG(STMT(BPF_LD | BPF_IMM, 5), RET_A), p), "LD IMM");
	is_int(6,
	       seccomp_bpf_run(PROG(STMT(BPF_LDX | BPF_IMM, 6), STMT(BPF_MISC | BPF_TXA, 0), RET_A),
			       p),
	       "LDX IMM");
	is_int(9,
	       seccomp_bpf_run(PROG(STMT(BPF_LD | BPF_IMM, 9), STMT(BPF_MISC | BPF_TAX, 0),
				    STMT(BPF_LD | BPF_IMM, 1), STMT(BPF_MISC | BPF_TXA, 0), RET_A),
			       p),
	       "TAX");
	is_int(7,
	       seccomp_bpf_run(PROG(STMT(BPF_LD | BPF_IMM, 7), STMT(BPF_ST, 15),
				    STMT(BPF_LD | BPF_IMM, 1), STMT(BPF_LD | BPF_MEM, 15), RET_A),
			       p),
	       "ST, LD MEM (the last word)");
	is_int(8,
	       seccomp_bpf_run(PROG(STMT(BPF_LDX | BPF_IMM, 8), STMT(BPF_STX, 0),
				    STMT(BPF_LDX | BPF_IMM, 1), STMT(BPF_LDX | BPF_MEM, 0),
				    STMT(BPF_MISC | BPF_TXA, 0), RET_A),
			       p),
	       "STX, LDX MEM");

	static const struct {
		uint16_t op;
		uint32_t a, b, want;
	} alu[] = {
		{ BPF_ADD, 0xffffffff, 2, 1 },
		{ BPF_SUB, 1, 2, 0xffffffff },
		{ BPF_MUL, 0x10000, 0x10001, 0x10000 },
		{ BPF_DIV, 0xffffffff, 2, 0x7fffffff },
		{ BPF_DIV, 7, 8, 0 },
		{ BPF_AND, 0xf0f0, 0xff00, 0xf000 },
		{ BPF_OR, 0xf0f0, 0xff00, 0xfff0 },
		{ BPF_XOR, 0xf0f0, 0xff00, 0x0ff0 },
		{ BPF_LSH, 0x80000001, 1, 2 },
		{ BPF_LSH, 1, 31, 0x80000000 },
		{ BPF_RSH, 0x80000000, 31, 1 },
		{ BPF_RSH, 0x80000000, 0, 0x80000000 },
	};
	for (size_t i = 0; i < sizeof(alu) / sizeof(alu[0]); i++) {
		is_int(alu[i].want,
		       seccomp_bpf_run(PROG(STMT(BPF_LD | BPF_IMM, alu[i].a),
					    STMT(BPF_ALU | BPF_K | alu[i].op, alu[i].b), RET_A),
				       p),
		       "ALU %#x K: %#x, %#x", alu[i].op, alu[i].a, alu[i].b);
		is_int(alu[i].want,
		       seccomp_bpf_run(PROG(STMT(BPF_LDX | BPF_IMM, alu[i].b),
					    STMT(BPF_LD | BPF_IMM, alu[i].a),
					    STMT(BPF_ALU | BPF_X | alu[i].op, 0), RET_A),
				       p),
		       "ALU %#x X: %#x, %#x", alu[i].op, alu[i].a, alu[i].b);
	}
	is_int(0xfffffffb,
	       seccomp_bpf_run(PROG(STMT(BPF_LD | BPF_IMM, 5), STMT(BPF_ALU | BPF_NEG, 0), RET_A),
			       p),
	       "NEG");
	is_int(2,
	       seccomp_bpf_run(PROG(STMT(BPF_LDX | BPF_IMM, 33), STMT(BPF_LD | BPF_IMM, 1),
				    STMT(BPF_ALU | BPF_LSH | BPF_X, 0), RET_A),
			       p),
	       "LSH by X takes X's low 5 bits");
	is_int(0x40000000,
	       seccomp_bpf_run(PROG(STMT(BPF_LDX | BPF_IMM, 0xffffffe1),
				    STMT(BPF_LD | BPF_IMM, 0x80000000),
				    STMT(BPF_ALU | BPF_RSH | BPF_X, 0), RET_A),
			       p),
	       "RSH by X too");

	is_int(2,
	       seccomp_bpf_run(PROG(STMT(BPF_JMP | BPF_JA, 1), STMT(BPF_RET | BPF_K, 1),
				    STMT(BPF_RET | BPF_K, 2)),
			       p),
	       "JA");
	static const struct {
		uint16_t op;
		uint32_t a, b;
		bool taken;
	} jmp[] = {
		{ BPF_JEQ, 5, 5, true },	  { BPF_JEQ, 5, 6, false },
		{ BPF_JGT, 6, 5, true },	  { BPF_JGT, 5, 5, false },
		{ BPF_JGT, 0x80000000, 1, true }, /* unsigned */
		{ BPF_JGE, 5, 5, true },	  { BPF_JGE, 4, 5, false },
		{ BPF_JSET, 6, 2, true },	  { BPF_JSET, 6, 9, false },
	};
	for (size_t i = 0; i < sizeof(jmp) / sizeof(jmp[0]); i++) {
		uint32_t want = jmp[i].taken ? 1 : 2;

		is_int(want,
		       seccomp_bpf_run(PROG(STMT(BPF_LD | BPF_IMM, jmp[i].a),
					    JUMP(BPF_JMP | BPF_K | jmp[i].op, jmp[i].b, 0, 1),
					    STMT(BPF_RET | BPF_K, 1), STMT(BPF_RET | BPF_K, 2)),
				       p),
		       "JMP %#x K: %#x, %#x", jmp[i].op, jmp[i].a, jmp[i].b);
		is_int(want,
		       seccomp_bpf_run(PROG(STMT(BPF_LDX | BPF_IMM, jmp[i].b),
					    STMT(BPF_LD | BPF_IMM, jmp[i].a),
					    JUMP(BPF_JMP | BPF_X | jmp[i].op, 0, 0, 1),
					    STMT(BPF_RET | BPF_K, 1), STMT(BPF_RET | BPF_K, 2)),
				       p),
		       "JMP %#x X: %#x, %#x", jmp[i].op, jmp[i].a, jmp[i].b);
	}
	is_int(3,
	       seccomp_bpf_run(PROG(JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0),
				    STMT(BPF_RET | BPF_K, 1), STMT(BPF_RET | BPF_K, 2),
				    STMT(BPF_RET | BPF_K, 3)),
			       p),
	       "a jump as far as the last instruction");
	is_int(0xdeadbeef, seccomp_bpf_run(PROG(STMT(BPF_RET | BPF_K, 0xdeadbeef)), p), "RET K");
	is_int(0,
	       seccomp_bpf_run(PROG(STMT(BPF_LDX | BPF_IMM, 0), STMT(BPF_LD | BPF_IMM, 7),
				    STMT(BPF_ALU | BPF_DIV | BPF_X, 0),
				    STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)),
			       p),
	       "a division by a zero X at run time ends the program with 0");
	is_int(SECCOMP_RET_ALLOW,
	       seccomp_bpf_run(PROG(STMT(BPF_LD | BPF_IMM, 7), STMT(BPF_ST, 1),
				    JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1), STMT(BPF_ST, 2),
				    STMT(BPF_LD | BPF_MEM, 1),
				    STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)),
			       p),
	       "a word written on every path may be read");
}

/*
 * Whether the kernel's seccomp loads the program: 1 loaded, 0 refused (EINVAL), -1 seccomp
 * unavailable. In a child, which ends there (killed by SIGSYS at its _exit() if the program
 * returns 0 for it: loaded too).
 */
static int kernel_loads(const struct sock_filter *prog, uint32_t len)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		bail("fork: %m");
	if (pid == 0) {
		struct sock_fprog fprog = { .len = (unsigned short)len,
					    .filter = (struct sock_filter *)prog };

		struct rlimit core = { 1, 1 }; /* below a page: no core file, nor a pipe's */

		(void)setrlimit(RLIMIT_CORE, &core);
		if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
		    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(3);
		if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0)
			_exit(0);
		_exit(errno == EINVAL ? 1 : 3);
	}
	if (waitpid(pid, &status, 0) < 0)
		bail("waitpid: %m");
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
		return 1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
		return -1;
	return WEXITSTATUS(status) == 0;
}

static void is_refused(bool kernel, const struct sock_filter *prog, uint32_t len, const char *what)
{
	struct seccomp_data d = test_data();

	is_int(0, seccomp_bpf_run(prog, len, &d), "refused: %s", what);
	if (kernel)
		is_int(0, kernel_loads(prog, len), "the kernel refuses it too: %s", what);
}

static void test_refusals(bool kernel)
{
	static const uint16_t bad[] = {
		0xffff,
		BPF_ALU | BPF_MOD | BPF_K,
		BPF_ALU | BPF_MOD | BPF_X,
		BPF_RET | BPF_X,
		BPF_LD | BPF_H | BPF_ABS,
		BPF_LD | BPF_B | BPF_ABS,
		BPF_LD | BPF_W | BPF_IND,
		BPF_LDX | BPF_B | BPF_MSH,
		BPF_LDX | BPF_W | BPF_ABS,
		BPF_JMP | BPF_JA | BPF_X,
		BPF_ALU | BPF_NEG | BPF_X,
		BPF_MISC | BPF_TAX | 0x100,
	};
	struct sock_filter big[BPF_MAXINSNS + 1];
	char what[64];

	for (size_t i = 0; i < BPF_MAXINSNS + 1; i++)
		big[i] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(what, sizeof(what), "opcode %#x", bad[i]);
		is_refused(kernel, PROG(STMT(bad[i], 1), STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)),
			   what);
	}
	is_refused(kernel,
		   PROG(STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), STMT(0xffff, 0),
			STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)),
		   "a bad opcode that is never reached");
	is_refused(kernel, PROG(STMT(BPF_LD | BPF_IMM, 1)), "the last instruction not a RET");
	is_refused(kernel,
		   PROG(STMT(BPF_JMP | BPF_JA, 1), STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)),
		   "JA out of range");
	is_refused(kernel,
		   PROG(STMT(BPF_JMP | BPF_JA, 0xffffffff),
			STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)),
		   "JA by 2^32 - 1");
	is_refused(kernel,
		   PROG(JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
			STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)),
		   "JEQ's jt out of range");
	is_refused(kernel,
		   PROG(JUMP(BPF_JMP | BPF_JSET | BPF_X, 0, 0, 1),
			STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)),
		   "JSET's jf out of range");
	is_refused(kernel, PROG(LD_ABS(2), RET_A), "LD ABS misaligned");
	is_refused(kernel, PROG(LD_ABS(64), RET_A), "LD ABS past the end");
	is_refused(kernel, PROG(LD_ABS(0xfffffffc), RET_A), "LD ABS at 2^32 - 4");
	is_refused(kernel, PROG(LD_ABS(0xfffff000), RET_A), "LD ABS at an ancillary offset");
	is_refused(kernel, PROG(STMT(BPF_ST, 16), RET_A), "ST past the scratch words");
	is_refused(kernel, PROG(STMT(BPF_LDX | BPF_MEM, 16), RET_A),
		   "LDX MEM past the scratch words");
	is_refused(kernel, PROG(STMT(BPF_ALU | BPF_DIV | BPF_K, 0), RET_A), "DIV by a zero K");
	is_refused(kernel, PROG(STMT(BPF_ALU | BPF_LSH | BPF_K, 32), RET_A), "LSH K 32");
	is_refused(kernel, PROG(STMT(BPF_ALU | BPF_RSH | BPF_K, 0xffffffff), RET_A),
		   "RSH K 2^32-1");
	is_refused(kernel, PROG(STMT(BPF_LD | BPF_MEM, 3), RET_A),
		   "LD MEM of a word never written");
	is_refused(kernel,
		   PROG(JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1), STMT(BPF_ST, 3),
			STMT(BPF_LD | BPF_MEM, 3), RET_A),
		   "LD MEM of a word a jump may skip");
	/* The kernel does not forget, after a RET, what was unwritten before it: the load is only
	 * reached from the JA, after the store, and is refused all the same. */
	is_refused(kernel,
		   PROG(JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2), STMT(BPF_ST, 1),
			STMT(BPF_JMP | BPF_JA, 1), STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
			STMT(BPF_LD | BPF_MEM, 1), RET_A),
		   "LD MEM after a RET, of a word unwritten before the RET");
	if (kernel)
		is_int(1,
		       kernel_loads(PROG(JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2), STMT(BPF_ST, 1),
					 STMT(BPF_JMP | BPF_JA, 1), STMT(BPF_JMP | BPF_JA, 1),
					 STMT(BPF_LD | BPF_MEM, 1),
					 STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW))),
		       "the kernel loads the same with a JA for the RET");
	is_int(1,
	       seccomp_bpf_check(PROG(JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2), STMT(BPF_ST, 1),
				      STMT(BPF_JMP | BPF_JA, 1), STMT(BPF_JMP | BPF_JA, 1),
				      STMT(BPF_LD | BPF_MEM, 1),
				      STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW))),
	       "and so does the interpreter");

	is_refused(kernel, big, 0, "no instruction");
	is_int(SECCOMP_RET_ALLOW, seccomp_bpf_run(big, BPF_MAXINSNS, &(struct seccomp_data){}),
	       "BPF_MAXINSNS instructions");
	is_refused(kernel, big, BPF_MAXINSNS + 1, "BPF_MAXINSNS + 1 instructions");
}

/* splitmix64: the same programs on every run. */
static uint64_t rnd_state = 0x5eccbbf5eccbbf01ULL;

static uint64_t rnd(void)
{
	uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t rnd_below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

#define N_ARGSETS 4
#define N_PROGRAMS 5000
#define MAX_BODY 40

struct diff_case {
	struct sock_filter prog[MAX_BODY * 2 + 8];
	uint32_t len;
	uint64_t args[N_ARGSETS][6];
};

static uint32_t rnd_value(const struct diff_case *c)
{
	static const uint32_t interesting[] = { 0,    1,     2,		 3,	     31,	32,
						0xff, 0xfff, 0x7fffffff, 0x80000000, 0xffffffff };

	switch (rnd_below(4)) {
	case 0:
		return interesting[rnd_below(sizeof(interesting) / sizeof(interesting[0]))];
	case 1: /* a word of an argument, for equal comparisons */
		return (uint32_t)(c->args[rnd_below(N_ARGSETS)][rnd_below(6)] >>
				  (32 * rnd_below(2)));
	case 2:
		return rnd_below(64);
	default:
		return (uint32_t)rnd();
	}
}

static uint64_t rnd_arg(void)
{
	switch (rnd_below(4)) {
	case 0:
		return rnd_below(8);
	case 1:
		return (uint64_t)rnd_below(2) << 63 | rnd_below(0x100);
	case 2:
		return (uint32_t)rnd();
	default:
		return rnd();
	}
}

/*
 * A program that allows every call but getppid(), and for getppid() computes an errno from the
 * call's number, architecture and arguments by a body of random instructions (loads, ALU,
 * scratch words, TAX/TXA, forward jumps, now and then an early RET or an instruction the
 * kernel refuses), then SECCOMP_RET_ERRNO | (A >> s) & 0xfff.
 */
static void gen_case(struct diff_case *c)
{
	static const uint16_t alu_ops[] = { BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_AND,
					    BPF_OR,  BPF_XOR, BPF_LSH, BPF_RSH, BPF_NEG };
	static const uint16_t jmp_ops[] = { BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET };
	struct sock_filter *p = c->prog;
	uint32_t n = 0, body = 1 + rnd_below(MAX_BODY), tail;
	uint16_t written = 0;

	for (int s = 0; s < N_ARGSETS; s++)
		for (int i = 0; i < 6; i++)
			c->args[s][i] = rnd_arg();

	p[n++] = LD_ABS(offsetof(struct seccomp_data, nr));
	p[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getppid, 1, 0);
	p[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	/* The body, then the tail's 4 instructions: a jump lands at most on the tail's first. */
	tail = n + body * 2; /* an upper bound, fixed below */
	for (uint32_t i = 0; i < body; i++) {
		uint32_t r = rnd_below(1000), k = rnd_value(c);
		uint16_t cls = rnd_below(2) ? BPF_LD : BPF_LDX;

		if (r < 160) {
			/* nr, arch or an argument's word; not the instruction pointer */
			static const uint32_t offs[] = { 0,  4,	 16, 20, 24, 28, 32,
							 36, 40, 44, 48, 52, 56, 60 };

			p[n++] = LD_ABS(offs[rnd_below(sizeof(offs) / sizeof(offs[0]))]);
		} else if (r < 190) {
			p[n++] = STMT(cls | BPF_W | BPF_LEN, 0);
		} else if (r < 280) {
			p[n++] = STMT(cls | BPF_IMM, k);
		} else if (r < 360) {
			uint32_t w = rnd_below(BPF_MEMWORDS);

			p[n++] = STMT(rnd_below(2) ? BPF_ST : BPF_STX, w);
			written |= (uint16_t)(1U << w);
		} else if (r < 420) {
			uint32_t w = rnd_below(BPF_MEMWORDS);

			/* mostly a word written before on the straight path, or a store */
			if (rnd_below(30) == 0 || (written & (1U << w)))
				p[n++] = STMT(cls | BPF_MEM, w);
			else if (written == 0) {
				p[n++] = STMT(cls == BPF_LD ? BPF_ST : BPF_STX, w);
				written |= (uint16_t)(1U << w);
			} else {
				while (!(written & (1U << w)))
					w = (w + 1) % BPF_MEMWORDS;
				p[n++] = STMT(cls | BPF_MEM, w);
			}
		} else if (r < 720) {
			uint16_t op = alu_ops[rnd_below(sizeof(alu_ops) / sizeof(alu_ops[0]))];
			uint16_t src = rnd_below(2) ? BPF_X : BPF_K;

			if (rnd_below(200) == 0)
				op = BPF_MOD; /* refused by seccomp */
			if (op == BPF_NEG)
				src = BPF_K;
			if (src == BPF_K && (op == BPF_LSH || op == BPF_RSH))
				k = rnd_below(200) == 0 ? 32 + rnd_below(8) : rnd_below(32);
			if (src == BPF_K && op == BPF_DIV && k == 0 && rnd_below(10) != 0)
				k = 1 + rnd_below(100);
			/* A division by a zero X kills the child: rare, as each kill is logged. */
			if (src == BPF_X && op == BPF_DIV && rnd_below(100) != 0)
				p[n++] = STMT(BPF_LDX | BPF_IMM, 1 + rnd_below(1000));
			p[n++] = STMT(BPF_ALU | op | src, k);
		} else if (r < 770) {
			p[n++] = STMT(BPF_MISC | (rnd_below(2) ? BPF_TAX : BPF_TXA), 0);
		} else if (r < 945) {
			uint16_t op = jmp_ops[rnd_below(sizeof(jmp_ops) / sizeof(jmp_ops[0]))];
			uint32_t room = tail - n - 1;

			if (r < 920)
				p[n++] = JUMP(BPF_JMP | op | (rnd_below(2) ? BPF_X : BPF_K), k,
					      (uint8_t)rnd_below(room < 6 ? room : 6),
					      (uint8_t)rnd_below(room < 6 ? room : 6));
			else
				p[n++] = STMT(BPF_JMP | BPF_JA, rnd_below(room < 6 ? room : 6));
		} else if (r < 995) {
			p[n++] = STMT(BPF_RET | BPF_K, rnd_below(8) == 0
							       ? SECCOMP_RET_ALLOW
							       : ERRNO(rnd_below(0x1000)));
		} else {
			static const uint16_t bad[] = { BPF_ALU | BPF_MOD | BPF_K, BPF_RET | BPF_X,
							BPF_LD | BPF_B | BPF_ABS, 0x00ff };

			if (rnd_below(3) == 0)
				p[n++] = LD_ABS(rnd_below(3) ? 2 + 4 * rnd_below(16) : 64);
			else
				p[n++] = STMT(bad[rnd_below(sizeof(bad) / sizeof(bad[0]))], 0);
		}
	}
	/* Pad with A += 0 up to where the jumps were told the tail starts. */
	while (n < tail)
		p[n++] = STMT(BPF_ALU | BPF_ADD | BPF_K, 0);
	p[n++] = STMT(BPF_ALU | BPF_RSH | BPF_K, rnd_below(21));
	p[n++] = STMT(BPF_ALU | BPF_AND | BPF_K, 0xfff);
	p[n++] = STMT(BPF_ALU | BPF_OR | BPF_K, SECCOMP_RET_ERRNO);
	p[n++] = RET_A;
	c->len = n;
}

/* What the kernel gave: a seccomp return value, as the call saw it. */
#define KERNEL_KILLED 0U
#define KERNEL_REFUSED 0xffffffffU

/*
 * Loads c's program in a child, which calls getppid() with each argument set and writes back
 * what it saw: ERRNO(errno), ERRNO(0) for a 0 return (the errno 0 case), SECCOMP_RET_ALLOW
 * for our pid. out[] gets that, KERNEL_KILLED from where the child was killed by SIGSYS, or
 * KERNEL_REFUSED everywhere when the kernel refused the program. -1 on another failure.
 */
static int kernel_run(const struct diff_case *c, uint32_t out[N_ARGSETS])
{
	pid_t parent = getpid(); /* the child cannot ask: getppid() is what it filters */
	int fds[2], status;
	size_t got = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		bail("pipe2: %m");
	pid = fork();
	if (pid < 0)
		bail("fork: %m");
	if (pid == 0) {
		struct sock_fprog fprog = { .len = (unsigned short)c->len,
					    .filter = (struct sock_filter *)c->prog };
		struct rlimit core = { 1, 1 }; /* below a page: no core file, nor a pipe's */
		uint32_t v = 0;

		close(fds[0]);
		(void)setrlimit(RLIMIT_CORE, &core);
		if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
		    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(3);
		if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0)
			_exit(errno == EINVAL ? 2 : 3);
		for (int s = 0; s < N_ARGSETS; s++) {
			const uint64_t *a = c->args[s];
			long r;

			errno = 0;
			r = syscall(__NR_getppid, a[0], a[1], a[2], a[3], a[4], a[5]);
			if (r == -1)
				v = ERRNO((uint32_t)errno);
			else if (r == 0)
				v = ERRNO(0);
			else
				v = r == parent ? SECCOMP_RET_ALLOW : 0xfffffffe;
			if (write(fds[1], &v, sizeof(v)) != sizeof(v))
				_exit(3);
		}
		_exit(0);
	}
	close(fds[1]);
	for (;;) {
		ssize_t r = read(fds[0], (char *)out + got, N_ARGSETS * sizeof(uint32_t) - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			bail("read: %m");
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fds[0]);
	if (waitpid(pid, &status, 0) < 0)
		bail("waitpid: %m");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 2 && got == 0) {
		for (int s = 0; s < N_ARGSETS; s++)
			out[s] = KERNEL_REFUSED;
		return 0;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == N_ARGSETS * sizeof(uint32_t))
		return 0;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS && got % sizeof(uint32_t) == 0) {
		for (size_t s = got / sizeof(uint32_t); s < N_ARGSETS; s++)
			out[s] = KERNEL_KILLED;
		return 0;
	}
	diag("child: status %#x after %zu bytes", (unsigned)status, got);
	return -1;
}

static void dump_case(const struct diff_case *c, int s)
{
	for (uint32_t i = 0; i < c->len; i++)
		diag("  %3u: code %#06x jt %u jf %u k %#x", i, c->prog[i].code, c->prog[i].jt,
		     c->prog[i].jf, c->prog[i].k);
	for (int i = 0; i < 6; i++)
		diag("  args[%d] = %#llx", i, (unsigned long long)c->args[s][i]);
}

static void test_differential(void)
{
	struct diff_case *c = malloc(sizeof(*c));
	unsigned refused = 0, killed = 0, errnos = 0, allowed = 0, bad = 0;
	uint32_t arch = seccomp_arch_native();
	struct timespec t0, t1;

	if (!c)
		bail("out of memory");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < N_PROGRAMS; i++) {
		uint32_t kernel[N_ARGSETS];

		gen_case(c);
		if (kernel_run(c, kernel) < 0) {
			bad++;
			continue;
		}
		for (int s = 0; s < N_ARGSETS; s++) {
			struct seccomp_data d = { .nr = __NR_getppid, .arch = arch };
			uint32_t want = kernel[s] == KERNEL_REFUSED ? 0 : kernel[s], got;

			memcpy(d.args, c->args[s], sizeof(d.args));
			got = seccomp_bpf_run(c->prog, c->len, &d);
			if (got != want) {
				if (bad++ < 3) {
					diag("program %d, argument set %d: kernel %#x, interpreter %#x",
					     i, s, kernel[s], got);
					dump_case(c, s);
				}
				continue;
			}
			if (kernel[s] == KERNEL_REFUSED)
				refused++;
			else if (kernel[s] == KERNEL_KILLED)
				killed++;
			else if (kernel[s] == SECCOMP_RET_ALLOW)
				allowed++;
			else
				errnos++;
			if (kernel[s] == KERNEL_REFUSED || kernel[s] == KERNEL_KILLED)
				break; /* the other argument sets were not run */
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	diag("%d programs in %.2f s: %u errno answers, %u allowed, %u killed at run time, %u "
	     "programs refused",
	     N_PROGRAMS, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
	     errnos, allowed, killed, refused);
	is_int(0, bad, "the interpreter answers as the kernel for %d random programs", N_PROGRAMS);
	ok(errnos > N_PROGRAMS && refused > N_PROGRAMS / 20 && killed > 0 && allowed > 0,
	   "the programs reach every outcome: errno, allowed, killed, refused");
	free(c);
}

static uint32_t run_on(const struct sock_filter *prog, uint32_t len, uint32_t arch, int nr,
		       uint64_t a0, uint64_t a1)
{
	struct seccomp_data d = { .nr = nr, .arch = arch, .args = { a0, a1 } };

	return seccomp_bpf_run(prog, len, &d);
}

static void test_libseccomp(void)
{
	uint32_t arch = seccomp_arch_native();
	struct sock_filter *prog = NULL;
	scmp_filter_ctx ctx;
	_cleanup_close_ int fd = -EBADF;
	off_t size;
	uint32_t len;
	int nr_socket = seccomp_syscall_resolve_name("socket");
	int nr_ioctl = seccomp_syscall_resolve_name("ioctl");
	int nr_pers = seccomp_syscall_resolve_name("personality");
	int nr_getpid = seccomp_syscall_resolve_name("getpid");

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		bail("seccomp_init failed");
	if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr_socket, 1,
			     SCMP_A0(SCMP_CMP_EQ, AF_NETLINK)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), nr_ioctl, 1,
			     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffff, 0x5412)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EXDEV), nr_pers, 1,
			     SCMP_A0(SCMP_CMP_GT, 0x100000000ULL)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr_getpid, 0) < 0)
		bail("seccomp_rule_add failed");
	fd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
	if (fd < 0)
		bail("memfd_create: %m");
	if (seccomp_export_bpf(ctx, fd) < 0)
		bail("seccomp_export_bpf failed");
	seccomp_release(ctx);
	size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(*prog) != 0 || lseek(fd, 0, SEEK_SET) != 0)
		bail("exported program of %lld bytes", (long long)size);
	prog = malloc((size_t)size);
	if (!prog || read(fd, prog, (size_t)size) != size)
		bail("cannot read the exported program");
	len = (uint32_t)(size / (off_t)sizeof(*prog));
	diag("libseccomp's program: %u instructions", len);

	is_int(1, seccomp_bpf_check(prog, len), "libseccomp's program is one the kernel loads");
	is_int(ERRNO(EPERM), run_on(prog, len, arch, nr_socket, AF_NETLINK, 3),
	       "socket(AF_NETLINK)");
	is_int(SECCOMP_RET_ALLOW, run_on(prog, len, arch, nr_socket, AF_INET, 3),
	       "socket(AF_INET)");
	is_int(SECCOMP_RET_ALLOW,
	       run_on(prog, len, arch, nr_socket, 0x100000000ULL | AF_NETLINK, 3),
	       "socket(AF_NETLINK in a 64-bit value with a high bit)");
	is_int(ERRNO(EACCES), run_on(prog, len, arch, nr_ioctl, 0, 0x5412), "ioctl(TIOCSTI)");
	is_int(ERRNO(EACCES), run_on(prog, len, arch, nr_ioctl, 0, 0xffffffff00005412ULL),
	       "ioctl(TIOCSTI with high bits: the low 32 compared)");
	is_int(SECCOMP_RET_ALLOW, run_on(prog, len, arch, nr_ioctl, 0, 0x5413),
	       "ioctl(TIOCGWINSZ)");
	is_int(ERRNO(EXDEV), run_on(prog, len, arch, nr_pers, 0x100000001ULL, 0),
	       "personality() above 2^32");
	is_int(SECCOMP_RET_ALLOW, run_on(prog, len, arch, nr_pers, 0x100000000ULL, 0),
	       "personality() at 2^32");
	is_int(SECCOMP_RET_ALLOW, run_on(prog, len, arch, nr_pers, 0xffffffffULL, 0),
	       "personality() below 2^32");
	is_int(ERRNO(ENOSYS), run_on(prog, len, arch, nr_getpid, 0, 0), "getpid()");
	is_int(SECCOMP_RET_ALLOW, run_on(prog, len, arch, nr_getpid + 1000, 0, 0), "another call");
	is_int(SECCOMP_RET_KILL_THREAD, run_on(prog, len, 0x12345678, nr_getpid, 0, 0),
	       "a foreign architecture: the default bad-architecture action");
	free(prog);
}

int main(void)
{
	int k;

	plan_lazy();
	test_opcodes();
	k = kernel_loads(PROG(STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)));
	if (k < 0)
		diag("seccomp is not available: the refusals are not shown to the kernel");
	test_refusals(k > 0);
	if (k > 0)
		test_differential();
	else
		skip(2, "seccomp is not available: no differential test against the kernel");
	test_libseccomp();
	return tap_exit_status();
}
