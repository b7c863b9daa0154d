/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The test suite's pack executable (tests/packs/test-pack/pack.json): the pack protocol of
 * docs/PROTOCOL.md §6 over stdin/stdout, one JSON-RPC 2.0 object per line, with the behaviour its
 * settings ask for:
 *   failAt          none|configure|prepare|probe|dispose: that call fails
 *   prepareDelayMs  prepare takes this long
 *   interaction     none|confirm|input|secret-input|choice: prepare asks the person first and
 *                   fails when the answer does not come
 *   token           a secret: only whether it was configured is ever shown
 *   spawnAnswer     local (the normal answer), or a wrong one the controller must refuse
 *                   (misbehave())
 * It runs no command itself: every spawn is answered "local" (the controller runs the plan as a
 * sandbox of its own, never inside this process's), with CORDON_PACK_GENERATION=<the instance
 * name configure gave>, CORDON_PACK_TOKEN=configured|absent and CORDON_PACK_INTERACTION=<the
 * answer, for non-secret kinds> added to the command's environment.
 *
 * Two backend kinds (the instance name says which):
 *   test      workspace "direct": the command sees the host's workspace; acquire and release
 *             are unknown calls (method-not-found: nothing to do per lease)
 *   transfer  workspace "transfer": acquire extracts the workspace tar it is given into
 *             <state>/leases/<lease>/, spawns run there (a lease is required), release writes a
 *             tar of that tree back and removes it
 * Its state directory is its working directory. It logs to stderr, never a secret.
 * Not installed; built by make check.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/workspace-transfer.h"
#include "common/json-cleanup.h"
#include "common/system.h"
#include "common/util.h"
#include "ipc/ipc-jsonrpc.h"

static struct jsonrpc_conn *conn;
static char instance[256] = "unconfigured";
static char fail_at[32] = "none";
static char interaction[32] = "none";
static char spawn_answer[32] = "local";
static char interaction_answer[512] = "";
static char state_dir[4096];
static long long prepare_delay_ms;
static bool token_configured;
static char *token_value;
static bool transfer;
static json_int_t next_request = 1000;

static void send_msg(json_t *m)
{
	if (m && jsonrpc_conn_send_wait(conn, m, NULL, 0) < 0)
		fprintf(stderr, "cordon-test-pack: cannot write to the controller\n");
	json_decref(m);
}

static void reply(json_t *id, json_t *result)
{
	send_msg(jsonrpc_result_new(id, result));
}

static void reply_error(json_t *id, const char *message, json_t *data)
{
	send_msg(jsonrpc_error_new(id, -32007, message, data));
}

static void copy_setting(json_t *settings, const char *key, char *buf, size_t size)
{
	const char *v = json_string_value(json_object_get(settings, key));

	if (v)
		(void)snprintf(buf, size, "%s", v);
}

static void do_configure(json_t *id, json_t *params)
{
	json_t *settings = json_object_get(params, "settings");
	json_t *secrets = json_object_get(params, "secrets");
	json_t *token = json_object_get(secrets, "token");
	const char *kind;

	copy_setting(params, "instance", instance, sizeof(instance));
	copy_setting(settings, "failAt", fail_at, sizeof(fail_at));
	copy_setting(settings, "interaction", interaction, sizeof(interaction));
	copy_setting(settings, "spawnAnswer", spawn_answer, sizeof(spawn_answer));
	prepare_delay_ms =
		(long long)json_number_value(json_object_get(settings, "prepareDelayMs"));
	/* pack:<id>:<kind>#<n> */
	kind = strrchr(instance, ':');
	transfer = kind && startswith(kind, ":transfer#");
	token_configured = json_is_string(token) && json_string_length(token) > 0;
	/* Kept in memory, as a pack keeps the credentials it works with (pack-secrets.sh checks
	 * that no command can read it); the message's copy is wiped. We only ever say whether we
	 * have one. */
	if (token_configured) {
		free(token_value);
		token_value = strdup(json_string_value(token));
	}
	if (json_is_string(token))
		explicit_bzero((char *)json_string_value(token), json_string_length(token));
	fprintf(stderr, "cordon-test-pack: configured %s (failAt=%s, token %s)\n", instance,
		fail_at, token_configured ? "configured" : "absent");
	if (streq(fail_at, "configure"))
		reply_error(id, "failAt=configure", NULL);
	else
		reply(id, json_object());
}

static void handle(json_t *msg, int *fds, size_t n_fds);

/* Ask the controller a host interaction and wait for its answer (other messages are handled
 * meanwhile). Returns the result (owned) or NULL with *why set. */
static json_t *ask(const char *kind, char *why, size_t why_size)
{
	json_int_t rid = ++next_request;
	json_t *params = json_pack("{s:s,s:s}", "kind", kind, "prompt", "The test pack asks");

	if (streq(kind, "choice"))
		json_object_set_new(params, "options", json_pack("[s,s]", "red", "blue"));
	if (streq(kind, "secret-input"))
		json_object_set_new(params, "field", json_string("token"));
	send_msg(jsonrpc_request_new(rid, "interaction", params));
	for (;;) {
		_cleanup_json_ json_t *m = NULL;
		int fds[IPC_MAX_FDS];
		size_t n_fds = 0;
		struct field_error fe = { 0 };
		int r = jsonrpc_conn_recv(conn, &m, fds, &n_fds, -1, &fe);

		if (r <= 0) {
			close_many(fds, n_fds);
			(void)snprintf(why, why_size, "the controller went away");
			return NULL;
		}
		if (json_object_get(m, "method")) {
			handle(m, fds, n_fds);
			close_many(fds, n_fds);
			continue;
		}
		close_many(fds, n_fds);
		if (json_integer_value(json_object_get(m, "id")) != rid)
			continue;
		if (json_object_get(m, "error")) {
			(void)snprintf(why, why_size, "interaction %s: %s", kind,
				       json_string_value(json_object_get(
					       json_object_get(m, "error"), "message"))
					       ?: "error");
			return NULL;
		}
		return json_incref(json_object_get(m, "result"));
	}
}

static void do_prepare(json_t *id)
{
	if (prepare_delay_ms > 0) {
		struct timespec ts = { prepare_delay_ms / 1000,
				       (prepare_delay_ms % 1000) * 1000000 };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	if (!streq(interaction, "none")) {
		char why[512] = "";
		_cleanup_json_ json_t *answer = ask(interaction, why, sizeof(why));
		_cleanup_free_ char *text = NULL;

		if (!answer) {
			reply_error(id, why, NULL);
			return;
		}
		/* A secret-input answer carries no value (it went into the secret store). */
		text = json_dumps(answer, JSON_COMPACT | JSON_SORT_KEYS);
		(void)snprintf(interaction_answer, sizeof(interaction_answer), "%s",
			       text ? text : "");
	}
	/* Progress, as a pack doing something long says it (the controller relays it). */
	send_msg(jsonrpc_notification_new("progress", json_pack("{s:s}", "message",
								"preparing the test pack")));
	if (streq(fail_at, "prepare"))
		reply_error(id, "failAt=prepare", NULL);
	else
		reply(id, json_object());
}

static void do_probe(json_t *id)
{
	if (streq(fail_at, "probe"))
		reply(id, json_pack("{s:b,s:s}", "available", false, "reason", "failAt=probe"));
	else
		reply(id, json_pack("{s:b}", "available", true));
}

/* A lease id as a directory name: [A-Za-z0-9_-], 1-64 bytes. */
static bool lease_ok(const char *lease)
{
	size_t n = lease ? strlen(lease) : 0;

	if (n == 0 || n > 64)
		return false;
	for (const char *p = lease; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
			return false;
	return true;
}

/* Remove name in parent and what is below it, never following a symlink. */
static int remove_tree_at(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno != ENOTDIR && errno != ELOOP)
			return -errno;
		return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) {
			int k = remove_tree_at(dirfd(d), de->d_name);

			r = r < 0 ? r : k;
		} else if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT)
			r = r < 0 ? r : -errno;
	}
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		r = r < 0 ? r : -errno;
	return r;
}

