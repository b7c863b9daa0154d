/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-launcherd: shared daemon state. One process, one thread, one epoll loop
 * (common/event.h). Connections (launcherd-dispatch.c) carry requests; sandboxes
 * (launcherd-sandbox.c) are the live children, each with its pidfd and status pipe in the loop.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <jansson.h>

#include "common/event.h"
#include "launcherd/launcherd-cgroup.h"
#include "launcherd/launcherd-floor.h"
#include "launcherd/launcherd-light.h"
#include "launcherd/launcherd-net.h"
#include "launcherd/launcherd-screen.h"
#include "launcherd/launcherd-seccomp.h"

#define LAUNCHERD_PROTOCOL_VERSION 1
/* Open connections per user at once (each has a receiver process: launcherd-screen.h). */
#define LAUNCHERD_CONNS_PER_USER_MAX 64
/* Replies that may wait for a requester that does not read before launcherd stops reading its
 * requests; it reads them again once fewer than CONN_OUTQ_RESUME wait. */
#define CONN_OUTQ_MAX 64
#define CONN_OUTQ_RESUME 16
#define LAUNCHERD_DEFAULT_SOCKET CORDON_RUNSTATEDIR "/cordon/launcherd.sock"
#define LAUNCHERD_DEFAULT_FLOOR CORDON_SYSCONFDIR "/cordon/launcherd.json"

enum launcherd_mode {
	LAUNCHERD_PRIVILEGED, /* holds capabilities; switches to the caller's uid/gid/groups */
	LAUNCHERD_USER,	      /* runs as the user; plans applied inside a new user namespace */
};

struct conn;
struct sandbox;

struct launcherd {
	enum launcherd_mode mode;
	struct event_loop *loop;
	int listen_fd;	/* -1 in --socket-fd mode */
	bool single;	/* --socket-fd: exit when that connection and its sandboxes are gone */
	bool stopping;	/* SIGTERM: no new connections, kill everything, exit when reaped */
	int devnull_fd; /* stdio the plan leaves out */
	int suid_dumpable_fd; /* privileged mode: /proc/sys/fs/suid_dumpable, or -1 */
	int dev_template; /* privileged mode: the fixed part of /dev (launcherd-mount.c), or -1 */

	/* Privileged mode, set only there: our bounding set is empty, so each sandbox's is (user
	 * mode's get a full one in their own user namespace). launcherd-apply.h. */
	bool bset_empty;

	struct floor floor;
	struct cgroup_setup cgroup;
	int landlock_abi;
	/* The seccomp floor, compiled once at start (launcherd-seccomp.c): [enum floor_action]
	 * [unix_only], the latter for network "unix". [FLOOR_ACTION_NOTIFY] is empty (len 0) when
	 * the kernel has no SECCOMP_RET_USER_NOTIF: the floor's refusals are then reported from
	 * the audit record alone. */
	struct seccomp_program floors[_FLOOR_ACTION_MAX][2];
	bool floor_combinable; /* seccomp_floor_combinable(), both notifying floors */
	/* Network and empty mount namespaces made ahead (launcherd-net.c), the last with
	 * CAP_SYS_CHROOT (privileged mode) or in user mode; and in user mode /dev trees. */
	struct netns_pool netns_pool;
	/* User mode: launcherd entered a user namespace of its own at start (the user mapped to
	 * itself), which owns every namespace it and its pool make; each sandbox unshares a
	 * nested one of its own late in its set-up (launcherd-apply.c). */
	bool own_userns;
	/* The light spawn (launcherd-light.h), and in privileged mode the mount table it consults
	 * for bind sources (launcherd-mountinfo.h; NULL: every spawn takes the other path). */
	struct light light;
	struct mount_table *mounts;

	struct conn *conns;
	struct reaper *reapers; /* closed connections' receivers not reaped yet */
	struct sandbox *sandboxes;
	unsigned n_sandboxes;
};

/* --- launcherd-dispatch.c: connections and the request table ------------------------------ */

enum conn_state {
	CONN_NEW,   /* only "hello" */
	CONN_READY, /* "spawn", "kill" */
};

