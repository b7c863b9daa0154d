/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

#include "common/cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "launcherd/launcherd-light.h"
#include "launcherd/launcherd-plan.h"
#include "launcherd/sandbox-init.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif

static const unsigned char init_blob[] = {
#include "launcherd/sandbox-init-blob.h"
};

/* Each dormant thread's stack: its own few frames at the top (DORMANT_RESERVE), and below them
 * the set-up child's (mount, Landlock and path buffers, no deep recursion). The child runs on
 * the stack of the thread whose TLS it has, so that to everything that keeps per-thread
 * accounts of stacks (AddressSanitizer) it is that thread. */
#define DORMANT_STACK_SIZE (256U * 1024U)
#define DORMANT_RESERVE (32U * 1024U)

static int init_memfd(void)
{
	_cleanup_close_ int fd = -1;
	size_t done = 0;
	pid_t pid;
	int status;

	if (sizeof(init_blob) < 64)
		return -EOPNOTSUPP; /* none for this target */
	fd = (int)syscall(SYS_memfd_create, "cordon-sandbox-init",
			  MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (fd < 0 && errno == EINVAL) /* before Linux 6.3: no MFD_EXEC, every memfd is */
		fd = (int)syscall(SYS_memfd_create, "cordon-sandbox-init",
				  MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	while (done < sizeof(init_blob)) {
		ssize_t n = write(fd, init_blob + done, sizeof(init_blob) - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	/* Execute-only: a process whose executable its uid cannot read starts non-dumpable (the
	 * kernel's rule for such files), so the requester, whose uid the init runs as, can never
	 * ptrace it nor open its /proc/PID/mem, not even before its first instruction. Then
	 * nothing can change it any more: not its bytes, size, mode, nor these seals. */
	if (fchmod(fd, 0111) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
		return -errno;
	(void)fcntl(fd, F_ADD_SEALS, F_SEAL_EXEC); /* Linux 6.3 */

	/* Does the kernel exec it? Without its config the init reports a failed set-up. */
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char *argv[] = { (char *)"cordon-sandbox-init", NULL }, *envp[] = { NULL };

		/* Nothing at the init's fds (3 may be our requester's socket, not close-on-exec
		 * yet): it must find neither a config nor a status pipe to write to. */
		close_all_but(&fd, 1);
		(void)syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != APPLY_EXIT_SETUP_FAILED)
		return -ENOEXEC;
	return TAKE_FD(fd);
}

/* The value CLONE_SETTLS wants for the calling thread: its thread pointer. */
static void *thread_pointer(void)
{
	void *p = NULL;

#if defined(__x86_64__)
	__asm__("mov %%fs:0, %0" : "=r"(p)); /* glibc's TCB starts with a pointer to itself */
#elif defined(__aarch64__)
	__asm__("mrs %0, tpidr_el0" : "=r"(p));
#endif
	return p;
}

struct dormant_start {
	void *tls;
	char *stack_lo, *stack_top; /* the child's part of our stack, below our own frames */
};

/* A dormant thread: hands over its thread pointer and where the lower part of its stack
 * starts, then blocks for good (every signal is blocked: it was created so). Its thread-local
 * storage and that part of its stack are a light child's from then on. */
static void *dormant(void *arg)
{
	struct dormant_start *st = arg;
	pthread_attr_t attr;
	size_t size = 0;
	void *lo = NULL;

	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &lo, &size) != 0 || size < 2 * DORMANT_RESERVE)
			lo = NULL;
		(void)pthread_attr_destroy(&attr);
	}
	/* Well below this frame, 16-byte aligned. */
	st->stack_lo = lo;
	st->stack_top =
		lo ? (char *)((uintptr_t)((char *)lo + size - DORMANT_RESERVE) & ~(uintptr_t)15)
		   : NULL;
	__atomic_store_n(&st->tls, lo ? thread_pointer() : (void *)-1, __ATOMIC_RELEASE);
	for (;;)
		(void)pause();
	return NULL;
}

static int slots_setup(struct light *l)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int r = 0;

	if (pthread_attr_init(&attr) != 0 ||
	    pthread_attr_setstacksize(&attr, DORMANT_STACK_SIZE) != 0 ||
	    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) != 0)
		return -ENOMEM;
	sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	for (size_t i = 0; i < LIGHT_SLOTS; i++) {
		struct light_slot *s = &l->slots[i];
		struct dormant_start st = { 0 };
		pthread_t t;

		/* (glibc puts a guard page below the stack: an overflow faults.) */
		r = -pthread_create(&t, &attr, dormant, &st);
		if (r < 0)
			break;
		while (!__atomic_load_n(&st.tls, __ATOMIC_ACQUIRE))
			sched_yield();
		if (st.tls == (void *)-1) {
			r = -EINVAL; /* no stack to share: it stays dormant, unused */
			break;
		}
		s->stack_lo = st.stack_lo;
		s->stack_top = st.stack_top;
		s->tls = st.tls;
		l->n_slots++;
	}
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	(void)pthread_attr_destroy(&attr);
	return l->n_slots > 0 ? 0 : r;
}

