/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The backend model (docs/ARCHITECTURE.md, "Backends"). A backend (builtin:auto, builtin:host,
 * pack:<id>:<kind>) is a kind of launcher; an instance is one configured, prepared launcher of
 * that backend ("builtin:auto#3"). The active instance serves new processes; every process holds
 * a reference to the instance that created it, so an instance replaced by an activation keeps
 * running its processes and is disposed when the last one ends.
 *
 * Every operation that may take time completes through a callback, so neither a spawn nor the
 * event loop ever waits for an activation.
 *
 * Layering: this directory never includes a controller header. A backend reaches the core only
 * through the struct backend_host the core hands every instance (a process exited, the instance
 * is lost, an event, ask the person, compile a plan, who the user is); the core finds backends
 * only through providers (struct backend_provider).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "backends/backend-descriptor.h"

struct backend_instance;
struct backend_ref;
struct compiled_plan;
struct event_loop;
struct field_error;
struct policy;

/*
 * The core as a backend sees it: who the user is, the event loop, and the upcalls. The core
 * owns it and outlives every instance.
 */
struct backend_host {
	struct event_loop *loop;
	uid_t uid;
	gid_t gid;
	const char *home;
	unsigned long long mem_total;
	bool exiting; /* the core is shutting down: nothing is retried or waited for */
	/* A process of bi ended: exit is {exitCode, signal, reason, durationUsec?} (borrowed). */
	void (*exited)(struct backend_host *h, struct backend_instance *bi, const char *sandbox,
		       json_t *exit);
	/* bi's launcher went away: its processes end; the core finds a replacement. Spawns still
	 * pending must be answered (or cancelled) before this: no spawn callback runs after it,
	 * since the core ends the processes still starting itself. */
	void (*lost)(struct backend_host *h, struct backend_instance *bi);
	/* An event for the user's stream ({"type": type, …fields}); steals fields. */
	void (*event)(struct backend_host *h, const char *type, json_t *fields);
	/* Ask the person behind client origin (struct backend_instance.origin_client) a host
	 * interaction; cb exactly once, never from inside the call (see the core's interaction
	 * rules in docs/PROTOCOL.md §5). < 0 without cb: no such client, bad params, too many. */
	int (*ask)(struct backend_host *h, uint64_t origin, const char *kind, json_t *params,
		   unsigned timeout_ms, void (*cb)(int r, json_t *answer, void *ud), void *ud);
	/* Compile the embedded default policy with patch merged on top (the same document a
	 * client's policyPatch would give) for argv/envp/cwd, for a launcher that answered hello
	 * with hello; *ret is the plan; -EINVAL/-EPERM with fe naming the field. */
	int (*compile)(struct backend_host *h, json_t *patch, char **argv, char **envp,
		       const char *cwd, json_t *hello, struct compiled_plan **ret,
		       struct field_error *fe);
	/* The hello reply of the launcher serving new processes now (borrowed), or NULL. */
	json_t *(*launcher_hello)(struct backend_host *h);
};

/* Completion of configure/prepare/probe/dispose: r < 0 failed, message says why. */
typedef void (*backend_done_cb)(struct backend_instance *bi, int r, const char *message, void *ud);
/* Completion of a spawn: sandbox and pidfd or a launcher error; proxy_fd is the listener in the
 * sandbox's netns (network "proxy"), else -1. The callee owns both fds. */
typedef void (*backend_spawn_cb)(struct backend_instance *bi, const char *sandbox, int pidfd,
				 int proxy_fd, pid_t pid, json_t *error, void *ud);

/*
 * A workspace as a backend is handed it (a spawn, a lease). How a backend attaches it is its
 * descriptor's claims.workspace: direct (the command sees the host path itself), bind (an
 * engine binds host_path at mount_point), transfer (a tar of the tree goes to the backend at
 * acquire and a tar of its tree comes back at release), none.
 */
/* Where a `bind` backend presents the workspace unless the policy says (mountAt). */
#define BACKEND_BIND_MOUNT_POINT "/workspace"

struct backend_workspace {
	const char *host_path;	 /* canonical; NULL: the request has no workspace */
	int dir_fd;		 /* O_PATH directory opened by the controller as the user, or -1 */
	bool read_only;		 /* the policy's access */
	const char *mount_point; /* where the command sees it: the host path, or the lease's */
	const char *cwd;	 /* the command's cwd relative to mount_point ("." for its root);
				  * NULL when the cwd is outside the workspace */
};

/* A spawn: the compiled plan (docs/PROTOCOL.md §1.3) with the fds it names by index, and what
 * contract v2 adds. */
struct backend_spawn {
	json_t *plan;
	const int *fds;
	size_t n_fds;
	const char *lease; /* the acquired sandbox it runs in, or NULL for a one-shot run */
	const struct backend_workspace *workspace;
};

/* Completion of acquire: mount_point is where the lease presents the workspace (NULL: at its
 * host path). */
typedef void (*backend_acquire_cb)(struct backend_instance *bi, int r, const char *message,
				   const char *mount_point, void *ud);

