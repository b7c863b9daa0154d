/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <seccomp.h>

#include "common/system.h"
#include "common/util.h"
#include "policy/policy-seccomp.h"

#define PROGRAM_MAX_INSNS 4096
#define CACHE_MAX 16

DEFINE_TRIVIAL_CLEANUP_FUNC(scmp_filter_ctx, seccomp_release);

static int add_rule(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned n_args,
		    const struct scmp_arg_cmp *args)
{
	int r = seccomp_rule_add_array(ctx, action, nr, n_args, args);

	/* -EEXIST: the same rule twice; harmless. */
	return r == -EEXIST ? 0 : r;
}

static int add_spec_rule(scmp_filter_ctx ctx, const struct policy_syscall_rule *rule)
{
	static const uint64_t ns_flags[] = { CLONE_NEWNS,    CLONE_NEWUTS, CLONE_NEWIPC,
					     CLONE_NEWUSER,  CLONE_NEWPID, CLONE_NEWNET,
					     CLONE_NEWCGROUP };
	static const uint64_t tty_ioctls[] = { TIOCSTI, TIOCLINUX };
	/* Families outside AF_UNIX (1), AF_INET (2) and AF_INET6 (10). */
	static const uint64_t bad_families[] = { 0, 3, 4, 5, 6, 7, 8, 9 };
	int nr = seccomp_syscall_resolve_name(rule->name);
	int r = 0;

	if (nr == __NR_SCMP_ERROR)
		return -EINVAL;
	/* A syscall this architecture does not have (e.g. vm86 on x86_64): nothing to deny. */
	if (nr < 0)
		return 0;
	switch (rule->cond) {
	case POLICY_SYSCALL_DENY:
		return add_rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0, NULL);
	case POLICY_SYSCALL_ENOSYS:
		return add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0, NULL);
	case POLICY_SYSCALL_CLONE_NS:
		/* One rule per flag: libseccomp has no "(arg & mask) != 0". */
		for (size_t i = 0; i < ELEMENTSOF(ns_flags) && r >= 0; i++) {
			struct scmp_arg_cmp a =
				SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]);

			r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &a);
		}
		return r;
	case POLICY_SYSCALL_IOCTL_TTY:
		for (size_t i = 0; i < ELEMENTSOF(tty_ioctls) && r >= 0; i++) {
			struct scmp_arg_cmp a =
				SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffU, tty_ioctls[i]);

			r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &a);
		}
		return r;
	case POLICY_SYSCALL_SOCKET_FAMILY:
		for (size_t i = 0; i < ELEMENTSOF(bad_families) && r >= 0; i++) {
			struct scmp_arg_cmp a = SCMP_A0(SCMP_CMP_EQ, bad_families[i]);

			r = add_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1, &a);
		}
		if (r >= 0) {
			struct scmp_arg_cmp a = SCMP_A0(SCMP_CMP_GE, 11);

			r = add_rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, 1, &a);
		}
		return r;
	}
	return -EINVAL;
}

static int build_filter(const struct policy_syscall_rule *rules, size_t n, scmp_filter_ctx *ret)
{
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r;

	if (!ctx)
		return -ENOMEM;
	/* launcherd sets no_new_privs itself, in its fixed order. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r < 0)
		return r;
	/*
	 * A binary tree of syscall numbers instead of one long chain: the kernel runs a new filter
	 * for every syscall number when it is loaded (to fill its action cache), so the load time
	 * — paid by every sandbox before exec — follows the path length: 91 instructions as a
	 * chain took 77 µs to load, 104 as a tree 39 µs. Every syscall the sandbox makes is
	 * cheaper too.
	 */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		r = add_spec_rule(ctx, &rules[i]);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(ctx);
	return 0;
}

/* Run an exporter into an anonymous file and read the result back. */
static int export_to_buffer(scmp_filter_ctx ctx, int (*exporter)(const scmp_filter_ctx, int),
			    char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = memfd_create("cordon-seccomp-export", MFD_CLOEXEC);
	int r;

	if (fd < 0)
		return negative_errno();
	r = exporter(ctx, fd);
	if (r < 0)
		return r;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return negative_errno();
	return read_full_fd(fd, 16U * 1024U * 1024U, ret, ret_len);
}