void light_setup(struct light *l)
{
	int fd, r;

	*l = (struct light){ .init_fd = -1 };
	if (!thread_pointer()) {
		l->off = "no light spawn for this architecture";
		return;
	}
	fd = init_memfd();
	if (fd < 0) {
		l->off =
			fd == -EOPNOTSUPP ? "no sandbox init for this architecture"
			: fd == -EACCES || fd == -ENOEXEC
				? "executable memfds are refused here. Hint: sysctl vm.memfd_noexec "
				  "(2 refuses them; it is per pid namespace)"
				: "cannot make the sandbox init's memfd";
		return;
	}
	r = slots_setup(l);
	if (r < 0) {
		safe_close(fd);
		l->off = "cannot make the set-up children's slots";
		return;
	}
	l->init_fd = fd;
}

/* Free the copies of a slot whose child has left our memory. */
static void slot_reclaim(struct light_slot *s)
{
	plan_free(s->plan);
	free(s->fds);
	free(s->tree_fds);
	free(s->groups);
	free(s->init_argv);
	s->plan = NULL;
	s->fds = s->tree_fds = NULL;
	s->groups = NULL;
	s->init_argv = NULL;
	s->owned = false;
}

/* Reclaim the slot if its child has left our memory; whether it is free. */
static bool slot_settle(struct light_slot *s)
{
	if (s->owned && __atomic_load_n(&s->in_use, __ATOMIC_ACQUIRE) == 0)
		slot_reclaim(s);
	return !s->owned;
}

struct light_slot *light_slot_get(struct light *l)
{
	struct light_slot *found = NULL;

	for (size_t i = 0; i < l->n_slots; i++)
		if (slot_settle(&l->slots[i]) && !found)
			found = &l->slots[i];
	return found;
}

void light_done(struct light *l)
{
	/* Slots still in use are left as they are: their children may still read them. The
	 * dormant threads end with the process. */
	for (size_t i = 0; i < l->n_slots; i++)
		(void)slot_settle(&l->slots[i]);
	safe_close(l->init_fd);
	l->init_fd = -1;
}

static void *memdup_array(const void *p, size_t n, size_t size)
{
	void *q = reallocarray(NULL, n ? n : 1, size);

	if (q && n)
		memcpy(q, p, n * size);
	return q;
}

pid_t light_clone(struct light_slot *s, unsigned long long flags, const struct apply_context *ctx,
		  struct plan *plan, int *ret_pidfd)
{
	size_t argc = strv_length(plan->argv);
	int pidfd = -1;
	pid_t pid;

	s->init_argv = reallocarray(NULL, argc + 2, sizeof(char *));
	if (s->init_argv) {
		s->init_argv[0] = (char *)"cordon-init";
		memcpy(s->init_argv + 1, plan->argv, (argc + 1) * sizeof(char *));
	}
	s->fds = memdup_array(ctx->fds, ctx->n_fds, sizeof(int));
	s->tree_fds = memdup_array(ctx->tree_fds, plan->n_mounts, sizeof(int));
	s->groups = memdup_array(ctx->groups, ctx->n_groups, sizeof(gid_t));
	if (!s->init_argv || !s->fds || !s->tree_fds || !s->groups) {
		slot_reclaim(s);
		return -ENOMEM;
	}
	s->ctx = *ctx;
	s->ctx.plan = plan;
	s->ctx.fds = s->fds;
	s->ctx.tree_fds = s->tree_fds;
	s->ctx.groups = s->groups;
	s->ctx.init_argv = s->init_argv;
	(void)snprintf(s->id, sizeof(s->id), "%s", ctx->id);
	s->ctx.id = s->id;
	/* Loaded by the init from the config pipe, never read by the child. */
	s->ctx.floor = s->ctx.plan_filter = NULL;
	s->owned = true;
	__atomic_store_n(&s->in_use, 1, __ATOMIC_RELEASE);

#ifdef __SANITIZE_ADDRESS__
	/* The last child here left by exec, its frames' redzones still marked in the shadow we
	 * share with it. */
	ASAN_UNPOISON_MEMORY_REGION(s->stack_lo,
				    (size_t)((char *)s->stack_top - (char *)s->stack_lo));
#endif
	/* glibc's clone(): the child starts launcherd_apply_light() on the slot's stack and never
	 * returns into our frames. With CLONE_PIDFD the pidfd is stored where parent_tid points. */
	pid = clone(launcherd_apply_light, s->stack_top,
		    (int)(flags | CLONE_VM | CLONE_SETTLS | CLONE_PIDFD | CLONE_CHILD_CLEARTID |
			  SIGCHLD),
		    &s->ctx, &pidfd, s->tls, &s->in_use);
	if (pid < 0) {
		int r = -errno;

		s->plan = NULL; /* not taken */
		__atomic_store_n(&s->in_use, 0, __ATOMIC_RELEASE);
		slot_reclaim(s);
		return r;
	}
	s->plan = plan;
	*ret_pidfd = pidfd;
	return pid;
}
