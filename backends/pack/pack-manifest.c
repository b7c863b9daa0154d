/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pack manifests: every member checked, every error naming its JSON path. The descriptors are
 * parsed by backend-descriptor.c as a pack's (data only: no markup, no script URL, no event
 * handler, no unknown field type, no unconfined isolation).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/json-cleanup.h"
#include "common/util.h"
#include "backends/pack/pack-manifest.h"

static const char *const network_names[] = {
	[PACK_NETWORK_NONE] = "none",
	[PACK_NETWORK_LOOPBACK] = "loopback",
	[PACK_NETWORK_HOST] = "host",
	[PACK_NETWORK_PROXY] = "proxy",
};

const char *pack_network_to_string(enum pack_network n)
{
	return (unsigned)n < ELEMENTSOF(network_names) ? network_names[n] : NULL;
}

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-' || c == '+';
}

bool pack_relative_path_is_valid(const char *p)
{
	size_t n = p ? strlen(p) : 0;

	if (n == 0 || n > PACK_EXECUTABLE_MAX)
		return false;
	for (const char *c = p; *c;) {
		const char *end = strchrnul(c, '/');

		/* No empty component (no leading, doubled or trailing '/'), none hidden (which
		 * also rules out "." and ".."). */
		if (end == c || *c == '.')
			return false;
		for (const char *k = c; k < end; k++)
			if (!is_name_char(*k))
				return false;
		if (*end == '\0')
			break;
		c = end + 1;
		if (*c == '\0')
			return false;
	}
	return true;
}

static bool version_is_valid(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n > PACK_VERSION_MAX)
		return false;
	for (; *v; v++)
		if (!((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') ||
		      (*v >= '0' && *v <= '9') || *v == '.' || *v == '+' || *v == '~' || *v == '-'))
			return false;
	return true;
}

void pack_manifest_free(struct pack_manifest *m)
{
	if (!m)
		return;
	free(m->id);
	free(m->version);
	free(m->description);
	free(m->executable);
	strv_free(m->domains);
	strv_free(m->env);
	for (size_t i = 0; i < m->n_sockets; i++) {
		free(m->sockets[i].name);
		free(m->sockets[i].path);
	}
	free(m->sockets);
	for (size_t i = 0; i < m->n_backends; i++) {
		free(m->backends[i].kind);
		backend_descriptor_free(m->backends[i].descriptor);
		json_decref(m->backends[i].descriptor_json);
	}
	free(m->backends);
	free(m);
}

static int parse_backend(json_t *v, const char *path, struct pack_backend_entry *b,
			 struct field_error *err)
{
	static const char *const keys[] = { "kind", "descriptor", NULL };
	const char *kind = NULL;
	json_t *desc = NULL;
	char p[256];
	int r;

	if (!json_is_object(v))
		return field_error_set(err, -EINVAL, path, NULL, "expected an object");
	r = ipc_json_check_keys(v, keys, path, err);
	if (r < 0)
		return r;
	r = ipc_json_get_string(v, "kind", true, path, &kind, err);
	if (r < 0)
		return r;
	if (!backend_kind_is_valid(kind))
		return field_error_set(err, -EINVAL, path, "kind",
				       "must match [a-z][a-z0-9-]* (at most 64 bytes)");
	b->kind = strdup(kind);
	if (!b->kind)
		return -ENOMEM;
	r = ipc_json_get_object(v, "descriptor", true, path, &desc, err);
	if (r < 0)
		return r;
	json_path_join(p, sizeof(p), path, "descriptor");
	/* A pack's descriptor: never flagged BACKEND_DESCRIPTOR_BUILTIN. */
	r = backend_descriptor_from_json(desc, 0, p, &b->descriptor, err);
	if (r < 0)
		return r;
	if (!streq(b->descriptor->kind, kind))
		return field_error_set(err, -EINVAL, p, "kind",
				       "\"%s\" differs from the entry's kind \"%s\"",
				       b->descriptor->kind, kind);
	return backend_descriptor_to_json(b->descriptor, &b->descriptor_json);
}