/*
 * spawnAnswer other than "local": an answer the controller must refuse (pack-transfer.sh).
 *   workspace-outside       a workspace outside the state directory (/etc)
 *   workspace-symlink       one reached through a symlink in the state directory (to /)
 *   workspace-unnormalized  <state>/leases/<lease>/../../..
 *   workspace-state         the state directory itself
 *   workspace-direct        a directory below the state directory, on a direct backend
 *   bad-env                 an environment variable outside CORDON_PACK_* (LD_PRELOAD)
 *   both                    "local" and "sandbox" at once
 */
static int misbehave(json_t *local, const char *lease)
{
	_cleanup_free_ char *w = NULL;

	if (streq(spawn_answer, "workspace-outside"))
		w = strdup("/etc");
	else if (streq(spawn_answer, "workspace-symlink")) {
		(void)unlink("evil");
		if (symlink("/", "evil") < 0)
			return -errno;
		w = strdup_printf("%s/evil", state_dir);
	} else if (streq(spawn_answer, "workspace-unnormalized"))
		w = strdup_printf("%s/leases/%s/../../..", state_dir, lease ?: "x");
	else if (streq(spawn_answer, "workspace-state"))
		w = strdup(state_dir);
	else if (streq(spawn_answer, "workspace-direct")) {
		if (mkdir("direct", 0700) < 0 && errno != EEXIST)
			return -errno;
		w = strdup_printf("%s/direct", state_dir);
	} else if (streq(spawn_answer, "bad-env"))
		return json_array_append_new(json_object_get(local, "env"),
					     json_string("LD_PRELOAD=/tmp/evil.so"));
	else
		return 0;
	if (!w)
		return -ENOMEM;
	return json_object_set_new(local, "workspace", json_string(w));
}

