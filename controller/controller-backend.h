/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Backends and their instances (SPEC §3, §5). A backend (builtin:auto, builtin:host,
 * pack:<id>:<kind>) is a kind of launcher; an instance is one configured, prepared launcher of
 * that backend ("builtin:auto#3"). The active instance serves new processes; every process holds
 * a reference to the instance that created it, so an instance replaced by an activation keeps
 * running its processes and is disposed when the last one ends.
 *
 * Every operation that may take time completes through a callback, so neither a spawn nor the
 * event loop ever waits for an activation.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

struct controller;
struct backend_instance;
struct field_error;
struct policy;

/* Completion of configure/prepare/probe/dispose: r < 0 failed, message says why. */
typedef void (*backend_done_cb)(struct backend_instance *bi, int r, const char *message, void *ud);
/* Completion of a spawn: sandbox and pidfd or a launcher error; proxy_fd is the listener in the
 * sandbox's netns (network "proxy"), else -1. The callee owns both fds. */
typedef void (*backend_spawn_cb)(struct backend_instance *bi, const char *sandbox, int pidfd,
				 int proxy_fd, pid_t pid, json_t *error, void *ud);

struct backend_ops {
	const char *source;  /* "builtin" or "pack" */
	const char *pack_id; /* the pack's id; NULL for a built-in */
	const char *kind;
	bool confined; /* false only for builtin:host: never chosen implicitly */
	/* The descriptor (name, description, settings.fields, claims): data only. */
	json_t *(*descriptor)(const struct backend_ops *ops);
	/* Activation steps 3 and 4 (SPEC §5), each completing exactly once through done. */
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
	int (*spawn)(struct backend_instance *bi, json_t *plan, const int *fds, size_t n_fds,
		     backend_spawn_cb cb, void *ud);
	int (*kill)(struct backend_instance *bi, const char *sandbox, int sig);
	/* Release what the instance holds; < 0 is a cleanup failure (retried later). */
	int (*dispose)(struct backend_instance *bi);
	/* Optional, used instead of dispose when set: the same, completing through done (a pack
	 * answers over its channel; the event loop never waits for it). */
	void (*dispose_async)(struct backend_instance *bi, backend_done_cb done, void *ud);
	void (*free)(struct backend_instance *bi);
};

struct backend_instance {
	struct controller *ctl;
	const struct backend_ops *ops;
	char ref[160];	/* "builtin:auto" */
	char name[192]; /* "builtin:auto#3" */
	unsigned refs;	/* the active selection holds one; every live process one */
	bool disposed;
	/* The client (struct client.id) that started the operation now running on the instance:
	 * the activation (configure, prepare, probe) or the spawn being handed over; 0 for none.
	 * A pack's host interactions go to it. */
	uint64_t origin_client;
	void *data; /* the backend's own state */
};

/* controller-backend.c */
int backend_instance_new(struct controller *c, const struct backend_ops *ops,
			 struct backend_instance **ret);
struct backend_instance *backend_instance_ref(struct backend_instance *bi);
/* Drop a reference; the last one disposes and frees the instance. */
void backend_instance_unref(struct backend_instance *bi);

/* The text form of ops' reference ("builtin:auto", "pack:org.example:cloud"). */
int backend_ops_ref(const struct backend_ops *ops, char *buf, size_t size);

/*
 * The backend a client method names: params.backend, in the text form ("builtin:auto") or the
 * object form backend.list returns ({"source":"pack","packId":ID,"kind":KIND}). ret gets it,
 * text (BACKEND_REF_TEXT_MAX bytes) its canonical text form. -EINVAL with fe naming the field
 * ("params.backend", "params.backend.kind", …). Every method taking a backend parses it here.
 */
struct backend_ref;
int controller_backend_ref_param(json_t *params, struct backend_ref *ret, char *text, size_t size,
				 struct field_error *fe);

/*
 * The OS launcher for an instance: the system cordon-launcherd when its socket exists, else a
 * user-mode one of our own, started and not waited for. msg gets the reason of a failure
 * (controller-backend-auto.c). The caller watches ctl_launcher_fd() and says hello with
 * ctl_launcher_hello_async(), so that nothing waits for a launcher to start (SPEC §5: a spawn
 * never waits for an activation); backend_launcher_hello_check() then judges the reply.
 */
struct ctl_launcher;
struct ctl_launcher_error;
int backend_launcher_open(struct backend_instance *bi, struct ctl_launcher **ret, char *msg,
			  size_t msg_size);
/* 0 and the reply logged, or -errno with msg saying why the launcher refused hello. */
int backend_launcher_hello_check(struct backend_instance *bi, json_t *info,
				 const struct ctl_launcher_error *err, char *msg, size_t msg_size);
/* Reap a user-mode launcherd whose channel is closed once it has exited, without waiting. */
void backend_launcher_reap_later(struct controller *c, struct ctl_launcher *l);
/* At shutdown: stop waiting for the launchers let go of that have not exited yet. */
void backend_launcher_reapers_free(void);

/* The built-in backends. */
extern const struct backend_ops backend_auto_ops;
extern const struct backend_ops backend_host_ops;
#ifdef CORDON_TEST_HOOKS
extern const struct backend_ops backend_test_ops; /* builtin:test, the test build only */
#endif

/* Exit reports from any instance land here (controller-process.c). */
void controller_process_exited_on(struct controller *c, struct backend_instance *bi,
				  const char *sandbox, json_t *exit);
