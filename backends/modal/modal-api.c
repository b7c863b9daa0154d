/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Modal's sandbox API over gRPC: see modal-api.h. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "backends/modal/grpc-curl.h"
#include "backends/modal/modal-api.h"
#include "backends/modal/modal-subset.pb-c.h"
#include "common/cleanup.h"

#define CONTROL "/modal.client.ModalClient/"
#define ROUTER "/modal.task_command_router.TaskCommandRouter/"
#define CALL_TIMEOUT_MS 60000L
#define REFRESH_MARGIN_S 300
#define CLIENT_TYPE "x-modal-client-type: 9"
#define CLIENT_VERSION "x-modal-client-version: 1.0.0"

struct modal_client {
	struct grpc_conn *conn;
	char *ca_file;
	char *id_header, *secret_header, *auth_header;
	time_t auth_issued, auth_exp;
	unsigned auth_count;
};

struct modal_router {
	struct grpc_conn *conn;
	char *url, *auth_header, *task_id, *ca_file;
};

/* The command router's retries: 10, from 10 ms doubling; a wait's, every second. */
#define ROUTER_RETRIES 10
#define ROUTER_BACKOFF_MS 10L
#define ROUTER_BACKOFF_CAP_MS 5120L
#define WAIT_RETRIES 300
#define WAIT_BACKOFF_MS 1000L

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