static void do_spawn(json_t *id, json_t *params)
{
	const char *lease = json_string_value(json_object_get(params, "lease"));
	json_t *env = json_pack("[s+,s+,s+]", "CORDON_PACK_GENERATION=", instance,
				"CORDON_PACK_TOKEN=", token_configured ? "configured" : "absent",
				"CORDON_PACK_INTERACTION=", interaction_answer);
	json_t *local = json_pack("{s:o}", "env", env);
	_cleanup_free_ char *dir = NULL;
	struct stat st;

	if (transfer) {
		if (!lease) {
			json_decref(local);
			reply_error(id,
				    "transfer backends run commands in leases: acquire a sandbox "
				    "first",
				    json_pack("{s:s,s:s}", "code", "setup-failed", "step",
					      "lease"));
			return;
		}
		dir = strdup_printf("%s/leases/%s", state_dir, lease);
		if (!lease_ok(lease) || !dir || lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
			json_decref(local);
			reply_error(id, "no such lease",
				    json_pack("{s:s,s:s}", "code", "setup-failed", "step",
					      "lease"));
			return;
		}
		json_object_set_new(local, "workspace", json_string(dir));
	}
	if (!streq(spawn_answer, "local") && misbehave(local, lease) < 0) {
		json_decref(local);
		reply_error(id, "cannot misbehave", NULL);
		return;
	}
	if (streq(spawn_answer, "both"))
		reply(id, json_pack("{s:o,s:s}", "local", local, "sandbox", "t1"));
	else
		reply(id, json_pack("{s:o}", "local", local));
}