struct backend_ops {
	const char *source;  /* "builtin" or "pack" */
	const char *pack_id; /* the pack's id; NULL for a built-in */
	const char *kind;
	bool confined; /* false only for builtin:host: never chosen implicitly */
	/* The descriptor (name, description, settings.fields, claims): data only. */
	json_t *(*descriptor)(const struct backend_ops *ops);
	/* The activation's configure, prepare and probe steps, each completing exactly once
	 * through done. */
	void (*configure)(struct backend_instance *bi, json_t *settings, json_t *secrets,
			  backend_done_cb done, void *ud);
	void (*prepare)(struct backend_instance *bi, backend_done_cb done, void *ud);
	void (*probe)(struct backend_instance *bi, backend_done_cb done, void *ud);
	/* The instance's capabilities for the policy compiler (a launcher hello reply). */
	json_t *(*hello)(struct backend_instance *bi);
	/* Optional: before a plan is compiled for this instance, refuse a request it cannot honour
	 * (the request's policy, parsed and resolved): -EPERM or -EOPNOTSUPP, fe naming the field. */
	int (*admit)(struct backend_instance *bi, const struct policy *policy,
		     struct field_error *fe);
	int (*spawn)(struct backend_instance *bi, const struct backend_spawn *req,
		     backend_spawn_cb cb, void *ud);
	/* Optional (NULL: nothing to do per lease). A lease begins: for a transfer backend
	 * archive_fd is the read end of a pipe carrying a tar of the workspace (the callee owns
	 * it), else -1. Completes exactly once through done. */
	void (*acquire)(struct backend_instance *bi, const char *lease,
			const struct backend_workspace *ws, int archive_fd, backend_acquire_cb done,
			void *ud);
	/* Optional. A lease ends (its processes are gone): for a transfer backend archive_fd is
	 * the write end of a pipe into which the backend writes a tar of the lease's whole
	 * workspace tree and then closes it (the callee owns it), else -1. Private staging is
	 * removed. Completes exactly once through done. */
	void (*release)(struct backend_instance *bi, const char *lease, int archive_fd,
			backend_done_cb done, void *ud);
	int (*kill)(struct backend_instance *bi, const char *sandbox, int sig);
	/* Release what the instance holds; < 0 is a cleanup failure (retried later). */
	int (*dispose)(struct backend_instance *bi);
	/* Optional, used instead of dispose when set: the same, completing through done (a pack
	 * answers over its channel; the event loop never waits for it). */
	void (*dispose_async)(struct backend_instance *bi, backend_done_cb done, void *ud);
	void (*free)(struct backend_instance *bi);
};

struct backend_instance {
	struct backend_host *host;
	const struct backend_ops *ops;
	char ref[160];	/* "builtin:auto" */
	char name[192]; /* "builtin:auto#3" */
	unsigned refs;	/* the active selection holds one; every live process one */
	bool disposed;
	/* The client (struct client.id) that started the operation now running on the instance:
	 * the activation (configure, prepare, probe) or the spawn being handed over; 0 for none.
	 * A pack's host interactions go to it. */
	uint64_t origin_client;
	struct backend_claims claims; /* from the descriptor, parsed once when made */
	void *data;		      /* the backend's own state */
};

/* backend.c: the instance lifecycle. */
int backend_instance_new(struct backend_host *h, const struct backend_ops *ops,
			 struct backend_instance **ret);
struct backend_instance *backend_instance_ref(struct backend_instance *bi);
/* Drop a reference; the last one disposes (retried in the background on failure) and frees the
 * instance. */
void backend_instance_unref(struct backend_instance *bi);
/* Disposals still under way (the core's exit waits for them for a while). */
bool backend_disposals_pending(void);
/* At exit: a failed disposal waiting to be retried is tried once more now. */
void backend_disposals_retry_now(void);
/* At exit: give up the disposals still under way (each logged). */
void backend_disposals_free(void);

/* ops' descriptor, parsed (a built-in's may say isolation "none"): -errno with fe saying why. */
int backend_ops_descriptor(const struct backend_ops *ops, struct backend_descriptor **ret,
			   struct field_error *fe);
/* The text form of ops' reference ("builtin:auto", "pack:org.example:cloud"). */
int backend_ops_ref(const struct backend_ops *ops, char *buf, size_t size);

/*
 * Where the core finds backends: one provider per source. find() answers for a reference of its
 * source (NULL: no such backend); list() puts at most max of its backends into out and returns
 * how many. A provider's ops stay valid for as long as an instance of them lives.
 */
struct backend_provider {
	const char *source; /* "builtin", "pack" */
	const struct backend_ops *(*find)(const struct backend_provider *p,
					  const struct backend_ref *ref);
	size_t (*list)(const struct backend_provider *p, const struct backend_ops **out,
		       size_t max);
	void *data;
};

/* builtin.c: builtin:auto and builtin:host. */
extern const struct backend_provider backend_builtin_provider;
/* The reference used when nothing else is selected or the selection is lost. */
#define BACKEND_FALLBACK_REF "builtin:auto"

/*
 * auto/auto.c: the OS launcher for an instance (shared by builtin:auto and the pack backend): the system cordon-launcherd when its socket
 * exists, else a user-mode one of our own, started and not waited for. msg gets the reason of a
 * failure. The caller watches ctl_launcher_fd() and says hello with ctl_launcher_hello_async(),
 * so that nothing waits for a launcher to start (a spawn never waits for an activation);
 * backend_launcher_hello_check() then judges the reply.
 */
struct ctl_launcher;
struct ctl_launcher_error;
int backend_launcher_open(struct backend_instance *bi, struct ctl_launcher **ret, char *msg,
			  size_t msg_size);
/* 0 and the reply logged, or -errno with msg saying why the launcher refused hello. */
int backend_launcher_hello_check(struct backend_instance *bi, json_t *info,
				 const struct ctl_launcher_error *err, char *msg, size_t msg_size);
/* Reap a user-mode launcherd whose channel is closed once it has exited, without waiting. */
void backend_launcher_reap_later(struct backend_host *h, struct ctl_launcher *l);
/* At shutdown: stop waiting for the launchers let go of that have not exited yet. */
void backend_launcher_reapers_free(void);

/* The built-in backends. */
extern const struct backend_ops backend_auto_ops;
extern const struct backend_ops backend_host_ops;