int modal_client_new(const char *server_url, const char *ca_file, const char *token_id,
		     const char *token_secret, struct modal_client **ret)
{
	struct modal_client *c;
	int r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	r = grpc_conn_new(server_url, ca_file, &c->conn);
	if (r < 0) {
		free(c);
		return r;
	}
	if (ca_file && *ca_file && !(c->ca_file = strdup(ca_file))) {
		modal_client_free(c);
		return -ENOMEM;
	}
	if (asprintf(&c->id_header, "x-modal-token-id: %s", token_id) < 0)
		c->id_header = NULL;
	if (asprintf(&c->secret_header, "x-modal-token-secret: %s", token_secret) < 0)
		c->secret_header = NULL;
	if (!c->id_header || !c->secret_header) {
		modal_client_free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

struct modal_client *modal_client_free(struct modal_client *c)
{
	if (!c)
		return NULL;
	grpc_conn_free(c->conn);
	free(c->ca_file);
	wipe_free(c->id_header);
	wipe_free(c->secret_header);
	wipe_free(c->auth_header);
	free(c);
	return NULL;
}

unsigned modal_auth_count(const struct modal_client *c)
{
	return c->auth_count;
}

static int errno_of(int status)
{
	switch (status) {
	case GRPC_UNAUTHENTICATED:
	case GRPC_PERMISSION_DENIED:
		return -EACCES;
	case GRPC_NOT_FOUND:
		return -ENOENT;
	case GRPC_DEADLINE_EXCEEDED:
		return -ETIMEDOUT;
	case GRPC_UNAVAILABLE:
	case GRPC_RESOURCE_EXHAUSTED:
		return -EAGAIN;
	case GRPC_CANCELLED:
		return -ECANCELED;
	case GRPC_INVALID_ARGUMENT:
		return -EINVAL;
	default:
		return -EPROTO;
	}
}

/* One call: the request packed, the answer unpacked into *resp (NULL when not wanted). */
static int call_raw(struct grpc_conn *conn, const struct grpc_call *tmpl,
		    const ProtobufCMessage *req, const ProtobufCMessageDescriptor *resp_desc,
		    ProtobufCMessage **resp, int *status, char *msg, size_t msg_size)
{
	_cleanup_free_ uint8_t *buf = NULL, *ans = NULL;
	size_t n = protobuf_c_message_get_packed_size(req), ans_len = 0;
	struct grpc_result res;
	struct grpc_call call = *tmpl;
	const char *path = call.path;
	int r;

	buf = malloc(n ? n : 1);
	if (!buf)
		return -ENOMEM;
	call.req_len = protobuf_c_message_pack(req, buf);
	call.req = buf;
	r = grpc_unary(conn, &call, &ans, &ans_len, &res);
	if (r < 0)
		return r;
	*status = res.status;
	if (res.status != GRPC_OK) {
		snprintf(msg, msg_size, "%s", res.message);
		return errno_of(res.status);
	}
	if (resp) {
		*resp = protobuf_c_message_unpack(resp_desc, NULL, ans_len, ans);
		if (!*resp) {
			snprintf(msg, msg_size, "undecodable answer to %s", path);
			return -EPROTO;
		}
	}
	return 0;
}

/* The "exp" of a JWT's payload, or 0. */
static time_t jwt_exp(const char *jwt)
{
	const char *a = strchr(jwt, '.'), *b;
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	_cleanup_free_ char *dec = NULL;
	json_t *j, *e;
	size_t o = 0;
	unsigned acc = 0;
	int bits = 0;
	time_t exp = 0;

	if (!a || !(b = strchr(a + 1, '.')))
		return 0;
	dec = malloc((size_t)(b - a));
	if (!dec)
		return 0;
	for (const char *p = a + 1; p < b; p++) {
		const char *q = strchr(tbl, *p);

		if (!q || !*p)
			return 0;
		acc = acc << 6 | (unsigned)(q - tbl);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			dec[o++] = (char)(acc >> bits & 0xff);
		}
	}
	j = json_loadb(dec, o, 0, NULL);
	e = json_object_get(j, "exp");
	if (json_is_number(e))
		exp = (time_t)json_number_value(e);
	json_decref(j);
	return exp;
}

static int auth_fetch(struct modal_client *c, char *msg, size_t msg_size)
{
	const char *md[] = { c->id_header, c->secret_header, CLIENT_TYPE, CLIENT_VERSION, NULL };
	Modal__Client__AuthTokenGetRequest req = MODAL__CLIENT__AUTH_TOKEN_GET_REQUEST__INIT;
	Modal__Client__AuthTokenGetResponse *resp = NULL;
	int status, r;

	struct grpc_call call = { .path = CONTROL "AuthTokenGet",
				  .metadata = md,
				  .timeout_ms = CALL_TIMEOUT_MS,
				  .retryable = true };

	r = call_raw(c->conn, &call, &req.base, &modal__client__auth_token_get_response__descriptor,
		     (ProtobufCMessage **)&resp, &status, msg, msg_size);
	if (r < 0)
		return r;
	wipe_free(c->auth_header);
	c->auth_header = NULL;
	if (!resp->token || !*resp->token ||
	    asprintf(&c->auth_header, "x-modal-auth-token: %s", resp->token) < 0) {
		c->auth_header = NULL;
		protobuf_c_message_free_unpacked(&resp->base, NULL);
		snprintf(msg, msg_size, "the service gave no auth token");
		return -EPROTO;
	}
	c->auth_issued = time(NULL);
	c->auth_exp = jwt_exp(resp->token);
	if (c->auth_exp == 0)
		c->auth_exp = c->auth_issued + 3600;
	explicit_bzero(resp->token, strlen(resp->token));
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	c->auth_count++;
	return 0;
}

int modal_auth(struct modal_client *c, char *msg, size_t msg_size)
{
	time_t now = time(NULL), life, margin;

	if (c->auth_header) {
		life = c->auth_exp - c->auth_issued;
		margin = life / 4 < REFRESH_MARGIN_S ? life / 4 : REFRESH_MARGIN_S;
		if (now + margin < c->auth_exp)
			return 0;
	}
	return auth_fetch(c, msg, msg_size);
}

/* A control-plane call with a fresh auth token; an "expired" answer refreshes it once. */
static int control(struct modal_client *c, const char *method, const ProtobufCMessage *req,
		   bool retryable, const ProtobufCMessageDescriptor *resp_desc,
		   ProtobufCMessage **resp, char *msg, size_t msg_size)
{
	char path[128];
	int status = GRPC_OK, r;

	snprintf(path, sizeof(path), CONTROL "%s", method);
	for (int pass = 0;; pass++) {
		r = modal_auth(c, msg, msg_size);
		if (r < 0)
			return r;
		{
			const char *md[] = { c->id_header, c->secret_header, c->auth_header,
					     CLIENT_TYPE,  CLIENT_VERSION,   NULL };
			struct grpc_call call = { .path = path,
						  .metadata = md,
						  .timeout_ms = CALL_TIMEOUT_MS,
						  .retryable = retryable };

			r = call_raw(c->conn, &call, req, resp_desc, resp, &status, msg, msg_size);
		}
		if (r >= 0 || status != GRPC_UNAUTHENTICATED || pass > 0)
			return r;
		wipe_free(c->auth_header); /* refused: fetch another */
		c->auth_header = NULL;
	}
}

int modal_app_get_or_create(struct modal_client *c, const char *app, const char *environment,
			    char **app_id, char *msg, size_t msg_size)
{
	Modal__Client__AppGetOrCreateRequest req = MODAL__CLIENT__APP_GET_OR_CREATE_REQUEST__INIT;
	Modal__Client__AppGetOrCreateResponse *resp = NULL;
	int r;

	req.app_name = (char *)app;
	req.environment_name = (char *)(environment ? environment : "");
	req.object_creation_type =
		MODAL__CLIENT__OBJECT_CREATION_TYPE__OBJECT_CREATION_TYPE_CREATE_IF_MISSING;
	r = control(c, "AppGetOrCreate", &req.base, true,
		    &modal__client__app_get_or_create_response__descriptor,
		    (ProtobufCMessage **)&resp, msg, msg_size);
	if (r < 0)
		return r;
	*app_id = resp->app_id && *resp->app_id ? strdup(resp->app_id) : NULL;
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	if (!*app_id) {
		snprintf(msg, msg_size, "the service gave no app id");
		return -EPROTO;
	}
	return 0;
}

int modal_sandbox_create(struct modal_client *c, const struct modal_sandbox_spec *s,
			 char **sandbox_id, char *msg, size_t msg_size)
{
	Modal__Client__SandboxCreateRequest req = MODAL__CLIENT__SANDBOX_CREATE_REQUEST__INIT;
	Modal__Client__Sandbox def = MODAL__CLIENT__SANDBOX__INIT;
	Modal__Client__Resources res = MODAL__CLIENT__RESOURCES__INIT;
	Modal__Client__SandboxTag tag = MODAL__CLIENT__SANDBOX_TAG__INIT, *tags[1] = { &tag };
	Modal__Client__SandboxCreateResponse *resp = NULL;
	Modal__Client__NetworkAccess net = MODAL__CLIENT__NETWORK_ACCESS__INIT;
	Modal__Client__StringMap envmap = MODAL__CLIENT__STRING_MAP__INIT;
	_cleanup_free_ Modal__Client__StringMap__ContentsEntry *ents = NULL;
	_cleanup_free_ Modal__Client__StringMap__ContentsEntry **entp = NULL;
	_cleanup_free_ char *envbuf = NULL;
	static char arg0[] = "sleep", arg1[] = "infinity";
	char *sleep_args[] = { arg0, arg1 };
	size_t n_env = 0, envlen = 0;
	int r;

	for (const char *const *e = s->env; e && *e; e++) {
		n_env++;
		envlen += strlen(*e) + 1;
	}
	if (n_env) {
		char *p;

		ents = calloc(n_env, sizeof(*ents));
		entp = calloc(n_env, sizeof(*entp));
		envbuf = malloc(envlen);
		if (!ents || !entp || !envbuf)
			return -ENOMEM;
		p = envbuf;
		for (size_t i = 0; i < n_env; i++) {
			char *eq;

			strcpy(p, s->env[i]);
			eq = strchr(p, '=');
			if (!eq)
				return -EINVAL;
			*eq = '\0';
			modal__client__string_map__contents_entry__init(&ents[i]);
			ents[i].key = p;
			ents[i].value = eq + 1;
			entp[i] = &ents[i];
			p += strlen(s->env[i]) + 1;
		}
	}
	def.n_entrypoint_args = 2;
	def.entrypoint_args = sleep_args;
	def.image_id = (char *)s->image_id;
	res.milli_cpu = s->milli_cpu;
	res.memory_mb = s->memory_mb;
	def.resources = &res;
	def.timeout_secs = s->timeout_secs;
	def.workdir = (char *)(s->workdir ? s->workdir : "");
	net.network_access_type =
		s->network_access ? MODAL__CLIENT__NETWORK_ACCESS__NETWORK_ACCESS_TYPE__OPEN
				  : MODAL__CLIENT__NETWORK_ACCESS__NETWORK_ACCESS_TYPE__BLOCKED;
	def.network_access = &net;
	if (n_env) {
		envmap.n_contents = n_env;
		envmap.contents = entp;
		def.environment_variables = &envmap;
	}
	req.app_id = (char *)s->app_id;
	req.definition = &def;
	if (s->tag_name) {
		tag.tag_name = (char *)s->tag_name;
		tag.tag_value = (char *)(s->tag_value ? s->tag_value : "");
		req.n_tags = 1;
		req.tags = tags;
	}
	/* retried as the SDKs do: the same idempotency key on each attempt lets the service
	 * answer a repeated create with the sandbox it made */
	r = control(c, "SandboxCreate", &req.base, true,
		    &modal__client__sandbox_create_response__descriptor, (ProtobufCMessage **)&resp,
		    msg, msg_size);
	if (r < 0)
		return r;
	*sandbox_id = resp->sandbox_id && *resp->sandbox_id ? strdup(resp->sandbox_id) : NULL;
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	if (!*sandbox_id) {
		snprintf(msg, msg_size, "the service gave no sandbox id");
		return -EPROTO;
	}
	return 0;
}

int modal_sandbox_task_id(struct modal_client *c, const char *sandbox_id, char **task_id, char *msg,
			  size_t msg_size)
{
	Modal__Client__SandboxGetTaskIdRequest req =
		MODAL__CLIENT__SANDBOX_GET_TASK_ID_REQUEST__INIT;

	req.sandbox_id = (char *)sandbox_id;
	req.timeout = 10;
	req.wait_until_ready = true;
	for (int i = 0; i < 30; i++) {
		Modal__Client__SandboxGetTaskIdResponse *resp = NULL;
		int r = control(c, "SandboxGetTaskId", &req.base, true,
				&modal__client__sandbox_get_task_id_response__descriptor,
				(ProtobufCMessage **)&resp, msg, msg_size);

		if (r < 0)
			return r;
		if (resp->task_id && *resp->task_id) {
			*task_id = strdup(resp->task_id);
			protobuf_c_message_free_unpacked(&resp->base, NULL);
			return *task_id ? 0 : -ENOMEM;
		}
		if (resp->task_result && resp->task_result->status) {
			static const char *const names[] = {
				[2] = "failed", [3] = "terminated", [4] = "timed out"
			};
			unsigned st = resp->task_result->status;

			snprintf(msg, msg_size, "the sandbox has %s",
				 st < ELEMENTSOF(names) && names[st] ? names[st] : "ended");
			protobuf_c_message_free_unpacked(&resp->base, NULL);
			return -ENOENT;
		}
		protobuf_c_message_free_unpacked(&resp->base, NULL);
	}
	snprintf(msg, msg_size, "the sandbox's task did not start");
	return -ETIMEDOUT;
}

int modal_sandbox_terminate(struct modal_client *c, const char *sandbox_id, char *msg,
			    size_t msg_size)
{
	Modal__Client__SandboxTerminateRequest req = MODAL__CLIENT__SANDBOX_TERMINATE_REQUEST__INIT;

	req.sandbox_id = (char *)sandbox_id;
	return control(c, "SandboxTerminate", &req.base, true, NULL, NULL, msg, msg_size);
}

int modal_sandbox_list(struct modal_client *c, const char *app_id, const char *tag_name,
		       const char *tag_value, char ***ids, char *msg, size_t msg_size)
{
	Modal__Client__SandboxListRequest req = MODAL__CLIENT__SANDBOX_LIST_REQUEST__INIT;
	Modal__Client__SandboxTag tag = MODAL__CLIENT__SANDBOX_TAG__INIT, *tags[1] = { &tag };
	Modal__Client__SandboxListResponse *resp = NULL;
	char **out;
	size_t k = 0;
	int r;

	req.app_id = (char *)app_id;
	if (tag_name) {
		tag.tag_name = (char *)tag_name;
		tag.tag_value = (char *)(tag_value ? tag_value : "");
		req.n_tags = 1;
		req.tags = tags;
	}
	r = control(c, "SandboxList", &req.base, true,
		    &modal__client__sandbox_list_response__descriptor, (ProtobufCMessage **)&resp,
		    msg, msg_size);
	if (r < 0)
		return r;
	out = calloc(resp->n_sandboxes + 1, sizeof(*out));
	if (!out) {
		protobuf_c_message_free_unpacked(&resp->base, NULL);
		return -ENOMEM;
	}
	for (size_t i = 0; i < resp->n_sandboxes; i++)
		if (resp->sandboxes[i]->id && *resp->sandboxes[i]->id)
			out[k++] = strdup(resp->sandboxes[i]->id);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	*ids = out;
	return 0;
}

int modal_router_open(struct modal_client *c, const char *task_id, struct modal_router **ret,
		      char *msg, size_t msg_size)
{
	Modal__Client__TaskGetCommandRouterAccessRequest req =
		MODAL__CLIENT__TASK_GET_COMMAND_ROUTER_ACCESS_REQUEST__INIT;
	Modal__Client__TaskGetCommandRouterAccessResponse *resp = NULL;
	struct modal_router *rt;
	int r;

	req.task_id = (char *)task_id;
	r = control(c, "TaskGetCommandRouterAccess", &req.base, true,
		    &modal__client__task_get_command_router_access_response__descriptor,
		    (ProtobufCMessage **)&resp, msg, msg_size);
	if (r < 0)
		return r;
	rt = calloc(1, sizeof(*rt));
	if (!rt || !resp->jwt || !resp->url || !*resp->jwt || !*resp->url) {
		free(rt);
		protobuf_c_message_free_unpacked(&resp->base, NULL);
		snprintf(msg, msg_size, "the service gave no command router access");
		return rt ? -EPROTO : -ENOMEM;
	}
	rt->url = strdup(resp->url);
	rt->task_id = strdup(task_id);
	rt->ca_file = c->ca_file ? strdup(c->ca_file) : NULL;
	if (asprintf(&rt->auth_header, "authorization: Bearer %s", resp->jwt) < 0)
		rt->auth_header = NULL;
	explicit_bzero(resp->jwt, strlen(resp->jwt));
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	if (!rt->url || !rt->task_id || !rt->auth_header) {
		modal_router_free(rt);
		return -ENOMEM;
	}
	r = grpc_conn_new(rt->url, rt->ca_file, &rt->conn);
	if (r < 0) {
		snprintf(msg, msg_size, "the command router's URL is not http(s)");
		modal_router_free(rt);
		return r;
	}
	*ret = rt;
	return 0;
}

int modal_router_dup(const struct modal_router *r, struct modal_router **ret)
{
	struct modal_router *d = calloc(1, sizeof(*d));
	int k;

	if (!d)
		return -ENOMEM;
	d->url = strdup(r->url);
	d->task_id = strdup(r->task_id);
	d->auth_header = strdup(r->auth_header);
	d->ca_file = r->ca_file ? strdup(r->ca_file) : NULL;
	if (!d->url || !d->task_id || !d->auth_header || (r->ca_file && !d->ca_file)) {
		modal_router_free(d);
		return -ENOMEM;
	}
	k = grpc_conn_new(d->url, d->ca_file, &d->conn);
	if (k < 0) {
		modal_router_free(d);
		return k;
	}
	*ret = d;
	return 0;
}

struct modal_router *modal_router_free(struct modal_router *r)
{
	if (!r)
		return NULL;
	grpc_conn_free(r->conn);
	free(r->url);
	free(r->task_id);
	free(r->ca_file);
	wipe_free(r->auth_header);
	free(r);
	return NULL;
}

/* A router call, retried on the transient statuses (every one of the pack's router calls is
 * safe to repeat: an exec start by its exec id, a stdin write by its offset). */
static int router_call(struct modal_router *rt, const char *method, const ProtobufCMessage *req,
		       long timeout_ms, const ProtobufCMessageDescriptor *resp_desc,
		       ProtobufCMessage **resp, char *msg, size_t msg_size)
{
	const char *md[] = { rt->auth_header, NULL };
	char path[128];
	struct grpc_call call = { .path = path,
				  .metadata = md,
				  .timeout_ms = timeout_ms,
				  .retryable = true,
				  .retries = ROUTER_RETRIES,
				  .backoff_ms = ROUTER_BACKOFF_MS,
				  .backoff_cap_ms = ROUTER_BACKOFF_CAP_MS };
	int status;

	snprintf(path, sizeof(path), ROUTER "%s", method);
	return call_raw(rt->conn, &call, req, resp_desc, resp, &status, msg, msg_size);
}

int modal_exec_start(struct modal_router *rt, const char *const *argv, const char *workdir,
		     const char *const *env, uint32_t timeout_secs, char exec_id[37], char *msg,
		     size_t msg_size)
{
	Modal__Client__TaskExecStartRequest req = MODAL__CLIENT__TASK_EXEC_START_REQUEST__INIT;
	_cleanup_free_ Modal__Client__TaskExecStartRequest__EnvEntry *ents = NULL;
	_cleanup_free_ Modal__Client__TaskExecStartRequest__EnvEntry **entp = NULL;
	_cleanup_free_ char *envbuf = NULL;
	size_t n_args = 0, n_env = 0, envlen = 0;
	int r;

	for (const char *const *a = argv; *a; a++)
		n_args++;
	for (const char *const *e = env; e && *e; e++) {
		n_env++;
		envlen += strlen(*e) + 1;
	}
	if (n_env) {
		char *p;

		ents = calloc(n_env, sizeof(*ents));
		entp = calloc(n_env, sizeof(*entp));
		envbuf = malloc(envlen);
		if (!ents || !entp || !envbuf)
			return -ENOMEM;
		p = envbuf;
		for (size_t i = 0; i < n_env; i++) {
			char *eq;

			strcpy(p, env[i]);
			eq = strchr(p, '=');
			if (!eq)
				return -EINVAL;
			*eq = '\0';
			modal__client__task_exec_start_request__env_entry__init(&ents[i]);
			ents[i].key = p;
			ents[i].value = eq + 1;
			entp[i] = &ents[i];
			p += strlen(env[i]) + 1;
		}
	}
	r = grpc_uuid(exec_id);
	if (r < 0)
		return r;
	req.task_id = rt->task_id;
	req.exec_id = exec_id;
	req.n_command_args = n_args;
	req.command_args = (char **)argv;
	req.stdout_config = MODAL__CLIENT__TASK_EXEC_STDOUT_CONFIG__TASK_EXEC_STDOUT_CONFIG_PIPE;
	req.stderr_config = MODAL__CLIENT__TASK_EXEC_STDERR_CONFIG__TASK_EXEC_STDERR_CONFIG_PIPE;
	req.timeout_secs = timeout_secs;
	req.workdir = (char *)(workdir ? workdir : "");
	req.n_env = n_env;
	req.env = entp;
	/* the exec id makes a retried start idempotent */
	return router_call(rt, "TaskExecStart", &req.base, CALL_TIMEOUT_MS, NULL, NULL, msg,
			   msg_size);
}

struct reader {
	modal_sink_fn sink;
	void *userdata;
	uint64_t offset;
	bool bad;
};

static bool on_chunk(const uint8_t *m, size_t len, void *ud)
{
	struct reader *rd = ud;
	Modal__Client__TaskExecStdioReadResponse *resp;
	bool ok;

	resp = modal__client__task_exec_stdio_read_response__unpack(NULL, len, m);
	if (!resp) {
		rd->bad = true;
		return false;
	}
	rd->offset += resp->data.len;
	ok = resp->data.len == 0 || rd->sink(resp->data.data, resp->data.len, rd->userdata);
	modal__client__task_exec_stdio_read_response__free_unpacked(resp, NULL);
	return ok;
}

int modal_exec_read(struct modal_router *rt, const char *exec_id, unsigned fd, modal_sink_fn sink,
		    void *userdata, char *msg, size_t msg_size)
{
	Modal__Client__TaskExecStdioReadRequest req =
		MODAL__CLIENT__TASK_EXEC_STDIO_READ_REQUEST__INIT;
	struct reader rd = { .sink = sink, .userdata = userdata };
	const char *md[] = { rt->auth_header, NULL };
	int cuts = 0;

	req.task_id = rt->task_id;
	req.exec_id = (char *)exec_id;
	req.file_descriptor =
		fd ? MODAL__CLIENT__TASK_EXEC_STDIO_FILE_DESCRIPTOR__TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR
		   : MODAL__CLIENT__TASK_EXEC_STDIO_FILE_DESCRIPTOR__TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT;
	for (;;) {
		_cleanup_free_ uint8_t *buf = NULL;
		struct grpc_call call = { .path = ROUTER "TaskExecStdioRead",
					  .metadata = md,
					  .retryable = true,
					  .retries = ROUTER_RETRIES,
					  .backoff_ms = ROUTER_BACKOFF_MS,
					  .backoff_cap_ms = ROUTER_BACKOFF_CAP_MS,
					  .on_msg = on_chunk,
					  .userdata = &rd };
		struct grpc_result res;
		uint64_t before = rd.offset;
		int r;

		req.offset = rd.offset;
		call.req_len = protobuf_c_message_get_packed_size(&req.base);
		buf = malloc(call.req_len ? call.req_len : 1);
		if (!buf)
			return -ENOMEM;
		protobuf_c_message_pack(&req.base, buf);
		call.req = buf;
		r = grpc_invoke(rt->conn, &call, &res);
		if (r < 0)
			return r;
		if (rd.bad) {
			snprintf(msg, msg_size, "undecodable output message");
			return -EPROTO;
		}
		if (res.status == GRPC_OK)
			return 0;
		/* a stream cut after some output resumes at the offset reached */
		if (grpc_status_is_transient(res.status) && res.status != GRPC_CANCELLED &&
		    rd.offset > before && ++cuts < 100)
			continue;
		snprintf(msg, msg_size, "%s", res.message);
		return errno_of(res.status);
	}
}

int modal_exec_write(struct modal_router *rt, const char *exec_id, uint64_t offset,
		     const void *data, size_t len, bool eof, char *msg, size_t msg_size)
{
	Modal__Client__TaskExecStdinWriteRequest req =
		MODAL__CLIENT__TASK_EXEC_STDIN_WRITE_REQUEST__INIT;

	req.task_id = rt->task_id;
	req.exec_id = (char *)exec_id;
	req.offset = offset;
	req.data.data = (uint8_t *)data;
	req.data.len = len;
	req.eof = eof;
	/* the offset makes a retried write idempotent */
	return router_call(rt, "TaskExecStdinWrite", &req.base, CALL_TIMEOUT_MS, NULL, NULL, msg,
			   msg_size);
}

int modal_exec_wait(struct modal_router *rt, const char *exec_id, int *code, int *signal, char *msg,
		    size_t msg_size)
{
	Modal__Client__TaskExecWaitRequest req = MODAL__CLIENT__TASK_EXEC_WAIT_REQUEST__INIT;
	Modal__Client__TaskExecWaitResponse *resp = NULL;
	int r;

	req.task_id = rt->task_id;
	req.exec_id = (char *)exec_id;
	for (;;) {
		/* a long wait: the transient statuses retried every second for minutes; a wait the
		 * service ends by its deadline is asked again */
		const char *md[] = { rt->auth_header, NULL };
		struct grpc_call call = { .path = ROUTER "TaskExecWait",
					  .metadata = md,
					  .retryable = true,
					  .retries = WAIT_RETRIES,
					  .backoff_ms = WAIT_BACKOFF_MS,
					  .backoff_cap_ms = WAIT_BACKOFF_MS };
		int status;

		r = call_raw(rt->conn, &call, &req.base,
			     &modal__client__task_exec_wait_response__descriptor,
			     (ProtobufCMessage **)&resp, &status, msg, msg_size);
		if (r != -ETIMEDOUT)
			break;
	}
	if (r < 0)
		return r;
	*code = -1;
	*signal = 0;
	if (resp->exit_status_case == MODAL__CLIENT__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_CODE)
		*code = resp->code;
	else if (resp->exit_status_case ==
		 MODAL__CLIENT__TASK_EXEC_WAIT_RESPONSE__EXIT_STATUS_SIGNAL)
		*signal = resp->signal;
	else
		r = -EPROTO;
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	if (r < 0)
		snprintf(msg, msg_size, "exit status missing");
	return r;
}

/* ------------------------------------------------------------------ images */

/* Display text of the service's text: control characters become spaces. */
static void flatten(char *s)
{
	for (unsigned char *p = (unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = ' ';
}

static int builder_version(struct modal_client *c, const char *environment, char **ret, char *msg,
			   size_t msg_size)
{
	Modal__Client__EnvironmentGetOrCreateRequest req =
		MODAL__CLIENT__ENVIRONMENT_GET_OR_CREATE_REQUEST__INIT;
	Modal__Client__EnvironmentGetOrCreateResponse *resp = NULL;
	const char *v;
	int r;

	req.deployment_name = (char *)(environment ? environment : "");
	r = control(c, "EnvironmentGetOrCreate", &req.base, true,
		    &modal__client__environment_get_or_create_response__descriptor,
		    (ProtobufCMessage **)&resp, msg, msg_size);
	if (r < 0)
		return r;
	v = resp->metadata && resp->metadata->settings
		    ? resp->metadata->settings->image_builder_version
		    : NULL;
	*ret = strdup(v ? v : "");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	return *ret ? 0 : -ENOMEM;
}

/* A build's end: 0 on success, else -EIO with the service's account of it. */
static int build_result(const Modal__Client__GenericResult *res, const char *image_id, char *msg,
			size_t msg_size)
{
	switch (res->status) {
	case MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_SUCCESS:
		return 0;
	case MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_TERMINATED:
		snprintf(msg, msg_size, "the build of image %s was shut down: try again", image_id);
		break;
	case MODAL__CLIENT__GENERIC_RESULT__GENERIC_STATUS__GENERIC_STATUS_TIMEOUT:
		snprintf(msg, msg_size, "the build of image %s timed out", image_id);
		break;
	default:
		snprintf(msg, msg_size, "the build of image %s failed: %s", image_id,
			 res->exception && *res->exception ? res->exception : "no reason given");
		flatten(msg);
		break;
	}
	return -EIO;
}

struct join {
	modal_progress_fn progress;
	void *userdata;
	char entry_id[128];
	char line[1024];
	size_t line_len;
	Modal__Client__GenericResult *result; /* the final one, when it came */
	bool bad;
};

static void join_text(struct join *j, const char *data)
{
	for (const char *p = data; *p; p++) {
		if (*p == '\n' || *p == '\r' || j->line_len + 1 >= sizeof(j->line)) {
			j->line[j->line_len] = '\0';
			flatten(j->line);
			if (j->line_len && j->progress)
				j->progress(j->line, j->userdata);
			j->line_len = 0;
			if (*p == '\n' || *p == '\r')
				continue;
		}
		j->line[j->line_len++] = *p;
	}
}

static bool on_join(const uint8_t *m, size_t len, void *ud)
{
	struct join *j = ud;
	Modal__Client__ImageJoinStreamingResponse *resp;

	resp = modal__client__image_join_streaming_response__unpack(NULL, len, m);
	if (!resp) {
		j->bad = true;
		return false;
	}
	if (resp->entry_id && *resp->entry_id)
		snprintf(j->entry_id, sizeof(j->entry_id), "%s", resp->entry_id);
	for (size_t i = 0; i < resp->n_task_logs; i++)
		if (resp->task_logs[i]->data)
			join_text(j, resp->task_logs[i]->data);
	if (resp->result && resp->result->status && !j->result) {
		j->result = resp->result;
		resp->result = NULL;
	}
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	return true;
}

int modal_image_build(struct modal_client *c, const char *app_id, const char *environment,
		      const char *ref, const char *const *commands, unsigned wait_secs,
		      modal_progress_fn progress, void *userdata, char **image_id, char *msg,
		      size_t msg_size)
{
	Modal__Client__ImageGetOrCreateRequest req =
		MODAL__CLIENT__IMAGE_GET_OR_CREATE_REQUEST__INIT;
	Modal__Client__Image img = MODAL__CLIENT__IMAGE__INIT;
	Modal__Client__ImageGetOrCreateResponse *resp = NULL;
	_cleanup_free_ char *version = NULL, *from = NULL, *id = NULL;
	_cleanup_free_ char **cmds = NULL;
	struct join j = { .progress = progress, .userdata = userdata };
	time_t deadline = time(NULL) + (time_t)wait_secs;
	size_t n = 1;
	int r;

	for (const char *const *p = commands; p && *p; p++)
		n++;
	cmds = calloc(n, sizeof(*cmds));
	if (!cmds || asprintf(&from, "FROM %s", ref) < 0) {
		from = NULL;
		return -ENOMEM;
	}
	cmds[0] = from;
	for (size_t i = 1; i < n; i++)
		cmds[i] = (char *)commands[i - 1];
	r = builder_version(c, environment, &version, msg, msg_size);
	if (r < 0)
		return r;
	img.n_dockerfile_commands = n;
	img.dockerfile_commands = cmds;
	req.image = &img;
	req.app_id = (char *)app_id;
	req.builder_version = version;
	r = control(c, "ImageGetOrCreate", &req.base, true,
		    &modal__client__image_get_or_create_response__descriptor,
		    (ProtobufCMessage **)&resp, msg, msg_size);
	if (r < 0)
		return r;
	if (!resp->image_id || !*resp->image_id) {
		protobuf_c_message_free_unpacked(&resp->base, NULL);
		snprintf(msg, msg_size, "the service gave no image id");
		return -EPROTO;
	}
	id = strdup(resp->image_id);
	if (resp->result && resp->result->status) {
		j.result = resp->result;
		resp->result = NULL;
	}
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	if (!id) {
		if (j.result)
			protobuf_c_message_free_unpacked(&j.result->base, NULL);
		return -ENOMEM;
	}
	/* Not built yet: its log streamed until the result, each stream resumed after the last
	 * entry seen; a stream the service ends without the result is asked again. */
	while (!j.result) {
		Modal__Client__ImageJoinStreamingRequest jr =
			MODAL__CLIENT__IMAGE_JOIN_STREAMING_REQUEST__INIT;
		const char *md[] = { c->id_header, c->secret_header, NULL,
				     CLIENT_TYPE,  CLIENT_VERSION,   NULL };
		struct grpc_call call = { .path = CONTROL "ImageJoinStreaming",
					  .metadata = md,
					  .retryable = true,
					  .on_msg = on_join,
					  .userdata = &j };
		struct grpc_result res;
		_cleanup_free_ uint8_t *buf = NULL;
		time_t left = deadline - time(NULL);

		if (left <= 0) {
			snprintf(
				msg, msg_size,
				"image %s is still building: it goes on at Modal; activate again to "
				"wait for it",
				id);
			return -EAGAIN;
		}
		r = modal_auth(c, msg, msg_size);
		if (r < 0)
			return r;
		md[2] = c->auth_header;
		jr.image_id = id;
		jr.timeout = (float)(left < 55 ? left : 55);
		jr.last_entry_id = j.entry_id;
		call.timeout_ms = ((long)jr.timeout + 10) * 1000L;
		call.req_len = protobuf_c_message_get_packed_size(&jr.base);
		buf = malloc(call.req_len ? call.req_len : 1);
		if (!buf)
			return -ENOMEM;
		protobuf_c_message_pack(&jr.base, buf);
		call.req = buf;
		r = grpc_invoke(c->conn, &call, &res);
		if (r < 0)
			return r;
		if (j.bad) {
			snprintf(msg, msg_size, "undecodable image build message");
			return -EPROTO;
		}
		if (res.status == GRPC_OK || j.result)
			continue;
		/* a cut stream resumes at its last entry; an expired auth token is renewed */
		if (res.status == GRPC_UNAUTHENTICATED && res.messages == 0) {
			wipe_free(c->auth_header);
			c->auth_header = NULL;
			continue;
		}
		if (grpc_status_is_transient(res.status) && res.status != GRPC_CANCELLED &&
		    res.messages > 0)
			continue;
		snprintf(msg, msg_size, "%s", res.message);
		return errno_of(res.status);
	}
	if (j.line_len)
		join_text(&j, "\n");
	r = build_result(j.result, id, msg, msg_size);
	protobuf_c_message_free_unpacked(&j.result->base, NULL);
	if (r == 0)
		*image_id = TAKE_PTR(id);
	return r;
}
