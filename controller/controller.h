/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cordon-controller: the unprivileged per-user daemon. It owns the user's policies, process table
 * and event stream, compiles policies into spawn plans and hands them to a launcher. It never
 * holds privileges; everything it exposes to a sandbox it opened itself, as the user.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "backends/backend.h"
#include "common/event.h"
#include "ipc/ipc-jsonrpc.h"

struct controller;
struct client;
struct process;

/* Clients (controller-server.c). */
struct client {
	struct controller *ctl;
	struct client *next;
	struct jsonrpc_conn *conn;
	struct event_source *src;
	uint64_t id; /* unique for the controller's life, never reused (controller_client_find) */
	uint64_t n_responses; /* responses sent (controller-client.c) */
	uid_t uid;
	pid_t pid;
	bool subscribed; /* events.subscribe with follow */
	bool closing;
};

struct controller {
	/* What backends see of the core: the loop, the user, the upcalls (controller-main.c). */
	struct backend_host host;
	int listen_fd;
	char *socket_path;
	struct event_source *listen_src;
	struct client *clients;
	struct process *processes;
	struct sandbox *sandboxes;
	unsigned long long next_sandbox;
	unsigned long long next_process;
	unsigned n_finished; /* finished processes still in the table (controller-process.c) */
	struct backend_instance *active; /* serves new processes (controller-backend.c) */
	json_t *confined_hello; /* the hello of the last instance made active that has one */
	struct activation *activations;		 /* the running activation, then the queued ones */
	struct backend_settings_store *settings; /* settings.json and active.json */
	unsigned long long generation;		 /* of the persisted selection */
	json_t *early_exits;			 /* exit reports that overtook their spawn answer */
	char *state_dir;
	char *etc_hosts;		/* sandboxes' /etc/hosts (controller-policy.c), or NULL */
	struct timespec etc_hosts_mtim; /* of the host's /etc/hosts it was made from */
	ino_t etc_hosts_ino;
	int events_log_fd;
	json_t *events_ring;		  /* recent events, newest last */
	uint64_t next_client_id;	  /* controller-server.c */
	struct interaction *interactions; /* host interactions waiting for an answer */
	struct backend_secrets *secrets;  /* opened on first use (controller-settings.c) */
	struct pack_provider *packs;	  /* installed packs and their backends (backends/pack/) */
	/* Where backends are found (controller-registry.c), NULL-terminated. */
	const struct backend_provider *providers[8];
	struct slot_waiter *slot_waiters; /* waiting for an active instance (controller-backend.c) */
	bool slot_persist;	       /* its re-activation saves builtin:auto as the selection */
	struct parked_request *parked; /* spawns waiting for it (controller-process.c) */
};

/* controller-server.c: the socket, the method table, a client's end. */
int controller_listen(struct controller *c, const char *path);
void controller_client_free(struct client *cl);

/* controller-client.c: talking to a client. */
/* Watch the client's socket for writability while replies are queued. */
int client_update_events(struct client *cl);
/* Send a message to a client; a client that cannot keep up (bounded queue) is dropped. */
int client_send(struct client *cl, json_t *msg, const int *fds, size_t n_fds);
int client_reply(struct client *cl, json_t *id, json_t *result);
int client_reply_error(struct client *cl, json_t *id, int code, const char *message, json_t *data);
/* An error naming a field: {"field": …, "reason": …} in data. */
int client_reply_field_error(struct client *cl, json_t *id, int code, const struct field_error *fe);
int client_notify(struct client *cl, const char *method, json_t *params);
/* The connected client with this id, or NULL when it is gone. */
struct client *controller_client_find(struct controller *c, uint64_t id);

/* A method handler. It answers with client_reply*() now or later (it may keep id). fds are the
 * request's fds: the handler takes the ones it uses (sets them to -1); the rest are closed. */
typedef int (*method_fn)(struct client *cl, json_t *id, json_t *params, int *fds, size_t n_fds);
struct controller_method {
	const char *name;
	method_fn fn;
};
/* The methods a build adds to the table, ending with {NULL} (controller-providers.c, or the
 * test build's). */
extern const struct controller_method controller_extra_methods[];

/* controller-events.c */
int controller_events_open(struct controller *c);
/* Emit an event: {"time": …, "type": type, …fields}; steals fields. */
void controller_event(struct controller *c, const char *type, json_t *fields);
int method_events_subscribe(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);