static void do_acquire(json_t *id, json_t *params, const int *fds, size_t n_fds)
{
	const char *lease = json_string_value(json_object_get(params, "lease"));
	const struct ws_limits limits = WS_LIMITS_DEFAULT;
	_cleanup_close_ int leases = -1, dfd = -1;
	struct ws_report rep;
	int r;

	if (!transfer) {
		send_msg(jsonrpc_error_new(id, JSONRPC_METHOD_NOT_FOUND, "no such method", NULL));
		return;
	}
	if (!lease_ok(lease) || n_fds != 1) {
		reply_error(id, "acquire needs a lease id and the workspace archive", NULL);
		return;
	}
	if (mkdir("leases", 0700) < 0 && errno != EEXIST) {
		reply_error(id, "cannot make the leases directory", NULL);
		return;
	}
	leases = open("leases", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* A lease of the same id left by an earlier controller: gone. */
	if (leases < 0 || remove_tree_at(leases, lease) < 0 || mkdirat(leases, lease, 0700) < 0) {
		reply_error(id, "cannot make the lease's directory", NULL);
		return;
	}
	dfd = openat(leases, lease, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || ws_report_init(&rep) < 0) {
		reply_error(id, "cannot open the lease's directory", NULL);
		return;
	}
	/* Into an empty directory, against no snapshot: every entry an addition. */
	r = ws_archive_apply(dfd, fds[0], NULL, &limits, NULL, &rep);
	fprintf(stderr, "cordon-test-pack: lease %s: %llu entries extracted (%s)\n", lease,
		(unsigned long long)rep.counts[WS_ADDED], r < 0 ? strerror(-r) : "ok");
	if (r < 0) {
		(void)remove_tree_at(leases, lease);
		reply_error(id, "cannot extract the workspace",
			    json_pack("{s:s,s:s}", "error", *rep.error ? rep.error : strerror(-r),
				      "step", "acquire"));
	} else
		reply(id, json_object());
	ws_report_done(&rep);
}

static void do_release(json_t *id, json_t *params, int *fds, size_t n_fds)
{
	const char *lease = json_string_value(json_object_get(params, "lease"));
	const struct ws_limits limits = WS_LIMITS_DEFAULT;
	_cleanup_close_ int leases = -1, dfd = -1;
	_cleanup_ws_snapshot_ struct ws_snapshot *snap = NULL;
	struct ws_report rep;
	int r;

	if (!transfer) {
		send_msg(jsonrpc_error_new(id, JSONRPC_METHOD_NOT_FOUND, "no such method", NULL));
		return;
	}
	if (!lease_ok(lease) || n_fds != 1) {
		reply_error(id, "release needs a lease id and the archive's pipe", NULL);
		return;
	}
	leases = open("leases", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	dfd = leases < 0 ? -1
			 : openat(leases, lease, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 || ws_report_init(&rep) < 0) {
		reply_error(id, "no such lease", NULL);
		return;
	}
	r = ws_archive_write(dfd, fds[0], &limits, &snap, &rep);
	/* Our copy of the pipe goes now: the controller's reader sees the archive's end. */
	fds[0] = safe_close(fds[0]);
	(void)remove_tree_at(leases, lease);
	if (r < 0)
		reply_error(id, "cannot write the workspace back",
			    json_pack("{s:s}", "error", *rep.error ? rep.error : strerror(-r)));
	else
		reply(id, json_object());
	ws_report_done(&rep);
}

static void do_kill(json_t *id)
{
	/* Every command of ours is a local sandbox: the controller kills it through its
	 * launcher, never through us. */
	send_msg(jsonrpc_error_new(id, -32003, "no such sandbox", NULL));
}

static void do_dispose(json_t *id)
{
	if (streq(fail_at, "dispose"))
		reply_error(id, "failAt=dispose", NULL);
	else
		reply(id, json_object());
}

static void handle(json_t *msg, int *fds, size_t n_fds)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *id = json_object_get(msg, "id"), *params = json_object_get(msg, "params");

	if (!method || !id)
		return;
	if (streq(method, "configure"))
		do_configure(id, params);
	else if (streq(method, "prepare"))
		do_prepare(id);
	else if (streq(method, "isAvailable"))
		do_probe(id);
	else if (streq(method, "spawn"))
		do_spawn(id, params);
	else if (streq(method, "acquire"))
		do_acquire(id, params, fds, n_fds);
	else if (streq(method, "release"))
		do_release(id, params, fds, n_fds);
	else if (streq(method, "kill"))
		do_kill(id);
	else if (streq(method, "dispose"))
		do_dispose(id);
	else
		send_msg(jsonrpc_error_new(id, JSONRPC_METHOD_NOT_FOUND, "no such method", NULL));
}

int main(void)
{
	int r;

	signal(SIGPIPE, SIG_IGN);
	if (!getcwd(state_dir, sizeof(state_dir)))
		return 1;
	/* stdin and stdout are the same socket; keep our own descriptor of it. */
	r = jsonrpc_conn_new(fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3), &conn);
	if (r < 0) {
		fprintf(stderr, "cordon-test-pack: cannot set up\n");
		return 1;
	}
	/* Nothing of ours writes to the channel by accident: stdin is /dev/null, stdout our
	 * stderr. */
	{
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null < 0 || dup2(null, STDIN_FILENO) < 0)
			return 1;
		close(null);
	}
	(void)dup2(STDERR_FILENO, STDOUT_FILENO);
	fprintf(stderr, "cordon-test-pack: started (pid %d)\n", (int)getpid());
	for (;;) {
		_cleanup_json_ json_t *m = NULL;
		int fds[IPC_MAX_FDS];
		size_t n_fds = 0;
		struct field_error fe = { 0 };

		r = jsonrpc_conn_recv(conn, &m, fds, &n_fds, -1, &fe);
		if (r <= 0) {
			close_many(fds, n_fds);
			return r < 0 ? 1 : 0;
		}
		handle(m, fds, n_fds);
		close_many(fds, n_fds);
	}
}