struct conn {
	struct launcherd *d;
	struct conn *next;
	int fd;	      /* the requester's socket: replies only, sent here */
	int rfd;      /* requests: the receiver's channel (privileged), else a dup of fd */
	int receiver; /* privileged mode: the receiver's pidfd; else -1 */
	struct event_source *src;  /* rfd: requests */
	struct event_source *wsrc; /* fd: EPOLLOUT while replies wait */
	/* The current request's screen header (privileged mode; all accepted in user mode). */
	struct screen_header screen;
	enum conn_state state;
	unsigned oneshot_seen; /* bit per LAUNCHER_REQ_* that may come once */
	struct ucred peer;     /* SO_PEERCRED: the only identity launcherd trusts */
	gid_t *groups;	       /* the peer user's supplementary groups (system database) */
	size_t n_groups;
	/* Privileged mode: the peer process's resource limits at connect time, and which differ
	 * from ours (launcherd-apply.h) */
	struct rlimit limits[RLIM_NLIMITS];
	uint32_t limits_differ;
	struct out_msg *outq; /* replies waiting for the socket to drain */
	struct out_msg **outq_tail;
	size_t n_outq;
	bool reading_paused; /* CONN_OUTQ_MAX replies wait: requests are not read meanwhile */
	bool closing;
};

int conn_new(struct launcherd *d, int fd);
void conn_close(struct conn *c);
/* At exit: forget the receivers still being waited for. */
void conn_receivers_release(struct launcherd *d);
/* Send a message (fds are duplicated when it has to wait). Never blocks. */
int conn_send(struct conn *c, json_t *msg, const int *fds, size_t n_fds);
int conn_send_error(struct conn *c, int64_t seq, const char *code, int error, const char *field,
		    const char *step, const char *fmt, ...) _printf_(7, 8);

/* --- launcherd-sandbox.c: live sandboxes --------------------------------------------------- */

enum kill_reason {
	KILL_NONE,
	KILL_REQUEST,  /* a kill request, or the requester disconnected */
	KILL_TIMEOUT,  /* the plan's timeoutMs */
	KILL_SHUTDOWN, /* launcherd is stopping */
};

struct plan;
/*
 * Start a sandbox for c's peer from a validated plan. fds are the message's fds, still owned by
 * the caller. On success the reply (spawned or error) is sent later, when the child's status
 * pipe resolves. Errors before clone are answered by the caller from *reterr_step/-errno, and
 * *reterr_index (the plan's mount entry, or -1).
 * unenforced (optional rules the kernel cannot enforce) goes into "spawned"; a reference is
 * taken. The plan stays the caller's, unless this sets *plan to NULL (a light spawn took it).
 */
int sandbox_start(struct conn *c, int64_t seq, struct plan **plan, const int *fds, size_t n_fds,
		  struct seccomp_program *plan_filter, json_t *unenforced, const char **reterr_step,
		  int *reterr_index);
struct sandbox *sandbox_find(struct launcherd *d, const char *id, uid_t uid);
int sandbox_signal(struct sandbox *s, int sig, enum kill_reason reason);
/* The connection went away: kill the sandboxes that asked for it, detach the others. */
void sandbox_detach_conn(struct launcherd *d, struct conn *c);
void sandbox_kill_all(struct launcherd *d);
/* Per-uid totals of live sandboxes, for the floor's ceilings. */
void sandbox_usage(struct launcherd *d, uid_t uid, unsigned *ret_count, uint64_t *ret_pids,
		   uint64_t *ret_memory);
/* The admin's trail (privileged mode; docs/DENIALS.md): one record, key=value words, at most
 * TRAIL_MSG_MAX bytes, to the system log, rate-limited per uid. */
#define TRAIL_MSG_MAX 768
void launcherd_trail(uid_t uid, const char *msg);
/* The admin floor refused c's request: request "hello" (plan NULL) or "spawn"; code as the
 * error says it (floor-refused, limit), rule the floor's (floor_check_plan_rule()), field the
 * plan field ("" for none). */
void launcherd_trail_floor_refused(struct conn *c, const char *request, const struct plan *plan,
				   const char *code, const char *rule, const char *field);
/* Called when the last sandbox is gone (single mode / shutdown). */
void launcherd_maybe_exit(struct launcherd *d);
/* Privileged mode: fs.suid_dumpable is 1 now (launcherd-main.c says why that is refused). */
bool launcherd_suid_dumpable_debug(struct launcherd *d);