/* controller-process.c */
int method_process_exec(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_process_spawn(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_process_write(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_process_resize(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_process_attach(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_process_close_stdin(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_process_signal(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_process_wait(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_process_list(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_net_allow(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_net_deny(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
/* A client went away: kill what it started (unless detached), forget its waits. */
void controller_processes_client_gone(struct controller *c, struct client *cl);
void controller_processes_kill_all(struct controller *c);
bool controller_processes_idle(struct controller *c);
void controller_processes_free(struct controller *c);

/*
 * Start an exec-style process for the controller itself (a sandbox's setup hook): on_done gets
 * the exec result instead of a client. owner (may be NULL) ties its life to a client.
 */
int controller_process_start_internal(struct controller *c, struct client *owner, json_t *params,
				      void (*on_done)(struct controller *c, const char *process_id,
						      json_t *result, void *ud),
				      void *ud, char **ret_id, json_t **ret_error);
/* Kill every live process of an acquired sandbox. */
void controller_processes_kill_group(struct controller *c, const char *group);
/* Has the acquired sandbox a process whose end has not been reported yet? */
bool controller_processes_group_live(struct controller *c, const char *group);
/* Drop an internal process's callback (its requester went away). */
void controller_process_forget_callback(struct controller *c, const char *process_id);

/* controller-sandbox.c: acquired sandboxes (a policy, a workspace, processes sharing them). */
int method_sandbox_acquire(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_sandbox_release(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_sandbox_list(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
/* The instance an acquired sandbox is pinned to (borrowed), or NULL when there is no such
 * sandbox; and where its lease presents the workspace (NULL: at the policy's place). */
struct backend_instance *controller_sandbox_instance(struct controller *c, const char *sandbox_id);
const char *controller_sandbox_mount_point(struct controller *c, const char *sandbox_id);
/* The lease a sandbox's processes run in at the backend: a child sandbox shares its top-level
 * ancestor's (only that one was acquired there). */
const char *controller_sandbox_lease(struct controller *c, const char *sandbox_id);
/* The effective policy document and parsed policy of an acquired sandbox, or NULL. */
json_t *controller_sandbox_policy_doc(struct controller *c, const char *sandbox_id);
const struct policy *controller_sandbox_policy(struct controller *c, const char *sandbox_id);
void controller_sandboxes_client_gone(struct controller *c, struct client *cl);
void controller_sandboxes_free(struct controller *c);

/* controller-policy.c */
int method_policy_check(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_policy_explain(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);

/* controller-settings.c: the backend settings and secret methods. */
int method_backend_settings_get(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_backend_settings_set(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_secret_set(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_secret_clear(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
/* controller-secrets.c: the secret store, opened on first use in the state directory; -errno when it cannot be. */
int controller_secrets(struct controller *c, struct backend_secrets **ret);
/* 0 when ref is a known backend whose descriptor has field as a secret; else -ENOENT/-EINVAL
 * with fe naming "backend" or "field". */
int controller_backend_secret_field(struct controller *c, const char *ref, const char *field,
				    struct field_error *fe);
void controller_secrets_close(struct controller *c);
/* The settings.changed event of a secret change: field ids and what happened, never a value. */
void controller_secret_event(struct controller *c, const char *ref, const char *field,
			     const char *action, bool changed);

/*
 * controller-transfer.c: a lease's workspace to and from a transfer backend, on a thread of its
 * own. cb runs from the loop exactly once: r (0, or -errno; -EBADMSG: a malformed archive,
 * nothing changed), the snapshot of what was sent (send only; the callee owns it), the report
 * ({"items", "counts", …}, borrowed). Both take the fd in every case.
 */
struct ws_snapshot;
typedef void (*controller_transfer_cb)(struct controller *c, int r, struct ws_snapshot *snapshot,
				       json_t *report, void *ud);
int controller_transfer_send(struct controller *c, const char *ws_path, int out_fd,
			     controller_transfer_cb cb, void *ud);
/* policy (borrowed until cb): the host-executed paths it keeps read-only are never written. */
int controller_transfer_apply(struct controller *c, const char *ws_path, int in_fd,
			      const struct ws_snapshot *snapshot, const struct policy *policy,
			      controller_transfer_cb cb, void *ud);

/* controller-doctor.c */
int method_host_doctor(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);

/* A compiled spawn request: the plan (PROTOCOL.md §1.3) and the fds it names by index. */
struct ctl_plan {
	json_t *plan;
	int fds[IPC_MAX_FDS];
	size_t n_fds;
	uint64_t max_output_bytes;	 /* the policy's per-stream capture cap */
	struct proxy_rules *proxy_rules; /* network "proxy": what the controller's proxy allows */
	/* Host-executed paths that did not exist at compile time (policy-hostexec.h): no mount
	 * can keep them from being created, so the process's end reports those that appeared. */
	char **host_exec_absent;
	/* The policy's workspace, for the backend (struct backend_workspace): its host path
	 * (NULL: none), where the sandbox sees it, and whether it is read-only. */
	char *ws_path;
	char *ws_mount;
	bool ws_read_only;
};
void ctl_plan_done(struct ctl_plan *p);
/* Append fd (duplicated) to the plan's fd list; returns its index or -errno. */
int ctl_plan_add_fd(struct ctl_plan *p, int fd);

/*
 * A request's policy part, parsed once at the method boundary (nothing deeper reads the
 * request's JSON): the JSON members are borrowed from the request's params, which outlive it.
 */
struct policy_request {
	json_t *policy;		/* params.policy, or NULL: the embedded default */
	json_t *patch;		/* params.policyPatch, or NULL */
	const char *sandbox;	/* params.sandbox: the acquired sandbox it runs in */
	char **argv;		/* params.argv (owned), NULL when the method takes none */
	char **envp;		/* params.env (owned), never NULL */
	const char *caller_cwd; /* params.callerCwd, or the user's home */
	const char *cwd;	/* params.cwd: the process's, or NULL */
};
int controller_policy_request_parse(struct controller *c, json_t *params, bool need_argv,
				    struct policy_request *ret, struct field_error *fe);
void controller_policy_request_done(struct policy_request *q);

/*
 * controller-policy.c: the policy for a request — params.policy (or the embedded default) with
 * params.policyPatch merged on top — compiled for argv/env/cwd of the request. On a bad policy
 * returns -EINVAL (or -EPERM for a refusal) with fe naming the field.
 */
int controller_compile_request(struct controller *c, struct backend_instance *bi,
			       const struct policy_request *q, struct ctl_plan *ret,
			       struct field_error *fe);
/*
 * The request's policy parsed, resolved for this caller (absolute paths, concrete limits) and,
 * in a sandbox, checked to narrow the sandbox's, then held against bi's claims (when given);
 * *ret_doc is its normalized document.
 */
struct policy;
int controller_request_policy_parsed(struct controller *c, struct backend_instance *bi,
				     const struct policy_request *q, json_t **ret_doc,
				     struct policy **ret_policy, struct field_error *fe);
/* The embedded default with patch merged on top (a patch's env.pass replaces the default's),
 * compiled for argv/envp/cwd and a launcher's hello: the core's compile upcall. */
struct compiled_plan;
int controller_compile_default(struct controller *c, json_t *patch, char **argv, char **envp,
			       const char *cwd, json_t *hello, struct compiled_plan **ret,
			       struct field_error *fe);
/* The policy document of a request (default + patch), for check/explain. */
int controller_request_policy(struct controller *c, const struct policy_request *q, json_t **ret,
			      struct field_error *fe);

/* controller-backend.c: backends, instances, the activation transaction. */
struct backend_ops;
struct backend_instance;
typedef void (*activation_done_cb)(struct controller *c, int r, const char *step,
				   const char *message, const char *launcher, void *ud);
/* Queue an activation of ref with candidate settings (serialized; completes through done).
 * ACTIVATE_EXPLICIT: a person asked for it (the only way to builtin:host); ACTIVATE_NO_PERSIST:
 * restoring the saved selection at start-up. */
enum {
	ACTIVATE_EXPLICIT = 1 << 0,
	ACTIVATE_NO_PERSIST = 1 << 1
};
int controller_backend_activate(struct controller *c, const char *ref, json_t *settings,
				unsigned flags, activation_done_cb done, void *ud);
/* The same, on behalf of a client (struct client.id): a launcher's host interactions during the
 * activation go to it. */
int controller_backend_activate_for(struct controller *c, uint64_t origin_client, const char *ref,
				    json_t *settings, unsigned flags, activation_done_cb done,
				    void *ud);
int controller_backends_start(struct controller *c);
void controller_backends_stop(struct controller *c);
int controller_backend_validate_settings(struct controller *c, const struct backend_ops *ops,
					 const char *ref, json_t *settings, struct field_error *fe);
/* Step 6 of an activation: cb(c, r, ud) from the loop once the settings and the selection are on
 * disk (or could not be saved: r < 0). */
typedef void (*controller_write_cb)(struct controller *c, int r, void *ud);
int controller_backend_persist(struct controller *c, const char *ref, json_t *settings,
			       controller_write_cb cb, void *ud);
/* controller-persist.c: start the writer thread (once, after the loop exists); then
 * write_file_atomic(path, data, len, 0600) there, in order; cb runs from the loop. Takes path
 * and data (malloc'd) in every case. */
int controller_persist_start(struct controller *c);
int controller_write_file_async(struct controller *c, char *path, char *data, size_t len,
				controller_write_cb cb, void *ud);
int controller_backend_load_selection(struct controller *c, char **ret_ref, json_t **ret_settings);
/* Is a backend of the pack active, or being or about to be activated? */
bool controller_backend_pack_in_use(struct controller *c, const char *pack_id);
/* An instance's launcher went away: its processes end (killed, reason "launcher-lost"); when it
 * was the active one, builtin:auto is activated again at once. */
void controller_backend_lost(struct controller *c, struct backend_instance *bi);
void controller_processes_instance_lost(struct controller *c, struct backend_instance *bi);
/*
 * Wait for an active instance when there is none (its launcher was lost): 1 when there is one
 * now (cb will not run); else 0, and cb runs once an activation made one (r 0) or failed (r < 0,
 * message says why), which may be before this returns — builtin:auto's activation is started
 * when none is under way; or -errno (cb will not run). controller_backend_await_cancel()
 * forgets the waits made with ud.
 */
typedef void (*backend_await_cb)(struct controller *c, int r, const char *message, void *ud);
int controller_backend_await(struct controller *c, backend_await_cb cb, void *ud);
void controller_backend_await_cancel(struct controller *c, void *ud);
/*
 * The backend a client method names: params.backend, in the text form ("builtin:auto") or the
 * object form backend.list returns ({"source":"pack","packId":ID,"kind":KIND}). ret gets it,
 * text (BACKEND_REF_TEXT_MAX bytes) its canonical text form. -EINVAL with fe naming the field
 * ("params.backend", "params.backend.kind", …). Every method taking a backend parses it here.
 */
struct backend_ref;
int controller_backend_ref_param(json_t *params, struct backend_ref *ret, char *text, size_t size,
				 struct field_error *fe);

/* Exit reports from any instance land here (controller-process.c). */
void controller_process_exited_on(struct controller *c, struct backend_instance *bi,
				  const char *sandbox, json_t *exit);

/* controller-host.c: the upcalls backends reach the core through, set on c->host; and the
 * providers (built-ins, packs, what the build adds) registered. */
void controller_host_init(struct controller *c);
int controller_providers_open(struct controller *c);

/* controller-registry.c: backends are found through the providers only. */
/* The providers a build adds, NULL-terminated (controller-providers.c, or the test build's). */
extern const struct backend_provider *const controller_extra_providers[];
int controller_provider_add(struct controller *c, const struct backend_provider *p);
/* The backend ref (text form) names, or NULL. */
const struct backend_ops *controller_backend_find(struct controller *c, const char *ref);
/* The same, with its parsed descriptor; -EINVAL/-ENOENT with fe naming params.backend. */
struct backend_descriptor;
int controller_backend_lookup(struct controller *c, const char *ref_text,
			      struct backend_ref *ret_ref, struct backend_descriptor **ret_d,
			      struct field_error *fe);
/* Every provider's backends, at most max into out; returns how many. */
size_t controller_backends_list(struct controller *c, const struct backend_ops **out, size_t max);
/* Packs (controller-packs.c): the installed packs and the pack.* methods. */
int controller_packs_open(struct controller *c);
void controller_packs_close(struct controller *c);
int method_pack_install(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_pack_list(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_pack_enable(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_pack_disable(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_pack_remove(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_backend_list(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
int method_backend_activate(struct client *cl, json_t *id, json_t *params, int *fds, size_t n);
/* The active launcher's hello reply (capabilities and floor), borrowed: they come from the OS
 * launcher, whichever instance is active. Inline: the event stream asks it too, and must not
 * depend on controller-backend.c (tests/layering). */
static inline json_t *controller_launcher_hello(struct controller *c)
{
	if (c->active && c->active->ops->hello)
		return c->active->ops->hello(c->active);
	return NULL;
}
/* Which launcher instance serves new processes, e.g. "builtin:auto#1". */
const char *controller_launcher_name(struct controller *c);

/* The controller a backend_host belongs to. */
static inline struct controller *controller_of(struct backend_host *h)
{
	return (struct controller *)((char *)h - offsetof(struct controller, host));
}
