/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The controller's end of the launcher channel (docs/PROTOCOL.md §1): connect to the system
 * cordon-launcherd or start a user-mode one over a socketpair, say hello, spawn plans, kill
 * sandboxes, and receive their exit reports.
 *
 * Usable two ways:
 *   blocking   ctl_launcher_hello(), ctl_launcher_spawn(), ctl_launcher_kill() send a request
 *              and read until its reply; ctl_launcher_wait_exit() reads until a sandbox's exit.
 *   event loop watch ctl_launcher_fd() for EPOLLIN and call ctl_launcher_process(); exit
 *              reports go to the handler set with ctl_launcher_set_exit_handler(), and
 *              ctl_launcher_spawn_async() replies to its callback.
 * Exit reports that arrive while a blocking call waits are queued, never lost.
 *
 * Request stems match launcherd: ctl_launcher_spawn() ↔ LAUNCHER_REQ_SPAWN ↔
 * launcher_answer_spawn().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

struct ctl_launcher;

/* An "error" reply (or a local failure, code "internal"). */
struct ctl_launcher_error {
	char code[32];	 /* invalid-plan, floor-refused, setup-failed, exec-failed, limit, … */
	int error;	 /* errno */
	char field[256]; /* plan field path, may be empty */
	char step[32];	 /* set-up step, may be empty */
	char message[1024];
};

struct ctl_launcher_exit {
	char sandbox[32];
	pid_t pid;
	int exit_code;
	int signal;
	char reason[16]; /* exited, signaled, timeout, killed, memory */
	uint64_t duration_usec;
	bool limit_pids;
	bool limit_memory;
};

typedef void (*ctl_launcher_exit_cb)(struct ctl_launcher *l, const struct ctl_launcher_exit *e,
				     void *userdata);
/* sandbox/pidfd (and the pid launcherd reported, for display) on success, else err. proxy_fd is the listener made in the sandbox's netns for
 * network "proxy", else -1. Both fds are the callee's to close. */
typedef void (*ctl_launcher_spawn_cb)(struct ctl_launcher *l, const char *sandbox, int pidfd,
				      pid_t pid, int proxy_fd, const struct ctl_launcher_error *err,
				      void *userdata);

/* hello's reply (info, borrowed for the call) or err. */
typedef void (*ctl_launcher_hello_cb)(struct ctl_launcher *l, json_t *info,
				      const struct ctl_launcher_error *err, void *userdata);

/* Connect to a launcherd socket (SOCK_SEQPACKET). */
int ctl_launcher_connect(const char *path, struct ctl_launcher **ret);
/*
 * Start a launcherd of our own (launcherd_path, e.g. LIBEXECDIR/cordon-launcherd) as our child
 * over a socketpair, serving us alone. user_mode false: --mode=auto, privileged when we run as
 * root with its capabilities (the spec's "privileged > user"), else user mode. floor_path may
 * be NULL (its default). It exits when we close our end.
 */
int ctl_launcher_start_own(const char *launcherd_path, const char *floor_path, bool user_mode,
			   struct ctl_launcher **ret);
/* Close the channel (launcherd kills the sandboxes that asked to die with us) and reap a
 * user-mode launcherd we started. */
void ctl_launcher_free(struct ctl_launcher *l);

int ctl_launcher_fd(const struct ctl_launcher *l);
/*
 * A pidfd of the launcherd process (and its pid in *ret_pid, optional), to watch: the launcherd
 * of our own we started, or the one that listens on the system socket we connected to; -1 when
 * it is not known (a socket-activated launcherd: pid 1 made its socket). Its end is the end of
 * the channel even while some other process still holds the connection's far end. Borrowed.
 */
int ctl_launcher_pidfd(const struct ctl_launcher *l, pid_t *ret_pid);
/* Reap the launcherd of our own if it has exited, without waiting: 1 and its wait status, 0
 * while it runs (or when it is not our child), -errno. */