struct cache_entry {
	char *key;
	char *program;
	size_t len;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cache_entry cache[CACHE_MAX];
static size_t cache_next;
static unsigned cache_misses;

/* Look up or compile the program for rules; returns a copy the caller frees. */
static int program_bytes(const struct policy_syscall_rule *rules, size_t n, char **ret,
			 size_t *ret_len)
{
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
	_cleanup_free_ char *key = policy_syscall_spec_key(rules, n), *prog = NULL;
	size_t len = 0;
	int r;

	if (!key)
		return -ENOMEM;
	(void)pthread_mutex_lock(&cache_lock);
	for (size_t i = 0; i < CACHE_MAX; i++)
		if (cache[i].key && streq(cache[i].key, key)) {
			*ret = malloc(cache[i].len);
			r = *ret ? 0 : -ENOMEM;
			if (r == 0) {
				memcpy(*ret, cache[i].program, cache[i].len);
				*ret_len = cache[i].len;
			}
			(void)pthread_mutex_unlock(&cache_lock);
			return r;
		}
	(void)pthread_mutex_unlock(&cache_lock);

	r = build_filter(rules, n, &ctx);
	if (r < 0)
		return r;
	r = export_to_buffer(ctx, seccomp_export_bpf, &prog, &len);
	if (r < 0)
		return r;
	if (len == 0 || len % sizeof(struct sock_filter) != 0 ||
	    len / sizeof(struct sock_filter) > PROGRAM_MAX_INSNS)
		return -E2BIG;

	*ret = malloc(len);
	if (!*ret)
		return -ENOMEM;
	memcpy(*ret, prog, len);
	*ret_len = len;

	(void)pthread_mutex_lock(&cache_lock);
	cache_misses++;
	free(cache[cache_next].key);
	free(cache[cache_next].program);
	cache[cache_next] = (struct cache_entry){ TAKE_PTR(key), TAKE_PTR(prog), len };
	cache_next = (cache_next + 1) % CACHE_MAX;
	(void)pthread_mutex_unlock(&cache_lock);
	return 0;
}

int policy_seccomp_program(const struct policy_syscall_rule *rules, size_t n, int *ret_fd)
{
	_cleanup_free_ char *prog = NULL;
	_cleanup_close_ int fd = -1;
	size_t len = 0;
	int r;

	r = program_bytes(rules, n, &prog, &len);
	if (r < 0)
		return r;
	fd = memfd_create("cordon-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return negative_errno();
	r = loop_write(fd, prog, len);
	if (r < 0)
		return r;
	/* Sealed: neither side can change the program after the controller checked it. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		return negative_errno();
	if (lseek(fd, 0, SEEK_SET) < 0)
		return negative_errno();
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int policy_seccomp_export_pfc(const struct policy_syscall_rule *rules, size_t n, int fd)
{
	_cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
	int r;

	r = build_filter(rules, n, &ctx);
	if (r < 0)
		return r;
	return seccomp_export_pfc(ctx, fd);
}

int policy_syscall_spec_from_key(const char *key, struct policy_syscall_rule **ret, size_t *ret_n,
				 char **ret_buf)
{
	_cleanup_free_ char *buf = strdup(key);
	_cleanup_free_ struct policy_syscall_rule *rules = NULL;
	size_t n = 0, cap = 1;
	char *save = NULL;

	if (!buf)
		return -ENOMEM;
	for (const char *c = key; *c; c++)
		cap += *c == ',';
	rules = calloc(cap, sizeof(*rules));
	if (!rules)
		return -ENOMEM;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		enum policy_syscall_cond cond = POLICY_SYSCALL_DENY;

		if (colon) {
			*colon = '\0';
			if (streq(colon + 1, "enosys"))
				cond = POLICY_SYSCALL_ENOSYS;
			else if (streq(colon + 1, "clone-ns"))
				cond = POLICY_SYSCALL_CLONE_NS;
			else if (streq(colon + 1, "ioctl-tty"))
				cond = POLICY_SYSCALL_IOCTL_TTY;
			else if (streq(colon + 1, "socket-family"))
				cond = POLICY_SYSCALL_SOCKET_FAMILY;
			else
				return -EINVAL;
		}
		if (n >= cap)
			return -EINVAL;
		rules[n++] = (struct policy_syscall_rule){ tok, cond };
	}
	*ret = TAKE_PTR(rules);
	*ret_n = n;
	*ret_buf = TAKE_PTR(buf);
	return 0;
}

unsigned policy_seccomp_cache_misses(void)
{
	unsigned n;

	(void)pthread_mutex_lock(&cache_lock);
	n = cache_misses;
	(void)pthread_mutex_unlock(&cache_lock);
	return n;
}

void policy_seccomp_cache_clear(void)
{
	(void)pthread_mutex_lock(&cache_lock);
	for (size_t i = 0; i < CACHE_MAX; i++) {
		free(cache[i].key);
		free(cache[i].program);
		cache[i] = (struct cache_entry){ NULL, NULL, 0 };
	}
	cache_next = 0;
	(void)pthread_mutex_unlock(&cache_lock);
}