/* A domain as the allowed-domains proxy takes it: a DNS name or "*.suffix", maybe ":port". */
static bool domain_is_valid(const char *d)
{
	const char *colon = strchr(d, ':');
	size_t n = colon ? (size_t)(colon - d) : strlen(d);

	if (n == 0 || n > 253 || strlen(d) > PACK_DOMAIN_MAX)
		return false;
	if (d[0] == '*' && (n < 3 || d[1] != '.'))
		return false;
	for (size_t i = d[0] == '*' ? 2 : 0; i < n; i++) {
		char c = d[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
			return false;
		if (c == '.' && (i == 0 || d[i - 1] == '.' || i + 1 == n))
			return false;
	}
	if (colon) {
		unsigned port;

		if (safe_atou(colon + 1, &port) < 0 || port == 0 || port > 65535)
			return false;
	}
	return true;
}

static int parse_domains(json_t *j, struct pack_manifest *m, struct field_error *err)
{
	int r = ipc_json_get_strv(j, "domains", false, PACK_DOMAINS_MAX, PACK_DOMAIN_MAX, "",
				  &m->domains, err);

	if (r < 0)
		return r;
	if (m->network != PACK_NETWORK_PROXY && m->domains)
		return field_error_set(err, -EINVAL, "domains", NULL,
				       "only with \"network\": \"proxy\"");
	if (m->network == PACK_NETWORK_PROXY && (!m->domains || !m->domains[0]))
		return field_error_set(err, -EINVAL, "domains", NULL,
				       "\"network\": \"proxy\" needs the domains the pack's own "
				       "API uses");
	for (size_t i = 0; m->domains && m->domains[i]; i++)
		if (!domain_is_valid(m->domains[i])) {
			char q[32];

			json_path_index(q, sizeof(q), "domains", i);
			return field_error_set(err, -EINVAL, q, NULL,
					       "expected a lower-case DNS name or \"*.suffix\", "
					       "optionally with \":port\"");
		}
	return 0;
}

static int parse_sockets(json_t *j, struct pack_manifest *m, struct field_error *err)
{
	static const char *const keys[] = { "name", "path", NULL };
	json_t *a = NULL, *v;
	size_t i;
	int r;

	r = ipc_json_get_array(j, "hostSockets", false, PACK_SOCKETS_MAX, "", &a, err);
	if (r <= 0)
		return r;
	m->sockets = calloc(json_array_size(a) ?: 1, sizeof(*m->sockets));
	if (!m->sockets)
		return -ENOMEM;
	json_array_foreach(a, i, v) {
		struct pack_socket *ps = &m->sockets[m->n_sockets];
		const char *name = NULL, *path = NULL;
		char q[32];

		json_path_index(q, sizeof(q), "hostSockets", i);
		if (!json_is_object(v))
			return field_error_set(err, -EINVAL, q, NULL, "expected an object");
		r = ipc_json_check_keys(v, keys, q, err);
		if (r >= 0)
			r = ipc_json_get_string(v, "name", true, q, &name, err);
		if (r >= 0)
			r = ipc_json_get_string(v, "path", true, q, &path, err);
		if (r < 0)
			return r;
		if (strlen(name) > PACK_SOCKET_NAME_MAX ||
		    strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(name) || !*name)
			return field_error_set(err, -EINVAL, q, "name",
					       "expected 1-32 of [a-z0-9-]");
		if (!path_is_absolute(path) || !path_is_normalized(path) || strlen(path) > 4096)
			return field_error_set(err, -EINVAL, q, "path",
					       "expected a normalized absolute path");
		for (size_t k = 0; k < m->n_sockets; k++)
			if (streq(m->sockets[k].name, name))
				return field_error_set(err, -EINVAL, q, "name", "listed twice");
		ps->name = strdup(name);
		ps->path = strdup(path);
		m->n_sockets++;
		if (!ps->name || !ps->path)
			return -ENOMEM;
	}
	return 0;
}

/* The environment it asks for: names no program reads as code (LD_*) and none the core sets
 * itself (PATH, HOME). */
static int parse_env(json_t *j, struct pack_manifest *m, struct field_error *err)
{
	int r = ipc_json_get_strv(j, "env", false, PACK_ENV_MAX, PACK_ENV_NAME_MAX, "", &m->env,
				  err);

	if (r < 0)
		return r;
	for (size_t i = 0; m->env && m->env[i]; i++) {
		const char *n = m->env[i];
		char q[32];

		json_path_index(q, sizeof(q), "env", i);
		if (!*n || (*n >= '0' && *n <= '9') ||
		    strspn(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(n) ||
		    streq(n, "PATH") || streq(n, "HOME") || startswith(n, "LD_"))
			return field_error_set(err, -EINVAL, q, NULL,
					       "expected a variable name of [A-Z_][A-Z0-9_]*, not "
					       "PATH, HOME or LD_*");
		for (size_t k = 0; k < i; k++)
			if (streq(m->env[k], n))
				return field_error_set(err, -EINVAL, q, NULL, "listed twice");
	}
	return 0;
}

json_t *pack_manifest_asks_to_json(const struct pack_manifest *m)
{
	json_t *socks = json_array(), *doms = json_array(), *env = json_array();

	for (size_t i = 0; socks && i < m->n_sockets; i++)
		(void)json_array_append_new(socks,
					    json_pack("{s:s,s:s}", "name", m->sockets[i].name,
						      "path", m->sockets[i].path));
	for (size_t i = 0; doms && m->domains && m->domains[i]; i++)
		(void)json_array_append_new(doms, json_string(m->domains[i]));
	for (size_t i = 0; env && m->env && m->env[i]; i++)
		(void)json_array_append_new(env, json_string(m->env[i]));
	return json_pack("{s:s,s:o*,s:o*,s:o*}", "network", pack_network_to_string(m->network),
			 "domains", doms, "hostSockets", socks, "env", env);
}

int pack_manifest_from_json(json_t *j, struct pack_manifest **ret, struct field_error *err)
{
	static const char *const keys[] = { "id",	"version", "description", "executable",
					    "network",	"domains", "hostSockets", "env",
					    "backends", NULL };
	_cleanup_(pack_manifest_freep) struct pack_manifest *m = NULL;
	const char *s = NULL;
	json_t *backends = NULL, *v;
	size_t i;
	int r;

	if (!json_is_object(j))
		return field_error_set(err, -EINVAL, "", NULL, "expected an object");
	r = ipc_json_check_keys(j, keys, "", err);
	if (r < 0)
		return r;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;

	r = ipc_json_get_string(j, "id", true, "", &s, err);
	if (r < 0)
		return r;
	if (!backend_pack_id_is_valid(s))
		return field_error_set(err, -EINVAL, "id", NULL,
				       "must be reverse-DNS-like: [a-z0-9][a-z0-9.-]*, no empty "
				       "label, at most 128 bytes");
	m->id = strdup(s);

	r = ipc_json_get_string(j, "version", true, "", &s, err);
	if (r < 0)
		return r;
	if (!version_is_valid(s))
		return field_error_set(err, -EINVAL, "version", NULL,
				       "must be 1-64 characters of [0-9A-Za-z.+~-]");
	m->version = strdup(s);

	r = ipc_json_get_string(j, "description", true, "", &s, err);
	if (r < 0)
		return r;
	v = json_object_get(j, "description");
	if (!backend_text_is_safe(s, json_string_length(v)))
		return field_error_set(err, -EINVAL, "description", NULL,
				       "not plain display text (at most 1024 bytes; no markup, "
				       "control characters, script URLs or event handlers)");
	m->description = strdup(s);

	r = ipc_json_get_string(j, "executable", true, "", &s, err);
	if (r < 0)
		return r;
	if (!pack_relative_path_is_valid(s))
		return field_error_set(err, -EINVAL, "executable", NULL,
				       "must be a relative path inside the pack (components of "
				       "[A-Za-z0-9._+-], none empty or starting with '.')");
	m->executable = strdup(s);
	if (!m->id || !m->version || !m->description || !m->executable)
		return -ENOMEM;

	r = ipc_json_get_string(j, "network", false, "", &s, err);
	if (r < 0)
		return r;
	if (r > 0) {
		size_t k;

		for (k = 0; k < ELEMENTSOF(network_names); k++)
			if (streq(network_names[k], s))
				break;
		if (k == ELEMENTSOF(network_names))
			return field_error_set(err, -EINVAL, "network", NULL,
					       "expected \"none\", \"loopback\", \"proxy\" or "
					       "\"host\"");
		m->network = (enum pack_network)k;
	}
	r = parse_domains(j, m, err);
	if (r < 0)
		return r;
	r = parse_sockets(j, m, err);
	if (r < 0)
		return r;
	r = parse_env(j, m, err);
	if (r < 0)
		return r;

	r = ipc_json_get_array(j, "backends", true, PACK_BACKENDS_MAX, "", &backends, err);
	if (r < 0)
		return r;
	if (json_array_size(backends) == 0)
		return field_error_set(err, -EINVAL, "backends", NULL,
				       "a pack contributes at least one backend");
	m->backends = calloc(json_array_size(backends), sizeof(*m->backends));
	if (!m->backends)
		return -ENOMEM;
	json_array_foreach(backends, i, v) {
		char p[64];

		json_path_index(p, sizeof(p), "backends", i);
		m->n_backends = i + 1;
		r = parse_backend(v, p, &m->backends[i], err);
		if (r < 0)
			return r;
		for (size_t k = 0; k < i; k++)
			if (streq(m->backends[k].kind, m->backends[i].kind))
				return field_error_set(err, -EINVAL, p, "kind",
						       "duplicate kind \"%s\"",
						       m->backends[i].kind);
	}
	*ret = TAKE_PTR(m);
	return 0;
}

int pack_manifest_parse(const char *buf, size_t len, struct pack_manifest **ret,
			struct field_error *err)
{
	_cleanup_json_ json_t *j = NULL;
	int r;

	if (len > PACK_MANIFEST_MAX_BYTES)
		return field_error_set(err, -EFBIG, "", NULL, "manifest larger than %zu bytes",
				       PACK_MANIFEST_MAX_BYTES);
	r = ipc_json_parse_object(buf, len, &j, err);
	if (r < 0)
		return r;
	return pack_manifest_from_json(j, ret, err);
}

const struct pack_backend_entry *pack_manifest_backend(const struct pack_manifest *m,
						       const char *kind)
{
	for (size_t i = 0; i < m->n_backends; i++)
		if (streq(m->backends[i].kind, kind))
			return &m->backends[i];
	return NULL;
}