int ctl_launcher_reap_child(struct ctl_launcher *l, int *ret_status);
/*
 * The launcher is gone: nothing more is sent, and every request still waiting for its reply is
 * answered now through its callback with the error code "launcher-lost" and message.
 */
void ctl_launcher_abort(struct ctl_launcher *l, const char *message);

/* hello; *ret_info (optional) gets the reply object (mode, landlockAbi, cgroup, floor, …). */
int ctl_launcher_hello(struct ctl_launcher *l, json_t **ret_info,
		       struct ctl_launcher_error *reterr);

/* hello without waiting: cb runs from ctl_launcher_process() when the reply arrives. */
int ctl_launcher_hello_async(struct ctl_launcher *l, ctl_launcher_hello_cb cb, void *userdata);
/* Forget an async hello made with userdata: its callback will not run. (A spawn cannot be
 * forgotten: its sandbox runs whether or not anyone waits for the reply.) */
void ctl_launcher_cancel_hello(struct ctl_launcher *l, void *userdata);
/*
 * Take the user-mode launcherd's pid out of l (0 when it is not our child), so that
 * ctl_launcher_free() does not wait for it: the caller reaps it, e.g. when a pidfd says so.
 */
pid_t ctl_launcher_take_child(struct ctl_launcher *l);
/*
 * Send a plan with its fds (indices as the plan names them) and wait for spawned/error.
 * Returns 0 with *ret_sandbox (malloc'd) and *ret_pidfd, or -errno (reterr filled for an
 * error reply: -EINVAL invalid-plan, -EPERM floor-refused, -EAGAIN limit, -ENOEXEC
 * exec-failed, -EIO setup-failed, …).
 */
int ctl_launcher_spawn(struct ctl_launcher *l, json_t *plan, const int *fds, size_t n_fds,
		       char **ret_sandbox, int *ret_pidfd, struct ctl_launcher_error *reterr);
int ctl_launcher_spawn_async(struct ctl_launcher *l, json_t *plan, const int *fds, size_t n_fds,
			     ctl_launcher_spawn_cb cb, void *userdata);

/* Signal a sandbox without waiting for the launcher's answer (the event loop's way: a slow
 * launcher must not stall every client). 0 once the request is sent; its answer is dropped
 * (a sandbox that ended meanwhile is "not-found", and its exit report says how it ended). */
int ctl_launcher_kill_async(struct ctl_launcher *l, const char *sandbox, int sig);
/* Signal a sandbox (9 kills the whole tree), waiting for the answer. -ESRCH for not-found. */
int ctl_launcher_kill(struct ctl_launcher *l, const char *sandbox, int sig,
		      struct ctl_launcher_error *reterr);

void ctl_launcher_set_exit_handler(struct ctl_launcher *l, ctl_launcher_exit_cb cb, void *userdata);
/*
 * "denial" messages (docs/DENIALS.md), checked and copied into a fresh object (the cb's to
 * keep or drop): {instance (the sandbox), layer, kind, access?, path?, port?, address?,
 * syscall?, syscallNr?, action?, pid?, comm?, exe?, timeMs?} or
 * {instance, suppressed}. Without a handler they are dropped; so is one that does not check.
 */
typedef void (*ctl_launcher_denial_cb)(struct ctl_launcher *l, json_t *denial, void *userdata);
void ctl_launcher_set_denial_handler(struct ctl_launcher *l, ctl_launcher_denial_cb cb,
				     void *userdata);
/* Non-blocking: handle every message already readable. -ECONNRESET when launcherd went away. */
int ctl_launcher_process(struct ctl_launcher *l);
/* Blocking: wait for the exit of sandbox (queued reports first). */
int ctl_launcher_wait_exit(struct ctl_launcher *l, const char *sandbox,
			   struct ctl_launcher_exit *ret);

/* Map an error code string to -errno as ctl_launcher_spawn() returns it. */
int ctl_launcher_error_to_errno(const char *code);
