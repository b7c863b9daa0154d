/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* The set-up runs on it: mount, Landlock and path buffers on the stack, no deep recursion. */
#define LIGHT_STACK_SIZE (128U * 1024U)
#define DORMANT_STACK_SIZE (64U * 1024U)

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

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
	/* Nothing can change it any more: not its bytes, size, mode, nor these seals. */
	if (fchmod(fd, 0555) < 0 ||
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

/* A dormant thread: hands over its thread pointer, then blocks for good (every signal is
 * blocked: it was created so). Its thread-local storage is a light child's from then on. */
static void *dormant(void *arg)
{
	__atomic_store_n((void **)arg, thread_pointer(), __ATOMIC_RELEASE);
	for (;;)
		(void)pause();
	return NULL;
}

static int slots_setup(struct light *l)
{
	size_t page = page_size();
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
		void *tls = NULL;
		pthread_t t;
		char *stack;

		/* A guard page below: an overflow faults instead of writing into our heap. */
		stack = mmap(NULL, LIGHT_STACK_SIZE + page, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (stack == MAP_FAILED) {
			r = -errno;
			break;
		}
		if (mprotect(stack, page, PROT_NONE) < 0) {
			r = -errno;
			(void)munmap(stack, LIGHT_STACK_SIZE + page);
			break;
		}
		r = -pthread_create(&t, &attr, dormant, &tls);
		if (r < 0) {
			(void)munmap(stack, LIGHT_STACK_SIZE + page);
			break;
		}
		while (!__atomic_load_n(&tls, __ATOMIC_ACQUIRE))
			sched_yield();
		s->stack = stack + page;
		s->tls = tls;
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

struct light_slot *light_slot_get(struct light *l)
{
	struct light_slot *found = NULL;

	for (size_t i = 0; i < l->n_slots; i++) {
		struct light_slot *s = &l->slots[i];

		if (s->owned && __atomic_load_n(&s->in_use, __ATOMIC_ACQUIRE) == 0)
			slot_reclaim(s);
		if (!s->owned && !found)
			found = s;
	}
	return found;
}

void light_done(struct light *l)
{
	/* Slots still in use are left as they are: their children may still read them. The
	 * dormant threads end with the process. */
	for (size_t i = 0; i < l->n_slots; i++)
		if (l->slots[i].owned &&
		    __atomic_load_n(&l->slots[i].in_use, __ATOMIC_ACQUIRE) == 0)
			slot_reclaim(&l->slots[i]);
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
	size_t argc = 0;
	int pidfd = -1;
	pid_t pid;

	while (plan->argv[argc])
		argc++;
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

	/* glibc's clone(): the child starts launcherd_apply_light() on the slot's stack and never
	 * returns into our frames. With CLONE_PIDFD the pidfd is stored where parent_tid points. */
	pid = clone(launcherd_apply_light, (char *)s->stack + LIGHT_STACK_SIZE,
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
